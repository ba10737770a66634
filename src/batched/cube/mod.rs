//! CubeCL kernels of the batched dense operations, and the [`BatchedOps`] implementation
//! of the [`Cube`] backend (one-line delegations):
//!
//! - [`gemm`]: GEMM, sides up to 8 (or above 64): one unit per output entry `(b, i, j)`;
//!   consecutive units take consecutive `j`, so a warp reads one row of `A` (broadcast) and
//!   consecutive entries of `B` (coalesced). Sides 9..64: chunks of A and B staged in shared
//!   memory, a register tile of up to 4 x 4 outputs per unit.
//! - [`factor`]: LU, Gauss–Jordan inverse and Cholesky; n <= 8 one matrix per unit in
//!   registers; above, one column a unit (n <= 32), a tile a unit (n > 32, on wgpu, and
//!   Cholesky at 64 on CUDA), or `per_cube` matrices per cube in shared memory, one unit per
//!   row.
//! - [`solve`]: triangular solves, one unit per right-hand-side column.
//! - [`stage`]: moving groups of matrices between global and shared memory.

use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::batched::{Batch, BatchedOps, Diagonal, GemmParams, Pivoting, Rhs, Triangle};
use crate::error::Result;
use crate::scalar::{Element, Scalar};

pub(crate) mod factor;
pub(crate) mod gemm;
pub(crate) mod solve;
pub(crate) mod stage;

// Every method passes the caller's `# Safety` contract (what the checked functions of
// `batched` verify) on to its launcher.
impl<R: CubeRuntime> BatchedOps for Cube<R> {
    unsafe fn batch_gemm<V: Element, T: Scalar>(
        &self,
        params: &GemmParams<T>,
        a: &Batch<Self, V>,
        b: &Batch<Self, V>,
        c: &mut Batch<Self, V>,
    ) -> Result<()> {
        unsafe { gemm::gemm::<R, V, T>(self, params, a, b, c) }
    }

    unsafe fn batch_lu<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
        pivoting: Pivoting,
    ) -> Result<(CubeBuffer<u32>, CubeBuffer<i32>)> {
        unsafe { factor::lu::<R, V, T>(self, a, pivoting) }
    }

    unsafe fn batch_inverse<V: Element, T: Scalar>(
        &self,
        a: &Batch<Self, V>,
        x: &mut Batch<Self, V>,
    ) -> Result<Option<CubeBuffer<i32>>> {
        unsafe { factor::inverse::<R, V, T>(self, a, x) }
    }

    unsafe fn batch_lu_solve<V: Element, T: Scalar>(
        &self,
        lu: &Batch<Self, V>,
        pivots: &CubeBuffer<u32>,
        b: &mut Batch<Self, V>,
        rhs: Rhs,
    ) -> Result<()> {
        unsafe { solve::lu_solve::<R, V, T>(self, lu, pivots, b, rhs) }
    }

    unsafe fn batch_triangular_solve<V: Element, T: Scalar>(
        &self,
        t: &Batch<Self, V>,
        triangle: Triangle,
        diagonal: Diagonal,
        b: &mut Batch<Self, V>,
    ) -> Result<()> {
        unsafe { solve::triangular_solve::<R, V, T>(self, t, triangle, diagonal, b) }
    }

    unsafe fn batch_cholesky<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
    ) -> Result<CubeBuffer<i32>> {
        unsafe { factor::cholesky::<R, V, T>(self, a) }
    }

    unsafe fn batch_cholesky_solve<V: Element, T: Scalar>(
        &self,
        l: &Batch<Self, V>,
        b: &mut Batch<Self, V>,
        rhs: Rhs,
    ) -> Result<()> {
        unsafe { solve::cholesky_solve::<R, V, T>(self, l, b, rhs) }
    }
}
