//! Batched factorizations: LU (with and without pivoting), the one-pass Gauss–Jordan
//! inverse and Cholesky. `n <= 8`: one matrix per unit in registers (every index comptime),
//! the group moved between global and shared memory coalesced (whole, or row by row where the
//! device's shared budget is small: wgpu). `8 < n <= 32`: Cholesky, and LU on wgpu up to
//! 24, the column kernels (one column a unit in registers, `O(n)` values a matrix in shared
//! memory; see `columns`); LU on CUDA and on wgpu above 24 the row kernel (one row a unit in
//! registers, rows never moved; see `rows`). `32 < n <= 64`, Cholesky and LU on wgpu and
//! Cholesky at n = 64 on CUDA: the tile kernels (a tile of the matrix a unit in registers,
//! `O(n)` values a matrix in shared memory; see `tiles`, `tiles_lu`). Otherwise `n > 8`:
//! `per_cube` matrices per cube, one unit per row (or per column for row swaps), the matrices
//! in shared memory with an odd row stride.
//!
//! The singularity test (see "Status" in [`crate::batched`]): step `k` fails when the pivot
//! is at most `4 n ε` times the scale of its original row (LU) or its original diagonal
//! (Cholesky), the same decision as the CPU's.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{scalar, Cube, CubeBuffer, CubeRuntime};
use crate::batched::cpu::singular_factor;
use crate::batched::cube::stage::{groups_shape, SMALL};
use crate::batched::{Batch, Pivoting};
use crate::error::Result;
use crate::scalar::{Element, Scalar};

pub(in crate::batched::cube) mod columns;
pub(in crate::batched::cube) mod newton;
mod registers;
mod rows;
mod shared;
#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
mod tile_tests;
mod tiles;
mod tiles_lu;

use columns::{
    cholesky_columns_kernel, cholesky_padded_side, cholesky_scale_first, columns_per_cube,
    lu_columns_kernel, unroll_columns, use_columns,
};
use newton::refine_f64;
use registers::{cholesky_small_kernel, inverse_small_kernel, lu_small_kernel, small_per_cube};
use rows::{lu_rows_kernel, plane_rows, rows_per_cube, stage_rows, use_rows};
use shared::{cholesky_kernel, lu_kernel, per_cube};
use tiles::{cholesky_tiles_kernel, use_tiles, TileShape};
use tiles_lu::{lu_tiles_kernel, use_lu_tiles, LuTileShape};

/// The comptime shape of a factorization kernel: side `n`, shared-memory row stride `ld`,
/// matrices per cube, and (LU) whether to pivot.
#[derive_cube_comptime]
pub(crate) struct FactorShape {
    n: usize,
    ld: usize,
    per_cube: usize,
    pivoting: bool,
    /// Register kernels: the group is staged one row at a time (`ld = n + 1`) instead of
    /// whole (`ld = n² + 1`), where a whole group would pass the device's shared budget.
    by_rows: bool,
    /// `n > 8`: the column kernels (one column a unit in registers) instead of the
    /// shared-memory ones.
    columns: bool,
    /// Column and row kernels: every step unrolled (see [`unroll_columns`]).
    unroll: bool,
    /// Cholesky's column kernel: the matrices' side (`<= n`: the kernel's side `n` is larger
    /// where the matrices are padded to it, see [`cholesky_padded_side`]).
    side: usize,
    /// Cholesky's column kernel: the step form (see [`cholesky_scale_first`]).
    scale_first: bool,
    /// LU, `8 < n <= 32`: the row kernel (one row a unit in registers; see `rows`).
    rows: bool,
    /// Row kernel: the rows staged through shared memory (else each unit moves its own).
    staged: bool,
    /// Row kernel on CUDA at `n = 32` (one matrix a warp): its steps synchronised by warp
    /// barriers instead of cube barriers (see [`plane_rows`]).
    plane: bool,
    /// f64 on wgpu: divisions and square roots from f32 estimates refined by Newton steps
    /// (see [`newton`]): every kernel but LU's row and column kernels (which keep their
    /// divisions: each unit divides at a step, and the refined quotient was slower there:
    /// H100, 2026-11-27, wgpu f64 LU, µs exact / refined: n = 12 407 / 443, 16 498 / 533,
    /// 24 713 / 875, 32 1087 / 1132).
    refine: bool,
}

