//! The reference tetrahedron of nodal DG (seed 004, after Hesthaven & Warburton, *Nodal
//! Discontinuous Galerkin Methods*, ch. 6 and 10), in f64 on the host: Warburton's
//! warp-and-blend nodes, the orthonormal (Proriol–Koornwinder–Dubiner–Owens) basis and its
//! gradient, the Vandermonde matrix, the differentiation matrices `Dr`, `Ds`, `Dt`, the
//! face node lists and the lift matrix.
//!
//! Reference element: vertices `(−1,−1,−1)`, `(1,−1,−1)`, `(−1,1,−1)`, `(−1,−1,1)`. Faces:
//! 0: `t = −1`, 1: `s = −1`, 2: `r + s + t = −1`, 3: `r = −1`.

use nalgebra::DMatrix;

use crate::error::{Error, Result};
use crate::quadrature::gauss_lobatto;

/// The largest order of the nodal DG elements.
pub const MAX_ORDER: usize = 9;

/// Checks `1 ≤ order ≤ MAX_ORDER`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `op` otherwise.
pub fn check_order(op: &'static str, order: usize) -> Result<()> {
    if (1..=MAX_ORDER).contains(&order) {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            name: "order",
            reason: format!("the order N must be in 1..={MAX_ORDER}, got {order}"),
        })
    }
}

/// Nodes per element, `(N+1)(N+2)(N+3)/6`.
pub fn num_nodes(order: usize) -> usize {
    (order + 1) * (order + 2) * (order + 3) / 6
}

/// Nodes per face, `(N+1)(N+2)/2`.
pub fn num_face_nodes(order: usize) -> usize {
    (order + 1) * (order + 2) / 2
}

fn factorial(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}

/// The orthonormal Jacobi polynomial `P_n^{(α,β)}(x)` (weight `(1−x)^α (1+x)^β` on
/// `[−1, 1]`), integer `α, β ≥ 0`.
pub fn jacobi_p(x: f64, alpha: usize, beta: usize, n: usize) -> f64 {
    let (a, b) = (alpha as f64, beta as f64);
    let gamma0 = 2f64.powf(a + b + 1.0) / (a + b + 1.0) * factorial(alpha) * factorial(beta)
        / factorial(alpha + beta);
    let p0 = 1.0 / gamma0.sqrt();
    if n == 0 {
        return p0;
    }
    let gamma1 = (a + 1.0) * (b + 1.0) / (a + b + 3.0) * gamma0;
    let p1 = ((a + b + 2.0) * x / 2.0 + (a - b) / 2.0) / gamma1.sqrt();
    let (mut prev, mut cur) = (p0, p1);
    let mut aold = 2.0 / (2.0 + a + b) * ((a + 1.0) * (b + 1.0) / (a + b + 3.0)).sqrt();
    for i in 1..n {
        let fi = i as f64;
        let h1 = 2.0 * fi + a + b;
        let anew = 2.0 / (h1 + 2.0)
            * ((fi + 1.0) * (fi + 1.0 + a + b) * (fi + 1.0 + a) * (fi + 1.0 + b)
                / (h1 + 1.0)
                / (h1 + 3.0))
                .sqrt();
        let bnew = -(a * a - b * b) / h1 / (h1 + 2.0);
        let next = (-aold * prev + (x - bnew) * cur) / anew;
        prev = cur;
        cur = next;
        aold = anew;
    }
    cur
}

/// `d/dx P_n^{(α,β)}(x)` of the orthonormal Jacobi polynomial.
pub fn grad_jacobi_p(x: f64, alpha: usize, beta: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        ((n * (n + alpha + beta + 1)) as f64).sqrt() * jacobi_p(x, alpha + 1, beta + 1, n - 1)
    }
}

/// The collapsed coordinates `(a, b, c)` of `(r, s, t)`.
fn rst_to_abc(r: f64, s: f64, t: f64) -> (f64, f64, f64) {
    let a = if (s + t).abs() > 1e-14 {
        2.0 * (1.0 + r) / (-s - t) - 1.0
    } else {
        -1.0
    };
    let b = if (t - 1.0).abs() > 1e-14 {
        2.0 * (1.0 + s) / (1.0 - t) - 1.0
    } else {
        -1.0
    };
    (a, b, t)
}

