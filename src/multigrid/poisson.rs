//! `−Δu = f` on the unit square or cube with continuous `Q_k` elements, matrix-free, solved
//! whole by geometric multigrid: full multigrid, or CG/GMRES preconditioned by one V-cycle,
//! in f64, f32 or mixed (the V-cycle in f32 inside the f64 solve) — what the `poisson_mg`
//! example and the Python package run. The answer is judged by the true relative residual
//! of the f64 system.
//!
//! ```
//! use galerkin::multigrid::{solve_poisson, PoissonOptions};
//! use galerkin::Cpu;
//!
//! let options = PoissonOptions { levels: 3, ..PoissonOptions::default() };
//! let s = solve_poisson(&Cpu::new(), &options)?;
//! assert!(s.converged && s.relative_residual <= 1e-9 && s.l2_error.unwrap() < 1e-3);
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::f64::consts::PI;
use std::time::Instant;

use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::multigrid::{
    fmg, interpolant, l2_error_vector, level_rhs, memory_bytes, FmgParams, Multigrid,
    MultigridParams, PatchForm, SmootherKind, MAX_LEVEL,
};
use crate::scalar::Scalar;
use crate::solver::driver::SolvePrecision;
use crate::solver::{
    fgmres, gmres, pcg, Control, IterationInfo, LinearOperator, MixedPrecision, Preconditioner,
    Progress, SolverParams, Stopping,
};
use crate::tensor::{Grid, OperatorKind, TensorOperator, TensorOps, MAX_DEGREE};
use crate::vector::Vector;

/// The method of [`solve_poisson`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PoissonSolver {
    /// Full multigrid, then V-cycles until converged (iterations = V-cycles after FMG).
    #[default]
    Fmg,
    /// CG preconditioned by a symmetric V-cycle (flexible with mixed precision).
    Cg,
    /// GMRES preconditioned by one V-cycle (flexible GMRES with mixed precision).
    Gmres,
}

/// The right-hand side of [`solve_poisson`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PoissonRhs {
    /// `f ≡ 1` (seed 003's Tables 1–3).
    One,
    /// `f = dπ² Π sin(π xᵢ)`, exact solution `u = Π sin(π xᵢ)` (seed 003's Table 7).
    #[default]
    Sine,
}

/// What [`solve_poisson`] solves and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonOptions {
    /// Dimension, 2 or 3 (default 2).
    pub dim: usize,
    /// Polynomial degree `k`, `1..=10` (default 3).
    pub degree: usize,
    /// Finest level `L`: `2^L` cells per direction, `1..=20` (default 5).
    pub levels: usize,
    /// The method (default FMG).
    pub solver: PoissonSolver,
    /// The smoother of the V-cycle (default the vertex patch).
    pub smoother: SmootherKind,
    /// The form of the patch-smoothing step (default [`PatchForm::Auto`]: fused where its
    /// kernel fits the device, else split).
    pub patch_form: PatchForm,
    /// f64; mixed (the V-cycle in f32 inside the f64 solve); f32 throughout (default f64).
    pub precision: SolvePrecision,
    /// The right-hand side (default sine, whose exact solution gives the L2 error).
    pub rhs: PoissonRhs,
    /// Relative residual `‖b − Ax‖/‖b‖` to reach (default 1e-9).
    pub tol: f64,
    /// Most iterations: V-cycles or Krylov iterations (default 100).
    pub max_iter: usize,
    /// GMRES restart length (default 10).
    pub restart: usize,
    /// Scatter of the cell operators: `Some(true)` atomics, `Some(false)` colours, `None`
    /// atomics where the backend has them (default).
    pub scatter: Option<bool>,
    /// A progress bar on stderr during the solve (default false).
    pub progress: bool,
}

impl Default for PoissonOptions {
    fn default() -> Self {
        PoissonOptions {
            dim: 2,
            degree: 3,
            levels: 5,
            solver: PoissonSolver::Fmg,
            smoother: SmootherKind::Patch,
            patch_form: PatchForm::Auto,
            precision: SolvePrecision::F64,
            rhs: PoissonRhs::Sine,
            tol: 1e-9,
            max_iter: 100,
            restart: 10,
            scatter: None,
            progress: false,
        }
    }
}

fn bad(name: &'static str, reason: String) -> Error {
    Error::invalid("poisson_mg", name, reason)
}

