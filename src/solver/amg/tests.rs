use super::setup::{build, spectral_radius};
use super::*;
use crate::random::random_vec;
use crate::solver::precond::Preconditioner;
use crate::solver::{fgmres, pcg, Progress, SolverParams, StopReason};
use crate::sparse::algebra::host::spgemm;
use crate::sparse::generate::{poisson2d_5pt, poisson3d_7pt};

fn dense(a: &Csr<Cpu, f64>) -> Vec<Vec<f64>> {
    let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
    for (i, row) in d.iter_mut().enumerate() {
        let (c, v) = a.row(i);
        for (&j, &x) in c.iter().zip(v) {
            row[j as usize] += x;
        }
    }
    d
}

fn quiet(tol: f64, max_iter: usize) -> SolverParams<'static> {
    SolverParams {
        progress: Progress::Never,
        ..SolverParams::new(tol, max_iter)
    }
}

/// PCG + AMG iterations to 1e-8 from x = 0 with a random right-hand side.
fn iterations(a: &Csr<Cpu, f64>, params: &AmgParams) -> usize {
    let cpu = Cpu::new();
    let amg = Amg::<Cpu, f64>::new(&cpu, a, params).unwrap();
    let b = Vector::from_slice(&cpu, &random_vec::<f64>(a.nrows(), 7)).unwrap();
    let mut x = Vector::from_slice(&cpu, &vec![f64::NAN; a.nrows()]).unwrap();
    x.fill(0.0).unwrap();
    let report = pcg(a, Some(&amg), &b, &mut x, &quiet(1e-8, 200)).unwrap();
    assert_eq!(report.reason, StopReason::Converged, "{report}");
    report.iterations
}

#[test]
fn lanczos_estimates_the_largest_eigenvalue_from_below() {
    // D⁻¹A of the 5-point Laplacian on n x n: λmax = 1 + cos(π / (n + 1)).
    for n in [10, 40, 100] {
        let a = poisson2d_5pt(n).unwrap();
        let inv: Vec<f64> = a.diagonal().iter().map(|d| 1.0 / d).collect();
        let inv = Vector::from_slice(&Cpu::new(), &inv).unwrap();
        let rho = spectral_radius(&a, &inv, 20).unwrap();
        let exact = 1.0 + (std::f64::consts::PI / (n as f64 + 1.0)).cos();
        assert!(
            rho <= exact * (1.0 + 1e-12) && rho > 0.95 * exact,
            "n {n}: {rho} vs {exact}"
        );
    }
}

/// The estimate is one of `D⁻¹A`, not of `A`: a symmetric diagonal scaling `S A S` (same
/// spectrum of `D⁻¹A`) leaves it where it was; and a matrix no larger than the steps is
/// resolved exactly (the PCG behind the Lanczos steps ends when its residual vanishes).
#[test]
fn lanczos_is_invariant_under_diagonal_scaling_and_exact_on_small_matrices() {
    let cpu = Cpu::new();
    let estimate = |a: &Csr<Cpu, f64>, steps: usize| {
        let inv: Vec<f64> = a.diagonal().iter().map(|d| 1.0 / d).collect();
        spectral_radius(a, &Vector::from_slice(&cpu, &inv).unwrap(), steps).unwrap()
    };
    let n = 20;
    let a = poisson2d_5pt(n).unwrap();
    let scale = random_vec::<f64>(a.nrows(), 5)
        .iter()
        .map(|v| 0.1 + 10.0 * v.abs())
        .collect::<Vec<_>>();
    let mut scaled = poisson2d_5pt(n).unwrap();
    for i in 0..a.nrows() {
        let (c, v) = a.row(i);
        let row: Vec<f64> = c
            .iter()
            .zip(v)
            .map(|(&j, &x)| scale[i] * x * scale[j as usize])
            .collect();
        let start = a.row_ptr()[i] as usize;
        scaled.values_mut()[start..start + row.len()].copy_from_slice(&row);
    }
    let exact = 1.0 + (std::f64::consts::PI / (n as f64 + 1.0)).cos();
    for (what, m) in [("plain", &a), ("scaled", &scaled)] {
        let rho = estimate(m, 20);
        assert!(
            rho <= exact * (1.0 + 1e-10) && rho > 0.95 * exact,
            "{what}: {rho} vs {exact}"
        );
    }
    // The 1D Laplacian of 6 rows: λmax(D⁻¹A) = 1 + cos(π/7), found in 6 steps of 20 asked.
    let lap = poisson1d(6);
    let rho = estimate(&lap, 20);
    let exact = 1.0 + (std::f64::consts::PI / 7.0).cos();
    assert!((rho - exact).abs() <= 1e-10 * exact, "{rho} vs {exact}");
}

