//! `galerkin.batched`: GEMM, LU, Cholesky, solves and inverses of `(batch, n, n)` arrays.

use galerkin::batched::{self, Batch, GemmParams, Lu, Pivoting};
use galerkin::solver::driver::SolvePrecision;
use galerkin::{Backend, BackendTask, Element, FullBackend, Result, Scalar};
use numpy::ndarray::Array3;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray3, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::{backend_kind, to_py, value_error};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batched_gemm, m)?)?;
    m.add_function(wrap_pyfunction!(batched_lu_factor, m)?)?;
    m.add_function(wrap_pyfunction!(batched_lu_solve, m)?)?;
    m.add_function(wrap_pyfunction!(batched_cholesky, m)?)?;
    m.add_function(wrap_pyfunction!(batched_solve, m)?)?;
    m.add_function(wrap_pyfunction!(batched_inv, m)?)?;
    Ok(())
}

/// A `(count, rows, cols)` array on the host, row-major.
struct Host {
    shape: [usize; 3],
    data: Vec<f64>,
}

impl Host {
    fn new(name: &str, a: &PyReadonlyArray3<'_, f64>) -> PyResult<Host> {
        let s = a.shape();
        let data = a
            .as_slice()
            .map_err(|_| value_error(name, "must be C-contiguous"))?;
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            let n = s[1] * s[2];
            return Err(value_error(
                name,
                format!(
                    "entry [{}, {}, {}] is {}",
                    i / n.max(1),
                    (i % n.max(1)) / s[2].max(1),
                    i % s[2].max(1),
                    data[i]
                ),
            ));
        }
        Ok(Host {
            shape: [s[0], s[1], s[2]],
            data: data.to_vec(),
        })
    }

    fn upload<B: Backend, V: Element>(&self, b: &B) -> Result<Batch<B, V>> {
        let data: Vec<V> = self.data.iter().map(|&v| V::from_f64(v)).collect();
        Batch::from_slice(b, self.shape[0], self.shape[1], self.shape[2], &data)
    }
}

/// What a batched call computes.
enum Op {
    Gemm {
        a: Host,
        b: Host,
        c: Option<Host>,
        alpha: f64,
        beta: f64,
        trans_a: bool,
        trans_b: bool,
    },
    LuFactor(Host),
    LuSolve {
        lu: Host,
        pivots: Vec<u32>,
        b: Host,
    },
    Cholesky(Host),
    Solve {
        a: Host,
        b: Host,
    },
    Inverse(Host),
}

/// A result: an array, and the pivots and per-matrix status where the operation has them.
struct Out {
    array: Array3<f64>,
    pivots: Option<Vec<u32>>,
    status: Option<Vec<i32>>,
}

fn download<B: Backend, V: Element>(x: &Batch<B, V>) -> Result<Array3<f64>> {
    let values: Vec<f64> = x.to_vec()?.iter().map(|v| v.as_f64()).collect();
    Array3::from_shape_vec((x.count(), x.nrows(), x.ncols()), values).map_err(|e| {
        galerkin::Error::InvalidArgument {
            op: "batched",
            name: "result",
            reason: e.to_string(),
        }
    })
}

