//! Restarted GMRES(m) with right preconditioning, and flexible GMRES.
//!
//! Arnoldi with modified Gram–Schmidt; the Hessenberg least-squares problem is solved on the
//! host with Givens rotations in f64; the tracked residual is `|g_{j+1}|`, and every restart
//! recomputes the true residual `b − A x`.

use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::params::SolverParams;
use crate::solver::report::{SolveReport, StopReason};
use crate::solver::space::{Apply, KrylovVector};
use crate::solver::tracker::Tracker;
use crate::solver::{check_preconditioner, check_system, drive, LinearOperator, Preconditioner};
use crate::vector::Vector;

/// GMRES(m), `m = params.restart`, right-preconditioned (`A M⁻¹ u = b`, `x = M⁻¹ u`): the
/// preconditioner must stay the same through a restart cycle.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for inconsistent sizes;
/// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) for `restart = 0`;
/// [`Error::ResourceLimit`](crate::error::Error::ResourceLimit) when the host cannot hold the
/// Hessenberg matrix of `min(restart, n)` columns; device errors.
pub fn gmres<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    arnoldi_solve(a, m, false, b, x, params)
}

/// Flexible GMRES: the preconditioner may change from one iteration to the next (an inner
/// solve, a preconditioner applied in lower precision); stores the preconditioned vectors.
///
/// # Errors
/// As [`gmres`].
pub fn fgmres<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    arnoldi_solve(a, m, true, b, x, params)
}

fn arnoldi_solve<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    flexible: bool,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    let name = if flexible { "FGMRES" } else { "GMRES" };
    check_system(name, a, b, x)?;
    check_preconditioner(name, a, m)?;
    if params.restart == 0 {
        return Err(crate::error::Error::InvalidArgument {
            op: "gmres",
            name: "restart",
            reason: "the Krylov dimension must be at least 1".into(),
        });
    }
    let system = Arnoldi {
        a,
        m,
        flexible,
        b,
        params,
    };
    drive(params, name, a, b, x, &mut |t, x, r, k0| {
        system.cycles(t, x, r, k0)
    })
}

/// The system and settings of one (F)GMRES solve.
pub(crate) struct Arnoldi<'s, 'p, B: Backend, S: Scalar> {
    pub(crate) a: &'s dyn LinearOperator<B, S>,
    pub(crate) m: Option<&'s dyn Preconditioner<B, S>>,
    pub(crate) flexible: bool,
    pub(crate) b: &'s Vector<B, S>,
    pub(crate) params: &'s SolverParams<'p>,
}

