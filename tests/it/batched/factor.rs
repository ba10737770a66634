//! The factorizations and what they solve: LU (with and without pivoting) and its solve,
//! the inverse (also of matrices that need pivoting at every step), Cholesky with its solve
//! and inverse, triangular solves, against nalgebra; and f64 arithmetic on f32 storage.

use galerkin::batched::{
    cholesky, cholesky_inverse, cholesky_solve, inverse, lu, lu_solve, triangular_solve, Batch,
    Diagonal, Pivoting, Triangle,
};
use galerkin::verify::{random_vec, Rng};
use galerkin::{Backend, Scalar};
use nalgebra::DMatrix;

use super::{count_for, matrices, rel_residual, to_t, widen, COUNTS, EVERY_SIDE, SIDES};
use crate::backend_tests;

fn batched_lu_inverse<B: Backend, T: Scalar>(b: &B) {
    batched_lu_inverse_at::<B, T>(b, &SIDES);
}

fn batched_lu_inverse_every_side<B: Backend, T: Scalar>(b: &B) {
    batched_lu_inverse_at::<B, T>(b, &EVERY_SIDE);
}

fn batched_lu_inverse_at<B: Backend, T: Scalar>(b: &B, sides: &[usize]) {
    for &n in sides {
        for count in COUNTS.map(|c| count_for(n, c)) {
            let host = matrices(count, n, false, 10 + n as u64);
            let data = to_t::<T>(&host);
            for pivoting in [Pivoting::Partial, Pivoting::None] {
                let f = lu::<B, T, T>(Batch::from_slice(b, count, n, n, &data).unwrap(), pivoting)
                    .unwrap();
                assert!(
                    f.status().all_ok().unwrap(),
                    "n={n}: {:?}",
                    f.status().failures()
                );
                // Solve with 3 right-hand sides: ‖A X − B‖ small.
                let rhs = to_t::<T>(&random_vec::<f64>(count * n * 3, 7));
                let mut x = Batch::from_slice(b, count, n, 3, &rhs).unwrap();
                lu_solve::<B, T, T>(&f, &mut x).unwrap();
                let xs = widen(&x.to_vec().unwrap());
                for m in 0..count {
                    let am =
                        DMatrix::from_row_slice(n, n, &widen(&data[m * n * n..(m + 1) * n * n]));
                    let xm = DMatrix::from_row_slice(n, 3, &xs[m * n * 3..(m + 1) * n * 3]);
                    let bm =
                        DMatrix::from_row_slice(n, 3, &widen(&rhs[m * n * 3..(m + 1) * n * 3]));
                    let cond = am.clone().svd(false, false).singular_values.max()
                        / am.clone().svd(false, false).singular_values.min();
                    let r = rel_residual(&am, &xm, &bm);
                    assert!(
                        r <= 32.0 * n as f64 * T::EPS * cond.max(1.0),
                        "lu_solve n={n} matrix {m} pivoting={pivoting:?}: {r:e}, cond {cond:.1}"
                    );
                }
            }
            // Inverse: ‖A X − I‖ and agreement with nalgebra.
            let a = Batch::from_slice(b, count, n, n, &data).unwrap();
            let (inv, status) = inverse::<B, T, T>(&a).unwrap();
            assert!(status.all_ok().unwrap());
            let xs = widen(&inv.to_vec().unwrap());
            for m in (0..count).step_by(97.max(count / 10).max(1)) {
                let am = DMatrix::from_row_slice(n, n, &widen(&data[m * n * n..(m + 1) * n * n]));
                let xm = DMatrix::from_row_slice(n, n, &xs[m * n * n..(m + 1) * n * n]);
                let reference = am.clone().try_inverse().expect("well conditioned");
                let cond = am.norm() * reference.norm();
                let r = rel_residual(&am, &xm, &DMatrix::identity(n, n));
                assert!(
                    r <= 32.0 * n as f64 * T::EPS * cond,
                    "inverse n={n} matrix {m}: {r:e}"
                );
                let diff = (&xm - &reference).norm() / reference.norm();
                assert!(
                    diff <= 64.0 * n as f64 * T::EPS * cond,
                    "inverse vs nalgebra n={n} matrix {m}: {diff:e}"
                );
            }
        }
    }
}

