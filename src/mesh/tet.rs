//! Tetrahedral geometry and connectivity: signed volume, faces, the neighbour across each
//! face, unique edges and point-to-tetrahedron incidence. Faces and edges are bucketed by
//! their smallest point index (a counting sort), so every function here is O(number of
//! tets) with no global sort.

use rayon::prelude::*;

use crate::error::{Error, Result};

/// The signed volume of the tetrahedron `(p0, p1, p2, p3)`:
/// `det[p1 - p0, p2 - p0, p3 - p0] / 6`, positive when `p3` lies on the side of triangle
/// `(p0, p1, p2)` that its right-hand normal points to (Gmsh's orientation).
pub fn tet_volume(p: &[[f64; 3]; 4]) -> f64 {
    let a = sub(p[1], p[0]);
    let b = sub(p[2], p[0]);
    let c = sub(p[3], p[0]);
    dot(a, cross(b, c)) / 6.0
}

/// The face of `tet` opposite its vertex `k` (0..4), ordered so that its right-hand normal
/// points out of a positively oriented tetrahedron.
///
/// # Panics
/// If `k >= 4`.
pub fn tet_face(tet: [u32; 4], k: usize) -> [u32; 3] {
    const FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]];
    let f = FACES[k];
    [tet[f[0]], tet[f[1]], tet[f[2]]]
}

/// Marks a face with no neighbour (a boundary face) in [`tet_neighbors`].
pub const NO_NEIGHBOR: u32 = u32::MAX;

/// For each tetrahedron, the tetrahedron across each face: `neighbors[t][k]` shares face
/// [`tet_face`]`(tets[t], k)` with `t`, or is [`NO_NEIGHBOR`] on the boundary.
///
/// Cost O(number of tets): faces are bucketed by their smallest point index.
///
/// # Errors
/// [`Error::InvalidArgument`] if a point index is `>= npoints`, a tetrahedron repeats a
/// point, two tetrahedra have the same points (a duplicate), a face is shared by more than
/// two tetrahedra (a non-manifold mesh), or the unmatched faces do not close (a
/// non-conforming mesh: a hanging node); the message names the tetrahedra or the edge.
pub fn tet_neighbors(tets: &[[u32; 4]], npoints: usize) -> Result<Vec<[u32; 4]>> {
    const OP: &str = "mesh::tet_neighbors";
    check_tets(OP, tets, npoints)?;
    check_u32(OP, tets.len().checked_mul(4))?;
    let sorted_face = |f: u32| {
        let mut v = tet_face(tets[(f / 4) as usize], (f % 4) as usize);
        v.sort_unstable();
        v
    };
    // Bucket the 4 n faces (id = 4 t + k) by their smallest point.
    let (offsets, faces) = bucket(npoints, tets.len() * 4, || {
        tets.iter().enumerate().flat_map(|(t, tet)| {
            // The face opposite vertex k has the smallest point of the other three.
            let [a, b, c, d] = *tet;
            [
                b.min(c).min(d),
                a.min(c).min(d),
                a.min(b).min(d),
                a.min(b).min(c),
            ]
            .into_iter()
            .enumerate()
            .map(move |(k, m)| (m, (4 * t + k) as u32))
        })
    });
    // Match faces inside each bucket: equal (middle, largest) points are the same face.
    let pairs: Vec<Result<Vec<(u32, u32)>>> = offsets
        .par_windows(2)
        .chunks(4096)
        .map(|windows| {
            let mut pairs = Vec::new();
            let mut keyed: Vec<(u64, u32)> = Vec::new();
            for w in windows {
                keyed.clear();
                keyed.extend(faces[w[0] as usize..w[1] as usize].iter().map(|&f| {
                    let v = sorted_face(f);
                    (((v[1] as u64) << 32) | v[2] as u64, f)
                }));
                keyed.sort_unstable();
                let mut i = 0;
                while i < keyed.len() {
                    let mut j = i + 1;
                    while j < keyed.len() && keyed[j].0 == keyed[i].0 {
                        j += 1;
                    }
                    match j - i {
                        1 => {}
                        2 => {
                            let (f, g) = (keyed[i].1, keyed[i + 1].1);
                            let opposite = |f: u32| tets[(f / 4) as usize][(f % 4) as usize];
                            if opposite(f) == opposite(g) {
                                return Err(Error::invalid(
                                    OP,
                                    "tets",
                                    format!(
                                        "tetrahedra {} and {} have the same points {:?}: a \
                                         duplicated element",
                                        f / 4,
                                        g / 4,
                                        tets[(f / 4) as usize]
                                    ),
                                ));
                            }
                            pairs.push((f, g))
                        }
                        _ => {
                            let owners: Vec<u32> = keyed[i..j].iter().map(|&(_, f)| f / 4).collect();
                            return Err(Error::invalid(
                                OP,
                                "tets",
                                format!(
                                    "face {:?} is shared by {} tetrahedra {owners:?}: the mesh is not manifold",
                                    sorted_face(keyed[i].1),
                                    j - i
                                ),
                            ));
                        }
                    }
                    i = j;
                }
            }
            Ok(pairs)
        })
        .collect();
    let mut neighbors = vec![[NO_NEIGHBOR; 4]; tets.len()];
    for chunk in pairs {
        for (f, g) in chunk? {
            neighbors[(f / 4) as usize][(f % 4) as usize] = g / 4;
            neighbors[(g / 4) as usize][(g % 4) as usize] = f / 4;
        }
    }
    check_closed_boundary(OP, tets, &neighbors)?;
    Ok(neighbors)
}

