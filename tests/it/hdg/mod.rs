//! HDG: every stage on every backend against the CPU `f64` stage on the same mesh (NaN-
//! poisoned kernel outputs; [`stages`]), h-convergence on structured and perturbed meshes,
//! patch tests, mixed precision, real Gmsh meshes and bad input ([`accuracy`]). The
//! manufactured problems shared by both are here.

mod accuracy;
mod stages;

use std::collections::HashMap;
use std::f64::consts::PI;

use galerkin::backend::BackendCore;
use galerkin::hdg::{
    CoefficientKind, Exact, Hdg, HdgOps, HdgParams, L2Errors, Problem, TracePreconditioner,
    TraceSolverParams, TraceTopology, TRACE_SLOTS,
};
use galerkin::mesh::tri::{square_tags as Boundary, Diagonal, TriMesh, NO_ELEMENT};
use galerkin::sparse::PAD;
use galerkin::verify::{poison, random_range};
use galerkin::{Backend, Cpu, Element, Error, Scalar};

use crate::backend_tests;
use crate::harness::{announce, widen};

/// A smooth solution with every kind of mode: `sin(πx) sin(πy) + x y + eˣ/3`.
fn smooth_u(x: f64, y: f64) -> f64 {
    (PI * x).sin() * (PI * y).sin() + x * y + x.exp() / 3.0
}
fn smooth_grad(x: f64, y: f64) -> [f64; 2] {
    [
        PI * (PI * x).cos() * (PI * y).sin() + y + x.exp() / 3.0,
        PI * (PI * x).sin() * (PI * y).cos() + x,
    ]
}
/// `−∇²u` of [`smooth_u`].
fn smooth_laplacian_neg(x: f64, y: f64) -> f64 {
    2.0 * PI * PI * (PI * x).sin() * (PI * y).sin() - x.exp() / 3.0
}

/// A problem `−∇²u + λu = f` with exact solution `u`, Neumann flux from the gradient.
struct Manufactured<'a> {
    u: &'a (dyn Fn(f64, f64) -> f64 + Sync),
    grad: &'a (dyn Fn(f64, f64) -> [f64; 2] + Sync),
    rhs: Box<dyn Fn(f64, f64) -> f64 + Sync + 'a>,
    flux: Box<dyn Fn(f64, f64, [f64; 2]) -> f64 + Sync + 'a>,
}

impl<'a> Manufactured<'a> {
    fn new(
        u: &'a (dyn Fn(f64, f64) -> f64 + Sync),
        grad: &'a (dyn Fn(f64, f64) -> [f64; 2] + Sync),
        laplacian_neg: &'a (dyn Fn(f64, f64) -> f64 + Sync),
        lambda: f64,
    ) -> Self {
        Manufactured {
            u,
            grad,
            rhs: Box::new(move |x, y| laplacian_neg(x, y) + lambda * u(x, y)),
            flux: Box::new(move |x, y, n| {
                let g = grad(x, y);
                g[0] * n[0] + g[1] * n[1]
            }),
        }
    }

    fn problem(&self) -> Problem<'_> {
        Problem {
            rhs: &*self.rhs,
            dirichlet: self.u,
            flux: Some(&*self.flux),
        }
    }

    fn exact(&self) -> Exact<'_> {
        Exact {
            u: self.u,
            grad: self.grad,
        }
    }
}

fn smooth(lambda: f64) -> Manufactured<'static> {
    Manufactured::new(&smooth_u, &smooth_grad, &smooth_laplacian_neg, lambda)
}

/// Solves and returns the errors and the iteration count (asserting convergence).
fn solve<B: Backend + HdgOps, V: Scalar, S: Scalar>(
    backend: &B,
    mesh: &TriMesh,
    params: HdgParams,
    neumann: &[i32],
    m: &Manufactured<'_>,
    solver: &TraceSolverParams,
) -> (L2Errors, usize) {
    let hdg = Hdg::<B, V, S>::new(backend, mesh, params, neumann).unwrap();
    let sol = hdg.run(&m.problem(), solver, true).unwrap();
    assert!(
        sol.trace.report.converged(),
        "P = {} on {} triangles ({} / {}): {:?}",
        params.degree,
        mesh.num_triangles(),
        V::DTYPE,
        S::DTYPE,
        sol.trace.report
    );
    (
        hdg.errors(&sol.fields, &m.exact()).unwrap(),
        sol.trace.report.iterations,
    )
}

fn params(degree: usize, tau: f64, lambda: f64) -> HdgParams {
    let mut p = HdgParams::new(degree);
    p.tau = tau;
    p.lambda = lambda;
    p
}
