//! `spmv` and `solve` on a CSR matrix given as its three arrays.

use std::time::Instant;

use galerkin::solver::driver::{
    solve_system, AmgPrecision, Method, PrecondKind, SolveOptions, SolvePrecision,
};
use galerkin::solver::{AmgCycle, AmgInfo, AmgSmoother};
use galerkin::sparse::{Csr, Format, FormatOptions, SparseMatrix};
use galerkin::{Backend, BackendTask, Cpu, Element, FullBackend, Result, Scalar, Vector};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{backend_kind, to_py, value_error};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(spmv, m)?)?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(time_spmv, m)?)?;
    Ok(())
}

/// An index array from Python: SciPy's int32, or int64 (no copy either way).
#[derive(FromPyObject)]
pub(crate) enum Index<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

/// The values of an [`Index`], borrowed (what crosses into work without the GIL).
#[derive(Clone, Copy)]
pub(crate) enum Idx<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl Index<'_> {
    pub(crate) fn slice(&self) -> PyResult<Idx<'_>> {
        Ok(match self {
            Index::I32(a) => Idx::I32(a.as_slice()?),
            Index::I64(a) => Idx::I64(a.as_slice()?),
        })
    }
}

impl Idx<'_> {
    fn len(self) -> usize {
        match self {
            Idx::I32(v) => v.len(),
            Idx::I64(v) => v.len(),
        }
    }

    /// The indices as `u32`, each in `0..=max` (`what` names the array in the error).
    fn to_u32(self, what: &str, max: u64) -> PyResult<Vec<u32>> {
        fn convert<I: Copy + Into<i64>>(what: &str, values: &[I], max: u64) -> PyResult<Vec<u32>> {
            values
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let v: i64 = v.into();
                    if v < 0 || v as u64 > max || v as u64 > u32::MAX as u64 {
                        Err(value_error(
                            what,
                            format!("entry {i} is {v}, outside 0..={}", max.min(u32::MAX as u64)),
                        ))
                    } else {
                        Ok(v as u32)
                    }
                })
                .collect()
        }
        match self {
            Idx::I32(v) => convert(what, v, max),
            Idx::I64(v) => convert(what, v, max),
        }
    }
}

/// The host CSR matrix of SciPy's three arrays, every value finite.
pub(crate) fn csr(
    indptr: Idx<'_>,
    col: Idx<'_>,
    data: &[f64],
    shape: (usize, usize),
) -> PyResult<Csr<Cpu, f64>> {
    let (nrows, ncols) = shape;
    if Some(indptr.len()) != nrows.checked_add(1) {
        return Err(value_error(
            "A",
            format!(
                "indptr has {} entries for {nrows} rows (expected one more than the rows)",
                indptr.len()
            ),
        ));
    }
    let row_ptr = indptr.to_u32("A.indptr", data.len() as u64)?;
    let col_idx = col.to_u32("A.indices", ncols.saturating_sub(1) as u64)?;
    if col_idx.len() != data.len() {
        return Err(value_error(
            "A",
            format!("{} column indices for {} values", col_idx.len(), data.len()),
        ));
    }
    let a = Csr::new(nrows, ncols, row_ptr, col_idx, data.to_vec()).map_err(to_py)?;
    if let Some(k) = data.iter().position(|v| !v.is_finite()) {
        let (row, col) = a.entry_position(k);
        return Err(value_error(
            "A",
            format!("A[{row}, {col}] is {}: the matrix must be finite", data[k]),
        ));
    }
    Ok(a)
}

/// `x` fits a matrix of `cols` columns and is finite.
pub(crate) fn check_x(x: &[f64], cols: usize) -> PyResult<()> {
    if x.len() != cols {
        return Err(value_error(
            "x",
            format!("length {} for a matrix of {cols} columns", x.len()),
        ));
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(value_error("x", format!("x[{i}] is {}", x[i])));
    }
    Ok(())
}

pub(crate) fn format(name: &str) -> PyResult<Option<Format>> {
    if name.eq_ignore_ascii_case("auto") {
        Ok(None)
    } else {
        name.parse::<Format>().map(Some).map_err(to_py)
    }
}

struct SpmvTask<'a> {
    a: Csr<Cpu, f64>,
    x: &'a [f64],
    format: Option<Format>,
    precision: SolvePrecision,
}

fn spmv_in<B: Backend, V: Element, T: Scalar>(b: &B, t: &SpmvTask<'_>) -> Result<Vec<f64>> {
    let a: Csr<Cpu, V> = t.a.convert();
    let m = match t.format {
        None => SparseMatrix::auto(b, &a)?.0,
        Some(f) => SparseMatrix::from_csr(b, &a, f, &FormatOptions::default())?,
    };
    let x: Vec<T> = t.x.iter().map(|&v| T::from_f64(v)).collect();
    let x = Vector::from_slice(b, &x)?;
    let mut y = Vector::zeros(b, t.a.nrows())?;
    m.spmv(T::ONE, &x, T::ZERO, &mut y)?;
    Ok(y.to_vec()?.iter().map(|v| v.as_f64()).collect())
}

