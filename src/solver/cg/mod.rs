//! Conjugate gradients, plain and preconditioned: one iteration ([`iterate`]) for every
//! form, the scalars of which live on the device or on the host ([`CgScalars`]).
//!
//! Per iteration: `α = r·z / pᵀAp`; `x += α p, r −= α q` fused with `r·r`; `z = M r` with
//! `r·z`; `β = r·z / (r·z)_old` (flexible: `(r·z − r·z_old) / (r·z)_old`, Polak–Ribière);
//! `p = z + β p`; `q = A p` with `pᵀAp` (fused for SELL and DIA). Without `M`, `z = r`.
//!
//! - [`DeviceScalars`](device::DeviceScalars) (single process, the performance form): α, β
//!   and the inner products stay in a device vector; the stopping quantities are read every
//!   `check_every` iterations, the read overlapped with the next direction and product. It
//!   takes the flexible β too, for a preconditioner other than Jacobi (an f32 hierarchy in
//!   an f64 solve).
//! - [`HostScalars`](host::HostScalars) (the inner solves, flexible PCG with Jacobi, and
//!   every distributed CG on the CPU): the scalars on the host, where the distributed sums
//!   need them; a distributed run adds `r·r`, `r·z` and `r·z_old` in one global sum.
//!
//! The distributed solvers on devices use the one-sum Chronopoulos–Gear method instead (in
//! [`distributed`](crate::distributed)): a different recurrence, not a form of this one.
//! The arithmetic order on the CPU backend is documented in [`crate::vector`], so a textbook
//! implementation with the same summation order reproduces the iteration counts exactly.

mod device;
mod host;

use crate::backend::core::Deferred;
use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::params::SolverParams;
use crate::solver::report::{SolveReport, StopReason};
use crate::solver::tracker::Tracker;
use crate::solver::{check_preconditioner, check_system, drive, LinearOperator, Preconditioner};
use crate::vector::Vector;

pub(crate) use host::{CgVector, HostScalars};

/// Conjugate gradients for a symmetric positive definite `A`, starting from `x`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for inconsistent sizes;
/// device errors. Numerical trouble is reported in [`SolveReport::reason`].
pub fn cg<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    check_system("CG", a, b, x)?;
    let backend = b.backend().clone();
    drive(params, "CG", a, b, x, &mut |t, x, r, k0| {
        let mut scalars =
            device::DeviceScalars::new(&backend, a, None, &r, params.check_every, false)?;
        iterate(t, &mut scalars, x, r, k0)
    })
}

/// Preconditioned conjugate gradients (`M` symmetric positive definite; with
/// `params.flexible` the Polak–Ribière β tolerates a varying or slightly nonsymmetric `M`,
/// such as an inner solve or a preconditioner applied in lower precision). `None` is plain
/// CG with the scalars on the host.
///
/// # Errors
/// As [`cg`], plus a preconditioner of the wrong size.
pub fn pcg<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    let name = if m.is_some() { "PCG" } else { "CG" };
    check_system(name, a, b, x)?;
    check_preconditioner(name, a, m)?;
    let backend = b.backend().clone();
    drive(params, name, a, b, x, &mut |t, x, r, k0| match m {
        Some(m) if !params.flexible || device::flexible_on_device(Some(m)) => {
            let mut scalars = device::DeviceScalars::new(
                &backend,
                a,
                Some(m),
                &r,
                params.check_every,
                params.flexible,
            )?;
            iterate(t, &mut scalars, x, r, k0)
        }
        _ => conjugate_gradients(t, a, m, x, r, k0, params.flexible),
    })
}

/// [`pcg`] with the flexible β whatever `params.flexible` says (for variable preconditioners
/// such as an inner solve).
pub(crate) fn pcg_flexible<B: Backend, S: Scalar>(
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    b: &Vector<B, S>,
    x: &mut Vector<B, S>,
    params: &SolverParams<'_>,
) -> Result<SolveReport> {
    check_system("flexible PCG", a, b, x)?;
    check_preconditioner("flexible PCG", a, m)?;
    drive(params, "flexible PCG", a, b, x, &mut |t, x, r, k0| {
        conjugate_gradients(t, a, m, x, r, k0, true)
    })
}

