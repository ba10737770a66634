//! Solve `−∇²u + λu = f` on a triangle mesh with the HDG method of degree P, on any backend
//! and precision; print the stage times, the solver counts and, with `--exact`, the L2
//! errors of u, q = ∇u and the post-processed u*.
//!
//! ```text
//! cargo run --release --example hdg_poisson -- --help
//! cargo run --release --example hdg_poisson                           # sin(πx) sin(πy), P = 3
//! cargo run --release --example hdg_poisson -- --mesh perturbed:32 --degree 5 \
//!     --exact "exp(x)*cos(pi*y)" --lambda 1 --neumann 2,3 --vtk out.vtu
//! ```
//!
//! Expressions are in `x` and `y` (`pi`, `PI` and `π` are π; `--flux` also takes `nx`, `ny`),
//! parsed by [`galerkin::expr`] (at most 4096 bytes and 64 levels of nesting); `--exact`
//! alone is enough: the right-hand side `−∇²u + λu`, the Dirichlet values and the Neumann
//! flux `∇u·n` are derived from it by forward differentiation. Every boundary edge is
//! Dirichlet unless `--neumann` names its physical tag (generated squares: 1 bottom,
//! 2 right, 3 top, 4 left). Exit status: 0 converged, 3 not converged, 2 bad arguments or
//! input, 1 other errors (a device error).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use galerkin::hdg::{
    ExpressionProblem, Expressions, Hdg, HdgParams, L2Errors, MeshSpec, StageTimes,
    TracePreconditioner, TraceSolverParams,
};
use galerkin::mesh::tri::{Diagonal, TriMesh};
use galerkin::solver::Progress;
use galerkin::{BackendTask, Error, FullBackend, Result, Scalar};

#[path = "common/mod.rs"]
mod common;
use common::{BackendArg, PrecisionArg};

/// `--diagonal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DiagonalArg {
    /// every square split from (0,0) to (1,1)
    Up,
    /// every square split from (1,0) to (0,1)
    Down,
    /// alternating, a criss-cross pattern
    Alternating,
}

/// `--preconditioner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PreconditionerArg {
    /// AMG (the library's trace defaults; --amg-* apply to `amg` only) from 32,768 trace
    /// unknowns, block-Jacobi below: the faster of the two there
    Auto,
    /// inverses of the edge blocks of K
    BlockJacobi,
    /// Chebyshev polynomial (degree --chebyshev-degree) over block-Jacobi
    Chebyshev,
    /// smoothed-aggregation algebraic multigrid set up from K (--amg-*): iterations that
    /// do not grow with the mesh
    Amg,
}

