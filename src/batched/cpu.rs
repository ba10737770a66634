//! Rayon reference kernels of the batched dense operations: one matrix per task, plain loops
//! in the arithmetic type `T`.

use rayon::prelude::*;

use crate::backend::cpu::Cpu;
use crate::batched::{Batch, Diagonal, GemmParams, Op, Triangle};
use crate::scalar::{Element, Scalar};

fn load<V: Element, T: Scalar>(v: &[V]) -> Vec<T> {
    v.iter().map(|x| T::from_f64(x.as_f64())).collect()
}

fn store<V: Element, T: Scalar>(t: &[T], v: &mut [V]) {
    for (d, s) in v.iter_mut().zip(t) {
        *d = V::from_f64(s.as_f64());
    }
}

/// Overwrites every matrix with the identity.
pub(crate) fn set_identity<V: Element>(b: &mut Batch<Cpu, V>) {
    let (r, c) = (b.nrows, b.ncols);
    if r * c == 0 {
        return;
    }
    b.data.par_chunks_mut(r * c).for_each(|m| {
        for i in 0..r {
            for j in 0..c {
                m[i * c + j] = V::from_f64(if i == j { 1.0 } else { 0.0 });
            }
        }
    });
}

/// `C = α op(A) op(B) + β C` (`A` or `B` may be shared).
pub(crate) fn gemm<V: Element, T: Scalar>(
    params: &GemmParams<T>,
    a: &Batch<Cpu, V>,
    b: &Batch<Cpu, V>,
    c: &mut Batch<Cpu, V>,
) {
    let GemmParams {
        alpha,
        beta,
        op_a,
        op_b,
    } = *params;
    let (m, n) = (c.nrows, c.ncols);
    let k = if op_a == Op::None { a.ncols } else { a.nrows };
    let (sa, sb) = (a.nrows * a.ncols, b.nrows * b.ncols);
    let at = |mat: &[V], i: usize, l: usize| match op_a {
        Op::None => mat[i * a.ncols + l],
        Op::Transpose => mat[l * a.ncols + i],
    };
    let bt = |mat: &[V], l: usize, j: usize| match op_b {
        Op::None => mat[l * b.ncols + j],
        Op::Transpose => mat[j * b.ncols + l],
    };
    let (ad, bd) = (&a.data, &b.data);
    let (shared_a, shared_b) = (a.count == 1, b.count == 1);
    if m * n == 0 {
        return;
    }
    c.data
        .par_chunks_mut(m * n)
        .enumerate()
        .for_each(|(idx, cm)| {
            let am = if shared_a {
                &ad[..sa]
            } else {
                &ad[idx * sa..(idx + 1) * sa]
            };
            let bm = if shared_b {
                &bd[..sb]
            } else {
                &bd[idx * sb..(idx + 1) * sb]
            };
            for i in 0..m {
                for j in 0..n {
                    let mut acc = T::ZERO;
                    for l in 0..k {
                        acc +=
                            T::from_f64(at(am, i, l).as_f64()) * T::from_f64(bt(bm, l, j).as_f64());
                    }
                    let old = T::from_f64(cm[i * n + j].as_f64());
                    let v = if beta == T::ZERO {
                        alpha * acc
                    } else {
                        alpha * acc + beta * old
                    };
                    cm[i * n + j] = V::from_f64(v.as_f64());
                }
            }
        });
}

/// LU of one matrix in place (`T` arithmetic); returns the status. Step `k` counts as a
/// zero pivot when `|u_kk| ≤ 4 n ε s` with `s` the largest magnitude of the original row
/// that became row `k` ([`singular_factor`]).
fn lu_one<T: Scalar>(a: &mut [T], piv: &mut [u32], n: usize, pivoting: bool) -> i32 {
    let mut info = 0;
    let mut scale: Vec<T> = (0..n).map(|i| row_scale(&a[i * n..(i + 1) * n])).collect();
    let factor = singular_factor::<T>(n);
    for k in 0..n {
        let mut p = k;
        if pivoting {
            let mut best = a[k * n + k].as_f64().abs();
            for i in k + 1..n {
                let v = a[i * n + k].as_f64().abs();
                if v > best {
                    best = v;
                    p = i;
                }
            }
        }
        piv[k] = p as u32;
        if p != k {
            for j in 0..n {
                a.swap(k * n + j, p * n + j);
            }
            scale.swap(k, p);
        }
        let d = a[k * n + k];
        if d.as_f64().abs() <= (factor * scale[k]).as_f64() {
            if info == 0 {
                info = k as i32 + 1;
            }
            continue;
        }
        for i in k + 1..n {
            let l = a[i * n + k] / d;
            a[i * n + k] = l;
            for j in k + 1..n {
                let akj = a[k * n + j];
                a[i * n + j] -= l * akj;
            }
        }
    }
    info
}

/// `max_j |row_j|`.
fn row_scale<T: Scalar>(row: &[T]) -> T {
    T::from_f64(row.iter().fold(0.0f64, |m, v| m.max(v.as_f64().abs())))
}

/// `4 n ε` of the arithmetic type: a pivot at most this times its row's scale is zero
/// ([`crate::batched`] docs, "Status"). The 4 covers the rounding that elimination leaves
/// in an exactly zero pivot on devices whose division is not correctly rounded (Vulkan
/// allows 2.5 ulp in f32): measured up to 8.3 ε s at n = 6 on an H100 (threshold 24 ε s).
pub(crate) fn singular_factor<T: Scalar>(n: usize) -> T {
    T::from_f64(4.0 * n as f64 * T::EPS)
}

