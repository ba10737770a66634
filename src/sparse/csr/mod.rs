//! Compressed sparse row format.
//!
//! ```text
//!  | a00 a01  .  |    row_ptr = [0,       2,   3,           6]
//!  |  .  a11  .  |    col_idx = [0, 1,    1,   0, 1, 2]
//!  | a20 a21 a22 |    values  = [a00 a01, a11, a20 a21 a22]
//! ```
//!
//! Invariants (checked by [`Csr::new`]): `row_ptr` has `nrows + 1` non-decreasing entries
//! from 0 to `nnz`; column indices are `< ncols` and strictly increasing within each row (no
//! duplicates). Explicitly stored zeros are allowed.
//!
//! Two SpMV kernels ([`CsrKernel`]): one unit per row (short, even rows) and a group of
//! units per row reduced through plane shuffles or shared memory (long rows); the default
//! picks from the row-length statistics.

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::coo::Coo;
use crate::sparse::ops::sealed;
use crate::sparse::ops::SparseOps;
pub use crate::sparse::options::CsrKernel;
use crate::sparse::storage::{sparse_operator, SparseStorage};
use crate::sparse::{to_u32, RowStats};
use rayon::prelude::*;

mod kernels;

pub use kernels::CsrFormat;

/// A sparse matrix in compressed sparse row format. See the [module docs](self).
pub struct Csr<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) row_ptr: B::Buffer<u32>,
    pub(crate) col_idx: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    pub(crate) stats: RowStats,
    pub(crate) kernel: CsrKernel,
    pub(crate) backend: B,
}

