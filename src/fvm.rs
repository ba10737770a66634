//! Finite-volume Laplacians on tetrahedral meshes: two-point flux approximation (TPFA),
//! assembled straight into CSR. They are the unstructured test and benchmark matrices of
//! the crate: symmetric positive definite M-matrices with short, irregular rows.
//!
//! Two discretisations of `-Δu = f` with `u = 0` on the boundary:
//!
//! | generator | unknowns | stencil | interior row |
//! |---|---|---|---|
//! | [`tpfa_tets`] | one per tetrahedron (cell-centred) | the 4 face neighbours | 5 entries |
//! | [`tpfa_dual`] | one per mesh point (median dual, vertex-centred) | the edge neighbours | 15 entries on a Kuhn grid |
//!
//! Both give, for each pair of neighbouring control volumes `i`, `j` with a shared face of
//! area `A_ij` and a distance `d_ij` between their centres, a transmissibility
//! `T_ij = A_ij / d_ij > 0`, and
//!
//! ```text
//!  A_ij = -T_ij,    A_ii = Σ_j T_ij + Σ_boundary T_b       (T_b = A_b / d_b)
//! ```
//!
//! so every row sum is 0 except on rows that touch the boundary, where it is `Σ T_b > 0`.
//! Each `T_ij` is computed once from data that do not depend on which of its two rows asks
//! for it, so the matrices are exactly symmetric. Rows are built in parallel, counted
//! first and then filled: no triplet list is formed.
//!
//! ```
//! let a = galerkin::fvm::tpfa_tets_structured(8, 0.1, 42)?;
//! assert_eq!(a.nrows(), 6 * 8 * 8 * 8);
//! assert!(a.nnz() <= 5 * a.nrows());
//! # Ok::<(), galerkin::Error>(())
//! ```

use rayon::prelude::*;

use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::mesh::structured::StructuredTets;
use crate::mesh::{
    cross, dot, norm, sub, tet_face, tet_neighbors, Mesh, PointCells, NO_NEIGHBOR, TET_EDGES,
};
use crate::sparse::Csr;

/// The cell-centred TPFA Laplacian: one unknown per tetrahedron of `mesh` (row `t` is
/// tetrahedron `t` of [`Mesh::tets`]).
///
/// For a face shared by tetrahedra `i` and `j`: `T = area / |c_i - c_j|` with `c` the
/// centroids; for a boundary face of `i`: `T_b = area / |c_i - g|` with `g` the face's
/// centroid (a Dirichlet condition at the face). Rows of tetrahedra with four neighbours
/// have exactly 5 entries.
///
/// # Errors
/// [`Error::InvalidArgument`] if the mesh breaks its invariants ([`Mesh::check`]), has no
/// tetrahedra, a tetrahedron has (numerically) zero volume or non-finite points (the
/// message names it), an index is out of range, or a face is shared by more than two
/// tetrahedra.
pub fn tpfa_tets(mesh: &Mesh) -> Result<Csr<Cpu, f64>> {
    mesh.check()?;
    cell_centred(&mesh.points, mesh.tets())
}

/// The vertex-centred TPFA Laplacian on the median dual of the tetrahedra: one unknown per
/// point that is a corner of a tetrahedron, in increasing point order ([`Mesh::tet_points`];
/// row `i` is point `i` when every point is a corner, as for linear meshes).
///
/// The dual face of edge `(i, j)` is, in each tetrahedron around the edge, the
/// quadrilateral (edge midpoint, centroid of one face at the edge, tetrahedron centroid,
/// centroid of the other face), whose area vector is `(x_c + x_d - x_i - x_j) × (x_d -
/// x_c) / 24` for the other two corners `c`, `d` in positive order. With `S_ij` the sum
/// over the tetrahedra around the edge, `T_ij = |S_ij| / |x_i - x_j|`. A point on the
/// boundary gets, for each boundary triangle at it, a third of the triangle's area over
/// the distance from the triangle's centroid to its tetrahedron's centroid (a Dirichlet
/// term that makes the matrix definite). Interior points of a Kuhn-split grid
/// ([`StructuredTets`]) have 14 edge neighbours: 15 entries per row.
///
/// # Errors
/// As [`tpfa_tets`].
pub fn tpfa_dual(mesh: &Mesh) -> Result<Csr<Cpu, f64>> {
    mesh.check()?;
    vertex_centred(&mesh.points, mesh.tets())
}

