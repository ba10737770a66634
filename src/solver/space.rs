//! The vector operations the Krylov iterations need, for single-process [`Vector`]s and for
//! distributed vectors alike, so that one implementation of an iteration (and of the
//! bookkeeping around it, [`drive`]) serves both.

use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::params::SolverParams;
use crate::solver::report::{SolveReport, StopReason, MAX_RESIDUAL_REPLACEMENTS};
use crate::solver::tracker::Tracker;
use crate::vector::Vector;

/// A Krylov vector: local element-wise operations and (for distributed vectors, global)
/// reductions.
pub(crate) trait KrylovVector<S: Scalar>: Sized {
    /// Zeros with this vector's size (and distribution).
    fn zeros_like(&self) -> Result<Self>;
    /// A copy.
    fn duplicate(&self) -> Result<Self>;
    /// `self · y`.
    fn dot(&self, y: &Self) -> Result<S>;
    /// `(self · a, self · b)` (one global sum where distributed).
    fn dot2(&self, a: &Self, b: &Self) -> Result<(S, S)>;
    /// `‖self‖₂`.
    fn norm(&self) -> Result<f64>;
    /// `self += alpha x`.
    fn axpy(&mut self, alpha: S, x: &Self) -> Result<()>;
    /// `self = alpha x + beta self`.
    fn axpby(&mut self, alpha: S, x: &Self, beta: S) -> Result<()>;
    /// `self = x`.
    fn copy_from(&mut self, x: &Self) -> Result<()>;
    /// `self *= alpha`.
    fn scale(&mut self, alpha: S) -> Result<()>;
    /// Global length.
    fn global_len(&self) -> usize;
    /// Orthogonalizes `self` against the orthonormal `basis`, returning the coefficients
    /// `h` removed (`self −= Σ hᵢ basisᵢ`).
    fn orthogonalize(&mut self, basis: &[Self]) -> Result<Vec<f64>>;
    /// Every entry `value`.
    fn fill(&mut self, value: S) -> Result<()>;
    /// Whether this process may show a progress line (rank 0 only when distributed).
    fn shows_progress(&self) -> bool {
        true
    }
    /// The report as every process should give it (distributed: the slowest rank's time).
    fn finish_report(&self, report: SolveReport) -> SolveReport {
        report
    }
}

impl<B: Backend, S: Scalar> KrylovVector<S> for Vector<B, S> {
    fn zeros_like(&self) -> Result<Self> {
        Vector::zeros(self.backend(), self.len())
    }
    fn duplicate(&self) -> Result<Self> {
        self.try_clone()
    }
    fn dot(&self, y: &Self) -> Result<S> {
        Vector::dot(self, y)
    }
    fn dot2(&self, a: &Self, b: &Self) -> Result<(S, S)> {
        Ok((Vector::dot(self, a)?, Vector::dot(self, b)?))
    }
    fn norm(&self) -> Result<f64> {
        Ok(self.nrm2()?.as_f64())
    }
    fn axpy(&mut self, alpha: S, x: &Self) -> Result<()> {
        Vector::axpy(self, alpha, x)
    }
    fn axpby(&mut self, alpha: S, x: &Self, beta: S) -> Result<()> {
        Vector::axpby(self, alpha, x, beta)
    }
    fn copy_from(&mut self, x: &Self) -> Result<()> {
        Vector::copy_from(self, x)
    }
    fn fill(&mut self, value: S) -> Result<()> {
        Vector::fill(self, value)
    }
    fn scale(&mut self, alpha: S) -> Result<()> {
        Vector::scale(self, alpha)
    }
    fn global_len(&self) -> usize {
        self.len()
    }
    /// Modified Gram–Schmidt: one inner product per basis vector, each against the updated
    /// `self`.
    fn orthogonalize(&mut self, basis: &[Self]) -> Result<Vec<f64>> {
        let mut h = Vec::with_capacity(basis.len());
        for vi in basis {
            let hij = Vector::dot(self, vi)?;
            h.push(hij.as_f64());
            Vector::axpy(self, -hij, vi)?;
        }
        Ok(h)
    }
}

/// `y = M x` (or `y = A x`): a preconditioner's or an operator's application.
pub(crate) type Apply<'a, V> = dyn Fn(&V, &mut V) -> Result<()> + 'a;

/// One run of a solver's iteration from a residual: `(tracker, x, r, k0)` → the iteration
/// count reached and why it stopped. `r = b − A x` on entry; `k0` iterations are done.
pub(crate) type IterateWith<'i, V> = dyn for<'t, 'p, 'a> FnMut(&'t mut Tracker<'p, 'a>, &mut V, V, usize) -> Result<(usize, StopReason)>
    + 'i;

/// What every solver does around its iteration (see [`crate::solver`]'s `drive`):
/// `‖b‖`, the initial residual, the iteration, the true residual, residual replacement.
/// `residual(x)` is `b − A x`.
pub(crate) fn drive<S: Scalar, V: KrylovVector<S>>(
    params: &SolverParams<'_>,
    name: &'static str,
    residual: &Apply<'_, V>,
    b: &V,
    x: &mut V,
    iterate: &mut IterateWith<'_, V>,
) -> Result<SolveReport> {
    let true_residual = |x: &V| -> Result<(V, f64)> {
        let mut r = b.zeros_like()?;
        residual(x, &mut r)?;
        let norm = r.norm()?;
        Ok((r, norm))
    };
    params.stop.check(name)?;
    let bnorm = b.norm()?;
    let mut t = Tracker::with_progress(params, name, bnorm, b.shows_progress());
    if !bnorm.is_finite() || bnorm == 0.0 {
        let reason = if bnorm == 0.0 {
            x.fill(S::ZERO)?;
            t.record(0, 0.0);
            StopReason::Converged
        } else {
            StopReason::NonFinite { quantity: "b" }
        };
        let (_, true_norm) = true_residual(x)?;
        t.applications += 1;
        // x = 0 answers b = 0 unless A·0 is not 0 (NaN or infinity in A).
        let reason = if reason == StopReason::Converged && !t.converged(true_norm) {
            StopReason::NonFinite {
                quantity: "b − A x (the operator gives NaN or infinity)",
            }
        } else {
            reason
        };
        return Ok(b.finish_report(t.report(0, reason, true_norm)));
    }
    let (mut r, _) = true_residual(x)?;
    t.applications += 1;
    let (mut k, mut replacements) = (0, 0);
    loop {
        let (k_end, reason) = iterate(&mut t, x, r, k)?;
        k = k_end;
        let (true_r, true_norm) = true_residual(x)?;
        t.applications += 1;
        if reason == StopReason::Converged && !true_norm.is_finite() {
            let reason = StopReason::NonFinite {
                quantity: "the true residual b − A x",
            };
            return Ok(b.finish_report(t.report(k, reason, true_norm)));
        }
        if reason != StopReason::Converged || t.converged(true_norm) {
            return Ok(b.finish_report(t.report(k, reason, true_norm)));
        }
        if replacements == MAX_RESIDUAL_REPLACEMENTS || k >= params.stop.max_iter {
            let target = t.target();
            let reason = StopReason::ResidualGap {
                true_residual: true_norm,
                target,
            };
            return Ok(b.finish_report(t.report(k, reason, true_norm)));
        }
        replacements += 1;
        // The recursive residuals so far were not the true ones: stagnation is measured
        // afresh from the replacement.
        t.restart_stagnation(k);
        r = true_r;
    }
}
