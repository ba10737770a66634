//! The pattern of `A + Aᵀ` without the diagonal, the graph the orderings work on: the
//! symmetry test, the transposed pattern and the row-by-row union.

use rayon::prelude::*;

use crate::error::Result;
use crate::sparse::generate::row_chunks;
use crate::sparse::to_u32;

/// Whether every stored `(i, j)` has a stored `(j, i)` (binary search in row `j`).
pub(super) fn structurally_symmetric(row_ptr: &[u32], col_idx: &[u32]) -> bool {
    let nrows = row_ptr.len() - 1;
    (0..nrows).into_par_iter().with_min_len(1024).all(|i| {
        let row = &col_idx[row_ptr[i] as usize..row_ptr[i + 1] as usize];
        row.iter().all(|&j| {
            let j = j as usize;
            j == i
                || col_idx[row_ptr[j] as usize..row_ptr[j + 1] as usize]
                    .binary_search(&(i as u32))
                    .is_ok()
        })
    })
}

/// The pattern of `Aᵀ` for a square `A`: rows come out sorted because rows of `A` are
/// visited in order.
pub(super) fn pattern_transpose(
    n: usize,
    row_ptr: &[u32],
    col_idx: &[u32],
) -> (Vec<u32>, Vec<u32>) {
    let mut t_ptr = vec![0u32; n + 1];
    for &c in col_idx {
        t_ptr[c as usize + 1] += 1;
    }
    for i in 0..n {
        t_ptr[i + 1] += t_ptr[i];
    }
    let mut next = t_ptr.clone();
    let mut t_idx = vec![0u32; col_idx.len()];
    for r in 0..n {
        for &c in &col_idx[row_ptr[r] as usize..row_ptr[r + 1] as usize] {
            t_idx[next[c as usize] as usize] = r as u32;
            next[c as usize] += 1;
        }
    }
    (t_ptr, t_idx)
}

/// Row by row union of two sorted patterns, without the diagonal.
pub(super) fn merge_rows(
    a_ptr: &[u32],
    a_idx: &[u32],
    b_ptr: &[u32],
    b_idx: &[u32],
) -> Result<(Vec<u32>, Vec<u32>)> {
    let n = a_ptr.len() - 1;
    fn row<'s>(ptr: &[u32], idx: &'s [u32], i: usize) -> &'s [u32] {
        &idx[ptr[i] as usize..ptr[i + 1] as usize]
    }
    // Sorted union of two sorted lists, skipping `skip`, fed to `emit`.
    fn union(a: &[u32], b: &[u32], skip: u32, mut emit: impl FnMut(u32)) {
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let c = match (a.get(i), b.get(j)) {
                (Some(&x), Some(&y)) if x == y => {
                    i += 1;
                    j += 1;
                    x
                }
                (Some(&x), Some(&y)) if x < y => {
                    i += 1;
                    x
                }
                (Some(&x), None) => {
                    i += 1;
                    x
                }
                (_, Some(&y)) => {
                    j += 1;
                    y
                }
                // The loop condition leaves one of the two lists unfinished.
                (None, None) => break,
            };
            if c != skip {
                emit(c);
            }
        }
    }
    let lengths: Vec<u64> = (0..n)
        .into_par_iter()
        .with_min_len(4096)
        .map(|i| {
            let mut count = 0u64;
            union(row(a_ptr, a_idx, i), row(b_ptr, b_idx, i), i as u32, |_| {
                count += 1
            });
            count
        })
        .collect();
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0u32);
    let mut total = 0u64;
    for len in lengths {
        total += len;
        offsets.push(total as u32);
    }
    to_u32(
        usize::try_from(total).unwrap_or(usize::MAX),
        "CSR",
        "the number of entries of A + Aᵀ",
    )?;
    let mut adjacency = vec![0u32; total as usize];
    row_chunks(&offsets, &mut adjacency, 1)
        .into_par_iter()
        .for_each(|(rows, dst)| {
            let mut k = 0;
            for i in rows {
                union(row(a_ptr, a_idx, i), row(b_ptr, b_idx, i), i as u32, |c| {
                    dst[k] = c;
                    k += 1;
                });
            }
        });
    Ok((offsets, adjacency))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_rows_is_the_union_without_diagonal() {
        // A = [[x, x, .], [., ., x], [x, ., x]]: A + Aᵀ off the diagonal is
        // row 0: {1, 2}, row 1: {0, 2}, row 2: {0, 1}.
        let (ptr, idx) = (vec![0, 2, 3, 5], vec![0, 1, 2, 0, 2]);
        assert!(!structurally_symmetric(&ptr, &idx));
        let (t_ptr, t_idx) = pattern_transpose(3, &ptr, &idx);
        assert_eq!(
            (&t_ptr[..], &t_idx[..]),
            (&[0, 2, 3, 5][..], &[0, 2, 0, 1, 2][..])
        );
        let (offsets, adjacency) = merge_rows(&ptr, &idx, &t_ptr, &t_idx).unwrap();
        assert_eq!(offsets, [0, 2, 4, 6]);
        assert_eq!(adjacency, [1, 2, 0, 2, 0, 1]);
        assert!(structurally_symmetric(&offsets, &adjacency));
    }
}
