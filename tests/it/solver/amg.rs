//! Smoothed-aggregation AMG on every backend and precision: one cycle against the f64 CPU
//! reference (outputs poisoned first), PCG iterations that do not grow with the mesh, and
//! the f32 hierarchy inside an f64 solve.

use galerkin::solver::{
    pcg, Amg, AmgCycle, AmgParams, AmgSmoother, MixedPrecision, NearNull, Preconditioner,
};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::Csr;
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Scalar, Vector};

use super::{check_report, jumping_diffusion, quiet, tol};
use crate::backend_tests;

/// Rows and nonzeros of each level (not how each is applied).
fn shape(i: &galerkin::solver::AmgInfo) -> Vec<(usize, usize)> {
    i.levels.iter().map(|l| (l.rows, l.nnz)).collect()
}

/// `‖x − y‖ / ‖y‖`.
fn relative(x: &[f64], y: &[f64]) -> f64 {
    let d: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
    let n: f64 = y.iter().map(|b| b * b).sum();
    (d / n).sqrt()
}

/// One application of the hierarchy on the backend in `T` against the f64 CPU hierarchy,
/// for each smoother and cycle, on a diffusion matrix whose coefficients span 4 decades.
fn amg_cycle_matches_the_cpu_reference<B: Backend, T: Scalar>(b: &B) {
    let a = jumping_diffusion(40, 4.0, 3);
    let n = a.nrows();
    let r64 = random_vec::<f64>(n, 17);
    let r: Vec<T> = r64.iter().map(|&v| T::from_f64(v)).collect();
    for (smoother, cycle) in [
        (AmgSmoother::Chebyshev { degree: 2 }, AmgCycle::V),
        (AmgSmoother::L1Jacobi { sweeps: 2 }, AmgCycle::W),
        (AmgSmoother::ChebyshevFourthKind { degree: 3 }, AmgCycle::V),
    ] {
        let params = AmgParams {
            smoother,
            cycle,
            max_coarse: 40,
            ..AmgParams::default()
        };
        let cpu = Cpu::new();
        let reference = Amg::<Cpu, f64>::new(&cpu, &a, &params).unwrap();
        let mut want = Vector::zeros(&cpu, n).unwrap();
        reference
            .precondition(&Vector::from_slice(&cpu, &r64).unwrap(), &mut want)
            .unwrap();
        let want = want.to_vec().unwrap();
        let amg = Amg::<B, T>::new(b, &a, &params).unwrap();
        assert_eq!(
            amg.info().levels,
            reference.info().levels,
            "the same hierarchy on every backend"
        );
        assert!(amg.info().levels.len() >= 3, "{:?}", amg.info());
        let rv = Vector::from_slice(b, &r).unwrap();
        let mut z = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); n]).unwrap();
        amg.precondition(&rv, &mut z).unwrap();
        let got: Vec<f64> = z.to_vec().unwrap().iter().map(|v| v.as_f64()).collect();
        let err = relative(&got, &want);
        let bound = if T::EPS > 1e-10 { 1e-4 } else { 1e-12 };
        assert!(
            err < bound,
            "{smoother:?} {cycle:?}: relative difference {err:e}"
        );
        // Every coarse level in SELL-32 (converted on a device; the CPU keeps CSR): the
        // same cycle up to rounding.
        let sell_params = AmgParams {
            coarse_sell_rows: 0,
            ..params.clone()
        };
        let sell = Amg::<B, T>::new(b, &a, &sell_params).unwrap();
        assert_eq!(shape(sell.info()), shape(reference.info()));
        let sells = sell
            .info()
            .levels
            .iter()
            .filter(|l| l.format == "sell-32")
            .count();
        if b.kind() == galerkin::BackendKind::Cpu {
            assert_eq!(sells, 0, "{:?}", sell.info().levels);
        } else {
            assert!(sells >= 1, "{:?}", sell.info().levels);
        }
        let mut z3 = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); n]).unwrap();
        sell.precondition(&rv, &mut z3).unwrap();
        let got3: Vec<f64> = z3.to_vec().unwrap().iter().map(|v| v.as_f64()).collect();
        let err3 = relative(&got3, &want);
        assert!(
            err3 < bound,
            "{smoother:?} {cycle:?}, SELL levels: {err3:e}"
        );
        // The profile: a row per level, and the cycle unchanged by it.
        let times = amg.profile(&rv, 2).unwrap();
        assert_eq!(times.len(), amg.info().levels.len());
        assert!(times
            .iter()
            .all(|t| t.total().is_finite() && t.total() >= 0.0));
        assert!(
            times.iter().map(|t| t.total()).sum::<f64>() > 0.0,
            "{times:?}"
        );
        let mut again = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); n]).unwrap();
        amg.precondition(&rv, &mut again).unwrap();
        assert_eq!(
            again.to_vec().unwrap(),
            z.to_vec().unwrap(),
            "after the profile"
        );
        // The setup from a device matrix with the caller's operator: the same hierarchy
        // and cycle.
        if b.supports(galerkin::DType::F64) {
            let a_dev = a.to_backend(b).unwrap();
            let a_t: Csr<Cpu, T> = a.convert();
            let fine = a_t.to_backend(b).unwrap();
            let dev = Amg::<B, T>::from_device_with_operator(a_dev, &fine, &params).unwrap();
            assert_eq!(shape(dev.info()), shape(reference.info()));
            let mut z2 = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); n]).unwrap();
            dev.precondition(&rv, &mut z2).unwrap();
            let got2: Vec<f64> = z2.to_vec().unwrap().iter().map(|v| v.as_f64()).collect();
            assert!(relative(&got2, &want) < bound, "from_device_with_operator");
            let wrong = poisson3d_7pt(4)
                .unwrap()
                .convert::<T>()
                .to_backend(b)
                .unwrap();
            assert!(Amg::<B, T>::from_device_with_operator(
                a.to_backend(b).unwrap(),
                &wrong,
                &params
            )
            .is_err());
        }
    }
}

