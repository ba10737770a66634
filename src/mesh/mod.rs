//! Meshes: a small container, a Gmsh reader, a structured tetrahedral generator, and the
//! tetrahedral connectivity the finite-volume generators in [`fvm`](crate::fvm) need.
//!
//! A [`Mesh`] is a list of points and one [`CellBlock`] per [`CellKind`]: the connectivity
//! of every cell of that kind, as 0-based point indices in Gmsh's node order, with the
//! physical and elementary tag of each cell.
//!
//! ```text
//!  points      = [p0, p1, p2, p3, p4]                 p = [x, y, z]
//!  blocks[0]   = Tet4: connectivity = [0 1 2 3 | 1 2 3 4]
//!                      physical     = [7, 7]            (0 = none)
//!                      elementary   = [1, 1]
//! ```
//!
//! Tetrahedral connectivity works on a plain `&[[u32; 4]]` ([`Mesh::tets`]): the neighbour
//! across each face ([`tet_neighbors`]; a face opposite vertex `k` is [`tet_face`]`(tet, k)`)
//! and the unique edges ([`tet_edges`]). Both are O(number of tets): faces and edges are
//! bucketed by their smallest point index, so no global sort is needed.
//!
//! ```
//! use galerkin::mesh::{structured::StructuredTets, tet_neighbors, NO_NEIGHBOR};
//!
//! let mesh = StructuredTets::unit_cube(2, 0.1, 7).build()?;
//! let tets = mesh.tets();
//! assert_eq!(tets.len(), 6 * 2 * 2 * 2);
//! let neighbors = tet_neighbors(&tets, mesh.points.len())?;
//! let boundary = neighbors.iter().flatten().filter(|&&n| n == NO_NEIGHBOR).count();
//! assert_eq!(boundary, 6 * 2 * (2 * 2)); // two triangles per boundary square
//! # Ok::<(), galerkin::Error>(())
//! ```

pub mod gmsh;
pub mod structured;
mod tet;
pub mod tri;

pub use tet::{
    check_conforming, tet_edges, tet_face, tet_neighbors, tet_volume, MAX_BOUNDARY_FACES_AT_POINT,
    NO_NEIGHBOR,
};
pub(crate) use tet::{check_tets, cross, dot, norm, sub, PointCells, TET_EDGES};

/// The kinds of cells: every first- and second-order element type of Gmsh (type ids 1-19).
///
/// Node order is Gmsh's (see the Gmsh manual, "Node ordering"): corners first, then edge
/// nodes, then face and volume nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CellKind {
    /// A point (Gmsh type 15), 1 node.
    Point,
    /// A 2-node line (Gmsh type 1).
    Line2,
    /// A 3-node line (Gmsh type 8).
    Line3,
    /// A 3-node triangle (Gmsh type 2).
    Tri3,
    /// A 6-node triangle (Gmsh type 9).
    Tri6,
    /// A 4-node quadrilateral (Gmsh type 3).
    Quad4,
    /// An 8-node quadrilateral (Gmsh type 16).
    Quad8,
    /// A 9-node quadrilateral (Gmsh type 10).
    Quad9,
    /// A 4-node tetrahedron (Gmsh type 4).
    Tet4,
    /// A 10-node tetrahedron (Gmsh type 11).
    Tet10,
    /// An 8-node hexahedron (Gmsh type 5).
    Hex8,
    /// A 20-node hexahedron (Gmsh type 17).
    Hex20,
    /// A 27-node hexahedron (Gmsh type 12).
    Hex27,
    /// A 6-node prism (Gmsh type 6).
    Prism6,
    /// A 15-node prism (Gmsh type 18).
    Prism15,
    /// An 18-node prism (Gmsh type 13).
    Prism18,
    /// A 5-node pyramid (Gmsh type 7).
    Pyramid5,
    /// A 13-node pyramid (Gmsh type 19).
    Pyramid13,
    /// A 14-node pyramid (Gmsh type 14).
    Pyramid14,
}

