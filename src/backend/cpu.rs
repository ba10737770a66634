//! The CPU backend: host memory, rayon's global thread pool.

use std::sync::Arc;

use crate::backend::core::{sealed::Sealed, BackendCore, BackendInfo, BackendKind, Deferred};
use crate::error::{check_len, Error, Result};
use crate::scalar::{DType, Storable};

/// The CPU backend: buffers are `Vec<T>` in host memory and kernels run on rayon's global
/// thread pool. It is the default backend and the reference that every device kernel is
/// verified against.
///
/// Cloning is cheap; all clones are the same backend.
#[derive(Clone, Debug)]
pub struct Cpu {
    info: Arc<BackendInfo>,
}

impl Cpu {
    /// The CPU backend.
    pub fn new() -> Self {
        let threads = rayon::current_num_threads() as u32;
        Cpu {
            info: Arc::new(BackendInfo {
                kind: BackendKind::Cpu,
                device: format!("host, {threads} rayon threads"),
                dtypes: vec![
                    DType::F16,
                    DType::BF16,
                    DType::F32,
                    DType::F64,
                    DType::U32,
                    DType::I32,
                ],
                plane_ops: false,
                plane_size: (1, 1),
                max_buffer_bytes: isize::MAX as u64,
                max_shared_bytes: 0,
                max_units_per_cube: threads,
                max_cube_count: (u32::MAX, 1, 1),
                atomic_f64: false,
                memory_bytes: crate::limits::host_memory_total(),
                clock_held: false,
                kernel_cache: None,
            }),
        }
    }
}

impl Cpu {
    /// A CPU backend that accepts only the element types in `dtypes`: it behaves like a
    /// device without f64 (or without f16), to exercise the fallback paths of code that must
    /// also run on such devices. Asking it for another type gives
    /// [`Error::Unsupported`](crate::error::Error::Unsupported).
    pub fn with_dtypes(dtypes: &[DType]) -> Self {
        let mut info = (*Cpu::new().info).clone();
        info.dtypes = dtypes.to_vec();
        info.device = format!("{} limited to {:?}", info.device, dtypes);
        Cpu {
            info: Arc::new(info),
        }
    }
}

impl Cpu {
    /// Checks that `len` values of `T` fit in one buffer (see
    /// [`with_buffer_limit`](BackendCore::with_buffer_limit)).
    fn check_size<T: Storable>(&self, len: usize) -> Result<()> {
        let requested = (len as u64).saturating_mul(T::DTYPE.size() as u64);
        if requested > self.info.max_buffer_bytes {
            return Err(Error::ResourceLimit {
                backend: self.info.to_string(),
                what: format!("a buffer of {len} {}", T::DTYPE),
                requested,
                limit: self.info.max_buffer_bytes,
            });
        }
        // Large buffers: the memory available now, so that a request the machine cannot
        // hold is refused rather than overcommitted and killed later.
        if requested >= 1 << 26 {
            crate::limits::check_host_bytes(format!("a buffer of {len} {}", T::DTYPE), requested)?;
        }
        Ok(())
    }

    /// The error of an allocation that failed after [`check_size`](Self::check_size).
    fn alloc_failed<T: Storable>(&self, len: usize) -> Error {
        Error::ResourceLimit {
            backend: self.info.to_string(),
            what: format!("a buffer of {len} {}", T::DTYPE),
            requested: (len as u64).saturating_mul(T::DTYPE.size() as u64),
            limit: crate::limits::host_memory_available().unwrap_or(self.info.max_buffer_bytes),
        }
    }
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu::new()
    }
}

impl BackendCore for Cpu {
    type Buffer<T: Storable> = Vec<T>;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn alloc<T: Storable>(&self, len: usize) -> Result<Vec<T>> {
        self.check_size::<T>(len)?;
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| self.alloc_failed::<T>(len))?;
        v.resize(len, T::default());
        Ok(v)
    }

    fn upload<T: Storable>(&self, data: &[T]) -> Result<Vec<T>> {
        self.check_size::<T>(data.len())?;
        let mut v = self.alloc::<T>(0)?;
        v.try_reserve_exact(data.len())
            .map_err(|_| self.alloc_failed::<T>(data.len()))?;
        v.extend_from_slice(data);
        Ok(v)
    }

    fn download<T: Storable>(&self, buffer: &Vec<T>) -> Result<Vec<T>> {
        Ok(buffer.clone())
    }

    fn duplicate<T: Storable>(&self, buffer: &Vec<T>) -> Result<Vec<T>> {
        self.upload(buffer)
    }

    fn host_slice<'b, T: Storable>(&self, buffer: &'b Vec<T>) -> Option<&'b [T]> {
        Some(buffer)
    }

    fn download_later<T: Storable>(&self, buffer: &Vec<T>) -> Result<Deferred<'_, T>> {
        Ok(Deferred::ready(buffer.clone()))
    }

    fn write<T: Storable>(&self, buffer: &mut Vec<T>, data: &[T]) -> Result<()> {
        check_len("write", "data", buffer.len(), data.len())?;
        buffer.copy_from_slice(data);
        Ok(())
    }

    fn len<T: Storable>(buffer: &Vec<T>) -> usize {
        buffer.len()
    }

    fn with_buffer_limit(&self, bytes: u64) -> Result<Self> {
        const LIMITED: &str = ", buffers of at most";
        let mut info = (*self.info).clone();
        // Against the host's own limit (a second call may raise the first's).
        info.max_buffer_bytes = crate::backend::core::buffer_limit(&Cpu::new().info, bytes)?;
        if let Some(at) = info.device.find(LIMITED) {
            info.device.truncate(at);
        }
        info.device = format!("{}{LIMITED} {} bytes", info.device, info.max_buffer_bytes);
        Ok(Cpu {
            info: Arc::new(info),
        })
    }

    fn same_device(&self, _other: &Self) -> bool {
        true // host memory is one device, whatever the dtype limits
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}

impl Sealed for Cpu {}
