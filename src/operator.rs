//! [`LinearOperator`]: anything that computes `y = α A x + β y` — sparse matrices,
//! matrix-free operators, preconditioners, multigrid cycles. It sits between the vectors and
//! the containers that implement it, so a sparse format or a discretisation implements it
//! without depending on the solvers that take it.

use crate::error::Result;
use crate::scalar::Scalar;
use crate::vector::{Vector, VectorOps};

/// Work of one application, for roofline reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OperatorCost {
    /// Floating-point operations.
    pub flops: f64,
    /// Bytes moved to and from memory (the operator's arrays, `x` and `y`, each once).
    pub bytes: f64,
}

/// A linear operator on vectors of `S` on backend `B`: sparse matrices in any format (with
/// values in any element type — f32 values inside an f64 solver is mixed precision),
/// preconditioners, matrix-free operators and multigrid cycles. Solvers take
/// `&dyn LinearOperator<B, S>`.
pub trait LinearOperator<B: VectorOps, S: Scalar> {
    /// Rows (length of `y`).
    fn nrows(&self) -> usize;

    /// Columns (length of `x`).
    fn ncols(&self) -> usize;

    /// `y = alpha A x + beta y` (`y` not read when `beta = 0`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for wrong vector
    /// lengths; device errors.
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()>;

    /// `y = A x`.
    ///
    /// # Errors
    /// As [`apply_add`](Self::apply_add).
    fn apply(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<()> {
        self.apply_add(S::ONE, x, S::ZERO, y)
    }

    /// `y = A x`, returning `x · y` (square operators). Fused into one pass where the
    /// format allows (SELL-C-σ on devices): CG's `q = A p; p·q`.
    ///
    /// # Errors
    /// As [`apply_add`](Self::apply_add).
    fn apply_dot(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<S> {
        self.apply(x, y)?;
        x.dot(y)
    }

    /// `y = A x` with `x · y` left on the device in `scalars[slot]` (CG without a host
    /// round trip).
    ///
    /// # Errors
    /// As [`apply_add`](Self::apply_add), and
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if `slot` is not below
    /// `scalars.len()` (checked before anything is written).
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        crate::vector::check_slot("apply_dot_device", scalars.len(), slot)?;
        self.apply(x, y)?;
        crate::vector::dot_into(x, y, scalars, slot)
    }

    /// Work of one application (zero when unknown).
    fn cost(&self) -> OperatorCost {
        OperatorCost::default()
    }
}

impl<B: VectorOps, S: Scalar, T: LinearOperator<B, S> + ?Sized> LinearOperator<B, S> for &T {
    fn nrows(&self) -> usize {
        (**self).nrows()
    }
    fn ncols(&self) -> usize {
        (**self).ncols()
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        (**self).apply_add(alpha, x, beta, y)
    }
    fn apply_dot(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<S> {
        (**self).apply_dot(x, y)
    }
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        (**self).apply_dot_device(x, y, scalars, slot)
    }
    fn cost(&self) -> OperatorCost {
        (**self).cost()
    }
}
