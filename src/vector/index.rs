//! [`DeviceIndex`]: positions on a device, and the checked gather through them
//! (`y[i] = x[index[i]]`) that the discretisations, the distributed halos and the batch
//! conversions use to move values between layouts.

use crate::backend::core::{check_device, BackendCore};
use crate::error::Result;
use crate::scalar::Element;
use crate::vector::{Vector, VectorOps};

/// `u32` positions on a device: the index of a gather. Any values are memory-safe (a gather
/// skips an index past its source); the device is the backend's that uploaded it.
pub struct DeviceIndex<B: BackendCore> {
    backend: B,
    buffer: B::Buffer<u32>,
    len: usize,
}

impl<B: BackendCore> DeviceIndex<B> {
    /// Uploads `index` to `backend` (an empty index holds one unused entry: no device
    /// buffer is empty).
    ///
    /// # Errors
    /// Allocation errors.
    pub fn upload(backend: &B, index: &[u32]) -> Result<Self> {
        let buffer = if index.is_empty() {
            backend.alloc(1)?
        } else {
            backend.upload(index)?
        };
        Ok(DeviceIndex {
            backend: backend.clone(),
            buffer,
            len: index.len(),
        })
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index has no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The backend it lives on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The device buffer, for kernels of other families.
    pub(crate) fn buffer(&self) -> &B::Buffer<u32> {
        &self.buffer
    }
}

impl<B: VectorOps, T: Element> Vector<B, T> {
    /// `self[i] = x[index[i]]` for every `i < min(len, index.len())` whose `index[i]` is
    /// below `x.len()`; the other entries of `self` are left as they are.
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`](crate::error::Error::DeviceMismatch) for operands on another
    /// device; [`Error::Unsupported`](crate::error::Error::Unsupported) for a vector split
    /// into parts.
    pub fn gather_from(&mut self, x: &Vector<B, T>, index: &DeviceIndex<B>) -> Result<()> {
        const OP: &str = "Vector::gather_from";
        check_device(OP, self.backend(), x.backend())?;
        check_device(OP, self.backend(), index.backend())?;
        let backend = self.backend().clone();
        // SAFETY: the three buffers belong to one device (checked above); the gather bounds
        // every index and every write, so any lengths and index values are safe.
        unsafe { backend.gather(x.buffer()?, index.buffer(), self.buffer_mut()?) }
    }

    /// `y[index[i]] = self[i]` for every `i < min(len, index.len())` whose `index[i]` is
    /// below `y.len()`; the other entries of `y` are left as they are. Indices should be
    /// distinct (of two writes to one entry, either may land).
    ///
    /// # Errors
    /// As [`gather_from`](Self::gather_from).
    pub fn scatter_to(&self, y: &mut Vector<B, T>, index: &DeviceIndex<B>) -> Result<()> {
        const OP: &str = "Vector::scatter_to";
        check_device(OP, self.backend(), y.backend())?;
        check_device(OP, self.backend(), index.backend())?;
        let backend = self.backend().clone();
        // SAFETY: the three buffers belong to one device (checked above); the scatter bounds
        // every index and every read, so any lengths and index values are safe.
        unsafe { backend.scatter(self.buffer()?, index.buffer(), y.buffer_mut()?) }
    }
}
