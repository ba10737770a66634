//! Restarted GMRES and FGMRES on distributed operators, right-preconditioned: the
//! single-process restart cycles ([`crate::solver::gmres`]) on [`DistVector`]s, whose basis is
//! orthogonalized by classical Gram–Schmidt applied twice: three global sums per iteration
//! (the two projections and the norm) whatever the Krylov dimension, where modified
//! Gram–Schmidt needs one per basis vector.

use super::matrix::DistOperator;
use super::solver::{check, drive, residual, DistPreconditioner};
use super::vector::DistVector;
use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::solver::gmres::{arnoldi_cycles, System};
use crate::solver::params::SolverParams;
use crate::solver::report::SolveReport;
use crate::solver::space::Apply;

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
    let residual = residual(a, b);
    let precondition =
        m.map(|m| move |r: &DistVector<B, S>, z: &mut DistVector<B, S>| m.precondition(r, z));
    let system = System {
        apply: &apply,
        residual: &residual,
        precondition: precondition.as_ref().map(|f| f as &Apply<'_, _>),
        flexible,
        params,
    };
    drive(params, name, a, b, x, &mut |t, x, r, k0| {
        arnoldi_cycles(&system, t, x, r, k0)
    })
}
