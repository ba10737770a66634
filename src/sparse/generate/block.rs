//! Block-structured generators: HDG trace matrices (edges of a triangle mesh) and DG
//! matrices (elements of a hexahedral grid coupled through their faces).

use rayon::prelude::*;

use super::{build_csr, BlockPattern, PairStream};
use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::random::Rng;
use crate::sparse::{Csr, PAD};

/// Block slots of an HDG trace block row: the edge and the two other edges of each of its
/// two triangles.
const HDG_SLOTS: usize = 5;

/// Block slots of a DG block row: the element and its six face neighbours.
const DG_SLOTS: usize = 7;

/// An HDG-like trace matrix of degree `p` on a triangulated `nx x ny` rectangle, with its
/// [`BlockPattern`].
///
/// The mesh: `nx x ny` unit squares, each split into two triangles along one of its
/// diagonals, chosen at random from `seed` (a mild perturbation of the structured mesh:
/// vertex valences vary from 2 to 8 as in an unstructured mesh). Its
/// `3 nx ny + nx + ny` edges are the block rows; `2 (nx + ny)` of them lie on the boundary.
/// Edges are numbered vertex by vertex (vertices lexicographic, `x` fastest), each vertex
/// `(i, j)` owning its edge to `(i+1, j)`, to `(i, j+1)` and the diagonal of square
/// `(i, j)`, in that order.
///
/// Each edge carries `m = 4(p+1)` unknowns (`p + 1` nodes, 4 components: the compressible
/// Navier–Stokes trace of the DBF paper), numbered edge by edge. Block row `e` couples
/// `e` with the two other edges of each triangle adjacent to `e`: 5 blocks for an interior
/// edge, 3 for a boundary edge. In the pattern, slot 0 is `e` and slots 1.. hold the other
/// edges in increasing order, [`PAD`] last.
///
/// Values: dense random blocks with entries uniform in `[-1, 1)`, `A[f, e] = A[e, f]ᵀ`, and
/// the diagonal set to the sum of the magnitudes of the rest of its row plus a number in
/// `[1, 2)`: symmetric, strictly diagonally dominant, hence positive definite.
///
/// `nx = 0` or `ny = 0` gives an empty matrix.
///
/// # Errors
/// [`Error::InvalidMatrix`] if the size overflows 32-bit indices.
pub fn hdg_trace(
    p: usize,
    nx: usize,
    ny: usize,
    seed: u64,
) -> Result<(Csr<Cpu, f64>, BlockPattern)> {
    let m = p
        .checked_add(1)
        .and_then(|q| q.checked_mul(4))
        .ok_or_else(|| too_large(format!("degree {p}")))?;
    // The matrix: up to HDG_SLOTS blocks of m² values (f64 and a u32 column) per edge.
    let edges = (nx as u64)
        .saturating_mul(ny as u64)
        .saturating_mul(3)
        .saturating_add(nx as u64)
        .saturating_add(ny as u64);
    crate::limits::check_host_items(
        format_args!("an HDG-like trace matrix of degree {p} on {nx} x {ny} squares"),
        edges
            .saturating_mul(HDG_SLOTS as u64)
            .saturating_mul((m as u64).saturating_mul(m as u64)),
        12,
    )?;
    let pattern = BlockPattern {
        block_size: m,
        slots_per_row: HDG_SLOTS,
        neighbours: hdg_edge_neighbours(nx, ny, seed)?,
    };
    Ok((random_block_csr(&pattern, seed)?, pattern))
}

