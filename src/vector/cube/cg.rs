//! The fused updates of the conjugate gradient solvers: one pass over the vectors instead
//! of three, the reduction of the next inner product folded in.

use cubecl::prelude::*;

use crate::backend::cube::{line_size, scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::vector::cg_scalars::{BETA, PQ, RR, RZ, RZ_NEW, RZ_PREV};
use crate::vector::cube::mask_tail;
use crate::vector::cube::reduce::{
    cube_sum, cube_sum_to, finish, finish_sum, lane_sum, partials, Finish,
};

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
    let a = Vector::<F, N>::new(scalars[RR] / scalars[PQ]);
    let share = cg_update_body::<F, N>(a, p, q, x, r, len);
    cube_sum_to::<F>(share, partials, cube_dim);
}

/// `p = r + s[BETA] p`, `r` of any float type (rounded exactly to `p`'s wider one; the
/// identity where the types are the same).
#[cube(launch_unchecked)]
fn xpay_device_kernel<L: Float, F: Float, N: Size>(
    scalars: &Array<F>,
    r: &Array<Vector<L, N>>,
    p: &mut Array<Vector<F, N>>,
    len: usize,
) {
    let b = Vector::<F, N>::new(scalars[BETA]);
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < p.len() {
        let ri = Vector::<F, N>::cast_from(r[i]);
        p[i] = mask_tail::<F, N>(ri + b * p[i], i, len);
        i += stride;
    }
}

