//! [`DeviceScalars`]: CG with α, β and the inner products kept in a device vector (the
//! `cg_scalars` slots), for one process: per iteration the fused `q = A p, p·q`, the fused
//! update (`α` from the slots, `r·r` for the stopping test); with a preconditioner
//! `z = M r`, `r·z` and the scalar step `β = r·z / (r·z)_old` ([`pcg_rotate_device`]),
//! without one `β = r·r / (r·r)_old` from the update; `p = z + βp` (`z = r` without one).
//! The stopping quantities are read every `check_every` iterations, behind the update, the
//! read overlapped with the next direction and product; a curvature `pᵀAp ≤ 0` is detected
//! then, after the update that used it. A Jacobi preconditioner
//! ([`Preconditioner::inverse_diagonal`]) is fused into the update and the direction
//! ([`pcg_jacobi_update_device`], [`jacobi_xpay_device`]): the same arithmetic, z not stored.
//! With `flexible` (a preconditioner `M` that is not exactly symmetric or fixed, such as an
//! f32 hierarchy inside an f64 solve; not with Jacobi) the Polak–Ribière
//! `β = (r·z − r·z_old) / (r·z)_old`, `r·z_old` summed before `z` is overwritten
//! ([`Preconditioner::precondition_flexible_device`]; for
//! [`MixedPrecision`](crate::solver::MixedPrecision) one pass with its conversion of `z`):
//! no host round trip either. After the first direction the step and the direction come
//! together ([`Preconditioner::precondition_flexible_direction_device`]), which lets
//! `MixedPrecision` keep `z` in its own precision (the sums and the direction read it
//! rounded up; no `z` of the solver's precision is written).
//! The arithmetic is the host form's: identical iteration counts on the CPU.

use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::solver::cg::{CgScalars, Pending, Readout};
use crate::solver::report::StopReason;
use crate::solver::{LinearOperator, Preconditioner};
use crate::vector::{
    cg_scalars, cg_update_device, dot_into, jacobi_xpay_device, pcg_jacobi_update_device,
    pcg_rotate_device, xpay_device, Vector,
};

/// The device-resident scalars of one CG run, with its vectors.
pub(crate) struct DeviceScalars<'b, 'o, B: Backend, S: Scalar> {
    backend: &'b B,
    a: &'o dyn LinearOperator<B, S>,
    m: Option<&'o dyn Preconditioner<B, S>>,
    /// `M`'s inverse diagonal where `M` is Jacobi (fused into the update and direction).
    jacobi: Option<&'o Vector<B, S>>,
    scalars: Vector<B, S>,
    p: Vector<B, S>,
    q: Vector<B, S>,
    /// `M r` (empty without `M` or with Jacobi); in the flexible steps, whatever the
    /// preconditioner leaves there (`MixedPrecision` keeps its own `z` and writes none).
    z: Vector<B, S>,
    /// Where the update leaves `r·r` for the stopping test.
    residual_slot: usize,
    check_every: usize,
    /// The flexible β (with a preconditioner other than Jacobi).
    flexible: bool,
}

impl<'b, 'o, B: Backend, S: Scalar> DeviceScalars<'b, 'o, B, S> {
    /// The scalars and vectors of a run on `r`'s size, with the flexible β where
    /// `flexible` and `m` is not Jacobi ([`flexible_on_device`]).
    pub(crate) fn new(
        backend: &'b B,
        a: &'o dyn LinearOperator<B, S>,
        m: Option<&'o dyn Preconditioner<B, S>>,
        r: &Vector<B, S>,
        check_every: usize,
        flexible: bool,
    ) -> Result<Self> {
        let jacobi = m.and_then(|m| m.inverse_diagonal());
        let flexible = flexible && flexible_on_device(m);
        let n = r.len();
        let z_len = if m.is_some() && jacobi.is_none() {
            n
        } else {
            0
        };
        Ok(DeviceScalars {
            backend,
            a,
            m,
            jacobi,
            scalars: Vector::zeros(
                backend,
                if flexible {
                    cg_scalars::FLEXIBLE_LEN
                } else {
                    cg_scalars::PCG_LEN
                },
            )?,
            p: Vector::zeros(backend, 0)?,
            q: Vector::zeros(backend, n)?,
            z: Vector::zeros(backend, z_len)?,
            residual_slot: if jacobi.is_some() {
                cg_scalars::RZ_NEW
            } else {
                cg_scalars::RR
            },
            check_every,
            flexible,
        })
    }

