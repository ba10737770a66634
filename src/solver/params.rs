//! What a solver is given: [`SolverParams`] (stopping, restart, stagnation, progress) and
//! the per-iteration [`Monitor`] with what it sees ([`IterationInfo`]) and answers
//! ([`Control`]).

use std::cell::RefCell;
use std::fmt;
use std::time::Duration;

use crate::solver::stopping::Stopping;

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
    /// Stop now ([`StopReason::Stopped`](crate::solver::StopReason::Stopped)).
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
    /// Iterations without a new residual minimum before
    /// [`StopReason::Stagnation`](crate::solver::StopReason::Stagnation) (0 disables the check).
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
