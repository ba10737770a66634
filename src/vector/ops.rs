//! [`VectorOps`]: the vector operation family every backend implements, and the CPU
//! implementation (the reference, in [`cpu`](super::cpu)).
//!
//! The trait is sealed (only this crate's backends implement it) and its methods are
//! `unsafe`: a device kernel indexes every operand by the length of one of them, so
//! operands of unequal length (or a buffer of another device) would be read or written out
//! of bounds. [`Vector`](super::Vector)'s methods and the checked free functions of
//! [`vector`](super) are the safe way in: they check the lengths (and the device) first.

use crate::backend::core::{sealed::Sealed, BackendCore};
use crate::backend::cpu::Cpu;
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::vector::cg_scalars;
use crate::vector::cpu;

/// The vector operation family: implemented by every backend. Call it through
/// [`Vector`](super::Vector).
///
/// # Safety
/// Every method is `unsafe`: its buffers must belong to this backend (a device buffer is
/// an allocation of one device's memory manager), and where it combines several buffers,
/// they must have equal lengths (and a device-scalar buffer the slots it names), as its own
/// `# Safety` section says.
pub trait VectorOps: BackendCore + Sealed {
    /// `x = value`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` belongs to this backend.
    unsafe fn fill<T: Element>(&self, value: T, x: &mut Self::Buffer<T>) -> Result<()>;

    /// `y = x`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` and `y` have the same length.
    unsafe fn copy<T: Element>(&self, x: &Self::Buffer<T>, y: &mut Self::Buffer<T>) -> Result<()>;

    /// `x = alpha x`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` belongs to this backend.
    unsafe fn scale<T: Scalar>(&self, alpha: T, x: &mut Self::Buffer<T>) -> Result<()>;

