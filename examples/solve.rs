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
use galerkin::solver::{
    bicgstab, cg, fgmres, gmres, iterative_refinement, mixed_solve, pcg, Amg, AmgInfo, BlockJacobi,
    Chebyshev, ChebyshevParams, Identity, InnerSolver, Jacobi, LinearOperator, MixedOuter,
    MixedParams, MixedPrecision, Preconditioner, RefinementParams, SolveReport, SolverParams,
    Stopping,
};
use galerkin::sparse::{Csr, Format, FormatOptions, SparseMatrix};
use galerkin::{Backend, BackendTask, Cpu, DType, Element, FullBackend, Result, Scalar, Vector};

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
    /// Run the distributed solve even outside `mpirun` (one rank; feature `mpi`).
    #[arg(long)]
    distributed: bool,
    /// Keep every device buffer at most this many bytes (at least 2048): longer vectors are
    /// stored in parts and the matrix in matching blocks, as above the device's own binding
    /// limit (wgpu: 2 GiB on NVIDIA, 128 MiB on lavapipe). One process only.
    #[arg(long, value_name = "BYTES")]
    buffer_limit: Option<u64>,
}

/// Whether this process was started by an MPI launcher.
fn under_mpirun() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

struct Task<'a> {
    args: &'a Args,
    a: &'a Csr<Cpu, f64>,
    b: &'a [f64],
}

/// The operator on the device with values `V`.
fn operator<B: Backend, V: Element>(
    b: &B,
    a: &Csr<Cpu, f64>,
    format: Option<Format>,
) -> Result<SparseMatrix<B, V>> {
    let a: Csr<Cpu, V> = a.convert();
    match format {
        None => {
            let (m, choice) = SparseMatrix::auto(b, &a)?;
            say!("format: {choice}");
            Ok(m)
        }
        Some(f) => {
            say!("format: {f} (requested)");
            SparseMatrix::from_csr(b, &a, f, &FormatOptions::default())
        }
    }
}

/// A preconditioner, what its setup built and cost, and whether the solver must be flexible.
struct Built<'a, B: Backend, P: Scalar> {
    m: Box<dyn Preconditioner<B, P> + 'a>,
    amg: Option<AmgInfo>,
    /// An f32 hierarchy inside a solve in another precision: not exactly symmetric.
    flexible: bool,
    setup_s: f64,
}

/// What a solve returns to `main`.
struct Outcome {
    x: Vec<f64>,
    report: SolveReport,
    amg: Option<AmgInfo>,
    setup_s: f64,
    /// `common::memory_bytes` after the run.
    memory_bytes: Option<u64>,
}

/// A preconditioner in precision `P` for the host matrix.
fn preconditioner<'a, B: Backend, P: Scalar>(
    b: &B,
    args: &Args,
    a: &Csr<Cpu, f64>,
    op: &'a dyn LinearOperator<B, P>,
) -> Result<Built<'a, B, P>> {
    let t0 = Instant::now();
    let mut amg = None;
    let mut flexible = false;
    let m: Box<dyn Preconditioner<B, P> + 'a> = match args.precond {
        PrecondArg::Amg => {
            let params = args.amg.params(0.0, a.nrows())?;
            if args.amg.amg_precision == AmgPrecisionArg::F32 && P::DTYPE != DType::F32 {
                let h = Amg::<B, f32>::new(b, a, &params)?;
                amg = Some(h.info().clone());
                flexible = true;
                Box::new(MixedPrecision::new(h))
            } else {
                // The finest level is the solver's operator: no second copy of A.
                let h = Amg::<B, P>::with_operator(b, a, op, &params)?;
                amg = Some(h.info().clone());
                Box::new(h)
            }
        }
        PrecondArg::Jacobi => Box::new(Jacobi::<B, P>::new(b, a)?),
        PrecondArg::BlockJacobi => Box::new(BlockJacobi::<B, P>::new(b, a, args.block_size)?),
        PrecondArg::Chebyshev => Box::new(Chebyshev::new(
            b,
            op,
            &a.diagonal(),
            ChebyshevParams::default(),
        )?),
        PrecondArg::None => Box::new(Identity::new(a.nrows())),
    };
    if let Some(info) = &amg {
        common::amg_table(info);
    }
    Ok(Built {
        m,
        amg,
        flexible,
        setup_s: t0.elapsed().as_secs_f64(),
    })
}

