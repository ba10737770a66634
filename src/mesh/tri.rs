//! Conforming triangle meshes in 2D with their edges: the mesh of the HDG discretisation.
//!
//! ```text
//!  triangle e = (v0, v1, v2), counterclockwise; local edge j = (v_j, v_{j+1 mod 3})
//!  elem_edges[e][j] = σ(e, j), the global edge of local edge j
//!  edges[g]  = [a, b] with a < b: the global direction of edge g is a -> b
//!  forward[e][j] = whether local edge j runs in the global direction (v_j < v_{j+1})
//!  edge_tags[g]  = the physical tag of a boundary edge (0 for interior edges)
//! ```
//!
//! Meshes come from [`TriMesh::unit_square`] (the seed's n x n squares, each cut in two
//! along a diagonal, optionally perturbed) or from a Gmsh mesh ([`TriMesh::from_gmsh`]: its
//! 3-node triangles, and the physical tags of its 2-node boundary lines).

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::mesh::{CellKind, Mesh};
use crate::random::Rng;

/// Which diagonal cuts each square of [`TriMesh::unit_square`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Diagonal {
    /// From the lower left to the upper right corner of every square.
    #[default]
    Up,
    /// From the upper left to the lower right corner of every square.
    Down,
    /// Alternating in a checkerboard (a "union jack" of crossed diagonals on 2x2 squares).
    Alternating,
}

/// Physical tags of the sides of [`TriMesh::unit_square`].
pub mod square_tags {
    /// `y = 0`.
    pub const BOTTOM: i32 = 1;
    /// `x = 1`.
    pub const RIGHT: i32 = 2;
    /// `y = 1`.
    pub const TOP: i32 = 3;
    /// `x = 0`.
    pub const LEFT: i32 = 4;
}

/// A conforming triangle mesh with its edges. See the [module docs](self).
#[derive(Clone, Debug, PartialEq)]
pub struct TriMesh {
    /// Point coordinates.
    pub points: Vec<[f64; 2]>,
    /// Triangles, counterclockwise.
    pub triangles: Vec<[u32; 3]>,
    /// Global edges `[a, b]`, `a < b`.
    pub edges: Vec<[u32; 2]>,
    /// `σ(e, j)`: the global edge of local edge `j` of triangle `e`.
    pub elem_edges: Vec<[u32; 3]>,
    /// Whether local edge `j` of triangle `e` runs in its global edge's direction.
    pub forward: Vec<[bool; 3]>,
    /// Physical tag of each boundary edge; 0 for interior edges.
    pub edge_tags: Vec<i32>,
    /// Whether each edge lies on the boundary (one triangle).
    pub boundary: Vec<bool>,
}

/// Marks a missing second element of an edge.
pub const NO_ELEMENT: u32 = u32::MAX;

