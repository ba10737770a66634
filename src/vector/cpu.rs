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

/// Sums `term(i)` for `i` in `0..len` with the deterministic chunked scheme of the module.
pub(crate) fn reduce_sum(len: usize, term: impl Fn(usize) -> f64 + Sync + Send) -> f64 {
    let chunk_sum = |c: usize| -> f64 {
        let start = c * CHUNK;
        let end = (start + CHUNK).min(len);
        let mut lanes = [0.0f64; 8];
        let mut i = start;
        while i + 8 <= end {
            for (l, lane) in lanes.iter_mut().enumerate() {
                *lane += term(i + l);
            }
            i += 8;
        }
        for (l, lane) in lanes.iter_mut().enumerate().take(end - i) {
            *lane += term(i + l);
        }
        ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))
    };
    let nchunks = len.div_ceil(CHUNK);
    if nchunks <= 1 {
        return if len == 0 { 0.0 } else { chunk_sum(0) };
    }
    let partials: Vec<f64> = if len < SERIAL_BELOW {
        (0..nchunks).map(chunk_sum).collect()
    } else {
        (0..nchunks).into_par_iter().map(chunk_sum).collect()
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
    reduce_sum(x.len(), |i| x[i].as_f64() * y[i].as_f64())
}

/// `‖x‖₂`, accumulated in f64, rescaled when the sum of squares over- or underflows.
pub(crate) fn nrm2<T: Scalar>(x: &[T]) -> f64 {
    let sumsq = reduce_sum(x.len(), |i| {
        let v = x[i].as_f64();
        v * v
    });
    if sumsq.is_finite() && sumsq > f64::MIN_POSITIVE / f64::EPSILON {
        return sumsq.sqrt();
    }
    let scale = amax(x);
    if scale == 0.0 || !scale.is_finite() {
        return if scale.is_nan() { f64::NAN } else { scale };
    }
    let scaled = reduce_sum(x.len(), |i| {
        let v = x[i].as_f64() / scale;
        v * v
    });
    scale * scaled.sqrt()
}

/// `max |x[i]|`; NaN if any element is NaN; 0 for an empty vector.
pub(crate) fn amax<T: Scalar>(x: &[T]) -> f64 {
    let chunk_max = |c: &[T]| {
        c.iter().fold(0.0f64, |m, &v| {
            let a = v.as_f64().abs();
            if a > m || a.is_nan() || m.is_nan() {
                if m.is_nan() {
                    m
                } else {
                    a
                }
            } else {
                m
            }
        })
    };
    let combine = |a: f64, b: f64| if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) };
    if x.len() < SERIAL_BELOW {
        chunk_max(x)
    } else {
        x.par_chunks(CHUNK).map(chunk_max).reduce(|| 0.0, combine)
    }
}

/// The fused CG update `x += alpha p; r -= alpha q`, returning the new `r · r`
/// (accumulated in f64) from the same pass.
pub(crate) fn cg_update<T: Scalar>(alpha: T, p: &[T], q: &[T], x: &mut [T], r: &mut [T]) -> f64 {
    let len = x.len();
    let body = |x: &mut [T], r: &mut [T], start: usize| -> f64 {
        let mut lanes = [0.0f64; 8];
        for i in 0..x.len() {
            x[i] = x[i] + alpha * p[start + i];
            let ri = r[i] - alpha * q[start + i];
            r[i] = ri;
            let v = ri.as_f64();
            lanes[i % 8] += v * v;
        }
        ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))
    };
    if len <= CHUNK {
        return body(x, r, 0);
    }
    let partials: Vec<f64> = if len < SERIAL_BELOW {
        x.chunks_mut(CHUNK)
            .zip(r.chunks_mut(CHUNK))
            .enumerate()
            .map(|(c, (x, r))| body(x, r, c * CHUNK))
            .collect()
    } else {
        x.par_chunks_mut(CHUNK)
            .zip(r.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(c, (x, r))| body(x, r, c * CHUNK))
            .collect()
    };
    pairwise(&partials)
}

/// The fused preconditioner step `z = d ∘ r`, returning `r · z` (accumulated in f64).
pub(crate) fn pointwise_mul_dot<T: Scalar>(d: &[T], r: &[T], z: &mut [T]) -> f64 {
    let len = z.len();
    let body = |z: &mut [T], start: usize| -> f64 {
        let mut lanes = [0.0f64; 8];
        for i in 0..z.len() {
            let ri = r[start + i];
            let zi = d[start + i] * ri;
            z[i] = zi;
            lanes[i % 8] += ri.as_f64() * zi.as_f64();
        }
        ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))
    };
    if len <= CHUNK {
        return body(z, 0);
    }
    let partials: Vec<f64> = if len < SERIAL_BELOW {
        z.chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, z)| body(z, c * CHUNK))
            .collect()
    } else {
        z.par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, z)| body(z, c * CHUNK))
            .collect()
    };
    pairwise(&partials)
}
