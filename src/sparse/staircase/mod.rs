//! Staircase SELL (Wikberg): rows reordered by Cuthill–McKee and then by length, grouped
//! into "steps" of equal stored length, one launch per step.
//!
//! ```text
//!  new order: Cuthill–McKee, then a stable sort by increasing row length
//!  step t: rows row_start .. row_start + slices·C, every row padded to `len`,
//!          slot k of lane j of slice s at slot_start + s·len·C + k·C + j
//!  steps (host): [{len, row_start, slot_start, slices}, ...]
//! ```
//!
//! The matrix is stored symmetrically permuted, `Ã = P A Pᵀ`, so its vectors live in the
//! permuted numbering: use [`StaircaseSell::to_permuted`] on the way in and
//! [`StaircaseSell::from_permuted`] on the way out, or work in the permuted space
//! throughout (a Krylov solver does).
//!
//! Grouping (the seed's Algorithm 3, corrected): going through the row lengths in
//! increasing order, the rows of a length (plus those carried up) form a step of
//! `⌊rows / C⌋` slices when they are at least a fraction `α` of all rows; the remainder is
//! carried up to the next length (stored padded to it); smaller groups are merged upward
//! whole. The longest length takes every remaining row in `⌈rows / C⌉` slices, so padding
//! rows occur only at the end. Corrections to the seed: its listing never adds the last
//! group's slots to `val_size` nor appends the final `step_ptr`/`row_ptr`, reuses `h[i]`
//! with two meanings in Algorithm 4, and skips column 0 in the kernel (`col_id > 0`).

use crate::backend::core::check_device;
use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::error::{check_len, Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::csr::Csr;
use crate::sparse::ops::{sealed, SparseOps};
use crate::sparse::options::FormatLimits;
pub use crate::sparse::options::StaircaseParams;
use crate::sparse::storage::{sparse_operator, SparseStorage};
use crate::sparse::{to_u32, RowStats, PAD};
use crate::vector::Vector;

mod kernels;

pub use kernels::StaircaseFormat;

/// One step: rows of equal stored length, launched together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Stored slots per row.
    pub len: usize,
    /// First row (in the new order).
    pub row_start: usize,
    /// First slot in the value and index arrays.
    pub slot_start: usize,
    /// Slices of C rows.
    pub slices: usize,
}

/// A sparse matrix in Staircase SELL format. See the [module docs](self).
pub struct StaircaseSell<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) params: StaircaseParams,
    pub(crate) steps: Vec<Step>,
    pub(crate) col_idx: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    /// `perm[new] = old`.
    pub(crate) perm: B::Buffer<u32>,
    pub(crate) stored: usize,
    pub(crate) stats: RowStats,
    pub(crate) backend: B,
}

/// The step structure for row-length counts `h[len]` (the corrected Algorithm 3).
pub(crate) fn steps_for(h: &[usize], n: usize, c: usize, alpha: f64) -> Vec<Step> {
    let mut steps = Vec::new();
    let (mut carry, mut row, mut slot) = (0usize, 0usize, 0usize);
    let last = h.len().saturating_sub(1);
    for (len, &count) in h.iter().enumerate() {
        let rows = count + carry;
        if rows == 0 {
            continue;
        }
        let take = if len == last {
            rows.div_ceil(c) * c
        } else if (rows as f64) < alpha * n as f64 {
            0
        } else {
            rows / c * c
        };
        if take > 0 {
            steps.push(Step {
                len,
                row_start: row,
                slot_start: slot,
                slices: take / c,
            });
            slot += take * len;
            row += take;
        }
        carry = rows.saturating_sub(take);
    }
    steps
}

impl<V: Element> StaircaseSell<Cpu, V> {
    /// Converts a square CSR matrix: Cuthill–McKee order, then a stable sort by length.
    ///
    /// # Errors
    /// As [`from_csr_ordered`](Self::from_csr_ordered).
    pub fn from_csr(
        a: &Csr<Cpu, V>,
        params: StaircaseParams,
        limits: &FormatLimits,
    ) -> Result<Self> {
        if a.nrows != a.ncols {
            return Err(Error::InvalidArgument {
                op: "StaircaseSell::from_csr",
                name: "a",
                reason: format!("{} x {}: the matrix must be square", a.nrows, a.ncols),
            });
        }
        let order = crate::sparse::reorder::cuthill_mckee(a)?;
        Self::from_csr_ordered(a, order.new_to_old(), params, limits)
    }

