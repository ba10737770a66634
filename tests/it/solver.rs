//! Krylov solvers on every backend and precision: convergence checked by an independent
//! residual, iteration counts against a textbook CG with the documented summation order,
//! failure modes, mixed precision.

use galerkin::solver::{
    bicgstab, cg, fgmres, gmres, iterative_refinement, pcg, BlockJacobi, Chebyshev,
    ChebyshevParams, Control, Identity, Jacobi, LinearOperator, MixedPrecision, Preconditioner,
    Progress, RefinementParams, SolveReport, SolverParams, StopReason,
};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::{Coo, Csr};
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Element, Scalar, Vector};

use crate::backend_tests;
use crate::harness::exact_sum;

fn quiet<'a>(rtol: f64, max_iter: usize) -> SolverParams<'a> {
    SolverParams {
        progress: Progress::Never,
        ..SolverParams::new(rtol, max_iter)
    }
}

/// A nonsymmetric, diagonally dominant convection–diffusion matrix on an n x n grid
/// (upwinded convection of strength `c`).
fn convection_diffusion(n: usize, c: f64) -> Csr<Cpu, f64> {
    let mut coo = Coo::with_capacity(n * n, n * n, 5 * n * n);
    let id = |i: usize, j: usize| i * n + j;
    for i in 0..n {
        for j in 0..n {
            coo.push(id(i, j), id(i, j), 4.0 + 2.0 * c).unwrap();
            if i > 0 {
                coo.push(id(i, j), id(i - 1, j), -1.0 - c).unwrap();
            }
            if i + 1 < n {
                coo.push(id(i, j), id(i + 1, j), -1.0).unwrap();
            }
            if j > 0 {
                coo.push(id(i, j), id(i, j - 1), -1.0 - c).unwrap();
            }
            if j + 1 < n {
                coo.push(id(i, j), id(i, j + 1), -1.0).unwrap();
            }
        }
    }
    coo.to_csr().unwrap()
}

/// `‖b − A x‖ / ‖b‖` computed on the host in f64 with compensated sums.
fn independent_residual<V: Element, T: Scalar>(a: &Csr<Cpu, V>, b: &[T], x: &[T]) -> f64 {
    let r: Vec<f64> = (0..a.nrows())
        .map(|i| {
            let (cols, vals) = a.row(i);
            b[i].as_f64()
                - exact_sum(
                    cols.iter()
                        .zip(vals)
                        .map(|(&c, v)| v.as_f64() * x[c as usize].as_f64()),
                )
        })
        .collect();
    exact_sum(r.iter().map(|v| v * v)).sqrt()
        / exact_sum(b.iter().map(|v| v.as_f64() * v.as_f64())).sqrt()
}

/// Tolerance reachable in precision T (f32 stalls near 1e-6 relative).
fn tol<T: Scalar>() -> f64 {
    if T::EPS > 1e-10 {
        1e-5
    } else {
        1e-10
    }
}

fn check_report<T: Scalar>(report: &SolveReport, a: &Csr<Cpu, T>, b: &[T], x: &[T], what: &str) {
    assert_eq!(report.reason, StopReason::Converged, "{what}: {report}");
    let res = independent_residual(a, b, x);
    // The true residual may exceed the recursive one by rounding: allow 20x in f32, 2x in f64.
    let slack = if T::EPS > 1e-10 { 20.0 } else { 2.0 };
    assert!(
        res <= slack * tol::<T>(),
        "{what}: independent residual {res:e}; {report}"
    );
    assert!(
        (report.relative_residual() - res).abs() <= 0.1 * res + 10.0 * T::EPS,
        "{what}: reported {} vs {res}",
        report.relative_residual()
    );
}

fn spd_problem<T: Scalar>() -> Csr<Cpu, T> {
    poisson3d_7pt(12).unwrap().convert()
}