impl TriMesh {
    /// A mesh from points, counterclockwise triangles, and the physical tags of boundary
    /// edges (by their two points, in either order). Finds the edges.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the triangle or edge: a point index out of range, a
    /// repeated point, a degenerate (area ≤ 10⁻¹² of its longest edge squared) or inverted
    /// (clockwise) triangle, an edge shared by more than two triangles, or a boundary edge
    /// without a tag (`require_tags`).
    pub fn new(
        points: Vec<[f64; 2]>,
        triangles: Vec<[u32; 3]>,
        tags: &HashMap<(u32, u32), i32>,
        require_tags: bool,
    ) -> Result<Self> {
        if triangles.is_empty() {
            return Err(Error::invalid(
                "TriMesh",
                "mesh",
                "the mesh has no triangles",
            ));
        }
        if u32::try_from(points.len()).is_err() || u32::try_from(3 * triangles.len()).is_err() {
            return Err(Error::invalid(
                "TriMesh",
                "mesh",
                "more points or triangles than 32-bit indices hold",
            ));
        }
        for (e, t) in triangles.iter().enumerate() {
            if let Some(&v) = t.iter().find(|&&v| v as usize >= points.len()) {
                return Err(Error::invalid(
                    "TriMesh",
                    "mesh",
                    format!(
                        "triangle {e} refers to point {v}, but there are {} points",
                        points.len()
                    ),
                ));
            }
            if t[0] == t[1] || t[1] == t[2] || t[0] == t[2] {
                return Err(Error::invalid(
                    "TriMesh",
                    "mesh",
                    format!("triangle {e} repeats a point: {t:?}"),
                ));
            }
            let [a, b, c] = t.map(|v| points[v as usize]);
            let area2 = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
            let longest = [(a, b), (b, c), (c, a)]
                .iter()
                .map(|(p, q)| (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2))
                .fold(0.0f64, f64::max);
            if area2.abs() <= 1e-12 * longest || !area2.is_finite() {
                return Err(Error::invalid(
                    "TriMesh",
                    "mesh",
                    format!(
                        "triangle {e} {t:?} is degenerate (area {:.3e})",
                        area2 / 2.0
                    ),
                ));
            }
            if area2 < 0.0 {
                return Err(Error::invalid(
                    "TriMesh",
                    "mesh",
                    format!(
                        "triangle {e} {t:?} is inverted (clockwise, area {:.3e})",
                        area2 / 2.0
                    ),
                ));
            }
        }
        // The edge records (16 bytes, 3 per triangle) and the per-triangle and per-edge
        // arrays: about 80 bytes per triangle.
        crate::limits::check_host_items(
            format_args!("the edges of {} triangles", triangles.len()),
            triangles.len() as u64,
            80,
        )?;
        // Edges: sort the 3 n (low, high, element, local) records by their point pair.
        let mut records: Vec<(u32, u32, u32, u8)> = Vec::with_capacity(3 * triangles.len());
        for (e, t) in triangles.iter().enumerate() {
            for j in 0..3 {
                let (a, b) = (t[j], t[(j + 1) % 3]);
                records.push((a.min(b), a.max(b), e as u32, j as u8));
            }
        }
        records.sort_unstable();
        let mut edges = Vec::new();
        let mut elem_edges = vec![[0u32; 3]; triangles.len()];
        let mut forward = vec![[true; 3]; triangles.len()];
        let mut boundary = Vec::new();
        let mut i = 0;
        while i < records.len() {
            let (a, b) = (records[i].0, records[i].1);
            let mut k = i;
            while k < records.len() && (records[k].0, records[k].1) == (a, b) {
                k += 1;
            }
            if k - i > 2 {
                return Err(Error::invalid(
                    "TriMesh",
                    "mesh",
                    format!(
                    "edge ({a}, {b}) is shared by {} triangles (at most 2 in a conforming mesh)",
                    k - i
                ),
                ));
            }
            let g = edges.len() as u32;
            for r in &records[i..k] {
                let (e, j) = (r.2 as usize, r.3 as usize);
                elem_edges[e][j] = g;
                forward[e][j] = triangles[e][j] < triangles[e][(j + 1) % 3];
            }
            if k - i == 2 {
                let (r0, r1) = (records[i], records[i + 1]);
                if forward[r0.2 as usize][r0.3 as usize] == forward[r1.2 as usize][r1.3 as usize] {
                    return Err(Error::invalid(
                        "TriMesh",
                        "mesh",
                        format!(
                        "triangles {} and {} traverse their shared edge ({a}, {b}) in the same \
                         direction: the mesh is not consistently oriented",
                        r0.2, r1.2
                    ),
                    ));
                }
            }
            edges.push([a, b]);
            boundary.push(k - i == 1);
            i = k;
        }
        check_boundary_overlap(&points, &edges, &boundary)?;
        let mut edge_tags = vec![0; edges.len()];
        for (g, &[a, b]) in edges.iter().enumerate() {
            if !boundary[g] {
                continue;
            }
            match tags.get(&(a, b)).or_else(|| tags.get(&(b, a))) {
                Some(&t) => edge_tags[g] = t,
                None if require_tags => {
                    return Err(Error::invalid(
                        "TriMesh",
                        "mesh",
                        format!(
                        "boundary edge ({a}, {b}) at ({:.6}, {:.6})-({:.6}, {:.6}) has no physical \
                         tag (tag every boundary line in the Gmsh file)",
                        points[a as usize][0],
                        points[a as usize][1],
                        points[b as usize][0],
                        points[b as usize][1]
                    ),
                    ))
                }
                None => {}
            }
        }
        Ok(TriMesh {
            points,
            triangles,
            edges,
            elem_edges,
            forward,
            edge_tags,
            boundary,
        })
    }

