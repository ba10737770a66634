//! Solve `−Δu = f` on the unit square or cube with continuous `Q_k` elements, matrix-free,
//! by geometric multigrid with the vertex-patch smoother (seed 003): full multigrid, or
//! CG/GMRES preconditioned by one V-cycle, in f64, f32, or mixed (V-cycle in f32 inside an
//! f64 solve).
//!
//! ```text
//! cargo run --release --example poisson_mg -- --help
//! cargo run --release --example poisson_mg                          # 2D, Q3, level 5, FMG
//! cargo run --release --example poisson_mg -- --dim 3 --degree 3 --levels 4 \
//!     --solver gmres --precision mixed --json
//! ```
//!
//! Exit status: 0 converged, 3 not converged, 2 bad arguments (or a size that cannot fit
//! the device), 1 other errors.

use std::f64::consts::PI;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use galerkin::io::vtk::{UnstructuredGrid, VtkCell};
use galerkin::multigrid::{
    fmg, l2_error_vector, level_rhs, memory_bytes, FmgParams, Multigrid, MultigridParams,
    SmootherKind, MAX_LEVEL,
};
use galerkin::solver::{
    fgmres, gmres, pcg, Control, IterationInfo, LinearOperator, MixedPrecision, Preconditioner,
    Progress, SolverParams, Stopping,
};
use galerkin::tensor::{Grid, OperatorKind, TensorOperator, MAX_DEGREE};
use galerkin::{BackendTask, Error, FullBackend, Result, Scalar, Vector};

#[path = "common/mod.rs"]
mod common;
use common::{BackendArg, PrecisionArg};

/// `--solver`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SolverArg {
    /// full multigrid, then V-cycles until converged (iterations = V-cycles after FMG)
    Fmg,
    /// conjugate gradients preconditioned by a symmetric V-cycle (flexible with mixed)
    Cg,
    /// GMRES(--restart) preconditioned by one V-cycle (flexible GMRES with mixed)
    Gmres,
}

/// `--smoother`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SmootherArg {
    /// multiplicative vertex-patch Schwarz, fast diagonalization (the seed's)
    Patch,
    /// Chebyshev–Jacobi, degree 4
    Chebyshev,
}

/// `--rhs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RhsArg {
    /// f ≡ 1 (the seed's Tables 1–3)
    One,
    /// f = dπ² Π sin(π xᵢ), exact solution u = Π sin(π xᵢ) (the seed's Table 7)
    Sine,
}

/// `--scatter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ScatterArg {
    /// atomics where the backend has them for the precision, else colours
    Auto,
    /// atomic adds
    Atomic,
    /// 2^d colours of cells
    Colour,
}

