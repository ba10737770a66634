//! Device vectors and the vector operations every solver needs.
//!
//! [`Vector<B, T>`](Vector) owns a buffer of `len` values of `T` on backend `B`. Its methods
//! validate lengths and then call the backend's [`VectorOps`]: one kernel each, on every
//! backend, in f32 and f64.
//!
//! | operation | formula | bytes moved (T = element size) |
//! |---|---|---|
//! | [`fill`](Vector::fill) | `x = v` | n T |
//! | [`copy_from`](Vector::copy_from) | `y = x` | 2 n T |
//! | [`scale`](Vector::scale) | `x = α x` | 2 n T |
//! | [`axpy`](Vector::axpy) | `y = α x + y` | 3 n T |
//! | [`axpby`](Vector::axpby) | `y = α x + β y` | 3 n T |
//! | [`pointwise_mul`](Vector::pointwise_mul) / [`pointwise_div`](Vector::pointwise_div) | `z = x ∘ y`, `z = x / y` | 3 n T |
//! | [`dot`](Vector::dot) | `x · y` | 2 n T |
//! | [`nrm2`](Vector::nrm2) | `‖x‖₂` | n T |
//! | [`amax`](Vector::amax) | `max |xᵢ|` | n T |
//! | [`convert_from`](Vector::convert_from) | `y = round(x)` | n (S + D) |
//! | [`cg_update`] | `x += α p; r −= α q; return r · r` | 6 n T |
//! | [`pointwise_mul_dot`] | `z = d ∘ r; return r · z` | 3 n T |
//!
//! # Reductions
//! `dot`, `nrm2`, `amax` and the fused updates are deterministic: for a given backend,
//! length and launch configuration the result is the same bit for bit on every call.
//! - CPU: fixed chunks of 16384 elements, eight f64 lanes per chunk, chunk sums added
//!   pairwise; f64 accumulation for every element type (the thread count does not matter).
//! - Devices: each unit sums its strided share (at most a few hundred terms, in independent
//!   vector lanes) in the working precision, then a fixed-shape tree in shared memory per
//!   cube gives one partial per cube; the partials are added by a second one-cube pass on the
//!   device when the result stays there or there are more than 256 of them, else pairwise in
//!   f64 on the host (blocked pairwise summation either way). An f32 dot product of 10⁸
//!   elements is within 1e-6 relative of the f64 value.
//!
//! `nrm2` is computed as `√(Σ xᵢ²)` and recomputed with scaling by `max |xᵢ|` when the sum of
//! squares overflows or underflows. `amax` returns NaN when any element is NaN.

use std::fmt;

use ndarray::{Array1, ArrayBase, Data, Ix1};

use crate::backend::core::BackendCore;
use crate::error::{check_device, check_len, Result};
use crate::scalar::{Element, Scalar};

pub(crate) mod cpu;
pub(crate) mod cube;
mod ops;

pub use ops::VectorOps;

/// Checks that `other` has the length of `this` and lives on its device: what every
/// unchecked [`VectorOps`] method needs of its operands.
fn agree<B: BackendCore, T: Element, U: Element>(
    op: &'static str,
    what: &'static str,
    this: &Vector<B, T>,
    other: &Vector<B, U>,
) -> Result<()> {
    check_len(op, what, this.len(), other.len())?;
    check_device(op, &this.backend, &other.backend)
}

/// A vector of `len` values of type `T` in the memory of backend `B`.
///
/// Created from host data ([`from_slice`](Vector::from_slice),
/// [`from_ndarray`](Vector::from_ndarray)) or as [`zeros`](Vector::zeros); read back with
/// [`to_vec`](Vector::to_vec) or [`to_ndarray`](Vector::to_ndarray). Arithmetic methods take
/// the other operands by reference and write into `self`.
///
/// ```
/// use galerkin::{Cpu, Vector};
///
/// let cpu = Cpu::new();
/// let x = Vector::from_slice(&cpu, &[1.0f64, 2.0, 3.0])?;
/// let mut y = Vector::from_slice(&cpu, &[1.0f64, 1.0, 1.0])?;
/// y.axpy(2.0, &x)?; // y = 2 x + y
/// assert_eq!(y.to_vec()?, [3.0, 5.0, 7.0]);
/// assert_eq!(x.dot(&y)?, 34.0);
/// # Ok::<(), galerkin::Error>(())
/// ```
pub struct Vector<B: BackendCore, T: Element> {
    backend: B,
    buffer: B::Buffer<T>,
}

