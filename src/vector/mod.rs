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
//!
//! # Vectors longer than one buffer
//! A device binds at most [`BackendInfo::max_buffer_bytes`](crate::backend::BackendInfo) per buffer
//! (wgpu: 2 GiB on NVIDIA, 128 MiB on lavapipe). A longer vector is stored in parts of
//! [`vector_part_len`] values (the last shorter), each a buffer of its own, and every
//! operation above runs part by part: element-wise operations one launch per part,
//! reductions one per part, the parts' results (read in one go) added in f64 on the host in
//! part order: still deterministic. The device-scalar functions of CG ([`dot_into`],
//! [`cg_update_device`], [`pcg_jacobi_update_device`], ...) keep their contract and stay on
//! the device: each part works on its own copy of the scalars, and the slots that add up over
//! the parts (`r·r`, `β`, ...) are added on the device in the working precision; on a backend
//! that cannot bind part of a buffer (the CPU backend) they take a round trip of the few
//! scalars through the host instead. The sparse products accept split vectors (their
//! matrix is stored in blocks that match the parts, see
//! [`RowSplit`](crate::sparse::RowSplit)), and so do the Krylov solvers; the other operator
//! families need a vector in one buffer and return [`Error::Unsupported`](crate::error::Error) for
//! a split one ([`Vector::buffer`]). [`BackendCore::with_buffer_limit`] lowers the limit, to
//! run these paths on small problems.

use std::fmt;

use ndarray::{Array1, ArrayBase, Data, Ix1};

use crate::backend::core::check_device;
use crate::backend::core::{vector_part_len, BackendCore};
use crate::error::{check_len, Error, Result};
use crate::scalar::Element;

mod arithmetic;
pub(crate) mod cpu;
pub(crate) mod cube;
pub(crate) mod fused;
mod index;
mod ops;

pub use fused::{
    cg_scalars, cg_update, cg_update_device, cgcg_update, dot_into, jacobi_xpay_device,
    pcg_flexible_convert_device, pcg_flexible_low_device, pcg_flexible_rotate_device,
    pcg_jacobi_update_device, pcg_rotate_device, pointwise_mul_dot, xpay_device, CgCgU,
};
pub(crate) use fused::{check_slot, pcg_jacobi_residual_device};
pub use index::DeviceIndex;
pub use ops::VectorOps;

