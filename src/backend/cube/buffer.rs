//! [`CubeBuffer`]: a typed buffer in device memory, padded to whole vectors.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::scalar::Storable;

/// Elements per vectorised load/store in the device kernels; buffer lengths are padded to it.
pub const LINE: usize = 4;

/// Elements per vector in the vector kernels for element type `T`: 16-byte vectors (four
/// f32, two f64) capped at [`LINE`]. Measured on an H200, 32-byte vectors of f64 ran 15-20%
/// below 16-byte ones in streaming kernels.
pub(crate) fn line_size<T: Storable>() -> usize {
    (16 / T::DTYPE.size()).clamp(1, LINE)
}

/// The padded number of elements a buffer of `len` values owns.
pub(crate) fn padded_len(len: usize) -> usize {
    len.div_ceil(LINE).max(1) * LINE
}

/// The bytes of device memory a connection's buffers hold now and at most since the last
/// reset ([`BackendCore::memory_peak`](crate::backend::BackendCore::memory_peak)).
#[derive(Debug, Default)]
pub(crate) struct MemoryTally {
    live: AtomicU64,
    peak: AtomicU64,
}

impl MemoryTally {
    fn add(&self, bytes: u64) {
        let live = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(live, Ordering::Relaxed);
    }

    fn sub(&self, bytes: u64) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// The largest number of bytes held at once since the last [`reset`](Self::reset).
    pub(crate) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Starts a new peak from the bytes held now.
    pub(crate) fn reset(&self) {
        self.peak
            .store(self.live.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// A typed buffer in device memory: `len` values of `T`, padded with zeros to a whole
/// number of 4-element vectors.
pub struct CubeBuffer<T: Storable> {
    pub(crate) handle: Handle,
    pub(crate) len: usize,
    /// The [`Cube`](super::Cube) backend (device connection) that allocated the buffer.
    pub(crate) device: u64,
    /// The connection's tally this buffer counts in (`None` for a view of another buffer).
    pub(crate) tally: Option<Arc<MemoryTally>>,
    pub(crate) _t: PhantomData<T>,
}

impl<T: Storable> CubeBuffer<T> {
    /// A buffer over `handle` that owns its `padded_len(len)` values, counted in `tally`.
    pub(crate) fn owned(handle: Handle, len: usize, device: u64, tally: &Arc<MemoryTally>) -> Self {
        tally.add(Self::bytes_of(len));
        CubeBuffer {
            handle,
            len,
            device,
            tally: Some(tally.clone()),
            _t: PhantomData,
        }
    }

    fn bytes_of(len: usize) -> u64 {
        (padded_len(len) * std::mem::size_of::<T>()) as u64
    }
}

impl<T: Storable> Drop for CubeBuffer<T> {
    fn drop(&mut self) {
        if let Some(tally) = &self.tally {
            tally.sub(Self::bytes_of(self.len));
        }
    }
}

impl<T: Storable> CubeBuffer<T> {
    /// The number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of stored elements, padding included (a multiple of 4).
    pub fn padded_len(&self) -> usize {
        padded_len(self.len)
    }

    /// The cubecl handle, for launching kernels of other operator families.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// An array argument over the whole padded buffer.
    ///
    /// # Safety
    /// The kernel must not access beyond the padded length.
    pub(crate) unsafe fn arg<R: Runtime>(&self) -> ArrayArg<R> {
        // SAFETY: the handle owns padded_len() elements of T (invariant of CubeBuffer).
        unsafe { ArrayArg::from_raw_parts(self.handle.clone(), self.padded_len()) }
    }
}

impl<T: Storable> fmt::Debug for CubeBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CubeBuffer")
            .field("dtype", &T::DTYPE)
            .field("len", &self.len)
            .finish()
    }
}
