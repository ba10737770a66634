//! Geometric multigrid for `Q_k` on Cartesian grids of `[0,1]^d` (seed 003): the V-cycle
//! with one pre- and one post-smoothing step by the colourised vertex-patch smoother
//! (or Chebyshev–Jacobi), matrix-free transfers, full multigrid ([`fmg`]), and the V-cycle
//! as a [`Preconditioner`] for CG and (F)GMRES — in f32 inside an f64 Krylov solve through
//! [`MixedPrecision`](crate::solver::MixedPrecision).
//!
//! # Levels
//! Level `l` has `2^l` cells per direction. The coarsest level is 1: its only interior
//! vertex has a patch that covers the whole domain, so one patch-smoothing step solves it
//! exactly (the seed's "one step of the smoother on level 0, where it is an exact solver";
//! a one-cell level has no interior vertex). Where no patch kernel fits the device's shared
//! memory, the Chebyshev variant solves level 1 by CG instead.
//!
//! # The patch step's two forms
//! Fused ([`PatchForm::Fused`]), one kernel a colour loads each patch's closure, applies the
//! local operator and solves. Split ([`PatchForm::Split`]), a colour is the level's operator
//! `A x` (the one-pass kernel) and then a kernel that reads `b − A x` on the patch interiors
//! and solves: the same iterates (the global residual at a patch's interior nodes is the
//! local one), a third of the shared memory (`(2k − 1)^d` values a patch against
//! `(2k + 1)^d + (2k − 1)(2k + 1)^{d−1}`), 2^d operator launches a step. The default
//! ([`PatchForm::Auto`]) takes the fused form wherever it fits (on wgpu's 48 KiB: to k = 6 in
//! f64, 3D) and the split one elsewhere (to k = 9 in f64, k = 10 in f32).

pub mod check;
mod fmg;
pub mod poisson;
mod seed;
mod smoother;
mod transfer;

use std::cell::RefCell;

use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::Scalar;
use crate::solver::params::{Progress, SolverParams};
use crate::solver::{pcg, Preconditioner, Stopping};
use crate::tensor::grid::Grid;
use crate::tensor::ops::{boundary, PatchData, TensorOps};
use crate::tensor::{Basis1d, OperatorKind, TensorOperator};
use crate::vector::Vector;

pub use crate::tensor::PatchForm;
pub use check::{TensorCheck, TensorStage};
pub use fmg::{fmg, interpolant, l2_error, l2_error_vector, level_rhs, FmgParams, FmgReport};
pub use poisson::{
    solve_poisson, solve_poisson_keeping, PoissonOptions, PoissonRhs, PoissonSolution,
    PoissonSolver,
};
#[doc(hidden)]
pub use seed::SeedCodeRun;
pub use smoother::SmootherKind;
use smoother::{patch_step, Smoother};
use transfer::Transfer;

/// The finest level the multigrid accepts (`2^20` cells per direction).
pub const MAX_LEVEL: usize = 20;

/// Parameters of [`Multigrid`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MultigridParams {
    /// The smoother.
    pub smoother: SmootherKind,
    /// Scatter of the cell operators: `Some(true)` atomics, `Some(false)` colours, `None`
    /// atomics where the backend has them.
    pub atomic: Option<bool>,
    /// Post-smoothing runs the patch colours in reverse order, which makes the V-cycle a
    /// symmetric operator (for CG). The default (`false`) is the seed's: the same smoother,
    /// colours in the same order, before and after the coarse-grid correction — it
    /// converged faster in every case measured (docs/benchmarks.md), but is not symmetric:
    /// use it with GMRES, FGMRES or flexible PCG.
    pub symmetric: bool,
    /// The form of the vertex-patch smoothing step: [`PatchForm::Auto`] (the default) takes
    /// the fused kernel where it fits the device's on-chip memory and the split one
    /// (the level's operator, then the local solves) where only that fits.
    pub patch_form: PatchForm,
}

/// One level: its operator and smoother.
struct Level<B: Backend + TensorOps, T: Scalar> {
    op: TensorOperator<B, T>,
    smoother: Smoother<B, T>,
}

/// The vectors of one level: iterate, right-hand side, residual, smoother scratch (three,
/// empty for the patch smoother) and transfer scratch (two, for the transfer into it).
struct Work<B: Backend + TensorOps, T: Scalar> {
    x: Vector<B, T>,
    b: Vector<B, T>,
    r: Vector<B, T>,
    s: [Vector<B, T>; 3],
    t: [Vector<B, T>; 2],
}

