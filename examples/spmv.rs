//! `y = A x` from the command line, on any backend, format and precision.
//!
//! ```text
//! cargo run --release --example spmv -- --help
//! cargo run --release --example spmv -- --matrix poisson7:64 --format sell --bench
//! ```
//!
//! Generators: `poisson7:N` and `poisson27:N` (3D, N³ rows), `poisson2d:N`, `fvm-tet:N`
//! (two-point-flux FVM on 6 N³ perturbed tetrahedra), `fvm-dual:N` (on its polyhedral dual,
//! (N+1)³ rows; both with interior vertices moved by up to 15% of h), `hdg:P:N` (HDG-like trace matrix, degree P, N x N squares of triangles),
//! `dg:B:N` (7-block DG-like matrix, block size B, N³ elements), `random:N`.
//!
//! `--x FILE`: plain text, one value per line (default: all ones). `--out FILE`: y, one value
//! per line, full precision. `--precision mixed`: values stored in f32, vectors and
//! accumulation in f64. `--bench`: median time of a product over 30 batches of back-to-back
//! products (each batch at least 5 ms), bandwidth and GFLOP/s.

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use galerkin::sparse::{Csr, FormatChoice, FormatOptions, SparseMatrix};
use galerkin::{Backend, BackendTask, Cpu, Element, Error, FullBackend, Result, Scalar, Vector};

#[path = "common/mod.rs"]
mod common;
use common::{load, read_vector, say, write_vector, BackendArg, FormatArg, PrecisionArg};

/// `y = A x` on any backend, format and precision: a Matrix Market file or a generated
/// matrix, x from a file or all ones; prints the chosen format, the storage and ‖y‖.
#[derive(Parser, Debug)]
#[command(name = "spmv", version, after_help = format!("{}\n\n{}", common::GENERATORS_HELP, common::EXIT_HELP))]
struct Args {
    /// The matrix: a Matrix Market file (`.mtx`, `.mtx.gz`) or a generator (below).
    #[arg(long)]
    matrix: String,
    /// Storage format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    format: FormatArg,
    /// Precision: `mixed` stores the values in f32 and computes in f64.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F64)]
    precision: PrecisionArg,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// x as plain text, one value per line (default: all ones).
    #[arg(long)]
    x: Option<String>,
    /// Write y here, one value per line, full precision.
    #[arg(long)]
    out: Option<String>,
    /// Also time the product (median over 30 batches of at least 5 ms): time, GB/s, GFLOP/s.
    #[arg(long)]
    bench: bool,
    /// Print one JSON object on stdout (the text report goes to stderr): `backend`,
    /// `matrix`, `rows`, `cols`, `nnz`, `format`, `precision`, `storage_bytes`, `y_norm2`,
    /// `y_norm_inf`, and with `--bench` `seconds`, `gb_per_s`, `gflop_per_s`.
    #[arg(long)]
    json: bool,
}

/// What one run measured.
struct Outcome {
    y: Vec<f64>,
    backend: String,
    format: FormatChoice,
    storage_bytes: usize,
    /// Median seconds a product, bytes and flops a product (with `--bench`).
    bench: Option<(f64, f64, f64)>,
    /// `common::memory_bytes` after the run.
    memory_bytes: Option<u64>,
}

struct Task {
    args: Args,
    a: Csr<Cpu, f64>,
    x: Vec<f64>,
}

