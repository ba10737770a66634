//! VTK unstructured grids through the `vtkio` crate: points, cells of one or several kinds,
//! named point and cell data, written as legacy binary `.vtk` or XML `.vtu` by the file's
//! extension (both open in ParaView).
//!
//! ```
//! use galerkin::io::vtk::{UnstructuredGrid, VtkCell};
//! # fn main() -> galerkin::Result<()> {
//! let mut grid = UnstructuredGrid::new(
//!     vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]],
//!     VtkCell::Triangle,
//!     vec![0, 1, 2, 1, 3, 2],
//! )?;
//! grid.add_point_data("u", 1, vec![0.0, 1.0, 2.0, 3.0])?;
//! grid.add_cell_data("element", 1, vec![0.0, 1.0])?;
//! let text = grid.to_legacy_ascii()?;
//! assert!(text.contains("CELLS 2 8"));
//! # Ok(())
//! # }
//! ```
//!
//! High-order fields are written sampled on a sub-triangulation of each element (see
//! [`Hdg::sample`](crate::hdg::Hdg::sample)): each element gets its own points, so a
//! discontinuous field shows its jumps.

use std::path::Path;

use vtkio::model::{
    Attribute, Attributes, ByteOrder, CellType, Cells, DataSet, UnstructuredGridPiece, Version,
    VertexNumbers, Vtk,
};

use crate::error::{Error, Result};
use crate::mesh::tri::TriMesh;

/// The cell kinds the grids hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VtkCell {
    /// A 2-node line.
    Line,
    /// A 3-node triangle.
    Triangle,
    /// A 4-node quadrilateral (counterclockwise).
    Quad,
    /// A 4-node tetrahedron.
    Tetra,
    /// An 8-node hexahedron (VTK order).
    Hexahedron,
}

impl VtkCell {
    /// Points per cell.
    pub const fn nodes(self) -> usize {
        match self {
            VtkCell::Line => 2,
            VtkCell::Triangle => 3,
            VtkCell::Quad | VtkCell::Tetra => 4,
            VtkCell::Hexahedron => 8,
        }
    }

    fn vtk(self) -> CellType {
        match self {
            VtkCell::Line => CellType::Line,
            VtkCell::Triangle => CellType::Triangle,
            VtkCell::Quad => CellType::Quad,
            VtkCell::Tetra => CellType::Tetra,
            VtkCell::Hexahedron => CellType::Hexahedron,
        }
    }
}

/// Named data on the points or the cells: `components` values per point (cell).
#[derive(Clone, Debug, PartialEq)]
pub struct DataField {
    /// The name ParaView shows.
    pub name: String,
    /// Components per entry (1 scalar, 3 vector).
    pub components: usize,
    /// `components` values per entry, entry-major.
    pub values: Vec<f64>,
}

/// An unstructured grid of one cell kind with point and cell data. See the
/// [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct UnstructuredGrid {
    points: Vec<[f64; 3]>,
    cell: VtkCell,
    connectivity: Vec<u32>,
    point_data: Vec<DataField>,
    cell_data: Vec<DataField>,
}

impl UnstructuredGrid {
    /// A grid of `points` and cells of kind `cell`, `cell.nodes()` point indices each.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `connectivity` is not a whole number of cells, a
    /// point index is out of range, or a coordinate is not finite.
    pub fn new(points: Vec<[f64; 3]>, cell: VtkCell, connectivity: Vec<u32>) -> Result<Self> {
        if !connectivity.len().is_multiple_of(cell.nodes()) {
            return Err(Error::invalid(
                "vtk",
                "connectivity",
                format!(
                    "{} indices are not a whole number of {cell:?} cells",
                    connectivity.len()
                ),
            ));
        }
        if let Some((i, &v)) = connectivity
            .iter()
            .enumerate()
            .find(|(_, &v)| v as usize >= points.len())
        {
            return Err(Error::invalid(
                "vtk",
                "connectivity",
                format!(
                    "cell {} refers to point {v}, but there are {} points",
                    i / cell.nodes(),
                    points.len()
                ),
            ));
        }
        if let Some((i, p)) = points
            .iter()
            .enumerate()
            .find(|(_, p)| p.iter().any(|c| !c.is_finite()))
        {
            return Err(Error::invalid(
                "vtk",
                "points",
                format!("point {i} {p:?} is not finite"),
            ));
        }
        Ok(UnstructuredGrid {
            points,
            cell,
            connectivity,
            point_data: Vec::new(),
            cell_data: Vec::new(),
        })
    }

