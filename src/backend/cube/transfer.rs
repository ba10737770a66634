//! Results back to the host: reads, and waits for the device, on cubecl's device thread.

use cubecl::server::{Handle, ServerError};

use super::{Cube, CubeRuntime};
use crate::backend::Deferred;
use crate::error::Result;
use crate::scalar::Storable;

impl<R: CubeRuntime> Cube<R> {
    /// Reads `handle` (at least `len` values of `T`) to the host, after submitting the
    /// queued work and reporting any error in it (as [`Cube::flush`] does).
    pub(crate) fn read<T: Storable>(&self, handle: &Handle, len: usize) -> Result<Vec<T>> {
        let client = &self.inner.client;
        let handle = handle.clone();
        let bytes = self.on_device_thread(move || {
            client.flush()?;
            let mut bytes = cubecl::future::block_on(client.read_async(vec![handle]))?;
            Ok(bytes.remove(0))
        })?;
        self.values(&bytes, len)
    }

    /// Starts reading `handle` (at least `len` values of `T`) behind the work submitted so
    /// far; the wait submits what was queued since (so that it runs meanwhile) and blocks on
    /// cubecl's device thread as [`read`](Self::read) does.
    pub(super) fn read_later<T: Storable>(
        &self,
        handle: &Handle,
        len: usize,
    ) -> Result<Deferred<'_, T>> {
        self.flush()?;
        let read = self.inner.client.read_async(vec![handle.clone()]);
        Ok(Deferred::new(move || {
            let client = &self.inner.client;
            let mut bytes = self.on_device_thread(move || {
                client.flush()?;
                cubecl::future::block_on(read)
            })?;
            self.values(&bytes.remove(0), len)
        }))
    }

    /// The first `len` values of `T` in `bytes`.
    fn values<T: Storable>(&self, bytes: &[u8], len: usize) -> Result<Vec<T>> {
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
        self.on_device_thread(move || {
            client.flush()?;
            cubecl::future::block_on(client.sync())
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
    fn on_device_thread<O: Send + 'static>(
        &self,
        work: impl FnOnce() -> std::result::Result<O, ServerError> + Send,
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
