//! The built-in checks: one [`StandardCheck`] per operator of the library, with its
//! inputs, its run on any backend and precision, and its f64 reference.

use crate::bundle::Backend;
use crate::error::Result;
use crate::random::random_vec;
use crate::random::Rng;
use crate::scalar::{DType, Element, Scalar};
use crate::vector::{self, Vector};
use crate::verify::compare::{poison, round_to, Check, CheckOn};

/// The checks of every operator in the library, at a size that exercises the tail handling
/// (not a multiple of any vector width or block size).
pub fn standard_checks() -> Vec<StandardCheck> {
    let len = 100_003;
    let seed = 2026;
    vec![
        StandardCheck::Fill { len, seed },
        StandardCheck::Copy { len, seed },
        StandardCheck::Scale { len, seed },
        StandardCheck::Axpy { len, seed },
        StandardCheck::Axpby { len, seed },
        StandardCheck::PointwiseMul { len, seed },
        StandardCheck::PointwiseDiv { len, seed },
        StandardCheck::Dot { len, seed },
        StandardCheck::Nrm2 { len, seed },
        StandardCheck::Amax { len, seed },
        StandardCheck::Convert { len, seed },
        StandardCheck::CgUpdate { len, seed },
        StandardCheck::PointwiseMulDot { len, seed },
    ]
    .into_iter()
    .chain(
        crate::sparse::Format::ALL
            .into_iter()
            .map(|format| StandardCheck::Spmv {
                format,
                nrows: 5_003,
                seed,
                mixed: false,
            }),
    )
    .chain([StandardCheck::Spmv {
        format: crate::sparse::Format::Csr,
        nrows: 5_003,
        seed,
        mixed: true,
    }])
    .chain([7, 33].into_iter().flat_map(|n| {
        [
            StandardCheck::BatchedGemm {
                n,
                count: 301,
                seed,
            },
            StandardCheck::BatchedLuSolve {
                n,
                count: 301,
                seed,
            },
            StandardCheck::BatchedInverse {
                n,
                count: 301,
                seed,
            },
            StandardCheck::BatchedCholeskySolve {
                n,
                count: 301,
                seed,
            },
        ]
    }))
    .collect()
}

/// The built-in checks, one per operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the same everywhere: vector length and input seed
pub enum StandardCheck {
    /// `x = v` into a poisoned vector.
    Fill { len: usize, seed: u64 },
    /// `y = x` into a poisoned vector.
    Copy { len: usize, seed: u64 },
    /// `x = α x`.
    Scale { len: usize, seed: u64 },
    /// `y = α x + y`.
    Axpy { len: usize, seed: u64 },
    /// `y = α x + β y`.
    Axpby { len: usize, seed: u64 },
    /// `z = x ∘ y` into a poisoned vector.
    PointwiseMul { len: usize, seed: u64 },
    /// `z = x / y` into a poisoned vector (y bounded away from zero).
    PointwiseDiv { len: usize, seed: u64 },
    /// `x · y`, error relative to `Σ|xᵢ yᵢ|`.
    Dot { len: usize, seed: u64 },
    /// `‖x‖₂`.
    Nrm2 { len: usize, seed: u64 },
    /// `max |xᵢ|`.
    Amax { len: usize, seed: u64 },
    /// f64 → T rounding of a vector (in f64 the identity); compares with the rounding on the host.
    Convert { len: usize, seed: u64 },
    /// `x += α p; r −= α q; r · r`: returns `[x, r, r·r / n]` concatenated.
    CgUpdate { len: usize, seed: u64 },
    /// `z = d ∘ r; r · z`: returns `[z, r·z / n]`.
    PointwiseMulDot { len: usize, seed: u64 },
    /// `y = 1.5 A x - 0.5 y` in the given sparse format for a random square matrix with empty
    /// rows and one long row; `mixed`: values stored in f32 whatever the vector precision.
    Spmv {
        format: crate::sparse::Format,
        nrows: usize,
        seed: u64,
        mixed: bool,
    },
    /// `C = 1.5 A B` for `count` random `n x n` matrices.
    BatchedGemm { n: usize, count: usize, seed: u64 },
    /// LU with pivoting and a solve with 3 right-hand sides (diagonally dominant matrices).
    BatchedLuSolve { n: usize, count: usize, seed: u64 },
    /// Inverse by LU (diagonally dominant matrices).
    BatchedInverse { n: usize, count: usize, seed: u64 },
    /// Cholesky and a solve with 2 right-hand sides (SPD matrices).
    BatchedCholeskySolve { n: usize, count: usize, seed: u64 },
}

