//! Host-side evaluation of the data (right-hand side at quadrature points, Dirichlet and
//! Neumann values on edges) and of the errors against an exact solution. User functions
//! are Rust closures, evaluated once per quadrature point in parallel.

use rayon::prelude::*;

use crate::hdg::reference::{dubiner, gauss_legendre, jacobi, num_modes, TriangleQuadrature};
use crate::hdg::topology::TraceTopology;
use crate::mesh::tri::TriMesh;

/// A scalar function of the point `(x, y)`.
pub type Field<'a> = &'a (dyn Fn(f64, f64) -> f64 + Sync);

/// A flux: a function of the point and the unit outward normal `(x, y, [n_x, n_y])`.
pub type Flux<'a> = &'a (dyn Fn(f64, f64, [f64; 2]) -> f64 + Sync);

/// The physical point of reference point `(r, s)` in triangle `v`.
pub(crate) fn map(v: &[[f64; 2]; 3], r: f64, s: f64) -> [f64; 2] {
    let (a, b) = (0.5 * (r + 1.0), 0.5 * (s + 1.0));
    [
        v[0][0] + a * (v[1][0] - v[0][0]) + b * (v[2][0] - v[0][0]),
        v[0][1] + a * (v[1][1] - v[0][1]) + b * (v[2][1] - v[0][1]),
    ]
}

/// The vertices of triangle `e`.
pub(crate) fn triangle(mesh: &TriMesh, e: usize) -> [[f64; 2]; 3] {
    mesh.triangles[e].map(|v| mesh.points[v as usize])
}

/// `|J| = area / 2` of a triangle.
pub(crate) fn jacobian(v: &[[f64; 2]; 3]) -> f64 {
    0.25 * ((v[1][0] - v[0][0]) * (v[2][1] - v[0][1]) - (v[2][0] - v[0][0]) * (v[1][1] - v[0][1]))
}

/// The quadrature of the load `∫ f φ_i` at degree `p`: exact for `f` of degree `p + 4`.
pub(crate) fn load_quadrature(p: usize) -> TriangleQuadrature {
    TriangleQuadrature::exact_for(2 * p + 4)
}

/// `w_k φ_i(r_k)` (`nq x nu`, row-major): the shared operand of the load GEMM.
pub(crate) fn weighted_basis(p: usize, q: &TriangleQuadrature) -> Vec<f64> {
    let nu = num_modes(p);
    let mut out = Vec::with_capacity(q.len() * nu);
    for k in 0..q.len() {
        out.extend(dubiner(p, q.r[k], q.s[k]).0.iter().map(|v| q.w[k] * v));
    }
    out
}

/// `|J| f(x_k)` at the load quadrature points of every element (`count x nq`).
pub(crate) fn rhs_at_points(mesh: &TriMesh, q: &TriangleQuadrature, f: Field<'_>) -> Vec<f64> {
    let nq = q.len();
    let mut out = vec![0.0; mesh.num_triangles() * nq];
    out.par_chunks_mut(nq).enumerate().for_each(|(e, row)| {
        let v = triangle(mesh, e);
        let j = jacobian(&v);
        for (k, o) in row.iter_mut().enumerate() {
            let [x, y] = map(&v, q.r[k], q.s[k]);
            *o = j * f(x, y);
        }
    });
    out
}

/// The point of global edge `[a, b]` at `t ∈ [−1, 1]` (from `a` to `b`).
fn edge_point(mesh: &TriMesh, g: usize, t: f64) -> [f64; 2] {
    let [a, b] = mesh.edges[g].map(|v| mesh.points[v as usize]);
    let h = 0.5 * (t + 1.0);
    [a[0] + h * (b[0] - a[0]), a[1] + h * (b[1] - a[1])]
}

/// The L2 projection of `g_D` onto the trace modes of every Dirichlet edge
/// (`ndir x nl`): `λ_D[m] = ∫₋₁¹ g_D(x(t)) ψ_m(t) dt` (the trace basis is orthonormal in
/// `t`).
pub(crate) fn dirichlet_values(mesh: &TriMesh, topo: &TraceTopology, g: Field<'_>) -> Vec<f64> {
    let nl = topo.nl;
    let (t, w) = gauss_legendre(nl + 4);
    let mut out = vec![0.0; topo.ndirichlet() * nl];
    out.par_chunks_mut(nl)
        .zip(topo.dirichlet_edges.par_iter())
        .for_each(|(row, &edge)| {
            for (&tk, &wk) in t.iter().zip(&w) {
                let [x, y] = edge_point(mesh, edge as usize, tk);
                let gv = g(x, y);
                for (m, psi) in jacobi(tk, 0, 0, nl - 1).iter().enumerate() {
                    row[m] += wk * gv * psi;
                }
            }
        });
    out
}

