//! Krylov solvers and preconditioners, on every backend, in f32, f64 and mixed precision.
//!
//! | solver | for | per iteration |
//! |---|---|---|
//! | [`cg`] | SPD `A` | 1 SpMV, fused `x += αp; r −= αq; r·r`, `p·q`, `p = r + βp` |
//! | [`pcg`] | SPD `A`, SPD `M` | as CG plus `z = M⁻¹r` (fused with `r·z` for Jacobi) |
//! | [`bicgstab`] | nonsymmetric | 2 SpMV, 2 preconditioner applications |
//! | [`gmres`] | nonsymmetric, restarted GMRES(m), right preconditioning | 1 SpMV, modified Gram–Schmidt |
//! | [`fgmres`] | as GMRES, the preconditioner may change between iterations | stores `Z` as well as `V` |
//! | [`mixed_solve`] | f64 accuracy with the work in f32 | FGMRES / flexible CG (f64) around an f32 inner Krylov solve |
//! | [`iterative_refinement`] | f64 accuracy from a low-precision inner solver | f64 residual, inner solve |
//!
//! Every solver takes the operator as `&dyn` [`LinearOperator`] and the preconditioner as
//! `Option<&dyn` [`Preconditioner`]`>`, stops when `‖r‖₂ ≤ max(rtol ‖b‖₂, atol)`, and returns
//! a [`SolveReport`] with the iterations, the residual history (the recursive residual), the
//! *true* final residual `‖b − A x‖₂` recomputed at the end, and a [`StopReason`].
//! `Converged` is only reported when that true residual meets the tolerance: a recursive
//! residual that drifted from it restarts the iteration from the true residual (at most
//! [`MAX_RESIDUAL_REPLACEMENTS`] times), and ends in [`StopReason::ResidualGap`] otherwise.
//! Bad sizes are errors; numerical trouble (breakdown, indefiniteness, NaN, stagnation) is a
//! reason in the report, never a hang.
//!
//! Where the scalars live: plain [`cg`] keeps α, β and the norms on the device and reads them
//! every `check_every` iterations; [`pcg`], [`bicgstab`] and the GMRES family bring each
//! inner product to the host (their recurrences branch on them). Vectors stay on the device.
//!
//! Mixed precision means the work (storage, an inner solve, a preconditioner) in f32 and the
//! answer to the tolerance of the f64 system as given: see [`mixed_solve`]. A matrix with f32
//! values used directly as an f64 [`LinearOperator`] is the rounded matrix; a solver given it
//! solves that matrix.
//!
//! [`driver::solve_system`] is a whole solve chosen by name (method, preconditioner,
//! precision, format as run-time values), judged by the true residual of the f64 system: the
//! front door of the `solve` example and of the Python package.
//!
//! ```
//! use galerkin::solver::{cg, SolverParams, StopReason};
//! use galerkin::sparse::generate::poisson3d_7pt;
//! use galerkin::{Cpu, Vector};
//!
//! let cpu = Cpu::new();
//! let a = poisson3d_7pt(16)?;
//! let b = Vector::full(&cpu, a.nrows(), 1.0f64)?;
//! let mut x = Vector::zeros(&cpu, a.nrows())?;
//! let report = cg(&a, &b, &mut x, &SolverParams::default())?;
//! assert_eq!(report.reason, StopReason::Converged);
//! assert!(report.final_residual <= 1e-8 * report.rhs_norm * 1.01);
//! # Ok::<(), galerkin::Error>(())
//! ```

use crate::bundle::Backend;
use crate::error::{check_len, Result};
use crate::scalar::Scalar;
use crate::vector::Vector;

pub(crate) mod amg;
mod bicgstab;
pub(crate) mod cg;
pub mod driver;
pub(crate) mod gmres;
mod mixed;
pub(crate) mod params;
pub(crate) mod precond;
mod refine;
pub(crate) mod report;
pub(crate) mod space;
mod stopping;
pub(crate) mod tracker;

