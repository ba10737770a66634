//! The hierarchy on the host in f64: strength, aggregation, prolongators, Galerkin products,
//! spectral bounds and the coarse solve. The CPU reference of every backend's hierarchy.

use std::time::Instant;

use rayon::prelude::*;

use super::aggregate::aggregate;
use super::prolong::{smooth, tentative, NearNull};
use super::{AmgLevelInfo, AmgParams, AmgPhases, AmgSmoother};
use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::sparse::csr::Csr;
use crate::sparse::product::{spgemm, strength};

/// One level of the host hierarchy.
pub(crate) struct HostLevel {
    /// The level's operator (`None` on the finest: the matrix given).
    pub a: Option<Csr<Cpu, f64>>,
    /// To the next level (`None` on the coarsest).
    pub p: Option<Csr<Cpu, f64>>,
    pub r: Option<Csr<Cpu, f64>>,
    /// The smoother's scaling: `1/aᵢᵢ` (Chebyshev) or `1/Σⱼ|aᵢⱼ|` (l1-Jacobi).
    pub scaling: Vec<f64>,
    /// `λmax(D⁻¹A)` estimated by Lanczos (Chebyshev; 1 for l1-Jacobi).
    pub rho: f64,
}

/// The host hierarchy and what its setup measured.
pub(crate) struct HostHierarchy {
    pub levels: Vec<HostLevel>,
    /// The dense (pseudo-)inverse of the coarsest operator, if it is small enough.
    pub coarse_inverse: Option<Csr<Cpu, f64>>,
    pub info: Vec<AmgLevelInfo>,
    pub phases: AmgPhases,
}

/// The largest coarse operator inverted densely; a larger one (a matrix that stops
/// coarsening) is solved by smoothing sweeps.
pub(crate) const DENSE_COARSE_LIMIT: usize = 2000;