/// LU of every matrix: pivots and status codes.
pub(crate) fn lu<V: Element, T: Scalar>(
    a: &mut Batch<Cpu, V>,
    pivoting: bool,
) -> (Vec<u32>, Vec<i32>) {
    let n = a.nrows;
    let mut pivots = vec![0u32; a.count * n];
    let mut codes = vec![0i32; a.count];
    if n == 0 {
        return (pivots, codes);
    }
    a.data
        .par_chunks_mut(n * n)
        .zip(pivots.par_chunks_mut(n))
        .zip(codes.par_iter_mut())
        .for_each(|((m, piv), code)| {
            let mut t = load::<V, T>(m);
            *code = lu_one(&mut t, piv, n, pivoting);
            store(&t, m);
        });
    (pivots, codes)
}

/// One triangular sweep over every column of `x` (`n x nrhs`): forward with the lower
/// triangle of `f` (`lower`), else backward with the upper triangle, or with the transpose
/// of the lower one (`transposed`: Cholesky's `Lᵀ`); a unit or the stored diagonal.
fn sweep<T: Scalar>(
    f: &[T],
    x: &mut [T],
    n: usize,
    nrhs: usize,
    lower: bool,
    unit: bool,
    transposed: bool,
) {
    for c in 0..nrhs {
        for step in 0..n {
            let i = if lower { step } else { n - 1 - step };
            let mut s = x[i * nrhs + c];
            let range = if lower { 0..i } else { i + 1..n };
            for k in range {
                let fik = if transposed {
                    f[k * n + i]
                } else {
                    f[i * n + k]
                };
                s -= fik * x[k * nrhs + c];
            }
            x[i * nrhs + c] = if unit { s } else { s / f[i * n + i] };
        }
    }
}

/// Runs `solve(index, factors, x)` on every matrix of `b` (`n x nrhs` each, in the
/// arithmetic type `T`) with its factors from `f`, in parallel over the batch.
fn each_solve<V: Element, T: Scalar>(
    f: &Batch<Cpu, V>,
    b: &mut Batch<Cpu, V>,
    solve: impl Fn(usize, &[T], &mut [T]) + Sync,
) {
    let (n, nrhs) = (f.nrows, b.ncols);
    if n * nrhs == 0 {
        return;
    }
    b.data
        .par_chunks_mut(n * nrhs)
        .enumerate()
        .for_each(|(idx, bm)| {
            let factors = load::<V, T>(&f.data[idx * n * n..(idx + 1) * n * n]);
            let mut x = load::<V, T>(bm);
            solve(idx, &factors, &mut x);
            store(&x, bm);
        });
}

/// Solves with LU factors in place: the row interchanges, then unit `L` and `U`.
pub(crate) fn lu_solve<V: Element, T: Scalar>(
    lu: &Batch<Cpu, V>,
    pivots: &[u32],
    b: &mut Batch<Cpu, V>,
) {
    let (n, nrhs) = (lu.nrows, b.ncols);
    each_solve::<V, T>(lu, b, |idx, f, x| {
        for k in 0..n {
            let p = pivots[idx * n + k] as usize;
            if p != k {
                for c in 0..nrhs {
                    x.swap(k * nrhs + c, p * nrhs + c);
                }
            }
        }
        sweep(f, x, n, nrhs, true, true, false);
        sweep(f, x, n, nrhs, false, false, false);
    });
}

/// Cholesky of every matrix in place; status codes.
pub(crate) fn cholesky<V: Element, T: Scalar>(a: &mut Batch<Cpu, V>) -> Vec<i32> {
    let n = a.nrows;
    let mut codes = vec![0i32; a.count];
    if n == 0 {
        return codes;
    }
    a.data
        .par_chunks_mut(n * n)
        .zip(codes.par_iter_mut())
        .for_each(|(m, code)| {
            let mut t = load::<V, T>(m);
            let factor = singular_factor::<T>(n);
            for k in 0..n {
                let d = t[k * n + k];
                // Not positive definite when the pivot is at most 4 n ε times the original
                // diagonal (`m` still holds the input).
                let limit = factor * T::from_f64(m[k * n + k].as_f64());
                if d.as_f64().partial_cmp(&limit.as_f64()) != Some(std::cmp::Ordering::Greater) {
                    if *code == 0 {
                        *code = k as i32 + 1;
                    }
                    continue;
                }
                let r = T::from_f64(d.as_f64().sqrt());
                t[k * n + k] = r;
                for i in k + 1..n {
                    t[i * n + k] /= r;
                }
                for i in k + 1..n {
                    for j in k + 1..=i {
                        let v = t[i * n + k] * t[j * n + k];
                        t[i * n + j] -= v;
                    }
                }
            }
            for i in 0..n {
                for j in i + 1..n {
                    t[i * n + j] = T::ZERO;
                }
            }
            store(&t, m);
        });
    codes
}

/// Solves with Cholesky factors in place: `L`, then `Lᵀ`.
pub(crate) fn cholesky_solve<V: Element, T: Scalar>(l: &Batch<Cpu, V>, b: &mut Batch<Cpu, V>) {
    let (n, nrhs) = (l.nrows, b.ncols);
    each_solve::<V, T>(l, b, |_, f, x| {
        sweep(f, x, n, nrhs, true, false, false);
        sweep(f, x, n, nrhs, false, false, true);
    });
}

/// One triangular sweep per right-hand side: forward (`lower`) or back substitution, with a
/// unit or the stored diagonal.
pub(crate) fn triangular_solve<V: Element, T: Scalar>(
    t: &Batch<Cpu, V>,
    triangle: Triangle,
    diagonal: Diagonal,
    b: &mut Batch<Cpu, V>,
) {
    let (lower, unit) = (triangle == Triangle::Lower, diagonal == Diagonal::Unit);
    let (n, nrhs) = (t.nrows, b.ncols);
    each_solve::<V, T>(t, b, |_, f, x| sweep(f, x, n, nrhs, lower, unit, false));
}
