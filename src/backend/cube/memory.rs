//! [`BackendCore`] for [`Cube`]: buffers allocated (zeroed by a kernel, padding included),
//! uploaded, viewed, downloaded and written, each checked against the device's buffer
//! limit and connection.

use std::sync::Arc;

use cubecl::prelude::*;

use crate::backend::core::{BackendCore, BackendInfo, BackendKind, Deferred};
use crate::backend::cube::buffer::LINE;
use crate::backend::cube::{line_size, padded_len, Cube, CubeBuffer, CubeRuntime};
use crate::error::{check_len, Error, Result};
use crate::scalar::Storable;

/// Zeroes a whole buffer, padding included (fresh allocations).
#[cube(launch_unchecked)]
fn zero_kernel<T: Numeric, N: Size>(x: &mut Array<Vector<T, N>>) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        x[i] = Vector::new(T::from_int(0));
        i += stride;
    }
}

/// `dst[i] = src[i]` over 32-bit words (an upload placed into its padded buffer; u32 index
/// arrays copied on the device).
#[cube(launch_unchecked)]
fn copy_words_kernel(src: &Array<u32>, dst: &mut Array<u32>, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        dst[i] = src[i];
        i += stride;
    }
}

/// The caller's slice seen as cubecl `Bytes` for one `ComputeClient::create` call. cubecl
/// 0.10's `create` copies the bytes (`data.to_vec()` in `do_create`) before it returns and
/// drops these; never written through.
struct BorrowedBytes {
    ptr: *const u8,
    len: usize,
}

impl cubecl::bytes::AllocationController for BorrowedBytes {
    fn alloc_align(&self) -> usize {
        1
    }

    fn property(&self) -> cubecl::bytes::AllocationProperty {
        cubecl::bytes::AllocationProperty::Native
    }

    unsafe fn memory_mut(&mut self) -> &mut [std::mem::MaybeUninit<u8>] {
        // SAFETY: `ptr..ptr + len` is the borrowed slice, alive for the `create` call;
        // cubecl only reads it (see the type's docs).
        unsafe {
            std::slice::from_raw_parts_mut(self.ptr as *mut std::mem::MaybeUninit<u8>, self.len)
        }
    }

    fn memory(&self) -> &[std::mem::MaybeUninit<u8>] {
        // SAFETY: as above.
        unsafe {
            std::slice::from_raw_parts(self.ptr as *const std::mem::MaybeUninit<u8>, self.len)
        }
    }
}

/// The smallest upload that takes the runtime's own copy where it has one (CUDA, wgpu):
/// below, cubecl's `create` (asynchronous, one copy into fresh host memory) costs less than
/// the direct copy's wait for an idle device.
const DIRECT_WRITE_MIN: usize = 1 << 20;

impl<R: CubeRuntime> Cube<R> {
    /// `dst[i] = src[i]` for the first `words` 32-bit words, on the device.
    ///
    /// # Safety
    /// Both handles span at least `words` words of this device.
    pub(crate) unsafe fn copy_words(
        &self,
        src: cubecl::server::Handle,
        dst: cubecl::server::Handle,
        words: usize,
    ) -> Result<()> {
        let (count, dim) = self.config().grid(words);
        self.launch::<()>((), || {
            // SAFETY: the caller's contract.
            unsafe {
                copy_words_kernel::launch_unchecked::<R>(
                    &self.inner.client,
                    count,
                    dim,
                    ArrayArg::from_raw_parts(src, words),
                    ArrayArg::from_raw_parts(dst, words),
                    words,
                )
            }
        })
    }

    /// A handle holding a copy of `bytes`, made by cubecl's `create` from the slice itself
    /// (its one copy, no staging copy of ours).
    fn create_borrowed(&self, bytes: &[u8]) -> cubecl::server::Handle {
        // SAFETY: `create` copies the borrowed bytes before returning and keeps no reference
        // (cubecl =0.10.0, pinned in Cargo.toml: `do_create` stages only file-backed bytes
        // when asked for `file_only`, then `to_vec`s every one).
        let borrowed = unsafe {
            cubecl::bytes::Bytes::from_controller(
                Box::new(BorrowedBytes {
                    ptr: bytes.as_ptr(),
                    len: bytes.len(),
                }),
                bytes.len(),
            )
        };
        self.inner.client.create(borrowed)
    }

