//! CubeCL kernels of the vector operations, and the [`VectorOps`] implementation of the
//! [`Cube`] backend (one-line delegations into the three kernel files).
//!
//! Thread mapping: every kernel views its buffers as arrays of 16-byte vectors (four f32, two
//! f64; see `line_size`) and walks them with a grid-stride loop (unit `u` handles vectors
//! `u, u + U, u + 2U, ...`, `U` = units launched), so any length runs with a bounded cube
//! count (≤ 65535 cubes per dimension on wgpu). Writes mask the padding lanes of the last
//! vector to zero, which keeps the padding invariant of [`CubeBuffer`].
//!
//! - [`elementwise`]: fill, copy, convert, scale, axpy, axpby, pointwise products, gather,
//!   scatter.
//! - [`reduce`]: dot, nrm2, amax, and the reduction machinery (partials per cube, the
//!   second pass on the device) that the fused kernels of other families reuse.
//! - [`cg`]: the fused solver updates (CG with host or device scalars, Jacobi + dot).
//!
//! Bytes per element (T = element size): copy 2T, axpy/axpby 3T, dot 2T, nrm2/amax T,
//! cg_update 6T, pointwise_mul_dot 3T; flops are 1–4 per element: all memory-bound.
//!
//! NaN: WGSL lets compilers assume that no NaN exists, so no kernel relies on comparing with
//! NaN (`x != x` or `is_nan`); NaN propagation comes from arithmetic only.

use cubecl::prelude::*;

use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::vector::VectorOps;

pub(crate) mod cg;
pub(crate) mod elementwise;
pub(crate) mod reduce;

/// Zeroes the lanes of vector `line` that lie at or beyond `len`.
#[cube]
pub(crate) fn mask_tail<F: Float, N: Size>(
    value: Vector<F, N>,
    line: usize,
    len: usize,
) -> Vector<F, N> {
    let mut out = value;
    if (line + 1) * N::value() > len {
        #[unroll]
        for k in 0..N::value() {
            if line * N::value() + k >= len {
                out[k] = F::new(0.0);
            }
        }
    }
    out
}

// Every method passes the caller's `# Safety` contract (what the `Vector` methods and the
// checked free functions of `vector` check) on to the launcher of its kernel.
impl<R: CubeRuntime> VectorOps for Cube<R> {
    unsafe fn fill<T: Element>(&self, value: T, x: &mut CubeBuffer<T>) -> Result<()> {
        elementwise::fill(self, value, x)
    }

    unsafe fn copy<T: Element>(&self, x: &CubeBuffer<T>, y: &mut CubeBuffer<T>) -> Result<()> {
        unsafe { elementwise::copy(self, x, y) }
    }

    unsafe fn scale<T: Scalar>(&self, alpha: T, x: &mut CubeBuffer<T>) -> Result<()> {
        elementwise::scale(self, alpha, x)
    }

    unsafe fn axpy<T: Scalar>(
        &self,
        alpha: T,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { elementwise::axpby(self, alpha, x, None, y) }
    }

    unsafe fn axpby<T: Scalar>(
        &self,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { elementwise::axpby(self, alpha, x, Some(beta), y) }
    }

    unsafe fn pointwise_mul<T: Scalar>(
        &self,
        x: &CubeBuffer<T>,
        y: &CubeBuffer<T>,
        z: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { elementwise::pointwise(self, x, y, z, elementwise::Pointwise::Multiply) }
    }

    unsafe fn pointwise_div<T: Scalar>(
        &self,
        x: &CubeBuffer<T>,
        y: &CubeBuffer<T>,
        z: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { elementwise::pointwise(self, x, y, z, elementwise::Pointwise::Divide) }
    }

    unsafe fn dot<T: Scalar>(&self, x: &CubeBuffer<T>, y: &CubeBuffer<T>) -> Result<T> {
        unsafe { reduce::dot(self, x, y) }
    }

    unsafe fn nrm2<T: Scalar>(&self, x: &CubeBuffer<T>) -> Result<T> {
        reduce::nrm2(self, x)
    }

    unsafe fn amax<T: Scalar>(&self, x: &CubeBuffer<T>) -> Result<T> {
        reduce::amax(self, x)
    }

