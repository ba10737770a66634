//! Krylov solvers on every backend and precision: convergence checked by an independent
//! residual, iteration counts against a textbook CG with the documented summation order,
//! failure modes, mixed precision.
//!
//! The helpers here are shared by the files of the module: the parameters of a quiet solve,
//! the independent residual and the reachable tolerance, the check of a converged report,
//! and the test matrices.

use galerkin::solver::{Progress, SolveReport, SolverParams, StopReason};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::{Coo, Csr};
use galerkin::{Cpu, Element, Scalar};

use crate::harness::exact_sum;

mod amg;
mod cg;
mod convergence;
mod mixed;
mod precond;
mod stopping;

fn quiet<'a>(rtol: f64, max_iter: usize) -> SolverParams<'a> {
    SolverParams {
        progress: Progress::Never,
        ..SolverParams::new(rtol, max_iter)
    }
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
