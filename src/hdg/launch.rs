//! [`HdgMesh`]: the device data of an HDG mesh, and the checked launches of the [`HdgOps`]
//! kernels — the only safe way to them. Every index of the mesh is checked when it is made,
//! so each launch checks only the batches and vectors it is given.

use crate::backend::core::{check_device, BackendCore};
use crate::batched::Batch;
use crate::bundle::Backend;
use crate::error::{check_len, Error, Result};
use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::ops::{HdgOps, TRACE_SLOTS};
use crate::hdg::stages::TraceSystem;
use crate::hdg::topology::TraceTopology;
use crate::mesh::tri::TriMesh;
use crate::scalar::{Element, Scalar};
use crate::sparse::{to_u32, BlockEll, PAD};
use crate::vector::{DeviceIndex, Vector};

/// The device data of an HDG mesh — element vertices and edge flips, the free-edge index
/// of every element edge, the edge-to-element lists, the gathers between element traces and
/// trace vectors — checked when made (every free-edge index below the free edges or
/// [`PAD`]), so its methods, the safe way to the [`HdgOps`] kernels, check only what they
/// are given.
pub(crate) struct HdgMesh<B: Backend + HdgOps, V: Element> {
    backend: B,
    count: usize,
    nl: usize,
    nfree: usize,
    ndirichlet: usize,
    blocks: usize,
    vertices: B::Buffer<V>,
    flips: B::Buffer<u32>,
    elem_dofs: B::Buffer<u32>,
    /// Two element codes `(e << 2) | j` per free edge (by sort-by-key on the device).
    rows: B::Buffer<u32>,
    gather_free: DeviceIndex<B>,
    gather_dir: DeviceIndex<B>,
    /// Where the diagonal blocks of the trace matrix sit in its block-ELL values.
    diag_index: DeviceIndex<B>,
}

impl<B: Backend + HdgOps, V: Element> HdgMesh<B, V> {
    /// Uploads the mesh and its trace topology and builds the edge-to-element lists on the
    /// device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a topology that does not fit the mesh; index overflow
    /// ([`Error::InvalidMatrix`]); device errors.
    pub(crate) fn new(backend: &B, mesh: &TriMesh, topology: &TraceTopology) -> Result<Self> {
        const OP: &str = "hdg";
        let (count, nl, nfree) = (mesh.num_triangles(), topology.nl, topology.nfree());
        if nl == 0 {
            return Err(Error::invalid(OP, "topology", "no trace modes per edge"));
        }
        check_len(OP, "edge flips", count, topology.flips.len())?;
        check_len(OP, "element edges", 3 * count, topology.elem_dofs.len())?;
        if let Some(at) = topology
            .elem_dofs
            .iter()
            .position(|&d| d != PAD && d as usize >= nfree)
        {
            return Err(Error::invalid(
                OP,
                "topology",
                format!(
                    "element edge {at} names free edge {}, of {nfree}",
                    topology.elem_dofs[at]
                ),
            ));
        }
        let big = nfree * nl;
        to_u32(big * TRACE_SLOTS * nl, "hdg", "trace matrix values")?;
        let mut diag_index = vec![0u32; nfree * nl * nl];
        for l in 0..nfree {
            for i in 0..nl {
                for j in 0..nl {
                    diag_index[l * nl * nl + i * nl + j] = (i + nl * l + big * j) as u32;
                }
            }
        }
        let vertices: Vec<V> = mesh
            .triangles
            .iter()
            .flat_map(|t| t.iter().flat_map(|&v| mesh.points[v as usize]))
            .map(V::from_f64)
            .collect();
        let (gather_free, gather_dir) = topology.gathers(mesh);
        let elem_dofs = upload(backend, &topology.elem_dofs)?;
        let mut rows = backend.alloc::<u32>(2 * nfree)?;
        // SAFETY: elem_dofs holds 3 count entries (checked above) and rows 2 nfree, both on
        // this backend; the kernel skips the PAD entries of eliminated edges.
        unsafe { backend.hdg_edge_elements(&elem_dofs, &mut rows)? };
        Ok(HdgMesh {
            backend: backend.clone(),
            count,
            nl,
            nfree,
            ndirichlet: topology.ndirichlet(),
            blocks: topology.blocks(),
            vertices: upload(backend, &vertices)?,
            flips: upload(backend, &topology.flips)?,
            elem_dofs,
            rows,
            gather_free: DeviceIndex::upload(backend, &gather_free)?,
            gather_dir: DeviceIndex::upload(backend, &gather_dir)?,
            diag_index: DeviceIndex::upload(backend, &diag_index)?,
        })
    }

    /// The edge-to-element lists of the free edges as the device built them (two codes per
    /// edge).
    ///
    /// # Errors
    /// Device errors.
    pub(crate) fn trace_rows(&self) -> Result<Vec<u32>> {
        let mut rows = self.backend.download(&self.rows)?;
        rows.truncate(2 * self.nfree);
        Ok(rows)
    }