/// PCG with AMG on the 7-point Laplacian: few iterations, and not more on a grid 8 times
/// larger; the answer checked by an independent residual.
fn pcg_amg_iterations_do_not_grow<B: Backend, T: Scalar>(b: &B) {
    let mut counts = Vec::new();
    for n in [12, 24] {
        let a64 = poisson3d_7pt(n).unwrap();
        let a_host: Csr<Cpu, T> = a64.convert();
        let a = a_host.to_backend(b).unwrap();
        let amg = Amg::<B, T>::new(b, &a64, &AmgParams::default()).unwrap();
        let rhs = random_vec::<T>(a64.nrows(), 5);
        let bv = Vector::from_slice(b, &rhs).unwrap();
        let mut x = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); a64.nrows()]).unwrap();
        x.fill(T::ZERO).unwrap();
        let report = pcg(&a, Some(&amg), &bv, &mut x, &quiet(tol::<T>(), 100)).unwrap();
        check_report(&report, &a_host, &rhs, &x.to_vec().unwrap(), "PCG + AMG");
        counts.push(report.iterations);
    }
    assert!(counts[0] <= 20 && counts[1] <= counts[0] + 3, "{counts:?}");
}

/// The f32 hierarchy preconditions an f64 flexible PCG to an f64 tolerance.
fn f32_hierarchy_in_an_f64_solve<B: Backend, T: Scalar>(b: &B) {
    if T::EPS > 1e-10 || !b.supports(galerkin::DType::F32) {
        return; // the f64 instance covers it
    }
    let a64 = jumping_diffusion(48, 3.0, 8);
    let a = a64.to_backend(b).unwrap();
    let amg = MixedPrecision::new(Amg::<B, f32>::new(b, &a64, &AmgParams::default()).unwrap());
    let rhs = random_vec::<f64>(a64.nrows(), 9);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let mut x = Vector::zeros(b, a64.nrows()).unwrap();
    let params = galerkin::solver::SolverParams {
        flexible: true,
        ..quiet(1e-10, 200)
    };
    let report = pcg(&a, Some(&amg), &bv, &mut x, &params).unwrap();
    check_report(
        &report,
        &a64,
        &rhs,
        &x.to_vec().unwrap(),
        "f64 PCG + f32 AMG",
    );
    assert!(report.iterations <= 40, "{report}");
    // The finest level an f32 SELL copy the hierarchy owns (its fused passes on devices):
    // the same preconditioner up to rounding, so the same count within one.
    let sell = galerkin::sparse::SparseMatrix::from_csr(
        b,
        &a64.convert::<f32>(),
        galerkin::sparse::Format::Sell,
        &galerkin::sparse::FormatOptions::default(),
    )
    .unwrap();
    let owned = MixedPrecision::new(
        Amg::<B, f32>::with_owned_operator(b, &a64, Box::new(sell), &AmgParams::default()).unwrap(),
    );
    let mut x = Vector::from_slice(b, &vec![f64::NAN; a64.nrows()]).unwrap();
    x.fill(0.0).unwrap();
    let again = pcg(&a, Some(&owned), &bv, &mut x, &params).unwrap();
    check_report(
        &again,
        &a64,
        &rhs,
        &x.to_vec().unwrap(),
        "owned SELL finest level",
    );
    assert!(
        again.iterations.abs_diff(report.iterations) <= 1,
        "{again} against {report}"
    );
}

