//! Full multigrid as a solver (the seed's Algorithm 2), the right-hand sides of separable
//! loads on every level, and the L2 error against a separable exact solution.

use std::time::{Duration, Instant};

use crate::bundle::Backend;
use crate::error::{check_len, Result};
use crate::operator::LinearOperator;
use crate::scalar::Scalar;
use crate::solver::params::{Control, IterationInfo, Monitor};
use crate::solver::Stopping;
use crate::tensor::grid::Grid;
use crate::tensor::ops::{boundary, Banded, TensorOps};
use crate::tensor::Basis1d;
use crate::vector::Vector;

use super::Multigrid;

/// The outcome of [`fmg`].
#[derive(Clone, Debug, PartialEq)]
pub struct FmgReport {
    /// V-cycles after the FMG pass (the seed's count).
    pub cycles: usize,
    /// Whether `‖b − A x‖ ≤ max(rtol ‖b‖, atol)` was reached.
    pub converged: bool,
    /// `‖b‖₂`.
    pub rhs_norm: f64,
    /// `‖b − A x‖₂` after the FMG pass and after every V-cycle.
    pub residual_history: Vec<f64>,
    /// Time of the FMG pass.
    pub fmg_time: Duration,
    /// Time of the V-cycles (with their residuals).
    pub cycle_time: Duration,
}

impl FmgReport {
    /// The final relative residual.
    pub fn relative_residual(&self) -> f64 {
        let last = self.residual_history.last().copied().unwrap_or(f64::NAN);
        if self.rhs_norm > 0.0 {
            last / self.rhs_norm
        } else {
            last
        }
    }
}

/// Parameters of [`fmg`]: when the V-cycles stop (`stop.max_iter` counts V-cycles), and a
/// monitor called after every cycle (its [`Control::Stop`] ends the cycles).
#[derive(Debug, Default)]
pub struct FmgParams<'a> {
    /// `‖b − A x‖ ≤ max(rtol ‖b‖, atol)` or `max_iter` V-cycles.
    pub stop: Stopping,
    /// Called after every V-cycle.
    pub monitor: Monitor<'a>,
}

impl<'a> FmgParams<'a> {
    /// Parameters that stop by `stop`, without a monitor.
    pub fn new(stop: Stopping) -> Self {
        FmgParams {
            stop,
            monitor: Monitor::default(),
        }
    }

    /// Adds a monitor called after every V-cycle.
    pub fn with_monitor(self, monitor: impl FnMut(&IterationInfo) -> Control + 'a) -> Self {
        FmgParams {
            monitor: Monitor::new(monitor),
            ..self
        }
    }
}

