//! Smoothed-aggregation algebraic multigrid: a preconditioner whose iteration counts do not
//! grow with the mesh, for any symmetric positive definite matrix.
//!
//! **Setup** (in f64 on the matrix's backend, by the operations of
//! [`sparse::algebra`](crate::sparse::algebra): rayon on the CPU, kernels on a device; the same
//! hierarchy on every backend up to rounding): symmetric strength of connection (`θ`),
//! aggregation by a parallel maximal independent set of distance 2 (Bell, Dalton and Olson,
//! 2012; ties broken by a hash of the row index), a tentative prolongator from the near-null
//! space (constants by default, first smoothed on `A x = 0` by the finest level's smoother,
//! [`AmgParams::improve_candidates`]; a QR per aggregate for several vectors), one damped-Jacobi
//! smoothing step (`ω = 4 / (3 ρ(D⁻¹A))`, `ρ` by Lanczos on the backend), Galerkin coarse
//! operators `Pᵀ A P` by [`spgemm`](crate::sparse::algebra::spgemm), until at most
//! [`AmgParams::max_coarse`] rows; the coarsest operator is moved to the host and inverted
//! densely (a pseudo-inverse for a semidefinite operator). The levels are then converted to
//! `T` on the backend, and on a device the large coarse levels to SELL-32
//! ([`AmgParams::coarse_sell_rows`]).
//!
//! **Cycle** (on the backend, every operation a checked vector or SpMV kernel): V or W, with
//! Chebyshev-over-Jacobi (degree `d` on `[1.1 ρ/30, 1.1 ρ]`; or the fourth kind on
//! `[0, 1.1 ρ]`) or l1-Jacobi smoothing, the same
//! before and after the coarse correction, so the cycle is symmetric and PCG can take it.
//! For the f32 hierarchy inside an f64 solve, wrap it in
//! [`MixedPrecision`](crate::solver::MixedPrecision) and use flexible PCG or FGMRES.

use std::cell::RefCell;
use std::time::Instant;

use crate::backend::Cpu;
use crate::bundle::Backend;
use crate::error::{check_len, Result};
use crate::operator::LinearOperator;
use crate::scalar::Scalar;
use crate::sparse::csr::Csr;
use crate::vector::Vector;

mod cycle;
mod info;
mod params;
mod setup;
#[cfg(test)]
mod tests;

pub use info::{AmgInfo, AmgLevelInfo, AmgLevelTimes, AmgPhases};
pub use params::{AmgCycle, AmgParams, AmgSmoother, NearNull, MAX_SPECTRAL_STEPS};

/// A level's operator: the hierarchy's own, or the caller's on the finest level, borrowed
/// ([`Amg::with_operator`]) or given ([`Amg::with_owned_operator`]).
enum LevelOp<'a, B: Backend, T: Scalar> {
    Owned(Csr<B, T>),
    Borrowed(&'a dyn LinearOperator<B, T>),
    Given(Box<dyn LinearOperator<B, T> + 'a>),
}

impl<B: Backend, T: Scalar> LevelOp<'_, B, T> {
    fn get(&self) -> &dyn LinearOperator<B, T> {
        match self {
            LevelOp::Owned(a) => a,
            LevelOp::Borrowed(a) => *a,
            LevelOp::Given(a) => a.as_ref(),
        }
    }
}

/// One level on the backend.
struct Level<'a, B: Backend, T: Scalar> {
    a: LevelOp<'a, B, T>,
    /// Prolongation to this level from the next, restriction from this level to the next.
    transfer: Option<(Csr<B, T>, Csr<B, T>)>,
    /// The smoother's scaling, divided by the Chebyshev centre `θ` (the fourth kind: by
    /// `3λmax/4`; l1-Jacobi: as is).
    scaling: Vector<B, T>,
    /// Chebyshev interval.
    lambda: (f64, f64),
}

/// Work vectors of one level.
struct Work<B: Backend, T: Scalar> {
    /// The level's right-hand side and solution (levels below the finest).
    b: Option<Vector<B, T>>,
    x: Option<Vector<B, T>>,
    res: Vector<B, T>,
    d: Vector<B, T>,
    w: Vector<B, T>,
}

