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
//! - [`Cube<R>`](Cube) for any `cubecl` runtime `R`, with the aliases [`Cuda`] (feature
//!   `cuda`) and [`Wgpu`] (feature `wgpu`; Vulkan, Metal, DX12, WebGPU).
//!
//! Generic code takes `B: Backend`; code that picks the backend at run time from a string
//! (examples, command-line tools) uses [`BackendKind`] and [`with_backend`].

use std::fmt;
use std::str::FromStr;

use crate::batched::BatchedOps;
use crate::error::{Error, Result};
use crate::scalar::{DType, Storable};
use crate::sparse::SparseOps;
use crate::vector::VectorOps;

mod cpu;
pub(crate) mod cube;

pub use cpu::Cpu;
#[cfg(feature = "cuda")]
pub use cube::Cuda;
#[cfg(feature = "wgpu")]
pub use cube::Wgpu;
pub use cube::{Cube, CubeBuffer};

/// A backend: buffers plus every operator family. Implemented by [`Cpu`] and [`Cube<R>`](Cube).
pub trait Backend: BackendCore + VectorOps + SparseOps + BatchedOps {}

impl<B: BackendCore + VectorOps + SparseOps + BatchedOps> Backend for B {}

/// What a backend provides beneath every operator family: typed device buffers and their
/// movement to and from the host.
///
/// Buffers belong to the backend value that made them (and its clones); passing a buffer
/// to another device's backend is an error where it can be detected.
pub trait BackendCore: Clone + Send + Sync + fmt::Debug + 'static {
    /// A buffer of `len` values of type `T` in the backend's memory.
    type Buffer<T: Storable>: Send + Sync + fmt::Debug;

    /// Which kind of backend this is.
    fn kind(&self) -> BackendKind;

    /// Device name, precision support and limits.
    fn info(&self) -> &BackendInfo;

    /// Whether buffers of `dtype` can be created and computed on.
    fn supports(&self, dtype: DType) -> bool {
        self.info().supports(dtype)
    }

    /// A buffer of `len` zeros.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the device lacks `T`; [`Error::ResourceLimit`] if the
    /// buffer exceeds the device's largest allocation.
    fn alloc<T: Storable>(&self, len: usize) -> Result<Self::Buffer<T>>;

    /// A buffer of `len` values with unspecified contents (padding included), for a result
    /// that a kernel overwrites entirely, padding included; saves the zero fill of
    /// [`alloc`](Self::alloc). Defaults to `alloc`.
    ///
    /// # Errors
    /// As [`alloc`](Self::alloc).
    #[doc(hidden)]
    fn alloc_uninit<T: Storable>(&self, len: usize) -> Result<Self::Buffer<T>> {
        self.alloc(len)
    }

    /// A buffer holding a copy of `data`.
    ///
    /// # Errors
    /// As [`alloc`](Self::alloc).
    fn upload<T: Storable>(&self, data: &[T]) -> Result<Self::Buffer<T>>;

    /// The contents of `buffer`, copied to the host. Waits for pending work on the buffer.
    ///
    /// # Errors
    /// [`Error::Device`] if the device fails while reading.
    fn download<T: Storable>(&self, buffer: &Self::Buffer<T>) -> Result<Vec<T>>;

    /// Overwrites `buffer` with `data` (same length).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the lengths differ.
    fn write<T: Storable>(&self, buffer: &mut Self::Buffer<T>, data: &[T]) -> Result<()>;

    /// The number of values in `buffer`.
    fn len<T: Storable>(buffer: &Self::Buffer<T>) -> usize;

    /// Blocks until all work submitted to the device has finished.
    ///
    /// # Errors
    /// [`Error::Device`] if the device reports a failure.
    fn synchronize(&self) -> Result<()>;

    /// Checks that `T` is supported, with an error naming `what` otherwise.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the device lacks `T`.
    fn require<T: Storable>(&self, what: &str) -> Result<()> {
        if self.supports(T::DTYPE) {
            Ok(())
        } else {
            Err(Error::Unsupported {
                backend: self.info().to_string(),
                what: format!("{what} in {}", T::DTYPE),
                reason: format!("the device does not support {}", T::DTYPE),
            })
        }
    }
}

/// The kinds of backend, for choosing one at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// [`Cpu`].
    Cpu,
    /// [`Wgpu`]: Vulkan, Metal, DX12 or WebGPU through wgpu.
    Wgpu,
    /// [`Cuda`]: NVIDIA GPUs through CUDA.
    Cuda,
}

