//! [`CubeBuffer`]: a typed buffer in device memory, padded to whole vectors.

use std::fmt;
use std::marker::PhantomData;

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

/// A typed buffer in device memory: `len` values of `T`, padded with zeros to a whole
/// number of 4-element vectors.
pub struct CubeBuffer<T: Storable> {
    pub(crate) handle: Handle,
    pub(crate) len: usize,
    /// The [`Cube`](super::Cube) backend (device connection) that allocated the buffer.
    pub(crate) device: u64,
    pub(crate) _t: PhantomData<T>,
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
