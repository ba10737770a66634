//! Choosing a backend at run time: [`with_backend`] runs a generic [`BackendTask`] on the
//! backend a string names (`"cpu" | "wgpu" | "cuda"`), the front door of the examples and of
//! command-line tools.
//!
//! A task may use every operator family of this crate: it is generic over [`FullBackend`],
//! the core [`Backend`] plus the discretisations' families, which every backend galerkin
//! ships implements.

use crate::backend::core::BackendKind;
use crate::backend::cpu::Cpu;
use crate::bundle::Backend;
use crate::dg::DgOps;
use crate::error::{Error, Result};
use crate::hdg::HdgOps;
use crate::tensor::TensorOps;

/// A [`Backend`] with every discretisation family too (HDG, tensor-product, nodal DG): what
/// [`with_backend`] hands a task. [`Cpu`] and [`Cube<R>`](crate::Cube) implement it.
pub trait FullBackend: Backend + HdgOps + TensorOps + DgOps {}

impl<B: Backend + HdgOps + TensorOps + DgOps> FullBackend for B {}

/// A computation generic over the backend, for [`with_backend`]: the way to call generic
/// code with a backend chosen at run time.
pub trait BackendTask {
    /// What the task returns.
    type Output;
    /// Runs the task on `backend`.
    fn run<B: FullBackend>(self, backend: B) -> Result<Self::Output>;
}

/// Creates the backend of `kind` on its default device and runs `task` on it.
///
/// ```
/// use galerkin::{BackendKind, BackendTask, FullBackend, Result, Vector};
///
/// struct Norm;
/// impl BackendTask for Norm {
///     type Output = f64;
///     fn run<B: FullBackend>(self, backend: B) -> Result<f64> {
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
/// rank usually takes `node_rank % device_count(kind)` ([`device_count`](crate::device_count)).
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
            let count = crate::backend::device_count(kind);
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
