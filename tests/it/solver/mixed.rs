//! Mixed precision: f32 preconditioners, inner solves and matrix values inside f64 solves,
//! and the f64 tolerance met on a matrix whose f32 rounding matters.

use galerkin::solver::{
    cg, fgmres, iterative_refinement, pcg, Chebyshev, ChebyshevParams, Identity, Jacobi,
    LinearOperator, MixedPrecision, Preconditioner, RefinementParams, SolverParams, StopReason,
};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::Csr;
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Scalar, Vector};

use super::{check_report, independent_residual, jumping_diffusion, quiet};
use crate::backend_tests;

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

backend_tests!(tier2_devices: mixed_precision_meets_the_f64_tolerance);

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