fn every_solver_on_spd<B: Backend, T: Scalar>(b: &B) {
    let a_host = spd_problem::<T>();
    let a = a_host.to_backend(b).unwrap();
    let n = a_host.nrows();
    let rhs = random_vec::<T>(n, 3);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let jacobi = Jacobi::<B, T>::new(b, &a_host).unwrap();
    let block = BlockJacobi::<B, T>::new(b, &a_host, 4).unwrap();
    let diag: Vec<f64> = a_host.diagonal().iter().map(|v| v.as_f64()).collect();
    let cheb = Chebyshev::new(b, &a, &diag, ChebyshevParams::default()).unwrap();
    let params = quiet(tol::<T>(), 500);
    let sell = galerkin::sparse::SparseMatrix::from_csr(
        b,
        &a_host,
        galerkin::sparse::Format::Sell,
        &galerkin::sparse::FormatOptions::default(),
    )
    .unwrap();
    type Run<'a, B, T> = Box<dyn Fn(&mut Vector<B, T>) -> SolveReport + 'a>;
    let runs: Vec<(&str, Run<B, T>)> = vec![
        ("cg", Box::new(|x| cg(&a, &bv, x, &params).unwrap())),
        (
            "cg on sell (fused spmv + dot)",
            Box::new(|x| cg(&sell, &bv, x, &params).unwrap()),
        ),
        (
            "pcg jacobi",
            Box::new(|x| pcg(&a, Some(&jacobi), &bv, x, &params).unwrap()),
        ),
        (
            "pcg block-jacobi",
            Box::new(|x| pcg(&a, Some(&block), &bv, x, &params).unwrap()),
        ),
        (
            "pcg chebyshev",
            Box::new(|x| pcg(&a, Some(&cheb), &bv, x, &params).unwrap()),
        ),
        (
            "bicgstab",
            Box::new(|x| bicgstab(&a, None, &bv, x, &params).unwrap()),
        ),
        (
            "bicgstab jacobi",
            Box::new(|x| bicgstab(&a, Some(&jacobi), &bv, x, &params).unwrap()),
        ),
        (
            "gmres(30)",
            Box::new(|x| gmres(&a, None, &bv, x, &params).unwrap()),
        ),
        (
            "gmres jacobi",
            Box::new(|x| gmres(&a, Some(&jacobi), &bv, x, &params).unwrap()),
        ),
        (
            "fgmres chebyshev",
            Box::new(|x| fgmres(&a, Some(&cheb), &bv, x, &params).unwrap()),
        ),
    ];
    let mut cg_iterations = 0;
    for (name, run) in runs {
        let mut x = Vector::from_slice(b, &galerkin::verify::poison::<T>(n)).unwrap();
        x.fill(T::ZERO).unwrap();
        let report = run(&mut x);
        check_report(&report, &a_host, &rhs, &x.to_vec().unwrap(), name);
        if name == "cg" {
            cg_iterations = report.iterations;
        }
        if name == "pcg chebyshev" {
            assert!(
                report.iterations * 2 < cg_iterations,
                "Chebyshev should cut CG iterations: {report}"
            );
        }
    }
}

fn nonsymmetric_solvers<B: Backend, T: Scalar>(b: &B) {
    let a_host: Csr<Cpu, T> = convection_diffusion(30, 2.0).convert();
    let a = a_host.to_backend(b).unwrap();
    let n = a_host.nrows();
    let rhs = random_vec::<T>(n, 5);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let jacobi = Jacobi::<B, T>::new(b, &a_host).unwrap();
    let params = SolverParams {
        restart: 20,
        ..quiet(tol::<T>(), 2000)
    };
    for (name, m) in [
        ("none", None),
        ("jacobi", Some(&jacobi as &dyn Preconditioner<B, T>)),
    ] {
        for solver in ["bicgstab", "gmres", "fgmres"] {
            let mut x = Vector::zeros(b, n).unwrap();
            let report = match solver {
                "bicgstab" => bicgstab(&a, m, &bv, &mut x, &params),
                "gmres" => gmres(&a, m, &bv, &mut x, &params),
                _ => fgmres(&a, m, &bv, &mut x, &params),
            }
            .unwrap();
            check_report(
                &report,
                &a_host,
                &rhs,
                &x.to_vec().unwrap(),
                &format!("{solver} {name}"),
            );
        }
    }
    // CG on a nonsymmetric matrix is not defined; it must still stop, never hang.
    let mut x = Vector::zeros(b, n).unwrap();
    let report = cg(&a, &bv, &mut x, &quiet(1e-30, 300)).unwrap();
    assert_ne!(report.reason, StopReason::Converged);
}