/// The slot table of [`hdg_trace`]'s mesh.
fn hdg_edge_neighbours(nx: usize, ny: usize, seed: u64) -> Result<Vec<u32>> {
    if nx == 0 || ny == 0 {
        return Ok(Vec::new());
    }
    let nedges = nx
        .checked_mul(ny)
        .and_then(|c| c.checked_mul(3))
        .and_then(|e| e.checked_add(nx + ny))
        .filter(|&e| u32::try_from(e).is_ok())
        .ok_or_else(|| too_large(format!("a {nx} x {ny} triangle mesh")))?;
    // Edge numbers: horizontal (i, j)-(i+1, j), vertical (i, j)-(i, j+1), diagonal of
    // square (i, j); owned by vertex (i, j) and numbered in that order.
    let mut horizontal = vec![0u32; nx * (ny + 1)];
    let mut vertical = vec![0u32; (nx + 1) * ny];
    let mut diagonal = vec![0u32; nx * ny];
    let mut next = 0u32;
    for j in 0..=ny {
        for i in 0..=nx {
            if i < nx {
                horizontal[j * nx + i] = next;
                next += 1;
            }
            if j < ny {
                vertical[j * (nx + 1) + i] = next;
                next += 1;
            }
            if i < nx && j < ny {
                diagonal[j * nx + i] = next;
                next += 1;
            }
        }
    }
    debug_assert_eq!(next as usize, nedges);
    let mut neighbours = vec![PAD; nedges * HDG_SLOTS];
    let mut used = vec![1u8; nedges];
    for (e, row) in neighbours.chunks_exact_mut(HDG_SLOTS).enumerate() {
        row[0] = e as u32;
    }
    let mut rng = Rng::new(seed);
    for j in 0..ny {
        for i in 0..nx {
            let bottom = horizontal[j * nx + i];
            let top = horizontal[(j + 1) * nx + i];
            let left = vertical[j * (nx + 1) + i];
            let right = vertical[j * (nx + 1) + i + 1];
            let diag = diagonal[j * nx + i];
            // "/" joins (i, j) to (i+1, j+1); "\" joins (i+1, j) to (i, j+1).
            let triangles = if rng.next_u64() & 1 == 0 {
                [[bottom, right, diag], [left, top, diag]]
            } else {
                [[bottom, left, diag], [right, top, diag]]
            };
            for t in triangles {
                for (k, &e) in t.iter().enumerate() {
                    let e = e as usize;
                    for &f in [t[(k + 1) % 3], t[(k + 2) % 3]].iter() {
                        // An edge lies in at most 2 triangles, so at most 4 others.
                        neighbours[e * HDG_SLOTS + used[e] as usize] = f;
                        used[e] += 1;
                    }
                }
            }
        }
    }
    for row in neighbours.chunks_exact_mut(HDG_SLOTS) {
        row[1..].sort_unstable();
    }
    Ok(neighbours)
}

