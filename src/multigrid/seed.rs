//! Seed 003's code, reproduced for its Tables 1 and 2 (issue 43): the full multigrid as the
//! seed's public code runs it (`GPUTensorProductSmoothers`, `include/solver.cuh`,
//! `cuda_mg_transfer.template.cuh`, `laplace_operator.cuh`), which differs from its paper
//! (and from [`fmg`](super::fmg)) in four ways; `docs/history/seed-003-conventions.md` (E3)
//! gives the file and line of each:
//!
//! 1. **The load** is `b = 1` at every node of the finest level, boundary nodes included;
//!    the coarse levels' right-hand sides are `Pᵀ b` with the boundary set to zero.
//! 2. **The V-cycle adds the residual**: after the coarse correction, `x ← x + r + P e_c`
//!    (the residual `r = b − A x` added as one undamped Richardson step), on every level but
//!    the coarsest.
//! 3. **The operator and the smoother read the boundary values of `x`** (they never write
//!    them): the operator is `[[A_II, A_IB], [0, I]]`. The boundary of `x` is zero on every
//!    level until the finest level's first V-cycle sets it to `b_B = 1` (through 2.); from
//!    then on the interior rows see `A_IB 1_B = −A_II 1_I`.
//! 4. **The count** is of V-cycles `x ← V(x, b)` after the FMG pass until
//!    `‖b − A x‖ < 10⁻⁹ ‖b‖`, both norms over every node (boundary rows included).
//!
//! Our operator drops boundary rows and columns (`x_B = 0`), so 3. is carried as a number
//! `c` (the finest level's boundary value, 0 or 1) and a vector `g = A_II 1_I`: the seed's
//! interior rows are `A_II x_I + A_IB c 1_B = A_II x_I − c g`, i.e. ours with the right-hand
//! side `b + c g` — exact, since the seed's boundary values are that one constant.

use super::Multigrid;
use crate::bundle::Backend;
use crate::error::Result;
use crate::operator::LinearOperator;
use crate::scalar::Scalar;
use crate::solver::Stopping;
use crate::tensor::ops::boundary;
use crate::tensor::TensorOps;
use crate::vector::Vector;

/// What [`Multigrid::seed_code_fmg`] returns.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq)]
pub struct SeedCodeRun {
    /// V-cycles after the FMG pass (at least one, as the seed's `it + 1`).
    pub cycles: usize,
    /// `‖b − A x‖ / ‖b‖` after the FMG pass and after every cycle (over every node).
    pub relative_residuals: Vec<f64>,
    /// Whether the last one is below the tolerance.
    pub converged: bool,
}

/// The extra vectors of one level: the residual kept for `x += r`, the effective right-hand
/// side `b + c g`.
struct Extra<B: Backend + TensorOps, T: Scalar> {
    r: Vector<B, T>,
    beff: Vector<B, T>,
}

impl<B: Backend + TensorOps, T: Scalar> Multigrid<B, T> {
    /// The seed's code's FMG solve of its Tables 1 and 2 (see the [module](self)): `f ≡ 1`
    /// as nodal ones, the residual-adding V-cycle, boundary values read, stopped by `stop`
    /// (`<`, as the seed) on the residual over every node. For tests that reproduce the
    /// seed's counts; not a solver to use (its cycle is not the paper's).
    ///
    /// # Errors
    /// Device errors.
    #[doc(hidden)]
    pub fn seed_code_fmg(&self, stop: Stopping) -> Result<SeedCodeRun> {
        let top = self.levels.len() - 1;
        let backend = self.work.borrow()[top].x.backend().clone();
        let grids: Vec<_> = self.levels.iter().map(|l| l.op.grid()).collect();
        let boundary_nodes = (0..grids[top].len())
            .filter(|&g| grids[top].on_boundary(g))
            .count() as f64;
        // 1. Ones on the finest level (boundary ones carried as `b_B = 1`), Pᵀ below.
        let mut rhs: Vec<Vector<B, T>> = Vec::with_capacity(top + 1);
        let mut b = Vector::<B, T>::full(&backend, grids[top].len(), T::ONE)?;
        boundary(grids[top], None, &mut b)?;
        rhs.push(b);
        for l in (1..=top).rev() {
            let mut coarse = Vector::<B, T>::zeros(&backend, grids[l - 1].len())?;
            self.restrict(l + 1, &rhs[top - l], &mut coarse)?;
            boundary(grids[l - 1], None, &mut coarse)?;
            rhs.push(coarse);
        }
        rhs.reverse();
        // g = A_II 1_I: our operator reads the boundary as zero.
        let ones = Vector::<B, T>::full(&backend, grids[top].len(), T::ONE)?;
        let mut g = Vector::<B, T>::zeros(&backend, grids[top].len())?;
        self.levels[top].op.apply(&ones, &mut g)?;
        boundary(grids[top], None, &mut g)?;
        let mut extra = Vec::with_capacity(top + 1);
        for grid in &grids {
            extra.push(Extra {
                r: Vector::zeros(&backend, grid.len())?,
                beff: Vector::zeros(&backend, grid.len())?,
            });
        }
        let b_norm = (rhs[top].dot(&rhs[top])?.as_f64() + boundary_nodes).sqrt();

        let mut work = self.work.borrow_mut();
        // The FMG pass: the coarsest level solved, then on every finer level the prolongated
        // solution (boundary zero) and one V-cycle.
        work[0].b.copy_from(&rhs[0])?;
        self.coarse_solve(&mut work[0])?;
        let mut c = 0.0;
        for l in 1..=top {
            let (lower, upper) = work.split_at_mut(l);
            self.transfers[l - 1].prolongate(&lower[l - 1].x, &mut upper[0].x, &mut upper[0].t)?;
            upper[0].b.copy_from(&rhs[l])?;
            self.seed_vcycle(l, &mut work, &mut extra, &g, &mut c)?;
        }
        let residual = |work: &mut [super::Work<B, T>], extra: &mut [Extra<B, T>], c: f64| {
            let (w, e) = (&mut work[top], &mut extra[top]);
            self.effective_rhs(&w.b, c, &g, &mut e.beff)?;
            self.levels[top].op.apply(&w.x, &mut e.r)?;
            e.r.axpby(T::ONE, &e.beff, -T::ONE)?;
            boundary(grids[top], None, &mut e.r)?;
            let interior = e.r.dot(&e.r)?.as_f64();
            // The boundary rows: b_B − x_B = 1 − c.
            Ok::<f64, crate::Error>((interior + boundary_nodes * (1.0 - c) * (1.0 - c)).sqrt())
        };
        let mut history = vec![residual(&mut work, &mut extra, c)? / b_norm];
        let tol = stop.rtol;
        while (history.len() == 1 || history[history.len() - 1] >= tol)
            && history.len() <= stop.max_iter
        {
            self.seed_vcycle(top, &mut work, &mut extra, &g, &mut c)?;
            history.push(residual(&mut work, &mut extra, c)? / b_norm);
        }
        Ok(SeedCodeRun {
            cycles: history.len() - 1,
            converged: history[history.len() - 1] < tol,
            relative_residuals: history,
        })
    }