/// Indefinite matrix, singular matrix, NaN in b, zero b: each its reason.
fn failure_modes<B: Backend, T: Scalar>(b: &B) {
    let n = 50;
    // diag(1, -1, 1, -1, ...): indefinite.
    let indefinite = Csr::new(
        n,
        n,
        (0..=n as u32).collect(),
        (0..n as u32).collect(),
        (0..n)
            .map(|i| T::from_f64(if i % 2 == 0 { 1.0 } else { -1.0 }))
            .collect(),
    )
    .unwrap()
    .to_backend(b)
    .unwrap();
    let ones = Vector::full(b, n, T::ONE).unwrap();
    let mut x = Vector::zeros(b, n).unwrap();
    let r = cg(&indefinite, &ones, &mut x, &quiet(1e-8, 100)).unwrap();
    assert!(
        matches!(r.reason, StopReason::IndefiniteOperator { curvature } if curvature <= 0.0),
        "{r}"
    );

    // Singular (a zero row) with an inconsistent right-hand side: never converges, stops.
    let singular = Csr::new(
        n,
        n,
        (0..=n as u32).map(|i| i.min(n as u32 - 1)).collect(),
        (0..n as u32 - 1).collect(),
        vec![T::from_f64(2.0); n - 1],
    )
    .unwrap()
    .to_backend(b)
    .unwrap();
    for solver in ["cg", "bicgstab", "gmres"] {
        let mut x = Vector::zeros(b, n).unwrap();
        let params = SolverParams {
            stagnation_window: 20,
            ..quiet(1e-8, 200)
        };
        let r = match solver {
            "cg" => cg(&singular, &ones, &mut x, &params),
            "bicgstab" => bicgstab(&singular, None, &ones, &mut x, &params),
            _ => gmres(&singular, None, &ones, &mut x, &params),
        }
        .unwrap();
        assert_ne!(
            r.reason,
            StopReason::Converged,
            "{solver} on a singular system: {r}"
        );
        assert!(r.iterations <= 200, "{solver}: {r}");
    }

    // NaN in b.
    let mut nan_b = vec![T::ONE; n];
    nan_b[7] = T::from_f64(f64::NAN);
    let nan_b = Vector::from_slice(b, &nan_b).unwrap();
    let mut x = Vector::zeros(b, n).unwrap();
    let r = gmres(&indefinite, None, &nan_b, &mut x, &quiet(1e-8, 100)).unwrap();
    assert_eq!(r.reason, StopReason::NonFinite { quantity: "b" });
    let r = cg(&indefinite, &nan_b, &mut x, &quiet(1e-8, 100)).unwrap();
    assert_eq!(r.reason, StopReason::NonFinite { quantity: "b" });

    // Zero b: x = 0, converged without iterating.
    let zero = Vector::zeros(b, n).unwrap();
    let mut x = Vector::full(b, n, T::from_f64(3.0)).unwrap();
    let r = bicgstab(&indefinite, None, &zero, &mut x, &quiet(1e-8, 100)).unwrap();
    assert_eq!(
        (r.reason.clone(), r.iterations),
        (StopReason::Converged, 0),
        "{r}"
    );
    assert!(x.to_vec().unwrap().iter().all(|v| v.as_f64() == 0.0));

    // Size mismatch: an error naming the operand.
    let short = Vector::zeros(b, n - 1).unwrap();
    let e = cg(&indefinite, &short, &mut x, &quiet(1e-8, 10)).unwrap_err();
    assert!(
        matches!(e, galerkin::Error::DimensionMismatch { what: "b", .. }),
        "{e}"
    );
}

backend_tests!(every_solver_on_spd, nonsymmetric_solvers, failure_modes);

/// The summation order of the CPU backend's reductions (see `galerkin::vector`): chunks of
/// 16384, eight f64 lanes per chunk, lanes combined in a fixed order, chunks pairwise.
fn documented_dot(x: &[f64], y: &[f64]) -> f64 {
    fn pairwise(v: &[f64]) -> f64 {
        match v.len() {
            0 => 0.0,
            1 => v[0],
            n => pairwise(&v[..n / 2]) + pairwise(&v[n / 2..]),
        }
    }
    let chunks: Vec<f64> = x
        .chunks(16384)
        .zip(y.chunks(16384))
        .map(|(a, b)| {
            let mut l = [0.0f64; 8];
            for (i, (p, q)) in a.iter().zip(b).enumerate() {
                l[i % 8] += p * q;
            }
            ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
        })
        .collect();
    pairwise(&chunks)
}

/// Textbook CG (Hestenes–Stiefel) with plain loops, in f64, using the documented order.
fn textbook_cg(a: &Csr<Cpu, f64>, b: &[f64], rtol: f64, max_iter: usize) -> usize {
    let n = b.len();
    let spmv = |x: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let (cols, vals) = a.row(i);
                let mut acc = 0.0;
                for (&c, &v) in cols.iter().zip(vals) {
                    acc += v * x[c as usize];
                }
                acc
            })
            .collect()
    };
    let target = rtol * documented_dot(b, b).sqrt();
    let mut x = vec![0.0; n];
    let mut r = b.to_vec();
    let mut p = r.clone();
    let mut rr = documented_dot(&r, &r);
    for k in 1..=max_iter {
        let q = spmv(&p);
        let alpha = rr / documented_dot(&p, &q);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        let rr_new = documented_dot(&r, &r);
        if rr_new.sqrt() <= target {
            return k;
        }
        let beta = rr_new / rr;
        rr = rr_new;
        for i in 0..n {
            p[i] = r[i] + beta * p[i];
        }
    }
    max_iter
}

#[test]
fn cpu_cg_matches_textbook_iteration_counts() {
    let cpu = Cpu::new();
    for (name, a) in [
        ("poisson 24^3", poisson3d_7pt(24).unwrap()),
        (
            "fvm tets",
            galerkin::fvm::tpfa_tets_structured(8, 0.15, 3).unwrap(),
        ),
        ("poisson 9^3", poisson3d_7pt(9).unwrap()),
    ] {
        let rhs = random_vec::<f64>(a.nrows(), 11);
        for rtol in [1e-4, 1e-8, 1e-11] {
            let expected = textbook_cg(&a, &rhs, rtol, 2000);
            let mut x = Vector::zeros(&cpu, a.nrows()).unwrap();
            let b = Vector::from_slice(&cpu, &rhs).unwrap();
            let report = cg(&a, &b, &mut x, &quiet(rtol, 2000)).unwrap();
            assert_eq!(report.iterations, expected, "{name}, rtol {rtol}: {report}");
        }
    }
}