    /// An upload by the runtime's own copy (wgpu's `DirectIoImpl::write`, else
    /// [`CubeRuntime::write_direct`]): a buffer of
    /// `padded` values of `T` (the tail zeroed on the device), `bytes` (`len` values) copied
    /// into it from the slice once the device is idle.
    fn upload_direct<T: Storable>(
        &self,
        bytes: &[u8],
        len: usize,
        padded: usize,
    ) -> Result<CubeBuffer<T>> {
        let buffer = self.wrap::<T>(
            self.inner.client.empty(padded * std::mem::size_of::<T>()),
            len,
        );
        if padded != len {
            self.zero(&buffer)?;
        }
        let client = &self.inner.client;
        let io = self.inner.direct_io.as_ref();
        let handle = buffer.handle.clone();
        self.on_device_thread(move || {
            use super::transfer::Failed;
            // Idle first: the memory may have belonged to a buffer that queued kernels still
            // read, and the tail's zeroing must land before the copy.
            client.flush()?;
            match io {
                Some(io) => {
                    io.0.wait_idle().map_err(Failed::Direct)?;
                    io.0.write(handle, bytes).map_err(Failed::Direct)
                }
                None => {
                    cubecl::future::block_on(client.sync())?;
                    R::write_direct(client, handle, bytes)
                        .unwrap_or_else(|| Err("the runtime has no direct upload".to_string()))
                        .map_err(Failed::Direct)
                }
            }
        })?;
        Ok(buffer)
    }

    /// Checks that `buffer` belongs to this device.
    fn check_own<T: Storable>(&self, op: &'static str, buffer: &CubeBuffer<T>) -> Result<()> {
        if buffer.device == self.inner.id {
            Ok(())
        } else {
            Err(Error::DeviceMismatch {
                op,
                left: self.info.to_string(),
                right: format!("another device connection (#{})", buffer.device),
            })
        }
    }

    /// Zeroes `buffer`, padding included.
    fn zero<T: Storable>(&self, buffer: &CubeBuffer<T>) -> Result<()> {
        let line = line_size::<T>();
        let (count, dim) = self.config().grid(buffer.padded_len() / line);
        self.launch::<T>(line, || {
            // SAFETY: the grid-stride loop stays below the buffer's length in vectors of
            // `line` elements, which the handle owns (padded length, a multiple of `line`).
            unsafe {
                zero_kernel::launch_unchecked::<T, R>(self.client(), count, dim, line, buffer.arg())
            }
        })
    }

    /// Checks that `elements` values of `T` fit in one buffer of the device.
    fn check_size<T: Storable>(&self, elements: usize) -> Result<usize> {
        let bytes = (elements as u64).saturating_mul(T::DTYPE.size() as u64);
        if bytes > self.info.max_buffer_bytes {
            return Err(Error::ResourceLimit {
                backend: self.info.to_string(),
                what: format!("a buffer of {elements} {}", T::DTYPE),
                requested: bytes,
                limit: self.info.max_buffer_bytes,
            });
        }
        Ok(bytes as usize)
    }
}

impl<R: CubeRuntime> BackendCore for Cube<R> {
    type Buffer<T: Storable> = CubeBuffer<T>;

    fn kind(&self) -> BackendKind {
        R::KIND
    }

    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn memory_peak(&self) -> Option<u64> {
        Some(self.inner.memory.peak())
    }

    fn reset_memory_peak(&self) {
        self.inner.memory.reset();
    }

    fn alloc<T: Storable>(&self, len: usize) -> Result<CubeBuffer<T>> {
        let padded = padded_len(len);
        let bytes = self.check_size::<T>(padded)?;
        let handle = self.inner.client.empty(bytes);
        let buffer = self.wrap(handle, len);
        self.zero(&buffer)?;
        Ok(buffer)
    }

    fn alloc_uninit<T: Storable>(&self, len: usize) -> Result<CubeBuffer<T>> {
        let padded = padded_len(len);
        let bytes = self.check_size::<T>(padded)?;
        Ok(self.wrap(self.inner.client.empty(bytes), len))
    }

    fn upload<T: Storable>(&self, data: &[T]) -> Result<CubeBuffer<T>> {
        let padded = padded_len(data.len());
        self.check_size::<T>(padded)?;
        let bytes = T::as_bytes(data);
        let direct = match self.inner.direct_io.as_ref() {
            Some(io) => io.0.writes(bytes.len()),
            None => R::DIRECT_WRITE,
        };
        if direct && bytes.len() >= DIRECT_WRITE_MIN {
            return self.upload_direct(bytes, data.len(), padded);
        }
        if padded == data.len() {
            return Ok(self.wrap(self.create_borrowed(bytes), data.len()));
        }
        if bytes.len().is_multiple_of(4) && !bytes.is_empty() {
            // The data as it is, then placed into the padded buffer (zero tail) on the device:
            // no host copy of ours (fresh host pages cost ~6 µs each on the H200 VM).
            let words = bytes.len() / 4;
            let part = self.create_borrowed(bytes);
            let buffer = self.wrap::<T>(
                self.inner.client.empty(padded * std::mem::size_of::<T>()),
                data.len(),
            );
            self.zero(&buffer)?;
            // SAFETY: `part` holds `words` words; the buffer holds at least as many.
            unsafe { self.copy_words(part, buffer.handle.clone(), words)? };
            return Ok(buffer);
        }
        crate::limits::check_host_items(
            "an upload's staging copy",
            padded as u64,
            T::DTYPE.size() as u64,
        )?;
        // One copy (padded), handed to cubecl as it is: `create_from_slice` would copy the
        // slice twice more before the transfer.
        let mut staged = Vec::with_capacity(padded);
        staged.extend_from_slice(data);
        staged.resize(padded, T::default());
        let handle = self
            .inner
            .client
            .create(cubecl::bytes::Bytes::from_elems(staged));
        Ok(self.wrap(handle, data.len()))
    }