    /// The triangles of `mesh` (no data yet).
    ///
    /// # Errors
    /// Those of [`new`](Self::new) (none for a valid mesh).
    pub fn from_tri_mesh(mesh: &TriMesh) -> Result<Self> {
        let points = mesh.points.iter().map(|p| [p[0], p[1], 0.0]).collect();
        Self::new(
            points,
            VtkCell::Triangle,
            mesh.triangles.iter().flatten().copied().collect(),
        )
    }

    /// The points.
    pub fn points(&self) -> &[[f64; 3]] {
        &self.points
    }

    /// The 4-node tetrahedra of a Gmsh mesh (its other cells are left out; every point is
    /// kept).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the mesh has no tetrahedra, or as [`new`](Self::new).
    pub fn from_tet_mesh(mesh: &crate::mesh::Mesh) -> Result<Self> {
        let tets = mesh.tets();
        if tets.is_empty() {
            return Err(Error::invalid(
                "vtk",
                "mesh",
                "the mesh has no 4-node tetrahedra",
            ));
        }
        Self::new(
            mesh.points.clone(),
            VtkCell::Tetra,
            tets.into_iter().flatten().collect(),
        )
    }

    /// Points.
    pub fn num_points(&self) -> usize {
        self.points.len()
    }

    /// Cells.
    pub fn num_cells(&self) -> usize {
        self.connectivity.len() / self.cell.nodes()
    }

    /// The point data added so far.
    pub fn point_data(&self) -> &[DataField] {
        &self.point_data
    }

    /// The cell data added so far.
    pub fn cell_data(&self) -> &[DataField] {
        &self.cell_data
    }

    fn field(
        &self,
        name: &str,
        components: usize,
        values: Vec<f64>,
        entries: usize,
        what: &str,
    ) -> Result<DataField> {
        if !(1..=9).contains(&components) {
            return Err(Error::invalid(
                "vtk",
                "components",
                format!("{name}: {components} components (1..=9)"),
            ));
        }
        if values.len() != components * entries {
            return Err(Error::invalid("vtk", 
                "values",
                format!(
                    "{name}: {} values for {entries} {what} of {components} components (expected {})",
                    values.len(),
                    components * entries
                ),
            ));
        }
        if self
            .point_data
            .iter()
            .chain(&self.cell_data)
            .any(|f| f.name == name)
        {
            return Err(Error::invalid(
                "vtk",
                "name",
                format!("a field named {name:?} exists already"),
            ));
        }
        Ok(DataField {
            name: name.to_string(),
            components,
            values,
        })
    }

    /// Adds a point field: `components` values per point.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a wrong length, 0 or more than 9 components, or a
    /// name in use.
    pub fn add_point_data(
        &mut self,
        name: &str,
        components: usize,
        values: Vec<f64>,
    ) -> Result<()> {
        let f = self.field(name, components, values, self.num_points(), "points")?;
        self.point_data.push(f);
        Ok(())
    }

    /// Adds a cell field: `components` values per cell.
    ///
    /// # Errors
    /// As [`add_point_data`](Self::add_point_data).
    pub fn add_cell_data(&mut self, name: &str, components: usize, values: Vec<f64>) -> Result<()> {
        let f = self.field(name, components, values, self.num_cells(), "cells")?;
        self.cell_data.push(f);
        Ok(())
    }

    fn to_vtk(&self) -> Vtk {
        let attribute = |f: &DataField| {
            let a = if f.components == 1 {
                Attribute::scalars(f.name.clone(), 1)
            } else {
                Attribute::generic(f.name.clone(), f.components as u32)
            };
            a.with_data(f.values.clone())
        };
        let nodes = self.cell.nodes();
        let mut vertices = Vec::with_capacity(self.connectivity.len() + self.num_cells());
        for c in self.connectivity.chunks_exact(nodes) {
            vertices.push(nodes as u32);
            vertices.extend_from_slice(c);
        }
        Vtk {
            version: Version::new((4, 1)),
            title: "galerkin".into(),
            byte_order: ByteOrder::BigEndian,
            file_path: None,
            data: DataSet::inline(UnstructuredGridPiece {
                points: self
                    .points
                    .iter()
                    .flatten()
                    .copied()
                    .collect::<Vec<f64>>()
                    .into(),
                cells: Cells {
                    cell_verts: VertexNumbers::Legacy {
                        num_cells: self.num_cells() as u32,
                        vertices,
                    },
                    types: vec![self.cell.vtk(); self.num_cells()],
                },
                data: Attributes {
                    point: self.point_data.iter().map(attribute).collect(),
                    cell: self.cell_data.iter().map(attribute).collect(),
                },
            }),
        }
    }