#[test]
fn block_jacobi_reports_a_singular_block() {
    // Block 1 (rows 3..6) of a 3 x 3 block matrix has a zero row.
    let mut coo = Coo::with_capacity(9, 9, 81);
    for i in 0..9 {
        for j in 0..9 {
            if i / 3 == j / 3 && i != 4 {
                coo.push(i, j, if i == j { 4.0 } else { 1.0 }).unwrap();
            }
        }
    }
    let a = coo.to_csr().unwrap();
    match BlockJacobi::<Cpu, f64>::new(&Cpu::new(), &a, 3) {
        Err(galerkin::Error::InvalidArgument { reason, .. }) => {
            assert!(reason.contains("block 1 (rows 3..6)"), "{reason}")
        }
        other => panic!(
            "expected a singular-block error, got {:?}",
            other.map(|_| ())
        ),
    }
    // From a block-ELL matrix: the same diagonal blocks.
    let good = poisson3d_7pt(6).unwrap();
    let bell = galerkin::sparse::BlockEll::from_csr(
        &good,
        6,
        &galerkin::sparse::FormatLimits::unlimited(),
    )
    .unwrap();
    let p1 = BlockJacobi::<Cpu, f64>::from_block_ell(&Cpu::new(), &bell).unwrap();
    let p2 = BlockJacobi::<Cpu, f64>::new(&Cpu::new(), &good, 6).unwrap();
    let r = Vector::from_slice(&Cpu::new(), &random_vec::<f64>(good.nrows(), 3)).unwrap();
    let (mut z1, mut z2) = (
        Vector::zeros(&Cpu::new(), good.nrows()).unwrap(),
        Vector::zeros(&Cpu::new(), good.nrows()).unwrap(),
    );
    p1.precondition(&r, &mut z1).unwrap();
    p2.precondition(&r, &mut z2).unwrap();
    assert_eq!(z1.to_vec().unwrap(), z2.to_vec().unwrap());
}

/// Checking the device-resident scalars only every k iterations costs at most k − 1 extra
/// iterations and reaches the same accuracy.
fn cg_check_every<B: Backend, T: Scalar>(b: &B) {
    let a_host = spd_problem::<T>();
    let a = a_host.to_backend(b).unwrap();
    let rhs = random_vec::<T>(a_host.nrows(), 17);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let mut x = Vector::zeros(b, a_host.nrows()).unwrap();
    let every = cg(&a, &bv, &mut x, &quiet(tol::<T>(), 500)).unwrap();
    for k in [3, 10] {
        let mut y = Vector::zeros(b, a_host.nrows()).unwrap();
        let params = SolverParams {
            check_every: k,
            ..quiet(tol::<T>(), 500)
        };
        let r = cg(&a, &bv, &mut y, &params).unwrap();
        check_report(
            &r,
            &a_host,
            &rhs,
            &y.to_vec().unwrap(),
            &format!("cg check_every={k}"),
        );
        assert!(
            r.iterations >= every.iterations && r.iterations < every.iterations + k,
            "{r} vs {every}"
        );
        assert!(r.iterations % k == 0 || r.iterations == 500);
    }
}

backend_tests!(cg_check_every);

#[test]
fn monitor_sees_every_iteration_and_can_stop() {
    let cpu = Cpu::new();
    let a = poisson3d_7pt(10).unwrap();
    let b = Vector::full(&cpu, a.nrows(), 1.0).unwrap();
    let mut seen = Vec::new();
    let mut x = Vector::zeros(&cpu, a.nrows()).unwrap();
    let params = quiet(1e-12, 1000).with_monitor(|info| {
        seen.push((info.iteration, info.residual));
        if info.iteration == 5 {
            Control::Stop
        } else {
            Control::Continue
        }
    });
    let report = cg(&a, &b, &mut x, &params).unwrap();
    drop(params);
    assert_eq!(report.reason, StopReason::Stopped);
    assert_eq!(report.iterations, 5);
    assert_eq!(seen.len(), 6);
    assert_eq!(
        seen.iter().map(|s| s.1).collect::<Vec<_>>(),
        report.residual_history
    );
}

