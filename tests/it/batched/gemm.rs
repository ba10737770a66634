//! GEMM and GEMV: square batches with every transpose and shared operands, rectangular
//! shapes, against a plain f64 loop.

use galerkin::batched::{gemm, gemv, Batch, GemmParams, Op};
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Scalar};

use super::{count_for, to_t, widen, COUNTS, EVERY_SIDE, SIDES};
use crate::backend_tests;
use crate::harness::assert_close;

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
    batched_gemm_at::<B, T>(b, &SIDES);
}

fn batched_gemm_every_side<B: Backend, T: Scalar>(b: &B) {
    batched_gemm_at::<B, T>(b, &EVERY_SIDE);
}

fn batched_gemm_at<B: Backend, T: Scalar>(b: &B, sides: &[usize]) {
    for &n in sides {
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

backend_tests!(batched_gemm);
backend_tests!(tier2: batched_gemm_every_side);
backend_tests!(tier2_devices: batched_gemm_rectangular);
