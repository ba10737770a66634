//! Reordering of sparse matrices: permutations, Cuthill–McKee, row-length sorts, and the
//! bandwidth and profile that measure the result.
//!
//! A reordering is a [`Permutation`] `p` in new-to-old form: position `i` of the new order
//! holds old index `p[i]`. A symmetric permutation `B = P A Pᵀ` ([`permute_symmetric`])
//! renumbers rows and columns together, so that `B[i, j] = A[p[i], p[j]]`, and solving
//! `A x = b` becomes `B (P x) = P b`:
//!
//! ```text
//!  b ──apply_to_slice──▶ P b ──solve with B──▶ P x ──unapply──▶ x
//! ```
//!
//! A row permutation ([`permute_rows`]) reorders only the rows, `B[i, :] = A[p[i], :]`: the
//! product `B x` is `P (A x)`, and `x` stays in the old numbering.
//!
//! | ordering | what it does | used by |
//! |---|---|---|
//! | [`cuthill_mckee`], [`reverse_cuthill_mckee`] | breadth first from a pseudo-peripheral node: small bandwidth, neighbouring rows touch neighbouring entries of `x` | Staircase SELL; any SpMV on a badly numbered mesh |
//! | [`sort_rows_by_length`] | stable sort of all rows by length | Staircase SELL (ascending, after Cuthill–McKee) |
//! | [`sort_rows_by_length_in_windows`] | stable sort, longest first, inside windows of σ rows | SELL-C-σ |
//!
//! ```
//! use galerkin::sparse::generate::poisson2d_5pt;
//! use galerkin::sparse::reorder::{bandwidth, permute_symmetric, reverse_cuthill_mckee, Permutation};
//!
//! let a = poisson2d_5pt(30)?;
//! // Scramble the numbering, then recover a banded one.
//! let scrambled = permute_symmetric(&a, &Permutation::new((0..900).map(|i| (i * 7) % 900).collect())?)?;
//! let rcm = reverse_cuthill_mckee(&scrambled)?;
//! let b = permute_symmetric(&scrambled, &rcm)?;
//! assert!(bandwidth(&b) <= 30 && bandwidth(&scrambled) > 600);
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::fmt;

use rayon::prelude::*;

use crate::backend::Cpu;
use crate::error::{check_len, Error, Result};
use crate::scalar::Element;
use crate::sparse::generate::build_csr;
use crate::sparse::Csr;

mod cuthill_mckee;
mod permutation;

pub use cuthill_mckee::{cuthill_mckee, reverse_cuthill_mckee};
pub use permutation::Permutation;

/// The direction of a row-length sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthOrder {
    /// Shortest rows first: the steps of Staircase SELL, which grow in length so that the
    /// padded rows of the last, longest step sit at the end of the arrays.
    Ascending,
    /// Longest rows first: SELL-C-σ, and load balance when rows are handed out in order.
    Descending,
}

/// The row permutation that sorts the rows of `a` by length in the given direction.
///
/// The sort is stable — rows of equal length keep their current relative order, which is
/// what preserves a Cuthill–McKee order inside each length group — and takes `O(n + d)`
/// time for the longest row length `d` (a counting sort). There is no unstable variant:
/// it would be no faster.
pub fn sort_rows_by_length<V: Element>(a: &Csr<Cpu, V>, order: LengthOrder) -> Permutation {
    let lengths = row_lengths(a);
    let longest = lengths.iter().copied().max().unwrap_or(0) as usize;
    let bucket = |len: u32| match order {
        LengthOrder::Ascending => len as usize,
        LengthOrder::Descending => longest - len as usize,
    };
    let mut start = vec![0usize; longest + 2];
    for &len in &lengths {
        start[bucket(len) + 1] += 1;
    }
    for k in 0..=longest {
        start[k + 1] += start[k];
    }
    let mut new_to_old = vec![0u32; lengths.len()];
    for (i, &len) in lengths.iter().enumerate() {
        let slot = &mut start[bucket(len)];
        new_to_old[*slot] = i as u32;
        *slot += 1;
    }
    Permutation::from_new_to_old_trusted(new_to_old)
}

/// The row permutation of SELL-C-σ: rows sorted by length, longest first, inside each
/// window of `sigma` consecutive rows (`[0, σ)`, `[σ, 2σ)`, ...; the last may be shorter).
/// Stable: rows of equal length keep their order. `sigma ≥ nrows` sorts globally; `sigma = 1`
/// is the identity.
///
/// # Errors
/// [`Error::InvalidArgument`] if `sigma = 0`.
pub fn sort_rows_by_length_in_windows<V: Element>(
    a: &Csr<Cpu, V>,
    sigma: usize,
) -> Result<Permutation> {
    if sigma == 0 {
        return Err(Error::InvalidArgument {
            op: "sort_rows_by_length_in_windows",
            name: "sigma",
            reason: "the window must hold at least 1 row".into(),
        });
    }
    let lengths = row_lengths(a);
    let mut new_to_old: Vec<u32> = (0..a.nrows() as u32).collect();
    new_to_old.par_chunks_mut(sigma).for_each(|window| {
        window.sort_by_key(|&i| std::cmp::Reverse(lengths[i as usize]));
    });
    Ok(Permutation::from_new_to_old_trusted(new_to_old))
}