/// (a) an f32 preconditioner inside f64 FGMRES and flexible PCG; (b) iterative refinement
/// with f32 inner solves; (c) f32 matrix values inside f64 CG. All reach f64 accuracy.
fn mixed_precision<B: Backend, T: Scalar>(b: &B) {
    if T::EPS > 1e-10 || !b.info().supports_f64() {
        return; // the mixed modes are about f64 solves
    }
    let a64_host = poisson3d_7pt(14).unwrap();
    let a32_host: Csr<Cpu, f32> = a64_host.convert();
    let a64 = a64_host.to_backend(b).unwrap();
    let a32 = a32_host.to_backend(b).unwrap();
    let n = a64_host.nrows();
    let rhs = random_vec::<f64>(n, 21);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let params = quiet(1e-10, 1000);

    // (a) Chebyshev in f32 around the f32 matrix, used by f64 FGMRES and flexible PCG.
    let diag: Vec<f64> = a64_host.diagonal();
    let cheb32 = Chebyshev::<B, f32>::new(b, &a32, &diag, ChebyshevParams::default()).unwrap();
    let mixed = MixedPrecision::new(cheb32);
    let mut x = Vector::zeros(b, n).unwrap();
    let r = fgmres(
        &a64,
        Some(&mixed as &dyn Preconditioner<B, f64>),
        &bv,
        &mut x,
        &params,
    )
    .unwrap();
    check_report(
        &r,
        &a64_host,
        &rhs,
        &x.to_vec().unwrap(),
        "fgmres + f32 chebyshev",
    );
    let flexible = SolverParams {
        flexible: true,
        ..quiet(1e-10, 1000)
    };
    let mut x = Vector::zeros(b, n).unwrap();
    let r = pcg(&a64, Some(&mixed), &bv, &mut x, &flexible).unwrap();
    check_report(
        &r,
        &a64_host,
        &rhs,
        &x.to_vec().unwrap(),
        "flexible pcg + f32 chebyshev",
    );

    // (b) Iterative refinement: f64 residuals, f32 Jacobi-PCG corrections.
    let jac32 = Jacobi::<B, f32>::new(b, &a32_host).unwrap();
    let mut x = Vector::zeros(b, n).unwrap();
    let r = iterative_refinement(
        &a64,
        &a32,
        Some(&jac32),
        &bv,
        &mut x,
        &RefinementParams::default(),
    )
    .unwrap();
    assert_eq!(r.reason, StopReason::Converged, "{r}");
    let res = independent_residual(&a64_host, &rhs, &x.to_vec().unwrap());
    assert!(res <= 2e-12, "refinement residual {res:e}: {r}");
    assert!(
        r.iterations >= 2,
        "refinement needs more than one f32 solve: {r}"
    );

    // (c) f32 values (exact here: the Poisson entries are small integers) in f64 CG.
    let mut x = Vector::zeros(b, n).unwrap();
    let r = cg(&a32 as &dyn LinearOperator<B, f64>, &bv, &mut x, &params).unwrap();
    check_report(
        &r,
        &a64_host,
        &rhs,
        &x.to_vec().unwrap(),
        "f64 cg on f32 values",
    );
    let mut x64 = Vector::zeros(b, n).unwrap();
    let r64 = cg(&a64, &bv, &mut x64, &params).unwrap();
    assert_eq!(
        r.iterations, r64.iterations,
        "identical arithmetic, identical iterations"
    );

    // Preconditioners are operators too.
    let id = Identity::new(n);
    let mut y = Vector::zeros(b, n).unwrap();
    LinearOperator::<B, f64>::apply(&id, &bv, &mut y).unwrap();
    assert_eq!(y.to_vec().unwrap(), rhs);
}

backend_tests!(mixed_precision);

/// A 2D five-point diffusion matrix on an `n x n` grid (Dirichlet) whose cell coefficients
/// jump over `decades` orders of magnitude at random (harmonic means on the faces): SPD,
/// condition ≥ 1e6 for the sizes used here, and rounding its values to f32 moves the
/// solution far more than an f64 tolerance allows.
fn jumping_diffusion(n: usize, decades: f64, seed: u64) -> Csr<Cpu, f64> {
    let mut rng = galerkin::verify::Rng::new(seed);
    // Coefficients constant on 4 x 4 blocks of cells, so the jumps form channels.
    let blocks = n.div_ceil(4);
    let kb: Vec<f64> = (0..blocks * blocks)
        .map(|_| 10f64.powf(rng.range(-decades / 2.0, decades / 2.0)))
        .collect();
    let k = |i: usize, j: usize| kb[(i / 4) * blocks + j / 4];
    let face = |a: f64, b: f64| 2.0 * a * b / (a + b);
    let mut coo = Coo::with_capacity(n * n, n * n, 5 * n * n);
    let id = |i: usize, j: usize| i * n + j;
    for i in 0..n {
        for j in 0..n {
            let kij = k(i, j);
            let mut diag = 0.0;
            let neighbours = [
                (i > 0).then(|| (i - 1, j)),
                (i + 1 < n).then(|| (i + 1, j)),
                (j > 0).then(|| (i, j - 1)),
                (j + 1 < n).then(|| (i, j + 1)),
            ];
            for nb in neighbours {
                match nb {
                    Some((p, q)) => {
                        let t = face(kij, k(p, q));
                        diag += t;
                        coo.push(id(i, j), id(p, q), -t).unwrap();
                    }
                    None => diag += 2.0 * kij, // Dirichlet face at half a cell
                }
            }
            coo.push(id(i, j), id(i, j), diag).unwrap();
        }
    }
    coo.to_csr().unwrap()
}