/// Uploads `values` rounded to `inputs`, as a vector of `T`.
fn input<B: Backend, T: Scalar>(b: &B, values: &[f64], inputs: DType) -> Result<Vector<B, T>> {
    let v: Vec<T> = round_to(values, inputs)
        .into_iter()
        .map(T::from_f64)
        .collect();
    Vector::from_slice(b, &v)
}

/// A poisoned (all-NaN) output vector.
fn poisoned<B: Backend, T: Scalar>(b: &B, len: usize) -> Result<Vector<B, T>> {
    Vector::from_slice(b, &poison::<T>(len))
}

impl StandardCheck {
    fn len_seed(&self) -> (usize, u64) {
        match *self {
            StandardCheck::Fill { len, seed }
            | StandardCheck::Copy { len, seed }
            | StandardCheck::Scale { len, seed }
            | StandardCheck::Axpy { len, seed }
            | StandardCheck::Axpby { len, seed }
            | StandardCheck::PointwiseMul { len, seed }
            | StandardCheck::PointwiseDiv { len, seed }
            | StandardCheck::Dot { len, seed }
            | StandardCheck::Nrm2 { len, seed }
            | StandardCheck::Amax { len, seed }
            | StandardCheck::Convert { len, seed }
            | StandardCheck::CgUpdate { len, seed }
            | StandardCheck::PointwiseMulDot { len, seed } => (len, seed),
            StandardCheck::Spmv { nrows, seed, .. } => (nrows, seed),
            StandardCheck::BatchedGemm { n, seed, .. }
            | StandardCheck::BatchedLuSolve { n, seed, .. }
            | StandardCheck::BatchedInverse { n, seed, .. }
            | StandardCheck::BatchedCholeskySolve { n, seed, .. } => (n, seed),
        }
    }

    fn operator(&self) -> String {
        let name = match self {
            StandardCheck::Fill { .. } => "fill",
            StandardCheck::Copy { .. } => "copy",
            StandardCheck::Scale { .. } => "scale",
            StandardCheck::Axpy { .. } => "axpy",
            StandardCheck::Axpby { .. } => "axpby",
            StandardCheck::PointwiseMul { .. } => "pointwise_mul",
            StandardCheck::PointwiseDiv { .. } => "pointwise_div",
            StandardCheck::Dot { .. } => "dot",
            StandardCheck::Nrm2 { .. } => "nrm2",
            StandardCheck::Amax { .. } => "amax",
            StandardCheck::Convert { .. } => "convert f64->T",
            StandardCheck::CgUpdate { .. } => "cg_update (fused)",
            StandardCheck::PointwiseMulDot { .. } => "pointwise_mul_dot (fused)",
            StandardCheck::Spmv { format, mixed, .. } => {
                let values = if *mixed { ", f32 values" } else { "" };
                return format!("spmv {}{values}", format.label());
            }
            StandardCheck::BatchedGemm { .. } => "batched gemm",
            StandardCheck::BatchedLuSolve { .. } => "batched lu + solve",
            StandardCheck::BatchedInverse { .. } => "batched inverse",
            StandardCheck::BatchedCholeskySolve { .. } => "batched cholesky + solve",
        };
        name.into()
    }
}

impl Check for StandardCheck {
    fn name(&self) -> String {
        format!("{} n={}", self.operator(), self.len_seed().0)
    }

    fn terms(&self) -> usize {
        let (len, _) = self.len_seed();
        match self {
            StandardCheck::Dot { .. }
            | StandardCheck::Nrm2 { .. }
            | StandardCheck::CgUpdate { .. }
            | StandardCheck::PointwiseMulDot { .. } => len,
            // The longest row of the random matrix (see `Spmv`).
            StandardCheck::Spmv { .. } => 1000,
            // n operations per entry, amplified by the (small) condition numbers: n².
            StandardCheck::BatchedGemm { .. } => len,
            StandardCheck::BatchedLuSolve { .. }
            | StandardCheck::BatchedInverse { .. }
            | StandardCheck::BatchedCholeskySolve { .. } => len * len,
            _ => 1,
        }
    }

    fn scale(&self, inputs: DType) -> Option<f64> {
        let (len, seed) = self.len_seed();
        match self {
            StandardCheck::Dot { .. } => {
                let x = round_to(&random_vec::<f64>(len, seed), inputs);
                let y = round_to(&random_vec::<f64>(len, seed + 1), inputs);
                Some(x.iter().zip(&y).map(|(a, b)| (a * b).abs()).sum())
            }
            _ => None,
        }
    }
}

