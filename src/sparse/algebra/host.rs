//! The CPU reference of the sparse algebra: [`spgemm`] (`C = A·B` in CSR, symbolic then
//! numeric, rows in parallel, f64 accumulation) and [`strength`] (the symmetric
//! strength-of-connection filter), on host matrices.

use std::cell::RefCell;

use crate::backend::Cpu;
use crate::error::{check_len, Error, Result};
use crate::scalar::Scalar;
use crate::sparse::csr::Csr;
use crate::sparse::generate::build_csr;

/// A row's scratch: the accumulator of a dense row of B's width and the marker of the
/// columns met so far (one per thread).
struct Scratch {
    /// `mark[j] == tag` when column `j` was met in the row of that tag. Every row of every
    /// product has a tag of its own ([`TAGS`]), so marks left by other products (run
    /// concurrently on the same pool) never match.
    mark: Vec<u64>,
    acc: Vec<f64>,
    cols: Vec<u32>,
}

/// The next unused row tag: each product reserves `2 · nrows` of them.
static TAGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    static SCRATCH: RefCell<Scratch> = const {
        RefCell::new(Scratch {
            mark: Vec::new(),
            acc: Vec::new(),
            cols: Vec::new(),
        })
    };
}

/// Runs `f` with this thread's scratch sized for `width` columns.
fn with_scratch<R>(width: usize, f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.mark.len() < width {
            s.mark = vec![0; width];
            s.acc = vec![0.0; width];
        }
        f(&mut s)
    })
}

/// The distinct columns of row `i` of `A·B`, unsorted, into `s.cols` (marks set to `tag`).
fn row_pattern<V: Scalar>(a: &Csr<Cpu, V>, b: &Csr<Cpu, V>, i: usize, tag: u64, s: &mut Scratch) {
    s.cols.clear();
    for &k in a.row(i).0 {
        for &j in b.row(k as usize).0 {
            if s.mark[j as usize] != tag {
                s.mark[j as usize] = tag;
                s.cols.push(j);
            }
        }
    }
}

/// `C = A·B` in CSR: for each row, the union of the rows of `B` that `A`'s row selects
/// (symbolic), then the products summed in f64 and rounded once to `V` (numeric). Columns
/// come out sorted; entries that cancel to zero are kept (the pattern is structural).
///
/// Cost: `Σᵢ Σ_{k ∈ A(i,:)} nnz(B(k,:))` multiply-adds, twice over for the pattern, and one
/// dense row of B's width per thread.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `a.ncols() != b.nrows()`; [`Error::InvalidMatrix`] or
/// [`Error::ResourceLimit`] if the product has 2³² or more entries or does not fit in
/// memory.
pub fn spgemm<V: Scalar>(a: &Csr<Cpu, V>, b: &Csr<Cpu, V>) -> Result<Csr<Cpu, V>> {
    check_len("spgemm", "b.nrows() (a.ncols())", a.ncols(), b.nrows())?;
    let width = b.ncols();
    let nrows = a.nrows() as u64;
    let base = TAGS.fetch_add(2 * nrows, std::sync::atomic::Ordering::Relaxed);
    build_csr(
        a.nrows(),
        width,
        1,
        |i| {
            with_scratch(width, |s| {
                row_pattern(a, b, i, base + i as u64, s);
                s.cols.len()
            })
        },
        |rows, col_idx, values: &mut [V]| {
            with_scratch(width, |s| {
                let mut at = 0;
                for i in rows {
                    // The numeric pass marks with the second half of the tags.
                    let tag = base + nrows + i as u64;
                    s.cols.clear();
                    let (ak, av) = a.row(i);
                    for (&k, &aik) in ak.iter().zip(av) {
                        let (bj, bv) = b.row(k as usize);
                        for (&j, &bkj) in bj.iter().zip(bv) {
                            let j = j as usize;
                            if s.mark[j] != tag {
                                s.mark[j] = tag;
                                s.acc[j] = 0.0;
                                s.cols.push(j as u32);
                            }
                            s.acc[j] += aik.as_f64() * bkj.as_f64();
                        }
                    }
                    s.cols.sort_unstable();
                    for &j in &s.cols {
                        col_idx[at] = j;
                        values[at] = V::from_f64(s.acc[j as usize]);
                        at += 1;
                    }
                }
            })
        },
    )
}

