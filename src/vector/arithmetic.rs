//! The operations of [`Vector`] on its device: fills, copies and precision conversions, the
//! element-wise updates and the reductions, each run part by part once [`agree`] has
//! checked the operands.

use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::vector::fused;
use crate::vector::ops::VectorOps;
use crate::vector::{agree, Vector};

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
    /// [`Error::Device`](crate::error::Error::Device) if the kernel fails.
    pub fn fill(&mut self, value: T) -> Result<()> {
        let (backend, parts) = self.each_mut();
        for part in parts {
            // SAFETY: the buffer belongs to the backend (the invariant of Vector).
            unsafe { backend.fill(value, part)? };
        }
        Ok(())
    }

    /// `self = x`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
    pub fn copy_from(&mut self, x: &Self) -> Result<()> {
        agree("copy", "x", self, x)?;
        let (backend, parts) = self.each_mut();
        for (x, y) in x.each().zip(parts) {
            // SAFETY: lengths, parts and device checked above.
            unsafe { backend.copy(x, y)? };
        }
        Ok(())
    }

    /// `self = x` rounded to `T` (or widened exactly): precision conversion, e.g. an f64
    /// vector into an f32 one.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
    pub fn convert_from<S: Element>(&mut self, x: &Vector<B, S>) -> Result<()> {
        agree("convert", "x", self, x)?;
        let (backend, parts) = self.each_mut();
        for (x, y) in x.each().zip(parts) {
            // SAFETY: lengths, parts and device checked above.
            unsafe { backend.convert(x, y)? };
        }
        Ok(())
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
    /// [`Error::Device`](crate::error::Error::Device) if the kernel fails.
    pub fn scale(&mut self, alpha: T) -> Result<()> {
        let (backend, parts) = self.each_mut();
        for part in parts {
            // SAFETY: the buffer belongs to the backend (the invariant of Vector).
            unsafe { backend.scale(alpha, part)? };
        }
        Ok(())
    }

    /// `self = alpha x + self`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
    pub fn axpy(&mut self, alpha: T, x: &Self) -> Result<()> {
        agree("axpy", "x", self, x)?;
        let (backend, parts) = self.each_mut();
        for (x, y) in x.each().zip(parts) {
            // SAFETY: lengths, parts and device checked above.
            unsafe { backend.axpy(alpha, x, y)? };
        }
        Ok(())
    }

    /// `self = alpha x + beta self`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
    pub fn axpby(&mut self, alpha: T, x: &Self, beta: T) -> Result<()> {
        agree("axpby", "x", self, x)?;
        let (backend, parts) = self.each_mut();
        for (x, y) in x.each().zip(parts) {
            // SAFETY: lengths, parts and device checked above.
            unsafe { backend.axpby(alpha, x, beta, y)? };
        }
        Ok(())
    }

    /// `self = x ∘ y` (element-wise product).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
    pub fn pointwise_mul(&mut self, x: &Self, y: &Self) -> Result<()> {
        agree("pointwise_mul", "x", self, x)?;
        agree("pointwise_mul", "y", self, y)?;
        let (backend, parts) = self.each_mut();
        for ((x, y), z) in x.each().zip(y.each()).zip(parts) {
            // SAFETY: lengths, parts and devices checked above.
            unsafe { backend.pointwise_mul(x, y, z)? };
        }
        Ok(())
    }

    /// `self = x / y` (element-wise quotient).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
    pub fn pointwise_div(&mut self, x: &Self, y: &Self) -> Result<()> {
        agree("pointwise_div", "x", self, x)?;
        agree("pointwise_div", "y", self, y)?;
        let (backend, parts) = self.each_mut();
        for ((x, y), z) in x.each().zip(y.each()).zip(parts) {
            // SAFETY: lengths, parts and devices checked above.
            unsafe { backend.pointwise_div(x, y, z)? };
        }
        Ok(())
    }

    /// `self · y`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
    pub fn dot(&self, y: &Self) -> Result<T> {
        agree("dot", "y", self, y)?;
        if self.rest.is_empty() {
            // SAFETY: lengths and device checked above.
            return unsafe { self.backend.dot(&self.buffer, &y.buffer) };
        }
        // One partial per part left on the device, then one read of them all (part by part
        // where the partials themselves would not fit one buffer).
        let mut partials = Vector::<B, T>::zeros(&self.backend, self.parts())?;
        if partials.parts() > 1 {
            // SAFETY (each part): lengths, parts and device checked above.
            return fused::sum_parts(self.each().zip(y.each()), |(x, y)| unsafe {
                self.backend.dot(x, y)
            });
        }
        for (k, (x, y)) in self.each().zip(y.each()).enumerate() {
            // SAFETY: lengths, parts and device checked above; k < parts = len(partials).
            unsafe { self.backend.dot_device(x, y, &mut partials.buffer, k)? };
        }
        fused::sum_parts(partials.to_vec()?, Ok)
    }

    /// `‖self‖₂`, safe from overflow and underflow of the squares.
    ///
    /// # Errors
    /// [`Error::Device`](crate::error::Error::Device) if the kernel fails.
    pub fn nrm2(&self) -> Result<T> {
        if self.rest.is_empty() {
            // SAFETY: the buffer belongs to the backend (the invariant of Vector).
            return unsafe { self.backend.nrm2(&self.buffer) };
        }
        let norms = self
            .each()
            // SAFETY: the buffers belong to the backend (the invariant of Vector).
            .map(|part| unsafe { self.backend.nrm2(part) }.map(|v| v.as_f64()))
            .collect::<Result<Vec<f64>>>()?;
        Ok(T::from_f64(fused::combine_norms(&norms)))
    }

    /// `max |selfᵢ|`: NaN if any element is NaN, 0 for an empty vector.
    ///
    /// # Errors
    /// [`Error::Device`](crate::error::Error::Device) if the kernel fails.
    pub fn amax(&self) -> Result<T> {
        let mut max = T::ZERO;
        for part in self.each() {
            // SAFETY: the buffer belongs to the backend (the invariant of Vector).
            let m = unsafe { self.backend.amax(part)? };
            if m.as_f64().is_nan() {
                return Ok(m);
            }
            if m > max {
                max = m;
            }
        }
        Ok(max)
    }
}