fn params(args: &Args, flexible: bool) -> SolverParams<'static> {
    SolverParams {
        stop: Stopping::new(args.tol, args.max_iter),
        restart: args.restart,
        flexible,
        ..SolverParams::default()
    }
}

fn run_solver<B: Backend, S: Scalar>(
    args: &Args,
    op: &dyn LinearOperator<B, S>,
    m: &dyn Preconditioner<B, S>,
    flexible: bool,
    bv: &Vector<B, S>,
    x: &mut Vector<B, S>,
) -> Result<SolveReport> {
    let params = params(args, flexible);
    let with_m = (args.precond != PrecondArg::None).then_some(m);
    match args.solver {
        SolverArg::Cg if args.precond == PrecondArg::None => cg(op, bv, x, &params),
        SolverArg::Cg | SolverArg::Pcg | SolverArg::Refine => pcg(op, with_m, bv, x, &params),
        SolverArg::Bicgstab => bicgstab(op, with_m, bv, x, &params),
        SolverArg::Gmres => gmres(op, with_m, bv, x, &params),
        SolverArg::Fgmres => fgmres(op, with_m, bv, x, &params),
    }
}

/// The solve in precision `S` throughout (f32 or f64).
fn solve<B: Backend, S: Scalar>(b: &B, t: &Task<'_>) -> Result<Outcome> {
    let op = operator::<B, S>(b, t.a, t.args.format.format())?;
    if t.args.warmup && t.args.precond == PrecondArg::Amg {
        drop(preconditioner::<B, S>(b, t.args, t.a, &op)?);
    }
    let built = preconditioner::<B, S>(b, t.args, t.a, &op)?;
    let m = &built.m;
    let bv = Vector::from_slice(b, &t.b.iter().map(|&v| S::from_f64(v)).collect::<Vec<_>>())?;
    let mut x = Vector::zeros(b, t.a.ncols())?;
    if t.args.warmup {
        run_solver(
            t.args,
            &op,
            m.as_ref(),
            built.flexible,
            &bv,
            &mut Vector::zeros(b, t.a.ncols())?,
        )?;
    }
    let report = run_solver(t.args, &op, m.as_ref(), built.flexible, &bv, &mut x)?;
    Ok(Outcome {
        x: x.to_vec()?.iter().map(|v| v.as_f64()).collect(),
        report,
        amg: built.amg,
        setup_s: built.setup_s,
        memory_bytes: None,
    })
}

/// The f64 system solved to `--tol` with the work in f32 (see the header).
fn solve_mixed<B: Backend>(b: &B, t: &Task<'_>) -> Result<Outcome> {
    let bv = Vector::from_slice(b, t.b)?;
    let mut x = Vector::<B, f64>::zeros(b, t.a.ncols())?;
    let op64 = operator::<B, f64>(b, t.a, t.args.format.format())?;
    let op32 = operator::<B, f32>(b, t.a, t.args.format.format())?;
    let built = preconditioner::<B, f32>(b, t.args, t.a, &op32)?;
    let m32 = (t.args.precond != PrecondArg::None).then_some(built.m.as_ref());
    let report = if t.args.solver == SolverArg::Refine {
        let refinement = RefinementParams {
            stop: Stopping::new(t.args.tol, t.args.max_iter),
            inner_stop: Stopping::new(t.args.inner_tol, t.args.inner_max_iter),
        };
        iterative_refinement(&op64, &op32, m32, &bv, &mut x, &refinement)?
    } else {
        let spd = matches!(t.args.solver, SolverArg::Cg | SolverArg::Pcg);
        let mixed = MixedParams {
            outer: if spd {
                MixedOuter::FlexibleCg
            } else {
                MixedOuter::Fgmres
            },
            inner: if spd {
                InnerSolver::Cg
            } else {
                InnerSolver::Gmres
            },
            inner_stop: Stopping::new(t.args.inner_tol, t.args.inner_max_iter),
            inner_restart: t.args.restart,
        };
        mixed_solve(
            &op64,
            &op32,
            m32,
            &bv,
            &mut x,
            &params(t.args, true),
            &mixed,
        )?
    };
    Ok(Outcome {
        x: x.to_vec()?,
        report,
        amg: built.amg.clone(),
        setup_s: built.setup_s,
        memory_bytes: None,
    })
}

