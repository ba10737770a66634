//! Mixed precision that answers the problem as given: the work in f32, the answer to the
//! tolerance of the f64 system.
//!
//! "Mixed" in this library never means "solve the f32-rounded matrix". Rounding the values
//! of `A` to f32 perturbs the system by `‖δA‖ ≈ 6·10⁻⁸ ‖A‖`; for a matrix of condition 10⁶
//! the solution of the rounded system can miss the f64 tolerance by orders of magnitude
//! (its residual in the given system is `δA x`, not small). So the f32 work is wrapped:
//!
//! - [`mixed_solve`] runs a flexible f64 Krylov method (FGMRES, or flexible CG) on the
//!   **given** f64 operator, preconditioned by an [`InnerSolve`]: a few iterations of a
//!   Krylov method in f32 on the f32 copy of the matrix (with an f32 preconditioner). The f64
//!   residual corrects what f32 rounding got wrong; the report's `final_residual` is
//!   `‖b − A x‖` of the f64 system, and `Converged` means it met the tolerance.
//! - [`iterative_refinement`](crate::solver::iterative_refinement) is the same idea with a
//!   stationary outer loop (converges when `κ(A) · ε₃₂ ≪ 1`).
//! - [`MixedPrecision`](crate::solver::MixedPrecision) applies any f32 preconditioner inside
//!   an f64 solver: f32 only in the preconditioner.
//!
//! The f32 matrix costs half the memory traffic of the f64 one; most operator applications
//! of a mixed solve are f32 ones (`inner_max_iter` per outer iteration), so the outer f64
//! applications are the overhead.
//!
//! ```
//! use galerkin::solver::{mixed_solve, Jacobi, MixedParams, SolverParams};
//! use galerkin::sparse::generate::poisson3d_7pt;
//! use galerkin::{Cpu, Vector};
//!
//! let cpu = Cpu::new();
//! let a64 = poisson3d_7pt(12)?;
//! let a32 = a64.convert::<f32>();
//! let m32 = Jacobi::<Cpu, f32>::new(&cpu, &a32)?;
//! let b = Vector::full(&cpu, a64.nrows(), 1.0f64)?;
//! let mut x = Vector::zeros(&cpu, a64.nrows())?;
//! let params = SolverParams::new(1e-10, 100);
//! let report = mixed_solve(&a64, &a32, Some(&m32), &b, &mut x, &params, &MixedParams::default())?;
//! assert!(report.converged());
//! assert!(report.relative_residual() <= 1e-10);
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::cell::Cell;

use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::solver::gmres::Arnoldi;
use crate::solver::params::{Progress, SolverParams};
use crate::solver::report::SolveReport;
use crate::solver::tracker::Tracker;
use crate::solver::{
    cg::conjugate_gradients, check_preconditioner, check_system, fgmres, iterative_refinement,
    pcg_flexible, LinearOperator, OperatorCost, Preconditioner, RefinementParams, Stopping,
};
use crate::vector::Vector;

/// The outer (high-precision) iteration of [`mixed_solve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MixedOuter {
    /// Flexible GMRES on the f64 operator (any nonsingular `A`; the most robust).
    #[default]
    Fgmres,
    /// Flexible (Polak–Ribière) CG on the f64 operator (`A` symmetric positive definite).
    FlexibleCg,
    /// Iterative refinement: `x += inner(b − A x)` (converges when `κ(A) ε₃₂ ≪ 1`).
    Refinement,
}

/// The inner (low-precision) Krylov method of an [`InnerSolve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InnerSolver {
    /// Preconditioned CG (`A` symmetric positive definite).
    #[default]
    Cg,
    /// GMRES(`restart`), right-preconditioned.
    Gmres,
}

