//! The CubeCL kernels of [`DgOps`](crate::dg::DgOps) (layouts in [`ops`](crate::dg::ops)).
//!
//! The element-wise kernels run `epc` elements per cube, `Np` units per element
//! (`UNIT_POS_X` the node, `UNIT_POS_Y` the element's slot), the element's data staged in
//! shared memory, the operator matrices (column-major) read through the cache: they are the
//! same for every element, and the units of an element read one column together. The flux
//! kernel runs one unit per face node of a face unit (a boundary face or one interior face
//! pair) and writes both sides.

use cubecl::prelude::*;

use crate::backend::cube::{ceil_div, stage};

/// The scalars of one RK stage: `res = a res + dt L(q)`, `q += b res`; `alpha` of the flux.
#[derive(CubeType, CubeLaunch)]
pub(super) struct StageCoef {
    pub(super) a: InputScalar,
    pub(super) b: InputScalar,
    pub(super) dt: InputScalar,
    pub(super) alpha: InputScalar,
}

/// The unscaled fluxes of both sides of one face node into `out_m`, `out_p` (6 each) from
/// the minus and plus values `qm`, `qp` (6 each; on the boundary `qp` is ignored).
#[cube]
#[allow(clippy::too_many_arguments)]
fn node_flux<T: Float>(
    face: &Array<T>,
    fid: usize,
    kind: u32,
    alpha: T,
    qm: &Array<T>,
    qp: &Array<T>,
    out_m: &mut Array<T>,
    out_p: &mut Array<T>,
) {
    let nx = face[4 * fid];
    let ny = face[4 * fid + 1];
    let nz = face[4 * fid + 2];
    let interior = kind == 0u32;
    let pec = kind == 1u32;
    let zero = T::new(0.0);
    let mut de = Array::<T>::new(3usize);
    let mut dh = Array::<T>::new(3usize);
    #[unroll]
    for d in 0..3usize {
        let em = qm[d];
        let hm = qm[comptime![3 + d]];
        de[d] = select(
            interior,
            qp[d] - em,
            select(pec, T::new(-2.0) * em, zero - em),
        );
        dh[d] = select(
            interior,
            qp[comptime![3 + d]] - hm,
            select(pec, zero, zero - hm),
        );
    }
    let nde = nx * de[0] + ny * de[1] + nz * de[2];
    let ndh = nx * dh[0] + ny * dh[1] + nz * dh[2];
    // n × dH and −n × dE.
    let c0 = ny * dh[2] - nz * dh[1];
    let c1 = nz * dh[0] - nx * dh[2];
    let c2 = nx * dh[1] - ny * dh[0];
    let c3 = nz * de[1] - ny * de[2];
    let c4 = nx * de[2] - nz * de[0];
    let c5 = ny * de[0] - nx * de[1];
    let u0 = alpha * (de[0] - nde * nx);
    let u1 = alpha * (de[1] - nde * ny);
    let u2 = alpha * (de[2] - nde * nz);
    let u3 = alpha * (dh[0] - ndh * nx);
    let u4 = alpha * (dh[1] - ndh * ny);
    let u5 = alpha * (dh[2] - ndh * nz);
    out_m[0] = c0 + u0;
    out_m[1] = c1 + u1;
    out_m[2] = c2 + u2;
    out_m[3] = c3 + u3;
    out_m[4] = c4 + u4;
    out_m[5] = c5 + u5;
    out_p[0] = c0 - u0;
    out_p[1] = c1 - u1;
    out_p[2] = c2 - u2;
    out_p[3] = c3 - u3;
    out_p[4] = c4 - u4;
    out_p[5] = c5 - u5;
}

/// Operator value `at`: from the copy staged in shared memory (`staged`) or from `ops`.
#[cube]
fn op<T: Float>(ops: &Array<T>, sops: &SharedMemory<T>, at: usize, #[comptime] staged: bool) -> T {
    if comptime![staged] {
        sops[at]
    } else {
        ops[at]
    }
}

