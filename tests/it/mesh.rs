//! Meshes and the finite-volume matrices built on them: the Gmsh reader against the real
//! files of `$GALERKIN_DATA_DIR/msh` and their MANIFEST counts, malformed files, the
//! structured generator, and the TPFA matrices against an independent triplet assembly.

use std::collections::HashMap;
use std::path::PathBuf;

use galerkin::fvm;
use galerkin::mesh::structured::StructuredTets;
use galerkin::mesh::{gmsh, tet_neighbors, tet_volume, CellKind, Mesh, NO_NEIGHBOR};
use galerkin::sparse::{Coo, Csr};
use galerkin::verify::random_vec;
use galerkin::{Cpu, Error};

use crate::harness::announce;

/// `$GALERKIN_DATA_DIR/msh`, or `None` (announced) when the variable is unset.
fn data_dir(test: &str) -> Option<PathBuf> {
    match std::env::var_os("GALERKIN_DATA_DIR") {
        Some(dir) => Some(PathBuf::from(dir).join("msh")),
        None => {
            announce(&format!(
                "[galerkin tests] skipping {test}: GALERKIN_DATA_DIR is not set"
            ));
            None
        }
    }
}

/// What MANIFEST.md says about a file.
struct Expected {
    file: &'static str,
    nodes: usize,
    cells: &'static [(CellKind, usize)],
    physical_names: usize,
    /// Total tet volume, to the 6 significant digits of the manifest.
    volume: Option<f64>,
}

const MANIFEST: &[Expected] = {
    use CellKind::*;
    &[
        Expected {
            file: "gridapgmsh_demo_tet3d_v41.msh",
            nodes: 10257,
            cells: &[(Line2, 60), (Tri3, 800), (Tet4, 40144), (Point, 2)],
            physical_names: 6,
            volume: Some(0.199012),
        },
        Expected {
            file: "gridaptutorials_model_tet3d_v41.msh",
            nodes: 7475,
            cells: &[(Line2, 699), (Tri3, 10442), (Tet4, 29160), (Point, 29)],
            physical_names: 19,
            volume: Some(0.169548),
        },
        Expected {
            file: "gridaptutorials_geometry_tri2d_v41.msh",
            nodes: 44987,
            cells: &[(Line2, 694), (Tri3, 89180), (Point, 2)],
            physical_names: 6,
            volume: None,
        },
        Expected {
            file: "sparselizard_inductionheating_tet3d_v22.msh",
            nodes: 5305,
            cells: &[(Tri3, 6498), (Tet4, 30279)],
            physical_names: 0,
            volume: Some(1.0),
        },
        Expected {
            file: "sparselizard_rc_tet3d_v22.msh",
            nodes: 4936,
            cells: &[(Tri3, 24), (Tet4, 20569)],
            physical_names: 0,
            volume: Some(9.06378e-12),
        },
        Expected {
            file: "sparselizard_halbacharray_tri2d_v22.msh",
            nodes: 5981,
            cells: &[(Tri3, 11737), (Point, 1)],
            physical_names: 0,
            volume: None,
        },
        Expected {
            file: "sparselizard_ring2d_tri6_2d_v22.msh",
            nodes: 12085,
            cells: &[(Line3, 138), (Tri6, 5948)],
            physical_names: 0,
            volume: None,
        },
        Expected {
            file: "amfe_bar_Tet4_fine_tet3d_v22.msh",
            nodes: 4897,
            cells: &[(Tri3, 496), (Tet4, 22432)],
            physical_names: 0,
            volume: Some(0.5),
        },
        Expected {
            file: "amfe_bar_Tet10_fine_tet10_3d_v22.msh",
            nodes: 34545,
            cells: &[(Line3, 240), (Tri6, 4640), (Tet10, 22432), (Point, 8)],
            physical_names: 0,
            volume: Some(0.5),
        },
        Expected {
            file: "amfe_pleuel_7000_tet3d_v22.msh",
            nodes: 1251,
            cells: &[(Tri3, 332), (Tet4, 4123)],
            physical_names: 0,
            volume: Some(3.50326),
        },
        Expected {
            file: "amfe_c_bow_fine_tri2d_v22.msh",
            nodes: 3852,
            cells: &[(Line2, 608), (Tri3, 7090), (Point, 12)],
            physical_names: 0,
            volume: None,
        },
        Expected {
            file: "pyfr_inc_cylinder_2d_mixed_v22.msh",
            nodes: 7345,
            cells: &[(Line3, 99), (Tri6, 3231), (Quad9, 196)],
            physical_names: 4,
            volume: None,
        },
        Expected {
            file: "pyfr_inc_cylinder_2d_mixed_v22.msh.gz",
            nodes: 7345,
            cells: &[(Line3, 99), (Tri6, 3231), (Quad9, 196)],
            physical_names: 4,
            volume: None,
        },
    ]
};