/// `s[BETA] = s[RZ_NEW] / s[RZ]` (`flexible`: `(s[RZ_NEW] − s[RZ_PREV]) / s[RZ]`);
/// `s[RZ] = s[RZ_NEW]; s[RR] = s[RZ_NEW]`, by one unit.
#[cube(launch_unchecked)]
fn pcg_rotate_kernel<F: Float>(scalars: &mut Array<F>, #[comptime] flexible: bool) {
    if ABSOLUTE_POS == 0 {
        let rz_new = scalars[RZ_NEW];
        if flexible {
            scalars[BETA] = (rz_new - scalars[RZ_PREV]) / scalars[RZ];
        } else {
            scalars[BETA] = rz_new / scalars[RZ];
        }
        scalars[RZ] = rz_new;
        scalars[RR] = rz_new;
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

/// PCG with the Jacobi preconditioner `z = d ∘ r`, update and inner products in one pass:
/// `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`; partial sums of `r · r` in
/// `partials[0..cubes]` and of `r · (d ∘ r)` in `partials[cubes..2 cubes]` (z is not stored:
/// the direction update recomputes `d ∘ r`).
#[cube(launch_unchecked)]
fn pcg_jacobi_update_kernel<F: Float, N: Size>(
    scalars: &Array<F>,
    d: &Array<Vector<F, N>>,
    p: &Array<Vector<F, N>>,
    q: &Array<Vector<F, N>>,
    x: &mut Array<Vector<F, N>>,
    r: &mut Array<Vector<F, N>>,
    partials: &mut Array<F>,
    len: usize,
    #[comptime] cube_dim: usize,
    #[comptime] update_x: bool,
) {
    let a = Vector::<F, N>::new(scalars[RR] / scalars[PQ]);
    let mut rr = Vector::<F, N>::new(F::new(0.0));
    let mut rz = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < r.len() {
        // All loads before any store (see `cg_update_body`).
        let ri = r[i];
        let qi = q[i];
        let di = d[i];
        if update_x {
            let xi = x[i];
            let pi = p[i];
            x[i] = mask_tail::<F, N>(xi + a * pi, i, len);
        }
        let r_new = mask_tail::<F, N>(ri - a * qi, i, len);
        r[i] = r_new;
        rr += r_new * r_new;
        rz += r_new * (di * r_new);
        i += stride;
    }
    cube_sums2_to::<F, N>(rr, rz, partials, cube_dim);
}

/// The cube's two sums of `first` and `second` (lane sums, then the tree of `cube_sum`):
/// unit 0 writes them to `partials[CUBE_POS]` and `partials[CUBE_COUNT + CUBE_POS]`, the two
/// halves that [`two_partial_sums`] adds.
#[cube]
fn cube_sums2_to<F: Float, N: Size>(
    first: Vector<F, N>,
    second: Vector<F, N>,
    partials: &mut Array<F>,
    #[comptime] cube_dim: usize,
) {
    let first = cube_sum::<F>(lane_sum::<F, N>(first), cube_dim);
    let second = cube_sum::<F>(lane_sum::<F, N>(second), cube_dim);
    if UNIT_POS == 0 {
        partials[CUBE_POS] = first;
        partials[CUBE_COUNT + CUBE_POS] = second;
    }
}

/// The sums of the two halves of `partials` (`cubes` values each), in every unit of the
/// one cube of a finish kernel: `(Σ partials[..cubes], Σ partials[cubes..2 cubes])`.
#[cube]
fn two_partial_sums<F: Float>(
    partials: &Array<F>,
    cubes: usize,
    #[comptime] cube_dim: usize,
) -> (F, F) {
    let mut first = F::new(0.0);
    let mut second = F::new(0.0);
    let mut i = UNIT_POS as usize;
    while i < cubes {
        first += partials[i];
        second += partials[cubes + i];
        i += cube_dim;
    }
    (
        cube_sum::<F>(first, cube_dim),
        cube_sum::<F>(second, cube_dim),
    )
}

/// One cube adds the two halves of the partials of [`pcg_jacobi_update_kernel`]:
/// `s[BETA] = rz / s[RZ]; s[RZ] = rz; s[RR] = rz` (the next α's numerator) and
/// `s[RZ_NEW] = r·r` (the residual the stopping test reads).
#[cube(launch_unchecked)]
fn pcg_jacobi_finish_kernel<F: Float>(
    partials: &Array<F>,
    scalars: &mut Array<F>,
    cubes: usize,
    #[comptime] cube_dim: usize,
) {
    let (rr, rz) = two_partial_sums::<F>(partials, cubes, cube_dim);
    if UNIT_POS == 0 {
        scalars[BETA] = rz / scalars[RZ];
        scalars[RZ] = rz;
        scalars[RR] = rz;
        scalars[RZ_NEW] = rr;
    }
}

/// `p = d ∘ r + s[BETA] p`: the PCG direction with the Jacobi preconditioner applied on the fly.
#[cube(launch_unchecked)]
fn jacobi_xpay_device_kernel<F: Float, N: Size>(
    scalars: &Array<F>,
    d: &Array<Vector<F, N>>,
    r: &Array<Vector<F, N>>,
    p: &mut Array<Vector<F, N>>,
    len: usize,
) {
    let b = Vector::<F, N>::new(scalars[BETA]);
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < p.len() {
        p[i] = mask_tail::<F, N>(d[i] * r[i] + b * p[i], i, len);
        i += stride;
    }
}

/// Where the step length `α` of [`update`] comes from.
pub(crate) enum Alpha<'a, T: Scalar> {
    /// Given by the host.
    Host(T),
    /// `s[RR] / s[PQ]` of these device scalars.
    Device(&'a CubeBuffer<T>),
}

/// `x += α p; r −= α q`; the partial sums of the new `r · r`.
///
/// # Safety
/// `p`, `q`, `x`, `r` have the same length; device scalars hold `cg_scalars::LEN` values.
unsafe fn update_partials<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    alpha: Alpha<'_, T>,
    p: &CubeBuffer<T>,
    q: &CubeBuffer<T>,
    x: &mut CubeBuffer<T>,
    r: &mut CubeBuffer<T>,
) -> Result<CubeBuffer<T>> {
    let line = line_size::<T>();
    let (cubes, count, dim) = b.config().reduce(x.padded_len() / line);
    let out = partials::<R, T>(b, cubes);
    match alpha {
        Alpha::Host(alpha) => b.launch::<T>((line, false, dim.x), || {
            // SAFETY: equal lengths (the caller's contract), so equal padded lengths; `out`
            // holds one slot per cube.
            unsafe {
                cg_update_kernel::launch_unchecked::<T, R>(
                    b.client(),
                    count,
                    dim,
                    line,
                    scalar(alpha),
                    p.arg(),
                    q.arg(),
                    x.arg(),
                    r.arg(),
                    out.arg(),
                    x.len,
                    dim.x as usize,
                )
            }
        })?,
        Alpha::Device(scalars) => b.launch::<T>((line, true, dim.x), || {
            // SAFETY: as above, and the scalars hold RR and PQ (the caller's contract).
            unsafe {
                cg_update_device_kernel::launch_unchecked::<T, R>(
                    b.client(),
                    count,
                    dim,
                    line,
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
        })?,
    }
    Ok(out)
}

/// `x += α p; r −= α q`, returning the new `r · r` to the host.
///
/// # Safety
/// `p`, `q`, `x`, `r` have the same length.
pub(crate) unsafe fn update<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    alpha: Alpha<'_, T>,
    p: &CubeBuffer<T>,
    q: &CubeBuffer<T>,
    x: &mut CubeBuffer<T>,
    r: &mut CubeBuffer<T>,
) -> Result<T> {
    // SAFETY: the caller's contract.
    let out = unsafe { update_partials(b, alpha, p, q, x, r)? };
    Ok(T::from_f64(finish_sum(b, &out)?))
}

/// The CG update with device-resident scalars: `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`;
/// `s[BETA] = r·r / s[RR]`; `s[RR] = r·r`.
///
/// # Safety
/// `p`, `q`, `x`, `r` have the same length; `scalars` holds `cg_scalars::LEN` values.
pub(crate) unsafe fn update_device<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    scalars: &mut CubeBuffer<T>,
    p: &CubeBuffer<T>,
    q: &CubeBuffer<T>,
    x: &mut CubeBuffer<T>,
    r: &mut CubeBuffer<T>,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe {
        let out = update_partials(b, Alpha::Device(scalars), p, q, x, r)?;
        finish(b, &out, scalars, 0, Finish::CgStep)
    }
}

/// `p = r + s[BETA] p`.
///
/// # Safety
/// `r` and `p` have the same length; `scalars` holds `cg_scalars::LEN` values.
pub(crate) unsafe fn xpay_device<R: CubeRuntime, L: Scalar, T: Scalar>(
    b: &Cube<R>,
    scalars: &CubeBuffer<T>,
    r: &CubeBuffer<L>,
    p: &mut CubeBuffer<T>,
) -> Result<()> {
    // Narrower `r` lines where `L` is the wider type (as the flexible conversion's).
    let line = line_size::<T>().min(line_size::<L>());
    let (count, dim) = b.config().grid(p.padded_len() / line);
    b.launch::<(L, T)>(line, || {
        // SAFETY: equal lengths and the scalar slots (the caller's contract).
        unsafe {
            xpay_device_kernel::launch_unchecked::<L, T, R>(
                b.client(),
                count,
                dim,
                line,
                scalars.arg(),
                r.arg(),
                p.arg(),
                p.len,
            )
        }
    })
}

/// The PCG scalar step (see [`crate::vector::pcg_rotate_device`] and
/// [`crate::vector::pcg_flexible_rotate_device`]).
///
/// # Safety
/// `scalars` holds `cg_scalars::PCG_LEN` values (`FLEXIBLE_LEN` if `flexible`).
pub(crate) unsafe fn pcg_rotate_device<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    scalars: &mut CubeBuffer<T>,
    flexible: bool,
) -> Result<()> {
    b.launch::<T>(flexible, || {
        // SAFETY: one unit reads and writes the slots below PCG_LEN (FLEXIBLE_LEN if
        // flexible: the caller's contract).
        unsafe {
            pcg_rotate_kernel::launch_unchecked::<T, R>(
                b.client(),
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(1),
                scalars.arg(),
                flexible,
            )
        }
    })
}

