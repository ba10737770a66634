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
//! the device (a download, a reduction, [`synchronize`](BackendCore::synchronize)). A
//! kernel that fails to expand or compile is reported by the launch itself the first time
//! each launch site runs with a given configuration ([`Cube::launch`]), and by the next
//! wait otherwise; it never silently leaves its outputs as they were.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::backend::core::{sealed::Sealed, BackendCore, BackendInfo, BackendKind, Deferred};
use crate::error::{check_len, Error, Result};
use crate::scalar::{DType, Element, Storable};

mod buffer;
#[cfg(feature = "wgpu")]
mod clock;
mod direct;
mod failures;
mod runtime;
mod transfer;

pub use buffer::CubeBuffer;
pub(crate) use buffer::{line_size, padded_len};
pub use direct::DirectIo;
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
}

/// The CubeCL backend on runtime `R`: `Cuda` or `Wgpu`.
///
/// Cloning is cheap; clones share the device connection. [`Cube::new`] and [`Cube::on`]
/// connect once per device and process and return the same backend afterwards.
pub struct Cube<R: CubeRuntime> {
    inner: Arc<Inner<R>>,
    /// What this handle reports: the device's information, with the buffer limit of
    /// [`with_buffer_limit`](BackendCore::with_buffer_limit) where one was set.
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

/// Launch parameters of the vector kernels. [`LaunchConfig::default_for`] picks them per
/// device; the bench example times alternatives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Units per cube (a power of two, at most the device limit).
    pub cube_dim: u32,
    /// Most cubes of an element-wise launch; larger vectors are covered by a grid-stride loop.
    pub max_cubes: u32,
    /// Most cubes of the first reduction pass (each writes one partial sum; a second
    /// one-cube pass adds the partials on the device).
    pub reduce_cubes: u32,
}

impl LaunchConfig {
    /// Defaults for a device with the given information.
    pub fn default_for(info: &BackendInfo) -> Self {
        let cube_dim = 256.min(info.max_units_per_cube.max(1)).next_power_of_two();
        LaunchConfig {
            cube_dim,
            max_cubes: info.max_cube_count.0.clamp(1, 65535),
            reduce_cubes: 8192,
        }
    }

    /// Cube count and dim of a grid-stride launch over `units` units (at most
    /// [`max_cubes`](Self::max_cubes) cubes; the kernel loops over the rest).
    pub(crate) fn grid(&self, units: usize) -> (CubeCount, CubeDim) {
        let cubes = units
            .div_ceil(self.cube_dim as usize)
            .clamp(1, self.max_cubes as usize);
        (
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(self.cube_dim),
        )
    }

