//! `galerkin.SparseMatrix`: a matrix moved to a backend once, for repeated products with
//! vectors that stay there (`M @ v` with a `galerkin.Vector` gives a `galerkin.Vector`, no
//! host round trip) or with NumPy arrays.

use galerkin::sparse::{Csr, Format, FormatOptions, SparseMatrix};
use galerkin::{BackendCore, Cpu, Element, Scalar, Vector};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::vector::{Inner as V, PyVector};
use crate::{to_py, value_error};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMatrix>()?;
    Ok(())
}

/// The matrix on its backend, with values in its precision.
enum Inner {
    CpuF64(SparseMatrix<Cpu, f64>, Cpu),
    CpuF32(SparseMatrix<Cpu, f32>, Cpu),
    #[cfg(feature = "wgpu")]
    WgpuF64(SparseMatrix<galerkin::Wgpu, f64>, galerkin::Wgpu),
    #[cfg(feature = "wgpu")]
    WgpuF32(SparseMatrix<galerkin::Wgpu, f32>, galerkin::Wgpu),
    #[cfg(feature = "cuda")]
    CudaF64(SparseMatrix<galerkin::Cuda, f64>, galerkin::Cuda),
    #[cfg(feature = "cuda")]
    CudaF32(SparseMatrix<galerkin::Cuda, f32>, galerkin::Cuda),
}

macro_rules! each {
    ($inner:expr, ($m:ident, $b:ident) => $body:expr) => {
        match $inner {
            Inner::CpuF64($m, $b) => $body,
            Inner::CpuF32($m, $b) => $body,
            #[cfg(feature = "wgpu")]
            Inner::WgpuF64($m, $b) => $body,
            #[cfg(feature = "wgpu")]
            Inner::WgpuF32($m, $b) => $body,
            #[cfg(feature = "cuda")]
            Inner::CudaF64($m, $b) => $body,
            #[cfg(feature = "cuda")]
            Inner::CudaF32($m, $b) => $body,
        }
    };
}

/// A sparse matrix on a backend (`galerkin.SparseMatrix(A, backend="cpu", format="auto",
/// dtype="float64")`, built by the Python wrapper from a SciPy matrix).
#[pyclass(name = "SparseMatrix", module = "galerkin", frozen, subclass)]
pub(crate) struct PyMatrix {
    inner: Inner,
    format: String,
}

fn moved<B: BackendCore + galerkin::sparse::SparseOps, T: Element>(
    b: &B,
    a: &Csr<Cpu, f64>,
    format: Option<Format>,
) -> galerkin::Result<(SparseMatrix<B, T>, String)> {
    let a: Csr<Cpu, T> = a.convert();
    match format {
        None => SparseMatrix::auto(b, &a).map(|(m, c)| (m, c.to_string())),
        Some(f) => Ok((
            SparseMatrix::from_csr(b, &a, f, &FormatOptions::default())?,
            format!("{f} (requested)"),
        )),
    }
}

/// `M x` for a host vector, through the backend.
fn product_host<B: galerkin::Backend, T: Scalar>(
    m: &SparseMatrix<B, T>,
    b: &B,
    x: &[f64],
) -> galerkin::Result<Vec<f64>> {
    let xv: Vec<T> = x.iter().map(|&v| T::from_f64(v)).collect();
    let xv = Vector::from_slice(b, &xv)?;
    let mut y = Vector::zeros(b, m.nrows())?;
    m.spmv(T::ONE, &xv, T::ZERO, &mut y)?;
    Ok(y.to_vec()?.iter().map(|v| v.as_f64()).collect())
}

/// `M x` for a vector on the matrix's backend in its precision.
fn product<B: galerkin::Backend, T: Scalar>(
    m: &SparseMatrix<B, T>,
    x: &Vector<B, T>,
) -> galerkin::Result<Vector<B, T>> {
    let mut y = Vector::zeros(x.backend(), m.nrows())?;
    m.spmv(T::ONE, x, T::ZERO, &mut y)?;
    Ok(y)
}