/// `z = d ∘ r`, returning `r · z` to the host.
///
/// # Safety
/// `d`, `r`, `z` have the same length.
pub(crate) unsafe fn pointwise_mul_dot<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    d: &CubeBuffer<T>,
    r: &CubeBuffer<T>,
    z: &mut CubeBuffer<T>,
) -> Result<T> {
    let line = line_size::<T>();
    let (cubes, count, dim) = b.config().reduce(z.padded_len() / line);
    let out = partials::<R, T>(b, cubes);
    b.launch::<T>((line, dim.x), || {
        // SAFETY: equal lengths (the caller's contract); `out` holds one slot per cube.
        unsafe {
            pointwise_mul_dot_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                d.arg(),
                r.arg(),
                z.arg(),
                out.arg(),
                z.len,
                dim.x as usize,
            )
        }
    })?;
    Ok(T::from_f64(finish_sum(b, &out)?))
}

/// The PCG-Jacobi update with device scalars (see
/// [`crate::vector::pcg_jacobi_update_device`]).
///
/// # Safety
/// `d`, `p`, `q`, `r` (and `x`, if given) have the same length; `scalars` holds
/// `cg_scalars::PCG_LEN` values.
pub(crate) unsafe fn pcg_jacobi_update_device<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    scalars: &mut CubeBuffer<T>,
    d: &CubeBuffer<T>,
    p: &CubeBuffer<T>,
    q: &CubeBuffer<T>,
    x: Option<&mut CubeBuffer<T>>,
    r: &mut CubeBuffer<T>,
) -> Result<()> {
    let line = line_size::<T>();
    let (cubes, count, dim) = b.config().reduce(r.padded_len() / line);
    let out = partials::<R, T>(b, 2 * cubes);
    let update_x = x.is_some();
    // Without x, its binding is a one-line dummy the kernel does not touch.
    let dummy;
    let x: &CubeBuffer<T> = match x {
        Some(x) => x,
        None => {
            dummy = crate::backend::core::BackendCore::alloc::<T>(b, line)?;
            &dummy
        }
    };
    b.launch::<T>((line, dim.x, update_x), || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths; `out`
        // holds two slots per cube; the scalars hold RR and PQ; x is read and written
        // only when update_x (then it has r's length).
        unsafe {
            pcg_jacobi_update_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                scalars.arg(),
                d.arg(),
                p.arg(),
                q.arg(),
                x.arg(),
                r.arg(),
                out.arg(),
                r.len,
                dim.x as usize,
                update_x,
            )
        }
    })?;
    let fdim = b.config().cube_dim;
    b.launch::<T>(fdim, || {
        // SAFETY: one cube reads the 2 `cubes` partials; unit 0 writes slots below PCG_LEN
        // (the caller's contract).
        unsafe {
            pcg_jacobi_finish_kernel::launch_unchecked::<T, R>(
                b.client(),
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(fdim),
                out.arg(),
                scalars.arg(),
                cubes,
                fdim as usize,
            )
        }
    })
}

