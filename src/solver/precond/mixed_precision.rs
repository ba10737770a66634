//! A preconditioner applied in another precision than the solver's.

use std::cell::RefCell;
use std::marker::PhantomData;

use crate::bundle::Backend;
use crate::error::Result;
use crate::operator::OperatorCost;
use crate::scalar::Scalar;
use crate::solver::precond::Preconditioner;
use crate::vector::{pcg_flexible_convert_device, Vector};

/// Two vectors of one backend and precision.
type VectorPair<B, I> = (Vector<B, I>, Vector<B, I>);

/// Applies a preconditioner built in precision `I` (usually f32) inside a solver running
/// in `S` (usually f64): `z = convert(P(convert(r)))`. The rounding makes the operator
/// slightly nonsymmetric: use it with FGMRES or flexible PCG.
pub struct MixedPrecision<B: Backend, I: Scalar, P: Preconditioner<B, I>> {
    inner: P,
    /// `r` and `z` in `I`, kept from one application to the next (large vectors: a fresh
    /// allocation per application cost more than the conversion on a GPU).
    scratch: RefCell<Option<VectorPair<B, I>>>,
    _p: PhantomData<(B, I)>,
}

impl<B: Backend, I: Scalar, P: Preconditioner<B, I>> MixedPrecision<B, I, P> {
    /// Wraps `inner`.
    pub fn new(inner: P) -> Self {
        MixedPrecision {
            inner,
            scratch: RefCell::new(None),
            _p: PhantomData,
        }
    }

    /// The wrapped preconditioner.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// `r` rounded to `I`, the inner preconditioner applied to it, and `back` given its
    /// result (which writes `z` in the solver's precision).
    fn apply_low<S: Scalar>(
        &self,
        r: &Vector<B, S>,
        back: impl FnOnce(&Vector<B, I>) -> Result<()>,
    ) -> Result<()> {
        let mut scratch = self.scratch.borrow_mut();
        let fits = matches!(&*scratch, Some((a, _)) if a.len() == r.len() && a.backend().same_device(r.backend()));
        if !fits {
            *scratch = None;
            let v = || Vector::<B, I>::zeros(r.backend(), r.len());
            *scratch = Some((v()?, v()?));
        }
        let (r_low, z_low) = scratch.as_mut().expect("allocated above");
        r_low.convert_from(r)?;
        self.inner.precondition(r_low, z_low)?;
        back(z_low)
    }
}

impl<B: Backend, S: Scalar, I: Scalar, P: Preconditioner<B, I>> Preconditioner<B, S>
    for MixedPrecision<B, I, P>
{
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        self.apply_low(r, |z_low| z.convert_from(z_low))
    }
    fn precondition_flexible_device(
        &self,
        r: &Vector<B, S>,
        z: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
    ) -> Result<()> {
        // The sums of r·z (old and new) and the rotation folded into the conversion.
        self.apply_low(r, |z_low| pcg_flexible_convert_device(scalars, z_low, r, z))
    }
    fn cost(&self) -> OperatorCost {
        self.inner.cost()
    }
}
