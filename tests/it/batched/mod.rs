//! Batched dense operations on every backend and precision, against plain f64 loops and
//! against nalgebra (an independent implementation); singular and non-SPD members.
//!
//! The helpers here (sizes, counts, test matrices, conversions, the relative residual) are
//! shared by the files of the module.

use galerkin::verify::Rng;
use galerkin::Element;
use nalgebra::DMatrix;

mod factor;
mod gemm;
mod status;

/// The sides of tier 1: the register kernels (n ≤ 8, an odd and a small side) and the column
/// and row kernels (16) on the GPUs; every side the kernels switch at is in tier 2
/// ([`EVERY_SIDE`]): the tile kernels above 32 and the unrolled steps near 32 take lavapipe
/// minutes to compile.
const SIDES: [usize; 4] = [1, 3, 7, 16];
/// Every side the kernels switch at (tier 2).
const EVERY_SIDE: [usize; 8] = [1, 2, 3, 7, 16, 31, 33, 64];
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

fn to_t<T: Element>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// ‖A X − I‖ / (‖A‖ ‖X‖) and friends: residuals relative to the data, scaled by ε_T.
fn rel_residual(a: &DMatrix<f64>, x: &DMatrix<f64>, expected: &DMatrix<f64>) -> f64 {
    (a * x - expected).norm() / (a.norm() * x.norm()).max(f64::MIN_POSITIVE)
}