/// `p = d ∘ r + s[BETA] p`.
///
/// # Safety
/// `d`, `r` and `p` have the same length; `scalars` holds `cg_scalars::LEN` values.
pub(crate) unsafe fn jacobi_xpay_device<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    scalars: &CubeBuffer<T>,
    d: &CubeBuffer<T>,
    r: &CubeBuffer<T>,
    p: &mut CubeBuffer<T>,
) -> Result<()> {
    let line = line_size::<T>();
    let (count, dim) = b.config().grid(p.padded_len() / line);
    b.launch::<T>(line, || {
        // SAFETY: equal lengths and the scalar slots (the caller's contract).
        unsafe {
            jacobi_xpay_device_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                scalars.arg(),
                d.arg(),
                r.arg(),
                p.arg(),
                p.len,
            )
        }
    })
}

/// One Chronopoulos–Gear step (see [`crate::vector::cgcg_update`]): `p = u + β p`;
/// `s = w + β s`; `x += α p`; `r −= α s` (`u` is `r` unless `read_u`), then `u = d ∘ r` with
/// `jacobi`; partial sums of `r · r` in `partials[0..cubes]` and of `r · u` (`r · r` without
/// `jacobi`) in `partials[cubes..2 cubes]`. Without `read_u`, `u` is not accessed; without
/// `jacobi`, `d` is not.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn cgcg_update_kernel<F: Float, N: Size>(
    alpha: InputScalar,
    beta: InputScalar,
    d: &Array<Vector<F, N>>,
    u: &mut Array<Vector<F, N>>,
    w: &Array<Vector<F, N>>,
    p: &mut Array<Vector<F, N>>,
    s: &mut Array<Vector<F, N>>,
    x: &mut Array<Vector<F, N>>,
    r: &mut Array<Vector<F, N>>,
    partials: &mut Array<F>,
    len: usize,
    #[comptime] read_u: bool,
    #[comptime] jacobi: bool,
    #[comptime] cube_dim: usize,
) {
    let a = Vector::<F, N>::new(alpha.get::<F>());
    let b = Vector::<F, N>::new(beta.get::<F>());
    let mut rr = Vector::<F, N>::new(F::new(0.0));
    let mut ru = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        // All loads before any store (see `cg_update_body`).
        let pi = p[i];
        let si = s[i];
        let xi = x[i];
        let ri = r[i];
        let wi = w[i];
        let mut ui = ri;
        if read_u {
            ui = u[i];
        }
        let p_new = mask_tail::<F, N>(ui + b * pi, i, len);
        let s_new = mask_tail::<F, N>(wi + b * si, i, len);
        let r_new = mask_tail::<F, N>(ri - a * s_new, i, len);
        p[i] = p_new;
        s[i] = s_new;
        x[i] = mask_tail::<F, N>(xi + a * p_new, i, len);
        r[i] = r_new;
        rr += r_new * r_new;
        if jacobi {
            let u_new = mask_tail::<F, N>(d[i] * r_new, i, len);
            u[i] = u_new;
            ru += r_new * u_new;
        }
        i += stride;
    }
    let rr = cube_sum::<F>(lane_sum::<F, N>(rr), cube_dim);
    let mut ru_sum = rr;
    if jacobi {
        ru_sum = cube_sum::<F>(lane_sum::<F, N>(ru), cube_dim);
    }
    if UNIT_POS == 0 {
        partials[CUBE_POS] = rr;
        partials[CUBE_COUNT + CUBE_POS] = ru_sum;
    }
}

