//! Preconditioners: identity, Jacobi, block-Jacobi, Chebyshev polynomial, and a
//! mixed-precision wrapper that applies any preconditioner in another precision.

use crate::bundle::Backend;
use crate::error::Result;
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::Scalar;
use crate::vector::Vector;

pub(crate) mod chebyshev;
pub(crate) mod jacobi;
pub(crate) mod mixed_precision;

pub use chebyshev::{Chebyshev, ChebyshevParams};
pub use jacobi::{BlockJacobi, Jacobi};
pub use mixed_precision::MixedPrecision;

/// `z = M⁻¹ r` for a preconditioner `M` of an `n x n` system.
pub trait Preconditioner<B: Backend, S: Scalar> {
    /// The system size `n`.
    fn size(&self) -> usize;

    /// `z = M⁻¹ r`.
    ///
    /// # Errors
    /// Size mismatches and device errors.
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()>;

    /// `z = M⁻¹ r`, returning `r · z` (fused where the preconditioner allows).
    ///
    /// # Errors
    /// As [`precondition`](Self::precondition).
    fn precondition_dot(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<S> {
        self.precondition(r, z)?;
        r.dot(z)
    }

    /// `z = M⁻¹ r` inside flexible PCG with device-resident scalars (see
    /// [`cg_scalars`](crate::vector::cg_scalars)): `s[RZ_PREV] = r · z` of the `z` about to be
    /// overwritten, then `z = M⁻¹ r`, `s[RZ_NEW] = r · z` and the flexible rotation
    /// ([`pcg_flexible_rotate_device`](crate::vector::pcg_flexible_rotate_device)). The
    /// default does exactly that; [`MixedPrecision`] folds the sums and the rotation into
    /// its conversion of `z` (one pass over the vectors instead of four).
    ///
    /// # Errors
    /// As [`precondition`](Self::precondition), and
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if `scalars` has fewer
    /// than [`cg_scalars::FLEXIBLE_LEN`](crate::vector::cg_scalars::FLEXIBLE_LEN) entries.
    fn precondition_flexible_device(
        &self,
        r: &Vector<B, S>,
        z: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
    ) -> Result<()> {
        use crate::vector::{cg_scalars, dot_into, pcg_flexible_rotate_device};
        dot_into(r, z, scalars, cg_scalars::RZ_PREV)?;
        self.precondition(r, z)?;
        dot_into(r, z, scalars, cg_scalars::RZ_NEW)?;
        pcg_flexible_rotate_device(scalars)
    }

    /// The flexible PCG's whole step to its next direction on device scalars (see
    /// [`cg_scalars`](crate::vector::cg_scalars)): what
    /// [`precondition_flexible_device`](Self::precondition_flexible_device) does, then
    /// `p = z + s[BETA] p` ([`xpay_device`](crate::vector::xpay_device)). Not for the first
    /// direction (its β is not one). The default does exactly that. [`MixedPrecision`] keeps
    /// its `z`, old and new, in its own precision instead, its old `z` the output of its
    /// previous application: where that is what the caller's `z` holds (as in PCG, whose
    /// first direction takes `precondition_flexible_device`), its sums and `p` are the
    /// default's to the last bit; `z` is left as it was (the caller must not read it).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if `z` or `p` is not of
    /// `r`'s length or `scalars` holds fewer than
    /// [`cg_scalars::FLEXIBLE_LEN`](crate::vector::cg_scalars::FLEXIBLE_LEN) values, checked
    /// before anything is computed (the scalars are then as they were); the preconditioner's
    /// and the device's errors.
    fn precondition_flexible_direction_device(
        &self,
        r: &Vector<B, S>,
        z: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        p: &mut Vector<B, S>,
    ) -> Result<()> {
        check_flexible_direction(r, z, scalars, p)?;
        self.precondition_flexible_device(r, z, scalars)?;
        crate::vector::xpay_device(scalars, z, p)
    }

    /// Work of one application.
    fn cost(&self) -> OperatorCost {
        OperatorCost::default()
    }

    /// If this preconditioner is the diagonal scaling `z = d ∘ r`, its `d`: the solvers then
    /// fuse the scaling into their vector updates (PCG: one pass fewer over the vectors and
    /// no stored z). `None` (the default) for any other preconditioner.
    fn inverse_diagonal(&self) -> Option<&Vector<B, S>> {
        None
    }
}

/// The sizes [`Preconditioner::precondition_flexible_direction_device`] needs, checked
/// before any of its work (a mismatch found at its end would leave the scalars rotated).
pub(crate) fn check_flexible_direction<B: Backend, S: Scalar>(
    r: &Vector<B, S>,
    z: &Vector<B, S>,
    scalars: &Vector<B, S>,
    p: &Vector<B, S>,
) -> Result<()> {
    const OP: &str = "precondition_flexible_direction_device";
    crate::error::check_len(OP, "z", r.len(), z.len())?;
    crate::error::check_len(OP, "p", r.len(), p.len())?;
    crate::vector::fused::check_flexible_scalars(OP, scalars.len())
}

macro_rules! forward_preconditioner {
    ($($wrapper:ty),*) => {$(
        impl<B: Backend, S: Scalar, P: Preconditioner<B, S> + ?Sized> Preconditioner<B, S> for $wrapper {
            fn size(&self) -> usize {
                (**self).size()
            }
            fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
                (**self).precondition(r, z)
            }
            fn precondition_dot(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<S> {
                (**self).precondition_dot(r, z)
            }
            fn precondition_flexible_device(
                &self,
                r: &Vector<B, S>,
                z: &mut Vector<B, S>,
                scalars: &mut Vector<B, S>,
            ) -> Result<()> {
                (**self).precondition_flexible_device(r, z, scalars)
            }
            fn precondition_flexible_direction_device(
                &self,
                r: &Vector<B, S>,
                z: &mut Vector<B, S>,
                scalars: &mut Vector<B, S>,
                p: &mut Vector<B, S>,
            ) -> Result<()> {
                (**self).precondition_flexible_direction_device(r, z, scalars, p)
            }
            fn cost(&self) -> OperatorCost {
                (**self).cost()
            }
            fn inverse_diagonal(&self) -> Option<&Vector<B, S>> {
                (**self).inverse_diagonal()
            }
        }
    )*};
}

forward_preconditioner!(&P, Box<P>);

/// Every preconditioner is also a linear operator (`y = α M⁻¹ x + β y`).
macro_rules! operator_from_preconditioner {
    ($($t:ty),*) => {$(
        impl<B: Backend, S: Scalar> LinearOperator<B, S> for $t {
            fn nrows(&self) -> usize {
                Preconditioner::<B, S>::size(self)
            }
            fn ncols(&self) -> usize {
                Preconditioner::<B, S>::size(self)
            }
            fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
                if alpha == S::ONE && beta == S::ZERO {
                    return Preconditioner::precondition(self, x, y);
                }
                let mut z = Vector::zeros(x.backend(), y.len())?;
                Preconditioner::precondition(self, x, &mut z)?;
                y.axpby(alpha, &z, beta)
            }
            fn cost(&self) -> OperatorCost {
                Preconditioner::<B, S>::cost(self)
            }
        }
    )*};
}

/// No preconditioning: `z = r`.
#[derive(Clone, Copy, Debug)]
pub struct Identity {
    n: usize,
}

impl Identity {
    /// The identity of size `n`.
    pub fn new(n: usize) -> Self {
        Identity { n }
    }
}

impl<B: Backend, S: Scalar> Preconditioner<B, S> for Identity {
    fn size(&self) -> usize {
        self.n
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        z.copy_from(r)
    }
}

operator_from_preconditioner!(Identity);
