//! Reads and waits that go to the runtime's own API instead of cubecl's read-back path,
//! where that is faster: on wgpu.
//!
//! cubecl 0.10's wgpu runtime completes a read or a sync on a polling thread of its own, which
//! blocks in `Device::poll(Wait)` until the GPU is done. That costs a wake-up chain (the
//! driver wakes the polling thread, whose callback wakes cubecl's device thread) and, worse,
//! the blocked poll holds wgpu-core's fence lock: any submission made meanwhile (the next
//! CG direction and product, queued behind the residual's read) waits until the polling
//! thread has woken up. Measured on an H100 (2026-11-26): a batch of one FVM SpMV took
//! 196–223 µs on wgpu against 59 on the device. [`DirectIo`] copies into a staging buffer of
//! its own, submits it on the same queue (after cubecl's queued work, which the caller has
//! flushed) and polls the device without blocking until the copy is mapped; no polling thread
//! is involved, so nothing waits on the fence lock.

use std::sync::Arc;

use cubecl::server::Handle;

/// What [`Connection::direct_io`](super::Connection::direct_io) holds: a runtime's own read
/// and wait. Built by galerkin's runtimes only.
#[derive(Clone)]
pub struct DirectIo(pub(super) Arc<dyn DirectIoImpl>);

impl std::fmt::Debug for DirectIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DirectIo")
    }
}

/// A runtime's own read and wait. Both are called on cubecl's device thread, right after
/// cubecl's queued work was submitted (`ComputeClient::flush`).
pub(super) trait DirectIoImpl: Send + Sync {
    /// Starts copying the first `bytes` bytes of `handle` to the host, ordered after the work
    /// submitted so far. `None` where it cannot (the caller then uses cubecl's read).
    fn start_read(
        &self,
        handle: Handle,
        bytes: usize,
    ) -> Result<Option<Box<dyn PendingRead>>, String>;

    /// Waits until the device has done everything submitted so far.
    fn wait_idle(&self) -> Result<(), String>;
}

/// A read under way ([`DirectIoImpl::start_read`]).
pub(super) trait PendingRead: Send {
    /// Waits for the copy and returns its bytes.
    fn finish(self: Box<Self>) -> Result<Vec<u8>, String>;
}

#[cfg(feature = "wgpu")]
pub(super) use wgpu_io::WgpuIo;

#[cfg(feature = "wgpu")]
mod wgpu_io {
    use std::sync::atomic::{AtomicU8, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use cubecl::prelude::ComputeClient;
    use cubecl::server::Handle;
    use cubecl::wgpu::WgpuRuntime;

    use super::{DirectIoImpl, PendingRead};

    /// How long a wait polls the device back to back (yielding the core between polls)
    /// before it sleeps between polls: long kernels do not keep a core busy.
    const SPIN: Duration = Duration::from_millis(20);
    /// The sleep between polls after [`SPIN`].
    const NAP: Duration = Duration::from_micros(50);

    const PENDING: u8 = 0;
    const MAPPED: u8 = 1;
    const FAILED: u8 = 2;

    /// wgpu's device and queue under a cubecl client.
    pub(in crate::backend::cube) struct WgpuIo {
        pub client: ComputeClient<WgpuRuntime>,
        pub device: wgpu::Device,
        pub queue: wgpu::Queue,
        /// Poll without blocking (a GPU); else block in wgpu's wait on this thread (a CPU
        /// adapter such as lavapipe).
        pub spin: bool,
    }

    /// Polls `device` until `done` says so: on a GPU without blocking, back to back for
    /// [`SPIN`] and then with [`NAP`]s between polls; on a CPU adapter (whose work runs on
    /// the cores a spinning wait would take) by blocking until the latest submission is done.
    fn poll_until(
        device: &wgpu::Device,
        spin: bool,
        mut done: impl FnMut(wgpu::PollStatus) -> bool,
    ) -> Result<(), String> {
        let start = Instant::now();
        loop {
            let how = if spin {
                wgpu::PollType::Poll
            } else {
                wgpu::PollType::wait_indefinitely()
            };
            let status = device
                .poll(how)
                .map_err(|e| format!("waiting for the device: {e}"))?;
            if done(status) {
                return Ok(());
            }
            if start.elapsed() < SPIN {
                std::thread::yield_now();
            } else {
                std::thread::sleep(NAP);
            }
        }
    }

    impl DirectIoImpl for WgpuIo {
        fn start_read(
            &self,
            handle: Handle,
            bytes: usize,
        ) -> Result<Option<Box<dyn PendingRead>>, String> {
            let size = bytes as u64;
            if size == 0 || !size.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT) {
                return Ok(None);
            }
            let source = self
                .client
                .get_resource(handle)
                .map_err(|e| format!("{e:?}"))?;
            let resource = source.resource();
            if size > resource.size || !resource.offset.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            {
                return Ok(None);
            }
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("galerkin read"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("galerkin read"),
                });
            encoder.copy_buffer_to_buffer(&resource.buffer, resource.offset, &staging, 0, size);
            self.queue.submit([encoder.finish()]);
            let state = Arc::new(AtomicU8::new(PENDING));
            let signal = state.clone();
            staging
                .slice(..)
                .map_async(wgpu::MapMode::Read, move |mapped| {
                    let value = if mapped.is_ok() { MAPPED } else { FAILED };
                    signal.store(value, Ordering::Release);
                });
            Ok(Some(Box::new(WgpuRead {
                staging,
                state,
                device: self.device.clone(),
                spin: self.spin,
                _source: Box::new(source),
            })))
        }

        fn wait_idle(&self) -> Result<(), String> {
            poll_until(&self.device, self.spin, |status| status.is_queue_empty())
        }
    }

    /// A copy into `staging`, mapped once `state` says so.
    struct WgpuRead {
        staging: wgpu::Buffer,
        state: Arc<AtomicU8>,
        device: wgpu::Device,
        spin: bool,
        /// The source's memory (cubecl's `ManagedResource`), kept from reuse until the copy
        /// is done.
        _source: Box<dyn std::any::Any + Send>,
    }

    impl PendingRead for WgpuRead {
        fn finish(self: Box<Self>) -> Result<Vec<u8>, String> {
            poll_until(&self.device, self.spin, |_| {
                self.state.load(Ordering::Acquire) != PENDING
            })?;
            if self.state.load(Ordering::Acquire) == FAILED {
                return Err("mapping the read-back buffer failed".to_string());
            }
            let bytes = self.staging.slice(..).get_mapped_range().to_vec();
            self.staging.unmap();
            self.staging.destroy();
            Ok(bytes)
        }
    }
}