impl CellKind {
    /// Every kind, in the order of the enum.
    pub const ALL: [CellKind; 19] = [
        CellKind::Point,
        CellKind::Line2,
        CellKind::Line3,
        CellKind::Tri3,
        CellKind::Tri6,
        CellKind::Quad4,
        CellKind::Quad8,
        CellKind::Quad9,
        CellKind::Tet4,
        CellKind::Tet10,
        CellKind::Hex8,
        CellKind::Hex20,
        CellKind::Hex27,
        CellKind::Prism6,
        CellKind::Prism15,
        CellKind::Prism18,
        CellKind::Pyramid5,
        CellKind::Pyramid13,
        CellKind::Pyramid14,
    ];

    /// The kind with Gmsh element type id `id`, if it is one of the supported ones.
    pub fn from_gmsh(id: u32) -> Option<CellKind> {
        CellKind::ALL.into_iter().find(|k| k.gmsh_type() == id)
    }

    /// The Gmsh element type id.
    pub fn gmsh_type(self) -> u32 {
        match self {
            CellKind::Line2 => 1,
            CellKind::Tri3 => 2,
            CellKind::Quad4 => 3,
            CellKind::Tet4 => 4,
            CellKind::Hex8 => 5,
            CellKind::Prism6 => 6,
            CellKind::Pyramid5 => 7,
            CellKind::Line3 => 8,
            CellKind::Tri6 => 9,
            CellKind::Quad9 => 10,
            CellKind::Tet10 => 11,
            CellKind::Hex27 => 12,
            CellKind::Prism18 => 13,
            CellKind::Pyramid14 => 14,
            CellKind::Point => 15,
            CellKind::Quad8 => 16,
            CellKind::Hex20 => 17,
            CellKind::Prism15 => 18,
            CellKind::Pyramid13 => 19,
        }
    }

    /// Nodes per cell.
    pub fn nodes(self) -> usize {
        match self {
            CellKind::Point => 1,
            CellKind::Line2 => 2,
            CellKind::Line3 | CellKind::Tri3 => 3,
            CellKind::Quad4 | CellKind::Tet4 => 4,
            CellKind::Pyramid5 => 5,
            CellKind::Tri6 | CellKind::Prism6 => 6,
            CellKind::Quad8 | CellKind::Hex8 => 8,
            CellKind::Quad9 => 9,
            CellKind::Tet10 => 10,
            CellKind::Pyramid13 => 13,
            CellKind::Pyramid14 => 14,
            CellKind::Prism15 => 15,
            CellKind::Prism18 => 18,
            CellKind::Hex20 => 20,
            CellKind::Hex27 => 27,
        }
    }

    /// Topological dimension (0 for points, 3 for solids).
    pub fn dim(self) -> u8 {
        match self {
            CellKind::Point => 0,
            CellKind::Line2 | CellKind::Line3 => 1,
            CellKind::Tri3 | CellKind::Tri6 => 2,
            CellKind::Quad4 | CellKind::Quad8 | CellKind::Quad9 => 2,
            _ => 3,
        }
    }
}

/// All cells of one kind. Invariant (checked by the reader, and by every function that
/// consumes a block, through [`CellBlock::check`]): `connectivity.len() == kind.nodes() *
/// len`, `physical` and `elementary` have one entry per cell.
#[derive(Clone, Debug, PartialEq)]
pub struct CellBlock {
    /// The kind of every cell in the block.
    pub kind: CellKind,
    /// `kind.nodes()` 0-based point indices per cell, cell after cell.
    pub connectivity: Vec<u32>,
    /// The physical group of each cell (0 when it has none).
    pub physical: Vec<i32>,
    /// The elementary (geometric entity) tag of each cell (0 when unknown).
    pub elementary: Vec<i32>,
}

impl CellBlock {
    /// An empty block of `kind`.
    pub fn new(kind: CellKind) -> Self {
        CellBlock {
            kind,
            connectivity: Vec::new(),
            physical: Vec::new(),
            elementary: Vec::new(),
        }
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.physical.len()
    }

