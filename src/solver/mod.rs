//! Krylov solvers and preconditioners, on every backend, in f32, f64 and mixed precision.
//!
//! | solver | for | per iteration |
//! |---|---|---|
//! | [`cg`] | SPD `A` | 1 SpMV, fused `x += αp; r −= αq; r·r`, `p·q`, `p = r + βp` |
//! | [`pcg`] | SPD `A`, SPD `M` | as CG plus `z = M⁻¹r` (fused with `r·z` for Jacobi) |
//! | [`bicgstab`] | nonsymmetric | 2 SpMV, 2 preconditioner applications |
//! | [`gmres`] | nonsymmetric, restarted GMRES(m), right preconditioning | 1 SpMV, modified Gram–Schmidt |
//! | [`fgmres`] | as GMRES, the preconditioner may change between iterations | stores `Z` as well as `V` |
//! | [`mixed_solve`] | f64 accuracy with the work in f32 | FGMRES / flexible CG (f64) around an f32 inner Krylov solve |
//! | [`iterative_refinement`] | f64 accuracy from a low-precision inner solver | f64 residual, inner solve |
//!
//! Every solver takes the operator as `&dyn` [`LinearOperator`] and the preconditioner as
//! `Option<&dyn` [`Preconditioner`]`>`, stops when `‖r‖₂ ≤ max(rtol ‖b‖₂, atol)`, and returns
//! a [`SolveReport`] with the iterations, the residual history (the recursive residual), the
//! *true* final residual `‖b − A x‖₂` recomputed at the end, and a [`StopReason`].
//! `Converged` is only reported when that true residual meets the tolerance: a recursive
//! residual that drifted from it restarts the iteration from the true residual (at most
//! [`MAX_RESIDUAL_REPLACEMENTS`] times), and ends in [`StopReason::ResidualGap`] otherwise.
//! Bad sizes are errors; numerical trouble (breakdown, indefiniteness, NaN, stagnation) is a
//! reason in the report, never a hang.
//!
//! Where the scalars live: plain [`cg`] keeps α, β and the norms on the device and reads them
//! every `check_every` iterations; [`pcg`], [`bicgstab`] and the GMRES family bring each
//! inner product to the host (their recurrences branch on them). Vectors stay on the device.
//!
//! Mixed precision means the work (storage, an inner solve, a preconditioner) in f32 and the
//! answer to the tolerance of the f64 system as given: see [`mixed_solve`]. A matrix with f32
//! values used directly as an f64 [`LinearOperator`] is the rounded matrix; a solver given it
//! solves that matrix.
//!
//! ```
//! use galerkin::solver::{cg, SolverParams, StopReason};
//! use galerkin::sparse::generate::poisson3d_7pt;
//! use galerkin::{Cpu, Vector};
//!
//! let cpu = Cpu::new();
//! let a = poisson3d_7pt(16)?;
//! let b = Vector::full(&cpu, a.nrows(), 1.0f64)?;
//! let mut x = Vector::zeros(&cpu, a.nrows())?;
//! let report = cg(&a, &b, &mut x, &SolverParams::default())?;
//! assert_eq!(report.reason, StopReason::Converged);
//! assert!(report.final_residual <= 1e-8 * report.rhs_norm * 1.01);
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::cell::RefCell;
use std::fmt;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::bundle::Backend;
use crate::error::{check_len, Result};
use crate::scalar::Scalar;
use crate::vector::Vector;

mod bicgstab;
pub(crate) mod cg;
pub(crate) mod gmres;
mod mixed;
mod precond;
mod refine;
pub(crate) mod space;
mod stopping;

pub use crate::operator::{LinearOperator, OperatorCost};
pub use bicgstab::bicgstab;
pub(crate) use bicgstab::iterate as bicgstab_iterate;
pub(crate) use cg::pcg_flexible;
pub use cg::{cg, pcg};
pub use gmres::{fgmres, gmres};
pub use mixed::{mixed_solve, InnerSolve, InnerSolver, MixedOuter, MixedParams};
pub use precond::{
    BlockJacobi, Chebyshev, ChebyshevParams, Identity, Jacobi, MixedPrecision, Preconditioner,
};
pub use refine::{iterative_refinement, RefinementParams};
pub use stopping::Stopping;

