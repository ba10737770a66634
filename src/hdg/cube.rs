//! The CubeCL kernels of [`HdgOps`]: per-element coefficients (one unit per element),
//! trace assembly (one unit per stored value, no atomics), and the edge-to-element lists
//! by a bitonic sort of `(edge, element code)` pairs.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::ops::{HdgOps, TRACE_SLOTS};
use crate::mesh::tri::NO_ELEMENT;
use crate::scalar::{Element, Scalar};
use crate::sparse::PAD;

/// `τ` and `λ` of the coefficient kernel.
#[derive(CubeType, CubeLaunch)]
struct HdgScalars {
    tau: InputScalar,
    lambda: InputScalar,
}

/// `σ^p`: `sign` for the odd modes (`p = 1`), 1 for the even ones.
#[cube]
fn parity<T: Float>(sign: T, p: usize) -> T {
    select(p == 1usize, sign, T::new(1.0))
}

/// The coefficients of `kind` (see [`crate::hdg::coefficients`]; the same formulas as
/// `ElementGeometry::coefficients`), one unit per element.
#[cube(launch_unchecked)]
fn coefficients_kernel<V: Float, T: Float>(
    vertices: &Array<V>,
    flips: &Array<u32>,
    out: &mut Array<V>,
    scalars: &HdgScalars,
    count: usize,
    #[comptime] kind: u32,
    #[comptime] k: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let tau = scalars.tau.get::<T>();
    let lambda = scalars.lambda.get::<T>();
    let half = T::new(0.5);
    let mut e = ABSOLUTE_POS;
    while e < count {
        let b = e * 6usize;
        let x0 = T::cast_from(vertices[b]);
        let y0 = T::cast_from(vertices[b + 1usize]);
        let x1 = T::cast_from(vertices[b + 2usize]);
        let y1 = T::cast_from(vertices[b + 3usize]);
        let x2 = T::cast_from(vertices[b + 4usize]);
        let y2 = T::cast_from(vertices[b + 5usize]);
        let xr = half * (x1 - x0);
        let xs = half * (x2 - x0);
        let yr = half * (y1 - y0);
        let ys = half * (y2 - y0);
        let jac = xr * ys - xs * yr;
        let rx = ys / jac;
        let ry = T::new(0.0) - xs / jac;
        let sx = T::new(0.0) - yr / jac;
        let sy = xr / jac;
        let grr = rx * rx + ry * ry;
        let grs = rx * sx + ry * sy;
        let gss = sx * sx + sy * sy;
        // N_l = (d_y, −d_x) of edge l = v_l -> v_{l+1}; its length; σ_l.
        let mut nx = Array::<T>::new(3usize);
        let mut ny = Array::<T>::new(3usize);
        let mut len = Array::<T>::new(3usize);
        let mut sg = Array::<T>::new(3usize);
        nx[0usize] = y1 - y0;
        ny[0usize] = x0 - x1;
        nx[1usize] = y2 - y1;
        ny[1usize] = x1 - x2;
        nx[2usize] = y0 - y2;
        ny[2usize] = x2 - x0;
        let f = flips[e];
        for l in 0..3usize {
            len[l] = T::sqrt(nx[l] * nx[l] + ny[l] * ny[l]);
        }
        sg[0usize] = select((f & 1u32) == 1u32, T::new(-1.0), T::new(1.0));
        sg[1usize] = select((f & 2u32) == 2u32, T::new(-1.0), T::new(1.0));
        sg[2usize] = select((f & 4u32) == 4u32, T::new(-1.0), T::new(1.0));
        let o = e * k;
        if comptime![kind == 0] {
            for l in 0..3usize {
                out[o + l] = V::cast_from(half * tau * len[l]);
            }
            out[o + 3] = V::cast_from(lambda * jac);
            out[o + 4] = V::cast_from(jac * grr);
            out[o + 5] = V::cast_from(jac * grs);
            out[o + 6] = V::cast_from(jac * gss);
        } else if comptime![kind == 1] {
            for l in 0..3usize {
                let c0 = half * tau * len[l];
                let c1 = half * (nx[l] * rx + ny[l] * ry);
                let c2 = half * (nx[l] * sx + ny[l] * sy);
                for p in 0..2usize {
                    let s = parity::<T>(sg[l], p);
                    out[o + 6 * l + p] = V::cast_from(c0 * s);
                    out[o + 6 * l + 2 + p] = V::cast_from(c1 * s);
                    out[o + 6 * l + 4 + p] = V::cast_from(c2 * s);
                }
            }
        } else if comptime![kind == 2] {
            for l in 0..3usize {
                out[o + l] = V::cast_from(half * tau * len[l]);
            }
            let quarter = T::new(0.25) / jac;
            for l in 0..3usize {
                for m in 0..3usize {
                    let nn = (nx[l] * nx[m] + ny[l] * ny[m]) * quarter;
                    for p in 0..2usize {
                        for q in 0..2usize {
                            let v = nn * parity::<T>(sg[l], p) * parity::<T>(sg[m], q);
                            out[o + 3 + 4 * (3 * l + m) + 2 * p + q] = V::cast_from(v);
                        }
                    }
                }
            }
        } else if comptime![kind == 3] {
            let inv = half / jac;
            for l in 0..3usize {
                for p in 0..2usize {
                    let s = parity::<T>(sg[l], p) * inv;
                    out[o + 2 * l + p] = V::cast_from(nx[l] * s);
                    out[o + 6 + 2 * l + p] = V::cast_from(ny[l] * s);
                }
            }
        } else if comptime![kind == 4] {
            out[o] = V::cast_from(T::new(0.0) - rx);
            out[o + 1] = V::cast_from(T::new(0.0) - sx);
            out[o + 2] = V::cast_from(T::new(0.0) - ry);
            out[o + 3] = V::cast_from(T::new(0.0) - sy);
        } else if comptime![kind == 5] {
            out[o] = V::cast_from(jac * grr);
            out[o + 1] = V::cast_from(jac * grs);
            out[o + 2] = V::cast_from(jac * gss);
            out[o + 3] = V::new(1.0);
        } else {
            out[o] = V::cast_from(jac * rx);
            out[o + 1] = V::cast_from(jac * sx);
            out[o + 2] = V::cast_from(jac * ry);
            out[o + 3] = V::cast_from(jac * sy);
        }
        e += stride;
    }
}

