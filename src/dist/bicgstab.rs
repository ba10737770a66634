//! BiCGStab on distributed operators.

use super::matrix::DistOperator;
use super::solver::{check, drive, DistPreconditioner};
use super::vector::DistVector;
use crate::backend::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::{SolveReport, SolverParams, StopReason, Tracker};

/// BiCGStab on a distributed operator, right-preconditioned, as
/// [`solver::bicgstab`](crate::solver::bicgstab); `t·t` and `t·s` are one global sum.
///
/// # Errors
/// As [`cg`](super::cg).
pub fn bicgstab<B: Backend, S: Scalar>(
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    b: &DistVector<B, S>,
    x: &mut DistVector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    check("BiCGStab", a, b, x)?;
    drive(params, "BiCGStab", a, b, x, &mut |t, x, r, k0| {
        bicgstab_iterate(t, a, m, x, r, k0)
    })
}

fn bicgstab_iterate<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    x: &mut DistVector<B, S>,
    mut r: DistVector<B, S>,
    k0: usize,
) -> Result<(usize, StopReason)> {
    let comm = a.layout().comm().clone();
    let backend = r.owned().backend().clone();
    let layout = r.layout().clone();
    let r_hat = r.try_clone()?;
    if let Some(reason) = t.record(k0, r.nrm2()?.as_f64()) {
        return Ok((k0, reason));
    }
    let (mut rho, mut alpha, mut omega) = (S::ONE, S::ONE, S::ONE);
    let zeros = || DistVector::<B, S>::zeros(&backend, &layout);
    let (mut p, mut v, mut p_hat, mut s_hat, mut t_vec) =
        (zeros()?, zeros()?, zeros()?, zeros()?, zeros()?);
    let precondition = |from: &DistVector<B, S>, to: &mut DistVector<B, S>| match m {
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
        p.axpby(-(beta * omega), &v, beta)?;
        p.axpy(S::ONE, &r)?;
        precondition(&p, &mut p_hat)?;
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
        r.axpy(-alpha, &v)?;
        let s_norm = r.nrm2()?.as_f64();
        if t.converged(s_norm) {
            x.axpy(alpha, &p_hat)?;
            t.record(k, s_norm);
            break StopReason::Converged;
        }
        precondition(&r, &mut s_hat)?;
        a.apply(&s_hat, &mut t_vec)?;
        t.applications += 1;
        let local = [
            t_vec.owned().dot(t_vec.owned())?.as_f64(),
            t_vec.owned().dot(r.owned())?.as_f64(),
        ];
        let [tt, ts] = <[f64; 2]>::try_from(comm.sum(&local)).unwrap_or([0.0; 2]);
        if tt == 0.0 {
            break StopReason::Breakdown {
                quantity: "t·t",
                value: 0.0,
            };
        }
        omega = S::from_f64(ts) / S::from_f64(tt);
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