impl<B: Backend, S: Scalar> Arnoldi<'_, '_, B, S> {
    /// Restart cycles from the residual `r` until the tracker stops them.
    pub(crate) fn cycles(
        &self,
        t: &mut Tracker<'_, '_>,
        x: &mut Vector<B, S>,
        r: Vector<B, S>,
        k0: usize,
    ) -> Result<(usize, StopReason)> {
        let (a, m, b) = (self.a, self.m, self.b);
        let apply = |x: &Vector<B, S>, y: &mut Vector<B, S>| a.apply(x, y);
        let residual = crate::solver::residual(a, b);
        let precondition =
            m.map(|m| move |r: &Vector<B, S>, z: &mut Vector<B, S>| m.precondition(r, z));
        let system = System {
            apply: &apply,
            residual: &residual,
            precondition: precondition.as_ref().map(|f| f as &Apply<'_, _>),
            flexible: self.flexible,
            params: self.params,
        };
        arnoldi_cycles(&system, t, x, r, k0)
    }
}

/// One (F)GMRES system on any [`KrylovVector`]: `apply` is `y = A x`, `residual` `r = b − A x`,
/// `precondition` `z = M⁻¹ v` (right preconditioning; `None`: none).
pub(crate) struct System<'s, 'p, V> {
    pub(crate) apply: &'s Apply<'s, V>,
    pub(crate) residual: &'s Apply<'s, V>,
    pub(crate) precondition: Option<&'s Apply<'s, V>>,
    pub(crate) flexible: bool,
    pub(crate) params: &'s SolverParams<'p>,
}

/// Restart cycles of (F)GMRES from the residual `r` until the tracker stops them. The basis
/// is orthogonalized by [`KrylovVector::orthogonalize`] (modified Gram–Schmidt in one
/// process, classical Gram–Schmidt twice when distributed).
pub(crate) fn arnoldi_cycles<S: Scalar, V: KrylovVector<S>>(
    sys: &System<'_, '_, V>,
    t: &mut Tracker<'_, '_>,
    x: &mut V,
    mut r: V,
    k0: usize,
) -> Result<(usize, StopReason)> {
    let (flexible, params) = (sys.flexible, sys.params);
    let restart = params.restart.min(r.global_len().max(1));
    let mut beta = r.norm()?;
    if let Some(reason) = t.record(k0, beta) {
        return Ok((k0, reason));
    }
    check_host_arrays(restart)?;
    let mut v: Vec<V> = Vec::with_capacity(restart + 1);
    let mut z: Vec<V> = Vec::new();
    let mut w = r.zeros_like()?;
    let mut total = k0;
    let reason = 'outer: loop {
        // V[0] = r / β
        v.clear();
        z.clear();
        let mut v0 = r.duplicate()?;
        v0.scale(S::from_f64(1.0 / beta))?;
        v.push(v0);
        let mut h = vec![vec![0.0f64; restart]; restart + 1];
        let (mut cs, mut sn) = (vec![0.0f64; restart], vec![0.0f64; restart]);
        let mut g = vec![0.0f64; restart + 1];
        g[0] = beta;
        let mut stop = None;
        let mut cols = 0;
        for j in 0..restart {
            // w = A M⁻¹ v_j
            let zj = match sys.precondition {
                Some(m) => {
                    let mut zj = r.zeros_like()?;
                    m(&v[j], &mut zj)?;
                    Some(zj)
                }
                None => None,
            };
            (sys.apply)(zj.as_ref().unwrap_or(&v[j]), &mut w)?;
            t.applications += 1;
            if flexible {
                z.push(match zj {
                    Some(zj) => zj,
                    None => v[j].duplicate()?,
                });
            }
            for (i, hij) in w.orthogonalize(&v)?.into_iter().enumerate() {
                h[i][j] = hij;
            }
            let hnext = w.norm()?;
            h[j + 1][j] = hnext;
            // Apply the previous rotations to column j, then make the new one.
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
                // Happy breakdown: the Krylov space is invariant; the solution is in it.
                break;
            }
            let mut vnext = w.duplicate()?;
            vnext.scale(S::from_f64(1.0 / hnext))?;
            v.push(vnext);
        }
        // y = H⁻¹ g (upper triangular, `cols` columns); x += Z y or x += M⁻¹ V y.
        let y = back_substitute(&h, &g, cols);
        if flexible {
            for (i, yi) in y.iter().enumerate() {
                x.axpy(S::from_f64(*yi), &z[i])?;
            }
        } else {
            let mut update = r.zeros_like()?;
            for (i, yi) in y.iter().enumerate() {
                update.axpy(S::from_f64(*yi), &v[i])?;
            }
            match sys.precondition {
                Some(m) => {
                    let mut mu = r.zeros_like()?;
                    m(&update, &mut mu)?;
                    x.axpy(S::ONE, &mu)?;
                }
                None => x.axpy(S::ONE, &update)?,
            }
        }
        // Restart from the true residual; a convergence claimed by the recursive residual
        // is only accepted if the true residual confirms it (on singular or badly
        // conditioned systems |g| can drop while ‖b − A x‖ does not).
        (sys.residual)(x, &mut r)?;
        t.applications += 1;
        beta = r.norm()?;
        match stop {
            Some(StopReason::Converged) if !t.converged(beta) && total >= params.stop.max_iter => {
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

/// Checks that the host arrays of a restart cycle of length `restart` can be had: the
/// `(restart + 1) × restart` Hessenberg matrix, the rotations and the right-hand side, in
/// f64. A restart length from the command line must not ask the allocator for terabytes.
///
/// # Errors
/// [`Error::ResourceLimit`](crate::error::Error::ResourceLimit) naming the restart length.
fn check_host_arrays(restart: usize) -> Result<()> {
    let m = restart as u64;
    let hessenberg = m.saturating_add(1).saturating_mul(m);
    crate::limits::check_host_items(
        format_args!("the GMRES Hessenberg matrix of restart length {restart}"),
        hessenberg
            .saturating_add(m.saturating_mul(3))
            .saturating_add(1),
        8,
    )
}

/// Applies the previous Givens rotations to column `j` of the Hessenberg matrix `h`, makes
/// the rotation that zeroes `h[j+1][j]`, and applies it to `g` (so `|g[j+1]|` is the residual
/// estimate). A zero or non-finite column is a stop reason.
pub(crate) fn rotate_column(
    h: &mut [Vec<f64>],
    cs: &mut [f64],
    sn: &mut [f64],
    g: &mut [f64],
    j: usize,
) -> std::result::Result<(), StopReason> {
    for i in 0..j {
        let tmp = cs[i] * h[i][j] + sn[i] * h[i + 1][j];
        h[i + 1][j] = -sn[i] * h[i][j] + cs[i] * h[i + 1][j];
        h[i][j] = tmp;
    }
    let denom = h[j][j].hypot(h[j + 1][j]);
    if denom == 0.0 {
        return Err(StopReason::Breakdown {
            quantity: "Hessenberg column",
            value: 0.0,
        });
    }
    if !denom.is_finite() {
        return Err(StopReason::NonFinite {
            quantity: "Hessenberg",
        });
    }
    cs[j] = h[j][j] / denom;
    sn[j] = h[j + 1][j] / denom;
    h[j][j] = denom;
    h[j + 1][j] = 0.0;
    g[j + 1] = -sn[j] * g[j];
    g[j] *= cs[j];
    Ok(())
}

/// `y = H⁻¹ g` for the leading `cols` columns of the rotated (upper triangular) `h`.
pub(crate) fn back_substitute(h: &[Vec<f64>], g: &[f64], cols: usize) -> Vec<f64> {
    let mut y = vec![0.0f64; cols];
    for i in (0..cols).rev() {
        let mut s = g[i];
        for (k, yk) in y.iter().enumerate().skip(i + 1) {
            s -= h[i][k] * yk;
        }
        y[i] = s / h[i][i];
    }
    y
}