/// The 1D Laplacian `[-1 2 -1]` of `n` rows (Dirichlet).
fn poisson1d(n: usize) -> Csr<Cpu, f64> {
    let mut row_ptr = vec![0u32];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for i in 0..n {
        for j in i.saturating_sub(1)..(i + 2).min(n) {
            cols.push(j as u32);
            vals.push(if i == j { 2.0 } else { -1.0 });
        }
        row_ptr.push(cols.len() as u32);
    }
    Csr::new(n, n, row_ptr, cols, vals).unwrap()
}

#[test]
fn the_tentative_prolongator_is_orthonormal_and_reproduces_the_near_null_space() {
    // 3 random vectors on 200 rows in 37 aggregates, two of them singletons (rank 1).
    let n = 200;
    let mut agg: Vec<u32> = (0..n)
        .map(|i| crate::sparse::algebra::aggregate::hash32(i as u32) % 35)
        .collect();
    agg[5] = 35;
    agg[6] = 36;
    let b: Vec<f64> = random_vec::<f64>(3 * n, 11)
        .iter()
        .map(|x| x + 0.1)
        .collect();
    let (t, bc) = crate::sparse::algebra::prolong::tentative(&agg, 37, n, 3, &b).unwrap();
    let bc_rows = t.ncols();
    assert_eq!(t.nrows(), n);
    // An aggregate of m members keeps min(m, 3) columns (random vectors: full rank).
    let mut size = [0usize; 37];
    agg.iter().for_each(|&g| size[g as usize] += 1);
    let want: usize = size.iter().map(|&m| m.min(3)).sum();
    assert!(size[35] == 1 && size[36] == 1 && want < 37 * 3);
    assert_eq!(t.ncols(), want);
    // Tᵀ T = I.
    let tt = spgemm(&t.transpose(), &t).unwrap();
    let d = dense(&tt);
    for (i, row) in d.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((v - want).abs() < 1e-12, "TᵀT[{i}][{j}] = {v}");
        }
    }
    // T B_c = B.
    for c in 0..3 {
        for i in 0..n {
            let (cols, vals) = t.row(i);
            let got: f64 = cols
                .iter()
                .zip(vals)
                .map(|(&j, &v)| v * bc[c * bc_rows + j as usize])
                .sum();
            let want = b[c * n + i];
            assert!(
                (got - want).abs() < 1e-12 * (1.0 + want.abs()),
                "({i}, {c}): {got} vs {want}"
            );
        }
    }
}