/// Mixed precision answers the f64 system as given: on a matrix whose f32 rounding matters
/// (solving the rounded matrix misses 1e-8 by orders of magnitude), every mixed path
/// (FGMRES or flexible CG around an f32 inner solve, iterative refinement) reaches 1e-8 in
/// the f64 residual, checked independently; and a mixed solve that cannot get there does
/// not say `Converged`.
fn mixed_precision_meets_the_f64_tolerance<B: Backend, T: Scalar>(b: &B) {
    use galerkin::solver::{mixed_solve, InnerSolver, MixedOuter, MixedParams};
    if T::EPS > 1e-10 || !b.info().supports_f64() {
        return; // once per backend: mixed precision is about f64 answers
    }
    let a64_host = jumping_diffusion(48, 6.0, 7);
    let kappa = condition_lower_bound(&a64_host);
    assert!(kappa >= 1e6, "condition number only {kappa:e}");
    let a32_host: Csr<Cpu, f32> = a64_host.convert();
    let n = a64_host.nrows();
    let (a64, a32) = (
        a64_host.to_backend(b).unwrap(),
        a32_host.to_backend(b).unwrap(),
    );
    // b ≡ 1 (a constant source): x = A⁻¹ b is large next to b, ‖b‖ ≈ λ_min ‖x‖, so the
    // f32 rounding error δA x is of the order κ ε₃₂ ‖b‖.
    let rhs = vec![1.0f64; n];
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let tol = 1e-8;

    // The trap: f64 CG on the f32 values solves the rounded matrix.
    let mut x = Vector::zeros(b, n).unwrap();
    let rounded = cg(
        &a32 as &dyn LinearOperator<B, f64>,
        &bv,
        &mut x,
        &quiet(tol, 5000),
    )
    .unwrap();
    let miss = independent_residual(&a64_host, &rhs, &x.to_vec().unwrap());
    assert!(
        miss > 1000.0 * tol,
        "the test matrix must be one whose f32 rounding matters: {miss:e} ({rounded})"
    );

    let jac32 = Jacobi::<B, f32>::new(b, &a32_host).unwrap();
    for (outer, inner) in [
        (MixedOuter::Fgmres, InnerSolver::Cg),
        (MixedOuter::FlexibleCg, InnerSolver::Cg),
        (MixedOuter::Fgmres, InnerSolver::Gmres),
        (MixedOuter::Refinement, InnerSolver::Cg),
    ] {
        let mixed = MixedParams {
            outer,
            inner,
            ..MixedParams::default()
        };
        let mut x = Vector::zeros(b, n).unwrap();
        let report = mixed_solve(
            &a64,
            &a32,
            Some(&jac32),
            &bv,
            &mut x,
            &quiet(tol, 200),
            &mixed,
        )
        .unwrap();
        let res = independent_residual(&a64_host, &rhs, &x.to_vec().unwrap());
        if outer == MixedOuter::Refinement && !report.converged() {
            // A stationary refinement diverges when κ ε₃₂ is not small: it must say so.
            assert!(res > tol, "{outer:?}: {report}, independent {res:e}");
            assert!((report.relative_residual() - res).abs() <= 0.05 * res);
            continue;
        }
        assert!(report.converged(), "{outer:?}/{inner:?}: {report}");
        assert!(
            res <= 1.01 * tol,
            "{outer:?}/{inner:?}: independent {res:e}; {report}"
        );
        assert!(
            (report.relative_residual() - res).abs() <= 0.05 * res,
            "{outer:?}/{inner:?}: reported {:e} vs independent {res:e}",
            report.relative_residual()
        );
        assert!(
            report.operator_applications > report.iterations,
            "the inner f32 applications are counted: {report}"
        );
    }

    // Too few outer iterations for 1e-14: the report says so, with the true residual.
    let mut x = Vector::zeros(b, n).unwrap();
    let report = mixed_solve(
        &a64,
        &a32,
        Some(&jac32),
        &bv,
        &mut x,
        &quiet(1e-14, 2),
        &MixedParams::default(),
    )
    .unwrap();
    let res = independent_residual(&a64_host, &rhs, &x.to_vec().unwrap());
    assert!(!report.converged(), "{report}");
    assert!(res > 1e-14, "{res:e}");
    assert!((report.relative_residual() - res).abs() <= 0.05 * res);
}

backend_tests!(mixed_precision_meets_the_f64_tolerance);