/// The `(i, j, k)` of every basis function, `i + j + k ≤ N`, in the book's order.
pub fn mode_indices(order: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::with_capacity(num_nodes(order));
    for i in 0..=order {
        for j in 0..=order - i {
            for k in 0..=order - i - j {
                out.push((i, j, k));
            }
        }
    }
    out
}

/// The orthonormal basis function `(i, j, k)` at `(r, s, t)`.
pub fn simplex3d_p(r: f64, s: f64, t: f64, (i, j, k): (usize, usize, usize)) -> f64 {
    let (a, b, c) = rst_to_abc(r, s, t);
    let h1 = jacobi_p(a, 0, 0, i);
    let h2 = jacobi_p(b, 2 * i + 1, 0, j);
    let h3 = jacobi_p(c, 2 * (i + j) + 2, 0, k);
    2.0 * 2f64.sqrt() * h1 * h2 * (1.0 - b).powi(i as i32) * h3 * (1.0 - c).powi((i + j) as i32)
}

/// The gradient `(∂/∂r, ∂/∂s, ∂/∂t)` of basis function `(i, j, k)` at `(r, s, t)`.
pub fn grad_simplex3d_p(r: f64, s: f64, t: f64, (i, j, k): (usize, usize, usize)) -> [f64; 3] {
    let (a, b, c) = rst_to_abc(r, s, t);
    let fa = jacobi_p(a, 0, 0, i);
    let dfa = grad_jacobi_p(a, 0, 0, i);
    let gb = jacobi_p(b, 2 * i + 1, 0, j);
    let dgb = grad_jacobi_p(b, 2 * i + 1, 0, j);
    let hc = jacobi_p(c, 2 * (i + j) + 2, 0, k);
    let dhc = grad_jacobi_p(c, 2 * (i + j) + 2, 0, k);
    let hb = 0.5 * (1.0 - b);
    let hcc = 0.5 * (1.0 - c);
    let pw = |x: f64, e: usize| x.powi(e as i32);
    let mut dr = dfa * gb * hc;
    if i > 0 {
        dr *= pw(hb, i - 1);
    }
    if i + j > 0 {
        dr *= pw(hcc, i + j - 1);
    }
    let mut ds = 0.5 * (1.0 + a) * dr;
    let mut tmp = dgb * pw(hb, i);
    if i > 0 {
        tmp += -0.5 * i as f64 * gb * pw(hb, i - 1);
    }
    if i + j > 0 {
        tmp *= pw(hcc, i + j - 1);
    }
    tmp = fa * tmp * hc;
    ds += tmp;
    let mut dt = 0.5 * (1.0 + a) * dr + 0.5 * (1.0 + b) * tmp;
    let mut tmp = dhc * pw(hcc, i + j);
    if i + j > 0 {
        tmp -= 0.5 * (i + j) as f64 * hc * pw(hcc, i + j - 1);
    }
    tmp = fa * gb * tmp * pw(hb, i);
    dt += tmp;
    let scale = 2f64.powf((2 * i + j) as f64 + 1.5);
    [dr * scale, ds * scale, dt * scale]
}

/// The orthonormal 2D basis function `(i, j)` on the reference triangle
/// `(−1,−1), (1,−1), (−1,1)` at `(r, s)`.
pub fn simplex2d_p(r: f64, s: f64, i: usize, j: usize) -> f64 {
    let a = if (s - 1.0).abs() > 1e-14 {
        2.0 * (1.0 + r) / (1.0 - s) - 1.0
    } else {
        -1.0
    };
    let h1 = jacobi_p(a, 0, 0, i);
    let h2 = jacobi_p(s, 2 * i + 1, 0, j);
    2f64.sqrt() * h1 * h2 * (1.0 - s).powi(i as i32)
}

