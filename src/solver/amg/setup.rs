//! The hierarchy, built where the matrix lives: strength, aggregation, prolongators,
//! Galerkin products and spectral bounds by the [`sparse::algebra`](crate::sparse::algebra)
//! operations of the backend (rayon on the CPU — the reference — and kernels on a device),
//! in f64; the coarsest operator is inverted densely on the host.

use std::time::Instant;

use rayon::prelude::*;

use super::{AmgLevelInfo, AmgParams, AmgPhases, AmgSmoother, NearNull};
use crate::backend::Cpu;
use crate::bundle::Backend;
use crate::error::{check_len, Error, Result};
use crate::operator::LinearOperator;
use crate::sparse::algebra::{positive_diagonal, NearNullSpace};
use crate::sparse::csr::Csr;
use crate::vector::Vector;

/// One level of the hierarchy, in f64 on the backend.
pub(crate) struct SetupLevel<B: Backend> {
    /// The level's operator (`None` on the finest: the matrix given).
    pub a: Option<Csr<B, f64>>,
    /// To the next level (`None` on the coarsest).
    pub p: Option<Csr<B, f64>>,
    pub r: Option<Csr<B, f64>>,
    /// The smoother's scaling: `1/aᵢᵢ` (Chebyshev) or `1/Σⱼ|aᵢⱼ|` (l1-Jacobi).
    pub scaling: Vector<B, f64>,
    /// `λmax(D⁻¹A)` estimated by Lanczos (Chebyshev; 1 for l1-Jacobi).
    pub rho: f64,
}

/// The hierarchy and what its setup measured.
pub(crate) struct Hierarchy<B: Backend> {
    pub levels: Vec<SetupLevel<B>>,
    /// The dense (pseudo-)inverse of the coarsest operator, if it is small enough.
    pub coarse_inverse: Option<Csr<Cpu, f64>>,
    pub info: Vec<AmgLevelInfo>,
    pub phases: AmgPhases,
}

/// The largest coarse operator inverted densely; a larger one (a matrix that stops
/// coarsening) is solved by smoothing sweeps.
pub(crate) const DENSE_COARSE_LIMIT: usize = 2000;

/// The largest eigenvalue of `D⁻¹A` (`jacobi` = `D⁻¹`) by `steps` Lanczos steps in the
/// `D` inner product (in which `D⁻¹A` is self-adjoint), from a fixed start vector: the
/// largest Ritz value, computed by bisection on the tridiagonal's Sturm sequence. Runs on
/// the matrix's backend as PCG with the Jacobi preconditioner on `A x = v₀` from zero (its
/// residual and directions only: `x` is not formed), whose coefficients give the Lanczos
/// tridiagonal of `D⁻¹A` (`T₀₀ = 1/α₀`,
/// `Tⱼⱼ = 1/αⱼ + βⱼ₋₁/αⱼ₋₁`, `Tⱼ,ⱼ₊₁ = √βⱼ/αⱼ`): its scalars stay on the device (the fused
/// PCG-Jacobi passes), each step's `p·Ap` and `r·z` recorded there and read once at the end.
pub(crate) fn spectral_radius<B: Backend>(
    a: &Csr<B, f64>,
    jacobi: &Vector<B, f64>,
    steps: usize,
) -> Result<f64> {
    use crate::vector::{cg_scalars, dot_into, jacobi_xpay_device, pcg_jacobi_residual_device};
    let n = a.nrows();
    let backend = a.backend();
    let steps = steps.min(n);
    if n == 0 || steps == 0 {
        return Ok(1.0); // an empty matrix: no spectrum, any positive bound will do
    }
    // SAFETY: the buffer was allocated by this backend.
    let mut r = unsafe { Vector::from_buffer(backend, backend.hash_vector(n, 0x1a2c)?) };
    let mut p = Vector::zeros(backend, n)?;
    p.pointwise_mul(jacobi, &r)?;
    let mut s = Vector::zeros(backend, cg_scalars::PCG_LEN)?;
    // history[0] = r₀·z₀; history[2j + 1] = pⱼ·Apⱼ; history[2j + 2] = rⱼ₊₁·zⱼ₊₁.
    let mut history = Vector::zeros(backend, 2 * steps + 1)?;
    dot_into(&r, &p, &mut s, cg_scalars::RR)?;
    dot_into(&r, &p, &mut s, cg_scalars::RZ)?;
    dot_into(&r, &p, &mut history, 0)?;
    let unit = |slot: usize| {
        let mut e = vec![0.0; cg_scalars::PCG_LEN];
        e[slot] = 1.0;
        Vector::from_slice(backend, &e)
    };
    let (e_pq, e_rz) = (unit(cg_scalars::PQ)?, unit(cg_scalars::RZ)?);
    let mut q = Vector::zeros(backend, n)?;
    for j in 0..steps {
        a.apply(&p, &mut q)?;
        dot_into(&p, &q, &mut s, cg_scalars::PQ)?;
        dot_into(&s, &e_pq, &mut history, 2 * j + 1)?;
        pcg_jacobi_residual_device(&mut s, jacobi, &p, &q, &mut r)?;
        dot_into(&s, &e_rz, &mut history, 2 * j + 2)?;
        jacobi_xpay_device(&s, jacobi, &r, &mut p)?;
    }
    let h = history.to_vec()?;
    // The tridiagonal, up to the first step whose coefficients are not usable (a residual
    // reduced to rounding: the Krylov space is exhausted, or a non-positive curvature).
    let (mut alpha, mut beta) = (Vec::new(), Vec::new());
    let rz0 = h[0];
    if !(rz0.is_finite() && rz0 > 0.0) {
        return Ok(if rz0 == 0.0 { 1.0 } else { f64::NAN });
    }
    let mut prev: Option<(f64, f64)> = None; // (αⱼ₋₁, βⱼ₋₁)
    for j in 0..steps {
        let (rz, pq, rz_next) = (h[2 * j], h[2 * j + 1], h[2 * j + 2]);
        if !(pq.is_finite() && rz.is_finite()) {
            return Ok(f64::NAN);
        }
        if pq <= 0.0 {
            // A is not positive definite along p: the estimate so far, or a non-positive one.
            if alpha.is_empty() {
                return Ok(pq);
            }
            break;
        }
        let al = rz / pq;
        alpha.push(1.0 / al + prev.map_or(0.0, |(a, b)| b / a));
        let be = rz_next / rz;
        if !(be.is_finite() && rz_next > 1e-24 * rz0) {
            break;
        }
        beta.push(be.sqrt() / al);
        prev = Some((al, be));
    }
    let m = alpha.len();
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
    Ok(hi)
}

