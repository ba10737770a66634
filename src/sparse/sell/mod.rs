//! SELL-C-σ: sliced ELLPACK with a sorting window.
//!
//! Rows are sorted by decreasing length inside windows of σ rows (σ = 1: no sorting), then
//! cut into slices of C consecutive (sorted) rows; each slice is padded to its own longest
//! row and stored slot-major inside the slice:
//!
//! ```text
//!  slice s, rows p = sC..(s+1)C, width w_s:  slot k of lane j at slice_ptr[s] + k C + j
//!  slice_ptr = [0, w_0 C, w_0 C + w_1 C, ...]           (in slots, on the device)
//!  row_perm[p] = original row of sorted position p      (only when σ > 1)
//! ```
//!
//! C = 1 is CSR without offsets per row; C = n, σ = 1 is ELL. One launch: one unit per
//! sorted row, the slice found by division; `y` is written through `row_perm`, so `x` and
//! `y` stay in the original numbering.

pub use crate::sparse::options::SellParams;
use rayon::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::error::Result;
use crate::scalar::Element;
use crate::sparse::csr::Csr;
use crate::sparse::ops::{sealed, SparseOps};
use crate::sparse::options::FormatLimits;
use crate::sparse::storage::{sparse_operator, SparseStorage};
use crate::sparse::{to_u32, RowStats, PAD};

mod kernels;

pub use kernels::SellFormat;

/// A sparse matrix in SELL-C-σ format. See the [module docs](self).
pub struct Sell<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) params: SellParams,
    pub(crate) slice_ptr: B::Buffer<u32>,
    pub(crate) col_idx: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    pub(crate) row_perm: Option<B::Buffer<u32>>,
    pub(crate) stored: usize,
    pub(crate) stats: RowStats,
    pub(crate) backend: B,
}

/// The row order of SELL-C-σ: decreasing length inside windows of `sigma` rows (stable).
pub(crate) fn window_order(row_ptr: &[u32], sigma: usize) -> Vec<u32> {
    let n = row_ptr.len() - 1;
    let mut order: Vec<u32> = (0..n as u32).collect();
    if sigma > 1 {
        let len = |r: u32| row_ptr[r as usize + 1] - row_ptr[r as usize];
        order
            .par_chunks_mut(sigma)
            .for_each(|w| w.sort_by_key(|&r| std::cmp::Reverse(len(r))));
    }
    order
}

impl<V: Element> Sell<Cpu, V> {
    /// Converts a CSR matrix (exact).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) for bad parameters; [`Error::Padding`](crate::error::Error::Padding) if the padding
    /// exceeds the limit.
    pub fn from_csr(a: &Csr<Cpu, V>, params: SellParams, limits: &FormatLimits) -> Result<Self> {
        params.validate("Sell::from_csr")?;
        let (n, c) = (a.nrows, params.slice_height as usize);
        let order = window_order(&a.row_ptr, params.sigma as usize);
        let len =
            |p: usize| (a.row_ptr[order[p] as usize + 1] - a.row_ptr[order[p] as usize]) as usize;
        let nslices = n.div_ceil(c);
        let mut slice_ptr = Vec::with_capacity(nslices + 1);
        slice_ptr.push(0u64);
        for s in 0..nslices {
            let width = (s * c..((s + 1) * c).min(n)).map(len).max().unwrap_or(0);
            slice_ptr.push(slice_ptr[s] + (width * c) as u64);
        }
        let stored = slice_ptr[nslices];
        limits.check("SELL", stored, a.nnz() as u64)?;
        to_u32(stored as usize, "SELL", "stored slots")?;
        let slice_ptr: Vec<u32> = slice_ptr.into_iter().map(|v| v as u32).collect();
        let mut col_idx = vec![PAD; stored as usize];
        let mut values = vec![V::default(); stored as usize];
        for (p, &r) in order.iter().enumerate() {
            let (s, lane) = (p / c, p % c);
            let (cols, vals) = a.row(r as usize);
            for (k, (&col, &v)) in cols.iter().zip(vals).enumerate() {
                let idx = slice_ptr[s] as usize + k * c + lane;
                col_idx[idx] = col;
                values[idx] = v;
            }
        }
        let sorted = params.sigma > 1;
        Ok(Sell {
            nrows: n,
            ncols: a.ncols,
            params,
            slice_ptr,
            col_idx,
            values,
            row_perm: sorted.then_some(order),
            stored: stored as usize,
            stats: a.stats,
            backend: Cpu::new(),
        })
    }

    /// Converts back to CSR (exact, original row order).
    ///
    /// # Errors
    /// Never for a valid SELL matrix.
    pub fn to_csr(&self) -> Result<Csr<Cpu, V>> {
        let (n, c) = (self.nrows, self.params.slice_height as usize);
        let mut rows: Vec<(Vec<u32>, Vec<V>)> = vec![(Vec::new(), Vec::new()); n];
        for p in 0..n {
            let r = self.row_perm.as_ref().map_or(p, |perm| perm[p] as usize);
            let (s, lane) = (p / c, p % c);
            let width = (self.slice_ptr[s + 1] - self.slice_ptr[s]) as usize / c;
            for k in 0..width {
                let idx = self.slice_ptr[s] as usize + k * c + lane;
                if self.col_idx[idx] == PAD {
                    break;
                }
                rows[r].0.push(self.col_idx[idx]);
                rows[r].1.push(self.values[idx]);
            }
        }
        let mut row_ptr = vec![0u32];
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        for (cols, vals) in rows {
            col_idx.extend(cols);
            values.extend(vals);
            row_ptr.push(col_idx.len() as u32);
        }
        Csr::new(n, self.ncols, row_ptr, col_idx, values)
    }
}

impl<B: BackendCore, V: Element> Sell<B, V> {
    /// The parameters C and σ.
    pub fn params(&self) -> SellParams {
        self.params
    }

    /// Stored slots, padding included.
    pub fn stored(&self) -> usize {
        self.stored
    }
}

impl<B: SparseOps, V: Element> Sell<B, V> {}

/// SELL-C-σ fuses `spmv_dot` and `spmv_dot_device` on devices (one pass: CG's `q = A p`
/// and `p · q`).
impl<B: SparseOps, V: Element> SparseStorage<B, V> for Sell<B, V> {
    type Kernels = SellFormat;

    fn backend(&self) -> &B {
        &self.backend
    }
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn nnz(&self) -> usize {
        self.stats.nnz
    }
    /// Values, indices, slice pointers (and the row permutation where σ sorts rows).
    fn storage_bytes(&self) -> usize {
        self.stored * (V::DTYPE.size() + 4)
            + 4 * (self.nrows.div_ceil(self.params.slice_height as usize) + 1)
            + if self.row_perm.is_some() {
                4 * self.nrows
            } else {
                0
            }
    }
}

impl<B: BackendCore, V: Element> sealed::Format for Sell<B, V> {}

sparse_operator!(Sell);
