//! The fused solver steps and the device-resident scalars of CG, for vectors in one buffer
//! (one kernel each) and for split vectors (part by part; the device-scalar steps on a copy
//! of the scalars per part, summed on the device, see the [module documentation](super)).

use super::{agree, Vector, VectorOps};
use crate::backend::core::check_device;
use crate::error::Result;
use crate::scalar::Scalar;

/// Adds the results of `f` over `parts` in f64, in order (one part: its result as it is).
pub(super) fn sum_parts<I: IntoIterator, T: Scalar>(
    parts: I,
    mut f: impl FnMut(I::Item) -> Result<T>,
) -> Result<T> {
    let mut sum = 0.0f64;
    for part in parts {
        sum += f(part)?.as_f64();
    }
    Ok(T::from_f64(sum))
}

/// `√(Σ nₖ²)` of the parts' norms `nₖ`, scaled by the largest (no overflow or underflow);
/// NaN if any is NaN.
pub(super) fn combine_norms(norms: &[f64]) -> f64 {
    if norms.iter().any(|n| n.is_nan()) {
        return f64::NAN;
    }
    let max = norms.iter().fold(0.0f64, |m, &n| m.max(n));
    if max == 0.0 || max.is_infinite() {
        return max;
    }
    max * norms.iter().map(|n| (n / max).powi(2)).sum::<f64>().sqrt()
}

/// A device-scalar step on split vectors: `step(item, t)` runs once per part (`items`, in
/// order) on its own copy `t` of the scalars (zeros unless `copy_in`), then each of `slots` of
/// `scalars` becomes the sum of the copies' values (every such slot adds up over the parts:
/// `r·r`, `β = r·r / (r·r)_old`, ...). Where the backend can bind part of a buffer, the
/// copies are views of one staging vector at `k · 256` and the sums stay on the device (the
/// slot's values gathered, added by a dot product with ones); elsewhere (the CPU backend)
/// the copies are vectors of their own, read back and added in f64.
fn per_part<B: VectorOps, T: Scalar, P>(
    scalars: &mut Vector<B, T>,
    items: Vec<P>,
    copy_in: bool,
    slots: &[usize],
    mut step: impl FnMut(P, &mut B::Buffer<T>) -> Result<()>,
) -> Result<()> {
    scalars.buffer()?;
    let (parts, len) = (items.len(), scalars.len());
    let stride = crate::backend::core::SPLIT_ROW_ALIGN;
    let backend = scalars.backend.clone();
    let stage = Vector::<B, T>::zeros(&backend, parts * stride)?;
    let views = if len <= stride && stage.parts() == 1 {
        // SAFETY: the views cover disjoint ranges of `stage`, which is not used otherwise
        // until they are dropped below.
        (0..parts)
            .map(|k| unsafe { stage.view(k * stride, len) })
            .collect::<Option<Vec<_>>>()
    } else {
        None
    };
    let Some(mut views) = views else {
        let mut sums = vec![0.0f64; slots.len()];
        for item in items {
            let mut t = if copy_in {
                scalars.try_clone()?
            } else {
                Vector::zeros(&backend, len)?
            };
            step(item, &mut t.buffer)?;
            let t = t.to_vec()?;
            for (sum, &slot) in sums.iter_mut().zip(slots) {
                *sum += t[slot].as_f64();
            }
        }
        let mut s = scalars.to_vec()?;
        for (&slot, sum) in slots.iter().zip(sums) {
            s[slot] = T::from_f64(sum);
        }
        return scalars.write(&s);
    };
    for (item, view) in items.into_iter().zip(&mut views) {
        if copy_in {
            view.copy_from(scalars)?;
        }
        step(item, &mut view.buffer)?;
    }
    drop(views);
    let ones = Vector::<B, T>::full(&backend, parts, T::ONE)?;
    let mut picked = Vector::<B, T>::zeros(&backend, parts)?;
    for &slot in slots {
        let index: Vec<u32> = (0..parts).map(|k| (k * stride + slot) as u32).collect();
        let index = backend.upload(&index)?;
        // SAFETY: buffers of this backend; picked and ones have equal lengths, slot <
        // len(scalars), which is one buffer (checked above).
        unsafe {
            backend.gather(&stage.buffer, &index, &mut picked.buffer)?;
            backend.dot_device(&picked.buffer, &ones.buffer, &mut scalars.buffer, slot)?;
        }
    }
    Ok(())
}

