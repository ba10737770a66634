//! Row-split matrices: a matrix whose arrays exceed the largest buffer a device can bind
//! (wgpu: 2 GiB on NVIDIA, 128 MiB on lavapipe) is stored as blocks of consecutive rows, each
//! a matrix of the requested format in buffers of its own, and its SpMV is one launch per
//! block writing its rows of `y` through a view of `y` (a binding at an offset; no copy).
//!
//! Where the vectors themselves exceed one buffer (more rows or columns than
//! [`vector_part_len`](crate::backend::vector_part_len)), they are stored in parts (see
//! [`Vector`]) and the blocks follow the parts: no block of rows crosses a part of `y`, and a
//! block of rows is cut further by columns at the parts of `x`, each piece numbering its
//! columns from the start of its part. The pieces of one block of rows are applied in turn,
//! the first with `β`, the others adding to its result; banded matrices (PDE stencils) have
//! one or two pieces per block.
//!
//! Staircase SELL, which renumbers a square matrix as a whole, is split into SELL-C-σ
//! blocks.

use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::csr::Csr;
use crate::sparse::ops::SparseOps;
use crate::vector::Vector;

pub use crate::backend::core::SPLIT_ROW_ALIGN;

/// One block: rows `start..start + rows` and columns `col_start..col_start + cols` of the
/// whole matrix, numbered from 0 in the block.
pub struct RowBlock<M> {
    /// The first row.
    pub start: usize,
    /// The number of rows.
    pub rows: usize,
    /// The first column (0 unless the columns are cut at the parts of `x`).
    pub col_start: usize,
    /// The number of columns.
    pub cols: usize,
    /// The block, a [`SparseMatrix`](crate::sparse::SparseMatrix) of one format.
    pub matrix: M,
}

/// A matrix stored as blocks of consecutive rows, cut by columns where `x` is split (see
/// the module documentation); `M` is the block type
/// ([`SparseMatrix`](crate::sparse::SparseMatrix)).
pub struct RowSplit<M> {
    pub(crate) blocks: Vec<RowBlock<M>>,
    /// Row ranges `(start, rows)` with the blocks `first..first + count` that cover them
    /// (none where the rows hold no entry).
    pub(crate) ranges: Vec<RowRange>,
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
}

/// Rows `start..start + rows`, computed by blocks `first..first + count`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowRange {
    start: usize,
    rows: usize,
    first: usize,
    count: usize,
}

impl<M> RowSplit<M> {
    /// The blocks, in row order (the pieces of one block of rows in column order).
    pub fn blocks(&self) -> &[RowBlock<M>] {
        &self.blocks
    }