    /// `z = M r` and `s[RR] = r·z` (the numerator of α); without `M`, `s[RR] = r·r` already.
    /// Flexible: `r·z_old` first, from the `z` about to be overwritten (zero at the start:
    /// the first β is not used).
    fn precondition(&mut self, r: &Vector<B, S>) -> Result<()> {
        match self.m {
            Some(m) if self.flexible => {
                m.precondition_flexible_device(r, &mut self.z, &mut self.scalars)
            }
            Some(m) => {
                m.precondition(r, &mut self.z)?;
                dot_into(r, &self.z, &mut self.scalars, cg_scalars::RZ_NEW)?;
                pcg_rotate_device(&mut self.scalars)
            }
            None => Ok(()),
        }
    }
}

/// Whether flexible PCG with `m` runs with device scalars: a preconditioner other than
/// Jacobi (Jacobi is fixed and symmetric; its flexible form stays on the host).
pub(crate) fn flexible_on_device<B: Backend, S: Scalar>(
    m: Option<&dyn Preconditioner<B, S>>,
) -> bool {
    m.is_some_and(|m| m.inverse_diagonal().is_none())
}

impl<'b, B: Backend, S: Scalar> CgScalars<'b, Vector<B, S>, S> for DeviceScalars<'b, '_, B, S> {
    fn check_every(&self) -> usize {
        self.check_every
    }

    fn start(&mut self, r: &Vector<B, S>) -> Result<f64> {
        dot_into(r, r, &mut self.scalars, cg_scalars::RR)?;
        Ok(self.scalars.to_vec()?[cg_scalars::RR].as_f64())
    }

    fn first_direction(&mut self, r: &Vector<B, S>) -> Result<()> {
        if self.jacobi.is_some() {
            // The Jacobi form's first z = d ∘ r and r·z, stored as p.
            let mut z = Vector::zeros(self.backend, r.len())?;
            let m = self.m.expect("Jacobi is a preconditioner");
            m.precondition(r, &mut z)?;
            dot_into(r, &z, &mut self.scalars, cg_scalars::RZ_NEW)?;
            pcg_rotate_device(&mut self.scalars)?;
            self.p = z;
        } else {
            self.precondition(r)?;
            self.p = if self.m.is_some() {
                self.z.try_clone()?
            } else {
                r.try_clone()?
            };
        }
        self.a
            .apply_dot_device(&self.p, &mut self.q, &mut self.scalars, cg_scalars::PQ)
    }

    fn curvature(&self) -> Option<f64> {
        None
    }

    fn update(&mut self, x: &mut Vector<B, S>, r: &mut Vector<B, S>) -> Result<()> {
        match self.jacobi {
            Some(d) => pcg_jacobi_update_device(&mut self.scalars, d, &self.p, &self.q, x, r),
            None => cg_update_device(&mut self.scalars, &self.p, &self.q, x, r),
        }
    }

    fn read(&mut self, _r: &Vector<B, S>, now: bool) -> Result<Pending<'b, S>> {
        let (curvature, rr) = (cg_scalars::PQ, self.residual_slot);
        if now {
            let s = self.scalars.to_vec()?;
            return Ok(Pending::Now(Readout {
                curvature: Some(s[curvature].as_f64()),
                rr: s[rr].as_f64(),
            }));
        }
        Ok(Pending::Device {
            read: self.backend.download_later(self.scalars.buffer()?)?,
            curvature,
            rr,
        })
    }

    fn advance(&mut self, r: &Vector<B, S>) -> Result<Option<StopReason>> {
        match self.jacobi {
            Some(d) => jacobi_xpay_device(&self.scalars, d, r, &mut self.p)?,
            None => match self.m {
                // The flexible step and the direction together: a preconditioner in another
                // precision then keeps its z in that precision (one pass fewer over z).
                Some(m) if self.flexible => m.precondition_flexible_direction_device(
                    r,
                    &mut self.z,
                    &mut self.scalars,
                    &mut self.p,
                )?,
                _ => {
                    self.precondition(r)?;
                    let z = if self.m.is_some() { &self.z } else { r };
                    xpay_device(&self.scalars, z, &mut self.p)?;
                }
            },
        }
        self.a
            .apply_dot_device(&self.p, &mut self.q, &mut self.scalars, cg_scalars::PQ)?;
        Ok(None)
    }

    fn finish(&mut self, pending: Pending<'b, S>) -> Result<Readout> {
        match pending {
            Pending::Now(out) => Ok(out),
            Pending::Device {
                read,
                curvature,
                rr,
            } => {
                let s = read.wait()?;
                Ok(Readout {
                    curvature: Some(s[curvature].as_f64()),
                    rr: s[rr].as_f64(),
                })
            }
            Pending::AfterAdvance => unreachable!("device scalars are read from the device"),
        }
    }
}