/// The geometric multigrid hierarchy of levels `1 ..= L` on one backend in precision `T`.
pub struct Multigrid<B: Backend + TensorOps, T: Scalar> {
    levels: Vec<Level<B, T>>,
    transfers: Vec<Transfer<B, T>>,
    /// `[M_p | A_p | S | λ]` of the reference patch, the same on every level, in the form
    /// resolved for the device; `None` where no patch kernel fits the device (then, with
    /// the Chebyshev smoother, level 1 is solved by CG).
    patch: Option<PatchData<B, T>>,
    symmetric: bool,
    work: RefCell<Vec<Work<B, T>>>,
}

/// Bytes of device memory a hierarchy up to `finest` holds in `T` (operators' data
/// are negligible): per level `x, b, r`, one more vector of transfer scratch, three of
/// smoother scratch for Chebyshev.
pub fn memory_bytes(finest: Grid, smoother: SmootherKind, value_bytes: usize) -> u64 {
    let per = 4 + if smoother == SmootherKind::Chebyshev {
        4
    } else {
        0
    };
    let mut total = 0u64;
    let mut cells = finest.cells;
    while cells >= 2 {
        total += (per * Grid { cells, ..finest }.len() * value_bytes) as u64;
        cells /= 2;
    }
    total
}

impl<B: Backend + TensorOps, T: Scalar> Multigrid<B, T> {
    /// The hierarchy for the Laplacian of `Q_degree` on `[0,1]^dim`, levels `1 ..= levels`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a dimension other than 2 or 3, a degree outside
    /// `1..=10`, or `levels` outside `1..=MAX_LEVEL`; [`Error::Unsupported`] if the patch
    /// smoother's kernel does not fit the device's shared memory (with the bytes it needs)
    /// or atomics are asked for where the backend has none; device errors (out of memory).
    pub fn new(
        backend: &B,
        dim: usize,
        degree: usize,
        levels: usize,
        params: MultigridParams,
    ) -> Result<Self> {
        if !(1..=MAX_LEVEL).contains(&levels) {
            return Err(Error::InvalidArgument {
                op: "Multigrid::new",
                name: "levels",
                reason: format!("the finest level must be in 1..={MAX_LEVEL}, got {levels}"),
            });
        }
        let grid = |l: usize| Grid {
            dim,
            degree,
            cells: 1 << l,
        };
        crate::tensor::ops::check_grid("Multigrid::new", grid(levels))?;
        let basis = Basis1d::new(degree)?;
        let mut out = Multigrid {
            levels: Vec::new(),
            transfers: Vec::new(),
            // The coarse solve uses the patch data wherever it fits, whatever the smoother.
            patch: match (
                params.smoother,
                PatchData::new(backend, dim, &basis, params.patch_form),
            ) {
                (SmootherKind::Patch, data) => Some(data?),
                (_, Ok(data)) => Some(data),
                (_, Err(Error::Unsupported { .. })) => None,
                (_, Err(e)) => return Err(e),
            },
            symmetric: params.symmetric,
            work: RefCell::new(Vec::new()),
        };
        let mut work = Vec::new();
        for l in 1..=levels {
            let g = grid(l);
            let mut op = TensorOperator::<B, T>::new(backend, g, OperatorKind::Laplace)?;
            if let Some(atomic) = params.atomic {
                op = op.with_scatter(atomic)?;
            }
            let smoother = Smoother::new(backend, params.smoother, &op)?;
            let scratch = if params.smoother == SmootherKind::Chebyshev {
                g.len()
            } else {
                0
            };
            let tlen = if l > 1 {
                let t = Transfer::new(backend, grid(l - 1), &basis)?;
                let len = t.scratch_len();
                out.transfers.push(t);
                len
            } else {
                0
            };
            let v = |len| Vector::<B, T>::zeros(backend, len);
            work.push(Work {
                x: v(g.len())?,
                b: v(g.len())?,
                r: v(g.len())?,
                s: [v(scratch)?, v(scratch)?, v(scratch)?],
                t: [v(tlen)?, v(tlen)?],
            });
            out.levels.push(Level { op, smoother });
        }
        out.work = RefCell::new(work);
        Ok(out)
    }

    /// The finest grid.
    pub fn grid(&self) -> Grid {
        self.finest().grid()
    }