fn batched_cholesky<B: Backend, T: Scalar>(b: &B) {
    batched_cholesky_at::<B, T>(b, &SIDES);
}

fn batched_cholesky_every_side<B: Backend, T: Scalar>(b: &B) {
    batched_cholesky_at::<B, T>(b, &EVERY_SIDE);
}

fn batched_cholesky_at<B: Backend, T: Scalar>(b: &B, sides: &[usize]) {
    for &n in sides {
        for count in COUNTS.map(|c| count_for(n, c)) {
            let host = matrices(count, n, true, 20 + n as u64);
            let data = to_t::<T>(&host);
            let (l, status) =
                cholesky::<B, T, T>(Batch::from_slice(b, count, n, n, &data).unwrap()).unwrap();
            assert!(status.all_ok().unwrap(), "n={n}: {:?}", status.failures());
            let ls = widen(&l.to_vec().unwrap());
            for m in (0..count).step_by(97.max(count / 10).max(1)) {
                let am = DMatrix::from_row_slice(n, n, &widen(&data[m * n * n..(m + 1) * n * n]));
                let lm = DMatrix::from_row_slice(n, n, &ls[m * n * n..(m + 1) * n * n]);
                assert!(
                    lm.upper_triangle() == DMatrix::from_diagonal(&lm.diagonal()),
                    "upper part zeroed"
                );
                let r = (&lm * lm.transpose() - &am).norm() / am.norm();
                assert!(
                    r <= 16.0 * n as f64 * T::EPS,
                    "‖L Lᵀ − A‖ n={n} matrix {m}: {r:e}"
                );
                let reference = nalgebra::Cholesky::new(am.clone()).expect("SPD").l();
                assert!(
                    (&lm - &reference).norm() / reference.norm()
                        <= 64.0 * n as f64 * T::EPS * n as f64
                );
            }
            let rhs = to_t::<T>(&random_vec::<f64>(count * n * 2, 8));
            let mut x = Batch::from_slice(b, count, n, 2, &rhs).unwrap();
            cholesky_solve::<B, T, T>(&l, &mut x).unwrap();
            let (inv, st) =
                cholesky_inverse::<B, T, T>(&Batch::from_slice(b, count, n, n, &data).unwrap())
                    .unwrap();
            assert!(st.all_ok().unwrap());
            let (xs, is) = (widen(&x.to_vec().unwrap()), widen(&inv.to_vec().unwrap()));
            for m in (0..count).step_by(97.max(count / 10).max(1)) {
                let am = DMatrix::from_row_slice(n, n, &widen(&data[m * n * n..(m + 1) * n * n]));
                let cond = am.clone().svd(false, false).singular_values.max()
                    / am.clone().svd(false, false).singular_values.min();
                let xm = DMatrix::from_row_slice(n, 2, &xs[m * n * 2..(m + 1) * n * 2]);
                let bm = DMatrix::from_row_slice(n, 2, &widen(&rhs[m * n * 2..(m + 1) * n * 2]));
                assert!(
                    rel_residual(&am, &xm, &bm) <= 32.0 * n as f64 * T::EPS * cond,
                    "cholesky_solve n={n}"
                );
                let im = DMatrix::from_row_slice(n, n, &is[m * n * n..(m + 1) * n * n]);
                assert!(
                    rel_residual(&am, &im, &DMatrix::identity(n, n))
                        <= 32.0 * n as f64 * T::EPS * cond,
                    "cholesky inverse n={n}"
                );
            }
        }
    }
}

