//! [`Tracker`]: the convergence bookkeeping every solver shares.

use std::io::IsTerminal;
use std::time::Instant;

use crate::solver::params::{Control, IterationInfo, Progress, SolverParams};
use crate::solver::report::{SolveReport, StopReason};

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

    /// Whether the next recorded residual is expected to meet the tolerance: the last one
    /// times the ratio of the last two is at most the target. A solver that reads its
    /// residual from a device behind work it has already queued (the next preconditioner
    /// and product) reads it first instead: a round trip, where a stop would throw that
    /// work away. Every rank of a distributed solve records the same residuals, so every
    /// rank answers the same.
    pub(crate) fn expects_convergence(&self) -> bool {
        match self.history[..] {
            [.., older, last] if older > 0.0 && last.is_finite() && last > self.target => {
                last * (last / older) <= self.target
            }
            _ => false,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::Stopping;

    #[test]
    fn expects_convergence_extrapolates_the_last_ratio() {
        let params = SolverParams {
            stop: Stopping::new(1e-3, 100),
            progress: Progress::Never,
            ..SolverParams::default()
        };
        // ‖b‖ = 1: the target is 1e-3.
        let mut t = Tracker::new(&params, "CG", 1.0);
        assert!(!t.expects_convergence(), "nothing recorded");
        t.record(0, 1.0);
        assert!(!t.expects_convergence(), "one residual: no ratio");
        t.record(1, 0.1);
        assert!(!t.expects_convergence(), "0.1 x 0.1 = 1e-2 > 1e-3");
        t.record(2, 0.011);
        assert!(!t.expects_convergence(), "0.011 x 0.11 = 1.2e-3 > 1e-3");
        t.record(3, 0.003);
        assert!(t.expects_convergence(), "0.003 x 0.27 = 8.2e-4 <= 1e-3");
        // A rise predicts no convergence; one already below the target is not "next".
        t.record(4, 0.004);
        assert!(!t.expects_convergence());
        t.record(5, 1e-4);
        assert!(!t.expects_convergence());
    }
}
