//! Why a solver stops: indefinite and singular operators, NaN, a zero or mismatched right-hand
//! side (each its reason or error), the monitor's stop, and a recursive residual that the
//! true residual does not confirm (never `Converged`).

use galerkin::solver::{
    bicgstab, cg, gmres, pcg, Control, LinearOperator, SolverParams, StopReason,
};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::Csr;
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Scalar, Vector};

use super::{independent_residual, quiet};
use crate::backend_tests;

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

backend_tests!(failure_modes);

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