/// The value `Kᵉ[row][col]` of element `e`, or 0 for an absent element.
#[cube]
fn element_entry<V: Float>(
    ke: &Array<V>,
    e: usize,
    count: usize,
    w: usize,
    row: usize,
    col: usize,
) -> V {
    let mut v = V::new(0.0);
    if e < count {
        v = ke[e * w * w + row * w + col];
    }
    v
}

/// One unit per stored value `idx = u + (m r)(k m + j)` of the trace matrix (the block-ELL
/// value layout): see the module docs of [`crate::hdg::ops`].
#[cube(launch_unchecked)]
fn assemble_matrix_kernel<V: Float>(
    ke: &Array<V>,
    rows: &Array<u32>,
    elem_dofs: &Array<u32>,
    values: &mut Array<V>,
    neighbours: &mut Array<u32>,
    m: usize,
    r: usize,
    count: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let big = m * r;
    let w = 3 * m;
    let total = big * 5 * m;
    let mut idx = ABSOLUTE_POS;
    while idx < total {
        let u = idx % big;
        let kj = idx / big;
        let k = kj / m;
        let j = kj % m;
        let g = u / m;
        let i = u % m;
        let mut v = V::new(0.0);
        // PAD (u32::MAX) unless the slot has a block; a literal, so a run-time variable.
        let mut nb = 4294967295u32;
        if k == 0 {
            nb = g as u32;
            for side in 0..2usize {
                let c = rows[2 * g + side];
                if c != NO_ELEMENT {
                    let e = (c >> 2u32) as usize;
                    let jl = (c & 3u32) as usize;
                    v += element_entry::<V>(ke, e, count, w, jl * m + i, jl * m + j);
                }
            }
        } else {
            let c = rows[2 * g + (k - 1) / 2];
            if c != NO_ELEMENT {
                let e = (c >> 2u32) as usize;
                let jl = (c & 3u32) as usize;
                let jc = (jl + 1 + (k - 1) % 2) % 3;
                if e < count {
                    let d = elem_dofs[3 * e + jc];
                    if d != PAD {
                        nb = d;
                        v = element_entry::<V>(ke, e, count, w, jl * m + i, jc * m + j);
                    }
                }
            }
        }
        values[idx] = v;
        if i == 0 && j == 0 {
            neighbours[g * 5 + k] = nb;
        }
        idx += stride;
    }
}

