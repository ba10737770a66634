//! Results back to the host: reads, and waits for the device, on cubecl's device thread;
//! through the runtime's own API where it has one ([`DirectIo`]: wgpu), else through cubecl's.

use cubecl::server::{Handle, ServerError};

use super::direct::PendingRead;
use super::{Cube, CubeRuntime, DirectIo};
use crate::backend::Deferred;
use crate::error::Result;
use crate::scalar::Storable;

impl<R: CubeRuntime> Cube<R> {
    /// Reads `handle` (at least `len` values of `T`) to the host, after submitting the
    /// queued work and reporting any error in it (as [`Cube::flush`] does).
    pub(crate) fn read<T: Storable>(&self, handle: &Handle, len: usize) -> Result<Vec<T>> {
        let client = &self.inner.client;
        let direct = self.inner.direct_io.as_ref();
        let handle = handle.clone();
        let bytes = self.on_device_thread(move || {
            client.flush()?;
            if let Some(read) = start_direct(direct, &handle, len * std::mem::size_of::<T>())? {
                return finish_direct(read, len);
            }
            let mut bytes = cubecl::future::block_on(client.read_async(vec![handle]))?;
            Ok(Got::Cube(bytes.remove(0)))
        })?;
        self.values(bytes, len)
    }

    /// Starts reading `handle` (at least `len` values of `T`) behind the work submitted so
    /// far; the wait submits what was queued since (so that it runs meanwhile) and blocks on
    /// cubecl's device thread as [`read`](Self::read) does.
    pub(super) fn read_later<T: Storable>(
        &self,
        handle: &Handle,
        len: usize,
    ) -> Result<Deferred<'_, T>> {
        let client = &self.inner.client;
        let read = match self.inner.direct_io.as_ref() {
            // The runtime's own read, started on the device thread after a flush (else
            // cubecl's, after one).
            Some(io) => {
                let bytes = len * std::mem::size_of::<T>();
                let handle = handle.clone();
                self.on_device_thread(move || {
                    client.flush()?;
                    start_direct(Some(io), &handle, bytes).map(|read| read.ok_or(handle))
                })?
                .map_err(|handle| client.read_async(vec![handle]))
            }
            None => {
                self.flush()?;
                Err(client.read_async(vec![handle.clone()]))
            }
        };
        Ok(Deferred::new(move || {
            let bytes = self.on_device_thread(move || {
                client.flush()?;
                match read {
                    Ok(direct) => finish_direct(direct, len),
                    Err(cubecl) => Ok(Got::Cube(cubecl::future::block_on(cubecl)?.remove(0))),
                }
            })?;
            self.values(bytes, len)
        }))
    }

    /// The `len` values read: those of the runtime's own read as they are, the first `len`
    /// values of `T` in cubecl's bytes.
    fn values<T: Storable>(&self, got: Got<T>, len: usize) -> Result<Vec<T>> {
        let bytes = match got {
            Got::Own(values) => return Ok(values),
            Got::Cube(bytes) => bytes,
        };
        let size = std::mem::size_of::<T>();
        if bytes.len() < len * size {
            return Err(self.device_error(format!(
                "read {} bytes, expected at least {}",
                bytes.len(),
                len * size
            )));
        }
        let mut out = vec![T::default(); len];
        bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(&bytes[..len * size]);
        Ok(out)
    }

    /// Submits the queued work and waits until the device has done it.
    pub(super) fn wait(&self) -> Result<()> {
        let client = &self.inner.client;
        let direct = self.inner.direct_io.as_ref();
        self.on_device_thread(move || {
            client.flush()?;
            match direct {
                Some(io) => io.0.wait_idle().map_err(Failed::Direct),
                None => Ok(cubecl::future::block_on(client.sync())?),
            }
        })
    }

    /// Runs `work` (calls into cubecl that end in a wait for the device) on cubecl's device
    /// thread, in one trip, and reports the kernel-expansion panics as [`Cube::flush`] does.
    ///
    /// cubecl's device thread, once idle, spins for a few hundred microseconds and then sleeps
    /// in steps of 150 µs. Waiting on the caller's thread (a flush and a read, two trips, then
    /// the wait) left it idle for as long as the kernel before the read ran, so the caller's
    /// next launches found it asleep and the device idle until it woke. Blocking the device
    /// thread itself until the work is done leaves it awake for the next launches (H100,
    /// 2026-11-26: dot to host at 2^27 87% → 100% of copy; CG on Poisson 7-point reading its
    /// scalars every iteration 1052 → 945–965 µs an iteration). Other threads using the same
    /// device wait meanwhile: their submissions queue behind the read.
    pub(super) fn on_device_thread<O: Send + 'static>(
        &self,
        work: impl FnOnce() -> std::result::Result<O, Failed> + Send,
    ) -> Result<O> {
        let done = match self.inner.client.exclusive(work) {
            Ok(done) => done,
            Err(e) => {
                // The work panicked on the device thread (the hook recorded it as if it were
                // a kernel's expansion): a device failure, with the panic's message.
                let panics = super::failures::take();
                return Err(self.device_error(format!("{e:?}; {}", panics.join("; "))));
            }
        };
        self.expansion_panics()?;
        done.map_err(|e| self.device_error(e))
    }
}