    /// The unit square `[0, 1]²` cut into `n x n` squares, each split in two along
    /// `diagonal`; interior points moved at random by up to `perturbation · h` in each
    /// coordinate (`perturbation < 0.25` keeps every triangle valid). Sides are tagged
    /// [`square_tags`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n = 0` or a perturbation outside `[0, 0.25)`.
    pub fn unit_square(n: usize, diagonal: Diagonal, perturbation: f64, seed: u64) -> Result<Self> {
        if n == 0 || !(0.0..0.25).contains(&perturbation) {
            return Err(Error::InvalidArgument {
                op: "TriMesh::unit_square",
                name: "n, perturbation",
                reason: format!(
                    "n = {n} must be positive and perturbation = {perturbation} in [0, 0.25)"
                ),
            });
        }
        let points_count = (n as u64 + 1).saturating_mul(n as u64 + 1);
        if points_count > u64::from(u32::MAX) {
            return Err(Error::InvalidArgument {
                op: "TriMesh::unit_square",
                name: "n",
                reason: format!("n = {n}: {points_count} points need indices of more than 32 bits"),
            });
        }
        // Points (2 f64) and triangles (3 u32 and a tag each).
        crate::limits::check_host_bytes(
            format_args!("a {n} x {n} triangle mesh"),
            points_count * 16 + (n as u64 * n as u64) * 2 * 16,
        )?;
        let h = 1.0 / n as f64;
        let id = |i: usize, j: usize| (j * (n + 1) + i) as u32;
        let mut rng = Rng::new(seed);
        let mut points = Vec::with_capacity((n + 1) * (n + 1));
        for j in 0..=n {
            for i in 0..=n {
                let (mut x, mut y) = (i as f64 * h, j as f64 * h);
                if perturbation > 0.0 && i > 0 && i < n && j > 0 && j < n {
                    x += rng.range(-perturbation, perturbation) * h;
                    y += rng.range(-perturbation, perturbation) * h;
                }
                points.push([x, y]);
            }
        }
        let mut triangles = Vec::with_capacity(2 * n * n);
        for j in 0..n {
            for i in 0..n {
                let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
                let up = match diagonal {
                    Diagonal::Up => true,
                    Diagonal::Down => false,
                    Diagonal::Alternating => (i + j) % 2 == 0,
                };
                if up {
                    triangles.push([a, b, c]);
                    triangles.push([a, c, d]);
                } else {
                    triangles.push([a, b, d]);
                    triangles.push([b, c, d]);
                }
            }
        }
        let mut tags = HashMap::new();
        for k in 0..n {
            tags.insert((id(k, 0), id(k + 1, 0)), square_tags::BOTTOM);
            tags.insert((id(n, k), id(n, k + 1)), square_tags::RIGHT);
            tags.insert((id(k, n), id(k + 1, n)), square_tags::TOP);
            tags.insert((id(0, k), id(0, k + 1)), square_tags::LEFT);
        }
        Self::new(points, triangles, &tags, true)
    }

    /// The 3-node triangles of a Gmsh mesh, with the physical tags of its 2-node lines as
    /// boundary tags. Points must lie in the plane `z = 0`; unused points are kept (they
    /// belong to no triangle). Clockwise triangles (a surface meshed with normal −z) are
    /// made counterclockwise by swapping their last two points.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the mesh breaks its invariants ([`Mesh::check`]: a
    /// block whose connectivity and tags disagree in length, a point index out of range),
    /// has no 3-node triangles, a point off the plane, or any error of [`TriMesh::new`]
    /// (every boundary edge must carry a tag).
    pub fn from_gmsh(mesh: &Mesh) -> Result<Self> {
        Self::gmsh(mesh, None)
    }