/// [`tpfa_tets`] on [`StructuredTets::unit_cube`]`(n, perturbation, seed)`: `6 n³` rows
/// (`n = 70`: 2,058,000 rows, about 5 entries each).
///
/// # Errors
/// As [`StructuredTets::build`].
pub fn tpfa_tets_structured(n: usize, perturbation: f64, seed: u64) -> Result<Csr<Cpu, f64>> {
    let (points, tets) = structured(n, perturbation, seed)?;
    cell_centred(&points, tets)
}

/// [`tpfa_dual`] on [`StructuredTets::unit_cube`]`(n, perturbation, seed)`: `(n + 1)³`
/// rows (`n = 127`: 2,097,152 rows, about 15 entries each).
///
/// # Errors
/// As [`StructuredTets::build`].
pub fn tpfa_dual_structured(n: usize, perturbation: f64, seed: u64) -> Result<Csr<Cpu, f64>> {
    let (points, tets) = structured(n, perturbation, seed)?;
    vertex_centred(&points, tets)
}

type Tets = Vec<[u32; 4]>;

fn structured(n: usize, perturbation: f64, seed: u64) -> Result<(Vec<[f64; 3]>, Tets)> {
    let mesh = StructuredTets::unit_cube(n, perturbation, seed).build()?;
    let tets = mesh.tets();
    Ok((mesh.points, tets))
}

fn cell_centred(points: &[[f64; 3]], mut tets: Tets) -> Result<Csr<Cpu, f64>> {
    const OP: &str = "fvm::tpfa_tets";
    check_geometry(OP, points, &mut tets, false)?;
    let neighbors = tet_neighbors(&tets, points.len())?;
    crate::mesh::check_conforming(&tets, points, &neighbors)?;
    let corners = |t: usize| tets[t].map(|v| points[v as usize]);
    let centroids: Vec<[f64; 3]> = (0..tets.len())
        .into_par_iter()
        .map(|t| centroid(&corners(t)))
        .collect();
    assemble(
        tets.len(),
        |t, _: &mut ()| 1 + neighbors[t].iter().filter(|&&n| n != NO_NEIGHBOR).count(),
        |t, row, _: &mut ()| {
            let mut diagonal = 0.0;
            for (k, &n) in neighbors[t].iter().enumerate() {
                let mut face = tet_face(tets[t], k).map(|v| points[v as usize]);
                if n == NO_NEIGHBOR {
                    diagonal += triangle_area(&face) / norm(sub(centroid(&face), centroids[t]));
                } else {
                    // Sorted points and the lower tet first: the same T from both rows.
                    let mut ids = tet_face(tets[t], k);
                    ids.sort_unstable();
                    face = ids.map(|v| points[v as usize]);
                    let (lo, hi) = (t.min(n as usize), t.max(n as usize));
                    let transmissibility =
                        triangle_area(&face) / norm(sub(centroids[hi], centroids[lo]));
                    row.push((n, -transmissibility));
                    diagonal += transmissibility;
                }
            }
            row.push((t as u32, diagonal));
        },
    )
}