/// Checks what the setup needs of a level's matrix: square, finite, positive diagonal.
fn check_level(a: &Csr<Cpu, f64>, level: usize) -> Result<Vec<f64>> {
    if a.nrows() != a.ncols() {
        return Err(Error::invalid(
            "Amg::new",
            "a",
            format!("{} x {}: AMG needs a square matrix", a.nrows(), a.ncols()),
        ));
    }
    a.check_finite()?;
    let diag = a.diagonal();
    if let Some((i, &d)) = diag
        .iter()
        .enumerate()
        .find(|(_, &d)| d.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
    {
        let what = if a.row(i).0.is_empty() {
            "is empty".to_string()
        } else {
            format!("has diagonal {d}")
        };
        let reason = if level == 0 {
            format!("row {i} {what}: AMG needs a symmetric positive definite matrix (positive diagonal)")
        } else {
            format!(
                "the Galerkin operator of level {level} has row {i} with diagonal {d}: the matrix is not positive definite"
            )
        };
        return Err(Error::invalid("Amg::new", "a", reason));
    }
    Ok(diag)
}

/// `y = A x` on the host, rows in parallel.
fn spmv(a: &Csr<Cpu, f64>, x: &[f64], y: &mut [f64]) {
    y.par_iter_mut()
        .enumerate()
        .with_min_len(2048)
        .for_each(|(i, y)| {
            let (c, v) = a.row(i);
            *y = c.iter().zip(v).map(|(&j, &v)| v * x[j as usize]).sum();
        });
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.par_iter()
        .zip(y)
        .with_min_len(8192)
        .map(|(a, b)| a * b)
        .sum()
}

/// The largest eigenvalue of `D⁻¹A` (that of the symmetric `D^{-1/2} A D^{-1/2}`) by
/// `steps` Lanczos steps from a fixed random start: the largest Ritz value, computed by
/// bisection on the tridiagonal's Sturm sequence.
pub(crate) fn spectral_radius(a: &Csr<Cpu, f64>, scaling: &[f64], steps: usize) -> f64 {
    let n = a.nrows();
    let h: Vec<f64> = scaling.iter().map(|d| d.sqrt()).collect();
    let mut v: Vec<f64> = crate::random::random_vec::<f64>(n, 0x1a2c)
        .iter()
        .map(|x| x + 0.5)
        .collect();
    let norm = dot(&v, &v).sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    let mut prev = vec![0.0; n];
    let (mut alpha, mut beta) = (Vec::new(), Vec::new());
    let (mut t, mut w) = (vec![0.0; n], vec![0.0; n]);
    for _ in 0..steps.min(n) {
        t.par_iter_mut()
            .zip(&v)
            .zip(&h)
            .for_each(|((t, v), h)| *t = v * h);
        spmv(a, &t, &mut w);
        w.par_iter_mut().zip(&h).for_each(|(w, h)| *w *= h);
        let al = dot(&w, &v);
        let be_prev = beta.last().copied().unwrap_or(0.0);
        w.par_iter_mut()
            .zip(&v)
            .zip(&prev)
            .for_each(|((w, v), p)| *w -= al * v + be_prev * p);
        alpha.push(al);
        let be = dot(&w, &w).sqrt();
        if be.partial_cmp(&(1e-12 * al.abs())) != Some(std::cmp::Ordering::Greater) {
            break;
        }
        beta.push(be);
        std::mem::swap(&mut prev, &mut v);
        v.par_iter_mut().zip(&w).for_each(|(v, w)| *v = w / be);
    }
    let m = alpha.len();
    if m == 0 {
        return 1.0; // an empty matrix: no spectrum, any positive bound will do
    }
    beta.truncate(m.saturating_sub(1));
    // Gershgorin bounds, then bisection on the count of eigenvalues below x.
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for i in 0..m {
        let r = beta.get(i).map_or(0.0, |b| b.abs()) + if i > 0 { beta[i - 1].abs() } else { 0.0 };
        lo = lo.min(alpha[i] - r);
        hi = hi.max(alpha[i] + r);
    }
    let below = |x: f64| {
        let mut count = 0;
        let mut d = 1.0;
        for i in 0..m {
            let b2 = if i > 0 {
                beta[i - 1] * beta[i - 1]
            } else {
                0.0
            };
            d = alpha[i]
                - x
                - if i > 0 {
                    b2 / if d == 0.0 { 1e-300 } else { d }
                } else {
                    0.0
                };
            count += usize::from(d < 0.0);
        }
        count
    };
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if below(mid) >= m {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The dense pseudo-inverse of a small symmetric positive semidefinite matrix, as a CSR
/// matrix with full rows: Cholesky with the pivots at or below `1e-10 aⱼⱼ` dropped (a
/// singular operator, e.g. pure Neumann, gets a semidefinite inverse on the complement of
/// its kernel), then `L⁻ᵀ L⁻¹`.
fn dense_inverse(a: &Csr<Cpu, f64>, level: usize) -> Result<Csr<Cpu, f64>> {
    let n = a.nrows();
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        let (c, v) = a.row(i);
        for (&j, &x) in c.iter().zip(v) {
            l[i * n + j as usize] = x;
        }
    }
    let diag0: Vec<f64> = (0..n).map(|i| l[i * n + i]).collect();
    let mut kept = vec![true; n];
    for j in 0..n {
        let s: f64 = (0..j).map(|k| l[j * n + k] * l[j * n + k]).sum();
        let d = l[j * n + j] - s;
        if d <= 1e-10 * diag0[j] {
            if d < -1e-8 * diag0[j] {
                return Err(Error::invalid(
                    "Amg::new",
                    "a",
                    format!(
                        "the coarsest operator (level {level}, {n} rows) has a negative pivot {d:e} at row {j}: the matrix is not positive definite"
                    ),
                ));
            }
            kept[j] = false;
            for i in j..n {
                l[i * n + j] = 0.0;
            }
            l[j * n + j + 1..(j + 1) * n].fill(0.0);
            continue;
        }
        let djj = d.sqrt();
        l[j * n + j] = djj;
        let (upper, lower) = l.split_at_mut((j + 1) * n);
        let lj = &upper[j * n..j * n + j];
        lower.par_chunks_mut(n).for_each(|li| {
            let s: f64 = li[..j].iter().zip(lj).map(|(a, b)| a * b).sum();
            li[j] = (li[j] - s) / djj;
        });
        l[j * n + j + 1..(j + 1) * n].fill(0.0);
    }
    // Column k of L⁻¹ by forward substitution on e_k (rows of dropped pivots zero).
    let cols: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|k| {
            let mut y = vec![0.0; n];
            if !kept[k] {
                return y;
            }
            for i in k..n {
                if !kept[i] {
                    continue;
                }
                let s: f64 = (k..i).map(|m| l[i * n + m] * y[m]).sum();
                y[i] = (if i == k { 1.0 } else { 0.0 } - s) / l[i * n + i];
            }
            y
        })
        .collect();
    // inv[i][j] = Σ_m L⁻¹[m][i] L⁻¹[m][j] = cols[i] · cols[j].
    let inv: Vec<f64> = (0..n * n)
        .into_par_iter()
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            cols[i].iter().zip(&cols[j]).map(|(a, b)| a * b).sum()
        })
        .collect();
    let row_ptr = (0..=n).map(|i| (i * n) as u32).collect();
    let col_idx = (0..n * n).map(|k| (k % n) as u32).collect();
    Csr::new(n, n, row_ptr, col_idx, inv)
}

