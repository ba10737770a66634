//! Each HDG kernel and stage on every backend against the CPU in f64.

use super::*;
use galerkin::hdg::HdgOps;

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
fn hdg_kernels<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
fn hdg_stages<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
    let tol_solve = 1e4 * solver.stop.rtol.max(T::EPS);
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

/// The conformance checks of the HDG stages pass on every backend and precision.
fn hdg_conformance<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
backend_tests!(tier2_devices: hdg_conformance);
