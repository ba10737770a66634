//! SpMV suite: the matrices in every relevant format and precision; time, bytes
//! moved (the format's stored arrays + x + y, each once), GB/s and the ratio to the copy
//! bandwidth measured on the same device. `--dump DIR` writes each matrix as raw CSR arrays
//! for `benches/gpu/spmv_cusparse.py` (cuSPARSE through CuPy) to run in the same command.

use std::io::Write;
use std::time::Duration;

use galerkin::sparse::generate;
use galerkin::sparse::{Csr, Format, FormatOptions, SellParams, SparseMatrix, StaircaseParams};
use galerkin::{Backend, BackendTask, Cpu, Element, FullBackend, Result, Scalar, Vector};

use crate::timing::{gbps, median};
use crate::Options;

/// One benchmark matrix.
pub struct Case {
    pub name: String,
    pub matrix: Csr<Cpu, f64>,
    pub block_size: Option<usize>,
    pub fvm: bool,
}

/// The cases at a size `scale` (1 = the sizes; smaller for a quick run).
pub fn cases(scale: f64, only: &[String]) -> Vec<Case> {
    let s = |n: f64| ((n * scale.cbrt()).round() as usize).max(2);
    let mut out = Vec::new();
    let mut add =
        |name: String, build: &dyn Fn() -> Result<(Csr<Cpu, f64>, Option<usize>)>, fvm: bool| {
            if !only.is_empty() && !only.iter().any(|o| name.starts_with(o.as_str())) {
                return;
            }
            let t0 = std::time::Instant::now();
            match build() {
                Ok((matrix, block_size)) => {
                    eprintln!(
                        "[bench] built {name}: {} rows, {} nnz in {:.1} s",
                        matrix.nrows(),
                        matrix.nnz(),
                        t0.elapsed().as_secs_f64()
                    );
                    out.push(Case {
                        name,
                        matrix,
                        block_size,
                        fvm,
                    });
                }
                Err(e) => eprintln!("[bench] {name}: {e}"),
            }
        };
    let n = s(70.0);
    add(
        format!("fvm_tet_{n}"),
        &|| Ok((galerkin::fvm::tpfa_tets_structured(n, 0.15, 1)?, None)),
        true,
    );
    let n = s(127.0);
    add(
        format!("fvm_dual_{n}"),
        &|| Ok((galerkin::fvm::tpfa_dual_structured(n, 0.15, 1)?, None)),
        true,
    );
    let n = s(256.0);
    add(
        format!("poisson7_{n}"),
        &|| Ok((generate::poisson3d_7pt(n)?, None)),
        false,
    );
    let n = s(192.0);
    add(
        format!("poisson27_{n}"),
        &|| Ok((generate::poisson3d_27pt(n)?, None)),
        false,
    );
    // HDG-like, p = 3 (m = 16): 5 x 256 values per edge, about 1 GB of f64 values at scale 1.
    let nx = s(187.0);
    add(
        format!("hdg_p3_{nx}"),
        &|| {
            let (a, p) = generate::hdg_trace(3, nx, nx, 1)?;
            Ok((a, Some(p.block_size)))
        },
        false,
    );
    for b in [4usize, 8, 10, 20, 27, 35, 56, 64] {
        // About 1 GB of f64 values: 7 b² per element.
        let elements = (1.0e9 * scale / 8.0 / (7 * b * b) as f64).max(8.0);
        let n = elements.cbrt().ceil() as usize;
        add(
            format!("dg7_b{b}_{n}"),
            &|| {
                let (a, p) = generate::dg_7block(b, n, n, n, 1)?;
                Ok((a, Some(p.block_size)))
            },
            false,
        );
    }
    out
}

/// Writes `row_ptr`, `col_idx`, `values` (u32, u32, f64 little-endian) and a header line.
pub fn dump(dir: &str, case: &Case) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let a = &case.matrix;
    let path = |ext: &str| format!("{dir}/{}.{ext}", case.name);
    std::fs::write(
        path("row_ptr"),
        bytemuck::cast_slice::<u32, u8>(a.row_ptr()),
    )?;
    std::fs::write(
        path("col_idx"),
        bytemuck::cast_slice::<u32, u8>(a.col_idx()),
    )?;
    std::fs::write(path("values"), bytemuck::cast_slice::<f64, u8>(a.values()))?;
    let mut f = std::fs::File::create(path("txt"))?;
    writeln!(f, "{} {} {}", a.nrows(), a.ncols(), a.nnz())
}

struct Suite<'a> {
    options: &'a Options,
    cases: &'a [Case],
}

/// Prints one result row; `work` is (bytes moved, flops).
fn row(
    b: &impl Backend,
    case: &str,
    prec: &str,
    format: &str,
    t: Duration,
    work: (usize, usize),
    copy: f64,
) {
    let (bytes, flops) = work;
    let bw = gbps(bytes as f64, t);
    println!(
        "{:<10} {:<16} {:<6} {:<28} {:>9.1} {:>8.1} {:>6.1}% {:>8.1}",
        b.kind().name(),
        case,
        prec,
        format,
        t.as_secs_f64() * 1e6,
        bw,
        100.0 * bw / copy,
        flops as f64 / t.as_secs_f64() / 1e9
    );
}

