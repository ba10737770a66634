use super::*;
use crate::mesh::{CellKind, PhysicalName};

fn parse(text: &str) -> Result<Mesh> {
    read_from(text.as_bytes(), "inline.msh")
}

fn parse_error(text: &str) -> (u64, String) {
    match parse(text) {
        Err(Error::Parse { line, message, .. }) => (line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

const V2: &str = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n\
    $PhysicalNames\n1\n3 7 \"solid part\"\n$EndPhysicalNames\n\
    $Nodes\n5\n10 0 0 0\n20 1 0 0\n30 0 1 0\n40 0 0 1\n1000000 1 1 1\n$EndNodes\n\
    $Comments\nanything $here\n$EndComments\n\
    $Entities\nnot parsed in 2.x\n$EndEntities\n\
    $Elements\n3\n1 15 2 0 1 10\n2 4 2 7 3 10 20 30 40\n3 4 0 20 30 40 1000000\n$EndElements\n";

#[test]
fn reads_v2_with_sparse_tags() {
    let mesh = parse(V2).unwrap();
    assert_eq!(mesh.points.len(), 5);
    assert_eq!(mesh.points[4], [1.0, 1.0, 1.0]);
    assert_eq!(mesh.tets(), vec![[0, 1, 2, 3], [1, 2, 3, 4]]);
    let tets = mesh.block(CellKind::Tet4).unwrap();
    assert_eq!(tets.physical, vec![7, 0]);
    assert_eq!(tets.elementary, vec![3, 0]);
    assert_eq!(mesh.block(CellKind::Point).unwrap().connectivity, vec![0]);
    assert_eq!(
        mesh.physical_names,
        vec![PhysicalName {
            dim: 3,
            tag: 7,
            name: "solid part".into()
        }]
    );
}

const V41: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n\
    $Entities\n1 0 0 1\n1 0 0 0 0\n5 0 0 0 1 1 1 1 9 0\n$EndEntities\n\
    $Nodes\n2 4 1 12\n0 1 0 1\n12\n0 0 0\n3 5 0 3\n1\n2\n3\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n\
    $Elements\n1 1 1 1\n3 5 4 1\n1 12 1 2 3\n$EndElements\n";

#[test]
fn reads_v41_with_entity_physical_tags() {
    let mesh = parse(V41).unwrap();
    assert_eq!(mesh.points.len(), 4);
    assert_eq!(mesh.tets(), vec![[0, 1, 2, 3]]);
    let tets = mesh.block(CellKind::Tet4).unwrap();
    assert_eq!((tets.physical[0], tets.elementary[0]), (9, 5));
}

#[test]
fn reads_gzip() {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(V2.as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    let mesh = read_from(&bytes[..], "inline.msh.gz").unwrap();
    assert_eq!(mesh, parse(V2).unwrap());
}

#[test]
fn malformed_files_name_the_line() {
    // Truncated inside $Nodes.
    let (line, m) = parse_error("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n3\n1 0 0 0\n");
    assert_eq!(line, 6, "{m}");
    assert!(m.contains("ends"), "{m}");
    // Unknown node in an element.
    let (line, m) = parse_error(&V2.replace("3 4 0 20 30 40 1000000", "3 4 0 20 30 40 99"));
    assert_eq!(line, 26, "{m}");
    assert!(m.contains("node 99"), "{m}");
    // Binary.
    let (line, m) = parse_error("$MeshFormat\n4.1 1 8\n");
    assert_eq!(line, 2, "{m}");
    assert!(m.contains("binary"), "{m}");
    // Bad node count (too small: the next node line is found where $EndNodes belongs).
    let (line, m) = parse_error(&V2.replace("$Nodes\n5\n", "$Nodes\n4\n"));
    assert_eq!(line, 14, "{m}");
    // Non-numeric coordinate.
    let (line, m) = parse_error(&V2.replace("20 1 0 0", "20 1 zero 0"));
    assert_eq!(line, 11, "{m}");
    assert!(m.contains("y coordinate") && m.contains("zero"), "{m}");
    // Unsupported version and element type; not a Gmsh file.
    assert!(parse_error("$MeshFormat\n3.0 0 8\n$EndMeshFormat\n")
        .1
        .contains("3.0"));
    assert!(parse_error(&V2.replace("2 4 2 7 3", "2 99 2 7 3"))
        .1
        .contains("type 99"));
    assert_eq!(parse_error("hello\n").0, 1);
    assert!(parse_error("").1.contains("MeshFormat"));
    // Duplicate node tag.
    assert!(parse_error(&V2.replace("30 0 1 0", "20 0 1 0"))
        .1
        .contains("twice"));
    // 4.1 block count disagreeing with the header.
    let (line, m) = parse_error(&V41.replace("$Nodes\n2 4 1 12", "$Nodes\n2 5 1 12"));
    assert_eq!(line, 20, "{m}");
    assert!(m.contains("hold 4 nodes"), "{m}");
}
