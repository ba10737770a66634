//! The CPU implementation of [`DgOps`]: the reference the device kernels are checked
//! against, element by element in f64 (rayon over elements and face units).

use rayon::prelude::*;

use crate::backend::cpu::Cpu;
use crate::dg::ops::{DgMesh, DgOps, DgParams, DgShape, FACE_INTERIOR, FACE_PEC};
use crate::error::Result;
use crate::scalar::Scalar;

/// The unscaled fluxes `(E, H)` of both sides of one face node (minus side, plus side),
/// from the minus side's normal `n` and the jumps `de`, `dh` seen from the minus side.
pub(crate) fn face_flux(
    n: [f64; 3],
    alpha: f64,
    de: [f64; 3],
    dh: [f64; 3],
) -> ([f64; 6], [f64; 6]) {
    let nde = n[0] * de[0] + n[1] * de[1] + n[2] * de[2];
    let ndh = n[0] * dh[0] + n[1] * dh[1] + n[2] * dh[2];
    let cross = |a: [f64; 3]| {
        [
            n[1] * a[2] - n[2] * a[1],
            n[2] * a[0] - n[0] * a[2],
            n[0] * a[1] - n[1] * a[0],
        ]
    };
    let (nxh, nxe) = (cross(dh), cross(de));
    let mut common = [0.0; 6];
    let mut upwind = [0.0; 6];
    for d in 0..3 {
        common[d] = nxh[d];
        common[3 + d] = -nxe[d];
        upwind[d] = alpha * (de[d] - nde * n[d]);
        upwind[3 + d] = alpha * (dh[d] - ndh * n[d]);
    }
    (
        std::array::from_fn(|c| common[c] + upwind[c]),
        std::array::from_fn(|c| common[c] - upwind[c]),
    )
}

/// The jumps `([[E]], [[H]])` at a face node of kind `kind` from the minus and plus
/// values (the plus values are ignored on the boundary).
pub(crate) fn jumps(kind: u32, minus: [f64; 6], plus: [f64; 6]) -> ([f64; 3], [f64; 3]) {
    match kind {
        FACE_INTERIOR => (
            std::array::from_fn(|d| plus[d] - minus[d]),
            std::array::from_fn(|d| plus[3 + d] - minus[3 + d]),
        ),
        FACE_PEC => (std::array::from_fn(|d| -2.0 * minus[d]), [0.0; 3]),
        _ => (
            std::array::from_fn(|d| -minus[d]),
            std::array::from_fn(|d| -minus[3 + d]),
        ),
    }
}

/// The volume term of element `e` in f64 (`6 Np` values, field-major).
fn volume_element(shape: DgShape, ops: &[f64], ijac: &[f64], u: &[f64]) -> Vec<f64> {
    let np = shape.np;
    // d[(3 c + k) Np + i]: derivative of field c along reference direction k at node i,
    // accumulated a column of D_k at a time.
    let mut d = vec![0.0f64; 18 * np];
    for k in 0..3 {
        for j in 0..np {
            let col = &ops[(k * np + j) * np..(k * np + j + 1) * np];
            for c in 0..6 {
                let v = u[c * np + j];
                let dst = &mut d[(3 * c + k) * np..(3 * c + k + 1) * np];
                dst.iter_mut().zip(col).for_each(|(o, a)| *o += a * v);
            }
        }
    }
    let mut out = vec![0.0; 6 * np];
    for i in 0..np {
        // ∂_x_j of field c.
        let g = |c: usize, j: usize| {
            ijac[j] * d[3 * c * np + i]
                + ijac[3 + j] * d[(3 * c + 1) * np + i]
                + ijac[6 + j] * d[(3 * c + 2) * np + i]
        };
        let curl = |b: usize| {
            [
                g(b + 2, 1) - g(b + 1, 2),
                g(b, 2) - g(b + 2, 0),
                g(b + 1, 0) - g(b, 1),
            ]
        };
        let (ce, ch) = (curl(0), curl(3));
        for k in 0..3 {
            out[k * np + i] = ch[k];
            out[(3 + k) * np + i] = -ce[k];
        }
    }
    out
}

/// `out[i] += Σ_b Lift[i, b] flux[c][b]` for the element (`flux`: `6 · 4 Nfp` values).
fn lift_element(shape: DgShape, ops: &[f64], flux: &[f64], out: &mut [f64]) {
    let (np, nf) = (shape.np, 4 * shape.nfp);
    let lift = &ops[3 * np * np..];
    for b in 0..nf {
        let col = &lift[b * np..(b + 1) * np];
        for c in 0..6 {
            let v = flux[c * nf + b];
            let dst = &mut out[c * np..(c + 1) * np];
            dst.iter_mut().zip(col).for_each(|(o, a)| *o += a * v);
        }
    }
}