    /// As [`from_gmsh`](Self::from_gmsh), but boundary edges without a physical tag (a
    /// file with no tagged lines, say) get `tag`.
    ///
    /// # Errors
    /// Those of [`from_gmsh`](Self::from_gmsh) except the missing tag; `tag = 0` (not a
    /// physical tag).
    pub fn from_gmsh_with_default_tag(mesh: &Mesh, tag: i32) -> Result<Self> {
        if tag == 0 {
            return Err(Error::invalid(
                "TriMesh",
                "mesh",
                "the default boundary tag must not be 0 (Gmsh's 'no tag')",
            ));
        }
        Self::gmsh(mesh, Some(tag))
    }

    fn gmsh(mesh: &Mesh, default_tag: Option<i32>) -> Result<Self> {
        // The mesh's invariants (`Mesh::check`), then its kinds.
        mesh.check_kinds("TriMesh", &[CellKind::Tri3])?;
        let tri = mesh
            .block(CellKind::Tri3)
            .filter(|b| !b.is_empty())
            .ok_or_else(|| {
                Error::invalid(
                    "TriMesh",
                    "mesh",
                    format!(
                        "the mesh has no 3-node triangles (blocks: {:?})",
                        mesh.blocks.iter().map(|b| b.kind).collect::<Vec<_>>()
                    ),
                )
            })?;
        if let Some((i, p)) = mesh
            .points
            .iter()
            .enumerate()
            .find(|(_, p)| p[2].abs() > 1e-12 * (1.0 + p[0].abs() + p[1].abs()))
        {
            return Err(Error::invalid(
                "TriMesh",
                "mesh",
                format!("point {i} {p:?} is off the plane z = 0: a 2D mesh is needed"),
            ));
        }
        let points = mesh.points.iter().map(|p| [p[0], p[1]]).collect();
        // Gmsh orients a triangle by its surface's normal: clockwise ones (normal −z) are
        // turned counterclockwise by swapping their last two points.
        let triangles = tri
            .cells()
            .map(|c| {
                let [a, b, d] = [c[0], c[1], c[2]].map(|v| mesh.points.get(v as usize));
                match (a, b, d) {
                    (Some(a), Some(b), Some(d))
                        if (b[0] - a[0]) * (d[1] - a[1]) - (b[1] - a[1]) * (d[0] - a[0]) < 0.0 =>
                    {
                        [c[0], c[2], c[1]]
                    }
                    _ => [c[0], c[1], c[2]],
                }
            })
            .collect();
        let mut tags = HashMap::new();
        if let Some(lines) = mesh.block(CellKind::Line2) {
            for (c, &tag) in lines.cells().zip(&lines.physical) {
                if tag != 0 {
                    tags.insert((c[0], c[1]), tag);
                }
            }
        }
        let mut out = Self::new(points, triangles, &tags, default_tag.is_none())?;
        if let Some(t) = default_tag {
            for (tag, &b) in out.edge_tags.iter_mut().zip(&out.boundary) {
                if b && *tag == 0 {
                    *tag = t;
                }
            }
        }
        Ok(out)
    }

    /// Number of triangles.
    pub fn num_triangles(&self) -> usize {
        self.triangles.len()
    }

    /// Number of edges.
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }

    /// The physical tags that boundary edges carry, sorted, without repeats.
    pub fn boundary_tags(&self) -> Vec<i32> {
        let mut t: Vec<i32> = self
            .edge_tags
            .iter()
            .zip(&self.boundary)
            .filter(|(_, &b)| b)
            .map(|(&t, _)| t)
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    }

    /// The longest edge: the mesh size `h`.
    pub fn h(&self) -> f64 {
        self.edges
            .iter()
            .map(|&[a, b]| {
                let (p, q) = (self.points[a as usize], self.points[b as usize]);
                ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt()
            })
            .fold(0.0, f64::max)
    }

    /// The `(element, local edge)` pairs of every edge, `(element << 2) | local` with
    /// [`NO_ELEMENT`] for the missing side of a boundary edge, the lower element first: the
    /// host reference of the device's sort-by-key ([`crate::hdg`]).
    pub fn edge_elements(&self) -> Vec<[u32; 2]> {
        let mut keys: Vec<(u32, u32)> = Vec::with_capacity(3 * self.triangles.len());
        for (e, ee) in self.elem_edges.iter().enumerate() {
            for (j, &g) in ee.iter().enumerate() {
                keys.push((g, ((e as u32) << 2) | j as u32));
            }
        }
        keys.sort_unstable();
        let mut out = vec![[NO_ELEMENT; 2]; self.edges.len()];
        let mut slot = vec![0usize; self.edges.len()];
        for (g, v) in keys {
            let s = &mut slot[g as usize];
            if *s < 2 {
                out[g as usize][*s] = v;
            }
            *s += 1;
        }
        out
    }
}