    /// Converts a square CSR matrix whose rows are first put in `order` (`order[new] = old`,
    /// normally Cuthill–McKee), then stably sorted by increasing length.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a non-square matrix, bad parameters or an `order`
    /// that is not a permutation; [`Error::Padding`] if the padding exceeds the limit.
    pub fn from_csr_ordered(
        a: &Csr<Cpu, V>,
        order: &[u32],
        params: StaircaseParams,
        limits: &FormatLimits,
    ) -> Result<Self> {
        let n = a.nrows;
        if a.ncols != n {
            return Err(Error::invalid(
                "StaircaseSell::from_csr",
                "a",
                format!("{} x {}: the matrix must be square", n, a.ncols),
            ));
        }
        let c = params.slice_height as usize;
        if !(1..=1024).contains(&c) || !c.is_power_of_two() {
            return Err(Error::invalid(
                "StaircaseSell::from_csr",
                "slice_height",
                format!("{c}: must be a power of two in 1..=1024"),
            ));
        }
        if !(params.alpha >= 0.0 && params.alpha <= 1.0) {
            return Err(Error::invalid(
                "StaircaseSell::from_csr",
                "alpha",
                format!("{}: must lie in [0, 1]", params.alpha),
            ));
        }
        if order.len() != n {
            return Err(Error::invalid(
                "StaircaseSell::from_csr",
                "order",
                format!("{} entries for {n} rows", order.len()),
            ));
        }
        let mut seen = vec![false; n];
        for (i, &o) in order.iter().enumerate() {
            if o as usize >= n || std::mem::replace(&mut seen[o as usize], true) {
                return Err(Error::invalid(
                    "StaircaseSell::from_csr",
                    "order",
                    format!("entry {i} = {o} repeats or is out of range"),
                ));
            }
        }
        let len = |r: u32| (a.row_ptr[r as usize + 1] - a.row_ptr[r as usize]) as usize;
        let mut perm = order.to_vec();
        perm.sort_by_key(|&r| len(r));
        let mut inverse = vec![0u32; n];
        for (new, &old) in perm.iter().enumerate() {
            inverse[old as usize] = new as u32;
        }
        let mut h = vec![0usize; a.stats.max + 1];
        for r in 0..n {
            h[len(r as u32)] += 1;
        }
        let steps = if n == 0 {
            Vec::new()
        } else {
            steps_for(&h, n, c, params.alpha)
        };
        let stored = steps.iter().map(|s| s.slices * c * s.len).sum::<usize>();
        limits.check("Staircase SELL", stored as u64, a.nnz() as u64)?;
        to_u32(stored, "Staircase SELL", "stored slots")?;
        let mut col_idx = vec![PAD; stored];
        let mut values = vec![V::default(); stored];
        let mut entries: Vec<(u32, V)> = Vec::new();
        for step in &steps {
            for t in 0..step.slices * c {
                let p = step.row_start + t;
                if p >= n {
                    break;
                }
                let (cols, vals) = a.row(perm[p] as usize);
                entries.clear();
                entries.extend(
                    cols.iter()
                        .zip(vals)
                        .map(|(&col, &v)| (inverse[col as usize], v)),
                );
                entries.sort_unstable_by_key(|e| e.0);
                let base = step.slot_start + (t / c) * step.len * c + t % c;
                for (k, &(col, v)) in entries.iter().enumerate() {
                    col_idx[base + k * c] = col;
                    values[base + k * c] = v;
                }
            }
        }
        Ok(StaircaseSell {
            nrows: n,
            params,
            steps,
            col_idx,
            values,
            perm,
            stored,
            stats: a.stats,
            backend: Cpu::new(),
        })
    }

    /// Converts back to CSR in the original numbering (exact).
    ///
    /// # Errors
    /// Never for a valid matrix.
    pub fn to_csr(&self) -> Result<Csr<Cpu, V>> {
        let (n, c) = (self.nrows, self.params.slice_height as usize);
        let mut rows: Vec<Vec<(u32, V)>> = vec![Vec::new(); n];
        for step in &self.steps {
            for t in 0..(step.slices * c) {
                let p = step.row_start + t;
                if p >= n {
                    break;
                }
                let base = step.slot_start + (t / c) * step.len * c + t % c;
                for k in 0..step.len {
                    let col = self.col_idx[base + k * c];
                    if col == PAD {
                        break;
                    }
                    rows[self.perm[p] as usize]
                        .push((self.perm[col as usize], self.values[base + k * c]));
                }
            }
        }
        let mut row_ptr = vec![0u32];
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        for mut row in rows {
            row.sort_unstable_by_key(|e| e.0);
            for (col, v) in row {
                col_idx.push(col);
                values.push(v);
            }
            row_ptr.push(col_idx.len() as u32);
        }
        Csr::new(n, n, row_ptr, col_idx, values)
    }
}

