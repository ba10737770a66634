//! Mixed-precision iterative refinement: residuals in f64, corrections from an inner solve
//! in f32, converging to f64 accuracy.

use std::time::Instant;

use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Element;
use crate::solver::params::{Progress, SolverParams};
use crate::solver::report::{SolveReport, StopReason};
use crate::solver::{check_system, pcg, true_residual, LinearOperator, Preconditioner, Stopping};
use crate::vector::Vector;

/// Parameters of [`iterative_refinement`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefinementParams {
    /// When the refinement stops: the f64 residual `‖b − A x‖` against the tolerance, and
    /// `max_iter` outer (refinement) steps.
    pub stop: Stopping,
    /// When each inner f32 solve stops.
    pub inner_stop: Stopping,
}

impl Default for RefinementParams {
    /// `rtol = 1e-12`, 20 outer steps, inner solves to `1e-4` in at most 1000 iterations.
    fn default() -> Self {
        RefinementParams {
            stop: Stopping::new(1e-12, 20),
            inner_stop: Stopping::new(1e-4, 1000),
        }
    }
}

/// Solves `A x = b` to f64 accuracy with corrections computed in f32: repeat
/// `r = b − A₆₄ x` (f64), `A₃₂ d = r / ‖r‖` by PCG in f32 (with `m32`, or unpreconditioned),
/// `x += ‖r‖ d`. `a32` is the same matrix with f32 values (or any f32 approximation of it).
///
/// The report's `iterations` counts outer steps, `residual_history` holds the true f64
/// residual before each, and `operator_applications` counts the f64 and f32 applications.
///
/// # Errors
/// Size mismatches and device errors.
pub fn iterative_refinement<B: Backend>(
    a64: &dyn LinearOperator<B, f64>,
    a32: &dyn LinearOperator<B, f32>,
    m32: Option<&dyn Preconditioner<B, f32>>,
    b: &Vector<B, f64>,
    x: &mut Vector<B, f64>,
    params: &RefinementParams,
) -> Result<SolveReport> {
    check_system("iterative_refinement", a64, b, x)?;
    params.stop.check("iterative_refinement")?;
    params.inner_stop.check("iterative_refinement (inner)")?;
    crate::error::check_len("iterative_refinement", "a32 rows", a64.nrows(), a32.nrows())?;
    let start = Instant::now();
    let backend = b.backend().clone();
    let n = b.len();
    let bnorm = b.nrm2()?;
    let mut history = Vec::new();
    let mut applications = 0;
    let mut r = b.try_clone()?;
    let mut outer = 0;
    let inner_params = SolverParams {
        stop: params.inner_stop,
        progress: Progress::Never,
        stagnation_window: 0,
        ..SolverParams::default()
    };
    let reason = loop {
        r.copy_from(b)?;
        a64.apply_add(-1.0, x, 1.0, &mut r)?;
        applications += 1;
        let rnorm = r.nrm2()?;
        history.push(rnorm);
        if !rnorm.is_finite() {
            break StopReason::NonFinite {
                quantity: "residual",
            };
        }
        if params.stop.met(rnorm, bnorm) {
            break StopReason::Converged;
        }
        if outer >= params.stop.max_iter {
            break StopReason::MaxIterations;
        }
        if outer > 0 && rnorm >= history[outer - 1] {
            break StopReason::Stagnation;
        }
        outer += 1;
        let mut scaled = r.try_clone()?;
        scaled.scale(1.0 / rnorm)?;
        let r32 = scaled.to_precision::<f32>()?;
        let mut d32 = Vector::<B, f32>::zeros(&backend, n)?;
        let inner = pcg(a32, m32, &r32, &mut d32, &inner_params)?;
        applications += inner.operator_applications;
        let mut d = Vector::<B, f64>::zeros(&backend, n)?;
        d.convert_from(&d32)?;
        x.axpy(rnorm, &d)?;
    };
    let final_residual = true_residual(a64, b, x)?;
    Ok(SolveReport {
        solver: "iterative refinement (f64 residual, f32 PCG)",
        iterations: outer,
        reason,
        rhs_norm: bnorm.as_f64(),
        residual_history: history,
        final_residual,
        time: start.elapsed(),
        operator_applications: applications + 1,
    })
}
