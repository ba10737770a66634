//! Coordinate format: the assembly and interchange format.
//!
//! ```text
//!  rows   = [0, 0, 1, 2, 2, 2]
//!  cols   = [0, 1, 1, 0, 1, 2]
//!  values = [a00, a01, a11, a20, a21, a22]
//! ```
//!
//! Entries may come in any order and may repeat (finite-element assembly adds element
//! contributions to the same entry); [`Csr::from_coo`](crate::sparse::Csr::from_coo) sorts them and sums duplicates.
//! Nothing is dropped: explicitly stored zeros are kept.

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::ops::{sealed, SparseOps};
use crate::sparse::storage::{sparse_operator, SparseStorage};

mod kernels;

/// A sparse matrix as `(row, col, value)` triplets. See the [module docs](self).
pub struct Coo<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) rows: B::Buffer<u32>,
    pub(crate) cols: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    pub(crate) backend: B,
}

impl<V: Element> Coo<Cpu, V> {
    /// A host COO matrix from triplet arrays.
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] if the arrays differ in length or an index is out of range
    /// (the message names the entry).
    pub fn new(
        nrows: usize,
        ncols: usize,
        rows: Vec<u32>,
        cols: Vec<u32>,
        values: Vec<V>,
    ) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidMatrix {
            format: "COO",
            reason,
        };
        if rows.len() != values.len() || cols.len() != values.len() {
            return Err(invalid(format!(
                "{} row indices, {} column indices and {} values: the three arrays must have equal length",
                rows.len(),
                cols.len(),
                values.len()
            )));
        }
        crate::sparse::to_u32(nrows, "COO", "nrows")?;
        crate::sparse::to_u32(ncols, "COO", "ncols")?;
        for (k, (&r, &c)) in rows.iter().zip(&cols).enumerate() {
            if r as usize >= nrows || c as usize >= ncols {
                return Err(invalid(format!(
                    "entry {k} at ({r}, {c}) lies outside the {nrows} x {ncols} matrix"
                )));
            }
        }
        Ok(Coo {
            nrows,
            ncols,
            rows,
            cols,
            values,
            backend: Cpu::new(),
        })
    }

    /// An empty `nrows x ncols` matrix to push entries into.
    pub fn with_capacity(nrows: usize, ncols: usize, capacity: usize) -> Self {
        Coo {
            nrows,
            ncols,
            rows: Vec::with_capacity(capacity),
            cols: Vec::with_capacity(capacity),
            values: Vec::with_capacity(capacity),
            backend: Cpu::new(),
        }
    }

    /// Appends an entry (repeats are summed on conversion to CSR).
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] if `(row, col)` is out of range.
    pub fn push(&mut self, row: usize, col: usize, value: V) -> Result<()> {
        if row >= self.nrows || col >= self.ncols {
            return Err(Error::InvalidMatrix {
                format: "COO",
                reason: format!(
                    "entry ({row}, {col}) lies outside the {} x {} matrix",
                    self.nrows, self.ncols
                ),
            });
        }
        self.rows.push(row as u32);
        self.cols.push(col as u32);
        self.values.push(value);
        Ok(())
    }

    /// The row indices.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }

    /// The column indices.
    pub fn cols(&self) -> &[u32] {
        &self.cols
    }

    /// The values.
    pub fn values(&self) -> &[V] {
        &self.values
    }
}

/// On the CPU the entries are added in their stored order; on devices the matrix is
/// row-sorted ([`to_backend`](SparseStorage::to_backend) sorts the entries stably by row:
/// entries of a row keep their relative order, duplicates are kept) and each unit finds its
/// row's entries by binary search, so no atomics are needed.
impl<B: SparseOps, V: Element> SparseStorage<B, V> for Coo<B, V> {
    type Kernels = CooFormat;

    fn backend(&self) -> &B {
        &self.backend
    }
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    /// Stored entries (duplicates counted separately).
    fn nnz(&self) -> usize {
        B::len(&self.values)
    }
    fn storage_bytes(&self) -> usize {
        B::len(&self.values) * (V::DTYPE.size() + 8)
    }
}

impl<B: BackendCore, V: Element> sealed::Format for Coo<B, V> {}

sparse_operator!(Coo);

/// The COO kernels (in `kernels.rs`: the CPU reference, the CubeCL kernel, the conversion).
pub struct CooFormat;