impl PoissonOptions {
    /// The finest grid, the options checked.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option out of range (more than `2^32`
    /// unknowns included).
    pub fn check(&self) -> Result<Grid> {
        if self.dim != 2 && self.dim != 3 {
            return Err(bad(
                "dim",
                format!("{}: the dimension must be 2 or 3", self.dim),
            ));
        }
        if !(1..=MAX_DEGREE).contains(&self.degree) {
            return Err(bad(
                "degree",
                format!("{}: must be in 1..={MAX_DEGREE}", self.degree),
            ));
        }
        if !(1..=MAX_LEVEL).contains(&self.levels) {
            return Err(bad(
                "levels",
                format!("{}: must be in 1..={MAX_LEVEL}", self.levels),
            ));
        }
        if !(self.tol > 0.0 && self.tol < 1.0) {
            return Err(bad(
                "tol",
                format!("{}: a relative tolerance must lie in (0, 1)", self.tol),
            ));
        }
        for (name, n) in [("restart", self.restart), ("max_iter", self.max_iter)] {
            if n == 0 {
                return Err(bad(name, "0: must be at least 1".into()));
            }
        }
        let grid = Grid {
            dim: self.dim,
            degree: self.degree,
            cells: 1 << self.levels,
        };
        let n1 = grid.n1() as u128;
        if n1.pow(self.dim as u32) > u32::MAX as u128 {
            return Err(bad(
                "levels",
                format!(
                    "{n1}^{} nodes: more than 2^32 unknowns are not supported",
                    self.dim
                ),
            ));
        }
        Ok(grid)
    }

    /// Bytes of (outer vector, V-cycle value).
    fn value_bytes(&self) -> (u64, u64) {
        match self.precision {
            SolvePrecision::F64 => (8, 8),
            SolvePrecision::Mixed => (8, 4),
            SolvePrecision::F32 => (4, 4),
        }
    }

    /// The device bytes a solve on `grid` needs, estimated before it starts: the hierarchy,
    /// the method's vectors, the f64 check.
    pub fn memory_estimate(&self, grid: Grid) -> u64 {
        let (s, t) = self.value_bytes();
        let n = grid.len() as u64;
        // Saturating: a huge restart length gives an estimate no device holds, never a
        // wrapped small one.
        let restart = self.restart as u64;
        let outer = match self.solver {
            PoissonSolver::Fmg => 5,
            PoissonSolver::Cg => 6,
            PoissonSolver::Gmres if s != t => restart.saturating_mul(2).saturating_add(6),
            PoissonSolver::Gmres => restart.saturating_add(4),
        };
        memory_bytes(grid, self.smoother, t as usize)
            .saturating_add(outer.saturating_mul(n).saturating_mul(s))
            .saturating_add(n.saturating_mul(3 * 8))
    }

    /// The load `f = scale Π g(xᵢ)` and the exact solution `Π g(xᵢ)` (sine only).
    fn load(&self) -> (f64, fn(f64) -> f64) {
        match self.rhs {
            PoissonRhs::One => (1.0, |_| 1.0),
            PoissonRhs::Sine => (self.dim as f64 * PI * PI, |x| (PI * x).sin()),
        }
    }
}