/// HDG for −∇²u + λu = f on triangles: every stage on the chosen backend.
#[derive(Parser, Debug, Clone)]
#[command(name = "hdg_poisson", version, after_help = common::EXIT_HELP)]
struct Args {
    /// The mesh: `square:N` (N x N squares of 2 triangles on [0,1]²), `perturbed:N` (the
    /// same with interior points moved at random), or a Gmsh file (`.msh`, 2.2 or 4.1)
    /// with 3-node triangles and tagged boundary lines.
    #[arg(long, default_value = "square:16")]
    mesh: String,
    /// How the generated squares are split.
    #[arg(long, value_enum, default_value_t = DiagonalArg::Up)]
    diagonal: DiagonalArg,
    /// Seed of the perturbation of `perturbed:N`.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Gmsh files: the tag given to boundary lines without a physical tag (default: such
    /// lines are an error).
    #[arg(long)]
    untagged_as: Option<i32>,
    /// Polynomial degree P (1..=9).
    #[arg(long, default_value_t = 3)]
    degree: usize,
    /// Stabilisation τ > 0.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    tau: f64,
    /// λ ≥ 0 in −∇²u + λu = f.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    lambda: f64,
    /// f(x, y) (default: −∇²u + λu of --exact).
    #[arg(long)]
    rhs: Option<String>,
    /// Dirichlet values g(x, y) (default: --exact).
    #[arg(long)]
    dirichlet: Option<String>,
    /// The exact solution u(x, y), for the errors (and the defaults of --rhs, --dirichlet,
    /// --flux). Without --rhs and --exact: sin(pi*x)*sin(pi*y).
    #[arg(long)]
    exact: Option<String>,
    /// Neumann data ∇u·n as an expression in x, y, nx, ny (default: from --exact).
    #[arg(long)]
    flux: Option<String>,
    /// Physical tags of the Neumann boundary edges (comma-separated).
    #[arg(long, value_delimiter = ',')]
    neumann: Vec<i32>,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// f64; f32; mixed = element matrices and K stored in f32, the solve in f64.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F64)]
    precision: PrecisionArg,
    /// Preconditioner of PCG on the trace system.
    #[arg(long, visible_alias = "precond", value_enum, default_value_t = PreconditionerArg::Auto)]
    preconditioner: PreconditionerArg,
    #[command(flatten)]
    amg: common::AmgArgs,
    /// Degree of the Chebyshev polynomial.
    #[arg(long, default_value_t = 4)]
    chebyshev_degree: usize,
    /// Relative residual tolerance (default 1e-10 for f64 and mixed, 1e-5 for f32).
    #[arg(long)]
    rtol: Option<f64>,
    /// PCG iteration limit.
    #[arg(long, default_value_t = 20_000)]
    max_iter: usize,
    /// Skip the post-processing u*.
    #[arg(long)]
    no_post_process: bool,
    /// Write u, q and u* for ParaView (`.vtu` or `.vtk`).
    #[arg(long)]
    vtk: Option<String>,
    /// Also write the trace matrix K (the free edges' unknowns, P + 1 Legendre modes per
    /// edge) here in Matrix Market format, e.g. to give it to another solver (with
    /// `solve --amg-near-null-stride P+1`).
    #[arg(long, value_name = "PATH")]
    write_trace: Option<String>,
    /// Sub-triangles per element side in the VTK output (default P + 1).
    #[arg(long)]
    refine: Option<usize>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Do not compile the kernels ahead on a small mesh of the same kind (on a device,
    /// compilation then counts in the stage that first launches each kernel).
    #[arg(long)]
    no_compile_ahead: bool,
}

fn bad(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument {
        op: "hdg_poisson",
        name,
        reason,
    }
}

fn mesh(args: &Args) -> Result<TriMesh> {
    MeshSpec {
        spec: &args.mesh,
        diagonal: match args.diagonal {
            DiagonalArg::Up => Diagonal::Up,
            DiagonalArg::Down => Diagonal::Down,
            DiagonalArg::Alternating => Diagonal::Alternating,
        },
        seed: args.seed,
        untagged_as: args.untagged_as,
    }
    .build(args.degree)
}

fn functions(args: &Args, mesh: &TriMesh) -> Result<ExpressionProblem> {
    let expressions = Expressions {
        rhs: args.rhs.as_deref(),
        dirichlet: args.dirichlet.as_deref(),
        exact: args.exact.as_deref(),
        flux: args.flux.as_deref(),
        lambda: args.lambda,
        neumann: !args.neumann.is_empty(),
    };
    ExpressionProblem::new(&expressions, mesh)
}

/// What a run reports.
struct Outcome {
    dofs: usize,
    iterations: usize,
    converged: bool,
    reason: String,
    amg: Option<galerkin::solver::AmgInfo>,
    times: StageTimes,
    /// Seconds spent compiling ahead (`common::compile_ahead`).
    compile: f64,
    /// `common::memory_bytes` after the run.
    memory_bytes: Option<u64>,
    errors: Option<L2Errors>,
    backend: String,
}

struct Task<'a> {
    args: &'a Args,
    mesh: &'a TriMesh,
    functions: &'a ExpressionProblem,
}

