//! [`Backend`]: the bundle of every operator family, and choosing a backend at run time.

use crate::backend::core::{BackendCore, BackendKind};
use crate::backend::cpu::Cpu;
use crate::batched::BatchedOps;
use crate::dg::DgOps;
use crate::error::{Error, Result};
use crate::hdg::HdgOps;
use crate::sparse::SparseOps;
use crate::tensor::TensorOps;
use crate::vector::VectorOps;

/// A backend: buffers plus every operator family. Implemented by [`Cpu`] and
/// [`Cube<R>`](crate::Cube).
pub trait Backend:
    BackendCore + VectorOps + SparseOps + BatchedOps + HdgOps + TensorOps + DgOps
{
}

impl<B: BackendCore + VectorOps + SparseOps + BatchedOps + HdgOps + TensorOps + DgOps> Backend
    for B
{
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
        BackendKind::Wgpu => task.run(crate::backend::cube::Wgpu::new()?),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => task.run(crate::backend::cube::Cuda::new()?),
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

/// As [`with_backend`], on device `device` of the kind (the index among the CUDA devices, or
/// among wgpu's discrete GPUs; 0 is the default device; ignored for the CPU). With MPI, a
/// rank usually takes `node_rank % device_count(kind)`.
///
/// # Errors
/// As [`with_backend`], and [`Error::BackendUnavailable`] for a device that does not exist.
pub fn with_backend_on<T: BackendTask>(
    kind: BackendKind,
    device: usize,
    task: T,
) -> Result<T::Output> {
    match (kind, device) {
        (_, 0) | (BackendKind::Cpu, _) => with_backend(kind, task),
        #[cfg(feature = "wgpu")]
        (BackendKind::Wgpu, i) => task.run(crate::backend::cube::Wgpu::on(
            cubecl::wgpu::WgpuDevice::DiscreteGpu(i),
        )?),
        #[cfg(feature = "cuda")]
        (BackendKind::Cuda, i) => {
            let count = device_count(kind);
            if i >= count {
                return Err(Error::BackendUnavailable {
                    backend: "cuda".into(),
                    reason: format!("device {i} requested, {count} CUDA device(s) present"),
                });
            }
            task.run(crate::backend::cube::Cuda::on(cubecl::cuda::CudaDevice {
                index: i,
            })?)
        }
        #[allow(unreachable_patterns)]
        (other, _) => with_backend(other, task),
    }
}

/// The devices of `kind` on this machine: the CUDA device count (0 if the driver is
/// missing); 1 for the CPU and for wgpu (whose adapters are not counted here).
pub fn device_count(kind: BackendKind) -> usize {
    match kind {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            use cudarc::driver::result;
            if !crate::backend::cube::cuda_driver_present() {
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
