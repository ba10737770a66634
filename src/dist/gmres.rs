//! Restarted GMRES and FGMRES on distributed operators, right-preconditioned: the
//! single-process restart cycles ([`crate::solver::gmres`]) on [`DistVector`]s, whose basis is
//! orthogonalized by classical Gram–Schmidt applied twice: three global sums per iteration
//! (the two projections and the norm) whatever the Krylov dimension, where modified
//! Gram–Schmidt needs one per basis vector.

use super::matrix::DistOperator;
use super::solver::{check, drive, DistPreconditioner};
use super::vector::DistVector;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::solver::gmres::{arnoldi_cycles, System};
use crate::solver::space::Apply;
use crate::solver::{SolveReport, SolverParams};

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
    let apply = |x: &DistVector<B, S>, y: &mut DistVector<B, S>| a.apply(x, y);
    let residual = |x: &DistVector<B, S>, r: &mut DistVector<B, S>| -> Result<()> {
        let mut ax = DistVector::zeros(b.owned().backend(), b.layout())?;
        a.apply(x, &mut ax)?;
        r.copy_from(b)?;
        r.axpy(-S::ONE, &ax)
    };
    let precondition = |r: &DistVector<B, S>, z: &mut DistVector<B, S>| match m {
        Some(m) => m.precondition(r, z),
        None => z.copy_from(r),
    };
    let m_apply: Option<&Apply<'_, DistVector<B, S>>> = m.map(|_| &precondition as &Apply<'_, _>);
    let system = System {
        apply: &apply,
        residual: &residual,
        precondition: m_apply,
        flexible,
        params,
    };
    drive(params, name, a, b, x, &mut |t, x, r, k0| {
        arnoldi_cycles(&system, t, x, r, k0)
    })
}