#[test]
fn coarse_operators_are_the_galerkin_products() {
    let a = poisson2d_5pt(20).unwrap();
    let params = AmgParams {
        max_coarse: 10,
        ..AmgParams::default()
    };
    let h = build(&a, &params).unwrap();
    assert!(h.levels.len() >= 3, "{} levels", h.levels.len());
    for l in 0..h.levels.len() - 1 {
        let (al, p, r) = (
            h.levels[l].a.as_ref().unwrap_or(&a),
            h.levels[l].p.as_ref().unwrap(),
            h.levels[l].r.as_ref().unwrap(),
        );
        let (da, dp, dr, dc) = (
            dense(al),
            dense(p),
            dense(r),
            dense(h.levels[l + 1].a.as_ref().unwrap()),
        );
        let (n, nc) = (da.len(), dc.len());
        assert!(nc < n / 3, "level {l}: {n} -> {nc}");
        for i in 0..nc {
            for j in 0..nc {
                assert_eq!(dr[i][j.min(n - 1)], dp[j.min(n - 1)][i], "R = Pᵀ");
                let want: f64 = (0..n)
                    .map(|k| dr[i][k] * (0..n).map(|m| da[k][m] * dp[m][j]).sum::<f64>())
                    .sum();
                assert!(
                    (dc[i][j] - want).abs() < 1e-12 * (1.0 + want.abs()),
                    "level {l}: Ac[{i}][{j}]"
                );
            }
        }
        // P reproduces the constants on the interior: (P 1_c) is close to a smoothed 1.
        assert!(dp.iter().all(|row| row.iter().sum::<f64>() > 0.0));
    }
    // The coarse inverse inverts the coarsest operator.
    let last = h.levels.last().unwrap().a.as_ref().unwrap();
    let inv = h.coarse_inverse.as_ref().unwrap();
    let prod = dense(&spgemm(inv, last).unwrap());
    for (i, row) in prod.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            assert!(
                (v - f64::from(u8::from(i == j))).abs() < 1e-9,
                "A⁻¹A[{i}][{j}] = {v}"
            );
        }
    }
}

#[test]
fn the_cycle_is_symmetric() {
    let a = poisson3d_7pt(12).unwrap();
    let cpu = Cpu::new();
    let n = a.nrows();
    for (smoother, cycle) in [
        (AmgSmoother::Chebyshev { degree: 3 }, AmgCycle::V),
        (AmgSmoother::L1Jacobi { sweeps: 2 }, AmgCycle::V),
        (AmgSmoother::Chebyshev { degree: 2 }, AmgCycle::W),
        (AmgSmoother::ChebyshevFourthKind { degree: 3 }, AmgCycle::V),
    ] {
        let params = AmgParams {
            smoother,
            cycle,
            max_coarse: 30,
            ..AmgParams::default()
        };
        let amg = Amg::<Cpu, f64>::new(&cpu, &a, &params).unwrap();
        let x = Vector::from_slice(&cpu, &random_vec::<f64>(n, 1)).unwrap();
        let y = Vector::from_slice(&cpu, &random_vec::<f64>(n, 2)).unwrap();
        let mut mx = Vector::from_slice(&cpu, &vec![f64::NAN; n]).unwrap();
        let mut my = Vector::from_slice(&cpu, &vec![f64::NAN; n]).unwrap();
        amg.precondition(&x, &mut mx).unwrap();
        amg.precondition(&y, &mut my).unwrap();
        let (a1, a2) = (y.dot(&mx).unwrap(), x.dot(&my).unwrap());
        assert!(
            (a1 - a2).abs() < 1e-10 * a1.abs(),
            "{smoother:?} {cycle:?}: {a1} vs {a2}"
        );
        // Positive definite on random vectors.
        assert!(x.dot(&mx).unwrap() > 0.0);
        // The same answer from a second application (the work vectors are reused).
        let mut again = Vector::zeros(&cpu, n).unwrap();
        amg.precondition(&x, &mut again).unwrap();
        assert_eq!(again.to_vec().unwrap(), mx.to_vec().unwrap());
    }
}

