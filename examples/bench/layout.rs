//! Layout experiment (CUDA and wgpu): batched Cholesky of SPD matrices stored matrix after
//! matrix (the library's layout and kernel: coalesced staging through shared memory, then
//! one matrix per unit in registers) against the same register algorithm on an interleaved
//! layout (entry `(i, j)` of every matrix contiguous, so a unit's loads are coalesced with
//! no staging), on the same data, in the same process. Both are timed in place after a copy
//! of the input, minus the copy.
//!
//! Then an occupancy probe: a copy by cubes of 64 units that each also declare `S` bytes of
//! shared memory (used once), for `S` from 512 B to 48 KiB. The copy is memory-bound, so
//! its bandwidth falls once the shared memory per multiprocessor admits too few cubes: the
//! `S` where it falls shows how much shared memory the runtime gives a multiprocessor.
//!
//! Then the dispatch probe (`dispatch.rs`). `--only cholesky|occupancy|dispatch` runs a part.

use cubecl::prelude::*;
use galerkin::backend::CubeRuntime;
use galerkin::batched::{cholesky, Batch};
use galerkin::{BackendCore, Cube, Result, Vector};

use crate::batched::{count_for, spd};
use crate::timing::{gbps, median};
use crate::Options;

/// Cholesky (lower, upper part zeroed) of one interleaved matrix per unit, in registers.
#[cube(launch_unchecked)]
fn cholesky_interleaved<F: Float>(a: &mut Array<F>, count: usize, #[comptime] n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut e = ABSOLUTE_POS;
    while e < count {
        let mut m = Array::<F>::new(comptime![n * n]);
        #[unroll]
        for t in 0..n * n {
            m[t] = a[t * count + e];
        }
        #[unroll]
        for k in 0..n {
            let r = F::sqrt(m[k * n + k]);
            m[k * n + k] = r;
            #[unroll]
            for i in k + 1..n {
                m[i * n + k] = m[i * n + k] / r;
            }
            #[unroll]
            for i in k + 1..n {
                #[unroll]
                for j in k + 1..i + 1 {
                    let v = m[i * n + k] * m[j * n + k];
                    m[i * n + j] -= v;
                }
            }
        }
        #[unroll]
        for i in 0..n {
            #[unroll]
            for j in i + 1..n {
                m[i * n + j] = F::new(0.0);
            }
        }
        #[unroll]
        for t in 0..n * n {
            a[t * count + e] = m[t];
        }
        e += stride;
    }
}

fn launch<R: CubeRuntime>(
    b: &Cube<R>,
    a: &Vector<Cube<R>, f64>,
    count: usize,
    n: usize,
) -> Result<()> {
    let buffer = a.buffer()?;
    let cubes = count.div_ceil(256).min(65535) as u32;
    // SAFETY: the buffer holds count · n² values (plus padding); unit e touches entries
    // t · count + e for t < n², e < count.
    unsafe {
        cholesky_interleaved::launch_unchecked::<f64, R>(
            b.client(),
            CubeCount::Static(cubes, 1, 1),
            CubeDim::new_1d(256),
            ArrayArg::from_raw_parts(buffer.handle().clone(), count * n * n),
            count,
            n,
        )
    };
    Ok(())
}

fn one<R: CubeRuntime>(b: &Cube<R>, n: usize, reps: usize) -> Result<()> {
    let count = count_for(n, 8, 1e9);
    let data = spd::<f64>(count, n, n as u64);
    let mut inter = vec![0.0; count * n * n];
    for m in 0..count {
        for t in 0..n * n {
            inter[t * count + m] = data[m * n * n + t];
        }
    }
    let contiguous = Batch::from_slice(b, count, n, n, &data)?;
    let interleaved = Vector::from_slice(b, &inter)?;
    // Agreement of the two on the same matrices.
    let (lib, _) = cholesky::<Cube<R>, f64, f64>(contiguous.try_clone()?)?;
    let mut work = interleaved.try_clone()?;
    launch(b, &work, count, n)?;
    let (l1, l2) = (lib.to_vec()?, work.to_vec()?);
    let mut diff = 0f64;
    for m in (0..count).step_by(997) {
        for t in 0..n * n {
            diff = diff.max((l1[m * n * n + t] - l2[t * count + m]).abs());
        }
    }
    let bytes = 2.0 * (count * n * n * 8) as f64;
    let t_clone = median(b, reps, || contiguous.try_clone().map(|_| ()))?;
    let t_lib = median(b, reps, || {
        cholesky::<Cube<R>, f64, f64>(contiguous.try_clone()?).map(|_| ())
    })?
    .saturating_sub(t_clone);
    let t_copy = median(b, reps, || work.copy_from(&interleaved))?;
    let t_inter = median(b, reps, || {
        work.copy_from(&interleaved)?;
        launch(b, &work, count, n)?;
        Ok(())
    })?
    .saturating_sub(t_copy);
    println!(
        "{:<6} f64  {n:>3} {count:>8}  contiguous+staging {:>8.1} us {:>7.1} GB/s | interleaved {:>8.1} us {:>7.1} GB/s | max |diff| {diff:.1e}",
        b.kind().name(),
        t_lib.as_secs_f64() * 1e6,
        gbps(bytes, t_lib),
        t_inter.as_secs_f64() * 1e6,
        gbps(bytes, t_inter),
    );
    Ok(())
}

