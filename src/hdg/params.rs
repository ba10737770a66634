//! The parameters of an HDG solve: the discretisation ([`HdgParams`]), the data
//! ([`Problem`]) and the trace solver ([`TraceSolverParams`]).

use crate::error::{Error, Result};
use crate::hdg::host::{Field, Flux};
use crate::hdg::reference::MAX_DEGREE;
use crate::scalar::Scalar;
use crate::solver::params::Progress;
use crate::solver::Stopping;

/// The discretisation parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HdgParams {
    /// Polynomial degree `P` (1..=9).
    pub degree: usize,
    /// Stabilisation `τ > 0` (the flux `q̂·n = q·n − τ (u − û)`).
    pub tau: f64,
    /// Reaction coefficient `λ ≥ 0` of `−∇²u + λu = f` (0: Poisson).
    pub lambda: f64,
}

impl HdgParams {
    /// Degree `degree`, `τ = 1`, `λ = 0`.
    pub fn new(degree: usize) -> Self {
        HdgParams {
            degree,
            tau: 1.0,
            lambda: 0.0,
        }
    }

    pub(super) fn check(&self) -> Result<()> {
        if !(1..=MAX_DEGREE).contains(&self.degree) {
            return Err(Error::invalid(
                "hdg",
                "degree",
                format!("P = {}: must be in 1..={MAX_DEGREE}", self.degree),
            ));
        }
        if !(self.tau > 0.0 && self.tau.is_finite()) {
            return Err(Error::invalid(
                "hdg",
                "tau",
                format!("{}: must be positive and finite", self.tau),
            ));
        }
        if !(self.lambda >= 0.0 && self.lambda.is_finite()) {
            return Err(Error::invalid(
                "hdg",
                "lambda",
                format!("{}: must be non-negative and finite", self.lambda),
            ));
        }
        Ok(())
    }
}

/// The data of a problem: `f`, the Dirichlet values `g_D`, and on Neumann edges the flux
/// `g_N = ∇u·n`.
#[derive(Clone, Copy)]
pub struct Problem<'a> {
    /// The right-hand side `f(x, y)`.
    pub rhs: Field<'a>,
    /// The Dirichlet values `g_D(x, y)`.
    pub dirichlet: Field<'a>,
    /// The outward flux `∇u·n` on Neumann edges (required when the mesh has any).
    pub flux: Option<Flux<'a>>,
}

/// How the trace system is preconditioned.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum TracePreconditioner {
    /// [`amg`](TracePreconditioner::amg) when the trace system has at least
    /// [`TRACE_AMG_MIN_DOFS`] unknowns (and the backend has f64, which AMG's setup needs),
    /// [`BlockJacobi`](TracePreconditioner::BlockJacobi) otherwise: whichever was faster
    /// there (the default). Block-Jacobi also when AMG's setup does not fit the device's
    /// memory ([`Error::ResourceLimit`](crate::Error::ResourceLimit)).
    #[default]
    Auto,
    /// Block-Jacobi on the edge blocks (their inverses by the batched LU).
    BlockJacobi,
    /// A Chebyshev polynomial of this degree in the block-Jacobi-scaled operator.
    Chebyshev {
        /// Polynomial degree (operator applications per application, minus one).
        degree: usize,
    },
    /// Smoothed-aggregation AMG ([`Amg`](crate::solver::Amg)), one cycle per application,
    /// set up on the device from a CSR copy of `K` (freed after the setup) with the
    /// constants of the trace space (the first Legendre mode of every edge) as the
    /// near-null space.
    Amg {
        /// Strength threshold.
        theta: f64,
        /// Smoother.
        smoother: crate::solver::AmgSmoother,
        /// Cycle.
        cycle: crate::solver::AmgCycle,
        /// Coarsest size.
        max_coarse: usize,
    },
}