/// A DG-like matrix on an `nx x ny x nz` grid of hexahedra with `block_size` unknowns per
/// element, with its [`BlockPattern`].
///
/// Block row `E` (elements lexicographic, `x` fastest) couples `E` with its ≤ 6 face
/// neighbours. Pattern slots: 0 = `E`, then the neighbours across the faces
/// `−x, +x, −y, +y, −z, +z`, [`PAD`] where the face is on the domain boundary. Values as in
/// [`hdg_trace`]: dense random blocks, symmetric, strictly diagonally dominant.
///
/// `nx`, `ny` or `nz` = 0 gives an empty matrix.
///
/// # Errors
/// [`Error::InvalidArgument`] if `block_size = 0`; [`Error::InvalidMatrix`] if the size
/// overflows 32-bit indices.
pub fn dg_7block(
    block_size: usize,
    nx: usize,
    ny: usize,
    nz: usize,
    seed: u64,
) -> Result<(Csr<Cpu, f64>, BlockPattern)> {
    if block_size == 0 {
        return Err(Error::InvalidArgument {
            op: "dg_7block",
            name: "block_size",
            reason: "must be at least 1".into(),
        });
    }
    let nel = nx
        .checked_mul(ny)
        .and_then(|a| a.checked_mul(nz))
        .filter(|&n| u32::try_from(n).is_ok())
        .ok_or_else(|| too_large(format!("a {nx} x {ny} x {nz} grid")))?;
    // The matrix: nel·7 blocks of block_size² values (f64 and a u32 column each).
    crate::limits::check_host_items(
        format_args!("a {nx} x {ny} x {nz} grid of blocks of size {block_size}"),
        (nel as u64)
            .saturating_mul(DG_SLOTS as u64)
            .saturating_mul((block_size as u64).saturating_mul(block_size as u64)),
        12,
    )?;
    let mut neighbours = vec![PAD; nel * DG_SLOTS];
    neighbours
        .par_chunks_mut(DG_SLOTS)
        .enumerate()
        .with_min_len(1024)
        .for_each(|(e, row)| {
            let (x, y, z) = (e % nx, (e / nx) % ny, e / (nx * ny));
            let (sx, sy) = (1, nx);
            let sz = nx * ny;
            let faces = [
                (x > 0, e.wrapping_sub(sx)),
                (x + 1 < nx, e + sx),
                (y > 0, e.wrapping_sub(sy)),
                (y + 1 < ny, e + sy),
                (z > 0, e.wrapping_sub(sz)),
                (z + 1 < nz, e + sz),
            ];
            row[0] = e as u32;
            for (slot, (inside, f)) in row[1..].iter_mut().zip(faces) {
                if inside {
                    *slot = f as u32;
                }
            }
        });
    let pattern = BlockPattern {
        block_size,
        slots_per_row: DG_SLOTS,
        neighbours,
    };
    Ok((random_block_csr(&pattern, seed)?, pattern))
}

/// The CSR matrix of a structurally symmetric block pattern (slot 0 on the diagonal) with
/// random symmetric, strictly diagonally dominant values.
///
/// Block `(e, f)` comes from a stream keyed by `(seed, min(e, f), max(e, f))`, read
/// transposed on the side `e > f`, so each block row is filled independently of the others
/// and the matrix is exactly symmetric.
fn random_block_csr(pattern: &BlockPattern, seed: u64) -> Result<Csr<Cpu, f64>> {
    let m = pattern.block_size;
    let nblockrows = pattern.nblockrows();
    let n = nblockrows
        .checked_mul(m)
        .ok_or_else(|| too_large(format!("{nblockrows} block rows of size {m}")))?;
    let stored = |b: usize| pattern.block_row(b).iter().filter(|&&c| c != PAD).count();
    build_csr(
        n,
        n,
        m,
        |i| stored(i / m) * m,
        |rows, col_idx, values| {
            let mut blocks: Vec<u32> = Vec::with_capacity(pattern.slots_per_row);
            let (mut raw, mut block) = (vec![0.0; m * m], vec![0.0; m * m]);
            let mut offset = 0;
            // Chunks hold whole block rows: `fill_rows` cuts at multiples of m.
            for b in rows.start / m..rows.end / m {
                blocks.clear();
                blocks.extend(pattern.block_row(b).iter().copied().filter(|&c| c != PAD));
                blocks.sort_unstable();
                let width = blocks.len() * m;
                let cols = &mut col_idx[offset..offset + m * width];
                let vals = &mut values[offset..offset + m * width];
                offset += m * width;
                let mut diagonal_slot = 0;
                for (s, &f) in blocks.iter().enumerate() {
                    let (e, f) = (b as u64, u64::from(f));
                    let mut stream = PairStream::new(seed, e.min(f), e.max(f));
                    raw.iter_mut().for_each(|x| *x = stream.next_signed());
                    for r in 0..m {
                        for c in 0..m {
                            block[r * m + c] = match e.cmp(&f) {
                                std::cmp::Ordering::Less => raw[r * m + c],
                                std::cmp::Ordering::Greater => raw[c * m + r],
                                std::cmp::Ordering::Equal => raw[r.min(c) * m + r.max(c)],
                            };
                        }
                    }
                    if e == f {
                        diagonal_slot = s;
                    }
                    let first_col = f as usize * m;
                    for r in 0..m {
                        let at = r * width + s * m;
                        vals[at..at + m].copy_from_slice(&block[r * m..(r + 1) * m]);
                        for (c, col) in cols[at..at + m].iter_mut().enumerate() {
                            *col = (first_col + c) as u32;
                        }
                    }
                }
                // Diagonal dominance: the diagonal block's own diagonal holds a fresh number
                // in [-1, 1), mapped to [1, 2) above the magnitude sum of the rest of the row.
                for r in 0..m {
                    let row = &mut vals[r * width..(r + 1) * width];
                    let d = diagonal_slot * m + r;
                    let spread = row[d];
                    row[d] = 0.0;
                    let off: f64 = row.iter().map(|v| v.abs()).sum();
                    row[d] = off + 1.5 + 0.5 * spread;
                }
            }
        },
    )
}

