//! The sparse algebra of AMG's setup on every backend against the CPU reference: SpGEMM,
//! transpose, diagonal and strength on random and awkward patterns, MIS-2 aggregation and
//! the tentative and smoothed prolongators. Device memory is poisoned with NaN before each
//! operation (the pool hands the poisoned blocks to the outputs).

use galerkin::sparse::algebra::{
    aggregate, block_ell_to_csr, diagonal, smooth_prolongator, spgemm, strength, tentative,
    transpose, NearNullSpace,
};
use galerkin::sparse::generate::{poisson2d_5pt, poisson3d_7pt};
use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::Csr;
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Element, Scalar, Vector};

use crate::backend_tests;

/// Fills and frees `len` values of NaN on `b`, so that the next allocations reuse them.
fn poison_pool<B: Backend, T: Scalar>(b: &B, len: usize) {
    let v = Vector::<B, T>::from_slice(b, &vec![T::from_f64(f64::NAN); len.max(1)]).unwrap();
    drop(v);
}

/// `a` rounded to `T`, widened back: the matrix a run in `T` sees, in f64.
fn in_t<T: Scalar>(a: &Csr<Cpu, f64>) -> (Csr<Cpu, T>, Csr<Cpu, f64>) {
    let t: Csr<Cpu, T> = a.convert();
    let back: Csr<Cpu, f64> = t.convert();
    (t, back)
}

/// Same pattern; values within `tol` relative to the row's magnitude `scale[i]`.
fn assert_same<T: Element>(got: &Csr<Cpu, T>, want: &Csr<Cpu, f64>, tol: f64, what: &str) {
    assert_eq!(
        (got.nrows(), got.ncols()),
        (want.nrows(), want.ncols()),
        "{what}"
    );
    if let Some(i) = (0..want.nrows()).find(|&i| got.row(i).0.len() != want.row(i).0.len()) {
        panic!(
            "{what}: row {i} has {} entries, the reference {} (first columns {:?} / {:?})",
            got.row(i).0.len(),
            want.row(i).0.len(),
            &got.row(i).0[..got.row(i).0.len().min(8)],
            &want.row(i).0[..want.row(i).0.len().min(8)],
        );
    }
    assert_eq!(got.col_idx(), want.col_idx(), "{what}: columns");
    for i in 0..want.nrows() {
        let (_, wv) = want.row(i);
        let (_, gv) = got.row(i);
        let scale = wv.iter().map(|v| v.abs()).fold(0.0, f64::max).max(1e-300);
        for (k, (g, w)) in gv.iter().zip(wv).enumerate() {
            let g = g.as_f64();
            assert!(
                (g - w).abs() <= tol * scale,
                "{what}: row {i} entry {k}: {g} against {w}"
            );
        }
    }
}

fn tol<T: Scalar>() -> f64 {
    if T::EPS > 1e-10 {
        1e-5
    } else {
        1e-13
    }
}