impl BackendTask for Task<'_> {
    type Output = Outcome;
    fn run<B: FullBackend>(self, b: B) -> Result<Outcome> {
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
        let outcome = match (self.args.precision, self.args.solver) {
            (PrecisionArg::F32, _) => solve::<B, f32>(&b, &self),
            (PrecisionArg::Mixed, _) | (_, SolverArg::Refine) => solve_mixed(&b, &self),
            (PrecisionArg::F64, _) => solve::<B, f64>(&b, &self),
        };
        outcome.map(|o| Outcome {
            memory_bytes: common::memory_bytes(&b),
            ..o
        })
    }
}

/// `‖b − A x‖ / ‖b‖` of the f64 system, on the host.
fn relative_residual(a: &Csr<Cpu, f64>, b: &[f64], x: &[f64]) -> Result<f64> {
    let cpu = Cpu::new();
    let mut r = Vector::from_slice(&cpu, b)?;
    a.spmv(-1.0, &Vector::from_slice(&cpu, x)?, 1.0, &mut r)?;
    // Scaled norms (the CPU backend's nrm2): no overflow or underflow on the way.
    let bnorm = Vector::from_slice(&cpu, b)?.nrm2()?;
    Ok(r.nrm2()? / if bnorm > 0.0 { bnorm } else { 1.0 })
}

/// The arguments no solve can run with: bad tolerances and counts, a solver that
/// `--precision mixed` does not have.
fn check_args(args: &Args) -> Result<()> {
    common::check_tolerance("--tol", args.tol)?;
    common::check_tolerance("--inner-tol", args.inner_tol)?;
    common::check_positive("--max-iter", args.max_iter)?;
    common::check_positive("--inner-max-iter", args.inner_max_iter)?;
    common::check_positive("--restart", args.restart)?;
    common::check_positive("--block-size", args.block_size)?;
    args.amg.params(0.0, 0)?;
    if args.precision == PrecisionArg::Mixed && args.solver == SolverArg::Bicgstab {
        return Err(galerkin::Error::InvalidArgument {
            op: "command line",
            name: "--solver",
            reason: "--precision mixed has no BiCGStab: it runs flexible CG (cg, pcg), FGMRES \
                     around f32 GMRES (gmres, fgmres) or iterative refinement (refine)"
                .into(),
        });
    }
    Ok(())
}

/// A right-hand side every solver can take: finite entries (b = A·1 of a matrix with huge
/// values may overflow) and a finite norm.
fn check_rhs(args: &Args, b: &[f64]) -> Result<()> {
    let what = if args.rhs.is_some() {
        "--rhs"
    } else {
        "b = A·1"
    };
    let refuse = |reason: String| galerkin::Error::InvalidArgument {
        op: "solve",
        name: "b",
        reason,
    };
    if let Some((i, v)) = b.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(refuse(format!("{what}: b[{}] (1-based) is {v}", i + 1)));
    }
    let norm = Vector::from_slice(&Cpu::new(), b)?.nrm2()?;
    if !norm.is_finite() {
        return Err(refuse(format!(
            "{what}: ‖b‖₂ overflows f64 (its entries are finite, but too large together): \
             scale the system"
        )));
    }
    Ok(())
}