/// Checks that the unmatched faces form a closed surface: every edge of them lies on an
/// even number of them. It holds for every conforming mesh (the boundary of a boundary is
/// empty); a hanging node (a face covered by several smaller ones) breaks it, and its faces
/// would otherwise become walls without a word.
fn check_closed_boundary(
    op: &'static str,
    tets: &[[u32; 4]],
    neighbors: &[[u32; 4]],
) -> Result<()> {
    let mut count: std::collections::HashMap<(u32, u32), (u32, u32)> = Default::default();
    for (t, (tet, across)) in tets.iter().zip(neighbors).enumerate() {
        for k in (0..4).filter(|&k| across[k] == NO_NEIGHBOR) {
            let [a, b, c] = tet_face(*tet, k);
            for (p, q) in [(a, b), (b, c), (c, a)] {
                count.entry((p.min(q), p.max(q))).or_insert((0, t as u32)).0 += 1;
            }
        }
    }
    match count.into_iter().filter(|(_, (n, _))| n % 2 == 1).min() {
        None => Ok(()),
        Some(((p, q), (n, t))) => Err(Error::invalid(
            op,
            "tets",
            format!(
                "the mesh is not conforming: edge ({p}, {q}) lies on {n} boundary face(s) (an \
                 even number in a conforming mesh), next to tetrahedron {t}; a hanging node or \
                 a face that no neighbour matches"
            ),
        )),
    }
}

/// The unique edges `[a, b]` (`a < b`) of the tetrahedra, sorted.
///
/// Cost O(number of tets): edges are bucketed by their smaller point.
///
/// # Errors
/// [`Error::InvalidArgument`] if a point index is `>= npoints` or a tetrahedron repeats a
/// point.
pub fn tet_edges(tets: &[[u32; 4]], npoints: usize) -> Result<Vec<[u32; 2]>> {
    const OP: &str = "mesh::tet_edges";
    check_tets(OP, tets, npoints)?;
    check_u32(OP, tets.len().checked_mul(6))?;
    let (offsets, ends) = bucket(npoints, tets.len() * 6, || {
        tets.iter()
            .flat_map(|tet| TET_EDGES.map(|(a, b)| (tet[a].min(tet[b]), tet[a].max(tet[b]))))
    });
    let edges: Vec<Vec<[u32; 2]>> = offsets
        .par_windows(2)
        .enumerate()
        .chunks(4096)
        .map(|windows| {
            let mut edges = Vec::new();
            let mut row: Vec<u32> = Vec::new();
            for (a, w) in windows {
                row.clear();
                row.extend_from_slice(&ends[w[0] as usize..w[1] as usize]);
                row.sort_unstable();
                row.dedup();
                edges.extend(row.iter().map(|&b| [a as u32, b]));
            }
            edges
        })
        .collect();
    Ok(edges.concat())
}