/// The element's fields (`6 Np`, field-major) in f64.
fn load_element<T: Scalar>(q: &[T], shape: DgShape, e: usize) -> Vec<f64> {
    let (np, len) = (shape.np, shape.len());
    let mut u = Vec::with_capacity(6 * np);
    for c in 0..6 {
        u.extend(
            q[c * len + e * np..c * len + (e + 1) * np]
                .iter()
                .map(|v| v.as_f64()),
        );
    }
    u
}

/// Fields at a global node.
fn node_values<T: Scalar>(q: &[T], len: usize, g: usize) -> [f64; 6] {
    std::array::from_fn(|c| q[c * len + g].as_f64())
}

/// Runs `f(e)` (`6 Np` values, field-major) for every element in parallel and stores the
/// results into `out` (`6 L`, the field layout).
fn per_element<T: Scalar>(shape: DgShape, out: &mut [T], f: impl Fn(usize) -> Vec<f64> + Sync) {
    let np = shape.np;
    let mut tmp = vec![0.0f64; 6 * shape.len()];
    tmp.par_chunks_mut(6 * np)
        .enumerate()
        .for_each(|(e, chunk)| chunk.copy_from_slice(&f(e)));
    out.par_chunks_mut(shape.len())
        .enumerate()
        .for_each(|(c, field)| {
            for (e, node) in field.chunks_mut(np).enumerate() {
                for (i, v) in node.iter_mut().enumerate() {
                    *v = T::from_f64(tmp[e * 6 * np + c * np + i]);
                }
            }
        });
}

impl Cpu {
    /// The six face fluxes of element `e` (`6 · 4 Nfp`, field-major), from its own side.
    fn element_flux<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        alpha: f64,
        q: &[T],
        e: usize,
    ) -> Vec<f64> {
        let s = mesh.shape;
        let (nfp, len) = (s.nfp, s.len());
        let nf = 4 * nfp;
        let mut out = vec![0.0; 6 * nf];
        for f in 0..4 {
            let face = 4 * e + f;
            let geo = &mesh.face[4 * face..4 * face + 4];
            let n = [geo[0].as_f64(), geo[1].as_f64(), geo[2].as_f64()];
            let scale = geo[3].as_f64();
            let kind = mesh.kind[face];
            for j in 0..nfp {
                let gm = e * s.np + mesh.fmask[f * nfp + j] as usize;
                let gp = mesh.vmap_p[face * nfp + j] as usize;
                let (de, dh) = jumps(kind, node_values(q, len, gm), node_values(q, len, gp));
                let (minus, _) = face_flux(n, alpha, de, dh);
                for c in 0..6 {
                    out[c * nf + f * nfp + j] = scale * minus[c];
                }
            }
        }
        out
    }
}

fn f64s<T: Scalar>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.as_f64()).collect()
}