    /// The first pass of a reduction over `units` units: the number of cubes (one partial
    /// each, at most [`reduce_cubes`](Self::reduce_cubes)), their count and dim.
    pub(crate) fn reduce(&self, units: usize) -> (usize, CubeCount, CubeDim) {
        let cubes = units
            .div_ceil(self.cube_dim as usize)
            .clamp(1, self.reduce_cubes as usize);
        (
            cubes,
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(self.cube_dim),
        )
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
    pub(crate) fn device_error(&self, e: impl fmt::Debug) -> Error {
        Error::Device {
            backend: self.info.to_string(),
            message: format!("{e:?}"),
        }
    }

    /// Submits queued work and reports any launch or compilation error since the last
    /// wait: the ones cubecl returns, and the expansion panics it only logs.
    pub(crate) fn flush(&self) -> Result<()> {
        let flushed = self.inner.client.flush().map_err(|e| self.device_error(e));
        self.expansion_panics()?;
        flushed
    }

    /// The kernel-expansion panics cubecl only logged since the last call, as an error.
    fn expansion_panics(&self) -> Result<()> {
        let panics = failures::take();
        if !panics.is_empty() {
            return Err(Error::KernelCompilation {
                backend: self.info.to_string(),
                message: panics.join("; "),
            });
        }
        Ok(())
    }

    /// Runs `launch` (one kernel launch). The first time this launch site (the caller's
    /// source location) runs with the generic types `G` and the configuration `key`, the
    /// device is flushed right after and a failure to expand or compile the kernel is
    /// returned here; afterwards the launch only queues (a failure would be reported by the
    /// next wait, as any device error).
    ///
    /// # Errors
    /// [`Error::KernelCompilation`] or [`Error::Device`] on the validating launch.
    #[track_caller]
    pub(crate) fn launch<G: 'static>(&self, key: impl Hash, launch: impl FnOnce()) -> Result<()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        std::panic::Location::caller().hash(&mut hasher);
        TypeId::of::<G>().hash(&mut hasher);
        key.hash(&mut hasher);
        let id = hasher.finish();
        let known = self
            .inner
            .validated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&id);
        launch();
        if known {
            return Ok(());
        }
        self.flush()?;
        self.inner
            .validated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id);
        Ok(())
    }

    /// A buffer of `len` values over `handle`, which this device allocated with room for
    /// `padded_len(len)` of them.
    pub(crate) fn wrap<T: Storable>(&self, handle: Handle, len: usize) -> CubeBuffer<T> {
        CubeBuffer {
            handle,
            len,
            device: self.inner.id,
            _t: PhantomData,
        }
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
        let handle = if padded == data.len() {
            self.inner.client.create_from_slice(T::as_bytes(data))
        } else {
            let mut staged = Vec::with_capacity(padded);
            staged.extend_from_slice(data);
            staged.resize(padded, T::default());
            self.inner.client.create_from_slice(T::as_bytes(&staged))
        };
        Ok(self.wrap(handle, data.len()))
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

#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
mod tests {
    use super::*;

    /// Writes 1 everywhere, or (`broken`) panics while being expanded — as a kernel with a
    /// comptime error would.
    #[cube(launch_unchecked)]
    fn maybe_broken_kernel(out: &mut Array<f32>, #[comptime] broken: bool) {
        if broken {
            panic!("a deliberately broken kernel");
        }
        if ABSOLUTE_POS < out.len() {
            out[ABSOLUTE_POS] = 1.0;
        }
    }

    fn launch_maybe_broken<R: CubeRuntime>(
        backend: &Cube<R>,
        out: &mut CubeBuffer<f32>,
        broken: bool,
    ) -> Result<()> {
        backend.launch::<()>(broken, || {
            // SAFETY: one unit per padded element; the kernel checks the length.
            unsafe {
                maybe_broken_kernel::launch_unchecked::<R>(
                    backend.client(),
                    CubeCount::Static(1, 1, 1),
                    CubeDim::new_1d(out.padded_len() as u32),
                    out.arg(),
                    broken,
                )
            }
        })
    }

    /// A kernel whose expansion panics is an error of the launch, its output is left as it
    /// was, and the device goes on working.
    fn compile_failure_is_an_error<R: CubeRuntime>(backend: Cube<R>) {
        let mut out = backend.upload(&[7.0f32; 5]).unwrap();
        let err = launch_maybe_broken(&backend, &mut out, true).unwrap_err();
        assert!(
            matches!(&err, Error::KernelCompilation { message, .. }
                if message.contains("deliberately broken")),
            "{err}"
        );
        assert_eq!(backend.download(&out).unwrap(), [7.0; 5]);
        // Not cached as valid: a second try is an error again.
        assert!(launch_maybe_broken(&backend, &mut out, true).is_err());
        launch_maybe_broken(&backend, &mut out, false).unwrap();
        assert_eq!(backend.download(&out).unwrap(), [1.0; 5]);
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn wgpu_compile_failure_is_an_error() {
        on_test_device("wgpu", Wgpu::new(), compile_failure_is_an_error);
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn cuda_compile_failure_is_an_error() {
        on_test_device("cuda", Cuda::new(), compile_failure_is_an_error);
    }
}
