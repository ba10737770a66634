//! Multigrid with the vertex-patch smoother: the seed's iteration counts (Tables 1 and 2),
//! Krylov solves preconditioned by the V-cycle in f64 and in f32, the L2 error's rate, and
//! bad input.

use galerkin::tensor::TensorOps;
use std::f64::consts::PI;

use galerkin::multigrid::{
    fmg, l2_error, level_rhs, FmgParams, Multigrid, MultigridParams, PatchForm, SmootherKind,
};
use galerkin::solver::{fgmres, pcg, MixedPrecision, Progress, SolverParams, Stopping};
use galerkin::tensor::{OperatorKind, TensorOperator};
use galerkin::{Backend, Cpu, Error, Scalar, Vector};

use crate::backend_tests;
use crate::harness::{announce, widen};

/// The right-hand sides of every level for `f = scale Π g(x_d)`.
fn rhs_levels<B: Backend + TensorOps, T: Scalar>(
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
fn fmg_cycles<B: Backend + TensorOps>(b: &B, dim: usize, k: usize, levels: usize) -> usize {
    let mg = Multigrid::<B, f64>::new(b, dim, k, levels, MultigridParams::default()).unwrap();
    let rhs = rhs_levels(b, &mg, 1.0, |_| 1.0);
    let mut x = Vector::zeros(b, mg.grid().len()).unwrap();
    let report = fmg(
        &mg,
        mg.finest(),
        &rhs,
        &rhs[levels - 1],
        &mut x,
        &FmgParams::new(Stopping::new(1e-9, 50)),
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

/// The paper's convention (its Algorithms 1 and 2: the load `M I_h f`, `x += P e_c`) against
/// the seed's Table 1 (2D, L = 4) and Table 2 (3D, L = 4; L = 3 from k = 5) on the CPU, at the
/// seed's sizes (its L is our `levels + 1`: 8 cells, 4 from k = 5 in 3D). Our cycle is the
/// stronger (`docs/history/seed-003-conventions.md`, E1 and E3): each count is at least one
/// and at most the seed's. The seed's counts themselves are reproduced, under its code's
/// conventions, by the two tests after this one.
#[test]
fn fmg_iterations_in_the_papers_convention_are_at_most_the_seeds() {
    let cpu = Cpu::new();
    let table1 = [9, 5, 3, 3, 3, 2, 2, 2, 2, 2];
    let got: Vec<usize> = (1..=10).map(|k| fmg_cycles(&cpu, 2, k, 3)).collect();
    announce(&format!(
        "[multigrid] 2D L=4 FMG cycles k=1..10: {got:?} (seed {table1:?})"
    ));
    assert!(
        got.iter().zip(&table1).all(|(g, s)| (1..=*s).contains(g)),
        "{got:?} vs {table1:?}"
    );
    let table2 = [6, 5, 3, 3, 3, 3, 2, 2];
    let got: Vec<usize> = (1..=8)
        .map(|k| fmg_cycles(&cpu, 3, k, if k <= 4 { 3 } else { 2 }))
        .collect();
    announce(&format!(
        "[multigrid] 3D FMG cycles k=1..8: {got:?} (seed {table2:?})"
    ));
    assert!(
        got.iter().zip(&table2).all(|(g, s)| (1..=*s).contains(g)),
        "{got:?} vs {table2:?}"
    );
}

/// The seed's code's FMG (`Multigrid::seed_code_fmg`: nodal ones as the load, boundary
/// included; `Pᵀ b` below; `x ← x + r + P e_c`; boundary values read by the operator and
/// the smoother; the count of `x ← V(x, b)` to `‖b − Ax‖ < rtol ‖b‖` over every node) on
/// `2^levels` cells (the seed's L is our `levels + 1`). Returns the counts and prints the
/// residual histories.
fn seed_code_cycles(
    dim: usize,
    degrees: std::ops::RangeInclusive<usize>,
    levels: usize,
    rtol: f64,
) -> Vec<usize> {
    let cpu = Cpu::new();
    degrees
        .map(|k| {
            let mg = Multigrid::<Cpu, f64>::new(&cpu, dim, k, levels, MultigridParams::default())
                .unwrap();
            let run = mg.seed_code_fmg(Stopping::new(rtol, 30)).unwrap();
            assert!(run.converged, "{dim}D Q{k}: {run:?}");
            let rel: Vec<String> = run
                .relative_residuals
                .iter()
                .map(|r| format!("{r:.2e}"))
                .collect();
            announce(&format!(
                "[seed code] {dim}D Q{k} {} cells: {rel:?}",
                1 << levels
            ));
            run.cycles
        })
        .collect()
}

/// Seed 003's Table 2 (3D, "independent of L"), exactly, under its code's conventions
/// (`seed_code_cycles`), on 8 and 16 cells (the seed's L = 4 and 5). Its Table 1 (2D) is
/// not reproduced: docs/history/seed-003-conventions.md (E3) has the counts and the
/// ablations.
#[test]
#[ignore = "tier 2 (long): cargo test --release -- --ignored"]
fn fmg_iterations_with_the_seed_codes_conventions_equal_table_2() {
    let table2 = vec![6, 5, 3, 3, 3, 3, 2, 2];
    for levels in [3, 4] {
        let got = seed_code_cycles(3, 1..=8, levels, 1e-9);
        announce(&format!(
            "[seed code] 3D {} cells k=1..8: {got:?} (Table 2 {table2:?})",
            1 << levels
        ));
        assert_eq!(got, table2, "{} cells", 1 << levels);
    }
}

/// Seed 003's Table 1 (2D, L = 4: 8 cells) under its code's conventions and the tolerance of
/// the seed's own 2D runs: `‖b − Ax‖ < 1e-8 ‖b‖` (`scripts/run_exec.sh` passes `-REDUCE 1e-8`
/// to the 2D executable; the paper states 1e-9, at which the counts are 11, 6, 4, 4, 3, 3, 3,
/// 3, 2, 2). Nine of the ten counts equal the table's; at k = 6 the residual after two cycles
/// is 2.5e-8, so a third is taken where the table prints 2.
#[test]
#[ignore = "tier 2 (long): cargo test --release -- --ignored"]
fn fmg_iterations_with_the_seed_codes_conventions_at_1e8_give_table_1() {
    let table1 = [9, 5, 3, 3, 3, 2, 2, 2, 2, 2];
    let got = seed_code_cycles(2, 1..=10, 3, 1e-8);
    announce(&format!(
        "[seed code] 2D 8 cells k=1..10 to 1e-8: {got:?} (Table 1 {table1:?})"
    ));
    for (k, (g, s)) in got.iter().zip(&table1).enumerate() {
        let want = if k + 1 == 6 { s + 1 } else { *s };
        assert_eq!(
            *g,
            want,
            "2D Q{}: {got:?} against Table 1 {table1:?}",
            k + 1
        );
    }
}

/// Table 1's other rows, L = 11 and 12 (1024 and 2048 cells), Q1 and Q2, under the code's
/// conventions to 1e-8: 7, 4 on both (the table: 7, 5 and 7, 4; at L = 11 the Q2 residual
/// after four cycles is just below 1e-8).
#[test]
#[ignore = "tier 2 (long): cargo test --release -- --ignored"]
fn fmg_iterations_with_the_seed_codes_conventions_at_1e8_on_table_1s_fine_meshes() {
    for (levels, table1) in [(10, [7, 5]), (11, [7, 4])] {
        let got = seed_code_cycles(2, 1..=2, levels, 1e-8);
        announce(&format!(
            "[seed code] 2D {} cells Q1, Q2 to 1e-8: {got:?} (Table 1 {table1:?})",
            1 << levels
        ));
        assert_eq!(got, [7, 4], "{} cells (Table 1 {table1:?})", 1 << levels);
    }
}

/// The largest absolute difference of `x` from `reference`, and the largest magnitude in
/// `reference` (the scale to judge it by).
fn max_error<T: Scalar>(x: &[T], reference: &[f64]) -> (f64, f64) {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = x
        .iter()
        .zip(reference)
        .fold(0.0f64, |m, (a, c)| m.max((a.as_f64() - c).abs()));
    (err, scale)
}

/// FMG on every backend: 2D and 3D, the cycles within the seed's counts, the same
/// solution as the CPU in f64.
fn fmg_on_every_backend<B: Backend + TensorOps, T: Scalar>(b: &B) {
    for (dim, k, levels, seed) in [
        (2, 1, 4, 9),
        (2, 3, 4, 3),
        (2, 6, 3, 2),
        (3, 1, 3, 6),
        (3, 3, 2, 3),
    ] {
        let params = MultigridParams::default();
        let grid = galerkin::tensor::Grid {
            dim,
            degree: k,
            cells: 2,
        };
        if let Err(bytes) = b.tensor_patch_fits::<T>(grid, true) {
            announce(&format!(
                "[multigrid] {dim}D Q{k}: the patch kernel needs {bytes} bytes, skipped"
            ));
            continue;
        }
        let mg = Multigrid::<B, T>::new(b, dim, k, levels, params).unwrap();
        let rhs = rhs_levels(b, &mg, 1.0, |_| 1.0);
        let mut x = Vector::<B, T>::zeros(b, mg.grid().len()).unwrap();
        let tol = if T::EPS > 1e-10 { 1e-4 } else { 1e-9 };
        let report = fmg(
            &mg,
            mg.finest(),
            &rhs,
            &rhs[levels - 1],
            &mut x,
            &FmgParams::new(Stopping::new(tol, 30)),
        )
        .unwrap();
        assert!(
            report.converged && report.cycles <= seed,
            "{dim}D Q{k}: {report:?}"
        );
        // Against the CPU in f64.
        let cpu = Cpu::new();
        let mgc = Multigrid::<Cpu, f64>::new(&cpu, dim, k, levels, params).unwrap();
        let rhsc = rhs_levels(&cpu, &mgc, 1.0, |_| 1.0);
        let mut xc = Vector::<Cpu, f64>::zeros(&cpu, mgc.grid().len()).unwrap();
        fmg(
            &mgc,
            mgc.finest(),
            &rhsc,
            &rhsc[levels - 1],
            &mut xc,
            &FmgParams::new(Stopping::new(1e-12, 30)),
        )
        .unwrap();
        let (err, scale) = max_error(&x.to_vec().unwrap(), &xc.to_vec().unwrap());
        assert!(
            err <= 100.0 * tol * scale.max(1e-300) + 1e3 * T::EPS * scale,
            "{dim}D Q{k}: {err} vs {scale}"
        );
    }
}

/// The split form of the patch smoother (the level's operator, then the local solves) at
/// the degrees where the fused kernel outgrows a device's on-chip memory: one step equals
/// the CPU's fused step in f64, and an FMG solve in the default form takes the CPU's cycles
/// and reaches its solution.
fn split_patch_smoother_at_high_degree<B: Backend + TensorOps, T: Scalar>(b: &B) {
    use galerkin::verify::random_vec;
    let cpu = Cpu::new();
    for k in [6, 7, 8] {
        let grid = galerkin::tensor::Grid {
            dim: 3,
            degree: k,
            cells: 4,
        };
        let split = MultigridParams {
            patch_form: PatchForm::Split,
            ..Default::default()
        };
        let mg = Multigrid::<B, T>::new(b, 3, k, 2, split).unwrap();
        let fused = MultigridParams {
            patch_form: PatchForm::Fused,
            ..Default::default()
        };
        let reference = Multigrid::<Cpu, f64>::new(&cpu, 3, k, 2, fused).unwrap();
        // Random x and b, zero on the boundary (the smoother's contract).
        let masked = |seed: u64| -> Vec<T> {
            let mut v = random_vec::<T>(grid.len(), seed);
            for (g, v) in v.iter_mut().enumerate() {
                if grid.on_boundary(g) {
                    *v = T::ZERO;
                }
            }
            v
        };
        let (x0, b0) = (masked(31 + k as u64), masked(37 + k as u64));
        let mut xc = Vector::from_slice(&cpu, &widen(&x0)).unwrap();
        let bc = Vector::from_slice(&cpu, &widen(&b0)).unwrap();
        reference.smooth_once(&mut xc, &bc).unwrap();
        let mut x = Vector::from_slice(b, &x0).unwrap();
        let bd = Vector::from_slice(b, &b0).unwrap();
        mg.smooth_once(&mut x, &bd).unwrap();
        let (err, scale) = max_error(&x.to_vec().unwrap(), &xc.to_vec().unwrap());
        assert!(
            scale > 0.0 && err <= 1e4 * T::EPS * scale,
            "split step 3D Q{k}: max error {err:.3e}, scale {scale:.3e}"
        );
    }
    // A whole solve in the default form (split where the fused kernel does not fit).
    let (k, levels) = (7, 2);
    let tol = if T::EPS > 1e-10 { 1e-4 } else { 1e-12 };
    let mg = Multigrid::<B, T>::new(b, 3, k, levels, MultigridParams::default()).unwrap();
    let rhs = rhs_levels(b, &mg, 1.0, |_| 1.0);
    let mut x = Vector::<B, T>::zeros(b, mg.grid().len()).unwrap();
    let stop = FmgParams::new(Stopping::new(tol, 30));
    let report = fmg(&mg, mg.finest(), &rhs, &rhs[levels - 1], &mut x, &stop).unwrap();
    let mgc = Multigrid::<Cpu, f64>::new(&cpu, 3, k, levels, MultigridParams::default()).unwrap();
    let rhsc = rhs_levels(&cpu, &mgc, 1.0, |_| 1.0);
    let mut xc = Vector::<Cpu, f64>::zeros(&cpu, mgc.grid().len()).unwrap();
    let rc = fmg(&mgc, mgc.finest(), &rhsc, &rhsc[levels - 1], &mut xc, &stop).unwrap();
    let rel = |r: &galerkin::multigrid::FmgReport| -> String {
        let h: Vec<String> = r
            .residual_history
            .iter()
            .map(|v| format!("{:.2e}", v / r.rhs_norm))
            .collect();
        h.join(" ")
    };
    announce(&format!(
        "[multigrid] 3D Q{k} FMG ({} patch step): {} cycles [{}], CPU {} [{}]",
        if b.tensor_patch_fits::<T>(mg.grid(), false).is_ok() {
            "fused"
        } else {
            "split"
        },
        report.cycles,
        rel(&report),
        rc.cycles,
        rel(&rc),
    ));
    assert!(report.converged && rc.converged, "{report:?} {rc:?}");
    assert!(
        report.cycles.abs_diff(rc.cycles) <= usize::from(T::EPS > 1e-10),
        "cycles {} vs the CPU's {}",
        report.cycles,
        rc.cycles
    );
    if T::EPS < 1e-10 {
        // In f64 the residual after every cycle is the CPU's, down to rounding.
        for (r, c) in report.residual_history.iter().zip(&rc.residual_history) {
            let (r, c) = (r / report.rhs_norm, c / rc.rhs_norm);
            assert!(
                (r - c).abs() <= 1e-2 * c + 1e3 * T::EPS,
                "{r:e} vs the CPU's {c:e}"
            );
        }
    }
    let (err, scale) = max_error(&x.to_vec().unwrap(), &xc.to_vec().unwrap());
    assert!(
        err <= 100.0 * tol * scale + 1e3 * T::EPS * scale,
        "3D Q{k} FMG: {err} vs {scale}"
    );
}

/// GMRES and CG preconditioned by one V-cycle in `T` inside an f64 solve: converged to
/// 1e-9 in the true f64 residual within a few iterations.
fn krylov_with_vcycle<B: Backend + TensorOps, T: Scalar>(b: &B) {
    if !b.supports(galerkin::DType::F64) {
        announce("[multigrid] no f64 on this device: the f64 Krylov test is skipped");
        return;
    }
    for (dim, k, levels) in [(2, 3, 4), (3, 2, 3)] {
        for symmetric in [false, true] {
            let params = MultigridParams {
                symmetric,
                ..Default::default()
            };
            let mg = Multigrid::<B, T>::new(b, dim, k, levels, params).unwrap();
            let grid = mg.grid();
            let a = TensorOperator::<B, f64>::new(b, grid, OperatorKind::Laplace).unwrap();
            let rhs =
                level_rhs::<B, f64>(b, grid, dim as f64 * PI * PI, |x| (PI * x).sin()).unwrap();
            let m = MixedPrecision::<B, T, _>::new(&mg);
            let solver = SolverParams {
                stop: Stopping::new(1e-9, 30),
                flexible: true,
                progress: Progress::Never,
                ..Default::default()
            };
            let mut x = Vector::<B, f64>::zeros(b, grid.len()).unwrap();
            let report = if symmetric {
                pcg(&a, Some(&m), &rhs, &mut x, &solver).unwrap()
            } else {
                fgmres(&a, Some(&m), &rhs, &mut x, &solver).unwrap()
            };
            let case = format!("{dim}D Q{k} symmetric={symmetric} V-cycle in {}", T::DTYPE);
            assert!(
                report.converged() && report.iterations <= 12,
                "{case}: {report}"
            );
            assert!(report.relative_residual() <= 1e-9, "{case}: {report}");
        }
    }
}

/// Mixed and f64 give the same L2 error (the seed's Table 7), which falls at rate k + 1.
#[test]
fn l2_error_rate_and_mixed_precision() {
    let cpu = Cpu::new();
    for (dim, k, levels) in [(2, 1, [3, 4, 5]), (2, 3, [2, 3, 4]), (3, 2, [2, 3, 4])] {
        let mut errors = Vec::new();
        for l in levels {
            let mut per_precision = Vec::new();
            for mixed in [false, true] {
                let run = |x: &mut Vector<Cpu, f64>, grid| {
                    let a =
                        TensorOperator::<Cpu, f64>::new(&cpu, grid, OperatorKind::Laplace).unwrap();
                    let rhs =
                        level_rhs::<Cpu, f64>(&cpu, grid, dim as f64 * PI * PI, |x| (PI * x).sin())
                            .unwrap();
                    let solver = SolverParams {
                        stop: Stopping::new(1e-10, 30),
                        progress: Progress::Never,
                        ..Default::default()
                    };
                    let report = if mixed {
                        let mg =
                            Multigrid::<Cpu, f32>::new(&cpu, dim, k, l, MultigridParams::default())
                                .unwrap();
                        fgmres(
                            &a,
                            Some(&MixedPrecision::<Cpu, f32, _>::new(&mg)),
                            &rhs,
                            x,
                            &solver,
                        )
                        .unwrap()
                    } else {
                        let mg =
                            Multigrid::<Cpu, f64>::new(&cpu, dim, k, l, MultigridParams::default())
                                .unwrap();
                        fgmres(&a, Some(&mg), &rhs, x, &solver).unwrap()
                    };
                    assert!(report.converged(), "{report}");
                };
                let grid = galerkin::tensor::Grid {
                    dim,
                    degree: k,
                    cells: 1 << l,
                };
                let mut x = Vector::<Cpu, f64>::zeros(&cpu, grid.len()).unwrap();
                run(&mut x, grid);
                per_precision
                    .push(l2_error(grid, &x.to_vec().unwrap(), |x| (PI * x).sin()).unwrap());
            }
            let (e64, emixed) = (per_precision[0], per_precision[1]);
            assert!(
                (e64 - emixed).abs() <= 1e-6 * e64,
                "{dim}D Q{k} L={l}: f64 {e64}, mixed {emixed}"
            );
            errors.push(e64);
        }
        for w in errors.windows(2) {
            let rate = (w[0] / w[1]).log2();
            assert!(
                rate >= k as f64 + 1.0 - 0.2,
                "{dim}D Q{k}: rate {rate} ({errors:?})"
            );
        }
    }
}

/// The Chebyshev–Jacobi smoother: a weaker V-cycle than the patch smoother's, but a
/// convergent preconditioner, in 2D and 3D.
#[test]
#[ignore = "tier 2 (long): cargo test --release -- --ignored"]
fn chebyshev_smoother_preconditions_gmres() {
    let cpu = Cpu::new();
    for (dim, k, levels) in [(2, 3, 4), (3, 2, 3)] {
        let params = MultigridParams {
            smoother: SmootherKind::Chebyshev,
            ..Default::default()
        };
        let mg = Multigrid::<Cpu, f64>::new(&cpu, dim, k, levels, params).unwrap();
        let patch =
            Multigrid::<Cpu, f64>::new(&cpu, dim, k, levels, MultigridParams::default()).unwrap();
        let grid = mg.grid();
        let a = TensorOperator::<Cpu, f64>::new(&cpu, grid, OperatorKind::Laplace).unwrap();
        let rhs = level_rhs::<Cpu, f64>(&cpu, grid, 1.0, |_| 1.0).unwrap();
        let solver = SolverParams {
            stop: Stopping::new(1e-9, 60),
            progress: Progress::Never,
            ..Default::default()
        };
        let mut its = Vec::new();
        for m in [&mg, &patch] {
            let mut x = Vector::<Cpu, f64>::zeros(&cpu, grid.len()).unwrap();
            let report = fgmres(&a, Some(m), &rhs, &mut x, &solver).unwrap();
            assert!(
                report.converged() && report.relative_residual() <= 1e-9,
                "{dim}D Q{k}: {report}"
            );
            its.push(report.iterations);
        }
        announce(&format!(
            "[multigrid] {dim}D Q{k}: FGMRES iterations Chebyshev {}, patch {}",
            its[0], its[1]
        ));
        assert!(its[1] <= its[0], "{its:?}");
    }
}

/// Out-of-range sizes are typed errors; a patch kernel too big for the device is refused
/// with the bytes it needs.
fn bad_input<B: Backend + TensorOps, T: Scalar>(b: &B) {
    let p = MultigridParams::default();
    for (dim, k, levels) in [
        (1, 2, 3),
        (4, 2, 3),
        (2, 0, 3),
        (2, 11, 3),
        (2, 2, 0),
        (2, 2, 21),
    ] {
        match Multigrid::<B, T>::new(b, dim, k, levels, p) {
            Err(Error::InvalidArgument { .. }) => {}
            Err(e) => panic!("dim {dim} k {k} L {levels}: {e}"),
            Ok(_) => panic!("dim {dim} k {k} L {levels} accepted"),
        }
    }
    let big = galerkin::tensor::Grid {
        dim: 3,
        degree: 10,
        cells: 2,
    };
    // The fused form asked for where it does not fit: refused with its bytes (the default
    // takes the split form there).
    let grid7 = galerkin::tensor::Grid {
        dim: 3,
        degree: 7,
        cells: 2,
    };
    if let Err(bytes) = b.tensor_patch_fits::<T>(grid7, false) {
        let fused = MultigridParams {
            patch_form: PatchForm::Fused,
            ..p
        };
        match Multigrid::<B, T>::new(b, 3, 7, 1, fused) {
            Err(Error::Unsupported { reason, .. }) => {
                assert!(reason.contains(&bytes.to_string()), "{reason}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a fused patch kernel of {bytes} bytes was accepted"),
        }
    }
    // Neither form fits: refused with the split form's bytes.
    if let Err(bytes) = b.tensor_patch_fits::<T>(big, true) {
        assert!(b.tensor_patch_fits::<T>(big, false).is_err());
        match Multigrid::<B, T>::new(b, 3, 10, 1, p) {
            Err(Error::Unsupported { reason, .. }) => {
                assert!(reason.contains(&bytes.to_string()), "{reason}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a patch kernel of {bytes} bytes was accepted"),
        }
        // The Chebyshev smoother needs no patch kernel: level 1 is solved by CG.
        let cheb = MultigridParams {
            smoother: SmootherKind::Chebyshev,
            ..p
        };
        assert!(Multigrid::<B, T>::new(b, 3, 10, 1, cheb).is_ok());
    }
}

backend_tests!(bad_input, split_patch_smoother_at_high_degree);
backend_tests!(tier2_devices: fmg_on_every_backend, krylov_with_vcycle);

/// `l2_error` (sum factorisation, the exact solution tabulated per direction) against a
/// direct evaluation: every quadrature point of every cell, the full tensor Lagrange basis,
/// `g` called at each point. Random nodal values; also two closed forms.
#[test]
fn l2_error_equals_a_direct_quadrature() {
    use galerkin::quadrature::gauss_legendre;
    let g = |x: f64| (PI * x).sin() + 0.3 * x;
    for (dim, k, cells) in [(2, 1, 5), (2, 3, 4), (3, 2, 3), (3, 4, 2)] {
        let grid = galerkin::tensor::Grid {
            dim,
            degree: k,
            cells,
        };
        let uh = galerkin::random::random_range::<f64>(grid.len(), -1.0, 1.0, 7 + k as u64);
        let x1 = grid.node_coordinates();
        let n1 = grid.n1();
        let (gx, gw) = gauss_legendre(k + 2);
        let h = 1.0 / cells as f64;
        let lagrange = |c: usize, i: usize, x: f64| {
            (0..=k)
                .filter(|&j| j != i)
                .map(|j| (x - x1[c * k + j]) / (x1[c * k + i] - x1[c * k + j]))
                .product::<f64>()
        };
        let cz = if dim == 3 { cells } else { 1 };
        let (qz, nz) = if dim == 3 { (k + 2, k + 1) } else { (1, 1) };
        let mut sum = 0.0;
        for c in 0..cells * cells * cz {
            let cc = [c % cells, (c / cells) % cells, c / (cells * cells)];
            for pz in 0..qz {
                for py in 0..k + 2 {
                    for px in 0..k + 2 {
                        let p = [px, py, pz];
                        let x: Vec<f64> = (0..dim)
                            .map(|d| (cc[d] as f64 + 0.5 * (gx[p[d]] + 1.0)) * h)
                            .collect();
                        let mut u = 0.0;
                        for z in 0..nz {
                            for y in 0..=k {
                                for xi in 0..=k {
                                    let node = [xi, y, z];
                                    let gi = ((cc[2] * k + z) * n1 + cc[1] * k + y) * n1
                                        + cc[0] * k
                                        + xi;
                                    let phi: f64 =
                                        (0..dim).map(|d| lagrange(cc[d], node[d], x[d])).product();
                                    u += uh[gi] * phi;
                                }
                            }
                        }
                        let exact: f64 = x.iter().map(|&t| g(t)).product();
                        let weight: f64 = (0..dim).map(|d| 0.5 * h * gw[p[d]]).product();
                        sum += weight * (u - exact) * (u - exact);
                    }
                }
            }
        }
        let direct = sum.sqrt();
        let fast = l2_error(grid, &uh, g).unwrap();
        assert!(
            (fast - direct).abs() <= 1e-12 * direct,
            "{dim}D k={k}: {fast} against {direct}"
        );
        // u_h = 0 and u = Π x_d: ‖u‖ = 3^(-d/2), which Gauss quadrature integrates exactly.
        let zero = vec![0.0; grid.len()];
        let norm = l2_error(grid, &zero, |x| x).unwrap();
        assert!(
            (norm - 3f64.powf(-(dim as f64) / 2.0)).abs() < 1e-14,
            "{norm}"
        );
        // u_h the interpolant of u = Π x_d (1 − x_d), degree 2 ≤ k where k ≥ 2: error 0.
        if k >= 2 {
            let p = |x: f64| x * (1.0 - x);
            let mut interp = vec![0.0; grid.len()];
            for (gi, v) in interp.iter_mut().enumerate() {
                *v = (0..dim)
                    .map(|d| p(x1[(gi / n1.pow(d as u32)) % n1]))
                    .product();
            }
            let e = l2_error(grid, &interp, p).unwrap();
            assert!(e < 1e-15, "{dim}D k={k}: {e}");
        }
    }
}

/// `l2_error_vector` (one kernel where the vector lives) against the host's `l2_error` of
/// the same (rounded) values: random nodal values, 2D and 3D, low and high degree.
fn l2_error_on_the_backend<B: Backend + TensorOps, T: Scalar>(b: &B) {
    let g = |x: f64| (PI * x).sin() + 0.3 * x;
    for (dim, k, cells) in [(2, 1, 7), (2, 4, 5), (3, 1, 6), (3, 3, 3), (3, 7, 2)] {
        let grid = galerkin::tensor::Grid {
            dim,
            degree: k,
            cells,
        };
        let uh = galerkin::random::random_range::<T>(grid.len(), -1.0, 1.0, 11 + k as u64);
        let wide: Vec<f64> = uh.iter().map(|v| v.as_f64()).collect();
        let want = l2_error(grid, &wide, g).unwrap();
        let x = Vector::<B, T>::from_slice(b, &uh).unwrap();
        let got = galerkin::multigrid::l2_error_vector(grid, &x, g).unwrap();
        let tol = if T::EPS > 1e-10 { 1e-4 } else { 1e-12 };
        assert!(
            (got - want).abs() <= tol * want,
            "{dim}D k={k}: {got} against {want}"
        );
    }
    // A vector that is not on the grid is refused.
    let grid = galerkin::tensor::Grid {
        dim: 2,
        degree: 2,
        cells: 2,
    };
    let short = Vector::<B, T>::zeros(b, grid.len() - 1).unwrap();
    assert!(matches!(
        galerkin::multigrid::l2_error_vector(grid, &short, |x| x),
        Err(Error::DimensionMismatch { .. })
    ));
}

backend_tests!(l2_error_on_the_backend);
