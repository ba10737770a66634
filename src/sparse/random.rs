//! Random sparse matrices for tests and checks, with the awkward cases built in.

use crate::backend::Cpu;
use crate::error::Result;
use crate::random::Rng;
use crate::scalar::Element;
use crate::sparse::Csr;

/// The shape of a random sparsity pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomPattern {
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
    /// Row lengths are uniform in `min_len..=max_len` (capped at `ncols`).
    pub min_len: usize,
    /// See `min_len`.
    pub max_len: usize,
    /// Every `empty_every`-th row is empty (0: none).
    pub empty_every: usize,
    /// One row (the middle one) with this many entries (capped at `ncols`); 0: none.
    pub long_row: usize,
    /// Whether every nonempty row stores its diagonal entry (square matrices).
    pub diagonal: bool,
    /// Columns within this distance of the row (`|column - row| <= band`: at most `2 band + 1`
    /// diagonals, as a structured grid's matrix); 0: anywhere.
    pub band: usize,
}

impl RandomPattern {
    /// `nrows x ncols` with 0..=8 entries per row, every 17th row empty, one row of
    /// `min(ncols, 1000)` entries, and diagonals.
    pub fn awkward(nrows: usize, ncols: usize) -> Self {
        RandomPattern {
            nrows,
            ncols,
            min_len: 0,
            max_len: 8,
            empty_every: 17,
            long_row: ncols.min(1000),
            diagonal: true,
            band: 0,
        }
    }

    /// [`awkward`](Self::awkward) within a band: 0..=8 entries per row with
    /// `|column - row| <= band`, every 17th row empty, diagonals, no long row.
    pub fn banded(nrows: usize, ncols: usize, band: usize) -> Self {
        RandomPattern {
            long_row: 0,
            band,
            ..Self::awkward(nrows, ncols)
        }
    }

    /// Uniform row lengths in `min_len..=max_len`, nothing else.
    pub fn uniform(nrows: usize, ncols: usize, min_len: usize, max_len: usize) -> Self {
        RandomPattern {
            nrows,
            ncols,
            min_len,
            max_len,
            empty_every: 0,
            long_row: 0,
            diagonal: false,
            band: 0,
        }
    }
}

/// A random CSR matrix with the given pattern and values uniform in `[-1, 1)` (diagonal
/// entries, when requested, in `[row length, row length + 1)` so that square matrices are
/// diagonally dominant).
///
/// # Errors
/// [`Error::InvalidMatrix`](crate::error::Error::InvalidMatrix) if the size overflows 32-bit indices.
pub fn random_csr<V: Element>(pattern: &RandomPattern, seed: u64) -> Result<Csr<Cpu, V>> {
    let p = pattern;
    let mut rng = Rng::new(seed);
    // The most the pattern can hold: every row at its longest, plus the long row.
    let most = (p.nrows as u64)
        .saturating_mul(p.max_len.max(p.min_len) as u64 + u64::from(p.diagonal))
        .saturating_add(p.long_row as u64);
    crate::limits::check_host_items(
        format_args!(
            "a random {} x {} matrix of up to {most} entries",
            p.nrows, p.ncols
        ),
        most,
        4 + V::DTYPE.size() as u64,
    )?;
    let mut row_ptr = Vec::with_capacity(p.nrows + 1);
    let mut col_idx = Vec::new();
    let mut values = Vec::new();
    row_ptr.push(0u32);
    let mut cols: Vec<u32> = Vec::new();
    for r in 0..p.nrows {
        cols.clear();
        let empty = p.empty_every > 0 && r % p.empty_every == p.empty_every - 1;
        if !empty && p.ncols > 0 {
            let len = if p.long_row > 0 && r == p.nrows / 2 {
                p.long_row
            } else {
                p.min_len + rng.below(p.max_len.saturating_sub(p.min_len) + 1)
            }
            .min(p.ncols);
            if p.diagonal && r < p.ncols {
                cols.push(r as u32);
            }
            // The columns a row may take: all, or those within the band.
            let (lo, hi) = if p.band > 0 {
                (r.saturating_sub(p.band), (r + p.band + 1).min(p.ncols))
            } else {
                (0, p.ncols)
            };
            if lo >= hi {
                // A row of a wide band below the last column: none.
            } else if p.band > 0 {
                let width = hi - lo;
                for _ in 0..len.min(width) {
                    cols.push((lo + rng.below(width)) as u32);
                }
            } else if len * 2 > p.ncols {
                // Dense-ish row: choose by a random walk over all columns.
                let step = p.ncols as f64 / len as f64;
                cols.extend((0..len).map(|k| ((k as f64 * step) as usize).min(p.ncols - 1) as u32));
            } else {
                while cols.len() < len {
                    cols.push(rng.below(p.ncols) as u32);
                }
            }
            cols.sort_unstable();
            cols.dedup();
        }
        let len = cols.len();
        for &c in &cols {
            let v = if p.diagonal && c as usize == r {
                len as f64 + rng.uniform()
            } else {
                rng.range(-1.0, 1.0)
            };
            col_idx.push(c);
            values.push(V::from_f64(v));
        }
        row_ptr.push(crate::sparse::to_u32(col_idx.len(), "CSR", "nnz")?);
    }
    Csr::new(p.nrows, p.ncols, row_ptr, col_idx, values)
}