/// The Chebyshev smoothing on the fused passes (`residual`, `smoothing_step`, the first
/// update deferred to the first step) against the plain recurrence it replaced — SpMV and
/// vector operations, `x += d` at once — for degrees 1 to 4, from zero and from a nonzero
/// `x`, on the finest level and a coarse one.
#[test]
fn fused_chebyshev_matches_the_plain_recurrence() {
    let a = poisson3d_7pt(10).unwrap();
    let cpu = Cpu::new();
    for degree in 1..=4 {
        let params = AmgParams {
            smoother: AmgSmoother::Chebyshev { degree },
            max_coarse: 30,
            ..AmgParams::default()
        };
        let amg = Amg::<Cpu, f64>::new(&cpu, &a, &params).unwrap();
        for l in [0, 1] {
            let level = &amg.levels[l];
            let op = level.a.get();
            let n = op.nrows();
            let b = Vector::from_slice(&cpu, &random_vec::<f64>(n, 31)).unwrap();
            let x0 = random_vec::<f64>(n, 32);
            for zero in [true, false] {
                // The plain recurrence (the code before the fused passes).
                let (lmin, lmax) = level.lambda;
                let (theta, delta) = (0.5 * (lmax + lmin), 0.5 * (lmax - lmin));
                let sigma = theta / delta;
                let mut rho = 1.0 / sigma;
                let mut want = Vector::from_slice(&cpu, &x0).unwrap();
                let mut res = Vector::zeros(&cpu, n).unwrap();
                let mut d = Vector::zeros(&cpu, n).unwrap();
                let mut w = Vector::zeros(&cpu, n).unwrap();
                if zero {
                    res.copy_from(&b).unwrap();
                    want.pointwise_mul(&level.scaling, &b).unwrap();
                    d.copy_from(&want).unwrap();
                } else {
                    res.copy_from(&b).unwrap();
                    op.apply_add(-1.0, &want, 1.0, &mut res).unwrap();
                    d.pointwise_mul(&level.scaling, &res).unwrap();
                    want.axpy(1.0, &d).unwrap();
                }
                for _ in 1..degree {
                    op.apply_add(-1.0, &d, 1.0, &mut res).unwrap();
                    let rho_new = 1.0 / (2.0 * sigma - rho);
                    w.pointwise_mul(&level.scaling, &res).unwrap();
                    d.axpby(2.0 * rho_new * theta / delta, &w, rho_new * rho)
                        .unwrap();
                    want.axpy(1.0, &d).unwrap();
                    rho = rho_new;
                }
                // The fused smoothing, x poisoned where it starts from zero.
                let start = if zero { vec![f64::NAN; n] } else { x0.clone() };
                let mut got = Vector::from_slice(&cpu, &start).unwrap();
                let mut work = amg.work.borrow_mut();
                amg.smooth(l, &b, &mut got, zero, &mut work[l]).unwrap();
                let (got, want) = (got.to_vec().unwrap(), want.to_vec().unwrap());
                let scale = want.iter().map(|v| v * v).sum::<f64>().sqrt();
                let err = got
                    .iter()
                    .zip(&want)
                    .map(|(g, w)| (g - w) * (g - w))
                    .sum::<f64>()
                    .sqrt();
                assert!(
                    err <= 1e-13 * scale,
                    "degree {degree} level {l} zero {zero}: {err:e} against {scale:e}"
                );
            }
        }
    }
}