/// Slots of the device-resident scalars of CG ([`VectorOps::cg_update_device`]).
pub mod cg_scalars {
    /// `r · r` of the current residual.
    pub const RR: usize = 0;
    /// `p · A p` of the current direction.
    pub const PQ: usize = 1;
    /// `β` for the next direction.
    pub const BETA: usize = 2;
    /// Number of slots.
    pub const LEN: usize = 4;
    /// PCG: `r · z` of the current residual and preconditioned residual.
    pub const RZ: usize = 4;
    /// PCG: `r · z` of the new residual, before [`pcg_rotate_device`](super::pcg_rotate_device).
    pub const RZ_NEW: usize = 5;
    /// Number of slots of the preconditioned iteration.
    pub const PCG_LEN: usize = 6;
    /// Flexible PCG: `r · z_old` of the new residual and the previous preconditioned
    /// residual, before [`pcg_flexible_rotate_device`](super::pcg_flexible_rotate_device).
    pub const RZ_PREV: usize = 6;
    /// Number of slots of the flexible preconditioned iteration.
    pub const FLEXIBLE_LEN: usize = 7;
}

/// The fused CG update in one pass: `x += alpha p; r -= alpha q`, returning the new `r · r`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
pub fn cg_update<B: VectorOps, T: Scalar>(
    alpha: T,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    x: &mut Vector<B, T>,
    r: &mut Vector<B, T>,
) -> Result<T> {
    agree("cg_update", "p", x, p)?;
    agree("cg_update", "q", x, q)?;
    agree("cg_update", "r", x, r)?;
    let (backend, xs) = x.each_mut();
    let (_, rs) = r.each_mut();
    let parts = p.each().zip(q.each()).zip(xs).zip(rs);
    // SAFETY (each part): lengths, parts and devices checked above.
    sum_parts(parts, |(((p, q), x), r)| unsafe {
        backend.cg_update(alpha, p, q, x, r)
    })
}

/// `scalars[slot] = x · y`, left on the device (no read-back): the inner products of CG with
/// device-resident scalars.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths of `x` and
/// `y` differ; [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if `slot` is not
/// below `scalars.len()`.
pub fn dot_into<B: VectorOps, T: Scalar>(
    x: &Vector<B, T>,
    y: &Vector<B, T>,
    scalars: &mut Vector<B, T>,
    slot: usize,
) -> Result<()> {
    agree("dot_into", "y", x, y)?;
    check_slot("dot_into", scalars.len(), slot)?;
    check_device("dot_into", &x.backend, &scalars.backend)?;
    if x.parts() > 1 {
        let backend = &x.backend;
        let items = x.each().zip(y.each()).collect();
        // SAFETY (each part): equal lengths and parts, slot < len(t) = len(scalars).
        return per_part(scalars, items, false, &[slot], |(x, y), t| unsafe {
            backend.dot_device(x, y, t, slot)
        });
    }
    // SAFETY: x and y have equal lengths, slot < len(scalars), one device: checked above.
    unsafe {
        x.backend
            .dot_device(&x.buffer, &y.buffer, scalars.buffer_mut()?, slot)
    }
}