/// Poisson on [0,1]^d with Q_k elements, matrix-free, solved by geometric multigrid.
#[derive(Parser, Debug, Clone)]
#[command(name = "poisson_mg", version, after_help = common::EXIT_HELP)]
struct Args {
    /// Dimension (2 or 3).
    #[arg(long, default_value_t = 2)]
    dim: usize,
    /// Polynomial degree k (1..=10).
    #[arg(long, default_value_t = 3)]
    degree: usize,
    /// Finest level L: 2^L cells per direction (1..=20).
    #[arg(long, default_value_t = 5)]
    levels: usize,
    /// The solver.
    #[arg(long, value_enum, default_value_t = SolverArg::Fmg)]
    solver: SolverArg,
    /// The smoother of the V-cycle.
    #[arg(long, value_enum, default_value_t = SmootherArg::Patch)]
    smoother: SmootherArg,
    /// f64; mixed (V-cycle in f32 inside the f64 solve); f32 throughout.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F64)]
    precision: PrecisionArg,
    /// The right-hand side.
    #[arg(long, value_enum, default_value_t = RhsArg::Sine)]
    rhs: RhsArg,
    /// Relative residual ‖b − Ax‖/‖b‖ to reach.
    #[arg(long, default_value_t = 1e-9)]
    tol: f64,
    /// Most iterations (V-cycles or Krylov iterations).
    #[arg(long, default_value_t = 100)]
    max_iter: usize,
    /// GMRES restart length.
    #[arg(long, default_value_t = 10)]
    restart: usize,
    /// How the cell operator adds into the global vector.
    #[arg(long, value_enum, default_value_t = ScatterArg::Auto)]
    scatter: ScatterArg,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// Write the solution (nodal values on the grid of nodes) to this `.vtu`/`.vtk` file.
    #[arg(long)]
    vtk: Option<String>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Do not compile the kernels ahead on a small problem of the same kind (on a device,
    /// compilation then counts in the phase that first launches each kernel).
    #[arg(long)]
    no_compile_ahead: bool,
    /// Print the unknowns and the device memory the run would need (`memory_bytes_estimate`,
    /// as JSON with --json), and stop.
    #[arg(long)]
    dry_run: bool,
}

/// What a run produced.
struct Outcome {
    device: String,
    grid: Grid,
    iterations: usize,
    converged: bool,
    relative_residual: f64,
    history: Vec<f64>,
    l2_error: Option<f64>,
    seconds: Vec<(&'static str, f64)>,
    /// `common::memory_bytes` after the run.
    memory_bytes: Option<u64>,
}

fn bad(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument {
        op: "poisson_mg",
        name,
        reason,
    }
}

fn check_args(args: &Args) -> Result<Grid> {
    if args.dim != 2 && args.dim != 3 {
        return Err(bad(
            "--dim",
            format!("{}: the dimension must be 2 or 3", args.dim),
        ));
    }
    if !(1..=MAX_DEGREE).contains(&args.degree) {
        return Err(bad(
            "--degree",
            format!("{}: must be in 1..={MAX_DEGREE}", args.degree),
        ));
    }
    if !(1..=MAX_LEVEL).contains(&args.levels) {
        return Err(bad(
            "--levels",
            format!("{}: must be in 1..={MAX_LEVEL}", args.levels),
        ));
    }
    common::check_tolerance("--tol", args.tol)?;
    common::check_positive("--restart", args.restart)?;
    common::check_positive("--max-iter", args.max_iter)?;
    if let Some(path) = &args.vtk {
        if !(path.ends_with(".vtu") || path.ends_with(".vtk")) {
            return Err(bad(
                "--vtk",
                format!("{path}: the file must end in .vtu or .vtk"),
            ));
        }
    }
    let grid = Grid {
        dim: args.dim,
        degree: args.degree,
        cells: 1 << args.levels,
    };
    let n1 = grid.n1() as u128;
    if n1.pow(args.dim as u32) > u32::MAX as u128 {
        return Err(bad(
            "--levels",
            format!(
                "{n1}^{} nodes: more than 2^32 unknowns are not supported",
                args.dim
            ),
        ));
    }
    Ok(grid)
}

/// The load `f = scale Π g(xᵢ)` and the exact solution `Π g(xᵢ)` (sine only).
fn load(args: &Args) -> (f64, fn(f64) -> f64) {
    match args.rhs {
        RhsArg::One => (1.0, |_| 1.0),
        RhsArg::Sine => (args.dim as f64 * PI * PI, |x| (PI * x).sin()),
    }
}

struct Task<'a> {
    args: &'a Args,
    grid: Grid,
}

impl BackendTask for Task<'_> {
    type Output = Outcome;
    fn run<B: FullBackend>(self, b: B) -> Result<Outcome> {
        match self.args.precision {
            PrecisionArg::F64 => solve::<B, f64, f64>(&b, &self),
            PrecisionArg::Mixed => solve::<B, f64, f32>(&b, &self),
            PrecisionArg::F32 => solve::<B, f32, f32>(&b, &self),
        }
    }
}

/// Bytes of (outer vector, V-cycle value) in the precision `args` asks for.
fn value_bytes(args: &Args) -> (u64, u64) {
    match args.precision {
        PrecisionArg::F64 => (8, 8),
        PrecisionArg::Mixed => (8, 4),
        PrecisionArg::F32 => (4, 4),
    }
}

/// The device bytes a run needs, estimated before it starts (`--dry-run`, the JSON's
/// `memory_bytes_estimate`): the hierarchy, the solver's vectors, the f64 check.
fn memory_estimate(args: &Args, grid: Grid) -> u64 {
    let (s, t) = value_bytes(args);
    let n = grid.len() as u64;
    let outer = match args.solver {
        SolverArg::Fmg => 5,
        SolverArg::Cg => 6,
        SolverArg::Gmres if s != t => 2 * args.restart as u64 + 6,
        SolverArg::Gmres => args.restart as u64 + 4,
    };
    memory_bytes(grid, smoother_kind(args), t as usize) + outer * n * s + 3 * n * 8
}

