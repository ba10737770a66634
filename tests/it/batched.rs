//! Batched dense operations on every backend and precision, against plain f64 loops and
//! against nalgebra (an independent implementation); singular and non-SPD members.

use galerkin::batched::{
    cholesky, cholesky_inverse, cholesky_solve, gemm, gemv, inverse, lu, lu_solve,
    triangular_solve, Batch, Diagonal, GemmParams, Op, Pivoting, Triangle,
};
use galerkin::verify::{poison, random_vec, Rng};
use galerkin::{Backend, Element, Scalar};
use nalgebra::DMatrix;

use crate::backend_tests;
use crate::harness::assert_close;

const SIZES: [usize; 8] = [1, 2, 3, 7, 16, 31, 33, 64];
const COUNTS: [usize; 3] = [0, 1, 1001];

/// Fewer matrices for the large sizes on slow devices keeps the suite fast; the kernels
/// are the same for every count.
fn count_for(n: usize, count: usize) -> usize {
    if n > 16 {
        count.min(101)
    } else {
        count
    }
}

fn widen<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.as_f64()).collect()
}

/// Random matrices with a dominant diagonal (well conditioned; SPD when `spd`).
fn matrices(count: usize, n: usize, spd: bool, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count * n * n);
    for _ in 0..count {
        let mut m: Vec<f64> = (0..n * n).map(|_| rng.range(-1.0, 1.0)).collect();
        if spd {
            // M Mᵀ + n I.
            let mut s = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    s[i * n + j] = (0..n).map(|k| m[i * n + k] * m[j * n + k]).sum::<f64>()
                        + if i == j { n as f64 } else { 0.0 };
                }
            }
            m = s;
        } else {
            for i in 0..n {
                m[i * n + i] += if i % 2 == 0 { 2.0 } else { -2.0 };
            }
        }
        out.extend(m);
    }
    out
}

/// GEMM parameters with the given scalars and transposes.
fn params<T: Scalar>(alpha: f64, beta: f64, ta: bool, tb: bool) -> GemmParams<T> {
    let op = |t| if t { Op::Transpose } else { Op::None };
    GemmParams {
        alpha: T::from_f64(alpha),
        beta: T::from_f64(beta),
        op_a: op(ta),
        op_b: op(tb),
    }
}

fn to_t<T: Element>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// `op(A) op(B)` for `count` n x n matrices; `(transposed, shared)` flags per operand.
fn naive_gemm(
    a: &[f64],
    (ta, shared_a): (bool, bool),
    b: &[f64],
    (tb, shared_b): (bool, bool),
    n: usize,
    count: usize,
) -> Vec<f64> {
    let mut c = vec![0.0; count * n * n];
    for m in 0..count {
        let (ao, bo) = (
            if shared_a { 0 } else { m * n * n },
            if shared_b { 0 } else { m * n * n },
        );
        for i in 0..n {
            for j in 0..n {
                let mut s = 0.0;
                for k in 0..n {
                    let av = if ta {
                        a[ao + k * n + i]
                    } else {
                        a[ao + i * n + k]
                    };
                    let bv = if tb {
                        b[bo + j * n + k]
                    } else {
                        b[bo + k * n + j]
                    };
                    s += av * bv;
                }
                c[m * n * n + i * n + j] = s;
            }
        }
    }
    c
}