/// `b_N[f nl + m] = ∫_e g_N ψ_m ds` on the Neumann edges (0 elsewhere; `nfree x nl`), with
/// the unit outward normal of the edge's triangle.
pub(crate) fn neumann_values(mesh: &TriMesh, topo: &TraceTopology, g: Flux<'_>) -> Vec<f64> {
    let nl = topo.nl;
    let (t, w) = gauss_legendre(nl + 4);
    let mut out = vec![0.0; topo.nfree() * nl];
    for (e, tri) in mesh.triangles.iter().enumerate() {
        for j in 0..3 {
            let f = topo.elem_dofs[3 * e + j];
            if f == crate::sparse::PAD || !topo.neumann[f as usize] {
                continue;
            }
            let (p, q) = (
                mesh.points[tri[j] as usize],
                mesh.points[tri[(j + 1) % 3] as usize],
            );
            let (dx, dy) = (q[0] - p[0], q[1] - p[1]);
            let len = (dx * dx + dy * dy).sqrt();
            let normal = [dy / len, -dx / len];
            let edge = mesh.elem_edges[e][j] as usize;
            for (&tk, &wk) in t.iter().zip(&w) {
                let [x, y] = edge_point(mesh, edge, tk);
                let gv = 0.5 * len * wk * g(x, y, normal);
                for (m, psi) in jacobi(tk, 0, 0, nl - 1).iter().enumerate() {
                    out[f as usize * nl + m] += gv * psi;
                }
            }
        }
    }
    out
}

/// `‖v − v_h‖_{L2(Ω)}` for a modal field of degree `p` with `components` components
/// (`coeffs` of `count x components nu`, component-major per element) against `exact`,
/// which returns the `components` values at a point.
pub(crate) fn l2_error(
    mesh: &TriMesh,
    p: usize,
    components: usize,
    coeffs: &[f64],
    exact: &(dyn Fn(f64, f64, &mut [f64]) + Sync),
) -> f64 {
    let nu = num_modes(p);
    let q = TriangleQuadrature::exact_for(2 * p + 8);
    let table: Vec<Vec<f64>> = (0..q.len()).map(|k| dubiner(p, q.r[k], q.s[k]).0).collect();
    let sum: f64 = (0..mesh.num_triangles())
        .into_par_iter()
        .map(|e| {
            let v = triangle(mesh, e);
            let j = jacobian(&v);
            let c = &coeffs[e * components * nu..(e + 1) * components * nu];
            let mut want = vec![0.0; components];
            let mut s = 0.0;
            for (k, phi) in table.iter().enumerate() {
                let [x, y] = map(&v, q.r[k], q.s[k]);
                exact(x, y, &mut want);
                for (comp, w) in want.iter().enumerate() {
                    let got: f64 = phi
                        .iter()
                        .zip(&c[comp * nu..(comp + 1) * nu])
                        .map(|(a, b)| a * b)
                        .sum();
                    s += q.w[k] * j * (got - w).powi(2);
                }
            }
            s
        })
        .sum();
    sum.sqrt()
}

/// The sub-triangulation of the reference triangle with `refine` intervals per side:
/// `(refine + 1)(refine + 2) / 2` points `(r, s)` and `refine²` counterclockwise triangles.
pub(crate) fn sub_triangulation(refine: usize) -> (Vec<[f64; 2]>, Vec<[u32; 3]>) {
    let r = refine;
    let mut index = vec![vec![0u32; r + 1]; r + 1];
    let mut points = Vec::with_capacity((r + 1) * (r + 2) / 2);
    for (j, row) in index.iter_mut().enumerate() {
        for (i, slot) in row.iter_mut().enumerate().take(r + 1 - j) {
            *slot = points.len() as u32;
            points.push([
                -1.0 + 2.0 * i as f64 / r as f64,
                -1.0 + 2.0 * j as f64 / r as f64,
            ]);
        }
    }
    let mut triangles = Vec::with_capacity(r * r);
    for j in 0..r {
        for i in 0..r - j {
            triangles.push([index[j][i], index[j][i + 1], index[j + 1][i]]);
            if i + j + 1 < r {
                triangles.push([index[j][i + 1], index[j + 1][i + 1], index[j + 1][i]]);
            }
        }
    }
    (points, triangles)
}

/// `components` fields of degree `p` (modal coefficients, `components · N(p)` per element,
/// component-major) at the points of every element's sub-triangulation: `count · npoints`
/// entries of `components` values.
pub(crate) fn sample(
    mesh: &TriMesh,
    p: usize,
    components: usize,
    coefficients: &[f64],
    points: &[[f64; 2]],
) -> Vec<f64> {
    let nu = num_modes(p);
    let basis: Vec<Vec<f64>> = points.iter().map(|&[r, s]| dubiner(p, r, s).0).collect();
    let stride = points.len() * components;
    let mut out = vec![0.0; mesh.num_triangles() * stride];
    out.par_chunks_mut(stride).enumerate().for_each(|(e, row)| {
        let c = &coefficients[e * components * nu..(e + 1) * components * nu];
        for (k, phi) in basis.iter().enumerate() {
            for d in 0..components {
                row[k * components + d] = phi
                    .iter()
                    .zip(&c[d * nu..(d + 1) * nu])
                    .map(|(a, b)| a * b)
                    .sum();
            }
        }
    });
    out
}
