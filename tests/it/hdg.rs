//! HDG: every stage on every backend against the CPU `f64` stage on the same mesh (NaN-
//! poisoned kernel outputs), h-convergence on structured and perturbed meshes, patch tests,
//! mixed precision, real Gmsh meshes and bad input.

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
fn solve<B: Backend, V: Scalar, S: Scalar>(
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

// ---------------------------------------------------------------------------------------
// Kernels against the CPU, outputs poisoned

/// The mesh and topology of the stage tests: perturbed, alternating diagonals, one
/// Neumann side.
fn stage_mesh() -> (TriMesh, [i32; 1]) {
    (
        TriMesh::unit_square(5, Diagonal::Alternating, 0.2, 7).unwrap(),
        [Boundary::RIGHT],
    )
}

/// `HdgOps` on `b` in `T` against the CPU in `f64`, every output poisoned first.
fn hdg_kernels<B: Backend, T: Scalar>(b: &B) {
    let cpu = Cpu::new();
    let (mesh, neumann) = stage_mesh();
    let count = mesh.num_triangles();
    for p in [1usize, 4] {
        let nl = p + 1;
        let topo = TraceTopology::new(&mesh, nl, &neumann).unwrap();
        let vertices: Vec<f64> = mesh
            .triangles
            .iter()
            .flat_map(|t| t.iter().flat_map(|&v| mesh.points[v as usize]))
            .collect();
        let to_t = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let (vert_d, flips_d) = (
            b.upload(&to_t(&vertices)).unwrap(),
            b.upload(&topo.flips).unwrap(),
        );
        let (vert_c, flips_c) = (
            cpu.upload(&vertices).unwrap(),
            cpu.upload(&topo.flips).unwrap(),
        );
        for kind in CoefficientKind::ALL {
            let len = count * kind.width();
            let mut out = b.upload(&poison::<T>(len)).unwrap();
            let mut reference = cpu.upload(&poison::<f64>(len)).unwrap();
            let (tau, lambda) = (1.5, 2.0);
            // SAFETY: the lengths of the HdgOps contract.
            unsafe {
                b.hdg_coefficients::<T, T>(
                    kind,
                    T::from_f64(tau),
                    T::from_f64(lambda),
                    &vert_d,
                    &flips_d,
                    &mut out,
                )
                .unwrap();
                cpu.hdg_coefficients::<f64, f64>(
                    kind,
                    tau,
                    lambda,
                    &vert_c,
                    &flips_c,
                    &mut reference,
                )
                .unwrap();
            }
            let (out, reference) = (b.download(&out).unwrap(), cpu.download(&reference).unwrap());
            assert!(
                reference.iter().all(|v| v.is_finite()),
                "{kind:?}: CPU reference"
            );
            // Coefficients are short sums of products of the vertex coordinates (rounded to T).
            crate::harness::assert_close::<T>(
                &out,
                &reference,
                64,
                &format!("coefficients {kind:?} P = {p}"),
            );
        }

        // Edge-to-element lists: the device sort against the host construction.
        let elem_edges: Vec<u32> = mesh.elem_edges.iter().flatten().copied().collect();
        let mut rows = b
            .upload(&vec![0xDEAD_BEEFu32; 2 * mesh.num_edges()])
            .unwrap();
        // SAFETY: elem_edges 3 count values below num_edges, rows 2 num_edges.
        unsafe {
            b.hdg_edge_elements(&b.upload(&elem_edges).unwrap(), &mut rows)
                .unwrap()
        };
        let rows = b.download(&rows).unwrap();
        let expected: Vec<u32> = mesh.edge_elements().into_iter().flatten().collect();
        assert_eq!(rows, expected, "edge-to-element lists, P = {p}");

        // Assembly: random element matrices and vectors, the free-edge rows.
        let free_rows: Vec<u32> = topo
            .free_edges
            .iter()
            .flat_map(|&g| [rows[2 * g as usize], rows[2 * g as usize + 1]])
            .collect();
        let nfree = topo.nfree();
        let w = 3 * nl;
        let ke = random_range::<f64>(count * w * w, -1.0, 1.0, 11 + p as u64);
        let ke = round::<T>(&ke);
        let g = round::<T>(&random_range::<f64>(count * w, -1.0, 1.0, 12));
        let (rows_d, dofs_d) = (
            b.upload(&free_rows).unwrap(),
            b.upload(&topo.elem_dofs).unwrap(),
        );
        let (rows_c, dofs_c) = (
            cpu.upload(&free_rows).unwrap(),
            cpu.upload(&topo.elem_dofs).unwrap(),
        );
        let nvalues = nfree * nl * TRACE_SLOTS * nl;
        let mut values = b.upload(&poison::<T>(nvalues)).unwrap();
        let mut neighbours = b
            .upload(&vec![0xDEAD_BEEFu32; TRACE_SLOTS * nfree])
            .unwrap();
        let mut rhs = b.upload(&poison::<T>(nfree * nl)).unwrap();
        let mut values_c = cpu.upload(&poison::<f64>(nvalues)).unwrap();
        let mut neighbours_c = cpu.upload(&vec![0u32; TRACE_SLOTS * nfree]).unwrap();
        let mut rhs_c = cpu.upload(&poison::<f64>(nfree * nl)).unwrap();
        // SAFETY: the lengths of the HdgOps contract.
        unsafe {
            let (ke_d, g_d) = (b.upload(&to_t(&ke)).unwrap(), b.upload(&to_t(&g)).unwrap());
            b.hdg_assemble_matrix(nl, &ke_d, &rows_d, &dofs_d, &mut values, &mut neighbours)
                .unwrap();
            b.hdg_assemble_vector::<T, T>(nl, &g_d, &rows_d, &mut rhs)
                .unwrap();
            let (ke_c, g_c) = (cpu.upload(&ke).unwrap(), cpu.upload(&g).unwrap());
            cpu.hdg_assemble_matrix(
                nl,
                &ke_c,
                &rows_c,
                &dofs_c,
                &mut values_c,
                &mut neighbours_c,
            )
            .unwrap();
            cpu.hdg_assemble_vector::<f64, f64>(nl, &g_c, &rows_c, &mut rhs_c)
                .unwrap();
        }
        let neighbours_c = cpu.download(&neighbours_c).unwrap();
        assert_eq!(
            b.download(&neighbours).unwrap(),
            neighbours_c,
            "K neighbours, P = {p}"
        );
        // Sums of at most two rounded values: exact up to one rounding.
        crate::harness::assert_close::<T>(
            &b.download(&values).unwrap(),
            &cpu.download(&values_c).unwrap(),
            2,
            "K values",
        );
        crate::harness::assert_close::<T>(
            &b.download(&rhs).unwrap(),
            &cpu.download(&rhs_c).unwrap(),
            2,
            "F",
        );
        // The CPU assembly against a direct sum over the elements.
        check_assembly(
            &mesh,
            &topo,
            &ke,
            &neighbours_c,
            &cpu.download(&values_c).unwrap(),
        );
    }
}
backend_tests!(hdg_kernels);

fn round<T: Element>(v: &[f64]) -> Vec<f64> {
    v.iter().map(|&x| T::from_f64(x).as_f64()).collect()
}

/// `K` from the block-ELL arrays equals `Σₑ` of the element matrices scattered by dofs.
fn check_assembly(
    mesh: &TriMesh,
    topo: &TraceTopology,
    ke: &[f64],
    neighbours: &[u32],
    values: &[f64],
) {
    let (nl, nfree) = (topo.nl, topo.nfree());
    let n = nfree * nl;
    let mut dense = vec![0.0; n * n];
    for e in 0..mesh.num_triangles() {
        for a in 0..3 {
            let da = topo.elem_dofs[3 * e + a];
            for c in 0..3 {
                let dc = topo.elem_dofs[3 * e + c];
                if da == PAD || dc == PAD {
                    continue;
                }
                for i in 0..nl {
                    for j in 0..nl {
                        let w = 3 * nl;
                        dense[(da as usize * nl + i) * n + dc as usize * nl + j] +=
                            ke[e * w * w + (a * nl + i) * w + c * nl + j];
                    }
                }
            }
        }
    }
    let mut from_ell = vec![0.0; n * n];
    for g in 0..nfree {
        for s in 0..TRACE_SLOTS {
            let col = neighbours[g * TRACE_SLOTS + s];
            if col == PAD {
                continue;
            }
            assert!((col as usize) < nfree, "neighbour {col} of block row {g}");
            for i in 0..nl {
                for j in 0..nl {
                    // Block-ELL values, column-major: [(i + m l) + m r (k m + j)].
                    let v = values[(i + nl * g) + nl * nfree * (s * nl + j)];
                    from_ell[(g * nl + i) * n + col as usize * nl + j] += v;
                }
            }
        }
    }
    let err = dense
        .iter()
        .zip(&from_ell)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        err < 1e-13,
        "block-ELL K differs from the element sum by {err:e}"
    );
}