/// A grid-stride copy by cubes that also hold `words` f32 of shared memory: unit 0 of each
/// cube writes the last word and every unit adds it (zero) to what it copies, so the
/// allocation stays.
#[cube(launch_unchecked)]
fn shared_probe(x: &Array<f64>, y: &mut Array<f64>, len: usize, #[comptime] words: usize) {
    let mut sh = SharedMemory::<f32>::new(words);
    if UNIT_POS == 0 {
        sh[words - 1] = 0.0;
    }
    sync_cube();
    let z = f64::cast_from(sh[words - 1]);
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut e = ABSOLUTE_POS;
    while e < len {
        y[e] = x[e] + z;
        e += stride;
    }
}

/// Copy bandwidth (GB/s) of [`shared_probe`] with `bytes` of shared memory per cube.
fn probe<R: CubeRuntime>(b: &Cube<R>, bytes: usize, reps: usize) -> Result<f64> {
    const UNITS: u32 = 64;
    // 256 MiB a vector, or half the device's largest buffer.
    let len = (1usize << 25).min((b.info().max_buffer_bytes / 16) as usize);
    let x = Vector::<Cube<R>, f64>::full(b, len, 1.0)?;
    let y = Vector::<Cube<R>, f64>::zeros(b, len)?;
    let (xb, yb) = (x.buffer()?.handle().clone(), y.buffer()?.handle().clone());
    let cubes = (len / UNITS as usize).min(65535) as u32;
    let t = median(b, reps, || {
        // SAFETY: both buffers hold `len` values; every unit touches entries below `len`, and
        // the shared index `words - 1` is inside the array.
        unsafe {
            shared_probe::launch_unchecked::<R>(
                b.client(),
                CubeCount::Static(cubes, 1, 1),
                CubeDim::new_1d(UNITS),
                ArrayArg::from_raw_parts(xb.clone(), len),
                ArrayArg::from_raw_parts(yb.clone(), len),
                len,
                (bytes / 4).max(1),
            )
        };
        Ok(())
    })?;
    let check = y.to_vec()?;
    if check.iter().any(|&v| v != 1.0) {
        return Err(galerkin::Error::InvalidArgument {
            op: "shared probe",
            name: "y",
            reason: "the copy is wrong".into(),
        });
    }
    Ok(gbps(2.0 * (len * 8) as f64, t))
}

/// The parts of the suite `--only` may name (all by default).
const PARTS: [&str; 3] = ["cholesky", "occupancy", "dispatch"];

fn suite<R: CubeRuntime>(b: &Cube<R>, reps: usize, only: &[String]) {
    let wanted = |part: &str| only.is_empty() || only.iter().any(|o| part.starts_with(o.as_str()));
    println!(
        "\n# {}  (layout suite: {})",
        b.info(),
        PARTS
            .iter()
            .filter(|p| wanted(p))
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    );
    if wanted("cholesky") {
        println!("batched Cholesky f64, time minus the input copy; GB/s of matrices in + out");
        for n in [2, 4, 8] {
            if let Err(e) = one(b, n, reps) {
                println!("layout n={n}: error: {e}");
            }
        }
    }
    if wanted("occupancy") {
        println!("occupancy probe: copy of up to 2^25 f64 by cubes of 64 units, each with S bytes of shared memory");
        for kib in [0.5, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 32.0, 40.0, 48.0] {
            let bytes = (kib * 1024.0) as usize;
            if bytes > b.info().max_shared_bytes {
                break;
            }
            match probe(b, bytes, reps) {
                Ok(g) => println!(
                    "{:<6} shared {kib:>5.1} KiB  {g:>8.1} GB/s",
                    b.kind().name()
                ),
                Err(e) => println!("{:<6} shared {kib:>5.1} KiB  error: {e}", b.kind().name()),
            }
        }
    }
    if wanted("dispatch") {
        if let Err(e) = crate::dispatch::probe(b, reps) {
            println!("dispatch probe: error: {e}");
        }
    }
}

pub fn run(options: &Options) {
    for &kind in &options.backends {
        match kind {
            #[cfg(feature = "cuda")]
            galerkin::BackendKind::Cuda => match galerkin::Cuda::new() {
                Ok(b) => suite(&b, options.reps, &options.only),
                Err(e) => println!("\n# layout: {e}"),
            },
            #[cfg(feature = "wgpu")]
            galerkin::BackendKind::Wgpu => match galerkin::Wgpu::new() {
                Ok(b) => suite(&b, options.reps, &options.only),
                Err(e) => println!("\n# layout: {e}"),
            },
            other => println!("\n# layout: not on {other} (CUDA and wgpu only)"),
        }
    }
}
