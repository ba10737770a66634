//! Rayon kernels of the vector operations: the reference every device kernel is checked
//! against.
//!
//! Reductions are deterministic for a given length, whatever the number of threads: the
//! vector is cut into fixed chunks of [`CHUNK`] elements, each chunk is summed into eight
//! f64 lanes (element `i` of the chunk goes to lane `i % 8`), the lanes are added in a
//! fixed order, and the chunk sums are added pairwise. Accumulation is in f64 for every
//! element type, so an f32 dot product of 10^8 elements is as accurate as the f64 one
//! rounded to f32.

use rayon::prelude::*;

use crate::scalar::{Element, Scalar};

/// Elements per reduction chunk and per parallel task.
pub(crate) const CHUNK: usize = 1 << 14;

/// Length below which the kernels run on the calling thread.
const SERIAL_BELOW: usize = 1 << 15;

/// Runs `body` on matching chunks of `y` (written) and the read-only inputs.
fn for_chunks<T: Send + Sync>(y: &mut [T], body: impl Fn(usize, &mut [T]) + Sync + Send) {
    if y.len() < SERIAL_BELOW {
        body(0, y);
    } else {
        y.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| body(c * CHUNK, chunk));
    }
}

/// `x[i] = value`.
pub(crate) fn fill<T: Element>(x: &mut [T], value: T) {
    for_chunks(x, |_, x| x.fill(value));
}

/// `y[i] = x[i]`.
pub(crate) fn copy<T: Element>(x: &[T], y: &mut [T]) {
    for_chunks(y, |start, y| y.copy_from_slice(&x[start..start + y.len()]));
}

/// `x[i] = alpha x[i]`.
pub(crate) fn scale<T: Scalar>(alpha: T, x: &mut [T]) {
    for_chunks(x, |_, x| x.iter_mut().for_each(|v| *v = alpha * *v));
}

/// `y[i] = alpha x[i] + y[i]`.
pub(crate) fn axpy<T: Scalar>(alpha: T, x: &[T], y: &mut [T]) {
    for_chunks(y, |start, y| {
        let x = &x[start..start + y.len()];
        y.iter_mut().zip(x).for_each(|(y, &x)| *y = alpha * x + *y);
    });
}

/// `y[i] = alpha x[i] + beta y[i]`.
pub(crate) fn axpby<T: Scalar>(alpha: T, x: &[T], beta: T, y: &mut [T]) {
    for_chunks(y, |start, y| {
        let x = &x[start..start + y.len()];
        y.iter_mut()
            .zip(x)
            .for_each(|(y, &x)| *y = alpha * x + beta * *y);
    });
}

/// `z[i] = x[i] y[i]`.
pub(crate) fn pointwise_mul<T: Scalar>(x: &[T], y: &[T], z: &mut [T]) {
    for_chunks(z, |start, z| {
        let end = start + z.len();
        let (x, y) = (&x[start..end], &y[start..end]);
        for i in 0..z.len() {
            z[i] = x[i] * y[i];
        }
    });
}

/// `z[i] = x[i] / y[i]`.
pub(crate) fn pointwise_div<T: Scalar>(x: &[T], y: &[T], z: &mut [T]) {
    for_chunks(z, |start, z| {
        let end = start + z.len();
        let (x, y) = (&x[start..end], &y[start..end]);
        for i in 0..z.len() {
            z[i] = x[i] / y[i];
        }
    });
}

/// `dst[i] = src[i]` converted with one rounding (through f64, which holds every element
/// type exactly).
pub(crate) fn convert<S: Element, D: Element>(src: &[S], dst: &mut [D]) {
    for_chunks(dst, |start, dst| {
        let src = &src[start..start + dst.len()];
        dst.iter_mut()
            .zip(src)
            .for_each(|(d, &s)| *d = D::from_f64(s.as_f64()));
    });
}