impl<B: BackendCore, T: Element> fmt::Debug for Vector<B, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vector")
            .field("backend", &self.backend.info().to_string())
            .field("dtype", &T::DTYPE)
            .field("len", &self.len())
            .finish()
    }
}

impl<B: BackendCore, T: Element> Vector<B, T> {
    /// Wraps an existing buffer.
    ///
    /// # Safety
    /// `buffer` was allocated by `backend` (or a clone of it): a buffer of another device
    /// would reach that device's kernels through this vector's safe methods.
    pub unsafe fn from_buffer(backend: &B, buffer: B::Buffer<T>) -> Self {
        Vector {
            backend: backend.clone(),
            buffer,
        }
    }

    /// A vector of `len` zeros.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) if the device lacks `T`;
    /// [`Error::ResourceLimit`](crate::Error::ResourceLimit) if it is too large.
    pub fn zeros(backend: &B, len: usize) -> Result<Self> {
        backend.require::<T>("vectors")?;
        // SAFETY: allocated by `backend`.
        Ok(unsafe { Self::from_buffer(backend, backend.alloc(len)?) })
    }

    /// A vector holding a copy of `data`.
    ///
    /// # Errors
    /// As [`zeros`](Self::zeros).
    pub fn from_slice(backend: &B, data: &[T]) -> Result<Self> {
        backend.require::<T>("vectors")?;
        // SAFETY: uploaded by `backend`.
        Ok(unsafe { Self::from_buffer(backend, backend.upload(data)?) })
    }

    /// A vector holding a copy of a one-dimensional ndarray (any strides).
    ///
    /// # Errors
    /// As [`zeros`](Self::zeros).
    pub fn from_ndarray<S: Data<Elem = T>>(backend: &B, array: &ArrayBase<S, Ix1>) -> Result<Self> {
        match array.as_slice() {
            Some(slice) => Self::from_slice(backend, slice),
            None => Self::from_slice(backend, &array.to_vec()),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        B::len(&self.buffer)
    }

    /// Whether the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The backend the vector lives on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The underlying buffer (for kernels of other operator families).
    pub fn buffer(&self) -> &B::Buffer<T> {
        &self.buffer
    }

    /// The underlying buffer, mutably (for kernels of other operator families).
    ///
    /// # Safety
    /// The buffer may be written through, not replaced by a buffer of another device.
    pub unsafe fn buffer_mut(&mut self) -> &mut B::Buffer<T> {
        &mut self.buffer
    }

    /// Unwraps the buffer.
    pub fn into_buffer(self) -> B::Buffer<T> {
        self.buffer
    }

    /// Copies the contents to the host.
    ///
    /// # Errors
    /// [`Error::Device`](crate::Error::Device) if the device fails.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.backend.download(&self.buffer)
    }

    /// Copies the contents to a host ndarray.
    ///
    /// # Errors
    /// As [`to_vec`](Self::to_vec).
    pub fn to_ndarray(&self) -> Result<Array1<T>> {
        Ok(Array1::from_vec(self.to_vec()?))
    }

    /// Overwrites the contents with host data of the same length.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        check_len("Vector::write", "data", self.len(), data.len())?;
        self.backend.write(&mut self.buffer, data)
    }
}

impl<B: VectorOps, T: Element> Vector<B, T> {
    /// A vector of `len` copies of `value`.
    ///
    /// # Errors
    /// As [`zeros`](Self::zeros).
    pub fn full(backend: &B, len: usize, value: T) -> Result<Self> {
        let mut v = Self::zeros(backend, len)?;
        v.fill(value)?;
        Ok(v)
    }

    /// A copy on the same device.
    ///
    /// # Errors
    /// As [`zeros`](Self::zeros).
    pub fn try_clone(&self) -> Result<Self> {
        let mut v = Self::zeros(&self.backend, self.len())?;
        v.copy_from(self)?;
        Ok(v)
    }

    /// `self = value` in every element.
    ///
    /// # Errors
    /// [`Error::Device`](crate::Error::Device) if the kernel fails.
    pub fn fill(&mut self, value: T) -> Result<()> {
        // SAFETY: the buffer belongs to the backend (the invariant of Vector).
        unsafe { self.backend.fill(value, &mut self.buffer) }
    }