/// The symmetric permutation `B = P A Pᵀ`: `B[i, j] = A[p[i], p[j]]` for `p` in
/// new-to-old form, columns sorted within each row. Explicit zeros are kept.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `a` is not square or `p` does not have `nrows` entries.
pub fn permute_symmetric<V: Element>(a: &Csr<Cpu, V>, p: &Permutation) -> Result<Csr<Cpu, V>> {
    check_len("permute_symmetric", "ncols", a.nrows(), a.ncols())?;
    check_len("permute_symmetric", "permutation", a.nrows(), p.len())?;
    let (new_to_old, old_to_new) = (p.new_to_old(), p.old_to_new());
    let row_ptr = a.row_ptr();
    build_csr(
        a.nrows(),
        a.ncols(),
        1,
        |i| row_length(row_ptr, new_to_old[i] as usize),
        |rows, col_idx, values| {
            let mut entries: Vec<(u32, V)> = Vec::new();
            let mut k = 0;
            for i in rows {
                let (cols, vals) = a.row(new_to_old[i] as usize);
                entries.clear();
                entries.extend(
                    cols.iter()
                        .zip(vals)
                        .map(|(&c, &v)| (old_to_new[c as usize], v)),
                );
                entries.sort_unstable_by_key(|&(c, _)| c);
                for &(c, v) in &entries {
                    (col_idx[k], values[k]) = (c, v);
                    k += 1;
                }
            }
        },
    )
}

/// The row permutation `B = P A`: `B[i, :] = A[p[i], :]` for `p` in new-to-old form;
/// columns are not renumbered, so `B x = P (A x)`.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `p` does not have `nrows` entries.
pub fn permute_rows<V: Element>(a: &Csr<Cpu, V>, p: &Permutation) -> Result<Csr<Cpu, V>> {
    check_len("permute_rows", "permutation", a.nrows(), p.len())?;
    let new_to_old = p.new_to_old();
    let row_ptr = a.row_ptr();
    build_csr(
        a.nrows(),
        a.ncols(),
        1,
        |i| row_length(row_ptr, new_to_old[i] as usize),
        |rows, col_idx, values| {
            let mut k = 0;
            for i in rows {
                let (cols, vals) = a.row(new_to_old[i] as usize);
                col_idx[k..k + cols.len()].copy_from_slice(cols);
                values[k..k + vals.len()].copy_from_slice(vals);
                k += cols.len();
            }
        },
    )
}

/// The bandwidth `max |i − j|` over the stored entries `(i, j)` (explicit zeros included);
/// 0 for a diagonal or empty matrix.
pub fn bandwidth<V: Element>(a: &Csr<Cpu, V>) -> usize {
    (0..a.nrows())
        .into_par_iter()
        .with_min_len(4096)
        .map(|i| {
            // Columns are sorted: the first and last entries are the farthest.
            let (cols, _) = a.row(i);
            match (cols.first(), cols.last()) {
                (Some(&first), Some(&last)) => {
                    i.abs_diff(first as usize).max(i.abs_diff(last as usize))
                }
                _ => 0,
            }
        })
        .max()
        .unwrap_or(0)
}

/// The (lower) profile `Σᵢ (i − fᵢ)` over the rows `i` that store an entry left of the
/// diagonal, where `fᵢ` is the first stored column of row `i`; rows whose first entry is on
/// or right of the diagonal add 0. For a structurally symmetric matrix this is the number of
/// positions strictly inside the lower envelope: the fill of a skyline (envelope) Cholesky
/// factorization.
pub fn profile<V: Element>(a: &Csr<Cpu, V>) -> u64 {
    (0..a.nrows())
        .into_par_iter()
        .with_min_len(4096)
        .map(|i| match a.row(i).0.first() {
            Some(&first) if (first as usize) < i => (i - first as usize) as u64,
            _ => 0,
        })
        .sum()
}

/// The bandwidth and profile of a matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandStats {
    /// See [`bandwidth`].
    pub bandwidth: usize,
    /// See [`profile`].
    pub profile: u64,
}

impl BandStats {
    /// Both measures of `a`.
    pub fn of<V: Element>(a: &Csr<Cpu, V>) -> Self {
        BandStats {
            bandwidth: bandwidth(a),
            profile: profile(a),
        }
    }
}

/// What a reordering achieved: [`BandStats`] before and after. Its `Display` prints one
/// line, e.g. `bandwidth 16383 -> 255 (64.2x), profile 1.3e8 -> 2.1e6 (61.9x)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReorderStats {
    /// The original matrix.
    pub before: BandStats,
    /// The reordered matrix.
    pub after: BandStats,
}

impl ReorderStats {
    /// Measures `before` and `after`.
    pub fn measure<V: Element>(before: &Csr<Cpu, V>, after: &Csr<Cpu, V>) -> Self {
        ReorderStats {
            before: BandStats::of(before),
            after: BandStats::of(after),
        }
    }
}

impl fmt::Display for ReorderStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ratio = |b: f64, a: f64| if a > 0.0 { b / a } else { f64::INFINITY };
        let (b, a) = (self.before, self.after);
        write!(
            f,
            "bandwidth {} -> {} ({:.1}x), profile {:.3e} -> {:.3e} ({:.1}x)",
            b.bandwidth,
            a.bandwidth,
            ratio(b.bandwidth as f64, a.bandwidth as f64),
            b.profile as f64,
            a.profile as f64,
            ratio(b.profile as f64, a.profile as f64)
        )
    }
}

fn row_length(row_ptr: &[u32], i: usize) -> usize {
    (row_ptr[i + 1] - row_ptr[i]) as usize
}

fn row_lengths<V: Element>(a: &Csr<Cpu, V>) -> Vec<u32> {
    a.row_ptr().windows(2).map(|w| w[1] - w[0]).collect()
}

#[cfg(test)]
mod tests;