/// One cube adds the two halves of the partials of [`cgcg_update_kernel`] into
/// `scalars[slot_rr]` and `scalars[slot_ru]`.
#[cube(launch_unchecked)]
fn two_sums_finish_kernel<F: Float>(
    partials: &Array<F>,
    scalars: &mut Array<F>,
    cubes: usize,
    slot_rr: usize,
    slot_ru: usize,
    #[comptime] cube_dim: usize,
) {
    let (rr, ru) = two_partial_sums::<F>(partials, cubes, cube_dim);
    if UNIT_POS == 0 {
        scalars[slot_rr] = rr;
        scalars[slot_ru] = ru;
    }
}

/// The Chronopoulos–Gear step (see [`crate::vector::cgcg_update`]).
///
/// # Safety
/// All vectors have the same length; `d` only with `u`; both slots are below `len(scalars)`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn cgcg_update<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
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
    let line = line_size::<T>();
    let (cubes, count, dim) = b.config().reduce(x.padded_len() / line);
    let out = partials::<R, T>(b, 2 * cubes);
    let (read_u, jacobi) = (u.is_some(), d.is_some() && u.is_some());
    // Unused arrays are bound to `w` (never accessed: the comptime flags leave them out).
    let u = u.map(|u| &*u).unwrap_or(w);
    let d = d.filter(|_| jacobi).unwrap_or(w);
    b.launch::<T>((line, read_u, jacobi, dim.x), || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths; `out`
        // holds two slots per cube; `u` and `d` are accessed only when given.
        unsafe {
            let (u_arg, d_arg) = (u.arg(), d.arg());
            cgcg_update_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                scalar(alpha),
                scalar(beta),
                d_arg,
                u_arg,
                w.arg(),
                p.arg(),
                s.arg(),
                x.arg(),
                r.arg(),
                out.arg(),
                x.len,
                read_u,
                jacobi,
                dim.x as usize,
            )
        }
    })?;
    let fdim = b.config().cube_dim;
    b.launch::<T>(fdim, || {
        // SAFETY: one cube reads the 2 `cubes` partials; unit 0 writes the two slots, below
        // len(scalars) (the caller's contract).
        unsafe {
            two_sums_finish_kernel::launch_unchecked::<T, R>(
                b.client(),
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(fdim),
                out.arg(),
                scalars.arg(),
                cubes,
                slots[0],
                slots[1],
                fdim as usize,
            )
        }
    })
}

