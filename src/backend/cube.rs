//! The CubeCL backend: one generic type over the runtime, with `Cuda` and `Wgpu` aliases.
//!
//! # Buffers
//! A [`CubeBuffer<T>`](CubeBuffer) of length `len` owns `⌈len/4⌉·4` elements (at least 4):
//! kernels read and write whole vectors of [`LINE`] elements, and the padding elements are
//! kept at zero by every kernel that writes a buffer (see `mask_tail` in the vector kernels).
//! So reductions over the padded length equal reductions over `len`.
//!
//! # Errors
//! Launches are asynchronous; a device failure is reported by the next call that waits for
//! the device (a download, a reduction, [`synchronize`](BackendCore::synchronize)).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::{BackendCore, BackendInfo, BackendKind};
use crate::error::{check_len, Error, Result};
use crate::scalar::{DType, Storable};

/// Elements per vectorised load/store in the device kernels; buffer lengths are padded to it.
pub const LINE: usize = 4;

/// A cubecl runtime that `galerkin` can drive: how to connect to a device and what it can do.
pub trait CubeRuntime: Runtime {
    /// The backend kind this runtime provides.
    const KIND: BackendKind;

    /// The device used by [`Cube::new`].
    fn default_device() -> Self::Device;

    /// Connects to `device`, returning the client and a human-readable device name.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] if there is no such device or driver.
    fn connect(device: &Self::Device) -> Result<(ComputeClient<Self>, String)>;

    /// The element types the device computes on.
    fn dtypes(client: &ComputeClient<Self>) -> Vec<DType>;
}

/// The CubeCL backend on runtime `R`: [`Cuda`] or [`Wgpu`].
///
/// Cloning is cheap; clones share the device connection. [`Cube::new`] and [`Cube::on`]
/// connect once per device and process and return the same backend afterwards.
pub struct Cube<R: CubeRuntime> {
    inner: Arc<Inner<R>>,
}

struct Inner<R: CubeRuntime> {
    client: ComputeClient<R>,
    info: BackendInfo,
    config: LaunchConfig,
}

impl<R: CubeRuntime> Clone for Cube<R> {
    fn clone(&self) -> Self {
        Cube {
            inner: self.inner.clone(),
        }
    }
}

impl<R: CubeRuntime> fmt::Debug for Cube<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cube")
            .field("info", &self.inner.info)
            .finish()
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
                return Ok(Cube { inner });
            }
        }
        let (client, device_name) = R::connect(&device)?;
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
        };
        let config = LaunchConfig::default_for(&info);
        let inner = Arc::new(Inner {
            client,
            info,
            config,
        });
        registry.insert(key, inner.clone());
        Ok(Cube { inner })
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
            backend: self.inner.info.to_string(),
            message: format!("{e:?}"),
        }
    }

    /// Submits queued work and reports any launch or compilation error.
    pub(crate) fn flush(&self) -> Result<()> {
        self.inner.client.flush().map_err(|e| self.device_error(e))
    }

    /// Reads `handle` (at least `len` values of `T`) to the host.
    pub(crate) fn read<T: Storable>(&self, handle: &Handle, len: usize) -> Result<Vec<T>> {
        self.flush()?;
        let bytes = self
            .inner
            .client
            .read_one(handle.clone())
            .map_err(|e| self.device_error(e))?;
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

    /// Checks that `elements` values of `T` fit in one buffer of the device.
    fn check_size<T: Storable>(&self, elements: usize) -> Result<usize> {
        let bytes = (elements as u64).saturating_mul(T::DTYPE.size() as u64);
        if bytes > self.inner.info.max_buffer_bytes {
            return Err(Error::ResourceLimit {
                backend: self.inner.info.to_string(),
                what: format!("a buffer of {elements} {}", T::DTYPE),
                requested: bytes,
                limit: self.inner.info.max_buffer_bytes,
            });
        }
        Ok(bytes as usize)
    }
}

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

impl<R: CubeRuntime> BackendCore for Cube<R> {
    type Buffer<T: Storable> = CubeBuffer<T>;

    fn kind(&self) -> BackendKind {
        R::KIND
    }

    fn info(&self) -> &BackendInfo {
        &self.inner.info
    }

    fn alloc<T: Storable>(&self, len: usize) -> Result<CubeBuffer<T>> {
        let padded = padded_len(len);
        let bytes = self.check_size::<T>(padded)?;
        let handle = self.inner.client.empty(bytes);
        let buffer = CubeBuffer {
            handle,
            len,
            _t: PhantomData,
        };
        crate::vector::cube::zero(self, &buffer);
        Ok(buffer)
    }

