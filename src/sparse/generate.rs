//! Generators of structured test matrices: no downloads, any size, in seconds.
//!
//! | generator | rows | entries per row | values |
//! |---|---|---|---|
//! | [`poisson2d_5pt`]`(n)` | `n²` | ≤ 5 | 4 on the diagonal, −1 off |
//! | [`poisson3d_7pt`]`(n)` | `n³` | ≤ 7 | 6 on the diagonal, −1 off |
//! | [`poisson3d_27pt`]`(n)` | `n³` | ≤ 27 | 26 on the diagonal, −1 off |
//! | [`hdg_trace`]`(p, nx, ny, seed)` | `m (3 nx ny + nx + ny)`, `m = 4(p+1)` | `5m` (interior edge), `3m` (boundary edge) | random SPD blocks |
//! | [`dg_7block`]`(m, nx, ny, nz, seed)` | `m nx ny nz` | ≤ `7m` | random SPD blocks |
//!
//! The Poisson matrices are the finite-difference Laplacians with homogeneous Dirichlet
//! conditions, unknowns in lexicographic order (`x` fastest): symmetric, diagonally dominant,
//! row sums 0 in the interior and positive at the boundary, positive definite. The block
//! generators return a [`BlockPattern`] with the matrix, so a block format can be built
//! without detecting the blocks.
//!
//! Everything is filled straight into the CSR arrays, in parallel over chunks of rows: no
//! triplets, no sort. Peak memory is the matrix itself.

use std::ops::Range;

use rayon::prelude::*;

use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::{to_u32, Csr, RowStats, PAD};
mod block;

pub use block::{dg_7block, hdg_trace};

/// Which blocks of a block-sparse matrix are stored: the layout a block format (block ELL,
/// the DBF of HDG codes) is built from.
///
/// The matrix is square with `nblockrows()` block rows and as many block columns, each
/// block `block_size x block_size` and dense. Block row `b` lists its blocks in
/// `neighbours[b * slots_per_row .. (b + 1) * slots_per_row]`: the block column of each
/// stored block, or [`PAD`] for an unused slot.
///
/// ```text
///  slots_per_row = 5         slot:  0   1   2   3   4
///  block row 7 (interior):          7   3   6   8  12      5 blocks
///  block row 0 (boundary):          0   1   2  PAD PAD     3 blocks
/// ```
///
/// Invariants (checked against a matrix by [`validate`](Self::validate)): slot 0 of block
/// row `b` is `b` itself (the diagonal block); the other slots hold distinct block columns
/// or `PAD`; the generator documents their order. Scalar row `b * block_size + r` of the
/// matrix stores exactly the columns of the listed blocks, all `block_size` of each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockPattern {
    /// Rows (and columns) of each block.
    pub block_size: usize,
    /// Block slots per block row, padding included.
    pub slots_per_row: usize,
    /// `nblockrows x slots_per_row` block columns, row-major; [`PAD`] marks an unused slot.
    pub neighbours: Vec<u32>,
}

impl BlockPattern {
    /// Block rows: `neighbours.len() / slots_per_row`.
    pub fn nblockrows(&self) -> usize {
        self.neighbours
            .len()
            .checked_div(self.slots_per_row)
            .unwrap_or(0)
    }

    /// The slots of block row `b` (block columns or [`PAD`]).
    ///
    /// # Panics
    /// If `b >= nblockrows()`.
    pub fn block_row(&self, b: usize) -> &[u32] {
        &self.neighbours[b * self.slots_per_row..(b + 1) * self.slots_per_row]
    }

    /// Stored (non-padding) blocks.
    pub fn nblocks(&self) -> usize {
        self.neighbours.iter().filter(|&&c| c != PAD).count()
    }