#[pymethods]
impl PyMatrix {
    /// Moves a CSR matrix (the wrapper's arrays) to `backend` in `format`, values in `dtype`.
    #[new]
    #[pyo3(signature = (indptr, indices, data, shape, backend="cpu", format="auto", dtype="float64"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        indptr: crate::sparse::Index<'_>,
        indices: crate::sparse::Index<'_>,
        data: PyReadonlyArray1<'_, f64>,
        shape: (usize, usize),
        backend: &str,
        format: &str,
        dtype: &str,
    ) -> PyResult<Self> {
        let kind = crate::backend_kind(backend)?;
        let format = crate::sparse::format(format)?;
        let f64 = match dtype {
            "float64" | "f64" => true,
            "float32" | "f32" => false,
            other => {
                return Err(value_error(
                    "dtype",
                    format!("unknown dtype `{other}`: expected float64 or float32"),
                ))
            }
        };
        let a = crate::sparse::csr(indptr.slice()?, indices.slice()?, data.as_slice()?, shape)?;
        let (inner, format) = py
            .detach(|| -> galerkin::Result<(Inner, String)> {
                use galerkin::BackendKind as K;
                Ok(match (kind, f64) {
                    (K::Cpu, true) => {
                        let b = Cpu::new();
                        let (m, f) = moved(&b, &a, format)?;
                        (Inner::CpuF64(m, b), f)
                    }
                    (K::Cpu, false) => {
                        let b = Cpu::new();
                        let (m, f) = moved(&b, &a, format)?;
                        (Inner::CpuF32(m, b), f)
                    }
                    #[cfg(feature = "wgpu")]
                    (K::Wgpu, true) => {
                        let b = galerkin::Wgpu::new()?;
                        let (m, f) = moved(&b, &a, format)?;
                        (Inner::WgpuF64(m, b), f)
                    }
                    #[cfg(feature = "wgpu")]
                    (K::Wgpu, false) => {
                        let b = galerkin::Wgpu::new()?;
                        let (m, f) = moved(&b, &a, format)?;
                        (Inner::WgpuF32(m, b), f)
                    }
                    #[cfg(feature = "cuda")]
                    (K::Cuda, true) => {
                        let b = galerkin::Cuda::new()?;
                        let (m, f) = moved(&b, &a, format)?;
                        (Inner::CudaF64(m, b), f)
                    }
                    #[cfg(feature = "cuda")]
                    (K::Cuda, false) => {
                        let b = galerkin::Cuda::new()?;
                        let (m, f) = moved(&b, &a, format)?;
                        (Inner::CudaF32(m, b), f)
                    }
                    #[allow(unreachable_patterns)]
                    (other, _) => {
                        return Err(galerkin::Error::BackendUnavailable {
                            backend: other.name().to_string(),
                            reason: "not compiled into this build of the Python package".into(),
                        })
                    }
                })
            })
            .map_err(to_py)?;
        Ok(PyMatrix { inner, format })
    }

    /// `(rows, columns)`.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        each!(&self.inner, (m, _b) => (m.nrows(), m.ncols()))
    }

    /// Stored nonzeros.
    #[getter]
    fn nnz(&self) -> usize {
        each!(&self.inner, (m, _b) => m.nnz())
    }

    /// The storage format and why it was chosen.
    #[getter]
    fn format(&self) -> &str {
        &self.format
    }

    /// `"cpu"`, `"wgpu"` or `"cuda"`.
    #[getter]
    fn backend(&self) -> &'static str {
        each!(&self.inner, (_m, b) => b.info().kind.name())
    }

    /// `"float64"` or `"float32"`: the values' precision, and that of the products.
    #[getter]
    fn dtype(&self) -> &'static str {
        match &self.inner {
            Inner::CpuF64(..) => "float64",
            #[cfg(feature = "wgpu")]
            Inner::WgpuF64(..) => "float64",
            #[cfg(feature = "cuda")]
            Inner::CudaF64(..) => "float64",
            _ => "float32",
        }
    }

    /// `M @ x`: a `galerkin.Vector` on the matrix's backend in its dtype gives a
    /// `galerkin.Vector` there (no copy to the host); anything else is taken as a NumPy array
    /// of `shape[1]` finite values and gives a float64 NumPy array.
    fn __matmul__<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(v) = x.cast::<PyVector>() {
            let v = v.get();
            let out = py.detach(|| -> PyResult<V> {
                let e = |e| to_py(e);
                Ok(match (&self.inner, &v.inner) {
                    (Inner::CpuF64(m, _), V::CpuF64(x)) => V::CpuF64(product(m, x).map_err(e)?),
                    (Inner::CpuF32(m, _), V::CpuF32(x)) => V::CpuF32(product(m, x).map_err(e)?),
                    #[cfg(feature = "wgpu")]
                    (Inner::WgpuF64(m, _), V::WgpuF64(x)) => V::WgpuF64(product(m, x).map_err(e)?),
                    #[cfg(feature = "wgpu")]
                    (Inner::WgpuF32(m, _), V::WgpuF32(x)) => V::WgpuF32(product(m, x).map_err(e)?),
                    #[cfg(feature = "cuda")]
                    (Inner::CudaF64(m, _), V::CudaF64(x)) => V::CudaF64(product(m, x).map_err(e)?),
                    #[cfg(feature = "cuda")]
                    (Inner::CudaF32(m, _), V::CudaF32(x)) => V::CudaF32(product(m, x).map_err(e)?),
                    _ => {
                        return Err(value_error(
                            "x",
                            format!(
                                "a {} {} vector for a {} {} matrix: move it with \
                                 galerkin.Vector(x.to_numpy(), backend=..., dtype=...)",
                                v.backend_name(),
                                v.dtype_name(),
                                self.backend(),
                                self.dtype()
                            ),
                        ))
                    }
                })
            })?;
            return Ok(Bound::new(py, PyVector { inner: out })?.into_any());
        }
        let array = py
            .import("numpy")?
            .call_method1("ascontiguousarray", (x, "float64"))?;
        let array = array
            .cast::<PyArray1<f64>>()
            .map_err(|_| value_error("x", "a vector needs a 1-D array of real numbers"))?;
        let x = array.readonly().as_slice()?.to_vec();
        crate::sparse::check_x(&x, self.shape().1)?;
        let y = py
            .detach(|| each!(&self.inner, (m, b) => product_host(m, b, &x)))
            .map_err(to_py)?;
        Ok(PyArray1::from_vec(py, y).into_any())
    }

    fn __repr__(&self) -> String {
        let (r, c) = self.shape();
        format!(
            "galerkin.SparseMatrix({r} x {c}, nnz={}, dtype={}, backend={}, format={})",
            self.nnz(),
            self.dtype(),
            self.backend(),
            self.format
        )
    }
}