impl<V: Element> Csr<Cpu, V> {
    /// A host CSR matrix from its three arrays.
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] naming the first violated invariant (with the row).
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<u32>,
        col_idx: Vec<u32>,
        values: Vec<V>,
    ) -> Result<Self> {
        validate(nrows, ncols, &row_ptr, &col_idx, values.len())?;
        let stats = RowStats::from_row_ptr(&row_ptr, ncols);
        Ok(Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
            stats,
            kernel: CsrKernel::Auto,
            backend: Cpu::new(),
        })
    }

    /// Converts a COO matrix: entries sorted by row then column, duplicates summed (in the
    /// order they appear), explicit zeros kept.
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] if the matrix has 2³² or more entries.
    pub fn from_coo(coo: &Coo<Cpu, V>) -> Result<Self> {
        let nnz_in = coo.values.len();
        to_u32(nnz_in, "CSR", "the number of COO entries")?;
        // Three row arrays (counts, next, row pointers) and the sorted entries.
        crate::limits::check_host_bytes(
            format_args!(
                "CSR of a {} x {} matrix with {nnz_in} entries",
                coo.nrows, coo.ncols
            ),
            (coo.nrows as u64 + 1)
                .saturating_mul(12)
                .saturating_add((nnz_in as u64).saturating_mul(8 + V::DTYPE.size() as u64)),
        )?;
        // Counting sort by row, stable: entries of a row keep their input order.
        let mut count = vec![0u32; coo.nrows + 1];
        for &r in &coo.rows {
            count[r as usize + 1] += 1;
        }
        for i in 0..coo.nrows {
            count[i + 1] += count[i];
        }
        let mut order = vec![0u32; nnz_in];
        let mut next = count.clone();
        for (k, &r) in coo.rows.iter().enumerate() {
            order[next[r as usize] as usize] = k as u32;
            next[r as usize] += 1;
        }
        // Within each row: stable sort by column, then sum runs of equal columns.
        let mut row_ptr = Vec::with_capacity(coo.nrows + 1);
        let mut col_idx = Vec::with_capacity(nnz_in);
        let mut values: Vec<V> = Vec::with_capacity(nnz_in);
        row_ptr.push(0u32);
        let mut scratch: Vec<u32> = Vec::new();
        for r in 0..coo.nrows {
            scratch.clear();
            scratch.extend_from_slice(&order[count[r] as usize..count[r + 1] as usize]);
            scratch.sort_by_key(|&k| coo.cols[k as usize]);
            let mut last_col = None;
            for &k in &scratch {
                let (c, v) = (coo.cols[k as usize], coo.values[k as usize]);
                match values.last_mut() {
                    // A repeated column adds to the entry just pushed for it.
                    Some(last) if last_col == Some(c) => {
                        *last = V::from_f64(last.as_f64() + v.as_f64());
                    }
                    _ => {
                        col_idx.push(c);
                        values.push(v);
                        last_col = Some(c);
                    }
                }
            }
            row_ptr.push(col_idx.len() as u32);
        }
        let stats = RowStats::from_row_ptr(&row_ptr, coo.ncols);
        Ok(Csr {
            nrows: coo.nrows,
            ncols: coo.ncols,
            row_ptr,
            col_idx,
            values,
            stats,
            kernel: CsrKernel::Auto,
            backend: Cpu::new(),
        })
    }

    /// The row offsets (`nrows + 1`).
    pub fn row_ptr(&self) -> &[u32] {
        &self.row_ptr
    }

    /// The column indices (`nnz`).
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }

    /// The (0-based) row and column of the `k`-th stored entry (`k < nnz`), for messages
    /// that name an entry found by its position in [`values`](Self::values).
    pub fn entry_position(&self, k: usize) -> (usize, usize) {
        let row = self.row_ptr.partition_point(|&p| p as usize <= k) - 1;
        (row, self.col_idx[k] as usize)
    }

    /// Checks that every stored value is finite: NaN or infinity in a matrix makes every
    /// solve with it meaningless.
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] naming the first such entry (1-based row and column) and
    /// its value.
    pub fn check_finite(&self) -> Result<()> {
        // Chunks in parallel, each by a branch-free fold (vectorized), then the first bad
        // entry of the first bad chunk.
        const CHUNK: usize = 1 << 14;
        let finite = |v: &V| v.as_f64().is_finite();
        let bad = self
            .values
            .par_chunks(CHUNK)
            .position_first(|c| !c.iter().fold(true, |ok, v| ok & finite(v)))
            .map(|c| {
                let start = c * CHUNK;
                start
                    + self.values[start..]
                        .iter()
                        .position(|v| !finite(v))
                        .unwrap_or(0)
            });
        match bad {
            None => Ok(()),
            Some(k) => {
                let (row, col) = self.entry_position(k);
                Err(Error::InvalidMatrix {
                    format: "CSR",
                    reason: format!(
                        "entry ({}, {}) (1-based) is {}: only finite values can be solved with",
                        row + 1,
                        col + 1,
                        self.values[k].as_f64()
                    ),
                })
            }
        }
    }

    /// The values (`nnz`).
    pub fn values(&self) -> &[V] {
        &self.values
    }

    /// The values, mutably (the pattern stays fixed).
    pub fn values_mut(&mut self) -> &mut [V] {
        &mut self.values
    }

    /// Column indices and values of row `i`.
    ///
    /// # Panics
    /// If `i >= nrows`.
    pub fn row(&self, i: usize) -> (&[u32], &[V]) {
        let (s, e) = (self.row_ptr[i] as usize, self.row_ptr[i + 1] as usize);
        (&self.col_idx[s..e], &self.values[s..e])
    }

    /// Converts to COO (row-sorted triplets).
    pub fn to_coo(&self) -> Coo<Cpu, V> {
        let mut rows = Vec::with_capacity(self.values.len());
        for r in 0..self.nrows {
            let len = (self.row_ptr[r + 1] - self.row_ptr[r]) as usize;
            rows.extend(std::iter::repeat_n(r as u32, len));
        }
        Coo {
            nrows: self.nrows,
            ncols: self.ncols,
            rows,
            cols: self.col_idx.clone(),
            values: self.values.clone(),
            backend: Cpu::new(),
        }
    }

    /// The same matrix with values converted to `W` (one rounding each).
    pub fn convert<W: Element>(&self) -> Csr<Cpu, W> {
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values: self.values.par_iter().map(|v| v.convert::<W>()).collect(),
            stats: self.stats,
            kernel: self.kernel,
            backend: Cpu::new(),
        }
    }

    /// The transpose (also the conversion CSR -> CSC).
    pub fn transpose(&self) -> Csr<Cpu, V> {
        let nnz = self.values.len();
        let mut row_ptr = vec![0u32; self.ncols + 1];
        for &c in &self.col_idx {
            row_ptr[c as usize + 1] += 1;
        }
        for i in 0..self.ncols {
            row_ptr[i + 1] += row_ptr[i];
        }
        let mut next = row_ptr.clone();
        let mut col_idx = vec![0u32; nnz];
        let mut values = vec![V::default(); nnz];
        for r in 0..self.nrows {
            for k in self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize {
                let c = self.col_idx[k] as usize;
                let dst = next[c] as usize;
                col_idx[dst] = r as u32;
                values[dst] = self.values[k];
                next[c] += 1;
            }
        }
        let stats = RowStats::from_row_ptr(&row_ptr, self.nrows);
        Csr {
            nrows: self.ncols,
            ncols: self.nrows,
            row_ptr,
            col_idx,
            values,
            stats,
            kernel: CsrKernel::Auto,
            backend: Cpu::new(),
        }
    }

    /// The main diagonal (zeros where no entry is stored).
    pub fn diagonal(&self) -> Vec<V> {
        (0..self.nrows.min(self.ncols))
            .map(|r| {
                let (cols, vals) = self.row(r);
                cols.binary_search(&(r as u32))
                    .map(|k| vals[k])
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// Checks the CSR invariants.
pub(crate) fn validate(
    nrows: usize,
    ncols: usize,
    row_ptr: &[u32],
    col_idx: &[u32],
    nvalues: usize,
) -> Result<()> {
    let invalid = |reason: String| {
        Err(Error::InvalidMatrix {
            format: "CSR",
            reason,
        })
    };
    to_u32(nrows, "CSR", "nrows")?;
    to_u32(ncols, "CSR", "ncols")?;
    if row_ptr.len() != nrows + 1 {
        return invalid(format!(
            "row_ptr has {} entries, expected nrows + 1 = {}",
            row_ptr.len(),
            nrows + 1
        ));
    }
    if col_idx.len() != nvalues {
        return invalid(format!(
            "{} column indices but {} values",
            col_idx.len(),
            nvalues
        ));
    }
    if row_ptr[0] != 0 {
        return invalid(format!("row_ptr[0] = {}, expected 0", row_ptr[0]));
    }
    if row_ptr[nrows] as usize != nvalues {
        return invalid(format!(
            "row_ptr[{nrows}] = {} but there are {nvalues} entries",
            row_ptr[nrows]
        ));
    }
    // The offsets first, whole: non-decreasing from 0 to nnz, so a row's range is sliced
    // only once every offset is known to lie in 0..=nnz.
    for r in 0..nrows {
        let (s, e) = (row_ptr[r], row_ptr[r + 1]);
        if e < s {
            return invalid(format!("row_ptr decreases at row {r}: {s} then {e}"));
        }
    }
    for r in 0..nrows {
        let (s, e) = (row_ptr[r], row_ptr[r + 1]);
        if e as usize > nvalues {
            return invalid(format!(
                "row_ptr[{}] = {e} exceeds nnz = {nvalues} (row {r})",
                r + 1
            ));
        }
        let cols = &col_idx[s as usize..e as usize];
        for (k, &c) in cols.iter().enumerate() {
            if c as usize >= ncols {
                return invalid(format!(
                    "row {r}: column index {c} is out of range (ncols = {ncols})"
                ));
            }
            if k > 0 && c <= cols[k - 1] {
                return invalid(format!(
                    "row {r}: column indices must be strictly increasing (found {} then {c}{})",
                    cols[k - 1],
                    if c == cols[k - 1] {
                        ": a duplicate entry"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    Ok(())
}

impl<B: BackendCore, V: Element> Csr<B, V> {
    /// Row-length statistics.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }
}

impl<V: Element> Coo<Cpu, V> {
    /// Converts to CSR, sorting and summing duplicates. Same as [`Csr::from_coo`].
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] if the matrix has 2³² or more entries.
    pub fn to_csr(&self) -> Result<Csr<Cpu, V>> {
        Csr::from_coo(self)
    }
}

impl<B: BackendCore, V: Element> Csr<B, V> {
    /// The SpMV kernel the matrix uses (default [`CsrKernel::Auto`]).
    pub fn kernel(&self) -> CsrKernel {
        self.kernel
    }

    /// Chooses the SpMV kernel.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a group size that is not a power of two in 2..=32
    /// (the kernel is left as it was).
    pub fn set_kernel(&mut self, kernel: CsrKernel) -> Result<()> {
        if let CsrKernel::Vector { group } = kernel {
            if !(2..=32).contains(&group) || !group.is_power_of_two() {
                return Err(Error::InvalidArgument {
                    op: "Csr::set_kernel",
                    name: "group",
                    reason: format!("{group} units per row: must be a power of two in 2..=32"),
                });
            }
        }
        self.kernel = kernel;
        Ok(())
    }

    /// The matrix with another SpMV kernel (see [`set_kernel`](Self::set_kernel)).
    ///
    /// # Errors
    /// As [`set_kernel`](Self::set_kernel).
    pub fn with_kernel(mut self, kernel: CsrKernel) -> Result<Self> {
        self.set_kernel(kernel)?;
        Ok(self)
    }
}

impl<B: SparseOps, V: Element> SparseStorage<B, V> for Csr<B, V> {
    type Kernels = CsrFormat;

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
    /// Values and indices.
    fn storage_bytes(&self) -> usize {
        self.stats.nnz * (V::DTYPE.size() + 4) + (self.nrows + 1) * 4
    }
}

impl<B: BackendCore, V: Element> sealed::Format for Csr<B, V> {}

sparse_operator!(Csr);

#[cfg(test)]
mod validate_tests {
    use super::Csr;
    use crate::error::Error;

    /// Offsets that decrease or pass the number of entries are typed errors naming the row,
    /// found before any row's range is sliced (no panic).
    #[test]
    fn bad_row_ptr_is_an_error_not_a_panic() {
        for (row_ptr, col_idx, values, expected) in [
            (
                vec![0, 3, 1],
                vec![0],
                vec![1.0],
                "row_ptr decreases at row 1",
            ),
            (
                vec![0, 2, 1],
                vec![0],
                vec![1.0],
                "row_ptr decreases at row 1",
            ),
            (vec![0, 2, 1], vec![0, 1], vec![1.0, 2.0], "row_ptr[2] = 1"),
        ] {
            let e = Csr::<crate::backend::Cpu, f64>::new(2, 2, row_ptr, col_idx, values)
                .err()
                .unwrap_or_else(|| panic!("expected an error containing {expected:?}"));
            assert!(
                matches!(e, Error::InvalidMatrix { format: "CSR", .. }),
                "{e:?}"
            );
            assert!(
                e.to_string().contains(expected),
                "{e} does not mention {expected:?}"
            );
        }
    }
}

#[cfg(test)]
mod finite_tests {
    /// The first non-finite entry is named wherever it lies: at the ends, at either side of
    /// the parallel check's chunk boundaries, and before a later one.
    #[test]
    fn check_finite_names_the_first_bad_entry() {
        let a = crate::sparse::generate::poisson2d_5pt(100).unwrap();
        let nnz = a.nnz();
        assert!(a.check_finite().is_ok());
        for (k, later) in [
            (0, None),
            ((1 << 14) - 1, Some(nnz - 1)),
            (1 << 14, Some((1 << 14) + 1)),
            (3 * (1 << 14) + 7, None),
            (nnz - 1, None),
        ] {
            let mut b = crate::sparse::generate::poisson2d_5pt(100).unwrap();
            b.values_mut()[k] = f64::NAN;
            if let Some(l) = later {
                b.values_mut()[l] = f64::INFINITY;
            }
            let (row, col) = b.entry_position(k);
            let msg = b.check_finite().unwrap_err().to_string();
            let want = format!("entry ({}, {}) (1-based) is NaN", row + 1, col + 1);
            assert!(msg.contains(&want), "k {k}: {msg} (want {want})");
        }
    }
}
