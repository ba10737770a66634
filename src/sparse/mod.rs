//! Sparse matrices: formats, conversions, SpMV on every backend, Matrix Market I/O,
//! reordering and generators of realistic matrices.
//!
//! # Formats
//! Every container is generic over the backend `B` and the value type `V` (any
//! [`Element`]: f16, bf16, f32, f64). Indices are `u32`. A matrix on the
//! [`Cpu`] backend is the host representation: build, validate and convert there,
//! then move it to a device with `to_backend(&device)`.
//!
//! | format | layout | SpMV thread mapping |
//! |---|---|---|
//! | [`Coo`] | `(row, col, value)` triplets sorted by row | as CSR, on offsets derived from the rows |
//! | [`Csr`] | `row_ptr[n+1]`, `col_idx[nnz]`, `values[nnz]` | unit per row, or a group of units per row |
//! | [`Ell`] | `nrows x width` slots, column-major (slot k of every row contiguous) | unit per row |
//! | [`Sell`] | SELL-C-σ: slices of C rows, each padded to its longest row, column-major in the slice | unit per row, one launch |
//! | [`StaircaseSell`] | rows reordered (Cuthill–McKee, then length), steps of equal stored length | unit per row, one launch per step |
//! | [`BlockEll`] | `m x m` dense blocks, a fixed number of block slots per block row | unit per row of a block row |
//!
//! ```text
//!  CSR                           ELL (width 3, column-major)      SELL-2-σ (C = 2)
//!  row_ptr = [0, 2, 3, 6]        slot0: a00 a11 a20               slice 0 (width 2): a00 a11 | a01 *
//!  col_idx = [0 1 | 1 | 0 1 2]   slot1: a01  *  a21               slice 1 (width 3): a20     | a21 | a22
//!  values  = [a00 a01 a11 ...]   slot2:  *   *  a22               slice_ptr = [0, 4, 7]
//! ```
//! (`*` = padding: column [`PAD`], value 0.)
//!
//! # Mixed precision
//! `spmv` computes `y = α A x + β y` with `x`, `y`, `α`, `β` and the accumulation in a
//! [`Scalar`] `T` and the matrix values in any element type `V`: f32 values
//! with f64 vectors move 12 instead of 16 bytes per nonzero. When `β = 0`, `y` is not read
//! (as in BLAS): NaN in `y` does not propagate.

use crate::backend::{BackendCore, Cpu};
use crate::error::Result;
use crate::scalar::{Element, Scalar};

pub mod block_ell;
pub mod coo;
pub mod csr;
pub(crate) mod cube;
pub mod ell;
pub mod generate;
pub mod matrix;
pub mod mtx;
pub mod random;
pub mod reorder;
pub mod sell;
pub mod staircase;

pub use block_ell::{BlockEll, BlockEllKernel};
pub use coo::Coo;
pub use csr::{Csr, CsrKernel};
pub use ell::Ell;
pub use matrix::{
    choose_format, detect_block_size, Format, FormatChoice, FormatOptions, SparseMatrix,
};
pub use mtx::{
    read_matrix_market, read_matrix_market_from, write_matrix_market, write_matrix_market_to,
    write_matrix_market_with, MatrixMarket, MatrixMarketHeader,
};
pub use sell::{Sell, SellParams};
pub use staircase::{StaircaseParams, StaircaseSell};

