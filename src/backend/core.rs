//! The foundation of every backend: typed buffers, their movement to and from the host,
//! and what the device can do. The operator families build on [`BackendCore`].

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::scalar::{DType, Storable};

/// Seals the operator-family traits: only this crate's backends implement them, and their
/// unchecked methods are reached only through the checked containers.
pub(crate) mod sealed {
    /// Implemented by [`Cpu`](crate::backend::Cpu) and [`Cube<R>`](crate::backend::Cube) only.
    pub trait Sealed {}
}

/// What a backend provides beneath every operator family: typed device buffers and their
/// movement to and from the host.
///
/// Buffers belong to the backend value that made them (and its clones); passing a buffer
/// to another device's backend is an error where it can be detected.
pub trait BackendCore: Clone + Send + Sync + fmt::Debug + 'static {
    /// A buffer of `len` values of type `T` in the backend's memory.
    type Buffer<T: Storable>: Send + Sync + fmt::Debug + 'static;

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

    /// A copy of `buffer` on the same device, made there (the CPU backend: one host copy;
    /// the default goes through the host).
    ///
    /// # Errors
    /// As [`alloc`](Self::alloc); [`Error::DeviceMismatch`] if the buffer belongs to another
    /// device.
    fn duplicate<T: Storable>(&self, buffer: &Self::Buffer<T>) -> Result<Self::Buffer<T>> {
        self.upload(&self.download(buffer)?)
    }

    /// `buffer`'s values in place, where the buffer is host memory (the CPU backend): moves
    /// from the host then read them without a copy. `None` (the default) for device memory.
    fn host_slice<'b, T: Storable>(&self, buffer: &'b Self::Buffer<T>) -> Option<&'b [T]> {
        let _ = buffer;
        None
    }

    /// The contents of `buffer`, copied to the host. Waits for pending work on the buffer.
    ///
    /// # Errors
    /// [`Error::Device`] if the device fails while reading; [`Error::DeviceMismatch`] if the
    /// buffer belongs to another device.
    fn download<T: Storable>(&self, buffer: &Self::Buffer<T>) -> Result<Vec<T>>;

    /// Starts copying `buffer` to the host behind the work submitted so far and returns
    /// without waiting; [`Deferred::wait`] returns the values. Work queued after this call
    /// runs on the device while the caller waits, and does not change the values read (it
    /// may overwrite `buffer`): conjugate gradients overlaps its residual read with the next
    /// direction and product this way. The CPU backend copies at once.
    ///
    /// # Errors
    /// As [`download`](Self::download); a device failure may also come from the wait.
    fn download_later<T: Storable>(&self, buffer: &Self::Buffer<T>) -> Result<Deferred<'_, T>>;

    /// Overwrites `buffer` with `data` (same length).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the lengths differ; [`Error::DeviceMismatch`] if the
    /// buffer belongs to another device.
    fn write<T: Storable>(&self, buffer: &mut Self::Buffer<T>, data: &[T]) -> Result<()>;

    /// The number of values in `buffer`.
    fn len<T: Storable>(buffer: &Self::Buffer<T>) -> usize;

    /// A buffer over values `start..start + len` of `buffer`, sharing its memory (a binding
    /// at an offset), where the backend can bind part of a buffer and `start` is a multiple
    /// of [`SPLIT_ROW_ALIGN`]; `None` otherwise (the CPU
    /// backend: its buffers are host vectors).
    ///
    /// # Safety
    /// The view aliases `buffer`: the caller must not use the two in one operation, nor the
    /// view after `buffer` is written through another path it does not expect.
    unsafe fn view<T: Storable>(
        &self,
        buffer: &Self::Buffer<T>,
        start: usize,
        len: usize,
    ) -> Option<Self::Buffer<T>> {
        let _ = (buffer, start, len);
        None
    }

    /// A handle on the same device whose buffers hold at most `bytes` (at least
    /// [`MIN_BUFFER_LIMIT`]): [`BackendInfo::max_buffer_bytes`] becomes `bytes`, vectors
    /// longer than one such buffer are stored in parts and sparse matrices in blocks, as
    /// on a device whose binding limit is `bytes`. Buffers of the two handles may be mixed.
    /// Use it to run the split paths on small problems (tests), or to keep every buffer
    /// below a size of your choice. A limit above the device's own is lowered to it. A
    /// sparse matrix needs room for a block of 256 of its rows in one buffer (else its
    /// conversion is an [`Error::ResourceLimit`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `bytes` is below [`MIN_BUFFER_LIMIT`].
    fn with_buffer_limit(&self, bytes: u64) -> Result<Self>;

    /// Whether `other` drives the same device as `self` (buffers of one may be used with the
    /// other). Clones of a backend do.
    fn same_device(&self, other: &Self) -> bool;

    /// Blocks until all work submitted to the device has finished.
    ///
    /// # Errors
    /// [`Error::Device`] if the device reports a failure.
    fn synchronize(&self) -> Result<()>;

    /// The most bytes the library's buffers held at once on this device connection since it
    /// was made or since [`reset_memory_peak`](Self::reset_memory_peak), padding included
    /// (the runtime's pools reserve whole pages, so the device gives up somewhat more); views
    /// count nothing. `None` on the CPU, whose buffers are plain vectors (the examples report
    /// the process's peak resident memory there).
    fn memory_peak(&self) -> Option<u64> {
        None
    }

    /// Starts a new [`memory_peak`](Self::memory_peak) from the bytes held now.
    fn reset_memory_peak(&self) {}

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

