//! The CubeCL backend: one generic type over the runtime, with `Cuda` and `Wgpu` aliases.
//!
//! # Buffers
//! A [`CubeBuffer<T>`](CubeBuffer) of length `len` owns `⌈len/4⌉·4` elements (at least 4):
//! kernels read and write whole vectors of `LINE` (4) elements, and the padding elements are
//! kept at zero by every kernel that writes a buffer (see `mask_tail` in the vector kernels).
//! So reductions over the padded length equal reductions over `len`.
//!
//! # Errors
//! Launches are asynchronous; a device failure is reported by the next call that waits for
//! the device (a download, a reduction,
//! [`synchronize`](crate::backend::core::BackendCore::synchronize)). A kernel that fails to
//! expand or compile is reported by the launch itself the first time each launch site runs
//! with a given configuration ([`Cube::launch`]), and by the next wait otherwise; it never
//! silently leaves its outputs as they were.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::backend::core::{sealed::Sealed, BackendInfo, BackendKind};
use crate::error::{Error, Result};
use crate::scalar::{DType, Element, Storable};

mod buffer;
#[cfg(feature = "wgpu")]
mod clock;
mod direct;
mod failures;
mod launch;
mod memory;
#[cfg(feature = "cuda")]
mod nccl;
mod runtime;
mod transfer;

pub use buffer::CubeBuffer;
pub(crate) use buffer::{line_size, padded_len};
pub use direct::DirectIo;
pub use launch::LaunchConfig;
#[cfg(feature = "cuda")]
pub(crate) use nccl::{
    library as nccl_library, unique_id as nccl_unique_id, Nccl, UniqueId as NcclId,
};
#[cfg(feature = "cuda")]
pub(crate) use runtime::cuda_driver_present;
pub use runtime::Connection;

/// The wgpu backend: Vulkan, Metal, DX12 or WebGPU. f64 only where the adapter has
/// `SHADER_F64` (most desktop Vulkan drivers and lavapipe; not Metal).
#[cfg(feature = "wgpu")]
pub type Wgpu = Cube<cubecl::wgpu::WgpuRuntime>;

/// The CUDA backend (NVIDIA GPUs; needs the driver and NVRTC at run time).
#[cfg(feature = "cuda")]
pub type Cuda = Cube<cubecl::cuda::CudaRuntime>;

/// A cubecl runtime that `galerkin` can drive: how to connect to a device and what it can do.
pub trait CubeRuntime: Runtime {
    /// The backend kind this runtime provides.
    const KIND: BackendKind;

    /// The device used by [`Cube::new`].
    fn default_device() -> Self::Device;

    /// Connects to `device`.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] if there is no such device or driver.
    fn connect(device: &Self::Device) -> Result<Connection<Self>>;

    /// The element types the device computes on.
    fn dtypes(client: &ComputeClient<Self>) -> Vec<DType>;

    /// Whether [`write_direct`](Self::write_direct) copies large uploads (CUDA; wgpu's is its
    /// `DirectIo`'s).
    #[doc(hidden)]
    const DIRECT_WRITE: bool = false;

    /// Copies `bytes` to the start of `handle`'s memory by the runtime's own host-to-device
    /// copy from the slice itself, returning when the copy is done. Called on cubecl's
    /// device thread with the device idle. cubecl's `create` instead copies the slice into
    /// fresh host memory first, which costs a page fault every 4 KiB (~6 µs each on the H200
    /// VM: ~0.6 GB/s). `None` where the runtime has no such copy.
    #[doc(hidden)]
    fn write_direct(
        _client: &ComputeClient<Self>,
        _handle: cubecl::server::Handle,
        _bytes: &[u8],
    ) -> Option<std::result::Result<(), String>> {
        None
    }
}

/// The CubeCL backend on runtime `R`: `Cuda` or `Wgpu`.
///
/// Cloning is cheap; clones share the device connection. [`Cube::new`] and [`Cube::on`]
/// connect once per device and process and return the same backend afterwards.
pub struct Cube<R: CubeRuntime> {
    inner: Arc<Inner<R>>,
    /// What this handle reports: the device's information, with the buffer limit of
    /// [`with_buffer_limit`](crate::backend::core::BackendCore::with_buffer_limit) where one
    /// was set.
    info: Arc<BackendInfo>,
}

struct Inner<R: CubeRuntime> {
    /// A process-unique number of this device connection, stamped on its buffers.
    id: u64,
    client: ComputeClient<R>,
    info: BackendInfo,
    config: LaunchConfig,
    /// Launch sites and configurations whose kernel is known to compile ([`Cube::launch`]).
    validated: Mutex<HashSet<u64>>,
    /// [`Connection::keep`], released with the connection.
    _keep: Option<Box<dyn Any + Send + Sync>>,
    /// [`Connection::direct_io`].
    direct_io: Option<DirectIo>,
    /// The bytes its buffers hold ([`BackendCore::memory_peak`]).
    memory: Arc<buffer::MemoryTally>,
}

impl<R: CubeRuntime> Clone for Cube<R> {
    fn clone(&self) -> Self {
        Cube {
            inner: self.inner.clone(),
            info: self.info.clone(),
        }
    }
}

impl<R: CubeRuntime> fmt::Debug for Cube<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cube").field("info", &self.info).finish()
    }
}

/// A scalar kernel argument of the element type `T`.
pub(crate) fn scalar<T: Element>(value: T) -> InputScalar {
    InputScalar::new(value.as_f64(), T::cube_type())
}

/// `α` and `β` of `y = α A x + β y` (SpMV, GEMM), as one kernel argument.
#[derive(CubeType, CubeLaunch)]
pub(crate) struct AlphaBeta {
    pub(crate) alpha: InputScalar,
    pub(crate) beta: InputScalar,
}