/// Why a solver stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// `‖r‖ ≤ max(rtol ‖b‖, atol)`.
    Converged,
    /// `max_iter` iterations without convergence.
    MaxIterations,
    /// A scalar the recurrence divides by vanished.
    Breakdown {
        /// Which one (`"rho"`, `"r̂·v"`, `"ω"`, ...).
        quantity: &'static str,
        /// Its value.
        value: f64,
    },
    /// CG found `pᵀAp ≤ 0`: the operator (or preconditioner) is not positive definite.
    IndefiniteOperator {
        /// The curvature `pᵀAp` found.
        curvature: f64,
    },
    /// A NaN or infinity appeared.
    NonFinite {
        /// Where (`"b"`, `"residual"`, `"pᵀAp"`, ...).
        quantity: &'static str,
    },
    /// The residual made no new minimum in `stagnation_window` iterations.
    Stagnation,
    /// The solver's recursive residual met the tolerance, but the true residual
    /// `‖b − A x‖`, recomputed, did not, even after restarting from it
    /// ([`MAX_RESIDUAL_REPLACEMENTS`] times): round-off (or an operator that is not the one
    /// the iteration assumed) keeps the answer from the tolerance.
    ResidualGap {
        /// The true residual `‖b − A x‖₂` at the end.
        true_residual: f64,
        /// The tolerance `max(rtol ‖b‖, atol)` it missed.
        target: f64,
    },
    /// The monitor asked to stop.
    Stopped,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Converged => write!(f, "converged"),
            StopReason::MaxIterations => write!(f, "reached the iteration limit"),
            StopReason::Breakdown { quantity, value } => {
                write!(f, "breakdown: {quantity} = {value:e}")
            }
            StopReason::IndefiniteOperator { curvature } => {
                write!(f, "operator not positive definite: pᵀAp = {curvature:e}")
            }
            StopReason::NonFinite { quantity } => write!(f, "NaN or infinity in {quantity}"),
            StopReason::Stagnation => write!(f, "stagnated"),
            StopReason::ResidualGap {
                true_residual,
                target,
            } => write!(
                f,
                "the recursive residual met the tolerance but the true residual ‖b − Ax‖ = \
                 {true_residual:.3e} does not (tolerance {target:.3e})"
            ),
            StopReason::Stopped => write!(f, "stopped by the monitor"),
        }
    }
}

/// When to show a progress line on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Progress {
    /// When stderr is a terminal.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// What a monitor sees after every iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterationInfo {
    /// Iterations done.
    pub iteration: usize,
    /// The (recursive) residual norm.
    pub residual: f64,
    /// `residual / ‖b‖`.
    pub relative: f64,
    /// Mean residual reduction per iteration so far.
    pub rate: f64,
    /// Time since the solve started.
    pub elapsed: Duration,
}

/// A monitor's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Continue,
    /// Stop now ([`StopReason::Stopped`]).
    Stop,
}

/// An optional callback run after every iteration; see [`SolverParams::with_monitor`].
#[derive(Default)]
pub struct Monitor<'a>(RefCell<Option<MonitorFn<'a>>>);

type MonitorFn<'a> = Box<dyn FnMut(&IterationInfo) -> Control + 'a>;

impl<'a> Monitor<'a> {
    /// A monitor calling `f`.
    pub fn new(f: impl FnMut(&IterationInfo) -> Control + 'a) -> Self {
        Monitor(RefCell::new(Some(Box::new(f))))
    }

    pub(crate) fn call(&self, info: &IterationInfo) -> Control {
        match self.0.borrow_mut().as_mut() {
            Some(f) => f(info),
            None => Control::Continue,
        }
    }
}

impl fmt::Debug for Monitor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.borrow().is_some() {
            "Monitor(set)"
        } else {
            "Monitor(none)"
        })
    }
}

/// Solver parameters. `Default`: [`Stopping::default`] (`rtol = 1e-8`, `atol = 0`, 1000
/// iterations), GMRES restart 30, stagnation window 1000, progress on terminals.
pub struct SolverParams<'a> {
    /// When to stop: `‖r‖ ≤ max(rtol ‖b‖, atol)` or `max_iter` iterations.
    pub stop: Stopping,
    /// Krylov space dimension between GMRES restarts.
    pub restart: usize,
    /// Iterations without a new residual minimum before [`StopReason::Stagnation`]
    /// (0 disables the check).
    pub stagnation_window: usize,
    /// Use the flexible (Polak–Ribière) β in PCG, for preconditioners that vary or are
    /// not exactly symmetric (e.g. applied in lower precision).
    pub flexible: bool,
    /// CG reads its device-resident scalars (and tests for convergence) every
    /// `check_every` iterations (default 1; larger values avoid a host round trip per
    /// iteration at the price of up to `check_every − 1` extra iterations).
    pub check_every: usize,
    /// Progress display.
    pub progress: Progress,
    /// Per-iteration callback.
    pub monitor: Monitor<'a>,
}

impl Default for SolverParams<'_> {
    fn default() -> Self {
        SolverParams {
            stop: Stopping::default(),
            restart: 30,
            stagnation_window: 1000,
            flexible: false,
            check_every: 1,
            progress: Progress::Auto,
            monitor: Monitor::default(),
        }
    }
}

