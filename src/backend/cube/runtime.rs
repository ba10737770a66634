//! The runtimes galerkin drives: wgpu and CUDA.

#[cfg(feature = "wgpu")]
use cubecl::prelude::*;

#[cfg(any(feature = "wgpu", feature = "cuda"))]
use crate::backend::core::BackendKind;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
use crate::backend::cube::CubeRuntime;
use crate::error::{Error, Result};
#[cfg(any(feature = "wgpu", feature = "cuda"))]
use crate::scalar::DType;
use cubecl::prelude::{ComputeClient, Runtime};
use std::any::Any;

use super::DirectIo;

/// What [`CubeRuntime::connect`](crate::backend::CubeRuntime::connect) returns.
pub struct Connection<R: Runtime> {
    /// The runtime's client of the device.
    pub client: ComputeClient<R>,
    /// A human-readable device name ([`BackendInfo::device`](crate::backend::BackendInfo::device)).
    pub name: String,
    /// Whether the connection holds the GPU's clock up
    /// ([`BackendInfo::clock_held`](crate::backend::BackendInfo::clock_held)).
    pub clock_held: bool,
    /// Kept for as long as the connection lives and dropped with it (a retained CUDA
    /// context that holds the clock of an NVIDIA GPU for wgpu).
    pub keep: Option<Box<dyn Any + Send + Sync>>,
    /// The runtime's own read and wait, used instead of cubecl's where set (wgpu; see
    /// `backend/cube/direct.rs`). `None` for another runtime.
    pub direct_io: Option<DirectIo>,
    /// The directory the runtime keeps compiled kernels in, if any
    /// ([`BackendInfo::kernel_cache`](crate::backend::BackendInfo::kernel_cache)).
    pub kernel_cache: Option<std::path::PathBuf>,
}