/// `p[i] = round(r[i]) + beta p[i]`: [`axpby`] with `alpha = 1` where the types agree (the
/// same bits), `r` rounded to `p`'s precision first otherwise.
pub(crate) fn xpay_convert<L: Scalar, T: Scalar>(r: &[L], beta: T, p: &mut [T]) {
    for_chunks(p, |start, p| {
        let r = &r[start..start + p.len()];
        p.iter_mut()
            .zip(r)
            .for_each(|(p, &r)| *p = T::ONE * T::from_f64(r.as_f64()) + beta * *p);
    });
}

/// [`dot`] of `x` with `y` rounded to `x`'s precision (the same sum as `dot(x, round(y))`).
pub(crate) fn dot_mixed<T: Scalar, L: Scalar>(x: &[T], y: &[L]) -> f64 {
    reduce_chunks(x.len(), |s, e| {
        lanes2(&x[s..e], &y[s..e], |a, b| a * T::from_f64(b).as_f64())
    })
}

/// Adds eight f64 lanes in a fixed order.
fn combine(l: [f64; 8]) -> f64 {
    ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

/// Sums `term(a[i], b[i])` over two equal-length slices (of one precision or two) into
/// eight f64 lanes (element `i` to lane `i % 8`).
#[inline(always)]
fn lanes2<T: Scalar, U: Scalar>(a: &[T], b: &[U], term: impl Fn(f64, f64) -> f64) -> f64 {
    let mut lanes = [0.0f64; 8];
    let (ac, ar) = a.as_chunks::<8>();
    let (bc, br) = b.as_chunks::<8>();
    for (a, b) in ac.iter().zip(bc) {
        for l in 0..8 {
            lanes[l] += term(a[l].as_f64(), b[l].as_f64());
        }
    }
    for (l, (a, b)) in ar.iter().zip(br).enumerate() {
        lanes[l] += term(a.as_f64(), b.as_f64());
    }
    combine(lanes)
}

/// Sums `chunk_sum(start, end)` over the fixed chunks of `0..len`, adding the chunk sums
/// pairwise: the deterministic scheme of the module.
pub(crate) fn reduce_chunks(
    len: usize,
    chunk_sum: impl Fn(usize, usize) -> f64 + Sync + Send,
) -> f64 {
    let nchunks = len.div_ceil(CHUNK);
    let one = |c: usize| chunk_sum(c * CHUNK, ((c + 1) * CHUNK).min(len));
    let partials: Vec<f64> = if len < SERIAL_BELOW {
        (0..nchunks).map(one).collect()
    } else {
        (0..nchunks).into_par_iter().map(one).collect()
    };
    pairwise(&partials)
}

/// Pairwise (recursive halving) sum, in a fixed order.
pub(crate) fn pairwise(v: &[f64]) -> f64 {
    match v.len() {
        0 => 0.0,
        1 => v[0],
        n => pairwise(&v[..n / 2]) + pairwise(&v[n / 2..]),
    }
}

/// `x · y`, accumulated in f64.
pub(crate) fn dot<T: Scalar>(x: &[T], y: &[T]) -> f64 {
    reduce_chunks(x.len(), |s, e| lanes2(&x[s..e], &y[s..e], |a, b| a * b))
}

/// `Σ (s xᵢ)²`, accumulated in f64.
fn sumsq<T: Scalar>(x: &[T], s: f64) -> f64 {
    reduce_chunks(x.len(), |a, e| {
        lanes2(&x[a..e], &x[a..e], |v, _| {
            let v = v * s;
            v * v
        })
    })
}

/// `‖x‖₂`, accumulated in f64, rescaled when the sum of squares over- or underflows.
pub(crate) fn nrm2<T: Scalar>(x: &[T]) -> f64 {
    let total = sumsq(x, 1.0);
    if total.is_finite() && total > f64::MIN_POSITIVE / f64::EPSILON {
        return total.sqrt();
    }
    let scale = amax(x);
    if scale == 0.0 || !scale.is_finite() {
        return scale;
    }
    scale * sumsq(x, 1.0 / scale).sqrt()
}

/// `max |x[i]|`; NaN if any element is NaN; 0 for an empty vector.
pub(crate) fn amax<T: Scalar>(x: &[T]) -> f64 {
    let chunk_max = |c: &[T]| {
        c.iter().fold(0.0f64, |m, &v| {
            let a = v.as_f64().abs();
            if m.is_nan() || a.is_nan() {
                f64::NAN
            } else {
                m.max(a)
            }
        })
    };
    let combine = |a: f64, b: f64| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    };
    if x.len() < SERIAL_BELOW {
        chunk_max(x)
    } else {
        x.par_chunks(CHUNK).map(chunk_max).reduce(|| 0.0, combine)
    }
}

