//! The fused smoothing passes (`LinearOperator::residual`, `LinearOperator::smoothing_step`)
//! of CSR (every kernel), block-ELL (both kernels: the direct one fused, the other
//! composed), SELL (fused on devices), DIA and ELL (composed), against an
//! f64 reference on random square matrices, outputs poisoned before the call; and their
//! errors.

use galerkin::operator::LinearOperator;
use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{
    BlockEll, BlockEllKernel, Csr, CsrKernel, Format, FormatLimits, FormatOptions, SellParams,
    SparseMatrix,
};
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Cpu, Error, Scalar, Vector};

use super::{patterns, reference};
use crate::backend_tests;
use crate::harness::assert_close;

/// The operators under test for the host matrix `a`, each with its name.
fn operators<B: Backend, T: Scalar>(
    b: &B,
    a: &Csr<Cpu, T>,
) -> Vec<(String, Box<dyn LinearOperator<B, T>>)> {
    let mut ops: Vec<(String, Box<dyn LinearOperator<B, T>>)> = Vec::new();
    for kernel in [
        CsrKernel::Scalar,
        CsrKernel::Vector { group: 4 },
        CsrKernel::Vector { group: 32 },
    ] {
        let m = a.to_backend(b).unwrap().with_kernel(kernel).unwrap();
        ops.push((format!("csr {kernel:?}"), Box::new(m)));
    }
    let limits = if a.nrows() <= 2000 {
        FormatLimits::unlimited()
    } else {
        FormatLimits::default()
    };
    for m in [1, 4, 7] {
        for kernel in [BlockEllKernel::Direct, BlockEllKernel::InflateContract] {
            if let Ok(block) = BlockEll::from_csr(a, m, &limits) {
                let block = block.to_backend(b).unwrap().with_kernel(kernel);
                ops.push((format!("block-ell m={m} {kernel:?}"), Box::new(block)));
            }
        }
    }
    // The padding limit only where the padded matrix would be large (then refused: skipped).
    let options = FormatOptions {
        limits,
        ..FormatOptions::default()
    };
    for (format, params) in [
        (Format::Sell, None),
        (
            Format::Sell,
            Some(SellParams {
                slice_height: 32,
                sigma: 256,
            }),
        ),
        (Format::Dia, None),
        (Format::Ell, None),
    ] {
        let options = FormatOptions {
            sell: params,
            ..options
        };
        // DIA only takes banded matrices (a typed refusal otherwise).
        if let Ok(m) = SparseMatrix::from_csr(b, a, format, &options) {
            ops.push((format!("{format:?} {params:?}"), Box::new(m)));
        }
    }
    ops
}

/// Square random patterns, and banded ones (the matrices DIA takes).
fn square_patterns() -> Vec<RandomPattern> {
    let mut p: Vec<RandomPattern> = patterns()
        .into_iter()
        .filter(|p| p.nrows == p.ncols)
        .collect();
    p.extend([
        RandomPattern::banded(1003, 1003, 3),
        RandomPattern::banded(40_009, 40_009, 7),
    ]);
    p
}