/// The strength threshold of [`TracePreconditioner::amg`]: on the P = 3 trace system of
/// the unit square, θ = 0.1 took 40, 40, 40 and 60 iterations (to 1e-10) on 40², 80², 160²
/// and 320² against 40, 50, 60 and 80 with θ = 0 (2026-11-28).
pub const TRACE_AMG_THETA: f64 = 0.1;

/// The smallest trace system [`TracePreconditioner::Auto`] gives AMG. The whole solve stage
/// (AMG's setup included) against block-Jacobi PCG to 1e-10, P = 1, 3, 5, on an H200 with
/// CUDA (2026-11-29): block-Jacobi faster up to 28,320 unknowns (40², 1.2–1.6x), AMG faster
/// from 38,080 (80²: 1.1–1.3x; 160²: 1.6–1.9x; 320²: 2.8–3.9x; 640², P = 3: 5.7x).
pub const TRACE_AMG_MIN_DOFS: usize = 32_768;

impl TracePreconditioner {
    /// What [`Auto`](TracePreconditioner::Auto) means for a trace system of `dofs`
    /// unknowns; any other choice as it is.
    pub fn resolve(self, dofs: usize) -> Self {
        match self {
            TracePreconditioner::Auto if dofs >= TRACE_AMG_MIN_DOFS => TracePreconditioner::amg(),
            TracePreconditioner::Auto => TracePreconditioner::BlockJacobi,
            other => other,
        }
    }

    /// AMG with the library's defaults ([`AmgParams::default`](crate::solver::AmgParams))
    /// but `θ =` [`TRACE_AMG_THETA`].
    pub fn amg() -> Self {
        let d = crate::solver::AmgParams::default();
        TracePreconditioner::Amg {
            theta: TRACE_AMG_THETA,
            smoother: d.smoother,
            cycle: d.cycle,
            max_coarse: d.max_coarse,
        }
    }
}

/// Parameters of the trace solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceSolverParams {
    /// When the trace solve stops.
    pub stop: Stopping,
    /// The preconditioner.
    pub preconditioner: TracePreconditioner,
    /// Progress display of the solver.
    pub progress: Progress,
    /// Read the device-resident residual every this many iterations (PCG keeps its
    /// scalars on the device; each read is a host round trip).
    pub check_every: usize,
}

impl TraceSolverParams {
    /// `rtol = 10⁻¹⁰` (`10⁻⁵` when the solve runs in f32: the f32 residual of `K`, whose
    /// condition grows like `h⁻²`, stalls near `10⁻⁶`), 20000 iterations, block-Jacobi, no
    /// progress display, the residual read every 10 iterations. (`10⁻¹²` was the default
    /// until the true f64 residual was seen to stall above it: P = 3 on 80 x 80 squares
    /// reaches 5·10⁻¹², and the PCG then rightly reports `ResidualGap`.)
    pub fn for_precision<S: Scalar>() -> Self {
        TraceSolverParams {
            stop: Stopping::new(if S::EPS > 1e-10 { 1e-5 } else { 1e-10 }, 20_000),
            preconditioner: TracePreconditioner::Auto,
            progress: Progress::Never,
            check_every: 10,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_resolves_at_the_threshold() {
        let auto = TracePreconditioner::Auto;
        assert_eq!(
            auto.resolve(TRACE_AMG_MIN_DOFS - 1),
            TracePreconditioner::BlockJacobi
        );
        assert_eq!(auto.resolve(TRACE_AMG_MIN_DOFS), TracePreconditioner::amg());
        let cheb = TracePreconditioner::Chebyshev { degree: 4 };
        assert_eq!(cheb.resolve(10 * TRACE_AMG_MIN_DOFS), cheb);
        assert_eq!(
            TracePreconditioner::BlockJacobi.resolve(usize::MAX),
            TracePreconditioner::BlockJacobi
        );
        assert_eq!(
            TraceSolverParams::for_precision::<f64>().preconditioner,
            auto
        );
    }
}