fn vertex_centred(points: &[[f64; 3]], mut tets: Tets) -> Result<Csr<Cpu, f64>> {
    const OP: &str = "fvm::tpfa_dual";
    // Positive orientation fixes the sign convention of the dual area vectors.
    check_geometry(OP, points, &mut tets, true)?;
    // Only tet corners are unknowns (Tet10 edge nodes, 2D or stray points are not).
    let mut index = vec![u32::MAX; points.len()];
    for t in &tets {
        for &v in t {
            index[v as usize] = 0;
        }
    }
    let mut corner_points = Vec::new();
    for (v, i) in index.iter_mut().enumerate() {
        if *i == 0 {
            *i = corner_points.len() as u32;
            corner_points.push(points[v]);
        }
    }
    let points: &[[f64; 3]] = if corner_points.len() == points.len() {
        points
    } else {
        for t in &mut tets {
            *t = t.map(|v| index[v as usize]);
        }
        &corner_points
    };
    let neighbors = tet_neighbors(&tets, points.len())?;
    crate::mesh::check_conforming(&tets, points, &neighbors)?;
    let incidence = PointCells::new(&tets, points.len());

    // The edge neighbours of point p, sorted.
    let adjacent = |p: usize, out: &mut Vec<u32>| {
        out.clear();
        for &t in incidence.of(p) {
            out.extend(tets[t as usize].iter().filter(|&&v| v as usize != p));
        }
        out.sort_unstable();
        out.dedup();
    };
    assemble(
        points.len(),
        |p, scratch: &mut DualScratch| {
            adjacent(p, &mut scratch.adjacent);
            scratch.adjacent.len() + 1
        },
        |p, row, scratch: &mut DualScratch| {
            let DualScratch {
                adjacent: adj,
                area,
            } = scratch;
            adjacent(p, adj);
            area.clear();
            area.resize(adj.len(), [0.0; 3]);
            let mut diagonal = 0.0;
            for &t in incidence.of(p) {
                let tet = tets[t as usize];
                for (a, b) in TET_EDGES {
                    let q = if tet[a] as usize == p {
                        tet[b]
                    } else if tet[b] as usize == p {
                        tet[a]
                    } else {
                        continue;
                    };
                    let s = dual_area(points, tet, a, b);
                    // q shares an edge with p, so it is in p's adjacency list.
                    if let Ok(slot) = adj.binary_search(&q) {
                        for d in 0..3 {
                            area[slot][d] += s[d];
                        }
                    }
                }
                for (k, &n) in neighbors[t as usize].iter().enumerate() {
                    if n == NO_NEIGHBOR && tet[k] as usize != p {
                        let face = tet_face(tet, k).map(|v| points[v as usize]);
                        let c = centroid(&tet.map(|v| points[v as usize]));
                        diagonal += triangle_area(&face) / 3.0 / norm(sub(centroid(&face), c));
                    }
                }
            }
            for (&q, s) in adj.iter().zip(area.iter()) {
                let (lo, hi) = (p.min(q as usize), p.max(q as usize));
                let transmissibility = norm(*s) / norm(sub(points[hi], points[lo]));
                row.push((q, -transmissibility));
                diagonal += transmissibility;
            }
            row.push((p as u32, diagonal));
        },
    )
}

/// Per-thread buffers of [`vertex_centred`]: a row's neighbours and their area vectors.
#[derive(Default)]
struct DualScratch {
    adjacent: Vec<u32>,
    area: Vec<[f64; 3]>,
}

/// The area vector of the median-dual face piece of edge `(tet[a], tet[b])` inside `tet`,
/// oriented from the lower point index to the higher. It depends only on the edge and the
/// tetrahedron, not on the order of `a` and `b`, so both rows of the edge sum the same
/// numbers in the same order.
fn dual_area(points: &[[f64; 3]], tet: [u32; 4], a: usize, b: usize) -> [f64; 3] {
    // OTHERS[a][b] = (c, d) such that (a, b, c, d) is an even permutation of (0, 1, 2, 3).
    const OTHERS: [[(usize, usize); 4]; 4] = [
        [(9, 9), (2, 3), (3, 1), (1, 2)],
        [(3, 2), (9, 9), (0, 3), (2, 0)],
        [(1, 3), (3, 0), (9, 9), (0, 1)],
        [(2, 1), (0, 2), (1, 0), (9, 9)],
    ];
    let (a, b) = if tet[a] < tet[b] { (a, b) } else { (b, a) };
    let (c, d) = OTHERS[a][b];
    let [xa, xb, xc, xd] = [a, b, c, d].map(|k| points[tet[k] as usize]);
    let m: [f64; 3] = std::array::from_fn(|i| xc[i] + xd[i] - xa[i] - xb[i]);
    cross(m, sub(xd, xc)).map(|v| v / 24.0)
}

/// Rejects degenerate tetrahedra (|6 V| below 32 ε L³, L the longest edge, or non-finite);
/// with `reorient`, swaps two points of negatively oriented ones.
fn check_geometry(
    op: &'static str,
    points: &[[f64; 3]],
    tets: &mut [[u32; 4]],
    reorient: bool,
) -> Result<()> {
    if tets.is_empty() {
        return Err(Error::invalid(op, "mesh", "the mesh has no tetrahedra"));
    }
    crate::mesh::check_tets(op, tets, points.len())?;
    let bad = tets
        .par_iter_mut()
        .enumerate()
        .filter_map(|(t, tet)| {
            let p = tet.map(|v| points[v as usize]);
            let det = dot(sub(p[1], p[0]), cross(sub(p[2], p[0]), sub(p[3], p[0])));
            let longest_squared = TET_EDGES
                .iter()
                .map(|&(a, b)| {
                    let e = sub(p[b], p[a]);
                    dot(e, e)
                })
                .fold(0.0, f64::max);
            let scale = longest_squared * longest_squared.sqrt();
            if !det.is_finite() || det.abs() <= 32.0 * f64::EPSILON * scale {
                return Some((t, *tet, det / 6.0));
            }
            if reorient && det < 0.0 {
                tet.swap(2, 3);
            }
            None
        })
        .min_by_key(|&(t, _, _)| t);
    match bad {
        None => Ok(()),
        Some((t, tet, volume)) => Err(Error::invalid(
            op,
            "mesh",
            format!("tetrahedron {t} (points {tet:?}) is degenerate: volume {volume:e}"),
        )),
    }
}

