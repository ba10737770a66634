//! `galerkin._galerkin`: the Rust half of the Python package. Thin: it converts NumPy
//! arrays and names to the library's types, calls the library with the GIL released, and
//! turns the library's errors into Python exceptions. The Python half (`galerkin/`) takes
//! SciPy matrices apart and puts the docstrings in front.

use galerkin::{BackendKind, Error};
use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod apps;
mod batched;
mod matrix;
mod sparse;
mod vector;

/// The library's error as a Python exception: `ValueError` for bad input (shapes, values,
/// names, a matrix the format cannot hold), `MemoryError` for a size beyond the device,
/// `OSError` for files, `RuntimeError` for devices and everything else.
pub(crate) fn to_py(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::InvalidArgument { .. }
        | Error::InvalidMatrix { .. }
        | Error::Padding { .. }
        | Error::DimensionMismatch { .. }
        | Error::Parse { .. }
        | Error::Unsupported { .. }
        | Error::UnknownBackend(_)
        | Error::DeviceMismatch { .. } => PyValueError::new_err(message),
        Error::ResourceLimit { .. } => PyMemoryError::new_err(message),
        Error::Io { .. } => PyOSError::new_err(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// A `ValueError` naming the argument.
pub(crate) fn value_error(name: &str, reason: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{name}: {reason}"))
}

/// The backend a name asks for (`"cpu"`, `"wgpu"`, `"cuda"`).
pub(crate) fn backend_kind(name: &str) -> PyResult<BackendKind> {
    name.parse().map_err(to_py)
}

/// The backends this build has, in the order `cpu`, `wgpu`, `cuda`, each only where a device
/// answers (a wgpu build on a machine without a Vulkan driver lists `cpu` alone).
#[pyfunction]
fn backends(py: Python<'_>) -> Vec<&'static str> {
    py.detach(|| {
        let mut names = vec!["cpu"];
        #[cfg(feature = "wgpu")]
        if galerkin::Wgpu::new().is_ok() {
            names.push("wgpu");
        }
        #[cfg(feature = "cuda")]
        if galerkin::Cuda::new().is_ok() {
            names.push("cuda");
        }
        names
    })
}

/// The backends compiled into this build, whether or not a device answers.
#[pyfunction]
fn compiled_backends() -> Vec<&'static str> {
    let mut names = vec!["cpu"];
    if cfg!(feature = "wgpu") {
        names.push("wgpu");
    }
    if cfg!(feature = "cuda") {
        names.push("cuda");
    }
    names
}

#[pymodule]
fn _galerkin(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add_function(wrap_pyfunction!(compiled_backends, m)?)?;
    sparse::register(m)?;
    batched::register(m)?;
    apps::register(m)?;
    matrix::register(m)?;
    vector::register(m)?;
    Ok(())
}
