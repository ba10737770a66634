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
//! `T` on the backend.
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
use crate::error::{check_len, Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::Scalar;
use crate::solver::precond::Preconditioner;
use crate::sparse::csr::Csr;
use crate::vector::Vector;

mod setup;
#[cfg(test)]
mod tests;

/// The smoother of every level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmgSmoother {
    /// Chebyshev polynomial of the Jacobi-scaled operator, of this degree (SpMVs per
    /// smoothing step), on `[1.1 ρ/30, 1.1 ρ]` with `ρ` the Lanczos estimate of `λmax(D⁻¹A)`.
    ///
    /// The default degree 3 is the cheapest per solve on Poisson, FVM and HDG trace systems;
    /// degree 4 takes 8–27% fewer iterations on stiff structural and shell matrices
    /// (bcsstk09/10/13, Cylshell: 34 / 61 / 200 / 124 against degree 3's 37 / 76 / 273 / 148
    /// and PyAMG's 34 / 69 / 295 / 150) at a little more work per solve elsewhere.
    Chebyshev {
        /// Degree, at least 1.
        degree: usize,
    },
    /// The fourth-kind Chebyshev polynomial of the Jacobi-scaled operator (Lottes, "Optimal
    /// polynomial smoothers for multigrid V-cycles", 2023), of this degree (SpMVs per
    /// smoothing step), on `[0, 1.1 ρ]`: no lower end of the interval to choose, and an error
    /// reduction of the high frequencies that improves with the degree as `1/(2 degree + 1)`
    /// rather than levelling off. The same cost per step as [`Chebyshev`](Self::Chebyshev).
    ChebyshevFourthKind {
        /// Degree, at least 1.
        degree: usize,
    },
    /// l1-Jacobi sweeps: `x += D₁⁻¹ (b − A x)` with `(D₁)ᵢᵢ = Σⱼ |aᵢⱼ|` (convergent for any
    /// SPD matrix, no spectral estimate).
    L1Jacobi {
        /// Sweeps per smoothing step, at least 1.
        sweeps: usize,
    },
}

impl AmgSmoother {
    /// The Chebyshev interval `(λmin, λmax)` for the estimate `rho` of `λmax(D⁻¹A)`, and the
    /// centre the scaling `D⁻¹` is divided by (the fourth kind: `3λmax/4`, so that the first
    /// update is `4/(3λmax) D⁻¹ r`; l1-Jacobi: unused, and 1).
    pub(crate) fn interval(self, rho: f64) -> (f64, f64, f64) {
        match self {
            AmgSmoother::Chebyshev { .. } => {
                let (lmin, lmax) = (1.1 * rho / 30.0, 1.1 * rho);
                (lmin, lmax, 0.5 * (lmin + lmax))
            }
            AmgSmoother::ChebyshevFourthKind { .. } => {
                let lmax = 1.1 * rho;
                (0.0, lmax, 0.75 * lmax)
            }
            AmgSmoother::L1Jacobi { .. } => (1.0, 1.0, 1.0),
        }
    }
}

/// The shape of the cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmgCycle {
    /// One coarse correction per level.
    V,
    /// Two coarse corrections per level.
    W,
}

/// Parameters of [`Amg`].
#[derive(Clone, Debug, PartialEq)]
pub struct AmgParams {
    /// Strength threshold `θ ∈ [0, 1]`: `aᵢⱼ` is a connection when
    /// `|aᵢⱼ| ≥ θ √(aᵢᵢ aⱼⱼ)` (default 0: every stored nonzero, as PyAMG).
    pub theta: f64,
    /// Smoother (default Chebyshev of degree 3: within 1.5x of PyAMG's iterations, with
    /// its symmetric Gauss–Seidel, on the shared SPD matrices; degree 2 took up to 2x).
    pub smoother: AmgSmoother,
    /// Cycle (default V).
    pub cycle: AmgCycle,
    /// Most levels (default 25).
    pub max_levels: usize,
    /// Coarsen until at most this many rows (default 500); the coarsest operator is
    /// inverted densely up to 2000 rows and smoothed otherwise.
    pub max_coarse: usize,
    /// The near-null space (default: the constants).
    pub near_null: NearNull,
    /// Smoothing steps applied to each near-null vector on the finest level before the
    /// tentative prolongator is built (`A x = 0` relaxed from the vector by the level's
    /// smoother, as PyAMG's `improve_candidates`), so that the vectors follow the matrix's
    /// boundary conditions; 0 uses the vectors as given. Default 2: on the structural and
    /// shell matrices it took the iterations from 1.6x PyAMG's to within 1.1x (bcsstk09 54 →
    /// 37, bcsstk10 109 → 76), and on Poisson and FVM it changed them by one at most. With a
    /// [`NearNull::Strided`] space set 0: smoothing fills the vector's zero rows, which on
    /// the HDG trace system doubled the first coarse level at the same iteration count.
    pub improve_candidates: usize,
}

