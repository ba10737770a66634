//! The trace unknowns of a mesh: which edges are free (interior and Neumann) and which are
//! eliminated (Dirichlet), their numbering, and the index arrays the device stages use.
//!
//! ```text
//!  free edges      f = 0 .. nfree     (global edge order)   trace dofs f nl + m
//!  Dirichlet edges d = 0 .. ndir      (global edge order)   values λ_D[d nl + m]
//!  elem_dofs[3e + j]   free index of σ(e, j), or PAD for a Dirichlet edge
//!  gather_free[(3e + j) nl + m] = f nl + m   (PAD on Dirichlet edges)
//!  gather_dir [(3e + j) nl + m] = d nl + m   (PAD on free edges)
//! ```
//!
//! The trace modes are in each edge's global direction (from its lower to its higher
//! point); the element matrices carry the signs `σ_l` of the local edges that run the other
//! way (see [`coefficients`](super::coefficients)), so the gathers need no signs.

use crate::error::{Error, Result};
use crate::mesh::tri::TriMesh;
use crate::sparse::PAD;

/// The free and eliminated edges of a mesh and the index arrays built from them.
#[derive(Clone, Debug)]
pub struct TraceTopology {
    /// Trace modes per edge `P + 1`.
    pub nl: usize,
    /// Global edge of each free edge.
    pub free_edges: Vec<u32>,
    /// Global edge of each Dirichlet edge.
    pub dirichlet_edges: Vec<u32>,
    /// Free index of each local edge (`3 count`), [`PAD`] on Dirichlet edges.
    pub elem_dofs: Vec<u32>,
    /// Flip mask of each element: bit `j` set when local edge `j` runs against its edge.
    pub flips: Vec<u32>,
    /// Whether each free edge is a Neumann boundary edge.
    pub neumann: Vec<bool>,
}

impl TraceTopology {
    /// Every boundary edge is Dirichlet except those whose physical tag is in
    /// `neumann_tags`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a Neumann tag that no boundary edge carries.
    pub fn new(mesh: &TriMesh, nl: usize, neumann_tags: &[i32]) -> Result<Self> {
        let tags = mesh.boundary_tags();
        if let Some(t) = neumann_tags.iter().find(|t| !tags.contains(t)) {
            return Err(Error::InvalidArgument {
                op: "hdg",
                name: "neumann tags",
                reason: format!(
                    "no boundary edge carries physical tag {t} (the boundary tags are {tags:?})"
                ),
            });
        }
        let ne = mesh.num_edges();
        let mut free_of = vec![PAD; ne];
        let (mut free_edges, mut dirichlet_edges, mut neumann) =
            (Vec::new(), Vec::new(), Vec::new());
        for (g, free) in free_of.iter_mut().enumerate() {
            let is_neumann = mesh.boundary[g] && neumann_tags.contains(&mesh.edge_tags[g]);
            if mesh.boundary[g] && !is_neumann {
                dirichlet_edges.push(g as u32);
            } else {
                *free = free_edges.len() as u32;
                free_edges.push(g as u32);
                neumann.push(is_neumann);
            }
        }
        let elem_dofs = mesh
            .elem_edges
            .iter()
            .flat_map(|ee| ee.map(|g| free_of[g as usize]))
            .collect();
        let flips = mesh
            .forward
            .iter()
            .map(|f| (0..3).filter(|&j| !f[j]).map(|j| 1u32 << j).sum())
            .collect();
        Ok(TraceTopology {
            nl,
            free_edges,
            dirichlet_edges,
            elem_dofs,
            flips,
            neumann,
        })
    }

    /// Free edges.
    pub fn nfree(&self) -> usize {
        self.free_edges.len()
    }

    /// Dirichlet edges.
    pub fn ndirichlet(&self) -> usize {
        self.dirichlet_edges.len()
    }

    /// The gather indices of the free and the Dirichlet trace values (module docs).
    pub fn gathers(&self, mesh: &TriMesh) -> (Vec<u32>, Vec<u32>) {
        let nl = self.nl;
        let mut dir_of = vec![PAD; mesh.num_edges()];
        for (d, &g) in self.dirichlet_edges.iter().enumerate() {
            dir_of[g as usize] = d as u32;
        }
        let n = self.elem_dofs.len() * nl;
        let (mut free, mut dir) = (vec![PAD; n], vec![PAD; n]);
        for (k, (&f, &g)) in self
            .elem_dofs
            .iter()
            .zip(mesh.elem_edges.iter().flatten())
            .enumerate()
        {
            for m in 0..nl {
                if f != PAD {
                    free[k * nl + m] = f * nl as u32 + m as u32;
                } else {
                    dir[k * nl + m] = dir_of[g as usize] * nl as u32 + m as u32;
                }
            }
        }
        (free, dir)
    }

    /// Non-empty blocks of the trace matrix: each free edge's own block, plus, for every
    /// element with `F` free edges, the `F (F − 1)` couplings between them.
    pub fn blocks(&self) -> usize {
        self.nfree()
            + self
                .elem_dofs
                .chunks(3)
                .map(|c| {
                    let f = c.iter().filter(|&&d| d != PAD).count();
                    f * f.saturating_sub(1)
                })
                .sum::<usize>()
    }
}