fn products_transposes_and_filters_match_the_cpu<B: Backend, T: Scalar>(b: &B) {
    let cases = [
        (
            RandomPattern::uniform(37, 53, 0, 9),
            RandomPattern::uniform(53, 29, 0, 7),
        ),
        (
            RandomPattern::awkward(1200, 1200),
            RandomPattern::awkward(1200, 1200),
        ),
        (
            RandomPattern::uniform(1, 40, 1, 40),
            RandomPattern::uniform(40, 1, 1, 1),
        ),
        (
            RandomPattern::uniform(0, 0, 0, 0),
            RandomPattern::uniform(0, 0, 0, 0),
        ),
        (
            RandomPattern::uniform(5000, 700, 3, 12),
            RandomPattern::uniform(700, 900, 0, 30),
        ),
        // Rows of 65..90 entries: in pieces of 32 (a unit each), then summed, or (32-lane
        // plane devices) a plane per row.
        (
            RandomPattern::uniform(300, 400, 65, 90),
            RandomPattern::uniform(400, 50, 1, 3),
        ),
        // Rows of 0..128 entries (empty ones too): a plane a row on 32-lane plane devices,
        // one to four cursors a lane.
        (
            RandomPattern::uniform(900, 1500, 0, 128),
            RandomPattern::uniform(1500, 2000, 0, 6),
        ),
        // Rows of 33..40 entries (a unit a row without planes, a plane a row with them;
        // small enough for lavapipe's loop budget), and rows of all 32 columns of B.
        (
            RandomPattern::uniform(400, 900, 33, 40),
            RandomPattern::uniform(900, 700, 0, 12),
        ),
        (
            RandomPattern::uniform(300, 200, 33, 36),
            RandomPattern::uniform(200, 32, 10, 23),
        ),
        // Rows of ~1200 distinct columns (lavapipe: the host).
        (
            RandomPattern::uniform(200, 3000, 33, 40),
            RandomPattern::uniform(3000, 20000, 30, 40),
        ),
        // Rows of 130..300 entries and a B of 80 columns: a cube per row, accumulated
        // densely in shared memory in up to 32 segments (lavapipe takes such rows to the
        // host).
        (
            RandomPattern::uniform(200, 600, 130, 300),
            RandomPattern::uniform(600, 80, 1, 4),
        ),
        // The same with B's rows of up to 40 entries over 509 columns (the widest dense
        // row, 512), and with rows of 65..90 (dense on lavapipe; a plane a row elsewhere).
        (
            RandomPattern::uniform(150, 700, 130, 300),
            RandomPattern::uniform(700, 509, 0, 40),
        ),
        (
            RandomPattern::uniform(120, 700, 65, 90),
            RandomPattern::uniform(700, 300, 1, 12),
        ),
        // Rows of 130..300 entries and a B of 900 columns, too wide for a dense row: pieces
        // of 128 (a plane each) on 32-lane plane devices, then summed.
        (
            RandomPattern::uniform(200, 600, 130, 300),
            RandomPattern::uniform(600, 900, 1, 4),
        ),
        // Transposes with rows of ~100 and ~225 entries: sorted by rank.
        (
            RandomPattern::uniform(1000, 100, 8, 12),
            RandomPattern::uniform(100, 30, 1, 3),
        ),
        (
            RandomPattern::uniform(3000, 100, 5, 10),
            RandomPattern::uniform(100, 50, 0, 5),
        ),
        // A transpose with rows of ~1500 entries, above the rank sort's 1024 but within its
        // Σ L² budget: sorted by rank.
        (
            RandomPattern::uniform(3000, 3, 1, 2),
            RandomPattern::uniform(3, 7, 1, 3),
        ),
        // A transpose with a row of 70,000 entries (Σ L² = 4.9e9 > 2³²): sorted by merging
        // runs (on a GPU; lavapipe takes such rows to the host).
        (
            RandomPattern::uniform(70_000, 1, 1, 1),
            RandomPattern::uniform(1, 5, 1, 3),
        ),
    ];
    for (seed, (pa, pb)) in cases.iter().enumerate() {
        let (ta, a) = in_t::<T>(&random_csr(pa, seed as u64 + 1).unwrap());
        let (tb, bm) = in_t::<T>(&random_csr(pb, seed as u64 + 50).unwrap());
        let (da, db) = (ta.to_backend(b).unwrap(), tb.to_backend(b).unwrap());
        let what = format!(
            "{}x{} · {}x{}",
            a.nrows(),
            a.ncols(),
            bm.nrows(),
            bm.ncols()
        );
        // SpGEMM against the CPU's f64 product.
        let want = spgemm(&a, &bm).unwrap();
        poison_pool::<B, T>(b, 2 * want.nnz() + 4 * a.nnz());
        let got = spgemm(&da, &db).unwrap().to_host().unwrap();
        assert_same(&got, &want, tol::<T>() * 10.0, &format!("spgemm {what}"));
        if a.nnz() > 0 && want.nnz() > 0 {
            assert!(
                want.values().iter().any(|v| *v != 0.0),
                "{what}: a zero product"
            );
        }
        // Transpose: the same values moved.
        poison_pool::<B, T>(b, 2 * a.nnz());
        let got = transpose(&da).unwrap().to_host().unwrap();
        assert_same(&got, &a.transpose(), 0.0, &format!("transpose {what}"));
        // Diagonal.
        poison_pool::<B, T>(b, a.nrows());
        let got = diagonal(&da).unwrap().to_vec().unwrap();
        let want: Vec<f64> = a.diagonal();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.as_f64(), *w, "diagonal {what}: row {i}");
        }
        // Strength (square matrices).
        if a.nrows() == a.ncols() {
            for theta in [0.0, 0.1, 0.5] {
                poison_pool::<B, T>(b, 2 * a.nnz());
                let got = strength(&da, theta).unwrap().to_host().unwrap();
                let want = strength(&a, theta).unwrap();
                assert_same(&got, &want, 0.0, &format!("strength {theta} {what}"));
            }
        }
    }
    // Errors before any kernel.
    let (ta, _) = in_t::<T>(&random_csr(&RandomPattern::uniform(5, 6, 1, 3), 1).unwrap());
    let da = ta.to_backend(b).unwrap();
    assert!(spgemm(&da, &da).is_err());
    assert!(strength(&da, 0.5).is_err());
    assert!(aggregate(&da).is_err());
}

