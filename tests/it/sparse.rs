//! Sparse formats: SpMV of every format on every backend and precision against a plain f64
//! loop over the CSR matrix; conversions; error paths.

use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{
    BlockEll, BlockEllKernel, Csr, CsrKernel, Ell, FormatLimits, Sell, SellParams, StaircaseParams,
    StaircaseSell,
};
use galerkin::verify::Rng;
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Cpu, Element, Scalar, Vector};

use crate::backend_tests;
use crate::harness::{assert_close, exact_sum};

/// The test patterns: empty, 1 x 1, rectangular both ways, awkward (empty rows, a long row),
/// and sizes that are not multiples of any slice height or block size.
pub fn patterns() -> Vec<RandomPattern> {
    vec![
        RandomPattern::uniform(0, 0, 0, 0),
        RandomPattern::uniform(1, 1, 1, 1),
        RandomPattern::awkward(1, 1),
        RandomPattern::uniform(37, 1000, 0, 30),
        RandomPattern::uniform(1000, 37, 1, 5),
        RandomPattern::awkward(1003, 1003),
        RandomPattern::awkward(40_009, 40_009),
        RandomPattern::uniform(20_011, 20_011, 20, 60),
    ]
}

/// f64 reference `alpha A x + beta y` by a compensated sum per row.
pub fn reference<V: Element, T: Scalar>(
    a: &Csr<Cpu, V>,
    alpha: f64,
    x: &[T],
    beta: f64,
    y: &[T],
) -> Vec<f64> {
    (0..a.nrows())
        .map(|r| {
            let (cols, vals) = a.row(r);
            let ax = exact_sum(
                cols.iter()
                    .zip(vals)
                    .map(|(&c, v)| v.as_f64() * x[c as usize].as_f64()),
            );
            alpha * ax
                + if beta == 0.0 {
                    0.0
                } else {
                    beta * y[r].as_f64()
                }
        })
        .collect()
}

/// Runs `spmv` through `run` for every pattern, with `beta = 0` on a poisoned `y` and with
/// `beta != 0`, values stored as `V`. `run` may refuse a conversion with `Error::Padding`
/// (then nothing is compared).
pub fn check_spmv<B: Backend, V: Element, T: Scalar>(
    b: &B,
    name: &str,
    run: impl Fn(&Csr<Cpu, V>, T, &Vector<B, T>, T, &mut Vector<B, T>) -> galerkin::Result<()>,
) {
    let mut refused = 0;
    for (i, p) in patterns().iter().enumerate() {
        let a = random_csr::<V>(p, 100 + i as u64).unwrap();
        let xs = random_vec::<T>(p.ncols, 7);
        let ys = random_vec::<T>(p.nrows, 8);
        let x = Vector::from_slice(b, &xs).unwrap();
        let terms = a.stats().max.max(1) + 1;
        for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.25)] {
            let mut y = if beta == 0.0 {
                Vector::from_slice(b, &poison::<T>(p.nrows)).unwrap()
            } else {
                Vector::from_slice(b, &ys).unwrap()
            };
            match run(&a, T::from_f64(alpha), &x, T::from_f64(beta), &mut y) {
                Ok(()) => {}
                Err(galerkin::Error::Padding { ratio, limit, .. }) => {
                    assert!(ratio > limit);
                    refused += 1;
                    break;
                }
                Err(e) => panic!("{name} {}x{}: {e}", p.nrows, p.ncols),
            }
            let expected = reference(&a, alpha, &xs, beta, &ys);
            let case = format!(
                "{name} {}x{} nnz={} values {} beta={beta}",
                p.nrows,
                p.ncols,
                a.nnz(),
                V::DTYPE
            );
            assert_close(&y.to_vec().unwrap(), &expected, terms, &case);
        }
    }
    // Only the two large patterns may exceed the padding limit.
    assert!(
        refused <= 2,
        "{name}: {refused} of the test matrices refused"
    );
}

/// ELL limits for a test matrix: unlimited padding while the padded matrix stays small
/// (so the long-row cases are computed), the default limit beyond (so they are refused).
fn ell_limits<V: Element>(a: &Csr<Cpu, V>) -> FormatLimits {
    if a.nrows() * a.stats().max <= 1 << 22 {
        FormatLimits::unlimited()
    } else {
        FormatLimits::default()
    }
}

fn csr_spmv<B: Backend, T: Scalar>(b: &B) {
    for kernel in [
        CsrKernel::Auto,
        CsrKernel::Scalar,
        CsrKernel::Vector { group: 4 },
        CsrKernel::Vector { group: 32 },
    ] {
        check_spmv::<B, T, T>(b, &format!("csr {kernel:?}"), |a, alpha, x, beta, y| {
            a.to_backend(b)?.spmv_with(kernel, alpha, x, beta, y)
        });
    }
}

/// f32 values with T vectors (mixed precision when T = f64).
fn csr_spmv_f32_values<B: Backend, T: Scalar>(b: &B) {
    check_spmv::<B, f32, T>(b, "csr f32 values", |a, alpha, x, beta, y| {
        a.to_backend(b)?.spmv(alpha, x, beta, y)
    });
}

