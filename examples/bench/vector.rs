//! Vector suite: device copy, axpy, dot, the fused CG update (and the same update unfused)
//! on 2^k elements; bandwidth and the ratio to the copy bandwidth of the same device.

use galerkin::vector::cg_update;
use galerkin::verify::random_vec;
use galerkin::{Backend, BackendTask, FullBackend, Precision, Result, Scalar, Vector};

use crate::timing::{gbps, median};
use crate::Options;

struct Suite<'a>(&'a Options);

fn one<B: Backend, T: Scalar>(b: &B, log2: u32, reps: usize) -> Result<()> {
    // `--log2` is checked when the options are parsed; a length that does not fit is an
    // error here too, never a shift overflow.
    let Some(n) = 1usize.checked_shl(log2) else {
        return Err(galerkin::Error::InvalidArgument {
            op: "bench vector suite",
            name: "--log2",
            reason: format!("{log2}: 2^{log2} elements do not fit the address space"),
        });
    };
    let bytes = (n as f64) * T::DTYPE.size() as f64;
    if bytes * 1.0 > b.info().max_buffer_bytes as f64 {
        println!(
            "{:<10} {:<4} 2^{log2:<3} skipped: {} bytes per vector exceed the device's largest buffer ({})",
            b.kind().name(),
            T::DTYPE.name(),
            bytes,
            b.info().max_buffer_bytes
        );
        return Ok(());
    }
    // The random values are made on the host first.
    galerkin::limits::check_host_items(
        format_args!("a host vector of 2^{log2} values"),
        n as u64,
        T::DTYPE.size() as u64,
    )?;
    let x = Vector::<B, T>::from_slice(b, &random_vec::<T>(n, 1))?;
    let mut y = Vector::<B, T>::from_slice(b, &random_vec::<T>(n, 2))?;
    let mut r = Vector::<B, T>::from_slice(b, &random_vec::<T>(n, 3))?;
    let q = Vector::<B, T>::from_slice(b, &random_vec::<T>(n, 4))?;
    let alpha = T::from_f64(1e-3);

    let t_copy = median(b, reps, || y.copy_from(&x))?;
    let copy_bw = gbps(2.0 * bytes, t_copy);
    let row = |name: &str, moved: f64, t: std::time::Duration| {
        let bw = gbps(moved * bytes, t);
        println!(
            "{:<10} {:<4} 2^{log2:<3} {:<18} {:>10.1} {:>9.1} {:>7.1}%",
            b.kind().name(),
            T::DTYPE.name(),
            name,
            t.as_secs_f64() * 1e6,
            bw,
            100.0 * bw / copy_bw
        );
    };
    row("copy", 2.0, t_copy);
    row("axpy", 3.0, median(b, reps, || y.axpy(alpha, &x))?);
    row(
        "axpby",
        3.0,
        median(b, reps, || y.axpby(alpha, &x, T::ONE))?,
    );
    row(
        "dot (to host)",
        2.0,
        median(b, reps, || x.dot(&y).map(|_| ()))?,
    );
    row(
        "nrm2 (to host)",
        1.0,
        median(b, reps, || x.nrm2().map(|_| ()))?,
    );
    row(
        "cg_update fused",
        6.0,
        median(b, reps, || {
            cg_update(alpha, &x, &q, &mut y, &mut r).map(|_| ())
        })?,
    );
    row(
        "cg_update 3 ops",
        8.0,
        median(b, reps, || {
            y.axpy(alpha, &x)?;
            r.axpy(-alpha, &q)?;
            r.dot(&r).map(|_| ())
        })?,
    );
    Ok(())
}

impl BackendTask for Suite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        println!(
            "\n# {}  (vector suite; time = median of {} runs)",
            b.info(),
            self.0.reps
        );
        println!(
            "{:<10} {:<4} {:<5} {:<18} {:>10} {:>9} {:>8}",
            "backend", "prec", "n", "op", "time(us)", "GB/s", "of copy"
        );
        let sizes = if self.0.log2_sizes.is_empty() {
            vec![26, 27, 28]
        } else {
            self.0.log2_sizes.clone()
        };
        for &log2 in &sizes {
            for &p in &self.0.precisions {
                let result = match p {
                    Precision::F32 => one::<B, f32>(&b, log2, self.0.reps),
                    Precision::F64 if b.info().supports_f64() => {
                        one::<B, f64>(&b, log2, self.0.reps)
                    }
                    Precision::F64 => {
                        println!("{}: no f64 on this device", b.kind());
                        Ok(())
                    }
                };
                if let Err(e) = result {
                    println!("{} {p} 2^{log2}: error: {e}", b.kind());
                }
            }
        }
        Ok(())
    }
}

pub fn run(options: &Options) {
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(kind, Suite(options)) {
            println!("\n# {kind}: {e}");
        }
    }
}