fn fused_passes_match_the_reference<B: Backend, T: Scalar>(b: &B) {
    for (i, p) in square_patterns().iter().enumerate() {
        let n = p.nrows;
        let a = random_csr::<T>(p, 700 + i as u64).unwrap();
        let terms = a.stats().max.max(1) + 4;
        let (bs, xs, ds) = (
            random_vec::<T>(n, 11),
            random_vec::<T>(n, 12),
            random_vec::<T>(n, 13),
        );
        let (rs, ss) = (random_vec::<T>(n, 14), random_vec::<T>(n, 15));
        let v = |data: &[T]| Vector::from_slice(b, data).unwrap();
        let ax = reference(&a, 1.0, &xs, 0.0, &xs);
        let ad = reference(&a, 1.0, &ds, 0.0, &ds);
        let r_want: Vec<f64> = bs.iter().zip(&ax).map(|(b, ax)| b.as_f64() - ax).collect();
        let d_want: Vec<f64> = ss
            .iter()
            .zip(&r_want)
            .map(|(s, r)| s.as_f64() * r)
            .collect();
        let coefficients = [0.75, -0.5, 1.0];
        let rstep: Vec<f64> = rs.iter().zip(&ad).map(|(r, ad)| r.as_f64() - ad).collect();
        let e_want: Vec<f64> = (0..n)
            .map(|k| coefficients[1] * ds[k].as_f64() + coefficients[0] * ss[k].as_f64() * rstep[k])
            .collect();
        for (name, op) in operators(b, &a) {
            let case = format!("{name} {n}x{n} nnz={}", a.nnz());
            // The residual, without and with the scaled copy; r and d poisoned.
            let mut r = v(&poison::<T>(n));
            op.residual(&v(&bs), &v(&xs), &mut r, None).unwrap();
            assert_close(
                &r.to_vec().unwrap(),
                &r_want,
                terms,
                &format!("{case} residual"),
            );
            let (mut r, mut d) = (v(&poison::<T>(n)), v(&poison::<T>(n)));
            op.residual(&v(&bs), &v(&xs), &mut r, Some((&v(&ss), &mut d)))
                .unwrap();
            assert_close(
                &r.to_vec().unwrap(),
                &r_want,
                terms,
                &format!("{case} scaled r"),
            );
            assert_close(
                &d.to_vec().unwrap(),
                &d_want,
                terms,
                &format!("{case} scaled d"),
            );
            // The step with γ = 0 and 1; e poisoned.
            for gamma in [0.0, 1.0] {
                let c = coefficients.map(T::from_f64);
                let (mut r, mut e, mut x) = (v(&rs), v(&poison::<T>(n)), v(&xs));
                op.smoothing_step(
                    &v(&ds),
                    &mut r,
                    &v(&ss),
                    &mut e,
                    &mut x,
                    [c[0], c[1], T::from_f64(gamma)],
                )
                .unwrap();
                let x_want: Vec<f64> = (0..n)
                    .map(|k| xs[k].as_f64() + e_want[k] + gamma * ds[k].as_f64())
                    .collect();
                let step = format!("{case} step γ={gamma}");
                assert_close(&r.to_vec().unwrap(), &rstep, terms, &format!("{step} r"));
                assert_close(&e.to_vec().unwrap(), &e_want, terms, &format!("{step} e"));
                assert_close(&x.to_vec().unwrap(), &x_want, terms, &format!("{step} x"));
            }
        }
    }
}

/// A rectangular matrix and vectors of the wrong size are typed errors, before anything is
/// written.
fn fused_passes_reject_bad_operands<B: Backend, T: Scalar>(b: &B) {
    let square = random_csr::<T>(&RandomPattern::uniform(50, 50, 1, 6), 3).unwrap();
    let rect = random_csr::<T>(&RandomPattern::uniform(50, 40, 1, 6), 4).unwrap();
    let v = |n: usize, x: f64| Vector::full(b, n, T::from_f64(x)).unwrap();
    for (name, op) in operators(b, &square) {
        let mut r = v(50, 7.0);
        let err = op.residual(&v(49, 1.0), &v(50, 1.0), &mut r, None);
        assert!(
            matches!(err, Err(Error::DimensionMismatch { .. })),
            "{name}: {err:?}"
        );
        let (mut e, mut x) = (v(50, 1.0), v(50, 1.0));
        let err = op.smoothing_step(
            &v(50, 1.0),
            &mut r,
            &v(51, 1.0),
            &mut e,
            &mut x,
            [T::ONE; 3],
        );
        assert!(
            matches!(err, Err(Error::DimensionMismatch { .. })),
            "{name}: {err:?}"
        );
        let err = op.residual(
            &v(50, 1.0),
            &v(50, 1.0),
            &mut r,
            Some((&v(50, 1.0), &mut v(3, 0.0))),
        );
        assert!(
            matches!(err, Err(Error::DimensionMismatch { .. })),
            "{name}: {err:?}"
        );
        assert!(
            r.to_vec().unwrap().iter().all(|&y| y == T::from_f64(7.0)),
            "{name}: r written"
        );
    }
    let rect = rect.to_backend(b).unwrap();
    let mut r = v(50, 0.0);
    let err = LinearOperator::<B, T>::residual(&rect, &v(50, 1.0), &v(40, 1.0), &mut r, None);
    assert!(
        matches!(err, Err(Error::DimensionMismatch { .. })),
        "rectangular: {err:?}"
    );
}

backend_tests!(
    fused_passes_match_the_reference,
    fused_passes_reject_bad_operands
);