/// Runs `body(start, chunk_of_a, chunk_of_b)` on the fixed chunks of two mutable slices and
/// adds the returned chunk sums pairwise.
fn reduce_chunks_mut2<T: Scalar>(
    a: &mut [T],
    b: &mut [T],
    body: impl Fn(usize, &mut [T], &mut [T]) -> f64 + Sync + Send,
) -> f64 {
    let partials: Vec<f64> = if a.len() < SERIAL_BELOW {
        a.chunks_mut(CHUNK)
            .zip(b.chunks_mut(CHUNK))
            .enumerate()
            .map(|(c, (a, b))| body(c * CHUNK, a, b))
            .collect()
    } else {
        a.par_chunks_mut(CHUNK)
            .zip(b.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(c, (a, b))| body(c * CHUNK, a, b))
            .collect()
    };
    pairwise(&partials)
}

/// Runs `body(start, chunk)` on the fixed chunks of a mutable slice and adds the returned
/// chunk sums pairwise (the one-slice form of [`reduce_chunks_mut2`]).
fn reduce_chunks_mut<T: Scalar>(
    a: &mut [T],
    body: impl Fn(usize, &mut [T]) -> f64 + Sync + Send,
) -> f64 {
    let partials: Vec<f64> = if a.len() < SERIAL_BELOW {
        a.chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, a)| body(c * CHUNK, a))
            .collect()
    } else {
        a.par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, a)| body(c * CHUNK, a))
            .collect()
    };
    pairwise(&partials)
}

/// `r −= alpha q` on one chunk, returning its `r · r`.
fn residual_chunk<T: Scalar>(alpha: T, q: &[T], r: &mut [T]) -> f64 {
    for (r, q) in r.iter_mut().zip(q) {
        *r -= alpha * *q;
    }
    lanes2(r, r, |v, _| v * v)
}

/// The fused CG update `x += alpha p; r -= alpha q`, returning the new `r · r`
/// (accumulated in f64) from the same pass.
pub(crate) fn cg_update<T: Scalar>(alpha: T, p: &[T], q: &[T], x: &mut [T], r: &mut [T]) -> f64 {
    reduce_chunks_mut2(x, r, |start, x, r| {
        let end = start + x.len();
        for (x, p) in x.iter_mut().zip(&p[start..end]) {
            *x += alpha * *p;
        }
        residual_chunk(alpha, &q[start..end], r)
    })
}

/// `r −= α q`, returning `r · r` (the residual half of [`cg_update`], the same sums).
pub(crate) fn residual_update<T: Scalar>(alpha: T, q: &[T], r: &mut [T]) -> f64 {
    reduce_chunks_mut(r, |start, r| {
        residual_chunk(alpha, &q[start..start + r.len()], r)
    })
}

/// `r · (d ∘ r)`, accumulated in f64, the product `d ∘ r` rounded to `T` first: the same
/// value, bit for bit, as [`pointwise_mul_dot`] returns (for PCG-Jacobi without storing z).
pub(crate) fn jacobi_dot<T: Scalar>(d: &[T], r: &[T]) -> f64 {
    reduce_chunks(r.len(), |s, e| {
        lanes2(&r[s..e], &d[s..e], |r, d| r * T::from_f64(d * r).as_f64())
    })
}