fn read(dir: &std::path::Path, file: &str) -> Mesh {
    gmsh::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Total signed volume of the tets, asserting each is positive.
fn positive_volume(mesh: &Mesh, what: &str) -> f64 {
    mesh.tets()
        .iter()
        .enumerate()
        .map(|(t, tet)| {
            let v = tet_volume(&tet.map(|i| mesh.points[i as usize]));
            assert!(v > 0.0, "{what}: tet {t} {tet:?} has volume {v}");
            v
        })
        .sum()
}

#[test]
fn every_gmsh_file_parses_and_matches_the_manifest() {
    let Some(dir) = data_dir("every_gmsh_file_parses_and_matches_the_manifest") else {
        return;
    };
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".msh") || name.ends_with(".msh.gz"))
        .collect();
    files.sort();
    for expected in MANIFEST {
        assert!(
            files.iter().any(|f| f == expected.file),
            "{} is missing",
            expected.file
        );
    }
    for file in &files {
        let mesh = read(&dir, file);
        for block in &mesh.blocks {
            assert_eq!(block.connectivity.len(), block.len() * block.kind.nodes());
            assert_eq!(block.elementary.len(), block.len());
            assert!(block
                .connectivity
                .iter()
                .all(|&v| (v as usize) < mesh.points.len()));
        }
        let volume = positive_volume(&mesh, file);
        let Some(expected) = MANIFEST.iter().find(|e| e.file == file) else {
            announce(&format!(
                "[galerkin tests] {file}: parsed, not in the manifest table"
            ));
            continue;
        };
        assert_eq!(mesh.points.len(), expected.nodes, "{file}: nodes");
        let mut found: Vec<(CellKind, usize)> =
            mesh.blocks.iter().map(|b| (b.kind, b.len())).collect();
        let mut want = expected.cells.to_vec();
        found.sort();
        want.sort();
        assert_eq!(found, want, "{file}: cells by kind");
        assert_eq!(mesh.physical_names.len(), expected.physical_names, "{file}");
        match expected.volume {
            Some(v) => assert!(
                (volume - v).abs() <= 5e-6 * v,
                "{file}: tet volume {volume:e}, manifest {v:e}"
            ),
            None => {
                assert!(mesh.tets().is_empty());
                assert!(mesh.points.iter().all(|p| p[2] == 0.0), "{file}: 2D, z = 0");
            }
        }
    }
}

#[test]
fn gmsh_tags_and_names_are_read() {
    let Some(dir) = data_dir("gmsh_tags_and_names_are_read") else {
        return;
    };
    // 4.1: physical tags come from $Entities; the model's 19 groups are named.
    let model = read(&dir, "gridaptutorials_model_tet3d_v41.msh");
    let names: Vec<&str> = model
        .physical_names
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    assert!(
        names.contains(&"circle") && names.contains(&"sides_c"),
        "{names:?}"
    );
    let tets = model.block(CellKind::Tet4).unwrap();
    let volume_tags: Vec<i32> = model
        .physical_names
        .iter()
        .filter(|n| n.dim == 3)
        .map(|n| n.tag)
        .collect();
    assert!(!volume_tags.is_empty());
    assert!(
        tets.physical.iter().all(|t| volume_tags.contains(t)),
        "{volume_tags:?}"
    );
    // In these 4.1 files each cell belongs to a named group of its own dimension.
    for file in [
        "gridaptutorials_model_tet3d_v41.msh",
        "gridapgmsh_demo_tet3d_v41.msh",
    ] {
        let mesh = read(&dir, file);
        for block in &mesh.blocks {
            let dim = block.kind.dim();
            for &tag in &block.physical {
                assert!(
                    mesh.physical_names
                        .iter()
                        .any(|n| n.dim == dim && n.tag == tag),
                    "{file}: a {:?} cell has physical tag {tag}, not a named {dim}-D group",
                    block.kind
                );
            }
            assert!(block.elementary.iter().all(|&e| e > 0), "{file}");
        }
    }
    // ... but not in this one: its two outer surfaces are in physical group 6, which
    // $PhysicalNames does not name (it names 2-D groups 5 "Cylinder" and 7 "Air").
    let geometry = read(&dir, "gridaptutorials_geometry_tri2d_v41.msh");
    let mut groups: Vec<i32> = geometry.block(CellKind::Tri3).unwrap().physical.clone();
    groups.sort_unstable();
    groups.dedup();
    assert_eq!(groups, vec![5, 6]);
    assert!(!geometry.physical_names.iter().any(|n| n.tag == 6));
    // 2.2: tags from each element line; PyFR names its groups.
    let pyfr = read(&dir, "pyfr_inc_cylinder_2d_mixed_v22.msh");
    let fluid = pyfr
        .physical_names
        .iter()
        .find(|n| n.name == "fluid")
        .unwrap();
    assert_eq!((fluid.dim, fluid.tag), (2, 4));
    assert!(pyfr
        .block(CellKind::Quad9)
        .unwrap()
        .physical
        .iter()
        .all(|&t| t == 4));
    let walls = pyfr.block(CellKind::Line3).unwrap();
    assert!(walls.physical.iter().all(|t| [1, 2, 3].contains(t)));
}