/// Refuses up front a problem whose vectors cannot fit the device.
fn check_memory<B: FullBackend, S: Scalar, T: Scalar>(
    b: &B,
    args: &Args,
    grid: Grid,
) -> Result<()> {
    let n = grid.len() as u64;
    let needed = memory_estimate(args, grid);
    let largest = n * std::mem::size_of::<S>().max(std::mem::size_of::<T>()) as u64;
    // cubecl's pools round allocations up to pages: leave a quarter of the device free.
    if let Some(memory) = b.info().memory_bytes {
        let usable = memory / 4 * 3;
        if needed > usable {
            return Err(Error::ResourceLimit {
                backend: b.info().to_string(),
                what: format!(
                    "{n} unknowns ({}D Q{}, level {}) with the {:?} solver",
                    args.dim, args.degree, args.levels, args.solver
                ),
                requested: needed,
                limit: usable,
            });
        }
    }
    let limit = b.info().max_buffer_bytes;
    if largest > limit {
        return Err(Error::ResourceLimit {
            backend: b.info().to_string(),
            what: format!(
                "{} unknowns ({}D Q{}, level {}): one vector of {largest} bytes, about {needed} bytes in all,",
                n, args.dim, args.degree, args.levels
            ),
            requested: largest,
            limit,
        });
    }
    Ok(())
}

fn smoother_kind(args: &Args) -> SmootherKind {
    match args.smoother {
        SmootherArg::Patch => SmootherKind::Patch,
        SmootherArg::Chebyshev => SmootherKind::Chebyshev,
    }
}

fn solve<B: FullBackend, S: Scalar, T: Scalar>(b: &B, task: &Task<'_>) -> Result<Outcome> {
    check_memory::<B, S, T>(b, task.args, task.grid)?;
    let compile = common::compile_ahead(b, task.args.no_compile_ahead, || {
        // The same kernels on at most two levels (4 cells per direction), two iterations.
        let mut small = task.args.clone();
        small.levels = small.levels.min(2);
        small.max_iter = 2;
        small.vtk = None;
        small.json = true;
        let grid = Grid {
            cells: 1 << small.levels,
            ..task.grid
        };
        run::<B, S, T>(b, &Task { args: &small, grid }).map(drop)
    });
    let mut outcome = run::<B, S, T>(b, task)?;
    outcome.memory_bytes = common::memory_bytes(b);
    outcome.seconds.insert(0, ("compile", compile));
    if let Some(total) = outcome.seconds.iter_mut().find(|(n, _)| *n == "total") {
        total.1 += compile;
    }
    Ok(outcome)
}

