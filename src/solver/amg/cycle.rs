//! The cycle: smoothing, residual, restriction, coarse correction and prolongation on each
//! level, and the hierarchy as a [`Preconditioner`] and a [`LinearOperator`].

use std::time::Instant;

use super::{Amg, AmgCycle, AmgLevelTimes, AmgSmoother, Work};
use crate::bundle::Backend;
use crate::error::{check_len, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::Scalar;
use crate::solver::precond::Preconditioner;
use crate::vector::Vector;

impl<B: Backend, T: Scalar> Amg<'_, B, T> {
    /// Seconds per level and operation of `cycles` cycles applied to `r` (each operation
    /// timed between synchronisations of the backend): where a cycle's time goes.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if `r` does not have
    /// [`size`](Preconditioner::size) entries; device errors.
    pub fn profile(&self, r: &Vector<B, T>, cycles: usize) -> Result<Vec<AmgLevelTimes>> {
        let mut z = Vector::zeros(r.backend(), self.size())?;
        *self.times.borrow_mut() = Some(vec![AmgLevelTimes::default(); self.levels.len()]);
        let run = (|| {
            for _ in 0..cycles {
                self.precondition(r, &mut z)?;
            }
            Ok(())
        })();
        let times = self.times.borrow_mut().take().unwrap_or_default();
        run.map(|()| times)
    }

    /// Runs `f`; while profiling, adds its seconds (between synchronisations) to the
    /// entry `pick` of level `l`.
    fn timed(
        &self,
        l: usize,
        pick: fn(&mut AmgLevelTimes) -> &mut f64,
        f: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        if self.times.borrow().is_none() {
            return f();
        }
        let backend = self.levels[l].scaling.backend();
        backend.synchronize()?;
        let t = Instant::now();
        f()?;
        backend.synchronize()?;
        if let Some(times) = self.times.borrow_mut().as_mut() {
            *pick(&mut times[l]) += t.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// `res = b − A_l x`.
    fn residual(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &Vector<B, T>,
        res: &mut Vector<B, T>,
    ) -> Result<()> {
        self.levels[l].a.get().residual(b, x, res, None)
    }

    /// Smoothing of `A x = b` on level `l`: from `x = 0` when `zero`, else from `x`.
    pub(super) fn smooth(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &mut Vector<B, T>,
        zero: bool,
        w: &mut Work<B, T>,
    ) -> Result<()> {
        let level = &self.levels[l];
        let a = level.a.get();
        match self.smoother {
            AmgSmoother::Chebyshev { .. } | AmgSmoother::ChebyshevFourthKind { .. } => {
                // The first update `d` = scaling ∘ res: the scaling holds D⁻¹/θ (first kind)
                // or 4/(3λmax) D⁻¹ (fourth kind). From a nonzero x, `x += d` is left to the
                // first step (γ = 1): the residual pass reads x.
                let mut pending = if zero {
                    w.res.copy_from(b)?;
                    x.pointwise_mul(&level.scaling, b)?;
                    w.d.copy_from(x)?;
                    false
                } else {
                    a.residual(b, x, &mut w.res, Some((&level.scaling, &mut w.d)))?;
                    true
                };
                for (alpha, beta) in self.smoother.steps(level.lambda) {
                    // res −= A d; w = α scaling ∘ res + β d; x += w (+ d pending).
                    a.smoothing_step(
                        &w.d,
                        &mut w.res,
                        &level.scaling,
                        &mut w.w,
                        x,
                        [
                            T::from_f64(alpha),
                            T::from_f64(beta),
                            if pending { T::ONE } else { T::ZERO },
                        ],
                    )?;
                    std::mem::swap(&mut w.d, &mut w.w);
                    pending = false;
                }
                if pending {
                    x.axpy(T::ONE, &w.d)?;
                }
            }
            AmgSmoother::L1Jacobi { sweeps } => {
                for s in 0..sweeps {
                    if zero && s == 0 {
                        x.pointwise_mul(&level.scaling, b)?;
                    } else {
                        a.residual(b, x, &mut w.res, Some((&level.scaling, &mut w.d)))?;
                        x.axpy(T::ONE, &w.d)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// One cycle for `A_l x = b` from `x = 0` (`zero`) or from `x`; `work` from level `l`.
    fn cycle(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &mut Vector<B, T>,
        zero: bool,
        work: &mut [Work<B, T>],
    ) -> Result<()> {
        let (w, rest) = work.split_first_mut().expect("one work entry per level");
        let level = &self.levels[l];
        let Some((p, r)) = &level.transfer else {
            return self.timed(l, |t| &mut t.coarse, || self.coarse_solve(l, b, x, zero, w));
        };
        self.timed(l, |t| &mut t.smooth, || self.smooth(l, b, x, zero, w))?;
        self.timed(
            l,
            |t| &mut t.residual,
            || self.residual(l, b, x, &mut w.res),
        )?;
        let next = &mut rest[0];
        let (mut cb, mut cx) = (
            next.b.take().expect("coarse b"),
            next.x.take().expect("coarse x"),
        );
        let result = (|| {
            self.timed(l, |t| &mut t.restrict, || r.apply(&w.res, &mut cb))?;
            let repeats = match self.cycle {
                AmgCycle::W if l + 2 < self.levels.len() => 2,
                _ => 1,
            };
            for k in 0..repeats {
                self.cycle(l + 1, &cb, &mut cx, k == 0, rest)?;
            }
            self.timed(
                l,
                |t| &mut t.prolong,
                || p.apply_add(T::ONE, &cx, T::ONE, x),
            )
        })();
        rest[0].b = Some(cb);
        rest[0].x = Some(cx);
        result?;
        self.timed(l, |t| &mut t.smooth, || self.smooth(l, b, x, false, w))
    }

    /// The coarsest level: `x = A⁻¹ b` (dense), or two smoothing steps.
    fn coarse_solve(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &mut Vector<B, T>,
        zero: bool,
        w: &mut Work<B, T>,
    ) -> Result<()> {
        match &self.coarse_inverse {
            Some(inv) if zero => inv.apply(b, x),
            Some(inv) => {
                self.residual(l, b, x, &mut w.res)?;
                inv.apply_add(T::ONE, &w.res, T::ONE, x)
            }
            None => {
                self.smooth(l, b, x, zero, w)?;
                self.smooth(l, b, x, false, w)
            }
        }
    }
}

impl<B: Backend, T: Scalar> Preconditioner<B, T> for Amg<'_, B, T> {
    fn size(&self) -> usize {
        self.levels[0].a.get().nrows()
    }
    fn precondition(&self, r: &Vector<B, T>, z: &mut Vector<B, T>) -> Result<()> {
        let n = self.size();
        check_len("Amg::precondition", "r", n, r.len())?;
        check_len("Amg::precondition", "z", n, z.len())?;
        let mut work = self.work.borrow_mut();
        self.cycle(0, r, z, true, &mut work)
    }
    fn cost(&self) -> OperatorCost {
        let sweeps = match self.smoother {
            AmgSmoother::Chebyshev { degree } | AmgSmoother::ChebyshevFourthKind { degree } => {
                degree
            }
            AmgSmoother::L1Jacobi { sweeps } => sweeps,
        } as f64;
        let mut total = OperatorCost::default();
        let mut visits = 1.0;
        for level in &self.levels {
            let c = level.a.get().cost();
            let mut add = |k: f64, c: OperatorCost| {
                total.flops += visits * k * c.flops;
                total.bytes += visits * k * c.bytes;
            };
            match &level.transfer {
                Some((p, r)) => {
                    add(2.0 * sweeps + 1.0, c);
                    add(1.0, LinearOperator::<B, T>::cost(p));
                    add(1.0, LinearOperator::<B, T>::cost(r));
                }
                None => match &self.coarse_inverse {
                    Some(inv) => add(1.0, LinearOperator::<B, T>::cost(inv)),
                    None => add(2.0 * sweeps, c),
                },
            }
            if self.cycle == AmgCycle::W {
                visits *= 2.0;
            }
        }
        total
    }
}

/// The cycle as an operator: `y = α M⁻¹ x + β y`.
impl<B: Backend, T: Scalar> LinearOperator<B, T> for Amg<'_, B, T> {
    fn nrows(&self) -> usize {
        self.size()
    }
    fn ncols(&self) -> usize {
        self.size()
    }
    fn apply_add(&self, alpha: T, x: &Vector<B, T>, beta: T, y: &mut Vector<B, T>) -> Result<()> {
        check_len("Amg::apply_add", "y", self.size(), y.len())?;
        if beta == T::ZERO && alpha == T::ONE {
            return self.precondition(x, y);
        }
        let mut scratch = self.scratch.borrow_mut();
        if scratch.is_none() {
            *scratch = Some(Vector::zeros(y.backend(), y.len())?);
        }
        let z = scratch.as_mut().expect("allocated above");
        self.precondition(x, z)?;
        y.axpby(alpha, z, beta)
    }
    fn cost(&self) -> OperatorCost {
        Preconditioner::cost(self)
    }
}
