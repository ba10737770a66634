//! Backends: where data lives and kernels run.
//!
//! This module is the ground floor: [`BackendCore`] (typed buffers, their movement to and
//! from the host, device information) and its implementations. The operator families
//! (`VectorOps`, `SparseOps`, `BatchedOps`, and each discretisation's own) are traits of their
//! own modules above it, implemented there for both backends; [`Backend`](crate::Backend)
//! bundles the core ones.
//!
//! Implementations:
//! - [`Cpu`]: host memory and rayon. Always compiled, the default, and the reference every
//!   device kernel is verified against.
//! - [`Cube<R>`](Cube) for any `cubecl` runtime `R`, with the aliases `Cuda` (feature
//!   `cuda`) and `Wgpu` (feature `wgpu`; Vulkan, Metal, DX12, WebGPU).
//!
//! Generic code takes `B: Backend`; code that picks the backend at run time from a string
//! (examples, command-line tools) uses [`BackendKind`] and
//! [`with_backend`](crate::with_backend).

pub(crate) mod core;
pub(crate) mod cpu;
pub(crate) mod cube;
pub mod kernel_cache;

pub use self::core::{
    vector_part_len, BackendCore, BackendInfo, BackendKind, Deferred, MIN_BUFFER_LIMIT,
    SPLIT_ROW_ALIGN,
};
pub use cpu::Cpu;
#[cfg(feature = "cuda")]
pub use cube::Cuda;
#[cfg(feature = "wgpu")]
pub use cube::Wgpu;
pub use cube::{Connection, Cube, CubeBuffer, CubeRuntime, DirectIo, LaunchConfig};
pub use kernel_cache::{kernel_cache_dir, KERNEL_CACHE_ENV};

/// A contiguous run of a buffer exchanged with one rank: `(rank, first value, values)` (the
/// distributed halos, and the device exchange that carries them).
pub(crate) type Run = (usize, usize, usize);

/// The devices of `kind` on this machine: the CUDA device count (0 if the driver is
/// missing); 1 for the CPU and for wgpu (whose adapters are not counted here).
pub fn device_count(kind: BackendKind) -> usize {
    match kind {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            use cudarc::driver::result;
            if !cube::cuda_driver_present() {
                return 0;
            }
            result::init()
                .and_then(|_| result::device::get_count())
                .map(|n| n.max(0) as usize)
                .unwrap_or(0)
        }
        _ => 1,
    }
}
