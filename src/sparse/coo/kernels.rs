//! The COO kernels: the CPU reference in stored order, the CubeCL kernel on row-sorted
//! entries, and the conversion from CSR.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::sparse::convert::FormatConversion;
use crate::sparse::coo::{Coo, CooFormat};
use crate::sparse::csr::Csr;
use crate::sparse::ops::{
    axpby_row, sealed, AlphaBeta, AlphaBetaLaunch, FormatKernels, Mover, Scaling, SparseOps,
};
use crate::sparse::options::FormatOptions;
use crate::vector::VectorOps;

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

impl sealed::Format for CooFormat {}

impl FormatKernels for CooFormat {
    type Matrix<B: BackendCore, V: Element> = Coo<B, V>;
    const NAME: &'static str = "coo";
    const LABEL: &'static str = "coo";
    const SPMV_NAME: &'static str = "Coo::spmv";

    /// Sorts the entries stably by row on the way (the order device SpMV needs).
    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &Coo<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<Coo<B2, W>> {
        let (rows, cols, values) = (
            mover.download(&a.rows)?,
            mover.download(&a.cols)?,
            mover.download_values::<V, W>(&a.values)?,
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

impl FormatConversion for CooFormat {
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        _options: &FormatOptions,
    ) -> Result<Coo<B, V>> {
        a.to_coo().to_backend(backend)
    }
}