/// The smoother's scaling of a level: `jacobi` (`1/aᵢᵢ`) itself for Chebyshev, the inverse
/// row l1 norms for l1-Jacobi.
fn scaling(a: &Csr<Cpu, f64>, jacobi: Vec<f64>, smoother: AmgSmoother) -> Vec<f64> {
    match smoother {
        AmgSmoother::Chebyshev { .. } => jacobi,
        AmgSmoother::L1Jacobi { .. } => (0..a.nrows())
            .into_par_iter()
            .map(|i| 1.0 / a.row(i).1.iter().map(|v| v.abs()).sum::<f64>())
            .collect(),
    }
}

/// Builds the hierarchy of `a`.
pub(crate) fn build(a: &Csr<Cpu, f64>, params: &AmgParams) -> Result<HostHierarchy> {
    params.check(a.nrows())?;
    let mut phases = AmgPhases::default();
    let mut levels = Vec::new();
    let mut info = Vec::new();
    let mut b = if params.near_null.is_empty() {
        NearNull::constants(a.nrows())
    } else {
        NearNull {
            rows: a.nrows(),
            k: params.near_null.len(),
            data: params.near_null.concat(),
        }
    };
    let mut owned: Option<Csr<Cpu, f64>> = None;
    loop {
        let current = owned.as_ref().unwrap_or(a);
        let level = levels.len();
        let t0 = Instant::now();
        let diag = check_level(current, level)?;
        let jacobi: Vec<f64> = diag.iter().map(|d| 1.0 / d).collect();
        let rho = spectral_radius(current, &jacobi, 20);
        if rho.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !rho.is_finite() {
            return Err(Error::invalid(
                "Amg::new",
                "a",
                format!(
                    "the estimate of λmax(D⁻¹A) on level {level} is {rho}: the matrix is not \
                     positive definite"
                ),
            ));
        }
        let rho_smoother = match params.smoother {
            AmgSmoother::Chebyshev { .. } => rho,
            AmgSmoother::L1Jacobi { .. } => 1.0,
        };
        let scale = scaling(current, jacobi, params.smoother);
        phases.spectral += t0.elapsed().as_secs_f64();
        info.push(AmgLevelInfo {
            rows: current.nrows(),
            nnz: current.nnz(),
        });
        let last = current.nrows() <= params.max_coarse || level + 1 >= params.max_levels;
        let next = if last {
            None
        } else {
            let t = Instant::now();
            let s = strength(current, params.theta)?;
            phases.strength += t.elapsed().as_secs_f64();
            let t = Instant::now();
            let (agg, count) = aggregate(&s);
            drop(s);
            phases.aggregation += t.elapsed().as_secs_f64();
            if count == 0 || count as f64 > 0.85 * current.nrows() as f64 {
                None // coarsening has stalled
            } else {
                let t = Instant::now();
                let (tent, bc) = tentative(&agg, count, &b)?;
                phases.tentative += t.elapsed().as_secs_f64();
                let t = Instant::now();
                let p = smooth(current, &tent, &diag, 4.0 / (3.0 * rho))?;
                let r = p.transpose();
                phases.prolongator += t.elapsed().as_secs_f64();
                let t = Instant::now();
                let ap = spgemm(current, &p)?;
                let coarse = spgemm(&r, &ap)?;
                phases.galerkin += t.elapsed().as_secs_f64();
                Some((p, r, coarse, bc))
            }
        };
        match next {
            Some((p, r, coarse, bc)) => {
                levels.push(HostLevel {
                    a: owned.replace(coarse),
                    p: Some(p),
                    r: Some(r),
                    scaling: scale,
                    rho: rho_smoother,
                });
                b = bc;
            }
            None => {
                let t = Instant::now();
                let inverse = if current.nrows() <= DENSE_COARSE_LIMIT {
                    crate::limits::check_host_items(
                        "the coarse inverse",
                        (current.nrows() as u64).pow(2),
                        16,
                    )?;
                    Some(dense_inverse(current, level)?)
                } else {
                    None
                };
                phases.coarse += t.elapsed().as_secs_f64();
                levels.push(HostLevel {
                    a: owned,
                    p: None,
                    r: None,
                    scaling: scale,
                    rho: rho_smoother,
                });
                return Ok(HostHierarchy {
                    levels,
                    coarse_inverse: inverse,
                    info,
                    phases,
                });
            }
        }
    }
}