/// The blend-and-warp displacement of the 1D GLL points along an edge (the book's
/// `Warpfactor`), at `rout ∈ [−1, 1]`.
fn warp_factor(order: usize, rout: f64) -> f64 {
    let gll: Vec<f64> = gauss_lobatto(order).iter().map(|t| 2.0 * t - 1.0).collect();
    let req: Vec<f64> = (0..=order)
        .map(|i| -1.0 + 2.0 * i as f64 / order as f64)
        .collect();
    // Lagrange interpolant through the equidistant points of (gll − req), at rout.
    let mut warp = 0.0;
    for i in 0..=order {
        let mut l = 1.0;
        for j in (0..=order).filter(|&j| j != i) {
            l *= (rout - req[j]) / (req[i] - req[j]);
        }
        warp += l * (gll[i] - req[i]);
    }
    let zerof = if rout.abs() < 1.0 - 1e-10 { 1.0 } else { 0.0 };
    let sf = 1.0 - (zerof * rout).powi(2);
    if sf > 0.0 {
        warp / sf + warp * (zerof - 1.0)
    } else {
        warp * (zerof - 1.0)
    }
}

/// The warp of a face in its own 2D frame (the book's `WarpShiftFace3D` / `evalshift`),
/// barycentric coordinates `l1, l2, l3` of the face.
fn face_shift(order: usize, alpha: f64, l1: f64, l2: f64, l3: f64) -> (f64, f64) {
    let blend1 = l2 * l3;
    let blend2 = l1 * l3;
    let blend3 = l1 * l2;
    let w1 = 4.0 * blend1 * warp_factor(order, l3 - l2) * (1.0 + (alpha * l1).powi(2));
    let w2 = 4.0 * blend2 * warp_factor(order, l1 - l3) * (1.0 + (alpha * l2).powi(2));
    let w3 = 4.0 * blend3 * warp_factor(order, l2 - l1) * (1.0 + (alpha * l3).powi(2));
    let (c2, s2) = (
        (2.0 * std::f64::consts::PI / 3.0).cos(),
        (2.0 * std::f64::consts::PI / 3.0).sin(),
    );
    let (c4, s4) = (
        (4.0 * std::f64::consts::PI / 3.0).cos(),
        (4.0 * std::f64::consts::PI / 3.0).sin(),
    );
    (w1 + c2 * w2 + c4 * w3, s2 * w2 + s4 * w3)
}