/// The sparse operator family: SpMV kernels of every format. Implemented by every backend;
/// call it through the containers' `spmv` methods, which check the dimensions first.
pub trait SparseOps: BackendCore {
    /// `y = alpha A x + beta y` for a CSR matrix with the given (resolved) kernel.
    fn csr_spmv<V: Element, T: Scalar>(
        &self,
        a: &Csr<Self, V>,
        kernel: CsrKernel,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = alpha A x + beta y` for a COO matrix.
    fn coo_spmv<V: Element, T: Scalar>(
        &self,
        a: &Coo<Self, V>,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = alpha A x + beta y` for an ELL matrix.
    fn ell_spmv<V: Element, T: Scalar>(
        &self,
        a: &Ell<Self, V>,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = alpha A x + beta y` for a block-ELL matrix with the given kernel.
    fn block_ell_spmv<V: Element, T: Scalar>(
        &self,
        a: &BlockEll<Self, V>,
        kernel: BlockEllKernel,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = alpha Ã x + beta y` for a Staircase SELL matrix (permuted numbering).
    fn staircase_spmv<V: Element, T: Scalar>(
        &self,
        a: &StaircaseSell<Self, V>,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = A x` for a square SELL-C-σ matrix, returning `x · y` (fused on devices: the
    /// SpMV and the inner product of CG in one pass).
    fn sell_spmv_dot<V: Element, T: Scalar>(
        &self,
        a: &Sell<Self, V>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
    ) -> Result<T>;

    /// As [`sell_spmv_dot`](Self::sell_spmv_dot) with `x · y` left on the device in
    /// `scalars[slot]`.
    fn sell_spmv_dot_device<V: Element, T: Scalar>(
        &self,
        a: &Sell<Self, V>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
        scalars: &mut Self::Buffer<T>,
        slot: usize,
    ) -> Result<()>;

    /// `y = alpha A x + beta y` for a SELL-C-σ matrix.
    fn sell_spmv<V: Element, T: Scalar>(
        &self,
        a: &Sell<Self, V>,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;
}

impl SparseOps for Cpu {
    fn csr_spmv<V: Element, T: Scalar>(
        &self,
        a: &Csr<Cpu, V>,
        _kernel: CsrKernel,
        alpha: T,
        x: &Vec<T>,
        beta: T,
        y: &mut Vec<T>,
    ) -> Result<()> {
        csr::spmv_cpu(&a.row_ptr, &a.col_idx, &a.values, alpha, x, beta, y);
        Ok(())
    }

    fn coo_spmv<V: Element, T: Scalar>(
        &self,
        a: &Coo<Cpu, V>,
        alpha: T,
        x: &Vec<T>,
        beta: T,
        y: &mut Vec<T>,
    ) -> Result<()> {
        coo::spmv_cpu(a, alpha, x, beta, y);
        Ok(())
    }

    fn ell_spmv<V: Element, T: Scalar>(
        &self,
        a: &Ell<Cpu, V>,
        alpha: T,
        x: &Vec<T>,
        beta: T,
        y: &mut Vec<T>,
    ) -> Result<()> {
        ell::spmv_cpu(a, alpha, x, beta, y);
        Ok(())
    }

    fn staircase_spmv<V: Element, T: Scalar>(
        &self,
        a: &StaircaseSell<Cpu, V>,
        alpha: T,
        x: &Vec<T>,
        beta: T,
        y: &mut Vec<T>,
    ) -> Result<()> {
        staircase::spmv_cpu(a, alpha, x, beta, y);
        Ok(())
    }

    fn block_ell_spmv<V: Element, T: Scalar>(
        &self,
        a: &BlockEll<Cpu, V>,
        _kernel: BlockEllKernel,
        alpha: T,
        x: &Vec<T>,
        beta: T,
        y: &mut Vec<T>,
    ) -> Result<()> {
        block_ell::spmv_cpu(a, alpha, x, beta, y);
        Ok(())
    }

    fn sell_spmv_dot<V: Element, T: Scalar>(
        &self,
        a: &Sell<Cpu, V>,
        x: &Vec<T>,
        y: &mut Vec<T>,
    ) -> Result<T> {
        sell::spmv_cpu(a, T::ONE, x, T::ZERO, y);
        Ok(T::from_f64(crate::vector::cpu::dot(x, y)))
    }

    fn sell_spmv_dot_device<V: Element, T: Scalar>(
        &self,
        a: &Sell<Cpu, V>,
        x: &Vec<T>,
        y: &mut Vec<T>,
        scalars: &mut Vec<T>,
        slot: usize,
    ) -> Result<()> {
        scalars[slot] = self.sell_spmv_dot(a, x, y)?;
        Ok(())
    }

    fn sell_spmv<V: Element, T: Scalar>(
        &self,
        a: &Sell<Cpu, V>,
        alpha: T,
        x: &Vec<T>,
        beta: T,
        y: &mut Vec<T>,
    ) -> Result<()> {
        sell::spmv_cpu(a, alpha, x, beta, y);
        Ok(())
    }
}

/// The column index that marks a padding slot.
pub const PAD: u32 = u32::MAX;

/// Row-length statistics of a sparsity pattern: what format selection looks at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowStats {
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Shortest row.
    pub min: usize,
    /// Longest row.
    pub max: usize,
    /// Mean row length.
    pub mean: f64,
    /// Standard deviation of the row length.
    pub std_dev: f64,
    /// Rows without entries.
    pub empty_rows: usize,
}

impl RowStats {
    /// Statistics of the rows delimited by `row_ptr` (`nrows + 1` offsets).
    pub fn from_row_ptr(row_ptr: &[u32], ncols: usize) -> Self {
        let nrows = row_ptr.len().saturating_sub(1);
        let lengths = row_ptr.windows(2).map(|w| (w[1] - w[0]) as usize);
        let (mut min, mut max, mut sum, mut sumsq, mut empty) =
            (usize::MAX, 0usize, 0f64, 0f64, 0usize);
        for l in lengths {
            min = min.min(l);
            max = max.max(l);
            sum += l as f64;
            sumsq += (l * l) as f64;
            empty += usize::from(l == 0);
        }
        let mean = if nrows > 0 { sum / nrows as f64 } else { 0.0 };
        let var = if nrows > 0 {
            (sumsq / nrows as f64 - mean * mean).max(0.0)
        } else {
            0.0
        };
        RowStats {
            nrows,
            ncols,
            nnz: row_ptr.last().copied().unwrap_or(0) as usize,
            min: if nrows == 0 { 0 } else { min },
            max,
            mean,
            std_dev: var.sqrt(),
            empty_rows: empty,
        }
    }
}

/// Limits on format conversions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FormatLimits {
    /// Largest accepted `stored slots / nonzeros` (default 3): a conversion that would pad
    /// more — one long row turning ELL into gigabytes — is refused with
    /// [`Error::Padding`](crate::Error::Padding).
    pub max_padding_ratio: f64,
}

impl Default for FormatLimits {
    fn default() -> Self {
        FormatLimits {
            max_padding_ratio: 3.0,
        }
    }
}

impl FormatLimits {
    /// No limit: accept any padding.
    pub fn unlimited() -> Self {
        FormatLimits {
            max_padding_ratio: f64::INFINITY,
        }
    }

    /// Checks that storing `stored` slots for `nnz` nonzeros is within the limit.
    ///
    /// # Errors
    /// [`Error::Padding`](crate::Error::Padding) when it is not.
    pub fn check(&self, format: &'static str, stored: u64, nnz: u64) -> Result<()> {
        let ratio = stored as f64 / (nnz.max(1)) as f64;
        if stored > nnz && ratio > self.max_padding_ratio {
            return Err(crate::Error::Padding {
                format,
                stored,
                nnz,
                ratio,
                limit: self.max_padding_ratio,
            });
        }
        Ok(())
    }
}

/// Converts a count to a `u32` index, or reports which quantity overflows.
pub(crate) fn to_u32(value: usize, format: &'static str, what: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| crate::Error::InvalidMatrix {
        format,
        reason: format!("{what} = {value} does not fit the 32-bit indices galerkin uses"),
    })
}
