//! The CPU implementation of [`HdgOps`]: the reference the device kernels are tested
//! against (rayon over elements and trace values).

use rayon::prelude::*;

use crate::backend::cpu::Cpu;
use crate::error::Result;
use crate::hdg::coefficients::{CoefficientKind, ElementGeometry};
use crate::hdg::ops::{element_vertices, slot_source, HdgOps, TRACE_SLOTS};
use crate::mesh::tri::NO_ELEMENT;
use crate::scalar::{Element, Scalar};
use crate::sparse::PAD;

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