/// Warburton's warp-and-blend nodes of order `N` on the reference tetrahedron, `(r, s, t)`
/// per node, in the order of the equidistant lattice (t slowest).
pub fn nodes(order: usize) -> Vec<[f64; 3]> {
    // Optimised blending parameter (Warburton 2006), N = 1..15.
    const ALPOPT: [f64; 15] = [
        0.0, 0.0, 0.0, 0.1002, 1.1332, 1.5608, 1.3413, 1.2577, 1.1603, 1.10153, 0.6080, 0.4523,
        0.8856, 0.8717, 0.9655,
    ];
    let alpha = if order <= 15 { ALPOPT[order - 1] } else { 1.0 };
    let tol = 1e-10;
    let s3 = 3f64.sqrt();
    let s6 = 6f64.sqrt();
    let v = [
        [-1.0, -1.0 / s3, -1.0 / s6],
        [1.0, -1.0 / s3, -1.0 / s6],
        [0.0, 2.0 / s3, -1.0 / s6],
        [0.0, 0.0, 3.0 / s6],
    ];
    let sub = |x: [f64; 3], y: [f64; 3]| [x[0] - y[0], x[1] - y[1], x[2] - y[2]];
    let mid = |x: [f64; 3], y: [f64; 3]| {
        [
            0.5 * (x[0] + y[0]),
            0.5 * (x[1] + y[1]),
            0.5 * (x[2] + y[2]),
        ]
    };
    let unit = |x: [f64; 3]| {
        let n = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
        [x[0] / n, x[1] / n, x[2] / n]
    };
    let t1 = [
        sub(v[1], v[0]),
        sub(v[1], v[0]),
        sub(v[2], v[1]),
        sub(v[2], v[0]),
    ]
    .map(unit);
    let t2 = [
        sub(v[2], mid(v[0], v[1])),
        sub(v[3], mid(v[0], v[1])),
        sub(v[3], mid(v[1], v[2])),
        sub(v[3], mid(v[0], v[2])),
    ]
    .map(unit);
    let n = order as f64;
    let mut out = Vec::with_capacity(num_nodes(order));
    for a in 0..=order {
        for b in 0..=order - a {
            for c in 0..=order - a - b {
                let (r, s, t) = (
                    -1.0 + 2.0 * c as f64 / n,
                    -1.0 + 2.0 * b as f64 / n,
                    -1.0 + 2.0 * a as f64 / n,
                );
                let l1 = 0.5 * (1.0 + t);
                let l2 = 0.5 * (1.0 + s);
                let l3 = -0.5 * (1.0 + r + s + t);
                let l4 = 0.5 * (1.0 + r);
                let mut xyz = [0.0; 3];
                for d in 0..3 {
                    xyz[d] = l3 * v[0][d] + l4 * v[1][d] + l2 * v[2][d] + l1 * v[3][d];
                }
                let mut shift = [0.0; 3];
                for face in 0..4 {
                    let (la, lb, lc, ld) = match face {
                        0 => (l1, l2, l3, l4),
                        1 => (l2, l1, l3, l4),
                        2 => (l3, l1, l4, l2),
                        _ => (l4, l1, l3, l2),
                    };
                    let (w1, w2) = face_shift(order, alpha, lb, lc, ld);
                    let mut blend = lb * lc * ld;
                    let denom = (lb + 0.5 * la) * (lc + 0.5 * la) * (ld + 0.5 * la);
                    if denom > tol {
                        blend = (1.0 + (alpha * la).powi(2)) * blend / denom;
                    }
                    let on_face = la < tol && [lb, lc, ld].iter().filter(|&&x| x > tol).count() < 3;
                    for d in 0..3 {
                        let s = w1 * t1[face][d] + w2 * t2[face][d];
                        if on_face {
                            shift[d] = s;
                        } else {
                            shift[d] += blend * s;
                        }
                    }
                }
                for d in 0..3 {
                    xyz[d] += shift[d];
                }
                // Back to (r, s, t): xyz − ½(v2 + v3 + v4 − v1) = A (r, s, t).
                let rhs = DMatrix::from_fn(3, 1, |d, _| {
                    xyz[d] - 0.5 * (v[1][d] + v[2][d] + v[3][d] - v[0][d])
                });
                let amat = DMatrix::from_fn(3, 3, |d, col| 0.5 * (v[col + 1][d] - v[0][d]));
                let rst = amat
                    .lu()
                    .solve(&rhs)
                    .expect("the reference simplex is not degenerate");
                out.push([rst[0], rst[1], rst[2]]);
            }
        }
    }
    out
}

/// The reference-element operators of order `N` (all row-major `f64`).
#[derive(Clone, Debug)]
pub struct ReferenceTet {
    /// The order `N`.
    pub order: usize,
    /// The nodes `(r, s, t)`.
    pub nodes: Vec<[f64; 3]>,
    /// The Vandermonde matrix `V[i][j] = ψ_j(x_i)` (`Np x Np`).
    pub vandermonde: DMatrix<f64>,
    /// `Dr`, `Ds`, `Dt` (`Np x Np` each): `(D_r u)_i = ∂u_h/∂r (x_i)`.
    pub diff: [DMatrix<f64>; 3],
    /// The nodes of each face (`4 x Nfp` indices into the element's nodes).
    pub face_nodes: [Vec<usize>; 4],
    /// The lift matrix `M⁻¹ E` (`Np x 4 Nfp`), faces side by side.
    pub lift: DMatrix<f64>,
    /// The mass matrix `(V Vᵀ)⁻¹` of the reference element.
    pub mass: DMatrix<f64>,
}