impl BackendKind {
    /// Every kind, compiled in or not.
    pub const ALL: [BackendKind; 3] = [BackendKind::Cpu, BackendKind::Wgpu, BackendKind::Cuda];

    /// The name accepted by [`FromStr`]: `"cpu"`, `"wgpu"` or `"cuda"`.
    pub const fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Wgpu => "wgpu",
            BackendKind::Cuda => "cuda",
        }
    }

    /// Whether this kind was compiled in (its cargo feature is on).
    pub const fn is_compiled(self) -> bool {
        match self {
            BackendKind::Cpu => true,
            BackendKind::Wgpu => cfg!(feature = "wgpu"),
            BackendKind::Cuda => cfg!(feature = "cuda"),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = Error;

    /// Parses `"cpu"`, `"wgpu"` or `"cuda"` (case-insensitive).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(BackendKind::Cpu),
            "wgpu" => Ok(BackendKind::Wgpu),
            "cuda" => Ok(BackendKind::Cuda),
            _ => Err(Error::UnknownBackend(s.to_string())),
        }
    }
}

/// A computation generic over the backend, for [`with_backend`]: the way to call generic
/// code with a backend chosen at run time.
pub trait BackendTask {
    /// What the task returns.
    type Output;
    /// Runs the task on `backend`.
    fn run<B: Backend>(self, backend: B) -> Result<Self::Output>;
}

/// Creates the backend of `kind` on its default device and runs `task` on it.
///
/// ```
/// use galerkin::{Backend, BackendKind, BackendTask, Result, Vector};
///
/// struct Norm;
/// impl BackendTask for Norm {
///     type Output = f64;
///     fn run<B: Backend>(self, backend: B) -> Result<f64> {
///         Vector::from_slice(&backend, &[3.0f64, 4.0])?.nrm2()
///     }
/// }
/// let kind: BackendKind = "cpu".parse()?;
/// assert_eq!(galerkin::with_backend(kind, Norm)?, 5.0);
/// # Ok::<(), galerkin::Error>(())
/// ```
///
/// # Errors
/// [`Error::BackendUnavailable`] if the kind is not compiled in or has no device, and
/// whatever the task returns.
pub fn with_backend<T: BackendTask>(kind: BackendKind, task: T) -> Result<T::Output> {
    match kind {
        BackendKind::Cpu => task.run(Cpu::new()),
        #[cfg(feature = "wgpu")]
        BackendKind::Wgpu => task.run(Wgpu::new()?),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => task.run(Cuda::new()?),
        #[allow(unreachable_patterns)]
        other => Err(Error::BackendUnavailable {
            backend: other.name().to_string(),
            reason: format!(
                "galerkin was built without the `{}` feature (rebuild with `--features {}`)",
                other.name(),
                other.name()
            ),
        }),
    }
}

/// What a backend reports about its device.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendInfo {
    /// The kind of backend.
    pub kind: BackendKind,
    /// The device name as the runtime reports it (e.g. `"NVIDIA H100 80GB HBM3"`).
    pub device: String,
    /// Element types the device computes on.
    pub dtypes: Vec<DType>,
    /// Whether plane (subgroup/warp) operations are available to kernels.
    pub plane_ops: bool,
    /// Plane size range `(min, max)`; `(1, 1)` on the CPU.
    pub plane_size: (u32, u32),
    /// Largest single buffer, in bytes.
    pub max_buffer_bytes: u64,
    /// Shared (workgroup) memory per cube, in bytes; 0 on the CPU.
    pub max_shared_bytes: usize,
    /// Largest number of units in one cube (workgroup); the thread count on the CPU.
    pub max_units_per_cube: u32,
    /// Largest cube count per grid dimension `(x, y, z)`.
    pub max_cube_count: (u32, u32, u32),
    /// Whether f64 atomic add is available (an optimisation; never required).
    pub atomic_f64: bool,
}

impl BackendInfo {
    /// Whether `dtype` is among the supported types.
    pub fn supports(&self, dtype: DType) -> bool {
        self.dtypes.contains(&dtype)
    }

    /// Whether f64 arithmetic is supported.
    pub fn supports_f64(&self) -> bool {
        self.supports(DType::F64)
    }
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kind, self.device)
    }
}