impl<'a> SolverParams<'a> {
    /// Parameters with relative tolerance `rtol` and iteration limit `max_iter`.
    pub fn new(rtol: f64, max_iter: usize) -> Self {
        SolverParams::stopping(Stopping::new(rtol, max_iter))
    }

    /// Parameters that stop by `stop`, the rest default.
    pub fn stopping(stop: Stopping) -> Self {
        SolverParams {
            stop,
            ..Default::default()
        }
    }

    /// Adds a monitor called after every iteration.
    pub fn with_monitor(self, monitor: impl FnMut(&IterationInfo) -> Control + 'a) -> Self {
        SolverParams {
            monitor: Monitor::new(monitor),
            ..self
        }
    }
}

impl fmt::Debug for SolverParams<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SolverParams")
            .field("stop", &self.stop)
            .field("restart", &self.restart)
            .field("stagnation_window", &self.stagnation_window)
            .field("flexible", &self.flexible)
            .field("check_every", &self.check_every)
            .field("progress", &self.progress)
            .field("monitor", &self.monitor)
            .finish()
    }
}

/// The result of a solve.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveReport {
    /// The solver's name.
    pub solver: &'static str,
    /// Iterations done.
    pub iterations: usize,
    /// Why it stopped.
    pub reason: StopReason,
    /// `‖b‖₂`.
    pub rhs_norm: f64,
    /// The residual norm the solver tracked, before the first iteration and after each.
    pub residual_history: Vec<f64>,
    /// The true residual `‖b − A x‖₂`, recomputed at the end.
    pub final_residual: f64,
    /// Wall time of the solve (including the final residual).
    pub time: Duration,
    /// Operator applications.
    pub operator_applications: usize,
}

impl SolveReport {
    /// `final_residual / ‖b‖` (`final_residual` when `b = 0`).
    pub fn relative_residual(&self) -> f64 {
        if self.rhs_norm > 0.0 {
            self.final_residual / self.rhs_norm
        } else {
            self.final_residual
        }
    }

    /// Whether the solver converged.
    pub fn converged(&self) -> bool {
        self.reason == StopReason::Converged
    }
}

impl fmt::Display for SolveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} after {} iterations; true residual {:.3e} (relative {:.3e}); {:.3} s",
            self.solver,
            self.reason,
            self.iterations,
            self.final_residual,
            self.relative_residual(),
            self.time.as_secs_f64()
        )
    }
}

/// Convergence bookkeeping shared by the solvers: history, stopping tests, monitor,
/// progress display.
pub(crate) struct Tracker<'p, 'a> {
    params: &'p SolverParams<'a>,
    solver: &'static str,
    history: Vec<f64>,
    target: f64,
    rhs_norm: f64,
    best: f64,
    best_at: usize,
    start: Instant,
    bar: Option<indicatif::ProgressBar>,
    pub(crate) applications: usize,
}

impl<'p, 'a> Tracker<'p, 'a> {
    pub(crate) fn new(params: &'p SolverParams<'a>, solver: &'static str, rhs_norm: f64) -> Self {
        Self::with_progress(params, solver, rhs_norm, true)
    }