fn aggregation_and_prolongators_match_the_cpu<B: Backend, T: Scalar>(b: &B) {
    let cpu = Cpu::new();
    // Unsymmetric and awkward patterns (a device round recomputes only the rows its
    // undecided nodes reach, marked along their rows), and a 3D Laplacian of many rounds:
    // the same aggregates as the CPU's.
    for (name, a) in [
        (
            "uniform 4000, 1..9",
            random_csr::<f64>(&RandomPattern::uniform(4000, 4000, 1, 9), 5).unwrap(),
        ),
        (
            "awkward 3000",
            random_csr::<f64>(&RandomPattern::awkward(3000, 3000), 6).unwrap(),
        ),
        (
            "banded 5000, 40",
            random_csr::<f64>(&RandomPattern::banded(5000, 5000, 40), 7).unwrap(),
        ),
        ("poisson3d 40", poisson3d_7pt(40).unwrap()),
    ] {
        let (ta, a_t) = in_t::<T>(&a);
        let want = aggregate(&a_t).unwrap();
        poison_pool::<B, T>(b, 8 * a.nrows());
        let got = aggregate(&ta.to_backend(b).unwrap()).unwrap();
        assert_eq!(got.count(), want.count(), "{name}");
        assert_eq!(got.to_vec().unwrap(), want.to_vec().unwrap(), "{name}");
    }
    for (name, a) in [
        ("poisson2d 41", poisson2d_5pt(41).unwrap()),
        ("poisson3d 11", poisson3d_7pt(11).unwrap()),
    ] {
        let (ta, a_t) = in_t::<T>(&a);
        let da = ta.to_backend(b).unwrap();
        // Aggregation is exact: the same aggregates as the CPU's.
        let s_host = strength(&a_t, 0.0).unwrap();
        let want = aggregate(&s_host).unwrap();
        poison_pool::<B, T>(b, 8 * a.nrows());
        let s = strength(&da, 0.0).unwrap();
        let got = aggregate(&s).unwrap();
        assert_eq!(got.count(), want.count(), "{name}");
        assert_eq!(got.to_vec().unwrap(), want.to_vec().unwrap(), "{name}");
        assert!(
            want.count() > 1 && want.count() * 4 < a.nrows(),
            "{name}: {}",
            want.count()
        );
        if !b.supports(galerkin::DType::F64) || T::EPS > 1e-10 {
            continue; // the prolongators are f64
        }
        // The tentative prolongator of 3 random vectors, then its smoothing.
        let n = a.nrows();
        let vecs: Vec<Vec<f64>> = (0..3)
            .map(|c| {
                random_vec::<f64>(n, 30 + c)
                    .iter()
                    .map(|x| x + 0.1)
                    .collect()
            })
            .collect();
        let (t_want, bc_want) =
            tentative(&want, &NearNullSpace::new(&cpu, &vecs).unwrap()).unwrap();
        poison_pool::<B, f64>(b, 4 * n);
        let (t_got, bc_got) = tentative(&got, &NearNullSpace::new(b, &vecs).unwrap()).unwrap();
        let t_host = t_got.to_host().unwrap();
        assert_same(&t_host, &t_want, 1e-13, &format!("tentative {name}"));
        let (g, w) = (bc_got.to_vec().unwrap(), bc_want.to_vec().unwrap());
        assert_eq!(g.len(), w.len(), "{name}");
        for (k, (g, w)) in g.iter().zip(&w).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "{name}: B_c[{k}] {g} vs {w}"
            );
        }
        let a64 = a.to_backend(b).unwrap();
        let p_want = smooth_prolongator(&a, &t_want, 0.6).unwrap();
        poison_pool::<B, f64>(b, 4 * p_want.nnz());
        let p_got = smooth_prolongator(&a64, &t_got, 0.6)
            .unwrap()
            .to_host()
            .unwrap();
        assert_same(&p_got, &p_want, 1e-13, &format!("smoothed {name}"));
    }
    // A row without a positive diagonal is named.
    if b.supports(galerkin::DType::F64) {
        let bad = Csr::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -2.0]).unwrap();
        let t = Csr::new(2, 1, vec![0, 1, 2], vec![0, 0], vec![1.0, 1.0]).unwrap();
        let e = smooth_prolongator(&bad.to_backend(b).unwrap(), &t.to_backend(b).unwrap(), 0.5)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("row 1 has diagonal -2"), "{e}");
    }
}

