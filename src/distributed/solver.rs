//! Krylov solvers on distributed operators: CG/PCG, BiCGStab, GMRES/FGMRES, and the mixed
//! solve (f64 flexible CG around an f32 inner PCG), with the single-process algorithms and
//! bookkeeping ([`SolveReport`], residual replacement, stopping tests). The scalars live on
//! the host and each group of inner products needed together is one global sum (CG: `p·q`,
//! then `r·r` with `r·z`). Every rank gets the same sums, so the same decisions and the same
//! report (its `time` is the slowest rank's). A monitor in [`SolverParams`] runs on every
//! rank and sees the same residuals there; it must answer the same on every rank (one that
//! stops on wall time could stop one rank and not another).
//!
//! Preconditioners act per rank: [`BlockJacobi`] applies any single-process
//! [`Preconditioner`] of this rank's diagonal block (point Jacobi is then the global Jacobi;
//! Chebyshev or small-block Jacobi of the block make the usual block-Jacobi).

use super::matrix::DistOperator;
use super::vector::DistVector;
use crate::bundle::Backend;
use crate::error::{check_len, Error, Result};
use crate::scalar::Scalar;
use crate::solver::cg::{iterate, HostScalars};
use crate::solver::params::SolverParams;
use crate::solver::report::{SolveReport, StopReason};
use crate::solver::tracker::Tracker;
use crate::solver::Preconditioner;
use crate::vector::{cgcg_update, dot_into, CgCgU};

/// A preconditioner of a distributed operator.
pub trait DistPreconditioner<B: Backend, S: Scalar> {
    /// `z = M⁻¹ r`. Collective if the preconditioner communicates.
    ///
    /// # Errors
    /// Distribution mismatches; device errors.
    fn precondition(&self, r: &DistVector<B, S>, z: &mut DistVector<B, S>) -> Result<()>;

    /// The preconditioner as a single-process one, when it communicates with no other rank
    /// (for a one-rank solve). Default `None`.
    fn as_local(&self) -> Option<&dyn Preconditioner<B, S>> {
        None
    }

    /// If this preconditioner is the diagonal scaling `z = d ∘ r` of the owned rows, its `d`
    /// (as [`Preconditioner::inverse_diagonal`]): the device CG then scales inside its vector
    /// update instead of calling [`precondition`](Self::precondition). Ranks may answer
    /// differently (a rank without rows may have no `d`) only because such a `precondition`
    /// does not communicate; one that communicates must answer `None`. Default `None`.
    fn inverse_diagonal(&self) -> Option<&crate::vector::Vector<B, S>> {
        None
    }
}

/// Block-Jacobi by rank: a single-process preconditioner of this rank's diagonal block
/// ([`DistCsr::local_block`](super::DistCsr::local_block)) applied to the owned rows. No
/// communication. With [`Jacobi`](crate::solver::Jacobi) it is the global point Jacobi.
pub struct BlockJacobi<'a, B: Backend, S: Scalar> {
    local: Box<dyn Preconditioner<B, S> + 'a>,
}

impl<'a, B: Backend, S: Scalar> BlockJacobi<'a, B, S> {
    /// Wraps `local`, a preconditioner of this rank's diagonal block.
    pub fn new(local: Box<dyn Preconditioner<B, S> + 'a>) -> Self {
        BlockJacobi { local }
    }
}

impl<B: Backend, S: Scalar> DistPreconditioner<B, S> for BlockJacobi<'_, B, S> {
    fn precondition(&self, r: &DistVector<B, S>, z: &mut DistVector<B, S>) -> Result<()> {
        r.check_layout("BlockJacobi::precondition", z)?;
        if r.owned_len() == 0 {
            return Ok(());
        }
        check_len(
            "BlockJacobi",
            "local preconditioner size",
            r.owned_len(),
            self.local.size(),
        )?;
        self.local.precondition(r.owned(), z.owned_mut())
    }

    fn inverse_diagonal(&self) -> Option<&crate::vector::Vector<B, S>> {
        self.local.inverse_diagonal()
    }

    fn as_local(&self) -> Option<&dyn Preconditioner<B, S>> {
        Some(self.local.as_ref())
    }
}

/// Checks that `b` and `x` have `a`'s distribution.
pub(super) fn check<B: Backend, S: Scalar>(
    op: &'static str,
    a: &dyn DistOperator<B, S>,
    b: &DistVector<B, S>,
    x: &DistVector<B, S>,
) -> Result<()> {
    if !a.layout().same_as(b.layout()) || !a.layout().same_as(x.layout()) {
        return Err(Error::InvalidArgument {
            op,
            name: "b, x",
            reason: "b and x must be distributed as the operator (its layout)".into(),
        });
    }
    Ok(())
}

pub(super) type DistIterate<'i, B, S> = crate::solver::space::IterateWith<'i, DistVector<B, S>>;

