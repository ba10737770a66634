//! What a solve returns: the [`SolveReport`] and the [`StopReason`] in it.

use std::fmt;
use std::time::Duration;

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

/// How many times a solver restarts from the recomputed true residual when its recursive
/// residual claims a convergence that `‖b − A x‖` does not confirm, before it reports
/// [`StopReason::ResidualGap`].
pub const MAX_RESIDUAL_REPLACEMENTS: usize = 3;