// ---------------------------------------------------------------------------------------
// The stages against the CPU

fn to64<T: Element>(v: &[T]) -> Vec<f64> {
    widen(v)
}

#[track_caller]
fn assert_rel<T: Element>(result: &[T], reference: &[f64], tol: f64, case: &str) {
    let c = galerkin::verify::compare(result, reference, tol).unwrap();
    assert!(c.passed, "{case} ({}): {c}", T::DTYPE);
}

/// Every stage on `b` in `T` against the CPU in `f64`: local solvers, load, K, the trace
/// solution, the recovered and post-processed fields.
fn hdg_stages<B: Backend, T: Scalar>(b: &B) {
    let (mesh, neumann) = stage_mesh();
    let m = smooth(2.0);
    let prm = params(3, 1.5, 2.0);
    let cpu = Cpu::new();
    let reference = Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, prm, &neumann).unwrap();
    let device = Hdg::<B, T, T>::new(b, &mesh, prm, &neumann).unwrap();
    assert_eq!(
        device.trace_rows().unwrap(),
        reference.trace_rows().unwrap(),
        "trace rows"
    );
    // Local matrices: Cholesky solves of Z⁻¹ (condition ~10³ at P = 3) amplify round-off.
    let tol = 1e4 * T::EPS;
    let (lr, ld) = (
        reference.local_solvers().unwrap(),
        device.local_solvers().unwrap(),
    );
    let pairs = [
        (
            "Cholesky factor of Z⁻¹",
            lr.factor().unwrap(),
            ld.factor().unwrap(),
        ),
        ("𝕌", lr.u_map(), ld.u_map()),
        ("Kᵉ", lr.ke().unwrap(), ld.ke().unwrap()),
    ];
    for (name, r, d) in pairs {
        assert_eq!(
            (d.count(), d.nrows(), d.ncols()),
            (r.count(), r.nrows(), r.ncols()),
            "{name}"
        );
        assert_rel(&d.to_vec().unwrap(), &r.to_vec().unwrap(), tol, name);
    }
    let (loadr, loadd) = (
        reference.load(&lr, &m.problem()).unwrap(),
        device.load(&ld, &m.problem()).unwrap(),
    );
    assert_rel(
        &loadd.u_f.to_vec().unwrap(),
        &loadr.u_f.to_vec().unwrap(),
        tol,
        "u_f",
    );
    assert_rel(
        &loadd.g.to_vec().unwrap(),
        &loadr.g.to_vec().unwrap(),
        tol,
        "g",
    );
    assert_rel(
        &loadd.lambda_d.to_vec().unwrap(),
        &loadr.lambda_d.to_vec().unwrap(),
        tol,
        "λ_D",
    );
    assert_rel(
        &loadd.neumann.to_vec().unwrap(),
        &loadr.neumann.to_vec().unwrap(),
        tol,
        "Neumann load",
    );
    let (sr, sd) = (
        reference.assemble(&lr, &loadr).unwrap(),
        device.assemble(&ld, &loadd).unwrap(),
    );
    let (kr, kd) = (sr.k.to_host().unwrap(), sd.k.to_host().unwrap());
    assert_eq!(kd.neighbours(), kr.neighbours(), "K neighbours");
    let (kr, kd) = (kr.to_csr().unwrap(), kd.to_csr().unwrap());
    assert_eq!(kd.col_idx(), kr.col_idx(), "K pattern");
    assert_rel(kd.values(), kr.values(), tol, "K");
    assert_rel(
        &sd.rhs.to_vec().unwrap(),
        &sr.rhs.to_vec().unwrap(),
        tol,
        "F",
    );
    assert_rel(
        &sd.diagonal.to_vec().unwrap(),
        &sr.diagonal.to_vec().unwrap(),
        tol,
        "diagonal blocks",
    );
    let solver = TraceSolverParams::for_precision::<T>();
    let (tr, td) = (
        reference
            .solve(&sr, &TraceSolverParams::for_precision::<f64>())
            .unwrap(),
        device.solve(&sd, &solver).unwrap(),
    );
    assert!(td.report.converged(), "{:?}", td.report);
    // K has condition ~10⁴ here: the solution error is the residual times that.
    let tol_solve = 1e4 * solver.rtol.max(T::EPS);
    assert_rel(
        &td.lambda.to_vec().unwrap(),
        &tr.lambda.to_vec().unwrap(),
        tol_solve,
        "λ",
    );
    let (mut fr, mut fd) = (
        reference.recover(&lr, &loadr, &tr.lambda).unwrap(),
        device.recover(&ld, &loadd, &td.lambda).unwrap(),
    );
    assert_rel(
        &fd.u.to_vec().unwrap(),
        &fr.u.to_vec().unwrap(),
        tol_solve,
        "u",
    );
    assert_rel(
        &fd.q.to_vec().unwrap(),
        &fr.q.to_vec().unwrap(),
        tol_solve,
        "q",
    );
    reference.post_process(&mut fr).unwrap();
    device.post_process(&mut fd).unwrap();
    let (ur, ud) = (fr.u_star.unwrap(), fd.u_star.unwrap());
    assert_rel(
        &ud.to_vec().unwrap(),
        &ur.to_vec().unwrap(),
        tol_solve,
        "u*",
    );
    let _ = to64::<T>;
}
backend_tests!(hdg_stages);

