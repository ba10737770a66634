//! The Chebyshev polynomial preconditioner.

use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::Scalar;
use crate::solver::precond::jacobi::Jacobi;
use crate::solver::precond::Preconditioner;
use crate::vector::Vector;

/// Chebyshev polynomial preconditioner: `degree` steps of the Chebyshev iteration for
/// `A z = r` from `z = 0`, scaled by an inner preconditioner `M` (Jacobi `D⁻¹` from
/// [`new`](Self::new), any symmetric one from [`with_preconditioner`](Self::with_preconditioner)),
/// on the interval `[λmax / ratio, λmax]` with `λmax` the largest eigenvalue of `M⁻¹A`
/// estimated by power iteration (times 1.1). The polynomial is fixed, so PCG may use it.
pub struct Chebyshev<'a, B: Backend, S: Scalar> {
    a: &'a dyn LinearOperator<B, S>,
    inner: Inner<'a, B, S>,
    degree: usize,
    lambda_min: f64,
    lambda_max: f64,
}

/// The scaling inside [`Chebyshev`].
enum Inner<'a, B: Backend, S: Scalar> {
    /// `D⁻¹` as a vector.
    Jacobi(Vector<B, S>),
    /// Any symmetric preconditioner.
    Preconditioner(&'a dyn Preconditioner<B, S>),
}

impl<B: Backend, S: Scalar> Inner<'_, B, S> {
    fn apply(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        match self {
            Inner::Jacobi(d) => z.pointwise_mul(d, r),
            Inner::Preconditioner(p) => p.precondition(r, z),
        }
    }
}

/// Parameters of [`Chebyshev`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChebyshevParams {
    /// Polynomial degree (operator applications per preconditioner application, minus one).
    pub degree: usize,
    /// `λmax / λmin` of the target interval.
    pub ratio: f64,
    /// Power iterations for the `λmax` estimate.
    pub power_iterations: usize,
}

impl Default for ChebyshevParams {
    /// Degree 4, ratio 30, 20 power iterations.
    fn default() -> Self {
        ChebyshevParams {
            degree: 4,
            ratio: 30.0,
            power_iterations: 20,
        }
    }
}

impl<'a, B: Backend, S: Scalar> Chebyshev<'a, B, S> {
    /// Builds the preconditioner for operator `a` with diagonal `diag` (host values),
    /// estimating `λmax(D⁻¹A)` by power iteration from a fixed random start.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero diagonal, `degree = 0`, `ratio <= 1` or an
    /// estimate that is not positive; device errors.
    pub fn new(
        backend: &B,
        a: &'a dyn LinearOperator<B, S>,
        diag: &[f64],
        params: ChebyshevParams,
    ) -> Result<Self> {
        crate::error::check_len("Chebyshev::new", "diag", a.nrows(), diag.len())?;
        let jacobi = Jacobi::<B, S>::from_diagonal(backend, diag)?;
        Self::build(backend, a, Inner::Jacobi(jacobi.inv_diag), params)
    }

    /// Builds the preconditioner for operator `a` scaled by `inner` (symmetric positive
    /// definite, e.g. [`BlockJacobi`](crate::solver::BlockJacobi)): the Chebyshev polynomial
    /// in `M⁻¹A`.
    ///
    /// # Errors
    /// As [`new`](Self::new), and [`Error::DimensionMismatch`] when `inner` has another
    /// size than `a`.
    pub fn with_preconditioner(
        backend: &B,
        a: &'a dyn LinearOperator<B, S>,
        inner: &'a dyn Preconditioner<B, S>,
        params: ChebyshevParams,
    ) -> Result<Self> {
        crate::error::check_len(
            "Chebyshev::with_preconditioner",
            "inner",
            a.nrows(),
            inner.size(),
        )?;
        Self::build(backend, a, Inner::Preconditioner(inner), params)
    }

    fn build(
        backend: &B,
        a: &'a dyn LinearOperator<B, S>,
        inner: Inner<'a, B, S>,
        params: ChebyshevParams,
    ) -> Result<Self> {
        let ChebyshevParams {
            degree,
            ratio,
            power_iterations,
        } = params;
        if degree == 0 {
            return Err(Error::invalid(
                "Chebyshev::new",
                "degree",
                "must be at least 1",
            ));
        }
        if ratio.partial_cmp(&1.0) != Some(std::cmp::Ordering::Greater) {
            return Err(Error::invalid(
                "Chebyshev::new",
                "ratio",
                format!("{ratio}: must exceed 1"),
            ));
        }
        let n = a.nrows();
        let mut v = Vector::from_slice(backend, &crate::random::random_vec::<S>(n, 0x5eed))?;
        let mut w = Vector::zeros(backend, n)?;
        let mut lambda = 0.0;
        for _ in 0..power_iterations.max(1) {
            let norm = v.nrm2()?.as_f64();
            if norm == 0.0 || !norm.is_finite() {
                break;
            }
            v.scale(S::from_f64(1.0 / norm))?;
            a.apply(&v, &mut w)?;
            inner.apply(&w, &mut v)?;
            lambda = v.nrm2()?.as_f64();
        }
        if lambda.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !lambda.is_finite() {
            return Err(Error::invalid(
                "Chebyshev::new",
                "a",
                format!("the estimate of λmax(M⁻¹A) is {lambda}: not positive"),
            ));
        }
        let lambda_max = 1.1 * lambda;
        Ok(Chebyshev {
            a,
            inner,
            degree,
            lambda_min: lambda_max / ratio,
            lambda_max,
        })
    }

    /// The interval `[λmin, λmax]` the polynomial targets.
    pub fn interval(&self) -> (f64, f64) {
        (self.lambda_min, self.lambda_max)
    }
}

impl<B: Backend, S: Scalar> Preconditioner<B, S> for Chebyshev<'_, B, S> {
    fn size(&self) -> usize {
        self.a.nrows()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        let b = r.backend();
        let theta = 0.5 * (self.lambda_max + self.lambda_min);
        let delta = 0.5 * (self.lambda_max - self.lambda_min);
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        let mut res = r.try_clone()?;
        let mut d = Vector::zeros(b, r.len())?;
        self.inner.apply(&res, &mut d)?;
        d.scale(S::from_f64(1.0 / theta))?;
        z.copy_from(&d)?;
        let mut w = Vector::zeros(b, r.len())?;
        for _ in 1..self.degree {
            self.a.apply_add(-S::ONE, &d, S::ONE, &mut res)?;
            let rho_new = 1.0 / (2.0 * sigma - rho);
            self.inner.apply(&res, &mut w)?;
            d.axpby(
                S::from_f64(2.0 * rho_new / delta),
                &w,
                S::from_f64(rho_new * rho),
            )?;
            z.axpy(S::ONE, &d)?;
            rho = rho_new;
        }
        Ok(())
    }
    fn cost(&self) -> OperatorCost {
        let c = self.a.cost();
        let m = match &self.inner {
            Inner::Jacobi(d) => OperatorCost {
                flops: d.len() as f64,
                bytes: 3.0 * (d.len() * S::DTYPE.size()) as f64,
            },
            Inner::Preconditioner(p) => p.cost(),
        };
        let d = self.degree as f64;
        OperatorCost {
            flops: (d - 1.0) * c.flops + d * m.flops,
            bytes: (d - 1.0) * c.bytes + d * m.bytes,
        }
    }
}
