//! BiCGStab (van der Vorst), right-preconditioned, for nonsymmetric systems.

use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::params::SolverParams;
use crate::solver::report::{SolveReport, StopReason};
use crate::solver::space::{Apply, KrylovVector};
use crate::solver::tracker::Tracker;
use crate::solver::{check_preconditioner, check_system, drive, LinearOperator, Preconditioner};
use crate::vector::Vector;

/// BiCGStab with optional right preconditioning, starting from `x`. Two operator and two
/// preconditioner applications per iteration; the residual is checked at the half step too.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for inconsistent sizes;
/// device errors. Breakdowns (`ρ = 0`, `r̂·v = 0`, `ω = 0`) are reported in the report.
pub fn bicgstab<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    check_system("BiCGStab", a, b, x)?;
    check_preconditioner("BiCGStab", a, m)?;
    let apply = |x: &Vector<B, S>, y: &mut Vector<B, S>| a.apply(x, y);
    let precondition =
        m.map(|m| move |r: &Vector<B, S>, z: &mut Vector<B, S>| m.precondition(r, z));
    let m_apply = precondition.as_ref().map(|f| f as &Apply<'_, _>);
    drive(params, "BiCGStab", a, b, x, &mut |t, x, r, k0| {
        iterate(t, &apply, m_apply, x, r, k0)
    })
}

/// The BiCGStab iteration from the residual `r` (`r = b − A x`), `k0` iterations done, on
/// any [`KrylovVector`] (single-process or distributed): `apply` is `y = A x`, `precondition`
/// `z = M⁻¹ r` (`None`: `z = r`).
pub(crate) fn iterate<S: Scalar, V: KrylovVector<S>>(
    t: &mut Tracker<'_, '_>,
    apply: &Apply<'_, V>,
    precondition: Option<&Apply<'_, V>>,
    x: &mut V,
    mut r: V,
    k0: usize,
) -> Result<(usize, StopReason)> {
    let r_hat = r.duplicate()?;
    if let Some(reason) = t.record(k0, r.norm()?) {
        return Ok((k0, reason));
    }
    let (mut rho, mut alpha, mut omega) = (S::ONE, S::ONE, S::ONE);
    let mut p = r.zeros_like()?;
    let mut v = r.zeros_like()?;
    let mut p_hat = r.zeros_like()?;
    let mut s_hat = r.zeros_like()?;
    let mut t_vec = r.zeros_like()?;
    let precondition = |from: &V, to: &mut V| match precondition {
        Some(m) => m(from, to),
        None => to.copy_from(from),
    };
    let mut k = k0;
    let reason = loop {
        k += 1;
        let rho_new = r_hat.dot(&r)?;
        if rho_new.as_f64() == 0.0 || !rho_new.as_f64().is_finite() {
            break StopReason::Breakdown {
                quantity: "ρ = r̂·r",
                value: rho_new.as_f64(),
            };
        }
        let beta = (rho_new / rho) * (alpha / omega);
        rho = rho_new;
        // p = r + β (p − ω v)
        p.axpby(-(beta * omega), &v, beta)?;
        p.axpy(S::ONE, &r)?;
        precondition(&p, &mut p_hat)?;
        apply(&p_hat, &mut v)?;
        t.applications += 1;
        let rv = r_hat.dot(&v)?;
        if rv.as_f64() == 0.0 || !rv.as_f64().is_finite() {
            break StopReason::Breakdown {
                quantity: "r̂·v",
                value: rv.as_f64(),
            };
        }
        alpha = rho / rv;
        // s = r − α v (in r)
        r.axpy(-alpha, &v)?;
        let s_norm = r.norm()?;
        if t.converged(s_norm) {
            x.axpy(alpha, &p_hat)?;
            t.record(k, s_norm);
            break StopReason::Converged;
        }
        precondition(&r, &mut s_hat)?;
        apply(&s_hat, &mut t_vec)?;
        t.applications += 1;
        let (tt, ts) = t_vec.dot2(&t_vec, &r)?;
        if tt.as_f64() == 0.0 {
            break StopReason::Breakdown {
                quantity: "t·t",
                value: 0.0,
            };
        }
        omega = ts / tt;
        x.axpy(alpha, &p_hat)?;
        x.axpy(omega, &s_hat)?;
        r.axpy(-omega, &t_vec)?;
        if let Some(reason) = t.record(k, r.norm()?) {
            break reason;
        }
        if omega.as_f64() == 0.0 {
            break StopReason::Breakdown {
                quantity: "ω",
                value: 0.0,
            };
        }
    };
    Ok((k, reason))
}