/// The CG update with device-resident scalars (see [`cg_scalars`]):
/// `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`; `s[BETA] = r·r / s[RR]`; `s[RR] = r·r`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the vector lengths
/// differ or `scalars` has fewer than [`cg_scalars::LEN`] entries.
pub fn cg_update_device<B: VectorOps, T: Scalar>(
    scalars: &mut Vector<B, T>,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    x: &mut Vector<B, T>,
    r: &mut Vector<B, T>,
) -> Result<()> {
    agree("cg_update_device", "p", x, p)?;
    agree("cg_update_device", "q", x, q)?;
    agree("cg_update_device", "r", x, r)?;
    check_scalars("cg_update_device", scalars.len())?;
    check_device("cg_update_device", &x.backend, &scalars.backend)?;
    if x.parts() > 1 {
        // Each part: α from its copy of the scalars (all the same); its r·r and
        // r·r / (r·r)_old add up over the parts.
        let (backend, xs) = x.each_mut();
        let (_, rs) = r.each_mut();
        let items = p.each().zip(q.each()).zip(xs).zip(rs).collect();
        let slots = [cg_scalars::RR, cg_scalars::BETA];
        // SAFETY (each part): equal lengths and parts, len(t) >= LEN, one device.
        return per_part(scalars, items, true, &slots, |(((p, q), x), r), t| unsafe {
            backend.cg_update_device(t, p, q, x, r)
        });
    }
    // SAFETY: equal lengths, len(scalars) >= cg_scalars::LEN, one device: checked above.
    unsafe {
        x.backend.cg_update_device(
            scalars.buffer_mut()?,
            &p.buffer,
            &q.buffer,
            &mut x.buffer,
            &mut r.buffer,
        )
    }
}

/// `p = r + s[BETA] p` with the device-resident β of [`cg_update_device`]; `r` may be of
/// another precision (rounded to `p`'s first: exactly from f32 to f64), as the `z` of a
/// preconditioner applied in f32 ([`pcg_flexible_low_device`]).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ or
/// `scalars` has fewer than [`cg_scalars::LEN`] entries.
pub fn xpay_device<B: VectorOps, L: Scalar, T: Scalar>(
    scalars: &Vector<B, T>,
    r: &Vector<B, L>,
    p: &mut Vector<B, T>,
) -> Result<()> {
    agree("xpay_device", "r", p, r)?;
    check_scalars("xpay_device", scalars.len())?;
    check_device("xpay_device", &p.backend, &scalars.backend)?;
    let s = scalars.buffer()?;
    let (backend, ps) = p.each_mut();
    for (r, p) in r.each().zip(ps) {
        // SAFETY: equal lengths and parts, len(scalars) >= cg_scalars::LEN, one device:
        // checked above.
        unsafe { backend.xpay_device(s, r, p)? };
    }
    Ok(())
}

/// The PCG step between the preconditioner and the new direction, on the device scalars
/// (see [`cg_scalars`]): `s[BETA] = s[RZ_NEW] / s[RZ]`; `s[RZ] = s[RZ_NEW]`;
/// `s[RR] = s[RZ_NEW]` (the numerator of the next `α` in [`cg_update_device`]).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if `scalars` has fewer than
/// [`cg_scalars::PCG_LEN`] entries.
pub fn pcg_rotate_device<B: VectorOps, T: Scalar>(scalars: &mut Vector<B, T>) -> Result<()> {
    if scalars.len() < cg_scalars::PCG_LEN {
        return Err(crate::error::Error::dims(
            "pcg_rotate_device",
            "scalars (at least cg_scalars::PCG_LEN)",
            cg_scalars::PCG_LEN,
            scalars.len(),
        ));
    }
    let backend = scalars.backend.clone();
    // SAFETY: len(scalars) >= PCG_LEN: checked above.
    unsafe { backend.pcg_rotate_device(scalars.buffer_mut()?, false) }
}

/// [`pcg_rotate_device`] with the flexible (Polak–Ribière) β of a preconditioner that is not
/// exactly symmetric or fixed (an f32 hierarchy inside an f64 solve):
/// `s[BETA] = (s[RZ_NEW] − s[RZ_PREV]) / s[RZ]`, with `s[RZ_PREV] = r · z_old` of the new
/// residual and the previous preconditioned residual; then `s[RZ] = s[RR] = s[RZ_NEW]`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if `scalars` has fewer than
/// [`cg_scalars::FLEXIBLE_LEN`] entries.
pub fn pcg_flexible_rotate_device<B: VectorOps, T: Scalar>(
    scalars: &mut Vector<B, T>,
) -> Result<()> {
    check_flexible_scalars("pcg_flexible_rotate_device", scalars.len())?;
    let backend = scalars.backend.clone();
    // SAFETY: len(scalars) >= FLEXIBLE_LEN: checked above.
    unsafe { backend.pcg_rotate_device(scalars.buffer_mut()?, true) }
}

