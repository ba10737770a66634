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

    /// Waits until the device has done everything submitted so far. Like cubecl's sync, it
    /// does not submit uploads still staged for the next submission (they run before any
    /// later work).
    fn wait_idle(&self) -> Result<(), String>;

    /// Whether [`write`](Self::write) takes an upload of `bytes` bytes.
    fn writes(&self, bytes: usize) -> bool {
        let _ = bytes;
        false
    }

    /// Copies `bytes` to the start of `handle`'s memory from the slice itself and returns
    /// when the copy is done; called with the device idle, for sizes [`writes`](Self::writes)
    /// takes.
    fn write(&self, handle: Handle, bytes: &[u8]) -> Result<(), String> {
        let _ = (handle, bytes);
        Err("the runtime has no direct upload".to_string())
    }
}

/// A read under way ([`DirectIoImpl::start_read`]).
pub(super) trait PendingRead: Send {
    /// Waits for the copy and writes its bytes to `out` (as many as were asked for).
    fn finish(self: Box<Self>, out: &mut [u8]) -> Result<(), String>;
}

#[cfg(feature = "wgpu")]
pub(super) use wgpu_io::WgpuIo;

/// Reads made by a runtime's own read since the process started (tests check that the wgpu
/// reads take it).
#[cfg(test)]
pub(super) static DIRECT_READS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

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
            if bytes == 0 {
                return Ok(Some(Box::new(Nothing)));
            }
            let source = self
                .client
                .get_resource(handle)
                .map_err(|e| format!("{e:?}"))?;
            let resource = source.resource();
            // Copies move whole 4-byte words: an odd count of 2-byte values takes the padding
            // after it (device buffers are padded), trimmed after the copy.
            let size = (bytes as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
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
            #[cfg(test)]
            super::DIRECT_READS.fetch_add(1, Ordering::Relaxed);
            Ok(Some(Box::new(WgpuRead {
                staging,
                bytes,
                state,
                device: self.device.clone(),
                spin: self.spin,
                _source: Box::new(source),
            })))
        }

        fn wait_idle(&self) -> Result<(), String> {
            poll_until(&self.device, self.spin, |status| status.is_queue_empty())
        }

        fn writes(&self, bytes: usize) -> bool {
            bytes.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT as usize)
        }

        fn write(&self, handle: Handle, bytes: &[u8]) -> Result<(), String> {
            let target = self
                .client
                .get_resource(handle)
                .map_err(|e| format!("{e:?}"))?;
            let resource = target.resource();
            if bytes.len() as u64 > resource.size
                || !resource.offset.is_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
            {
                return Err(format!(
                    "an upload of {} bytes into a buffer of {} at offset {}",
                    bytes.len(),
                    resource.size,
                    resource.offset
                ));
            }
            // In pieces of WRITE_PIECE, each waited for: wgpu stages a write in host memory
            // of its own, which the next piece then reuses instead of a fresh allocation of
            // the whole upload.
            for (k, piece) in bytes.chunks(WRITE_PIECE).enumerate() {
                let at = resource.offset + (k * WRITE_PIECE) as u64;
                self.queue.write_buffer(&resource.buffer, at, piece);
                self.queue.submit([]);
                poll_until(&self.device, self.spin, |status| status.is_queue_empty())?;
            }
            Ok(())
        }
    }

    /// The piece of a direct upload ([`WgpuIo::write`]): a multiple of 4 bytes.
    const WRITE_PIECE: usize = 32 << 20;

    /// A read of nothing.
    struct Nothing;

    impl PendingRead for Nothing {
        fn finish(self: Box<Self>, _out: &mut [u8]) -> Result<(), String> {
            Ok(())
        }
    }

    /// A copy into `staging`, mapped once `state` says so; its first `bytes` bytes are read.
    struct WgpuRead {
        staging: wgpu::Buffer,
        bytes: usize,
        state: Arc<AtomicU8>,
        device: wgpu::Device,
        spin: bool,
        /// The source's memory (cubecl's `ManagedResource`), kept from reuse until the copy
        /// is done.
        _source: Box<dyn std::any::Any + Send>,
    }

    impl PendingRead for WgpuRead {
        fn finish(self: Box<Self>, out: &mut [u8]) -> Result<(), String> {
            poll_until(&self.device, self.spin, |_| {
                self.state.load(Ordering::Acquire) != PENDING
            })?;
            if self.state.load(Ordering::Acquire) == FAILED {
                return Err("mapping the read-back buffer failed".to_string());
            }
            if out.len() != self.bytes {
                return Err(format!("read {} bytes into {}", self.bytes, out.len()));
            }
            out.copy_from_slice(&self.staging.slice(..).get_mapped_range()[..self.bytes]);
            self.staging.unmap();
            self.staging.destroy();
            Ok(())
        }
    }
}

#[cfg(all(test, feature = "wgpu"))]
mod tests {
    use std::sync::atomic::Ordering;

    use super::DIRECT_READS;
    use crate::backend::cube::on_test_device;
    use crate::backend::BackendCore;
    use crate::backend::Wgpu;
    use crate::scalar::Storable;

    /// `download` and `download_later` of `data` return it, both through wgpu's own read.
    fn round_trip<T: Storable + PartialEq + std::fmt::Debug>(b: &Wgpu, data: &[T], what: &str) {
        let buffer = b.upload(data).unwrap();
        let before = DIRECT_READS.load(Ordering::Relaxed);
        assert_eq!(b.download(&buffer).unwrap(), data, "{what}: download");
        let later = b.download_later(&buffer).unwrap();
        assert_eq!(later.wait().unwrap(), data, "{what}: download_later");
        // Other tests may read meanwhile: at least these two.
        assert!(
            DIRECT_READS.load(Ordering::Relaxed) >= before + 2,
            "{what}: not read through wgpu's own read"
        );
    }

    /// Every length, odd counts of 2-byte values included, goes through wgpu's own read and
    /// comes back exact; `synchronize` returns.
    #[test]
    fn wgpu_reads_take_the_direct_path() {
        on_test_device("wgpu", Wgpu::new(), |b| {
            for n in [1usize, 2, 3, 5, 31, 1000, (1 << 16) + 3] {
                let xs: Vec<f32> = (0..n).map(|i| (i as f32).mul_add(0.37, -5.0)).collect();
                round_trip(&b, &xs, &format!("f32 n={n}"));
                let ws: Vec<u32> = (0..n as u32)
                    .map(|i| i.wrapping_mul(2_654_435_761))
                    .collect();
                round_trip(&b, &ws, &format!("u32 n={n}"));
                let hs: Vec<half::f16> = xs.iter().map(|&x| half::f16::from_f32(x)).collect();
                round_trip(&b, &hs, &format!("f16 n={n}"));
                b.synchronize().unwrap();
            }
        });
    }
}