#[cfg(feature = "cuda")]
impl<T: crate::scalar::Element> crate::vector::Vector<super::Cuda, T> {
    /// The CUDA device address of the values (`len()` of them, contiguous), for handing the
    /// vector to another CUDA library without a copy (DLPack, CuPy, PyTorch): the device has
    /// finished all the work queued before the call when it returns. The address stays valid
    /// while the vector lives and is not written by this library meanwhile; work queued
    /// later runs on cubecl's own stream, so a reader on another stream must not overlap it.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::Error::Unsupported) for a vector stored in parts (longer
    /// than the backend's buffer limit); device errors.
    pub fn cuda_device_pointer(&self) -> Result<u64> {
        let buffer = self.buffer()?;
        let backend = self.backend();
        backend.wait()?;
        if buffer.len == 0 {
            return Ok(0);
        }
        let client = &backend.inner.client;
        let handle = buffer.handle.clone();
        backend.on_device_thread(move || Ok(client.get_resource(handle)?.resource().ptr))
    }

    /// Copies `len()` values from the CUDA device address `src` (memory of another CUDA
    /// library on this vector's device) into the vector, device to device; returns when the
    /// copy is done.
    ///
    /// # Safety
    /// `src` must address `len()` readable values of `T` on this vector's device whose
    /// writers have finished (e.g. a DLPack producer synchronized for the legacy default
    /// stream), and must not overlap the vector.
    ///
    /// # Errors
    /// As [`cuda_device_pointer`](Self::cuda_device_pointer); the driver's error if the copy
    /// fails.
    pub unsafe fn copy_from_cuda_pointer(&mut self, src: u64) -> Result<()> {
        let dst = self.cuda_device_pointer()?;
        let bytes = self.len() * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        self.backend().on_device_thread(move || {
            // SAFETY: `dst` is this vector's `bytes` bytes; the caller vouches for `src`.
            unsafe { cudarc::driver::result::memcpy_dtod_sync(dst, src, bytes) }
                .map_err(|e| Failed::Direct(format!("cuMemcpyDtoD: {e:?}")))?;
            // A device-to-device `cuMemcpy` may return before the copy is done, and it runs
            // on the legacy stream, which cubecl's non-blocking streams do not wait for:
            // wait for the whole context, so the copy is over when this returns (kernels
            // queued next read the values; the caller may free `src`).
            cudarc::driver::result::ctx::synchronize()
                .map_err(|e| Failed::Direct(format!("cuCtxSynchronize: {e:?}")))
        })
    }
}

/// What a read returned: cubecl's bytes, or the values of the runtime's own read (copied
/// from its staging buffer straight into them).
enum Got<T> {
    Cube(cubecl::bytes::Bytes),
    Own(Vec<T>),
}

/// Waits for the runtime's own read of `len` values of `T`.
fn finish_direct<T: Storable>(
    read: Box<dyn PendingRead>,
    len: usize,
) -> std::result::Result<Got<T>, Failed> {
    let mut values = vec![T::default(); len];
    read.finish(bytemuck::cast_slice_mut::<T, u8>(&mut values))
        .map_err(Failed::Direct)?;
    Ok(Got::Own(values))
}

/// A failure on cubecl's device thread: one cubecl reports, or one of the runtime's own read
/// or wait ([`DirectIo`]).
pub(super) enum Failed {
    Server(ServerError),
    Direct(String),
}

impl From<ServerError> for Failed {
    fn from(e: ServerError) -> Self {
        Failed::Server(e)
    }
}

impl std::fmt::Debug for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Server(e) => write!(f, "{e:?}"),
            Failed::Direct(e) => f.write_str(e),
        }
    }
}

/// Starts the runtime's own read of `bytes` bytes of `handle` where it has one and can.
fn start_direct(
    direct: Option<&DirectIo>,
    handle: &Handle,
    bytes: usize,
) -> std::result::Result<Option<Box<dyn PendingRead>>, Failed> {
    match direct {
        Some(io) => {
            io.0.start_read(handle.clone(), bytes)
                .map_err(Failed::Direct)
        }
        None => Ok(None),
    }
}