    /// Checks the block's invariant: one `physical` and one `elementary` tag per cell, and
    /// `kind.nodes()` point indices per cell in `connectivity`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) naming the block's
    /// kind and the lengths that disagree.
    pub fn check(&self) -> crate::error::Result<()> {
        let cells = self.physical.len();
        let nodes = self.kind.nodes();
        let bad = |reason: String| {
            crate::error::Error::invalid(
                "CellBlock::check",
                "block",
                format!("the {:?} block {reason}", self.kind),
            )
        };
        if self.elementary.len() != cells {
            return Err(bad(format!(
                "has {cells} physical tags but {} elementary tags (one of each per cell)",
                self.elementary.len()
            )));
        }
        if cells.checked_mul(nodes) != Some(self.connectivity.len()) {
            return Err(bad(format!(
                "has {} connectivity entries for {cells} cells (physical tags) of {nodes} \
                 nodes each: expected {}",
                self.connectivity.len(),
                cells.saturating_mul(nodes)
            )));
        }
        Ok(())
    }

    /// Whether the block has no cells.
    pub fn is_empty(&self) -> bool {
        self.physical.is_empty()
    }

    /// The point indices of cell `i`.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn cell(&self, i: usize) -> &[u32] {
        let n = self.kind.nodes();
        &self.connectivity[i * n..(i + 1) * n]
    }

    /// The cells, one slice of `kind.nodes()` indices each.
    pub fn cells(&self) -> std::slice::ChunksExact<'_, u32> {
        self.connectivity.chunks_exact(self.kind.nodes())
    }
}

/// A named physical group (Gmsh `$PhysicalNames`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalName {
    /// Dimension of the group's cells.
    pub dim: u8,
    /// The physical tag cells of the group carry.
    pub tag: i32,
    /// The name, without quotes.
    pub name: String,
}

/// An unstructured mesh: points and cell blocks. See the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Point coordinates (z = 0 for planar meshes).
    pub points: Vec<[f64; 3]>,
    /// Cell blocks, at most one per kind, in order of first appearance in the file.
    pub blocks: Vec<CellBlock>,
    /// Physical group names, as listed in the file.
    pub physical_names: Vec<PhysicalName>,
}

impl Mesh {
    /// The block of `kind`, if the mesh has cells of that kind.
    pub fn block(&self, kind: CellKind) -> Option<&CellBlock> {
        self.blocks.iter().find(|b| b.kind == kind)
    }