/// The PCG iteration with host scalars from the residual `r` (`r = b − A x`), `k0`
/// iterations done: the inner solves and flexible PCG.
pub(crate) fn conjugate_gradients<B: Backend, S: Scalar>(
    t: &mut Tracker<'_, '_>,
    a: &dyn LinearOperator<B, S>,
    m: Option<&dyn Preconditioner<B, S>>,
    x: &mut Vector<B, S>,
    r: Vector<B, S>,
    k0: usize,
    flexible: bool,
) -> Result<(usize, StopReason)> {
    let product = |p: &Vector<B, S>, q: &mut Vector<B, S>| a.apply_dot(p, q);
    let precondition =
        m.map(|m| move |r: &Vector<B, S>, z: &mut Vector<B, S>| m.precondition_dot(r, z));
    let precondition = precondition
        .as_ref()
        .map(|f| f as &dyn Fn(&Vector<B, S>, &mut Vector<B, S>) -> Result<S>);
    let mut scalars = HostScalars::new(&product, precondition, flexible, &r)?;
    iterate(t, &mut scalars, x, r, k0)
}

/// What a read of the scalars gives the stopping tests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Readout {
    /// `pᵀAp` of the update just made, where it was not tested before the update.
    pub(crate) curvature: Option<f64>,
    /// `r·r` after the update.
    pub(crate) rr: f64,
}

/// A read of the scalars: on the host already, or on its way from the device (waited for
/// after the next direction and product are queued), or computed with the next direction
/// (the distributed sums).
pub(crate) enum Pending<'b, S> {
    /// Here now: tested before the iteration goes on.
    Now(Readout),
    /// On its way from the device: which slots hold `pᵀAp` and `r·r`.
    Device {
        read: Deferred<'b, S>,
        curvature: usize,
        rr: usize,
    },
    /// Known once [`CgScalars::advance`] has run.
    AfterAdvance,
}

/// Where the scalars of a CG iteration live, and the fused steps that touch them: the
/// kernels of [`iterate`] (as Ginkgo's `initialize` / `step_1` / `step_2`).
pub(crate) trait CgScalars<'b, V, S> {
    /// Reads are taken every this many iterations (1 where a read costs nothing).
    fn check_every(&self) -> usize {
        1
    }

    /// `‖r‖²` of the initial residual.
    fn start(&mut self, r: &V) -> Result<f64>;

    /// The first direction and product: `z = M r`, `p = z`, `q = A p` with `pᵀAp`.
    fn first_direction(&mut self, r: &V) -> Result<()>;

    /// `pᵀAp` where it is on the host before the update (tested then: the update is not
    /// made); `None` where it is read with the residual.
    fn curvature(&self) -> Option<f64>;

    /// `α = r·z / pᵀAp`; `x += α p`; `r −= α q` with `r·r`.
    fn update(&mut self, x: &mut V, r: &mut V) -> Result<()>;

    /// Starts a read of the stopping quantities of the update just made; `now` asks for
    /// them without overlap (the last iteration).
    fn read(&mut self, r: &V, now: bool) -> Result<Pending<'b, S>>;

    /// `z = M r`, `β`, `p = z + β p`, `q = A p` with `pᵀAp`: the next direction and product.
    /// `Some(reason)` where `β` is not finite (checked where it is on the host).
    fn advance(&mut self, r: &V) -> Result<Option<StopReason>>;

    /// The stopping quantities of a read started before [`advance`](Self::advance).
    fn finish(&mut self, pending: Pending<'b, S>) -> Result<Readout>;
}