    /// Checks the invariants of the type against the matrix `a`: dimensions, slot 0 on the
    /// diagonal, distinct in-range block columns, and every row storing exactly the columns
    /// of its listed blocks (every stored entry lies in a listed block, every listed block
    /// is fully stored).
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] naming the first block row or row that disagrees.
    pub fn validate<V: Element>(&self, a: &Csr<Cpu, V>) -> Result<()> {
        let invalid = |reason: String| {
            Err(Error::InvalidMatrix {
                format: "block pattern",
                reason,
            })
        };
        let (m, slots) = (self.block_size, self.slots_per_row);
        if m == 0 || slots == 0 {
            return invalid(format!(
                "block_size = {m} and slots_per_row = {slots} must both be positive"
            ));
        }
        if !self.neighbours.len().is_multiple_of(slots) {
            return invalid(format!(
                "{} neighbour entries are not a multiple of slots_per_row = {slots}",
                self.neighbours.len()
            ));
        }
        let nblockrows = self.nblockrows();
        if a.nrows() != nblockrows * m || a.ncols() != a.nrows() {
            return invalid(format!(
                "{nblockrows} block rows of size {m} need a {0} x {0} matrix, found {1} x {2}",
                nblockrows * m,
                a.nrows(),
                a.ncols()
            ));
        }
        let mut blocks: Vec<u32> = Vec::with_capacity(slots);
        for b in 0..nblockrows {
            let row = self.block_row(b);
            if row[0] as usize != b {
                return invalid(format!("block row {b}: slot 0 holds {}, not {b}", row[0]));
            }
            blocks.clear();
            blocks.extend(row.iter().copied().filter(|&c| c != PAD));
            blocks.sort_unstable();
            for w in blocks.windows(2) {
                if w[0] == w[1] {
                    return invalid(format!("block row {b}: block column {} repeats", w[0]));
                }
            }
            if let Some(&c) = blocks.last().filter(|&&c| c as usize >= nblockrows) {
                return invalid(format!(
                    "block row {b}: block column {c} is out of range 0..{nblockrows}"
                ));
            }
            for r in b * m..(b + 1) * m {
                let (cols, _) = a.row(r);
                let expected = blocks
                    .iter()
                    .flat_map(|&c| (c as usize * m..(c as usize + 1) * m).map(|j| j as u32));
                if cols.len() != blocks.len() * m || !cols.iter().copied().eq(expected) {
                    return invalid(format!(
                        "row {r} (block row {b}) stores {} entries that are not the {} \
                         columns of its blocks {blocks:?}",
                        cols.len(),
                        blocks.len() * m
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The 2D Laplacian on an `n x n` grid, 5-point stencil: 4 on the diagonal, −1 for each
/// of the ≤ 4 grid neighbours; `n²` rows, `5n² − 4n` entries, row `x + n y`.
///
/// # Errors
/// [`Error::InvalidMatrix`] if the size overflows 32-bit indices.
pub fn poisson2d_5pt(n: usize) -> Result<Csr<Cpu, f64>> {
    let offsets = [(0, -1, 0), (-1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0)];
    grid_stencil([n, n, usize::from(n > 0)], &offsets, 4.0)
}

/// The 3D Laplacian on an `n x n x n` grid, 7-point stencil: 6 on the diagonal, −1 for
/// each of the ≤ 6 face neighbours; `n³` rows, `7n³ − 6n²` entries, row `x + n (y + n z)`.
///
/// # Errors
/// [`Error::InvalidMatrix`] if the size overflows 32-bit indices (`n ≥ 856`).
pub fn poisson3d_7pt(n: usize) -> Result<Csr<Cpu, f64>> {
    let offsets = [
        (0, 0, -1),
        (0, -1, 0),
        (-1, 0, 0),
        (0, 0, 0),
        (1, 0, 0),
        (0, 1, 0),
        (0, 0, 1),
    ];
    grid_stencil([n, n, n], &offsets, 6.0)
}

/// The 3D 27-point Laplacian on an `n x n x n` grid: 26 on the diagonal, −1 for each of
/// the ≤ 26 neighbours sharing a face, an edge or a corner; `n³` rows, `(3n − 2)³` entries
/// (for `n ≥ 1`), row `x + n (y + n z)`.
///
/// # Errors
/// [`Error::InvalidMatrix`] if the size overflows 32-bit indices (`n ≥ 546`).
pub fn poisson3d_27pt(n: usize) -> Result<Csr<Cpu, f64>> {
    let mut offsets = Vec::with_capacity(27);
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                offsets.push((dx, dy, dz));
            }
        }
    }
    grid_stencil([n, n, n], &offsets, 26.0)
}

/// A stencil matrix on an `nx x ny x nz` grid, unknowns lexicographic (`x` fastest):
/// `center` on the diagonal and −1 for every in-grid offset. `offsets` are `(dx, dy, dz)`
/// in `{-1, 0, 1}³`, sorted by `(dz, dy, dx)` so that columns come out increasing.
fn grid_stencil(dims: [usize; 3], offsets: &[(i8, i8, i8)], center: f64) -> Result<Csr<Cpu, f64>> {
    let [nx, ny, nz] = dims;
    let nrows = nx
        .checked_mul(ny)
        .and_then(|p| p.checked_mul(nz))
        .ok_or_else(|| Error::InvalidMatrix {
            format: "CSR",
            reason: format!("a {nx} x {ny} x {nz} grid has more than usize::MAX unknowns"),
        })?;
    to_u32(nrows, "CSR", "the number of grid unknowns")?;
    // Bit k of the mask: delta k - 1 keeps the coordinate in 0..len.
    let axis_mask = |c: usize, len: usize| 0b010 | u8::from(c > 0) | (u8::from(c + 1 < len) << 2);
    let masks = move |i: usize| {
        let (x, y, z) = (i % nx, (i / nx) % ny, i / (nx * ny));
        (axis_mask(x, nx), axis_mask(y, ny), axis_mask(z, nz))
    };
    let inside = |(mx, my, mz): (u8, u8, u8), &(dx, dy, dz): &(i8, i8, i8)| {
        let bit = |mask: u8, d: i8| (mask >> (d + 1) as u32) & 1;
        (bit(mx, dx) & bit(my, dy) & bit(mz, dz)) == 1
    };
    let row_len = |i: usize| {
        let m = masks(i);
        offsets.iter().filter(|o| inside(m, o)).count()
    };
    let plane = (nx * ny) as i64;
    build_csr(
        nrows,
        nrows,
        1,
        row_len,
        |rows: Range<usize>, col_idx: &mut [u32], values: &mut [f64]| {
            let mut k = 0;
            for i in rows {
                let m = masks(i);
                for o in offsets.iter().filter(|o| inside(m, o)) {
                    let (dx, dy, dz) = (o.0 as i64, o.1 as i64, o.2 as i64);
                    col_idx[k] = (i as i64 + dx + nx as i64 * dy + plane * dz) as u32;
                    values[k] = if *o == (0, 0, 0) { center } else { -1.0 };
                    k += 1;
                }
            }
        },
    )
}

/// Builds a CSR matrix from its row lengths and a filler, in parallel: `row_len(i)` gives
/// the length of row `i`; `fill(rows, col_idx, values)` writes the entries of the rows
/// `rows` (sorted, distinct columns) into the slices, which start at the first of them.
/// Chunks hold whole multiples of `unit` rows.
///
/// The arrays are allocated zeroed (lazily, by the OS) and first touched by the filling
/// threads, so building costs one pass over the matrix.
pub(crate) fn build_csr<V: Element>(
    nrows: usize,
    ncols: usize,
    unit: usize,
    row_len: impl Fn(usize) -> usize + Sync,
    fill: impl Fn(Range<usize>, &mut [u32], &mut [V]) + Sync,
) -> Result<Csr<Cpu, V>> {
    to_u32(nrows, "CSR", "nrows")?;
    to_u32(ncols, "CSR", "ncols")?;
    crate::limits::check_host_items(
        format_args!("the row pointers of a {nrows}-row matrix"),
        nrows as u64 + 1,
        4,
    )?;
    let mut row_ptr = vec![0u32; nrows + 1];
    row_ptr[1..]
        .par_iter_mut()
        .enumerate()
        .with_min_len(4096)
        .for_each(|(i, len)| *len = row_len(i) as u32);
    let mut total = 0u64;
    for p in row_ptr[1..].iter_mut() {
        total += u64::from(*p);
        *p = total as u32;
    }
    let nnz = usize::try_from(total).unwrap_or(usize::MAX);
    to_u32(nnz, "CSR", "nnz")?;
    crate::limits::check_host_items(
        format_args!("a {nrows} x {ncols} matrix with {nnz} entries"),
        nnz as u64,
        4 + V::DTYPE.size() as u64,
    )?;
    let mut col_idx = vec![0u32; nnz];
    let mut values = vec![V::default(); nnz];
    fill_rows(&row_ptr, &mut col_idx, &mut values, unit, fill);
    debug_assert!(crate::sparse::csr::validate(nrows, ncols, &row_ptr, &col_idx, nnz).is_ok());
    let stats = RowStats::from_row_ptr(&row_ptr, ncols);
    Ok(Csr {
        nrows,
        ncols,
        row_ptr,
        col_idx,
        values,
        stats,
        kernel: crate::sparse::CsrKernel::Auto,
        backend: Cpu::new(),
    })
}

/// Splits `col_idx` and `values` (laid out by `row_ptr`) into chunks of whole multiples of
/// `unit` rows (see [`row_chunks`]) and runs `fill` on the chunks in parallel.
pub(crate) fn fill_rows<V: Send>(
    row_ptr: &[u32],
    col_idx: &mut [u32],
    values: &mut [V],
    unit: usize,
    fill: impl Fn(Range<usize>, &mut [u32], &mut [V]) + Sync,
) {
    // Both splits cut at the same rows: the cuts depend on row_ptr and unit only.
    row_chunks(row_ptr, col_idx, unit)
        .into_par_iter()
        .zip(row_chunks(row_ptr, values, unit))
        .for_each(|((rows, c), (_, v))| fill(rows, c, v));
}

/// Splits `data` (laid out by `row_ptr`) into chunks of whole multiples of `unit` rows,
/// about [`CHUNK_ENTRIES`] entries each: the work items of a parallel pass over the rows.
pub(crate) fn row_chunks<'s, T>(
    row_ptr: &[u32],
    mut data: &'s mut [T],
    unit: usize,
) -> Vec<(Range<usize>, &'s mut [T])> {
    let nrows = row_ptr.len() - 1;
    let unit = unit.max(1);
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < nrows {
        let mut end = (start + unit).min(nrows);
        while end < nrows && ((row_ptr[end] - row_ptr[start]) as usize) < CHUNK_ENTRIES {
            end = (end + unit).min(nrows);
        }
        let (chunk, rest) =
            std::mem::take(&mut data).split_at_mut((row_ptr[end] - row_ptr[start]) as usize);
        chunks.push((start..end, chunk));
        data = rest;
        start = end;
    }
    chunks
}

/// Entries per parallel chunk of [`fill_rows`]: large enough to amortise the task,
/// small enough to balance two to a hundred threads on a million-row matrix.
const CHUNK_ENTRIES: usize = 1 << 15;

/// A seedable stream of uniform numbers for one `(a, b)` pair, independent of the order in
/// which pairs are visited: the same `(seed, a, b)` gives the same numbers on any thread.
pub(crate) struct PairStream(u64);

impl PairStream {
    const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

    pub(crate) fn new(seed: u64, a: u64, b: u64) -> Self {
        let s = mix(seed.wrapping_add(Self::GOLDEN));
        let s = mix(s ^ a.wrapping_mul(0xd1b5_4a32_d192_ed03));
        PairStream(mix(s ^ b.wrapping_mul(0xabc9_8388_fb8f_ac03)))
    }

    /// Uniform in `[-1, 1)`.
    pub(crate) fn next_signed(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(Self::GOLDEN);
        (mix(self.0) >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
    }
}

/// The SplitMix64 finaliser.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A random permutation of `0..n` (Fisher–Yates), for shuffling test matrices.
#[cfg(test)]
pub(crate) fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = crate::random::Rng::new(seed);
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(a: &Csr<Cpu, f64>) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
        for (i, row) in d.iter_mut().enumerate() {
            let (cols, vals) = a.row(i);
            for (&c, &v) in cols.iter().zip(vals) {
                row[c as usize] = v;
            }
        }
        d
    }

    #[test]
    fn poisson_small_cases_by_hand() {
        let a = poisson2d_5pt(2).unwrap();
        assert_eq!(
            dense(&a),
            [
                [4.0, -1.0, -1.0, 0.0],
                [-1.0, 4.0, 0.0, -1.0],
                [-1.0, 0.0, 4.0, -1.0],
                [0.0, -1.0, -1.0, 4.0]
            ]
        );
        let a = poisson3d_7pt(1).unwrap();
        assert_eq!((a.nrows(), a.values()), (1, &[6.0][..]));
        for n in 0..6 {
            let a = poisson3d_7pt(n).unwrap();
            assert_eq!(a.nnz(), 7 * n * n * n - 6 * n * n, "n = {n}");
            let b = poisson3d_27pt(n).unwrap();
            let expected = if n == 0 { 0 } else { (3 * n - 2).pow(3) };
            assert_eq!(b.nnz(), expected, "n = {n}");
            let c = poisson2d_5pt(n).unwrap();
            assert_eq!(c.nnz(), 5 * n * n - 4 * n, "n = {n}");
            for m in [&a, &b, &c] {
                crate::sparse::csr::validate(
                    m.nrows(),
                    m.ncols(),
                    m.row_ptr(),
                    m.col_idx(),
                    m.nnz(),
                )
                .unwrap();
            }
        }
    }

    #[test]
    fn stencil_entries_are_the_grid_neighbours() {
        let n = 4;
        let a = poisson3d_27pt(n).unwrap();
        let d = dense(&a);
        let coord = |i: usize| ((i % n) as i64, ((i / n) % n) as i64, (i / (n * n)) as i64);
        for (i, row) in d.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let ((x, y, z), (u, w, t)) = (coord(i), coord(j));
                let cheb = (x - u).abs().max((y - w).abs()).max((z - t).abs());
                let expected = match cheb {
                    0 => 26.0,
                    1 => -1.0,
                    _ => 0.0,
                };
                assert_eq!(v, expected, "({i}, {j})");
            }
        }
    }

    #[test]
    fn fill_rows_respects_units() {
        // 3 rows per unit, rows of 5000 entries: chunks must end on multiples of 3 rows.
        let nrows = 31;
        let row_ptr: Vec<u32> = (0..=nrows as u32).map(|i| i * 5000).collect();
        let nnz = row_ptr[nrows] as usize;
        let (mut c, mut v) = (vec![0u32; nnz], vec![0u32; nnz]);
        fill_rows(&row_ptr, &mut c, &mut v, 3, |rows, c, v| {
            assert!(rows.start % 3 == 0 && (rows.end % 3 == 0 || rows.end == nrows));
            assert_eq!(c.len(), rows.len() * 5000);
            for (k, i) in rows.clone().enumerate() {
                c[k * 5000..(k + 1) * 5000].fill(i as u32);
                v[k * 5000] = rows.start as u32;
            }
        });
        for i in 0..nrows {
            assert!(c[i * 5000..(i + 1) * 5000].iter().all(|&x| x == i as u32));
        }
    }

    #[test]
    fn pair_stream_is_reproducible_and_centered() {
        let mut a = PairStream::new(7, 3, 5);
        let mut b = PairStream::new(7, 3, 5);
        let mut c = PairStream::new(7, 5, 3);
        let (xs, ys, zs): (Vec<f64>, Vec<f64>, Vec<f64>) = (0..1000)
            .map(|_| (a.next_signed(), b.next_signed(), c.next_signed()))
            .fold((vec![], vec![], vec![]), |mut acc, (x, y, z)| {
                acc.0.push(x);
                acc.1.push(y);
                acc.2.push(z);
                acc
            });
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        assert!(xs.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / 1000.0;
        assert!(mean.abs() < 0.1, "{mean}");
    }
}