// ---------------------------------------------------------------------------------------
// Convergence

/// The meshes of the convergence study: structured with either diagonal and perturbed.
fn convergence_meshes(n: usize) -> [(&'static str, TriMesh); 3] {
    [
        (
            "structured alternating",
            TriMesh::unit_square(n, Diagonal::Alternating, 0.0, 0).unwrap(),
        ),
        (
            "structured up",
            TriMesh::unit_square(n, Diagonal::Up, 0.0, 0).unwrap(),
        ),
        (
            "perturbed down",
            TriMesh::unit_square(n, Diagonal::Down, 0.2, 3 + n as u64).unwrap(),
        ),
    ]
}

/// h-rates in f64 for P = 1..6 on three meshes: `u`, `q` at least `P + 1 − 0.2`, `u*` at
/// least `P + 2 − 0.3`; Dirichlet everywhere except the top (Neumann), `λ = 1`.
fn hdg_convergence<B: Backend, T: Scalar>(b: &B) {
    if T::EPS > 1e-10 {
        return; // f64 only: f32 is the subject of hdg_single_precision
    }
    let m = smooth(1.0);
    let solver = TraceSolverParams::for_precision::<f64>();
    // Mesh pairs in the asymptotic range and above the round-off floor.
    for (p, n0) in [(1, 8), (2, 8), (3, 4), (4, 4), (5, 3), (6, 3)] {
        let coarse = convergence_meshes(n0);
        let fine = convergence_meshes(2 * n0);
        for ((name, mc), (_, mf)) in coarse.iter().zip(&fine) {
            let (ec, _) =
                solve::<B, T, T>(b, mc, params(p, 1.0, 1.0), &[Boundary::TOP], &m, &solver);
            let (ef, _) =
                solve::<B, T, T>(b, mf, params(p, 1.0, 1.0), &[Boundary::TOP], &m, &solver);
            let ratio = (mc.h() / mf.h()).ln();
            let rate = |a: f64, f: f64| (a / f).ln() / ratio;
            let (ru, rq, rs) = (
                rate(ec.u, ef.u),
                rate(ec.q, ef.q),
                rate(ec.u_star.unwrap(), ef.u_star.unwrap()),
            );
            announce(&format!(
                "[hdg convergence] P = {p} {name}: u {:.2e} rate {ru:.2}, q {:.2e} rate {rq:.2}, u* {:.2e} rate {rs:.2}",
                ef.u, ef.q, ef.u_star.unwrap()
            ));
            let pf = p as f64;
            assert!(ru >= pf + 1.0 - 0.2, "P = {p} {name}: u rate {ru}");
            assert!(rq >= pf + 1.0 - 0.2, "P = {p} {name}: q rate {rq}");
            assert!(rs >= pf + 2.0 - 0.3, "P = {p} {name}: u* rate {rs}");
        }
    }
}
backend_tests!(hdg_convergence);

/// At high P the errors keep falling to ~1e-11 (the seed's rise after P = 5 does not
/// happen): P = 5..9 on a 6 x 6 perturbed mesh, f64 (u* at P = 9 by blocks: 66 modes).
fn hdg_high_degree<B: Backend, T: Scalar>(b: &B) {
    if T::EPS > 1e-10 {
        return;
    }
    let m = smooth(0.0);
    let mesh = TriMesh::unit_square(6, Diagonal::Alternating, 0.15, 5).unwrap();
    let solver = TraceSolverParams::for_precision::<f64>();
    let mut previous = f64::INFINITY;
    for p in 5..=9 {
        let (e, it) = solve::<B, T, T>(b, &mesh, params(p, 1.0, 0.0), &[], &m, &solver);
        announce(&format!(
            "[hdg high degree] P = {p}: u {:.2e} q {:.2e} u* {:.2e} ({it} iterations)",
            e.u,
            e.q,
            e.u_star.unwrap()
        ));
        assert!(
            e.u < previous.max(3e-11),
            "P = {p}: u error {} after {previous}",
            e.u
        );
        previous = e.u;
    }
    assert!(previous < 3e-11, "P = 9: u error {previous}");
    let (e, _) = solve::<B, T, T>(b, &mesh, params(9, 1.0, 0.0), &[], &m, &solver);
    assert!(e.u_star.unwrap() < 3e-11, "P = 9: u* error {e:?}");
}
backend_tests!(hdg_high_degree);

// ---------------------------------------------------------------------------------------
// Patch tests

/// A random polynomial of total degree `p`: `Σ c_ab xᵃ yᵇ`.
struct Poly {
    terms: Vec<(i32, i32, f64)>,
}

impl Poly {
    fn random(p: usize, seed: u64) -> Self {
        let mut terms = Vec::new();
        let c = random_range::<f64>(64, -1.0, 1.0, seed);
        for a in 0..=p as i32 {
            for bb in 0..=(p as i32 - a) {
                terms.push((a, bb, c[terms.len()]));
            }
        }
        Poly { terms }
    }
    fn eval(&self, x: f64, y: f64, dx: i32, dy: i32) -> f64 {
        let fall = |k: i32, d: i32| (0..d).map(|i| (k - i) as f64).product::<f64>();
        self.terms
            .iter()
            .filter(|(a, b, _)| *a >= dx && *b >= dy)
            .map(|&(a, b, c)| c * fall(a, dx) * fall(b, dy) * x.powi(a - dx) * y.powi(b - dy))
            .sum()
    }
}

/// Polynomial solutions of degree ≤ P are reproduced to round-off (u, q and u*), on a
/// perturbed mesh with Neumann sides and `λ > 0`.
fn hdg_patch_test<B: Backend, T: Scalar>(b: &B) {
    let mesh = TriMesh::unit_square(3, Diagonal::Alternating, 0.2, 9).unwrap();
    for p in 1..=4usize {
        for degree in [p - 1, p] {
            let poly = Poly::random(degree, 100 + 10 * p as u64 + degree as u64);
            let u = |x: f64, y: f64| poly.eval(x, y, 0, 0);
            let grad = |x: f64, y: f64| [poly.eval(x, y, 1, 0), poly.eval(x, y, 0, 1)];
            let lap = |x: f64, y: f64| -(poly.eval(x, y, 2, 0) + poly.eval(x, y, 0, 2));
            let m = Manufactured::new(&u, &grad, &lap, 0.5);
            let solver = TraceSolverParams::for_precision::<T>();
            let (e, _) = solve::<B, T, T>(
                b,
                &mesh,
                params(p, 2.0, 0.5),
                &[Boundary::LEFT, Boundary::TOP],
                &m,
                &solver,
            );
            // Round-off of T times the conditioning of the local and trace solves.
            let tol = 1e5 * T::EPS.max(solver.rtol);
            assert!(
                e.u < tol && e.q < 10.0 * tol && e.u_star.unwrap() < tol,
                "P = {p}, polynomial of degree {degree} ({}): errors {e:?}, tolerance {tol:e}",
                T::DTYPE
            );
        }
    }
}
backend_tests!(hdg_patch_test);

// ---------------------------------------------------------------------------------------
// Precision

/// Mixed precision (element matrices and K in f32, the solve in f64) gives the f64 errors
/// to a few digits wherever they lie above f32 round-off; plain f32 follows f64 down to
/// where its round-off takes over, and the test says where that is.
fn hdg_mixed_precision<B: Backend, T: Scalar>(b: &B) {
    if T::EPS < 1e-10 || !b.info().supports_f64() {
        return; // once per backend (the f32 instantiation), where f64 exists
    }
    let m = smooth(1.0);
    for (p, n) in [(1, 4), (1, 16), (2, 8), (3, 4), (4, 8)] {
        let mesh = TriMesh::unit_square(n, Diagonal::Alternating, 0.1, 2).unwrap();
        let prm = params(p, 1.0, 1.0);
        let s64 = TraceSolverParams::for_precision::<f64>();
        let (e64, it64) = solve::<B, f64, f64>(b, &mesh, prm, &[Boundary::TOP], &m, &s64);
        let (emix, itmix) = solve::<B, f32, f64>(b, &mesh, prm, &[Boundary::TOP], &m, &s64);
        let (e32, it32) = solve::<B, f32, f32>(
            b,
            &mesh,
            prm,
            &[Boundary::TOP],
            &m,
            &TraceSolverParams::for_precision::<f32>(),
        );
        announce(&format!(
            "[hdg precision] P = {p} n = {n}: u f64 {:.3e} ({it64} it), mixed {:.3e} ({itmix} it), f32 {:.3e} ({it32} it)",
            e64.u, emix.u, e32.u
        ));
        let close = |a: f64, r: f64, digits: f64| ((a - r) / r).abs() < 10f64.powf(-digits);
        for (name, d, mx) in [
            ("u", e64.u, emix.u),
            ("q", e64.q, emix.q),
            ("u*", e64.u_star.unwrap(), emix.u_star.unwrap()),
        ] {
            // Above f32 round-off (1e-4 relative to the O(1) solution): the same to 3 digits.
            if d > 1e-4 {
                assert!(
                    close(mx, d, 3.0),
                    "mixed {name} error {mx:e} vs f64 {d:e} (P = {p}, n = {n})"
                );
            }
        }
        // f32: where the discretisation error dominates, the f64 error to 2 digits; below,
        // a floor of f32 round-off (~1e-5), never worse.
        if e64.u > 1e-3 {
            assert!(
                close(e32.u, e64.u, 2.0),
                "f32 u error {:e} vs f64 {:e}",
                e32.u,
                e64.u
            );
        }
        assert!(
            e32.u < e64.u + 1e-4,
            "f32 u error {:e} vs f64 {:e}",
            e32.u,
            e64.u
        );
        if e32.u > 2.0 * e64.u {
            announce(&format!(
                "[hdg precision] P = {p} n = {n}: f32 stops at u error {:.1e} (f64 {:.1e}): its round-off dominates",
                e32.u, e64.u
            ));
        }
    }
}
backend_tests!(hdg_mixed_precision);

/// Chebyshev over block-Jacobi solves the same system in fewer PCG iterations.
fn hdg_chebyshev<B: Backend, T: Scalar>(b: &B) {
    let mesh = TriMesh::unit_square(6, Diagonal::Up, 0.1, 4).unwrap();
    let m = smooth(0.0);
    let mut solver = TraceSolverParams::for_precision::<T>();
    let (ej, itj) = solve::<B, T, T>(b, &mesh, params(3, 1.0, 0.0), &[], &m, &solver);
    solver.preconditioner = TracePreconditioner::Chebyshev { degree: 4 };
    let (ec, itc) = solve::<B, T, T>(b, &mesh, params(3, 1.0, 0.0), &[], &m, &solver);
    assert!(
        itc * 2 < itj,
        "Chebyshev {itc} iterations, block-Jacobi {itj}"
    );
    // The same discretisation error, up to the solver tolerance (10⁻⁵ in f32).
    let tol = if T::EPS > 1e-10 { 0.05 } else { 1e-6 };
    assert!(
        ((ec.u - ej.u) / ej.u).abs() < tol,
        "errors {ec:?} vs {ej:?}"
    );
}
backend_tests!(hdg_chebyshev);

// ---------------------------------------------------------------------------------------
// Real meshes

/// The Gmsh meshes of `$GALERKIN_DATA_DIR`: read, oriented, solved at P = 1 and 3 with a
/// smooth solution; P = 3 is far more accurate and `u*` beats `u`.
#[test]
fn hdg_gmsh_meshes() {
    let Some(dir) = std::env::var_os("GALERKIN_DATA_DIR") else {
        announce("[galerkin tests] skipping hdg_gmsh_meshes: GALERKIN_DATA_DIR is not set");
        return;
    };
    let cpu = Cpu::new();
    for file in [
        "amfe_c_bow_fine_tri2d_v22.msh",
        "gridaptutorials_geometry_tri2d_v41.msh",
    ] {
        let path = std::path::PathBuf::from(&dir).join("msh").join(file);
        let gmsh = galerkin::mesh::gmsh::read(&path).unwrap();
        // The AMfe file tags no boundary line: its boundary gets tag 1.
        let mesh = match TriMesh::from_gmsh(&gmsh) {
            Ok(mesh) => mesh,
            Err(e) => {
                assert!(e.to_string().contains("no physical tag"), "{file}: {e}");
                TriMesh::from_gmsh_with_default_tag(&gmsh, 1).unwrap()
            }
        };
        // A solution scaled to the mesh: u(x/L, y/L).
        let scale = mesh
            .points
            .iter()
            .flat_map(|p| p.iter().map(|c| c.abs()))
            .fold(0.0f64, f64::max);
        let u = move |x: f64, y: f64| smooth_u(x / scale, y / scale);
        let grad = move |x: f64, y: f64| smooth_grad(x / scale, y / scale).map(|g| g / scale);
        let lap =
            move |x: f64, y: f64| smooth_laplacian_neg(x / scale, y / scale) / (scale * scale);
        let m = Manufactured::new(&u, &grad, &lap, 0.0);
        // Neumann on the first tag when there are several, else Dirichlet everywhere.
        let tags = mesh.boundary_tags();
        let neumann = if tags.len() > 1 { &tags[..1] } else { &[] };
        let solver = TraceSolverParams::for_precision::<f64>();
        let mut errors = Vec::new();
        for p in [1, 3] {
            let (e, it) =
                solve::<Cpu, f64, f64>(&cpu, &mesh, params(p, 1.0, 0.0), neumann, &m, &solver);
            announce(&format!(
                "[hdg gmsh] {file}: {} triangles, tags {tags:?}, P = {p}: u {:.2e} q {:.2e} u* {:.2e} ({it} it)",
                mesh.num_triangles(),
                e.u,
                e.q,
                e.u_star.unwrap()
            ));
            errors.push(e);
        }
        assert!(errors[1].u < errors[0].u / 20.0, "{file}: {errors:?}");
        for e in &errors {
            assert!(e.u_star.unwrap() < e.u, "{file}: u* not better: {e:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Bad input

fn expect_invalid<T>(r: galerkin::Result<T>, words: &[&str]) {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => {
            let text = e.to_string();
            for w in words {
                assert!(text.contains(w), "message {text:?} lacks {w:?}");
            }
        }
        Err(e) => panic!("expected InvalidArgument mentioning {words:?}, got {e}"),
        Ok(_) => panic!("expected InvalidArgument mentioning {words:?}, got Ok"),
    }
}

fn square_tags() -> HashMap<(u32, u32), i32> {
    [((0, 1), 1), ((1, 2), 2), ((2, 3), 3), ((3, 0), 4)]
        .into_iter()
        .collect()
}

#[test]
fn hdg_bad_input() {
    let pts = vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
    let tags = square_tags();
    // Degenerate: three collinear points.
    let mut p2 = pts.clone();
    p2.push([0.5, 0.0]);
    expect_invalid(
        TriMesh::new(p2, vec![[0, 4, 1], [0, 1, 2], [0, 2, 3]], &tags, false),
        &["triangle 0", "degenerate"],
    );
    // Inverted (clockwise).
    expect_invalid(
        TriMesh::new(pts.clone(), vec![[0, 1, 2], [0, 3, 2]], &tags, true),
        &["triangle 1", "inverted"],
    );
    // A boundary edge without a tag.
    let mut partial = tags.clone();
    partial.remove(&(2, 3));
    expect_invalid(
        TriMesh::new(pts.clone(), vec![[0, 1, 2], [0, 2, 3]], &partial, true),
        &["tag"],
    );
    // No triangles; a point index out of range.
    expect_invalid(
        TriMesh::new(pts.clone(), vec![], &tags, true),
        &["no triangles"],
    );
    expect_invalid(
        TriMesh::new(pts.clone(), vec![[0, 1, 9]], &tags, false),
        &["point 9"],
    );
    let mesh = TriMesh::new(pts, vec![[0, 1, 2], [0, 2, 3]], &tags, true).unwrap();
    let cpu = Cpu::new();
    for p in [0, 10] {
        expect_invalid(
            Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, HdgParams::new(p), &[]),
            &["degree"],
        );
    }
    expect_invalid(
        Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, params(2, 0.0, 0.0), &[]),
        &["tau"],
    );
    expect_invalid(
        Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, params(2, 1.0, -1.0), &[]),
        &["lambda"],
    );
    expect_invalid(
        Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, HdgParams::new(2), &[7]),
        &["tag 7"],
    );
    // Pure Neumann with λ = 0: singular.
    expect_invalid(
        Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, HdgParams::new(2), &[1, 2, 3, 4]),
        &["constant"],
    );
    assert!(Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, params(2, 1.0, 1.0), &[1, 2, 3, 4]).is_ok());
    // Neumann edges without a flux.
    let hdg = Hdg::<Cpu, f64, f64>::new(&cpu, &mesh, HdgParams::new(2), &[2]).unwrap();
    let local = hdg.local_solvers().unwrap();
    let f = |_: f64, _: f64| 1.0;
    expect_invalid(
        hdg.load(
            &local,
            &Problem {
                rhs: &f,
                dirichlet: &f,
                flux: None,
            },
        ),
        &["flux"],
    );
    // Released local solvers.
    let mut local = local;
    local.release();
    expect_invalid(
        hdg.load(
            &local,
            &Problem {
                rhs: &f,
                dirichlet: &f,
                flux: None,
            },
        ),
        &["released"],
    );
    // The generated meshes: a perturbation that could invert triangles, n = 0.
    expect_invalid(
        TriMesh::unit_square(4, Diagonal::Up, 0.3, 1),
        &["perturbation"],
    );
    expect_invalid(TriMesh::unit_square(0, Diagonal::Up, 0.0, 1), &["n"]);
    let _ = NO_ELEMENT;
}

/// The conformance checks of the HDG stages pass on every backend and precision.
fn hdg_conformance<B: Backend, T: Scalar>(b: &B) {
    for c in galerkin::hdg::HdgCheck::standard() {
        let r = galerkin::verify::check::<B, T, _>(b, &c).unwrap();
        assert!(
            r.passed,
            "{} ({}): {r}",
            galerkin::verify::Check::name(&c),
            T::DTYPE
        );
    }
}
backend_tests!(hdg_conformance);