/// The near-null space of [`AmgParams`]: the vectors the tentative prolongator reproduces
/// exactly (those the matrix nearly annihilates).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum NearNull {
    /// The constant vector (scalar Laplacians, diffusion, FVM), made on the backend.
    #[default]
    Constants,
    /// One vector, 1 on every `n`-th row from row 0 and 0 elsewhere, made on the backend:
    /// the constant mode of a modal basis of `n` functions per block of rows (the HDG trace
    /// system, `n = P + 1`). Use it with [`AmgParams::improve_candidates`] 0.
    Strided(usize),
    /// These vectors, each of the matrix's size (e.g. the rigid-body modes of elasticity),
    /// moved to the backend.
    Vectors(Vec<Vec<f64>>),
}

impl From<Vec<Vec<f64>>> for NearNull {
    /// [`NearNull::Vectors`], or [`NearNull::Constants`] for no vectors (what an empty list
    /// meant before `NearNull`).
    fn from(vectors: Vec<Vec<f64>>) -> Self {
        if vectors.is_empty() {
            NearNull::Constants
        } else {
            NearNull::Vectors(vectors)
        }
    }
}

impl Default for AmgParams {
    fn default() -> Self {
        AmgParams {
            theta: 0.0,
            smoother: AmgSmoother::Chebyshev { degree: 3 },
            cycle: AmgCycle::V,
            max_levels: 25,
            max_coarse: 500,
            near_null: NearNull::Constants,
            improve_candidates: 2,
        }
    }
}

impl AmgParams {
    fn check(&self, n: usize) -> Result<()> {
        let bad = |name, reason: String| Err(Error::invalid("Amg::new", name, reason));
        if !(0.0..=1.0).contains(&self.theta) {
            return bad("theta", format!("{} is outside [0, 1]", self.theta));
        }
        match self.smoother {
            AmgSmoother::Chebyshev { degree: 0 }
            | AmgSmoother::ChebyshevFourthKind { degree: 0 } => {
                return bad("smoother", "Chebyshev degree 0: must be at least 1".into())
            }
            AmgSmoother::L1Jacobi { sweeps: 0 } => {
                return bad(
                    "smoother",
                    "l1-Jacobi with 0 sweeps: must be at least 1".into(),
                )
            }
            _ => {}
        }
        if self.max_levels == 0 {
            return bad("max_levels", "0: must be at least 1".into());
        }
        if self.max_coarse == 0 {
            return bad("max_coarse", "0: must be at least 1".into());
        }
        match &self.near_null {
            NearNull::Constants => {}
            NearNull::Strided(0) => {
                return bad("near_null", "a stride of 0: must be at least 1".into())
            }
            NearNull::Strided(stride) if n > 1 && *stride >= n => {
                return bad(
                    "near_null",
                    format!(
                        "a stride of {stride} for {n} rows gives one unit vector, not a \
                         near-null space"
                    ),
                )
            }
            NearNull::Strided(_) => {}
            NearNull::Vectors(vectors) => {
                if vectors.is_empty() {
                    return bad(
                        "near_null",
                        "no vectors: give at least one (or Constants)".into(),
                    );
                }
                for (c, v) in vectors.iter().enumerate() {
                    check_len("Amg::new", "near_null vector", n, v.len())?;
                    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                        return bad("near_null", format!("vector {c} has {} at row {i}", v[i]));
                    }
                }
                if vectors.iter().all(|v| v.iter().all(|&x| x == 0.0)) {
                    return bad("near_null", "every vector is zero".into());
                }
            }
        }
        Ok(())
    }
}