/// The volume terms of node `lane` of `epu` elements, element `w` staged at
/// `u[base + w 6 Np epc..]` (`6 Np`, field-major) with its inverse Jacobian at `elem[9 e_w..]`
/// (`e_w = e0 + w epc`, clamped to the mesh), into `out[6 w..6 w + 6]`. Each operator entry
/// read serves all `epu` elements. The operators come from `sops` when `staged`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn volume_nodes<T: Float>(
    ops: &Array<T>,
    sops: &SharedMemory<T>,
    elem: &Array<T>,
    u: &SharedMemory<T>,
    base: usize,
    e0: usize,
    elements: usize,
    lane: usize,
    out: &mut Array<T>,
    #[comptime] np: usize,
    #[comptime] epc: usize,
    #[comptime] epu: usize,
    #[comptime] staged: bool,
) {
    let mut d = Array::<T>::new(comptime![18 * epu]);
    #[unroll]
    for c in 0..comptime![18 * epu] {
        d[c] = T::new(0.0);
    }
    // Column j of each operator: the element's units read it together (coalesced).
    for j in 0..np {
        let col = j * np + lane;
        let dr = op::<T>(ops, sops, col, staged);
        let ds = op::<T>(ops, sops, comptime![np * np] + col, staged);
        let dt = op::<T>(ops, sops, comptime![2 * np * np] + col, staged);
        #[unroll]
        for w in 0..epu {
            #[unroll]
            for c in 0..6usize {
                // Explicit fused multiply-adds: the WGSL path does not contract `+= a * b`.
                let v = u[base + comptime![w * 6 * np * epc + c * np] + j];
                let i = comptime![18 * w + 3 * c];
                d[i] = fma(dr, v, d[i]);
                d[comptime![i + 1]] = fma(ds, v, d[comptime![i + 1]]);
                d[comptime![i + 2]] = fma(dt, v, d[comptime![i + 2]]);
            }
        }
    }
    let mut g = Array::<T>::new(18usize);
    #[unroll]
    for w in 0..epu {
        let e = e0 + comptime![w * epc];
        let m = 9 * select(e < elements, e, elements - 1);
        // g[3 c + x] = ∂ field c / ∂ x.
        #[unroll]
        for c in 0..6usize {
            #[unroll]
            for x in 0..3usize {
                g[comptime![3 * c + x]] = elem[m + x] * d[comptime![18 * w + 3 * c]]
                    + elem[m + 3 + x] * d[comptime![18 * w + 3 * c + 1]]
                    + elem[m + 6 + x] * d[comptime![18 * w + 3 * c + 2]];
            }
        }
        // E_t = ∇×H (H: fields 3..6), H_t = −∇×E.
        out[comptime![6 * w]] = g[16] - g[14];
        out[comptime![6 * w + 1]] = g[11] - g[15];
        out[comptime![6 * w + 2]] = g[12] - g[10];
        out[comptime![6 * w + 3]] = g[5] - g[7];
        out[comptime![6 * w + 4]] = g[6] - g[2];
        out[comptime![6 * w + 5]] = g[1] - g[3];
    }
}

/// Stages the six fields of element `e` into `u[base..]` (unit `lane` loads its node).
#[cube]
fn load_fields<T: Float>(
    q: &Array<T>,
    u: &mut SharedMemory<T>,
    base: usize,
    e: usize,
    len: usize,
    lane: usize,
    #[comptime] np: usize,
) {
    #[unroll]
    for c in 0..6usize {
        u[base + c * np + lane] = q[c * len + e * np + lane];
    }
}

/// `acc[6 w + c] += Σ_b Lift[lane, b] fl[base + w 6 nf epc + c nf + b]` for `epu` elements
/// (`Lift` from `sops` when `staged`).
#[cube]
#[allow(clippy::too_many_arguments)]
fn lift_nodes<T: Float>(
    ops: &Array<T>,
    sops: &SharedMemory<T>,
    fl: &SharedMemory<T>,
    base: usize,
    lane: usize,
    acc: &mut Array<T>,
    #[comptime] np: usize,
    #[comptime] nfp: usize,
    #[comptime] epc: usize,
    #[comptime] epu: usize,
    #[comptime] staged: bool,
) {
    let nf = comptime![4 * nfp];
    let first = comptime![3 * np * np] + lane;
    for b in 0..nf {
        let l = op::<T>(ops, sops, first + b * np, staged);
        #[unroll]
        for w in 0..epu {
            #[unroll]
            for c in 0..6usize {
                let i = comptime![6 * w + c];
                acc[i] = fma(
                    l,
                    fl[base + comptime![w * 6 * nf * epc + c * nf] + b],
                    acc[i],
                );
            }
        }
    }
}