/// The six edges of a tetrahedron as pairs of local vertices.
pub(crate) const TET_EDGES: [(usize, usize); 6] = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];

/// Which tetrahedra touch each point, as a CSR-like incidence: the tets of point `p` are
/// `cells[offsets[p]..offsets[p + 1]]`, in increasing order.
pub(crate) struct PointCells {
    pub offsets: Vec<u32>,
    pub cells: Vec<u32>,
}

impl PointCells {
    /// The incidence of `tets` (indices already checked `< npoints`).
    pub fn new(tets: &[[u32; 4]], npoints: usize) -> Self {
        let (offsets, cells) = bucket(npoints, tets.len() * 4, || {
            tets.iter()
                .enumerate()
                .flat_map(|(t, tet)| tet.map(|v| (v, t as u32)))
        });
        PointCells { offsets, cells }
    }

    /// The tets touching point `p`.
    pub fn of(&self, p: usize) -> &[u32] {
        &self.cells[self.offsets[p] as usize..self.offsets[p + 1] as usize]
    }
}

/// A counting sort: `items()` yields `len` pairs `(bucket, value)` (it is called twice: to
/// count, then to fill); returns the bucket offsets and the values grouped by bucket, each
/// bucket in the order `items` yields them.
fn bucket<I: Iterator<Item = (u32, u32)>>(
    nbuckets: usize,
    len: usize,
    items: impl Fn() -> I,
) -> (Vec<u32>, Vec<u32>) {
    let mut offsets = vec![0u32; nbuckets + 1];
    for (b, _) in items() {
        offsets[b as usize + 1] += 1;
    }
    for i in 0..nbuckets {
        offsets[i + 1] += offsets[i];
    }
    let mut next = offsets[..nbuckets].to_vec();
    let mut values = vec![0u32; len];
    for (b, v) in items() {
        values[next[b as usize] as usize] = v;
        next[b as usize] += 1;
    }
    (offsets, values)
}

/// Checks point indices are in range and distinct within each tetrahedron.
pub(crate) fn check_tets(op: &'static str, tets: &[[u32; 4]], npoints: usize) -> Result<()> {
    check_u32(op, Some(npoints))?;
    let bad = tets.par_iter().position_first(|t| {
        t.iter().any(|&v| v as usize >= npoints)
            || t[0] == t[1]
            || t[0] == t[2]
            || t[0] == t[3]
            || t[1] == t[2]
            || t[1] == t[3]
            || t[2] == t[3]
    });
    match bad {
        None => Ok(()),
        Some(t) => Err(Error::invalid(
            op,
            "tets",
            format!(
                "tetrahedron {t} has points {:?}: indices must be distinct and below the {npoints} points",
                tets[t]
            ),
        )),
    }
}

fn check_u32(op: &'static str, count: Option<usize>) -> Result<()> {
    match count {
        Some(c) if c < u32::MAX as usize => Ok(()),
        _ => Err(Error::invalid(
            op,
            "tets",
            "the mesh is too large for 32-bit indices",
        )),
    }
}

pub(crate) fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(crate) fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub(crate) fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub(crate) fn norm(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}

