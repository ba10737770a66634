//! Conjugate gradients, plain and preconditioned.
//!
//! Per iteration (unpreconditioned): `q = A p` with `pq = p·q` (fused for SELL);
//! `α = rr / pq`; the fused `x += αp, r −= αq, rr = r·r`; `β = rr / rr_old`; `p = r + βp`.
//! CG and PCG keep α, β and the norms on the device (no host round trip but the periodic
//! residual check); flexible PCG brings them to the host. The arithmetic order on the
//! CPU backend is documented in [`crate::vector`], so a textbook implementation with the
//! same summation order reproduces the iteration counts exactly.

use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::{
    check_preconditioner, check_system, drive, LinearOperator, Preconditioner, SolveReport,
    SolverParams, StopReason, Tracker,
};
use crate::vector::{
    cg_scalars, cg_update, cg_update_device, dot_into, jacobi_xpay_device,
    pcg_jacobi_update_device, pcg_rotate_device, xpay_device, Vector,
};

/// Conjugate gradients for a symmetric positive definite `A`, starting from `x`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for inconsistent sizes;
/// device errors. Numerical trouble is reported in [`SolveReport::reason`].
pub fn cg<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    check_system("CG", a, b, x)?;
    drive(params, "CG", a, b, x, &mut |t, x, r, k0| {
        device_scalar_cg(t, a, None, x, r, k0, params)
    })
}

/// CG and PCG with α, β and the inner products kept on the device: per iteration the fused
/// `q = A p, p·q`, the fused update (`α` from the device scalars, `r·r` for the stopping test);
/// with a preconditioner `z = M r`, `r·z` and the scalar step `β = r·z / (r·z)_old`
/// ([`pcg_rotate_device`]), without one `β = r·r / (r·r)_old` from the update; `p = z + βp`
/// (`z = r` without one); one read of the scalars every `params.check_every` iterations for
/// the stopping tests, overlapped with the next direction and product (which a stop
/// discards: one product more than the iterations). The arithmetic is the same as the
/// host-scalar form (identical iteration counts on the CPU); a curvature `pᵀAp ≤ 0` is
/// detected when the scalars are read, after the update that used it. A Jacobi preconditioner
/// ([`Preconditioner::inverse_diagonal`]) is fused into the update and the direction
/// ([`pcg_jacobi_update_device`], [`jacobi_xpay_device`]): the same arithmetic, z not stored.
fn device_scalar_cg<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    x: &mut Vector<B, S>,
    mut r: Vector<B, S>,
    k0: usize,
    params: &SolverParams<'_>,
) -> Result<(usize, StopReason)> {
    use cg_scalars::{PCG_LEN, PQ, RR, RZ_NEW};
    let backend = r.backend().clone();
    let mut scalars = Vector::<B, S>::zeros(&backend, PCG_LEN)?;
    dot_into(&r, &r, &mut scalars, RR)?;
    let rr0 = scalars.to_vec()?[RR];
    if let Some(reason) = t.record(k0, rr0.as_f64().sqrt()) {
        return Ok((k0, reason));
    }
    // z = M r and s[RR] = r·z (the numerator of α); without M, s[RR] = r·r already.
    let precondition = |r: &Vector<B, S>, z: &mut Vector<B, S>, s: &mut Vector<B, S>| match m {
        Some(m) => {
            m.precondition(r, z)?;
            dot_into(r, z, s, RZ_NEW)?;
            pcg_rotate_device(s)
        }
        None => Ok(()),
    };
    let mut z = Vector::zeros(&backend, if m.is_some() { r.len() } else { 0 })?;
    precondition(&r, &mut z, &mut scalars)?;
    let mut p = if m.is_some() {
        z.try_clone()?
    } else {
        r.try_clone()?
    };
    let mut q = Vector::zeros(&backend, r.len())?;
    let jacobi = m.and_then(|m| m.inverse_diagonal());
    if jacobi.is_some() {
        z = Vector::zeros(&backend, 0)?;
    }
    // Where the update leaves r·r for the stopping test.
    let residual_slot = if jacobi.is_some() { RZ_NEW } else { RR };
    let check_every = params.check_every.max(1);
    let mut k = k0;
    a.apply_dot_device(&p, &mut q, &mut scalars, PQ)?;
    t.applications += 1;
    let reason = loop {
        k += 1;
        match jacobi {
            Some(d) => pcg_jacobi_update_device(&mut scalars, d, &p, &q, x, &mut r)?,
            None => cg_update_device(&mut scalars, &p, &q, x, &mut r)?,
        }
        if k >= params.stop.max_iter {
            let s = scalars.to_vec()?;
            break stop_test(t, k, &s, residual_slot).unwrap_or(StopReason::MaxIterations);
        }
        // The scalars are read behind the update, and the next direction and product are
        // queued before the wait, so the device works through the read. They leave x and r
        // alone: a stop returns the x it would return without them, and a stop the read
        // shows is reported even if that extra work failed.
        let read = if (k - k0).is_multiple_of(check_every) {
            Some(backend.download_later(scalars.buffer()?)?)
        } else {
            None
        };
        let advanced = (|| {
            match jacobi {
                Some(d) => jacobi_xpay_device(&scalars, d, &r, &mut p)?,
                None => {
                    precondition(&r, &mut z, &mut scalars)?;
                    xpay_device(&scalars, if m.is_some() { &z } else { &r }, &mut p)?;
                }
            }
            a.apply_dot_device(&p, &mut q, &mut scalars, PQ)
        })();
        if advanced.is_ok() {
            t.applications += 1;
        }
        if let Some(read) = read {
            if let Some(reason) = stop_test(t, k, &read.wait()?, residual_slot) {
                break reason;
            }
        }
        advanced?;
    };
    Ok((k, reason))
}

