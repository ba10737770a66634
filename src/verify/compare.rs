//! The comparison machinery: seeded inputs, poisoned outputs, rounding to a precision,
//! norm and ULP comparison against an f64 reference, and the [`Check`] trait with its runner.

use std::fmt;

use crate::backend::Cpu;
use crate::bundle::Backend;
use crate::error::{check_len, Result};
use crate::scalar::{tolerance, ulp_distance, DType, Element, Scalar};

/// `len` NaNs: the value outputs are poisoned with before an operation writes them.
pub fn poison<T: Element>(len: usize) -> Vec<T> {
    vec![T::from_f64(f64::NAN); len]
}

/// `values` rounded to `dtype` and widened back to f64: what a run in `dtype` sees.
pub fn round_to(values: &[f64], dtype: DType) -> Vec<f64> {
    match dtype {
        DType::F16 => values
            .iter()
            .map(|&v| half::f16::from_f64(v).as_f64())
            .collect(),
        DType::BF16 => values
            .iter()
            .map(|&v| half::bf16::from_f64(v).as_f64())
            .collect(),
        DType::F32 => values.iter().map(|&v| v as f32 as f64).collect(),
        _ => values.to_vec(),
    }
}

/// The result of comparing a computed vector with a reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Number of entries compared.
    pub len: usize,
    /// `‖y − y_ref‖₂ / scale`.
    pub rel_error: f64,
    /// The denominator of `rel_error`: `‖y_ref‖₂`, or a magnitude given by the check for
    /// cancellation-prone results (1 when both are zero).
    pub scale: f64,
    /// The largest distance in ULPs of the result's type between an entry and the reference
    /// rounded to that type.
    pub max_ulp: u64,
    /// Where `max_ulp` occurs (`None` for empty vectors).
    pub max_ulp_index: Option<usize>,
    /// Entries that are NaN or infinite where the reference is finite.
    pub nonfinite: usize,
    /// The tolerance on `rel_error`.
    pub tolerance: f64,
    /// `rel_error <= tolerance` and no spurious non-finite entries.
    pub passed: bool,
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: relative error {:.2e} (tolerance {:.2e}), max {} ulp",
            if self.passed { "pass" } else { "FAIL" },
            self.rel_error,
            self.tolerance,
            self.max_ulp,
        )?;
        if let Some(i) = self.max_ulp_index {
            write!(f, " at index {i}")?;
        }
        if self.nonfinite > 0 {
            write!(f, ", {} non-finite entries", self.nonfinite)?;
        }
        write!(f, ", {} entries", self.len)
    }
}

/// Compares `result` with `reference` by relative norm, `‖y − y_ref‖₂ / ‖y_ref‖₂`.
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
pub fn compare<T: Element>(result: &[T], reference: &[f64], tolerance: f64) -> Result<Comparison> {
    let norm = reference.iter().map(|r| r * r).sum::<f64>().sqrt();
    compare_scaled(result, reference, norm, tolerance)
}

/// Compares `result` with `reference` relative to `scale` instead of `‖y_ref‖₂`: for
/// results that cancel (use e.g. `Σ|xᵢ yᵢ|` for an inner product).
///
/// # Errors
/// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the lengths differ.
pub fn compare_scaled<T: Element>(
    result: &[T],
    reference: &[f64],
    scale: f64,
    tolerance: f64,
) -> Result<Comparison> {
    check_len("compare", "reference", result.len(), reference.len())?;
    let mut err2 = 0.0f64;
    let mut max_ulp = 0u64;
    let mut max_ulp_index = None;
    let mut nonfinite = 0;
    for (i, (&y, &r)) in result.iter().zip(reference).enumerate() {
        let yf = y.as_f64();
        if !yf.is_finite() && r.is_finite() {
            nonfinite += 1;
        }
        let d = yf - r;
        err2 += d * d;
        let ulp = ulp_distance(y, T::from_f64(r));
        if max_ulp_index.is_none() || ulp > max_ulp {
            max_ulp = ulp;
            max_ulp_index = Some(i);
        }
    }
    let scale = if scale > 0.0 { scale } else { 1.0 };
    let rel_error = err2.sqrt() / scale;
    let passed = rel_error <= tolerance && nonfinite == 0 && !rel_error.is_nan();
    Ok(Comparison {
        len: result.len(),
        rel_error,
        scale,
        max_ulp,
        max_ulp_index,
        nonfinite,
        tolerance,
        passed,
    })
}

/// An operation with its inputs, to run on a backend in any precision ([`CheckOn`]).
pub trait Check {
    /// A short name for tables (`"axpy n=1000"`).
    fn name(&self) -> String;

    /// Rounded operations accumulated per output entry, for the tolerance.
    fn terms(&self) -> usize;

    /// The magnitude to measure the error against, if not `‖y_ref‖₂` (for results that
    /// cancel). Computed on the inputs rounded to `inputs`.
    fn scale(&self, _inputs: DType) -> Option<f64> {
        None
    }
}

/// A [`Check`] that runs on backend `B`: a check of the core families runs on every
/// [`Backend`]; a discretisation's on the backends with its family
/// (`impl<B: Backend + HdgOps> CheckOn<B> for HdgCheck`). Every check runs on [`Cpu`], the
/// reference.
pub trait CheckOn<B: Backend>: Check {
    /// Runs the operation on `backend` in precision `T` and returns its output, with every
    /// input first rounded to `inputs` (so that the f64 reference sees the same numbers as
    /// the run being checked).
    ///
    /// # Errors
    /// Whatever the operation returns.
    fn run<T: Scalar>(&self, backend: &B, inputs: DType) -> Result<Vec<T>>;
}

/// Runs `c` on `backend` in precision `T` and on the CPU in f64, and compares.
///
/// # Errors
/// [`Error::Unsupported`](crate::error::Error::Unsupported) if the backend lacks `T`, and any
/// error of the operation.
pub fn check<B: Backend, T: Scalar, C: CheckOn<B> + CheckOn<Cpu>>(
    backend: &B,
    c: &C,
) -> Result<Comparison> {
    backend.require::<T>(&c.name())?;
    let result = CheckOn::<B>::run::<T>(c, backend, T::DTYPE)?;
    let reference = CheckOn::<Cpu>::run::<f64>(c, &Cpu::new(), T::DTYPE)?;
    let tol = tolerance::<T>(c.terms());
    match c.scale(T::DTYPE) {
        Some(scale) => compare_scaled(&result, &reference, scale, tol),
        None => compare(&result, &reference, tol),
    }
}