/// Flexible PCG's step after a preconditioner in another precision, in one pass: partial
/// sums of `r · z` of the old `z` in `partials[0..cubes]`, `z = round(low)`, partial sums of
/// `r · z` of the new one in `partials[cubes..2 cubes]`, each summed as `dot_kernel` sums
/// `r · z` (the same lines, units and tree: the same bits).
#[cube(launch_unchecked)]
fn flexible_convert_kernel<L: Float, F: Float, N: Size>(
    low: &Array<Vector<L, N>>,
    r: &Array<Vector<F, N>>,
    z: &mut Array<Vector<F, N>>,
    partials: &mut Array<F>,
    #[comptime] cube_dim: usize,
) {
    let mut prev = Vector::<F, N>::new(F::new(0.0));
    let mut next = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < r.len() {
        let ri = r[i];
        prev += ri * z[i];
        let zi = Vector::<F, N>::cast_from(low[i]);
        z[i] = zi;
        next += ri * zi;
        i += stride;
    }
    cube_sums2_to::<F, N>(prev, next, partials, cube_dim);
}

/// [`flexible_convert_kernel`] with the old `z` kept in the low precision too and the new
/// one not written out: partial sums of `r · round(old)` and of `r · round(low)` (the same
/// lines, units and tree as `flexible_convert_kernel` with `z = round(old)`: the same bits).
#[cube(launch_unchecked)]
fn flexible_low_kernel<L: Float, F: Float, N: Size>(
    low: &Array<Vector<L, N>>,
    old: &Array<Vector<L, N>>,
    r: &Array<Vector<F, N>>,
    partials: &mut Array<F>,
    #[comptime] cube_dim: usize,
) {
    let mut prev = Vector::<F, N>::new(F::new(0.0));
    let mut next = Vector::<F, N>::new(F::new(0.0));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < r.len() {
        let ri = r[i];
        prev += ri * Vector::<F, N>::cast_from(old[i]);
        next += ri * Vector::<F, N>::cast_from(low[i]);
        i += stride;
    }
    cube_sums2_to::<F, N>(prev, next, partials, cube_dim);
}

/// One cube adds the two halves of the partials of [`flexible_convert_kernel`]:
/// `s[RZ_PREV]`, `s[RZ_NEW]`, then the flexible rotation of [`pcg_rotate_kernel`].
#[cube(launch_unchecked)]
fn flexible_convert_finish_kernel<F: Float>(
    partials: &Array<F>,
    scalars: &mut Array<F>,
    cubes: usize,
    #[comptime] cube_dim: usize,
) {
    let (prev, next) = two_partial_sums::<F>(partials, cubes, cube_dim);
    if UNIT_POS == 0 {
        scalars[RZ_PREV] = prev;
        scalars[RZ_NEW] = next;
        scalars[BETA] = (next - prev) / scalars[RZ];
        scalars[RZ] = next;
        scalars[RR] = next;
    }
}