/// Rows and stored nonzeros of one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmgLevelInfo {
    /// Rows (unknowns) of the level's operator.
    pub rows: usize,
    /// Stored nonzeros of the level's operator.
    pub nnz: usize,
}

/// Seconds of each setup phase, summed over the levels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AmgPhases {
    /// Checks of a host matrix (square, finite) before its move.
    pub check: f64,
    /// Moving a host matrix and the near-null space to the backend.
    pub transfer: f64,
    /// Checks and Lanczos spectral estimates.
    pub spectral: f64,
    /// Strength of connection.
    pub strength: f64,
    /// MIS-2 aggregation.
    pub aggregation: f64,
    /// Tentative prolongators (QR per aggregate), and the near-null vectors' improvement
    /// ([`AmgParams::improve_candidates`]).
    pub tentative: f64,
    /// Prolongator smoothing (`A T`) and transposes.
    pub prolongator: f64,
    /// Galerkin products `Pᵀ (A P)`.
    pub galerkin: f64,
    /// The coarse solver (dense inverse).
    pub coarse: f64,
    /// The levels converted to `T` (f64: moved as they are), the work vectors allocated and
    /// the coarse inverse moved to the backend.
    pub upload: f64,
}

/// Seconds one level spent in the cycles of [`Amg::profile`], each operation timed
/// between two synchronisations of the backend (so the sums exceed an unprofiled cycle by
/// the launch gaps the synchronisations expose).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AmgLevelTimes {
    /// Pre- and post-smoothing.
    pub smooth: f64,
    /// The residual before the restriction.
    pub residual: f64,
    /// `R r` (to the next level).
    pub restrict: f64,
    /// `x += P x_c` (from the next level).
    pub prolong: f64,
    /// The coarsest level's solve.
    pub coarse: f64,
}

impl AmgLevelTimes {
    /// The level's total.
    pub fn total(&self) -> f64 {
        self.smooth + self.residual + self.restrict + self.prolong + self.coarse
    }
}

/// What the setup built: the levels, the complexities and the time spent.
#[derive(Clone, Debug, PartialEq)]
pub struct AmgInfo {
    /// Every level, finest first.
    pub levels: Vec<AmgLevelInfo>,
    /// `Σ nnz(A_l) / nnz(A_0)`: the cycle's work and the hierarchy's memory relative to the
    /// matrix.
    pub operator_complexity: f64,
    /// `Σ rows(A_l) / rows(A_0)`.
    pub grid_complexity: f64,
    /// Whole setup, seconds.
    pub setup_seconds: f64,
    /// Seconds per phase.
    pub phases: AmgPhases,
    /// `"dense"` (inverse of the coarsest operator) or `"smoother"` (a matrix that stopped
    /// coarsening above the dense limit).
    pub coarse_solver: &'static str,
}

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
/// [`precondition`](Preconditioner::precondition), symmetric (the same smoothing before and
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