/// A spinner on stderr for a stage (only when stderr is a terminal and the table is wanted).
fn spinner(name: &str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new_spinner().with_message(format!("{name}..."));
    b.enable_steady_tick(Duration::from_millis(100));
    b
}

fn solve<B: FullBackend, V: Scalar, S: Scalar>(b: &B, task: &Task<'_>) -> Result<Outcome> {
    let compile = common::compile_ahead(b, task.args.no_compile_ahead, || {
        // The same stages on 2 x 2 squares (a Gmsh mesh's Neumann tags mean nothing there),
        // two PCG iterations, nothing written. Where the run's trace solve will take AMG
        // (`Auto` resolved as the pipeline does, the trace unknowns counted from every edge),
        // on 8 x 8 squares coarsened to 16 rows: three levels, so that the setup's kernels
        // are compiled too.
        let mut small = task.args.clone();
        let amg = match small.preconditioner {
            PreconditionerArg::Amg => true,
            PreconditionerArg::Auto => {
                b.supports(galerkin::DType::F64)
                    && task.mesh.num_edges() * (small.degree + 1)
                        >= galerkin::hdg::TRACE_AMG_MIN_DOFS
            }
            _ => false,
        };
        let n = if amg { 8 } else { 2 };
        if amg {
            if small.preconditioner == PreconditionerArg::Auto {
                // What `Auto` resolves to: `TracePreconditioner::amg()`, the library's AMG.
                small.amg.amg_theta = None;
                small.amg.amg_smoother = common::AmgSmootherArg::Chebyshev;
                small.amg.amg_degree = 3;
                small.amg.amg_cycle = common::AmgCycleArg::V;
            }
            small.preconditioner = PreconditionerArg::Amg;
            small.amg.amg_max_coarse = 16;
        }
        small.mesh = if small.mesh.starts_with("perturbed:") {
            format!("perturbed:{n}")
        } else {
            if !small.mesh.starts_with("square:") {
                small.neumann.clear();
            }
            format!("square:{n}")
        };
        small.max_iter = 2;
        small.json = true;
        small.vtk = None;
        small.write_trace = None;
        let tiny = mesh(&small)?;
        let functions = functions(&small, &tiny)?;
        let task = Task {
            args: &small,
            mesh: &tiny,
            functions: &functions,
        };
        run::<B, V, S>(b, &task).map(drop)
    });
    let mut outcome = run::<B, V, S>(b, task)?;
    outcome.compile = compile;
    outcome.memory_bytes = common::memory_bytes(b);
    Ok(outcome)
}

