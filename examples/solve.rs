//! Solve `A x = b` from the command line: any matrix, solver, preconditioner, precision and
//! backend; prints the solve report and the true residual of the f64 system.
//!
//! ```text
//! cargo run --release --example solve -- --help
//! cargo run --release --example solve                                  # FVM, CG + Jacobi, CPU
//! cargo run --release --example solve -- --matrix poisson7:64 --precision mixed --tol 1e-10
//! ```
//!
//! Default: the two-point-flux FVM Laplacian on 6·16³ perturbed tetrahedra, b = A·1, CG with
//! Jacobi, f64, CPU. `--precision mixed` solves the f64 system to `--tol` with the work in
//! f32: an outer f64 Krylov iteration (flexible CG for `cg`/`pcg`, FGMRES otherwise) on the f64
//! matrix, preconditioned by an inner solve in f32 (PCG or GMRES) on an f32 copy of the matrix
//! with the chosen preconditioner built in f32; `--solver refine` uses iterative refinement
//! instead. `converged` means the true residual of the f64 system as given, `‖b − A x‖/‖b‖`
//! computed on the host with scaled norms, meets `--tol`, whatever precision did the work.
//! Exit status: 0 converged, 3 not converged (the reason is printed), 2 bad arguments or
//! input (a file that cannot be read or parsed, NaN or infinity in the input, values f32
//! cannot hold with `--precision f32`, sizes beyond the memory), 1 other errors (a device).

use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use galerkin::solver::driver::{
    solve_system, AmgPrecision, Method, PrecondKind, SolveOptions, SolvePrecision, SystemSolution,
};
use galerkin::sparse::Csr;
use galerkin::{BackendTask, Cpu, FullBackend, Result, Vector};

#[path = "common/mod.rs"]
mod common;
#[cfg(feature = "mpi")]
#[path = "common/solve_dist.rs"]
mod solve_dist;
use common::{
    load, read_vector, say, write_vector, AmgArgs, AmgPrecisionArg, BackendArg, FormatArg,
    PrecisionArg,
};

/// The Krylov method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SolverArg {
    /// conjugate gradients (plain CG with `--precond none`, else PCG)
    Cg,
    /// preconditioned conjugate gradients
    Pcg,
    /// BiCGStab
    Bicgstab,
    /// restarted GMRES
    Gmres,
    /// flexible GMRES
    Fgmres,
    /// iterative refinement: f64 residuals, f32 PCG corrections
    Refine,
}

/// The preconditioner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PrecondArg {
    /// none
    None,
    /// diagonal scaling
    Jacobi,
    /// inverses of the diagonal blocks (`--block-size`)
    BlockJacobi,
    /// Chebyshev polynomial of the Jacobi-scaled operator
    Chebyshev,
    /// smoothed-aggregation algebraic multigrid, one cycle per application (--amg-*)
    Amg,
}