/// Checks that no two boundary edges leave a point in the same direction: they would
/// overlap, as where a hanging node splits an edge that the triangle across does not
/// (a non-conforming mesh, whose unmatched edges would otherwise become boundary).
///
/// Two directions `d`, `e` (unit vectors) are the same when `|d × e| < 1e-10` and
/// `d · e > 0`, that is when their angles differ by less than about `1e-10`. The edges at a
/// point are sorted by angle and each is compared with those less than
/// [`SAME_DIRECTION_WINDOW`] after it (around the circle), which finds every such pair:
/// O(k log k) for k boundary edges at a point, not O(k²) (a file with 10⁶ triangles that
/// all touch one point would otherwise take 10¹² comparisons).
fn check_boundary_overlap(
    points: &[[f64; 2]],
    edges: &[[u32; 2]],
    boundary: &[bool],
) -> Result<()> {
    use std::f64::consts::PI;
    let mut at: HashMap<u32, Vec<u32>> = HashMap::new();
    for (g, &[a, b]) in edges.iter().enumerate().filter(|&(g, _)| boundary[g]) {
        at.entry(a).or_default().push(g as u32);
        at.entry(b).or_default().push(g as u32);
    }
    let mut vertices: Vec<_> = at.into_iter().filter(|(_, e)| e.len() > 1).collect();
    vertices.sort_unstable();
    let mut by_angle: Vec<(f64, u32)> = Vec::new();
    for (v, list) in vertices {
        let p = points[v as usize];
        let direction = |g: u32| {
            let [a, b] = edges[g as usize];
            let q = points[if a == v { b } else { a } as usize];
            let d = [q[0] - p[0], q[1] - p[1]];
            let len = d[0].hypot(d[1]);
            [d[0] / len, d[1] / len]
        };
        // Angles in [-π, π], and those within the window above -π once more, shifted by
        // 2π, so that pairs across the cut at ±π are neighbours too. A NaN direction (none)
        // is never the same as another: left out.
        by_angle.clear();
        for &g in &list {
            let d = direction(g);
            let angle = d[1].atan2(d[0]);
            if angle.is_nan() {
                continue;
            }
            by_angle.push((angle, g));
            if angle < -PI + SAME_DIRECTION_WINDOW {
                by_angle.push((angle + 2.0 * PI, g));
            }
        }
        by_angle.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        for (i, &(angle, g)) in by_angle.iter().enumerate() {
            for &(other, h) in &by_angle[i + 1..] {
                if other - angle >= SAME_DIRECTION_WINDOW {
                    break;
                }
                if g == h {
                    continue;
                }
                let (d, e) = (direction(g), direction(h));
                if (d[0] * e[1] - d[1] * e[0]).abs() < 1e-10 && d[0] * e[0] + d[1] * e[1] > 0.0 {
                    let (g, h) = (g.min(h), g.max(h));
                    return Err(Error::invalid(
                        "TriMesh",
                        "mesh",
                        format!(
                            "the mesh is not conforming: boundary edges {:?} and {:?} overlap \
                             at point {v} ({:.6}, {:.6}); a hanging node (an edge split on one \
                             side only)",
                            edges[g as usize], edges[h as usize], p[0], p[1]
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The angle (radians) within which [`check_boundary_overlap`] compares two boundary edges
/// at a point: ten times the angle its test of the same direction accepts, so no pair is
/// missed; edges of different directions (at least about 1e-10 apart) are at most about ten
/// to a window, so the comparisons stay linear in the edges.
const SAME_DIRECTION_WINDOW: f64 = 1e-9;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_square_counts_and_tags() {
        for diagonal in [Diagonal::Up, Diagonal::Down, Diagonal::Alternating] {
            let m = TriMesh::unit_square(4, diagonal, 0.2, 3).unwrap();
            assert_eq!(m.num_triangles(), 32);
            // Euler: E = V + F − 1 for a disc: 25 + 32 − 1.
            assert_eq!(m.num_edges(), 56);
            assert_eq!(m.boundary.iter().filter(|&&b| b).count(), 16);
            assert_eq!(m.boundary_tags(), vec![1, 2, 3, 4]);
            let ee = m.edge_elements();
            for (g, pair) in ee.iter().enumerate() {
                assert_eq!(pair[1] == NO_ELEMENT, m.boundary[g]);
                for &v in pair.iter().filter(|&&v| v != NO_ELEMENT) {
                    assert_eq!(m.elem_edges[(v >> 2) as usize][(v & 3) as usize], g as u32);
                }
            }
        }
    }

    #[test]
    fn bad_meshes_are_errors() {
        let p = vec![[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [2.0, 0.0]];
        let none = HashMap::new();
        let e = TriMesh::new(p.clone(), vec![[0, 2, 1]], &none, false).unwrap_err();
        assert!(e.to_string().contains("inverted"), "{e}");
        let e = TriMesh::new(p.clone(), vec![[0, 1, 3]], &none, false).unwrap_err();
        assert!(e.to_string().contains("degenerate"), "{e}");
        let e = TriMesh::new(p.clone(), vec![[0, 1, 7]], &none, false).unwrap_err();
        assert!(e.to_string().contains("point 7"), "{e}");
        let e = TriMesh::new(p.clone(), vec![[0, 1, 2]], &none, true).unwrap_err();
        assert!(e.to_string().contains("no physical tag"), "{e}");
        let e = TriMesh::new(p, vec![], &none, false).unwrap_err();
        assert!(e.to_string().contains("no triangles"), "{e}");
        assert!(TriMesh::unit_square(0, Diagonal::Up, 0.0, 1).is_err());
        assert!(TriMesh::unit_square(3, Diagonal::Up, 0.3, 1).is_err());
    }

    #[test]
    fn hanging_nodes_are_errors_in_any_direction() {
        // Triangle (0, 1, 2) has the whole edge 1-2; across it, point 3 splits it. Turned by
        // 90°, the edges at point 1 point along -x: at π, and (nudged) just across the cut
        // at -π.
        for (nudge, turn) in [(0.0, false), (0.0, true), (1e-12, true)] {
            let p = [
                [0.0, 0.0],
                [1.0, 0.0],
                [1.0, 2.0],
                [1.0 - nudge, 1.0],
                [2.0, 0.0],
                [2.0, 2.0],
            ];
            let points = p
                .iter()
                .map(|&[x, y]| if turn { [-y, x] } else { [x, y] })
                .collect();
            let triangles = vec![[0, 1, 2], [1, 4, 3], [3, 4, 5], [3, 5, 2]];
            let e = TriMesh::new(points, triangles, &HashMap::new(), false).unwrap_err();
            assert!(e.to_string().contains("overlap at point 1"), "{e}");
        }
    }

    #[test]
    fn malformed_blocks_are_errors_not_panics() {
        use crate::mesh::CellBlock;
        let block = |kind, connectivity: Vec<u32>, physical: Vec<i32>| CellBlock {
            kind,
            connectivity,
            elementary: physical.clone(),
            physical,
        };
        let mesh = Mesh {
            points: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            blocks: vec![
                block(CellKind::Tri3, vec![0, 1, 2], vec![1]),
                // Two lines' nodes, one line's tags.
                block(CellKind::Line2, vec![0, 1, 1, 2], vec![5]),
            ],
            physical_names: vec![],
        };
        let e = TriMesh::from_gmsh(&mesh).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("Line2"), "{e}");
    }
}
