//! Sparse matrices: formats, conversions, SpMV on every backend, Matrix Market I/O,
//! reordering and generators of realistic matrices.
//!
//! # Formats
//! Every container is generic over the backend `B` and the value type `V` (any
//! [`Element`](crate::scalar::Element): f16, bf16, f32, f64). Indices are `u32`. A matrix on the
//! [`Cpu`](crate::backend::Cpu) backend is the host representation: build, validate and convert there,
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
//! | [`Dia`] | a few full diagonals (`column - row` fixed), diagonal-major, no column indices | unit per row |
//!
//! ```text
//!  CSR                           ELL (width 3, column-major)      SELL-2-σ (C = 2)
//!  row_ptr = [0, 2, 3, 6]        slot0: a00 a11 a20               slice 0 (width 2): a00 a11 | a01 *
//!  col_idx = [0 1 | 1 | 0 1 2]   slot1: a01  *  a21               slice 1 (width 3): a20     | a21 | a22
//!  values  = [a00 a01 a11 ...]   slot2:  *   *  a22               slice_ptr = [0, 4, 7]
//! ```
//! (`*` = padding: column [`PAD`], value 0.)
//!
//! # Adding a format
//! A format is one file and one line (see [`storage`]): the file holds the container with
//! its host constructors and invariants, its [`SparseStorage`] (sizes; the device moves and
//! the checked SpMV come with it), a marker with [`FormatKernels`] (names, the arrays a
//! device move carries, the CPU kernel and the CubeCL launch) and [`FormatConversion`]
//! (conversion from CSR, tune candidates), and one `sparse_operator!` line for
//! [`LinearOperator`](crate::operator::LinearOperator); the line is its entry in the list of
//! [`matrix`], which gives [`Format`], [`SparseMatrix`] and the verification rows.
//!
//! # Mixed precision
//! `spmv` computes `y = α A x + β y` with `x`, `y`, `α`, `β` and the accumulation in a
//! [`Scalar`](crate::scalar::Scalar) `T` and the matrix values in any element type `V`: f32 values
//! with f64 vectors move 12 instead of 16 bytes per nonzero. When `β = 0`, `y` is not read
//! (as in BLAS): NaN in `y` does not propagate.

use crate::error::Result;

pub mod algebra;
pub mod block_ell;
mod choose;
pub mod convert;
pub mod coo;
pub mod csr;
pub mod dia;
pub mod ell;
pub mod generate;
pub mod matrix;
pub mod mtx;
pub mod ops;
pub mod options;
pub use algebra as product;
pub mod random;
pub mod reorder;
pub mod sell;
pub(crate) mod smoothing;
pub mod split;
pub mod staircase;
pub mod storage;

pub use block_ell::{BlockEll, BlockEllFormat, BlockEllKernel};
pub use choose::{choose_format, detect_block_size};
pub use convert::FormatConversion;
pub use coo::{Coo, CooFormat};
pub use csr::{Csr, CsrFormat, CsrKernel};
pub use dia::{diagonal_offsets, Dia, DiaFormat};
pub use ell::{Ell, EllFormat};
pub use matrix::{Format, FormatChoice, SparseMatrix};
pub use mtx::{
    read_matrix_market, read_matrix_market_from, read_matrix_market_part, write_matrix_market,
    write_matrix_market_to, write_matrix_market_with, MatrixMarket, MatrixMarketHeader,
    MatrixMarketPart,
};
pub use ops::{FormatKernels, Mover, SparseOps};
pub use options::{FormatLimits, FormatOptions};
pub use sell::{Sell, SellFormat, SellParams};
pub use split::{RowBlock, RowSplit, SPLIT_ROW_ALIGN};
pub use staircase::{StaircaseFormat, StaircaseParams, StaircaseSell};
pub use storage::SparseStorage;

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

/// Converts a count to a `u32` index, or reports which quantity overflows.
pub(crate) fn to_u32(value: usize, format: &'static str, what: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| crate::error::Error::InvalidMatrix {
        format,
        reason: format!("{what} = {value} does not fit the 32-bit indices galerkin uses"),
    })
}