/// `out[g m + i] = Σ_e w[e][j_e m + i]` over the elements of free edge `g`.
#[cube(launch_unchecked)]
fn assemble_vector_kernel<V: Float, S: Float>(
    w: &Array<V>,
    rows: &Array<u32>,
    out: &mut Array<S>,
    m: usize,
    r: usize,
    count: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut u = ABSOLUTE_POS;
    while u < m * r {
        let g = u / m;
        let i = u % m;
        let mut s = S::new(0.0);
        for side in 0..2usize {
            let c = rows[2 * g + side];
            if c != NO_ELEMENT {
                let e = (c >> 2u32) as usize;
                let jl = (c & 3u32) as usize;
                if e < count {
                    s += S::cast_from(w[e * 3 * m + jl * m + i]);
                }
            }
        }
        out[u] = s;
        u += stride;
    }
}

/// The sort input: `key[k] = elem_edges[k]`, `val[k] = (k / 3) << 2 | k % 3`, padded with
/// `(PAD, PAD)` up to the power of two `n`.
#[cube(launch_unchecked)]
fn sort_init_kernel(
    elem_edges: &Array<u32>,
    keys: &mut Array<u32>,
    vals: &mut Array<u32>,
    len: usize,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut k = ABSOLUTE_POS;
    while k < n {
        if k < len {
            keys[k] = elem_edges[k];
            vals[k] = (((k / 3) as u32) << 2u32) | ((k % 3) as u32);
        } else {
            keys[k] = PAD;
            vals[k] = PAD;
        }
        k += stride;
    }
}

/// One compare-exchange pass `(size, dist)` of the bitonic sort of `(key, val)` pairs.
#[cube(launch_unchecked)]
fn bitonic_kernel(
    keys: &mut Array<u32>,
    vals: &mut Array<u32>,
    n: usize,
    size: usize,
    dist: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let l = i ^ dist;
        if l > i {
            let ka = keys[i];
            let va = vals[i];
            let kb = keys[l];
            let vb = vals[l];
            let greater = ka > kb || (ka == kb && va > vb);
            let less = ka < kb || (ka == kb && va < vb);
            let ascending = (i & size) == 0;
            if (ascending && greater) || (!ascending && less) {
                keys[i] = kb;
                vals[i] = vb;
                keys[l] = ka;
                vals[l] = va;
            }
        }
        i += stride;
    }
}

/// `out[k] = NO_ELEMENT` for every `k < len`.
#[cube(launch_unchecked)]
fn clear_kernel(out: &mut Array<u32>, len: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut k = ABSOLUTE_POS;
    while k < len {
        out[k] = NO_ELEMENT;
        k += stride;
    }
}

/// The first (and second) element code of every run of equal keys, into `out[2 key ..]`.
#[cube(launch_unchecked)]
fn extract_kernel(
    keys: &Array<u32>,
    vals: &Array<u32>,
    out: &mut Array<u32>,
    len: usize,
    nedges: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut k = ABSOLUTE_POS;
    while k < len {
        // CubeCL evaluates both operands of `||` and `&&`: every read is under an `if`.
        let g = keys[k];
        let mut first = true;
        if k > 0 {
            first = keys[k - 1] != g;
        }
        if first && (g as usize) < nedges {
            out[2 * g as usize] = vals[k];
            // `next` stays in range, so reading keys[next] before the test is harmless.
            let mut next = k;
            if k + 1 < len {
                next = k + 1;
            }
            if next != k && keys[next] == g {
                out[2 * g as usize + 1] = vals[next];
            }
        }
        k += stride;
    }
}

// Every method passes the trait's `# Safety` contract on; the kernels bound-check every
// index they read from an index buffer.
impl<R: CubeRuntime> HdgOps for Cube<R> {
    unsafe fn hdg_coefficients<V: Element, T: Scalar>(
        &self,
        kind: CoefficientKind,
        tau: T,
        lambda: T,
        vertices: &CubeBuffer<V>,
        flips: &CubeBuffer<u32>,
        out: &mut CubeBuffer<V>,
    ) -> Result<()> {
        let count = flips.len.min(vertices.len / 6).min(out.len / kind.width());
        let (cubes, dim) = self.config().grid(count);
        self.launch::<(V, T)>(kind, || {
            // SAFETY: element e < count reads vertices[6e..6e+6], flips[e] and writes
            // out[e k..e k + k], all in range by the choice of count.
            unsafe {
                coefficients_kernel::launch_unchecked::<V, T, R>(
                    self.client(),
                    cubes,
                    dim,
                    vertices.arg(),
                    flips.arg(),
                    out.arg(),
                    HdgScalarsLaunch::new(scalar(tau), scalar(lambda)),
                    count,
                    kind.code(),
                    kind.width(),
                )
            }
        })
    }