/// A near-null space made on the backend (`NearNull::Strided`, `NearNull::Constants`) is the
/// explicit vector it stands for (`NearNull::Vectors`): the same hierarchy, the same cycle
/// to the last bit.
fn near_null_made_on_the_backend<B: Backend, T: Scalar>(b: &B) {
    let (a, _) = galerkin::sparse::generate::hdg_trace(3, 8, 5, 2).unwrap();
    let n = a.nrows();
    let r: Vec<T> = random_vec::<f64>(n, 23)
        .iter()
        .map(|&v| T::from_f64(v))
        .collect();
    let rv = Vector::from_slice(b, &r).unwrap();
    let apply = |near_null: NearNull| -> Vec<T> {
        let params = AmgParams {
            near_null,
            max_coarse: 30,
            ..AmgParams::default()
        };
        let amg = Amg::<B, T>::new(b, &a, &params).unwrap();
        assert!(amg.info().levels.len() >= 2);
        let mut z = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); n]).unwrap();
        amg.precondition(&rv, &mut z).unwrap();
        z.to_vec().unwrap()
    };
    let strided = apply(NearNull::Strided(4));
    let explicit = apply(NearNull::Vectors(vec![galerkin::hdg::trace_constants(
        n, 4,
    )]));
    assert!(strided.iter().all(|v| v.as_f64().is_finite()));
    assert_eq!(strided, explicit, "Strided(4) against the explicit vector");
    let ones = apply(NearNull::Vectors(vec![vec![1.0; n]]));
    assert_eq!(apply(NearNull::Strided(1)), ones, "Strided(1) against ones");
    assert_eq!(apply(NearNull::Constants), ones, "Constants against ones");
    // A stride of 0, or one that leaves a single unit vector, is refused.
    for stride in [0, n] {
        let bad = AmgParams {
            near_null: NearNull::Strided(stride),
            ..AmgParams::default()
        };
        assert!(
            matches!(
                Amg::<B, T>::new(b, &a, &bad),
                Err(galerkin::Error::InvalidArgument { .. })
            ),
            "stride {stride}"
        );
    }
    // No vectors mean the constants.
    assert_eq!(NearNull::from(Vec::new()), NearNull::Constants);
}