/// Solve A x = b on any backend, in f32, f64 or mixed precision; b = A·1 unless --rhs.
#[derive(Parser, Debug)]
#[command(name = "solve", version, after_help = format!("{}\n\n{}", common::GENERATORS_HELP, common::EXIT_HELP))]
struct Args {
    /// The matrix: a Matrix Market file (`.mtx`, `.mtx.gz`) or a generator (below).
    #[arg(long, default_value = "fvm-tet:16")]
    matrix: String,
    /// Right-hand side as plain text, one value per line (default: b = A·1).
    #[arg(long)]
    rhs: Option<String>,
    /// The Krylov method.
    #[arg(long, value_enum, default_value_t = SolverArg::Cg)]
    solver: SolverArg,
    /// The preconditioner.
    #[arg(long, value_enum, default_value_t = PrecondArg::Jacobi)]
    precond: PrecondArg,
    /// Block size of block-Jacobi.
    #[arg(long, default_value_t = 4)]
    block_size: usize,
    #[command(flatten)]
    amg: AmgArgs,
    /// Precision: `mixed` answers the f64 system to --tol with the work in f32.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F64)]
    precision: PrecisionArg,
    /// Relative tolerance on ‖b − A x‖ / ‖b‖.
    #[arg(long, default_value_t = 1e-8)]
    tol: f64,
    /// Iteration limit (outer iterations with --precision mixed).
    #[arg(long, default_value_t = 1000)]
    max_iter: usize,
    /// Krylov dimension between GMRES restarts.
    #[arg(long, default_value_t = 30)]
    restart: usize,
    /// Relative tolerance of each f32 inner solve (--precision mixed).
    #[arg(long, default_value_t = 1e-3)]
    inner_tol: f64,
    /// Iteration limit of each f32 inner solve (--precision mixed).
    #[arg(long, default_value_t = 200)]
    inner_max_iter: usize,
    /// Storage format of the matrix on the device.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    format: FormatArg,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// Write x here, one value per line, full precision (in global row order, from rank 0,
    /// when distributed).
    #[arg(long)]
    out: Option<String>,
    /// Print one JSON object on stdout (the text report goes to stderr).
    #[arg(long)]
    json: bool,
    /// Also write the matrix (as built or read) here in Matrix Market format, e.g. to give
    /// the same system to another solver.
    #[arg(long, value_name = "PATH")]
    write_matrix: Option<String>,
    /// Distributed runs (feature `mpi`, under `mpirun`): how rows are given to ranks,
    /// `contiguous` or `metis`.
    #[arg(long, default_value = "contiguous")]
    partition: String,
    /// Distributed runs: this rank's device (default: node rank modulo the devices).
    #[arg(long)]
    device: Option<usize>,
    /// Solve once untimed first (kernel compilation, caches), then report the second solve
    /// (`solve`, `cg`, `gmres`, ... and distributed runs; not `--precision mixed` in one
    /// process); with `--precond amg`, the hierarchy is also set up once untimed first, so
    /// `setup_s` is the warm setup.
    #[arg(long)]
    warmup: bool,
    /// Distributed runs on a GPU: synchronize before each halo so that the per-rank compute
    /// and halo times are exact (one more device round trip per SpMV).
    #[arg(long)]
    profile: bool,
    /// Distributed runs: how the halo travels. `auto`: device to device (NCCL) where every
    /// rank is on a CUDA GPU of its own and NCCL loads (`libnccl.so.2`, or the path in
    /// `GALERKIN_NCCL`), else through host memory; `host`; `device` (an error where a rank
    /// cannot).
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "device"])]
    halo: String,
    /// Run the distributed solve even outside `mpirun` (one rank; feature `mpi`).
    #[arg(long)]
    distributed: bool,
    /// Keep every device buffer at most this many bytes (at least 2048): longer vectors are
    /// stored in parts and the matrix in matching blocks, as above the device's own binding
    /// limit (wgpu: 2 GiB on NVIDIA, 128 MiB on lavapipe). One process only.
    #[arg(long, value_name = "BYTES")]
    buffer_limit: Option<u64>,
}

struct Task<'a> {
    args: &'a Args,
    options: &'a SolveOptions,
    a: &'a Csr<Cpu, f64>,
    b: &'a [f64],
}

impl BackendTask for Task<'_> {
    type Output = (SystemSolution, Option<u64>);
    fn run<B: FullBackend>(self, b: B) -> Result<Self::Output> {
        let b = match self.args.buffer_limit {
            Some(bytes) => b.with_buffer_limit(bytes)?,
            None => b,
        };
        say!("backend: {}", b.info());
        let part = galerkin::backend::vector_part_len(b.info().max_buffer_bytes);
        if self.a.nrows().max(self.a.ncols()) > part {
            say!(
                "vectors of {} values in {} parts of at most {part} (buffers of at most {} bytes)",
                self.a.nrows(),
                self.a.nrows().div_ceil(part),
                b.info().max_buffer_bytes
            );
        }
        let solution = solve_system(&b, self.a, self.b, self.options)?;
        Ok((solution, common::memory_bytes(&b)))
    }
}

