//! [`LinearOperator`]: anything that computes `y = α A x + β y` — sparse matrices,
//! matrix-free operators, preconditioners, multigrid cycles. It sits between the vectors and
//! the containers that implement it, so a sparse format or a discretisation implements it
//! without depending on the solvers that take it.

use crate::error::{check_len, Result};
use crate::scalar::Scalar;
use crate::vector::{Vector, VectorOps};

/// The scaling `s` and the output `d` of [`LinearOperator::residual`]'s `d = s ∘ r`.
pub type ScaledCopy<'a, B, S> = (&'a Vector<B, S>, &'a mut Vector<B, S>);

/// Work of one application, for roofline reporting.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OperatorCost {
    /// Floating-point operations.
    pub flops: f64,
    /// Bytes moved to and from memory (the operator's arrays, `x` and `y`, each once).
    pub bytes: f64,
}

/// A linear operator on vectors of `S` on backend `B`: sparse matrices in any format (with
/// values in any element type — f32 values inside an f64 solver is mixed precision),
/// preconditioners, matrix-free operators and multigrid cycles. Solvers take
/// `&dyn LinearOperator<B, S>`.
pub trait LinearOperator<B: VectorOps, S: Scalar> {
    /// Rows (length of `y`).
    fn nrows(&self) -> usize;

    /// Columns (length of `x`).
    fn ncols(&self) -> usize;

    /// `y = alpha A x + beta y` (`y` not read when `beta = 0`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for wrong vector
    /// lengths; device errors.
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()>;

