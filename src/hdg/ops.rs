//! [`HdgOps`]: the HDG kernels every backend implements (the per-element coefficients,
//! the assembly of the trace matrix and right-hand side without atomics, and the
//! edge-to-element lists by sort-by-key), and the CPU implementation, the reference.
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

use rayon::prelude::*;

use crate::backend::core::sealed::Sealed;
use crate::backend::cpu::Cpu;
use crate::error::Result;
use crate::hdg::coefficients::{CoefficientKind, ElementGeometry};
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

impl HdgOps for Cpu {
    unsafe fn hdg_coefficients<V: Element, T: Scalar>(
        &self,
        kind: CoefficientKind,
        tau: T,
        lambda: T,
        vertices: &Vec<V>,
        flips: &Vec<u32>,
        out: &mut Vec<V>,
    ) -> Result<()> {
        let k = kind.width();
        let (tau, lambda) = (tau.as_f64(), lambda.as_f64());
        out.par_chunks_mut(k)
            .zip(flips.par_iter())
            .enumerate()
            .for_each(|(e, (row, &f))| {
                let g = ElementGeometry::new(element_vertices(vertices, e), f);
                let mut c = [0.0; 39];
                g.coefficients(kind, tau, lambda, &mut c);
                for (o, &v) in row.iter_mut().zip(&c) {
                    *o = V::from_f64(T::from_f64(v).as_f64());
                }
            });
        Ok(())
    }

    unsafe fn hdg_assemble_matrix<V: Element>(
        &self,
        nl: usize,
        ke: &Vec<V>,
        rows: &Vec<u32>,
        elem_dofs: &Vec<u32>,
        values: &mut Vec<V>,
        neighbours: &mut Vec<u32>,
    ) -> Result<()> {
        let m = nl;
        let w = 3 * m;
        let r = rows.len() / 2;
        let big = m * r;
        let count = elem_dofs.len() / 3;
        let pair = |g: usize| [rows[2 * g], rows[2 * g + 1]];
        let entry = |e: usize, row: usize, col: usize| -> f64 {
            if e < count {
                ke[e * w * w + row * w + col].as_f64()
            } else {
                0.0
            }
        };
        neighbours
            .par_chunks_mut(TRACE_SLOTS)
            .enumerate()
            .for_each(|(g, nb)| {
                nb[0] = g as u32;
                for (k, slot) in nb.iter_mut().enumerate().skip(1) {
                    *slot = slot_source(pair(g), k, elem_dofs)
                        .map_or(PAD, |(e, _, jc)| elem_dofs[3 * e + jc]);
                }
            });
        values.par_iter_mut().enumerate().for_each(|(idx, out)| {
            let (u, kj) = (idx % big, idx / big);
            let (k, j) = (kj / m, kj % m);
            let (g, i) = (u / m, u % m);
            let v = if k == 0 {
                pair(g)
                    .iter()
                    .filter(|&&c| c != NO_ELEMENT)
                    .map(|&c| {
                        let (e, jl) = ((c >> 2) as usize, (c & 3) as usize);
                        entry(e, jl * m + i, jl * m + j)
                    })
                    .sum()
            } else {
                slot_source(pair(g), k, elem_dofs)
                    .map_or(0.0, |(e, jl, jc)| entry(e, jl * m + i, jc * m + j))
            };
            *out = V::from_f64(v);
        });
        Ok(())
    }

    unsafe fn hdg_assemble_vector<V: Element, S: Scalar>(
        &self,
        nl: usize,
        w: &Vec<V>,
        rows: &Vec<u32>,
        out: &mut Vec<S>,
    ) -> Result<()> {
        let count = w.len() / (3 * nl).max(1);
        out.par_iter_mut().enumerate().for_each(|(u, o)| {
            let (g, i) = (u / nl, u % nl);
            let mut s = 0.0;
            for &c in &rows[2 * g..2 * g + 2] {
                let (e, jl) = ((c >> 2) as usize, (c & 3) as usize);
                if c != NO_ELEMENT && e < count {
                    s += w[e * 3 * nl + jl * nl + i].as_f64();
                }
            }
            *o = S::from_f64(s);
        });
        Ok(())
    }

    unsafe fn hdg_edge_elements(&self, elem_edges: &Vec<u32>, out: &mut Vec<u32>) -> Result<()> {
        let mut keys: Vec<(u32, u32)> = elem_edges
            .iter()
            .enumerate()
            .map(|(k, &g)| (g, (((k / 3) as u32) << 2) | (k % 3) as u32))
            .collect();
        keys.par_sort_unstable();
        out.fill(NO_ELEMENT);
        let nedges = out.len() / 2;
        let mut k = 0;
        while k < keys.len() {
            let g = keys[k].0 as usize;
            let first = k;
            while k < keys.len() && keys[k].0 as usize == g {
                if g < nedges && k - first < 2 {
                    out[2 * g + k - first] = keys[k].1;
                }
                k += 1;
            }
        }
        Ok(())
    }
}