    /// As [`new`](Self::new); `may_show: false` never shows progress (ranks other than 0).
    pub(crate) fn with_progress(
        params: &'p SolverParams<'a>,
        solver: &'static str,
        rhs_norm: f64,
        may_show: bool,
    ) -> Self {
        let show = may_show
            && match params.progress {
                Progress::Always => true,
                Progress::Never => false,
                Progress::Auto => std::io::stderr().is_terminal(),
            };
        let bar = show.then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {prefix} {msg} [{elapsed_precise}]",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar.set_prefix(solver);
            bar
        });
        Tracker {
            params,
            solver,
            history: Vec::new(),
            target: params.stop.target(rhs_norm),
            rhs_norm,
            best: f64::INFINITY,
            best_at: 0,
            start: Instant::now(),
            bar,
            applications: 0,
        }
    }

    /// The iteration limit.
    pub(crate) fn max_iter(&self) -> usize {
        self.params.stop.max_iter
    }

    /// The tolerance `max(rtol ‖b‖, atol)`.
    pub(crate) fn target(&self) -> f64 {
        self.target
    }

    /// Measures stagnation afresh from iteration `k` (after a residual replacement).
    pub(crate) fn restart_stagnation(&mut self, k: usize) {
        self.best = f64::INFINITY;
        self.best_at = k;
    }

    /// Whether `residual` meets the tolerance.
    pub(crate) fn converged(&self, residual: f64) -> bool {
        residual <= self.target
    }

    /// Records the residual after `iteration` iterations; `Some(reason)` to stop.
    pub(crate) fn record(&mut self, iteration: usize, residual: f64) -> Option<StopReason> {
        self.history.push(residual);
        if !residual.is_finite() {
            return Some(StopReason::NonFinite {
                quantity: "residual",
            });
        }
        if residual < self.best {
            self.best = residual;
            self.best_at = iteration;
        }
        let rate = if iteration > 0 && self.history[0] > 0.0 {
            (residual / self.history[0]).powf(1.0 / iteration as f64)
        } else {
            1.0
        };
        let info = IterationInfo {
            iteration,
            residual,
            relative: if self.rhs_norm > 0.0 {
                residual / self.rhs_norm
            } else {
                residual
            },
            rate,
            elapsed: self.start.elapsed(),
        };
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "iteration {iteration}: residual {residual:.3e} (relative {:.3e}), rate {rate:.4}",
                info.relative
            ));
            bar.tick();
        }
        if self.params.monitor.call(&info) == Control::Stop {
            return Some(StopReason::Stopped);
        }
        if self.converged(residual) {
            return Some(StopReason::Converged);
        }
        let window = self.params.stagnation_window;
        if window > 0 && iteration >= self.best_at + window {
            return Some(StopReason::Stagnation);
        }
        if iteration >= self.params.stop.max_iter {
            return Some(StopReason::MaxIterations);
        }
        None
    }

    /// The report with a true residual the caller computed.
    pub(crate) fn report(
        mut self,
        iterations: usize,
        reason: StopReason,
        final_residual: f64,
    ) -> SolveReport {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        SolveReport {
            solver: self.solver,
            iterations,
            reason,
            rhs_norm: self.rhs_norm,
            residual_history: self.history,
            final_residual,
            time: self.start.elapsed(),
            operator_applications: self.applications,
        }
    }
}

/// How many times a solver restarts from the recomputed true residual when its recursive
/// residual claims a convergence that `‖b − A x‖` does not confirm, before it reports
/// [`StopReason::ResidualGap`].
pub const MAX_RESIDUAL_REPLACEMENTS: usize = 3;

/// One run of a solver's iteration from a residual on single-process vectors.
pub(crate) type Iterate<'i, B, S> = space::IterateWith<'i, Vector<B, S>>;

/// What every solver does around its iteration.
///
/// 1. `‖b‖` (a NaN or zero `b` ends the solve at once, with `x = 0` for a zero `b`), the
///    tracker, and the initial residual `r = b − A x`.
/// 2. The iteration, from `r`.
/// 3. The true residual `‖b − A x‖`. A claimed convergence that it does not confirm is not
///    reported: the iteration restarts from the true residual (residual replacement), at most
///    [`MAX_RESIDUAL_REPLACEMENTS`] times, and then stops with [`StopReason::ResidualGap`].
///    So `Converged` always means `final_residual ≤ max(rtol ‖b‖, atol)`.
///
/// The same for distributed vectors: [`space::drive`].
pub(crate) fn drive<B: Backend, S: Scalar>(
    params: &SolverParams<'_>,
    name: &'static str,
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    iterate: &mut Iterate<'_, B, S>,
) -> Result<SolveReport> {
    space::drive(params, name, &residual(a, b), b, x, iterate)
}

/// `r = b − A x`, as the iterations' restarts and [`drive`] compute it.
pub(crate) fn residual<'a, B: Backend, S: Scalar>(
    a: &'a dyn LinearOperator<B, S>,
    b: &'a Vector<B, S>,
) -> impl Fn(&Vector<B, S>, &mut Vector<B, S>) -> Result<()> + 'a {
    move |x, r| {
        r.copy_from(b)?;
        a.apply_add(-S::ONE, x, S::ONE, r)
    }
}

/// `‖b − A x‖₂`.
///
/// # Errors
/// Size mismatches and device errors.
pub fn true_residual<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &Vector<B, S>,
) -> Result<f64> {
    let mut r = b.try_clone()?;
    a.apply_add(-S::ONE, x, S::ONE, &mut r)?;
    Ok(r.nrm2()?.as_f64())
}

/// Checks that the preconditioner, if any, has the operator's size.
pub(crate) fn check_preconditioner<B: Backend, S: Scalar>(
    op: &'static str,
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
) -> Result<()> {
    match m {
        Some(m) => check_len(op, "preconditioner size", a.nrows(), m.size()),
        None => Ok(()),
    }
}

/// Checks that `a` is square and matches `b` and `x`.
pub(crate) fn check_system<B: Backend, S: Scalar>(
    op: &'static str,
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &Vector<B, S>,
) -> Result<()> {
    check_len(
        op,
        "ncols (the operator must be square)",
        a.nrows(),
        a.ncols(),
    )?;
    check_len(op, "b", a.nrows(), b.len())?;
    check_len(op, "x", a.ncols(), x.len())
}
