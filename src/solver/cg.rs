//! Conjugate gradients, plain and preconditioned.
//!
//! Per iteration (unpreconditioned): `q = A p` with `pq = p·q` (fused for SELL);
//! `α = rr / pq`; the fused `x += αp, r −= αq, rr = r·r`; `β = rr / rr_old`; `p = r + βp`.
//! Plain CG keeps α, β and the norms on the device (no host round trip but the periodic
//! residual check); PCG brings them to the host. The arithmetic order on the
//! CPU backend is documented in [`crate::vector`], so a textbook implementation with the
//! same summation order reproduces the iteration counts exactly.

use crate::backend::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::{begin, Begin};
use crate::solver::{
    check_system, LinearOperator, Preconditioner, SolveReport, SolverParams, StopReason,
};
use crate::vector::{cg_update, Vector};

/// Conjugate gradients for a symmetric positive definite `A`, starting from `x`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) for inconsistent sizes;
/// device errors. Numerical trouble is reported in [`SolveReport::reason`].
pub fn cg<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    check_system("CG", a, b, x)?;
    device_scalar_cg(a, b, x, params)
}

/// CG with α, β and the norms kept on the device: per iteration the fused `q = A p, p·q`,
/// the fused update (α from the device scalars; `r·r` and β back into them) and `p = r + βp`,
/// and one read of the scalars every `params.check_every` iterations for the stopping tests.
/// The arithmetic is the same as the host-scalar form (identical iteration counts on the
/// CPU); a curvature `pᵀAp ≤ 0` is detected when the scalars are read, after the update
/// that used it.
fn device_scalar_cg<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    use crate::vector::cg_scalars::{LEN, PQ, RR};
    let backend = b.backend().clone();
    let n = b.len();
    let (mut t, mut r) = match begin(params, "CG", a, b, x)? {
        Begin::Done(report) => return Ok(report),
        Begin::Iterate(t, r) => (t, r),
    };
    let mut scalars = Vector::<B, S>::zeros(&backend, LEN)?;
    backend.dot_device(r.buffer(), r.buffer(), scalars.buffer_mut(), RR)?;
    let rr0 = scalars.to_vec()?[RR];
    if let Some(reason) = t.record(0, rr0.as_f64().sqrt()) {
        return t.finish(a, b, x, 0, reason);
    }
    let mut p = r.try_clone()?;
    let mut q = Vector::zeros(&backend, n)?;
    let check_every = params.check_every.max(1);
    let mut k = 0;
    let reason = loop {
        k += 1;
        a.apply_dot_device(&p, &mut q, &mut scalars, PQ)?;
        t.applications += 1;
        backend.cg_update_device(
            scalars.buffer_mut(),
            p.buffer(),
            q.buffer(),
            x.buffer_mut(),
            r.buffer_mut(),
        )?;
        let check = k % check_every == 0 || k >= params.max_iter;
        if check {
            let s = scalars.to_vec()?;
            let pq = s[PQ].as_f64();
            if !pq.is_finite() {
                break StopReason::NonFinite { quantity: "pᵀAp" };
            }
            if pq <= 0.0 {
                break StopReason::IndefiniteOperator { curvature: pq };
            }
            if let Some(reason) = t.record(k, s[RR].as_f64().sqrt()) {
                break reason;
            }
        }
        backend.xpay_device(scalars.buffer(), r.buffer(), p.buffer_mut())?;
    };
    t.finish(a, b, x, k, reason)
}

/// Preconditioned conjugate gradients (`M` symmetric positive definite; with
/// `params.flexible` the Polak–Ribière β tolerates a varying or slightly nonsymmetric `M`).
///
/// # Errors
/// As [`cg`], plus a preconditioner of the wrong size.
pub fn pcg<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: &dyn Preconditioner<B, S>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    crate::error::check_len("pcg", "preconditioner size", a.nrows(), m.size())?;
    conjugate_gradients(a, Some(m), b, x, params, "PCG")
}

fn conjugate_gradients<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
    name: &'static str,
) -> Result<SolveReport> {
    check_system(name, a, b, x)?;
    let backend = b.backend().clone();
    let n = b.len();
    let (mut t, mut r) = match begin(params, name, a, b, x)? {
        Begin::Done(report) => return Ok(report),
        Begin::Iterate(t, r) => (t, r),
    };
    let mut rr = r.dot(&r)?;
    let mut z = match m {
        Some(_) => Vector::zeros(&backend, n)?,
        None => Vector::zeros(&backend, 0)?,
    };
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
    if let Some(reason) = t.record(0, rr.as_f64().sqrt()) {
        return t.finish(a, b, x, 0, reason);
    }
    let mut k = 0;
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
                let r_zold = if params.flexible { r.dot(&z)? } else { S::ZERO };
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
    t.finish(a, b, x, k, reason)
}