/// The smoothed-aggregation hierarchy of a matrix on backend `B` in precision `T`: set up
/// on the backend in f64 (strength, MIS-2 aggregation, tentative prolongator from the
/// near-null space, Jacobi-smoothed prolongator, Galerkin products; the dense coarse
/// pseudo-inverse on the host), then converted to `T`; one V or W cycle per
/// [`precondition`](crate::solver::Preconditioner::precondition), symmetric (the same smoothing before and
/// after each coarse correction), so PCG can take it. For an f32 hierarchy in an f64 solve,
/// wrap it in [`MixedPrecision`](crate::solver::MixedPrecision) and use flexible PCG or FGMRES.
///
/// ```
/// use galerkin::solver::{pcg, Amg, AmgParams, SolverParams, StopReason};
/// use galerkin::sparse::generate::poisson2d_5pt;
/// use galerkin::{Cpu, Vector};
///
/// let cpu = Cpu::new();
/// let a = poisson2d_5pt(64)?;
/// let amg = Amg::<Cpu, f64>::new(&cpu, &a, &AmgParams::default())?;
/// assert!(amg.info().levels.len() >= 2);
/// let b = Vector::full(&cpu, a.nrows(), 1.0)?;
/// let mut x = Vector::zeros(&cpu, a.nrows())?;
/// let report = pcg(&a, Some(&amg), &b, &mut x, &SolverParams::default())?;
/// assert_eq!(report.reason, StopReason::Converged);
/// assert!(report.iterations < 20);
/// # Ok::<(), galerkin::Error>(())
/// ```
pub struct Amg<'a, B: Backend, T: Scalar> {
    levels: Vec<Level<'a, B, T>>,
    coarse_inverse: Option<Csr<B, T>>,
    smoother: AmgSmoother,
    cycle: AmgCycle,
    info: AmgInfo,
    work: RefCell<Vec<Work<B, T>>>,
    /// `M⁻¹ x` for [`LinearOperator::apply_add`] with `β ≠ 0`.
    scratch: RefCell<Option<Vector<B, T>>>,
    /// Per-level times while [`Amg::profile`] runs.
    times: RefCell<Option<Vec<AmgLevelTimes>>>,
}

/// `m` in `T` on its backend: itself when `T` is f64 (no copy), else a converted copy.
fn in_precision<B: Backend, T: Scalar>(m: Csr<B, f64>) -> Result<Csr<B, T>> {
    let moved: Box<dyn std::any::Any> = Box::new(m);
    match moved.downcast::<Csr<B, T>>() {
        Ok(same) => Ok(*same),
        Err(other) => {
            let m = other
                .downcast::<Csr<B, f64>>()
                .expect("the matrix boxed above");
            crate::sparse::algebra::convert::<B, f64, T>(&m)
        }
    }
}

/// The most padding a coarse level's SELL may add (stored slots over nonzeros); above it
/// the level stays CSR.
const SELL_MAX_PADDING: f64 = 1.5;

/// A coarse level's operator: on a device, from [`AmgParams::coarse_sell_rows`] rows, in
/// SELL-32 (σ = 1) converted there — its SpMV reads whole slices coalesced (H200,
/// 2026-11-30: Poisson 256³'s second level 254 → 192 µs, fvm-tet:120's 206 → 133 µs, for
/// 21–23% more bytes); else, or where the rows' lengths vary so much that SELL would pad
/// more than [`SELL_MAX_PADDING`], the CSR matrix itself (small levels are launch-bound,
/// and CSR was faster there: 9 against 14 µs). With the format's name for the report.
fn coarse_operator<'a, B: Backend, T: Scalar>(
    a: Csr<B, T>,
    params: &AmgParams,
) -> Result<(LevelOp<'a, B, T>, &'static str)> {
    if a.backend().kind() == crate::backend::BackendKind::Cpu || a.nrows() < params.coarse_sell_rows
    {
        return Ok((LevelOp::Owned(a), "csr"));
    }
    let limits = crate::sparse::FormatLimits {
        max_padding_ratio: SELL_MAX_PADDING,
    };
    match crate::sparse::algebra::to_sell(&a, 32, &limits) {
        Ok(sell) => Ok((LevelOp::Given(Box::new(sell)), "sell-32")),
        // Too much padding, SELL's arrays (up to 1.5x CSR's slots, allocated while the CSR
        // matrix lives) beyond the device's buffers where CSR itself fits, or 2³² or more
        // slots for SELL's 32-bit offsets: CSR is applied (the user never asked for SELL).
        Err(
            crate::Error::Padding { .. }
            | crate::Error::ResourceLimit { .. }
            | crate::Error::InvalidMatrix { format: "SELL", .. },
        ) => Ok((LevelOp::Owned(a), "csr")),
        Err(e) => Err(e),
    }
}