    fn alloc_uninit<T: Storable>(&self, len: usize) -> Result<CubeBuffer<T>> {
        let padded = padded_len(len);
        let bytes = self.check_size::<T>(padded)?;
        Ok(CubeBuffer {
            handle: self.inner.client.empty(bytes),
            len,
            _t: PhantomData,
        })
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
        Ok(CubeBuffer {
            handle,
            len: data.len(),
            _t: PhantomData,
        })
    }

    fn download<T: Storable>(&self, buffer: &CubeBuffer<T>) -> Result<Vec<T>> {
        self.read(&buffer.handle, buffer.len)
    }

    fn write<T: Storable>(&self, buffer: &mut CubeBuffer<T>, data: &[T]) -> Result<()> {
        check_len("write", "data", buffer.len, data.len())?;
        *buffer = self.upload(data)?;
        Ok(())
    }

    fn len<T: Storable>(buffer: &CubeBuffer<T>) -> usize {
        buffer.len
    }

    fn synchronize(&self) -> Result<()> {
        self.flush()?;
        cubecl::future::block_on(self.inner.client.sync()).map_err(|e| self.device_error(e))
    }
}

/// Runs `f`, turning a panic inside the runtime into [`Error::BackendUnavailable`].
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
fn catch_runtime_panic<T>(backend: &str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        let reason = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the runtime panicked while connecting".to_string());
        Error::BackendUnavailable {
            backend: backend.to_string(),
            reason,
        }
    })
}

#[cfg(feature = "wgpu")]
mod wgpu_runtime {
    use super::*;
    use cubecl::wgpu::{AutoGraphicsApi, RuntimeOptions, WgpuDevice, WgpuRuntime};

    impl CubeRuntime for WgpuRuntime {
        const KIND: BackendKind = BackendKind::Wgpu;

        fn default_device() -> WgpuDevice {
            WgpuDevice::DefaultDevice
        }

        fn connect(device: &WgpuDevice) -> Result<(ComputeClient<Self>, String)> {
            catch_runtime_panic("wgpu", || {
                let setup =
                    cubecl::wgpu::init_setup::<AutoGraphicsApi>(device, RuntimeOptions::default());
                let adapter = setup.adapter.get_info();
                let client = WgpuRuntime::client(device);
                let name = format!(
                    "{} [{:?}, {:?}, {}]",
                    adapter.name,
                    adapter.backend,
                    adapter.device_type,
                    WgpuRuntime::name(&client)
                );
                (client, name)
            })
        }

        fn dtypes(client: &ComputeClient<Self>) -> Vec<DType> {
            let props = client.properties();
            let mut dtypes = vec![DType::U32, DType::I32, DType::F32];
            if props.supports_type(f64::cube_type()) {
                dtypes.push(DType::F64);
            }
            if props.supports_type(half::f16::cube_type()) {
                dtypes.push(DType::F16);
            }
            if props.supports_type(half::bf16::cube_type()) {
                dtypes.push(DType::BF16);
            }
            dtypes.sort();
            dtypes
        }
    }

    /// The wgpu backend: Vulkan, Metal, DX12 or WebGPU. f64 only where the adapter has
    /// `SHADER_F64` (most desktop Vulkan drivers and lavapipe; not Metal).
    pub type Wgpu = Cube<WgpuRuntime>;
}

#[cfg(feature = "wgpu")]
pub use wgpu_runtime::Wgpu;

#[cfg(feature = "cuda")]
mod cuda_runtime {
    use super::*;
    use cubecl::cuda::{CudaDevice, CudaRuntime};

    fn device_name(index: usize) -> String {
        use cudarc::driver::result;
        let name = result::init()
            .and_then(|_| result::device::get(index as i32))
            .and_then(result::device::get_name);
        match name {
            Ok(name) => format!("{name} [CUDA device {index}]"),
            Err(_) => format!("CUDA device {index}"),
        }
    }

    impl CubeRuntime for CudaRuntime {
        const KIND: BackendKind = BackendKind::Cuda;

        fn default_device() -> CudaDevice {
            CudaDevice { index: 0 }
        }

        fn connect(device: &CudaDevice) -> Result<(ComputeClient<Self>, String)> {
            let index = device.index;
            catch_runtime_panic("cuda", || (CudaRuntime::client(device), device_name(index)))
        }

        fn dtypes(_client: &ComputeClient<Self>) -> Vec<DType> {
            // cubecl 0.10 does not list f64 among CUDA's types, yet f64 kernels compile and
            // run (gpu/CAPABILITIES.md): every CUDA device since sm_13 has binary64.
            vec![
                DType::F16,
                DType::BF16,
                DType::F32,
                DType::F64,
                DType::U32,
                DType::I32,
            ]
        }
    }

    /// The CUDA backend (NVIDIA GPUs; needs the driver and NVRTC at run time).
    pub type Cuda = Cube<CudaRuntime>;
}

#[cfg(feature = "cuda")]
pub use cuda_runtime::Cuda;
