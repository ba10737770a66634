//! CubeCL kernels of the vector operations.
//!
//! Thread mapping: every kernel views its buffers as arrays of 16-byte vectors (four f32, two
//! f64; see `line_size`) and
//! walks them with a grid-stride loop (unit `u` handles vectors `u, u + U, u + 2U, ...`,
//! `U` = units launched), so any length runs with a bounded cube count (≤ 65535 cubes per
//! dimension on wgpu). Writes mask the padding lanes of the last vector to zero, which keeps
//! the padding invariant of [`CubeBuffer`].
//!
//! Reductions: each unit accumulates its vectors lane by lane in the working precision,
//! adds its lanes, then the cube reduces in shared memory by a fixed tree and writes one
//! partial per cube; the host adds the partials pairwise in f64. Deterministic for a given
//! length and [`LaunchConfig`](crate::backend::cube::LaunchConfig).
//!
//! Bytes per element (T = element size): copy 2T, axpy/axpby 3T, dot 2T, nrm2/amax T,
//! cg_update 6T, pointwise_mul_dot 3T; flops are 1–4 per element: all memory-bound.
//!
//! NaN: WGSL lets compilers assume that no NaN exists, so no kernel relies on comparing with
//! NaN (`x != x` or `is_nan`); NaN propagation comes from arithmetic only.

use cubecl::prelude::*;

use crate::backend::cube::{line_size, padded_len, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar, Storable};
use crate::vector::cpu::pairwise;
use crate::vector::VectorOps;

