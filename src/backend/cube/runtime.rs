//! The runtimes galerkin drives: wgpu and CUDA.

#[cfg(any(feature = "wgpu", feature = "cuda"))]
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
            catch_runtime_panic("cuda", || Connection {
                client: CudaRuntime::client(device),
                name: device_name(index),
                clock_held: false,
                keep: None,
                direct_io: None,
            })
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