/// The dense pseudo-inverse of a small symmetric positive semidefinite matrix, as a CSR
/// matrix with full rows: Cholesky with the pivots at or below `1e-10 aⱼⱼ` dropped (a
/// singular operator, e.g. pure Neumann, gets a semidefinite inverse on the complement of
/// its kernel), then `L⁻ᵀ L⁻¹`. The errors name `op`.
fn dense_inverse(op: &'static str, a: &Csr<Cpu, f64>, level: usize) -> Result<Csr<Cpu, f64>> {
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
                    op,
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

/// Seconds since `t`, after the backend's queued work has finished.
fn lap<B: Backend>(backend: &B, t: Instant) -> Result<f64> {
    backend.synchronize()?;
    Ok(t.elapsed().as_secs_f64())
}

/// [`build_for`] as [`Amg::new`](super::Amg::new).
#[cfg(test)]
pub(crate) fn build<B: Backend>(a: &Csr<B, f64>, params: &AmgParams) -> Result<Hierarchy<B>> {
    build_for("Amg::new", a, params, false)
}

/// Builds the hierarchy of `a` on its backend; the errors name `op` (the constructor
/// called). `zero_free`: `a` stores no zero value (checked on the host), so that at
/// `θ = 0` its own pattern is the finest level's strength graph (every stored entry is
/// strong) without the device's check of its values.
pub(crate) fn build_for<B: Backend>(
    op: &'static str,
    a: &Csr<B, f64>,
    params: &AmgParams,
    zero_free: bool,
) -> Result<Hierarchy<B>> {
    params.check(op, a.nrows())?;
    if a.nrows() != a.ncols() {
        return Err(Error::invalid(
            op,
            "a",
            format!("{} x {}: AMG needs a square matrix", a.nrows(), a.ncols()),
        ));
    }
    let backend = a.backend();
    let mut phases = AmgPhases::default();
    let mut levels = Vec::new();
    let mut info = Vec::new();
    let t = Instant::now();
    let mut b = match &params.near_null {
        NearNull::Constants => NearNullSpace::constants(backend, a.nrows())?,
        NearNull::Strided(stride) => NearNullSpace::strided(backend, a.nrows(), *stride)?,
        NearNull::Vectors(vectors) => NearNullSpace::new(backend, vectors)?,
    };
    phases.transfer = lap(backend, t)?;
    let mut owned: Option<Csr<B, f64>> = None;
    loop {
        let current = owned.as_ref().unwrap_or(a);
        let level = levels.len();
        let n = current.nrows();
        let t0 = Instant::now();
        let diag = backend.csr_diagonal(current)?;
        positive_diagonal(op, current, &diag, Some(level))?;
        // SAFETY: the buffer was allocated by this backend.
        let diag = unsafe { Vector::from_buffer(backend, diag) };
        let mut jacobi = Vector::full(backend, n, 1.0)?;
        jacobi.pointwise_div(&Vector::full(backend, n, 1.0)?, &diag)?;
        let last = n <= params.max_coarse || level + 1 >= params.max_levels;
        // A last level inverted densely is never smoothed: no estimate (its Cholesky
        // checks definiteness).
        let rho = if last && n <= DENSE_COARSE_LIMIT {
            1.0
        } else {
            spectral_radius(current, &jacobi, params.spectral_steps)?
        };
        if rho.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !rho.is_finite() {
            return Err(Error::invalid(
                op,
                "a",
                format!(
                    "the estimate of λmax(D⁻¹A) on level {level} is {rho}: the matrix is not \
                     positive definite"
                ),
            ));
        }
        let (rho_smoother, scale) = match params.smoother {
            AmgSmoother::Chebyshev { .. } | AmgSmoother::ChebyshevFourthKind { .. } => {
                (rho, jacobi)
            }
            AmgSmoother::L1Jacobi { .. } => {
                // SAFETY: the buffer was allocated by this backend.
                let sums =
                    unsafe { Vector::from_buffer(backend, backend.csr_row_abs_sums(current)?) };
                jacobi.pointwise_div(&Vector::full(backend, n, 1.0)?, &sums)?;
                (1.0, jacobi)
            }
        };
        phases.spectral += lap(backend, t0)?;
        if level == 0 && !last && params.improve_candidates > 0 {
            let t = Instant::now();
            b = improve_candidates(current, &scale, rho_smoother, params, b)?;
            phases.tentative += lap(backend, t)?;
        }
        info.push(AmgLevelInfo {
            rows: n,
            nnz: current.nnz(),
            format: "csr",
        });
        let next = if last {
            None
        } else {
            let t = Instant::now();
            // At θ = 0 every nonzero entry is strong: a matrix without stored zeros (the
            // finest checked on the host, or any level by one pass over its values where it
            // lives) is its own strength graph, and the filter would copy it.
            let own_graph = params.theta == 0.0
                && ((level == 0 && zero_free) || !backend.any_zero(&current.values)?);
            let s = if own_graph {
                None
            } else {
                Some(crate::sparse::algebra::strength(current, params.theta)?)
            };
            phases.strength += lap(backend, t)?;
            let t = Instant::now();
            let agg = crate::sparse::algebra::aggregate(s.as_ref().unwrap_or(current))?;
            drop(s);
            phases.aggregation += lap(backend, t)?;
            let t = Instant::now();
            let (tent, bc) = crate::sparse::algebra::tentative(&agg, &b)?;
            drop(agg);
            phases.tentative += lap(backend, t)?;
            // The coarse unknowns: up to k per aggregate (the kept near-null columns).
            let nc = tent.ncols();
            if nc == 0 || nc as f64 > 0.85 * n as f64 {
                None // coarsening has stalled
            } else {
                let t = Instant::now();
                let p = backend.smoothed_prolongator(
                    current,
                    &tent,
                    diag.buffer()?,
                    4.0 / (3.0 * rho),
                )?;
                drop(tent);
                let r = crate::sparse::algebra::transpose(&p)?;
                phases.prolongator += lap(backend, t)?;
                let t = Instant::now();
                let ap = crate::sparse::algebra::spgemm(current, &p)?;
                let coarse = crate::sparse::algebra::spgemm(&r, &ap)?;
                drop(ap);
                phases.galerkin += lap(backend, t)?;
                Some((p, r, coarse, bc))
            }
        };
        match next {
            Some((p, r, coarse, bc)) => {
                levels.push(SetupLevel {
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
                let inverse = if n <= DENSE_COARSE_LIMIT {
                    crate::limits::check_host_items("the coarse inverse", (n as u64).pow(2), 16)?;
                    Some(dense_inverse(op, &current.to_host()?, level)?)
                } else {
                    None
                };
                phases.coarse += t.elapsed().as_secs_f64();
                levels.push(SetupLevel {
                    a: owned,
                    p: None,
                    r: None,
                    scaling: scale,
                    rho: rho_smoother,
                });
                return Ok(Hierarchy {
                    levels,
                    coarse_inverse: inverse,
                    info,
                    phases,
                });
            }
        }
    }
}

/// The near-null vectors `b` after `params.improve_candidates` steps of the finest level's
/// smoother on `A x = 0` from each (PyAMG's `improve_candidates`): what the smoother cannot
/// reduce is what the coarse levels must represent, so the vectors take on the matrix's
/// boundary conditions. `scaling` is the level's `D⁻¹` (Chebyshev) or `D₁⁻¹` (l1-Jacobi),
/// `rho` its `λmax(D⁻¹A)` estimate; the steps are those of the cycle's smoother (`Amg::smooth`
/// with `b = 0`, in f64), by plain vector operations.
fn improve_candidates<B: Backend>(
    a: &Csr<B, f64>,
    scaling: &Vector<B, f64>,
    rho: f64,
    params: &AmgParams,
    b: NearNullSpace<B>,
) -> Result<NearNullSpace<B>> {
    let backend = a.backend();
    let n = a.nrows();
    let (rows, k) = (b.rows, b.k);
    let mut columns = if k == 1 {
        // SAFETY: the buffer was allocated by this backend.
        vec![unsafe { Vector::from_buffer(backend, b.data) }]
    } else {
        let host = b.to_vec()?;
        host.chunks(rows)
            .map(|c| Vector::from_slice(backend, c))
            .collect::<Result<Vec<_>>>()?
    };
    // The Chebyshev interval, centre and steps, as the cycle's (`Amg::build`, `Amg::smooth`).
    let sweeps = match params.smoother {
        AmgSmoother::L1Jacobi { sweeps } => sweeps,
        _ => 1,
    };
    let (lmin, lmax, centre) = params.smoother.interval(rho);
    let mut scaled = scaling.try_clone()?;
    scaled.scale(1.0 / centre)?;
    let (mut res, mut d, mut w) = (
        Vector::zeros(backend, n)?,
        Vector::zeros(backend, n)?,
        Vector::zeros(backend, n)?,
    );
    for x in &mut columns {
        for _ in 0..params.improve_candidates {
            // res = −A x; d = scaled ∘ res; x += d (l1-Jacobi: `sweeps` times); then the
            // Chebyshev recurrence's further steps.
            for _ in 0..sweeps {
                a.apply_add(-1.0, x, 0.0, &mut res)?;
                d.pointwise_mul(&scaled, &res)?;
                x.axpy(1.0, &d)?;
            }
            for (alpha, beta) in params.smoother.steps((lmin, lmax)) {
                a.apply_add(-1.0, &d, 1.0, &mut res)?;
                w.pointwise_mul(&scaled, &res)?;
                d.axpby(alpha, &w, beta)?;
                x.axpy(1.0, &d)?;
            }
        }
    }
    if k == 1 {
        let x = columns.pop().expect("one column");
        return Ok(NearNullSpace {
            rows,
            k,
            data: x.into_buffer()?,
            backend: backend.clone(),
        });
    }
    let host = columns
        .iter()
        .map(Vector::to_vec)
        .collect::<Result<Vec<_>>>()?;
    NearNullSpace::new(backend, &host)
}

/// Checks a host matrix before its move to the backend: square and finite (the entry
/// named). The errors name `op` (the constructor called). Returns whether no stored value
/// is zero (in the same pass over the values).
pub(crate) fn check_host(op: &'static str, a: &Csr<Cpu, f64>) -> Result<bool> {
    use rayon::prelude::*;
    check_len(op, "a.ncols() (square)", a.nrows(), a.ncols()).map_err(|_| {
        Error::invalid(
            op,
            "a",
            format!("{} x {}: AMG needs a square matrix", a.nrows(), a.ncols()),
        )
    })?;
    // Chunks in parallel, each a branch-free fold: (all finite, some zero).
    let (finite, zero) = a
        .values()
        .par_chunks(1 << 14)
        .map(|c| {
            c.iter().fold((true, false), |(f, z), v| {
                (f & v.is_finite(), z | (*v == 0.0))
            })
        })
        .reduce(|| (true, false), |x, y| (x.0 & y.0, x.1 | y.1));
    if !finite {
        a.check_finite()?;
    }
    Ok(!zero)
}

#[cfg(test)]
mod setup_tests {
    use super::*;
    use crate::sparse::generate::poisson2d_5pt;

    /// The errors name the constructor called, not always `Amg::new`.
    #[test]
    fn errors_name_the_constructor_called() {
        let a = Csr::<Cpu, f64>::new(2, 3, vec![0, 1, 2], vec![0, 1], vec![1.0, 1.0]).unwrap();
        let zero_levels = AmgParams {
            max_levels: 0,
            ..AmgParams::default()
        };
        for op in ["Amg::from_device", "Amg::with_operator"] {
            for e in [
                build_for(op, &a, &AmgParams::default(), false).err(),
                build_for(op, &a, &zero_levels, false).err(),
                check_host(op, &a).err(),
            ] {
                let e = e.expect("an error").to_string();
                assert!(e.contains(op) && !e.contains("Amg::new"), "{e}");
            }
        }
    }

    /// At θ = 0 a matrix without stored zeros is its own strength graph: the hierarchy
    /// built without the filter (the finest level known zero-free from the host check, or
    /// every level checked where it lives) has the same levels, operators and prolongators
    /// to the last bit as the one filtered on every level (θ the smallest positive f64, which
    /// keeps every nonzero); a stored zero is seen by the host check, and the hierarchy of a
    /// matrix with stored zeros is the filtered one too.
    #[test]
    fn a_zero_free_matrix_is_its_own_strength_graph() {
        let a = crate::sparse::generate::poisson3d_7pt(14).unwrap();
        assert!(check_host("Amg::new", &a).unwrap());
        let params = AmgParams {
            max_coarse: 20,
            ..AmgParams::default()
        };
        let filtering = AmgParams {
            theta: f64::MIN_POSITIVE,
            ..params.clone()
        };
        let bits = |m: &Csr<Cpu, f64>| {
            (
                m.row_ptr().to_vec(),
                m.col_idx().to_vec(),
                m.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            )
        };
        let same = |x: &Hierarchy<Cpu>, y: &Hierarchy<Cpu>| {
            assert_eq!(x.levels.len(), y.levels.len());
            for (f, s) in x.levels.iter().zip(&y.levels) {
                for (x, y) in [(&f.a, &s.a), (&f.p, &s.p), (&f.r, &s.r)] {
                    assert_eq!(x.as_ref().map(bits), y.as_ref().map(bits));
                }
            }
        };
        let filtered = build_for("Amg::new", &a, &filtering, false).unwrap();
        assert!(filtered.levels.len() >= 3);
        same(
            &filtered,
            &build_for("Amg::new", &a, &params, true).unwrap(),
        );
        same(
            &filtered,
            &build_for("Amg::new", &a, &params, false).unwrap(),
        );
        // Stored zeros, off the diagonal: not strong connections, filtered at θ = 0 too.
        let mut zeros = a.convert::<f64>();
        let offdiag: Vec<usize> = (0..zeros.nrows())
            .step_by(7)
            .filter_map(|i| {
                let start = zeros.row_ptr()[i] as usize;
                let (cols, _) = zeros.row(i);
                cols.iter()
                    .position(|&c| c as usize != i)
                    .map(|k| start + k)
            })
            .collect();
        for &k in &offdiag {
            zeros.values_mut()[k] = 0.0;
        }
        assert!(!check_host("Amg::new", &zeros).unwrap());
        same(
            &build_for("Amg::new", &zeros, &filtering, false).unwrap(),
            &build_for("Amg::new", &zeros, &params, false).unwrap(),
        );
    }

    /// A coarse level has at most 0.85 times its finer level's unknowns, counted as the
    /// tentative prolongator's columns (up to k per aggregate, not one): with 10 near-null
    /// vectors, the aggregates of a 2D Laplacian keep about as many columns as they have
    /// nodes.
    #[test]
    fn stalling_is_judged_on_the_coarse_unknowns() {
        let a = poisson2d_5pt(20).unwrap();
        let n = a.nrows();
        let vectors: Vec<Vec<f64>> = (0..10)
            .map(|c| {
                (0..n)
                    .map(|i| ((i * (c + 1)) as f64 * 0.7 + c as f64).sin())
                    .collect()
            })
            .collect();
        for near_null in [NearNull::Constants, NearNull::Vectors(vectors)] {
            let params = AmgParams {
                max_coarse: 10,
                improve_candidates: 0,
                near_null,
                ..AmgParams::default()
            };
            let h = build(&a, &params).unwrap();
            for l in 1..h.info.len() {
                let (fine, coarse) = (h.info[l - 1].rows, h.info[l].rows);
                assert!(
                    coarse as f64 <= 0.85 * fine as f64,
                    "level {l}: {coarse} rows under {fine}"
                );
            }
        }
    }
}