pub use crate::operator::{LinearOperator, OperatorCost};
pub use amg::{
    Amg, AmgCycle, AmgInfo, AmgLevelInfo, AmgLevelTimes, AmgParams, AmgPhases, AmgSmoother,
    NearNull, MAX_SPECTRAL_STEPS,
};
pub use bicgstab::bicgstab;
pub(crate) use bicgstab::iterate as bicgstab_iterate;
pub(crate) use cg::pcg_flexible;
pub use cg::{cg, pcg};
pub use gmres::{fgmres, gmres};
pub use mixed::{mixed_solve, InnerSolve, InnerSolver, MixedOuter, MixedParams};
pub use params::{Control, IterationInfo, Monitor, Progress, SolverParams};
pub use precond::{
    BlockJacobi, Chebyshev, ChebyshevParams, Identity, Jacobi, MixedPrecision, Preconditioner,
};
pub use refine::{iterative_refinement, RefinementParams};
pub use report::{SolveReport, StopReason, MAX_RESIDUAL_REPLACEMENTS};
pub use stopping::Stopping;

/// One run of a solver's iteration from a residual on single-process vectors.
pub(crate) type Iterate<'i, B, S> = space::IterateWith<'i, Vector<B, S>>;

/// What every solver does around its iteration.
///
/// 1. `‖b‖` (a NaN or zero `b` ends the solve at once, with `x = 0` for a zero `b`), the
///    tracker, and the initial residual `r = b − A x`.
/// 2. The iteration, from `r`.
/// 3. The true residual `‖b − A x‖`. A claimed convergence that it does not confirm is not
///    reported: the iteration restarts from the true residual (residual replacement), at most
///    [`MAX_RESIDUAL_REPLACEMENTS`] times, and then stops with [`StopReason::ResidualGap`].
///    So `Converged` always means `final_residual ≤ max(rtol ‖b‖, atol)`.
///
/// The same for distributed vectors: [`space::drive`].
pub(crate) fn drive<B: Backend, S: Scalar>(
    params: &SolverParams<'_>,
    name: &'static str,
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    iterate: &mut Iterate<'_, B, S>,
) -> Result<SolveReport> {
    space::drive(params, name, &residual(a, b), b, x, iterate)
}

/// `r = b − A x`, as the iterations' restarts and [`drive`] compute it.
pub(crate) fn residual<'a, B: Backend, S: Scalar>(
    a: &'a dyn LinearOperator<B, S>,
    b: &'a Vector<B, S>,
) -> impl Fn(&Vector<B, S>, &mut Vector<B, S>) -> Result<()> + 'a {
    move |x, r| {
        r.copy_from(b)?;
        a.apply_add(-S::ONE, x, S::ONE, r)
    }
}

/// `‖b − A x‖₂`.
///
/// # Errors
/// Size mismatches and device errors.
pub fn true_residual<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &Vector<B, S>,
) -> Result<f64> {
    let mut r = b.try_clone()?;
    a.apply_add(-S::ONE, x, S::ONE, &mut r)?;
    Ok(r.nrm2()?.as_f64())
}

/// Checks that the preconditioner, if any, has the operator's size.
pub(crate) fn check_preconditioner<B: Backend, S: Scalar>(
    op: &'static str,
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
) -> Result<()> {
    match m {
        Some(m) => check_len(op, "preconditioner size", a.nrows(), m.size()),
        None => Ok(()),
    }
}

/// Checks that `a` is square and matches `b` and `x`.
pub(crate) fn check_system<B: Backend, S: Scalar>(
    op: &'static str,
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &Vector<B, S>,
) -> Result<()> {
    check_len(
        op,
        "ncols (the operator must be square)",
        a.nrows(),
        a.ncols(),
    )?;
    check_len(op, "b", a.nrows(), b.len())?;
    check_len(op, "x", a.ncols(), x.len())
}
