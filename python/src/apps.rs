//! Whole pipelines as dicts: `hdg_poisson`, `poisson_mg`, `maxwell` (the examples' runs,
//! through the same library functions).

use galerkin::batched::Batch;
use galerkin::dg::{simulate_cavity, CavityOptions, CavityRun, Flux, TetMesh};
use galerkin::hdg::{
    ExpressionProblem, Expressions, Hdg, HdgParams, L2Errors, MeshSpec, StageTimes,
    TracePreconditioner, TraceSolverParams,
};
use galerkin::mesh::tri::{Diagonal, TriMesh};
use galerkin::multigrid::{
    solve_poisson_keeping, PoissonOptions, PoissonRhs, PoissonSolution, PoissonSolver, SmootherKind,
};
use galerkin::solver::driver::SolvePrecision;
use galerkin::solver::{AmgInfo, Progress};
use galerkin::{Backend, BackendTask, FullBackend, Result, Scalar};
use numpy::ndarray::{Array2, Array3};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{backend_kind, to_py, value_error};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(hdg_poisson, m)?)?;
    m.add_function(wrap_pyfunction!(poisson_mg, m)?)?;
    m.add_function(wrap_pyfunction!(maxwell, m)?)?;
    Ok(())
}

/// A batch of column vectors, `(count, rows)` in f64.
fn columns<B: Backend, V: Scalar>(x: &Batch<B, V>) -> Result<(usize, usize, Vec<f64>)> {
    Ok((
        x.count(),
        x.nrows(),
        x.to_vec()?.iter().map(|v| v.as_f64()).collect(),
    ))
}

/// What the pipeline returns to Python.
struct Outcome {
    dofs: usize,
    iterations: usize,
    converged: bool,
    reason: String,
    amg: Option<AmgInfo>,
    times: StageTimes,
    memory_bytes: Option<u64>,
    errors: Option<L2Errors>,
    backend: String,
    u: (usize, usize, Vec<f64>),
    q: (usize, usize, Vec<f64>),
    u_star: Option<(usize, usize, Vec<f64>)>,
}

struct Task<'a> {
    mesh: &'a TriMesh,
    problem: &'a ExpressionProblem,
    params: HdgParams,
    neumann: &'a [i32],
    precision: SolvePrecision,
    precond: TracePreconditioner,
    rtol: Option<f64>,
    max_iter: usize,
    post_process: bool,
}

fn run<B: FullBackend, V: Scalar, S: Scalar>(b: &B, t: &Task<'_>) -> Result<Outcome> {
    let hdg = Hdg::<B, V, S>::new(b, t.mesh, t.params, t.neumann)?;
    let mut solver = TraceSolverParams::for_precision::<S>();
    if let Some(rtol) = t.rtol {
        solver.stop.rtol = rtol;
    }
    solver.stop.max_iter = t.max_iter;
    solver.progress = Progress::Never;
    solver.preconditioner = t.precond;
    let solution = hdg.run(&t.problem.problem(), &solver, t.post_process)?;
    let errors = t.problem.errors(&hdg, &solution.fields)?;
    let f = &solution.fields;
    Ok(Outcome {
        dofs: hdg.dofs(),
        iterations: solution.trace.report.iterations,
        converged: solution.trace.report.converged(),
        reason: solution.trace.report.reason.to_string(),
        amg: solution.trace.amg.clone(),
        times: solution.times,
        memory_bytes: b
            .memory_peak()
            .or_else(galerkin::limits::peak_resident_bytes),
        errors,
        backend: b.info().to_string(),
        u: columns(&f.u)?,
        q: columns(&f.q)?,
        u_star: f.u_star.as_ref().map(columns).transpose()?,
    })
}

impl BackendTask for Task<'_> {
    type Output = Outcome;
    fn run<B: FullBackend>(self, b: B) -> Result<Outcome> {
        match self.precision {
            SolvePrecision::F64 => run::<B, f64, f64>(&b, &self),
            SolvePrecision::Mixed => run::<B, f32, f64>(&b, &self),
            SolvePrecision::F32 => run::<B, f32, f32>(&b, &self),
        }
    }
}