/// Full multigrid for `A x = b` (`A` in `S`, usually f64) with the hierarchy `mg` in `T`
/// (f64, or f32 for mixed precision): the FMG pass on `rhs` (the right-hand side of every
/// level, in `T`), then `x ← x + V(0, b − A x)` with the residual in `S` until
/// `params.stop` is met (`max_iter` counts V-cycles). As in the seed's Algorithm 2
/// (`δ ← ‖b‖` before the loop), at least one V-cycle follows the FMG pass. The monitor sees
/// every cycle's residual.
///
/// # Errors
/// Size mismatches; device errors.
pub fn fmg<B: Backend + TensorOps, S: Scalar, T: Scalar>(
    mg: &Multigrid<B, T>,
    a: &dyn LinearOperator<B, S>,
    rhs: &[Vector<B, T>],
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &FmgParams<'_>,
) -> Result<FmgReport> {
    let stop = params.stop;
    stop.check("fmg")?;
    let n = mg.grid().len();
    check_len("fmg", "b", n, b.len())?;
    check_len("fmg", "x", n, x.len())?;
    check_len("fmg", "A", n, a.nrows())?;
    let backend = b.backend();
    let start = Instant::now();
    let mut xt = Vector::<B, T>::zeros(backend, n)?;
    mg.fmg_pass(rhs, &mut xt)?;
    x.convert_from(&xt)?;
    backend.synchronize()?;
    let fmg_time = start.elapsed();
    let start = Instant::now();
    let rhs_norm = b.nrm2()?.as_f64();
    let mut r = Vector::<B, S>::zeros(backend, n)?;
    let residual = |x: &Vector<B, S>, r: &mut Vector<B, S>| -> Result<f64> {
        a.apply(x, r)?;
        r.axpby(S::ONE, b, -S::ONE)?;
        Ok(r.nrm2()?.as_f64())
    };
    let mut history = vec![residual(x, &mut r)?];
    let mut cycles = 0;
    let mut zt = Vector::<B, T>::zeros(backend, n)?;
    let mut rt = Vector::<B, T>::zeros(backend, n)?;
    let mut z = Vector::<B, S>::zeros(backend, n)?;
    let mut stopped = false;
    while (cycles == 0 || !stop.met(history[cycles], rhs_norm))
        && cycles < stop.max_iter
        && !stopped
    {
        rt.convert_from(&r)?;
        zt.fill(T::ZERO)?;
        mg.cycle(&mut zt, &rt)?;
        z.convert_from(&zt)?;
        x.axpy(S::ONE, &z)?;
        history.push(residual(x, &mut r)?);
        cycles += 1;
        let residual = history[cycles];
        let info = IterationInfo {
            iteration: cycles,
            residual,
            relative: residual / rhs_norm.max(f64::MIN_POSITIVE),
            rate: if history[0] > 0.0 {
                (residual / history[0]).powf(1.0 / cycles as f64)
            } else {
                0.0
            },
            elapsed: start.elapsed(),
        };
        stopped = params.monitor.call(&info) == Control::Stop;
    }
    Ok(FmgReport {
        cycles,
        converged: stop.met(history[cycles], rhs_norm),
        rhs_norm,
        residual_history: history,
        fmg_time,
        cycle_time: start.elapsed(),
    })
}

/// The right-hand side `bᵢ = ∫ f φᵢ` on `grid` of the separable load
/// `f(x) = scale Π g(x_d)`, with `f` replaced by its `Q_k` interpolant (exact for
/// polynomial `g` of degree ≤ k); zero on boundary nodes. Computed on the device as
/// `h^d (M₁ diag(g)) ⊗ … ⊗ (M₁ diag(g)) 1` with `M₁` the global 1D mass matrix.
///
/// # Errors
/// Invalid grids; device errors.
pub fn level_rhs<B: Backend + TensorOps, T: Scalar>(
    backend: &B,
    grid: Grid,
    scale: f64,
    g: impl Fn(f64) -> f64,
) -> Result<Vector<B, T>> {
    crate::tensor::ops::check_grid("level_rhs", grid)?;
    let basis = Basis1d::new(grid.degree)?;
    let (k, n1) = (grid.degree, grid.n1());
    let n = k + 1;
    let gv: Vec<f64> = grid.node_coordinates().into_iter().map(g).collect();
    let mut rows = vec![std::collections::BTreeMap::new(); n1];
    for c in 0..grid.cells {
        for i in 0..n {
            for j in 0..n {
                let e = rows[c * k + i].entry(c * k + j).or_insert(0.0);
                *e += basis.mass[i * n + j] * gv[c * k + j];
            }
        }
    }
    let h = 1.0 / grid.cells as f64;
    let s = (scale * h.powi(grid.dim as i32))
        .abs()
        .powf(1.0 / grid.dim as f64);
    let sign = if scale < 0.0 { -1.0 } else { 1.0 };
    for row in &mut rows {
        for v in row.values_mut() {
            *v *= s;
        }
    }
    let band = Banded::<B, T>::from_rows(backend, &rows, n1)?;
    let mut x = Vector::<B, T>::full(backend, grid.len(), T::from_f64(sign))?;
    let mut y = Vector::<B, T>::zeros(backend, grid.len())?;
    let ext = grid.extents();
    for dir in 0..grid.dim {
        band.apply(ext, dir, &x, &mut y)?;
        std::mem::swap(&mut x, &mut y);
    }
    boundary(grid, None, &mut x)?;
    Ok(x)
}