    unsafe fn hdg_assemble_matrix<V: Element>(
        &self,
        nl: usize,
        ke: &CubeBuffer<V>,
        rows: &CubeBuffer<u32>,
        elem_dofs: &CubeBuffer<u32>,
        values: &mut CubeBuffer<V>,
        neighbours: &mut CubeBuffer<u32>,
    ) -> Result<()> {
        let r = rows.len / 2;
        let w = 3 * nl;
        let count = (ke.len / (w * w).max(1)).min(elem_dofs.len / 3);
        let (cubes, dim) = self.config().grid(r * nl * TRACE_SLOTS * nl);
        self.launch::<V>((), || {
            // SAFETY: the trait's lengths (values r m · 5 m, neighbours 5 r, rows 2 r); the
            // elements read are checked against count, so ke and elem_dofs stay in range.
            unsafe {
                assemble_matrix_kernel::launch_unchecked::<V, R>(
                    self.client(),
                    cubes,
                    dim,
                    ke.arg(),
                    rows.arg(),
                    elem_dofs.arg(),
                    values.arg(),
                    neighbours.arg(),
                    nl,
                    r,
                    count,
                )
            }
        })
    }

    unsafe fn hdg_assemble_vector<V: Element, S: Scalar>(
        &self,
        nl: usize,
        w: &CubeBuffer<V>,
        rows: &CubeBuffer<u32>,
        out: &mut CubeBuffer<S>,
    ) -> Result<()> {
        let r = (rows.len / 2).min(out.len / nl.max(1));
        let count = w.len / (3 * nl).max(1);
        let (cubes, dim) = self.config().grid(r * nl);
        self.launch::<(V, S)>((), || {
            // SAFETY: u < r nl writes out (r ≤ out.len / nl) and reads rows[2g..2g+2]
            // (r ≤ rows.len / 2); elements are checked against count.
            unsafe {
                assemble_vector_kernel::launch_unchecked::<V, S, R>(
                    self.client(),
                    cubes,
                    dim,
                    w.arg(),
                    rows.arg(),
                    out.arg(),
                    nl,
                    r,
                    count,
                )
            }
        })
    }

    unsafe fn hdg_edge_elements(
        &self,
        elem_edges: &CubeBuffer<u32>,
        out: &mut CubeBuffer<u32>,
    ) -> Result<()> {
        let len = elem_edges.len;
        let n = len.next_power_of_two().max(1);
        let keys = self.alloc_uninit::<u32>(n)?;
        let vals = self.alloc_uninit::<u32>(n)?;
        let (cubes, dim) = self.config().grid(n);
        self.launch::<u32>((), || {
            // SAFETY: k < n writes keys and vals (length n) and reads elem_edges below len.
            unsafe {
                sort_init_kernel::launch_unchecked::<R>(
                    self.client(),
                    cubes.clone(),
                    dim,
                    elem_edges.arg(),
                    keys.arg(),
                    vals.arg(),
                    len,
                    n,
                )
            }
        })?;
        let mut size = 2;
        while size <= n {
            let mut dist = size / 2;
            while dist > 0 {
                self.launch::<u32>((), || {
                    // SAFETY: i, i ^ dist < n (n a power of two, dist < n).
                    unsafe {
                        bitonic_kernel::launch_unchecked::<R>(
                            self.client(),
                            cubes.clone(),
                            dim,
                            keys.arg(),
                            vals.arg(),
                            n,
                            size,
                            dist,
                        )
                    }
                })?;
                dist /= 2;
            }
            size *= 2;
        }
        let (cubes, dim) = self.config().grid(out.len);
        self.launch::<u32>((), || {
            // SAFETY: k < out.len.
            unsafe {
                clear_kernel::launch_unchecked::<R>(self.client(), cubes, dim, out.arg(), out.len)
            }
        })?;
        let (cubes, dim) = self.config().grid(len);
        let nedges = out.len / 2;
        self.launch::<u32>((), || {
            // SAFETY: k < len ≤ n reads keys/vals; writes out[2g + 1] for g < nedges.
            unsafe {
                extract_kernel::launch_unchecked::<R>(
                    self.client(),
                    cubes,
                    dim,
                    keys.arg(),
                    vals.arg(),
                    out.arg(),
                    len,
                    nedges,
                )
            }
        })
    }
}
