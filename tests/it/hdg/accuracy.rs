//! What the discretisation delivers: h-rates, patch tests, precision, real meshes, bad input.

use super::*;
use galerkin::hdg::HdgOps;

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
fn hdg_convergence<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
backend_tests!(tier2: hdg_convergence);

/// At high P the errors keep falling to ~1e-11 (the seed's rise after P = 5 does not
/// happen): P = 5..9 on a 6 x 6 perturbed mesh, f64 (u* at P = 9 by blocks: 66 modes).
fn hdg_high_degree<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
backend_tests!(tier2_devices: hdg_high_degree);

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
fn hdg_patch_test<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
            let tol = 1e5 * T::EPS.max(solver.stop.rtol);
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
fn hdg_mixed_precision<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
backend_tests!(tier2_devices: hdg_mixed_precision);

/// Chebyshev over block-Jacobi solves the same system in fewer PCG iterations.
fn hdg_chebyshev<B: Backend + HdgOps, T: Scalar>(b: &B) {
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
backend_tests!(tier2_devices: hdg_chebyshev);

// ---------------------------------------------------------------------------------------
// Real meshes

/// The Gmsh meshes of `$GALERKIN_DATA_DIR`: read, oriented, solved at P = 1 and 3 with a
/// smooth solution in f64; P = 3 is far more accurate and `u*` beats `u`. The AMfe bow
/// (7,090 triangles) on every backend, the Gridap geometry (89,180) on the CPU only (minutes
/// on lavapipe).
fn hdg_gmsh_meshes<B: Backend + HdgOps, T: Scalar>(b: &B) {
    if T::EPS > 1e-10 {
        return;
    }
    let Some(dir) = std::env::var_os("GALERKIN_DATA_DIR") else {
        announce("[galerkin tests] skipping hdg_gmsh_meshes: GALERKIN_DATA_DIR is not set");
        return;
    };
    let files: &[&str] = if b.kind() == galerkin::BackendKind::Cpu {
        &[
            "amfe_c_bow_fine_tri2d_v22.msh",
            "gridaptutorials_geometry_tri2d_v41.msh",
        ]
    } else {
        &["amfe_c_bow_fine_tri2d_v22.msh"]
    };
    for file in files {
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
            let (e, it) = solve::<B, T, T>(b, &mesh, params(p, 1.0, 0.0), neumann, &m, &solver);
            announce(&format!(
                "[hdg gmsh] {} {file}: {} triangles, tags {tags:?}, P = {p}: u {:.2e} q {:.2e} u* {:.2e} ({it} it)",
                b.kind(),
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
backend_tests!(tier2: hdg_gmsh_meshes);

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
    let no_flux = Problem {
        rhs: &f,
        dirichlet: &f,
        flux: None,
    };
    expect_invalid(hdg.load(&local, &no_flux), &["flux"]);
    // Released local solvers.
    let mut local = local;
    local.release();
    expect_invalid(hdg.load(&local, &no_flux), &["released"]);
    // The generated meshes: a perturbation that could invert triangles, n = 0.
    expect_invalid(
        TriMesh::unit_square(4, Diagonal::Up, 0.3, 1),
        &["perturbation"],
    );
    expect_invalid(TriMesh::unit_square(0, Diagonal::Up, 0.0, 1), &["n"]);
    let _ = NO_ELEMENT;
}