/// The library's options from the command line (checked by `SolveOptions::check`).
fn options(args: &Args) -> Result<SolveOptions> {
    Ok(SolveOptions {
        method: match args.solver {
            SolverArg::Cg => Method::Cg,
            SolverArg::Pcg => Method::Pcg,
            SolverArg::Bicgstab => Method::Bicgstab,
            SolverArg::Gmres => Method::Gmres,
            SolverArg::Fgmres => Method::Fgmres,
            SolverArg::Refine => Method::Refine,
        },
        precond: match args.precond {
            PrecondArg::None => PrecondKind::None,
            PrecondArg::Jacobi => PrecondKind::Jacobi,
            PrecondArg::BlockJacobi => PrecondKind::BlockJacobi,
            PrecondArg::Chebyshev => PrecondKind::Chebyshev,
            PrecondArg::Amg => PrecondKind::Amg,
        },
        block_size: args.block_size,
        amg: args.amg.params(0.0)?,
        amg_precision: match args.amg.amg_precision {
            AmgPrecisionArg::F32 => AmgPrecision::F32,
            AmgPrecisionArg::Same => AmgPrecision::Same,
        },
        precision: match args.precision {
            PrecisionArg::F32 => SolvePrecision::F32,
            PrecisionArg::F64 => SolvePrecision::F64,
            PrecisionArg::Mixed => SolvePrecision::Mixed,
        },
        tol: args.tol,
        max_iter: args.max_iter,
        restart: args.restart,
        inner_tol: args.inner_tol,
        inner_max_iter: args.inner_max_iter,
        format: args.format.format(),
        warmup: args.warmup,
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    let options = match options(&args).and_then(|o| o.check().map(|()| o)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("solve: error: {e}");
            return ExitCode::from(2);
        }
    };
    if !["contiguous", "metis"].contains(&args.partition.as_str()) {
        eprintln!(
            "solve: error: invalid value `{}` for --partition: expected `contiguous` or `metis`",
            args.partition
        );
        return ExitCode::from(2);
    }
    if args.distributed || common::under_mpirun() {
        #[cfg(feature = "mpi")]
        if let Some(why) = solve_dist::unsupported(&args) {
            eprintln!("solve: error: {why}");
            return ExitCode::from(2);
        }
        #[cfg(feature = "mpi")]
        return match solve_dist::run(&args) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(3),
            Err(e) => {
                eprintln!("solve: error: {e}");
                // The documented statuses, as in one process: 2 for bad input.
                common::exit_code(&e)
            }
        };
        #[cfg(not(feature = "mpi"))]
        if args.distributed {
            eprintln!("solve: error: --distributed needs a build with `--features mpi`");
            return ExitCode::from(2);
        }
    }
    common::json_mode(args.json);
    let result = (|| -> Result<bool> {
        let t0 = Instant::now();
        let a = load(&args.matrix)?;
        let s = a.stats();
        say!(
            "matrix: {} x {}, {} nonzeros (row length {}..{}, mean {:.2}); built in {:.2} s",
            a.nrows(),
            a.ncols(),
            a.nnz(),
            s.min,
            s.max,
            s.mean,
            t0.elapsed().as_secs_f64()
        );
        let b = match &args.rhs {
            Some(path) => {
                let b = read_vector(path)?;
                galerkin::error::check_len("solve", "--rhs", a.nrows(), b.len())?;
                b
            }
            None => {
                // b = A·1, so the exact solution is known.
                let cpu = Cpu::new();
                let mut b = Vector::zeros(&cpu, a.nrows())?;
                a.spmv(1.0, &Vector::full(&cpu, a.ncols(), 1.0)?, 0.0, &mut b)?;
                b.to_vec()?
            }
        };
        if let Some(path) = &args.write_matrix {
            galerkin::sparse::write_matrix_market(path, &a)?;
            say!("matrix written to {path}");
        }
        say!(
            "solver: {}, preconditioner: {}, precision: {}, tolerance {:e}",
            options.method,
            options.precond,
            options.precision,
            options.tol
        );
        let (out, rhs_given) = (args.out.clone(), args.rhs.is_some());
        let task = Task {
            args: &args,
            options: &options,
            a: &a,
            b: &b,
        };
        let (solution, memory_bytes) = galerkin::with_backend(args.backend.kind(), task)?;
        say!("format: {}", solution.format);
        if let Some(info) = &solution.amg {
            common::amg_table(info);
        }
        let SystemSolution {
            x,
            report,
            converged,
            reason,
            true_relative_residual: true_relative,
            amg,
            setup_seconds: setup_s,
            ..
        } = solution;
        let error = (!rhs_given).then(|| {
            x.iter().map(|v| (v - 1.0) * (v - 1.0)).sum::<f64>().sqrt()
                / (x.len().max(1) as f64).sqrt()
        });
        if args.json {
            let value = serde_json::json!({
                "ranks": 1,
                "backend": args.backend.kind().name(),
                "matrix": args.matrix,
                "rows": a.nrows(),
                "nnz": a.nnz(),
                "solver": report.solver,
                "precision": options.precision.name(),
                "converged": converged,
                "reason": reason,
                "iterations": report.iterations,
                "final_residual": finite(report.final_residual),
                "relative_residual": finite(report.relative_residual()),
                "true_relative_residual": finite(true_relative),
                "error_from_ones": error.map(finite),
                "time_s": report.time.as_secs_f64(),
                "setup_s": setup_s,
                "memory_bytes": memory_bytes,
                "precond": options.precond.name(),
                "amg": amg.as_ref().map(|info| common::amg_json(info, options.amg_precision_name())),
            });
            println!("{value}");
        }
        say!("{report}");
        say!("true relative residual of the f64 system: {true_relative:.3e}");
        if let Some(err) = error {
            say!("‖x − 1‖₂/√n = {err:.3e} (b = A·1)");
        }
        if let Some(path) = out {
            write_vector(&path, &x)?;
            say!("x written to {path}");
        }
        if !converged {
            eprintln!("solve: not converged: {reason}");
        }
        Ok(converged)
    })();
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(3),
        Err(e) => {
            eprintln!("solve: error: {e}");
            common::exit_code(&e)
        }
    }
}

/// A number for JSON: `null` where it is not finite (JSON has no NaN or infinity).
fn finite(v: f64) -> serde_json::Value {
    if v.is_finite() {
        serde_json::json!(v)
    } else {
        serde_json::Value::Null
    }
}