/// Values that the precision cannot hold: with `f32` every value of A and b must be a
/// normal f32; with `mixed` (whose f32 copy only preconditions) none may overflow.
fn check_precision(args: &Args, a: &Csr<Cpu, f64>, b: &[f64]) -> Result<()> {
    let underflow = match args.precision {
        PrecisionArg::F64 if args.solver != SolverArg::Refine => return Ok(()),
        PrecisionArg::F32 => true,
        _ => false,
    };
    let refuse = |what: String, v: f64| galerkin::Error::InvalidArgument {
        op: "solve",
        name: "--precision",
        reason: format!(
            "{what} = {v:e} has no f32 value ({}): scale the system, or use --precision {}",
            if v.abs() > f32::MAX as f64 {
                "it would become infinite"
            } else {
                "it would become 0 or lose its digits"
            },
            if underflow { "mixed or f64" } else { "f64" }
        ),
    };
    if let Some((k, v)) = common::f32_unrepresentable(a.values(), underflow) {
        let (row, col) = a.entry_position(k);
        return Err(refuse(format!("A[{}, {}] (1-based)", row + 1, col + 1), v));
    }
    if let Some((i, v)) = common::f32_unrepresentable(b, underflow) {
        return Err(refuse(format!("b[{}] (1-based)", i + 1), v));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = check_args(&args) {
        eprintln!("solve: error: {e}");
        return ExitCode::from(2);
    }
    if !["contiguous", "metis"].contains(&args.partition.as_str()) {
        eprintln!(
            "solve: error: invalid value `{}` for --partition: expected `contiguous` or `metis`",
            args.partition
        );
        return ExitCode::from(2);
    }
    if args.distributed || under_mpirun() {
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
                ExitCode::FAILURE
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
        check_rhs(&args, &b)?;
        if let Some(path) = &args.write_matrix {
            galerkin::sparse::write_matrix_market(path, &a)?;
            say!("matrix written to {path}");
        }
        check_precision(&args, &a, &b)?;
        say!(
            "solver: {:?}, preconditioner: {:?}, precision: {:?}, tolerance {:e}",
            args.solver,
            args.precond,
            args.precision,
            args.tol
        );
        let (out, rhs_given) = (args.out.clone(), args.rhs.is_some());
        let task = Task {
            args: &args,
            a: &a,
            b: &b,
        };
        let Outcome {
            x,
            report,
            amg,
            setup_s,
            memory_bytes,
        } = galerkin::with_backend(args.backend.kind(), task)?;
        let true_relative = relative_residual(&a, &b, &x)?;
        // Converged only when the system as given is answered to --tol (an f32 solve, or one
        // whose data underflowed, may claim it on the system it saw).
        let converged = report.converged() && true_relative <= args.tol;
        let reason = if report.converged() && !converged {
            format!(
                "the {} solve converged, but the true relative residual of the f64 system is \
                 {true_relative:.3e} > --tol {:e}",
                format!("{:?}", args.precision).to_lowercase(),
                args.tol
            )
        } else {
            report.reason.to_string()
        };
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
                "precision": format!("{:?}", args.precision).to_lowercase(),
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
                "precond": format!("{:?}", args.precond).to_lowercase(),
                "amg": amg.as_ref().map(|info| common::amg_json(info, amg_precision(&args))),
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

/// The precision the AMG hierarchy was built in.
fn amg_precision(args: &Args) -> &'static str {
    match (args.precision, args.amg.amg_precision) {
        (PrecisionArg::F64, AmgPrecisionArg::Same) if args.solver != SolverArg::Refine => "f64",
        _ => "f32",
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