/// The whole pipeline, timed phase by phase.
fn run<B: FullBackend, S: Scalar, T: Scalar>(b: &B, task: &Task<'_>) -> Result<Outcome> {
    let (args, grid) = (task.args, task.grid);
    let show = !args.json && std::io::stderr().is_terminal();
    let start = Instant::now();
    let mut seconds = Vec::new();
    let mut lap = |name: &'static str, t: &mut Instant| {
        seconds.push((name, t.elapsed().as_secs_f64()));
        *t = Instant::now();
    };
    let mut t = Instant::now();
    let params = MultigridParams {
        smoother: smoother_kind(args),
        atomic: match args.scatter {
            ScatterArg::Auto => None,
            ScatterArg::Atomic => Some(true),
            ScatterArg::Colour => Some(false),
        },
        symmetric: args.solver == SolverArg::Cg,
    };
    let mg = Multigrid::<B, T>::new(b, args.dim, args.degree, args.levels, params)?;
    let mut a = TensorOperator::<B, S>::new(b, grid, OperatorKind::Laplace)?;
    if let Some(atomic) = params.atomic {
        a = a.with_scatter(atomic)?;
    }
    b.synchronize()?;
    lap("setup", &mut t);
    let (scale, g) = load(args);
    let rhs: Vec<Vector<B, T>> = if args.solver == SolverArg::Fmg {
        (1..=args.levels)
            .map(|l| level_rhs::<B, T>(b, mg.level_grid(l).expect("level in range"), scale, g))
            .collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    let rhs_s = level_rhs::<B, S>(b, grid, scale, g)?;
    b.synchronize()?;
    lap("rhs", &mut t);
    let mut x = Vector::<B, S>::zeros(b, grid.len())?;
    let bar = show.then(|| {
        let p = indicatif::ProgressBar::new(args.max_iter as u64).with_message("V-cycles");
        p.set_style(
            indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} {prefix}")
                .expect("a valid template"),
        );
        p
    });
    let (iterations, converged, history) = match args.solver {
        SolverArg::Fmg => {
            let params = FmgParams::new(Stopping::new(args.tol, args.max_iter)).with_monitor(
                |info: &IterationInfo| {
                    if let Some(p) = &bar {
                        p.set_position(info.iteration as u64);
                        p.set_prefix(format!("residual {:.2e}", info.relative));
                    }
                    Control::Continue
                },
            );
            let r = fmg(&mg, &a, &rhs, &rhs_s, &mut x, &params)?;
            let rel: Vec<f64> = r.residual_history.iter().map(|v| v / r.rhs_norm).collect();
            (r.cycles, r.converged, rel)
        }
        SolverArg::Cg | SolverArg::Gmres => {
            if let Some(p) = &bar {
                p.finish_and_clear();
            }
            let params = SolverParams {
                stop: Stopping::new(args.tol, args.max_iter),
                restart: args.restart,
                flexible: S::DTYPE != T::DTYPE,
                progress: if args.json {
                    Progress::Never
                } else {
                    Progress::Auto
                },
                ..Default::default()
            };
            let mixed = MixedPrecision::<B, T, _>::new(&mg);
            let m: &dyn Preconditioner<B, S> = &mixed;
            let report = if args.solver == SolverArg::Cg {
                pcg(&a, Some(m), &rhs_s, &mut x, &params)?
            } else if S::DTYPE != T::DTYPE {
                // An f32 V-cycle inside an f64 solve is not exactly linear: flexible GMRES.
                fgmres(&a, Some(m), &rhs_s, &mut x, &params)?
            } else {
                gmres(&a, Some(m), &rhs_s, &mut x, &params)?
            };
            let rel = report
                .residual_history
                .iter()
                .map(|v| v / report.rhs_norm)
                .collect();
            (report.iterations, report.converged(), rel)
        }
    };
    if let Some(p) = bar {
        p.finish_and_clear();
    }
    b.synchronize()?;
    lap("solve", &mut t);
    // The true residual of the f64 system, whatever the precision of the solve.
    let a64 = TensorOperator::<B, f64>::new(b, grid, OperatorKind::Laplace)?;
    let b64 = level_rhs::<B, f64>(b, grid, scale, g)?;
    let x64 = x.to_precision::<f64>()?;
    let mut r = Vector::<B, f64>::zeros(b, grid.len())?;
    a64.apply(&x64, &mut r)?;
    r.axpby(1.0, &b64, -1.0)?;
    let relative_residual = r.nrm2()? / b64.nrm2()?;
    // The L2 error where the solution lives (one kernel, the partial sums read back).
    let l2 = match args.rhs {
        RhsArg::Sine => Some(l2_error_vector(grid, &x64, g)?),
        RhsArg::One => None,
    };
    let uh = if args.vtk.is_some() {
        Some(x64.to_vec()?)
    } else {
        None
    };
    lap("error", &mut t);
    if let (Some(path), Some(u)) = (&args.vtk, &uh) {
        write_vtk(path, grid, u)?;
        lap("vtk", &mut t);
    }
    seconds.push(("total", start.elapsed().as_secs_f64()));
    Ok(Outcome {
        device: b.info().to_string(),
        grid,
        iterations,
        converged: converged && relative_residual <= args.tol,
        relative_residual,
        history,
        l2_error: l2,
        seconds,
        memory_bytes: None,
    })
}

