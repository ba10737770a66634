//! Matrices stored as blocks of rows: every format split by a small part size, the solver
//! paths on a split matrix, and a matrix above the device's largest buffer.

use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::FormatLimits;
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Scalar, Vector};

use super::{check_spmv, reference, too_many_diagonals};
use crate::backend_tests;
use crate::harness::{assert_close, exact_sum};

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
#[ignore = "tier 2 (long): cargo test --release -- --ignored"]
fn wgpu_splits_a_matrix_above_the_binding_limit() {
    use galerkin::sparse::generate::poisson3d_7pt;
    use galerkin::sparse::{Csr, Format, FormatOptions, SparseMatrix};
    use galerkin::Cpu;
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
