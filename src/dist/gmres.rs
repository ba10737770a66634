//! Restarted GMRES and FGMRES on distributed operators, right-preconditioned, with classical
//! Gram–Schmidt applied twice: three global sums per iteration (the two projections and the
//! norm) whatever the Krylov dimension, where modified Gram–Schmidt needs one per basis
//! vector.

use super::matrix::DistOperator;
use super::solver::{check, drive, DistPreconditioner};
use super::vector::DistVector;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::solver::gmres::{back_substitute, rotate_column};
use crate::solver::{SolveReport, SolverParams, StopReason, Tracker};

/// GMRES(m) on a distributed operator, right-preconditioned (`m` fixed), as
/// [`solver::gmres`](crate::solver::gmres) but with twice-applied classical Gram–Schmidt.
///
/// # Errors
/// Distribution mismatches, `params.restart = 0`; device errors.
pub fn gmres<B: Backend, S: Scalar>(
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    b: &DistVector<B, S>,
    x: &mut DistVector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    arnoldi(a, m, false, b, x, params)
}

/// Flexible GMRES (the preconditioner may vary: an inner solve); stores the preconditioned
/// basis too.
///
/// # Errors
/// As [`gmres`].
pub fn fgmres<B: Backend, S: Scalar>(
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    b: &DistVector<B, S>,
    x: &mut DistVector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    arnoldi(a, m, true, b, x, params)
}

fn arnoldi<B: Backend, S: Scalar>(
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    flexible: bool,
    b: &DistVector<B, S>,
    x: &mut DistVector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    let name = if flexible { "FGMRES" } else { "GMRES" };
    if params.restart == 0 {
        return Err(Error::InvalidArgument {
            op: "gmres",
            name: "restart",
            reason: "the Krylov dimension must be at least 1".into(),
        });
    }
    check(name, a, b, x)?;
    drive(params, name, a, b, x, &mut |t, x, r, k0| {
        cycles(t, a, m, flexible, b, x, r, k0, params)
    })
}

/// `w −= Σ hᵢ vᵢ` with `hᵢ = vᵢ·w` in one global sum; returns `h`.
fn project<B: Backend, S: Scalar>(
    v: &[DistVector<B, S>],
    w: &mut DistVector<B, S>,
) -> Result<Vec<f64>> {
    let mut local = Vec::with_capacity(v.len());
    for vi in v {
        local.push(vi.owned().dot(w.owned())?.as_f64());
    }
    let h = w.layout().comm().sum(&local);
    for (vi, &hi) in v.iter().zip(&h) {
        w.axpy(S::from_f64(-hi), vi)?;
    }
    Ok(h)
}

#[allow(clippy::too_many_arguments)]
fn cycles<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    flexible: bool,
    b: &DistVector<B, S>,
    x: &mut DistVector<B, S>,
    mut r: DistVector<B, S>,
    k0: usize,
    params: &SolverParams<'_>,
) -> Result<(usize, StopReason)> {
    let backend = r.owned().backend().clone();
    let layout = r.layout().clone();
    let restart = params.restart.min(layout.global_len().max(1));
    let mut beta = r.nrm2()?.as_f64();
    if let Some(reason) = t.record(k0, beta) {
        return Ok((k0, reason));
    }
    let mut v: Vec<DistVector<B, S>> = Vec::with_capacity(restart + 1);
    let mut z: Vec<DistVector<B, S>> = Vec::new();
    let mut w = DistVector::zeros(&backend, &layout)?;
    let mut total = k0;
    let reason = 'outer: loop {
        v.clear();
        z.clear();
        let mut v0 = r.try_clone()?;
        v0.owned_mut().scale(S::from_f64(1.0 / beta))?;
        v.push(v0);
        let mut h = vec![vec![0.0f64; restart]; restart + 1];
        let (mut cs, mut sn) = (vec![0.0f64; restart], vec![0.0f64; restart]);
        let mut g = vec![0.0f64; restart + 1];
        g[0] = beta;
        let mut stop = None;
        let mut cols = 0;
        for j in 0..restart {
            let zj = match m {
                Some(m) => {
                    let mut zj = DistVector::zeros(&backend, &layout)?;
                    m.precondition(&v[j], &mut zj)?;
                    Some(zj)
                }
                None => None,
            };
            a.apply(zj.as_ref().unwrap_or(&v[j]), &mut w)?;
            t.applications += 1;
            if flexible {
                z.push(match zj {
                    Some(zj) => zj,
                    None => v[j].try_clone()?,
                });
            }
            let h1 = project(&v, &mut w)?;
            let h2 = project(&v, &mut w)?;
            for (i, (a1, a2)) in h1.iter().zip(&h2).enumerate() {
                h[i][j] = a1 + a2;
            }
            let hnext = w.nrm2()?.as_f64();
            h[j + 1][j] = hnext;
            if let Err(reason) = rotate_column(&mut h, &mut cs, &mut sn, &mut g, j) {
                stop = Some(reason);
                break;
            }
            cols = j + 1;
            total += 1;
            if let Some(reason) = t.record(total, g[j + 1].abs()) {
                stop = Some(reason);
                break;
            }
            if hnext <= f64::EPSILON * beta {
                break;
            }
            let mut vnext = w.try_clone()?;
            vnext.owned_mut().scale(S::from_f64(1.0 / hnext))?;
            v.push(vnext);
        }
        let y = back_substitute(&h, &g, cols);
        if flexible {
            for (i, yi) in y.iter().enumerate() {
                x.axpy(S::from_f64(*yi), &z[i])?;
            }
        } else {
            let mut update = DistVector::zeros(&backend, &layout)?;
            for (i, yi) in y.iter().enumerate() {
                update.axpy(S::from_f64(*yi), &v[i])?;
            }
            match m {
                Some(m) => {
                    let mut mu = DistVector::zeros(&backend, &layout)?;
                    m.precondition(&update, &mut mu)?;
                    x.axpy(S::ONE, &mu)?;
                }
                None => x.axpy(S::ONE, &update)?,
            }
        }
        // Restart from the true residual (see the single-process GMRES).
        let mut ax = DistVector::zeros(&backend, &layout)?;
        a.apply(x, &mut ax)?;
        r.copy_from(b)?;
        r.axpy(-S::ONE, &ax)?;
        t.applications += 1;
        beta = r.nrm2()?.as_f64();
        match stop {
            Some(StopReason::Converged) if !t.converged(beta) && total >= params.max_iter => {
                break StopReason::MaxIterations;
            }
            Some(StopReason::Converged) if !t.converged(beta) => {}
            Some(reason) => break 'outer reason,
            None => {}
        }
        if t.converged(beta) {
            break StopReason::Converged;
        }
        if !beta.is_finite() {
            break StopReason::NonFinite {
                quantity: "residual",
            };
        }
        if beta == 0.0 {
            break StopReason::Converged;
        }
    };
    Ok((total, reason))
}
