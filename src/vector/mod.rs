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
//!   cube; a second one-cube pass adds the per-cube partials (each unit a strided share, then
//!   a tree) on the device — blocked pairwise summation; the host reads one value. An f32
//!   dot product of 10⁸ elements is within 1e-6 relative of the f64 value.
//!
//! `nrm2` is computed as `√(Σ xᵢ²)` and recomputed with scaling by `max |xᵢ|` when the sum of
//! squares overflows or underflows. `amax` returns NaN when any element is NaN.

use std::fmt;

use ndarray::{Array1, ArrayBase, Data, Ix1};

use crate::backend::BackendCore;
use crate::error::{check_len, Result};
use crate::scalar::{Element, Scalar};

pub(crate) mod cpu;
pub(crate) mod cube;

/// The vector operation family: implemented by every backend.
///
/// Implementations may assume what the [`Vector`] methods check before calling them:
/// operands have equal lengths. Call them through [`Vector`].
pub trait VectorOps: BackendCore {
    /// `x = value`.
    fn fill<T: Element>(&self, value: T, x: &mut Self::Buffer<T>) -> Result<()>;
    /// `y = x`.
    fn copy<T: Element>(&self, x: &Self::Buffer<T>, y: &mut Self::Buffer<T>) -> Result<()>;
    /// `x = alpha x`.
    fn scale<T: Scalar>(&self, alpha: T, x: &mut Self::Buffer<T>) -> Result<()>;
    /// `y = alpha x + y`.
    fn axpy<T: Scalar>(&self, alpha: T, x: &Self::Buffer<T>, y: &mut Self::Buffer<T>)
        -> Result<()>;
    /// `y = alpha x + beta y`.
    fn axpby<T: Scalar>(
        &self,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `z = x ∘ y` (element-wise product).
    fn pointwise_mul<T: Scalar>(
        &self,
        x: &Self::Buffer<T>,
        y: &Self::Buffer<T>,
        z: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `z = x / y` (element-wise quotient).
    fn pointwise_div<T: Scalar>(
        &self,
        x: &Self::Buffer<T>,
        y: &Self::Buffer<T>,
        z: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `x · y`.
    fn dot<T: Scalar>(&self, x: &Self::Buffer<T>, y: &Self::Buffer<T>) -> Result<T>;
    /// `‖x‖₂`.
    fn nrm2<T: Scalar>(&self, x: &Self::Buffer<T>) -> Result<T>;
    /// `max |xᵢ|` (NaN if any element is NaN, 0 if empty).
    fn amax<T: Scalar>(&self, x: &Self::Buffer<T>) -> Result<T>;
    /// `y = x` rounded to `D` (one rounding to nearest even).
    fn convert<S: Element, D: Element>(
        &self,
        x: &Self::Buffer<S>,
        y: &mut Self::Buffer<D>,
    ) -> Result<()>;
    /// `x += alpha p; r -= alpha q`, returning the new `r · r`.
    fn cg_update<T: Scalar>(
        &self,
        alpha: T,
        p: &Self::Buffer<T>,
        q: &Self::Buffer<T>,
        x: &mut Self::Buffer<T>,
        r: &mut Self::Buffer<T>,
    ) -> Result<T>;
    /// `z = d ∘ r`, returning `r · z`.
    fn pointwise_mul_dot<T: Scalar>(
        &self,
        d: &Self::Buffer<T>,
        r: &Self::Buffer<T>,
        z: &mut Self::Buffer<T>,
    ) -> Result<T>;
    /// `scalars[slot] = x · y`, the result left on the device (no read-back).
    fn dot_device<T: Scalar>(
        &self,
        x: &Self::Buffer<T>,
        y: &Self::Buffer<T>,
        scalars: &mut Self::Buffer<T>,
        slot: usize,
    ) -> Result<()>;
    /// The CG update with device-resident scalars (see [`cg_scalars`]):
    /// `α = s[RR] / s[PQ]`; `x += α p`; `r −= α q`; `s[BETA] = r·r / s[RR]`; `s[RR] = r·r`.
    fn cg_update_device<T: Scalar>(
        &self,
        scalars: &mut Self::Buffer<T>,
        p: &Self::Buffer<T>,
        q: &Self::Buffer<T>,
        x: &mut Self::Buffer<T>,
        r: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `p = r + s[BETA] p` with the device-resident β of [`cg_update_device`](Self::cg_update_device).
    fn xpay_device<T: Scalar>(
        &self,
        scalars: &Self::Buffer<T>,
        r: &Self::Buffer<T>,
        p: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `y[i] = x[index[i]]` for every `i < min(len(y), len(index))`; entries whose index is
    /// out of range are left unchanged (nothing is accessed out of bounds).
    fn gather<T: Element>(
        &self,
        x: &Self::Buffer<T>,
        index: &Self::Buffer<u32>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;
    /// `y[index[i]] = x[i]` for every `i < min(len(x), len(index))`; out-of-range indices
    /// are skipped.
    fn scatter<T: Element>(
        &self,
        x: &Self::Buffer<T>,
        index: &Self::Buffer<u32>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;
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
    pub fn from_buffer(backend: &B, buffer: B::Buffer<T>) -> Self {
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
        Ok(Self::from_buffer(backend, backend.alloc(len)?))
    }

    /// A vector holding a copy of `data`.
    ///
    /// # Errors
    /// As [`zeros`](Self::zeros).
    pub fn from_slice(backend: &B, data: &[T]) -> Result<Self> {
        backend.require::<T>("vectors")?;
        Ok(Self::from_buffer(backend, backend.upload(data)?))
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

    /// The underlying buffer, mutably.
    pub fn buffer_mut(&mut self) -> &mut B::Buffer<T> {
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
        self.backend.fill(value, &mut self.buffer)
    }

    /// `self = x`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn copy_from(&mut self, x: &Self) -> Result<()> {
        check_len("copy", "x", self.len(), x.len())?;
        self.backend.copy(&x.buffer, &mut self.buffer)
    }

    /// `self = x` rounded to `T` (or widened exactly): precision conversion, e.g. an f64
    /// vector into an f32 one.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn convert_from<S: Element>(&mut self, x: &Vector<B, S>) -> Result<()> {
        check_len("convert", "x", self.len(), x.len())?;
        self.backend.convert(&x.buffer, &mut self.buffer)
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
        self.backend.scale(alpha, &mut self.buffer)
    }

    /// `self = alpha x + self`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn axpy(&mut self, alpha: T, x: &Self) -> Result<()> {
        check_len("axpy", "x", self.len(), x.len())?;
        self.backend.axpy(alpha, &x.buffer, &mut self.buffer)
    }

    /// `self = alpha x + beta self`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn axpby(&mut self, alpha: T, x: &Self, beta: T) -> Result<()> {
        check_len("axpby", "x", self.len(), x.len())?;
        self.backend.axpby(alpha, &x.buffer, beta, &mut self.buffer)
    }

    /// `self = x ∘ y` (element-wise product).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn pointwise_mul(&mut self, x: &Self, y: &Self) -> Result<()> {
        check_len("pointwise_mul", "x", self.len(), x.len())?;
        check_len("pointwise_mul", "y", self.len(), y.len())?;
        self.backend
            .pointwise_mul(&x.buffer, &y.buffer, &mut self.buffer)
    }

    /// `self = x / y` (element-wise quotient).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn pointwise_div(&mut self, x: &Self, y: &Self) -> Result<()> {
        check_len("pointwise_div", "x", self.len(), x.len())?;
        check_len("pointwise_div", "y", self.len(), y.len())?;
        self.backend
            .pointwise_div(&x.buffer, &y.buffer, &mut self.buffer)
    }

    /// `self · y`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) if the lengths differ.
    pub fn dot(&self, y: &Self) -> Result<T> {
        check_len("dot", "y", self.len(), y.len())?;
        self.backend.dot(&self.buffer, &y.buffer)
    }

    /// `‖self‖₂`, safe from overflow and underflow of the squares.
    ///
    /// # Errors
    /// [`Error::Device`](crate::Error::Device) if the kernel fails.
    pub fn nrm2(&self) -> Result<T> {
        self.backend.nrm2(&self.buffer)
    }

    /// `max |selfᵢ|`: NaN if any element is NaN, 0 for an empty vector.
    ///
    /// # Errors
    /// [`Error::Device`](crate::Error::Device) if the kernel fails.
    pub fn amax(&self) -> Result<T> {
        self.backend.amax(&self.buffer)
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
    let n = x.len();
    check_len("cg_update", "p", n, p.len())?;
    check_len("cg_update", "q", n, q.len())?;
    check_len("cg_update", "r", n, r.len())?;
    x.backend
        .cg_update(alpha, &p.buffer, &q.buffer, &mut x.buffer, &mut r.buffer)
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
    check_len("pointwise_mul_dot", "d", z.len(), d.len())?;
    check_len("pointwise_mul_dot", "r", z.len(), r.len())?;
    z.backend
        .pointwise_mul_dot(&d.buffer, &r.buffer, &mut z.buffer)
}

impl VectorOps for crate::backend::Cpu {
    fn fill<T: Element>(&self, value: T, x: &mut Vec<T>) -> Result<()> {
        cpu::fill(x, value);
        Ok(())
    }

    fn copy<T: Element>(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        cpu::copy(x, y);
        Ok(())
    }

    fn scale<T: Scalar>(&self, alpha: T, x: &mut Vec<T>) -> Result<()> {
        cpu::scale(alpha, x);
        Ok(())
    }

    fn axpy<T: Scalar>(&self, alpha: T, x: &Vec<T>, y: &mut Vec<T>) -> Result<()> {
        cpu::axpy(alpha, x, y);
        Ok(())
    }

    fn axpby<T: Scalar>(&self, alpha: T, x: &Vec<T>, beta: T, y: &mut Vec<T>) -> Result<()> {
        cpu::axpby(alpha, x, beta, y);
        Ok(())
    }

    fn pointwise_mul<T: Scalar>(&self, x: &Vec<T>, y: &Vec<T>, z: &mut Vec<T>) -> Result<()> {
        cpu::pointwise_mul(x, y, z);
        Ok(())
    }

    fn pointwise_div<T: Scalar>(&self, x: &Vec<T>, y: &Vec<T>, z: &mut Vec<T>) -> Result<()> {
        cpu::pointwise_div(x, y, z);
        Ok(())
    }

    fn dot<T: Scalar>(&self, x: &Vec<T>, y: &Vec<T>) -> Result<T> {
        Ok(T::from_f64(cpu::dot(x, y)))
    }

    fn nrm2<T: Scalar>(&self, x: &Vec<T>) -> Result<T> {
        Ok(T::from_f64(cpu::nrm2(x)))
    }

    fn amax<T: Scalar>(&self, x: &Vec<T>) -> Result<T> {
        Ok(T::from_f64(cpu::amax(x)))
    }

    fn convert<S: Element, D: Element>(&self, x: &Vec<S>, y: &mut Vec<D>) -> Result<()> {
        cpu::convert(x, y);
        Ok(())
    }

    fn cg_update<T: Scalar>(
        &self,
        alpha: T,
        p: &Vec<T>,
        q: &Vec<T>,
        x: &mut Vec<T>,
        r: &mut Vec<T>,
    ) -> Result<T> {
        Ok(T::from_f64(cpu::cg_update(alpha, p, q, x, r)))
    }

    fn pointwise_mul_dot<T: Scalar>(&self, d: &Vec<T>, r: &Vec<T>, z: &mut Vec<T>) -> Result<T> {
        Ok(T::from_f64(cpu::pointwise_mul_dot(d, r, z)))
    }

    fn dot_device<T: Scalar>(
        &self,
        x: &Vec<T>,
        y: &Vec<T>,
        scalars: &mut Vec<T>,
        slot: usize,
    ) -> Result<()> {
        scalars[slot] = T::from_f64(cpu::dot(x, y));
        Ok(())
    }

    fn cg_update_device<T: Scalar>(
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

    fn xpay_device<T: Scalar>(&self, scalars: &Vec<T>, r: &Vec<T>, p: &mut Vec<T>) -> Result<()> {
        cpu::axpby(T::ONE, r, scalars[cg_scalars::BETA], p);
        Ok(())
    }

    fn gather<T: Element>(&self, x: &Vec<T>, index: &Vec<u32>, y: &mut Vec<T>) -> Result<()> {
        use rayon::prelude::*;
        y.par_iter_mut().zip(index.par_iter()).for_each(|(y, &j)| {
            if let Some(&v) = x.get(j as usize) {
                *y = v;
            }
        });
        Ok(())
    }

    fn scatter<T: Element>(&self, x: &Vec<T>, index: &Vec<u32>, y: &mut Vec<T>) -> Result<()> {
        for (&v, &j) in x.iter().zip(index) {
            if let Some(slot) = y.get_mut(j as usize) {
                *slot = v;
            }
        }
        Ok(())
    }
}
