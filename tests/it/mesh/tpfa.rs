//! The TPFA matrices (cell-centred on tets, median dual on points) against an independent
//! triplet assembly, on structured and real Gmsh meshes.

use std::collections::HashMap;

use galerkin::fvm;
use galerkin::mesh::structured::StructuredTets;
use galerkin::mesh::Mesh;
use galerkin::sparse::{Coo, Csr};
use galerkin::verify::random_vec;
use galerkin::Cpu;

use super::{data_dir, face_counts, read, MANIFEST};

/// The properties every TPFA matrix has: exact symmetry, positive diagonal, negative
/// off-diagonal, zero row sums off the boundary and positive ones on it, `interior_len`
/// entries in interior rows, and `x^T A x > 0`.
fn check_tpfa(a: &Csr<Cpu, f64>, boundary: &[bool], interior_len: Option<usize>, what: &str) {
    let n = a.nrows();
    assert_eq!((a.ncols(), boundary.len()), (n, n), "{what}");
    let transpose = a.transpose();
    assert_eq!(
        transpose.row_ptr(),
        a.row_ptr(),
        "{what}: pattern not symmetric"
    );
    assert_eq!(
        transpose.col_idx(),
        a.col_idx(),
        "{what}: pattern not symmetric"
    );
    assert!(
        transpose
            .values()
            .iter()
            .zip(a.values())
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "{what}: values not exactly symmetric"
    );
    let mut interior = 0;
    for (r, &on_boundary) in boundary.iter().enumerate() {
        let (cols, vals) = a.row(r);
        let mut diagonal = 0.0;
        let mut sum = 0.0;
        for (&c, &v) in cols.iter().zip(vals) {
            if c as usize == r {
                diagonal = v;
            } else {
                assert!(v < 0.0, "{what}: A[{r}][{c}] = {v}");
            }
            sum += v;
        }
        assert!(diagonal > 0.0, "{what}: row {r} diagonal {diagonal}");
        if on_boundary {
            assert!(
                sum > 1e-10 * diagonal,
                "{what}: boundary row {r} sums to {sum}"
            );
        } else {
            interior += 1;
            assert!(
                sum.abs() <= 1e-12 * diagonal,
                "{what}: interior row {r} sums to {sum}"
            );
            if let Some(len) = interior_len {
                assert_eq!(cols.len(), len, "{what}: interior row {r}");
            }
        }
    }
    assert!(interior > 0, "{what}: no interior rows to check");
    for seed in 0..3 {
        let x: Vec<f64> = random_vec(n, seed);
        let quadratic: f64 = (0..n)
            .map(|r| {
                let (cols, vals) = a.row(r);
                x[r] * cols
                    .iter()
                    .zip(vals)
                    .map(|(&c, &v)| v * x[c as usize])
                    .sum::<f64>()
            })
            .sum();
        assert!(quadratic > 0.0, "{what}: x^T A x = {quadratic}");
    }
}