/// Vector parts and the row blocks of split matrices start at multiples of this many
/// values: a view starting there is aligned for every element type (wgpu binds storage at
/// multiples of 256 bytes).
pub const SPLIT_ROW_ALIGN: usize = 256;

/// The smallest buffer limit [`BackendCore::with_buffer_limit`] accepts: 2048 bytes, one
/// part of 256 values of 8 bytes (see [`vector_part_len`]).
pub const MIN_BUFFER_LIMIT: u64 = 2048;

/// The number of values in each part of a vector too long for one buffer of a device whose
/// largest buffer is `max_buffer_bytes`: the largest multiple of
/// [`SPLIT_ROW_ALIGN`] values of 8 bytes that fits, for every
/// element type (so an f32 and an f64 vector of one length are split alike). Vectors of at
/// most this many values are one buffer.
pub fn vector_part_len(max_buffer_bytes: u64) -> usize {
    let align = SPLIT_ROW_ALIGN as u64;
    let values = (max_buffer_bytes / 8 / align * align).max(align);
    usize::try_from(values).unwrap_or(usize::MAX)
}

/// Checks a requested buffer limit and caps it at the device's.
pub(crate) fn buffer_limit(info: &BackendInfo, bytes: u64) -> Result<u64> {
    if bytes < MIN_BUFFER_LIMIT {
        return Err(Error::InvalidArgument {
            op: "with_buffer_limit",
            name: "bytes",
            reason: format!("{bytes} bytes is below the smallest limit, {MIN_BUFFER_LIMIT}"),
        });
    }
    Ok(bytes.min(info.max_buffer_bytes))
}

/// The kinds of backend, for choosing one at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// [`Cpu`](crate::backend::Cpu).
    Cpu,
    /// `Wgpu`: Vulkan, Metal, DX12 or WebGPU through wgpu.
    Wgpu,
    /// `Cuda`: NVIDIA GPUs through CUDA.
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
    /// Device memory in bytes where the runtime reports it (CUDA: cubecl reads
    /// `cuDeviceTotalMem` and makes its largest pool page a quarter of it); the CPU: the
    /// host's physical memory; `None` on wgpu. Its memory pools round allocations up to pages, so plan on less.
    pub memory_bytes: Option<u64>,
    /// wgpu on an NVIDIA GPU: whether the backend holds a CUDA context open on the GPU so
    /// that its driver keeps the multiprocessor clock up (Vulkan work alone leaves it near
    /// idle: latency-bound kernels ran 2x slower). Off with `GALERKIN_WGPU_CLOCK_HOLD=0`;
    /// `false` on other devices and backends.
    pub clock_held: bool,
    /// The directory this connection keeps its compiled kernels in
    /// ([`kernel_cache`](crate::backend::kernel_cache)): `None` on the CPU and wgpu, where
    /// the cache is off, or where its directory is not usable.
    pub kernel_cache: Option<std::path::PathBuf>,
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

/// Values on their way to the host: from [`BackendCore::download_later`]. Dropping it
/// without [`wait`](Self::wait) still waits for the copy (the host memory it lands in is
/// not released while the device may be writing it).
#[must_use = "the values arrive only through `wait`"]
pub struct Deferred<'a, T> {
    wait: Option<Box<dyn FnOnce() -> Result<Vec<T>> + Send + 'a>>,
}

impl<'a, T: Send + 'a> Deferred<'a, T> {
    /// Values that are already on the host.
    pub fn ready(values: Vec<T>) -> Self {
        Deferred::new(move || Ok(values))
    }

    /// Values that `wait` delivers.
    pub(crate) fn new(wait: impl FnOnce() -> Result<Vec<T>> + Send + 'a) -> Self {
        Deferred {
            wait: Some(Box::new(wait)),
        }
    }

    /// Blocks until the values are on the host and returns them.
    ///
    /// # Errors
    /// [`Error::Device`] if the device failed while producing or copying them.
    pub fn wait(mut self) -> Result<Vec<T>> {
        match self.wait.take() {
            Some(wait) => wait(),
            None => Ok(Vec::new()),
        }
    }
}

impl<T> Drop for Deferred<'_, T> {
    fn drop(&mut self) {
        if let Some(wait) = self.wait.take() {
            // The values (or an error the caller chose not to read) are discarded.
            let _ = wait();
        }
    }
}

impl<T> fmt::Debug for Deferred<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Deferred(..)")
    }
}

/// Checks that `other` is the device of `this`, else returns [`Error::DeviceMismatch`] for
/// `op`: a buffer of one device must never reach a kernel of another.
///
/// # Errors
/// [`Error::DeviceMismatch`] when they differ.
pub(crate) fn check_device<B: BackendCore>(op: &'static str, this: &B, other: &B) -> Result<()> {
    if this.same_device(other) {
        Ok(())
    } else {
        Err(Error::DeviceMismatch {
            op,
            left: this.info().to_string(),
            right: other.info().to_string(),
        })
    }
}