fn formats_for(case: &Case) -> Vec<(String, Format, FormatOptions)> {
    let base = FormatOptions::default();
    let sell = |c: u32| FormatOptions {
        sell: Some(SellParams {
            slice_height: c,
            sigma: 1,
        }),
        ..base
    };
    let mut f = vec![
        ("csr".to_string(), Format::Csr, base),
        ("sell C=32 σ=1".to_string(), Format::Sell, sell(32)),
        ("sell C=512 σ=1".to_string(), Format::Sell, sell(512)),
    ];
    if let Some(m) = case.block_size {
        for kernel in [
            galerkin::sparse::BlockEllKernel::Direct,
            galerkin::sparse::BlockEllKernel::InflateContract,
        ] {
            f.push((
                format!("bell m={m} {kernel:?}"),
                Format::BlockEll,
                FormatOptions {
                    block_size: Some(m),
                    block_kernel: kernel,
                    ..base
                },
            ));
        }
    }
    if case.block_size.is_none() {
        // Structured grids: a few full diagonals (refused with a padding error otherwise).
        f.push(("dia".to_string(), Format::Dia, base));
    }
    if case.fvm {
        f.push((
            "staircase C=512 α=.05".into(),
            Format::Staircase,
            FormatOptions {
                staircase: Some(StaircaseParams::default()),
                ..base
            },
        ));
    }
    f
}

fn measure<B: Backend, V: Element, T: Scalar>(
    b: &B,
    case: &Case,
    prec: &str,
    reps: usize,
    copy: f64,
) -> Result<()> {
    let a: Csr<Cpu, V> = case.matrix.convert();
    let x = Vector::<B, T>::full(b, a.ncols(), T::ONE)?;
    let mut y = Vector::<B, T>::zeros(b, a.nrows())?;
    for (label, format, options) in formats_for(case) {
        let m = match SparseMatrix::from_csr(b, &a, format, &options) {
            Ok(m) => m,
            Err(e) => {
                println!(
                    "{:<10} {:<16} {:<6} {:<28} refused: {e}",
                    b.kind().name(),
                    case.name,
                    prec,
                    label
                );
                continue;
            }
        };
        let t = if format == Format::Staircase {
            // Time the permuted-space product (vectors stay permuted inside a solver).
            let SparseMatrix::Staircase(s) = &m else {
                unreachable!()
            };
            median(b, reps, || s.spmv(T::ONE, &x, T::ZERO, &mut y))?
        } else {
            median(b, reps, || m.spmv(T::ONE, &x, T::ZERO, &mut y))?
        };
        let bytes = m.storage_bytes() + (a.nrows() + a.ncols()) * T::DTYPE.size();
        row(b, &case.name, prec, &label, t, (bytes, 2 * a.nnz()), copy);
        drop(m);
    }
    Ok(())
}

impl BackendTask for Suite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        println!(
            "\n# {}  (spmv suite; median of {} runs; GB/s counts the stored arrays + x + y once)",
            b.info(),
            self.options.reps
        );
        let n = 1usize << 27;
        let copy = if b.info().max_buffer_bytes >= (n * 8) as u64 {
            let x = Vector::<B, f64>::full(&b, n, 1.0)?;
            let mut y = Vector::<B, f64>::zeros(&b, n)?;
            gbps(
                16.0 * n as f64,
                median(&b, self.options.reps, || y.copy_from(&x))?,
            )
        } else {
            f64::NAN
        };
        println!("copy bandwidth (2^27 f64, read + write): {copy:.1} GB/s");
        println!(
            "{:<10} {:<16} {:<6} {:<28} {:>9} {:>8} {:>7} {:>8}",
            "backend", "matrix", "prec", "format", "time(us)", "GB/s", "of copy", "GFLOP/s"
        );
        for case in self.cases {
            for p in &self.options.spmv_precisions {
                let r = match p.as_str() {
                    "f32" => measure::<B, f32, f32>(&b, case, "f32", self.options.reps, copy),
                    "mixed" if b.info().supports_f64() => {
                        measure::<B, f32, f64>(&b, case, "mixed", self.options.reps, copy)
                    }
                    "f64" if b.info().supports_f64() => {
                        measure::<B, f64, f64>(&b, case, "f64", self.options.reps, copy)
                    }
                    _ => Ok(()),
                };
                if let Err(e) = r {
                    println!("{:<10} {:<16} {p}: error: {e}", b.kind().name(), case.name);
                }
            }
        }
        Ok(())
    }
}

pub fn run(options: &Options) {
    let cases = cases(options.scale, &options.only);
    if let Some(dir) = &options.dump {
        for c in &cases {
            if let Err(e) = dump(dir, c) {
                eprintln!("[bench] dump {}: {e}", c.name);
            }
        }
    }
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(
            kind,
            Suite {
                options,
                cases: &cases,
            },
        ) {
            println!("\n# {kind}: {e}");
        }
    }
}