/// What [`solve_poisson`] returns.
#[derive(Clone, Debug)]
pub struct PoissonSolution {
    /// The backend's description.
    pub device: String,
    /// The finest grid.
    pub grid: Grid,
    /// The form the patch-smoothing steps took ([`Multigrid::patch_form`]).
    pub patch_form: Option<PatchForm>,
    /// V-cycles after FMG, or Krylov iterations.
    pub iterations: usize,
    /// Whether the method converged **and** the true relative residual of the f64 system
    /// meets the tolerance.
    pub converged: bool,
    /// `‖b − Ax‖/‖b‖` of the f64 system.
    pub relative_residual: f64,
    /// The method's relative residuals, one per iteration.
    pub history: Vec<f64>,
    /// The L2 error against `Π sin(π xᵢ)` ([`PoissonRhs::Sine`] only), by Gauss
    /// quadrature with `k + 2` points per direction.
    pub l2_error: Option<f64>,
    /// `‖u_h − I_h u‖_{L²}`, the L2 norm of the difference between the solution and the
    /// nodal interpolant of the exact one ([`PoissonRhs::Sine`] only): superconvergent, the
    /// candidate for the quantity in seed 003's Table 7 (`docs/history/seed-003-conventions.md`).
    pub l2_error_interpolant: Option<f64>,
    /// Seconds per phase (`setup`, `rhs`, `solve`, `error`) and `total`.
    pub seconds: Vec<(&'static str, f64)>,
    /// The nodal solution (in f64, the grid's node order) where asked for.
    pub solution: Option<Vec<f64>>,
}

/// Solves the problem `options` describe on `backend`; with `keep_solution`, the nodal
/// values come back too. See the [module documentation](self).
///
/// # Errors
/// [`Error::InvalidArgument`] for bad options ([`PoissonOptions::check`]),
/// [`Error::ResourceLimit`] for a problem whose vectors cannot fit the device (refused
/// before anything is allocated), device errors. A solve that stops without converging is
/// not an error: see [`PoissonSolution::converged`].
pub fn solve_poisson<B: Backend + TensorOps>(
    backend: &B,
    options: &PoissonOptions,
) -> Result<PoissonSolution> {
    solve_poisson_keeping(backend, options, false)
}

/// [`solve_poisson`], with the nodal solution in [`PoissonSolution::solution`] when
/// `keep_solution`.
///
/// # Errors
/// As [`solve_poisson`].
pub fn solve_poisson_keeping<B: Backend + TensorOps>(
    backend: &B,
    options: &PoissonOptions,
    keep_solution: bool,
) -> Result<PoissonSolution> {
    let grid = options.check()?;
    match options.precision {
        SolvePrecision::F64 => run::<B, f64, f64>(backend, options, grid, keep_solution),
        SolvePrecision::Mixed => run::<B, f64, f32>(backend, options, grid, keep_solution),
        SolvePrecision::F32 => run::<B, f32, f32>(backend, options, grid, keep_solution),
    }
}

impl PoissonOptions {
    /// [`check`](Self::check), and whether the solve fits `backend`'s memory: what
    /// [`solve_poisson`] refuses before it allocates anything.
    ///
    /// # Errors
    /// As [`check`](Self::check); [`Error::ResourceLimit`] with the bytes needed and allowed.
    pub fn check_fits<B: Backend>(&self, backend: &B) -> Result<Grid> {
        let grid = self.check()?;
        match self.precision {
            SolvePrecision::F64 => check_memory::<B, f64, f64>(backend, self, grid)?,
            SolvePrecision::Mixed => check_memory::<B, f64, f32>(backend, self, grid)?,
            SolvePrecision::F32 => check_memory::<B, f32, f32>(backend, self, grid)?,
        }
        Ok(grid)
    }
}

/// Refuses up front a problem whose vectors cannot fit the device.
fn check_memory<B: Backend, S: Scalar, T: Scalar>(
    b: &B,
    options: &PoissonOptions,
    grid: Grid,
) -> Result<()> {
    let n = grid.len() as u64;
    let needed = options.memory_estimate(grid);
    let largest = n * std::mem::size_of::<S>().max(std::mem::size_of::<T>()) as u64;
    let what = || {
        format!(
            "{n} unknowns ({}D Q{}, level {}) with the {:?} solver",
            options.dim, options.degree, options.levels, options.solver
        )
    };
    // cubecl's pools round allocations up to pages: leave a quarter of the device free.
    if let Some(memory) = b.info().memory_bytes {
        let usable = memory / 4 * 3;
        if needed > usable {
            return Err(Error::ResourceLimit {
                backend: b.info().to_string(),
                what: what(),
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
                "{}: one vector of {largest} bytes, about {needed} bytes in all,",
                what()
            ),
            requested: largest,
            limit,
        });
    }
    Ok(())
}

/// The whole pipeline, timed phase by phase: outer vectors in `S`, the V-cycle in `T`.
fn run<B: Backend + TensorOps, S: Scalar, T: Scalar>(
    b: &B,
    options: &PoissonOptions,
    grid: Grid,
    keep_solution: bool,
) -> Result<PoissonSolution> {
    check_memory::<B, S, T>(b, options, grid)?;
    let start = Instant::now();
    let mut seconds = Vec::new();
    let mut lap = |name: &'static str, t: &mut Instant| {
        seconds.push((name, t.elapsed().as_secs_f64()));
        *t = Instant::now();
    };
    let mut t = Instant::now();
    let params = MultigridParams {
        smoother: options.smoother,
        atomic: options.scatter,
        symmetric: options.solver == PoissonSolver::Cg,
        patch_form: options.patch_form,
    };
    let mg = Multigrid::<B, T>::new(b, options.dim, options.degree, options.levels, params)?;
    let patch_form = mg.patch_form();
    let mut a = TensorOperator::<B, S>::new(b, grid, OperatorKind::Laplace)?;
    if let Some(atomic) = params.atomic {
        a = a.with_scatter(atomic)?;
    }
    b.synchronize()?;
    lap("setup", &mut t);
    let (scale, g) = options.load();
    let rhs: Vec<Vector<B, T>> = if options.solver == PoissonSolver::Fmg {
        (1..=options.levels)
            .map(|l| level_rhs::<B, T>(b, mg.level_grid(l).expect("level in range"), scale, g))
            .collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    let rhs_s = level_rhs::<B, S>(b, grid, scale, g)?;
    b.synchronize()?;
    lap("rhs", &mut t);
    let mut x = Vector::<B, S>::zeros(b, grid.len())?;
    let stop = Stopping::new(options.tol, options.max_iter);
    let (iterations, converged, history) = match options.solver {
        PoissonSolver::Fmg => {
            let bar = options.progress.then(|| {
                let p =
                    indicatif::ProgressBar::new(options.max_iter as u64).with_message("V-cycles");
                p.set_style(
                    indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} {prefix}")
                        .expect("a valid template"),
                );
                p
            });
            let params = FmgParams::new(stop).with_monitor(|info: &IterationInfo| {
                if let Some(p) = &bar {
                    p.set_position(info.iteration as u64);
                    p.set_prefix(format!("residual {:.2e}", info.relative));
                }
                Control::Continue
            });
            let r = fmg(&mg, &a, &rhs, &rhs_s, &mut x, &params);
            drop(params);
            if let Some(p) = bar {
                p.finish_and_clear();
            }
            let r = r?;
            let rel: Vec<f64> = r.residual_history.iter().map(|v| v / r.rhs_norm).collect();
            (r.cycles, r.converged, rel)
        }
        PoissonSolver::Cg | PoissonSolver::Gmres => {
            let params = SolverParams {
                stop,
                restart: options.restart,
                flexible: S::DTYPE != T::DTYPE,
                progress: if options.progress {
                    Progress::Auto
                } else {
                    Progress::Never
                },
                ..Default::default()
            };
            let mixed = MixedPrecision::<B, T, _>::new(&mg);
            let m: &dyn Preconditioner<B, S> = &mixed;
            let report = if options.solver == PoissonSolver::Cg {
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
    drop((r, b64, a64));
    // The L2 errors where the solution lives (one kernel each, the partial sums read back):
    // against u, and `u_h − I_h u` (a polynomial, measured against 0).
    let (l2_error, l2_error_interpolant) = match options.rhs {
        PoissonRhs::Sine => {
            let true_error = l2_error_vector(grid, &x64, g)?;
            let mut e = interpolant::<B, f64>(b, grid, g)?;
            e.axpby(1.0, &x64, -1.0)?;
            (Some(true_error), Some(l2_error_vector(grid, &e, |_| 0.0)?))
        }
        PoissonRhs::One => (None, None),
    };
    let solution = if keep_solution {
        Some(x64.to_vec()?)
    } else {
        None
    };
    lap("error", &mut t);
    seconds.push(("total", start.elapsed().as_secs_f64()));
    Ok(PoissonSolution {
        device: b.info().to_string(),
        grid,
        patch_form,
        iterations,
        converged: converged && relative_residual <= options.tol,
        relative_residual,
        history,
        l2_error,
        l2_error_interpolant,
        seconds,
        solution,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::Cpu;

    /// The true L2 error falls as `h^(k+1)`; `‖u_h − I_h u‖` (the quantity of seed 003's
    /// Table 7 at k = 1) as `h^(k+2)` for k ≥ 2 (superconvergence) and as `h²` with a 4x
    /// smaller constant for k = 1; both measured to a tolerance where the algebraic error
    /// does not show.
    #[test]
    fn the_interpolant_error_superconverges() {
        for (dim, k) in [(2, 2), (3, 1), (2, 3)] {
            let run = |levels| {
                let o = PoissonOptions {
                    dim,
                    degree: k,
                    levels,
                    solver: PoissonSolver::Cg,
                    tol: 1e-12,
                    ..PoissonOptions::default()
                };
                let s = solve_poisson(&Cpu::new(), &o).unwrap();
                assert!(s.converged, "{dim}D Q{k} level {levels}");
                (s.l2_error.unwrap(), s.l2_error_interpolant.unwrap())
            };
            let (coarse, fine) = (run(3), run(4));
            let rate = |a: f64, b: f64| (a / b).log2();
            let (true_rate, interpolant_rate) = (rate(coarse.0, fine.0), rate(coarse.1, fine.1));
            assert!(
                (true_rate - (k + 1) as f64).abs() < 0.3,
                "{dim}D Q{k}: {true_rate}"
            );
            let expected = if k == 1 { 2.0 } else { (k + 2) as f64 };
            assert!(
                interpolant_rate > expected - 0.3,
                "{dim}D Q{k}: {interpolant_rate}"
            );
            assert!(fine.1 < fine.0 / 3.0, "{dim}D Q{k}: {fine:?}");
        }
    }
}
