//! `y = A x` from the command line, on any backend, format and precision.
//!
//! ```text
//! cargo run --release --example spmv -- --matrix FILE.mtx[.gz] | --matrix GENERATOR
//!     [--format csr|ell|sell|staircase|bell|coo|auto] [--precision f32|f64|mixed]
//!     [--backend cpu|wgpu|cuda] [--x FILE] [--out FILE] [--bench]
//! ```
//!
//! Generators: `poisson7:N` and `poisson27:N` (3D, N³ rows), `poisson2d:N`, `fvm-tet:N`
//! (two-point-flux FVM on 6 N³ perturbed tetrahedra), `fvm-dual:N` (on its polyhedral dual,
//! (N+1)³ rows; both with interior vertices moved by up to 15% of h), `hdg:P:N` (HDG-like trace matrix, degree P, N x N squares of triangles),
//! `dg:B:N` (7-block DG-like matrix, block size B, N³ elements), `random:N`.
//!
//! `--x FILE`: plain text, one value per line (default: all ones). `--out FILE`: y, one value
//! per line, full precision. `--precision mixed`: values stored in f32, vectors and
//! accumulation in f64. `--bench`: median time of 30 products, bandwidth and GFLOP/s.

use std::process::ExitCode;
use std::time::Instant;

use galerkin::sparse::{Csr, Format, FormatChoice, FormatOptions, SparseMatrix};
use galerkin::{Backend, BackendKind, BackendTask, Cpu, Element, Error, Result, Scalar, Vector};

#[path = "common/mod.rs"]
mod common;
use common::{load, read_vector, write_vector};

struct Args {
    matrix: String,
    format: Option<Format>,
    precision: String,
    backend: BackendKind,
    x: Option<String>,
    out: Option<String>,
    bench: bool,
}

fn usage() -> &'static str {
    "usage: spmv --matrix FILE.mtx|GENERATOR [--format csr|ell|sell|staircase|bell|coo|auto] \
     [--precision f32|f64|mixed] [--backend cpu|wgpu|cuda] [--x FILE] [--out FILE] [--bench]"
}

fn parse() -> std::result::Result<Args, String> {
    let mut args = Args {
        matrix: String::new(),
        format: None,
        precision: "f64".into(),
        backend: BackendKind::Cpu,
        x: None,
        out: None,
        bench: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{a} needs a value\n{}", usage()))
        };
        match a.as_str() {
            "--matrix" => args.matrix = value()?,
            "--format" => {
                let v = value()?;
                args.format = if v == "auto" {
                    None
                } else {
                    Some(v.parse().map_err(|e: Error| e.to_string())?)
                };
            }
            "--precision" => {
                args.precision = value()?;
                if !["f32", "f64", "mixed"].contains(&args.precision.as_str()) {
                    return Err(format!(
                        "--precision {}: expected f32, f64 or mixed",
                        args.precision
                    ));
                }
            }
            "--backend" => args.backend = value()?.parse().map_err(|e: Error| e.to_string())?,
            "--x" => args.x = Some(value()?),
            "--out" => args.out = Some(value()?),
            "--bench" => args.bench = true,
            "-h" | "--help" => return Err(usage().into()),
            other => return Err(format!("unknown argument {other}\n{}", usage())),
        }
    }
    if args.matrix.is_empty() {
        return Err(format!("--matrix is required\n{}", usage()));
    }
    Ok(args)
}

struct Task {
    args: Args,
    a: Csr<Cpu, f64>,
    x: Vec<f64>,
}

/// Builds the matrix with values `V`, multiplies with vectors `T`, reports.
fn run<B: Backend, V: Element, T: Scalar>(b: &B, t: &Task) -> Result<Vec<f64>> {
    let a: Csr<Cpu, V> = t.a.convert();
    let (m, choice) = match t.args.format {
        None => SparseMatrix::auto(b, &a)?,
        Some(f) => (
            SparseMatrix::from_csr(b, &a, f, &FormatOptions::default())?,
            FormatChoice {
                format: f,
                params: "defaults".into(),
                reason: "requested".into(),
            },
        ),
    };
    println!("format: {choice}");
    println!(
        "storage: {:.1} MB ({:.2} bytes per nonzero; CSR would be {:.1} MB)",
        m.storage_bytes() as f64 / 1e6,
        m.storage_bytes() as f64 / m.nnz().max(1) as f64,
        a.storage_bytes() as f64 / 1e6
    );
    let xs: Vec<T> = t.x.iter().map(|&v| T::from_f64(v)).collect();
    let x = Vector::from_slice(b, &xs)?;
    let mut y = Vector::zeros(b, m.nrows())?;
    m.spmv(T::ONE, &x, T::ZERO, &mut y)?;
    if t.args.bench {
        b.synchronize()?;
        let mut times = Vec::new();
        for _ in 0..30 {
            let t0 = Instant::now();
            m.spmv(T::ONE, &x, T::ZERO, &mut y)?;
            b.synchronize()?;
            times.push(t0.elapsed());
        }
        times.sort();
        let time = times[15].as_secs_f64();
        let bytes = m.storage_bytes() + (m.nrows() + m.ncols()) * T::DTYPE.size();
        println!(
            "bench: {:.1} us median of 30, {:.1} GB/s (stored arrays + x + y once), {:.1} GFLOP/s",
            time * 1e6,
            bytes as f64 / time / 1e9,
            2.0 * m.nnz() as f64 / time / 1e9
        );
    }
    Ok(y.to_vec()?.into_iter().map(|v| v.as_f64()).collect())
}

impl BackendTask for Task {
    type Output = Vec<f64>;
    fn run<B: Backend>(self, b: B) -> Result<Vec<f64>> {
        println!("backend: {}", b.info());
        match self.args.precision.as_str() {
            "f32" => run::<B, f32, f32>(&b, &self),
            "mixed" => run::<B, f32, f64>(&b, &self),
            _ => run::<B, f64, f64>(&b, &self),
        }
    }
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("spmv: {e}");
            return ExitCode::from(2);
        }
    };
    let result = (|| -> Result<()> {
        let t0 = Instant::now();
        let a = load(&args.matrix)?;
        let s = a.stats();
        println!(
            "matrix: {} x {}, {} nonzeros, row length min {} / mean {:.2} / max {} (std {:.2}), {} empty rows; loaded in {:.2} s",
            a.nrows(),
            a.ncols(),
            a.nnz(),
            s.min,
            s.mean,
            s.max,
            s.std_dev,
            s.empty_rows,
            t0.elapsed().as_secs_f64()
        );
        let x = match &args.x {
            Some(path) => {
                let x = read_vector(path)?;
                if x.len() != a.ncols() {
                    return Err(Error::DimensionMismatch {
                        op: "spmv",
                        what: "--x",
                        expected: a.ncols(),
                        found: x.len(),
                    });
                }
                x
            }
            None => vec![1.0; a.ncols()],
        };
        let out = args.out.clone();
        let backend = args.backend;
        let y = galerkin::with_backend(backend, Task { args, a, x })?;
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        println!(
            "‖y‖₂ = {norm:.12e}, ‖y‖∞ = {:.12e}",
            y.iter().fold(0.0f64, |m, v| m.max(v.abs()))
        );
        if let Some(path) = out {
            write_vector(&path, &y)?;
            println!("y written to {path}");
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spmv: error: {e}");
            ExitCode::FAILURE
        }
    }
}