fn batched_gemm<B: Backend, T: Scalar>(b: &B) {
    for n in SIZES {
        for count in COUNTS.map(|c| count_for(n, c)) {
            let av = to_t::<T>(&random_vec::<f64>(count * n * n, 1));
            let bv = to_t::<T>(&random_vec::<f64>(count * n * n, 2));
            let cv = to_t::<T>(&random_vec::<f64>(count * n * n, 3));
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = Batch::from_slice(b, count, n, n, &av).unwrap();
                let bb = Batch::from_slice(b, count, n, n, &bv).unwrap();
                // β = 0 on a poisoned C.
                let mut c = Batch::from_slice(b, count, n, n, &poison::<T>(count * n * n)).unwrap();
                gemm(&params::<T>(1.5, 0.0, ta, tb), &a, &bb, &mut c).unwrap();
                let expected: Vec<f64> =
                    naive_gemm(&widen(&av), (ta, false), &widen(&bv), (tb, false), n, count)
                        .iter()
                        .map(|v| 1.5 * v)
                        .collect();
                assert_close(
                    &c.to_vec().unwrap(),
                    &expected,
                    n,
                    &format!("gemm n={n} count={count} ta={ta} tb={tb}"),
                );
            }
            // β ≠ 0, shared A (the DG case) and shared B.
            for (sa, sb) in [(true, false), (false, true)] {
                let a = Batch::from_slice(
                    b,
                    if sa { 1 } else { count },
                    n,
                    n,
                    &av[..if sa { n * n } else { count * n * n }.min(av.len())]
                        .iter()
                        .copied()
                        .chain(std::iter::repeat(T::ONE))
                        .take(if sa { n * n } else { count * n * n })
                        .collect::<Vec<_>>(),
                )
                .unwrap();
                let a_host = widen(&a.to_vec().unwrap());
                let bb = Batch::from_slice(
                    b,
                    if sb { 1 } else { count },
                    n,
                    n,
                    &bv.iter()
                        .copied()
                        .chain(std::iter::repeat(T::ONE))
                        .take(if sb { n * n } else { count * n * n })
                        .collect::<Vec<_>>(),
                )
                .unwrap();
                let b_host = widen(&bb.to_vec().unwrap());
                let mut c = Batch::from_slice(b, count, n, n, &cv).unwrap();
                gemm(&params::<T>(-0.5, 2.0, false, false), &a, &bb, &mut c).unwrap();
                let ab = naive_gemm(&a_host, (false, sa), &b_host, (false, sb), n, count);
                let expected: Vec<f64> = ab
                    .iter()
                    .zip(widen(&cv))
                    .map(|(p, c)| -0.5 * p + 2.0 * c)
                    .collect();
                assert_close(
                    &c.to_vec().unwrap(),
                    &expected,
                    n + 1,
                    &format!("gemm shared a={sa} b={sb} n={n} count={count}"),
                );
            }
        }
    }
    // GEMV: 7 x 5 matrices times vectors.
    let (count, m, k) = (333, 7, 5);
    let av = to_t::<T>(&random_vec::<f64>(count * m * k, 4));
    let xv = to_t::<T>(&random_vec::<f64>(count * k, 5));
    let a = Batch::from_slice(b, count, m, k, &av).unwrap();
    let x = Batch::from_slice(b, count, k, 1, &xv).unwrap();
    let mut y = Batch::from_slice(b, count, m, 1, &poison::<T>(count * m)).unwrap();
    gemv(&GemmParams::<T>::default(), &a, &x, &mut y).unwrap();
    let expected: Vec<f64> = (0..count * m)
        .map(|e| {
            let (mat, i) = (e / m, e % m);
            (0..k)
                .map(|l| av[mat * m * k + i * k + l].as_f64() * xv[mat * k + l].as_f64())
                .sum()
        })
        .collect();
    assert_close(&y.to_vec().unwrap(), &expected, k, "gemv 7x5");
    // Mismatched shapes are errors.
    let mut c = Batch::<B, T>::zeros(b, count, m, m).unwrap();
    assert!(gemm(&GemmParams::<T>::default(), &a, &a, &mut c).is_err());
}

/// ‖A X − I‖ / (‖A‖ ‖X‖) and friends: residuals relative to the data, scaled by ε_T.
fn rel_residual(a: &DMatrix<f64>, x: &DMatrix<f64>, expected: &DMatrix<f64>) -> f64 {
    (a * x - expected).norm() / (a.norm() * x.norm()).max(f64::MIN_POSITIVE)
}

