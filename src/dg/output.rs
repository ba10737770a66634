//! VTK output of the DG fields: every element cut into `N³` linear sub-tetrahedra of its
//! node lattice (the warp-and-blend nodes keep the topology of the equispaced lattice), the
//! fields discontinuous across elements, `E` and `H` as 3-component point data.

use crate::bundle::Backend;
use crate::dg::ops::DgOps;
use crate::error::Result;
use crate::io::vtk::{UnstructuredGrid, VtkCell};
use crate::scalar::Scalar;

use super::maxwell::Maxwell;

/// The `N³` sub-tetrahedra of the order-`N` node lattice, as local node indices (the
/// nodes' order of [`reference::nodes`](super::reference::nodes): `r` fastest, `t`
/// slowest).
///
/// The lattice `{(i, j, k) ≥ 0, i + j + k ≤ N}` maps by `y = (i + j + k, j + k, k)` onto
/// `{N ≥ y₁ ≥ y₂ ≥ y₃ ≥ 0}`, a union of the Kuhn simplices of the unit cubes; each
/// simplex whose four vertices lie in that set is one sub-tetrahedron.
pub fn sub_tets(order: usize) -> Vec<[u32; 4]> {
    let n = order as i64;
    // Local index of lattice point (i, j, k).
    let mut index = std::collections::HashMap::new();
    let mut next = 0u32;
    for k in 0..=n {
        for j in 0..=n - k {
            for i in 0..=n - j - k {
                index.insert((i, j, k), next);
                next += 1;
            }
        }
    }
    const PERMS: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let inside = |y: [i64; 3]| n >= y[0] && y[0] >= y[1] && y[1] >= y[2] && y[2] >= 0;
    let mut out = Vec::with_capacity(order.pow(3));
    for a in 0..n {
        for b in 0..n {
            for c in 0..n {
                for p in PERMS {
                    let mut v = [[a, b, c]; 4];
                    for s in 1..4 {
                        v[s] = v[s - 1];
                        v[s][p[s - 1]] += 1;
                    }
                    if v.iter().all(|&y| inside(y)) {
                        out.push(v.map(|y| index[&(y[0] - y[1], y[1] - y[2], y[2])]));
                    }
                }
            }
        }
    }
    out
}

impl<B: Backend + DgOps, T: Scalar> Maxwell<B, T> {
    /// The fields as a VTK grid: every node a point (`K Np`), `K N³` sub-tetrahedra, point
    /// data `E` and `H` (3 components each); one grid per time, which the caller's file
    /// name records.
    ///
    /// # Errors
    /// Device errors.
    pub fn to_vtk(&self) -> Result<UnstructuredGrid> {
        let g = self.geometry();
        let (k, np) = (g.elements, g.np);
        let points: Vec<[f64; 3]> = (0..k * np)
            .map(|i| [g.x[0][i], g.x[1][i], g.x[2][i]])
            .collect();
        let local = sub_tets(self.reference().order);
        let mut conn = Vec::with_capacity(k * local.len() * 4);
        for e in 0..k {
            for t in &local {
                conn.extend(t.iter().map(|&l| (e * np) as u32 + l));
            }
        }
        let mut grid = UnstructuredGrid::new(points, VtkCell::Tetra, conn)?;
        let q = self.fields()?;
        for (name, base) in [("E", 0), ("H", 3)] {
            let values = (0..k * np)
                .flat_map(|i| [q[base][i], q[base + 1][i], q[base + 2][i]])
                .collect();
            grid.add_point_data(name, 3, values)?;
        }
        Ok(grid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dg::reference::warp_blend::nodes;
    use crate::mesh::tet_volume;

    #[test]
    fn sub_tets_tile_the_reference_element() {
        for order in 1..=9 {
            let x = nodes(order);
            let tets = sub_tets(order);
            assert_eq!(tets.len(), order.pow(3), "N = {order}");
            // Equispaced lattice: the volumes add up to the reference volume 4/3.
            let n = order as f64;
            let mut lattice = Vec::new();
            for k in 0..=order {
                for j in 0..=order - k {
                    for i in 0..=order - j - k {
                        lattice.push([i, j, k].map(|c| -1.0 + 2.0 * c as f64 / n));
                    }
                }
            }
            assert_eq!(lattice.len(), x.len());
            let total: f64 = tets
                .iter()
                .map(|t| tet_volume(&t.map(|l| lattice[l as usize])).abs())
                .sum();
            assert!(
                (total - 4.0 / 3.0).abs() < 1e-12,
                "N = {order}: volume {total}"
            );
            // No degenerate sub-tetrahedron on the warped nodes either.
            for t in &tets {
                assert!(tet_volume(&t.map(|l| x[l as usize])).abs() > 1e-6);
            }
        }
    }
}