/// Flexible PCG's step after a preconditioner applied in precision `L` (an f32 hierarchy
/// inside an f64 solve), on the device scalars (see [`cg_scalars`]): `s[RZ_PREV] = r · z`
/// of the `z` about to be overwritten, `z = round(low)`, `s[RZ_NEW] = r · z`, then
/// [`pcg_flexible_rotate_device`]. One pass over the vectors on a device (the dot products,
/// the conversion and the rotation would take four), with the sums those four steps give.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the vector lengths
/// differ or `scalars` has fewer than [`cg_scalars::FLEXIBLE_LEN`] entries.
pub fn pcg_flexible_convert_device<B: VectorOps, L: Scalar, T: Scalar>(
    scalars: &mut Vector<B, T>,
    low: &Vector<B, L>,
    r: &Vector<B, T>,
    z: &mut Vector<B, T>,
) -> Result<()> {
    const OP: &str = "pcg_flexible_convert_device";
    agree(OP, "r", z, r)?;
    agree(OP, "low", z, low)?;
    check_flexible_scalars(OP, scalars.len())?;
    check_device(OP, &z.backend, &scalars.backend)?;
    if z.parts() > 1 {
        // Split vectors: the four steps, each adding up over the parts.
        dot_into(r, z, scalars, cg_scalars::RZ_PREV)?;
        z.convert_from(low)?;
        dot_into(r, z, scalars, cg_scalars::RZ_NEW)?;
        return pcg_flexible_rotate_device(scalars);
    }
    let backend = z.backend.clone();
    // SAFETY: equal lengths, len(scalars) >= FLEXIBLE_LEN, one device: checked above.
    unsafe {
        backend.pcg_flexible_convert_device(
            scalars.buffer_mut()?,
            low.buffer()?,
            r.buffer()?,
            z.buffer_mut()?,
        )
    }
}

/// Flexible PCG's step where the preconditioner keeps its output `z` in another precision
/// (`low`, the new one; `old`, the one before), on the device scalars (see [`cg_scalars`]):
/// `s[RZ_PREV] = r · old`, `s[RZ_NEW] = r · low` (each rounded to `r`'s precision first),
/// then the flexible rotation of [`pcg_flexible_rotate_device`]. One pass that writes only
/// the scalars: [`pcg_flexible_convert_device`] with `z = round(old)`, the same sums, without
/// storing `z` in `r`'s precision; the direction then takes `low` itself
/// ([`xpay_device`]).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the vector lengths
/// differ or `scalars` has fewer than [`cg_scalars::FLEXIBLE_LEN`] entries.
pub fn pcg_flexible_low_device<B: VectorOps, L: Scalar, T: Scalar>(
    scalars: &mut Vector<B, T>,
    low: &Vector<B, L>,
    old: &Vector<B, L>,
    r: &Vector<B, T>,
) -> Result<()> {
    const OP: &str = "pcg_flexible_low_device";
    agree(OP, "low", r, low)?;
    agree(OP, "old", r, old)?;
    check_flexible_scalars(OP, scalars.len())?;
    check_device(OP, &r.backend, &scalars.backend)?;
    if r.parts() > 1 {
        // Split vectors: each `z` rounded into a vector of r's precision, then the steps,
        // each adding up over the parts.
        let mut z = Vector::<B, T>::zeros(&r.backend, r.len())?;
        z.convert_from(old)?;
        dot_into(r, &z, scalars, cg_scalars::RZ_PREV)?;
        z.convert_from(low)?;
        dot_into(r, &z, scalars, cg_scalars::RZ_NEW)?;
        return pcg_flexible_rotate_device(scalars);
    }
    let backend = r.backend.clone();
    // SAFETY: equal lengths, len(scalars) >= FLEXIBLE_LEN, one device: checked above.
    unsafe {
        backend.pcg_flexible_low_device(
            scalars.buffer_mut()?,
            low.buffer()?,
            old.buffer()?,
            r.buffer()?,
        )
    }
}