/// The nodal solution on the grid of nodes (each sub-cell between neighbouring nodes a
/// quad or hexahedron).
fn write_vtk(path: &str, grid: Grid, u: &[f64]) -> Result<()> {
    let n1 = grid.n1();
    let xs = grid.node_coordinates();
    let coord = |i: usize| xs[i];
    let n1z = if grid.dim == 3 { n1 } else { 1 };
    let points: Vec<[f64; 3]> = (0..grid.len())
        .map(|g| {
            let z = if grid.dim == 3 {
                coord(g / (n1 * n1))
            } else {
                0.0
            };
            [coord(g % n1), coord((g / n1) % n1), z]
        })
        .collect();
    let id = |x: usize, y: usize, z: usize| ((z * n1 + y) * n1 + x) as u32;
    let mut conn = Vec::new();
    for z in 0..n1z.saturating_sub(1).max(1) {
        for y in 0..n1 - 1 {
            for x in 0..n1 - 1 {
                conn.extend([
                    id(x, y, z),
                    id(x + 1, y, z),
                    id(x + 1, y + 1, z),
                    id(x, y + 1, z),
                ]);
                if grid.dim == 3 {
                    let top = [
                        id(x, y, z + 1),
                        id(x + 1, y, z + 1),
                        id(x + 1, y + 1, z + 1),
                        id(x, y + 1, z + 1),
                    ];
                    conn.extend(top);
                }
            }
        }
    }
    let cell = if grid.dim == 3 {
        VtkCell::Hexahedron
    } else {
        VtkCell::Quad
    };
    let mut out = UnstructuredGrid::new(points, cell, conn)?;
    out.add_point_data("u", 1, u.to_vec())?;
    out.write(path)
}

fn report(args: &Args, o: &Outcome) {
    let dofs = o.grid.len();
    let solve = o
        .seconds
        .iter()
        .find(|(n, _)| *n == "solve")
        .map_or(0.0, |s| s.1);
    let rate = dofs as f64 / solve.max(1e-12);
    if args.json {
        let seconds: serde_json::Map<String, serde_json::Value> = o
            .seconds
            .iter()
            .map(|(n, s)| (n.to_string(), serde_json::json!(s)))
            .collect();
        let value = serde_json::json!({
            "dim": args.dim,
            "degree": args.degree,
            "levels": args.levels,
            "dofs": dofs,
            "solver": format!("{:?}", args.solver).to_lowercase(),
            "smoother": format!("{:?}", args.smoother).to_lowercase(),
            "precision": format!("{:?}", args.precision).to_lowercase(),
            "backend": o.device,
            "iterations": o.iterations,
            "converged": o.converged,
            "relative_residual": o.relative_residual,
            "residual_history": o.history,
            "l2_error": o.l2_error,
            "seconds": seconds,
            "dofs_per_second": rate,
            "memory_bytes": o.memory_bytes,
            "memory_bytes_estimate": memory_estimate(args, o.grid),
        });
        println!("{value}");
        return;
    }
    println!("poisson_mg on {}", o.device);
    println!(
        "  {}D Q{} level {} ({} cells per direction): {} unknowns",
        args.dim, args.degree, args.levels, o.grid.cells, dofs
    );
    println!(
        "  solver {:?}, smoother {:?}, precision {:?}, rhs {:?}",
        args.solver, args.smoother, args.precision, args.rhs
    );
    println!(
        "  {} after {} iterations; relative residual {:.3e} (f64 system)",
        if o.converged {
            "converged"
        } else {
            "NOT converged"
        },
        o.iterations,
        o.relative_residual
    );
    if let Some(e) = o.l2_error {
        println!("  L2 error against Π sin(π xᵢ): {e:.3e}");
    }
    println!("  {:<8} {:>10}", "phase", "seconds");
    for (name, s) in &o.seconds {
        println!("  {name:<8} {s:>10.4}");
    }
    println!("  {:.3e} unknowns per second in the solve", rate);
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.dry_run {
        return match check_args(&args) {
            Ok(grid) => {
                let bytes = memory_estimate(&args, grid);
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({
                            "dim": args.dim,
                            "degree": args.degree,
                            "levels": args.levels,
                            "dofs": grid.len(),
                            "memory_bytes_estimate": bytes,
                            "bytes_per_dof": bytes as f64 / grid.len() as f64,
                        })
                    );
                } else {
                    println!(
                        "{} unknowns: about {bytes} bytes of device memory ({:.0} per unknown)",
                        grid.len(),
                        bytes as f64 / grid.len() as f64
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("poisson_mg: {e}");
                common::exit_code(&e)
            }
        };
    }
    let result = (|| -> Result<Outcome> {
        let grid = check_args(&args)?;
        let outcome = galerkin::with_backend(args.backend.kind(), Task { args: &args, grid })?;
        report(&args, &outcome);
        Ok(outcome)
    })();
    match result {
        Ok(o) if o.converged => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("poisson_mg: {e}");
            common::exit_code(&e)
        }
    }
}