/// A lower bound of the condition number of an SPD matrix: the Rayleigh quotients of a few
/// power iterations (≤ λ_max) over those of a few inverse iterations (≥ λ_min).
fn condition_lower_bound(a: &Csr<Cpu, f64>) -> f64 {
    let cpu = Cpu::new();
    let n = a.nrows();
    let rayleigh = |v: &Vector<Cpu, f64>| {
        let mut av = Vector::zeros(&cpu, n).unwrap();
        a.spmv(1.0, v, 0.0, &mut av).unwrap();
        v.dot(&av).unwrap() / v.dot(v).unwrap()
    };
    let mut v = Vector::from_slice(&cpu, &random_vec::<f64>(n, 3)).unwrap();
    for _ in 0..100 {
        let mut w = Vector::zeros(&cpu, n).unwrap();
        a.spmv(1.0, &v, 0.0, &mut w).unwrap();
        let norm = w.nrm2().unwrap();
        w.scale(1.0 / norm).unwrap();
        v = w;
    }
    let lambda_max = rayleigh(&v);
    let mut u = Vector::full(&cpu, n, 1.0).unwrap();
    for _ in 0..4 {
        let mut w = Vector::zeros(&cpu, n).unwrap();
        cg(a, &u, &mut w, &quiet(1e-12, 20_000)).unwrap();
        let norm = w.nrm2().unwrap();
        w.scale(1.0 / norm).unwrap();
        u = w;
    }
    lambda_max / rayleigh(&u)
}

/// An operator whose fused product (CG's iteration uses it) is `factor · A` while its plain
/// application (the true residual uses it) is `A`: the recursive residual converges for the
/// wrong system. The solver must not trust it: it restarts from the true residual, which
/// converges when the mismatch contracts fast enough (`factor` near 1) and otherwise ends in
/// `ResidualGap` — never `Converged` with a true residual above the tolerance.
struct Mismatched<'a, B: Backend> {
    a: &'a dyn LinearOperator<B, f64>,
    factor: f64,
}

impl<B: Backend> LinearOperator<B, f64> for Mismatched<'_, B> {
    fn nrows(&self) -> usize {
        self.a.nrows()
    }
    fn ncols(&self) -> usize {
        self.a.ncols()
    }
    fn apply_add(
        &self,
        alpha: f64,
        x: &Vector<B, f64>,
        beta: f64,
        y: &mut Vector<B, f64>,
    ) -> galerkin::Result<()> {
        self.a.apply_add(alpha, x, beta, y)
    }
    fn apply_dot(&self, x: &Vector<B, f64>, y: &mut Vector<B, f64>) -> galerkin::Result<f64> {
        self.a.apply_add(self.factor, x, 0.0, y)?;
        x.dot(y)
    }
    fn apply_dot_device(
        &self,
        x: &Vector<B, f64>,
        y: &mut Vector<B, f64>,
        scalars: &mut Vector<B, f64>,
        slot: usize,
    ) -> galerkin::Result<()> {
        self.a.apply_add(self.factor, x, 0.0, y)?;
        galerkin::vector::dot_into(x, y, scalars, slot)
    }
}

fn residual_gap_is_never_converged<B: Backend, T: Scalar>(b: &B) {
    if T::EPS > 1e-10 || !b.info().supports_f64() {
        return;
    }
    let a_host = poisson3d_7pt(10).unwrap();
    let a = a_host.to_backend(b).unwrap();
    let n = a_host.nrows();
    let rhs = random_vec::<f64>(n, 5);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    // factor 1 + 1e-4: each restart multiplies the true residual by 1e-4, so three
    // replacements reach 1e-10; factor 1.5: by 1/3, so they cannot.
    for (factor, converges) in [(1.0 + 1e-4, true), (1.5, false)] {
        let op = Mismatched { a: &a, factor };
        for solver in ["cg", "pcg"] {
            let mut x = Vector::zeros(b, n).unwrap();
            let params = quiet(1e-10, 5_000);
            let report = match solver {
                "cg" => cg(&op, &bv, &mut x, &params),
                _ => pcg(&op, None, &bv, &mut x, &params),
            }
            .unwrap();
            let res = independent_residual(&a_host, &rhs, &x.to_vec().unwrap());
            assert_eq!(
                report.converged(),
                converges,
                "{solver}, {factor}: {report}"
            );
            if converges {
                assert!(
                    res <= 1.01e-10,
                    "{solver}: converged with {res:e}: {report}"
                );
            } else {
                assert!(
                    matches!(report.reason, StopReason::ResidualGap { .. }),
                    "{solver}, {factor}: {report}"
                );
                assert!(res > 1e-10, "{solver}: {res:e}");
                assert!((report.relative_residual() - res).abs() <= 0.01 * res);
            }
        }
    }
}

backend_tests!(residual_gap_is_never_converged);

/// Jacobi without [`Preconditioner::inverse_diagonal`]: PCG takes the unfused path.
struct Unfused<'a, B: Backend, T: Scalar>(&'a Jacobi<B, T>);