/// Builds a CSR matrix row by row in parallel: `len(row)` entries, then `fill(row, entries)`
/// pushes exactly that many `(column, value)` pairs, in any order. Both get a per-thread
/// scratch value `S`.
fn assemble<S: Default>(
    nrows: usize,
    len: impl Fn(usize, &mut S) -> usize + Sync,
    fill: impl Fn(usize, &mut Vec<(u32, f64)>, &mut S) + Sync,
) -> Result<Csr<Cpu, f64>> {
    let lengths: Vec<usize> = (0..nrows)
        .into_par_iter()
        .map_init(S::default, |scratch, r| len(r, scratch))
        .collect();
    let mut row_ptr = Vec::with_capacity(nrows + 1);
    row_ptr.push(0u32);
    let mut nnz = 0usize;
    for l in lengths {
        nnz += l;
        if nnz >= u32::MAX as usize {
            return Err(Error::invalid(
                "fvm",
                "mesh",
                "the matrix would have 2^32 or more entries",
            ));
        }
        row_ptr.push(nnz as u32);
    }
    let mut col_idx = vec![0u32; nnz];
    let mut values = vec![0.0f64; nnz];
    // Disjoint slices of rows for the threads.
    const ROWS: usize = 2048;
    let mut jobs = Vec::with_capacity(nrows.div_ceil(ROWS));
    let (mut cols, mut vals) = (&mut col_idx[..], &mut values[..]);
    for start in (0..nrows).step_by(ROWS) {
        let end = (start + ROWS).min(nrows);
        let n = (row_ptr[end] - row_ptr[start]) as usize;
        let (c, rest_c) = std::mem::take(&mut cols).split_at_mut(n);
        let (v, rest_v) = std::mem::take(&mut vals).split_at_mut(n);
        (cols, vals) = (rest_c, rest_v);
        jobs.push((start, end, c, v));
    }
    jobs.into_par_iter().for_each(|(start, end, cols, vals)| {
        let (mut row, mut scratch) = (Vec::new(), S::default());
        let base = row_ptr[start] as usize;
        for r in start..end {
            row.clear();
            fill(r, &mut row, &mut scratch);
            let (s, e) = (row_ptr[r] as usize - base, row_ptr[r + 1] as usize - base);
            assert_eq!(
                row.len(),
                e - s,
                "row {r}: counted and filled lengths differ"
            );
            row.sort_unstable_by_key(|&(c, _)| c);
            for (k, &(c, v)) in row.iter().enumerate() {
                cols[s + k] = c;
                vals[s + k] = v;
            }
        }
    });
    Csr::new(nrows, nrows, row_ptr, col_idx, values)
}

fn centroid<const N: usize>(p: &[[f64; 3]; N]) -> [f64; 3] {
    let mut c = [0.0; 3];
    for q in p {
        for d in 0..3 {
            c[d] += q[d];
        }
    }
    c.map(|v| v / N as f64)
}