fn ell_spmv<B: Backend, T: Scalar>(b: &B) {
    check_spmv::<B, T, T>(b, "ell", |a, alpha, x, beta, y| {
        Ell::from_csr(a, &ell_limits(a))?
            .to_backend(b)?
            .spmv(alpha, x, beta, y)
    });
}

fn sell_spmv<B: Backend, T: Scalar>(b: &B) {
    for (c, sigma) in [(1, 1), (4, 1), (32, 1), (32, 256), (128, 128)] {
        let params = SellParams {
            slice_height: c,
            sigma,
        };
        check_spmv::<B, T, T>(b, &format!("sell {params:?}"), |a, alpha, x, beta, y| {
            Sell::from_csr(a, params, &FormatLimits::unlimited())?
                .to_backend(b)?
                .spmv(alpha, x, beta, y)
        });
    }
}

fn block_ell_spmv<B: Backend, T: Scalar>(b: &B) {
    for m in [1, 3, 4, 7] {
        for kernel in [BlockEllKernel::Direct, BlockEllKernel::InflateContract] {
            check_spmv::<B, T, T>(
                b,
                &format!("block-ell m={m} {kernel:?}"),
                |a, alpha, x, beta, y| {
                    let limits = if a.nrows() <= 2000 {
                        FormatLimits::unlimited()
                    } else {
                        FormatLimits::default()
                    };
                    BlockEll::from_csr(a, m, &limits)?
                        .to_backend(b)?
                        .spmv_with(kernel, alpha, x, beta, y)
                },
            );
        }
    }
}

/// COO with shuffled entries and split duplicates (each CSR entry stored as two halves).
fn coo_spmv<B: Backend, T: Scalar>(b: &B) {
    check_spmv::<B, T, T>(b, "coo", |a, alpha, x, beta, y| {
        let csr = a.to_coo();
        let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
        for ((&r, &c), &v) in csr.rows().iter().zip(csr.cols()).zip(csr.values()) {
            let half = T::from_f64(v.as_f64() / 2.0);
            rows.extend([r, r]);
            cols.extend([c, c]);
            vals.extend([half, T::from_f64(v.as_f64() - half.as_f64())]);
        }
        let mut order: Vec<usize> = (0..rows.len()).collect();
        let mut rng = Rng::new(9);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let coo = galerkin::sparse::Coo::new(
            a.nrows(),
            a.ncols(),
            order.iter().map(|&k| rows[k]).collect(),
            order.iter().map(|&k| cols[k]).collect(),
            order.iter().map(|&k| vals[k]).collect(),
        )?;
        coo.to_backend(b)?.spmv(alpha, x, beta, y)
    });
}

/// Staircase SELL with a shuffled row order, checked in the original numbering.
fn staircase_spmv<B: Backend, T: Scalar>(b: &B) {
    for (c, alpha) in [(1, 0.0), (32, 0.05), (512, 0.3)] {
        let params = StaircaseParams {
            slice_height: c,
            alpha,
        };
        check_spmv::<B, T, T>(
            b,
            &format!("staircase {params:?}"),
            |a, alpha, x, beta, y| {
                if a.nrows() != a.ncols() {
                    return Err(galerkin::Error::Padding {
                        format: "square only",
                        stored: 1,
                        nnz: 0,
                        ratio: 2.0,
                        limit: 1.0,
                    });
                }
                let mut order: Vec<u32> = (0..a.nrows() as u32).collect();
                let mut rng = Rng::new(5);
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.below(i + 1));
                }
                let m =
                    StaircaseSell::from_csr_ordered(a, &order, params, &FormatLimits::unlimited())?
                        .to_backend(b)?;
                let xp = m.to_permuted(x)?;
                let mut yp = m.to_permuted(y)?;
                m.spmv(alpha, &xp, beta, &mut yp)?;
                *y = m.from_permuted(&yp)?;
                Ok(())
            },
        );
    }
}

/// f32 values in every format with T vectors (mixed precision when T = f64).
fn formats_f32_values<B: Backend, T: Scalar>(b: &B) {
    check_spmv::<B, f32, T>(b, "ell f32 values", |a, alpha, x, beta, y| {
        Ell::from_csr(a, &ell_limits(a))?
            .to_backend(b)?
            .spmv(alpha, x, beta, y)
    });
    check_spmv::<B, f32, T>(b, "block-ell f32 values", |a, alpha, x, beta, y| {
        let limits = if a.nrows() <= 2000 {
            FormatLimits::unlimited()
        } else {
            FormatLimits::default()
        };
        BlockEll::from_csr(a, 3, &limits)?
            .to_backend(b)?
            .spmv(alpha, x, beta, y)
    });
    check_spmv::<B, f32, T>(b, "sell f32 values", |a, alpha, x, beta, y| {
        Sell::from_csr(
            a,
            SellParams {
                slice_height: 32,
                sigma: 64,
            },
            &FormatLimits::unlimited(),
        )?
        .to_backend(b)?
        .spmv(alpha, x, beta, y)
    });
}

backend_tests!(
    csr_spmv,
    csr_spmv_f32_values,
    ell_spmv,
    sell_spmv,
    block_ell_spmv,
    staircase_spmv,
    coo_spmv,
    formats_f32_values
);
