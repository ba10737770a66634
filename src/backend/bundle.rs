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
