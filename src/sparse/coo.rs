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

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::csr::Csr;
use crate::sparse::ops::{axpby_row, AlphaBeta, AlphaBetaLaunch, Scaling, SparseOps};
use crate::sparse::ops::{sealed, FormatKernels, Mover};
use crate::sparse::options::FormatOptions;
use crate::sparse::storage::{sparse_operator, SparseStorage};

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

/// The COO entries, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
struct CooArrays<V: Float> {
    rows: Array<u32>,
    cols: Array<u32>,
    values: Array<V>,
}

/// Device kernel on row-sorted entries: one unit per row, its entries found by binary search
/// (`lower_bound(row)`), then summed in order.
#[cube(launch_unchecked)]
fn coo_kernel<V: Float, T: Float>(
    a: &CooArrays<V>,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    nrows: usize,
    nnz: usize,
    #[comptime] beta_zero: bool,
) {
    let alpha = scaling.alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut row = ABSOLUTE_POS;
    while row < nrows {
        let mut lo = 0;
        let mut hi = nnz;
        while lo < hi {
            let mid = (lo + hi) / 2;
            if (a.rows[mid] as usize) < row {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut acc = T::new(0.0);
        let mut k = lo;
        while k < nnz {
            if a.rows[k] as usize != row {
                break;
            }
            acc += T::cast_from(a.values[k]) * x[a.cols[k] as usize];
            k += 1;
        }
        if beta_zero {
            y[row] = alpha * acc;
        } else {
            y[row] = alpha * acc + scaling.beta.get::<T>() * y[row];
        }
        row += stride;
    }
}

/// The COO kernels.
pub struct CooFormat;

impl sealed::Format for CooFormat {}

impl FormatKernels for CooFormat {
    type Matrix<B: BackendCore, V: Element> = Coo<B, V>;
    const NAME: &'static str = "coo";
    const LABEL: &'static str = "coo";
    const SPMV_NAME: &'static str = "Coo::spmv";

    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        _options: &FormatOptions,
    ) -> Result<Coo<B, V>> {
        a.to_coo().to_backend(backend)
    }

    /// Sorts the entries stably by row on the way (the order device SpMV needs).
    fn move_to<B: BackendCore, B2: BackendCore, V: Element>(
        a: &Coo<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<Coo<B2, V>> {
        let (rows, cols, values) = (
            mover.download(&a.rows)?,
            mover.download(&a.cols)?,
            mover.download(&a.values)?,
        );
        let (rows, cols, values) = if rows.windows(2).all(|w| w[0] <= w[1]) {
            (rows, cols, values)
        } else {
            let mut order: Vec<usize> = (0..rows.len()).collect();
            order.sort_by_key(|&k| rows[k]);
            (
                order.iter().map(|&k| rows[k]).collect(),
                order.iter().map(|&k| cols[k]).collect(),
                order.iter().map(|&k| values[k]).collect(),
            )
        };
        Ok(Coo {
            nrows: a.nrows,
            ncols: a.ncols,
            rows: mover.upload(&rows)?,
            cols: mover.upload(&cols)?,
            values: mover.upload(&values)?,
            backend: mover.backend(),
        })
    }

    /// One pass over the entries in stored order.
    fn spmv_cpu<V: Element, T: Scalar>(a: &Coo<Cpu, V>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
        let mut acc = vec![T::ZERO; a.nrows];
        for ((&r, &c), &v) in a.rows.iter().zip(&a.cols).zip(&a.values) {
            acc[r as usize] += T::from_f64(v.as_f64()) * x[c as usize];
        }
        for (yi, ai) in y.iter_mut().zip(acc) {
            axpby_row(alpha, ai, beta, yi);
        }
    }

    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &Coo<Cube<R>, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        if a.nrows == 0 {
            return Ok(());
        }
        let (count, dim) = b.config().grid(a.nrows);
        let s = Scaling::new(alpha, beta);
        b.launch::<(V, T)>(s.beta_zero, || {
            // SAFETY: device COO matrices are row-sorted (Coo::to_backend is their only
            // constructor) with indices checked on construction; x has ncols and y nrows
            // entries (checked by SparseStorage::spmv).
            unsafe {
                coo_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    CooArraysLaunch::new(a.rows.arg(), a.cols.arg(), a.values.arg()),
                    AlphaBetaLaunch::new(s.alpha, s.beta),
                    x.arg(),
                    y.arg(),
                    a.nrows,
                    a.values.len,
                    s.beta_zero,
                )
            }
        })
    }
}