/// The whole pipeline, timed stage by stage.
fn run<B: FullBackend, V: Scalar, S: Scalar>(b: &B, task: &Task<'_>) -> Result<Outcome> {
    let args = task.args;
    let mut params = HdgParams::new(args.degree);
    params.tau = args.tau;
    params.lambda = args.lambda;
    let show = !args.json && std::io::stderr().is_terminal();
    let setup = show.then(|| spinner("setup"));
    let hdg = Hdg::<B, V, S>::new(b, task.mesh, params, &args.neumann);
    if let Some(bar) = setup {
        bar.finish_and_clear();
    }
    let hdg = hdg?;
    let mut solver = TraceSolverParams::for_precision::<S>();
    if let Some(rtol) = args.rtol {
        solver.stop.rtol = rtol;
    }
    solver.stop.max_iter = args.max_iter;
    solver.progress = if args.json {
        Progress::Never
    } else {
        Progress::Auto
    };
    match args.preconditioner {
        PreconditionerArg::Auto => solver.preconditioner = TracePreconditioner::Auto,
        PreconditionerArg::BlockJacobi => solver.preconditioner = TracePreconditioner::BlockJacobi,
        PreconditionerArg::Chebyshev => {
            solver.preconditioner = TracePreconditioner::Chebyshev {
                degree: args.chebyshev_degree,
            };
        }
        PreconditionerArg::Amg => {
            let p = args.amg.params(galerkin::hdg::TRACE_AMG_THETA)?;
            solver.preconditioner = TracePreconditioner::Amg {
                theta: p.theta,
                smoother: p.smoother,
                cycle: p.cycle,
                max_coarse: p.max_coarse,
            };
        }
    }
    let problem = task.functions.problem();
    // A spinner for each stage but the solve, which shows the PCG's own progress bar.
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut observe = |name: &'static str, done: bool| {
        if let Some(b) = bar.take() {
            b.finish_and_clear();
        }
        if show && !done && name != "solve" {
            bar = Some(spinner(name));
        }
    };
    let solution = hdg.run_observed(&problem, &solver, !args.no_post_process, &mut observe)?;
    let (fields, trace, times) = (solution.fields, solution.trace, solution.times);
    let errors = task.functions.errors(&hdg, &fields)?;
    if let Some(path) = &args.write_trace {
        let local = hdg.local_solvers()?;
        let load = hdg.load(&local, &problem)?;
        let k = hdg.assemble(&local, &load)?.k.to_host()?.to_csr()?;
        galerkin::sparse::write_matrix_market(path, &k)?;
        if !args.json {
            println!(
                "wrote {path}: K, {} x {}, {} entries",
                k.nrows(),
                k.ncols(),
                k.nnz()
            );
        }
    }
    if let Some(path) = &args.vtk {
        let grid = hdg.sample(&fields, args.refine.unwrap_or(args.degree + 1))?;
        grid.write(path)?;
        if !args.json {
            println!(
                "wrote {path}: {} points, {} sub-triangles",
                grid.num_points(),
                grid.num_cells()
            );
        }
    }
    Ok(Outcome {
        dofs: hdg.dofs(),
        iterations: trace.report.iterations,
        converged: trace.report.converged(),
        reason: format!("{:?}", trace.report.reason),
        amg: trace.amg,
        times,
        compile: 0.0,
        memory_bytes: None,
        errors,
        backend: b.info().to_string(),
    })
}

impl BackendTask for Task<'_> {
    type Output = Outcome;
    fn run<B: FullBackend>(self, b: B) -> Result<Outcome> {
        match self.args.precision {
            PrecisionArg::F64 => solve::<B, f64, f64>(&b, &self),
            PrecisionArg::Mixed => solve::<B, f32, f64>(&b, &self),
            PrecisionArg::F32 => solve::<B, f32, f32>(&b, &self),
        }
    }
}