/// The shape of a factorization (`cholesky`, else LU or the inverse) of `n x n` matrices
/// in precision `T` on this device: the register kernels up to [`SMALL`], above (LU) the row
/// kernel where [`use_rows`] takes it, the column kernels where [`use_columns`] takes them,
/// else the shared-memory ones. (The tile kernels have shapes of their own.)
fn factor_shape<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    n: usize,
    pivoting: bool,
    cholesky: bool,
) -> Result<FactorShape> {
    let refine = refine_f64::<R, T>(b);
    if n <= SMALL {
        let (per_cube, by_rows) = small_per_cube::<R, T>(b, n)?;
        Ok(FactorShape {
            n,
            ld: if by_rows { n + 1 } else { n * n + 1 },
            per_cube,
            pivoting,
            by_rows,
            columns: false,
            unroll: false,
            side: n,
            scale_first: false,
            rows: false,
            staged: false,
            plane: false,
            refine,
        })
    } else if !cholesky && use_rows(b, n) {
        let staged = stage_rows(b);
        let plane = plane_rows(b, n);
        Ok(FactorShape {
            n,
            ld: n,
            per_cube: rows_per_cube::<T>(b, n, staged),
            pivoting,
            by_rows: false,
            columns: false,
            unroll: unroll_columns(b),
            side: n,
            scale_first: false,
            rows: true,
            staged,
            plane,
            refine: false,
        })
    } else if use_columns(b, n, cholesky) {
        let side = n;
        let n = if cholesky {
            cholesky_padded_side(b, n)
        } else {
            n
        };
        Ok(FactorShape {
            n,
            ld: n,
            per_cube: columns_per_cube(n),
            pivoting,
            by_rows: false,
            columns: true,
            unroll: unroll_columns(b),
            side,
            scale_first: cholesky && cholesky_scale_first(n),
            rows: false,
            staged: false,
            plane: false,
            refine: refine && cholesky,
        })
    } else {
        let (per_cube, ld) = per_cube::<R, T>(b, n)?;
        Ok(FactorShape {
            n,
            ld,
            per_cube,
            pivoting,
            by_rows: false,
            columns: false,
            unroll: false,
            side: n,
            scale_first: false,
            rows: false,
            staged: false,
            plane: false,
            refine,
        })
    }
}

/// LU of every matrix in place; the pivots and status codes.
///
/// # Safety
/// `a` holds square `n x n` matrices, `n <= 64` (checked by [`lu`](crate::batched::lu)).
pub(crate) unsafe fn lu<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &mut Batch<Cube<R>, V>,
    pivoting: Pivoting,
) -> Result<(CubeBuffer<u32>, CubeBuffer<i32>)> {
    let n = a.nrows;
    let pivots = b.alloc::<u32>(a.count * n)?;
    let info = b.alloc::<i32>(a.count)?;
    if a.count == 0 || n == 0 {
        return Ok((pivots, info));
    }
    let singular = scalar(singular_factor::<T>(n));
    if use_lu_tiles(b, n) {
        let shape = LuTileShape::choose(n, pivoting == Pivoting::Partial)
            .fit(T::DTYPE.size(), b.info().max_shared_bytes)
            .with_refine(refine_f64::<R, T>(b));
        let (count, dim) = groups_shape(a.count, shape.per_cube, shape.units());
        b.launch::<(V, T)>(shape, || {
            // SAFETY: the cube holds `per_cube` grids of `units` units (`groups_shape`);
            // loads clamp to the last matrix, stores, pivots and codes only below `count`
            // (rows stored at their positions, a permutation of 0..n); rows and columns past
            // `n` are neither loaded nor stored; shared memory is sized by the shape and
            // indexed below it (rows and columns below n, candidates below gr).
            unsafe {
                lu_tiles_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    a.data.arg(),
                    pivots.arg(),
                    info.arg(),
                    singular,
                    a.count,
                    shape,
                )
            }
        })?;
        return Ok((pivots, info));
    }
    let shape = factor_shape::<R, T>(b, n, pivoting == Pivoting::Partial, false)?;
    // Same arguments: the register, row, column or shared-memory kernel (see `factor_shape`).
    let kernel = if n <= SMALL {
        lu_small_kernel::launch_unchecked::<V, T, R>
    } else if shape.rows {
        lu_rows_kernel::launch_unchecked::<V, T, R>
    } else if shape.columns {
        lu_columns_kernel::launch_unchecked::<V, T, R>
    } else {
        lu_kernel::launch_unchecked::<V, T, R>
    };
    let units = if n <= SMALL { 1 } else { n };
    let (count, dim) = groups_shape(a.count, shape.per_cube, units);
    b.launch::<(V, T)>(shape, || {
        // SAFETY: the kernels stay below count matrices of n x n; pivots and info hold n and
        // 1 entries per matrix. The register kernel: one matrix a unit, groups of `per_cube`
        // below count; shared memory per_cube · ld values (ld = n² + 1, or n + 1 staged by
        // rows) and per_cube · n pivots, sized by small_per_cube to the device. The row and
        // column kernels clamp their loads to the last matrix (or mask them, staged) and
        // store only below count, the row kernel each row at its position (a permutation of
        // 0..n). Shared memory per cube is sized by the shape: O(n) values a matrix for the
        // column kernels and the unstaged row kernel, per_cube matrices for the staged row
        // kernel and the shared-memory one.
        unsafe {
            kernel(
                b.client(),
                count,
                dim,
                a.data.arg(),
                pivots.arg(),
                info.arg(),
                singular,
                a.count,
                shape,
            )
        }
    })?;
    Ok((pivots, info))
}