impl ReferenceTet {
    /// The reference element of order `N`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an order outside `1..=MAX_ORDER`; [`Error::InvalidMatrix`]
    /// if a Vandermonde matrix is singular (never, for these nodes; reported rather than
    /// assumed).
    pub fn new(order: usize) -> Result<Self> {
        check_order("ReferenceTet::new", order)?;
        let x = nodes(order);
        let np = x.len();
        let modes = mode_indices(order);
        let v = DMatrix::from_fn(np, np, |i, j| {
            simplex3d_p(x[i][0], x[i][1], x[i][2], modes[j])
        });
        let grads: Vec<Vec<[f64; 3]>> = x
            .iter()
            .map(|p| {
                modes
                    .iter()
                    .map(|&m| grad_simplex3d_p(p[0], p[1], p[2], m))
                    .collect()
            })
            .collect();
        let singular = |what: &str| Error::InvalidMatrix {
            format: "dense",
            reason: format!("the {what} of order {order} is singular"),
        };
        let vinv = v
            .clone()
            .try_inverse()
            .ok_or_else(|| singular("Vandermonde matrix"))?;
        let diff = [0, 1, 2].map(|d| DMatrix::from_fn(np, np, |i, j| grads[i][j][d]) * &vinv);
        let tol = 1e-10;
        let on = |f: usize, p: &[f64; 3]| match f {
            0 => (1.0 + p[2]).abs() < tol,
            1 => (1.0 + p[1]).abs() < tol,
            2 => (1.0 + p[0] + p[1] + p[2]).abs() < tol,
            _ => (1.0 + p[0]).abs() < tol,
        };
        let face_nodes: [Vec<usize>; 4] =
            [0, 1, 2, 3].map(|f| (0..np).filter(|&i| on(f, &x[i])).collect());
        let nfp = num_face_nodes(order);
        if face_nodes.iter().any(|f| f.len() != nfp) {
            return Err(Error::InvalidMatrix {
                format: "dense",
                reason: format!("a face of the order-{order} element does not have {nfp} nodes"),
            });
        }
        // E: the face mass matrices in the columns of each face.
        let mut emat = DMatrix::<f64>::zeros(np, 4 * nfp);
        for (f, ids) in face_nodes.iter().enumerate() {
            let coords: Vec<(f64, f64)> = ids
                .iter()
                .map(|&i| match f {
                    0 => (x[i][0], x[i][1]),
                    1 => (x[i][0], x[i][2]),
                    2 => (x[i][1], x[i][2]),
                    _ => (x[i][1], x[i][2]),
                })
                .collect();
            let modes2: Vec<(usize, usize)> = (0..=order)
                .flat_map(|i| (0..=order - i).map(move |j| (i, j)))
                .collect();
            let vf = DMatrix::from_fn(nfp, nfp, |a, b| {
                simplex2d_p(coords[a].0, coords[a].1, modes2[b].0, modes2[b].1)
            });
            let mf = (&vf * vf.transpose())
                .try_inverse()
                .ok_or_else(|| singular("face Vandermonde matrix"))?;
            for (a, &i) in ids.iter().enumerate() {
                for b in 0..nfp {
                    emat[(i, f * nfp + b)] = mf[(a, b)];
                }
            }
        }
        let lift = &v * (v.transpose() * emat);
        let mass = (&v * v.transpose())
            .try_inverse()
            .ok_or_else(|| singular("V Vᵀ"))?;
        Ok(ReferenceTet {
            order,
            nodes: x,
            vandermonde: v,
            diff,
            face_nodes,
            lift,
            mass,
        })
    }

    /// Nodes per element.
    pub fn np(&self) -> usize {
        self.nodes.len()
    }