/// The nodal interpolant `I_h u` on `grid` of the separable `u(x) = Π g(x_d)`: the value of
/// `u` at every node (boundary nodes included), computed on the device as
/// `diag(g) ⊗ … ⊗ diag(g) 1`.
///
/// # Errors
/// Invalid grids; device errors.
pub fn interpolant<B: Backend + TensorOps, T: Scalar>(
    backend: &B,
    grid: Grid,
    g: impl Fn(f64) -> f64,
) -> Result<Vector<B, T>> {
    crate::tensor::ops::check_grid("interpolant", grid)?;
    let n1 = grid.n1();
    let rows: Vec<std::collections::BTreeMap<usize, f64>> = grid
        .node_coordinates()
        .into_iter()
        .enumerate()
        .map(|(i, x)| std::collections::BTreeMap::from([(i, g(x))]))
        .collect();
    let band = Banded::<B, T>::from_rows(backend, &rows, n1)?;
    let mut x = Vector::<B, T>::full(backend, grid.len(), T::ONE)?;
    let mut y = Vector::<B, T>::zeros(backend, grid.len())?;
    let ext = grid.extents();
    for dir in 0..grid.dim {
        band.apply(ext, dir, &x, &mut y)?;
        std::mem::swap(&mut x, &mut y);
    }
    Ok(x)
}

/// `‖u − u_h‖_{L²(Ω)}` for the nodal values `uh` on `grid` and the separable exact solution
/// `u(x) = Π g(x_d)`, by Gauss quadrature with `k + 2` points per direction and cell
/// (sum factorization, on the host, cells in parallel; `g` is called `k + 2` times per cell
/// and direction). [`l2_error_vector`] computes it where `uh` lives.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if `uh` is not a grid
/// vector; invalid grids.
pub fn l2_error(grid: Grid, uh: &[f64], g: impl Fn(f64) -> f64 + Sync) -> Result<f64> {
    crate::tensor::ops::check_grid("l2_error", grid)?;
    check_len("l2_error", "uh", grid.len(), uh.len())?;
    let table = crate::tensor::ops::l2_table(grid, &g)?;
    Ok(crate::tensor::ops::l2_error_sq(grid, &table, uh).sqrt())
}

/// [`l2_error`] of a grid vector on its backend: one kernel computes the error of every
/// cell (in `T`, partial sums per unit) and only the partial sums (at most 65536 values) come
/// to the host, where they are added in f64. `g` is evaluated on the host, `k + 2` times per
/// cell and direction (a table of `cells (k + 2)` values goes to the device).
///
/// # Errors
/// As [`l2_error`]; [`Error::DeviceMismatch`](crate::error::Error) never (one vector);
/// device errors.
pub fn l2_error_vector<B: TensorOps, T: Scalar>(
    grid: Grid,
    uh: &Vector<B, T>,
    g: impl Fn(f64) -> f64 + Sync,
) -> Result<f64> {
    const OP: &str = "l2_error_vector";
    crate::tensor::ops::check_grid(OP, grid)?;
    check_len(OP, "uh", grid.len(), uh.len())?;
    let table: Vec<T> = crate::tensor::ops::l2_table(grid, &g)?
        .into_iter()
        .map(T::from_f64)
        .collect();
    let backend = uh.backend();
    let table = Vector::<B, T>::from_slice(backend, &table)?;
    let units = grid.cells.pow(grid.dim as u32).clamp(1, 1 << 16);
    let mut out = Vector::<B, T>::zeros(backend, units)?;
    // SAFETY: table holds l2_table_len(grid) values, uh is a grid vector (checked above),
    // out has at least one value; all three on this backend.
    unsafe {
        backend.tensor_l2_partials(grid, table.buffer()?, uh.buffer()?, out.buffer_mut()?)?;
    }
    let sum: f64 = out.to_vec()?.iter().map(|v| v.as_f64()).sum();
    Ok(sum.sqrt())
}