/// The fourth-kind Chebyshev smoother against its definition: on the 1D Laplacian, whose
/// Jacobi-scaled eigenpairs are known (`λⱼ = 1 − cos(jπ/(n+1))`, `vⱼ[k] = sin(j(k+1)π/(n+1))`),
/// smoothing `A x = A vⱼ` from zero gives `(1 − e(λⱼ)) vⱼ`, with `e` the error polynomial of
/// the scalar recurrence of Lottes (2023) on `[0, λmax]`; and that polynomial has its defining
/// bound, `max √(λ/λmax) |e(λ)| = 1/(2k + 1)` on `[0, λmax]`.
#[test]
fn fourth_kind_chebyshev_has_its_error_polynomial() {
    let n = 50;
    let a = poisson1d(n);
    let cpu = Cpu::new();
    // The error polynomial e(λ) = 1 − λ p(λ) of the recurrence, for D⁻¹A = λ.
    let error = |lambda: f64, k: usize, lmax: f64| {
        let (mut x, mut r) = (0.0, 1.0);
        let mut d = 4.0 / (3.0 * lmax) * r;
        for i in 1..k {
            let i = i as f64;
            x += d;
            r -= lambda * d;
            d = (2.0 * i - 1.0) / (2.0 * i + 3.0) * d
                + (8.0 * i + 4.0) / (2.0 * i + 3.0) / lmax * r;
        }
        x += d;
        1.0 - lambda * x
    };
    for degree in 1..=4 {
        let bound = (0..=4000)
            .map(|s| {
                let t = s as f64 / 4000.0;
                t.sqrt() * error(t, degree, 1.0).abs()
            })
            .fold(0.0, f64::max);
        let want = 1.0 / (2.0 * degree as f64 + 1.0);
        assert!(
            (bound - want).abs() < 1e-9,
            "degree {degree}: {bound} against {want}"
        );

        let params = AmgParams {
            smoother: AmgSmoother::ChebyshevFourthKind { degree },
            max_coarse: 10,
            ..AmgParams::default()
        };
        let amg = Amg::<Cpu, f64>::new(&cpu, &a, &params).unwrap();
        let lmax = amg.levels[0].lambda.1;
        for j in [1, 10, 25, 40, 50] {
            let lambda = 1.0 - (j as f64 * std::f64::consts::PI / (n + 1) as f64).cos();
            let v: Vec<f64> = (0..n)
                .map(|k| (j as f64 * (k + 1) as f64 * std::f64::consts::PI / (n + 1) as f64).sin())
                .collect();
            let vv = Vector::from_slice(&cpu, &v).unwrap();
            let mut b = Vector::zeros(&cpu, n).unwrap();
            a.spmv(1.0, &vv, 0.0, &mut b).unwrap();
            let mut x = Vector::from_slice(&cpu, &vec![f64::NAN; n]).unwrap();
            let mut work = amg.work.borrow_mut();
            amg.smooth(0, &b, &mut x, true, &mut work[0]).unwrap();
            let factor = 1.0 - error(lambda, degree, lmax);
            let err = x
                .to_vec()
                .unwrap()
                .iter()
                .zip(&v)
                .map(|(x, v)| (x - factor * v).abs())
                .fold(0.0, f64::max);
            assert!(
                err <= 1e-12,
                "degree {degree}, eigenvector {j} (λ = {lambda}, λmax {lmax}): {err:e}"
            );
        }
    }
}