    /// `self = x`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn copy_from(&mut self, x: &Self) -> Result<()> {
        agree("copy", "x", self, x)?;
        // SAFETY: lengths and device checked above.
        unsafe { self.backend.copy(&x.buffer, &mut self.buffer) }
    }

    /// `self = x` rounded to `T` (or widened exactly): precision conversion, e.g. an f64
    /// vector into an f32 one.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn convert_from<S: Element>(&mut self, x: &Vector<B, S>) -> Result<()> {
        agree("convert", "x", self, x)?;
        // SAFETY: lengths and device checked above.
        unsafe { self.backend.convert(&x.buffer, &mut self.buffer) }
    }

    /// A new vector holding `self` rounded to `D`.
    ///
    /// # Errors
    /// As [`zeros`](Self::zeros).
    pub fn to_precision<D: Element>(&self) -> Result<Vector<B, D>> {
        let mut y = Vector::<B, D>::zeros(&self.backend, self.len())?;
        y.convert_from(self)?;
        Ok(y)
    }
}

impl<B: VectorOps, T: Scalar> Vector<B, T> {
    /// `self = alpha self`.
    ///
    /// # Errors
    /// [`Error::Device`](crate::Error::Device) if the kernel fails.
    pub fn scale(&mut self, alpha: T) -> Result<()> {
        // SAFETY: the buffer belongs to the backend (the invariant of Vector).
        unsafe { self.backend.scale(alpha, &mut self.buffer) }
    }

    /// `self = alpha x + self`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn axpy(&mut self, alpha: T, x: &Self) -> Result<()> {
        agree("axpy", "x", self, x)?;
        // SAFETY: lengths and device checked above.
        unsafe { self.backend.axpy(alpha, &x.buffer, &mut self.buffer) }
    }

    /// `self = alpha x + beta self`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn axpby(&mut self, alpha: T, x: &Self, beta: T) -> Result<()> {
        agree("axpby", "x", self, x)?;
        // SAFETY: lengths and device checked above.
        unsafe { self.backend.axpby(alpha, &x.buffer, beta, &mut self.buffer) }
    }

    /// `self = x ∘ y` (element-wise product).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn pointwise_mul(&mut self, x: &Self, y: &Self) -> Result<()> {
        agree("pointwise_mul", "x", self, x)?;
        agree("pointwise_mul", "y", self, y)?;
        // SAFETY: lengths and devices checked above.
        unsafe {
            self.backend
                .pointwise_mul(&x.buffer, &y.buffer, &mut self.buffer)
        }
    }

    /// `self = x / y` (element-wise quotient).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn pointwise_div(&mut self, x: &Self, y: &Self) -> Result<()> {
        agree("pointwise_div", "x", self, x)?;
        agree("pointwise_div", "y", self, y)?;
        // SAFETY: lengths and devices checked above.
        unsafe {
            self.backend
                .pointwise_div(&x.buffer, &y.buffer, &mut self.buffer)
        }
    }

    /// `self · y`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn dot(&self, y: &Self) -> Result<T> {
        agree("dot", "y", self, y)?;
        // SAFETY: lengths and device checked above.
        unsafe { self.backend.dot(&self.buffer, &y.buffer) }
    }

    /// `‖self‖₂`, safe from overflow and underflow of the squares.
    ///
    /// # Errors
    /// [`Error::Device`](crate::Error::Device) if the kernel fails.
    pub fn nrm2(&self) -> Result<T> {
        // SAFETY: the buffer belongs to the backend (the invariant of Vector).
        unsafe { self.backend.nrm2(&self.buffer) }
    }

    /// `max |selfᵢ|`: NaN if any element is NaN, 0 for an empty vector.
    ///
    /// # Errors
    /// [`Error::Device`](crate::Error::Device) if the kernel fails.
    pub fn amax(&self) -> Result<T> {
        // SAFETY: the buffer belongs to the backend (the invariant of Vector).
        unsafe { self.backend.amax(&self.buffer) }
    }
}

/// Slots of the device-resident scalars of CG ([`VectorOps::cg_update_device`]).
pub mod cg_scalars {
    /// `r · r` of the current residual.
    pub const RR: usize = 0;
    /// `p · A p` of the current direction.
    pub const PQ: usize = 1;
    /// `β` for the next direction.
    pub const BETA: usize = 2;
    /// Number of slots.
    pub const LEN: usize = 4;
    /// PCG: `r · z` of the current residual and preconditioned residual.
    pub const RZ: usize = 4;
    /// PCG: `r · z` of the new residual, before [`pcg_rotate_device`](super::pcg_rotate_device).
    pub const RZ_NEW: usize = 5;
    /// Number of slots of the preconditioned iteration.
    pub const PCG_LEN: usize = 6;
}