impl DgOps for Cpu {
    unsafe fn dg_volume<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        q: &Vec<T>,
        rhs: &mut Vec<T>,
        _params: DgParams,
    ) -> Result<()> {
        let s = mesh.shape;
        let (ops, elem) = (f64s(&mesh.ops), f64s(&mesh.elem));
        per_element(s, rhs, |e| {
            volume_element(s, &ops, &elem[9 * e..9 * e + 9], &load_element(q, s, e))
        });
        Ok(())
    }

    unsafe fn dg_flux<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        alpha: T,
        q: &Vec<T>,
        flux: &mut Vec<T>,
    ) -> Result<()> {
        let s = mesh.shape;
        let (nfp, len, fl) = (s.nfp, s.len(), s.face_len());
        let alpha = alpha.as_f64();
        // (slot, values) for both sides of every face unit, then stored.
        let results: Vec<Vec<(usize, [f64; 6])>> = (0..mesh.pairs)
            .into_par_iter()
            .map(|p| {
                let face = mesh.pair_face[p] as usize;
                let e = face / 4;
                let f = face % 4;
                let geo = &mesh.face[4 * face..4 * face + 4];
                let n = [geo[0].as_f64(), geo[1].as_f64(), geo[2].as_f64()];
                let kind = mesh.kind[face];
                let mut out = Vec::with_capacity(2 * nfp);
                for j in 0..nfp {
                    let slot = face * nfp + j;
                    let gm = e * s.np + mesh.fmask[f * nfp + j] as usize;
                    let gp = mesh.vmap_p[slot] as usize;
                    let (de, dh) = jumps(kind, node_values(q, len, gm), node_values(q, len, gp));
                    let (minus, plus) = face_flux(n, alpha, de, dh);
                    out.push((slot, minus.map(|v| v * geo[3].as_f64())));
                    let ps = mesh.pair_slot[p * nfp + j];
                    if ps != u32::MAX {
                        let ps = ps as usize;
                        let sp = mesh.face[4 * (ps / nfp) + 3].as_f64();
                        out.push((ps, plus.map(|v| v * sp)));
                    }
                }
                out
            })
            .collect();
        for (slot, v) in results.into_iter().flatten() {
            for c in 0..6 {
                flux[c * fl + slot] = T::from_f64(v[c]);
            }
        }
        Ok(())
    }

    unsafe fn dg_lift<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        flux: &Vec<T>,
        rhs: &mut Vec<T>,
        _params: DgParams,
    ) -> Result<()> {
        let s = mesh.shape;
        let (nf, fl) = (4 * s.nfp, s.face_len());
        let ops = f64s(&mesh.ops);
        let current = rhs.clone();
        per_element(s, rhs, |e| {
            let mut fe = Vec::with_capacity(6 * nf);
            for c in 0..6 {
                fe.extend(
                    flux[c * fl + e * nf..c * fl + (e + 1) * nf]
                        .iter()
                        .map(|v| v.as_f64()),
                );
            }
            let mut out = load_element(&current, s, e);
            lift_element(s, &ops, &fe, &mut out);
            out
        });
        Ok(())
    }

    unsafe fn dg_update<T: Scalar>(
        &self,
        len: usize,
        coef: [T; 3],
        rhs: &Vec<T>,
        res: &mut Vec<T>,
        q: &mut Vec<T>,
    ) -> Result<()> {
        let [a, b, dt] = coef.map(|v| v.as_f64());
        res[..len]
            .par_iter_mut()
            .zip(q[..len].par_iter_mut())
            .zip(rhs[..len].par_iter())
            .for_each(|((r, qv), k)| {
                let nr = a * r.as_f64() + dt * k.as_f64();
                *r = T::from_f64(nr);
                *qv = T::from_f64(qv.as_f64() + b * nr);
            });
        Ok(())
    }

    unsafe fn dg_stage<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        alpha: T,
        coef: [T; 3],
        q: &Vec<T>,
        res: &mut Vec<T>,
        q_next: &mut Vec<T>,
        _params: DgParams,
        elements: std::ops::Range<usize>,
    ) -> Result<()> {
        let s = mesh.shape;
        let np = s.np;
        let (ops, elem) = (f64s(&mesh.ops), f64s(&mesh.elem));
        let alpha = alpha.as_f64();
        let [a, b, dt] = coef.map(|v| v.as_f64());
        // The right-hand side of the range's elements, element-major (`6 Np` each).
        let first = elements.start;
        let mut rhs = vec![0.0f64; 6 * np * elements.len()];
        rhs.par_chunks_mut(6 * np)
            .enumerate()
            .for_each(|(i, chunk)| {
                let e = first + i;
                let u = load_element(q, s, e);
                let mut out = volume_element(s, &ops, &elem[9 * e..9 * e + 9], &u);
                lift_element(s, &ops, &self.element_flux(mesh, alpha, q, e), &mut out);
                chunk.copy_from_slice(&out);
            });
        let len = s.len();
        for c in 0..6 {
            let span = c * len + first * np..c * len + elements.end * np;
            res[span.clone()]
                .par_iter_mut()
                .zip(q_next[span.clone()].par_iter_mut())
                .zip(q[span].par_iter())
                .enumerate()
                .for_each(|(n, ((r, next), qv))| {
                    // The right-hand side in T, as the four-kernel path stores it.
                    let k = T::from_f64(rhs[(n / np) * 6 * np + c * np + n % np]).as_f64();
                    let nr = a * r.as_f64() + dt * k;
                    *r = T::from_f64(nr);
                    *next = T::from_f64(qv.as_f64() + b * nr);
                });
        }
        Ok(())
    }

    fn dg_default_params<T: Scalar>(&self, _shape: DgShape) -> DgParams {
        DgParams {
            elements_per_cube: 1,
            elements_per_unit: 1,
            fused: true,
            shared_operators: false,
        }
    }

    fn dg_params_fit<T: Scalar>(&self, _shape: DgShape, params: DgParams) -> bool {
        params.elements_per_cube >= 1 && params.elements_per_unit >= 1
    }
}
