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

    /// Checks that the criterion can be met and means something: `rtol` in `[0, 1)`,
    /// `atol ≥ 0`, both finite and not both zero, `max_iter ≥ 1`.
    ///
    /// ```
    /// use galerkin::solver::Stopping;
    ///
    /// assert!(Stopping::new(1e-8, 100).check("cg").is_ok());
    /// assert!(Stopping::new(2.0, 100).check("cg").is_err()); // met before the first step
    /// assert!(Stopping::new(f64::NAN, 100).check("cg").is_err());
    /// assert!(Stopping::new(0.0, 100).check("cg").is_err()); // never met
    /// assert!(Stopping::new(0.0, 100).with_atol(1e-12).check("cg").is_ok());
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) naming the field.
    pub fn check(&self, op: &'static str) -> crate::error::Result<()> {
        use crate::error::Error;
        if !(self.rtol.is_finite() && (0.0..1.0).contains(&self.rtol)) {
            return Err(Error::invalid(
                op,
                "rtol",
                format!(
                    "{}: the relative tolerance must be in [0, 1) (1 or more is met by x = 0)",
                    self.rtol
                ),
            ));
        }
        if !(self.atol.is_finite() && self.atol >= 0.0) {
            return Err(Error::invalid(
                op,
                "atol",
                format!(
                    "{}: the absolute tolerance must be finite and ≥ 0",
                    self.atol
                ),
            ));
        }
        if self.rtol == 0.0 && self.atol == 0.0 {
            return Err(Error::invalid(
                op,
                "rtol, atol",
                "both tolerances are 0: the criterion can only be met by an exact answer",
            ));
        }
        if self.max_iter == 0 {
            return Err(Error::invalid(op, "max_iter", "must be at least 1"));
        }
        Ok(())
    }

    /// Whether `residual` meets the criterion for a right-hand side of norm `rhs_norm`.
    pub fn met(&self, residual: f64, rhs_norm: f64) -> bool {
        residual <= self.target(rhs_norm)
    }
}
