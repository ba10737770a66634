//! The DG mesh of issue 12 on the host: physical node coordinates, the per-element
//! geometric factors (inverse Jacobian `∂r/∂x` — not `∂x/∂r` as printed in the seed's
//! (6b) — and the Jacobian), outward unit normals and surface-to-volume Jacobian ratios per
//! face, and the face node maps `vmapM`/`vmapP` (the node across every face node; itself on
//! the boundary).
//!
//! Element `e`, node `i`: global node `e Np + i`. Face `f` of element `e`: `4 e + f`, its
//! node `j`: `(4 e + f) Nfp + j`. Reference faces as in [`reference`](super::reference).

use crate::error::{Error, Result};
use crate::mesh::{cross, dot, norm, sub, tet_neighbors, tet_volume, NO_NEIGHBOR};

use super::reference::ReferenceTet;

/// The local vertex opposite reference face `f` (faces 0..4 contain the other three).
const OPPOSITE: [usize; 4] = [3, 2, 0, 1];

/// The points of reference face `f` (0..4) of `tet` (every vertex but the one opposite).
pub fn face_vertices(tet: [u32; 4], f: usize) -> [u32; 3] {
    let mut out = [0; 3];
    let mut k = 0;
    for (c, &p) in tet.iter().enumerate() {
        if c != OPPOSITE[f] {
            out[k] = p;
            k += 1;
        }
    }
    out
}

/// Geometry and connectivity of a tetrahedral mesh for nodal DG of one order.
#[derive(Clone, Debug)]
pub struct DgGeometry {
    /// Elements.
    pub elements: usize,
    /// Nodes per element.
    pub np: usize,
    /// Nodes per face.
    pub nfp: usize,
    /// Physical coordinates of every node (`elements · np` each).
    pub x: [Vec<f64>; 3],
    /// Per element: `[rx, ry, rz, sx, sy, sz, tx, ty, tz]`.
    pub inverse_jacobian: Vec<[f64; 9]>,
    /// Per element: the volume Jacobian `J` (physical volume over the reference volume 4/3).
    pub jacobian: Vec<f64>,
    /// Per face (`4 elements`): the outward unit normal.
    pub normals: Vec<[f64; 3]>,
    /// Per face: surface Jacobian over volume Jacobian (the lift's scaling).
    pub fscale: Vec<f64>,
    /// Per face node: its global node.
    pub vmap_m: Vec<u32>,
    /// Per face node: the matching node of the neighbour (itself on the boundary).
    pub vmap_p: Vec<u32>,
    /// Per face: the neighbouring element, or `u32::MAX` on the boundary.
    pub neighbour: Vec<u32>,
}

