//! Warburton's warp-and-blend nodes on the reference tetrahedron.

use nalgebra::DMatrix;

use crate::dg::reference::num_nodes;
use crate::quadrature::gauss_lobatto;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dg::reference::{ReferenceTet, MAX_ORDER};

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
}