/// `p = d ∘ r + beta p` (the PCG-Jacobi direction; `d ∘ r` rounded to `T` first, as when z
/// is stored).
pub(crate) fn jacobi_xpay<T: Scalar>(d: &[T], r: &[T], beta: T, p: &mut [T]) {
    for_chunks(p, |start, p| {
        let end = start + p.len();
        let (d, r) = (&d[start..end], &r[start..end]);
        for i in 0..p.len() {
            p[i] = d[i] * r[i] + beta * p[i];
        }
    });
}

/// The fused preconditioner step `z = d ∘ r`, returning `r · z` (accumulated in f64).
pub(crate) fn pointwise_mul_dot<T: Scalar>(d: &[T], r: &[T], z: &mut [T]) -> f64 {
    let partials: Vec<f64> = if z.len() < SERIAL_BELOW {
        z.chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, z)| mul_dot_chunk(c * CHUNK, d, r, z))
            .collect()
    } else {
        z.par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, z)| mul_dot_chunk(c * CHUNK, d, r, z))
            .collect()
    };
    pairwise(&partials)
}

fn mul_dot_chunk<T: Scalar>(start: usize, d: &[T], r: &[T], z: &mut [T]) -> f64 {
    let end = start + z.len();
    let (d, r) = (&d[start..end], &r[start..end]);
    for ((z, d), r) in z.iter_mut().zip(d).zip(r) {
        *z = *d * *r;
    }
    lanes2(r, z, |a, b| a * b)
}

/// One Chronopoulos–Gear step of distributed CG after its global sums, in one pass:
/// `p = u + beta p; s = w + beta s; x += alpha p; r -= alpha s` (`u` is `r` itself where
/// there is no `u`), then `u = d ∘ r` where `d` is given. Returns `(r · r, r · u)` of the new
/// vectors, accumulated in f64 (`r · u` is `r · r` without `d`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn cgcg_update<T: Scalar>(
    alpha: T,
    beta: T,
    d: Option<&[T]>,
    u: Option<&mut [T]>,
    w: &[T],
    p: &mut [T],
    s: &mut [T],
    x: &mut [T],
    r: &mut [T],
) -> (f64, f64) {
    let n = r.len();
    let us: Vec<Option<&mut [T]>> = match u {
        Some(u) => u.chunks_mut(CHUNK).map(Some).collect(),
        None => (0..n.div_ceil(CHUNK)).map(|_| None).collect(),
    };
    let tasks: Vec<_> = p
        .chunks_mut(CHUNK)
        .zip(s.chunks_mut(CHUNK))
        .zip(x.chunks_mut(CHUNK))
        .zip(r.chunks_mut(CHUNK))
        .zip(us)
        .enumerate()
        .collect();
    type Task<'a, T> = (
        usize,
        (
            (((&'a mut [T], &'a mut [T]), &'a mut [T]), &'a mut [T]),
            Option<&'a mut [T]>,
        ),
    );
    let body = |(c, ((((p, s), x), r), mut u)): Task<'_, T>| -> (f64, f64) {
        let start = c * CHUNK;
        let end = start + r.len();
        let w = &w[start..end];
        for i in 0..r.len() {
            let ui = match &u {
                Some(u) => u[i],
                None => r[i],
            };
            p[i] = ui + beta * p[i];
            s[i] = w[i] + beta * s[i];
            x[i] += alpha * p[i];
            r[i] -= alpha * s[i];
        }
        let rr = lanes2(r, r, |v, _| v * v);
        match (d, u.as_deref_mut()) {
            (Some(d), Some(u)) => {
                for ((u, d), r) in u.iter_mut().zip(&d[start..end]).zip(r.iter()) {
                    *u = *d * *r;
                }
                (rr, lanes2(r, u, |a, b| a * b))
            }
            _ => (rr, rr),
        }
    };
    let sums: Vec<(f64, f64)> = if n < SERIAL_BELOW {
        tasks.into_iter().map(body).collect()
    } else {
        tasks.into_par_iter().map(body).collect()
    };
    let (rr, ru): (Vec<f64>, Vec<f64>) = sums.into_iter().unzip();
    (pairwise(&rr), pairwise(&ru))
}
