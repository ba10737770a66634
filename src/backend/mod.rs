//! Backends: where data lives and kernels run.
//!
//! A backend is a bundle of one trait per operator family, as in burn:
//!
//! ```text
//! Backend = BackendCore      buffers: allocate, upload, download, synchronize, info
//!         + VectorOps        fill, copy, axpy, dot, nrm2, fused CG update, ...
//!         + SparseOps        SpMV of every sparse format
//!         + BatchedOps       batched small dense GEMM, LU, Cholesky, solves
//! ```
//!
//! Later families (sparse, batched dense, ...) are further traits the backends implement,
//! so that no single trait grows into one giant list.
//!
//! Implementations:
//! - [`Cpu`]: host memory and rayon. Always compiled, the default, and the reference every
//!   device kernel is verified against.
//! - [`Cube<R>`](Cube) for any `cubecl` runtime `R`, with the aliases `Cuda` (feature
//!   `cuda`) and `Wgpu` (feature `wgpu`; Vulkan, Metal, DX12, WebGPU).
//!
//! Generic code takes `B: Backend`; code that picks the backend at run time from a string
//! (examples, command-line tools) uses [`BackendKind`] and [`with_backend`].

pub(crate) mod bundle;
pub(crate) mod core;
pub(crate) mod cpu;
pub(crate) mod cube;

pub use self::core::{
    vector_part_len, BackendCore, BackendInfo, BackendKind, Deferred, MIN_BUFFER_LIMIT,
};
pub use bundle::{device_count, with_backend, with_backend_on, Backend, BackendTask};
pub use cpu::Cpu;
#[cfg(feature = "cuda")]
pub use cube::Cuda;
#[cfg(feature = "wgpu")]
pub use cube::Wgpu;
pub use cube::{Connection, Cube, CubeBuffer, CubeRuntime, DirectIo, LaunchConfig};