/// The single-process `drive` on distributed vectors (`‖b‖`, the iteration, the true
/// residual, residual replacement: see [`crate::solver`]); the report's time is the slowest
/// rank's.
pub(super) fn drive<B: Backend, S: Scalar>(
    params: &SolverParams<'_>,
    name: &'static str,
    a: &dyn DistOperator<B, S>,
    b: &DistVector<B, S>,
    x: &mut DistVector<B, S>,
    iterate: &mut DistIterate<'_, B, S>,
) -> Result<SolveReport> {
    crate::solver::space::drive(params, name, &residual(a, b), b, x, iterate)
}

/// `r = b − A x`, as [`drive`] and the GMRES restarts compute it.
pub(super) fn residual<'a, B: Backend, S: Scalar>(
    a: &'a dyn DistOperator<B, S>,
    b: &'a DistVector<B, S>,
) -> impl Fn(&DistVector<B, S>, &mut DistVector<B, S>) -> Result<()> + 'a {
    move |x, r| {
        let mut ax = DistVector::zeros(b.owned().backend(), b.layout())?;
        a.apply(x, &mut ax)?;
        r.copy_from(b)?;
        r.axpy(-S::ONE, &ax)
    }
}

/// Preconditioned conjugate gradients on a distributed SPD operator (`m = None`: plain CG),
/// from `x`: the iterates of [`solver::pcg`](crate::solver::pcg) up to round-off (on one rank,
/// with an operator and preconditioner that have single-process forms ([`DistOperator::as_local`],
/// [`DistPreconditioner::as_local`]), it *is* `solver::pcg`). On a
/// device, one global sum and one device read per iteration (Chronopoulos–Gear: `r·u`,
/// `(Au)·u` and `r·r` together, `pᵀAp` from a recurrence; latency dominates there). On the
/// CPU backend, and with `params.flexible` (Polak–Ribière β, for a preconditioner that varies,
/// such as an inner solve), the textbook PCG with two sums per iteration (`p·q`, then `r·r`
/// with `r·z`) and the fused update (fewer vector passes; bandwidth dominates there).
///
/// # Errors
/// Distribution mismatches; device errors. Numerical trouble is in the report.
pub fn cg<B: Backend, S: Scalar>(
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    b: &DistVector<B, S>,
    x: &mut DistVector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    let name = match (m.is_some(), params.flexible) {
        (false, _) => "CG",
        (true, false) => "PCG",
        (true, true) => "flexible PCG",
    };
    check(name, a, b, x)?;
    // One rank: the single-process PCG with its fused kernels and device-resident scalars.
    if a.layout().comm().size() == 1 {
        let local_m = m.map(|m| m.as_local());
        if let (Some(a1), false) = (a.as_local(), matches!(local_m, Some(None))) {
            let mut report =
                crate::solver::pcg(a1, local_m.flatten(), b.owned(), x.owned_mut(), params)?;
            report.solver = name;
            return Ok(report);
        }
    }
    drive(params, name, a, b, x, &mut |t, x, r, k0| {
        // The CPU is bandwidth-bound (the two-sum form streams fewer vectors); a device is
        // latency-bound (one read per iteration instead of three).
        let cpu = r.owned().backend().kind() == crate::backend::BackendKind::Cpu;
        if params.flexible || cpu {
            cg_iterate(t, a, m, x, r, k0, params.flexible)
        } else {
            single_reduction_cg(t, a, m, x, r, k0)
        }
    })
}

/// The local parts of `[r·u, w·u, r·r]` summed over the ranks: the device dot products
/// into one scalar vector (`w·u` always; `r·u` and `r·r` where asked, the others left there
/// by the vector update), one read, one global sum.
fn three_sums<B: Backend, S: Scalar>(
    scalars: &mut crate::vector::Vector<B, S>,
    r: &DistVector<B, S>,
    u: &DistVector<B, S>,
    w: &DistVector<B, S>,
    [take_ru, take_rr]: [bool; 2],
) -> Result<[f64; 3]> {
    let local = if r.owned_len() == 0 {
        [0.0; 3]
    } else {
        if take_ru {
            dot_into(r.owned(), u.owned(), scalars, RU)?;
        }
        if take_rr {
            dot_into(r.owned(), r.owned(), scalars, RR)?;
        }
        dot_into(w.owned(), u.owned(), scalars, WU)?;
        let s = scalars.to_vec()?;
        [s[RU].as_f64(), s[WU].as_f64(), s[RR].as_f64()]
    };
    let g = r.layout().comm().sum(&local);
    Ok([g[0], g[1], g[2]])
}

/// Slots of the device scalars of [`single_reduction_cg`].
const RU: usize = 0;
const WU: usize = 1;
const RR: usize = 2;