/// Checks that no two boundary faces overlap: where a face of one tetrahedron is covered
/// by faces of others that do not share its points (a hanging node on an edge or a face, a
/// non-conforming mesh), both sides are unmatched and lie in one plane with opposite
/// normals. Such faces would otherwise become boundary walls inside the domain.
///
/// Pairs are looked for among the boundary faces around each boundary point (every such
/// overlap has a point in common with the face it covers); `neighbors` as
/// [`tet_neighbors`] returns them. The cost is quadratic in the boundary faces at a point,
/// so a point may have at most [`MAX_BOUNDARY_FACES_AT_POINT`] of them (a real mesh has at
/// most a few hundred).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the two tetrahedra and their faces; naming the
/// tetrahedron for a point index out of range or repeated; naming the point with more than
/// [`MAX_BOUNDARY_FACES_AT_POINT`] boundary faces;
/// [`Error::DimensionMismatch`] when `neighbors` does not have one entry per tetrahedron.
pub fn check_conforming(
    tets: &[[u32; 4]],
    points: &[[f64; 3]],
    neighbors: &[[u32; 4]],
) -> Result<()> {
    const OP: &str = "mesh::check_conforming";
    check_tets(OP, tets, points.len())?;
    crate::error::check_len(OP, "neighbors", tets.len(), neighbors.len())?;
    let mut faces_at: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for (t, across) in neighbors.iter().enumerate() {
        for k in (0..4).filter(|&k| across[k] == NO_NEIGHBOR) {
            for v in tet_face(tets[t], k) {
                faces_at.entry(v).or_default().push((4 * t + k) as u32);
            }
        }
    }
    let corners =
        |f: u32| tet_face(tets[(f / 4) as usize], (f % 4) as usize).map(|v| points[v as usize]);
    let mut at: Vec<_> = faces_at.into_iter().collect();
    at.sort_unstable();
    if let Some((p, faces)) = at
        .iter()
        .find(|(_, faces)| faces.len() > MAX_BOUNDARY_FACES_AT_POINT)
    {
        return Err(Error::invalid(
            OP,
            "tets",
            format!(
                "point {p} lies on {} boundary faces (of tetrahedra {} and more), more than \
                 the {MAX_BOUNDARY_FACES_AT_POINT} this check compares pairwise: not a real \
                 mesh (tetrahedra that only touch at the point?)",
                faces.len(),
                faces[0] / 4
            ),
        ));
    }
    for (_, faces) in at {
        for (i, &f) in faces.iter().enumerate() {
            for &g in &faces[i + 1..] {
                if f / 4 != g / 4 && faces_overlap(corners(f), corners(g)) {
                    let (a, b) = ((f / 4) as usize, (g / 4) as usize);
                    return Err(Error::invalid(
                        OP,
                        "tets",
                        format!(
                            "the mesh is not conforming: boundary face {:?} of tetrahedron {a} \
                             overlaps boundary face {:?} of tetrahedron {b} (a hanging node: \
                             faces that should be shared are not)",
                            tet_face(tets[a], (f % 4) as usize),
                            tet_face(tets[b], (g % 4) as usize)
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The most boundary faces one point may lie on in [`check_conforming`], which compares
/// the faces at a point pairwise: a real mesh has at most a few hundred, while a file of
/// 10⁶ disjoint tetrahedra that all touch one point would otherwise take about 10¹²
/// comparisons.
pub const MAX_BOUNDARY_FACES_AT_POINT: usize = 4096;

/// Whether triangles `p` and `q` lie in one plane, face opposite ways and overlap with a
/// positive area.
fn faces_overlap(p: [[f64; 3]; 3], q: [[f64; 3]; 3]) -> bool {
    let normal = |t: [[f64; 3]; 3]| cross(sub(t[1], t[0]), sub(t[2], t[0]));
    let (np, nq) = (normal(p), normal(q));
    let (lp, lq) = (norm(np), norm(nq));
    if lp == 0.0 || lq == 0.0 || dot(np, nq) > -(1.0 - 1e-9) * lp * lq {
        return false;
    }
    let n = np.map(|c| c / lp);
    let size = [
        sub(p[1], p[0]),
        sub(p[2], p[0]),
        sub(q[1], q[0]),
        sub(q[2], q[0]),
    ]
    .iter()
    .map(|d| norm(*d))
    .fold(0.0f64, f64::max);
    if q.iter().any(|&v| dot(sub(v, p[0]), n).abs() > 1e-9 * size) {
        return false;
    }
    // In-plane coordinates, then the separating axis test on the 6 edge normals: a gap (or
    // mere touching) along any of them means no overlap of positive area.
    let e1 = sub(p[1], p[0]).map(|c| c / norm(sub(p[1], p[0])));
    let e2 = cross(n, e1);
    let flat = |t: [[f64; 3]; 3]| t.map(|v| [dot(sub(v, p[0]), e1), dot(sub(v, p[0]), e2)]);
    let (a, b) = (flat(p), flat(q));
    for tri in [a, b] {
        for k in 0..3 {
            let (u, w) = (tri[k], tri[(k + 1) % 3]);
            let axis = [w[1] - u[1], u[0] - w[0]];
            let project = |t: [[f64; 2]; 3]| {
                t.iter()
                    .map(|v| v[0] * axis[0] + v[1] * axis[1])
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                        (lo.min(x), hi.max(x))
                    })
            };
            let ((alo, ahi), (blo, bhi)) = (project(a), project(b));
            let tol = 1e-9 * size * size;
            if ahi <= blo + tol || bhi <= alo + tol {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_tet() -> [[f64; 3]; 4] {
        [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
        ]
    }

    #[test]
    fn volume_is_signed() {
        let p = unit_tet();
        assert_eq!(tet_volume(&p), 1.0 / 6.0);
        assert_eq!(tet_volume(&[p[1], p[0], p[2], p[3]]), -1.0 / 6.0);
    }

    #[test]
    fn faces_point_outward() {
        let p = unit_tet();
        let centroid = [0.25, 0.25, 0.25];
        for k in 0..4 {
            let f = tet_face([0, 1, 2, 3], k);
            let [a, b, c] = f.map(|i| p[i as usize]);
            let n = cross(sub(b, a), sub(c, a));
            assert!(dot(n, sub(a, centroid)) > 0.0, "face {k} = {f:?}");
            assert!(!f.contains(&(k as u32)));
        }
    }

    #[test]
    fn two_tets_share_one_face() {
        // Two tets glued on face (1, 2, 3).
        let tets = [[0, 1, 2, 3], [4, 1, 3, 2]];
        let n = tet_neighbors(&tets, 5).unwrap();
        assert_eq!(n[0], [1, NO_NEIGHBOR, NO_NEIGHBOR, NO_NEIGHBOR]);
        assert_eq!(n[1], [0, NO_NEIGHBOR, NO_NEIGHBOR, NO_NEIGHBOR]);
        let edges = tet_edges(&tets, 5).unwrap();
        assert_eq!(
            edges,
            vec![
                [0, 1],
                [0, 2],
                [0, 3],
                [1, 2],
                [1, 3],
                [1, 4],
                [2, 3],
                [2, 4],
                [3, 4]
            ]
        );
    }

    #[test]
    fn non_manifold_and_bad_indices_are_errors() {
        let tets = [[0, 1, 2, 3], [4, 1, 3, 2], [5, 1, 2, 3]];
        let e = tet_neighbors(&tets, 6).unwrap_err();
        assert!(e.to_string().contains("shared by 3"), "{e}");
        let e = tet_neighbors(&[[0, 1, 2, 9]], 4).unwrap_err();
        assert!(e.to_string().contains("tetrahedron 0"), "{e}");
        let e = tet_edges(&[[0, 1, 1, 2]], 4).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
    }

    #[test]
    fn check_conforming_refuses_bad_input() {
        let points = unit_tet();
        let none = [[NO_NEIGHBOR; 4]];
        assert!(check_conforming(&[[0, 1, 2, 3]], &points, &none).is_ok());
        let e = check_conforming(&[[0, 1, 2, 9]], &points, &none).unwrap_err();
        assert!(e.to_string().contains("tetrahedron 0"), "{e}");
        let e = check_conforming(&[[0, 1, 2, 3]], &points, &[]).unwrap_err();
        assert!(matches!(e, Error::DimensionMismatch { .. }), "{e}");
        // Disjoint tetrahedra that all touch point 0: 3 boundary faces each there.
        let n = MAX_BOUNDARY_FACES_AT_POINT / 3 + 1;
        let tets: Vec<[u32; 4]> = (0..n as u32)
            .map(|t| [0, 3 * t + 1, 3 * t + 2, 3 * t + 3])
            .collect();
        let points = vec![[0.0; 3]; 3 * n + 1];
        let neighbors = vec![[NO_NEIGHBOR; 4]; n];
        let e = check_conforming(&tets, &points, &neighbors).unwrap_err();
        assert!(e.to_string().contains("point 0 lies on"), "{e}");
    }
}