/// The inverse of every matrix into `x` by the register Gauss–Jordan kernel (`n <= 8`);
/// `None` for larger matrices (then LU and solves do it).
///
/// # Safety
/// `a` holds square `n x n` matrices and `x` has `a`'s shape.
pub(crate) unsafe fn inverse<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Batch<Cube<R>, V>,
    x: &mut Batch<Cube<R>, V>,
) -> Result<Option<CubeBuffer<i32>>> {
    let n = a.nrows;
    if n == 0 || n > SMALL {
        return Ok(None);
    }
    let info = b.alloc::<i32>(a.count)?;
    if a.count > 0 {
        let shape = factor_shape::<R, T>(b, n, true, false)?;
        let singular = scalar(singular_factor::<T>(n));
        let (count, dim) = groups_shape(a.count, shape.per_cube, 1);
        b.launch::<(V, T)>(shape, || {
            // SAFETY: as for the small LU kernel; `x` has the shape of `a` (the contract).
            unsafe {
                inverse_small_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    a.data.arg(),
                    x.data.arg(),
                    info.arg(),
                    singular,
                    a.count,
                    shape,
                )
            }
        })?;
    }
    Ok(Some(info))
}

/// Cholesky of every matrix in place; the status codes.
///
/// # Safety
/// As [`lu`].
pub(crate) unsafe fn cholesky<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &mut Batch<Cube<R>, V>,
) -> Result<CubeBuffer<i32>> {
    let n = a.nrows;
    let info = b.alloc::<i32>(a.count)?;
    if a.count == 0 || n == 0 {
        return Ok(info);
    }
    let singular = scalar(singular_factor::<T>(n));
    if use_tiles(b, n) {
        let shape = TileShape::new(n).with_refine(refine_f64::<R, T>(b));
        let (count, dim) = groups_shape(a.count, shape.per_cube, shape.units());
        return b
            .launch::<(V, T)>(shape, || {
                // SAFETY: the cube holds `per_cube` grids of `units` units (`groups_shape`);
                // loads clamp to the last matrix, stores and codes only below `count`; rows and
                // columns past `n` are neither loaded nor stored; shared memory is `3 n + 6`
                // values a matrix, indexed below it (columns published only below `n`).
                unsafe {
                    cholesky_tiles_kernel::launch_unchecked::<V, T, R>(
                        b.client(),
                        count,
                        dim,
                        a.data.arg(),
                        info.arg(),
                        singular,
                        a.count,
                        shape,
                    )
                }
            })
            .map(|()| info);
    }
    let shape = factor_shape::<R, T>(b, n, false, true)?;
    // Same arguments: the register, column or shared-memory kernel (see `factor_shape`).
    let kernel = if n <= SMALL {
        cholesky_small_kernel::launch_unchecked::<V, T, R>
    } else if shape.columns {
        cholesky_columns_kernel::launch_unchecked::<V, T, R>
    } else {
        cholesky_kernel::launch_unchecked::<V, T, R>
    };
    let units = if n <= SMALL { 1 } else { shape.n };
    let (count, dim) = groups_shape(a.count, shape.per_cube, units);
    b.launch::<(V, T)>(shape, || {
        // SAFETY: as for the LU kernels of the same classes (`lu`); the column kernel on
        // matrices padded to its side (`shape.side < shape.n`) loads and stores only rows and
        // columns below `shape.side`, the matrices' side.
        unsafe {
            kernel(
                b.client(),
                count,
                dim,
                a.data.arg(),
                info.arg(),
                singular,
                a.count,
                shape,
            )
        }
    })?;
    Ok(info)
}
