//! Building and converting matrices: exact round trips through every format, duplicates
//! summed, invalid input as typed errors, and padding blow-ups refused.

use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{
    BlockEll, Csr, Ell, FormatLimits, Sell, SellParams, StaircaseParams, StaircaseSell,
};
use galerkin::Cpu;

use super::patterns;

#[test]
#[ignore = "tier 2 (long): cargo test --release -- --ignored"]
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