    /// `y = A x`.
    ///
    /// # Errors
    /// As [`apply_add`](Self::apply_add).
    fn apply(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<()> {
        self.apply_add(S::ONE, x, S::ZERO, y)
    }

    /// `y = A x`, returning `x · y` (square operators). Fused into one pass where the
    /// format allows (SELL-C-σ on devices): CG's `q = A p; p·q`.
    ///
    /// # Errors
    /// As [`apply_add`](Self::apply_add).
    fn apply_dot(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<S> {
        self.apply(x, y)?;
        x.dot(y)
    }

    /// `y = A x` with `x · y` left on the device in `scalars[slot]` (CG without a host
    /// round trip).
    ///
    /// # Errors
    /// As [`apply_add`](Self::apply_add), and
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if `slot` is not below
    /// `scalars.len()` (checked before anything is written).
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        crate::vector::check_slot("apply_dot_device", scalars.len(), slot)?;
        self.apply(x, y)?;
        crate::vector::dot_into(x, y, scalars, slot)
    }

    /// `r = b − A x` and, with `scaled = Some((s, d))`, `d = s ∘ r` (square operators): the
    /// start of a smoothing step, one pass where the format fuses it (CSR, block-ELL's direct
    /// kernel and DIA on every backend, SELL-C-σ on devices), else the SpMV and vector
    /// operations it stands for.
    ///
    /// # Errors
    /// As [`apply_add`](Self::apply_add), and
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the operator is
    /// not square or a vector does not have its size.
    fn residual(
        &self,
        b: &Vector<B, S>,
        x: &Vector<B, S>,
        r: &mut Vector<B, S>,
        scaled: Option<ScaledCopy<'_, B, S>>,
    ) -> Result<()> {
        residual_composed(self, b, x, r, scaled)
    }

    /// One step of a diagonally scaled polynomial smoother in residual form (square
    /// operators), with `[α, β, γ] = coefficients`:
    ///
    /// `r −= A d`, then `e = α s ∘ r + β d`, then `x += e + γ d`
    ///
    /// (`γ = 1` adds an update `d` that a [`residual`](Self::residual) start left to this
    /// step; with `γ = 0` the last term is not added, as BLAS's `β = 0`). One pass where the format fuses it (as for `residual`), else the SpMV and the
    /// vector operations it stands for.
    ///
    /// # Errors
    /// As [`residual`](Self::residual).
    #[allow(clippy::too_many_arguments)]
    fn smoothing_step(
        &self,
        d: &Vector<B, S>,
        r: &mut Vector<B, S>,
        s: &Vector<B, S>,
        e: &mut Vector<B, S>,
        x: &mut Vector<B, S>,
        coefficients: [S; 3],
    ) -> Result<()> {
        smoothing_step_composed(self, d, r, s, e, x, coefficients)
    }

    /// Work of one application (zero when unknown).
    fn cost(&self) -> OperatorCost {
        OperatorCost::default()
    }
}

/// The checks of [`LinearOperator::residual`] and [`LinearOperator::smoothing_step`]: a
/// square operator and every vector of its size.
pub(crate) fn check_smoothing<B: VectorOps, S: Scalar, A: LinearOperator<B, S> + ?Sized>(
    op: &'static str,
    a: &A,
    vectors: &[(&'static str, usize)],
) -> Result<()> {
    let n = a.nrows();
    check_len(op, "ncols (the operator must be square)", n, a.ncols())?;
    for &(name, len) in vectors {
        check_len(op, name, n, len)?;
    }
    Ok(())
}

/// [`LinearOperator::residual`] by the operator's SpMV and vector operations.
pub(crate) fn residual_composed<B: VectorOps, S: Scalar, A: LinearOperator<B, S> + ?Sized>(
    a: &A,
    b: &Vector<B, S>,
    x: &Vector<B, S>,
    r: &mut Vector<B, S>,
    scaled: Option<ScaledCopy<'_, B, S>>,
) -> Result<()> {
    let mut lens = vec![("b", b.len()), ("x", x.len()), ("r", r.len())];
    if let Some((s, d)) = &scaled {
        lens.extend([("s", s.len()), ("d", d.len())]);
    }
    check_smoothing("LinearOperator::residual", a, &lens)?;
    r.copy_from(b)?;
    a.apply_add(-S::ONE, x, S::ONE, r)?;
    if let Some((s, d)) = scaled {
        d.pointwise_mul(s, r)?;
    }
    Ok(())
}

/// [`LinearOperator::smoothing_step`] by the operator's SpMV and vector operations.
pub(crate) fn smoothing_step_composed<B: VectorOps, S: Scalar, A: LinearOperator<B, S> + ?Sized>(
    a: &A,
    d: &Vector<B, S>,
    r: &mut Vector<B, S>,
    s: &Vector<B, S>,
    e: &mut Vector<B, S>,
    x: &mut Vector<B, S>,
    [alpha, beta, gamma]: [S; 3],
) -> Result<()> {
    check_smoothing(
        "LinearOperator::smoothing_step",
        a,
        &[
            ("d", d.len()),
            ("r", r.len()),
            ("s", s.len()),
            ("e", e.len()),
            ("x", x.len()),
        ],
    )?;
    a.apply_add(-S::ONE, d, S::ONE, r)?;
    e.pointwise_mul(s, r)?;
    e.axpby(beta, d, alpha)?;
    x.axpy(S::ONE, e)?;
    if gamma != S::ZERO {
        x.axpy(gamma, d)?;
    }
    Ok(())
}

impl<B: VectorOps, S: Scalar, T: LinearOperator<B, S> + ?Sized> LinearOperator<B, S> for &T {
    fn nrows(&self) -> usize {
        (**self).nrows()
    }
    fn ncols(&self) -> usize {
        (**self).ncols()
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        (**self).apply_add(alpha, x, beta, y)
    }
    fn apply_dot(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<S> {
        (**self).apply_dot(x, y)
    }
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        (**self).apply_dot_device(x, y, scalars, slot)
    }
    fn residual(
        &self,
        b: &Vector<B, S>,
        x: &Vector<B, S>,
        r: &mut Vector<B, S>,
        scaled: Option<ScaledCopy<'_, B, S>>,
    ) -> Result<()> {
        (**self).residual(b, x, r, scaled)
    }
    fn smoothing_step(
        &self,
        d: &Vector<B, S>,
        r: &mut Vector<B, S>,
        s: &Vector<B, S>,
        e: &mut Vector<B, S>,
        x: &mut Vector<B, S>,
        coefficients: [S; 3],
    ) -> Result<()> {
        (**self).smoothing_step(d, r, s, e, x, coefficients)
    }
    fn cost(&self) -> OperatorCost {
        (**self).cost()
    }
}