    /// `beff = b + c g` (`g` lives on the finest level; `c` is zero elsewhere).
    fn effective_rhs(
        &self,
        b: &Vector<B, T>,
        c: f64,
        g: &Vector<B, T>,
        beff: &mut Vector<B, T>,
    ) -> Result<()> {
        beff.copy_from(b)?;
        if c != 0.0 {
            beff.axpy(T::from_f64(c), g)?;
        }
        Ok(())
    }

    /// The seed's V-cycle on level index `l` from `work[l].x` for `work[l].b`; `c` is the
    /// boundary value of `x` on the finest level (zero, and untouched, on the others).
    fn seed_vcycle(
        &self,
        l: usize,
        work: &mut [super::Work<B, T>],
        extra: &mut [Extra<B, T>],
        g: &Vector<B, T>,
        c: &mut f64,
    ) -> Result<()> {
        if l == 0 {
            return self.coarse_solve(&mut work[0]);
        }
        let top = l == self.levels.len() - 1;
        let cl = if top { *c } else { 0.0 };
        let level = &self.levels[l];
        let (a, grid) = (&level.op, level.op.grid());
        {
            let (w, e) = (&mut work[l], &mut extra[l]);
            self.effective_rhs(&w.b, cl, g, &mut e.beff)?;
            level.smoother.smooth(
                a,
                self.patch.as_ref(),
                &mut w.x,
                &e.beff,
                false,
                &mut w.s,
                &mut w.r,
            )?;
            a.apply(&w.x, &mut e.r)?;
            e.r.axpby(T::ONE, &e.beff, -T::ONE)?;
            boundary(grid, None, &mut e.r)?;
        }
        {
            let (lower, upper) = work.split_at_mut(l);
            let (w, wc) = (&mut upper[0], &mut lower[l - 1]);
            self.transfers[l - 1].restrict(&extra[l].r, &mut wc.b, &mut w.t)?;
            boundary(self.levels[l - 1].op.grid(), None, &mut wc.b)?;
            wc.x.fill(T::ZERO)?;
        }
        self.seed_vcycle(l - 1, work, extra, g, c)?;
        let (lower, upper) = work.split_at_mut(l);
        let (w, wc) = (&mut upper[0], &mut lower[l - 1]);
        self.transfers[l - 1].prolongate(&wc.x, &mut w.r, &mut w.t)?;
        // 2. x ← x + r + P e_c on the interior; the boundary: x_B += b_B − x_B.
        w.x.axpy(T::ONE, &extra[l].r)?;
        w.x.axpy(T::ONE, &w.r)?;
        let cl = if top {
            *c = 1.0;
            1.0
        } else {
            0.0
        };
        let e = &mut extra[l];
        self.effective_rhs(&w.b, cl, g, &mut e.beff)?;
        level.smoother.smooth(
            a,
            self.patch.as_ref(),
            &mut w.x,
            &e.beff,
            false,
            &mut w.s,
            &mut w.r,
        )
    }
}