/// PCG with the Jacobi preconditioner `z = d ∘ r`, update and inner products in one pass on
/// the device scalars (see [`cg_scalars`]): `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`;
/// `rz = r · (d ∘ r)`; `s[BETA] = rz / s[RZ]`; `s[RZ] = s[RR] = rz`; `s[RZ_NEW] = r · r`.
/// Followed by [`jacobi_xpay_device`], it is one PCG-Jacobi iteration after the SpMV, with
/// the arithmetic of [`cg_update_device`], `z = d ∘ r`, [`dot_into`] and
/// [`pcg_rotate_device`] (identical results on the CPU backend).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the vector lengths
/// differ or `scalars` has fewer than [`cg_scalars::PCG_LEN`] entries.
pub fn pcg_jacobi_update_device<B: VectorOps, T: Scalar>(
    scalars: &mut Vector<B, T>,
    d: &Vector<B, T>,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    x: &mut Vector<B, T>,
    r: &mut Vector<B, T>,
) -> Result<()> {
    agree("pcg_jacobi_update_device", "x", r, x)?;
    pcg_jacobi_update(scalars, d, p, q, Some(x), r)
}

/// [`pcg_jacobi_update_device`] without the solution: the residual, its sums and the
/// scalars only (the Lanczos estimate of the AMG setup, which needs PCG's coefficients and
/// not its iterate).
pub(crate) fn pcg_jacobi_residual_device<B: VectorOps, T: Scalar>(
    scalars: &mut Vector<B, T>,
    d: &Vector<B, T>,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    r: &mut Vector<B, T>,
) -> Result<()> {
    pcg_jacobi_update(scalars, d, p, q, None, r)
}

fn pcg_jacobi_update<B: VectorOps, T: Scalar>(
    scalars: &mut Vector<B, T>,
    d: &Vector<B, T>,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    mut x: Option<&mut Vector<B, T>>,
    r: &mut Vector<B, T>,
) -> Result<()> {
    const OP: &str = "pcg_jacobi_update_device";
    agree(OP, "d", r, d)?;
    agree(OP, "p", r, p)?;
    agree(OP, "q", r, q)?;
    if scalars.len() < cg_scalars::PCG_LEN {
        let what = "scalars (at least cg_scalars::PCG_LEN)";
        return Err(crate::error::Error::dims(
            OP,
            what,
            cg_scalars::PCG_LEN,
            scalars.len(),
        ));
    }
    check_device(OP, &r.backend, &scalars.backend)?;
    if r.parts() > 1 {
        // Each part updates a copy of the scalars (the same α); their r·z (also in RR),
        // r·r and r·z / (r·z)_old add up over the parts.
        use cg_scalars::{BETA, RR, RZ, RZ_NEW};
        let (backend, rs) = r.each_mut();
        let rs: Vec<_> = rs.collect();
        let xs: Vec<Option<&mut B::Buffer<T>>> = match x.as_deref_mut() {
            Some(x) => x.each_mut().1.map(Some).collect(),
            None => rs.iter().map(|_| None).collect(),
        };
        let items = d
            .each()
            .zip(p.each())
            .zip(q.each())
            .zip(xs)
            .zip(rs)
            .collect();
        // SAFETY (each part): equal lengths and parts, len(t) >= PCG_LEN, one device.
        return per_part(scalars, items, true, &[RR, BETA, RZ, RZ_NEW], |item, t| {
            let ((((d, p), q), x), r) = item;
            unsafe { backend.pcg_jacobi_update_device(t, d, p, q, x, r) }
        });
    }
    // SAFETY: equal lengths, len(scalars) >= PCG_LEN, one device: checked above.
    unsafe {
        r.backend.pcg_jacobi_update_device(
            scalars.buffer_mut()?,
            &d.buffer,
            &p.buffer,
            &q.buffer,
            x.map(|x| &mut x.buffer),
            &mut r.buffer,
        )
    }
}

