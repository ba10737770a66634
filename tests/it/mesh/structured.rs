//! The structured tetrahedral generator: the box filled, positive volumes, a conforming
//! mesh whose neighbours the library finds.

use galerkin::mesh::structured::StructuredTets;
use galerkin::mesh::{tet_neighbors, NO_NEIGHBOR};

use super::{face_counts, positive_volume};

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