fn centroid(p: &[[f64; 3]]) -> [f64; 3] {
    let mut c = [0.0; 3];
    for q in p {
        for d in 0..3 {
            c[d] += q[d] / p.len() as f64;
        }
    }
    c
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

fn triangle_area(p: [[f64; 3]; 3]) -> f64 {
    0.5 * norm(cross(sub(p[1], p[0]), sub(p[2], p[0])))
}

/// The cell-centred TPFA matrix by triplets over a hash map of faces.
fn reference_tets(mesh: &Mesh) -> (Csr<Cpu, f64>, Vec<bool>) {
    let tets = mesh.tets();
    let x = |v: u32| mesh.points[v as usize];
    let centroids: Vec<[f64; 3]> = tets.iter().map(|t| centroid(&t.map(x))).collect();
    let mut coo = Coo::with_capacity(tets.len(), tets.len(), 5 * tets.len());
    let mut boundary = vec![false; tets.len()];
    for (f, owners) in face_counts(&tets) {
        let p = f.map(x);
        match owners[..] {
            [i, j] => {
                let t = triangle_area(p) / norm(sub(centroids[i], centroids[j]));
                for (r, c, v) in [(i, i, t), (j, j, t), (i, j, -t), (j, i, -t)] {
                    coo.push(r, c, v).unwrap();
                }
            }
            [i] => {
                boundary[i] = true;
                let t = triangle_area(p) / norm(sub(centroids[i], centroid(&p)));
                coo.push(i, i, t).unwrap();
            }
            _ => panic!("non-manifold face"),
        }
    }
    (coo.to_csr().unwrap(), boundary)
}

/// The median-dual TPFA matrix by triplets: each tet adds, for each edge, its quadrilateral
/// piece of the dual face (oriented along the edge), and each boundary triangle a third of
/// its area to each corner. Returns the matrix over all points and the boundary points.
fn reference_dual(mesh: &Mesh) -> (Csr<Cpu, f64>, Vec<bool>) {
    let tets = mesh.tets();
    let x = |v: u32| mesh.points[v as usize];
    let n = mesh.points.len();
    let mut area: HashMap<(u32, u32), [f64; 3]> = HashMap::new();
    for tet in &tets {
        let g = centroid(&tet.map(x));
        for a in 0..4 {
            for b in a + 1..4 {
                let (i, j) = (tet[a].min(tet[b]), tet[a].max(tet[b]));
                let others: Vec<u32> = (0..4)
                    .filter(|&k| k != a && k != b)
                    .map(|k| tet[k])
                    .collect();
                let m = centroid(&[x(i), x(j)]);
                let f1 = centroid(&[x(i), x(j), x(others[0])]);
                let f2 = centroid(&[x(i), x(j), x(others[1])]);
                let mut s = cross(sub(g, m), sub(f2, f1)).map(|v| 0.5 * v);
                if s.iter()
                    .zip(sub(x(j), x(i)))
                    .map(|(p, q)| p * q)
                    .sum::<f64>()
                    < 0.0
                {
                    s = s.map(|v| -v);
                }
                let e = area.entry((i, j)).or_insert([0.0; 3]);
                for d in 0..3 {
                    e[d] += s[d];
                }
            }
        }
    }
    let mut coo = Coo::with_capacity(n, n, 15 * n);
    for (&(i, j), s) in &area {
        let t = norm(*s) / norm(sub(x(j), x(i)));
        let (i, j) = (i as usize, j as usize);
        for (r, c, v) in [(i, i, t), (j, j, t), (i, j, -t), (j, i, -t)] {
            coo.push(r, c, v).unwrap();
        }
    }
    let mut boundary = vec![false; n];
    for (f, owners) in face_counts(&tets) {
        if let [t] = owners[..] {
            let p = f.map(x);
            let d = norm(sub(centroid(&p), centroid(&tets[t].map(x))));
            for v in f {
                boundary[v as usize] = true;
                coo.push(v as usize, v as usize, triangle_area(p) / 3.0 / d)
                    .unwrap();
            }
        }
    }
    (coo.to_csr().unwrap(), boundary)
}

/// Same pattern, values equal to `tolerance` relative to each row's diagonal.
#[track_caller]
fn assert_same_matrix(a: &Csr<Cpu, f64>, reference: &Csr<Cpu, f64>, tolerance: f64, what: &str) {
    assert_eq!(a.row_ptr(), reference.row_ptr(), "{what}: row lengths");
    assert_eq!(a.col_idx(), reference.col_idx(), "{what}: columns");
    for (r, scale) in reference.diagonal().into_iter().enumerate() {
        let ((_, got), (_, want)) = (a.row(r), reference.row(r));
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= tolerance * scale,
                "{what}: row {r}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn tpfa_on_structured_meshes_matches_the_reference() {
    for (n, perturbation, seed) in [(1, 0.0, 0), (4, 0.0, 0), (6, 0.15, 5)] {
        let mesh = StructuredTets::unit_cube(n, perturbation, seed)
            .build()
            .unwrap();
        let what = format!("tets n = {n}, perturbation {perturbation}");
        let a = fvm::tpfa_tets(&mesh).unwrap();
        assert_eq!(a.nrows(), 6 * n * n * n);
        let (reference, boundary) = reference_tets(&mesh);
        assert_same_matrix(&a, &reference, 1e-13, &what);
        if n > 1 {
            check_tpfa(&a, &boundary, Some(5), &what);
        }
        let structured = fvm::tpfa_tets_structured(n, perturbation, seed).unwrap();
        assert!(structured.values() == a.values() && structured.col_idx() == a.col_idx());

        let what = format!("dual n = {n}, perturbation {perturbation}");
        let d = fvm::tpfa_dual(&mesh).unwrap();
        assert_eq!(d.nrows(), (n + 1).pow(3));
        let (reference, boundary) = reference_dual(&mesh);
        assert_same_matrix(&d, &reference, 1e-13, &what);
        // Boundary points are exactly those on the cube's faces.
        for (p, &b) in mesh.points.iter().zip(&boundary) {
            assert_eq!(b, p.iter().any(|&c| c == 0.0 || c == 1.0), "{p:?}");
        }
        if n > 1 {
            check_tpfa(&d, &boundary, Some(15), &what);
        }
        let structured = fvm::tpfa_dual_structured(n, perturbation, seed).unwrap();
        assert!(structured.values() == d.values() && structured.col_idx() == d.col_idx());
    }
    // The unperturbed single-hex dual: the corner (0,0,0) touches all 6 tets; its
    // neighbours are the 7 other corners.
    let d = fvm::tpfa_dual_structured(1, 0.0, 0).unwrap();
    assert_eq!(d.row(0).0, &[0, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn tpfa_on_real_gmsh_meshes() {
    let Some(dir) = data_dir("tpfa_on_real_gmsh_meshes") else {
        return;
    };
    // Every tet mesh of the manifest (the rc mesh has coordinates ~1e-4, volumes ~1e-12).
    for expected in MANIFEST.iter().filter(|e| e.volume.is_some()) {
        let file = expected.file;
        let mesh = read(&dir, file);
        let a = fvm::tpfa_tets(&mesh).unwrap();
        assert_eq!(a.nrows(), mesh.tets().len());
        let (reference, boundary) = reference_tets(&mesh);
        assert_same_matrix(&a, &reference, 1e-12, file);
        check_tpfa(&a, &boundary, Some(5), file);
    }
    // The dual of the quadratic bar uses only its corner nodes: it is the dual of the
    // linear bar, whose points are the same up to numbering.
    let tet4 = read(&dir, "amfe_bar_Tet4_fine_tet3d_v22.msh");
    let tet10 = read(&dir, "amfe_bar_Tet10_fine_tet10_3d_v22.msh");
    let d4 = fvm::tpfa_dual(&tet4).unwrap();
    let (reference, boundary) = reference_dual(&tet4);
    assert_same_matrix(&d4, &reference, 1e-12, "bar Tet4 dual");
    check_tpfa(&d4, &boundary, None, "bar Tet4 dual");
    let d10 = fvm::tpfa_dual(&tet10).unwrap();
    assert_eq!(tet10.tet_points().len(), tet4.points.len());
    assert_eq!((d10.nrows(), d10.nnz()), (d4.nrows(), d4.nnz()));
    let sorted = |d: &Csr<Cpu, f64>| {
        let mut v = d.diagonal();
        v.sort_by(f64::total_cmp);
        v
    };
    for (x, y) in sorted(&d4).iter().zip(sorted(&d10)) {
        assert!((x - y).abs() <= 1e-12 * x, "{x} vs {y}");
    }
}