/// `p = d ∘ r + s[BETA] p`, the direction of PCG-Jacobi after [`pcg_jacobi_update_device`].
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ or
/// `scalars` has fewer than [`cg_scalars::LEN`] entries.
pub fn jacobi_xpay_device<B: VectorOps, T: Scalar>(
    scalars: &Vector<B, T>,
    d: &Vector<B, T>,
    r: &Vector<B, T>,
    p: &mut Vector<B, T>,
) -> Result<()> {
    agree("jacobi_xpay_device", "d", p, d)?;
    agree("jacobi_xpay_device", "r", p, r)?;
    check_scalars("jacobi_xpay_device", scalars.len())?;
    check_device("jacobi_xpay_device", &p.backend, &scalars.backend)?;
    let s = scalars.buffer()?;
    let (backend, ps) = p.each_mut();
    for ((d, r), p) in d.each().zip(r.each()).zip(ps) {
        // SAFETY: equal lengths and parts, len(scalars) >= cg_scalars::LEN, one device:
        // checked above.
        unsafe { backend.jacobi_xpay_device(s, d, r, p)? };
    }
    Ok(())
}

/// Checks that `slot` indexes a vector of `len` device scalars.
pub(crate) fn check_slot(op: &'static str, len: usize, slot: usize) -> Result<()> {
    if slot < len {
        Ok(())
    } else {
        Err(crate::error::Error::InvalidArgument {
            op,
            name: "slot",
            reason: format!("slot {slot} is not below the {len} device scalars"),
        })
    }
}

/// Checks that the device scalars hold the flexible step's slots.
pub(crate) fn check_flexible_scalars(op: &'static str, len: usize) -> Result<()> {
    if len < cg_scalars::FLEXIBLE_LEN {
        return Err(crate::error::Error::dims(
            op,
            "scalars (at least cg_scalars::FLEXIBLE_LEN)",
            cg_scalars::FLEXIBLE_LEN,
            len,
        ));
    }
    Ok(())
}

fn check_scalars(op: &'static str, len: usize) -> Result<()> {
    if len < cg_scalars::LEN {
        return Err(crate::error::Error::dims(
            op,
            "scalars (at least cg_scalars::LEN)",
            cg_scalars::LEN,
            len,
        ));
    }
    Ok(())
}

/// The fused diagonal preconditioner step in one pass: `z = d ∘ r`, returning `r · z`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
pub fn pointwise_mul_dot<B: VectorOps, T: Scalar>(
    d: &Vector<B, T>,
    r: &Vector<B, T>,
    z: &mut Vector<B, T>,
) -> Result<T> {
    agree("pointwise_mul_dot", "d", z, d)?;
    agree("pointwise_mul_dot", "r", z, r)?;
    let (backend, zs) = z.each_mut();
    // SAFETY (each part): lengths, parts and devices checked above.
    sum_parts(d.each().zip(r.each()).zip(zs), |((d, r), z)| unsafe {
        backend.pointwise_mul_dot(d, r, z)
    })
}

/// The preconditioned residual `u = M r` of a Chronopoulos–Gear step ([`cgcg_update`]).
pub enum CgCgU<'a, B: VectorOps, T: Scalar> {
    /// No preconditioner: `u` is `r` itself.
    Identity,
    /// Jacobi, `M = diag(d)`: the step reads `u` for the direction, then writes the new
    /// `u = d ∘ r` and sums `r · u` in the same pass.
    Jacobi {
        /// The inverse diagonal.
        d: &'a Vector<B, T>,
        /// The preconditioned residual, updated in place.
        u: &'a mut Vector<B, T>,
    },
    /// Another preconditioner: the step reads `u` for the direction and leaves it; the caller
    /// applies `M` to the new `r` and takes `r · u` itself (the step's `r · u` slot receives
    /// `r · r`).
    Other(&'a mut Vector<B, T>),
}

