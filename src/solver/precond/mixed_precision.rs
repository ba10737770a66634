//! A preconditioner applied in another precision than the solver's.

use std::cell::RefCell;
use std::marker::PhantomData;

use crate::bundle::Backend;
use crate::error::Result;
use crate::operator::OperatorCost;
use crate::scalar::Scalar;
use crate::solver::precond::Preconditioner;
use crate::vector::{pcg_flexible_convert_device, pcg_flexible_low_device, xpay_device, Vector};

/// The scratch vectors of a [`MixedPrecision`], in its inner precision: `r`, and two `z` that
/// take turns (the one written last, `z[latest]`, and the one before).
struct Scratch<B: Backend, I: Scalar> {
    r: Vector<B, I>,
    z: [Vector<B, I>; 2],
    latest: usize,
}

/// Applies a preconditioner built in precision `I` (usually f32) inside a solver running
/// in `S` (usually f64): `z = convert(P(convert(r)))`. The rounding makes the operator
/// slightly nonsymmetric: use it with FGMRES or flexible PCG.
///
/// Inside the device-scalar flexible PCG it keeps `z` in `I`, the new one and the one
/// before ([`Preconditioner::precondition_flexible_direction_device`]): the sums and the
/// direction read them rounded up, and no `z` in `S` is written. So one `MixedPrecision`
/// serves one solve at a time: another application between two steps of that PCG (by a
/// second solver sharing it, or a direct [`precondition`](Preconditioner::precondition))
/// would replace the `z` its next step reads as the old one, and its β would be wrong.
pub struct MixedPrecision<B: Backend, I: Scalar, P: Preconditioner<B, I>> {
    inner: P,
    /// Kept from one application to the next (large vectors: a fresh allocation per
    /// application cost more than the conversion on a GPU).
    scratch: RefCell<Option<Scratch<B, I>>>,
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

    /// `r` rounded to `I`, the inner preconditioner applied to it into the `z` written
    /// before the last, which becomes the latest; `back` is given it and the `z` before it
    /// (the latest of the previous application: zeros after the scratch is made), and
    /// writes what the solver needs in its precision.
    fn apply_low<S: Scalar>(
        &self,
        r: &Vector<B, S>,
        back: impl FnOnce(&Vector<B, I>, &Vector<B, I>) -> Result<()>,
    ) -> Result<()> {
        let mut scratch = self.scratch.borrow_mut();
        let fits = matches!(&*scratch, Some(s) if s.r.len() == r.len() && s.r.backend().same_device(r.backend()));
        if !fits {
            *scratch = None;
            let v = || Vector::<B, I>::zeros(r.backend(), r.len());
            *scratch = Some(Scratch {
                r: v()?,
                z: [v()?, v()?],
                latest: 0,
            });
        }
        let s = scratch.as_mut().expect("allocated above");
        s.r.convert_from(r)?;
        let next = 1 - s.latest;
        let [z0, z1] = &mut s.z;
        let (new, old) = if next == 0 { (z0, &*z1) } else { (z1, &*z0) };
        self.inner.precondition(&s.r, new)?;
        back(new, old)?;
        // The turn passes with a whole application only.
        s.latest = next;
        Ok(())
    }
}

impl<B: Backend, S: Scalar, I: Scalar, P: Preconditioner<B, I>> Preconditioner<B, S>
    for MixedPrecision<B, I, P>
{
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        self.apply_low(r, |z_low, _| z.convert_from(z_low))
    }
    fn precondition_flexible_device(
        &self,
        r: &Vector<B, S>,
        z: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
    ) -> Result<()> {
        // The sums of r·z (old and new) and the rotation folded into the conversion.
        self.apply_low(r, |z_low, _| {
            pcg_flexible_convert_device(scalars, z_low, r, z)
        })
    }
    fn precondition_flexible_direction_device(
        &self,
        r: &Vector<B, S>,
        z: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        p: &mut Vector<B, S>,
    ) -> Result<()> {
        super::check_flexible_direction(r, z, scalars, p)?;
        if r.parts() > 1 {
            // Split vectors: the conversion into z, then the direction from it.
            self.precondition_flexible_device(r, z, scalars)?;
            return xpay_device(scalars, z, p);
        }
        // The old z is the latest of the previous application: in PCG the z the caller's
        // `z` holds (the same sums to the bit), not written here.
        self.apply_low(r, |new, old| {
            pcg_flexible_low_device(scalars, new, old, r)?;
            xpay_device(scalars, new, p)
        })
    }
    fn cost(&self) -> OperatorCost {
        self.inner.cost()
    }
}
