//! Meshes and the finite-volume matrices built on them: the Gmsh reader against the real
//! files of `$GALERKIN_DATA_DIR/msh` and their MANIFEST counts, malformed files, the
//! structured generator, and the TPFA matrices against an independent triplet assembly.
//!
//! The helpers here (the data directory, the MANIFEST table, reading a file, tet volumes,
//! the faces of a tet list) are shared by the files of the module.

use std::collections::HashMap;
use std::path::PathBuf;

use galerkin::mesh::{tet_volume, CellKind, Mesh};

use crate::harness::announce;

mod gmsh;
mod structured;
mod tpfa;

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
    galerkin::mesh::gmsh::read(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
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