/// The one CG iteration from the residual `r` (`r = b − A x`), `k0` iterations done, with
/// its scalars where `c` keeps them. The next direction and product run before a deferred
/// read is waited for; they leave `x` and `r` alone, so a stop returns the `x` it would
/// return without them (one product more than the iterations), and a stop the read shows
/// is reported even if that extra work failed. Where the residuals so far say the read will
/// show convergence ([`Tracker::expects_convergence`]), it is taken before that work (with
/// a strong preconditioner such as AMG, the last preconditioner application and product
/// are a whole iteration's work).
pub(crate) fn iterate<'b, V, S: Scalar, C: CgScalars<'b, V, S>>(
    t: &mut Tracker<'_, '_>,
    c: &mut C,
    x: &mut V,
    mut r: V,
    k0: usize,
) -> Result<(usize, StopReason)> {
    let rr0 = c.start(&r)?;
    if let Some(reason) = t.record(k0, rr0.sqrt()) {
        return Ok((k0, reason));
    }
    c.first_direction(&r)?;
    t.applications += 1;
    let check_every = c.check_every().max(1);
    let mut k = k0;
    let reason = loop {
        k += 1;
        if let Some(reason) = c.curvature().and_then(bad_curvature) {
            break reason;
        }
        c.update(x, &mut r)?;
        let last = k >= t.max_iter();
        if last || (k - k0).is_multiple_of(check_every) {
            let pending = c.read(&r, last || t.expects_convergence())?;
            if let Pending::Now(out) = pending {
                if let Some(reason) = stop_test(t, k, out) {
                    break reason;
                }
                if last {
                    break StopReason::MaxIterations;
                }
                if let Some(reason) = advance(t, c, &r)? {
                    break reason;
                }
                continue;
            }
            let advanced = advance(t, c, &r);
            if let Some(reason) = stop_test(t, k, c.finish(pending)?) {
                break reason;
            }
            if let Some(reason) = advanced? {
                break reason;
            }
        } else if let Some(reason) = advance(t, c, &r)? {
            break reason;
        }
    };
    Ok((k, reason))
}

/// [`CgScalars::advance`], counting its product.
fn advance<'b, V, S, C: CgScalars<'b, V, S>>(
    t: &mut Tracker<'_, '_>,
    c: &mut C,
    r: &V,
) -> Result<Option<StopReason>> {
    let out = c.advance(r)?;
    t.applications += 1;
    Ok(out)
}

/// A curvature `pᵀAp` that is not finite or not positive: the operator (or preconditioner)
/// is not SPD, or the iteration broke down.
fn bad_curvature(pq: f64) -> Option<StopReason> {
    if !pq.is_finite() {
        Some(StopReason::NonFinite { quantity: "pᵀAp" })
    } else if pq <= 0.0 {
        Some(StopReason::IndefiniteOperator { curvature: pq })
    } else {
        None
    }
}

/// The stopping tests of a read after iteration `k`: the curvature (where it was not tested
/// before the update) and the residual `√(r·r)` for the tracker's tests.
fn stop_test(t: &mut Tracker<'_, '_>, k: usize, out: Readout) -> Option<StopReason> {
    out.curvature
        .and_then(bad_curvature)
        .or_else(|| t.record(k, out.rr.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Cpu;
    use crate::random::random_vec;
    use crate::solver::amg::{Amg, AmgParams};
    use crate::solver::{MixedPrecision, Progress, Stopping};
    use crate::sparse::generate::poisson3d_7pt;

    /// Flexible PCG around a preconditioner other than Jacobi (an f32 hierarchy in an f64
    /// solve) runs with device scalars; on the CPU backend its iterations are the host
    /// form's (`pcg_flexible`) and its iterates the same to the last bits.
    #[test]
    fn flexible_device_scalars_take_the_host_forms_iterations() {
        let cpu = Cpu::new();
        let a = poisson3d_7pt(24).unwrap();
        let amg =
            MixedPrecision::new(Amg::<Cpu, f32>::new(&cpu, &a, &AmgParams::default()).unwrap());
        let b = Vector::from_slice(&cpu, &random_vec::<f64>(a.nrows(), 3)).unwrap();
        let params = SolverParams {
            stop: Stopping::new(1e-11, 100),
            flexible: true,
            progress: Progress::Never,
            ..SolverParams::default()
        };
        let solve = |flexible_host: bool| {
            let mut x = Vector::from_slice(&cpu, &vec![f64::NAN; a.nrows()]).unwrap();
            x.fill(0.0).unwrap();
            let report = if flexible_host {
                pcg_flexible(&a, Some(&amg), &b, &mut x, &params).unwrap()
            } else {
                pcg(&a, Some(&amg), &b, &mut x, &params).unwrap()
            };
            (report, x.to_vec().unwrap())
        };
        let (device, xd) = solve(false);
        let (host, xh) = solve(true);
        assert!(device.converged(), "{device}");
        assert_eq!(
            device.iterations, host.iterations,
            "{device} against {host}"
        );
        let scale = xh.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = xd
            .iter()
            .zip(&xh)
            .fold(0.0f64, |m, (d, h)| m.max((d - h).abs()));
        assert!(
            worst <= 1e-12 * scale,
            "iterates differ by {worst:e} (max |x| {scale:e})"
        );
    }
}