fn report(args: &Args, mesh: &TriMesh, o: &Outcome) {
    let stages = o.times.stages();
    let total = o.compile + o.times.total().as_secs_f64();
    if args.json {
        let finite = |v: f64| v.is_finite().then_some(v);
        let mut seconds = serde_json::Map::new();
        seconds.insert("compile".into(), serde_json::json!(o.compile));
        for (name, d) in &stages {
            seconds.insert(name.to_string(), serde_json::json!(d.as_secs_f64()));
        }
        seconds.insert("total".into(), serde_json::json!(total));
        let mut value = serde_json::json!({
            "backend": o.backend,
            "precision": format!("{:?}", args.precision).to_lowercase(),
            "triangles": mesh.num_triangles(),
            "degree": args.degree,
            "dofs": o.dofs,
            "iterations": o.iterations,
            "converged": o.converged,
            "reason": o.reason,
            "seconds": seconds,
            "memory_bytes": o.memory_bytes,
            "precond": precond_used(args.preconditioner, o.amg.is_some()),
            "precond_requested": format!("{:?}", args.preconditioner).to_lowercase(),
            "amg": o.amg.as_ref().map(|info| common::amg_json(info, if args.precision == PrecisionArg::F32 { "f32" } else { "f64" })),
        });
        if let Some(e) = &o.errors {
            value["l2_error"] = serde_json::json!({
                "u": finite(e.u),
                "q": finite(e.q),
                "u_star": e.u_star.and_then(finite),
            });
        }
        println!("{value}");
        return;
    }
    println!("backend:     {}", o.backend);
    println!(
        "mesh:        {} ({} triangles, {} edges, h = {:.3e})",
        args.mesh,
        mesh.num_triangles(),
        mesh.num_edges(),
        mesh.h()
    );
    println!(
        "HDG:         P = {}, τ = {}, λ = {}, {:?} precision, {} trace unknowns",
        args.degree, args.tau, args.lambda, args.precision, o.dofs
    );
    println!(
        "trace solve: PCG ({}), {} iterations, {}",
        precond_used(args.preconditioner, o.amg.is_some()),
        o.iterations,
        if o.converged {
            "converged".to_string()
        } else {
            format!("NOT converged: {}", o.reason)
        }
    );
    if let Some(info) = &o.amg {
        common::amg_table(info);
    }
    println!("\n{:<16} {:>12} {:>7}", "stage", "time (ms)", "share");
    if o.compile > 0.0 {
        println!(
            "{:<16} {:>12.3} {:>6.1}%",
            "compile",
            o.compile * 1e3,
            100.0 * o.compile / total
        );
    }
    for (name, d) in stages {
        println!(
            "{:<16} {:>12.3} {:>6.1}%",
            name,
            d.as_secs_f64() * 1e3,
            100.0 * d.as_secs_f64() / total
        );
    }
    println!("{:<16} {:>12.3}", "total", total * 1e3);
    if let Some(e) = &o.errors {
        println!("\n{:<16} {:>12}", "L2 error", "");
        println!("{:<16} {:>12.4e}", "u", e.u);
        println!("{:<16} {:>12.4e}", "q = ∇u", e.q);
        if let Some(s) = e.u_star {
            println!("{:<16} {:>12.4e}", "u* (P+1)", s);
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = (|| -> Result<Outcome> {
        // Before any setup: the tolerance the trace solve will need.
        if let Some(rtol) = args.rtol {
            common::check_tolerance("--rtol", rtol)?;
        }
        args.amg.params(galerkin::hdg::TRACE_AMG_THETA)?;
        // Options of `solve` that the trace solve has its own answer to: refused, not ignored.
        if args.amg.amg_near_null_stride.is_some() {
            return Err(bad(
                "--amg-near-null-stride",
                "the trace solve builds its own near-null space (the constant mode of every \
                 face); the option is `solve`'s"
                    .into(),
            ));
        }
        if args.amg.amg_improve_candidates.is_some() {
            return Err(bad(
                "--amg-improve-candidates",
                "the trace solve uses its near-null vector as it is (smoothing would fill its \
                 zero rows); the option is `solve`'s"
                    .into(),
            ));
        }
        if args.amg.amg_precision != common::AmgPrecisionArg::Same {
            return Err(bad(
                "--amg-precision",
                "the trace solve's AMG runs in the precision of --precision; the option is \
                 `solve`'s"
                    .into(),
            ));
        }
        if let Some(path) = &args.vtk {
            if !(path.ends_with(".vtu") || path.ends_with(".vtk")) {
                return Err(bad(
                    "--vtk",
                    format!("{path}: the file must end in .vtu or .vtk"),
                ));
            }
        }
        let mesh = mesh(&args)?;
        let functions = functions(&args, &mesh)?;
        let task = Task {
            args: &args,
            mesh: &mesh,
            functions: &functions,
        };
        let outcome = galerkin::with_backend(args.backend.kind(), task)?;
        report(&args, &mesh, &outcome);
        Ok(outcome)
    })();
    match result {
        Ok(o) if o.converged => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("hdg_poisson: {e}");
            common::exit_code(&e)
        }
    }
}

/// The preconditioner the trace solve used (`auto` resolved), as the JSON names it.
fn precond_used(requested: PreconditionerArg, amg: bool) -> String {
    match (requested, amg) {
        (PreconditionerArg::Auto, true) => "amg".into(),
        (PreconditionerArg::Auto, false) => "blockjacobi".into(),
        (other, _) => format!("{other:?}").to_lowercase(),
    }
}
