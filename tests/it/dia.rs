//! DIA: SpMV, the fused SpMV + dot and CG on banded random matrices and the Poisson
//! operators, on every backend and precision, against the f64 reference over the CSR matrix;
//! conversions, the automatic choice and the padding refusal.

use galerkin::solver::{cg, Progress, SolverParams};
use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{
    choose_format, diagonal_offsets, generate, Csr, Dia, Format, FormatLimits, FormatOptions,
    SparseMatrix, SparseStorage,
};
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Cpu, Element, Scalar, Vector};

use crate::backend_tests;
use crate::harness::{assert_close, assert_close_scaled, exact_sum};
use crate::sparse::reference;

/// Banded test patterns: empty, 1 x 1, rectangular both ways (the band reaching past the
/// columns), and sizes that are no multiple of a cube.
fn banded() -> Vec<RandomPattern> {
    vec![
        RandomPattern::banded(0, 0, 3),
        RandomPattern::banded(1, 1, 2),
        RandomPattern::banded(37, 1000, 40),
        RandomPattern::banded(1000, 37, 5),
        RandomPattern::banded(1003, 1003, 3),
        RandomPattern::banded(40_009, 40_009, 7),
    ]
}

/// SpMV with values stored as `V`, `beta = 0` on a poisoned `y` and `beta != 0`.
fn check<B: Backend, V: Element, T: Scalar>(b: &B, what: &str) {
    for (i, p) in banded().iter().enumerate() {
        let a = random_csr::<V>(p, 300 + i as u64).unwrap();
        let m = Dia::from_csr(&a, &FormatLimits::unlimited())
            .unwrap()
            .to_backend(b)
            .unwrap();
        assert!(m.offsets().len() <= 2 * p.band + 1);
        let xs = random_vec::<T>(p.ncols, 7);
        let ys = random_vec::<T>(p.nrows, 8);
        let x = Vector::from_slice(b, &xs).unwrap();
        for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.25)] {
            let mut y = if beta == 0.0 {
                Vector::from_slice(b, &poison::<T>(p.nrows)).unwrap()
            } else {
                Vector::from_slice(b, &ys).unwrap()
            };
            m.spmv(T::from_f64(alpha), &x, T::from_f64(beta), &mut y)
                .unwrap();
            let case = format!(
                "dia {what} {}x{} band {} beta={beta}",
                p.nrows, p.ncols, p.band
            );
            assert_close(
                &y.to_vec().unwrap(),
                &reference(&a, alpha, &xs, beta, &ys),
                a.stats().max.max(1) + 1,
                &case,
            );
        }
    }
}

fn dia_spmv<B: Backend, T: Scalar>(b: &B) {
    check::<B, T, T>(b, "values T");
    // f32 values with T vectors (mixed precision when T = f64).
    check::<B, f32, T>(b, "f32 values");
}

/// The fused `y = A x; x·y` (one pass on devices; CG's) against the f64 reference.
fn dia_spmv_dot<B: Backend, T: Scalar>(b: &B) {
    for (i, p) in banded()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.nrows == p.ncols)
    {
        let a = random_csr::<T>(p, 500 + i as u64).unwrap();
        let m = Dia::from_csr(&a, &FormatLimits::unlimited())
            .unwrap()
            .to_backend(b)
            .unwrap();
        let xs = random_vec::<T>(p.ncols, 9);
        let x = Vector::from_slice(b, &xs).unwrap();
        let mut y = Vector::from_slice(b, &poison::<T>(p.nrows)).unwrap();
        let d = m.spmv_dot(&x, &mut y).unwrap();
        let expected = reference(&a, 1.0, &xs, 0.0, &xs);
        let case = format!("dia spmv_dot {}x{}", p.nrows, p.ncols);
        assert_close(&y.to_vec().unwrap(), &expected, a.stats().max + 1, &case);
        let terms: Vec<f64> = xs
            .iter()
            .zip(&expected)
            .map(|(x, y)| x.as_f64() * y)
            .collect();
        let scale = exact_sum(terms.iter().map(|t| t.abs()));
        assert_close_scaled(
            &[d],
            &[exact_sum(terms)],
            scale,
            p.nrows + a.stats().max,
            &case,
        );
    }
}

/// CG on the 7- and 27-point Poisson operators stored as DIA takes the iterations and
/// reaches the solution of CG on CSR (the device-scalar path: fused SpMV + dot).
fn dia_cg_on_poisson<B: Backend, T: Scalar>(b: &B) {
    for (name, a) in [
        ("7-point", generate::poisson3d_7pt(11).unwrap()),
        ("27-point", generate::poisson3d_27pt(9).unwrap()),
    ] {
        let a: Csr<Cpu, T> = a.convert();
        let n = a.nrows();
        let options = FormatOptions::default();
        let dia = SparseMatrix::from_csr(b, &a, Format::Dia, &options).unwrap();
        assert_eq!(dia.format(), Format::Dia);
        let csr = SparseMatrix::from_csr(b, &a, Format::Csr, &options).unwrap();
        let rhs = Vector::from_slice(b, &random_vec::<T>(n, 4)).unwrap();
        let tol = if T::DTYPE.size() == 4 { 1e-5 } else { 1e-10 };
        let params = SolverParams {
            progress: Progress::Never,
            ..SolverParams::new(tol, 500)
        };
        let mut solutions = Vec::new();
        let mut iterations = Vec::new();
        for m in [&dia, &csr] {
            let mut x = Vector::from_slice(b, &poison::<T>(n)).unwrap();
            x.fill(T::ZERO).unwrap();
            let r = cg(m, &rhs, &mut x, &params).unwrap();
            assert!(r.converged(), "{name}: {r:?}");
            iterations.push(r.iterations);
            solutions.push(x.to_vec().unwrap());
        }
        assert!(
            iterations[0].abs_diff(iterations[1]) <= 1,
            "{name}: DIA {} against CSR {} iterations",
            iterations[0],
            iterations[1]
        );
        let want: Vec<f64> = solutions[1].iter().map(|v| v.as_f64()).collect();
        let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
        for (i, (g, w)) in solutions[0].iter().zip(&want).enumerate() {
            assert!(
                (g.as_f64() - w).abs() <= 100.0 * tol * scale,
                "{name}: x[{i}] {g:?} against {w}"
            );
        }
    }
}

