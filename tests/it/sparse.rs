//! Sparse formats: SpMV of every format on every backend and precision against a plain f64
//! loop over the CSR matrix; conversions; error paths.

use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{
    BlockEll, BlockEllKernel, Csr, CsrKernel, Ell, FormatLimits, Sell, SellParams, SparseStorage,
    StaircaseParams, StaircaseSell,
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

/// Whether DIA would store more than 2²² slots for `a` (random columns: up to `nrows + ncols`
/// diagonals).
fn too_many_diagonals<V: Element>(a: &Csr<Cpu, V>) -> bool {
    galerkin::sparse::diagonal_offsets(a, (1 << 22) / a.nrows().max(1)).is_none()
}

/// Every format through `SparseMatrix`, including half-precision values where the device
/// has them (f16 on lavapipe and CUDA; bf16 on CUDA).
fn sparse_matrix_every_format<B: Backend, T: Scalar>(b: &B) {
    use galerkin::sparse::{Format, FormatOptions, SparseMatrix};
    for format in Format::ALL {
        let options = FormatOptions {
            limits: FormatLimits::unlimited(),
            ..FormatOptions::default()
        };
        check_spmv::<B, T, T>(
            b,
            &format!("SparseMatrix {format}"),
            |a, alpha, x, beta, y| {
                let padded_formats = matches!(format, Format::Ell | Format::BlockEll);
                if format == Format::Staircase && a.nrows() != a.ncols()
                    || padded_formats && a.nrows() * a.stats().max > 1 << 22
                    || format == Format::Dia && too_many_diagonals(a)
                {
                    return Err(galerkin::Error::Padding {
                        format: "skip",
                        stored: 1,
                        nnz: 0,
                        ratio: 2.0,
                        limit: 1.0,
                    });
                }
                SparseMatrix::from_csr(b, a, format, &options)?.spmv(alpha, x, beta, y)
            },
        );
    }
    for dtype in [galerkin::DType::F16, galerkin::DType::BF16] {
        if !b.supports(dtype) {
            crate::harness::announce(&format!(
                "[galerkin tests] {} has no {dtype}: half-precision SpMV not run there",
                b.info()
            ));
            continue;
        }
        let p = RandomPattern::awkward(3001, 3001);
        let a64 = random_csr::<f64>(&p, 77).unwrap();
        let xs = random_vec::<T>(3001, 1);
        let x = Vector::from_slice(b, &xs).unwrap();
        let mut y = Vector::from_slice(b, &poison::<T>(3001)).unwrap();
        let (expected, got) = match dtype {
            galerkin::DType::F16 => {
                let a = a64.convert::<half::f16>();
                a.to_backend(b)
                    .unwrap()
                    .spmv(T::ONE, &x, T::ZERO, &mut y)
                    .unwrap();
                (reference(&a, 1.0, &xs, 0.0, &xs), y.to_vec().unwrap())
            }
            _ => {
                let a = a64.convert::<half::bf16>();
                a.to_backend(b)
                    .unwrap()
                    .spmv(T::ONE, &x, T::ZERO, &mut y)
                    .unwrap();
                (reference(&a, 1.0, &xs, 0.0, &xs), y.to_vec().unwrap())
            }
        };
        // The values are exact in f16/bf16 here; the error is the accumulation in T.
        assert_close(&got, &expected, 1001, &format!("csr {dtype} values"));
    }
}

backend_tests!(sparse_matrix_every_format);

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

#[test]
fn conversions_round_trip_exactly() {
    use galerkin::sparse::{Format, FormatOptions, SparseMatrix};
    for (i, p) in patterns().iter().enumerate() {
        let a = random_csr::<f64>(p, 300 + i as u64).unwrap();
        let same = |b: &Csr<Cpu, f64>, what: &str| {
            assert_eq!(b.row_ptr(), a.row_ptr(), "{what} row_ptr");
            assert_eq!(b.col_idx(), a.col_idx(), "{what} col_idx");
            assert_eq!(b.values(), a.values(), "{what} values");
        };
        same(&Csr::from_coo(&a.to_coo()).unwrap(), "coo");
        same(&a.transpose().transpose(), "transpose twice");
        let unlimited = FormatLimits::unlimited();
        if a.nrows() * a.stats().max <= 1 << 22 {
            same(
                &Ell::from_csr(&a, &unlimited).unwrap().to_csr().unwrap(),
                "ell",
            );
        }
        for params in [
            SellParams {
                slice_height: 4,
                sigma: 1,
            },
            SellParams {
                slice_height: 32,
                sigma: 128,
            },
        ] {
            same(
                &Sell::from_csr(&a, params, &unlimited)
                    .unwrap()
                    .to_csr()
                    .unwrap(),
                "sell",
            );
        }
        if a.nrows() == a.ncols() {
            let s = StaircaseSell::from_csr(
                &a,
                StaircaseParams {
                    slice_height: 32,
                    alpha: 0.1,
                },
                &unlimited,
            )
            .unwrap();
            same(&s.to_csr().unwrap(), "staircase");
            let rows: usize = s.steps().iter().map(|st| st.slices * 32).sum();
            assert!(
                rows >= a.nrows() && rows < a.nrows() + 32,
                "steps cover the rows"
            );
        }
        // Block ELL keeps every nonzero (random values are never exactly zero).
        if a.nrows() <= 2000 {
            same(
                &BlockEll::from_csr(&a, 3, &unlimited)
                    .unwrap()
                    .to_csr()
                    .unwrap(),
                "block-ell",
            );
        }
        // Through SparseMatrix on the CPU: every format multiplies like CSR (checked above);
        // here only that construction works for every format.
        for format in Format::ALL {
            if format == Format::Staircase && a.nrows() != a.ncols()
                || a.nrows() * a.stats().max > 1 << 22
            {
                continue;
            }
            let opts = FormatOptions {
                limits: unlimited,
                ..FormatOptions::default()
            };
            let m = SparseMatrix::from_csr(&Cpu::new(), &a, format, &opts).unwrap();
            assert_eq!(
                (m.nrows(), m.ncols(), m.nnz()),
                (a.nrows(), a.ncols(), a.nnz()),
                "{format}"
            );
        }
    }
}

#[test]
fn duplicates_are_summed_and_nothing_is_lost() {
    let coo = galerkin::sparse::Coo::new(
        3,
        3,
        vec![2, 0, 2, 0, 1],
        vec![1, 0, 1, 2, 1],
        vec![1.5f64, 2.0, 0.25, 0.0, -1.0],
    )
    .unwrap();
    let a = coo.to_csr().unwrap();
    assert_eq!(a.row_ptr(), &[0, 2, 3, 4]);
    assert_eq!(a.col_idx(), &[0, 2, 1, 1]);
    assert_eq!(a.values(), &[2.0, 0.0, -1.0, 1.75]); // the explicit zero is kept
}

#[test]
fn invalid_matrices_are_typed_errors() {
    let bad = [
        (
            Csr::<Cpu, f64>::new(2, 2, vec![0, 1], vec![0], vec![1.0]).err(),
            "row_ptr has 2 entries",
        ),
        (
            Csr::new(2, 2, vec![1, 1, 1], vec![0], vec![1.0]).err(),
            "row_ptr[0] = 1",
        ),
        (
            Csr::new(2, 2, vec![0, 2, 1], vec![0, 1], vec![1.0, 2.0]).err(),
            "row_ptr[2] = 1",
        ),
        (
            Csr::new(2, 2, vec![0, 1, 2], vec![0, 5], vec![1.0, 2.0]).err(),
            "row 1: column index 5",
        ),
        (
            Csr::new(1, 3, vec![0, 2], vec![1, 1], vec![1.0, 2.0]).err(),
            "a duplicate entry",
        ),
        (
            Csr::new(1, 3, vec![0, 2], vec![2, 1], vec![1.0, 2.0]).err(),
            "strictly increasing",
        ),
        (
            Csr::new(1, 3, vec![0, 2], vec![0, 1], vec![1.0]).err(),
            "2 column indices but 1 values",
        ),
    ];
    for (err, expected) in bad {
        let e = err.unwrap_or_else(|| panic!("expected an error containing {expected:?}"));
        assert!(
            matches!(e, galerkin::Error::InvalidMatrix { format: "CSR", .. }),
            "{e:?}"
        );
        assert!(
            e.to_string().contains(expected),
            "{e} does not mention {expected:?}"
        );
    }
    let coo = galerkin::sparse::Coo::<Cpu, f64>::new(2, 2, vec![0, 2], vec![0, 0], vec![1.0, 1.0]);
    assert!(coo.err().unwrap().to_string().contains("entry 1 at (2, 0)"));
}

#[test]
fn padding_blow_up_is_refused_with_the_ratio() {
    // 100 000 rows of 2 entries and one row of 50 000: ELL would store 5e9 slots.
    let p = RandomPattern {
        long_row: 50_000,
        ..RandomPattern::uniform(100_000, 100_000, 2, 2)
    };
    let a = random_csr::<f64>(&p, 1).unwrap();
    match Ell::from_csr(&a, &FormatLimits::default()) {
        Err(galerkin::Error::Padding {
            format: "ELL",
            ratio,
            limit,
            ..
        }) => {
            assert!(ratio > 10_000.0 && limit == 3.0, "{ratio} {limit}");
        }
        other => panic!(
            "expected a padding refusal, got {:?}",
            other.map(|e| e.width())
        ),
    }
    // SELL pads only the slice holding the long row: (C - 1) x 50 000 slots.
    let s = Sell::from_csr(
        &a,
        SellParams {
            slice_height: 4,
            sigma: 2048,
        },
        &FormatLimits::default(),
    )
    .unwrap();
    assert!(
        s.stored() <= a.nnz() + 3 * 50_000,
        "{} stored for {} nonzeros",
        s.stored(),
        a.nnz()
    );
}

#[test]
fn format_choice_follows_the_statistics() {
    use galerkin::sparse::{choose_format, detect_block_size, Format};
    // Uniform short rows: SELL without sorting.
    let a = random_csr::<f64>(&RandomPattern::uniform(5000, 5000, 7, 7), 2).unwrap();
    let c = choose_format(&a);
    assert_eq!(c.format, Format::Sell, "{c}");
    assert!(c.params.contains("sigma = 1"), "{c}");
    // Uneven rows: sorting windows.
    let a = random_csr::<f64>(&RandomPattern::uniform(5000, 5000, 1, 20), 3).unwrap();
    assert!(choose_format(&a).params.contains("sigma = 2048"));
    // Dense 4x4 blocks: block ELL, block size detected.
    let blocks = random_csr::<f64>(&RandomPattern::uniform(500, 500, 2, 5), 4).unwrap();
    let mut coo = galerkin::sparse::Coo::with_capacity(2000, 2000, blocks.nnz() * 16);
    for r in 0..500 {
        for &c in blocks.row(r).0 {
            for i in 0..4 {
                for j in 0..4 {
                    coo.push(4 * r + i, 4 * c as usize + j, 1.0 + (i * 4 + j) as f64)
                        .unwrap();
                }
            }
        }
    }
    let a = coo.to_csr().unwrap();
    assert_eq!(detect_block_size(&a, 1.15), Some(4));
    assert_eq!(choose_format(&a).format, Format::BlockEll);
}

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

/// Tuning times every candidate and keeps one that multiplies correctly.
#[test]
fn tuning_times_candidates_and_returns_a_working_matrix() {
    use galerkin::sparse::SparseMatrix;
    let cpu = Cpu::new();
    let a = random_csr::<f64>(&RandomPattern::uniform(3000, 3000, 3, 9), 41).unwrap();
    let (m, results) = SparseMatrix::<Cpu, f64>::tune::<f64>(&cpu, &a, 3).unwrap();
    assert!(results.len() >= 9, "{} candidates", results.len());
    assert!(results.iter().all(|(_, t)| t.as_nanos() > 0));
    let xs = random_vec::<f64>(3000, 2);
    let mut y = Vector::zeros(&cpu, 3000).unwrap();
    m.spmv(1.0, &Vector::from_slice(&cpu, &xs).unwrap(), 0.0, &mut y)
        .unwrap();
    assert_close(
        &y.to_vec().unwrap(),
        &reference(&a, 1.0, &xs, 0.0, &xs),
        10,
        "tuned",
    );
}

/// Every format stored as blocks of rows (forced by a small `max_part_bytes`): SpMV, the
/// fused SpMV + dot paths of the solvers and CG agree with the f64 reference; the blocks
/// are aligned and cover the rows.
fn row_split_every_format<B: Backend, T: Scalar>(b: &B) {
    use galerkin::solver::LinearOperator;
    use galerkin::sparse::{Format, FormatOptions, SparseMatrix, SPLIT_ROW_ALIGN};
    for format in Format::ALL {
        let options = FormatOptions {
            limits: FormatLimits::unlimited(),
            max_part_bytes: Some(40_000),
            ..FormatOptions::default()
        };
        check_spmv::<B, T, T>(b, &format!("split {format}"), |a, alpha, x, beta, y| {
            let padded_formats = matches!(format, Format::Ell | Format::BlockEll);
            let small = a.nnz() * (T::DTYPE.size() + 4) <= 40_000;
            if format == Format::Staircase && a.nrows() != a.ncols() && small
                || padded_formats && a.nrows() * a.stats().max > 1 << 22
                || format == Format::Dia && too_many_diagonals(a)
            {
                return Err(galerkin::Error::Padding {
                    format: "skip",
                    stored: 1,
                    nnz: 0,
                    ratio: 2.0,
                    limit: 1.0,
                });
            }
            let m = SparseMatrix::from_csr(b, a, format, &options)?;
            if a.nnz() * (T::DTYPE.size() + 4) > 40_000 {
                let SparseMatrix::Split(s) = &m else {
                    panic!("{format}: {} nonzeros not split", a.nnz());
                };
                assert!(s.blocks().len() > 1);
                let mut next = 0;
                for block in s.blocks() {
                    assert_eq!(block.start, next);
                    assert!(block.start.is_multiple_of(SPLIT_ROW_ALIGN));
                    next += block.matrix.nrows();
                }
                assert_eq!(next, a.nrows());
                assert_eq!(m.nnz(), a.nnz());
                let stored = match format {
                    Format::Staircase => Format::Sell,
                    other => other,
                };
                assert_eq!(m.format(), stored);
            }
            m.spmv(alpha, x, beta, y)
        });
    }
    // The solver paths: apply_dot and apply_dot_device on a split square matrix.
    let p = RandomPattern::uniform(20_011, 20_011, 20, 60);
    let a = random_csr::<T>(&p, 5).unwrap();
    let options = FormatOptions {
        max_part_bytes: Some(1_000_000),
        ..FormatOptions::default()
    };
    let m = SparseMatrix::from_csr(b, &a, Format::Sell, &options).unwrap();
    assert!(matches!(m, SparseMatrix::Split(_)));
    let xs = random_vec::<T>(p.ncols, 3);
    let x = Vector::from_slice(b, &xs).unwrap();
    let mut y = Vector::from_slice(b, &poison::<T>(p.nrows)).unwrap();
    let xy = LinearOperator::<B, T>::apply_dot(&m, &x, &mut y).unwrap();
    let expected = reference(&a, 1.0, &xs, 0.0, &xs);
    assert_close(
        &y.to_vec().unwrap(),
        &expected,
        a.stats().max + 1,
        "split apply_dot y",
    );
    let want = exact_sum(xs.iter().zip(&expected).map(|(x, y)| x.as_f64() * y));
    let scale = exact_sum(
        xs.iter()
            .zip(&expected)
            .map(|(x, y)| (x.as_f64() * y).abs()),
    );
    assert!(
        (xy.as_f64() - want).abs() <= 1e3 * T::EPS * scale,
        "{xy} vs {want}"
    );
    let mut s = Vector::from_slice(b, &[T::from_f64(f64::NAN); 3]).unwrap();
    LinearOperator::<B, T>::apply_dot_device(&m, &x, &mut y, &mut s, 2).unwrap();
    let got = s.to_vec().unwrap()[2].as_f64();
    assert!(
        (got - want).abs() <= 1e3 * T::EPS * scale,
        "{got} vs {want}"
    );
}

backend_tests!(row_split_every_format);

/// Above the device's largest buffer (lavapipe: 128 MiB) a matrix is split on its own: the
/// 7-point Poisson matrix on 160³ (4.1M rows, 28.5M nonzeros: 228 MB of f64 values) on
/// wgpu, SpMV in SELL and CSR against the CPU. Skipped where one buffer holds it.
#[cfg(feature = "wgpu")]
#[test]
fn wgpu_splits_a_matrix_above_the_binding_limit() {
    use galerkin::sparse::generate::poisson3d_7pt;
    use galerkin::sparse::{Format, FormatOptions, SparseMatrix};
    let Some(b) = crate::harness::wgpu() else {
        return;
    };
    let limit = galerkin::BackendCore::info(&b).max_buffer_bytes;
    let n = 160;
    let a: Csr<Cpu, f64> = poisson3d_7pt(n).unwrap();
    if (a.nnz() * 8) as u64 <= limit {
        crate::harness::announce(&format!(
            "[galerkin tests] {} binds {limit} bytes: the split above the limit is not exercised",
            galerkin::BackendCore::info(&b)
        ));
        return;
    }
    let xs = random_vec::<f64>(a.ncols(), 11);
    let cpu = Cpu::new();
    let mut want = Vector::<Cpu, f64>::zeros(&cpu, a.nrows()).unwrap();
    a.spmv(1.0, &Vector::from_slice(&cpu, &xs).unwrap(), 0.0, &mut want)
        .unwrap();
    let want = want.to_vec().unwrap();
    let x = Vector::from_slice(&b, &xs).unwrap();
    for format in [Format::Sell, Format::Csr] {
        // One buffer cannot hold the values: the conversion splits by itself.
        let m = SparseMatrix::from_csr(&b, &a, format, &FormatOptions::default()).unwrap();
        let SparseMatrix::Split(s) = &m else {
            panic!("{format} of {} bytes was not split", a.nnz() * 8);
        };
        assert!(s.blocks().len() >= 2);
        let mut y = Vector::from_slice(&b, &poison::<f64>(a.nrows())).unwrap();
        m.spmv(1.0, &x, 0.0, &mut y).unwrap();
        let got = y.to_vec().unwrap();
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs() / w.abs().max(1.0))
            .fold(0.0f64, f64::max);
        assert!(worst <= 1e-13, "{format}: relative error {worst}");
    }
    // Vectors above the limit: tests/it/split.rs.
}