fn run_op<B: Backend, V: Element, T: Scalar>(b: &B, op: &Op) -> Result<Out> {
    let plain = |array| Out {
        array,
        pivots: None,
        status: None,
    };
    match op {
        Op::Gemm {
            a,
            b: bm,
            c,
            alpha,
            beta,
            trans_a,
            trans_b,
        } => {
            let (ad, bd) = (a.upload::<B, V>(b)?, bm.upload::<B, V>(b)?);
            let mut params = GemmParams::new(T::from_f64(*alpha), T::from_f64(*beta));
            if *trans_a {
                params = params.transpose_a();
            }
            if *trans_b {
                params = params.transpose_b();
            }
            let m = if *trans_a { a.shape[2] } else { a.shape[1] };
            let n = if *trans_b { bm.shape[1] } else { bm.shape[2] };
            let mut cd = match c {
                Some(c) => c.upload::<B, V>(b)?,
                None => Batch::zeros(b, a.shape[0].max(bm.shape[0]), m, n)?,
            };
            batched::gemm(&params, &ad, &bd, &mut cd)?;
            Ok(plain(download(&cd)?))
        }
        Op::LuFactor(a) => {
            let f = batched::lu::<B, V, T>(a.upload(b)?, Pivoting::Partial)?;
            Ok(Out {
                array: download(f.factors())?,
                pivots: Some(f.pivots_to_vec()?),
                status: Some(f.status().codes()?),
            })
        }
        Op::LuSolve { lu, pivots, b: rhs } => {
            let f = Lu::from_parts(lu.upload::<B, V>(b)?, pivots)?;
            let mut x = rhs.upload::<B, V>(b)?;
            batched::lu_solve::<B, V, T>(&f, &mut x)?;
            Ok(plain(download(&x)?))
        }
        Op::Cholesky(a) => {
            let (l, status) = batched::cholesky::<B, V, T>(a.upload(b)?)?;
            Ok(Out {
                array: download(&l)?,
                pivots: None,
                status: Some(status.codes()?),
            })
        }
        Op::Solve { a, b: rhs } => {
            let f = batched::lu::<B, V, T>(a.upload(b)?, Pivoting::Partial)?;
            let mut x = rhs.upload::<B, V>(b)?;
            batched::lu_solve::<B, V, T>(&f, &mut x)?;
            Ok(Out {
                array: download(&x)?,
                pivots: None,
                status: Some(f.status().codes()?),
            })
        }
        Op::Inverse(a) => {
            let (x, status) = batched::inverse::<B, V, T>(&a.upload(b)?)?;
            Ok(Out {
                array: download(&x)?,
                pivots: None,
                status: Some(status.codes()?),
            })
        }
    }
}

struct Task {
    op: Op,
    precision: SolvePrecision,
}

impl BackendTask for Task {
    type Output = Out;
    fn run<B: FullBackend>(self, b: B) -> Result<Out> {
        match self.precision {
            SolvePrecision::F64 => run_op::<B, f64, f64>(&b, &self.op),
            SolvePrecision::F32 => run_op::<B, f32, f32>(&b, &self.op),
            SolvePrecision::Mixed => run_op::<B, f32, f64>(&b, &self.op),
        }
    }
}

type Arrays<'py> = (
    Bound<'py, PyArray3<f64>>,
    Option<Bound<'py, PyArray2<i64>>>,
    Option<Bound<'py, PyArray1<i32>>>,
);

fn call<'py>(py: Python<'py>, op: Op, backend: &str, precision: &str) -> PyResult<Arrays<'py>> {
    let kind = backend_kind(backend)?;
    let precision: SolvePrecision = precision.parse().map_err(to_py)?;
    let task = Task { op, precision };
    let out = py
        .detach(|| galerkin::with_backend(kind, task))
        .map_err(to_py)?;
    let count = out.array.shape()[0];
    let pivots = match out.pivots {
        Some(p) => {
            let n = p.len().checked_div(count).unwrap_or(0);
            let p: Vec<i64> = p.into_iter().map(i64::from).collect();
            let p = numpy::ndarray::Array2::from_shape_vec((count, n), p)
                .map_err(|e| value_error("pivots", e))?;
            Some(p.into_pyarray(py))
        }
        None => None,
    };
    Ok((
        out.array.into_pyarray(py),
        pivots,
        out.status.map(|s| PyArray1::from_vec(py, s)),
    ))
}

fn square(name: &str, a: &Host) -> PyResult<()> {
    if a.shape[1] != a.shape[2] {
        return Err(value_error(
            name,
            format!(
                "({}, {}, {}): the matrices must be square",
                a.shape[0], a.shape[1], a.shape[2]
            ),
        ));
    }
    Ok(())
}

/// `alpha op(A) op(B) + beta C` of every matrix (see `galerkin.batched.gemm`).
#[pyfunction]
#[pyo3(signature = (a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=false, trans_b=false, backend="cpu", precision="f64"))]
#[allow(clippy::too_many_arguments)]
fn batched_gemm<'py>(
    py: Python<'py>,
    a: PyReadonlyArray3<'py, f64>,
    b: PyReadonlyArray3<'py, f64>,
    c: Option<PyReadonlyArray3<'py, f64>>,
    alpha: f64,
    beta: f64,
    trans_a: bool,
    trans_b: bool,
    backend: &str,
    precision: &str,
) -> PyResult<Bound<'py, PyArray3<f64>>> {
    if !alpha.is_finite() || !beta.is_finite() {
        return Err(value_error("alpha, beta", "must be finite"));
    }
    let c = c.map(|c| Host::new("c", &c)).transpose()?;
    if c.is_none() && beta != 0.0 {
        return Err(value_error("beta", "is not 0 but no c was given"));
    }
    let op = Op::Gemm {
        a: Host::new("a", &a)?,
        b: Host::new("b", &b)?,
        c,
        alpha,
        beta,
        trans_a,
        trans_b,
    };
    Ok(call(py, op, backend, precision)?.0)
}

