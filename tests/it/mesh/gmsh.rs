//! The Gmsh reader: every real file against its MANIFEST counts, physical tags and names,
//! gzip, and malformed files as parse errors with line numbers.

use galerkin::mesh::{gmsh, CellKind, Mesh};
use galerkin::Error;

use super::{data_dir, positive_volume, read, MANIFEST};
use crate::harness::announce;

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
