//! SpMV of every format (CSR kernels, ELL, SELL-C-σ, block ELL, COO, staircase) against the
//! f64 reference, with f32 values; SELL's fused SpMV + dot; padded slots that add nothing.

use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{
    BlockEll, BlockEllKernel, CsrKernel, Ell, FormatLimits, Sell, SellParams, SparseStorage,
    StaircaseParams, StaircaseSell,
};
use galerkin::verify::Rng;
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Scalar, Vector};

use super::{check_spmv, ell_limits, patterns, reference};
use crate::backend_tests;
use crate::harness::{assert_close, exact_sum};

fn csr_spmv<B: Backend, T: Scalar>(b: &B) {
    for kernel in [
        CsrKernel::Auto,
        CsrKernel::Scalar,
        CsrKernel::Vector { group: 4 },
        CsrKernel::Vector { group: 32 },
    ] {
        check_spmv::<B, T, T>(b, &format!("csr {kernel:?}"), |a, alpha, x, beta, y| {
            a.to_backend(b)?
                .with_kernel(kernel)?
                .spmv(alpha, x, beta, y)
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
    for m in [1, 3, 4, 7, 19] {
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
                        .with_kernel(kernel)
                        .spmv(alpha, x, beta, y)
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

/// An infinite `x[0]` reaches exactly the rows that store column 0 in every format whose
/// padding holds no values (padded slots read `x[0]` in the branch-free kernels and must
/// drop the term, not multiply it by zero). DIA and block-ELL store explicit zeros inside
/// the matrix, where `0 · ∞` is NaN as in the CPU reference (DIA: `dia.rs`).
fn padding_adds_nothing<B: Backend, T: Scalar>(b: &B) {
    use galerkin::sparse::{Format, FormatOptions, SparseMatrix};
    let a = random_csr::<T>(&RandomPattern::awkward(1001, 1001), 5).unwrap();
    let mut xs = random_vec::<T>(1001, 6);
    xs[0] = T::from_f64(f64::INFINITY);
    let x = Vector::from_slice(b, &xs).unwrap();
    let options = FormatOptions {
        limits: FormatLimits::unlimited(),
        ..FormatOptions::default()
    };
    for format in [
        Format::Coo,
        Format::Csr,
        Format::Ell,
        Format::Sell,
        Format::Staircase,
    ] {
        let m = SparseMatrix::from_csr(b, &a, format, &options).unwrap();
        let mut y = Vector::from_slice(b, &poison::<T>(1001)).unwrap();
        m.spmv(T::ONE, &x, T::ZERO, &mut y).unwrap();
        let (row_ptr, col_idx) = (a.row_ptr(), a.col_idx());
        for (r, v) in y.to_vec().unwrap().iter().enumerate() {
            let touches = col_idx[row_ptr[r] as usize..row_ptr[r + 1] as usize].contains(&0);
            assert_eq!(
                v.as_f64().is_finite(),
                !touches,
                "{format} row {r}: {v:?} (stored column 0: {touches})"
            );
        }
    }
}

backend_tests!(padding_adds_nothing);

/// The fused `y = A x; x·y` of SELL (one pass on devices) against the f64 reference.
fn sell_spmv_dot<B: Backend, T: Scalar>(b: &B) {
    for (i, p) in patterns()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.nrows == p.ncols)
    {
        let a = random_csr::<T>(p, 500 + i as u64).unwrap();
        let xs = random_vec::<T>(p.ncols, 9);
        for params in [
            SellParams {
                slice_height: 32,
                sigma: 1,
            },
            SellParams {
                slice_height: 64,
                sigma: 256,
            },
        ] {
            let m = Sell::from_csr(&a, params, &FormatLimits::unlimited())
                .unwrap()
                .to_backend(b)
                .unwrap();
            let x = Vector::from_slice(b, &xs).unwrap();
            let mut y = Vector::from_slice(b, &poison::<T>(p.nrows)).unwrap();
            let d = m.spmv_dot(&x, &mut y).unwrap();
            let expected = reference(&a, 1.0, &xs, 0.0, &xs);
            let case = format!("sell spmv_dot {}x{} {params:?}", p.nrows, p.ncols);
            assert_close(
                &y.to_vec().unwrap(),
                &expected,
                a.stats().max.max(1) + 1,
                &case,
            );
            let terms: Vec<f64> = xs
                .iter()
                .zip(&expected)
                .map(|(x, y)| x.as_f64() * y)
                .collect();
            let scale = exact_sum(terms.iter().map(|t| t.abs()));
            crate::harness::assert_close_scaled(
                &[d],
                &[exact_sum(terms)],
                scale,
                p.nrows + a.stats().max,
                &case,
            );
        }
    }
}

backend_tests!(sell_spmv_dot);