/// Rejects faces without a neighbour that lie on another such face with the opposite
/// normal without being the same triangle: the two sides of a non-conforming interface
/// (a hanging node or edge), which would otherwise be taken for walls inside the domain.
/// Coincident triangles (the two sides of a zero-thickness sheet) are allowed.
fn check_conforming(
    points: &[[f64; 3]],
    tets: &[[u32; 4]],
    neighbours: &[[u32; 4]],
    normals: &[[f64; 3]],
) -> Result<()> {
    // The open faces (e, f), their corners and bounding boxes.
    let open: Vec<(usize, usize)> = (0..tets.len())
        .flat_map(|e| (0..4).map(move |f| (e, f)))
        .filter(|&(e, f)| neighbours[e][OPPOSITE[f]] == NO_NEIGHBOR)
        .collect();
    let corners: Vec<[[f64; 3]; 3]> = open
        .iter()
        .map(|&(e, f)| face_vertices(tets[e], f).map(|p| points[p as usize]))
        .collect();
    let boxes: Vec<([f64; 3], [f64; 3])> = corners
        .iter()
        .map(|c| {
            (
                [0, 1, 2].map(|d| c.iter().map(|p| p[d]).fold(f64::MAX, f64::min)),
                [0, 1, 2].map(|d| c.iter().map(|p| p[d]).fold(f64::MIN, f64::max)),
            )
        })
        .collect();
    let extent =
        |(lo, hi): &([f64; 3], [f64; 3])| (0..3).map(|d| hi[d] - lo[d]).fold(0.0, f64::max);
    // Buckets of side `cell` (the largest face extent): each face goes into every bucket
    // its bounding box touches, so a point inside a face finds it in the point's bucket.
    let cell = boxes.iter().map(extent).fold(0.0f64, f64::max);
    if open.is_empty() || cell <= 0.0 {
        return Ok(());
    }
    let key = |p: [f64; 3]| p.map(|c| (c / cell).floor() as i64);
    let mut buckets: std::collections::HashMap<[i64; 3], Vec<usize>> = Default::default();
    for (i, (lo, hi)) in boxes.iter().enumerate() {
        let (lo, hi) = (key(*lo), key(*hi));
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    buckets.entry([x, y, z]).or_default().push(i);
                }
            }
        }
    }
    for (i, &(e, f)) in open.iter().enumerate() {
        let c = &corners[i];
        let centroid = [0, 1, 2].map(|d| (c[0][d] + c[1][d] + c[2][d]) / 3.0);
        let n = normals[4 * e + f];
        let tol = 1e-8 * extent(&boxes[i]);
        for &j in buckets.get(&key(centroid)).into_iter().flatten() {
            let (o, g) = open[j];
            let m = normals[4 * o + g];
            if j == i || dot(n, m) > -1.0 + 1e-8 {
                continue;
            }
            let d = &corners[j];
            if dot(sub(centroid, d[0]), m).abs() > tol {
                continue; // not in the other face's plane
            }
            // Barycentric coordinates of the centroid in the other face.
            let (u, v, w) = (sub(d[1], d[0]), sub(d[2], d[0]), sub(centroid, d[0]));
            let (uu, uv, vv, wu, wv) = (dot(u, u), dot(u, v), dot(v, v), dot(w, u), dot(w, v));
            let den = uu * vv - uv * uv;
            let s = (vv * wu - uv * wv) / den;
            let t = (uu * wv - uv * wu) / den;
            let inside = s > 1e-9 && t > 1e-9 && s + t < 1.0 - 1e-9;
            let same = || c.iter().all(|p| d.iter().any(|q| norm(sub(*p, *q)) <= tol));
            if inside && !same() {
                return Err(Error::invalid(
                    "DgGeometry::new",
                    "mesh",
                    format!(
                        "face {f} of tetrahedron {e} lies on face {g} of tetrahedron {o} without \
                     sharing its vertices: the mesh is not conforming there (a hanging node?)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

impl DgGeometry {
    /// The geometry of the tetrahedra `tets` over `points` for the element `reference`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the element for an inverted or degenerate
    /// tetrahedron, naming the face for non-conforming neighbours (face nodes that do not
    /// match, or a face that overlaps other faces without sharing their vertices, as at a
    /// hanging node), and for bad point indices or non-manifold faces.
    pub fn new(points: &[[f64; 3]], tets: &[[u32; 4]], reference: &ReferenceTet) -> Result<Self> {
        let neighbours = tet_neighbors(tets, points.len())?;
        let (np, nfp) = (reference.np(), reference.face_nodes[0].len());
        let k = tets.len();
        let mut x = [vec![0.0; k * np], vec![0.0; k * np], vec![0.0; k * np]];
        let mut inverse_jacobian = Vec::with_capacity(k);
        let mut jacobian = Vec::with_capacity(k);
        let mut normals = Vec::with_capacity(4 * k);
        let mut fscale = Vec::with_capacity(4 * k);
        for (e, tet) in tets.iter().enumerate() {
            let v: [[f64; 3]; 4] = tet.map(|p| points[p as usize]);
            let vol = tet_volume(&v);
            let scale = v
                .iter()
                .flat_map(|p| p.iter())
                .fold(0.0f64, |m, c| m.max(c.abs()))
                .max(1.0);
            if vol.is_nan() || vol <= 1e-14 * scale.powi(3) {
                return Err(Error::invalid("DgGeometry::new", "mesh", format!(
                    "tetrahedron {e} (points {tet:?}) is inverted or degenerate: signed volume {vol:e}"
                )));
            }
            for (i, p) in reference.nodes.iter().enumerate() {
                let w = [
                    -0.5 * (1.0 + p[0] + p[1] + p[2]),
                    0.5 * (1.0 + p[0]),
                    0.5 * (1.0 + p[1]),
                    0.5 * (1.0 + p[2]),
                ];
                for d in 0..3 {
                    x[d][e * np + i] = (0..4).map(|c| w[c] * v[c][d]).sum();
                }
            }
            // x_r, x_s, x_t (columns) of the affine map.
            let col = |c: usize| {
                [
                    0.5 * (v[c][0] - v[0][0]),
                    0.5 * (v[c][1] - v[0][1]),
                    0.5 * (v[c][2] - v[0][2]),
                ]
            };
            let (xr, xs, xt) = (col(1), col(2), col(3));
            let j = xr[0] * (xs[1] * xt[2] - xs[2] * xt[1])
                - xs[0] * (xr[1] * xt[2] - xr[2] * xt[1])
                + xt[0] * (xr[1] * xs[2] - xr[2] * xs[1]);
            // Rows of the inverse: ∇r = (x_s × x_t)/J, ∇s = (x_t × x_r)/J, ∇t = (x_r × x_s)/J.
            let gr = cross(xs, xt).map(|c| c / j);
            let gs = cross(xt, xr).map(|c| c / j);
            let gt = cross(xr, xs).map(|c| c / j);
            inverse_jacobian.push([
                gr[0], gr[1], gr[2], gs[0], gs[1], gs[2], gt[0], gt[1], gt[2],
            ]);
            jacobian.push(j);
            for f in 0..4 {
                let n = match f {
                    0 => gt.map(|c| -c),
                    1 => gs.map(|c| -c),
                    2 => [
                        gr[0] + gs[0] + gt[0],
                        gr[1] + gs[1] + gt[1],
                        gr[2] + gs[2] + gt[2],
                    ],
                    _ => gr.map(|c| -c),
                };
                let len = norm(n);
                normals.push(n.map(|c| c / len));
                // sJ = len · J, fscale = sJ / J.
                fscale.push(len);
            }
        }
        check_conforming(points, tets, &neighbours, &normals)?;
        crate::mesh::check_conforming(tets, points, &neighbours)?;
        let mut vmap_m = Vec::with_capacity(4 * k * nfp);
        let mut vmap_p = Vec::with_capacity(4 * k * nfp);
        let mut neighbour = Vec::with_capacity(4 * k);
        for e in 0..k {
            for f in 0..4 {
                let ids = &reference.face_nodes[f];
                vmap_m.extend(ids.iter().map(|&i| (e * np + i) as u32));
                let other = neighbours[e][OPPOSITE[f]];
                neighbour.push(other);
                if other == NO_NEIGHBOR {
                    vmap_p.extend(ids.iter().map(|&i| (e * np + i) as u32));
                    continue;
                }
                let o = other as usize;
                // The neighbour's face that holds our face's vertices.
                let ours: Vec<u32> = (0..4)
                    .filter(|&c| c != OPPOSITE[f])
                    .map(|c| tets[e][c])
                    .collect();
                let g = (0..4)
                    .find(|&g| {
                        (0..4)
                            .filter(|&c| c != OPPOSITE[g])
                            .all(|c| ours.contains(&tets[o][c]))
                    })
                    .ok_or_else(|| {
                        Error::invalid(
                            "DgGeometry::new",
                            "mesh",
                            format!(
                            "face {f} of tetrahedron {e} has no matching face on its neighbour {o}"
                        ),
                        )
                    })?;
                let h = (jacobian[e].cbrt()).max(1e-300);
                for &i in ids {
                    let gi = e * np + i;
                    let best = reference.face_nodes[g]
                        .iter()
                        .map(|&j| {
                            let gj = o * np + j;
                            let d2: f64 = (0..3).map(|d| (x[d][gi] - x[d][gj]).powi(2)).sum();
                            (d2, gj)
                        })
                        .min_by(|a, b| a.0.total_cmp(&b.0))
                        .expect("a face has nodes");
                    if best.0.sqrt() > 1e-8 * h {
                        return Err(Error::invalid(
                            "DgGeometry::new",
                            "mesh",
                            format!(
                            "face {f} of tetrahedron {e} and its neighbour {o} are not conforming: \
                             a face node is {:e} away from the nearest node across",
                            best.0.sqrt()
                        ),
                        ));
                    }
                    vmap_p.push(best.1 as u32);
                }
            }
        }
        Ok(DgGeometry {
            elements: k,
            np,
            nfp,
            x,
            inverse_jacobian,
            jacobian,
            normals,
            fscale,
            vmap_m,
            vmap_p,
            neighbour,
        })
    }

    /// The indices of the boundary faces (`4 e + f`).
    pub fn boundary_faces(&self) -> Vec<usize> {
        (0..self.neighbour.len())
            .filter(|&f| self.neighbour[f] == NO_NEIGHBOR)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::structured::StructuredTets;
    use nalgebra::DVector;

    fn geometry(n: usize, perturbation: f64, order: usize) -> (DgGeometry, ReferenceTet) {
        let mesh = StructuredTets::unit_cube(n, perturbation, 3)
            .build()
            .unwrap();
        let reference = ReferenceTet::new(order).unwrap();
        (
            DgGeometry::new(&mesh.points, &mesh.tets(), &reference).unwrap(),
            reference,
        )
    }

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn physical_gradient_of_a_polynomial_is_exact() {
        for order in [1, 3, 5] {
            let (g, re) = geometry(2, 0.1, order);
            let f = |p: [f64; 3]| {
                p[0].powi(order as i32) + 2.0 * p[1] * p[2].powi(order as i32 - 1) - p[2]
            };
            let df = |p: [f64; 3]| {
                let n = order as i32;
                let dz = if n >= 2 {
                    2.0 * p[1] * (n - 1) as f64 * p[2].powi(n - 2)
                } else {
                    0.0
                };
                [
                    n as f64 * p[0].powi(n - 1),
                    2.0 * p[2].powi(n - 1),
                    dz - 1.0,
                ]
            };
            for e in 0..g.elements {
                let pt = |i: usize| {
                    [
                        g.x[0][e * g.np + i],
                        g.x[1][e * g.np + i],
                        g.x[2][e * g.np + i],
                    ]
                };
                let u = DVector::from_iterator(g.np, (0..g.np).map(|i| f(pt(i))));
                let du: Vec<DVector<f64>> = (0..3).map(|d| &re.diff[d] * &u).collect();
                let m = g.inverse_jacobian[e];
                for i in 0..g.np {
                    for d in 0..3 {
                        let v = m[d] * du[0][i] + m[3 + d] * du[1][i] + m[6 + d] * du[2][i];
                        let exact = df(pt(i))[d];
                        assert!(
                            (v - exact).abs() < 1e-9,
                            "N = {order}, element {e}, d = {d}: {v} vs {exact}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn faces_match_and_normals_point_out() {
        let (g, _) = geometry(3, 0.12, 4);
        let nfp = g.nfp;
        let mut boundary = 0;
        for face in 0..4 * g.elements {
            let other = g.neighbour[face];
            for j in 0..nfp {
                let (m, p) = (
                    g.vmap_m[face * nfp + j] as usize,
                    g.vmap_p[face * nfp + j] as usize,
                );
                let d: f64 = (0..3)
                    .map(|c| (g.x[c][m] - g.x[c][p]).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(d < 1e-12, "face {face}: {d}");
                if other == NO_NEIGHBOR {
                    assert_eq!(m, p);
                } else {
                    assert_eq!(p / g.np, other as usize);
                }
            }
            if other == NO_NEIGHBOR {
                boundary += 1;
                // The unit cube: the outward normal is ± an axis, away from the centre.
                let m = g.vmap_m[face * nfp] as usize;
                let n = g.normals[face];
                let c = [g.x[0][m] - 0.5, g.x[1][m] - 0.5, g.x[2][m] - 0.5];
                assert!(n[0] * c[0] + n[1] * c[1] + n[2] * c[2] > 0.0, "face {face}");
            }
        }
        assert_eq!(boundary, 6 * 2 * 3 * 3);
        assert_eq!(g.boundary_faces().len(), boundary);
        // Σ over faces of n sJ = 0 per element (closed surface).
        for e in 0..g.elements {
            for d in 0..3 {
                let s: f64 = (0..4)
                    .map(|f| g.normals[4 * e + f][d] * g.fscale[4 * e + f] * g.jacobian[e])
                    .sum();
                assert!(s.abs() < 1e-12, "element {e}: {s}");
            }
        }
    }

    #[test]
    fn inverted_tetrahedra_are_named() {
        let points = [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
        ];
        let re = ReferenceTet::new(2).unwrap();
        assert!(DgGeometry::new(&points, &[[0, 1, 2, 3]], &re).is_ok());
        match DgGeometry::new(&points, &[[0, 2, 1, 3]], &re) {
            Err(Error::InvalidArgument { reason, .. }) => {
                assert!(reason.contains("tetrahedron 0"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }
}