/// The stopping tests on the device scalars `s` read after iteration `k`: the curvature
/// `pᵀAp` (not finite, or not positive: stop) and the residual `√(r·r)` (in `s[rr]`) for the
/// tracker's tests.
fn stop_test<S: Scalar>(
    t: &mut Tracker<'_, '_>,
    k: usize,
    s: &[S],
    rr: usize,
) -> Option<StopReason> {
    use cg_scalars::PQ;
    let pq = s[PQ].as_f64();
    if !pq.is_finite() {
        return Some(StopReason::NonFinite { quantity: "pᵀAp" });
    }
    if pq <= 0.0 {
        return Some(StopReason::IndefiniteOperator { curvature: pq });
    }
    t.record(k, s[rr].as_f64().sqrt())
}

/// Preconditioned conjugate gradients (`M` symmetric positive definite; with
/// `params.flexible` the Polak–Ribière β tolerates a varying or slightly nonsymmetric `M`,
/// such as an inner solve or a preconditioner applied in lower precision). `None` is plain
/// CG with the scalars on the host.
///
/// # Errors
/// As [`cg`], plus a preconditioner of the wrong size.
pub fn pcg<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    let name = if m.is_some() { "PCG" } else { "CG" };
    check_system(name, a, b, x)?;
    check_preconditioner(name, a, m)?;
    drive(params, name, a, b, x, &mut |t, x, r, k0| match m {
        Some(m) if !params.flexible => device_scalar_cg(t, a, Some(m), x, r, k0, params),
        _ => conjugate_gradients(t, a, m, x, r, k0, params.flexible),
    })
}

/// [`pcg`] with the flexible β whatever `params.flexible` says (for variable preconditioners
/// such as an inner solve).
pub(crate) fn pcg_flexible<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    check_system("flexible PCG", a, b, x)?;
    check_preconditioner("flexible PCG", a, m)?;
    drive(params, "flexible PCG", a, b, x, &mut |t, x, r, k0| {
        conjugate_gradients(t, a, m, x, r, k0, true)
    })
}

/// The PCG iteration from the residual `r` (`r = b − A x`), `k0` iterations done.
pub(crate) fn conjugate_gradients<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    x: &mut Vector<B, S>,
    mut r: Vector<B, S>,
    k0: usize,
    flexible: bool,
) -> Result<(usize, StopReason)> {
    let backend = r.backend().clone();
    let n = r.len();
    let mut rr = r.dot(&r)?;
    let mut z = Vector::zeros(&backend, if m.is_some() { n } else { 0 })?;
    let mut rz = match m {
        Some(m) => m.precondition_dot(&r, &mut z)?,
        None => rr,
    };
    let mut p = if m.is_some() {
        z.try_clone()?
    } else {
        r.try_clone()?
    };
    let mut q = Vector::zeros(&backend, n)?;
    if let Some(reason) = t.record(k0, rr.as_f64().sqrt()) {
        return Ok((k0, reason));
    }
    let mut k = k0;
    let reason = loop {
        k += 1;
        let pq = a.apply_dot(&p, &mut q)?;
        t.applications += 1;
        let pqf = pq.as_f64();
        if !pqf.is_finite() {
            break StopReason::NonFinite { quantity: "pᵀAp" };
        }
        if pqf <= 0.0 {
            break StopReason::IndefiniteOperator { curvature: pqf };
        }
        let alpha = rz / pq;
        rr = cg_update(alpha, &p, &q, x, &mut r)?;
        if let Some(reason) = t.record(k, rr.as_f64().sqrt()) {
            break reason;
        }
        let beta = match m {
            Some(m) => {
                // Flexible (Polak–Ribière): β = r_new·(z_new − z_old) / rz_old.
                let r_zold = if flexible { r.dot(&z)? } else { S::ZERO };
                let rz_new = m.precondition_dot(&r, &mut z)?;
                let beta = (rz_new - r_zold) / rz;
                rz = rz_new;
                beta
            }
            None => {
                let beta = rr / rz;
                rz = rr;
                beta
            }
        };
        if !beta.as_f64().is_finite() {
            break StopReason::NonFinite { quantity: "β" };
        }
        match m {
            Some(_) => p.axpby(S::ONE, &z, beta)?,
            None => p.axpby(S::ONE, &r, beta)?,
        }
    };
    Ok((k, reason))
}