    /// The grid of level `l` (`1 ..= L`).
    pub fn level_grid(&self, l: usize) -> Option<Grid> {
        self.levels.get(l.checked_sub(1)?).map(|lv| lv.op.grid())
    }

    /// The finest level's operator.
    pub fn finest(&self) -> &TensorOperator<B, T> {
        &self.levels[self.levels.len() - 1].op
    }

    /// The number of levels.
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// The form the patch-smoothing steps take here, [`PatchForm::Fused`] or
    /// [`PatchForm::Split`] ([`MultigridParams::patch_form`] resolved for the device); `None`
    /// where no patch kernel fits (the Chebyshev smoother, level 1 solved by CG).
    pub fn patch_form(&self) -> Option<PatchForm> {
        self.patch.as_ref().map(|p| {
            if p.split() {
                PatchForm::Split
            } else {
                PatchForm::Fused
            }
        })
    }

    /// Solves level 1 (index 0) for `w.x` from `w.b`.
    fn coarse_solve(&self, w: &mut Work<B, T>) -> Result<()> {
        let a = &self.levels[0].op;
        w.x.fill(T::ZERO)?;
        match &self.patch {
            Some(data) => patch_step(a, data, &mut w.x, &w.b, false, &mut w.r),
            None => {
                let params = SolverParams {
                    stop: Stopping::new(100.0 * T::EPS, 10 * a.nrows()),
                    progress: Progress::Never,
                    stagnation_window: 0,
                    ..Default::default()
                };
                pcg(a, None, &w.b, &mut w.x, &params).map(|_| ())
            }
        }
    }

    /// One V-cycle on level index `l` from the iterate in `work[l].x` for `work[l].b`.
    fn vcycle(&self, l: usize, work: &mut [Work<B, T>]) -> Result<()> {
        if l == 0 {
            return self.coarse_solve(&mut work[0]);
        }
        let (lower, upper) = work.split_at_mut(l);
        let (w, wc) = (&mut upper[0], &mut lower[l - 1]);
        let level = &self.levels[l];
        let a = &level.op;
        level.smoother.smooth(
            a,
            self.patch.as_ref(),
            &mut w.x,
            &w.b,
            false,
            &mut w.s,
            &mut w.r,
        )?;
        a.apply(&w.x, &mut w.r)?;
        w.r.axpby(T::ONE, &w.b, -T::ONE)?;
        let transfer = &self.transfers[l - 1];
        transfer.restrict(&w.r, &mut wc.b, &mut w.t)?;
        boundary(self.levels[l - 1].op.grid(), None, &mut wc.b)?;
        wc.x.fill(T::ZERO)?;
        self.vcycle(l - 1, work)?;
        let (lower, upper) = work.split_at_mut(l);
        let (w, wc) = (&mut upper[0], &mut lower[l - 1]);
        transfer.prolongate(&wc.x, &mut w.r, &mut w.t)?;
        w.x.axpy(T::ONE, &w.r)?;
        level.smoother.smooth(
            a,
            self.patch.as_ref(),
            &mut w.x,
            &w.b,
            self.symmetric,
            &mut w.s,
            &mut w.r,
        )
    }

    /// One V-cycle on the finest level: `x ← V(x, b)`.
    ///
    /// # Errors
    /// Size mismatches; device errors.
    pub fn cycle(&self, x: &mut Vector<B, T>, b: &Vector<B, T>) -> Result<()> {
        let n = self.grid().len();
        crate::error::check_len("Multigrid::cycle", "x", n, x.len())?;
        crate::error::check_len("Multigrid::cycle", "b", n, b.len())?;
        let mut work = self.work.borrow_mut();
        let top = work.len() - 1;
        work[top].x.copy_from(x)?;
        work[top].b.copy_from(b)?;
        self.vcycle(top, &mut work)?;
        x.copy_from(&work[top].x)
    }

    /// One (forward) smoothing step on the finest level: `x ← S(x, b)`.
    ///
    /// # Errors
    /// Size mismatches; device errors.
    pub fn smooth_once(&self, x: &mut Vector<B, T>, b: &Vector<B, T>) -> Result<()> {
        let n = self.grid().len();
        crate::error::check_len("Multigrid::smooth_once", "x", n, x.len())?;
        crate::error::check_len("Multigrid::smooth_once", "b", n, b.len())?;
        let mut work = self.work.borrow_mut();
        let top = work.len() - 1;
        let level = &self.levels[top];
        let w = &mut work[top];
        level.smoother.smooth(
            &level.op,
            self.patch.as_ref(),
            x,
            b,
            false,
            &mut w.s,
            &mut w.r,
        )
    }