/// PCG with one global sum per iteration (Chronopoulos–Gear): with `u = M r` and `w = A u`,
/// the sums `γ = r·u`, `δ = w·u` and `r·r` are taken together, and `pᵀAp` follows from the
/// recurrence `η = δ − β γ / α`; `s = A p` is updated as `s = w + β s`. The same iterates as
/// PCG in exact arithmetic (one more vector, `s`); on a device, one read per iteration.
/// The direction, `s`, `x` and `r` are updated in one pass ([`cgcg_update`]), which for
/// point Jacobi also writes `u = d ∘ r` and sums `r·u` and `r·r`: per iteration that pass,
/// the product and `w·u`.
fn single_reduction_cg<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    x: &mut DistVector<B, S>,
    mut r: DistVector<B, S>,
    k0: usize,
) -> Result<(usize, StopReason)> {
    let backend = r.owned().backend().clone();
    let layout = r.layout().clone();
    let mut scalars = crate::vector::Vector::<B, S>::zeros(&backend, 3)?;
    let d = m.and_then(|m| m.inverse_diagonal());
    // u = M r (u is r itself without M), w = A u; p and s start at zero (β = 0 at first).
    let zeros = || DistVector::<B, S>::zeros(&backend, &layout);
    let (mut u, mut w, mut p, mut s) = (zeros()?, zeros()?, zeros()?, zeros()?);
    match m {
        Some(m) => {
            m.precondition(&r, &mut u)?;
            a.apply(&u, &mut w)?;
        }
        None => a.apply(&r, &mut w)?,
    }
    t.applications += 1;
    let [mut gamma, delta, rr] = three_sums(
        &mut scalars,
        &r,
        if m.is_some() { &u } else { &r },
        &w,
        [true; 2],
    )?;
    if let Some(reason) = t.record(k0, rr.sqrt()) {
        return Ok((k0, reason));
    }
    let (mut eta, mut beta) = (delta, 0.0);
    let mut k = k0;
    let reason = loop {
        k += 1;
        if !eta.is_finite() {
            break StopReason::NonFinite { quantity: "pᵀAp" };
        }
        if eta <= 0.0 {
            break StopReason::IndefiniteOperator { curvature: eta };
        }
        let alpha = gamma / eta;
        let step_u = match (m, d) {
            (None, _) => CgCgU::Identity,
            (Some(_), Some(d)) => CgCgU::Jacobi {
                d,
                u: u.owned_mut(),
            },
            (Some(_), None) => CgCgU::Other(u.owned_mut()),
        };
        cgcg_update(
            S::from_f64(alpha),
            S::from_f64(beta),
            step_u,
            w.owned(),
            p.owned_mut(),
            s.owned_mut(),
            x.owned_mut(),
            r.owned_mut(),
            &mut scalars,
            [RR, RU],
        )?;
        match (m, d) {
            (None, _) => a.apply(&r, &mut w)?,
            (Some(_), Some(_)) => a.apply(&u, &mut w)?,
            (Some(m), None) => {
                m.precondition(&r, &mut u)?;
                a.apply(&u, &mut w)?;
            }
        }
        t.applications += 1;
        // The update left r·r there, and r·u unless M is applied apart from it.
        let take_ru = m.is_some() && d.is_none();
        let [gamma_new, delta, rr] = three_sums(
            &mut scalars,
            &r,
            if m.is_some() { &u } else { &r },
            &w,
            [take_ru, false],
        )?;
        if let Some(reason) = t.record(k, rr.sqrt()) {
            break reason;
        }
        beta = gamma_new / gamma;
        if !beta.is_finite() {
            break StopReason::NonFinite { quantity: "β" };
        }
        eta = delta - beta * gamma_new / alpha;
        gamma = gamma_new;
    };
    Ok((k, reason))
}

/// The host form of the one CG iteration ([`crate::solver::cg`]) on distributed vectors:
/// two global sums per iteration (`p·q`, then `r·r` with `r·z` and the flexible `r·z_old`).
fn cg_iterate<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn DistOperator<B, S>,
    m: Option<&dyn DistPreconditioner<B, S>>,
    x: &mut DistVector<B, S>,
    r: DistVector<B, S>,
    k0: usize,
    flexible: bool,
) -> Result<(usize, StopReason)> {
    let product = |p: &DistVector<B, S>, q: &mut DistVector<B, S>| {
        a.apply(p, q)?;
        p.dot(q)
    };
    let precondition = m.map(|m| {
        move |r: &DistVector<B, S>, z: &mut DistVector<B, S>| {
            m.precondition(r, z)?;
            r.owned().dot(z.owned())
        }
    });
    let precondition = precondition
        .as_ref()
        .map(|f| f as &dyn Fn(&DistVector<B, S>, &mut DistVector<B, S>) -> Result<S>);
    let mut scalars = HostScalars::new(&product, precondition, flexible, &r)?;
    iterate(t, &mut scalars, x, r, k0)
}
