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

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use galerkin::io::vtk::{UnstructuredGrid, VtkCell};
use galerkin::multigrid::{
    solve_poisson, solve_poisson_keeping, PatchForm, PoissonOptions, PoissonRhs, PoissonSolution,
    PoissonSolver, SmootherKind,
};
use galerkin::solver::driver::SolvePrecision;
use galerkin::tensor::Grid;
use galerkin::{BackendTask, Error, FullBackend, Result};

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

/// `--patch-form`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PatchFormArg {
    /// fused where its kernel fits the device's on-chip memory, else split
    Auto,
    /// the local residual and the solves in one kernel (refused where it does not fit)
    Fused,
    /// the level's operator, then the local solves (a third of the fused on-chip memory)
    Split,
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
    /// The form of the vertex-patch smoothing step.
    #[arg(long, value_enum, default_value_t = PatchFormArg::Auto)]
    patch_form: PatchFormArg,
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

/// What a run produced: the library's solution and the bytes the backend peaked at.
struct Outcome {
    s: PoissonSolution,
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

/// The library's options from the command line.
fn options(args: &Args) -> PoissonOptions {
    PoissonOptions {
        dim: args.dim,
        degree: args.degree,
        levels: args.levels,
        solver: match args.solver {
            SolverArg::Fmg => PoissonSolver::Fmg,
            SolverArg::Cg => PoissonSolver::Cg,
            SolverArg::Gmres => PoissonSolver::Gmres,
        },
        smoother: match args.smoother {
            SmootherArg::Patch => SmootherKind::Patch,
            SmootherArg::Chebyshev => SmootherKind::Chebyshev,
        },
        patch_form: match args.patch_form {
            PatchFormArg::Auto => PatchForm::Auto,
            PatchFormArg::Fused => PatchForm::Fused,
            PatchFormArg::Split => PatchForm::Split,
        },
        precision: match args.precision {
            PrecisionArg::F64 => SolvePrecision::F64,
            PrecisionArg::Mixed => SolvePrecision::Mixed,
            PrecisionArg::F32 => SolvePrecision::F32,
        },
        rhs: match args.rhs {
            RhsArg::One => PoissonRhs::One,
            RhsArg::Sine => PoissonRhs::Sine,
        },
        tol: args.tol,
        max_iter: args.max_iter,
        restart: args.restart,
        scatter: match args.scatter {
            ScatterArg::Auto => None,
            ScatterArg::Atomic => Some(true),
            ScatterArg::Colour => Some(false),
        },
        progress: !args.json && std::io::stderr().is_terminal(),
    }
}

fn check_args(args: &Args) -> Result<Grid> {
    if let Some(path) = &args.vtk {
        if !(path.ends_with(".vtu") || path.ends_with(".vtk")) {
            return Err(bad(
                "--vtk",
                format!("{path}: the file must end in .vtu or .vtk"),
            ));
        }
    }
    options(args).check()
}

struct Task<'a> {
    args: &'a Args,
}

impl BackendTask for Task<'_> {
    type Output = Outcome;
    fn run<B: FullBackend>(self, b: B) -> Result<Outcome> {
        let args = self.args;
        let options = options(args);
        options.check_fits(&b)?;
        let compile = common::compile_ahead(&b, args.no_compile_ahead, || {
            // The same kernels on at most two levels (4 cells per direction), two iterations.
            let small = PoissonOptions {
                levels: args.levels.min(2),
                max_iter: 2,
                progress: false,
                ..options
            };
            solve_poisson(&b, &small).map(drop)
        });
        let mut s = solve_poisson_keeping(&b, &options, args.vtk.is_some())?;
        let memory_bytes = common::memory_bytes(&b);
        let mut extra = compile;
        if let (Some(path), Some(u)) = (&args.vtk, &s.solution) {
            let t = Instant::now();
            write_vtk(path, s.grid, u)?;
            let vtk = t.elapsed().as_secs_f64();
            let at = s.seconds.len() - 1;
            s.seconds.insert(at, ("vtk", vtk));
            extra += vtk;
        }
        s.seconds.insert(0, ("compile", compile));
        if let Some(total) = s.seconds.iter_mut().find(|(n, _)| *n == "total") {
            total.1 += extra;
        }
        Ok(Outcome { s, memory_bytes })
    }
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

fn report(args: &Args, outcome: &Outcome) {
    let o = &outcome.s;
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
            "patch_form": o.patch_form.map(PatchForm::name),
            "precision": format!("{:?}", args.precision).to_lowercase(),
            "backend": o.device,
            "iterations": o.iterations,
            "converged": o.converged,
            "relative_residual": o.relative_residual,
            "residual_history": o.history,
            "l2_error": o.l2_error,
            "l2_error_interpolant": o.l2_error_interpolant,
            "seconds": seconds,
            "dofs_per_second": rate,
            "memory_bytes": outcome.memory_bytes,
            "memory_bytes_estimate": options(args).memory_estimate(o.grid),
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
        "  solver {:?}, smoother {:?}{}, precision {:?}, rhs {:?}",
        args.solver,
        args.smoother,
        o.patch_form
            .map_or(String::new(), |f| format!(" (patch steps {})", f.name())),
        args.precision,
        args.rhs
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
    if let Some(e) = o.l2_error_interpolant {
        println!("  L2 norm of u_h − I_h u (the interpolant): {e:.3e}");
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
                let bytes = options(&args).memory_estimate(grid);
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
        check_args(&args)?;
        let outcome = galerkin::with_backend(args.backend.kind(), Task { args: &args })?;
        report(&args, &outcome);
        Ok(outcome)
    })();
    match result {
        Ok(o) if o.s.converged => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(3),
        Err(e) => {
            eprintln!("poisson_mg: {e}");
            common::exit_code(&e)
        }
    }
}