fn precond(name: &str) -> PyResult<TracePreconditioner> {
    match name.to_ascii_lowercase().replace('_', "-").as_str() {
        "auto" => Ok(TracePreconditioner::Auto),
        "block-jacobi" | "blockjacobi" => Ok(TracePreconditioner::BlockJacobi),
        "chebyshev" => Ok(TracePreconditioner::Chebyshev { degree: 4 }),
        "amg" => Ok(TracePreconditioner::amg()),
        _ => Err(value_error(
            "precond",
            format!(
                "unknown preconditioner `{name}`: expected auto, block-jacobi, chebyshev or amg"
            ),
        )),
    }
}

fn precond_name(p: TracePreconditioner) -> &'static str {
    match p {
        TracePreconditioner::Auto => "auto",
        TracePreconditioner::BlockJacobi => "blockjacobi",
        TracePreconditioner::Chebyshev { .. } => "chebyshev",
        TracePreconditioner::Amg { .. } => "amg",
    }
}

/// HDG for `−∇²u + λu = f` on triangles (see `galerkin.hdg_poisson`).
#[pyfunction]
#[pyo3(signature = (
    mesh="square:16", degree=3, *, tau=1.0, lam=0.0, rhs=None, dirichlet=None, exact=None,
    flux=None, neumann=Vec::new(), diagonal="up", seed=1, untagged_as=None, precision="f64",
    precond="auto", rtol=None, max_iter=20_000, post_process=true, backend="cpu"
))]
#[allow(clippy::too_many_arguments)]
fn hdg_poisson<'py>(
    py: Python<'py>,
    mesh: &str,
    degree: usize,
    tau: f64,
    lam: f64,
    rhs: Option<&str>,
    dirichlet: Option<&str>,
    exact: Option<&str>,
    flux: Option<&str>,
    neumann: Vec<i32>,
    diagonal: &str,
    seed: u64,
    untagged_as: Option<i32>,
    precision: &str,
    precond: &str,
    rtol: Option<f64>,
    max_iter: usize,
    post_process: bool,
    backend: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = backend_kind(backend)?;
    let precision: SolvePrecision = precision.parse().map_err(to_py)?;
    let requested = self::precond(precond)?;
    if let Some(rtol) = rtol {
        if !(rtol > 0.0 && rtol < 1.0) {
            return Err(value_error("rtol", format!("{rtol}: must lie in (0, 1)")));
        }
    }
    if max_iter == 0 {
        return Err(value_error("max_iter", "0: must be at least 1"));
    }
    let diagonal = match diagonal {
        "up" => Diagonal::Up,
        "down" => Diagonal::Down,
        "alternating" => Diagonal::Alternating,
        other => {
            return Err(value_error(
                "diagonal",
                format!("unknown diagonal `{other}`: expected up, down or alternating"),
            ))
        }
    };
    let mut params = HdgParams::new(degree);
    params.tau = tau;
    params.lambda = lam;
    let spec = MeshSpec {
        spec: mesh,
        diagonal,
        seed,
        untagged_as,
    };
    let expressions = Expressions {
        rhs,
        dirichlet,
        exact,
        flux,
        lambda: lam,
        neumann: !neumann.is_empty(),
    };
    let (tri, outcome) = py
        .detach(|| -> Result<(TriMesh, Outcome)> {
            let tri = spec.build(degree)?;
            let problem = ExpressionProblem::new(&expressions, &tri)?;
            let task = Task {
                mesh: &tri,
                problem: &problem,
                params,
                neumann: &neumann,
                precision,
                precond: requested,
                rtol,
                max_iter,
                post_process,
            };
            let outcome = galerkin::with_backend(kind, task)?;
            Ok((tri, outcome))
        })
        .map_err(to_py)?;
    let o = outcome;
    let d = PyDict::new(py);
    d.set_item("backend", &o.backend)?;
    d.set_item("precision", precision.name())?;
    d.set_item("triangles", tri.num_triangles())?;
    d.set_item("degree", degree)?;
    d.set_item("dofs", o.dofs)?;
    d.set_item("iterations", o.iterations)?;
    d.set_item("converged", o.converged)?;
    d.set_item("reason", &o.reason)?;
    let seconds = PyDict::new(py);
    for (name, t) in o.times.stages() {
        seconds.set_item(name, t.as_secs_f64())?;
    }
    seconds.set_item("total", o.times.total().as_secs_f64())?;
    d.set_item("seconds", seconds)?;
    d.set_item("memory_bytes", o.memory_bytes)?;
    let used = if o.amg.is_some() {
        "amg"
    } else {
        precond_name(requested.resolve(0))
    };
    d.set_item("precond", used)?;
    d.set_item("precond_requested", precond_name(requested))?;
    match &o.amg {
        Some(info) => d.set_item(
            "amg",
            crate::sparse::amg_dict(
                py,
                info,
                if precision == SolvePrecision::F32 {
                    "f32"
                } else {
                    "f64"
                },
            )?,
        )?,
        None => d.set_item("amg", py.None())?,
    }
    match &o.errors {
        Some(e) => {
            let l2 = PyDict::new(py);
            l2.set_item("u", e.u)?;
            l2.set_item("q", e.q)?;
            l2.set_item("u_star", e.u_star)?;
            d.set_item("l2_error", l2)?;
        }
        None => d.set_item("l2_error", py.None())?,
    }
    let shape_err = |e: numpy::ndarray::ShapeError| value_error("fields", e);
    let points: Vec<f64> = tri.points.iter().flatten().copied().collect();
    let points = Array2::from_shape_vec((tri.points.len(), 2), points).map_err(shape_err)?;
    d.set_item("points", points.into_pyarray(py))?;
    let cells: Vec<i64> = tri.triangles.iter().flatten().map(|&v| v as i64).collect();
    let cells = Array2::from_shape_vec((tri.triangles.len(), 3), cells).map_err(shape_err)?;
    d.set_item("cells", cells.into_pyarray(py))?;
    let (count, rows, u) = o.u;
    d.set_item(
        "u",
        Array2::from_shape_vec((count, rows), u)
            .map_err(shape_err)?
            .into_pyarray(py),
    )?;
    let (count, rows, q) = o.q;
    d.set_item(
        "q",
        Array3::from_shape_vec((count, 2, rows / 2), q)
            .map_err(shape_err)?
            .into_pyarray(py),
    )?;
    match o.u_star {
        Some((count, rows, s)) => d.set_item(
            "u_star",
            Array2::from_shape_vec((count, rows), s)
                .map_err(shape_err)?
                .into_pyarray(py),
        )?,
        None => d.set_item("u_star", py.None())?,
    }
    Ok(d)
}