    /// The grid as legacy ASCII VTK text.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the writer fails (it does not for a valid grid).
    pub fn to_legacy_ascii(&self) -> Result<String> {
        let mut out = String::new();
        self.to_vtk()
            .write_legacy_ascii(&mut out)
            .map_err(|e| Error::invalid("vtk", "grid", format!("the VTK writer failed: {e}")))?;
        Ok(out)
    }

    /// Writes the grid to `path`: legacy binary for `.vtk`, XML for `.vtu`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another extension; [`Error::Io`] when the file cannot be
    /// written.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        match path.extension().and_then(|e| e.to_str()) {
            Some("vtk") | Some("vtu") => {}
            other => {
                return Err(Error::invalid(
                    "vtk",
                    "path",
                    format!(
                        "{}: extension {other:?}, expected .vtk or .vtu",
                        path.display()
                    ),
                ))
            }
        }
        self.to_vtk().export(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> UnstructuredGrid {
        UnstructuredGrid::new(
            vec![
                [0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0],
                [0.0, 1.0, 0.0],
                [1.0, 1.0, 0.0],
            ],
            VtkCell::Triangle,
            vec![0, 1, 2, 1, 3, 2],
        )
        .unwrap()
    }

    #[test]
    fn legacy_text_holds_points_cells_and_data() {
        let mut g = square();
        g.add_point_data("u", 1, vec![0.5, 1.5, 2.5, 3.5]).unwrap();
        g.add_point_data("q", 3, (0..12).map(f64::from).collect())
            .unwrap();
        g.add_cell_data("element", 1, vec![7.0, 9.0]).unwrap();
        let t = g.to_legacy_ascii().unwrap();
        for needle in [
            "POINTS 4 double",
            "CELLS 2 8",
            "CELL_TYPES 2",
            "POINT_DATA 4",
            "CELL_DATA 2",
            "u",
            "q",
            "element",
            "3.5",
        ] {
            assert!(t.contains(needle), "{needle:?} missing from\n{t}");
        }
    }

    #[test]
    fn files_round_trip_through_vtkio() {
        let mut g = square();
        g.add_point_data("u", 1, vec![0.5, 1.5, 2.5, 3.5]).unwrap();
        let dir = std::env::temp_dir().join(format!("galerkin-vtk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for ext in ["vtk", "vtu"] {
            let path = dir.join(format!("square.{ext}"));
            g.write(&path).unwrap();
            let back = Vtk::import(&path).unwrap();
            let DataSet::UnstructuredGrid { pieces, .. } = back.data else {
                panic!("{ext}: not an unstructured grid")
            };
            let piece = pieces[0].load_piece_data(None).unwrap();
            assert_eq!(piece.num_points(), 4, "{ext}");
            assert_eq!(piece.cells.types.len(), 2, "{ext}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tet_meshes_are_written_with_their_cells() {
        let mesh = crate::mesh::structured::StructuredTets::unit_cube(2, 0.1, 1)
            .build()
            .unwrap();
        let tets = mesh.tets();
        let g = UnstructuredGrid::from_tet_mesh(&mesh).unwrap();
        assert_eq!((g.num_points(), g.num_cells()), (27, tets.len()));
        assert!(g
            .to_legacy_ascii()
            .unwrap()
            .contains(&format!("CELL_TYPES {}", tets.len())));
        assert!(UnstructuredGrid::from_tet_mesh(&crate::mesh::Mesh::default()).is_err());
    }

    #[test]
    fn bad_grids_are_rejected() {
        let p = vec![[0.0; 3]; 3];
        assert!(UnstructuredGrid::new(p.clone(), VtkCell::Triangle, vec![0, 1]).is_err());
        assert!(UnstructuredGrid::new(p.clone(), VtkCell::Triangle, vec![0, 1, 3]).is_err());
        assert!(
            UnstructuredGrid::new(vec![[f64::NAN, 0.0, 0.0]], VtkCell::Line, vec![0, 0]).is_err()
        );
        let mut g = square();
        assert!(g.add_point_data("u", 1, vec![1.0; 3]).is_err());
        assert!(g.add_point_data("u", 0, vec![]).is_err());
        g.add_point_data("u", 1, vec![1.0; 4]).unwrap();
        assert!(g.add_cell_data("u", 1, vec![1.0; 2]).is_err());
        assert!(g.write("out.txt").is_err());
    }
}