impl<B: Backend, T: Scalar> Preconditioner<B, T> for Unfused<'_, B, T> {
    fn size(&self) -> usize {
        self.0.size()
    }
    fn precondition(&self, r: &Vector<B, T>, z: &mut Vector<B, T>) -> galerkin::Result<()> {
        self.0.precondition(r, z)
    }
}

/// CG reads its scalars while the next direction and product run: a solve that stops at a
/// read (converged before the limit) returns exactly the iterate of one stopped there by the
/// limit (nothing queued after the last update), bit for bit, with one product more. Plain
/// CG, PCG-Jacobi (fused) and PCG with block Jacobi (a preconditioner applied in the overlap).
fn cg_stops_on_the_iterate_it_read<B: Backend, T: Scalar>(b: &B) {
    let a_host = spd_problem::<T>();
    let n = a_host.nrows();
    let a = a_host.to_backend(b).unwrap();
    let bv = Vector::from_slice(b, &random_vec::<T>(n, 41)).unwrap();
    let jacobi = Jacobi::<B, T>::new(b, &a_host).unwrap();
    let blocks = BlockJacobi::<B, T>::new(b, &a_host, 6).unwrap();
    let jacobi: &dyn Preconditioner<B, T> = &jacobi;
    let blocks: &dyn Preconditioner<B, T> = &blocks;
    let cases = [
        ("CG", None),
        ("PCG-Jacobi", Some(jacobi)),
        ("PCG-block-Jacobi", Some(blocks)),
    ];
    for (what, m) in cases {
        let solve = |max_iter: usize| {
            let mut x = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); n]).unwrap();
            x.fill(T::ZERO).unwrap();
            let params = quiet(tol::<T>(), max_iter);
            let report = match m {
                Some(m) => pcg(&a, Some(m), &bv, &mut x, &params),
                None => cg(&a, &bv, &mut x, &params),
            };
            let report = report.unwrap();
            (report, x.to_vec().unwrap())
        };
        let (read, x_read) = solve(1000);
        assert_eq!(read.reason, StopReason::Converged, "{what}: {read}");
        assert!(read.iterations > 5, "{what}: {read}");
        let (limit, x_limit) = solve(read.iterations);
        assert_eq!(
            read.iterations, limit.iterations,
            "{what}: {read} vs {limit}"
        );
        assert_eq!(
            read.operator_applications,
            limit.operator_applications + 1,
            "{what}: {read} vs {limit}"
        );
        let same = x_read
            .iter()
            .zip(&x_limit)
            .all(|(u, v)| u.as_f64().to_bits() == v.as_f64().to_bits());
        assert!(same, "{what}: the overlapped work changed x");
    }
}

backend_tests!(cg_stops_on_the_iterate_it_read);

/// PCG-Jacobi with the scaling fused into the update and the direction gives what the
/// unfused iteration (z stored, separate inner product) gives: bit for bit on the CPU, the
/// same iteration count (±1) and accuracy on a device; on a matrix whose diagonal spans
/// four decades, so the scaling matters.
fn pcg_jacobi_fused_matches_unfused<B: Backend, T: Scalar>(b: &B) {
    let a64 = jumping_diffusion(24, 4.0, 5);
    let a_host: Csr<Cpu, T> = a64.convert();
    let n = a_host.nrows();
    let a = a_host.to_backend(b).unwrap();
    let rhs = random_vec::<T>(n, 29);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let jacobi = Jacobi::<B, T>::new(b, &a_host).unwrap();
    assert!(Preconditioner::inverse_diagonal(&jacobi).is_some());
    let params = SolverParams {
        check_every: 1,
        ..quiet(tol::<T>(), 2000)
    };
    let poison = vec![T::from_f64(f64::NAN); n];
    let mut x_fused = Vector::from_slice(b, &poison).unwrap();
    x_fused.fill(T::ZERO).unwrap();
    let fused = pcg(&a, Some(&jacobi), &bv, &mut x_fused, &params).unwrap();
    let mut x_plain = Vector::zeros(b, n).unwrap();
    let plain = pcg(&a, Some(&Unfused(&jacobi)), &bv, &mut x_plain, &params).unwrap();
    let (xf, xp) = (x_fused.to_vec().unwrap(), x_plain.to_vec().unwrap());
    check_report(&fused, &a_host, &rhs, &xf, "fused PCG-Jacobi");
    check_report(&plain, &a_host, &rhs, &xp, "unfused PCG-Jacobi");
    assert!(fused.iterations > 20, "{fused}");
    if b.kind() == galerkin::BackendKind::Cpu {
        assert_eq!(fused.iterations, plain.iterations, "{fused} vs {plain}");
        assert_eq!(
            xf, xp,
            "the fused CPU path must reproduce the unfused one bit for bit"
        );
    } else {
        assert!(
            fused.iterations.abs_diff(plain.iterations) <= 1,
            "{fused} vs {plain}"
        );
    }
}

backend_tests!(pcg_jacobi_fused_matches_unfused);