#[test]
fn gzip_and_plain_files_give_the_same_mesh() {
    let Some(dir) = data_dir("gzip_and_plain_files_give_the_same_mesh") else {
        return;
    };
    let plain = read(&dir, "pyfr_inc_cylinder_2d_mixed_v22.msh");
    let gz = read(&dir, "pyfr_inc_cylinder_2d_mixed_v22.msh.gz");
    assert!(plain == gz);
    assert_eq!(plain.num_cells(CellKind::Quad9), 196);
}

/// Writes `bytes` to a fresh temporary file and reads it with [`gmsh::read`].
fn read_inline(name: &str, bytes: &[u8]) -> galerkin::Result<Mesh> {
    let path =
        std::env::temp_dir().join(format!("galerkin-mesh-test-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    let result = gmsh::read(&path);
    std::fs::remove_file(&path).unwrap();
    result
}

const V22: &str = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n\
$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n7 0 0 1\n$EndNodes\n\
$Elements\n2\n1 2 2 1 1 1 2 3\n2 4 2 5 1 1 2 3 7\n$EndElements\n";

const V41: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n\
$Nodes\n1 4 1 7\n3 1 0 4\n1\n2\n3\n7\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n\
$Elements\n1 1 1 1\n3 1 4 1\n1 1 2 3 7\n$EndElements\n";

#[test]
fn malformed_gmsh_files_are_parse_errors_with_line_numbers() {
    assert_eq!(
        read_inline("ok22.msh", V22.as_bytes()).unwrap().tets(),
        vec![[0, 1, 2, 3]]
    );
    assert_eq!(
        read_inline("ok41.msh", V41.as_bytes()).unwrap().tets(),
        vec![[0, 1, 2, 3]]
    );
    let cases: Vec<(&str, String, u64, &str)> = vec![
        (
            "truncated22",
            V22[..V22.find("3 0 1 0").unwrap()].to_string(),
            7,
            "ends",
        ),
        (
            "truncated41",
            V41[..V41.find("0 1 0\n").unwrap()].to_string(),
            12,
            "ends",
        ),
        (
            "count22",
            V22.replace("$Nodes\n4\n", "$Nodes\n5\n"),
            10,
            "fewer entries",
        ),
        (
            "count22b",
            V22.replace("$Elements\n2\n", "$Elements\n1\n"),
            14,
            "more entries",
        ),
        (
            "count41",
            V41.replace("3 1 0 4\n", "3 1 0 3\n"),
            10,
            "y coordinate",
        ),
        (
            "count41b",
            V41.replace("$Elements\n1 1 1 1", "$Elements\n1 2 1 1"),
            19,
            "hold 1 elements",
        ),
        (
            "node22",
            V22.replace("1 1 2 3 7", "1 1 2 3 8"),
            14,
            "node 8",
        ),
        (
            "node41",
            V41.replace("1 1 2 3 7", "1 1 2 3 4"),
            19,
            "node 4",
        ),
        (
            "coordinate22",
            V22.replace("2 1 0 0", "2 1 0 O"),
            7,
            "z coordinate",
        ),
        (
            "coordinate41",
            V41.replace("1 0 0\n", "1 0 0,\n"),
            12,
            "z coordinate",
        ),
        (
            "nodes-per-element",
            V22.replace("1 1 2 3 7", "1 1 2 3 7 7"),
            14,
            "more than 4 nodes",
        ),
        (
            "version",
            V22.replace("2.2 0 8", "3.0 0 8"),
            2,
            "version 3.0",
        ),
        (
            "type",
            V22.replace("2 4 2 5 1", "2 99 2 5 1"),
            14,
            "type 99",
        ),
    ];
    for (name, text, line, needle) in cases {
        check_parse_error(name, text.as_bytes(), line, needle);
    }
    // A binary file: the header says so, then raw bytes follow.
    let mut binary = b"$MeshFormat\n4.1 1 8\n".to_vec();
    binary.extend_from_slice(&[1, 0, 0, 0, b'\n', 0xff, 0xfe, 0x00]);
    check_parse_error("binary", &binary, 2, "binary");
    // Missing file: an I/O error naming the path.
    match gmsh::read("/nonexistent/galerkin.msh") {
        Err(Error::Io { path, .. }) => assert!(path.contains("galerkin.msh")),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[track_caller]
fn check_parse_error(name: &str, bytes: &[u8], line: u64, needle: &str) {
    match read_inline(name, bytes) {
        Err(Error::Parse {
            path,
            line: l,
            message,
        }) => {
            assert!(path.contains(name), "{name}: {path}");
            assert_eq!(l, line, "{name}: {message}");
            assert!(
                message.contains(needle),
                "{name}: `{message}` lacks `{needle}`"
            );
        }
        other => panic!(
            "{name}: expected a parse error, got {:?}",
            other.map(|m| m.points.len())
        ),
    }
}

/// The faces of `tets` by sorted point triple, counted without the library's topology.
fn face_counts(tets: &[[u32; 4]]) -> HashMap<[u32; 3], Vec<usize>> {
    let mut faces: HashMap<[u32; 3], Vec<usize>> = HashMap::new();
    for (t, tet) in tets.iter().enumerate() {
        for k in 0..4 {
            let mut f = [0u32; 3];
            let mut m = 0;
            for (i, &v) in tet.iter().enumerate() {
                if i != k {
                    f[m] = v;
                    m += 1;
                }
            }
            f.sort_unstable();
            faces.entry(f).or_default().push(t);
        }
    }
    faces
}

#[test]
fn structured_mesh_fills_the_box_and_conforms() {
    for (cells, perturbation, seed) in [
        ([1, 1, 1], 0.0, 0),
        ([5, 6, 7], 0.15, 3),
        ([9, 2, 4], 0.1, 8),
    ] {
        let spec = StructuredTets {
            cells,
            lower: [-0.5, 1.0, 0.0],
            upper: [0.5, 3.0, 0.25],
            perturbation,
            seed,
        };
        let mesh = spec.build().unwrap();
        let [nx, ny, nz] = cells;
        assert_eq!(mesh.points.len(), (nx + 1) * (ny + 1) * (nz + 1));
        let tets = mesh.tets();
        assert_eq!(tets.len(), 6 * nx * ny * nz);
        let volume = positive_volume(&mesh, "structured");
        assert!((volume - 0.5).abs() < 1e-12, "{cells:?}: volume {volume}");
        // Conformity: every face is shared by two tets, or lies on the box boundary.
        let on_boundary =
            |p: [f64; 3]| (0..3).any(|d| p[d] == spec.lower[d] || p[d] == spec.upper[d]);
        let faces = face_counts(&tets);
        let mut boundary = 0;
        for (f, owners) in &faces {
            match owners.len() {
                2 => {}
                1 => {
                    boundary += 1;
                    let p = f.map(|v| mesh.points[v as usize]);
                    let plane = (0..3).any(|d| {
                        p.iter().all(|q| q[d] == spec.lower[d])
                            || p.iter().all(|q| q[d] == spec.upper[d])
                    });
                    assert!(
                        plane && p.iter().all(|&q| on_boundary(q)),
                        "{f:?} is not on the box"
                    );
                }
                n => panic!("face {f:?} shared by {n} tets"),
            }
        }
        assert_eq!(boundary, 4 * (nx * ny + ny * nz + nx * nz));
        // The library's neighbours agree with the count.
        let neighbors = tet_neighbors(&tets, mesh.points.len()).unwrap();
        let lib_boundary = neighbors
            .iter()
            .flatten()
            .filter(|&&n| n == NO_NEIGHBOR)
            .count();
        assert_eq!(lib_boundary, boundary);
        for (t, n) in neighbors.iter().enumerate() {
            for &m in n.iter().filter(|&&m| m != NO_NEIGHBOR) {
                assert!(neighbors[m as usize].contains(&(t as u32)));
            }
        }
    }
}

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
