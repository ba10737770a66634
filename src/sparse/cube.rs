//! CubeCL SpMV kernels and the [`SparseOps`] implementation of the [`Cube`] backend.
//!
//! Every kernel computes `y = α A x + β y` with values of type `V` read and widened to the
//! vector type `T`, accumulation in `T`, and `y` not read when `β = 0` (a comptime flag).
//! Rows are walked with grid-stride loops so any size runs with ≤ 65535 cubes.

use cubecl::prelude::*;

use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::sparse::{
    block_ell, ell, sell, staircase, BlockEll, BlockEllKernel, Coo, Csr, CsrKernel, Ell, Sell,
    SparseOps, StaircaseSell,
};

/// CSR, one unit per row. Bytes per nonzero: value + column index + (cached) x; per row:
/// two offsets and y.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn csr_scalar_kernel<V: Float, T: Float>(
    row_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    values: &Array<V>,
    alpha: InputScalar,
    x: &Array<T>,
    beta: InputScalar,
    y: &mut Array<T>,
    nrows: usize,
    #[comptime] beta_zero: bool,
) {
    let a = alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut row = ABSOLUTE_POS;
    while row < nrows {
        let start = row_ptr[row] as usize;
        let end = row_ptr[row + 1] as usize;
        let mut acc = T::new(0.0);
        for k in start..end {
            acc += T::cast_from(values[k]) * x[col_idx[k] as usize];
        }
        if comptime![beta_zero] {
            y[row] = a * acc;
        } else {
            y[row] = a * acc + beta.get::<T>() * y[row];
        }
        row += stride;
    }
}

/// CSR, `group` units per row: lanes stride through the row, then reduce by plane
/// shuffles (`use_plane`) or a shared-memory tree. Every unit runs the same number of
/// iterations so that shuffles and barriers stay in uniform control flow.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments, clippy::manual_div_ceil)]
fn csr_vector_kernel<V: Float, T: Float>(
    row_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    values: &Array<V>,
    alpha: InputScalar,
    x: &Array<T>,
    beta: InputScalar,
    y: &mut Array<T>,
    nrows: usize,
    #[comptime] group: u32,
    #[comptime] use_plane: bool,
    #[comptime] beta_zero: bool,
    #[comptime] cube_dim: usize,
) {
    let a = alpha.get::<T>();
    let lane = UNIT_POS % group;
    let groups_per_cube = (CUBE_DIM / group) as usize;
    let total_groups = CUBE_COUNT * groups_per_cube;
    let group_id = CUBE_POS * groups_per_cube + (UNIT_POS / group) as usize;
    let iterations = (nrows + total_groups - 1) / total_groups;
    let mut shared = SharedMemory::<T>::new(cube_dim);
    for it in 0..iterations {
        let row = group_id + it * total_groups;
        let mut acc = T::new(0.0);
        if row < nrows {
            let end = row_ptr[row + 1] as usize;
            let mut k = row_ptr[row] as usize + lane as usize;
            while k < end {
                acc += T::cast_from(values[k]) * x[col_idx[k] as usize];
                k += group as usize;
            }
        }
        let half = comptime![group / 2];
        if comptime![use_plane] {
            let mut offset = half.runtime();
            while offset > 0 {
                acc += plane_shuffle_xor(acc, offset);
                offset /= 2;
            }
        } else {
            let unit = UNIT_POS as usize;
            shared[unit] = acc;
            sync_cube();
            let mut offset = half.runtime();
            while offset > 0 {
                if lane < offset {
                    shared[unit] = shared[unit] + shared[unit + offset as usize];
                }
                sync_cube();
                offset /= 2;
            }
            acc = shared[unit];
            sync_cube();
        }
        if lane == 0 && row < nrows {
            if comptime![beta_zero] {
                y[row] = a * acc;
            } else {
                y[row] = a * acc + beta.get::<T>() * y[row];
            }
        }
    }
}

/// Cube count and dim covering `units` units with grid-stride loops.
pub(crate) fn grid<R: CubeRuntime>(backend: &Cube<R>, units: usize) -> (CubeCount, CubeDim) {
    let config = backend.config();
    let cubes = units
        .div_ceil(config.cube_dim as usize)
        .clamp(1, config.max_cubes as usize);
    (
        CubeCount::Static(cubes as u32, 1, 1),
        CubeDim::new_1d(config.cube_dim),
    )
}