/// Points cubecl's compilation cache at `dir` (`None`: off) for the runtime clients created
/// from now on. cubecl reads the setting when it starts a device's server, which
/// `CubeRuntime::connect` does next, under the lock of the backend registry; a `cubecl.toml`
/// the user wrote still sets everything else.
#[cfg(any(feature = "wgpu", feature = "cuda"))]
fn set_compilation_cache(dir: Option<std::path::PathBuf>) {
    use cubecl::config::{cache::CacheConfig, CubeClRuntimeConfig, RuntimeConfig};
    // Loads the configuration (file, then environment) if nothing has yet; its lock is not
    // held on return.
    let current = CubeClRuntimeConfig::get();
    let mut next = (*current).clone();
    next.compilation.cache = dir.map(CacheConfig::File);
    *CubeClRuntimeConfig::storage().lock() = Some(std::sync::Arc::new(next));
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
    use crate::backend::cube::clock::ClockHold;
    use cubecl::wgpu::{AutoGraphicsApi, RuntimeOptions, WgpuDevice, WgpuRuntime};

    impl CubeRuntime for WgpuRuntime {
        const KIND: BackendKind = BackendKind::Wgpu;

        fn default_device() -> WgpuDevice {
            WgpuDevice::DefaultDevice
        }

        fn connect(device: &WgpuDevice) -> Result<Connection<Self>> {
            catch_runtime_panic("wgpu", || {
                // cubecl 0.10 caches only its SPIR-V compiler's output, keyed without the
                // adapter's features and across builds of this library: off
                // (backend::kernel_cache). Inside the catch: cubecl panics on a malformed
                // `cubecl.toml` when it first reads its configuration.
                set_compilation_cache(None);
                let setup =
                    cubecl::wgpu::init_setup::<AutoGraphicsApi>(device, RuntimeOptions::default());
                let adapter = setup.adapter.get_info();
                let hold =
                    ClockHold::acquire(adapter.vendor, &adapter.device_pci_bus_id, &adapter.name);
                let client = WgpuRuntime::client(device);
                let io = crate::backend::cube::direct::WgpuIo {
                    client: client.clone(),
                    device: setup.device.clone(),
                    queue: setup.queue.clone(),
                    spin: adapter.device_type != wgpu::DeviceType::Cpu,
                };
                let name = format!(
                    "{} [{:?}, {:?}, {}{}]",
                    adapter.name,
                    adapter.backend,
                    adapter.device_type,
                    WgpuRuntime::name(&client),
                    if hold.is_some() { ", clock held" } else { "" }
                );
                Connection {
                    client,
                    name,
                    clock_held: hold.is_some(),
                    keep: hold.map(|h| Box::new(h) as Box<dyn std::any::Any + Send + Sync>),
                    direct_io: Some(DirectIo(std::sync::Arc::new(io))),
                    kernel_cache: None,
                }
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
}

#[cfg(feature = "cuda")]
pub(crate) use cuda_runtime::driver_present as cuda_driver_present;

#[cfg(feature = "cuda")]
mod cuda_runtime {
    use super::*;
    use cubecl::cuda::{CudaDevice, CudaRuntime};

    /// Whether the CUDA driver library can be loaded (cudarc panics on first use otherwise).
    pub(crate) fn driver_present() -> bool {
        // SAFETY: only tries to load the driver library by its usual names (running its
        // initialisers, as any use of the driver would).
        unsafe { cudarc::driver::sys::is_culib_present() }
    }

    /// The driver's handle and name of CUDA device `index`.
    fn device_handle(
        index: usize,
    ) -> std::result::Result<(cudarc::driver::sys::CUdevice, String), cudarc::driver::DriverError>
    {
        use cudarc::driver::result;
        result::init()?;
        let dev = result::device::get(index as i32)?;
        Ok((dev, result::device::get_name(dev)?))
    }

    fn device_name(index: usize) -> String {
        match device_handle(index) {
            Ok((_, name)) => format!("{name} [CUDA device {index}]"),
            Err(_) => format!("CUDA device {index}"),
        }
    }

    /// What the PTX of a kernel depends on beyond its code: the GPU model, its compute
    /// capability, the CUDA version of the driver and the driver's own version (Linux).
    /// `None` if the driver cannot say (then no cache).
    fn device_identity(index: usize) -> Option<String> {
        use cudarc::driver::{result, sys};
        let (dev, name) = device_handle(index).ok()?;
        // SAFETY: `dev` is a valid device handle from `device::get`; the attribute queries
        // only read device properties.
        let (major, minor) = unsafe {
            use sys::CUdevice_attribute::*;
            (
                result::device::get_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                    .ok()?,
                result::device::get_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                    .ok()?,
            )
        };
        let mut cuda = 0;
        // SAFETY: writes one integer through a valid pointer.
        if unsafe { sys::cuDriverGetVersion(&mut cuda) } != sys::CUresult::CUDA_SUCCESS {
            return None;
        }
        // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  ..." (Linux only).
        let driver = std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|text| {
                text.split_whitespace()
                    .find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "unknown".to_string());
        Some(format!(
            "cuda-{name}-sm{major}{minor}-cuda{cuda}-driver{driver}"
        ))
    }

    impl CubeRuntime for CudaRuntime {
        const KIND: BackendKind = BackendKind::Cuda;

        fn default_device() -> CudaDevice {
            CudaDevice { index: 0 }
        }

        fn connect(device: &CudaDevice) -> Result<Connection<Self>> {
            // Without the driver library, cubecl's device thread would panic while starting
            // (a panic the expansion-failure hook would record and hand to the next flush of
            // another device): refuse before starting it.
            if !driver_present() {
                return Err(Error::BackendUnavailable {
                    backend: "cuda".to_string(),
                    reason: "the NVIDIA driver library (libcuda) is not installed".to_string(),
                });
            }
            let index = device.index;
            let kernel_cache = crate::backend::kernel_cache_dir().and_then(|root| {
                crate::backend::kernel_cache::device_dir(&root, &device_identity(index)?)
            });
            catch_runtime_panic("cuda", || {
                // Inside the catch: cubecl panics on a malformed `cubecl.toml` when it first
                // reads its configuration.
                set_compilation_cache(kernel_cache.clone());
                Connection {
                    client: CudaRuntime::client(device),
                    name: device_name(index),
                    clock_held: false,
                    keep: None,
                    direct_io: None,
                    kernel_cache,
                }
            })
        }

        const DIRECT_WRITE: bool = true;

        fn write_direct(
            client: &ComputeClient<Self>,
            handle: cubecl::server::Handle,
            bytes: &[u8],
        ) -> Option<std::result::Result<(), String>> {
            let copy = || {
                let managed = client
                    .get_resource(handle)
                    .map_err(|e| format!("the upload's device address: {e:?}"))?;
                let resource = managed.resource();
                if bytes.len() as u64 > resource.size {
                    return Err(format!(
                        "an upload of {} bytes into a buffer of {}",
                        bytes.len(),
                        resource.size
                    ));
                }
                // SAFETY: `resource.ptr` addresses at least `bytes.len()` bytes of device
                // memory (checked above) that nothing else uses: the caller allocated it
                // for this upload and waited for the device to be idle.
                unsafe { cudarc::driver::result::memcpy_htod_sync(resource.ptr, bytes) }
                    .map_err(|e| format!("cuMemcpyHtoD: {e:?}"))?;
                // From pageable memory the call may return before the DMA has landed.
                cudarc::driver::result::ctx::synchronize()
                    .map_err(|e| format!("cuCtxSynchronize after an upload: {e:?}"))
            };
            Some(copy())
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
}