    /// The transfer into level `fine` (`2 ..= L`).
    fn transfer(&self, op: &'static str, fine: usize) -> Result<&Transfer<B, T>> {
        fine.checked_sub(2)
            .and_then(|i| self.transfers.get(i))
            .ok_or_else(|| Error::InvalidArgument {
                op,
                name: "fine",
                reason: format!(
                    "the fine level must be in 2..={}, got {fine}",
                    self.levels.len()
                ),
            })
    }

    /// `fine_x = P coarse_x` from level `fine − 1` to level `fine`.
    ///
    /// # Errors
    /// A level out of range; size mismatches; device errors.
    pub fn prolongate(
        &self,
        fine: usize,
        coarse_x: &Vector<B, T>,
        fine_x: &mut Vector<B, T>,
    ) -> Result<()> {
        let t = self.transfer("Multigrid::prolongate", fine)?;
        crate::error::check_len(
            "Multigrid::prolongate",
            "coarse",
            t.coarse.len(),
            coarse_x.len(),
        )?;
        crate::error::check_len("Multigrid::prolongate", "fine", t.fine.len(), fine_x.len())?;
        let mut work = self.work.borrow_mut();
        t.prolongate(coarse_x, fine_x, &mut work[fine - 1].t)
    }

    /// `coarse_x = Pᵀ fine_x` from level `fine` to level `fine − 1` (boundary rows
    /// included).
    ///
    /// # Errors
    /// As [`prolongate`](Self::prolongate).
    pub fn restrict(
        &self,
        fine: usize,
        fine_x: &Vector<B, T>,
        coarse_x: &mut Vector<B, T>,
    ) -> Result<()> {
        let t = self.transfer("Multigrid::restrict", fine)?;
        crate::error::check_len(
            "Multigrid::restrict",
            "coarse",
            t.coarse.len(),
            coarse_x.len(),
        )?;
        crate::error::check_len("Multigrid::restrict", "fine", t.fine.len(), fine_x.len())?;
        let mut work = self.work.borrow_mut();
        t.restrict(fine_x, coarse_x, &mut work[fine - 1].t)
    }

    /// The full-multigrid pass: level 1 solved, then on every finer level the
    /// interpolated solution improved by one V-cycle; `rhs[l − 1]` is level `l`'s
    /// right-hand side. Leaves the finest iterate in `x`.
    ///
    /// # Errors
    /// Size mismatches; device errors.
    pub fn fmg_pass(&self, rhs: &[Vector<B, T>], x: &mut Vector<B, T>) -> Result<()> {
        crate::error::check_len("Multigrid::fmg_pass", "rhs", self.levels.len(), rhs.len())?;
        for (l, r) in rhs.iter().enumerate() {
            crate::error::check_len(
                "Multigrid::fmg_pass",
                "rhs[l]",
                self.levels[l].op.nrows(),
                r.len(),
            )?;
        }
        let mut work = self.work.borrow_mut();
        work[0].b.copy_from(&rhs[0])?;
        self.coarse_solve(&mut work[0])?;
        for l in 1..self.levels.len() {
            let (lower, upper) = work.split_at_mut(l);
            let (w, wc) = (&mut upper[0], &lower[l - 1]);
            self.transfers[l - 1].prolongate(&wc.x, &mut w.x, &mut w.t)?;
            w.b.copy_from(&rhs[l])?;
            self.vcycle(l, &mut work)?;
        }
        let top = work.len() - 1;
        x.copy_from(&work[top].x)
    }
}

impl<B: Backend + TensorOps, T: Scalar> Preconditioner<B, T> for Multigrid<B, T> {
    fn size(&self) -> usize {
        self.grid().len()
    }

    /// `z = V(0, r)` on the interior; `z = r` on boundary nodes (the operator's identity
    /// rows there).
    fn precondition(&self, r: &Vector<B, T>, z: &mut Vector<B, T>) -> Result<()> {
        z.fill(T::ZERO)?;
        self.cycle(z, r)?;
        boundary(self.grid(), Some(r), z)
    }

    fn cost(&self) -> OperatorCost {
        let c = self.finest().cost();
        OperatorCost {
            flops: 4.0 * c.flops,
            bytes: 8.0 * c.bytes,
        }
    }
}
