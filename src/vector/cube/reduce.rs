//! Reductions: each unit accumulates its vectors lane by lane in the working precision and
//! adds its lanes; the cube reduces in shared memory by a fixed tree and writes one partial
//! per cube; a second pass adds the partials — on the device (one cube, [`finish`]) when the
//! result stays there or there are many, on the host (pairwise, in f64) when few. So every
//! result is deterministic for a given length and [`LaunchConfig`](crate::backend::LaunchConfig).

use cubecl::prelude::*;

use crate::backend::cube::{line_size, padded_len, scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar, Storable};
use crate::vector::cg_scalars::{BETA, RR};
use crate::vector::cpu::pairwise;

/// Sum of the lanes of a vector, in lane order (not `vector_sum`, which is wrong for f64 on
/// the SPIR-V compiler).
#[cube]
pub(crate) fn lane_sum<F: Float, N: Size>(value: Vector<F, N>) -> F {
    let mut s = F::new(0.0);
    #[unroll]
    for k in 0..N::value() {
        s += value[k];
    }
    s
}

/// Tree sum of one value per unit in shared memory; every unit gets the cube's total.
#[cube]
pub(crate) fn cube_sum<F: Float>(value: F, #[comptime] cube_dim: usize) -> F {
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

/// Where [`finish_kernel`] puts the total of the partials.
#[derive_cube_comptime]
pub(crate) enum Finish {
    /// `scalars[slot] = total`.
    Slot,
    /// The end of a CG update with device scalars (see [`cg_scalars`](crate::vector::cg_scalars)):
    /// `scalars[BETA] = total / scalars[RR]; scalars[RR] = total`.
    CgStep,
}

/// One cube adds `len` partials into the device scalars, as `finish` says.
#[cube(launch_unchecked)]
fn finish_kernel<F: Float>(
    partials: &Array<F>,
    scalars: &mut Array<F>,
    len: usize,
    slot: usize,
    #[comptime] finish: Finish,
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
        match finish {
            Finish::Slot => scalars[slot] = total,
            Finish::CgStep => {
                scalars[BETA] = total / scalars[RR];
                scalars[RR] = total;
            }
        }
    }
}

/// The partials of a reduction, `cubes` of them (uninitialised: every cube writes its own).
pub(crate) fn partials<R: CubeRuntime, T: Storable>(
    backend: &Cube<R>,
    cubes: usize,
) -> CubeBuffer<T> {
    let handle = backend
        .client()
        .empty(padded_len(cubes) * std::mem::size_of::<T>());
    backend.wrap(handle, cubes)
}

/// Adds `partials` on the device into `scalars` as `finish` says.
///
/// # Safety
/// `slot < scalars.len()` for [`Finish::Slot`]; `scalars.len() >= cg_scalars::LEN` for
/// [`Finish::CgStep`].
pub(crate) unsafe fn finish<R: CubeRuntime, T: Scalar>(
    backend: &Cube<R>,
    partials: &CubeBuffer<T>,
    scalars: &mut CubeBuffer<T>,
    slot: usize,
    finish: Finish,
) -> Result<()> {
    let dim = backend.config().cube_dim;
    backend.launch::<T>((finish, dim), || {
        // SAFETY: one cube; units read partials below their length; unit 0 writes the
        // slots the caller's contract puts inside `scalars`.
        unsafe {
            finish_kernel::launch_unchecked::<T, R>(
                backend.client(),
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(dim),
                partials.arg(),
                scalars.arg(),
                partials.len,
                slot,
                finish,
                dim as usize,
            )
        }
    })
}

/// The total of the partials, on the host: a device pass first when there are many.
pub(crate) fn finish_sum<R: CubeRuntime, T: Scalar>(
    backend: &Cube<R>,
    partials: &CubeBuffer<T>,
) -> Result<f64> {
    const DEVICE_PASS_ABOVE: usize = 256;
    if partials.len > DEVICE_PASS_ABOVE {
        let mut out = self::partials::<R, T>(backend, 1);
        // SAFETY: slot 0 of a one-value buffer.
        unsafe { finish(backend, partials, &mut out, 0, Finish::Slot)? };
        return Ok(backend.read::<T>(&out.handle, 1)?[0].as_f64());
    }
    let values: Vec<f64> = backend
        .read::<T>(&partials.handle, partials.len)?
        .into_iter()
        .map(Element::as_f64)
        .collect();
    Ok(pairwise(&values))
}