    /// The same split with each block's matrix mapped by `f`.
    ///
    /// # Errors
    /// The first error of `f`.
    pub(crate) fn try_map<N>(&self, mut f: impl FnMut(&M) -> Result<N>) -> Result<RowSplit<N>> {
        let blocks = self
            .blocks
            .iter()
            .map(|b| {
                Ok(RowBlock {
                    start: b.start,
                    rows: b.rows,
                    col_start: b.col_start,
                    cols: b.cols,
                    matrix: f(&b.matrix)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RowSplit {
            blocks,
            ranges: self.ranges.clone(),
            nrows: self.nrows,
            ncols: self.ncols,
        })
    }

    /// Splits `a` into blocks of about `block_nnz` nonzeros each (a block whose conversion
    /// still exceeds the device limit is tried again with half its rows), that
    /// stay within parts of `part_len` rows and columns where given, and converts each with
    /// `convert` (its flag: a minor piece, one with fewer entries than another piece of its
    /// block of rows, which may be stored in a format without padding).
    ///
    /// # Errors
    /// [`Error::ResourceLimit`] if a block of [`SPLIT_ROW_ALIGN`] rows is still too large;
    /// the errors of `convert`.
    pub(crate) fn from_csr<V: Element>(
        a: &Csr<Cpu, V>,
        block_nnz: usize,
        part_len: Option<usize>,
        convert: impl Fn(&Csr<Cpu, V>, bool) -> Result<M>,
    ) -> Result<Self> {
        let row_ptr = a.row_ptr();
        let mut split = RowSplit {
            blocks: Vec::new(),
            ranges: Vec::new(),
            nrows: a.nrows(),
            ncols: a.ncols(),
        };
        let mut start = 0;
        let mut budget = block_nnz.max(1);
        // Lowered when a block does not fit (rows without entries do not shrink with the
        // budget of nonzeros); a multiple of SPLIT_ROW_ALIGN.
        let mut max_rows = usize::MAX;
        while start < a.nrows() {
            let mut end = block_end(row_ptr, start, budget).min(start.saturating_add(max_rows));
            if let Some(part) = part_len {
                end = end.min((start / part + 1) * part);
            }
            let block = rows(a, start, end)?;
            let converted = match column_pieces(&block, part_len)? {
                None => convert(&block, false).map(|m| vec![(0, block.ncols(), m)]),
                Some(pieces) => {
                    let most = pieces.iter().map(|(_, p)| p.nnz()).max().unwrap_or(0);
                    pieces
                        .into_iter()
                        .map(|(col_start, piece)| {
                            let minor = piece.nnz() < most;
                            Ok((col_start, piece.ncols(), convert(&piece, minor)?))
                        })
                        .collect::<Result<Vec<_>>>()
                }
            };
            match converted {
                Ok(pieces) => {
                    split.ranges.push(RowRange {
                        start,
                        rows: end - start,
                        first: split.blocks.len(),
                        count: pieces.len(),
                    });
                    for (col_start, cols, matrix) in pieces {
                        split.blocks.push(RowBlock {
                            start,
                            rows: end - start,
                            col_start,
                            cols,
                            matrix,
                        });
                    }
                    start = end;
                }
                Err(Error::ResourceLimit { .. }) if end - start > SPLIT_ROW_ALIGN => {
                    budget = (budget / 2).max(1);
                    max_rows = ((end - start) / 2).next_multiple_of(SPLIT_ROW_ALIGN);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(split)
    }

    /// `y = α A x + β y`, block by block (`y` not read when `β = 0`), `spmv(block, α, x, β,
    /// y_rows)` computing one block with `x` its columns.
    ///
    /// # Errors
    /// Length mismatches; the errors of `spmv`.
    pub(crate) fn spmv<B: SparseOps, T: Scalar>(
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
        // The CPU backend cannot view part of a host vector: its rows go out and back, and
        // the columns of a piece are copied out of x.
        let mut host_y: Option<Vec<T>> = None;
        let mut host_x: Option<Vec<T>> = None;
        let whole_y = y.parts() == 1;
        for range in &self.ranges {
            let blocks = &self.blocks[range.first..range.first + range.count];
            let apply = |y_rows: &mut Vector<B, T>, host_x: &mut Option<Vec<T>>| {
                apply_blocks(blocks, alpha, x, beta, y_rows, host_x, &spmv)
            };
            if whole_y && range.start == 0 && range.rows == self.nrows {
                apply(y, &mut host_x)?;
                continue;
            }
            // Once y is on the host (a range that no view reaches: y split otherwise than
            // the matrix), every later range goes there too, or the final write would undo
            // it. SAFETY: the view is used for this block's product only, while `y` is
            // borrowed mutably here; `start` is a multiple of SPLIT_ROW_ALIGN.
            let view = match host_y {
                None => unsafe { y.view(range.start, range.rows) },
                Some(_) => None,
            };
            match view {
                Some(mut view) => apply(&mut view, &mut host_x)?,
                None => {
                    let all = match &mut host_y {
                        Some(h) => h,
                        None => host_y.insert(y.to_vec()?),
                    };
                    let rows = &mut all[range.start..range.start + range.rows];
                    let mut part = Vector::from_slice(&backend, rows)?;
                    apply(&mut part, &mut host_x)?;
                    rows.copy_from_slice(&part.to_vec()?);
                }
            }
        }
        if let Some(h) = host_y {
            y.write(&h)?;
        }
        Ok(())
    }
}

/// `y_rows = α A_rows x + β y_rows` for the blocks of one row range (in column order: the
/// first with `β`, the others adding; none: `y_rows = β y_rows`), each with its columns of `x`
/// (a view, or on the CPU backend a copy out of `host_x`, the host copy of `x` made once).
fn apply_blocks<M, B: SparseOps, T: Scalar>(
    blocks: &[RowBlock<M>],
    alpha: T,
    x: &Vector<B, T>,
    beta: T,
    y_rows: &mut Vector<B, T>,
    host_x: &mut Option<Vec<T>>,
    spmv: &impl Fn(&M, T, &Vector<B, T>, T, &mut Vector<B, T>) -> Result<()>,
) -> Result<()> {
    if blocks.is_empty() {
        return if beta == T::ZERO {
            y_rows.fill(T::ZERO)
        } else {
            y_rows.scale(beta)
        };
    }
    for (k, block) in blocks.iter().enumerate() {
        let b = if k == 0 { beta } else { T::ONE };
        if block.col_start == 0 && block.cols == x.len() {
            spmv(&block.matrix, alpha, x, b, y_rows)?;
            continue;
        }
        // SAFETY: x is only read while the view lives.
        match unsafe { x.view(block.col_start, block.cols) } {
            Some(view) => spmv(&block.matrix, alpha, &view, b, y_rows)?,
            None => {
                let all = match host_x {
                    Some(h) => h,
                    None => host_x.insert(x.to_vec()?),
                };
                let cols = &all[block.col_start..block.col_start + block.cols];
                let piece = Vector::from_slice(x.backend(), cols)?;
                spmv(&block.matrix, alpha, &piece, b, y_rows)?;
            }
        }
    }
    Ok(())
}

/// The pieces of a block of rows cut at the parts of `x` (`part_len` columns each), as
/// `(first column, piece)` with the piece's columns numbered from its first; pieces without
/// entries are left out. `None` where `x` is not split (the block is one piece).
#[allow(clippy::type_complexity)]
fn column_pieces<V: Element>(
    block: &Csr<Cpu, V>,
    part_len: Option<usize>,
) -> Result<Option<Vec<(usize, Csr<Cpu, V>)>>> {
    let part = match part_len {
        Some(p) if block.ncols() > p => p,
        _ => return Ok(None),
    };
    let parts = block.ncols().div_ceil(part);
    let mut used = vec![false; parts];
    for &c in block.col_idx() {
        used[c as usize / part] = true;
    }
    let row_ptr = block.row_ptr();
    let mut pieces = Vec::new();
    for (k, _) in used.iter().enumerate().filter(|(_, &u)| u) {
        let (lo, hi) = (
            (k * part) as u32,
            ((k + 1) * part).min(block.ncols()) as u32,
        );
        let mut ptr = Vec::with_capacity(block.nrows() + 1);
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        ptr.push(0u32);
        for row in 0..block.nrows() {
            for e in row_ptr[row] as usize..row_ptr[row + 1] as usize {
                let c = block.col_idx()[e];
                if (lo..hi).contains(&c) {
                    cols.push(c - lo);
                    vals.push(block.values()[e]);
                }
            }
            ptr.push(cols.len() as u32);
        }
        let piece = Csr::new(block.nrows(), (hi - lo) as usize, ptr, cols, vals)?;
        pieces.push((k * part, piece));
    }
    Ok(Some(pieces))
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
