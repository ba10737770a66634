//! [`SparseMatrix`](galerkin::sparse::SparseMatrix): every format through it (and half
//! precision values), the format chosen from the statistics, and tuning.

use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::FormatLimits;
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Cpu, Scalar, Vector};

use super::{check_spmv, reference, too_many_diagonals};
use crate::backend_tests;
use crate::harness::assert_close;

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

/// [`SparseMatrix::to_precision`](galerkin::sparse::SparseMatrix::to_precision), made on the
/// backend, equals the matrix built on the host from the rounded CSR in every format, from
/// f64 and from f32 to `T`, whole and split into blocks: both SpMVs agree bit for bit (same
/// arrays, same kernel) and with the reference; the copy outlives its source.
fn sparse_matrix_to_precision<B: Backend, T: Scalar>(b: &B) {
    use galerkin::sparse::{Format, FormatOptions};
    let n = 3001;
    let square = random_csr::<f64>(&RandomPattern::awkward(n, n), 91).unwrap();
    let banded = random_csr::<f64>(&RandomPattern::banded(n, n, 9), 92).unwrap();
    let xs = random_vec::<T>(n, 5);
    let x = Vector::from_slice(b, &xs).unwrap();
    for format in Format::ALL {
        let a = if format == Format::Dia {
            &banded
        } else {
            &square
        };
        if matches!(format, Format::Ell | Format::BlockEll) && n * a.stats().max > 1 << 22 {
            continue;
        }
        for max_part_bytes in [None, Some(40_000)] {
            let options = FormatOptions {
                limits: FormatLimits::unlimited(),
                max_part_bytes,
                ..FormatOptions::default()
            };
            let what = format!("{format}, parts of {max_part_bytes:?} bytes");
            if b.supports(galerkin::DType::F64) {
                to_precision_from::<B, f64, T>(b, a, format, &options, &x, &xs, &what);
            }
            to_precision_from::<B, f32, T>(b, a, format, &options, &x, &xs, &what);
        }
    }
}

fn to_precision_from<B: Backend, V: Scalar, T: Scalar>(
    b: &B,
    a64: &galerkin::sparse::Csr<Cpu, f64>,
    format: galerkin::sparse::Format,
    options: &galerkin::sparse::FormatOptions,
    x: &Vector<B, T>,
    xs: &[T],
    what: &str,
) {
    use galerkin::sparse::SparseMatrix;
    let av = a64.convert::<V>();
    let at = av.convert::<T>();
    let source = SparseMatrix::from_csr(b, &av, format, options).unwrap();
    let copy: SparseMatrix<B, T> = source.to_precision::<T>().unwrap();
    assert_eq!(copy.format(), source.format(), "{what}");
    assert_eq!(
        matches!(copy, SparseMatrix::Split(_)),
        matches!(source, SparseMatrix::Split(_)),
        "{what}"
    );
    drop(source);
    let direct = SparseMatrix::from_csr(b, &at, format, options).unwrap();
    let n = a64.nrows();
    let mut y_copy = Vector::from_slice(b, &poison::<T>(n)).unwrap();
    let mut y_direct = Vector::from_slice(b, &poison::<T>(n)).unwrap();
    copy.spmv(T::ONE, x, T::ZERO, &mut y_copy).unwrap();
    direct.spmv(T::ONE, x, T::ZERO, &mut y_direct).unwrap();
    let (got, want) = (y_copy.to_vec().unwrap(), y_direct.to_vec().unwrap());
    // Split, the blocks follow the source's bytes (more blocks in f64): then only close.
    let split = matches!(copy, SparseMatrix::Split(_));
    let differ = got
        .iter()
        .zip(&want)
        .position(|(g, w)| !split && g.as_f64().to_bits() != w.as_f64().to_bits());
    assert_eq!(
        differ,
        None,
        "{what}, {} -> {}: SpMV of the device copy differs from the host-built matrix",
        V::DTYPE,
        T::DTYPE
    );
    let expected = reference(&at, 1.0, xs, 0.0, xs);
    assert_close(&got, &expected, 1001, what);
}

backend_tests!(sparse_matrix_to_precision);