/// Block-ELL to CSR on the backend: exactly the host conversion (stored zeros and the
/// zeros inside blocks dropped, columns sorted), for block sizes 1..5, a last block row cut
/// short, and the HDG trace pattern.
fn block_ell_to_csr_matches_the_host<B: Backend, T: Scalar>(b: &B) {
    use galerkin::sparse::{BlockEll, FormatLimits};
    let mut cases: Vec<(Csr<Cpu, f64>, usize)> = Vec::new();
    for (seed, (n, m)) in [(1usize, 1usize), (40, 2), (301, 3), (1000, 4), (97, 5)]
        .into_iter()
        .enumerate()
    {
        let mut a = random_csr(&RandomPattern::uniform(n, n, 0, 12), seed as u64 + 7).unwrap();
        // Stored zeros, which the conversion drops.
        for v in a.values_mut().iter_mut().step_by(5) {
            *v = 0.0;
        }
        cases.push((a, m));
    }
    let (trace, _) = galerkin::sparse::generate::hdg_trace(3, 6, 5, 2).unwrap();
    cases.push((trace, 4));
    for (a, m) in &cases {
        let (ta, _) = in_t::<T>(a);
        let host = BlockEll::from_csr(&ta, *m, &FormatLimits::unlimited()).unwrap();
        let want: Csr<Cpu, f64> = host.to_csr().unwrap().convert();
        let dev = host.to_backend(b).unwrap();
        poison_pool::<B, f64>(b, 4 * want.nnz() + a.nrows());
        let got = block_ell_to_csr(&dev).unwrap().to_host().unwrap();
        let what = format!("block-ELL {}x{} blocks of {m}", a.nrows(), a.ncols());
        assert_same(&got, &want, 0.0, &what);
        assert_eq!(got.values(), want.values(), "{what}: values");
        let nonzeros = a.values().iter().filter(|v| **v != 0.0).count();
        assert_eq!(want.nnz(), nonzeros, "{what}: every nonzero entry kept");
    }
}

