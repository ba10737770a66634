//! What the stages of [`Hdg`](super::Hdg) produce and hand to each other, their times, and
//! the errors against an exact solution.

use std::time::Duration;

use crate::batched::Batch;
use crate::bundle::Backend;
use crate::hdg::host::Field;
use crate::hdg::ops::HdgOps;
use crate::scalar::{Element, Scalar};
use crate::solver::report::SolveReport;
use crate::sparse::BlockEll;
use crate::vector::Vector;

/// The local solvers of every element (stage "local"): `𝕌 = Z Bᵀ`, the Cholesky factor of
/// `Z⁻¹` and the local trace matrices `Kᵉ = C − B 𝕌`. Only `𝕌` is needed after assembly
/// ([`release`](Self::release) drops the rest).
pub struct LocalSolvers<B: Backend + HdgOps, V: Element> {
    pub(super) factor: Option<Batch<B, V>>,
    pub(super) u_map: Batch<B, V>,
    pub(super) ke: Option<Batch<B, V>>,
}

impl<B: Backend + HdgOps, V: Element> LocalSolvers<B, V> {
    /// `𝕌` (`count` matrices of `Nu x 3Nλ`): `u = u_f + 𝕌 λᵉ`.
    pub fn u_map(&self) -> &Batch<B, V> {
        &self.u_map
    }

    /// The local trace matrices `Kᵉ` (`3Nλ x 3Nλ`), until released.
    pub fn ke(&self) -> Option<&Batch<B, V>> {
        self.ke.as_ref()
    }

    /// The Cholesky factors of `Z⁻¹` (`Nu x Nu`), until released.
    pub fn factor(&self) -> Option<&Batch<B, V>> {
        self.factor.as_ref()
    }

    /// Drops what only the load and the assembly need (the factors and `Kᵉ`).
    pub fn release(&mut self) {
        self.factor = None;
        self.ke = None;
    }
}

/// The element data of the right-hand side (stage "load").
pub struct Load<B: Backend + HdgOps, V: Element, S: Scalar> {
    /// `u_f = Z fᵉ`, `count x Nu x 1`.
    pub u_f: Batch<B, V>,
    /// The element trace right-hand sides `𝕌ᵀ fᵉ − Kᵉ λ_Dᵉ`, `count x 3Nλ x 1`.
    pub g: Batch<B, V>,
    /// The Dirichlet trace values (`ndir · Nλ`).
    pub lambda_d: Vector<B, S>,
    /// The Neumann loads `∫ g_N ψ` on the free edges (`nfree · Nλ`).
    pub neumann: Vector<B, S>,
}

/// The trace system `K λ = F` (stage "assemble").
pub struct TraceSystem<B: Backend + HdgOps, V: Element, S: Scalar> {
    /// `K` in block-ELL: blocks of `Nλ`, 5 slots per block row, slot 0 the edge itself.
    pub k: BlockEll<B, V>,
    /// `F`.
    pub rhs: Vector<B, S>,
    /// The diagonal blocks of `K` (`nfree x Nλ x Nλ`), for block-Jacobi.
    pub diagonal: Batch<B, V>,
}

/// The solution of the trace system (stage "solve").
pub struct TraceSolution<B: Backend + HdgOps, S: Scalar> {
    /// `λ` on the free edges.
    pub lambda: Vector<B, S>,
    /// What the solver did.
    pub report: SolveReport,
    /// The AMG hierarchy's setup report, when AMG preconditioned the solve.
    pub amg: Option<crate::solver::AmgInfo>,
}

/// The recovered fields (stages "recover" and "post-process"), modal coefficients per
/// element.
pub struct Fields<B: Backend + HdgOps, V: Element> {
    /// `u`, `count x Nu x 1`.
    pub u: Batch<B, V>,
    /// `q = ∇u`: `count x 2Nu x 1`, the x component then the y component.
    pub q: Batch<B, V>,
    /// The post-processed `u*` of degree `P + 1`, `count x N(P+1) x 1`; `None` where the
    /// post-processing was not run.
    pub u_star: Option<Batch<B, V>>,
}

/// Wall time of each stage (the device synchronised after each).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Mesh topology, edge-to-element sort, uploads.
    pub setup: Duration,
    /// Local solver generation: coefficients, `Z⁻¹`, Cholesky, `𝕌`, `Kᵉ`.
    pub local: Duration,
    /// The right-hand side: `f` at quadrature points (host), `u_f`, element loads.
    pub load: Duration,
    /// Trace matrix and right-hand side assembly.
    pub assemble: Duration,
    /// The PCG solve (with the preconditioner set-up).
    pub solve: Duration,
    /// Recovery of `u` and `q`.
    pub recover: Duration,
    /// The post-processing `u*`.
    pub post_process: Duration,
}

impl StageTimes {
    /// The sum of the stages.
    pub fn total(&self) -> Duration {
        self.setup
            + self.local
            + self.load
            + self.assemble
            + self.solve
            + self.recover
            + self.post_process
    }

    /// `(name, time)` of every stage, in order.
    pub fn stages(&self) -> [(&'static str, Duration); 7] {
        [
            ("setup", self.setup),
            ("local", self.local),
            ("load", self.load),
            ("assemble", self.assemble),
            ("solve", self.solve),
            ("recover", self.recover),
            ("post_process", self.post_process),
        ]
    }
}

/// An exact solution, for the errors: `u` and its gradient.
#[derive(Clone, Copy)]
pub struct Exact<'a> {
    /// `u(x, y)`.
    pub u: Field<'a>,
    /// `∇u(x, y)`.
    pub grad: &'a (dyn Fn(f64, f64) -> [f64; 2] + Sync),
}

/// L2 errors of the recovered fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct L2Errors {
    /// `‖u − u_h‖`.
    pub u: f64,
    /// `‖∇u − q_h‖`.
    pub q: f64,
    /// `‖u − u*_h‖`, when post-processed.
    pub u_star: Option<f64>,
}

/// Everything a run produced.
pub struct Solution<B: Backend + HdgOps, V: Element, S: Scalar> {
    /// The recovered fields.
    pub fields: Fields<B, V>,
    /// The trace solution and its solver report.
    pub trace: TraceSolution<B, S>,
    /// Stage times.
    pub times: StageTimes,
}