/// The symmetric strength of connection: the diagonal and every nonzero off-diagonal entry
/// with `|aᵢⱼ| ≥ θ √|aᵢᵢ aⱼⱼ|` (stored zeros are no connection), values kept (Bell, Dalton and Olson's filter for smoothed
/// aggregation). A zero diagonal makes a row's off-diagonals strong only when `θ = 0`.
///
/// # Errors
/// [`Error::InvalidArgument`] for `θ` outside `[0, 1]` or a matrix that is not square.
pub fn strength<V: Scalar>(a: &Csr<Cpu, V>, theta: f64) -> Result<Csr<Cpu, V>> {
    if !(0.0..=1.0).contains(&theta) {
        return Err(Error::invalid(
            "strength",
            "theta",
            format!("{theta} is outside [0, 1]"),
        ));
    }
    check_len("strength", "ncols (square)", a.nrows(), a.ncols())?;
    let diag: Vec<f64> = a.diagonal().iter().map(|d| d.as_f64().abs()).collect();
    let strong = |i: usize, j: u32, v: V| {
        j as usize == i
            || (v.as_f64() != 0.0
                && v.as_f64().abs() >= theta * (diag[i] * diag[j as usize]).sqrt())
    };
    build_csr(
        a.nrows(),
        a.ncols(),
        1,
        |i| {
            let (c, v) = a.row(i);
            c.iter().zip(v).filter(|&(&j, &x)| strong(i, j, x)).count()
        },
        |rows, col_idx, values: &mut [V]| {
            let mut at = 0;
            for i in rows {
                let (c, v) = a.row(i);
                for (&j, &x) in c.iter().zip(v).filter(|&(&j, &x)| strong(i, j, x)) {
                    col_idx[at] = j;
                    values[at] = x;
                    at += 1;
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::random::{random_csr, RandomPattern};

    fn dense<V: Scalar>(a: &Csr<Cpu, V>) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
        for (i, row) in d.iter_mut().enumerate() {
            let (c, v) = a.row(i);
            for (&j, &x) in c.iter().zip(v) {
                row[j as usize] += x.as_f64();
            }
        }
        d
    }

    #[test]
    fn products_match_the_dense_product() {
        for (seed, (m, k, n)) in [(1, (37, 53, 29)), (2, (200, 150, 310)), (3, (1, 40, 1))] {
            let a: Csr<Cpu, f64> = random_csr(&RandomPattern::uniform(m, k, 0, 9), seed).unwrap();
            let b: Csr<Cpu, f64> =
                random_csr(&RandomPattern::uniform(k, n, 0, 7), seed + 10).unwrap();
            let c = spgemm(&a, &b).unwrap();
            assert_eq!((c.nrows(), c.ncols()), (m, n));
            let (da, db, dc) = (dense(&a), dense(&b), dense(&c));
            let mut nonzero = 0;
            for i in 0..m {
                let (cols, _) = c.row(i);
                assert!(cols.windows(2).all(|w| w[0] < w[1]), "row {i} unsorted");
                for j in 0..n {
                    let want: f64 = (0..k).map(|l| da[i][l] * db[l][j]).sum();
                    assert!(
                        (dc[i][j] - want).abs() <= 1e-13 * (1.0 + want.abs()),
                        "C[{i}][{j}] = {} against {want}",
                        dc[i][j]
                    );
                    // The pattern holds exactly the structurally nonzero entries.
                    let structural = (0..k).any(|l| {
                        a.row(i).0.contains(&(l as u32)) && b.row(l).0.contains(&(j as u32))
                    });
                    assert_eq!(cols.contains(&(j as u32)), structural, "({i}, {j})");
                    nonzero += usize::from(want != 0.0);
                }
            }
            assert!(
                nonzero > 0 || m * n == 1,
                "an all-zero product tests nothing"
            );
        }
    }

    #[test]
    fn f32_products_accumulate_in_f64() {
        let a: Csr<Cpu, f32> = random_csr(&RandomPattern::uniform(60, 60, 3, 8), 5).unwrap();
        let c = spgemm(&a, &a).unwrap();
        let a64: Csr<Cpu, f64> = a.convert();
        let c64 = spgemm(&a64, &a64).unwrap();
        assert_eq!(c.col_idx(), c64.col_idx());
        for (x, y) in c.values().iter().zip(c64.values()) {
            assert_eq!(*x, *y as f32);
        }
    }

    #[test]
    fn mismatched_sizes_are_errors() {
        let a: Csr<Cpu, f64> = random_csr(&RandomPattern::uniform(5, 6, 1, 3), 1).unwrap();
        let e = spgemm(&a, &a).err().expect("5 x 6 times 5 x 6 is refused");
        assert!(e.to_string().contains("spgemm"), "{e}");
        assert!(strength(&a, 0.5).is_err());
        let sq: Csr<Cpu, f64> = random_csr(&RandomPattern::awkward(6, 6), 1).unwrap();
        assert!(strength(&sq, 1.5).is_err() && strength(&sq, f64::NAN).is_err());
    }

    #[test]
    fn strength_keeps_exactly_the_strong_entries() {
        let a: Csr<Cpu, f64> = random_csr(&RandomPattern::awkward(150, 150), 9).unwrap();
        let d = dense(&a);
        for theta in [0.0, 0.1, 0.25, 0.5, 1.0] {
            let s = strength(&a, theta).unwrap();
            for i in 0..150 {
                let (cols, vals) = a.row(i);
                let kept: Vec<(u32, f64)> = cols
                    .iter()
                    .zip(vals)
                    .filter(|&(&j, &v)| {
                        j as usize == i
                            || (v != 0.0
                                && v.abs()
                                    >= theta
                                        * (d[i][i].abs() * d[j as usize][j as usize].abs()).sqrt())
                    })
                    .map(|(&j, &v)| (j, v))
                    .collect();
                let (sc, sv) = s.row(i);
                let got: Vec<(u32, f64)> = sc.iter().copied().zip(sv.iter().copied()).collect();
                assert_eq!(got, kept, "theta {theta}, row {i}");
            }
        }
    }
}
