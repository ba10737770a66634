//! [`TetMesh`]: the input of a DG solve — points, positively oriented tetrahedra, the
//! physical tags of boundary triangles and the tags that are absorbing — from the unit-cube
//! generator or a Gmsh file, with the greedy BFS renumbering for locality.

use std::collections::{BTreeSet, HashMap};

use crate::error::{Error, Result};
use crate::mesh::structured::StructuredTets;
use crate::mesh::{CellKind, Mesh};

use super::geometry::{face_vertices, DgGeometry};
use super::ops::{FACE_ABSORBING, FACE_INTERIOR, FACE_PEC};
use super::partition::bfs_blocks;

/// A tetrahedral mesh with its boundary description.
#[derive(Clone, Debug, Default)]
pub struct TetMesh {
    /// Points.
    pub points: Vec<[f64; 3]>,
    /// Tetrahedra (point indices, positively oriented).
    pub tets: Vec<[u32; 4]>,
    /// Physical tag of boundary triangles, by their sorted point indices.
    pub boundary_tags: HashMap<[u32; 3], i32>,
    /// Tags whose faces are absorbing; every other boundary face is a perfect conductor.
    pub absorbing: Vec<i32>,
}

impl TetMesh {
    /// The unit cube `[0,1]³` cut into `n³` hexahedra of 6 tetrahedra each, interior points
    /// moved by up to `perturbation · h` (seeded); every boundary face PEC.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n = 0`, a perturbation outside `[0, 1/6)` or a mesh
    /// too large for 32-bit indices.
    pub fn unit_cube(n: usize, perturbation: f64, seed: u64) -> Result<Self> {
        let mesh = StructuredTets::unit_cube(n, perturbation, seed).build()?;
        Ok(TetMesh {
            tets: mesh.tets(),
            points: mesh.points,
            ..Default::default()
        })
    }

    /// The tetrahedra of a Gmsh mesh (Tet4, or the corners of Tet10) with the physical tags
    /// of its triangles.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the mesh breaks its invariants ([`Mesh::check`]: a
    /// block whose connectivity and tags disagree in length, a point index out of range),
    /// has no tetrahedra, or cells of a kind other than tetrahedra and triangles of
    /// dimension 2 or 3 (hexahedra, prisms, pyramids, quadrilaterals), which the DG
    /// operator cannot take.
    pub fn from_gmsh(mesh: &Mesh) -> Result<Self> {
        // The mesh's invariants (`Mesh::check`), then its kinds.
        mesh.check_kinds(
            "TetMesh::from_gmsh",
            &[
                CellKind::Tet4,
                CellKind::Tet10,
                CellKind::Tri3,
                CellKind::Tri6,
            ],
        )?;
        let tets = mesh.tets();
        if tets.is_empty() {
            return Err(Error::invalid(
                "TetMesh::from_gmsh",
                "mesh",
                "the mesh has no tetrahedra (Gmsh element types 4 or 11)",
            ));
        }
        let mut boundary_tags = HashMap::new();
        for block in &mesh.blocks {
            if matches!(block.kind, CellKind::Tri3 | CellKind::Tri6) {
                for (cell, &tag) in block.cells().zip(&block.physical) {
                    let mut key = [cell[0], cell[1], cell[2]];
                    key.sort_unstable();
                    boundary_tags.insert(key, tag);
                }
            }
        }
        Ok(TetMesh {
            points: mesh.points.clone(),
            tets,
            boundary_tags,
            absorbing: Vec::new(),
        })
    }

    /// Tags with `tag` every boundary face whose three points satisfy `on` (for generated
    /// meshes, which carry no tags: e.g. `|p| p[0] == 0.0` for the side `x = 0`); returns
    /// how many faces it tagged.
    ///
    /// # Errors
    /// From [`tet_neighbors`](crate::mesh::tet_neighbors) for an invalid mesh.
    pub fn tag_boundary(&mut self, tag: i32, on: impl Fn([f64; 3]) -> bool) -> Result<usize> {
        let neighbours = crate::mesh::tet_neighbors(&self.tets, self.points.len())?;
        let mut count = 0;
        for (tet, across) in self.tets.iter().zip(&neighbours) {
            for c in (0..4).filter(|&c| across[c] == u32::MAX) {
                let mut key = crate::mesh::tet_face(*tet, c);
                if key.iter().all(|&p| on(self.points[p as usize])) {
                    key.sort_unstable();
                    self.boundary_tags.insert(key, tag);
                    count += 1;
                }
            }
        }
        Ok(count)
    }

    /// Makes the boundary faces tagged `tags` absorbing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming a tag that no boundary triangle carries (and the
    /// tags that exist).
    pub fn with_absorbing(mut self, tags: &[i32]) -> Result<Self> {
        let known: BTreeSet<i32> = self.boundary_tags.values().copied().collect();
        // The tags of triangles that are boundary faces of the tetrahedra: a tag on interior
        // faces (or on triangles that are no face at all) would make nothing absorbing.
        let mut on_boundary = BTreeSet::new();
        if !tags.is_empty() {
            let neighbours = crate::mesh::tet_neighbors(&self.tets, self.points.len())?;
            for (tet, across) in self.tets.iter().zip(&neighbours) {
                for c in (0..4).filter(|&c| across[c] == crate::mesh::NO_NEIGHBOR) {
                    let mut key = crate::mesh::tet_face(*tet, c);
                    key.sort_unstable();
                    if let Some(&t) = self.boundary_tags.get(&key) {
                        on_boundary.insert(t);
                    }
                }
            }
        }
        for t in tags {
            if !known.contains(t) {
                return Err(Error::invalid(
                    "TetMesh::with_absorbing",
                    "absorbing",
                    format!(
                        "no boundary triangle has the physical tag {t}; the mesh's triangle tags \
                         are {known:?}"
                    ),
                ));
            }
            if !on_boundary.contains(t) {
                return Err(Error::invalid(
                    "TetMesh::with_absorbing",
                    "absorbing",
                    format!(
                        "the triangles with physical tag {t} are none of them a boundary face of \
                         the tetrahedra (interior faces or no face at all), so nothing would \
                         absorb; the tags on boundary faces are {on_boundary:?}"
                    ),
                ));
            }
        }
        self.absorbing = tags.to_vec();
        Ok(self)
    }

    /// The tetrahedra renumbered by the greedy BFS partition into blocks of at most `block`
    /// elements (the seed's Algorithm 2), so that neighbours sit close in memory.
    ///
    /// # Errors
    /// From [`bfs_blocks`] and [`tet_neighbors`](crate::mesh::tet_neighbors).
    pub fn renumbered(mut self, block: usize) -> Result<Self> {
        let neighbours = crate::mesh::tet_neighbors(&self.tets, self.points.len())?;
        let order = bfs_blocks(&neighbours, block)?;
        self.tets = order.order.iter().map(|&e| self.tets[e as usize]).collect();
        Ok(self)
    }

    /// The kind of every face (`4 e + f`) of `geo` (built from these tetrahedra).
    pub(crate) fn face_kinds(&self, geo: &DgGeometry) -> Vec<u32> {
        (0..4 * geo.elements)
            .map(|face| {
                if geo.neighbour[face] != u32::MAX {
                    return FACE_INTERIOR;
                }
                let mut key = face_vertices(self.tets[face / 4], face % 4);
                key.sort_unstable();
                match self.boundary_tags.get(&key) {
                    Some(t) if self.absorbing.contains(t) => FACE_ABSORBING,
                    _ => FACE_PEC,
                }
            })
            .collect()
    }
}
