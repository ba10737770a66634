//! [`Stopping`]: when an iterative method stops — the one criterion of every solver, the
//! inner solves of the mixed-precision methods, iterative refinement, the HDG trace solve and
//! full multigrid.

/// Stop when `‖r‖₂ ≤ max(rtol ‖b‖₂, atol)`, or after `max_iter` iterations (V-cycles,
/// refinement steps: the method's unit of work). `Default`: `rtol = 1e-8`, `atol = 0`,
/// 1000 iterations.
///
/// ```
/// use galerkin::solver::Stopping;
///
/// let stop = Stopping::new(1e-6, 500).with_atol(1e-12);
/// assert_eq!(stop.target(2.0), 2e-6);
/// assert!(stop.met(1e-7, 1.0) && !stop.met(1e-5, 1.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stopping {
    /// Relative tolerance on `‖r‖ / ‖b‖`.
    pub rtol: f64,
    /// Absolute tolerance on `‖r‖`.
    pub atol: f64,
    /// Iteration limit.
    pub max_iter: usize,
}

impl Default for Stopping {
    fn default() -> Self {
        Stopping::new(1e-8, 1000)
    }
}

impl Stopping {
    /// Relative tolerance `rtol`, no absolute tolerance, at most `max_iter` iterations.
    pub const fn new(rtol: f64, max_iter: usize) -> Self {
        Stopping {
            rtol,
            atol: 0.0,
            max_iter,
        }
    }

    /// The same criterion with absolute tolerance `atol`.
    pub const fn with_atol(self, atol: f64) -> Self {
        Stopping { atol, ..self }
    }

    /// The residual norm to reach for a right-hand side of norm `rhs_norm`:
    /// `max(rtol ‖b‖, atol)`.
    pub fn target(&self, rhs_norm: f64) -> f64 {
        (self.rtol * rhs_norm).max(self.atol)
    }

    /// Whether `residual` meets the criterion for a right-hand side of norm `rhs_norm`.
    pub fn met(&self, residual: f64, rhs_norm: f64) -> bool {
        residual <= self.target(rhs_norm)
    }
}