/// The fused CG update in one pass: `x += alpha p; r -= alpha q`, returning the new `r · r`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
pub fn cg_update<B: VectorOps, T: Scalar>(
    alpha: T,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    x: &mut Vector<B, T>,
    r: &mut Vector<B, T>,
) -> Result<T> {
    agree("cg_update", "p", x, p)?;
    agree("cg_update", "q", x, q)?;
    agree("cg_update", "r", x, r)?;
    // SAFETY: lengths and devices checked above.
    unsafe {
        x.backend
            .cg_update(alpha, &p.buffer, &q.buffer, &mut x.buffer, &mut r.buffer)
    }
}

/// `scalars[slot] = x · y`, left on the device (no read-back): the inner products of CG with
/// device-resident scalars.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths of `x` and
/// `y` differ; [`Error::InvalidArgument`](crate::Error::InvalidArgument) if `slot` is not
/// below `scalars.len()`.
pub fn dot_into<B: VectorOps, T: Scalar>(
    x: &Vector<B, T>,
    y: &Vector<B, T>,
    scalars: &mut Vector<B, T>,
    slot: usize,
) -> Result<()> {
    agree("dot_into", "y", x, y)?;
    check_slot("dot_into", scalars.len(), slot)?;
    check_device("dot_into", &x.backend, &scalars.backend)?;
    // SAFETY: x and y have equal lengths, slot < len(scalars), one device: checked above.
    unsafe {
        x.backend
            .dot_device(&x.buffer, &y.buffer, &mut scalars.buffer, slot)
    }
}

/// The CG update with device-resident scalars (see [`cg_scalars`]):
/// `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`; `s[BETA] = r·r / s[RR]`; `s[RR] = r·r`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the vector lengths
/// differ or `scalars` has fewer than [`cg_scalars::LEN`] entries.
pub fn cg_update_device<B: VectorOps, T: Scalar>(
    scalars: &mut Vector<B, T>,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    x: &mut Vector<B, T>,
    r: &mut Vector<B, T>,
) -> Result<()> {
    agree("cg_update_device", "p", x, p)?;
    agree("cg_update_device", "q", x, q)?;
    agree("cg_update_device", "r", x, r)?;
    check_scalars("cg_update_device", scalars.len())?;
    check_device("cg_update_device", &x.backend, &scalars.backend)?;
    // SAFETY: equal lengths, len(scalars) >= cg_scalars::LEN, one device: checked above.
    unsafe {
        x.backend.cg_update_device(
            &mut scalars.buffer,
            &p.buffer,
            &q.buffer,
            &mut x.buffer,
            &mut r.buffer,
        )
    }
}

/// `p = r + s[BETA] p` with the device-resident β of [`cg_update_device`].
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ or
/// `scalars` has fewer than [`cg_scalars::LEN`] entries.
pub fn xpay_device<B: VectorOps, T: Scalar>(
    scalars: &Vector<B, T>,
    r: &Vector<B, T>,
    p: &mut Vector<B, T>,
) -> Result<()> {
    agree("xpay_device", "r", p, r)?;
    check_scalars("xpay_device", scalars.len())?;
    check_device("xpay_device", &p.backend, &scalars.backend)?;
    // SAFETY: equal lengths, len(scalars) >= cg_scalars::LEN, one device: checked above.
    unsafe {
        p.backend
            .xpay_device(&scalars.buffer, &r.buffer, &mut p.buffer)
    }
}

/// The PCG step between the preconditioner and the new direction, on the device scalars
/// (see [`cg_scalars`]): `s[BETA] = s[RZ_NEW] / s[RZ]`; `s[RZ] = s[RZ_NEW]`;
/// `s[RR] = s[RZ_NEW]` (the numerator of the next `α` in [`cg_update_device`]).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if `scalars` has fewer than
/// [`cg_scalars::PCG_LEN`] entries.
pub fn pcg_rotate_device<B: VectorOps, T: Scalar>(scalars: &mut Vector<B, T>) -> Result<()> {
    if scalars.len() < cg_scalars::PCG_LEN {
        return Err(crate::Error::dims(
            "pcg_rotate_device",
            "scalars (at least cg_scalars::PCG_LEN)",
            cg_scalars::PCG_LEN,
            scalars.len(),
        ));
    }
    // SAFETY: len(scalars) >= PCG_LEN: checked above.
    unsafe { scalars.backend.pcg_rotate_device(&mut scalars.buffer) }
}