/// Matrices that cannot be inverted without row interchanges at every step (a permutation
/// with small noise: the diagonal is tiny), against nalgebra: exercises the pivot search
/// and the undoing of the interchanges in every inverse kernel.
fn batched_inverse_needs_pivoting<B: Backend, T: Scalar>(b: &B) {
    for n in [2, 3, 5, 8, 12] {
        let count = 37;
        let mut rng = Rng::new(90 + n as u64);
        let mut host = Vec::with_capacity(count * n * n);
        for m in 0..count {
            // A cyclic shift by 1 + m % (n - 1): no fixed point, so a tiny diagonal.
            let shift = 1 + m % (n - 1).max(1);
            for i in 0..n {
                for j in 0..n {
                    let one = if j == (i + shift) % n {
                        1.0 + rng.range(0.0, 1.0)
                    } else {
                        0.0
                    };
                    host.push(one + 0.01 * rng.range(-1.0, 1.0));
                }
            }
        }
        let data = to_t::<T>(&host);
        let a = Batch::from_slice(b, count, n, n, &data).unwrap();
        let (inv, status) = inverse::<B, T, T>(&a).unwrap();
        assert!(status.all_ok().unwrap(), "n={n}: {:?}", status.failures());
        let xs = widen(&inv.to_vec().unwrap());
        for m in 0..count {
            let am = DMatrix::from_row_slice(n, n, &widen(&data[m * n * n..(m + 1) * n * n]));
            let reference = am.clone().try_inverse().expect("a perturbed permutation");
            let xm = DMatrix::from_row_slice(n, n, &xs[m * n * n..(m + 1) * n * n]);
            let cond = am.norm() * reference.norm();
            let diff = (&xm - &reference).norm() / reference.norm();
            assert!(
                diff <= 64.0 * n as f64 * T::EPS * cond,
                "inverse n={n} matrix {m}: {diff:e} (cond {cond:.1})"
            );
        }
    }
}

/// Forward and back substitution with stored and unit diagonals. The triangle that must not
/// be read (and the diagonal, when unit) holds NaN, so reading it poisons the solution.
fn batched_triangular_solve<B: Backend, T: Scalar>(b: &B) {
    batched_triangular_solve_at::<B, T>(b, &SIDES);
}

fn batched_triangular_solve_every_side<B: Backend, T: Scalar>(b: &B) {
    batched_triangular_solve_at::<B, T>(b, &EVERY_SIDE);
}

fn batched_triangular_solve_at<B: Backend, T: Scalar>(b: &B, sides: &[usize]) {
    for &n in sides {
        for count in COUNTS.map(|c| count_for(n, c)) {
            let mut rng = Rng::new(40 + n as u64);
            let nrhs = 3;
            let full: Vec<f64> = (0..count * n * n)
                .map(|e| {
                    let (i, j) = ((e / n) % n, e % n);
                    if i == j {
                        rng.range(1.0, 2.0) * if i % 2 == 0 { 1.0 } else { -1.0 }
                    } else {
                        rng.range(-1.0, 1.0) / n as f64
                    }
                })
                .collect();
            let rhs = random_vec::<f64>(count * n * nrhs, 41);
            for triangle in [Triangle::Lower, Triangle::Upper] {
                for diagonal in [Diagonal::NonUnit, Diagonal::Unit] {
                    let stored: Vec<f64> = full
                        .iter()
                        .enumerate()
                        .map(|(e, &v)| {
                            let (i, j) = ((e / n) % n, e % n);
                            let unread = match triangle {
                                Triangle::Lower => j > i,
                                Triangle::Upper => j < i,
                            } || (i == j && diagonal == Diagonal::Unit);
                            if unread {
                                f64::NAN
                            } else {
                                v
                            }
                        })
                        .collect();
                    let data = to_t::<T>(&stored);
                    let t = Batch::from_slice(b, count, n, n, &data).unwrap();
                    let rhs_t = to_t::<T>(&rhs);
                    let mut x = Batch::from_slice(b, count, n, nrhs, &rhs_t).unwrap();
                    triangular_solve::<B, T, T>(&t, triangle, diagonal, &mut x).unwrap();
                    let xs = widen(&x.to_vec().unwrap());
                    for m in 0..count {
                        // The matrix actually meant, in f64 (from the rounded stored data).
                        let dense = DMatrix::from_fn(n, n, |i, j| {
                            let v = data[m * n * n + i * n + j].as_f64();
                            if i == j && diagonal == Diagonal::Unit {
                                1.0
                            } else if v.is_nan() {
                                0.0
                            } else {
                                v
                            }
                        });
                        let bm = DMatrix::from_row_slice(
                            n,
                            nrhs,
                            &widen(&rhs_t[m * n * nrhs..(m + 1) * n * nrhs]),
                        );
                        let reference = match triangle {
                            Triangle::Lower => dense.solve_lower_triangular(&bm),
                            Triangle::Upper => dense.solve_upper_triangular(&bm),
                        }
                        .expect("non-zero diagonal");
                        let xm =
                            DMatrix::from_row_slice(n, nrhs, &xs[m * n * nrhs..(m + 1) * n * nrhs]);
                        let diff = (&xm - &reference).norm() / reference.norm().max(1e-300);
                        assert!(
                            diff <= 16.0 * n as f64 * T::EPS,
                            "{triangle:?} {diagonal:?} n={n} matrix {m}: {diff:e}"
                        );
                    }
                }
            }
        }
    }
    // Shape errors are typed and leave the right-hand sides untouched.
    let rect = Batch::from_slice(b, 2, 3, 4, &to_t::<T>(&random_vec::<f64>(24, 42))).unwrap();
    let rhs = to_t::<T>(&random_vec::<f64>(2 * 3 * 2, 43));
    let mut x = Batch::from_slice(b, 2, 3, 2, &rhs).unwrap();
    let r = triangular_solve::<B, T, T>(&rect, Triangle::Lower, Diagonal::NonUnit, &mut x);
    assert!(
        matches!(r, Err(galerkin::Error::InvalidArgument { .. })),
        "{r:?}"
    );
    let square = Batch::from_slice(b, 3, 3, 3, &to_t::<T>(&random_vec::<f64>(27, 44))).unwrap();
    let r = triangular_solve::<B, T, T>(&square, Triangle::Upper, Diagonal::Unit, &mut x);
    assert!(
        matches!(r, Err(galerkin::Error::DimensionMismatch { .. })),
        "{r:?}"
    );
    assert_eq!(x.to_vec().unwrap(), rhs);
}