/// LU with partial pivoting of every matrix: `(lu, pivots, status)`.
#[pyfunction]
#[pyo3(signature = (a, *, backend="cpu", precision="f64"))]
fn batched_lu_factor<'py>(
    py: Python<'py>,
    a: PyReadonlyArray3<'py, f64>,
    backend: &str,
    precision: &str,
) -> PyResult<Arrays<'py>> {
    let a = Host::new("a", &a)?;
    square("a", &a)?;
    call(py, Op::LuFactor(a), backend, precision)
}

/// Solves with the factors of `batched_lu_factor`; `b` is `(batch, n, k)`.
#[pyfunction]
#[pyo3(signature = (lu, pivots, b, *, backend="cpu", precision="f64"))]
fn batched_lu_solve<'py>(
    py: Python<'py>,
    lu: PyReadonlyArray3<'py, f64>,
    pivots: numpy::PyReadonlyArray2<'py, i64>,
    b: PyReadonlyArray3<'py, f64>,
    backend: &str,
    precision: &str,
) -> PyResult<Bound<'py, PyArray3<f64>>> {
    let lu = Host::new("lu", &lu)?;
    square("lu", &lu)?;
    let shape = pivots.shape();
    if shape != [lu.shape[0], lu.shape[1]] {
        return Err(value_error(
            "pivots",
            format!(
                "shape ({}, {}) for factors of shape ({}, {}, {})",
                shape[0], shape[1], lu.shape[0], lu.shape[1], lu.shape[2]
            ),
        ));
    }
    let pivots = pivots
        .as_slice()
        .map_err(|_| value_error("pivots", "must be C-contiguous"))?
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            u32::try_from(p).map_err(|_| value_error("pivots", format!("entry {i} is {p}")))
        })
        .collect::<PyResult<Vec<u32>>>()?;
    let op = Op::LuSolve {
        lu,
        pivots,
        b: Host::new("b", &b)?,
    };
    Ok(call(py, op, backend, precision)?.0)
}

/// Cholesky `A = L Lᵀ` of every matrix: `(L, status)`; the strictly upper part of `L` is
/// whatever the kernel left (the Python wrapper zeroes it).
#[pyfunction]
#[pyo3(signature = (a, *, backend="cpu", precision="f64"))]
fn batched_cholesky<'py>(
    py: Python<'py>,
    a: PyReadonlyArray3<'py, f64>,
    backend: &str,
    precision: &str,
) -> PyResult<Arrays<'py>> {
    let a = Host::new("a", &a)?;
    square("a", &a)?;
    call(py, Op::Cholesky(a), backend, precision)
}

/// `A x = b` of every matrix by LU with partial pivoting: `(x, status)`; `b` is
/// `(batch, n, k)`.
#[pyfunction]
#[pyo3(signature = (a, b, *, backend="cpu", precision="f64"))]
fn batched_solve<'py>(
    py: Python<'py>,
    a: PyReadonlyArray3<'py, f64>,
    b: PyReadonlyArray3<'py, f64>,
    backend: &str,
    precision: &str,
) -> PyResult<Arrays<'py>> {
    let a = Host::new("a", &a)?;
    square("a", &a)?;
    let op = Op::Solve {
        a,
        b: Host::new("b", &b)?,
    };
    call(py, op, backend, precision)
}

/// The inverse of every matrix: `(inverse, status)`.
#[pyfunction]
#[pyo3(signature = (a, *, backend="cpu", precision="f64"))]
fn batched_inv<'py>(
    py: Python<'py>,
    a: PyReadonlyArray3<'py, f64>,
    backend: &str,
    precision: &str,
) -> PyResult<Arrays<'py>> {
    let a = Host::new("a", &a)?;
    square("a", &a)?;
    call(py, Op::Inverse(a), backend, precision)
}