/// PCG with the Jacobi preconditioner `z = d ∘ r`, update and inner products in one pass on
/// the device scalars (see [`cg_scalars`]): `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`;
/// `rz = r · (d ∘ r)`; `s[BETA] = rz / s[RZ]`; `s[RZ] = s[RR] = rz`; `s[RZ_NEW] = r · r`.
/// Followed by [`jacobi_xpay_device`], it is one PCG-Jacobi iteration after the SpMV, with
/// the arithmetic of [`cg_update_device`], `z = d ∘ r`, [`dot_into`] and
/// [`pcg_rotate_device`] (identical results on the CPU backend).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the vector lengths
/// differ or `scalars` has fewer than [`cg_scalars::PCG_LEN`] entries.
pub fn pcg_jacobi_update_device<B: VectorOps, T: Scalar>(
    scalars: &mut Vector<B, T>,
    d: &Vector<B, T>,
    p: &Vector<B, T>,
    q: &Vector<B, T>,
    x: &mut Vector<B, T>,
    r: &mut Vector<B, T>,
) -> Result<()> {
    const OP: &str = "pcg_jacobi_update_device";
    agree(OP, "d", x, d)?;
    agree(OP, "p", x, p)?;
    agree(OP, "q", x, q)?;
    agree(OP, "r", x, r)?;
    if scalars.len() < cg_scalars::PCG_LEN {
        let what = "scalars (at least cg_scalars::PCG_LEN)";
        return Err(crate::Error::dims(
            OP,
            what,
            cg_scalars::PCG_LEN,
            scalars.len(),
        ));
    }
    check_device(OP, &x.backend, &scalars.backend)?;
    // SAFETY: equal lengths, len(scalars) >= PCG_LEN, one device: checked above.
    unsafe {
        x.backend.pcg_jacobi_update_device(
            &mut scalars.buffer,
            &d.buffer,
            &p.buffer,
            &q.buffer,
            &mut x.buffer,
            &mut r.buffer,
        )
    }
}

/// `p = d ∘ r + s[BETA] p`, the direction of PCG-Jacobi after [`pcg_jacobi_update_device`].
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ or
/// `scalars` has fewer than [`cg_scalars::LEN`] entries.
pub fn jacobi_xpay_device<B: VectorOps, T: Scalar>(
    scalars: &Vector<B, T>,
    d: &Vector<B, T>,
    r: &Vector<B, T>,
    p: &mut Vector<B, T>,
) -> Result<()> {
    agree("jacobi_xpay_device", "d", p, d)?;
    agree("jacobi_xpay_device", "r", p, r)?;
    check_scalars("jacobi_xpay_device", scalars.len())?;
    check_device("jacobi_xpay_device", &p.backend, &scalars.backend)?;
    // SAFETY: equal lengths, len(scalars) >= cg_scalars::LEN, one device: checked above.
    unsafe {
        p.backend
            .jacobi_xpay_device(&scalars.buffer, &d.buffer, &r.buffer, &mut p.buffer)
    }
}

/// Checks that `slot` indexes a vector of `len` device scalars.
pub(crate) fn check_slot(op: &'static str, len: usize, slot: usize) -> Result<()> {
    if slot < len {
        Ok(())
    } else {
        Err(crate::Error::InvalidArgument {
            op,
            name: "slot",
            reason: format!("slot {slot} is not below the {len} device scalars"),
        })
    }
}

fn check_scalars(op: &'static str, len: usize) -> Result<()> {
    if len < cg_scalars::LEN {
        return Err(crate::Error::dims(
            op,
            "scalars (at least cg_scalars::LEN)",
            cg_scalars::LEN,
            len,
        ));
    }
    Ok(())
}

/// The fused diagonal preconditioner step in one pass: `z = d ∘ r`, returning `r · z`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
pub fn pointwise_mul_dot<B: VectorOps, T: Scalar>(
    d: &Vector<B, T>,
    r: &Vector<B, T>,
    z: &mut Vector<B, T>,
) -> Result<T> {
    agree("pointwise_mul_dot", "d", z, d)?;
    agree("pointwise_mul_dot", "r", z, r)?;
    // SAFETY: lengths and devices checked above.
    unsafe {
        z.backend
            .pointwise_mul_dot(&d.buffer, &r.buffer, &mut z.buffer)
    }
}
