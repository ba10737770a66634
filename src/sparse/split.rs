//! Row-split matrices: a matrix whose arrays exceed the largest buffer a device can bind
//! (wgpu: 2 GiB on NVIDIA, 128 MiB on lavapipe) is stored as blocks of consecutive rows, each
//! a matrix of the requested format in buffers of its own, and its SpMV is one launch per
//! block writing its rows of `y` through a view of `y` (a binding at an offset; no copy).
//!
//! Staircase SELL, which renumbers a square matrix as a whole, is split into SELL-C-σ
//! blocks. `x` and `y` stay single buffers: a split matrix needs vectors that fit one binding
//! (on wgpu/NVIDIA, 268M f64 rows; on lavapipe 16.7M), i.e. it lifts the limit for
//! matrices up to their row count times the limit.

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::csr::Csr;
use crate::vector::Vector;
use crate::Cpu;

/// Block boundaries are multiples of this many rows: a view of `y` starting there is
/// aligned for every element type (wgpu binds storage at multiples of 256 bytes).
pub const SPLIT_ROW_ALIGN: usize = 256;

/// One block: rows `start..start + rows` of the whole matrix.
pub struct RowBlock<M> {
    /// The first row.
    pub start: usize,
    /// The number of rows.
    pub rows: usize,
    /// The block (all columns of the whole matrix), a
    /// [`SparseMatrix`](crate::sparse::SparseMatrix) of one format.
    pub matrix: M,
}

/// A matrix stored as blocks of consecutive rows (see the module documentation); `M` is
/// the block type ([`SparseMatrix`](crate::sparse::SparseMatrix)).
pub struct RowSplit<M> {
    pub(crate) blocks: Vec<RowBlock<M>>,
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
}

impl<M> RowSplit<M> {
    /// The blocks, in row order.
    pub fn blocks(&self) -> &[RowBlock<M>] {
        &self.blocks
    }

    /// Splits `a` into blocks of about `part_bytes` of stored arrays each (estimated from the
    /// nonzeros; a block whose conversion still exceeds the device limit is halved) and
    /// converts each with `convert`.
    ///
    /// # Errors
    /// [`Error::ResourceLimit`] if a block of [`SPLIT_ROW_ALIGN`] rows is still too large;
    /// the errors of `convert`.
    pub(crate) fn from_csr<V: Element>(
        a: &Csr<Cpu, V>,
        part_bytes: usize,
        convert: impl Fn(&Csr<Cpu, V>) -> Result<M>,
    ) -> Result<Self> {
        // Values, a column index, and room for the padding of the ELL-like formats.
        let per_nnz = 2 * (V::DTYPE.size() + 4);
        let row_ptr = a.row_ptr();
        let mut blocks = Vec::new();
        let mut start = 0;
        let mut budget = part_bytes.max(1);
        while start < a.nrows() {
            let end = block_end(row_ptr, start, budget / per_nnz);
            let part = rows(a, start, end)?;
            match convert(&part) {
                Ok(matrix) => {
                    blocks.push(RowBlock {
                        start,
                        rows: end - start,
                        matrix,
                    });
                    start = end;
                }
                Err(Error::ResourceLimit { .. }) if end - start > SPLIT_ROW_ALIGN => {
                    budget /= 2;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(RowSplit {
            blocks,
            nrows: a.nrows(),
            ncols: a.ncols(),
        })
    }

    /// `y = α A x + β y`, block by block (`y` not read when `β = 0`), `spmv(block, α, x, β,
    /// y_rows)` computing one block.
    ///
    /// # Errors
    /// Length mismatches; the errors of `spmv`.
    pub(crate) fn spmv<B: Backend, T: Scalar>(
        &self,
        alpha: T,
        x: &Vector<B, T>,
        beta: T,
        y: &mut Vector<B, T>,
        spmv: impl Fn(&M, T, &Vector<B, T>, T, &mut Vector<B, T>) -> Result<()>,
    ) -> Result<()> {
        if x.len() != self.ncols || y.len() != self.nrows {
            let (what, want, got) = if x.len() != self.ncols {
                ("x (the columns)", self.ncols, x.len())
            } else {
                ("y (the rows)", self.nrows, y.len())
            };
            return Err(Error::dims(
                "SparseMatrix::spmv (row-split)",
                what,
                want,
                got,
            ));
        }
        let backend = y.backend().clone();
        // The CPU backend cannot view part of a host vector: its rows go out and back.
        let mut host: Option<Vec<T>> = None;
        for block in &self.blocks {
            let len = block.rows;
            // SAFETY: the view is used for this block's product only, while `y` is borrowed
            // mutably here; `start` is a multiple of SPLIT_ROW_ALIGN and the rows lie in y.
            match unsafe { backend.view(y.buffer(), block.start, len) } {
                Some(buffer) => {
                    // SAFETY: a view of a buffer of `backend`.
                    let mut view = unsafe { Vector::from_buffer(&backend, buffer) };
                    spmv(&block.matrix, alpha, x, beta, &mut view)?;
                }
                None => {
                    let all = match &mut host {
                        Some(h) => h,
                        None => host.insert(y.to_vec()?),
                    };
                    let rows = &mut all[block.start..block.start + len];
                    let mut part = Vector::from_slice(&backend, rows)?;
                    spmv(&block.matrix, alpha, x, beta, &mut part)?;
                    rows.copy_from_slice(&part.to_vec()?);
                }
            }
        }
        if let Some(h) = host {
            y.write(&h)?;
        }
        Ok(())
    }
}

/// The end of the block from `start`: after about `nnz` nonzeros, on a multiple of
/// [`SPLIT_ROW_ALIGN`] rows (at least one such step), at most the last row.
fn block_end(row_ptr: &[u32], start: usize, nnz: usize) -> usize {
    let nrows = row_ptr.len() - 1;
    let base = row_ptr[start] as usize;
    let target = (base + nnz.max(1)).min(row_ptr[nrows] as usize);
    // The first row whose end passes the target.
    let row = row_ptr[start..].partition_point(|&p| (p as usize) < target) + start;
    let aligned = row
        .next_multiple_of(SPLIT_ROW_ALIGN)
        .max(start + SPLIT_ROW_ALIGN);
    aligned.min(nrows)
}

/// Rows `start..end` of `a`, all columns.
fn rows<V: Element>(a: &Csr<Cpu, V>, start: usize, end: usize) -> Result<Csr<Cpu, V>> {
    let rp = a.row_ptr();
    let (s, e) = (rp[start] as usize, rp[end] as usize);
    let row_ptr = rp[start..=end].iter().map(|&p| p - rp[start]).collect();
    Csr::new(
        end - start,
        a.ncols(),
        row_ptr,
        a.col_idx()[s..e].to_vec(),
        a.values()[s..e].to_vec(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_cover_the_rows() {
        // 1000 rows of 3 nonzeros.
        let row_ptr: Vec<u32> = (0..=1000).map(|i| 3 * i).collect();
        let mut start = 0;
        let mut ends = Vec::new();
        while start < 1000 {
            let end = block_end(&row_ptr, start, 300 * 3);
            assert!(end > start && (end.is_multiple_of(SPLIT_ROW_ALIGN) || end == 1000));
            ends.push(end);
            start = end;
        }
        assert_eq!(ends, vec![512, 1000]);
        // A tiny budget still advances by one aligned step.
        assert_eq!(block_end(&row_ptr, 256, 1), 512);
    }
}