    fn duplicate<T: Storable>(&self, buffer: &CubeBuffer<T>) -> Result<CubeBuffer<T>> {
        self.check_own("duplicate", buffer)?;
        let copy = self.alloc_uninit::<T>(buffer.len)?;
        // The whole padded buffer (its tail is zero), as 32-bit words: `LINE` values of any
        // storable type (2 bytes at least) fill whole words.
        const _: () = assert!((LINE * 2).is_multiple_of(4));
        let words = buffer.padded_len() * std::mem::size_of::<T>() / 4;
        // SAFETY: both handles span `words` words (`padded_len` values of `T`).
        unsafe { self.copy_words(buffer.handle.clone(), copy.handle.clone(), words)? };
        Ok(copy)
    }

    unsafe fn view<T: Storable>(
        &self,
        buffer: &CubeBuffer<T>,
        start: usize,
        len: usize,
    ) -> Option<CubeBuffer<T>> {
        let aligned = start.is_multiple_of(crate::backend::core::SPLIT_ROW_ALIGN);
        if !aligned || start + len > buffer.len || buffer.device != self.inner.id {
            return None;
        }
        let size = std::mem::size_of::<T>() as u64;
        // `start` is a multiple of LINE, so the view's padded end lies within the buffer's.
        let tail = (buffer.padded_len() - start - padded_len(len)) as u64;
        let handle = buffer
            .handle
            .clone()
            .offset_start(start as u64 * size)
            .offset_end(tail * size);
        Some(CubeBuffer {
            handle,
            len,
            device: buffer.device,
            tally: None,
            _t: std::marker::PhantomData,
        })
    }

    fn download<T: Storable>(&self, buffer: &CubeBuffer<T>) -> Result<Vec<T>> {
        self.check_own("download", buffer)?;
        self.read(&buffer.handle, buffer.len)
    }

    fn download_later<T: Storable>(&self, buffer: &CubeBuffer<T>) -> Result<Deferred<'_, T>> {
        self.check_own("download", buffer)?;
        self.read_later(&buffer.handle, buffer.len)
    }

    fn write<T: Storable>(&self, buffer: &mut CubeBuffer<T>, data: &[T]) -> Result<()> {
        self.check_own("write", buffer)?;
        check_len("write", "data", buffer.len, data.len())?;
        *buffer = self.upload(data)?;
        Ok(())
    }

    fn len<T: Storable>(buffer: &CubeBuffer<T>) -> usize {
        buffer.len
    }

    fn with_buffer_limit(&self, bytes: u64) -> Result<Self> {
        let mut info = self.inner.info.clone();
        info.max_buffer_bytes = crate::backend::core::buffer_limit(&info, bytes)?;
        Ok(Cube {
            inner: self.inner.clone(),
            info: Arc::new(info),
        })
    }

    fn same_device(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn synchronize(&self) -> Result<()> {
        self.wait()
    }
}

#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
mod tests {
    use super::*;
    use crate::backend::cube::on_test_device;

    /// The tally: bytes of owned buffers, padding included; a dropped buffer leaves the peak
    /// but not what is held; views count nothing.
    fn memory_peak_is_exact<R: CubeRuntime>(b: Cube<R>) {
        b.synchronize().unwrap();
        b.reset_memory_peak();
        let base = b.memory_peak().unwrap();
        let x = b.upload(&[1.0f64; 1001]).unwrap();
        let y = b.alloc::<f32>(3000).unwrap();
        let held = base + 1004 * 8 + 3000 * 4;
        assert_eq!(b.memory_peak(), Some(held));
        // SAFETY: start 0 is aligned and the view lies inside x.
        let view = unsafe { b.view(&x, 0, 500) }.unwrap();
        assert_eq!(b.memory_peak(), Some(held), "a view counts nothing");
        drop(view);
        drop(y);
        assert_eq!(b.memory_peak(), Some(held), "the peak stays");
        b.reset_memory_peak();
        assert_eq!(b.memory_peak(), Some(base + 1004 * 8));
        drop(x);
        b.reset_memory_peak();
        assert_eq!(b.memory_peak(), Some(base));
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn memory_peak_is_exact_wgpu() {
        on_test_device("wgpu", crate::backend::Wgpu::new(), memory_peak_is_exact);
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn memory_peak_is_exact_cuda() {
        on_test_device("cuda", crate::backend::Cuda::new(), memory_peak_is_exact);
    }
}
