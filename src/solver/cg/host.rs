//! [`HostScalars`]: CG with its scalars on the host, where the flexible (Polak–Ribière) β
//! and the distributed sums need them — flexible PCG, the inner solves of the mixed methods,
//! and distributed CG on the CPU. The vectors say how their inner products add up
//! ([`CgVector`]): a distributed run takes `r·r`, `r·z` and `r·z_old` in one global sum
//! (`p·q` in another), computed with the next direction; one process tests `r·r` before it.

use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::cg::{CgScalars, Pending, Readout};
use crate::solver::report::StopReason;
use crate::solver::space::KrylovVector;

/// What CG needs of its vectors beyond [`KrylovVector`]: the fused local update and local
/// inner products, and how local values add up over the processes.
pub(crate) trait CgVector<S: Scalar>: KrylovVector<S> {
    /// Whether a sum is a collective round trip (then `r·r` waits for `r·z`, to take both
    /// in one).
    const COLLECTIVE: bool;

    /// `x += α p; r −= α q`, returning this process's part of `r·r`.
    fn cg_update(alpha: S, p: &Self, q: &Self, x: &mut Self, r: &mut Self) -> Result<S>;

    /// This process's part of `self · y`.
    fn local_dot(&self, y: &Self) -> Result<S>;

    /// The sums over the processes of `local` (the same on every process; `local` itself in
    /// one process).
    fn sum(&self, local: [f64; 3]) -> [f64; 3];
}

/// `q = A p`, returning `p·q` (summed over the processes).
pub(crate) type Product<'o, V, S> = dyn Fn(&V, &mut V) -> Result<S> + 'o;

/// `z = M r`, returning this process's part of `r·z`.
pub(crate) type Precondition<'o, V, S> = dyn Fn(&V, &mut V) -> Result<S> + 'o;

/// The host scalars of one CG run, with its vectors.
pub(crate) struct HostScalars<'o, V, S> {
    product: &'o Product<'o, V, S>,
    precondition: Option<&'o Precondition<'o, V, S>>,
    flexible: bool,
    p: V,
    q: V,
    /// `M r` (none without `M`).
    z: Option<V>,
    /// `p·q` of the current direction.
    pq: S,
    /// `r·z` of the current direction (`r·r` without `M`).
    rz: S,
    /// `r·r` after the last update: this process's part, and the sum once known.
    rr_local: S,
    rr: f64,
}

impl<'o, V: CgVector<S>, S: Scalar> HostScalars<'o, V, S> {
    /// The scalars and vectors of a run on `r`'s size.
    pub(crate) fn new(
        product: &'o Product<'o, V, S>,
        precondition: Option<&'o Precondition<'o, V, S>>,
        flexible: bool,
        r: &V,
    ) -> Result<Self> {
        Ok(HostScalars {
            product,
            precondition,
            flexible,
            p: r.zeros_like()?,
            q: r.zeros_like()?,
            z: precondition.map(|_| r.zeros_like()).transpose()?,
            pq: S::ZERO,
            rz: S::ZERO,
            rr_local: S::ZERO,
            rr: 0.0,
        })
    }

    /// `z = M r`, and the sums `[r·r, r·z, r·z_old]` of the local parts (`r·z = r·r`
    /// without `M`; `r·z_old` only for the flexible β).
    fn precondition_sums(&mut self, r: &V) -> Result<[f64; 3]> {
        let rr = self.rr_local.as_f64();
        let local = match (self.precondition, self.z.as_mut()) {
            (Some(m), Some(z)) => {
                let r_zold = if self.flexible {
                    r.local_dot(z)?
                } else {
                    S::ZERO
                };
                let rz = m(r, z)?;
                [rr, rz.as_f64(), r_zold.as_f64()]
            }
            _ => [rr, rr, 0.0],
        };
        Ok(r.sum(local))
    }
}

impl<'b, V: CgVector<S>, S: Scalar> CgScalars<'b, V, S> for HostScalars<'_, V, S> {
    fn start(&mut self, r: &V) -> Result<f64> {
        self.rr_local = r.local_dot(r)?;
        self.rr = r.sum([self.rr_local.as_f64(), 0.0, 0.0])[0];
        Ok(self.rr)
    }

    fn first_direction(&mut self, r: &V) -> Result<()> {
        let [_, rz, _] = self.precondition_sums(r)?;
        self.rz = S::from_f64(rz);
        self.p.copy_from(self.z.as_ref().unwrap_or(r))?;
        self.pq = (self.product)(&self.p, &mut self.q)?;
        Ok(())
    }

    fn curvature(&self) -> Option<f64> {
        Some(self.pq.as_f64())
    }

    fn update(&mut self, x: &mut V, r: &mut V) -> Result<()> {
        let alpha = self.rz / self.pq;
        self.rr_local = V::cg_update(alpha, &self.p, &self.q, x, r)?;
        Ok(())
    }

    fn read(&mut self, r: &V, now: bool) -> Result<Pending<'b, S>> {
        if V::COLLECTIVE && !now {
            return Ok(Pending::AfterAdvance);
        }
        self.rr = r.sum([self.rr_local.as_f64(), 0.0, 0.0])[0];
        Ok(Pending::Now(Readout {
            curvature: None,
            rr: self.rr,
        }))
    }

    fn advance(&mut self, r: &V) -> Result<Option<StopReason>> {
        let [rr, rz_new, r_zold] = self.precondition_sums(r)?;
        self.rr = rr;
        let rz_new = S::from_f64(rz_new);
        let beta = (rz_new - S::from_f64(r_zold)) / self.rz;
        self.rz = rz_new;
        if !beta.as_f64().is_finite() {
            return Ok(Some(StopReason::NonFinite { quantity: "β" }));
        }
        self.p.axpby(S::ONE, self.z.as_ref().unwrap_or(r), beta)?;
        self.pq = (self.product)(&self.p, &mut self.q)?;
        Ok(None)
    }

    fn finish(&mut self, pending: Pending<'b, S>) -> Result<Readout> {
        match pending {
            Pending::Now(out) => Ok(out),
            _ => Ok(Readout {
                curvature: None,
                rr: self.rr,
            }),
        }
    }
}

impl<B: crate::bundle::Backend, S: Scalar> CgVector<S> for crate::vector::Vector<B, S> {
    const COLLECTIVE: bool = false;

    fn cg_update(alpha: S, p: &Self, q: &Self, x: &mut Self, r: &mut Self) -> Result<S> {
        crate::vector::cg_update(alpha, p, q, x, r)
    }

    fn local_dot(&self, y: &Self) -> Result<S> {
        self.dot(y)
    }

    fn sum(&self, local: [f64; 3]) -> [f64; 3] {
        local
    }
}