impl<B: Backend> CheckOn<B> for StandardCheck {
    fn run<T: Scalar>(&self, b: &B, inputs: DType) -> Result<Vec<T>> {
        let (len, seed) = self.len_seed();
        let xs = random_vec::<f64>(len, seed);
        let ys = random_vec::<f64>(len, seed + 1);
        let alpha = T::from_f64(round_to(&[0.73], inputs)[0]);
        let beta = T::from_f64(round_to(&[-1.37], inputs)[0]);
        match self {
            StandardCheck::Fill { .. } => {
                let mut x = poisoned::<B, T>(b, len)?;
                x.fill(alpha)?;
                x.to_vec()
            }
            StandardCheck::Copy { .. } => {
                let x = input::<B, T>(b, &xs, inputs)?;
                let mut y = poisoned::<B, T>(b, len)?;
                y.copy_from(&x)?;
                y.to_vec()
            }
            StandardCheck::Scale { .. } => {
                let mut x = input::<B, T>(b, &xs, inputs)?;
                x.scale(alpha)?;
                x.to_vec()
            }
            StandardCheck::Axpy { .. } => {
                let x = input::<B, T>(b, &xs, inputs)?;
                let mut y = input::<B, T>(b, &ys, inputs)?;
                y.axpy(alpha, &x)?;
                y.to_vec()
            }
            StandardCheck::Axpby { .. } => {
                let x = input::<B, T>(b, &xs, inputs)?;
                let mut y = input::<B, T>(b, &ys, inputs)?;
                y.axpby(alpha, &x, beta)?;
                y.to_vec()
            }
            StandardCheck::PointwiseMul { .. } | StandardCheck::PointwiseDiv { .. } => {
                let x = input::<B, T>(b, &xs, inputs)?;
                // Divisors in ±[0.5, 1.5): no blow-up from values near zero.
                let d: Vec<f64> = ys.iter().map(|v| v.signum() * (0.5 + v.abs())).collect();
                let y = input::<B, T>(b, &d, inputs)?;
                let mut z = poisoned::<B, T>(b, len)?;
                if matches!(self, StandardCheck::PointwiseMul { .. }) {
                    z.pointwise_mul(&x, &y)?;
                } else {
                    z.pointwise_div(&x, &y)?;
                }
                z.to_vec()
            }
            StandardCheck::Dot { .. } => {
                let x = input::<B, T>(b, &xs, inputs)?;
                let y = input::<B, T>(b, &ys, inputs)?;
                Ok(vec![x.dot(&y)?])
            }
            StandardCheck::Nrm2 { .. } => Ok(vec![input::<B, T>(b, &xs, inputs)?.nrm2()?]),
            StandardCheck::Amax { .. } => Ok(vec![input::<B, T>(b, &xs, inputs)?.amax()?]),
            StandardCheck::Convert { .. } => {
                // The source is f64 when the backend has it; the conversion rounds to T.
                if b.supports(DType::F64) {
                    let x = Vector::<B, f64>::from_slice(b, &xs)?;
                    let mut y = poisoned::<B, T>(b, len)?;
                    y.convert_from(&x)?;
                    y.to_vec()
                } else {
                    let x = input::<B, T>(b, &xs, inputs)?;
                    let mut y = poisoned::<B, T>(b, len)?;
                    y.convert_from(&x)?;
                    y.to_vec()
                }
            }
            StandardCheck::CgUpdate { .. } => {
                let p = input::<B, T>(b, &xs, inputs)?;
                let q = input::<B, T>(b, &ys, inputs)?;
                let mut x = input::<B, T>(b, &random_vec::<f64>(len, seed + 2), inputs)?;
                let mut r = input::<B, T>(b, &random_vec::<f64>(len, seed + 3), inputs)?;
                let rr = vector::cg_update(alpha, &p, &q, &mut x, &mut r)?;
                let mut out = x.to_vec()?;
                out.extend(r.to_vec()?);
                // Scaled by 1/n so that it weighs like one entry of x or r.
                out.push(T::from_f64(rr.as_f64() / len.max(1) as f64));
                Ok(out)
            }
            StandardCheck::Spmv { format, mixed, .. } => {
                use crate::sparse::random::{random_csr, RandomPattern};
                use crate::sparse::{FormatLimits, FormatOptions, SparseMatrix};
                // DIA stores whole diagonals: a banded matrix (an awkward one has ~2·len).
                let pattern = if format.few_diagonals() {
                    RandomPattern::banded(len, len, 5)
                } else {
                    RandomPattern::awkward(len, len)
                };
                let a64 = random_csr::<f64>(&pattern, seed)?;
                // Round the values as the run being checked stores them.
                let value_type = if *mixed { DType::F32 } else { inputs };
                let values = round_to(
                    &a64.values().iter().map(|v| v.as_f64()).collect::<Vec<_>>(),
                    value_type,
                );
                let rounded = crate::sparse::Csr::new(
                    len,
                    len,
                    a64.row_ptr().to_vec(),
                    a64.col_idx().to_vec(),
                    values,
                )?;
                let options = FormatOptions {
                    limits: FormatLimits::unlimited(),
                    ..FormatOptions::default()
                };
                let x = input::<B, T>(b, &xs, inputs)?;
                let mut y = input::<B, T>(b, &ys, inputs)?;
                let (alpha, beta) = (T::from_f64(1.5), T::from_f64(-0.5));
                if *mixed {
                    let m =
                        SparseMatrix::from_csr(b, &rounded.convert::<f32>(), *format, &options)?;
                    m.spmv(alpha, &x, beta, &mut y)?;
                } else {
                    let m = SparseMatrix::from_csr(b, &rounded.convert::<T>(), *format, &options)?;
                    m.spmv(alpha, &x, beta, &mut y)?;
                }
                y.to_vec()
            }
            StandardCheck::BatchedGemm { n, count, .. }
            | StandardCheck::BatchedLuSolve { n, count, .. }
            | StandardCheck::BatchedInverse { n, count, .. }
            | StandardCheck::BatchedCholeskySolve { n, count, .. } => {
                use crate::batched::{
                    cholesky, cholesky_solve, gemm, inverse, lu, lu_solve, Batch, GemmParams,
                    Pivoting,
                };
                let (n, count) = (*n, *count);
                let mut rng = Rng::new(seed);
                // Symmetric, diagonally dominant, positive diagonal: SPD and well conditioned.
                let mut m = vec![0.0f64; count * n * n];
                for k in 0..count {
                    for i in 0..n {
                        for j in 0..i {
                            let v = rng.range(-1.0, 1.0);
                            m[k * n * n + i * n + j] = v;
                            m[k * n * n + j * n + i] = v;
                        }
                        m[k * n * n + i * n + i] = n as f64 + rng.uniform();
                    }
                }
                let to_t = |v: &[f64]| -> Vec<T> {
                    round_to(v, inputs).into_iter().map(T::from_f64).collect()
                };
                let a = Batch::from_slice(b, count, n, n, &to_t(&m))?;
                match self {
                    StandardCheck::BatchedGemm { .. } => {
                        let other = Batch::from_slice(
                            b,
                            count,
                            n,
                            n,
                            &to_t(&random_vec::<f64>(count * n * n, seed + 9)),
                        )?;
                        let mut c = Batch::from_slice(b, count, n, n, &poison::<T>(count * n * n))?;
                        gemm(
                            &GemmParams::new(T::from_f64(1.5), T::ZERO),
                            &a,
                            &other,
                            &mut c,
                        )?;
                        c.to_vec()
                    }
                    StandardCheck::BatchedLuSolve { .. } => {
                        let f = lu::<B, T, T>(a, Pivoting::Partial)?;
                        let mut x = Batch::from_slice(
                            b,
                            count,
                            n,
                            3,
                            &to_t(&random_vec::<f64>(count * n * 3, seed + 9)),
                        )?;
                        lu_solve::<B, T, T>(&f, &mut x)?;
                        x.to_vec()
                    }
                    StandardCheck::BatchedInverse { .. } => inverse::<B, T, T>(&a)?.0.to_vec(),
                    _ => {
                        let (l, _) = cholesky::<B, T, T>(a)?;
                        let mut x = Batch::from_slice(
                            b,
                            count,
                            n,
                            2,
                            &to_t(&random_vec::<f64>(count * n * 2, seed + 9)),
                        )?;
                        cholesky_solve::<B, T, T>(&l, &mut x)?;
                        x.to_vec()
                    }
                }
            }
            StandardCheck::PointwiseMulDot { .. } => {
                let d = input::<B, T>(b, &xs, inputs)?;
                let r = input::<B, T>(b, &ys, inputs)?;
                let mut z = poisoned::<B, T>(b, len)?;
                let rz = vector::pointwise_mul_dot(&d, &r, &mut z)?;
                let mut out = z.to_vec()?;
                out.push(T::from_f64(rz.as_f64() / len.max(1) as f64));
                Ok(out)
            }
        }
    }
}