/// Zeroes the lanes of vector `line` that lie at or beyond `len`.
#[cube]
fn mask_tail<F: Float, N: Size>(value: Vector<F, N>, line: usize, len: usize) -> Vector<F, N> {
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

/// Sum of the lanes of a vector, in lane order (not `vector_sum`, which is wrong for f64 on
/// the SPIR-V compiler).
#[cube]
fn lane_sum<F: Float, N: Size>(value: Vector<F, N>) -> F {
    let mut s = F::new(0.0);
    #[unroll]
    for k in 0..N::value() {
        s += value[k];
    }
    s
}

/// Tree sum of one value per unit in shared memory; every unit gets the cube's total.
#[cube]
fn cube_sum<F: Float>(value: F, #[comptime] cube_dim: usize) -> F {
    let mut shared = SharedMemory::<F>::new(cube_dim);
    let unit = UNIT_POS as usize;
    shared[unit] = value;
    sync_cube();
    let mut stride = cube_dim.runtime() / 2;
    while stride > 0 {
        if unit < stride {
            shared[unit] = shared[unit] + shared[unit + stride];
        }
        sync_cube();
        stride /= 2;
    }
    shared[0]
}

/// Tree sum of one value per unit; unit 0 writes the cube's total to `partials[CUBE_POS]`.
#[cube]
pub(crate) fn cube_sum_to<F: Float>(
    value: F,
    partials: &mut Array<F>,
    #[comptime] cube_dim: usize,
) {
    let total = cube_sum::<F>(value, cube_dim);
    if UNIT_POS == 0 {
        partials[CUBE_POS] = total;
    }
}

#[cube(launch_unchecked)]
fn zero_kernel<T: Numeric, N: Size>(x: &mut Array<Vector<T, N>>) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        x[i] = Vector::new(T::from_int(0));
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn fill_kernel<F: Float, N: Size>(value: InputScalar, x: &mut Array<Vector<F, N>>, len: usize) {
    let v = Vector::<F, N>::new(value.get::<F>());
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        x[i] = mask_tail::<F, N>(v, i, len);
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn copy_kernel<F: Float, N: Size>(x: &Array<Vector<F, N>>, y: &mut Array<Vector<F, N>>) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < y.len() {
        y[i] = x[i];
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn convert_kernel<S: Float, D: Float, N: Size>(
    x: &Array<Vector<S, N>>,
    y: &mut Array<Vector<D, N>>,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < y.len() {
        y[i] = Vector::<D, N>::cast_from(x[i]);
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn scale_kernel<F: Float, N: Size>(alpha: InputScalar, x: &mut Array<Vector<F, N>>, len: usize) {
    let a = Vector::<F, N>::new(alpha.get::<F>());
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        x[i] = mask_tail::<F, N>(a * x[i], i, len);
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn axpy_kernel<F: Float, N: Size>(
    alpha: InputScalar,
    x: &Array<Vector<F, N>>,
    y: &mut Array<Vector<F, N>>,
    len: usize,
) {
    let a = Vector::<F, N>::new(alpha.get::<F>());
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < y.len() {
        y[i] = mask_tail::<F, N>(a * x[i] + y[i], i, len);
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn axpby_kernel<F: Float, N: Size>(
    alpha: InputScalar,
    x: &Array<Vector<F, N>>,
    beta: InputScalar,
    y: &mut Array<Vector<F, N>>,
    len: usize,
) {
    let a = Vector::<F, N>::new(alpha.get::<F>());
    let b = Vector::<F, N>::new(beta.get::<F>());
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < y.len() {
        y[i] = mask_tail::<F, N>(a * x[i] + b * y[i], i, len);
        i += stride;
    }
}

/// `z = x ∘ y` (`divide = false`) or `z = x / y` (`divide = true`).
#[cube(launch_unchecked)]
fn pointwise_kernel<F: Float, N: Size>(
    x: &Array<Vector<F, N>>,
    y: &Array<Vector<F, N>>,
    z: &mut Array<Vector<F, N>>,
    len: usize,
    #[comptime] divide: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < z.len() {
        let v = if comptime![divide] {
            x[i] / y[i]
        } else {
            x[i] * y[i]
        };
        z[i] = mask_tail::<F, N>(v, i, len);
        i += stride;
    }
}

/// Partial sums of `x ∘ y`, one per cube.
#[cube(launch_unchecked)]
fn dot_kernel<F: Float, N: Size>(
    x: &Array<Vector<F, N>>,
    y: &Array<Vector<F, N>>,
    partials: &mut Array<F>,
    #[comptime] cube_dim: usize,
) {
    let mut acc = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        acc += x[i] * y[i];
        i += stride;
    }
    cube_sum_to::<F>(lane_sum::<F, N>(acc), partials, cube_dim);
}

/// Partial sums of `(s xᵢ)²`, one per cube (the rescaled pass of nrm2).
#[cube(launch_unchecked)]
fn sumsq_scaled_kernel<F: Float, N: Size>(
    scale: InputScalar,
    x: &Array<Vector<F, N>>,
    partials: &mut Array<F>,
    #[comptime] cube_dim: usize,
) {
    let s = Vector::<F, N>::new(scale.get::<F>());
    let mut acc = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        let v = s * x[i];
        acc += v * v;
        i += stride;
    }
    cube_sum_to::<F>(lane_sum::<F, N>(acc), partials, cube_dim);
}

/// Partial maxima of `|xᵢ|`, one per cube in `partials[0..cubes]`, and partial sums of
/// `|xᵢ|` in `partials[cubes..2 cubes]`: the NaN canary. WGSL lets compilers assume that no
/// NaN exists, so comparisons cannot be trusted to see one; additions still propagate it.
#[cube(launch_unchecked)]
fn amax_kernel<F: Float, N: Size>(
    x: &Array<Vector<F, N>>,
    partials: &mut Array<F>,
    #[comptime] cube_dim: usize,
) {
    let mut m = F::new(0.0);
    let mut canary = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        let v = Vector::<F, N>::abs(x[i]);
        canary += v;
        #[unroll]
        for k in 0..N::value() {
            m = select(v[k] > m, v[k], m);
        }
        i += stride;
    }
    let mut shared = SharedMemory::<F>::new(cube_dim);
    let mut shared_sum = SharedMemory::<F>::new(cube_dim);
    let unit = UNIT_POS as usize;
    shared[unit] = m;
    shared_sum[unit] = lane_sum::<F, N>(canary);
    sync_cube();
    let mut stride_tree = cube_dim.runtime() / 2;
    while stride_tree > 0 {
        if unit < stride_tree {
            let other = shared[unit + stride_tree];
            shared[unit] = select(other > shared[unit], other, shared[unit]);
            shared_sum[unit] = shared_sum[unit] + shared_sum[unit + stride_tree];
        }
        sync_cube();
        stride_tree /= 2;
    }
    if unit == 0 {
        partials[CUBE_POS] = shared[0];
        partials[CUBE_COUNT + CUBE_POS] = shared_sum[0];
    }
}

/// `x += α p; r −= α q` over this unit's vectors; returns the unit's share of `r · r`.
#[cube]
fn cg_update_body<F: Float, N: Size>(
    a: Vector<F, N>,
    p: &Array<Vector<F, N>>,
    q: &Array<Vector<F, N>>,
    x: &mut Array<Vector<F, N>>,
    r: &mut Array<Vector<F, N>>,
    len: usize,
) -> F {
    let mut acc = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        // All loads before any store: the compiler cannot prove that x, r and p, q do not
        // alias, so a store between loads would serialise them.
        let xi = x[i];
        let pi = p[i];
        let ri = r[i];
        let qi = q[i];
        let r_new = mask_tail::<F, N>(ri - a * qi, i, len);
        x[i] = mask_tail::<F, N>(xi + a * pi, i, len);
        r[i] = r_new;
        acc += r_new * r_new;
        i += stride;
    }
    lane_sum::<F, N>(acc)
}

/// `x += α p; r −= α q` and partial sums of `r · r`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn cg_update_kernel<F: Float, N: Size>(
    alpha: InputScalar,
    p: &Array<Vector<F, N>>,
    q: &Array<Vector<F, N>>,
    x: &mut Array<Vector<F, N>>,
    r: &mut Array<Vector<F, N>>,
    partials: &mut Array<F>,
    len: usize,
    #[comptime] cube_dim: usize,
) {
    let a = Vector::<F, N>::new(alpha.get::<F>());
    let share = cg_update_body::<F, N>(a, p, q, x, r, len);
    cube_sum_to::<F>(share, partials, cube_dim);
}

/// As [`cg_update_kernel`] with `α = s[RR] / s[PQ]` read from the device scalars.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn cg_update_device_kernel<F: Float, N: Size>(
    scalars: &Array<F>,
    p: &Array<Vector<F, N>>,
    q: &Array<Vector<F, N>>,
    x: &mut Array<Vector<F, N>>,
    r: &mut Array<Vector<F, N>>,
    partials: &mut Array<F>,
    len: usize,
    #[comptime] cube_dim: usize,
) {
    let a = Vector::<F, N>::new(scalars[0] / scalars[1]);
    let share = cg_update_body::<F, N>(a, p, q, x, r, len);
    cube_sum_to::<F>(share, partials, cube_dim);
}

/// One cube adds `len` partials. `mode` 0: `scalars[slot] = total`; mode 1 (the CG finish):
/// `scalars[BETA] = total / scalars[RR]; scalars[RR] = total`.
#[cube(launch_unchecked)]
fn finish_kernel<F: Float>(
    partials: &Array<F>,
    scalars: &mut Array<F>,
    len: usize,
    slot: usize,
    #[comptime] mode: u32,
    #[comptime] cube_dim: usize,
) {
    let mut acc = F::new(0.0);
    let mut i = UNIT_POS as usize;
    while i < len {
        acc += partials[i];
        i += cube_dim;
    }
    let total = cube_sum::<F>(acc, cube_dim);
    if UNIT_POS == 0 {
        if comptime![mode == 0] {
            scalars[slot] = total;
        } else {
            scalars[2] = total / scalars[0];
            scalars[0] = total;
        }
    }
}

/// `p = r + s[BETA] p`.
#[cube(launch_unchecked)]
fn xpay_device_kernel<F: Float, N: Size>(
    scalars: &Array<F>,
    r: &Array<Vector<F, N>>,
    p: &mut Array<Vector<F, N>>,
    len: usize,
) {
    let b = Vector::<F, N>::new(scalars[2]);
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < p.len() {
        p[i] = mask_tail::<F, N>(r[i] + b * p[i], i, len);
        i += stride;
    }
}

/// `z = d ∘ r` and partial sums of `r · z`.
#[cube(launch_unchecked)]
fn pointwise_mul_dot_kernel<F: Float, N: Size>(
    d: &Array<Vector<F, N>>,
    r: &Array<Vector<F, N>>,
    z: &mut Array<Vector<F, N>>,
    partials: &mut Array<F>,
    len: usize,
    #[comptime] cube_dim: usize,
) {
    let mut acc = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < z.len() {
        let ri = r[i];
        let zi = mask_tail::<F, N>(d[i] * ri, i, len);
        z[i] = zi;
        acc += ri * zi;
        i += stride;
    }
    cube_sum_to::<F>(lane_sum::<F, N>(acc), partials, cube_dim);
}

/// `y[i] = x[index[i]]` (out-of-range indices skipped).
#[cube(launch_unchecked)]
fn gather_kernel<F: Float>(
    x: &Array<F>,
    index: &Array<u32>,
    y: &mut Array<F>,
    len: usize,
    xlen: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < len {
        let j = index[i] as usize;
        if j < xlen {
            y[i] = x[j];
        }
        i += stride;
    }
}

/// `y[index[i]] = x[i]` (out-of-range indices skipped).
#[cube(launch_unchecked)]
fn scatter_kernel<F: Float>(
    x: &Array<F>,
    index: &Array<u32>,
    y: &mut Array<F>,
    len: usize,
    ylen: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < len {
        let j = index[i] as usize;
        if j < ylen {
            y[j] = x[i];
        }
        i += stride;
    }
}

/// Cube count and dim for an element-wise launch over `padded` elements.
fn elementwise_shape<R: CubeRuntime>(
    backend: &Cube<R>,
    padded: usize,
    line: usize,
) -> (CubeCount, CubeDim) {
    let config = backend.config();
    let lines = padded / line;
    let cubes = lines
        .div_ceil(config.cube_dim as usize)
        .clamp(1, config.max_cubes as usize);
    (
        CubeCount::Static(cubes as u32, 1, 1),
        CubeDim::new_1d(config.cube_dim),
    )
}

/// Cube count and dim for the first pass of a reduction over `padded` elements.
pub(crate) fn reduce_shape<R: CubeRuntime>(
    backend: &Cube<R>,
    padded: usize,
    line: usize,
) -> (usize, CubeCount, CubeDim) {
    let config = backend.config();
    let lines = padded / line;
    let cubes = lines
        .div_ceil(config.cube_dim as usize)
        .clamp(1, config.reduce_cubes as usize);
    (
        cubes,
        CubeCount::Static(cubes as u32, 1, 1),
        CubeDim::new_1d(config.cube_dim),
    )
}

fn scalar_arg<T: Element>(value: T) -> InputScalar {
    InputScalar::new(value.as_f64(), T::cube_type())
}

/// Zero-fills a freshly allocated buffer (padding included).
pub(crate) fn zero<R: CubeRuntime, T: Storable>(backend: &Cube<R>, x: &CubeBuffer<T>) {
    let line = line_size::<T>();
    let (count, dim) = elementwise_shape(backend, x.padded_len(), line);
    // SAFETY: the grid-stride loop stays below x.len() vectors, which the handle owns.
    unsafe { zero_kernel::launch_unchecked::<T, R>(backend.client(), count, dim, line, x.arg()) }
}

/// Allocates the partials of a reduction (uninitialised: every cube writes its own).
pub(crate) fn partials<R: CubeRuntime, T: Storable>(
    backend: &Cube<R>,
    cubes: usize,
) -> CubeBuffer<T> {
    let handle = backend
        .client()
        .empty(padded_len(cubes) * std::mem::size_of::<T>());
    CubeBuffer {
        handle,
        len: cubes,
        _t: std::marker::PhantomData,
    }
}

/// Launches [`finish_kernel`] on `partials` into `scalars`.
pub(crate) fn finish<R: CubeRuntime, T: Scalar>(
    backend: &Cube<R>,
    partials: &CubeBuffer<T>,
    scalars: &mut CubeBuffer<T>,
    slot: usize,
    mode: u32,
) {
    let dim = backend.config().cube_dim;
    // SAFETY: one cube; units read partials below `len`; unit 0 writes scalar slots below
    // 3, which every scalars buffer holds (at least LINE = 4 padded elements).
    unsafe {
        finish_kernel::launch_unchecked::<T, R>(
            backend.client(),
            CubeCount::Static(1, 1, 1),
            CubeDim::new_1d(dim),
            partials.arg(),
            scalars.arg(),
            partials.len,
            slot,
            mode,
            dim as usize,
        )
    }
}

/// Reads the partial sums and adds them pairwise in f64.
pub(crate) fn finish_sum<R: CubeRuntime, T: Scalar>(
    backend: &Cube<R>,
    partials: &CubeBuffer<T>,
) -> Result<f64> {
    const DEVICE_PASS_ABOVE: usize = 256;
    if partials.len > DEVICE_PASS_ABOVE {
        let mut out = self::partials::<R, T>(backend, 1);
        finish(backend, partials, &mut out, 0, 0);
        return Ok(backend.read::<T>(&out.handle, 1)?[0].as_f64());
    }
    let values: Vec<f64> = backend
        .read::<T>(&partials.handle, partials.len)?
        .into_iter()
        .map(Element::as_f64)
        .collect();
    Ok(pairwise(&values))
}

impl<R: CubeRuntime> VectorOps for Cube<R> {
    fn fill<T: Element>(&self, value: T, x: &mut CubeBuffer<T>) -> Result<()> {
        let (count, dim) = elementwise_shape(self, x.padded_len(), line_size::<T>());
        // SAFETY: grid-stride loop bounded by the padded length the handle owns.
        unsafe {
            fill_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalar_arg(value),
                x.arg(),
                x.len,
            )
        }
        Ok(())
    }

    fn copy<T: Element>(&self, x: &CubeBuffer<T>, y: &mut CubeBuffer<T>) -> Result<()> {
        let (count, dim) = elementwise_shape(self, y.padded_len(), line_size::<T>());
        // SAFETY: equal lengths (checked by Vector), so equal padded lengths.
        unsafe {
            copy_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                x.arg(),
                y.arg(),
            )
        }
        Ok(())
    }

    fn scale<T: Scalar>(&self, alpha: T, x: &mut CubeBuffer<T>) -> Result<()> {
        let (count, dim) = elementwise_shape(self, x.padded_len(), line_size::<T>());
        // SAFETY: grid-stride loop bounded by the padded length the handle owns.
        unsafe {
            scale_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalar_arg(alpha),
                x.arg(),
                x.len,
            )
        }
        Ok(())
    }

    fn axpy<T: Scalar>(&self, alpha: T, x: &CubeBuffer<T>, y: &mut CubeBuffer<T>) -> Result<()> {
        let (count, dim) = elementwise_shape(self, y.padded_len(), line_size::<T>());
        // SAFETY: equal lengths (checked by Vector), so equal padded lengths.
        unsafe {
            axpy_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalar_arg(alpha),
                x.arg(),
                y.arg(),
                y.len,
            )
        }
        Ok(())
    }

    fn axpby<T: Scalar>(
        &self,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (count, dim) = elementwise_shape(self, y.padded_len(), line_size::<T>());
        // SAFETY: equal lengths (checked by Vector), so equal padded lengths.
        unsafe {
            axpby_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalar_arg(alpha),
                x.arg(),
                scalar_arg(beta),
                y.arg(),
                y.len,
            )
        }
        Ok(())
    }

    fn pointwise_mul<T: Scalar>(
        &self,
        x: &CubeBuffer<T>,
        y: &CubeBuffer<T>,
        z: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (count, dim) = elementwise_shape(self, z.padded_len(), line_size::<T>());
        // SAFETY: equal lengths (checked by Vector), so equal padded lengths.
        unsafe {
            pointwise_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                x.arg(),
                y.arg(),
                z.arg(),
                z.len,
                false,
            )
        }
        Ok(())
    }

    fn pointwise_div<T: Scalar>(
        &self,
        x: &CubeBuffer<T>,
        y: &CubeBuffer<T>,
        z: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (count, dim) = elementwise_shape(self, z.padded_len(), line_size::<T>());
        // SAFETY: equal lengths (checked by Vector), so equal padded lengths.
        unsafe {
            pointwise_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                x.arg(),
                y.arg(),
                z.arg(),
                z.len,
                true,
            )
        }
        Ok(())
    }

    fn dot<T: Scalar>(&self, x: &CubeBuffer<T>, y: &CubeBuffer<T>) -> Result<T> {
        let (cubes, count, dim) = reduce_shape(self, x.padded_len(), line_size::<T>());
        let out = partials::<R, T>(self, cubes);
        // SAFETY: equal lengths (checked by Vector); `out` holds one slot per cube.
        unsafe {
            dot_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                x.arg(),
                y.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
        Ok(T::from_f64(finish_sum(self, &out)?))
    }

    fn nrm2<T: Scalar>(&self, x: &CubeBuffer<T>) -> Result<T> {
        let sumsq = self.dot(x, x)?.as_f64();
        let tiny = <T as Scalar>::MIN_NORMAL / <T as Element>::EPS;
        if sumsq.is_finite() && sumsq > tiny {
            return Ok(T::from_f64(sumsq.sqrt()));
        }
        // Over- or underflow of the squares: rescale by the largest magnitude.
        let scale = self.amax(x)?.as_f64();
        if scale == 0.0 || !scale.is_finite() {
            return Ok(T::from_f64(scale));
        }
        let (cubes, count, dim) = reduce_shape(self, x.padded_len(), line_size::<T>());
        let out = partials::<R, T>(self, cubes);
        // SAFETY: `out` holds one slot per cube; x is read within its padded length.
        unsafe {
            sumsq_scaled_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalar_arg(T::from_f64(1.0 / scale)),
                x.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
        Ok(T::from_f64(scale * finish_sum(self, &out)?.sqrt()))
    }

    fn amax<T: Scalar>(&self, x: &CubeBuffer<T>) -> Result<T> {
        let (cubes, count, dim) = reduce_shape(self, x.padded_len(), line_size::<T>());
        let out = partials::<R, T>(self, 2 * cubes);
        // SAFETY: `out` holds two slots per cube; x is read within its padded length.
        unsafe {
            amax_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                x.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
        let values = self.read::<T>(&out.handle, 2 * cubes)?;
        let (maxima, canaries) = values.split_at(cubes);
        if canaries.iter().any(|c| c.as_f64().is_nan()) {
            return Ok(T::from_f64(f64::NAN));
        }
        Ok(T::from_f64(
            maxima.iter().fold(0.0f64, |m, v| m.max(v.as_f64())),
        ))
    }

    fn convert<S: Element, D: Element>(
        &self,
        x: &CubeBuffer<S>,
        y: &mut CubeBuffer<D>,
    ) -> Result<()> {
        let line = line_size::<S>().min(line_size::<D>());
        let (count, dim) = elementwise_shape(self, y.padded_len(), line);
        // SAFETY: equal lengths (checked by Vector), so equal padded lengths; padding
        // zeros convert to zeros.
        unsafe {
            convert_kernel::launch_unchecked::<S, D, R>(
                self.client(),
                count,
                dim,
                line,
                x.arg(),
                y.arg(),
            )
        }
        Ok(())
    }

    fn cg_update<T: Scalar>(
        &self,
        alpha: T,
        p: &CubeBuffer<T>,
        q: &CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
    ) -> Result<T> {
        let (cubes, count, dim) = reduce_shape(self, x.padded_len(), line_size::<T>());
        let out = partials::<R, T>(self, cubes);
        // SAFETY: equal lengths (checked by cg_update); `out` holds one slot per cube.
        unsafe {
            cg_update_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalar_arg(alpha),
                p.arg(),
                q.arg(),
                x.arg(),
                r.arg(),
                out.arg(),
                x.len,
                dim.x as usize,
            )
        }
        Ok(T::from_f64(finish_sum(self, &out)?))
    }

    fn pointwise_mul_dot<T: Scalar>(
        &self,
        d: &CubeBuffer<T>,
        r: &CubeBuffer<T>,
        z: &mut CubeBuffer<T>,
    ) -> Result<T> {
        let (cubes, count, dim) = reduce_shape(self, z.padded_len(), line_size::<T>());
        let out = partials::<R, T>(self, cubes);
        // SAFETY: equal lengths (checked by pointwise_mul_dot); `out` holds one slot per cube.
        unsafe {
            pointwise_mul_dot_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                d.arg(),
                r.arg(),
                z.arg(),
                out.arg(),
                z.len,
                dim.x as usize,
            )
        }
        Ok(T::from_f64(finish_sum(self, &out)?))
    }

    fn gather<T: Element>(
        &self,
        x: &CubeBuffer<T>,
        index: &CubeBuffer<u32>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let len = y.len.min(index.len);
        let (count, dim) = elementwise_shape(self, padded_len(len), 1);
        // SAFETY: i < min(len(y), len(index)); x is read only below its length.
        unsafe {
            gather_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                x.arg(),
                index.arg(),
                y.arg(),
                len,
                x.len,
            )
        }
        Ok(())
    }

    fn scatter<T: Element>(
        &self,
        x: &CubeBuffer<T>,
        index: &CubeBuffer<u32>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let len = x.len.min(index.len);
        let (count, dim) = elementwise_shape(self, padded_len(len), 1);
        // SAFETY: i < min(len(x), len(index)); y is written only below its length.
        unsafe {
            scatter_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                x.arg(),
                index.arg(),
                y.arg(),
                len,
                y.len,
            )
        }
        Ok(())
    }

    fn dot_device<T: Scalar>(
        &self,
        x: &CubeBuffer<T>,
        y: &CubeBuffer<T>,
        scalars: &mut CubeBuffer<T>,
        slot: usize,
    ) -> Result<()> {
        let (cubes, count, dim) = reduce_shape(self, x.padded_len(), line_size::<T>());
        let out = partials::<R, T>(self, cubes);
        // SAFETY: equal lengths (checked by the caller); `out` holds one slot per cube.
        unsafe {
            dot_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                x.arg(),
                y.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
        finish(self, &out, scalars, slot, 0);
        Ok(())
    }

    fn cg_update_device<T: Scalar>(
        &self,
        scalars: &mut CubeBuffer<T>,
        p: &CubeBuffer<T>,
        q: &CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (cubes, count, dim) = reduce_shape(self, x.padded_len(), line_size::<T>());
        let out = partials::<R, T>(self, cubes);
        // SAFETY: equal lengths (checked by the caller); `out` holds one slot per cube; the
        // scalars buffer holds the CG slots.
        unsafe {
            cg_update_device_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalars.arg(),
                p.arg(),
                q.arg(),
                x.arg(),
                r.arg(),
                out.arg(),
                x.len,
                dim.x as usize,
            )
        }
        finish(self, &out, scalars, 0, 1);
        Ok(())
    }

    fn xpay_device<T: Scalar>(
        &self,
        scalars: &CubeBuffer<T>,
        r: &CubeBuffer<T>,
        p: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (count, dim) = elementwise_shape(self, p.padded_len(), line_size::<T>());
        // SAFETY: equal lengths (checked by the caller).
        unsafe {
            xpay_device_kernel::launch_unchecked::<T, R>(
                self.client(),
                count,
                dim,
                line_size::<T>(),
                scalars.arg(),
                r.arg(),
                p.arg(),
                p.len,
            )
        }
        Ok(())
    }
}
