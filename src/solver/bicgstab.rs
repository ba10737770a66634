//! BiCGStab (van der Vorst), right-preconditioned, for nonsymmetric systems.

use crate::backend::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::{
    check_preconditioner, check_system, drive, LinearOperator, Preconditioner, SolveReport,
    SolverParams, StopReason, Tracker,
};
use crate::vector::Vector;

/// BiCGStab with optional right preconditioning, starting from `x`. Two operator and two
/// preconditioner applications per iteration; the residual is checked at the half step too.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) for inconsistent sizes;
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
    drive(params, "BiCGStab", a, b, x, &mut |t, x, r, k0| {
        iterate(t, a, m, x, r, k0)
    })
}

fn iterate<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    x: &mut Vector<B, S>,
    mut r: Vector<B, S>,
    k0: usize,
) -> Result<(usize, StopReason)> {
    let backend = r.backend().clone();
    let n = r.len();
    let r_hat = r.try_clone()?;
    if let Some(reason) = t.record(k0, r.nrm2()?.as_f64()) {
        return Ok((k0, reason));
    }
    let (mut rho, mut alpha, mut omega) = (S::ONE, S::ONE, S::ONE);
    let mut p = Vector::zeros(&backend, n)?;
    let mut v = Vector::zeros(&backend, n)?;
    let mut p_hat = Vector::zeros(&backend, n)?;
    let mut s_hat = Vector::zeros(&backend, n)?;
    let mut t_vec = Vector::zeros(&backend, n)?;
    let precondition = |m: Option<&dyn Preconditioner<B, S>>,
                        from: &Vector<B, S>,
                        to: &mut Vector<B, S>| match m {
        Some(m) => m.precondition(from, to),
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
        precondition(m, &p, &mut p_hat)?;
        a.apply(&p_hat, &mut v)?;
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
        let s_norm = r.nrm2()?.as_f64();
        if t.converged(s_norm) {
            x.axpy(alpha, &p_hat)?;
            t.record(k, s_norm);
            break StopReason::Converged;
        }
        precondition(m, &r, &mut s_hat)?;
        a.apply(&s_hat, &mut t_vec)?;
        t.applications += 1;
        let tt = t_vec.dot(&t_vec)?;
        if tt.as_f64() == 0.0 {
            break StopReason::Breakdown {
                quantity: "t·t",
                value: 0.0,
            };
        }
        omega = t_vec.dot(&r)? / tt;
        x.axpy(alpha, &p_hat)?;
        x.axpy(omega, &s_hat)?;
        r.axpy(-omega, &t_vec)?;
        if let Some(reason) = t.record(k, r.nrm2()?.as_f64()) {
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