impl<B: Backend, T: Scalar> Amg<'static, B, T> {
    /// Sets up the hierarchy of `a` (host, f64 values) on `backend` — the matrix is moved
    /// there once and the whole setup runs there — with the cycle in `T`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for bad parameters, a matrix that is not square, a row
    /// whose diagonal is not positive or that is empty (named), a coarse operator that shows
    /// the matrix is not positive definite; [`Error::InvalidMatrix`](crate::Error::InvalidMatrix) for NaN or infinity
    /// (the entry named); [`Error::ResourceLimit`](crate::Error::ResourceLimit) when a level does not fit in memory;
    /// device errors.
    pub fn new(backend: &B, a: &Csr<Cpu, f64>, params: &AmgParams) -> Result<Self> {
        let op = "Amg::new";
        let start = Instant::now();
        let zero_free = setup::check_host(op, a)?;
        backend.require::<T>("AMG")?;
        let check = start.elapsed().as_secs_f64();
        match (a as &dyn std::any::Any).downcast_ref::<Csr<B, f64>>() {
            Some(same) => Amg::build(
                op,
                Source::Borrowed(same),
                None,
                params,
                (start, check, zero_free),
            ),
            None => Amg::build(
                op,
                Source::Owned(a.to_backend(backend)?),
                None,
                params,
                (start, check, zero_free),
            ),
        }
    }
}

/// The finest matrix of a setup: the caller's, or a copy moved to the backend for it.
enum Source<'s, B: Backend> {
    Borrowed(&'s Csr<B, f64>),
    Owned(Csr<B, f64>),
}

impl<'a, B: Backend, T: Scalar> Amg<'a, B, T> {
    /// As [`new`](Amg::new), but the finest level applies `fine` — the same matrix already on
    /// the backend in `T`, in any format (the solver's operator) — instead of a copy of `a`:
    /// the finest matrix is not stored twice after the setup.
    ///
    /// # Errors
    /// As [`new`](Amg::new), and [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) when `fine` is not
    /// `a.nrows() x a.ncols()`.
    pub fn with_operator(
        backend: &B,
        a: &Csr<Cpu, f64>,
        fine: &'a dyn LinearOperator<B, T>,
        params: &AmgParams,
    ) -> Result<Self> {
        let op = "Amg::with_operator";
        Amg::host_with_fine(op, backend, a, LevelOp::Borrowed(fine), params)
    }

    /// As [`with_operator`](Amg::with_operator), the hierarchy owning `fine` (e.g. an f32
    /// copy of the matrix in the format its SpMV prefers, for an f32 hierarchy inside an f64
    /// solve).
    ///
    /// # Errors
    /// As [`with_operator`](Amg::with_operator).
    pub fn with_owned_operator(
        backend: &B,
        a: &Csr<Cpu, f64>,
        fine: Box<dyn LinearOperator<B, T> + 'a>,
        params: &AmgParams,
    ) -> Result<Self> {
        let op = "Amg::with_owned_operator";
        Amg::host_with_fine(op, backend, a, LevelOp::Given(fine), params)
    }

    /// The setup of a host matrix with the finest level's operator `fine`.
    fn host_with_fine(
        op: &'static str,
        backend: &B,
        a: &Csr<Cpu, f64>,
        fine: LevelOp<'a, B, T>,
        params: &AmgParams,
    ) -> Result<Self> {
        check_len(op, "fine.nrows()", a.nrows(), fine.get().nrows())?;
        check_len(op, "fine.ncols()", a.ncols(), fine.get().ncols())?;
        let start = Instant::now();
        let zero_free = setup::check_host(op, a)?;
        backend.require::<T>("AMG")?;
        let check = start.elapsed().as_secs_f64();
        match (a as &dyn std::any::Any).downcast_ref::<Csr<B, f64>>() {
            Some(same) => Amg::build(
                op,
                Source::Borrowed(same),
                Some(fine),
                params,
                (start, check, zero_free),
            ),
            None => Amg::build(
                op,
                Source::Owned(a.to_backend(backend)?),
                Some(fine),
                params,
                (start, check, zero_free),
            ),
        }
    }

    /// Sets up the hierarchy of `a`, already on its backend in f64, without leaving it:
    /// every phase runs on the device. With `T = f64` the finest level applies `a` itself.
    /// The entries are not checked for NaN here (a non-finite value surfaces as a diagonal
    /// or spectral estimate that is not positive); check a host matrix with
    /// [`Csr::check_finite`] before moving it.
    ///
    /// # Errors
    /// As [`new`](Amg::new).
    pub fn from_device(a: &'a Csr<B, f64>, params: &AmgParams) -> Result<Self> {
        a.backend().require::<T>("AMG")?;
        let start = Instant::now();
        let fine = (a as &dyn std::any::Any)
            .downcast_ref::<Csr<B, T>>()
            .map(|same| LevelOp::Borrowed(same as &dyn LinearOperator<B, T>));
        Amg::build(
            "Amg::from_device",
            Source::Borrowed(a),
            fine,
            params,
            (start, 0.0, false),
        )
    }