/// Parameters of [`mixed_solve`] and [`InnerSolve`]. `Default`: FGMRES outside, PCG inside
/// to a relative `1e-3` in at most 200 iterations (`inner_stop`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MixedParams {
    /// The outer iteration.
    pub outer: MixedOuter,
    /// The inner Krylov method.
    pub inner: InnerSolver,
    /// When each inner solve stops (its relative tolerance must be in `(0, 1)`).
    pub inner_stop: Stopping,
    /// Krylov dimension of an inner GMRES.
    pub inner_restart: usize,
}

impl Default for MixedParams {
    fn default() -> Self {
        MixedParams {
            outer: MixedOuter::Fgmres,
            inner: InnerSolver::Cg,
            inner_stop: Stopping::new(1e-3, 200),
            inner_restart: 30,
        }
    }
}

/// A Krylov solve in precision `L` used as a preconditioner of a solver in a higher
/// precision: `z ≈ A_L⁻¹ r`, computed as `‖r‖ · solve(A_L, round(r / ‖r‖))` (the scaling
/// keeps f32 clear of overflow and underflow). The result varies with `r` (an inexact
/// solve is not a fixed linear operator): use it with FGMRES or flexible PCG.
pub struct InnerSolve<'a, B: Backend, L: Scalar> {
    a: &'a dyn LinearOperator<B, L>,
    m: Option<&'a dyn Preconditioner<B, L>>,
    params: MixedParams,
    applications: Cell<usize>,
    iterations: Cell<usize>,
}

impl<'a, B: Backend, L: Scalar> InnerSolve<'a, B, L> {
    /// The inner solve with operator `a` (the low-precision copy of the matrix) and
    /// preconditioner `m`, as `params` say.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if `a` is not square
    /// or `m` has another size; [`Error::InvalidArgument`](crate::error::Error::InvalidArgument)
    /// for a non-positive tolerance, no iterations or a zero GMRES restart.
    pub fn new(
        a: &'a dyn LinearOperator<B, L>,
        m: Option<&'a dyn Preconditioner<B, L>>,
        params: &MixedParams,
    ) -> Result<Self> {
        crate::error::check_len("InnerSolve", "ncols (square)", a.nrows(), a.ncols())?;
        check_preconditioner("InnerSolve", a, m)?;
        let stop = params.inner_stop;
        if !(stop.rtol > 0.0 && stop.rtol < 1.0) {
            return Err(Error::invalid(
                "InnerSolve::new",
                "inner_stop.rtol",
                format!("{} is not in (0, 1)", stop.rtol),
            ));
        }
        if stop.max_iter == 0 {
            return Err(Error::invalid(
                "InnerSolve::new",
                "inner_stop.max_iter",
                "must be at least 1",
            ));
        }
        if params.inner == InnerSolver::Gmres && params.inner_restart == 0 {
            return Err(Error::invalid(
                "InnerSolve::new",
                "inner_restart",
                "must be at least 1",
            ));
        }
        Ok(InnerSolve {
            a,
            m,
            params: *params,
            applications: Cell::new(0),
            iterations: Cell::new(0),
        })
    }

    /// Low-precision operator applications so far (over every call).
    pub fn applications(&self) -> usize {
        self.applications.get()
    }

    /// Inner iterations so far (over every call).
    pub fn iterations(&self) -> usize {
        self.iterations.get()
    }

    fn solve(&self, b: &Vector<B, L>, x: &mut Vector<B, L>) -> Result<()> {
        let params = SolverParams {
            stop: self.params.inner_stop,
            restart: self.params.inner_restart,
            stagnation_window: 0,
            progress: Progress::Never,
            ..SolverParams::default()
        };
        let mut t = Tracker::new(&params, "inner", b.nrm2()?.as_f64());
        // x = 0, so the initial residual is b itself.
        let r = b.try_clone()?;
        let (k, _) = match self.params.inner {
            InnerSolver::Cg => conjugate_gradients(&mut t, self.a, self.m, x, r, 0, false)?,
            InnerSolver::Gmres => {
                let arnoldi = Arnoldi {
                    a: self.a,
                    m: self.m,
                    flexible: false,
                    b,
                    params: &params,
                };
                arnoldi.cycles(&mut t, x, r, 0)?
            }
        };
        self.applications
            .set(self.applications.get() + t.applications);
        self.iterations.set(self.iterations.get() + k);
        Ok(())
    }
}