fn triangle_area(p: &[[f64; 3]; 3]) -> f64 {
    0.5 * norm(cross(sub(p[1], p[0]), sub(p[2], p[0])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{CellBlock, CellKind};

    fn one_tet_mesh(points: Vec<[f64; 3]>) -> Mesh {
        let mut block = CellBlock::new(CellKind::Tet4);
        block.connectivity = vec![0, 1, 2, 3];
        block.physical = vec![0];
        block.elementary = vec![0];
        Mesh {
            points,
            blocks: vec![block],
            physical_names: vec![],
        }
    }

    #[test]
    fn single_tet_has_only_boundary_terms() {
        let mesh = one_tet_mesh(vec![
            [0.0; 3],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
        ]);
        let a = tpfa_tets(&mesh).unwrap();
        assert_eq!((a.nrows(), a.nnz()), (1, 1));
        // Three right-angle faces: area 1/2, face centroid (1/3, 1/3, 0) at distance
        // √11 / 12 from (1/4, 1/4, 1/4); the slanted face: area √3 / 2 at distance √3 / 12.
        let expected =
            3.0 * 0.5 / (11f64.sqrt() / 12.0) + (3f64.sqrt() / 2.0) / (3f64.sqrt() / 12.0);
        assert!(
            (a.values()[0] - expected).abs() < 1e-14 * expected,
            "{:?}",
            a.values()
        );
        // The dual: 4 points all connected, each with its three boundary triangles.
        let d = tpfa_dual(&mesh).unwrap();
        assert_eq!((d.nrows(), d.nnz()), (4, 16));
        for r in 0..4 {
            let (_, vals) = d.row(r);
            let sum: f64 = vals.iter().sum();
            assert!(sum > 0.0 && vals.iter().enumerate().all(|(c, &v)| (c == r) == (v > 0.0)));
        }
    }

    #[test]
    fn dual_area_vectors_of_a_tet_sum_to_zero_per_point() {
        // Around each corner the dual faces plus the boundary pieces close: the three
        // edge area vectors at a corner, oriented out of it, sum to minus its share of the
        // outward boundary normals, which for a corner is -(sum of its 3 faces' normals)/3.
        let points = [
            [0.0, 0.0, 0.0],
            [1.0, 0.2, 0.0],
            [0.1, 1.0, 0.3],
            [0.2, 0.1, 1.1],
        ];
        let tet = [0u32, 1, 2, 3];
        for p in 0..4 {
            let mut total = [0.0; 3];
            for (a, b) in TET_EDGES {
                if a != p && b != p {
                    continue;
                }
                let q = a + b - p;
                let s = dual_area(&points, tet, a, b);
                let sign = if p < q { 1.0 } else { -1.0 };
                for d in 0..3 {
                    total[d] += sign * s[d];
                }
            }
            let mut boundary = [0.0; 3];
            for k in 0..4 {
                if k == p {
                    continue;
                }
                let f = tet_face(tet, k).map(|v| points[v as usize]);
                let n = cross(sub(f[1], f[0]), sub(f[2], f[0]));
                for d in 0..3 {
                    boundary[d] += n[d] / 6.0; // a third of the face's area vector (|n| / 2)
                }
            }
            for d in 0..3 {
                assert!(
                    (total[d] + boundary[d]).abs() < 1e-14,
                    "point {p}: {total:?} {boundary:?}"
                );
            }
        }
    }

    #[test]
    fn dual_area_table_lists_even_permutations() {
        // Identity points pick out the local indices: x_k = e_k scaled, and the result must
        // equal the formula with (c, d) chosen by counting inversions.
        let points = [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
        ];
        for tet in [[0u32, 1, 2, 3], [2, 0, 3, 1], [3, 2, 1, 0]] {
            for (a, b) in TET_EDGES {
                let (a, b) = if tet[a] < tet[b] { (a, b) } else { (b, a) };
                let mut rest: Vec<usize> = (0..4).filter(|&k| k != a && k != b).collect();
                let order = [a, b, rest[0], rest[1]];
                let inversions = (0..4)
                    .flat_map(|i| (i + 1..4).map(move |j| (i, j)))
                    .filter(|&(i, j)| order[i] > order[j])
                    .count();
                if inversions % 2 == 1 {
                    rest.swap(0, 1);
                }
                let x = |k: usize| points[tet[k] as usize];
                let m: [f64; 3] =
                    std::array::from_fn(|i| x(rest[0])[i] + x(rest[1])[i] - x(a)[i] - x(b)[i]);
                let want = cross(m, sub(x(rest[1]), x(rest[0]))).map(|v| v / 24.0);
                assert_eq!(dual_area(&points, tet, a, b), want);
                assert_eq!(dual_area(&points, tet, b, a), want);
            }
        }
    }

    #[test]
    fn degenerate_tets_are_named() {
        let mesh = one_tet_mesh(vec![
            [0.0; 3],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [1.0, 1.0, 0.0],
        ]);
        for e in [
            tpfa_tets(&mesh).err().unwrap(),
            tpfa_dual(&mesh).err().unwrap(),
        ] {
            assert!(e.to_string().contains("tetrahedron 0"), "{e}");
        }
        let mesh = one_tet_mesh(vec![
            [0.0; 3],
            [1.0, 0.0, 0.0],
            [0.0, f64::NAN, 0.0],
            [0.0, 0.0, 1.0],
        ]);
        assert!(tpfa_tets(&mesh).is_err());
        assert!(tpfa_tets(&Mesh::default())
            .err()
            .unwrap()
            .to_string()
            .contains("no tetrahedra"));
    }
}