/// An infinite `x[0]` reaches only the rows with a stored entry in column 0: a diagonal's
/// slots outside the matrix contribute nothing (the branch-free kernels read `x[0]` there
/// and must drop the term, not multiply it by zero).
fn dia_outside_slots_add_nothing<B: Backend, T: Scalar>(b: &B) {
    // Poisson 7-point: the slots that reach column 0 inside the matrix (rows 1, 5, 25) are
    // stored entries; every other row has slots left of column 0, outside the matrix.
    let a: Csr<Cpu, T> = generate::poisson3d_7pt(5).unwrap().convert();
    let n = a.nrows();
    let m = SparseMatrix::from_csr(b, &a, Format::Dia, &FormatOptions::default()).unwrap();
    let mut xs = random_vec::<T>(n, 12);
    xs[0] = T::from_f64(f64::INFINITY);
    let x = Vector::from_slice(b, &xs).unwrap();
    let mut y = Vector::from_slice(b, &poison::<T>(n)).unwrap();
    m.spmv(T::ONE, &x, T::ZERO, &mut y).unwrap();
    let y = y.to_vec().unwrap();
    let (row_ptr, col_idx) = (a.row_ptr(), a.col_idx());
    for (r, v) in y.iter().enumerate() {
        let touches = col_idx[row_ptr[r] as usize..row_ptr[r + 1] as usize].contains(&0);
        assert_eq!(
            v.as_f64().is_finite(),
            !touches,
            "row {r}: {v:?} (stored column 0: {touches})"
        );
    }
}

backend_tests!(
    dia_spmv,
    dia_spmv_dot,
    dia_cg_on_poisson,
    dia_outside_slots_add_nothing
);

#[test]
fn dia_round_trips_and_counts_diagonals() {
    let a = generate::poisson3d_7pt(10).unwrap();
    let m = Dia::from_csr(&a, &FormatLimits::default()).unwrap();
    assert_eq!(m.offsets(), &[-100, -10, -1, 0, 1, 10, 100]);
    assert_eq!(m.nnz(), a.nnz());
    assert_eq!(m.storage_bytes(), 7 * (1000 * 8 + 4));
    let back = m.to_csr().unwrap();
    assert_eq!(back.row_ptr(), a.row_ptr());
    assert_eq!(back.col_idx(), a.col_idx());
    assert_eq!(back.values(), a.values());
    // A rectangular banded matrix with empty rows.
    let a = random_csr::<f64>(&RandomPattern::banded(300, 120, 4), 3).unwrap();
    let offsets = diagonal_offsets(&a, usize::MAX).unwrap();
    let m = Dia::from_csr(&a, &FormatLimits::unlimited()).unwrap();
    assert_eq!(m.offsets(), &offsets[..]);
    assert!(offsets.iter().all(|&o| o.abs() <= 4));
    let back = m.to_csr().unwrap();
    assert_eq!(back.col_idx(), a.col_idx());
    assert_eq!(back.values(), a.values());
    // Too many diagonals for the bound: `None`.
    assert_eq!(diagonal_offsets(&a, offsets.len() - 1), None);
}

#[test]
fn dia_refuses_scattered_matrices_with_the_padding_ratio() {
    let a = random_csr::<f64>(&RandomPattern::uniform(5000, 5000, 3, 7), 11).unwrap();
    match Dia::from_csr(&a, &FormatLimits::default()) {
        Err(galerkin::Error::Padding {
            format: "DIA",
            ratio,
            limit,
            ..
        }) => assert!(ratio > limit && limit == 3.0, "{ratio} {limit}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(m) => panic!("{} diagonals accepted", m.offsets().len()),
    }
}

#[test]
fn auto_takes_dia_for_structured_grids_only() {
    for a in [
        generate::poisson3d_7pt(20).unwrap(),
        generate::poisson3d_27pt(12).unwrap(),
    ] {
        let c = choose_format(&a);
        assert_eq!(c.format, Format::Dia, "{c}");
    }
    // Random columns: many diagonals, SELL as before.
    let a = random_csr::<f64>(&RandomPattern::uniform(5000, 5000, 7, 7), 2).unwrap();
    assert_eq!(choose_format(&a).format, Format::Sell);
    // A band of random columns pads more than the rule allows.
    let a = random_csr::<f64>(&RandomPattern::banded(5000, 5000, 6), 2).unwrap();
    assert_ne!(choose_format(&a).format, Format::Dia);
}