    /// Checks the mesh's invariants: every block's ([`CellBlock::check`]), at most one
    /// block per kind, and every point index below the number of points.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) naming the block
    /// (and the cell and index for an index out of range).
    pub fn check(&self) -> crate::error::Result<()> {
        let npoints = self.points.len();
        let mut seen = [false; CellKind::ALL.len()];
        for (i, block) in self.blocks.iter().enumerate() {
            block.check()?;
            if std::mem::replace(&mut seen[block.kind as usize], true) {
                return Err(crate::error::Error::invalid(
                    "Mesh::check",
                    "blocks",
                    format!(
                        "block {i} is a second block of kind {:?} (at most one per kind)",
                        block.kind
                    ),
                ));
            }
            if let Some(k) = block
                .connectivity
                .iter()
                .position(|&v| v as usize >= npoints)
            {
                return Err(crate::error::Error::invalid(
                    "Mesh::check",
                    "blocks",
                    format!(
                        "cell {} of the {:?} block refers to point {}, but there are {npoints} \
                         points",
                        k / block.kind.nodes(),
                        block.kind,
                        block.connectivity[k]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the mesh ([`Mesh::check`]), then that every cell of dimension 2 or 3 is of a
    /// kind in `allowed`: a consumer that would skip the others (quadrilaterals, hexahedra,
    /// prisms, pyramids in a tetrahedral solver, say) refuses the mesh instead of solving
    /// on a part of it.
    ///
    /// # Errors
    /// Those of [`Mesh::check`];
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) naming the first
    /// block of another kind: its count, Gmsh type and the physical tag of its first cell.
    pub fn check_kinds(&self, op: &'static str, allowed: &[CellKind]) -> crate::error::Result<()> {
        self.check()?;
        let other = self
            .blocks
            .iter()
            .find(|b| b.kind.dim() >= 2 && !b.is_empty() && !allowed.contains(&b.kind));
        match other {
            None => Ok(()),
            Some(b) => Err(crate::error::Error::invalid(
                op,
                "mesh",
                format!(
                    "the mesh has {} cells of kind {:?} (Gmsh type {}, the first with physical \
                     tag {}), which {op} does not support (it takes {:?}): remesh, or remove them",
                    b.len(),
                    b.kind,
                    b.kind.gmsh_type(),
                    b.physical.first().copied().unwrap_or(0),
                    allowed
                ),
            )),
        }
    }

    /// Number of cells of `kind`.
    pub fn num_cells(&self, kind: CellKind) -> usize {
        self.block(kind).map_or(0, CellBlock::len)
    }

    /// The tetrahedra: the [`Tet4`](CellKind::Tet4) and [`Tet10`](CellKind::Tet10) cells,
    /// block by block, each as its four corners (a Tet10's first four nodes).
    pub fn tets(&self) -> Vec<[u32; 4]> {
        let mut tets =
            Vec::with_capacity(self.num_cells(CellKind::Tet4) + self.num_cells(CellKind::Tet10));
        for block in &self.blocks {
            if matches!(block.kind, CellKind::Tet4 | CellKind::Tet10) {
                tets.extend(block.cells().map(|c| [c[0], c[1], c[2], c[3]]));
            }
        }
        tets
    }

    /// The points that are corners of a tetrahedron, in increasing index order (for a
    /// [`Tet10`](CellKind::Tet10) mesh: all points but the edge nodes).
    pub fn tet_points(&self) -> Vec<u32> {
        let mut used = vec![false; self.points.len()];
        for t in self.tets() {
            for v in t {
                if let Some(u) = used.get_mut(v as usize) {
                    *u = true;
                }
            }
        }
        (0..used.len() as u32)
            .filter(|&i| used[i as usize])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_gmsh_ids() {
        for k in CellKind::ALL {
            assert_eq!(CellKind::from_gmsh(k.gmsh_type()), Some(k));
        }
        assert_eq!(CellKind::from_gmsh(0), None);
        assert_eq!(CellKind::from_gmsh(20), None);
        assert_eq!(CellKind::Tet10.nodes(), 10);
        assert_eq!(CellKind::Quad9.dim(), 2);
    }

    #[test]
    fn tets_takes_tet10_corners() {
        let mut block = CellBlock::new(CellKind::Tet10);
        block.connectivity = (0..10).collect();
        block.physical = vec![1];
        block.elementary = vec![1];
        let mesh = Mesh {
            points: vec![[0.0; 3]; 10],
            blocks: vec![block],
            physical_names: vec![],
        };
        assert_eq!(mesh.tets(), vec![[0, 1, 2, 3]]);
        assert_eq!(mesh.tet_points(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn broken_invariants_are_errors() {
        let block = |kind, connectivity: Vec<u32>, physical: Vec<i32>| CellBlock {
            kind,
            connectivity,
            elementary: physical.clone(),
            physical,
        };
        let good = block(CellKind::Line2, vec![0, 1, 1, 2], vec![5, 5]);
        assert!(good.check().is_ok());
        // Two lines' nodes, one line's tags.
        let e = block(CellKind::Line2, vec![0, 1, 1, 2], vec![5])
            .check()
            .unwrap_err();
        assert!(
            matches!(e, crate::error::Error::InvalidArgument { .. }),
            "{e}"
        );
        assert!(e.to_string().contains("Line2"), "{e}");
        let mut tags = good.clone();
        tags.elementary.pop();
        assert!(tags.check().is_err());

        let mesh = |blocks| Mesh {
            points: vec![[0.0; 3]; 3],
            blocks,
            physical_names: vec![],
        };
        assert!(mesh(vec![good.clone()]).check().is_ok());
        let e = mesh(vec![good.clone(), good.clone()]).check().unwrap_err();
        assert!(e.to_string().contains("second block"), "{e}");
        let e = mesh(vec![block(CellKind::Line2, vec![0, 3], vec![1])])
            .check()
            .unwrap_err();
        assert!(e.to_string().contains("point 3"), "{e}");
        // The consumers' gate refuses it too, before looking at kinds.
        let e = mesh(vec![block(CellKind::Tet4, vec![0, 1, 2], vec![1])])
            .check_kinds("test", &[CellKind::Tet4])
            .unwrap_err();
        assert!(e.to_string().contains("Tet4"), "{e}");
    }
}