struct PoissonTask {
    options: PoissonOptions,
    keep: bool,
}

impl BackendTask for PoissonTask {
    type Output = (PoissonSolution, Option<u64>);
    fn run<B: FullBackend>(self, b: B) -> Result<Self::Output> {
        let s = solve_poisson_keeping(&b, &self.options, self.keep)?;
        Ok((
            s,
            b.memory_peak()
                .or_else(galerkin::limits::peak_resident_bytes),
        ))
    }
}

/// Poisson with `Q_k` elements by geometric multigrid (see `galerkin.poisson_mg`).
#[pyfunction]
#[pyo3(signature = (
    dim=2, degree=3, levels=5, *, solver="fmg", smoother="patch", precision="f64",
    rhs="sine", tol=1e-9, max_iter=100, restart=10, scatter="auto", keep_solution=true,
    backend="cpu", patch_form="auto"
))]
#[allow(clippy::too_many_arguments)]
fn poisson_mg<'py>(
    py: Python<'py>,
    dim: usize,
    degree: usize,
    levels: usize,
    solver: &str,
    smoother: &str,
    precision: &str,
    rhs: &str,
    tol: f64,
    max_iter: usize,
    restart: usize,
    scatter: &str,
    keep_solution: bool,
    backend: &str,
    patch_form: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = backend_kind(backend)?;
    let options = PoissonOptions {
        dim,
        degree,
        levels,
        solver: match solver {
            "fmg" => PoissonSolver::Fmg,
            "cg" => PoissonSolver::Cg,
            "gmres" => PoissonSolver::Gmres,
            other => {
                return Err(value_error(
                    "solver",
                    format!("unknown solver `{other}`: expected fmg, cg or gmres"),
                ))
            }
        },
        smoother: smoother.parse::<SmootherKind>().map_err(to_py)?,
        precision: precision.parse().map_err(to_py)?,
        rhs: match rhs {
            "sine" => PoissonRhs::Sine,
            "one" => PoissonRhs::One,
            other => {
                return Err(value_error(
                    "rhs",
                    format!("unknown right-hand side `{other}`: expected sine or one"),
                ))
            }
        },
        tol,
        max_iter,
        restart,
        scatter: match scatter {
            "auto" => None,
            "atomic" => Some(true),
            "colour" | "color" => Some(false),
            other => {
                return Err(value_error(
                    "scatter",
                    format!("unknown scatter `{other}`: expected auto, atomic or colour"),
                ))
            }
        },
        patch_form: patch_form.parse().map_err(to_py)?,
        progress: false,
    };
    let grid = options.check().map_err(to_py)?;
    let task = PoissonTask {
        options,
        keep: keep_solution,
    };
    let (s, memory) = py
        .detach(|| galerkin::with_backend(kind, task))
        .map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("dim", dim)?;
    d.set_item("degree", degree)?;
    d.set_item("levels", levels)?;
    d.set_item("dofs", grid.len())?;
    d.set_item("solver", solver)?;
    d.set_item("smoother", smoother)?;
    d.set_item("patch_form", s.patch_form.map(|f| f.name()))?;
    d.set_item("precision", options.precision.name())?;
    d.set_item("backend", &s.device)?;
    d.set_item("iterations", s.iterations)?;
    d.set_item("converged", s.converged)?;
    d.set_item("relative_residual", s.relative_residual)?;
    d.set_item("residual_history", PyArray1::from_vec(py, s.history))?;
    d.set_item("l2_error", s.l2_error)?;
    d.set_item("l2_error_interpolant", s.l2_error_interpolant)?;
    let seconds = PyDict::new(py);
    let mut solve = 0.0;
    for (name, t) in &s.seconds {
        seconds.set_item(*name, *t)?;
        if *name == "solve" {
            solve = *t;
        }
    }
    d.set_item("seconds", seconds)?;
    d.set_item("dofs_per_second", grid.len() as f64 / solve.max(1e-12))?;
    d.set_item("memory_bytes", memory)?;
    d.set_item("memory_bytes_estimate", options.memory_estimate(grid))?;
    d.set_item("nodes", PyArray1::from_vec(py, grid.node_coordinates()))?;
    match s.solution {
        Some(u) => {
            let n1 = grid.n1();
            let shape: Vec<usize> = vec![n1; dim];
            let u = numpy::ndarray::ArrayD::from_shape_vec(shape, u)
                .map_err(|e| value_error("solution", e))?;
            d.set_item("u", u.into_pyarray(py))?;
        }
        None => d.set_item("u", py.None())?,
    }
    Ok(d)
}