/// The near-null vectors' improvement against the cycle's own smoother: the hierarchy built
/// with `improve_candidates = s` equals the one built from the vectors smoothed `s` times
/// by `Amg::smooth` on `A x = 0` (the fused passes, an independent code path) and given as
/// they are; for one vector and for two, with each smoother.
#[test]
fn improved_candidates_are_the_smoothed_vectors() {
    let a = poisson2d_5pt(24).unwrap();
    let cpu = Cpu::new();
    let n = a.nrows();
    let linear: Vec<f64> = (0..n).map(|i| (i % 24) as f64 / 23.0 - 0.5).collect();
    for smoother in [
        AmgSmoother::Chebyshev { degree: 3 },
        AmgSmoother::ChebyshevFourthKind { degree: 2 },
        AmgSmoother::L1Jacobi { sweeps: 2 },
    ] {
        for given in [vec![vec![1.0; n]], vec![vec![1.0; n], linear.clone()]] {
            let steps = 3;
            let base = AmgParams {
                smoother,
                max_coarse: 30,
                near_null: NearNull::Vectors(given.clone()),
                improve_candidates: 0,
                ..AmgParams::default()
            };
            let amg = Amg::<Cpu, f64>::new(&cpu, &a, &base).unwrap();
            let zero = Vector::zeros(&cpu, n).unwrap();
            let smoothed: Vec<Vec<f64>> = given
                .iter()
                .map(|v| {
                    let mut x = Vector::from_slice(&cpu, v).unwrap();
                    let mut work = amg.work.borrow_mut();
                    for _ in 0..steps {
                        amg.smooth(0, &zero, &mut x, false, &mut work[0]).unwrap();
                    }
                    x.to_vec().unwrap()
                })
                .collect();
            // The smoothing changed the vectors (Dirichlet rows pull them down) ...
            let change = smoothed[0]
                .iter()
                .zip(&given[0])
                .map(|(s, g)| (s - g).abs())
                .fold(0.0, f64::max);
            assert!(change > 0.1, "{smoother:?}: the vector moved by {change}");
            let improved = build(
                &a,
                &AmgParams {
                    improve_candidates: steps,
                    ..base.clone()
                },
            )
            .unwrap();
            let from_smoothed = build(
                &a,
                &AmgParams {
                    near_null: NearNull::Vectors(smoothed),
                    ..base.clone()
                },
            )
            .unwrap();
            // ... and the first coarse operators agree to rounding (deeper levels may differ
            // by entries that cancel to rounding in one and to zero in the other).
            let k = given.len();
            assert_eq!(
                improved.info[..2],
                from_smoothed.info[..2],
                "{smoother:?}, {k}"
            );
            {
                let l = 1;
                let (x, y) = (
                    dense(improved.levels[l].a.as_ref().unwrap()),
                    dense(from_smoothed.levels[l].a.as_ref().unwrap()),
                );
                let scale = x.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
                for (i, (xr, yr)) in x.iter().zip(&y).enumerate() {
                    for (j, (u, v)) in xr.iter().zip(yr).enumerate() {
                        assert!(
                            (u - v).abs() <= 1e-10 * scale,
                            "{smoother:?}, {k} vectors, level {l}, ({i}, {j}): {u} against {v}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn iterations_do_not_grow_with_the_mesh() {
    let p = AmgParams::default();
    let its2: Vec<usize> = [32, 64, 128, 256]
        .iter()
        .map(|&n| iterations(&poisson2d_5pt(n).unwrap(), &p))
        .collect();
    let its3: Vec<usize> = [8, 16, 32]
        .iter()
        .map(|&n| iterations(&poisson3d_7pt(n).unwrap(), &p))
        .collect();
    for its in [&its2, &its3] {
        assert!(its.iter().all(|&k| k <= 25), "{its:?}");
        assert!(
            *its.last().unwrap() as f64 <= 1.5 * its[0] as f64 + 2.0,
            "{its:?}"
        );
    }
    // Every smoother and cycle converges.
    let a = poisson2d_5pt(64).unwrap();
    for (smoother, cycle) in [
        (AmgSmoother::L1Jacobi { sweeps: 2 }, AmgCycle::V),
        (AmgSmoother::Chebyshev { degree: 2 }, AmgCycle::W),
    ] {
        let k = iterations(
            &a,
            &AmgParams {
                smoother,
                cycle,
                ..AmgParams::default()
            },
        );
        assert!(k <= 30, "{smoother:?} {cycle:?}: {k}");
    }
}

#[test]
fn a_singular_laplacian_gets_a_pseudo_inverse() {
    // The pure-Neumann Laplacian of a path: singular, consistent right-hand side.
    let n = 300;
    let mut coo = Vec::new();
    for i in 0..n {
        let deg = if i == 0 || i == n - 1 { 1.0 } else { 2.0 };
        coo.push((i, i, deg));
        if i > 0 {
            coo.push((i, i - 1, -1.0));
        }
        if i + 1 < n {
            coo.push((i, i + 1, -1.0));
        }
    }
    coo.sort_by_key(|e| (e.0, e.1));
    let mut row_ptr = vec![0u32; n + 1];
    for e in &coo {
        row_ptr[e.0 + 1] += 1;
    }
    for i in 0..n {
        row_ptr[i + 1] += row_ptr[i];
    }
    let a = Csr::new(
        n,
        n,
        row_ptr,
        coo.iter().map(|e| e.1 as u32).collect(),
        coo.iter().map(|e| e.2).collect(),
    )
    .unwrap();
    let cpu = Cpu::new();
    let amg = Amg::<Cpu, f64>::new(
        &cpu,
        &a,
        &AmgParams {
            max_coarse: 20,
            ..AmgParams::default()
        },
    )
    .unwrap();
    let mut b: Vec<f64> = random_vec(n, 3);
    let mean = b.iter().sum::<f64>() / n as f64;
    b.iter_mut().for_each(|v| *v -= mean);
    let bv = Vector::from_slice(&cpu, &b).unwrap();
    let mut x = Vector::zeros(&cpu, n).unwrap();
    let report = pcg(&a, Some(&amg), &bv, &mut x, &quiet(1e-8, 100)).unwrap();
    assert_eq!(report.reason, StopReason::Converged, "{report}");
}

#[test]
fn an_f32_hierarchy_preconditions_an_f64_solve() {
    let a = poisson3d_7pt(20).unwrap();
    let cpu = Cpu::new();
    let amg = crate::solver::MixedPrecision::new(
        Amg::<Cpu, f32>::new(&cpu, &a, &AmgParams::default()).unwrap(),
    );
    let b = Vector::from_slice(&cpu, &random_vec::<f64>(a.nrows(), 5)).unwrap();
    let mut x = Vector::zeros(&cpu, a.nrows()).unwrap();
    let params = SolverParams {
        flexible: true,
        ..quiet(1e-10, 100)
    };
    let report = pcg(&a, Some(&amg), &b, &mut x, &params).unwrap();
    assert_eq!(report.reason, StopReason::Converged, "{report}");
    assert!(report.iterations <= 30, "{report}");
    let mut x = Vector::zeros(&cpu, a.nrows()).unwrap();
    let report = fgmres(&a, Some(&amg), &b, &mut x, &quiet(1e-10, 100)).unwrap();
    assert_eq!(report.reason, StopReason::Converged, "{report}");
}

#[test]
fn bad_matrices_and_parameters_are_named() {
    let cpu = Cpu::new();
    let p = AmgParams::default();
    let err = |a: &Csr<Cpu, f64>, p: &AmgParams| {
        Amg::<Cpu, f64>::new(&cpu, a, p)
            .err()
            .expect("refused")
            .to_string()
    };
    let rect = Csr::new(2, 3, vec![0, 1, 2], vec![0, 1], vec![1.0, 1.0]).unwrap();
    assert!(err(&rect, &p).contains("2 x 3"), "{}", err(&rect, &p));
    let zero_diag = Csr::new(
        3,
        3,
        vec![0, 1, 3, 4],
        vec![0, 0, 1, 2],
        vec![1.0, -1.0, 0.0, 1.0],
    )
    .unwrap();
    assert!(
        err(&zero_diag, &p).contains("row 1"),
        "{}",
        err(&zero_diag, &p)
    );
    let negative = Csr::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -2.0]).unwrap();
    assert!(
        err(&negative, &p).contains("row 1 has diagonal -2"),
        "{}",
        err(&negative, &p)
    );
    let empty_row = Csr::new(3, 3, vec![0, 1, 1, 2], vec![0, 2], vec![1.0, 1.0]).unwrap();
    assert!(
        err(&empty_row, &p).contains("row 1 is empty"),
        "{}",
        err(&empty_row, &p)
    );
    let mut nan = poisson2d_5pt(4).unwrap();
    nan.values_mut()[7] = f64::NAN;
    assert!(err(&nan, &p).contains("NaN"), "{}", err(&nan, &p));
    // Indefinite: the Laplacian with its sign flipped off the diagonal and a too small
    // diagonal (positive diagonal, negative eigenvalues).
    let mut indefinite = poisson2d_5pt(30).unwrap();
    for k in 0..indefinite.nnz() {
        let (row, col) = indefinite.entry_position(k);
        if row == col {
            indefinite.values_mut()[k] = 1.0;
        }
    }
    let msg = err(
        &indefinite,
        &AmgParams {
            max_coarse: 50,
            ..p.clone()
        },
    );
    assert!(msg.contains("not positive"), "{msg}");
    let a = poisson2d_5pt(4).unwrap();
    for bad in [
        AmgParams {
            theta: 1.5,
            ..p.clone()
        },
        AmgParams {
            smoother: AmgSmoother::Chebyshev { degree: 0 },
            ..p.clone()
        },
        AmgParams {
            max_coarse: 0,
            ..p.clone()
        },
        AmgParams {
            spectral_steps: 0,
            ..p.clone()
        },
        AmgParams {
            spectral_steps: crate::solver::MAX_SPECTRAL_STEPS + 1,
            ..p.clone()
        },
        AmgParams {
            near_null: NearNull::Vectors(vec![vec![1.0; 3]]),
            ..p.clone()
        },
        AmgParams {
            near_null: NearNull::Vectors(vec![vec![0.0; 16]]),
            ..p.clone()
        },
    ] {
        let e = Amg::<Cpu, f64>::new(&cpu, &a, &bad)
            .err()
            .expect("an error");
        if bad.spectral_steps != p.spectral_steps {
            assert!(e.to_string().contains("spectral_steps"), "{e}");
        }
    }
}

#[test]
fn empty_and_one_row_matrices() {
    let cpu = Cpu::new();
    let empty = Csr::<Cpu, f64>::new(0, 0, vec![0], vec![], vec![]).unwrap();
    let amg = Amg::<Cpu, f64>::new(&cpu, &empty, &AmgParams::default()).unwrap();
    let mut z = Vector::zeros(&cpu, 0).unwrap();
    amg.precondition(&Vector::zeros(&cpu, 0).unwrap(), &mut z)
        .unwrap();
    let one = Csr::new(1, 1, vec![0, 1], vec![0], vec![4.0]).unwrap();
    let amg = Amg::<Cpu, f64>::new(&cpu, &one, &AmgParams::default()).unwrap();
    let mut z = Vector::from_slice(&cpu, &[f64::NAN]).unwrap();
    amg.precondition(&Vector::from_slice(&cpu, &[2.0]).unwrap(), &mut z)
        .unwrap();
    assert!(
        (z.to_vec().unwrap()[0] - 0.5).abs() < 1e-15,
        "{:?}",
        z.to_vec()
    );
    // Wrong lengths are errors, not panics.
    let mut z2 = Vector::zeros(&cpu, 2).unwrap();
    assert!(amg
        .precondition(&Vector::zeros(&cpu, 1).unwrap(), &mut z2)
        .is_err());
}

#[test]
fn a_borrowed_fine_operator_gives_the_same_cycle() {
    let cpu = Cpu::new();
    let a = poisson3d_7pt(10).unwrap();
    let p = AmgParams::default();
    let own = Amg::<Cpu, f64>::new(&cpu, &a, &p).unwrap();
    let borrowed = Amg::<Cpu, f64>::with_operator(&cpu, &a, &a, &p).unwrap();
    let shape = |i: &AmgInfo| i.levels.iter().map(|l| (l.rows, l.nnz)).collect::<Vec<_>>();
    assert_eq!(shape(own.info()), shape(borrowed.info()));
    assert_eq!(own.info().levels[0].format, "csr");
    assert_eq!(borrowed.info().levels[0].format, "operator");
    let r = Vector::from_slice(&cpu, &random_vec::<f64>(a.nrows(), 4)).unwrap();
    let (mut z1, mut z2) = (
        Vector::zeros(&cpu, a.nrows()).unwrap(),
        Vector::zeros(&cpu, a.nrows()).unwrap(),
    );
    own.precondition(&r, &mut z1).unwrap();
    borrowed.precondition(&r, &mut z2).unwrap();
    assert_eq!(z1.to_vec().unwrap(), z2.to_vec().unwrap());
    let other = poisson3d_7pt(9).unwrap();
    let e = Amg::<Cpu, f64>::with_operator(&cpu, &a, &other, &p)
        .err()
        .expect("refused");
    assert!(e.to_string().contains("with_operator"), "{e}");
}
