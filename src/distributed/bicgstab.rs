//! BiCGStab on distributed operators.

use super::matrix::DistOperator;
use super::solver::{check, drive, DistPreconditioner};
use super::vector::DistVector;
use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::params::SolverParams;
use crate::solver::report::SolveReport;
use crate::solver::space::Apply;

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
    let apply = |x: &DistVector<B, S>, y: &mut DistVector<B, S>| a.apply(x, y);
    let precondition =
        m.map(|m| move |r: &DistVector<B, S>, z: &mut DistVector<B, S>| m.precondition(r, z));
    let m_apply = precondition.as_ref().map(|f| f as &Apply<'_, _>);
    drive(params, "BiCGStab", a, b, x, &mut |t, x, r, k0| {
        crate::solver::bicgstab_iterate(t, &apply, m_apply, x, r, k0)
    })
}