    /// The 2-norm condition number of the Vandermonde matrix.
    pub fn vandermonde_condition(&self) -> f64 {
        let sv = self.vandermonde.clone().singular_values();
        let max = sv.iter().cloned().fold(0.0, f64::max);
        let min = sv.iter().cloned().fold(f64::INFINITY, f64::min);
        max / min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differentiation_is_exact_for_degree_n() {
        let d = |e: i32, x: f64| {
            if e == 0 {
                0.0
            } else {
                e as f64 * x.powi(e - 1)
            }
        };
        for order in 1..=MAX_ORDER {
            let e = ReferenceTet::new(order).unwrap();
            let mut worst = 0.0f64;
            // Every monomial r^a s^b t^c of total degree ≤ N.
            for (a, b, c) in mode_indices(order) {
                let (a, b, c) = (a as i32, b as i32, c as i32);
                let u = nalgebra::DVector::from_iterator(
                    e.np(),
                    e.nodes
                        .iter()
                        .map(|p| p[0].powi(a) * p[1].powi(b) * p[2].powi(c)),
                );
                for dir in 0..3 {
                    let du = &e.diff[dir] * &u;
                    for (i, p) in e.nodes.iter().enumerate() {
                        let (r, s, t) = (p[0], p[1], p[2]);
                        let exact = match dir {
                            0 => d(a, r) * s.powi(b) * t.powi(c),
                            1 => r.powi(a) * d(b, s) * t.powi(c),
                            _ => r.powi(a) * s.powi(b) * d(c, t),
                        };
                        worst = worst.max((du[i] - exact).abs());
                    }
                }
            }
            assert!(
                worst < 1e-10 * (order * order) as f64 * 10.0,
                "N = {order}: {worst}"
            );
        }
    }

    #[test]
    fn nodes_lie_in_the_element_with_the_right_faces() {
        for order in 1..=MAX_ORDER {
            let e = ReferenceTet::new(order).unwrap();
            assert_eq!(e.np(), num_nodes(order));
            for p in &e.nodes {
                assert!(
                    p.iter().all(|&c| c >= -1.0 - 1e-12)
                        && p[0] + p[1] + p[2] <= -1.0 + 1e-12 + 2.0
                );
            }
            // Edge nodes are the 1D Gauss–Lobatto points (the warp's purpose).
            let gll: Vec<f64> = gauss_lobatto(order).iter().map(|t| 2.0 * t - 1.0).collect();
            let mut edge: Vec<f64> = e
                .nodes
                .iter()
                .filter(|p| (p[1] + 1.0).abs() < 1e-10 && (p[2] + 1.0).abs() < 1e-10)
                .map(|p| p[0])
                .collect();
            edge.sort_by(f64::total_cmp);
            assert_eq!(edge.len(), order + 1);
            for (a, b) in edge.iter().zip(&gll) {
                assert!((a - b).abs() < 1e-10, "N = {order}: {edge:?} vs {gll:?}");
            }
        }
    }

    #[test]
    fn vandermonde_is_well_conditioned_and_mass_integrates() {
        for order in 1..=MAX_ORDER {
            let e = ReferenceTet::new(order).unwrap();
            let cond = e.vandermonde_condition();
            // Warp-and-blend nodes keep the Lebesgue constant and the condition small
            // (equidistant nodes reach ~1e3 at N = 9).
            assert!(cond < 200.0, "N = {order}: cond {cond}");
            // 1ᵀ M 1 is the volume of the reference element, 4/3.
            let ones = nalgebra::DVector::from_element(e.np(), 1.0);
            let vol = (ones.transpose() * &e.mass * &ones)[(0, 0)];
            assert!((vol - 4.0 / 3.0).abs() < 1e-10, "N = {order}: {vol}");
        }
    }

    #[test]
    fn lift_integrates_face_data() {
        // M L g = E g: for g ≡ 1 on face 0 (area 2), 1ᵀ M L g = ∫_face 1 = 2.
        for order in 1..=MAX_ORDER {
            let e = ReferenceTet::new(order).unwrap();
            let nfp = num_face_nodes(order);
            let mut g = nalgebra::DVector::zeros(4 * nfp);
            for b in 0..nfp {
                g[b] = 1.0;
            }
            let ones = nalgebra::DVector::from_element(e.np(), 1.0);
            let area = (ones.transpose() * &e.mass * (&e.lift * &g))[(0, 0)];
            assert!((area - 2.0).abs() < 1e-10, "N = {order}: {area}");
            // Face 2 (the slanted one): its mass matrix is taken in its own reference
            // coordinates (s, t), area 2 there; the physical factor √3 is the surface
            // Jacobian's business.
            let mut g = nalgebra::DVector::zeros(4 * nfp);
            for b in 0..nfp {
                g[2 * nfp + b] = 1.0;
            }
            let area = (ones.transpose() * &e.mass * (&e.lift * &g))[(0, 0)];
            assert!(
                (area - 2.0).abs() < 1e-10,
                "N = {order}: face 2 in its reference coordinates: {area}"
            );
        }
    }

    #[test]
    fn order_out_of_range_is_an_error() {
        assert!(matches!(
            ReferenceTet::new(0),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            ReferenceTet::new(10),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
