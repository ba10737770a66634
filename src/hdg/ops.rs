//! [`HdgOps`]: the HDG kernels every backend implements (the per-element coefficients,
//! the assembly of the trace matrix and right-hand side without atomics, and the
//! edge-to-element lists by sort-by-key). The checked way to them is `HdgMesh` (the device
//! data of a mesh, in `launch.rs`); the CPU implementation, the reference, is in `cpu.rs`.
//!
//! # Assembly without atomics
//! One unit per stored value of the trace matrix: the unit of block row `g` (a free edge),
//! slot `k`, entry `(i, j)` finds its source entries through `rows[g]`, the (one or two)
//! `(element, local edge)` pairs of edge `g`, and sums them. Nothing is written twice, so no
//! unit waits for another.
//!
//! ```text
//!  slot 0      edge g itself: Σ over its elements A, B of Kᵉ[j_e, j_e]
//!  slots 1, 2  element A's other edges (j_A + 1, j_A + 2 mod 3): Kᴬ[j_A, ·]
//!  slots 3, 4  element B's other edges (j_B + 1, j_B + 2 mod 3): Kᴮ[j_B, ·]
//!  a Dirichlet (eliminated) edge or a missing element B leaves its slot empty (PAD)
//! ```

use crate::backend::core::sealed::Sealed;
use crate::error::Result;
use crate::hdg::coefficients::CoefficientKind;
use crate::mesh::tri::NO_ELEMENT;
use crate::scalar::{Element, Scalar};
use crate::sparse::PAD;
use crate::vector::VectorOps;

/// Block slots per block row of the trace matrix: the edge and the other two edges of
/// each of its (at most two) triangles.
pub const TRACE_SLOTS: usize = 5;

/// The HDG kernel family: implemented by every backend; sealed. Called by the stages of
/// [`hdg`](super), which build every argument themselves.
///
/// # Safety
/// Every method requires: the buffers belong to this backend and have the lengths its
/// documentation states. Index contents are checked by the kernels (an out-of-range element
/// or dof reads as absent), so any index values are memory-safe.
pub trait HdgOps: VectorOps + Sealed {
    /// The coefficient rows of `kind` (module [`coefficients`](super::coefficients)) of
    /// every element, computed in `T`: `count = flips.len()` elements, `vertices` of
    /// `6 count` values `[x0, y0, x1, y1, x2, y2]`, `out` of `count · kind.width()` values.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn hdg_coefficients<V: Element, T: Scalar>(
        &self,
        kind: CoefficientKind,
        tau: T,
        lambda: T,
        vertices: &Self::Buffer<V>,
        flips: &Self::Buffer<u32>,
        out: &mut Self::Buffer<V>,
    ) -> Result<()>;

    /// The trace matrix in block-ELL layout (module docs): `ke` the `count` element
    /// matrices (`3 nl x 3 nl` each), `rows` two element codes `(e << 2) | j` per free edge
    /// (the second [`NO_ELEMENT`] on the boundary), `elem_dofs` three free-edge indices per
    /// element ([`PAD`] for an eliminated edge); `values` of `nfree nl · 5 nl` values,
    /// `neighbours` of `5 nfree`, with `nfree = rows.len() / 2`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn hdg_assemble_matrix<V: Element>(
        &self,
        nl: usize,
        ke: &Self::Buffer<V>,
        rows: &Self::Buffer<u32>,
        elem_dofs: &Self::Buffer<u32>,
        values: &mut Self::Buffer<V>,
        neighbours: &mut Self::Buffer<u32>,
    ) -> Result<()>;

    /// `out[g nl + i] = Σ over the elements e of free edge g of w[e][j_e nl + i]`: element
    /// trace vectors (`3 nl` per element) summed onto the free edges (`out` of
    /// `nfree nl` values).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn hdg_assemble_vector<V: Element, S: Scalar>(
        &self,
        nl: usize,
        w: &Self::Buffer<V>,
        rows: &Self::Buffer<u32>,
        out: &mut Self::Buffer<S>,
    ) -> Result<()>;

    /// The edge-to-element lists: `elem_edges` holds the global edge of each local edge
    /// (`3 count` values, each below `nedges`); `out` (`2 nedges` values) receives, for
    /// every edge, its element codes `(e << 2) | j` in increasing order, [`NO_ELEMENT`]
    /// for a missing second one. Sorts the `(edge, code)` pairs by key.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn hdg_edge_elements(
        &self,
        elem_edges: &Self::Buffer<u32>,
        out: &mut Self::Buffer<u32>,
    ) -> Result<()>;
}

/// The vertices of element `e`.
pub(crate) fn element_vertices<V: Element>(vertices: &[V], e: usize) -> [f64; 6] {
    std::array::from_fn(|k| vertices[6 * e + k].as_f64())
}

/// The source of slot `k` (1..5) of the block row with element codes `pair`: the element,
/// the local edge of the row and the local edge of the column, or `None` when the slot is
/// empty.
pub(crate) fn slot_source(
    pair: [u32; 2],
    k: usize,
    elem_dofs: &[u32],
) -> Option<(usize, usize, usize)> {
    let code = pair[(k - 1) / 2];
    if code == NO_ELEMENT {
        return None;
    }
    let (e, jl) = ((code >> 2) as usize, (code & 3) as usize);
    let jc = (jl + 1 + (k - 1) % 2) % 3;
    match elem_dofs.get(3 * e + jc) {
        Some(&d) if d != PAD => Some((e, jl, jc)),
        _ => None,
    }
}