impl<B: Backend, T: Scalar> Amg<'static, B, T> {
    /// Sets up the hierarchy of `a` (host, f64 values) on `backend` — the matrix is moved
    /// there once and the whole setup runs there — with the cycle in `T`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad parameters, a matrix that is not square, a row
    /// whose diagonal is not positive or that is empty (named), a coarse operator that shows
    /// the matrix is not positive definite; [`Error::InvalidMatrix`] for NaN or infinity
    /// (the entry named); [`Error::ResourceLimit`] when a level does not fit in memory;
    /// device errors.
    pub fn new(backend: &B, a: &Csr<Cpu, f64>, params: &AmgParams) -> Result<Self> {
        let start = Instant::now();
        setup::check_host(a)?;
        backend.require::<T>("AMG")?;
        let check = start.elapsed().as_secs_f64();
        match (a as &dyn std::any::Any).downcast_ref::<Csr<B, f64>>() {
            Some(same) => Amg::build(Source::Borrowed(same), None, params, (start, check)),
            None => Amg::build(
                Source::Owned(a.to_backend(backend)?),
                None,
                params,
                (start, check),
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
    /// As [`new`](Amg::new), and [`Error::DimensionMismatch`] when `fine` is not
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
        setup::check_host(a)?;
        backend.require::<T>("AMG")?;
        let check = start.elapsed().as_secs_f64();
        match (a as &dyn std::any::Any).downcast_ref::<Csr<B, f64>>() {
            Some(same) => Amg::build(Source::Borrowed(same), Some(fine), params, (start, check)),
            None => Amg::build(
                Source::Owned(a.to_backend(backend)?),
                Some(fine),
                params,
                (start, check),
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
        Amg::build(Source::Borrowed(a), fine, params, (start, 0.0))
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
            Source::Owned(a),
            Some(LevelOp::Borrowed(fine)),
            params,
            (start, 0.0),
        )
    }

    fn build(
        source: Source<'_, B>,
        mut fine: Option<LevelOp<'a, B, T>>,
        params: &AmgParams,
        (start, check): (Instant, f64),
    ) -> Result<Self> {
        let a = match &source {
            Source::Borrowed(a) => *a,
            Source::Owned(a) => a,
        };
        let backend = &a.backend().clone();
        backend.synchronize()?;
        let moved = start.elapsed().as_secs_f64() - check;
        let fine_rows = a.nrows();
        let hierarchy = setup::build(a, params)?;
        let mut source = Some(source);
        let t = Instant::now();
        let mut levels = Vec::with_capacity(hierarchy.levels.len());
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
            let op = match h.a {
                Some(coarse) => LevelOp::Owned(in_precision(coarse)?),
                None => match fine.take() {
                    Some(f) => f,
                    None => LevelOp::Owned(match source.take() {
                        Some(Source::Owned(m)) => in_precision(m)?,
                        Some(Source::Borrowed(m)) => {
                            crate::sparse::algebra::convert::<B, f64, T>(m)?
                        }
                        None => unreachable!("one finest level"),
                    }),
                },
            };
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
        let info_levels = hierarchy.info;
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

    /// Seconds per level and operation of `cycles` cycles applied to `r` (each operation
    /// timed between synchronisations of the backend): where a cycle's time goes.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if `r` does not have
    /// [`size`](Preconditioner::size) entries; device errors.
    pub fn profile(&self, r: &Vector<B, T>, cycles: usize) -> Result<Vec<AmgLevelTimes>> {
        let mut z = Vector::zeros(r.backend(), self.size())?;
        *self.times.borrow_mut() = Some(vec![AmgLevelTimes::default(); self.levels.len()]);
        let run = (|| {
            for _ in 0..cycles {
                self.precondition(r, &mut z)?;
            }
            Ok(())
        })();
        let times = self.times.borrow_mut().take().unwrap_or_default();
        run.map(|()| times)
    }

    /// Runs `f`; while profiling, adds its seconds (between synchronisations) to the
    /// entry `pick` of level `l`.
    fn timed(
        &self,
        l: usize,
        pick: fn(&mut AmgLevelTimes) -> &mut f64,
        f: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        if self.times.borrow().is_none() {
            return f();
        }
        let backend = self.levels[l].scaling.backend();
        backend.synchronize()?;
        let t = Instant::now();
        f()?;
        backend.synchronize()?;
        if let Some(times) = self.times.borrow_mut().as_mut() {
            *pick(&mut times[l]) += t.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// `res = b − A_l x`.
    fn residual(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &Vector<B, T>,
        res: &mut Vector<B, T>,
    ) -> Result<()> {
        self.levels[l].a.get().residual(b, x, res, None)
    }

    /// Smoothing of `A x = b` on level `l`: from `x = 0` when `zero`, else from `x`.
    fn smooth(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &mut Vector<B, T>,
        zero: bool,
        w: &mut Work<B, T>,
    ) -> Result<()> {
        let level = &self.levels[l];
        let a = level.a.get();
        match self.smoother {
            AmgSmoother::Chebyshev { degree } | AmgSmoother::ChebyshevFourthKind { degree } => {
                let fourth = matches!(self.smoother, AmgSmoother::ChebyshevFourthKind { .. });
                let (lmin, lmax) = level.lambda;
                let (theta, delta) = (0.5 * (lmax + lmin), 0.5 * (lmax - lmin));
                let sigma = theta / delta;
                let mut rho = 1.0 / sigma;
                // The first update `d` = scaling ∘ res: the scaling holds D⁻¹/θ (first kind)
                // or 4/(3λmax) D⁻¹ (fourth kind). From a nonzero x, `x += d` is left to the
                // first step (γ = 1): the residual pass reads x.
                let mut pending = if zero {
                    w.res.copy_from(b)?;
                    x.pointwise_mul(&level.scaling, b)?;
                    w.d.copy_from(x)?;
                    false
                } else {
                    a.residual(b, x, &mut w.res, Some((&level.scaling, &mut w.d)))?;
                    true
                };
                for i in 1..degree {
                    // res −= A d; w = α scaling ∘ res + β d; x += w (+ d pending). First
                    // kind: α = 2ρ'θ/δ, β = ρ'ρ; fourth kind: `fourth_kind(i)`.
                    let (alpha, beta) = if fourth {
                        fourth_kind(i)
                    } else {
                        let rho_new = 1.0 / (2.0 * sigma - rho);
                        let step = (2.0 * rho_new * theta / delta, rho_new * rho);
                        rho = rho_new;
                        step
                    };
                    a.smoothing_step(
                        &w.d,
                        &mut w.res,
                        &level.scaling,
                        &mut w.w,
                        x,
                        [
                            T::from_f64(alpha),
                            T::from_f64(beta),
                            if pending { T::ONE } else { T::ZERO },
                        ],
                    )?;
                    std::mem::swap(&mut w.d, &mut w.w);
                    pending = false;
                }
                if pending {
                    x.axpy(T::ONE, &w.d)?;
                }
            }
            AmgSmoother::L1Jacobi { sweeps } => {
                for s in 0..sweeps {
                    if zero && s == 0 {
                        x.pointwise_mul(&level.scaling, b)?;
                    } else {
                        a.residual(b, x, &mut w.res, Some((&level.scaling, &mut w.d)))?;
                        x.axpy(T::ONE, &w.d)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// One cycle for `A_l x = b` from `x = 0` (`zero`) or from `x`; `work` from level `l`.
    fn cycle(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &mut Vector<B, T>,
        zero: bool,
        work: &mut [Work<B, T>],
    ) -> Result<()> {
        let (w, rest) = work.split_first_mut().expect("one work entry per level");
        let level = &self.levels[l];
        let Some((p, r)) = &level.transfer else {
            return self.timed(l, |t| &mut t.coarse, || self.coarse_solve(l, b, x, zero, w));
        };
        self.timed(l, |t| &mut t.smooth, || self.smooth(l, b, x, zero, w))?;
        self.timed(
            l,
            |t| &mut t.residual,
            || self.residual(l, b, x, &mut w.res),
        )?;
        let next = &mut rest[0];
        let (mut cb, mut cx) = (
            next.b.take().expect("coarse b"),
            next.x.take().expect("coarse x"),
        );
        let result = (|| {
            self.timed(l, |t| &mut t.restrict, || r.apply(&w.res, &mut cb))?;
            let repeats = match self.cycle {
                AmgCycle::W if l + 2 < self.levels.len() => 2,
                _ => 1,
            };
            for k in 0..repeats {
                self.cycle(l + 1, &cb, &mut cx, k == 0, rest)?;
            }
            self.timed(
                l,
                |t| &mut t.prolong,
                || p.apply_add(T::ONE, &cx, T::ONE, x),
            )
        })();
        rest[0].b = Some(cb);
        rest[0].x = Some(cx);
        result?;
        self.timed(l, |t| &mut t.smooth, || self.smooth(l, b, x, false, w))
    }

    /// The coarsest level: `x = A⁻¹ b` (dense), or two smoothing steps.
    fn coarse_solve(
        &self,
        l: usize,
        b: &Vector<B, T>,
        x: &mut Vector<B, T>,
        zero: bool,
        w: &mut Work<B, T>,
    ) -> Result<()> {
        match &self.coarse_inverse {
            Some(inv) if zero => inv.apply(b, x),
            Some(inv) => {
                self.residual(l, b, x, &mut w.res)?;
                inv.apply_add(T::ONE, &w.res, T::ONE, x)
            }
            None => {
                self.smooth(l, b, x, zero, w)?;
                self.smooth(l, b, x, false, w)
            }
        }
    }
}

impl<B: Backend, T: Scalar> Preconditioner<B, T> for Amg<'_, B, T> {
    fn size(&self) -> usize {
        self.levels[0].a.get().nrows()
    }
    fn precondition(&self, r: &Vector<B, T>, z: &mut Vector<B, T>) -> Result<()> {
        let n = self.size();
        check_len("Amg::precondition", "r", n, r.len())?;
        check_len("Amg::precondition", "z", n, z.len())?;
        let mut work = self.work.borrow_mut();
        self.cycle(0, r, z, true, &mut work)
    }
    fn cost(&self) -> OperatorCost {
        let sweeps = match self.smoother {
            AmgSmoother::Chebyshev { degree } | AmgSmoother::ChebyshevFourthKind { degree } => {
                degree
            }
            AmgSmoother::L1Jacobi { sweeps } => sweeps,
        } as f64;
        let mut total = OperatorCost::default();
        let mut visits = 1.0;
        for level in &self.levels {
            let c = level.a.get().cost();
            let mut add = |k: f64, c: OperatorCost| {
                total.flops += visits * k * c.flops;
                total.bytes += visits * k * c.bytes;
            };
            match &level.transfer {
                Some((p, r)) => {
                    add(2.0 * sweeps + 1.0, c);
                    add(1.0, LinearOperator::<B, T>::cost(p));
                    add(1.0, LinearOperator::<B, T>::cost(r));
                }
                None => match &self.coarse_inverse {
                    Some(inv) => add(1.0, LinearOperator::<B, T>::cost(inv)),
                    None => add(2.0 * sweeps, c),
                },
            }
            if self.cycle == AmgCycle::W {
                visits *= 2.0;
            }
        }
        total
    }
}

/// The cycle as an operator: `y = α M⁻¹ x + β y`.
impl<B: Backend, T: Scalar> LinearOperator<B, T> for Amg<'_, B, T> {
    fn nrows(&self) -> usize {
        self.size()
    }
    fn ncols(&self) -> usize {
        self.size()
    }
    fn apply_add(&self, alpha: T, x: &Vector<B, T>, beta: T, y: &mut Vector<B, T>) -> Result<()> {
        check_len("Amg::apply_add", "y", self.size(), y.len())?;
        if beta == T::ZERO && alpha == T::ONE {
            return self.precondition(x, y);
        }
        let mut scratch = self.scratch.borrow_mut();
        if scratch.is_none() {
            *scratch = Some(Vector::zeros(y.backend(), y.len())?);
        }
        let z = scratch.as_mut().expect("allocated above");
        self.precondition(x, z)?;
        y.axpby(alpha, z, beta)
    }
    fn cost(&self) -> OperatorCost {
        Preconditioner::cost(self)
    }
}

/// Step `i ≥ 1` of the fourth-kind Chebyshev smoother, as the coefficients `(α, β)` of
/// `d = α s ∘ r + β d` with the scaling `s = 4/(3λmax) D⁻¹`: `β = (2i−1)/(2i+3)` and
/// `α = (8i+4)/(2i+3) · 3/4`.
pub(crate) fn fourth_kind(i: usize) -> (f64, f64) {
    let i = i as f64;
    (
        3.0 * (2.0 * i + 1.0) / (2.0 * i + 3.0),
        (2.0 * i - 1.0) / (2.0 * i + 3.0),
    )
}