impl BackendTask for SpmvTask<'_> {
    type Output = Vec<f64>;
    fn run<B: FullBackend>(self, b: B) -> Result<Vec<f64>> {
        match self.precision {
            SolvePrecision::F64 => spmv_in::<B, f64, f64>(&b, &self),
            SolvePrecision::F32 => spmv_in::<B, f32, f32>(&b, &self),
            SolvePrecision::Mixed => spmv_in::<B, f32, f64>(&b, &self),
        }
    }
}

/// `y = A x` of a CSR matrix's three arrays (see `galerkin.spmv`).
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, shape, x, backend="cpu", format="auto", precision="f64"))]
#[allow(clippy::too_many_arguments)]
fn spmv<'py>(
    py: Python<'py>,
    indptr: Index<'py>,
    indices: Index<'py>,
    data: PyReadonlyArray1<'py, f64>,
    shape: (usize, usize),
    x: PyReadonlyArray1<'py, f64>,
    backend: &str,
    format: &str,
    precision: &str,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let kind = backend_kind(backend)?;
    let format = self::format(format)?;
    let precision: SolvePrecision = precision.parse().map_err(to_py)?;
    let (indptr, col, data, x) = (
        indptr.slice()?,
        indices.slice()?,
        data.as_slice()?,
        x.as_slice()?,
    );
    let a = csr(indptr, col, data, shape)?;
    check_x(x, shape.1)?;
    let task = SpmvTask {
        a,
        x,
        format,
        precision,
    };
    let y = py
        .detach(|| galerkin::with_backend(kind, task))
        .map_err(to_py)?;
    Ok(PyArray1::from_vec(py, y))
}

/// Seconds per call of the Rust side of `spmv` (matrix built from the arrays, moved to the
/// backend, product, result back), timed in Rust over `repeat` calls after one untimed:
/// the baseline of the package's per-call overhead (`benches/python/overhead.py`).
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, shape, x, repeat, backend="cpu", format="auto", precision="f64"))]
#[allow(clippy::too_many_arguments)]
fn time_spmv<'py>(
    py: Python<'py>,
    indptr: Index<'py>,
    indices: Index<'py>,
    data: PyReadonlyArray1<'py, f64>,
    shape: (usize, usize),
    x: PyReadonlyArray1<'py, f64>,
    repeat: usize,
    backend: &str,
    format: &str,
    precision: &str,
) -> PyResult<f64> {
    let kind = backend_kind(backend)?;
    let format = self::format(format)?;
    let precision: SolvePrecision = precision.parse().map_err(to_py)?;
    let (indptr, col, data, x) = (
        indptr.slice()?,
        indices.slice()?,
        data.as_slice()?,
        x.as_slice()?,
    );
    py.detach(|| {
        let once = || -> PyResult<Vec<f64>> {
            let task = SpmvTask {
                a: csr(indptr, col, data, shape)?,
                x,
                format,
                precision,
            };
            galerkin::with_backend(kind, task).map_err(to_py)
        };
        once()?;
        let t0 = Instant::now();
        for _ in 0..repeat.max(1) {
            std::hint::black_box(once()?);
        }
        Ok(t0.elapsed().as_secs_f64() / repeat.max(1) as f64)
    })
}

fn parse_smoother(name: &str, degree: usize) -> PyResult<AmgSmoother> {
    match name.to_ascii_lowercase().replace('_', "-").as_str() {
        "chebyshev" => Ok(AmgSmoother::Chebyshev { degree }),
        "chebyshev4" => Ok(AmgSmoother::ChebyshevFourthKind { degree }),
        "l1-jacobi" | "jacobi" => Ok(AmgSmoother::L1Jacobi { sweeps: degree }),
        _ => Err(value_error(
            "amg_smoother",
            format!("unknown smoother `{name}`: expected chebyshev, chebyshev4 or l1-jacobi"),
        )),
    }
}

fn parse_cycle(name: &str) -> PyResult<AmgCycle> {
    match name.to_ascii_lowercase().as_str() {
        "v" => Ok(AmgCycle::V),
        "w" => Ok(AmgCycle::W),
        _ => Err(value_error(
            "amg_cycle",
            format!("unknown cycle `{name}`: expected v or w"),
        )),
    }
}

pub(crate) fn amg_dict<'py>(
    py: Python<'py>,
    info: &AmgInfo,
    precision: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("levels", info.levels.len())?;
    d.set_item("operator_complexity", info.operator_complexity)?;
    d.set_item("grid_complexity", info.grid_complexity)?;
    d.set_item("setup_seconds", info.setup_seconds)?;
    d.set_item("coarse_solver", info.coarse_solver)?;
    d.set_item(
        "rows",
        info.levels.iter().map(|l| l.rows).collect::<Vec<_>>(),
    )?;
    d.set_item(
        "nonzeros",
        info.levels.iter().map(|l| l.nnz).collect::<Vec<_>>(),
    )?;
    d.set_item(
        "formats",
        info.levels.iter().map(|l| l.format).collect::<Vec<_>>(),
    )?;
    d.set_item("precision", precision)?;
    Ok(d)
}