fn too_large(what: String) -> Error {
    Error::InvalidMatrix {
        format: "CSR",
        reason: format!("{what} has too many unknowns for 32-bit indices"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdg_small_mesh_counts() {
        // 1 x 1 square: 5 edges, 4 on the boundary, the diagonal interior.
        let (a, pattern) = hdg_trace(0, 1, 1, 3).unwrap();
        assert_eq!(pattern.nblockrows(), 5);
        assert_eq!((a.nrows(), pattern.block_size), (20, 4));
        let counts: Vec<usize> = (0..5)
            .map(|e| pattern.block_row(e).iter().filter(|&&c| c != PAD).count())
            .collect();
        assert_eq!(counts.iter().filter(|&&c| c == 5).count(), 1);
        assert_eq!(counts.iter().filter(|&&c| c == 3).count(), 4);
        pattern.validate(&a).unwrap();
        assert!(hdg_trace(2, 0, 4, 1).unwrap().0.nrows() == 0);
    }

    #[test]
    fn dg_slots_follow_faces() {
        let (a, pattern) = dg_7block(2, 3, 2, 2, 9).unwrap();
        // Element 1 = (1, 0, 0): -x 0, +x 2, -y PAD, +y 4, -z PAD, +z 7.
        assert_eq!(pattern.block_row(1), &[1, 0, 2, PAD, 4, PAD, 7]);
        pattern.validate(&a).unwrap();
        assert!(dg_7block(0, 2, 2, 2, 1).is_err());
        assert_eq!(dg_7block(3, 2, 0, 2, 1).unwrap().0.nnz(), 0);
    }

    #[test]
    fn validate_rejects_broken_patterns() {
        let (a, pattern) = dg_7block(2, 2, 2, 1, 5).unwrap();
        let mut wrong_self = pattern.clone();
        wrong_self.neighbours[0] = 1;
        assert!(wrong_self.validate(&a).is_err());
        let mut missing = pattern.clone();
        // Drop a stored block: its entries are then outside every listed block.
        let slot = missing.neighbours[1..7]
            .iter()
            .position(|&c| c != PAD)
            .unwrap();
        missing.neighbours[1 + slot] = PAD;
        let e = missing.validate(&a).unwrap_err().to_string();
        assert!(e.contains("row 0"), "{e}");
        let mut extra = pattern.clone();
        let slot = extra.neighbours[1..7]
            .iter()
            .position(|&c| c == PAD)
            .unwrap();
        extra.neighbours[1 + slot] = 3; // element 3 = (1, 1, 0) is not a face neighbour of 0
        assert!(extra.validate(&a).is_err());
        let mut repeated = pattern;
        let slot = repeated.neighbours[1..7]
            .iter()
            .position(|&c| c == PAD)
            .unwrap();
        repeated.neighbours[1 + slot] = repeated.neighbours[1..7]
            .iter()
            .copied()
            .find(|&c| c != PAD)
            .unwrap();
        assert!(repeated
            .validate(&a)
            .unwrap_err()
            .to_string()
            .contains("repeats"));
    }
}