/// One step of the single-reduction conjugate gradients of Chronopoulos and Gear (the
/// distributed solvers' device iteration) after its global sums, in one pass over the
/// vectors: `p = u + beta p`; `s = w + beta s`; `x += alpha p`; `r −= alpha s` (with `u` as
/// [`CgCgU`] says), then, for Jacobi, `u = d ∘ r`. The new `r · r` goes to
/// `scalars[slots[0]]` and `r · u` to `scalars[slots[1]]`, left on the device (`r · r` again
/// unless `u` is [`CgCgU::Identity`] or [`CgCgU::Jacobi`]). With `beta = 0` and `p`, `s`
/// zero, it is the first step (`p = u`, `s = w`).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the vector lengths
/// differ; [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if a slot is not
/// below `scalars.len()`, the slots are equal, or the vectors are split differently.
#[allow(clippy::too_many_arguments)]
pub fn cgcg_update<B: VectorOps, T: Scalar>(
    alpha: T,
    beta: T,
    u: CgCgU<'_, B, T>,
    w: &Vector<B, T>,
    p: &mut Vector<B, T>,
    s: &mut Vector<B, T>,
    x: &mut Vector<B, T>,
    r: &mut Vector<B, T>,
    scalars: &mut Vector<B, T>,
    slots: [usize; 2],
) -> Result<()> {
    const OP: &str = "cgcg_update";
    agree(OP, "w", x, w)?;
    agree(OP, "p", x, p)?;
    agree(OP, "s", x, s)?;
    agree(OP, "r", x, r)?;
    let (d, u) = match u {
        CgCgU::Identity => (None, None),
        CgCgU::Jacobi { d, u } => (Some(d), Some(u)),
        CgCgU::Other(u) => (None, Some(u)),
    };
    if let Some(d) = d {
        agree(OP, "d", x, d)?;
    }
    if let Some(u) = &u {
        agree(OP, "u", x, u)?;
    }
    for slot in slots {
        check_slot(OP, scalars.len(), slot)?;
    }
    if slots[0] == slots[1] {
        return Err(crate::error::Error::InvalidArgument {
            op: OP,
            name: "slots",
            reason: format!("r·r and r·u need two slots, not slot {} twice", slots[0]),
        });
    }
    check_device(OP, &x.backend, &scalars.backend)?;
    let parts = x.parts();
    let (backend, xs) = x.each_mut();
    let (_, rs) = r.each_mut();
    let (_, ps) = p.each_mut();
    let (_, ss) = s.each_mut();
    let us: Vec<Option<&mut B::Buffer<T>>> = match u {
        Some(u) => u.each_mut().1.map(Some).collect(),
        None => (0..parts).map(|_| None).collect(),
    };
    let ds: Vec<Option<&B::Buffer<T>>> = match d {
        Some(d) => d.each().map(Some).collect(),
        None => (0..parts).map(|_| None).collect(),
    };
    let items: Vec<_> = ds
        .into_iter()
        .zip(us)
        .zip(w.each())
        .zip(ps)
        .zip(ss)
        .zip(xs)
        .zip(rs)
        .collect();
    let step = |((((((d, u), w), p), s), x), r): (_, &mut B::Buffer<T>), t: &mut B::Buffer<T>| {
        // SAFETY: equal lengths and parts (checked above), `d` only with `u`, two distinct
        // slots below len(t) = len(scalars), one device.
        unsafe { backend.cgcg_update(alpha, beta, d, u, w, p, s, x, r, t, slots) }
    };
    if parts > 1 {
        // Each part writes its sums into its copy of the scalars; they add up over the parts.
        return per_part(scalars, items, true, &slots, step);
    }
    let item = items
        .into_iter()
        .next()
        .expect("a vector has one part at least");
    // SAFETY: the buffer is only written through.
    step(item, unsafe { scalars.buffer_mut()? })
}