fn batched_lu_inverse<B: Backend, T: Scalar>(b: &B) {
    for n in SIZES {
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
    for n in SIZES {
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

/// Rectangular shapes (every side distinct, `k` in chunks, partial tiles, `k = 0`) with
/// every transpose and shared (also transposed) operands, against a plain f64 loop.
fn batched_gemm_rectangular<B: Backend, T: Scalar>(b: &B) {
    // (64, 62, 64): k in two chunks in f64 and partial column tiles; (9, 12, 0): C = βC.
    let shapes = [
        (12, 35, 9),
        (64, 3, 20),
        (5, 17, 64),
        (33, 33, 1),
        (9, 64, 61),
        (7, 6, 5),
        (64, 62, 64),
        (9, 12, 0),
    ];
    for (si, &(m, n, k)) in shapes.iter().enumerate() {
        for count in [1, 257] {
            let seed = 50 + 3 * si as u64;
            // Every transpose pair, and shared operands without transposes (each
            // combination is a kernel compiled for the shape: slow on CPU Vulkan).
            let cases = [
                (false, false, false, false),
                (true, false, false, false),
                (false, true, false, false),
                (true, true, false, false),
                (false, false, true, false),
                (false, false, false, true),
                (true, false, true, false),
                (false, true, false, true),
            ];
            for (ta, tb, sa, sb) in cases {
                let ca = if sa { 1 } else { count };
                let cb = if sb { 1 } else { count };
                let av = to_t::<T>(&random_vec::<f64>(ca * m * k, seed));
                let bv = to_t::<T>(&random_vec::<f64>(cb * k * n, seed + 1));
                let cv = to_t::<T>(&random_vec::<f64>(count * m * n, seed + 2));
                let (ar, ac) = if ta { (k, m) } else { (m, k) };
                let (br, bc) = if tb { (n, k) } else { (k, n) };
                let a = Batch::from_slice(b, ca, ar, ac, &av).unwrap();
                let bb = Batch::from_slice(b, cb, br, bc, &bv).unwrap();
                let mut c = Batch::from_slice(b, count, m, n, &cv).unwrap();
                gemm(&params::<T>(0.75, -1.25, ta, tb), &a, &bb, &mut c).unwrap();
                let mut expected = vec![0.0; count * m * n];
                for mat in 0..count {
                    let (abase, bbase) = (
                        if sa { 0 } else { mat * m * k },
                        if sb { 0 } else { mat * k * n },
                    );
                    for i in 0..m {
                        for j in 0..n {
                            let dot: f64 = (0..k)
                                .map(|l| {
                                    let x = if ta {
                                        av[abase + l * m + i]
                                    } else {
                                        av[abase + i * k + l]
                                    };
                                    let y = if tb {
                                        bv[bbase + j * k + l]
                                    } else {
                                        bv[bbase + l * n + j]
                                    };
                                    x.as_f64() * y.as_f64()
                                })
                                .sum();
                            let e = mat * m * n + i * n + j;
                            expected[e] = 0.75 * dot - 1.25 * cv[e].as_f64();
                        }
                    }
                }
                assert_close(
                    &c.to_vec().unwrap(),
                    &expected,
                    k + 1,
                    &format!("gemm {m}x{n}x{k} count={count} ta={ta} tb={tb} sa={sa} sb={sb}"),
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
    for n in SIZES {
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

/// A singular member (LU) and a non-SPD member (Cholesky) are reported by index; their
/// neighbours are computed exactly as without them.
fn batched_status_isolates_bad_members<B: Backend, T: Scalar>(b: &B) {
    // n = 5: the register kernels on GPUs; n = 12, 40: the shared-memory kernels (several
    // matrices a cube, or one on wgpu's budget at 40).
    for n in [5, 12, 40] {
        let count = 9;
        let mut host = matrices(count, n, false, 31);
        // Matrix 3: column 2 is zero -> zero pivot at step 2 (LAPACK info 3) or later.
        for i in 0..n {
            host[3 * n * n + i * n + 2] = 0.0;
        }
        let clean = matrices(count, n, false, 31);
        let f = lu::<B, T, T>(
            Batch::from_slice(b, count, n, n, &to_t::<T>(&host)).unwrap(),
            Pivoting::Partial,
        )
        .unwrap();
        let g = lu::<B, T, T>(
            Batch::from_slice(b, count, n, n, &to_t::<T>(&clean)).unwrap(),
            Pivoting::Partial,
        )
        .unwrap();
        let failures = f.status().failures().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].0, 3);
        assert!(failures[0].1 >= 1 && failures[0].1 <= n as i32);
        let (fs, gs) = (f.factors().to_vec().unwrap(), g.factors().to_vec().unwrap());
        for m in (0..count).filter(|&m| m != 3) {
            assert_eq!(
                fs[m * n * n..(m + 1) * n * n],
                gs[m * n * n..(m + 1) * n * n],
                "neighbour {m} changed"
            );
        }
        let mut spd = matrices(count, n, true, 32);
        spd[6 * n * n + n + 1] = -1.0; // a negative diagonal entry: not positive definite
        let (_, status) =
            cholesky::<B, T, T>(Batch::from_slice(b, count, n, n, &to_t::<T>(&spd)).unwrap())
                .unwrap();
        assert_eq!(
            status
                .failures()
                .unwrap()
                .iter()
                .map(|f| f.0)
                .collect::<Vec<_>>(),
            vec![6]
        );
        // The inverse reports the same member and leaves the others as without it.
        let (inv_bad, st) =
            inverse::<B, T, T>(&Batch::from_slice(b, count, n, n, &to_t::<T>(&host)).unwrap())
                .unwrap();
        let (inv_clean, _) =
            inverse::<B, T, T>(&Batch::from_slice(b, count, n, n, &to_t::<T>(&clean)).unwrap())
                .unwrap();
        let bad = st.failures().unwrap();
        assert_eq!(
            bad.iter().map(|f| f.0).collect::<Vec<_>>(),
            vec![3],
            "{bad:?}"
        );
        let (ib, ic) = (inv_bad.to_vec().unwrap(), inv_clean.to_vec().unwrap());
        for m in (0..count).filter(|&m| m != 3) {
            assert_eq!(
                ib[m * n * n..(m + 1) * n * n],
                ic[m * n * n..(m + 1) * n * n],
                "inverse of neighbour {m} changed"
            );
        }
    }
}

backend_tests!(
    batched_gemm,
    batched_gemm_rectangular,
    batched_lu_inverse,
    batched_cholesky,
    batched_triangular_solve,
    batched_inverse_needs_pivoting,
    batched_status_isolates_bad_members
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

backend_tests!(batched_mixed_precision);

/// The kinds of matrix of the status test: well conditioned, exactly singular in four ways,
/// and nearly singular (a duplicated row perturbed well above the singularity threshold).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Regular,
    DuplicateRow,
    ScaledRow,
    DuplicateColumn,
    ZeroRow,
    NearlyDuplicate,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Regular,
        Kind::DuplicateRow,
        Kind::ScaledRow,
        Kind::DuplicateColumn,
        Kind::ZeroRow,
        Kind::NearlyDuplicate,
    ];

    /// Whether matrices of this kind and size are singular (too small for their pattern,
    /// they get a zero row instead).
    fn singular(self, n: usize) -> bool {
        match self {
            Kind::Regular => false,
            Kind::NearlyDuplicate => n == 1,
            _ => true,
        }
    }
}

/// `count` matrices of `kind`: small integers (exact in every precision), so the exact
/// singular ones are singular in every precision; the rows involved vary per matrix. (A
/// row that is the sum of two others is singular too, but elimination leaves a pivot of a
/// few hundred ε there, not a few ε: see the Status section of `galerkin::batched`.)
fn status_matrices<T: Scalar>(count: usize, n: usize, kind: Kind, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count * n * n);
    // Perturbation of the nearly singular kind: far above n ε, far below 1.
    let delta = if T::EPS < 1e-10 { 1e-6 } else { 1e-2 };
    for _ in 0..count {
        let mut m: Vec<f64> = (0..n * n)
            .map(|_| (rng.below(9) as f64 - 4.0).max(-4.0))
            .collect();
        for i in 0..n {
            m[i * n + i] += 4.0 * n as f64; // well conditioned unless made singular below
        }
        let (i, j) = (rng.below(n), rng.below(n));
        let (i, j) = if i == j { (i, (i + 1) % n) } else { (i, j) };
        match kind {
            Kind::Regular => {}
            Kind::DuplicateRow | Kind::NearlyDuplicate if n > 1 => {
                for c in 0..n {
                    m[j * n + c] = m[i * n + c];
                    if kind == Kind::NearlyDuplicate {
                        m[j * n + c] += delta * (1.0 + (c % 3) as f64) * n as f64;
                    }
                }
            }
            Kind::ScaledRow if n > 1 => {
                for c in 0..n {
                    m[j * n + c] = -2.0 * m[i * n + c];
                }
            }
            Kind::DuplicateColumn if n > 1 => {
                for r in 0..n {
                    m[r * n + j] = m[r * n + i];
                }
            }
            Kind::ZeroRow => m[i * n..(i + 1) * n].fill(0.0),
            _ => m[i * n..(i + 1) * n].fill(0.0), // too small for the pattern: a zero row
        }
        out.extend(m);
    }
    out
}

/// Gram matrices `G = M Mᵀ` (+ a regularising multiple of I unless `singular`): positive
/// definite, or semidefinite with a duplicated row of `M` (exactly, in integers).
fn gram_matrices(count: usize, n: usize, singular: bool, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count * n * n);
    for _ in 0..count {
        let mut m: Vec<f64> = (0..n * n).map(|_| rng.below(5) as f64 - 2.0).collect();
        if singular {
            let i = rng.below(n);
            let j = (i + 1 + rng.below(n.max(2) - 1)) % n;
            if i != j {
                for c in 0..n {
                    m[j * n + c] = m[i * n + c];
                }
            } else {
                m.fill(0.0);
            }
        }
        for r in 0..n {
            for c in 0..n {
                let g: f64 = (0..n).map(|k| m[r * n + k] * m[c * n + k]).sum();
                out.push(g + if !singular && r == c { n as f64 } else { 0.0 });
            }
        }
    }
    out
}

/// The status codes of LU (with and without pivoting), the inverse (the register
/// Gauss–Jordan kernel for n <= 8 on GPUs, LU elsewhere) and Cholesky are the same on every
/// backend as on the CPU, for regular, exactly singular and nearly singular matrices at
/// every size and kernel path (registers, staged whole or row by row, shared memory with
/// the scale column, and the 64 x 64 f64 path without one on 32 KiB devices).
fn batched_status_same_on_every_backend<B: Backend, T: Scalar>(b: &B) {
    let cpu = galerkin::Cpu::new();
    let sizes: Vec<usize> = (1..=9).chain([16, 20, 27, 31, 32, 33, 63, 64]).collect();
    for n in sizes {
        let count = if n > 16 { 7 } else { 33 };
        for kind in Kind::ALL {
            let host = to_t::<T>(&status_matrices::<T>(count, n, kind, 1000 + n as u64));
            let on = |backend: &B| Batch::from_slice(backend, count, n, n, &host).unwrap();
            let on_cpu = || Batch::from_slice(&cpu, count, n, n, &host).unwrap();
            for pivoting in [Pivoting::Partial, Pivoting::None] {
                let got = lu::<B, T, T>(on(b), pivoting)
                    .unwrap()
                    .status()
                    .codes()
                    .unwrap();
                let want = lu::<_, T, T>(on_cpu(), pivoting)
                    .unwrap()
                    .status()
                    .codes()
                    .unwrap();
                assert_eq!(got, want, "LU ({pivoting:?}) n = {n}, {kind:?}");
                if pivoting == Pivoting::Partial {
                    let flagged = want.iter().all(|&c| c != 0);
                    assert_eq!(flagged, kind.singular(n), "n = {n}, {kind:?}: {want:?}");
                }
            }
            let (_, got) = inverse::<B, T, T>(&on(b)).unwrap();
            let (_, want) = inverse::<_, T, T>(&on_cpu()).unwrap();
            let (got, want) = (got.codes().unwrap(), want.codes().unwrap());
            assert_eq!(got, want, "inverse n = {n}, {kind:?}");
            assert_eq!(
                want.iter().all(|&c| c != 0),
                kind.singular(n),
                "inverse n = {n}, {kind:?}: {want:?}"
            );
        }
        for singular in [false, true] {
            let host = to_t::<T>(&gram_matrices(count, n, singular, 2000 + n as u64));
            let (_, got) =
                cholesky::<B, T, T>(Batch::from_slice(b, count, n, n, &host).unwrap()).unwrap();
            let (_, want) =
                cholesky::<_, T, T>(Batch::from_slice(&cpu, count, n, n, &host).unwrap()).unwrap();
            let (got, want) = (got.codes().unwrap(), want.codes().unwrap());
            assert_eq!(got, want, "Cholesky n = {n}, singular {singular}");
            assert_eq!(
                want.iter().all(|&c| c != 0),
                singular,
                "Cholesky n = {n}, singular {singular}: {want:?}"
            );
        }
    }
}

backend_tests!(batched_status_same_on_every_backend);