/// `rhs = (∇×H, −∇×E)` per element.
#[cube(launch_unchecked)]
pub(super) fn volume_kernel<T: Float>(
    ops: &Array<T>,
    elem: &Array<T>,
    q: &Array<T>,
    rhs: &mut Array<T>,
    elements: usize,
    #[comptime] np: usize,
    #[comptime] epc: usize,
) {
    let mut u = SharedMemory::<T>::new(comptime![6 * np * epc]);
    let unused = SharedMemory::<T>::new(1usize);
    let lane = UNIT_POS_X as usize;
    let slot = UNIT_POS_Y as usize;
    let len = elements * np;
    let base = slot * comptime![6 * np];
    let groups = ceil_div(elements, epc);
    let mut g = CUBE_POS;
    while g < groups {
        let e = g * epc + slot;
        let valid = e < elements;
        if valid {
            load_fields::<T>(q, &mut u, base, e, len, lane, np);
        }
        sync_cube();
        if valid {
            let mut out = Array::<T>::new(6usize);
            volume_nodes::<T>(
                ops, &unused, elem, &u, base, e, elements, lane, &mut out, np, epc, 1usize, false,
            );
            #[unroll]
            for c in 0..6usize {
                rhs[c * len + e * np + lane] = out[c];
            }
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// The fluxes of every face unit's nodes, both sides.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(super) fn flux_kernel<T: Float>(
    face: &Array<T>,
    fmask: &Array<u32>,
    vmap_p: &Array<u32>,
    kind: &Array<u32>,
    pair_face: &Array<u32>,
    pair_slot: &Array<u32>,
    q: &Array<T>,
    flux: &mut Array<T>,
    coef: &StageCoef,
    units: usize,
    len: usize,
    flen: usize,
    #[comptime] np: usize,
    #[comptime] nfp: usize,
) {
    let alpha = coef.alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut qm = Array::<T>::new(6usize);
    let mut qp = Array::<T>::new(6usize);
    let mut fm = Array::<T>::new(6usize);
    let mut fp = Array::<T>::new(6usize);
    let mut t = ABSOLUTE_POS;
    while t < units {
        let p = t / nfp;
        let j = t % nfp;
        let fid = pair_face[p] as usize;
        let e = fid / 4;
        let f = fid % 4;
        let slot = fid * nfp + j;
        let gm = e * np + fmask[f * nfp + j] as usize;
        let gp = vmap_p[slot] as usize;
        #[unroll]
        for c in 0..6usize {
            qm[c] = q[c * len + gm];
            qp[c] = q[c * len + gp];
        }
        let k = kind[fid];
        node_flux::<T>(face, fid, k, alpha, &qm, &qp, &mut fm, &mut fp);
        let sm = face[4 * fid + 3];
        #[unroll]
        for c in 0..6usize {
            flux[c * flen + slot] = sm * fm[c];
        }
        let ps = pair_slot[t];
        if k == 0u32 {
            let ps = ps as usize;
            let sp = face[4 * (ps / nfp) + 3];
            #[unroll]
            for c in 0..6usize {
                flux[c * flen + ps] = sp * fp[c];
            }
        }
        t += stride;
    }
}

/// `rhs += Lift · flux` per element.
#[cube(launch_unchecked)]
pub(super) fn lift_kernel<T: Float>(
    ops: &Array<T>,
    flux: &Array<T>,
    rhs: &mut Array<T>,
    elements: usize,
    #[comptime] np: usize,
    #[comptime] nfp: usize,
    #[comptime] epc: usize,
) {
    let nf = comptime![4 * nfp];
    let mut fl = SharedMemory::<T>::new(comptime![6 * 4 * nfp * epc]);
    let unused = SharedMemory::<T>::new(1usize);
    let lane = UNIT_POS_X as usize;
    let slot = UNIT_POS_Y as usize;
    let len = elements * np;
    let flen = elements * nf;
    let base = slot * comptime![6 * 4 * nfp];
    let groups = ceil_div(elements, epc);
    let mut g = CUBE_POS;
    while g < groups {
        let e = g * epc + slot;
        let valid = e < elements;
        if valid {
            let mut t = lane;
            while t < comptime![6 * 4 * nfp] {
                let c = t / nf;
                let b = t % nf;
                fl[base + t] = flux[c * flen + e * nf + b];
                t += np;
            }
        }
        sync_cube();
        if valid {
            let mut acc = Array::<T>::new(6usize);
            #[unroll]
            for c in 0..6usize {
                acc[c] = T::new(0.0);
            }
            lift_nodes::<T>(
                ops, &unused, &fl, base, lane, &mut acc, np, nfp, epc, 1usize, false,
            );
            #[unroll]
            for c in 0..6usize {
                let i = c * len + e * np + lane;
                rhs[i] += acc[c];
            }
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// `res = a res + dt rhs; q += b res`.
#[cube(launch_unchecked)]
pub(super) fn update_kernel<T: Float>(
    rhs: &Array<T>,
    res: &mut Array<T>,
    q: &mut Array<T>,
    coef: &StageCoef,
    len: usize,
) {
    let a = coef.a.get::<T>();
    let b = coef.b.get::<T>();
    let dt = coef.dt.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < len {
        let r = a * res[i] + dt * rhs[i];
        res[i] = r;
        q[i] += b * r;
        i += stride;
    }
}

/// One fused RK stage per element: volume term, the element's own face fluxes (staged in
/// shared memory), lift and update, `q_next = q + b (a res + dt L(q))`. A cube holds
/// `epc epu` elements, `Np epc` units; unit `(lane, slot)` serves node `lane` of elements
/// `g epc epu + w epc + slot`, `w < epu`. `staged`: the cube first copies the operators
/// (`3 Np² + 4 Np Nfp` values) into shared memory and reads them there.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(super) fn stage_kernel<T: Float>(
    ops: &Array<T>,
    elem: &Array<T>,
    face: &Array<T>,
    fmask: &Array<u32>,
    vmap_p: &Array<u32>,
    kind: &Array<u32>,
    q: &Array<T>,
    res: &mut Array<T>,
    q_next: &mut Array<T>,
    coef: &StageCoef,
    elements: usize,
    first: usize,
    end: usize,
    #[comptime] np: usize,
    #[comptime] nfp: usize,
    #[comptime] epc: usize,
    #[comptime] epu: usize,
    #[comptime] staged: bool,
) {
    let nf = comptime![4 * nfp];
    let mut u = SharedMemory::<T>::new(comptime![6 * np * epc * epu]);
    let mut fl = SharedMemory::<T>::new(comptime![6 * 4 * nfp * epc * epu]);
    let ops_len = comptime![if staged {
        3 * np * np + 4 * np * nfp
    } else {
        1
    }];
    let mut sops = SharedMemory::<T>::new(ops_len);
    if comptime![staged] {
        stage::<T>(ops, &mut sops, 0usize, ops_len);
        sync_cube();
    }
    let alpha = coef.alpha.get::<T>();
    let a = coef.a.get::<T>();
    let b = coef.b.get::<T>();
    let dt = coef.dt.get::<T>();
    let lane = UNIT_POS_X as usize;
    let slot = UNIT_POS_Y as usize;
    let len = elements * np;
    let base_u = slot * comptime![6 * np];
    let base_f = slot * comptime![6 * 4 * nfp];
    let mut qm = Array::<T>::new(6usize);
    let mut qp = Array::<T>::new(6usize);
    let mut fm = Array::<T>::new(6usize);
    let mut fp = Array::<T>::new(6usize);
    let groups = ceil_div(end - first, comptime![epc * epu]);
    let mut g = CUBE_POS;
    while g < groups {
        let e0 = first + g * comptime![epc * epu] + slot;
        #[unroll]
        for w in 0..epu {
            let e = e0 + comptime![w * epc];
            if e < end {
                load_fields::<T>(
                    q,
                    &mut u,
                    base_u + comptime![w * 6 * np * epc],
                    e,
                    len,
                    lane,
                    np,
                );
            }
        }
        sync_cube();
        #[unroll]
        for w in 0..epu {
            let e = e0 + comptime![w * epc];
            if e < end {
                let bu = base_u + comptime![w * 6 * np * epc];
                let bf = base_f + comptime![w * 6 * 4 * nfp * epc];
                let mut t = lane;
                while t < nf {
                    let f = t / nfp;
                    let fid = 4 * e + f;
                    let local = fmask[t] as usize;
                    let gp = vmap_p[e * nf + t] as usize;
                    #[unroll]
                    for c in 0..6usize {
                        qm[c] = u[bu + c * np + local];
                        qp[c] = q[c * len + gp];
                    }
                    node_flux::<T>(face, fid, kind[fid], alpha, &qm, &qp, &mut fm, &mut fp);
                    let s = face[4 * fid + 3];
                    #[unroll]
                    for c in 0..6usize {
                        fl[bf + c * nf + t] = s * fm[c];
                    }
                    t += np;
                }
            }
        }
        sync_cube();
        let mut acc = Array::<T>::new(comptime![6 * epu]);
        volume_nodes::<T>(
            ops, &sops, elem, &u, base_u, e0, end, lane, &mut acc, np, epc, epu, staged,
        );
        lift_nodes::<T>(
            ops, &sops, &fl, base_f, lane, &mut acc, np, nfp, epc, epu, staged,
        );
        #[unroll]
        for w in 0..epu {
            let e = e0 + comptime![w * epc];
            if e < end {
                #[unroll]
                for c in 0..6usize {
                    let i = c * len + e * np + lane;
                    let r = a * res[i] + dt * acc[comptime![6 * w + c]];
                    res[i] = r;
                    q_next[i] = u[base_u + comptime![w * 6 * np * epc + c * np] + lane] + b * r;
                }
            }
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}