pub(crate) fn scalar<T: Element>(value: T) -> InputScalar {
    InputScalar::new(value.as_f64(), T::cube_type())
}

impl<R: CubeRuntime> SparseOps for Cube<R> {
    fn csr_spmv<V: Element, T: Scalar>(
        &self,
        a: &Csr<Self, V>,
        kernel: CsrKernel,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        if a.nrows == 0 {
            return Ok(());
        }
        let beta_zero = beta == T::ZERO;
        let client = self.client();
        match kernel {
            CsrKernel::Vector { group } => {
                let info = crate::BackendCore::info(self);
                let use_plane = info.plane_ops && info.plane_size.0 >= group;
                let (count, dim) = grid(self, a.nrows * group as usize);
                // SAFETY: the CSR invariants (validated on the host, unchanged since) keep
                // every offset and column index in range; y and x have nrows and ncols
                // entries (checked by Csr::spmv).
                unsafe {
                    csr_vector_kernel::launch_unchecked::<V, T, R>(
                        client,
                        count,
                        dim,
                        a.row_ptr.arg(),
                        a.col_idx.arg(),
                        a.values.arg(),
                        scalar(alpha),
                        x.arg(),
                        scalar(beta),
                        y.arg(),
                        a.nrows,
                        group,
                        use_plane,
                        beta_zero,
                        dim.x as usize,
                    )
                }
            }
            _ => {
                let (count, dim) = grid(self, a.nrows);
                // SAFETY: as above.
                unsafe {
                    csr_scalar_kernel::launch_unchecked::<V, T, R>(
                        client,
                        count,
                        dim,
                        a.row_ptr.arg(),
                        a.col_idx.arg(),
                        a.values.arg(),
                        scalar(alpha),
                        x.arg(),
                        scalar(beta),
                        y.arg(),
                        a.nrows,
                        beta_zero,
                    )
                }
            }
        }
        Ok(())
    }

    fn ell_spmv<V: Element, T: Scalar>(
        &self,
        a: &Ell<Self, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        ell::spmv_cube(self, a, alpha, x, beta, y);
        Ok(())
    }

    fn sell_spmv<V: Element, T: Scalar>(
        &self,
        a: &Sell<Self, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        sell::spmv_cube(self, a, alpha, x, beta, y);
        Ok(())
    }

    fn block_ell_spmv<V: Element, T: Scalar>(
        &self,
        a: &BlockEll<Self, V>,
        kernel: BlockEllKernel,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        block_ell::spmv_cube(self, a, kernel, alpha, x, beta, y)
    }

    fn staircase_spmv<V: Element, T: Scalar>(
        &self,
        a: &StaircaseSell<Self, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        staircase::spmv_cube(self, a, alpha, x, beta, y);
        Ok(())
    }

    fn coo_spmv<V: Element, T: Scalar>(
        &self,
        a: &Coo<Self, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        if a.nrows == 0 {
            return Ok(());
        }
        let (count, dim) = grid(self, a.nrows);
        // SAFETY: device COO matrices are row-sorted (Coo::to_backend) with indices checked
        // on construction; x has ncols and y nrows entries (checked by Coo::spmv).
        unsafe {
            crate::sparse::coo::coo_kernel::launch_unchecked::<V, T, R>(
                self.client(),
                count,
                dim,
                a.rows.arg(),
                a.cols.arg(),
                a.values.arg(),
                scalar(alpha),
                x.arg(),
                scalar(beta),
                y.arg(),
                a.nrows,
                a.values.len,
                beta == T::ZERO,
            )
        }
        Ok(())
    }

    fn sell_spmv_dot<V: Element, T: Scalar>(
        &self,
        a: &Sell<Self, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<T> {
        sell::spmv_dot_cube(self, a, x, y)
    }

    fn sell_spmv_dot_device<V: Element, T: Scalar>(
        &self,
        a: &Sell<Self, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
        scalars: &mut CubeBuffer<T>,
        slot: usize,
    ) -> Result<()> {
        sell::spmv_dot_device_cube(self, a, x, y, scalars, slot)
    }
}
