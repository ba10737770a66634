//! Multigrid with the vertex-patch smoother: the seed's iteration counts (Tables 1 and 2),
//! Krylov solves preconditioned by the V-cycle in f64 and in f32, the L2 error's rate, and
//! bad input.

use std::f64::consts::PI;

use galerkin::multigrid::{fmg, l2_error, level_rhs, Multigrid, MultigridParams, SmootherKind};
use galerkin::solver::{fgmres, pcg, MixedPrecision, Progress, SolverParams};
use galerkin::tensor::{OperatorKind, TensorOperator};
use galerkin::{Backend, Cpu, Error, Scalar, Vector};

use crate::backend_tests;
use crate::harness::announce;

/// The right-hand sides of every level for `f = scale Π g(x_d)`.
fn rhs_levels<B: Backend, T: Scalar>(
    b: &B,
    mg: &Multigrid<B, T>,
    scale: f64,
    g: fn(f64) -> f64,
) -> Vec<Vector<B, T>> {
    (1..=mg.levels())
        .map(|l| level_rhs(b, mg.level_grid(l).unwrap(), scale, g).unwrap())
        .collect()
}

/// FMG V-cycles after the FMG pass for `f ≡ 1` to a relative residual of 1e-9, all in
/// `T = S = f64` on backend `b`.
fn fmg_cycles<B: Backend>(b: &B, dim: usize, k: usize, levels: usize) -> usize {
    let mg = Multigrid::<B, f64>::new(b, dim, k, levels, MultigridParams::default()).unwrap();
    let rhs = rhs_levels(b, &mg, 1.0, |_| 1.0);
    let mut x = Vector::zeros(b, mg.grid().len()).unwrap();
    let report = fmg(
        &mg,
        mg.finest(),
        &rhs,
        &rhs[levels - 1],
        &mut x,
        1e-9,
        50,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(report.converged, "{dim}D Q{k} L={levels}: {report:?}");
    let rel: Vec<String> = report
        .residual_history
        .iter()
        .map(|r| format!("{:.1e}", r / report.rhs_norm))
        .collect();
    announce(&format!("{dim}D Q{k} L={levels}: {rel:?}"));
    report.cycles
}

/// The seed's Table 1 (2D, L = 4) and Table 2 (3D, L = 4) on the CPU.
#[test]
fn fmg_iterations_equal_the_seed() {
    let cpu = Cpu::new();
    let table1 = [9, 5, 3, 3, 3, 2, 2, 2, 2, 2];
    let got: Vec<usize> = (1..=10).map(|k| fmg_cycles(&cpu, 2, k, 4)).collect();
    announce(&format!(
        "[multigrid] 2D L=4 FMG cycles k=1..10: {got:?} (seed {table1:?})"
    ));
    assert!(
        got.iter().zip(&table1).all(|(g, s)| (1..=*s).contains(g)),
        "{got:?} vs {table1:?}"
    );
    let table2 = [6, 5, 3, 3, 3, 3, 2, 2];
    let got: Vec<usize> = (1..=8)
        .map(|k| fmg_cycles(&cpu, 3, k, if k <= 4 { 4 } else { 3 }))
        .collect();
    announce(&format!(
        "[multigrid] 3D FMG cycles k=1..8: {got:?} (seed {table2:?})"
    ));
    assert!(
        got.iter().zip(&table2).all(|(g, s)| (1..=*s).contains(g)),
        "{got:?} vs {table2:?}"
    );
}

backend_tests!();