/// The partial sums of `x · y`, one per cube.
///
/// # Safety
/// `x` and `y` have the same length.
unsafe fn dot_partials<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    x: &CubeBuffer<T>,
    y: &CubeBuffer<T>,
) -> Result<CubeBuffer<T>> {
    let line = line_size::<T>();
    let (cubes, count, dim) = b.config().reduce(x.padded_len() / line);
    let out = partials::<R, T>(b, cubes);
    b.launch::<T>((line, dim.x), || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths; `out`
        // holds one slot per cube.
        unsafe {
            dot_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                x.arg(),
                y.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
    })?;
    Ok(out)
}

/// `x · y`, returned to the host.
///
/// # Safety
/// `x` and `y` have the same length.
pub(crate) unsafe fn dot<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    x: &CubeBuffer<T>,
    y: &CubeBuffer<T>,
) -> Result<T> {
    // SAFETY: the caller's contract.
    let out = unsafe { dot_partials(b, x, y)? };
    Ok(T::from_f64(finish_sum(b, &out)?))
}

/// `scalars[slot] = x · y`, left on the device.
///
/// # Safety
/// `x` and `y` have the same length; `slot < scalars.len()`.
pub(crate) unsafe fn dot_device<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    x: &CubeBuffer<T>,
    y: &CubeBuffer<T>,
    scalars: &mut CubeBuffer<T>,
    slot: usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        let out = dot_partials(b, x, y)?;
        finish(b, &out, scalars, slot, Finish::Slot)
    }
}

/// `‖x‖₂`, rescaled by `max |xᵢ|` when the sum of squares over- or underflows.
pub(crate) fn nrm2<R: CubeRuntime, T: Scalar>(b: &Cube<R>, x: &CubeBuffer<T>) -> Result<T> {
    // SAFETY: x with itself: equal lengths.
    let sumsq = unsafe { dot(b, x, x)? }.as_f64();
    let tiny = <T as Scalar>::MIN_NORMAL / <T as Element>::EPS;
    if sumsq.is_finite() && sumsq > tiny {
        return Ok(T::from_f64(sumsq.sqrt()));
    }
    let scale = amax(b, x)?.as_f64();
    if scale == 0.0 || !scale.is_finite() {
        return Ok(T::from_f64(scale));
    }
    let line = line_size::<T>();
    let (cubes, count, dim) = b.config().reduce(x.padded_len() / line);
    let out = partials::<R, T>(b, cubes);
    b.launch::<T>((line, dim.x), || {
        // SAFETY: `out` holds one slot per cube; x is read within its padded length.
        unsafe {
            sumsq_scaled_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                scalar(T::from_f64(1.0 / scale)),
                x.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
    })?;
    Ok(T::from_f64(scale * finish_sum(b, &out)?.sqrt()))
}

/// `max |xᵢ|`, NaN if any element is NaN.
pub(crate) fn amax<R: CubeRuntime, T: Scalar>(b: &Cube<R>, x: &CubeBuffer<T>) -> Result<T> {
    let line = line_size::<T>();
    let (cubes, count, dim) = b.config().reduce(x.padded_len() / line);
    let out = partials::<R, T>(b, 2 * cubes);
    b.launch::<T>((line, dim.x), || {
        // SAFETY: `out` holds two slots per cube; x is read within its padded length.
        unsafe {
            amax_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                x.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
    })?;
    let values = b.read::<T>(&out.handle, 2 * cubes)?;
    let (maxima, canaries) = values.split_at(cubes);
    if canaries.iter().any(|c| c.as_f64().is_nan()) {
        return Ok(T::from_f64(f64::NAN));
    }
    Ok(T::from_f64(
        maxima.iter().fold(0.0f64, |m, v| m.max(v.as_f64())),
    ))
}
