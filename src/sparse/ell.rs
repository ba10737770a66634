//! ELLPACK: every row padded to the longest row, stored slot-major.
//!
//! ```text
//!  | a00 a01  .  |   width = 3, slot k of row r at k * nrows + r
//!  |  .  a11  .  |   col_idx = [0 1 0 | 1 * 1 | * * 2]     (* = PAD)
//!  | a20 a21 a22 |   values  = [a00 a11 a20 | a01 0 a21 | 0 0 a22]
//! ```
//!
//! Invariants: `col_idx` and `values` have `width * nrows` entries; within each row the
//! real entries come first with strictly increasing columns `< ncols`, then padding
//! (column [`PAD`], value 0). One unit per row; consecutive units read consecutive slots
//! (coalesced); a row stops at its first padding slot.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::sparse::convert::FormatConversion;
use crate::sparse::csr::Csr;
use crate::sparse::ops::{add_slot, rows_cpu, AlphaBeta, AlphaBetaLaunch, Scaling, SparseOps};
use crate::sparse::ops::{sealed, FormatKernels, Mover};
use crate::sparse::options::{FormatLimits, FormatOptions};
use crate::sparse::storage::{sparse_operator, SparseStorage};
use crate::sparse::{to_u32, RowStats, PAD};
use crate::vector::VectorOps;

/// A sparse matrix in ELLPACK format. See the [module docs](self).
pub struct Ell<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) width: usize,
    pub(crate) col_idx: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    pub(crate) stats: RowStats,
    pub(crate) backend: B,
}

impl<V: Element> Ell<Cpu, V> {
    /// Converts a CSR matrix (exact: every stored entry, explicit zeros included).
    ///
    /// # Errors
    /// [`Error::Padding`](crate::error::Error::Padding) if `width * nrows` exceeds the limit
    /// relative to the nonzeros (one long row makes ELL enormous).
    pub fn from_csr(a: &Csr<Cpu, V>, limits: &FormatLimits) -> Result<Self> {
        let (n, width) = (a.nrows, a.stats.max);
        let slots = n as u64 * width as u64;
        limits.check("ELL", slots, a.nnz() as u64)?;
        to_u32(slots as usize, "ELL", "width * nrows")?;
        let mut col_idx = vec![PAD; slots as usize];
        let mut values = vec![V::default(); slots as usize];
        for r in 0..n {
            let (cols, vals) = a.row(r);
            for (k, (&c, &v)) in cols.iter().zip(vals).enumerate() {
                col_idx[k * n + r] = c;
                values[k * n + r] = v;
            }
        }
        Ok(Ell {
            nrows: n,
            ncols: a.ncols,
            width,
            col_idx,
            values,
            stats: a.stats,
            backend: Cpu::new(),
        })
    }

    /// Converts back to CSR (exact).
    ///
    /// # Errors
    /// Never for a valid ELL matrix; [`Error::InvalidMatrix`](crate::error::Error::InvalidMatrix)
    /// otherwise.
    pub fn to_csr(&self) -> Result<Csr<Cpu, V>> {
        let n = self.nrows;
        let mut row_ptr = Vec::with_capacity(n + 1);
        let (mut col_idx, mut values) = (
            Vec::with_capacity(self.stats.nnz),
            Vec::with_capacity(self.stats.nnz),
        );
        row_ptr.push(0u32);
        for r in 0..n {
            for k in 0..self.width {
                let c = self.col_idx[k * n + r];
                if c == PAD {
                    break;
                }
                col_idx.push(c);
                values.push(self.values[k * n + r]);
            }
            row_ptr.push(col_idx.len() as u32);
        }
        Csr::new(n, self.ncols, row_ptr, col_idx, values)
    }
}

impl<B: BackendCore, V: Element> Ell<B, V> {
    /// Slots per row (the longest row).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Row-length statistics of the matrix.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }
}

impl<B: SparseOps, V: Element> SparseStorage<B, V> for Ell<B, V> {
    type Kernels = EllFormat;

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
    fn storage_bytes(&self) -> usize {
        self.width * self.nrows * (V::DTYPE.size() + 4)
    }
}

impl<B: BackendCore, V: Element> sealed::Format for Ell<B, V> {}

sparse_operator!(Ell);

/// The ELL slots, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
struct EllArrays<V: Float> {
    col_idx: Array<u32>,
    values: Array<V>,
    width: usize,
}

/// One unit per row. Bytes per stored slot: value + index (+ x, cached).
#[cube(launch_unchecked)]
fn ell_kernel<V: Float, T: Float>(
    a: &EllArrays<V>,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    nrows: usize,
    #[comptime] beta_zero: bool,
) {
    let alpha = scaling.alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut row = ABSOLUTE_POS;
    while row < nrows {
        let mut acc = T::new(0.0);
        for k in 0..a.width {
            let idx = k * nrows + row;
            acc = add_slot::<V, T>(acc, a.col_idx[idx], a.values[idx], x);
        }
        if beta_zero {
            y[row] = alpha * acc;
        } else {
            y[row] = alpha * acc + scaling.beta.get::<T>() * y[row];
        }
        row += stride;
    }
}

/// The ELL kernels.
pub struct EllFormat;

impl sealed::Format for EllFormat {}

impl FormatKernels for EllFormat {
    type Matrix<B: BackendCore, V: Element> = Ell<B, V>;
    const NAME: &'static str = "ell";
    const LABEL: &'static str = "ell";
    const SPMV_NAME: &'static str = "Ell::spmv";

    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &Ell<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<Ell<B2, W>> {
        Ok(Ell {
            nrows: a.nrows,
            ncols: a.ncols,
            width: a.width,
            col_idx: mover.buffer(&a.col_idx)?,
            values: mover.values(&a.values)?,
            stats: a.stats,
            backend: mover.backend(),
        })
    }

    fn spmv_cpu<V: Element, T: Scalar>(a: &Ell<Cpu, V>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
        let n = a.nrows;
        rows_cpu(y, alpha, beta, |r| {
            let mut acc = T::ZERO;
            for k in 0..a.width {
                let c = a.col_idx[k * n + r];
                if c == PAD {
                    break;
                }
                acc += T::from_f64(a.values[k * n + r].as_f64()) * x[c as usize];
            }
            acc
        });
    }

    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &Ell<Cube<R>, V>,
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
            // SAFETY: ELL invariants (validated on conversion): width * nrows slots, columns
            // < ncols or PAD (read as x[0], inside every buffer); x has ncols and y nrows entries (checked by
            // SparseStorage::spmv).
            unsafe {
                ell_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    EllArraysLaunch::new(a.col_idx.arg(), a.values.arg(), a.width),
                    AlphaBetaLaunch::new(s.alpha, s.beta),
                    x.arg(),
                    y.arg(),
                    a.nrows,
                    s.beta_zero,
                )
            }
        })
    }
}

impl FormatConversion for EllFormat {
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        options: &FormatOptions,
    ) -> Result<Ell<B, V>> {
        Ell::from_csr(a, &options.limits)?.to_backend(backend)
    }
}