/// PCG iterations with AMG (CPU; the hierarchy is the same on every backend) on the data
/// set's structural and shell matrices against PyAMG 5.4.1's, recorded with
/// `scripts/amg_reference.py` (`smoothed_aggregation_solver` defaults: symmetric strength
/// θ = 0, standard aggregation, symmetric Gauss–Seidel; CG acceleration; b = A·1, x₀ = 0,
/// ‖r‖ ≤ 10⁻⁸ ‖b‖; 2026-11-28; PyAMG also smooths its near-null vector by 4 symmetric
/// Gauss–Seidel sweeps, `improve_candidates`). With the defaults (Chebyshev degree 3, the
/// constants improved by 2 smoothing steps) and with degree 4 the counts are within 1.5x of
/// PyAMG's (2026-11-30: 37 / 76 / 273 / 148 and 34 / 61 / 200 / 124); without the improvement
/// (54 / 109 / 263 / 158 at degree 3), within 1.7x. Each answer is checked by an independent
/// residual.
#[test]
#[ignore = "tier 2: real matrices (GALERKIN_DATA_DIR)"]
fn amg_iterations_against_pyamg_on_real_matrices() {
    let Some(dir) = std::env::var_os("GALERKIN_DATA_DIR") else {
        eprintln!("[galerkin tests] skipping amg against PyAMG: GALERKIN_DATA_DIR unset");
        return;
    };
    let dir = std::path::Path::new(&dir).join("mtx");
    let cpu = Cpu::new();
    // (file, PyAMG's iterations)
    for (file, pyamg) in [
        ("HB_bcsstk09.mtx", 34),
        ("HB_bcsstk10.mtx.gz", 69),
        ("HB_bcsstk13.mtx", 295),
        ("Cylshell_s1rmt3m1.mtx.gz", 150),
    ] {
        let a = galerkin::sparse::read_matrix_market(dir.join(file))
            .unwrap()
            .to_csr()
            .unwrap();
        let n = a.nrows();
        let ones = Vector::from_slice(&cpu, &vec![1.0; n]).unwrap();
        let mut rhs = Vector::<Cpu, f64>::zeros(&cpu, n).unwrap();
        a.spmv(1.0, &ones, 0.0, &mut rhs).unwrap();
        let rhs = rhs.to_vec().unwrap();
        let mut counts = Vec::new();
        for (degree, improve, bound) in [(3, 2, 1.5), (4, 2, 1.5), (3, 0, 1.7)] {
            let params = AmgParams {
                smoother: AmgSmoother::Chebyshev { degree },
                improve_candidates: improve,
                ..AmgParams::default()
            };
            let amg = Amg::<Cpu, f64>::new(&cpu, &a, &params).unwrap();
            let bv = Vector::from_slice(&cpu, &rhs).unwrap();
            let mut x = Vector::from_slice(&cpu, &vec![f64::NAN; n]).unwrap();
            x.fill(0.0).unwrap();
            let report = pcg(&a, Some(&amg), &bv, &mut x, &quiet(1e-8, 2000)).unwrap();
            let x = x.to_vec().unwrap();
            let res = super::independent_residual(&a, &rhs, &x);
            assert!(
                report.reason == galerkin::solver::StopReason::Converged && res <= 2e-8,
                "{file}, degree {degree}, improve {improve}: {report}, independent residual {res:e}"
            );
            let ratio = report.iterations as f64 / f64::from(pyamg);
            assert!(
                ratio <= bound,
                "{file}, degree {degree}, improve {improve}: {} iterations, PyAMG {pyamg} (ratio {ratio:.2} > {bound})",
                report.iterations
            );
            counts.push(report.iterations);
        }
        eprintln!(
            "AMG against PyAMG on {file}: (degree, improve) (3, 2) / (4, 2) / (3, 0): {counts:?}, PyAMG {pyamg}"
        );
    }
}

backend_tests!(
    amg_cycle_matches_the_cpu_reference,
    pcg_amg_iterations_do_not_grow,
    f32_hierarchy_in_an_f64_solve,
    near_null_made_on_the_backend
);