    /// `y = alpha x + y`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` and `y` have the same length.
    unsafe fn axpy<T: Scalar>(
        &self,
        alpha: T,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = alpha x + beta y`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` and `y` have the same length.
    unsafe fn axpby<T: Scalar>(
        &self,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `z = x ∘ y` (element-wise product).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x`, `y` and `z` have the same length.
    unsafe fn pointwise_mul<T: Scalar>(
        &self,
        x: &Self::Buffer<T>,
        y: &Self::Buffer<T>,
        z: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `z = x / y` (element-wise quotient).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x`, `y` and `z` have the same length.
    unsafe fn pointwise_div<T: Scalar>(
        &self,
        x: &Self::Buffer<T>,
        y: &Self::Buffer<T>,
        z: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `x · y`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` and `y` have the same length.
    unsafe fn dot<T: Scalar>(&self, x: &Self::Buffer<T>, y: &Self::Buffer<T>) -> Result<T>;

    /// `‖x‖₂`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` belongs to this backend.
    unsafe fn nrm2<T: Scalar>(&self, x: &Self::Buffer<T>) -> Result<T>;

    /// `max |xᵢ|` (NaN if any element is NaN, 0 if empty).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` belongs to this backend.
    unsafe fn amax<T: Scalar>(&self, x: &Self::Buffer<T>) -> Result<T>;

    /// `y = x` rounded to `D` (one rounding to nearest even).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` and `y` have the same length.
    unsafe fn convert<S: Element, D: Element>(
        &self,
        x: &Self::Buffer<S>,
        y: &mut Self::Buffer<D>,
    ) -> Result<()>;

    /// `x += alpha p; r -= alpha q`, returning the new `r · r`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `p`, `q`, `x` and `r` have the same length.
    unsafe fn cg_update<T: Scalar>(
        &self,
        alpha: T,
        p: &Self::Buffer<T>,
        q: &Self::Buffer<T>,
        x: &mut Self::Buffer<T>,
        r: &mut Self::Buffer<T>,
    ) -> Result<T>;

    /// `z = d ∘ r`, returning `r · z`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `d`, `r` and `z` have the same length.
    unsafe fn pointwise_mul_dot<T: Scalar>(
        &self,
        d: &Self::Buffer<T>,
        r: &Self::Buffer<T>,
        z: &mut Self::Buffer<T>,
    ) -> Result<T>;

    /// `scalars[slot] = x · y`, the result left on the device (no read-back).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `x` and `y` have the same length; `slot < len(scalars)`.
    unsafe fn dot_device<T: Scalar>(
        &self,
        x: &Self::Buffer<T>,
        y: &Self::Buffer<T>,
        scalars: &mut Self::Buffer<T>,
        slot: usize,
    ) -> Result<()>;

    /// The CG update with device-resident scalars (see [`cg_scalars`]):
    /// `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`; `s[BETA] = r·r / s[RR]`; `s[RR] = r·r`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `p`, `q`, `x` and `r` have the same length; `len(scalars) >= cg_scalars::LEN`.
    unsafe fn cg_update_device<T: Scalar>(
        &self,
        scalars: &mut Self::Buffer<T>,
        p: &Self::Buffer<T>,
        q: &Self::Buffer<T>,
        x: &mut Self::Buffer<T>,
        r: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `p = r + s[BETA] p` with the device-resident β of
    /// [`cg_update_device`](Self::cg_update_device); `r` of any precision, rounded to `p`'s
    /// (exactly, where `p`'s is the wider; the identity where they are the same).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `r` and `p` have the same length; `len(scalars) >= cg_scalars::LEN`.
    unsafe fn xpay_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &Self::Buffer<T>,
        r: &Self::Buffer<L>,
        p: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `s[BETA] = s[RZ_NEW] / s[RZ]` (`flexible`: `(s[RZ_NEW] − s[RZ_PREV]) / s[RZ]`);
    /// `s[RZ] = s[RZ_NEW]; s[RR] = s[RZ_NEW]` (see [`cg_scalars`]): the scalar step of PCG
    /// with device-resident scalars.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `len(scalars) >= cg_scalars::PCG_LEN` (`cg_scalars::FLEXIBLE_LEN` if `flexible`).
    unsafe fn pcg_rotate_device<T: Scalar>(
        &self,
        scalars: &mut Self::Buffer<T>,
        flexible: bool,
    ) -> Result<()>;

    /// PCG with the Jacobi preconditioner `z = d ∘ r`, on the device scalars (see
    /// [`cg_scalars`]): `α = s[RR] / s[PQ]`; `x += α p` (when `x` is given); `r −= α q`;
    /// `rz = r · (d ∘ r)`; `s[BETA] = rz / s[RZ]`; `s[RZ] = s[RR] = rz`; `s[RZ_NEW] = r · r`.
    /// One pass over the vectors; z is not stored.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `d`, `p`, `q`, `x` and `r` have the same length; `len(scalars) >= cg_scalars::PCG_LEN`.
    unsafe fn pcg_jacobi_update_device<T: Scalar>(
        &self,
        scalars: &mut Self::Buffer<T>,
        d: &Self::Buffer<T>,
        p: &Self::Buffer<T>,
        q: &Self::Buffer<T>,
        x: Option<&mut Self::Buffer<T>>,
        r: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `p = d ∘ r + s[BETA] p`: the PCG-Jacobi direction.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `d`, `r` and `p` have the same length; `len(scalars) >= cg_scalars::LEN`.
    unsafe fn jacobi_xpay_device<T: Scalar>(
        &self,
        scalars: &Self::Buffer<T>,
        d: &Self::Buffer<T>,
        r: &Self::Buffer<T>,
        p: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// One Chronopoulos–Gear step of distributed CG after its global sums (see
    /// [`cgcg_update`](crate::vector::cgcg_update)): `p = u + beta p; s = w + beta s;
    /// x += alpha p; r −= alpha s` (`u` is `r` where `u` is `None`), then `u = d ∘ r` where `d`
    /// is given; `scalars[slots[0]] = r · r` and `scalars[slots[1]] = r · u` (`r · r` without
    /// `d`) of the new vectors, left on the device.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// All vectors have the same length; `d` only with `u`; both slots are below
    /// `len(scalars)`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn cgcg_update<T: Scalar>(
        &self,
        alpha: T,
        beta: T,
        d: Option<&Self::Buffer<T>>,
        u: Option<&mut Self::Buffer<T>>,
        w: &Self::Buffer<T>,
        p: &mut Self::Buffer<T>,
        s: &mut Self::Buffer<T>,
        x: &mut Self::Buffer<T>,
        r: &mut Self::Buffer<T>,
        scalars: &mut Self::Buffer<T>,
        slots: [usize; 2],
    ) -> Result<()>;

    /// Flexible PCG's step after a preconditioner applied in another precision, on the
    /// device scalars (see [`cg_scalars`]): `s[RZ_PREV] = r · z` of the `z` about to be
    /// overwritten; `z = round(low)`; `s[RZ_NEW] = r · z`; then the flexible rotation of
    /// [`pcg_rotate_device`](Self::pcg_rotate_device). The default is those four steps
    /// ([`dot_device`](Self::dot_device), [`convert`](Self::convert), `dot_device`,
    /// `pcg_rotate_device`); a device makes them one pass over the vectors with the same
    /// sums.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `low`, `r` and `z` have the same length; `len(scalars) >= cg_scalars::FLEXIBLE_LEN`.
    unsafe fn pcg_flexible_convert_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &mut Self::Buffer<T>,
        low: &Self::Buffer<L>,
        r: &Self::Buffer<T>,
        z: &mut Self::Buffer<T>,
    ) -> Result<()> {
        // SAFETY: the caller's contract covers each step.
        unsafe {
            self.dot_device(r, z, scalars, cg_scalars::RZ_PREV)?;
            self.convert(low, z)?;
            self.dot_device(r, z, scalars, cg_scalars::RZ_NEW)?;
            self.pcg_rotate_device(scalars, true)
        }
    }

    /// Flexible PCG's step where the preconditioner keeps `z` in another precision, old and
    /// new (see [`cg_scalars`]): `s[RZ_PREV] = r · round(old)`; `s[RZ_NEW] = r · round(low)`;
    /// the flexible rotation. The sums are those of
    /// [`pcg_flexible_convert_device`](Self::pcg_flexible_convert_device) with
    /// `z = round(old)` (the same bits); nothing but the scalars is written.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// `low`, `old` and `r` have the same length; `len(scalars) >=
    /// cg_scalars::FLEXIBLE_LEN`.
    unsafe fn pcg_flexible_low_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &mut Self::Buffer<T>,
        low: &Self::Buffer<L>,
        old: &Self::Buffer<L>,
        r: &Self::Buffer<T>,
    ) -> Result<()>;

    /// `y[i] = x[index[i]]` for every `i < min(len(y), len(index))`; entries whose index is
    /// out of range are left unchanged (nothing is accessed out of bounds).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// The buffers belong to this backend (any lengths and index values are safe).
    unsafe fn gather<T: Element>(
        &self,
        x: &Self::Buffer<T>,
        index: &Self::Buffer<u32>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y[index[i]] = x[i]` for every `i < min(len(x), len(index))`; out-of-range indices
    /// are skipped.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// The buffers belong to this backend (any lengths and index values are safe).
    unsafe fn scatter<T: Element>(
        &self,
        x: &Self::Buffer<T>,
        index: &Self::Buffer<u32>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;
}

// The CPU kernels zip their operands, so unequal lengths would only shorten the loop; the
// contract is the trait's all the same.
impl VectorOps for Cpu {
    unsafe fn fill<T: Element>(&self, value: T, x: &mut Vec<T>) -> Result<()> {
        cpu::fill(x, value);
        Ok(())
    }

    unsafe fn copy<T: Element>(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        cpu::copy(x, y);
        Ok(())
    }

    unsafe fn scale<T: Scalar>(&self, alpha: T, x: &mut Vec<T>) -> Result<()> {
        cpu::scale(alpha, x);
        Ok(())
    }

    unsafe fn axpy<T: Scalar>(&self, alpha: T, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        cpu::axpy(alpha, x, y);
        Ok(())
    }

    unsafe fn axpby<T: Scalar>(&self, alpha: T, x: &Vec<T>, beta: T, y: &mut Vec<T>) -> Result<()> {
        cpu::axpby(alpha, x, beta, y);
        Ok(())
    }

    unsafe fn pointwise_mul<T: Scalar>(
        &self,
        x: &Vec<T>,
        y: &Vec<T>,
        z: &mut Vec<T>,
    ) -> Result<()> {
        cpu::pointwise_mul(x, y, z);
        Ok(())
    }

    unsafe fn pointwise_div<T: Scalar>(
        &self,
        x: &Vec<T>,
        y: &Vec<T>,
        z: &mut Vec<T>,
    ) -> Result<()> {
        cpu::pointwise_div(x, y, z);
        Ok(())
    }

    unsafe fn dot<T: Scalar>(&self, x: &Vec<T>, y: &Vec<T>) -> Result<T> {
        Ok(T::from_f64(cpu::dot(x, y)))
    }

    unsafe fn nrm2<T: Scalar>(&self, x: &Vec<T>) -> Result<T> {
        Ok(T::from_f64(cpu::nrm2(x)))
    }

    unsafe fn amax<T: Scalar>(&self, x: &Vec<T>) -> Result<T> {
        Ok(T::from_f64(cpu::amax(x)))
    }

    unsafe fn convert<S: Element, D: Element>(&self, x: &Vec<S>, y: &mut Vec<D>) -> Result<()> {
        cpu::convert(x, y);
        Ok(())
    }

    unsafe fn cg_update<T: Scalar>(
        &self,
        alpha: T,
        p: &Vec<T>,
        q: &Vec<T>,
        x: &mut Vec<T>,
        r: &mut Vec<T>,
    ) -> Result<T> {
        Ok(T::from_f64(cpu::cg_update(alpha, p, q, x, r)))
    }

    unsafe fn pointwise_mul_dot<T: Scalar>(
        &self,
        d: &Vec<T>,
        r: &Vec<T>,
        z: &mut Vec<T>,
    ) -> Result<T> {
        Ok(T::from_f64(cpu::pointwise_mul_dot(d, r, z)))
    }

    unsafe fn dot_device<T: Scalar>(
        &self,
        x: &Vec<T>,
        y: &Vec<T>,
        scalars: &mut Vec<T>,
        slot: usize,
    ) -> Result<()> {
        scalars[slot] = T::from_f64(cpu::dot(x, y));
        Ok(())
    }

    unsafe fn cg_update_device<T: Scalar>(
        &self,
        scalars: &mut Vec<T>,
        p: &Vec<T>,
        q: &Vec<T>,
        x: &mut Vec<T>,
        r: &mut Vec<T>,
    ) -> Result<()> {
        use cg_scalars::{BETA, PQ, RR};
        let alpha = scalars[RR] / scalars[PQ];
        let rr = T::from_f64(cpu::cg_update(alpha, p, q, x, r));
        scalars[BETA] = rr / scalars[RR];
        scalars[RR] = rr;
        Ok(())
    }

    unsafe fn xpay_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &Vec<T>,
        r: &Vec<L>,
        p: &mut Vec<T>,
    ) -> Result<()> {
        cpu::xpay_convert(r, scalars[cg_scalars::BETA], p);
        Ok(())
    }

    unsafe fn pcg_flexible_low_device<L: Scalar, T: Scalar>(
        &self,
        scalars: &mut Vec<T>,
        low: &Vec<L>,
        old: &Vec<L>,
        r: &Vec<T>,
    ) -> Result<()> {
        // The sums of `dot_device(r, z)` with z = round(old), then round(low).
        scalars[cg_scalars::RZ_PREV] = T::from_f64(cpu::dot_mixed(r, old));
        scalars[cg_scalars::RZ_NEW] = T::from_f64(cpu::dot_mixed(r, low));
        // SAFETY: len(scalars) >= FLEXIBLE_LEN (the caller's contract).
        unsafe { self.pcg_rotate_device(scalars, true) }
    }

    unsafe fn pcg_rotate_device<T: Scalar>(
        &self,
        scalars: &mut Vec<T>,
        flexible: bool,
    ) -> Result<()> {
        use cg_scalars::{BETA, RR, RZ, RZ_NEW, RZ_PREV};
        let numerator = if flexible {
            scalars[RZ_NEW] - scalars[RZ_PREV]
        } else {
            scalars[RZ_NEW]
        };
        scalars[BETA] = numerator / scalars[RZ];
        scalars[RZ] = scalars[RZ_NEW];
        scalars[RR] = scalars[RZ_NEW];
        Ok(())
    }

    unsafe fn pcg_jacobi_update_device<T: Scalar>(
        &self,
        scalars: &mut Vec<T>,
        d: &Vec<T>,
        p: &Vec<T>,
        q: &Vec<T>,
        x: Option<&mut Vec<T>>,
        r: &mut Vec<T>,
    ) -> Result<()> {
        use cg_scalars::{BETA, PQ, RR, RZ, RZ_NEW};
        let alpha = scalars[RR] / scalars[PQ];
        let rr = T::from_f64(match x {
            Some(x) => cpu::cg_update(alpha, p, q, x, r),
            None => cpu::residual_update(alpha, q, r),
        });
        let rz = T::from_f64(cpu::jacobi_dot(d, r));
        scalars[BETA] = rz / scalars[RZ];
        scalars[RZ] = rz;
        scalars[RR] = rz;
        scalars[RZ_NEW] = rr;
        Ok(())
    }

    unsafe fn jacobi_xpay_device<T: Scalar>(
        &self,
        scalars: &Vec<T>,
        d: &Vec<T>,
        r: &Vec<T>,
        p: &mut Vec<T>,
    ) -> Result<()> {
        cpu::jacobi_xpay(d, r, scalars[cg_scalars::BETA], p);
        Ok(())
    }

    unsafe fn cgcg_update<T: Scalar>(
        &self,
        alpha: T,
        beta: T,
        d: Option<&Vec<T>>,
        u: Option<&mut Vec<T>>,
        w: &Vec<T>,
        p: &mut Vec<T>,
        s: &mut Vec<T>,
        x: &mut Vec<T>,
        r: &mut Vec<T>,
        scalars: &mut Vec<T>,
        slots: [usize; 2],
    ) -> Result<()> {
        let d = d.map(|d| d.as_slice());
        let u = u.map(|u| u.as_mut_slice());
        let (rr, ru) = cpu::cgcg_update(alpha, beta, d, u, w, p, s, x, r);
        scalars[slots[0]] = T::from_f64(rr);
        scalars[slots[1]] = T::from_f64(ru);
        Ok(())
    }

    unsafe fn gather<T: Element>(
        &self,
        x: &Vec<T>,
        index: &Vec<u32>,
        y: &mut Vec<T>,
    ) -> Result<()> {
        use rayon::prelude::*;
        y.par_iter_mut().zip(index.par_iter()).for_each(|(y, &j)| {
            if let Some(&v) = x.get(j as usize) {
                *y = v;
            }
        });
        Ok(())
    }

    unsafe fn scatter<T: Element>(
        &self,
        x: &Vec<T>,
        index: &Vec<u32>,
        y: &mut Vec<T>,
    ) -> Result<()> {
        for (&v, &j) in x.iter().zip(index) {
            if let Some(slot) = y.get_mut(j as usize) {
                *slot = v;
            }
        }
        Ok(())
    }
}