    /// The coefficients of `kind` of every element, computed in `S`, as `1 x count x k`.
    ///
    /// # Errors
    /// Device errors.
    pub(crate) fn coefficients<S: Scalar>(
        &self,
        kind: CoefficientKind,
        tau: S,
        lambda: S,
    ) -> Result<Batch<B, V>> {
        let k = kind.width();
        let mut out = self.backend.alloc::<V>(self.count * k)?;
        // SAFETY: vertices hold 6 count values, flips count and out count k, all on this
        // backend (made so in new and above).
        unsafe {
            self.backend.hdg_coefficients::<V, S>(
                kind,
                tau,
                lambda,
                &self.vertices,
                &self.flips,
                &mut out,
            )?
        };
        Batch::from_buffer(&self.backend, 1, self.count, k, out)
    }

    /// The element trace vectors `λᵉ` (`count x 3 nl x 1`, in `V`) of the free values `free`
    /// and the Dirichlet values `dir` (either may be absent: zeros).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] unless `free` holds `nfree nl` and `dir` `ndirichlet nl`
    /// values; [`Error::DeviceMismatch`]; device errors.
    pub(crate) fn element_traces<S: Scalar>(
        &self,
        free: Option<&Vector<B, S>>,
        dir: Option<&Vector<B, S>>,
    ) -> Result<Batch<B, V>> {
        const OP: &str = "hdg element traces";
        let mut out = Vector::<B, S>::zeros(&self.backend, self.count * 3 * self.nl)?;
        if let Some(x) = free {
            check_len(OP, "free trace values", self.nfree * self.nl, x.len())?;
            out.gather_from(x, &self.gather_free)?;
        }
        if let Some(x) = dir {
            check_len(
                OP,
                "Dirichlet trace values",
                self.ndirichlet * self.nl,
                x.len(),
            )?;
            out.gather_from(x, &self.gather_dir)?;
        }
        Batch::from_vector(out.to_precision::<V>()?, self.count, 3 * self.nl, 1)
    }

    /// The trace system: `K` in block-ELL from the element matrices `ke` (`count x 3nl x
    /// 3nl`), `F = Σ gᵉ` from the element loads `g` (`count x 3nl x 1`), and the diagonal
    /// blocks of `K` (`nfree x nl x nl`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] for batches of other shapes, [`Error::DeviceMismatch`];
    /// device errors.
    pub(crate) fn assemble<S: Scalar>(
        &self,
        ke: &Batch<B, V>,
        g: &Batch<B, V>,
    ) -> Result<TraceSystem<B, V, S>> {
        const OP: &str = "hdg assemble";
        let (nfree, nl, w) = (self.nfree, self.nl, 3 * self.nl);
        for (name, m, cols) in [("element matrices", ke, w), ("element loads", g, 1)] {
            check_device(OP, &self.backend, m.backend())?;
            check_len(OP, name, self.count, m.count())?;
            check_len(OP, "rows of the element batches", w, m.nrows())?;
            check_len(OP, "columns of the element batches", cols, m.ncols())?;
        }
        let b = &self.backend;
        let mut values = b.alloc::<V>(nfree * nl * TRACE_SLOTS * nl)?;
        let mut neighbours = b.alloc::<u32>(nfree * TRACE_SLOTS)?;
        let mut rhs = Vector::<B, S>::zeros(b, nfree * nl)?;
        // SAFETY: the lengths of the HdgOps contract: ke count (3nl)² and g count 3nl values
        // (checked above), rows 2 nfree, elem_dofs 3 count, values nfree nl · 5 nl,
        // neighbours 5 nfree, rhs nfree nl; all on this backend.
        unsafe {
            b.hdg_assemble_matrix(
                nl,
                ke.buffer(),
                &self.rows,
                &self.elem_dofs,
                &mut values,
                &mut neighbours,
            )?;
            b.hdg_assemble_vector(nl, g.buffer(), &self.rows, rhs.buffer_mut()?)?;
        }
        let mut diagonal = b.alloc::<V>(nfree * nl * nl)?;
        // SAFETY: the buffers belong to this backend; gather bounds its indices.
        unsafe { b.gather(&values, self.diag_index.buffer(), &mut diagonal)? };
        // SAFETY: every free-edge index of elem_dofs is below nfree or PAD (checked in new),
        // so the assembly kernel writes neighbours below nfree or PAD, distinct in a block row
        // (an edge and the other edges of its two elements, which share only it); values
        // hold the block-ELL layout of nfree nl rows and 5 slots of nl.
        let k = unsafe {
            BlockEll::from_raw_parts(b, nfree, nl, TRACE_SLOTS, neighbours, values, self.blocks)
        };
        Ok(TraceSystem {
            k,
            rhs,
            diagonal: Batch::from_buffer(b, nfree, nl, nl, diagonal)?,
        })
    }
}

/// A buffer of `v` (one value where `v` is empty: no device buffer is empty).
fn upload<B: BackendCore, D: crate::scalar::Storable>(b: &B, v: &[D]) -> Result<B::Buffer<D>> {
    if v.is_empty() {
        b.alloc(1)
    } else {
        b.upload(v)
    }
}