impl<B: Backend, L: Scalar, S: Scalar> Preconditioner<B, S> for InnerSolve<'_, B, L> {
    fn size(&self) -> usize {
        self.a.nrows()
    }

    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        crate::error::check_len("InnerSolve", "r", self.a.nrows(), r.len())?;
        crate::error::check_len("InnerSolve", "z", self.a.nrows(), z.len())?;
        let norm = r.nrm2()?;
        if norm == S::ZERO || !norm.as_f64().is_finite() {
            // A zero residual needs no correction; a non-finite one is passed on so that
            // the outer solver reports it.
            return z.copy_from(r);
        }
        let mut scaled = r.try_clone()?;
        scaled.scale(S::ONE / norm)?;
        let b_low = scaled.to_precision::<L>()?;
        let mut x_low = Vector::<B, L>::zeros(r.backend(), r.len())?;
        self.solve(&b_low, &mut x_low)?;
        z.convert_from(&x_low)?;
        z.scale(norm)
    }

    fn cost(&self) -> OperatorCost {
        let c = self.a.cost();
        let n = self.params.inner_stop.max_iter as f64;
        OperatorCost {
            flops: n * c.flops,
            bytes: n * c.bytes,
        }
    }
}

/// Solves the f64 system `a64 x = b` to `params.stop` (the tolerance of the system as
/// given), with most of the work on `a32`, an f32 copy of the matrix: the outer iteration
/// of `mixed.outer` on `a64`, preconditioned by an [`InnerSolve`] on `a32` with `m32`.
///
/// The report is of the f64 system: `final_residual = ‖b − a64 x‖`, `Converged` only if
/// that meets the tolerance, `iterations` the outer iterations, `operator_applications`
/// the f64 and f32 applications together.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for inconsistent sizes
/// (`a32` must have the shape of `a64`); the parameter errors of [`InnerSolve::new`];
/// device errors.
pub fn mixed_solve<B: Backend>(
    a64: &dyn LinearOperator<B, f64>,
    a32: &dyn LinearOperator<B, f32>,
    m32: Option<&dyn Preconditioner<B, f32>>,
    b: &Vector<B, f64>,
    x: &mut Vector<B, f64>,
    params: &SolverParams<'_>,
    mixed: &MixedParams,
) -> Result<SolveReport> {
    check_system("mixed_solve", a64, b, x)?;
    crate::error::check_len("mixed_solve", "rows of a32", a64.nrows(), a32.nrows())?;
    crate::error::check_len("mixed_solve", "columns of a32", a64.ncols(), a32.ncols())?;
    if mixed.outer == MixedOuter::Refinement {
        let refinement = RefinementParams {
            stop: params.stop,
            inner_stop: mixed.inner_stop,
        };
        return iterative_refinement(a64, a32, m32, b, x, &refinement);
    }
    let inner = InnerSolve::new(a32, m32, mixed)?;
    let mut report = match mixed.outer {
        MixedOuter::FlexibleCg => pcg_flexible(a64, Some(&inner), b, x, params)?,
        _ => fgmres(a64, Some(&inner), b, x, params)?,
    };
    report.solver = match (mixed.outer, mixed.inner) {
        (MixedOuter::FlexibleCg, InnerSolver::Cg) => "flexible CG (f64) + inner PCG (f32)",
        (MixedOuter::FlexibleCg, InnerSolver::Gmres) => "flexible CG (f64) + inner GMRES (f32)",
        (_, InnerSolver::Cg) => "FGMRES (f64) + inner PCG (f32)",
        (_, InnerSolver::Gmres) => "FGMRES (f64) + inner GMRES (f32)",
    };
    report.operator_applications += inner.applications();
    Ok(report)
}