    unsafe fn convert<S: Element, D: Element>(
        &self,
        x: &CubeBuffer<S>,
        y: &mut CubeBuffer<D>,
    ) -> Result<()> {
        unsafe { elementwise::convert(self, x, y) }
    }

    unsafe fn cg_update<T: Scalar>(
        &self,
        alpha: T,
        p: &CubeBuffer<T>,
        q: &CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
    ) -> Result<T> {
        unsafe { cg::update(self, cg::Alpha::Host(alpha), p, q, x, r) }
    }

    unsafe fn pointwise_mul_dot<T: Scalar>(
        &self,
        d: &CubeBuffer<T>,
        r: &CubeBuffer<T>,
        z: &mut CubeBuffer<T>,
    ) -> Result<T> {
        unsafe { cg::pointwise_mul_dot(self, d, r, z) }
    }

    unsafe fn gather<T: Element>(
        &self,
        x: &CubeBuffer<T>,
        index: &CubeBuffer<u32>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        elementwise::gather(self, x, index, y)
    }

    unsafe fn scatter<T: Element>(
        &self,
        x: &CubeBuffer<T>,
        index: &CubeBuffer<u32>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        elementwise::scatter(self, x, index, y)
    }

    unsafe fn dot_device<T: Scalar>(
        &self,
        x: &CubeBuffer<T>,
        y: &CubeBuffer<T>,
        scalars: &mut CubeBuffer<T>,
        slot: usize,
    ) -> Result<()> {
        unsafe { reduce::dot_device(self, x, y, scalars, slot) }
    }

    unsafe fn cg_update_device<T: Scalar>(
        &self,
        scalars: &mut CubeBuffer<T>,
        p: &CubeBuffer<T>,
        q: &CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { cg::update_device(self, scalars, p, q, x, r) }
    }

    unsafe fn xpay_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &CubeBuffer<T>,
        r: &CubeBuffer<L>,
        p: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { cg::xpay_device(self, scalars, r, p) }
    }

    unsafe fn pcg_flexible_low_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &mut CubeBuffer<T>,
        low: &CubeBuffer<L>,
        old: &CubeBuffer<L>,
        r: &CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { cg::pcg_flexible_low_device(self, scalars, low, old, r) }
    }

    unsafe fn pcg_rotate_device<T: Scalar>(
        &self,
        scalars: &mut CubeBuffer<T>,
        flexible: bool,
    ) -> Result<()> {
        unsafe { cg::pcg_rotate_device(self, scalars, flexible) }
    }

    unsafe fn pcg_flexible_convert_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &mut CubeBuffer<T>,
        low: &CubeBuffer<L>,
        r: &CubeBuffer<T>,
        z: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { cg::pcg_flexible_convert_device(self, scalars, low, r, z) }
    }

    unsafe fn pcg_jacobi_update_device<T: Scalar>(
        &self,
        scalars: &mut CubeBuffer<T>,
        d: &CubeBuffer<T>,
        p: &CubeBuffer<T>,
        q: &CubeBuffer<T>,
        x: Option<&mut CubeBuffer<T>>,
        r: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { cg::pcg_jacobi_update_device(self, scalars, d, p, q, x, r) }
    }

    unsafe fn cgcg_update<T: Scalar>(
        &self,
        alpha: T,
        beta: T,
        d: Option<&CubeBuffer<T>>,
        u: Option<&mut CubeBuffer<T>>,
        w: &CubeBuffer<T>,
        p: &mut CubeBuffer<T>,
        s: &mut CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
        scalars: &mut CubeBuffer<T>,
        slots: [usize; 2],
    ) -> Result<()> {
        unsafe { cg::cgcg_update(self, alpha, beta, d, u, w, p, s, x, r, scalars, slots) }
    }

    unsafe fn jacobi_xpay_device<T: Scalar>(
        &self,
        scalars: &CubeBuffer<T>,
        d: &CubeBuffer<T>,
        r: &CubeBuffer<T>,
        p: &mut CubeBuffer<T>,
    ) -> Result<()> {
        unsafe { cg::jacobi_xpay_device(self, scalars, d, r, p) }
    }
}