/// `s[RZ_PREV] = r · z`; `z = round(low)`; `s[RZ_NEW] = r · z`; the flexible rotation.
///
/// # Safety
/// `low`, `r` and `z` have the same length; `scalars` holds `cg_scalars::FLEXIBLE_LEN`
/// values.
pub(crate) unsafe fn pcg_flexible_convert_device<R: CubeRuntime, L: Scalar, T: Scalar>(
    b: &Cube<R>,
    scalars: &mut CubeBuffer<T>,
    low: &CubeBuffer<L>,
    r: &CubeBuffer<T>,
    z: &mut CubeBuffer<T>,
) -> Result<()> {
    // The dot product's lines (narrower `low` lines where `L` is the wider type).
    let line = line_size::<T>().min(line_size::<L>());
    let (cubes, count, dim) = b.config().reduce(r.padded_len() / line);
    let out = partials::<R, T>(b, 2 * cubes);
    b.launch::<(L, T)>((line, dim.x), || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths; `out`
        // holds two slots per cube.
        unsafe {
            flexible_convert_kernel::launch_unchecked::<L, T, R>(
                b.client(),
                count,
                dim,
                line,
                low.arg(),
                r.arg(),
                z.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
    })?;
    // SAFETY: `out` holds two slots per cube; `scalars` FLEXIBLE_LEN (the caller's contract).
    unsafe { flexible_finish(b, &out, scalars, cubes) }
}

/// [`flexible_convert_finish_kernel`] on the `2 cubes` partials in `out`.
///
/// # Safety
/// `out` holds `2 cubes` values; `scalars` `cg_scalars::FLEXIBLE_LEN`.
unsafe fn flexible_finish<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    out: &CubeBuffer<T>,
    scalars: &mut CubeBuffer<T>,
    cubes: usize,
) -> Result<()> {
    let fdim = b.config().cube_dim;
    b.launch::<T>(fdim, || {
        // SAFETY: one cube reads the 2 `cubes` partials; unit 0 writes slots below
        // FLEXIBLE_LEN (the caller's contract).
        unsafe {
            flexible_convert_finish_kernel::launch_unchecked::<T, R>(
                b.client(),
                CubeCount::Static(1, 1, 1),
                CubeDim::new_1d(fdim),
                out.arg(),
                scalars.arg(),
                cubes,
                fdim as usize,
            )
        }
    })
}

/// `s[RZ_PREV] = r · round(old)`; `s[RZ_NEW] = r · round(low)`; the flexible rotation: the
/// flexible step with both `z` kept in the preconditioner's precision (nothing written but
/// the scalars).
///
/// # Safety
/// `low`, `old` and `r` have the same length; `scalars` holds `cg_scalars::FLEXIBLE_LEN`
/// values.
pub(crate) unsafe fn pcg_flexible_low_device<R: CubeRuntime, L: Scalar, T: Scalar>(
    b: &Cube<R>,
    scalars: &mut CubeBuffer<T>,
    low: &CubeBuffer<L>,
    old: &CubeBuffer<L>,
    r: &CubeBuffer<T>,
) -> Result<()> {
    // The lines, cubes and tree of `pcg_flexible_convert_device` (the same sums).
    let line = line_size::<T>().min(line_size::<L>());
    let (cubes, count, dim) = b.config().reduce(r.padded_len() / line);
    let out = partials::<R, T>(b, 2 * cubes);
    b.launch::<(L, T)>((line, dim.x), || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths; `out`
        // holds two slots per cube.
        unsafe {
            flexible_low_kernel::launch_unchecked::<L, T, R>(
                b.client(),
                count,
                dim,
                line,
                low.arg(),
                old.arg(),
                r.arg(),
                out.arg(),
                dim.x as usize,
            )
        }
    })?;
    // SAFETY: as above.
    unsafe { flexible_finish(b, &out, scalars, cubes) }
}