/// Builds the matrix with values `V`, multiplies with vectors `T`, reports.
fn run<B: Backend, V: Element, T: Scalar>(b: &B, t: &Task) -> Result<Outcome> {
    let a: Csr<Cpu, V> = t.a.convert();
    let (m, choice) = match t.args.format.format() {
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
    say!("format: {choice}");
    say!(
        "storage: {:.1} MB ({:.2} bytes per nonzero; CSR would be {:.1} MB)",
        m.storage_bytes() as f64 / 1e6,
        m.storage_bytes() as f64 / m.nnz().max(1) as f64,
        a.storage_bytes() as f64 / 1e6
    );
    let xs: Vec<T> = t.x.iter().map(|&v| T::from_f64(v)).collect();
    let x = Vector::from_slice(b, &xs)?;
    let mut y = Vector::zeros(b, m.nrows())?;
    m.spmv(T::ONE, &x, T::ZERO, &mut y)?;
    let mut bench = None;
    if t.args.bench {
        // Each sample: a batch of back-to-back products lasting at least 5 ms, bracketed by
        // synchronisation (whose latency, 30-200 µs on a GPU, would otherwise count in every
        // product), divided by its length.
        let mut batch = 1u32;
        let mut times = Vec::new();
        while times.len() < 30 {
            b.synchronize()?;
            let t0 = Instant::now();
            for _ in 0..batch {
                m.spmv(T::ONE, &x, T::ZERO, &mut y)?;
            }
            b.synchronize()?;
            let elapsed = t0.elapsed();
            if elapsed.as_secs_f64() < 5e-3 && batch < 100_000 {
                batch *= 2;
                continue;
            }
            times.push(elapsed / batch);
        }
        times.sort();
        let time = times[15].as_secs_f64();
        let bytes = (m.storage_bytes() + (m.nrows() + m.ncols()) * T::DTYPE.size()) as f64;
        let flops = 2.0 * m.nnz() as f64;
        say!(
            "bench: {:.1} us a product (median of 30 batches), {:.1} GB/s (stored arrays + x + y once), {:.1} GFLOP/s",
            time * 1e6,
            bytes / time / 1e9,
            flops / time / 1e9
        );
        bench = Some((time, bytes, flops));
    }
    Ok(Outcome {
        y: y.to_vec()?.into_iter().map(|v| v.as_f64()).collect(),
        backend: b.info().to_string(),
        format: choice,
        storage_bytes: m.storage_bytes(),
        bench,
        memory_bytes: common::memory_bytes(b),
    })
}

impl BackendTask for Task {
    type Output = Outcome;
    fn run<B: FullBackend>(self, b: B) -> Result<Outcome> {
        say!("backend: {}", b.info());
        match self.args.precision {
            PrecisionArg::F32 => run::<B, f32, f32>(&b, &self),
            PrecisionArg::Mixed => run::<B, f32, f64>(&b, &self),
            PrecisionArg::F64 => run::<B, f64, f64>(&b, &self),
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    common::json_mode(args.json);
    let result = (|| -> Result<()> {
        let t0 = Instant::now();
        let a = load(&args.matrix)?;
        let s = a.stats();
        say!(
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
        let underflow = args.precision == PrecisionArg::F32;
        if args.precision != PrecisionArg::F64 {
            if let Some((k, v)) = galerkin::scalar::f32_unrepresentable(a.values(), true) {
                let (row, col) = a.entry_position(k);
                return Err(Error::InvalidArgument {
                    op: "spmv",
                    name: "--precision",
                    reason: format!(
                        "A[{}, {}] (1-based) = {v:e} has no f32 value: use --precision f64",
                        row + 1,
                        col + 1
                    ),
                });
            }
        }
        if let Some((i, v)) = galerkin::scalar::f32_unrepresentable(&x, underflow) {
            return Err(Error::InvalidArgument {
                op: "spmv",
                name: "--precision",
                reason: format!(
                    "x[{}] (1-based) = {v:e} has no f32 value: use --precision mixed or f64",
                    i + 1
                ),
            });
        }
        let (out, json) = (args.out.clone(), args.json);
        let (matrix, precision) = (args.matrix.clone(), args.precision);
        let (rows, cols, nnz) = (a.nrows(), a.ncols(), a.nnz());
        let backend = args.backend.kind();
        let o = galerkin::with_backend(backend, Task { args, a, x })?;
        let y = &o.y;
        if let Some((i, v)) = y.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::InvalidArgument {
                op: "spmv",
                name: "--matrix",
                reason: format!(
                    "y[{}] (1-based) is {v}: the product overflows the {} range",
                    i + 1,
                    format!("{precision:?}").to_lowercase()
                ),
            });
        }
        // Scaled norms (the CPU backend's): no overflow or underflow on the way.
        let yv = galerkin::Vector::from_slice(&galerkin::Cpu::new(), y)?;
        let (norm, max) = (yv.nrm2()?, yv.amax()?);
        say!("‖y‖₂ = {norm:.12e}, ‖y‖∞ = {max:.12e}");
        if let Some(path) = out {
            write_vector(&path, y)?;
            say!("y written to {path}");
        }
        if json {
            let finite = |v: f64| v.is_finite().then_some(v);
            let mut value = serde_json::json!({
                "backend": o.backend,
                "matrix": matrix,
                "rows": rows,
                "cols": cols,
                "nnz": nnz,
                "format": o.format.format.name(),
                "format_params": o.format.params,
                "memory_bytes": o.memory_bytes,
                "precision": format!("{precision:?}").to_lowercase(),
                "storage_bytes": o.storage_bytes,
                "y_norm2": finite(norm),
                "y_norm_inf": finite(max),
            });
            if let Some((seconds, bytes, flops)) = o.bench {
                value["seconds"] = serde_json::json!(seconds);
                value["gb_per_s"] = serde_json::json!(bytes / seconds / 1e9);
                value["gflop_per_s"] = serde_json::json!(flops / seconds / 1e9);
            }
            println!("{value}");
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spmv: error: {e}");
            common::exit_code(&e)
        }
    }
}
