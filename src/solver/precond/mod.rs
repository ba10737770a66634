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