    /// As [`with_operator`](Amg::with_operator), for a matrix already on the backend: the
    /// setup runs on `a` (f64, taken and freed once the hierarchy is built; e.g. from
    /// [`block_ell_to_csr`](crate::sparse::algebra::block_ell_to_csr)) and the finest level
    /// applies `fine`, the same matrix in `T` in any format. Nothing leaves the device. As
    /// with [`from_device`](Amg::from_device), the entries are not checked for NaN here.
    ///
    /// # Errors
    /// As [`with_operator`](Amg::with_operator).
    pub fn from_device_with_operator(
        a: Csr<B, f64>,
        fine: &'a dyn LinearOperator<B, T>,
        params: &AmgParams,
    ) -> Result<Self> {
        let op = "Amg::from_device_with_operator";
        check_len(op, "fine.nrows()", a.nrows(), fine.nrows())?;
        check_len(op, "fine.ncols()", a.ncols(), fine.ncols())?;
        a.backend().require::<T>("AMG")?;
        let start = Instant::now();
        Amg::build(
            op,
            Source::Owned(a),
            Some(LevelOp::Borrowed(fine)),
            params,
            (start, 0.0, false),
        )
    }

    /// The hierarchy's setup (`op`: the constructor called, for the errors) and its
    /// levels in `T`.
    fn build(
        op: &'static str,
        source: Source<'_, B>,
        mut fine: Option<LevelOp<'a, B, T>>,
        params: &AmgParams,
        (start, check, zero_free): (Instant, f64, bool),
    ) -> Result<Self> {
        let a = match &source {
            Source::Borrowed(a) => *a,
            Source::Owned(a) => a,
        };
        let backend = &a.backend().clone();
        backend.synchronize()?;
        let moved = start.elapsed().as_secs_f64() - check;
        let fine_rows = a.nrows();
        let hierarchy = setup::build_for(op, a, params, zero_free)?;
        let mut source = Some(source);
        let t = Instant::now();
        let mut levels = Vec::with_capacity(hierarchy.levels.len());
        let mut info_levels = hierarchy.info;
        let mut work = Vec::with_capacity(hierarchy.levels.len());
        let n = hierarchy.levels.len();
        for (l, h) in hierarchy.levels.into_iter().enumerate() {
            let (lmin, lmax, centre) = params.smoother.interval(h.rho);
            let mut scaling = h.scaling;
            scaling.scale(1.0 / centre)?;
            let transfer = match (h.p, h.r) {
                (Some(p), Some(r)) => Some((in_precision(p)?, in_precision(r)?)),
                _ => None,
            };
            let rows = h.a.as_ref().map_or(fine_rows, |m| m.nrows());
            let v = || Vector::<B, T>::zeros(backend, rows);
            work.push(Work {
                b: if l > 0 { Some(v()?) } else { None },
                x: if l > 0 { Some(v()?) } else { None },
                res: v()?,
                d: v()?,
                w: v()?,
            });
            let (op, format) = match h.a {
                Some(coarse) => coarse_operator(in_precision(coarse)?, params)?,
                None => match fine.take() {
                    Some(f) => (f, "operator"),
                    None => (
                        LevelOp::Owned(match source.take() {
                            Some(Source::Owned(m)) => in_precision(m)?,
                            Some(Source::Borrowed(m)) => {
                                crate::sparse::algebra::convert::<B, f64, T>(m)?
                            }
                            None => unreachable!("one finest level"),
                        }),
                        "csr",
                    ),
                },
            };
            info_levels[l].format = format;
            levels.push(Level {
                a: op,
                transfer,
                scaling: scaling.to_precision::<T>()?,
                lambda: (lmin, lmax),
            });
            debug_assert!(l + 1 < n || levels[l].transfer.is_none());
        }
        let coarse_inverse = hierarchy
            .coarse_inverse
            .as_ref()
            .map(|m| m.convert::<T>().to_backend(backend))
            .transpose()?;
        backend.synchronize()?;
        let mut phases = hierarchy.phases;
        phases.upload = t.elapsed().as_secs_f64();
        phases.check = check;
        phases.transfer += moved;
        let nnz0 = info_levels[0].nnz.max(1) as f64;
        let rows0 = info_levels[0].rows.max(1) as f64;
        let info = AmgInfo {
            operator_complexity: info_levels.iter().map(|l| l.nnz as f64).sum::<f64>() / nnz0,
            grid_complexity: info_levels.iter().map(|l| l.rows as f64).sum::<f64>() / rows0,
            levels: info_levels,
            setup_seconds: start.elapsed().as_secs_f64(),
            phases,
            coarse_solver: if coarse_inverse.is_some() {
                "dense"
            } else {
                "smoother"
            },
        };
        Ok(Amg {
            levels,
            coarse_inverse,
            smoother: params.smoother,
            cycle: params.cycle,
            info,
            work: RefCell::new(work),
            scratch: RefCell::new(None),
            times: RefCell::new(None),
        })
    }

    /// The setup report.
    pub fn info(&self) -> &AmgInfo {
        &self.info
    }
}