impl<B: BackendCore, V: Element> StaircaseSell<B, V> {
    /// The steps, in launch order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The parameters.
    pub fn params(&self) -> StaircaseParams {
        self.params
    }

    /// Stored slots, padding included.
    pub fn stored(&self) -> usize {
        self.stored
    }

    /// The row permutation, `perm[new] = old`, on the matrix's backend.
    pub fn permutation(&self) -> &B::Buffer<u32> {
        &self.perm
    }
}

impl<B: SparseOps, V: Element> StaircaseSell<B, V> {
    /// `x` in the permuted numbering: `x̃[new] = x[perm[new]]`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `x` does not have `nrows` entries;
    /// [`Error::DeviceMismatch`] if it lives on another device.
    pub fn to_permuted<T: Element>(&self, x: &Vector<B, T>) -> Result<Vector<B, T>> {
        check_len("StaircaseSell::to_permuted", "x", self.nrows, x.len())?;
        check_device("StaircaseSell::to_permuted", &self.backend, x.backend())?;
        let mut out = Vector::zeros(&self.backend, self.nrows)?;
        // SAFETY: x, the permutation and out live on the matrix's device (checked above).
        unsafe {
            self.backend
                .gather(x.buffer()?, &self.perm, out.buffer_mut()?)?
        };
        Ok(out)
    }

    /// `x` back in the original numbering: `x[perm[new]] = x̃[new]`.
    ///
    /// # Errors
    /// As [`to_permuted`](Self::to_permuted).
    pub fn from_permuted<T: Element>(&self, x: &Vector<B, T>) -> Result<Vector<B, T>> {
        check_len("StaircaseSell::from_permuted", "x", self.nrows, x.len())?;
        check_device("StaircaseSell::from_permuted", &self.backend, x.backend())?;
        let mut out = Vector::zeros(&self.backend, self.nrows)?;
        // SAFETY: as in to_permuted.
        unsafe {
            self.backend
                .scatter(x.buffer()?, &self.perm, out.buffer_mut()?)?
        };
        Ok(out)
    }
}

/// The matrix acts in its permuted numbering (`Ã = P A Pᵀ`): a solver works there
/// throughout; see [`SparseStorage::spmv_original`] for a product in the original one.
impl<B: SparseOps, V: Element> SparseStorage<B, V> for StaircaseSell<B, V> {
    type Kernels = StaircaseFormat;

    fn backend(&self) -> &B {
        &self.backend
    }
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.nrows
    }
    fn nnz(&self) -> usize {
        self.stats.nnz
    }
    /// Values, indices and the permutation.
    fn storage_bytes(&self) -> usize {
        self.stored * (V::DTYPE.size() + 4) + 4 * self.nrows
    }
    /// [`spmv`](SparseStorage::spmv) multiplies in the permuted numbering.
    fn original_numbering(&self) -> bool {
        false
    }
    /// `y = alpha A x + beta y` in the original numbering: `x` permuted in, the product in
    /// the permuted numbering, `y` permuted out (`y` not read when `beta = 0`).
    ///
    /// # Errors
    /// As [`SparseStorage::spmv`].
    fn spmv_original<T: Scalar>(
        &self,
        alpha: T,
        x: &Vector<B, T>,
        beta: T,
        y: &mut Vector<B, T>,
    ) -> Result<()> {
        check_len("StaircaseSell::spmv_original", "y", self.nrows, y.len())?;
        check_device("StaircaseSell::spmv_original", &self.backend, y.backend())?;
        let xp = self.to_permuted(x)?;
        let mut yp = if beta == T::ZERO {
            Vector::zeros(&self.backend, self.nrows)?
        } else {
            self.to_permuted(y)?
        };
        SparseStorage::spmv(self, alpha, &xp, beta, &mut yp)?;
        *y = self.from_permuted(&yp)?;
        Ok(())
    }
}

impl<B: BackendCore, V: Element> sealed::Format for StaircaseSell<B, V> {}

sparse_operator!(StaircaseSell);

#[cfg(test)]
mod tests;