/// SELL-C (σ = 1) converted where the matrix lives: the host conversion's slots, the CSR
/// it came from when converted back (the padding marked as such), and an SpMV with it
/// against the CPU's with the pool poisoned (a padding slot left unwritten would read NaN);
/// for slice heights 1, 8 and 32, a last slice cut short, empty rows and an empty matrix;
/// too much padding refused before anything is allocated.
fn csr_to_sell_matches_the_host<B: Backend, T: Scalar>(b: &B) {
    use galerkin::sparse::algebra::to_sell;
    use galerkin::sparse::{FormatLimits, Sell, SellParams};
    let mut cases: Vec<Csr<Cpu, f64>> = vec![
        random_csr(&RandomPattern::uniform(1000, 1000, 0, 40), 3).unwrap(),
        random_csr(&RandomPattern::uniform(77, 130, 1, 9), 4).unwrap(),
        poisson3d_7pt(9).unwrap(),
        Csr::new(0, 0, vec![0], vec![], vec![]).unwrap(),
    ];
    cases.push(galerkin::sparse::generate::hdg_trace(3, 6, 5, 2).unwrap().0);
    for (i, a) in cases.iter().enumerate() {
        let (ta, back) = in_t::<T>(a);
        let dev = ta.to_backend(b).unwrap();
        for c in [1u32, 8, 32] {
            let what = format!("case {i} ({}x{}), C = {c}", a.nrows(), a.ncols());
            let host = Sell::from_csr(
                &ta,
                SellParams {
                    slice_height: c,
                    sigma: 1,
                },
                &FormatLimits::unlimited(),
            )
            .unwrap();
            poison_pool::<B, T>(b, 2 * host.stored() + 64);
            // Column slots too (u32 blocks of the same pool sizes): 2³²−1 is PAD, so a
            // slot left unwritten reads as garbage, not as padding.
            drop(Vector::<B, T>::from_slice(
                b,
                &vec![T::from_f64(3.0); host.stored() + 64],
            ));
            let got = to_sell(&dev, c, &FormatLimits::unlimited()).unwrap();
            assert_eq!(got.stored(), host.stored(), "{what}: slots");
            assert_eq!(got.params(), host.params(), "{what}");
            let csr: Csr<Cpu, f64> = got.to_host().unwrap().to_csr().unwrap().convert();
            assert_same(&csr, &back, 0.0, &what);
            assert_eq!(csr.values(), back.values(), "{what}: values");
            if a.nrows() == 0 {
                continue;
            }
            let xh: Vec<T> = random_vec(a.ncols(), 11 + i as u64);
            let x = Vector::from_slice(b, &xh).unwrap();
            poison_pool::<B, T>(b, a.nrows());
            let mut y = Vector::<B, T>::zeros(b, a.nrows()).unwrap();
            y.fill(T::from_f64(f64::NAN)).unwrap();
            got.spmv(T::ONE, &x, T::ZERO, &mut y).unwrap();
            let cpu = Cpu::new();
            let mut want = Vector::<Cpu, T>::zeros(&cpu, a.nrows()).unwrap();
            ta.spmv(
                T::ONE,
                &Vector::from_slice(&cpu, &xh).unwrap(),
                T::ZERO,
                &mut want,
            )
            .unwrap();
            let want = want.to_vec().unwrap();
            let y = y.to_vec().unwrap();
            for r in 0..a.nrows() {
                let scale = back
                    .row(r)
                    .1
                    .iter()
                    .map(|v| v.abs())
                    .sum::<f64>()
                    .max(1e-30);
                let (g, w) = (y[r].as_f64(), want[r].as_f64());
                assert!(
                    (g - w).abs() <= tol::<T>() * scale,
                    "{what}: row {r}: {g} against {w}"
                );
            }
        }
    }
    // Rows of 1 and 40 entries in one slice pad to 40 x 32 slots: over a limit of 2.
    let uneven = random_csr(&RandomPattern::uniform(64, 64, 1, 40), 5).unwrap();
    let (tu, _) = in_t::<T>(&uneven);
    let e = to_sell(
        &tu.to_backend(b).unwrap(),
        32,
        &FormatLimits {
            max_padding_ratio: 1.0,
        },
    )
    .err()
    .expect("refused");
    assert!(matches!(e, galerkin::Error::Padding { .. }), "{e}");
    let e = to_sell(&tu.to_backend(b).unwrap(), 3, &FormatLimits::default())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("power of two"), "{e}");
    assert!(e.to_string().contains("to_sell"), "names the call: {e}");
    // One row of 2²² entries in a slice of 1024 rows: 2³² slots, which wrapped to 0 in a
    // 32-bit count (an empty SELL, SpMV all zeros). Refused as the host refuses it: the
    // padding first, then 32-bit offsets when the padding is allowed.
    let long = 1usize << 22;
    let row = Csr::<Cpu, T>::new(
        1,
        long,
        vec![0, long as u32],
        (0..long as u32).collect(),
        (0..long)
            .map(|k| T::from_f64(1.0 + (k % 7) as f64))
            .collect(),
    )
    .unwrap()
    .to_backend(b)
    .unwrap();
    let e = to_sell(&row, 1024, &FormatLimits::default())
        .err()
        .expect("refused");
    assert!(matches!(e, galerkin::Error::Padding { .. }), "{e}");
    let e = to_sell(&row, 1024, &FormatLimits::unlimited())
        .err()
        .expect("refused");
    assert!(
        matches!(e, galerkin::Error::InvalidMatrix { .. }) && e.to_string().contains("4294967296"),
        "{e}"
    );
}

/// The values check AMG's setup makes at θ = 0 (a matrix without stored zeros is its own
/// strength graph): one zero (or −0) anywhere in a long random vector is seen, on a device as
/// on the CPU; NaN is not a zero. f64 buffers, so once per backend (the f64 instance).
fn any_zero_sees_a_single_zero<B: Backend, T: Scalar>(b: &B) {
    if !b.supports(galerkin::DType::F64) || T::EPS > 1e-10 {
        return;
    }
    let n = 300_001;
    let base: Vec<f64> = random_vec::<f64>(n, 41)
        .into_iter()
        .map(|v| if v == 0.0 { 0.5 } else { v })
        .collect();
    let check = |v: &[f64]| {
        poison_pool::<B, f64>(b, n);
        let x = Vector::from_slice(b, v).unwrap();
        b.any_zero(x.buffer().unwrap()).unwrap()
    };
    assert!(!check(&base));
    for (at, zero) in [(0, 0.0), (1, -0.0), (n / 2, 0.0), (n - 1, 0.0)] {
        let mut v = base.clone();
        v[at] = zero;
        assert!(check(&v), "a zero at {at}");
    }
    let mut v = base.clone();
    v[n / 3] = f64::NAN;
    assert!(!check(&v), "NaN is not a zero");
}

backend_tests!(
    any_zero_sees_a_single_zero,
    products_transposes_and_filters_match_the_cpu,
    aggregation_and_prolongators_match_the_cpu,
    block_ell_to_csr_matches_the_host,
    csr_to_sell_matches_the_host
);