struct SolveTask<'a> {
    a: &'a Csr<Cpu, f64>,
    b: &'a [f64],
    options: &'a SolveOptions,
}

impl BackendTask for SolveTask<'_> {
    type Output = galerkin::solver::driver::SystemSolution;
    fn run<B: FullBackend>(self, b: B) -> Result<Self::Output> {
        solve_system(&b, self.a, self.b, self.options)
    }
}

/// Solves `A x = b` of a CSR matrix's three arrays (see `galerkin.solve`).
#[pyfunction]
#[pyo3(signature = (
    indptr, indices, data, shape, b, *, solver="cg", precond="jacobi", precision="f64",
    tol=1e-8, max_iter=1000, backend="cpu", format="auto", restart=30, block_size=4,
    inner_tol=1e-3, inner_max_iter=200, amg_theta=0.0, amg_smoother="chebyshev",
    amg_degree=3, amg_cycle="v", amg_max_coarse=500, amg_precision="same",
    amg_improve_candidates=2, warmup=false
))]
#[allow(clippy::too_many_arguments)]
fn solve<'py>(
    py: Python<'py>,
    indptr: Index<'py>,
    indices: Index<'py>,
    data: PyReadonlyArray1<'py, f64>,
    shape: (usize, usize),
    b: PyReadonlyArray1<'py, f64>,
    solver: &str,
    precond: &str,
    precision: &str,
    tol: f64,
    max_iter: usize,
    backend: &str,
    format: &str,
    restart: usize,
    block_size: usize,
    inner_tol: f64,
    inner_max_iter: usize,
    amg_theta: f64,
    amg_smoother: &str,
    amg_degree: usize,
    amg_cycle: &str,
    amg_max_coarse: usize,
    amg_precision: &str,
    amg_improve_candidates: usize,
    warmup: bool,
) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyDict>)> {
    let t0 = Instant::now();
    let kind = backend_kind(backend)?;
    let options = SolveOptions {
        method: solver.parse::<Method>().map_err(to_py)?,
        precond: precond.parse::<PrecondKind>().map_err(to_py)?,
        block_size,
        amg: galerkin::solver::AmgParams {
            theta: amg_theta,
            smoother: amg_smoother_checked(amg_smoother, amg_degree)?,
            cycle: parse_cycle(amg_cycle)?,
            max_coarse: amg_max_coarse,
            improve_candidates: amg_improve_candidates,
            ..Default::default()
        },
        amg_precision: amg_precision.parse::<AmgPrecision>().map_err(to_py)?,
        precision: precision.parse::<SolvePrecision>().map_err(to_py)?,
        tol,
        max_iter,
        restart,
        inner_tol,
        inner_max_iter,
        format: self::format(format)?,
        warmup,
    };
    options.check().map_err(to_py)?;
    if !(0.0..=1.0).contains(&amg_theta) {
        return Err(value_error(
            "amg_theta",
            format!("{amg_theta} is outside [0, 1]"),
        ));
    }
    let (indptr, col, data, b) = (
        indptr.slice()?,
        indices.slice()?,
        data.as_slice()?,
        b.as_slice()?,
    );
    let a = csr(indptr, col, data, shape)?;
    if shape.0 != shape.1 {
        return Err(value_error(
            "A",
            format!("{} x {}: a solve needs a square matrix", shape.0, shape.1),
        ));
    }
    let task = SolveTask {
        a: &a,
        b,
        options: &options,
    };
    let s = py
        .detach(|| galerkin::with_backend(kind, task))
        .map_err(to_py)?;
    let info = PyDict::new(py);
    info.set_item("iterations", s.report.iterations)?;
    info.set_item("converged", s.converged)?;
    info.set_item("relative_residual", s.true_relative_residual)?;
    info.set_item("solver_relative_residual", s.report.relative_residual())?;
    info.set_item("reason", &s.reason)?;
    info.set_item("seconds", s.report.time.as_secs_f64())?;
    info.set_item("setup_seconds", s.setup_seconds)?;
    info.set_item("total_seconds", t0.elapsed().as_secs_f64())?;
    info.set_item("format", &s.format)?;
    info.set_item("solver", s.report.solver)?;
    info.set_item("precond", options.precond.name())?;
    info.set_item("precision", options.precision.name())?;
    info.set_item("backend", kind.name())?;
    match &s.amg {
        Some(amg) => info.set_item("amg", amg_dict(py, amg, options.amg_precision_name())?)?,
        None => info.set_item("amg", py.None())?,
    }
    Ok((PyArray1::from_vec(py, s.x), info))
}

fn amg_smoother_checked(name: &str, degree: usize) -> PyResult<AmgSmoother> {
    if degree == 0 {
        return Err(value_error("amg_degree", "0: must be at least 1"));
    }
    parse_smoother(name, degree)
}