/// Checks that `other` has the length of `this`, lives on its device and is split into the
/// same parts: what every unchecked [`VectorOps`] method needs of its operands (called part
/// by part).
fn agree<B: BackendCore, T: Element, U: Element>(
    op: &'static str,
    what: &'static str,
    this: &Vector<B, T>,
    other: &Vector<B, U>,
) -> Result<()> {
    check_len(op, what, this.len(), other.len())?;
    check_device(op, &this.backend, &other.backend)?;
    if this.part_len() != other.part_len() {
        return Err(Error::InvalidArgument {
            op,
            name: what,
            reason: format!(
                "the vectors are stored in parts of {} and {} values (made by backends with \
                 different buffer limits); copy one through the host",
                this.part_len(),
                other.part_len()
            ),
        });
    }
    Ok(())
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
    /// The values, or the first part of a vector too long for one buffer.
    buffer: B::Buffer<T>,
    /// The further parts of a split vector (each as long as `buffer`, the last shorter);
    /// empty for a vector in one buffer.
    rest: Vec<B::Buffer<T>>,
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
            rest: Vec::new(),
        }
    }

    /// Wraps parts made by `backend`, all of `part_len` values but the last (1 to
    /// `part_len`); one part is a vector in one buffer.
    fn from_parts(backend: &B, mut parts: Vec<B::Buffer<T>>) -> Self {
        let rest = parts.split_off(1.min(parts.len()));
        let buffer = parts.pop().expect("at least one part");
        Vector {
            backend: backend.clone(),
            buffer,
            rest,
        }
    }

    /// The lengths of the parts of a vector of `len` values on `backend`.
    fn part_lengths(backend: &B, len: usize) -> Vec<usize> {
        let part = vector_part_len(backend.info().max_buffer_bytes);
        if len <= part {
            return vec![len];
        }
        (0..len.div_ceil(part))
            .map(|k| part.min(len - k * part))
            .collect()
    }

    /// A vector of `len` zeros (in parts where it exceeds one buffer of the device).
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the device lacks `T`;
    /// [`Error::ResourceLimit`] if the device runs out of
    /// memory.
    pub fn zeros(backend: &B, len: usize) -> Result<Self> {
        backend.require::<T>("vectors")?;
        let parts = Self::part_lengths(backend, len)
            .into_iter()
            .map(|n| backend.alloc(n))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::from_parts(backend, parts))
    }

    /// A vector holding a copy of `data`.
    ///
    /// # Errors
    /// As [`zeros`](Self::zeros).
    pub fn from_slice(backend: &B, data: &[T]) -> Result<Self> {
        backend.require::<T>("vectors")?;
        let mut start = 0;
        let mut parts = Vec::new();
        for n in Self::part_lengths(backend, data.len()) {
            parts.push(backend.upload(&data[start..start + n])?);
            start += n;
        }
        Ok(Self::from_parts(backend, parts))
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
        B::len(&self.buffer) + self.rest.iter().map(B::len).sum::<usize>()
    }

    /// The number of buffers the vector is stored in: 1, or more for a vector longer than
    /// one buffer of its device (see the [module documentation](self)).
    pub fn parts(&self) -> usize {
        1 + self.rest.len()
    }

    /// The values in each part but the last: the length of a vector in one buffer.
    pub fn part_len(&self) -> usize {
        B::len(&self.buffer)
    }

    /// The buffers, in order.
    fn each(&self) -> impl Iterator<Item = &B::Buffer<T>> {
        std::iter::once(&self.buffer).chain(&self.rest)
    }

    /// The backend and the buffers, mutably.
    fn each_mut(&mut self) -> (&B, impl Iterator<Item = &mut B::Buffer<T>>) {
        let parts = std::iter::once(&mut self.buffer).chain(&mut self.rest);
        (&self.backend, parts)
    }

    /// A vector over values `start..start + len`, sharing this vector's memory, where they
    /// lie in one part and the backend can bind part of a buffer (`start` a multiple of
    /// [`SPLIT_ROW_ALIGN`](crate::backend::SPLIT_ROW_ALIGN)); `None` otherwise.
    ///
    /// # Safety
    /// As [`BackendCore::view`]: the view aliases `self`.
    pub(crate) unsafe fn view(&self, start: usize, len: usize) -> Option<Self> {
        let part = self.part_len().max(1);
        let k = start / part;
        let buffer = self.each().nth(k)?;
        let offset = start - k * part;
        if offset + len > B::len(buffer) {
            return None;
        }
        // SAFETY: passed on to the caller.
        let view = unsafe { self.backend.view(buffer, offset, len)? };
        // SAFETY: a view of a buffer of this backend.
        Some(unsafe { Self::from_buffer(&self.backend, view) })
    }

    /// Whether the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The backend the vector lives on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The error of an operation that needs the vector in one buffer.
    fn split_error(&self) -> Error {
        Error::Unsupported {
            backend: self.backend.info().to_string(),
            what: format!(
                "this operation on a vector of {} {} split into {} parts",
                self.len(),
                T::DTYPE,
                self.parts()
            ),
            reason: format!(
                "the vector exceeds the device's largest buffer ({} bytes) and the operation \
                 needs it in one buffer; vector operations, sparse products and Krylov \
                 solvers accept split vectors",
                self.backend.info().max_buffer_bytes
            ),
        }
    }

    /// The underlying buffer (for kernels of other operator families).
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the vector is split into parts
    /// (see the [module documentation](self)).
    pub fn buffer(&self) -> Result<&B::Buffer<T>> {
        if self.rest.is_empty() {
            Ok(&self.buffer)
        } else {
            Err(self.split_error())
        }
    }

    /// The underlying buffer, mutably (for kernels of other operator families).
    ///
    /// # Safety
    /// The buffer may be written through, not replaced by a buffer of another device.
    ///
    /// # Errors
    /// As [`buffer`](Self::buffer).
    pub unsafe fn buffer_mut(&mut self) -> Result<&mut B::Buffer<T>> {
        if self.rest.is_empty() {
            Ok(&mut self.buffer)
        } else {
            Err(self.split_error())
        }
    }

    /// Unwraps the buffer.
    ///
    /// # Errors
    /// As [`buffer`](Self::buffer).
    pub fn into_buffer(self) -> Result<B::Buffer<T>> {
        if self.rest.is_empty() {
            Ok(self.buffer)
        } else {
            Err(self.split_error())
        }
    }

    /// Copies the contents to the host.
    ///
    /// # Errors
    /// [`Error::Device`] if the device fails.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        if self.rest.is_empty() {
            return self.backend.download(&self.buffer);
        }
        let mut out = Vec::with_capacity(self.len());
        for part in self.each() {
            out.extend(self.backend.download(part)?);
        }
        Ok(out)
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
    /// [`Error::DimensionMismatch`] if the lengths differ.
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        check_len("Vector::write", "data", self.len(), data.len())?;
        let (backend, parts) = self.each_mut();
        let mut start = 0;
        for part in parts {
            let n = B::len(part);
            backend.write(part, &data[start..start + n])?;
            start += n;
        }
        Ok(())
    }
}