/// `⌈a / b⌉` inside a kernel (`usize::div_ceil` is not available to `#[cube]` code).
#[cube]
#[allow(clippy::manual_div_ceil)]
pub(crate) fn ceil_div(a: usize, b: usize) -> usize {
    (a + b - 1) / b
}

/// Copies `len` values of `src[offset..]` into `dst` inside a kernel (all units of the cube
/// share the work; the caller synchronizes the cube before reading `dst`).
#[cube]
pub(crate) fn stage<T: Float>(
    src: &Array<T>,
    dst: &mut SharedMemory<T>,
    offset: usize,
    len: usize,
) {
    let units = (CUBE_DIM_X * CUBE_DIM_Y) as usize;
    let mut t = (UNIT_POS_Y * CUBE_DIM_X + UNIT_POS_X) as usize;
    while t < len {
        dst[t] = src[offset + t];
        t += units;
    }
}

/// Process-wide cache of connected backends, keyed by runtime type and device.
type Registry = Mutex<HashMap<(TypeId, String), Arc<dyn Any + Send + Sync>>>;

fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(HashMap::new()))
}

impl<R: CubeRuntime> Cube<R> {
    /// The backend on the runtime's default device.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] if the runtime finds no device or driver.
    pub fn new() -> Result<Self> {
        Self::on(R::default_device())
    }

    /// The backend on `device`.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] if the device or its driver is missing.
    pub fn on(device: R::Device) -> Result<Self> {
        let key = (TypeId::of::<R>(), format!("{device:?}"));
        let mut registry = registry().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = registry.get(&key) {
            if let Ok(inner) = existing.clone().downcast::<Inner<R>>() {
                let info = Arc::new(inner.info.clone());
                return Ok(Cube { inner, info });
            }
        }
        failures::install_hook();
        let Connection {
            client,
            name: device_name,
            clock_held,
            keep,
            direct_io,
            kernel_cache,
        } = R::connect(&device)?;
        let props = client.properties();
        let hw = &props.hardware;
        let plane_ops = client
            .features()
            .plane
            .contains(cubecl::features::Plane::Ops);
        let atomic_f64 = props
            .atomic_type_usage(cubecl::ir::Type::new(cubecl::ir::StorageType::Atomic(
                cubecl::ir::ElemType::Float(cubecl::ir::FloatKind::F64),
            )))
            .contains(cubecl::features::AtomicUsage::Add);
        let info = BackendInfo {
            kind: R::KIND,
            device: device_name,
            dtypes: R::dtypes(&client),
            plane_ops,
            plane_size: (hw.plane_size_min, hw.plane_size_max),
            max_buffer_bytes: props.memory.max_page_size,
            max_shared_bytes: hw.max_shared_memory_size,
            max_units_per_cube: hw.max_units_per_cube,
            max_cube_count: hw.max_cube_count,
            atomic_f64,
            // cubecl's CUDA runtime sets max_page_size to cuDeviceTotalMem / 4.
            memory_bytes: (R::KIND == BackendKind::Cuda).then(|| 4 * props.memory.max_page_size),
            clock_held,
            kernel_cache,
        };
        let config = LaunchConfig::default_for(&info);
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let inner = Arc::new(Inner {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            client,
            info,
            config,
            validated: Mutex::new(HashSet::new()),
            _keep: keep,
            direct_io,
            memory: Arc::new(buffer::MemoryTally::default()),
        });
        registry.insert(key, inner.clone());
        let info = Arc::new(inner.info.clone());
        Ok(Cube { inner, info })
    }

    /// The cubecl client, for launching kernels of other operator families.
    pub fn client(&self) -> &ComputeClient<R> {
        &self.inner.client
    }

    /// The launch parameters of the vector kernels.
    pub fn config(&self) -> LaunchConfig {
        self.inner.config
    }

    /// Turns a runtime error into [`Error::Device`].
    /// The process-unique number of this device connection.
    #[cfg(feature = "cuda")]
    pub(crate) fn connection_id(&self) -> u64 {
        self.inner.id
    }

    pub(crate) fn device_error(&self, e: impl fmt::Debug) -> Error {
        Error::Device {
            backend: self.info.to_string(),
            message: format!("{e:?}"),
        }
    }

    /// A buffer of `len` values over `handle`, which this device allocated with room for
    /// `padded_len(len)` of them.
    pub(crate) fn wrap<T: Storable>(&self, handle: Handle, len: usize) -> CubeBuffer<T> {
        CubeBuffer::owned(handle, len, self.inner.id, &self.inner.memory)
    }
}

impl<R: CubeRuntime> Sealed for Cube<R> {}

/// Runs a unit test on `device` (`kind`: "wgpu" or "cuda"), or skips it where the device is
/// missing, unless `GALERKIN_REQUIRE_BACKENDS` names the kind. The tests run one at a time:
/// a kernel-expansion panic is recorded per process (see `failures`), so a test that provokes
/// one on purpose would hand it to a concurrent test's flush of the same device.
#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
pub(crate) fn on_test_device<B>(kind: &str, device: Result<B>, run: impl FnOnce(B)) {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let required = std::env::var("GALERKIN_REQUIRE_BACKENDS")
        .is_ok_and(|v| v.split(',').any(|k| k.trim().eq_ignore_ascii_case(kind)));
    match device {
        Ok(backend) => {
            let _serial = LOCK.lock().unwrap_or_else(|e| e.into_inner());
            run(backend)
        }
        Err(e) if required => panic!("{kind} is required: {e}"),
        Err(e) => eprintln!("[galerkin tests] skipping: no {kind} device: {e}"),
    }
}
