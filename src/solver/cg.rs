//! Conjugate gradients, plain and preconditioned.
//!
//! Per iteration (unpreconditioned): `q = A p`; `pq = p·q`; `α = rr / pq`; the fused
//! `x += αp, r −= αq, rr = r·r`; `β = rr / rr_old`; `p = r + βp`. The arithmetic order on the
//! CPU backend is documented in [`crate::vector`], so a textbook implementation with the
//! same summation order reproduces the iteration counts exactly.

use crate::backend::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::{
    check_system, LinearOperator, Preconditioner, SolveReport, SolverParams, StopReason, Tracker,
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
    conjugate_gradients(a, None, b, x, params, "CG")
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
    let bnorm = b.nrm2()?.as_f64();
    let mut t = Tracker::new(params, name, bnorm);
    if !bnorm.is_finite() {
        return t.finish(a, b, x, 0, StopReason::NonFinite { quantity: "b" });
    }
    if bnorm == 0.0 {
        x.fill(S::ZERO)?;
        t.record(0, 0.0);
        return t.finish(a, b, x, 0, StopReason::Converged);
    }
    // r = b - A x
    let mut r = b.try_clone()?;
    a.apply_add(-S::ONE, x, S::ONE, &mut r)?;
    t.applications += 1;
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
