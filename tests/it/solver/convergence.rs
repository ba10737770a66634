//! Every solver converges, checked by an independent residual: CG, PCG (Jacobi, block
//! Jacobi, Chebyshev), BiCGStab and (F)GMRES on an SPD matrix, and the nonsymmetric solvers
//! on a convection–diffusion matrix.

use galerkin::solver::{
    bicgstab, cg, fgmres, gmres, pcg, BlockJacobi, Chebyshev, ChebyshevParams, Jacobi,
    Preconditioner, SolveReport, SolverParams, StopReason,
};
use galerkin::sparse::{Coo, Csr};
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Scalar, Vector};

use super::{check_report, quiet, spd_problem, tol};
use crate::backend_tests;

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

backend_tests!(every_solver_on_spd);
backend_tests!(tier2_devices: nonsymmetric_solvers);