backend_tests!(
    batched_lu_inverse,
    batched_cholesky,
    batched_triangular_solve,
    batched_inverse_needs_pivoting
);
backend_tests!(
    tier2: batched_lu_inverse_every_side,
    batched_cholesky_every_side,
    batched_triangular_solve_every_side,
);

/// f32 storage with f64 arithmetic: the inverse of moderately ill-conditioned f32 matrices
/// is more accurate than with f32 arithmetic.
fn batched_mixed_precision<B: Backend, T: Scalar>(b: &B) {
    if T::EPS < 1e-10 || !b.info().supports_f64() {
        return; // once per backend (the f32 instantiation), where f64 exists
    }
    let (count, n) = (64, 24);
    let mut rng = Rng::new(77);
    // Graded matrices: rows scaled over four orders of magnitude.
    let host: Vec<f64> = (0..count * n * n)
        .map(|e| rng.range(-1.0, 1.0) * 10f64.powf(-4.0 * ((e / n) % n) as f64 / n as f64))
        .collect();
    let data = to_t::<f32>(&host);
    let a = Batch::from_slice(b, count, n, n, &data).unwrap();
    let (inv32, _) = inverse::<B, f32, f32>(&a).unwrap();
    let (inv_mixed, _) = inverse::<B, f32, f64>(&a).unwrap();
    let (e32, emixed) = (
        widen(&inv32.to_vec().unwrap()),
        widen(&inv_mixed.to_vec().unwrap()),
    );
    let (mut r32, mut rmixed) = (0.0, 0.0);
    for m in 0..count {
        let am = DMatrix::from_row_slice(n, n, &widen(&data[m * n * n..(m + 1) * n * n]));
        let i = DMatrix::identity(n, n);
        r32 += rel_residual(
            &am,
            &DMatrix::from_row_slice(n, n, &e32[m * n * n..(m + 1) * n * n]),
            &i,
        );
        rmixed += rel_residual(
            &am,
            &DMatrix::from_row_slice(n, n, &emixed[m * n * n..(m + 1) * n * n]),
            &i,
        );
    }
    crate::harness::announce(&format!(
        "[galerkin tests] batched inverse 24x24 on {}: mean residual f32 arithmetic {:.2e}, f64 arithmetic on f32 storage {:.2e}",
        b.info(),
        r32 / count as f64,
        rmixed / count as f64
    ));
    assert!(rmixed < r32, "mixed {rmixed:e} should beat f32 {r32:e}");
}

backend_tests!(tier2_devices: batched_mixed_precision);
