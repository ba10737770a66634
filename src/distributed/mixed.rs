//! Mixed precision on distributed operators: flexible f64 CG around an f32 inner PCG.

use std::cell::Cell;

use super::matrix::DistOperator;
use super::solver::{cg, DistPreconditioner};
use super::vector::DistVector;
use crate::bundle::Backend;
use crate::error::Result;
use crate::solver::params::{Progress, SolverParams};
use crate::solver::report::SolveReport;
use crate::solver::Stopping;

/// The f32 inner solve of [`mixed_cg`] as an f64 preconditioner: `z ≈ A₃₂⁻¹ r` by PCG in f32
/// to a relative tolerance, from zero.
pub struct InnerCg<'a, B: Backend> {
    a: &'a dyn DistOperator<B, f32>,
    m: Option<&'a dyn DistPreconditioner<B, f32>>,
    stop: Stopping,
    iterations: Cell<usize>,
}

impl<'a, B: Backend> InnerCg<'a, B> {
    /// The inner solve with `a` (f32 values and vectors) and preconditioner `m`, each
    /// application stopping by `stop`.
    pub fn new(
        a: &'a dyn DistOperator<B, f32>,
        m: Option<&'a dyn DistPreconditioner<B, f32>>,
        stop: Stopping,
    ) -> Self {
        InnerCg {
            a,
            m,
            stop,
            iterations: Cell::new(0),
        }
    }

    /// Inner iterations so far.
    pub fn iterations(&self) -> usize {
        self.iterations.get()
    }
}

impl<B: Backend> DistPreconditioner<B, f64> for InnerCg<'_, B> {
    fn precondition(&self, r: &DistVector<B, f64>, z: &mut DistVector<B, f64>) -> Result<()> {
        let backend = r.owned().backend();
        let r32 = DistVector::from_owned(r.layout(), r.owned().to_precision::<f32>()?)?;
        let mut z32 = DistVector::<B, f32>::zeros(backend, r.layout())?;
        let params = SolverParams {
            stop: self.stop,
            progress: Progress::Never,
            stagnation_window: 0,
            ..SolverParams::default()
        };
        let report = cg(self.a, self.m, &r32, &mut z32, &params)?;
        self.iterations
            .set(self.iterations.get() + report.iterations);
        z.owned_mut().convert_from(z32.owned())
    }
}

/// The f64 system solved to `params.stop` with the work in f32: flexible CG in f64 on `a64`,
/// preconditioned by an f32 PCG on `a32` ([`InnerCg`]). As the single-process
/// [`mixed_solve`](crate::solver::mixed_solve) with `MixedOuter::FlexibleCg`.
///
/// # Errors
/// As [`cg`].
pub fn mixed_cg<B: Backend>(
    a64: &dyn DistOperator<B, f64>,
    inner: &InnerCg<'_, B>,
    b: &DistVector<B, f64>,
    x: &mut DistVector<B, f64>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    let flexible = SolverParams {
        stop: params.stop,
        stagnation_window: params.stagnation_window,
        progress: params.progress,
        flexible: true,
        ..SolverParams::default()
    };
    cg(a64, Some(inner), b, x, &flexible)
}