struct CavityTask<'a> {
    mesh: &'a TetMesh,
    exact: bool,
    options: &'a CavityOptions,
    f32: bool,
}

impl BackendTask for CavityTask<'_> {
    type Output = (CavityRun, Option<u64>);
    fn run<B: FullBackend>(self, b: B) -> Result<Self::Output> {
        let run = if self.f32 {
            simulate_cavity::<B, f32>(&b, self.mesh, self.exact, self.options)?
        } else {
            simulate_cavity::<B, f64>(&b, self.mesh, self.exact, self.options)?
        };
        Ok((
            run,
            b.memory_peak()
                .or_else(galerkin::limits::peak_resident_bytes),
        ))
    }
}

/// Maxwell's equations by nodal DG on tetrahedra (see `galerkin.maxwell`).
#[pyfunction]
#[pyo3(signature = (
    mesh="box:4", order=3, *, mode=(1, 1, 0), final_time=0.5, cfl=0.5, flux="upwind",
    precision="f64", perturbation=0.0, absorbing=Vec::new(), block=256, energy_samples=10,
    max_steps=1_000_000, autotune=false, keep_fields=true, backend="cpu"
))]
#[allow(clippy::too_many_arguments)]
fn maxwell<'py>(
    py: Python<'py>,
    mesh: &str,
    order: usize,
    mode: (usize, usize, usize),
    final_time: f64,
    cfl: f64,
    flux: &str,
    precision: &str,
    perturbation: f64,
    absorbing: Vec<i32>,
    block: usize,
    energy_samples: usize,
    max_steps: usize,
    autotune: bool,
    keep_fields: bool,
    backend: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = backend_kind(backend)?;
    let f32 = match precision {
        "f64" => false,
        "f32" => true,
        other => {
            return Err(value_error(
                "precision",
                format!("unknown precision `{other}`: expected f64 or f32"),
            ))
        }
    };
    let options = CavityOptions {
        mesh: mesh.to_string(),
        perturbation,
        absorbing,
        order,
        mode: [mode.0, mode.1, mode.2],
        final_time,
        cfl,
        flux: match flux {
            "upwind" => Flux::Upwind,
            "central" => Flux::Central,
            other => {
                return Err(value_error(
                    "flux",
                    format!("unknown flux `{other}`: expected upwind or central"),
                ))
            }
        },
        autotune,
        block,
        energy_samples,
        max_steps,
        vtk: None,
        vtk_times: Vec::new(),
        progress: false,
        keep_fields,
        exact_halo_timing: false,
    };
    let (run, memory) = py
        .detach(|| -> Result<(CavityRun, Option<u64>)> {
            let (tet, exact) = options.mesh()?;
            let task = CavityTask {
                mesh: &tet,
                exact,
                options: &options,
                f32,
            };
            galerkin::with_backend(kind, task)
        })
        .map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("mesh", mesh)?;
    d.set_item("elements", run.elements)?;
    d.set_item("order", order)?;
    d.set_item("dofs", run.dofs)?;
    d.set_item("mode", mode)?;
    d.set_item("flux", flux)?;
    d.set_item("precision", precision)?;
    d.set_item("backend", &run.device)?;
    d.set_item("params", &run.params)?;
    d.set_item("final_time", final_time)?;
    d.set_item("dt", run.dt)?;
    d.set_item("steps", run.steps)?;
    d.set_item("l2_error", run.l2_error)?;
    d.set_item("l2_error_is_exact", run.exact)?;
    d.set_item("energy_initial", run.energy[0].1)?;
    d.set_item(
        "energy_final",
        run.energy.last().map_or(run.energy[0].1, |e| e.1),
    )?;
    d.set_item("energy_drift", run.energy_drift())?;
    let history: Vec<f64> = run.energy.iter().flat_map(|&(t, e)| [t, e]).collect();
    let history = Array2::from_shape_vec((run.energy.len(), 2), history)
        .map_err(|e| value_error("energy", e))?;
    d.set_item("energy_history", history.into_pyarray(py))?;
    d.set_item("seconds", run.seconds)?;
    d.set_item("setup_seconds", run.setup_seconds)?;
    d.set_item("memory_bytes", memory)?;
    d.set_item(
        "dof_updates_per_second",
        (run.dofs * run.steps) as f64 / run.seconds.max(1e-12),
    )?;
    d.set_item("unphysical", run.unphysical(&options))?;
    let stack = |rows: Vec<Vec<f64>>| -> PyResult<_> {
        let (r, c) = (rows.len(), rows.first().map_or(0, Vec::len));
        let flat: Vec<f64> = rows.into_iter().flatten().collect();
        Array2::from_shape_vec((r, c), flat).map_err(|e| value_error("fields", e))
    };
    match (run.fields, run.nodes) {
        (Some(f), Some(x)) => {
            d.set_item("fields", stack(f.into())?.into_pyarray(py))?;
            d.set_item("nodes", stack(x.into())?.into_pyarray(py))?;
        }
        _ => {
            d.set_item("fields", py.None())?;
            d.set_item("nodes", py.None())?;
        }
    }
    Ok(d)
}
