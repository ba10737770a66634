//! [`LinearOperator`]: anything that computes `y = α A x + β y`.

use crate::backend::Backend;
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::sparse::{
    BlockEll, BlockEllKernel, Coo, Csr, CsrKernel, Ell, Sell, SparseMatrix, StaircaseSell,
};
use crate::vector::Vector;

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
/// preconditioners, and later matrix-free operators and multigrid cycles. Solvers take
/// `&dyn LinearOperator<B, S>`.
pub trait LinearOperator<B: Backend, S: Scalar> {
    /// Rows (length of `y`).
    fn nrows(&self) -> usize;

    /// Columns (length of `x`).
    fn ncols(&self) -> usize;

    /// `y = alpha A x + beta y` (`y` not read when `beta = 0`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) for wrong vector
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
    /// As [`apply_add`](Self::apply_add).
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        self.apply(x, y)?;
        x.backend()
            .dot_device(x.buffer(), y.buffer(), scalars.buffer_mut(), slot)
    }

    /// Work of one application (zero when unknown).
    fn cost(&self) -> OperatorCost {
        OperatorCost::default()
    }
}

impl<B: Backend, S: Scalar, T: LinearOperator<B, S> + ?Sized> LinearOperator<B, S> for &T {
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

/// Cost of a sparse product: `2 nnz` flops; the stored arrays, `x` and `y` once.
fn sparse_cost<S: Scalar>(nnz: usize, storage: usize, nrows: usize, ncols: usize) -> OperatorCost {
    OperatorCost {
        flops: 2.0 * nnz as f64,
        bytes: (storage + (nrows + ncols) * S::DTYPE.size()) as f64,
    }
}

impl<B: Backend, V: Element, S: Scalar> LinearOperator<B, S> for Csr<B, V> {
    fn nrows(&self) -> usize {
        Csr::nrows(self)
    }
    fn ncols(&self) -> usize {
        Csr::ncols(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv_with(CsrKernel::Auto, alpha, x, beta, y)
    }
    fn cost(&self) -> OperatorCost {
        sparse_cost::<S>(
            self.nnz(),
            self.storage_bytes(),
            Csr::nrows(self),
            Csr::ncols(self),
        )
    }
}

impl<B: Backend, V: Element, S: Scalar> LinearOperator<B, S> for Coo<B, V> {
    fn nrows(&self) -> usize {
        Coo::nrows(self)
    }
    fn ncols(&self) -> usize {
        Coo::ncols(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }
    fn cost(&self) -> OperatorCost {
        let nnz = self.nnz();
        sparse_cost::<S>(
            nnz,
            nnz * (V::DTYPE.size() + 8),
            Coo::nrows(self),
            Coo::ncols(self),
        )
    }
}

impl<B: Backend, V: Element, S: Scalar> LinearOperator<B, S> for Ell<B, V> {
    fn nrows(&self) -> usize {
        Ell::nrows(self)
    }
    fn ncols(&self) -> usize {
        Ell::ncols(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }
    fn cost(&self) -> OperatorCost {
        sparse_cost::<S>(
            self.nnz(),
            self.storage_bytes(),
            Ell::nrows(self),
            Ell::ncols(self),
        )
    }
}

impl<B: Backend, V: Element, S: Scalar> LinearOperator<B, S> for Sell<B, V> {
    fn nrows(&self) -> usize {
        Sell::nrows(self)
    }
    fn ncols(&self) -> usize {
        Sell::ncols(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }
    fn apply_dot(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<S> {
        self.spmv_dot(x, y)
    }
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        self.spmv_dot_device(x, y, scalars, slot)
    }
    fn cost(&self) -> OperatorCost {
        sparse_cost::<S>(
            self.nnz(),
            self.storage_bytes(),
            Sell::nrows(self),
            Sell::ncols(self),
        )
    }
}

impl<B: Backend, V: Element, S: Scalar> LinearOperator<B, S> for BlockEll<B, V> {
    fn nrows(&self) -> usize {
        BlockEll::nrows(self)
    }
    fn ncols(&self) -> usize {
        BlockEll::ncols(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv_with(BlockEllKernel::Direct, alpha, x, beta, y)
    }
    fn cost(&self) -> OperatorCost {
        let m = self.block_size();
        let stored = self.nrows().div_ceil(m) * self.slots() * m * m;
        sparse_cost::<S>(
            stored,
            self.storage_bytes(),
            BlockEll::nrows(self),
            BlockEll::ncols(self),
        )
    }
}

/// Staircase SELL acts in its permuted numbering: solve `Ã x̃ = b̃` with
/// `b̃ = to_permuted(b)` and recover `x = from_permuted(x̃)`.
impl<B: Backend, V: Element, S: Scalar> LinearOperator<B, S> for StaircaseSell<B, V> {
    fn nrows(&self) -> usize {
        StaircaseSell::nrows(self)
    }
    fn ncols(&self) -> usize {
        StaircaseSell::nrows(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }
    fn cost(&self) -> OperatorCost {
        let n = StaircaseSell::nrows(self);
        sparse_cost::<S>(self.nnz(), self.storage_bytes(), n, n)
    }
}

impl<B: Backend, V: Element, S: Scalar> LinearOperator<B, S> for SparseMatrix<B, V> {
    fn nrows(&self) -> usize {
        SparseMatrix::nrows(self)
    }
    fn ncols(&self) -> usize {
        SparseMatrix::ncols(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }
    fn apply_dot(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<S> {
        match self {
            SparseMatrix::Sell(m) => m.spmv_dot(x, y),
            _ => {
                self.spmv(S::ONE, x, S::ZERO, y)?;
                x.dot(y)
            }
        }
    }
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        match self {
            SparseMatrix::Sell(m) => m.spmv_dot_device(x, y, scalars, slot),
            _ => {
                self.spmv(S::ONE, x, S::ZERO, y)?;
                x.backend()
                    .dot_device(x.buffer(), y.buffer(), scalars.buffer_mut(), slot)
            }
        }
    }
    fn cost(&self) -> OperatorCost {
        sparse_cost::<S>(
            self.nnz(),
            self.storage_bytes(),
            SparseMatrix::nrows(self),
            SparseMatrix::ncols(self),
        )
    }
}
