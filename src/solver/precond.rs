//! Preconditioners: identity, Jacobi, block-Jacobi, Chebyshev polynomial, and a
//! mixed-precision wrapper that applies any preconditioner in another precision.

use std::cell::RefCell;
use std::marker::PhantomData;

use crate::backend::Cpu;
use crate::batched::Batch;
use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::{Element, Scalar};
use crate::sparse::{BlockEll, Csr};
use crate::vector::{pointwise_mul_dot, Vector};

/// `z = M⁻¹ r` for a preconditioner `M` of an `n x n` system.
pub trait Preconditioner<B: Backend, S: Scalar> {
    /// The system size `n`.
    fn size(&self) -> usize;

    /// `z = M⁻¹ r`.
    ///
    /// # Errors
    /// Size mismatches and device errors.
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()>;

    /// `z = M⁻¹ r`, returning `r · z` (fused where the preconditioner allows).
    ///
    /// # Errors
    /// As [`precondition`](Self::precondition).
    fn precondition_dot(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<S> {
        self.precondition(r, z)?;
        r.dot(z)
    }

    /// Work of one application.
    fn cost(&self) -> OperatorCost {
        OperatorCost::default()
    }

    /// If this preconditioner is the diagonal scaling `z = d ∘ r`, its `d`: the solvers then
    /// fuse the scaling into their vector updates (PCG: one pass fewer over the vectors and
    /// no stored z). `None` (the default) for any other preconditioner.
    fn inverse_diagonal(&self) -> Option<&Vector<B, S>> {
        None
    }
}

macro_rules! forward_preconditioner {
    ($($wrapper:ty),*) => {$(
        impl<B: Backend, S: Scalar, P: Preconditioner<B, S> + ?Sized> Preconditioner<B, S> for $wrapper {
            fn size(&self) -> usize {
                (**self).size()
            }
            fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
                (**self).precondition(r, z)
            }
            fn precondition_dot(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<S> {
                (**self).precondition_dot(r, z)
            }
            fn cost(&self) -> OperatorCost {
                (**self).cost()
            }
            fn inverse_diagonal(&self) -> Option<&Vector<B, S>> {
                (**self).inverse_diagonal()
            }
        }
    )*};
}

forward_preconditioner!(&P, Box<P>);

/// Every preconditioner is also a linear operator (`y = α M⁻¹ x + β y`).
macro_rules! operator_from_preconditioner {
    ($($t:ty),*) => {$(
        impl<B: Backend, S: Scalar> LinearOperator<B, S> for $t {
            fn nrows(&self) -> usize {
                Preconditioner::<B, S>::size(self)
            }
            fn ncols(&self) -> usize {
                Preconditioner::<B, S>::size(self)
            }
            fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
                if alpha == S::ONE && beta == S::ZERO {
                    return Preconditioner::precondition(self, x, y);
                }
                let mut z = Vector::zeros(x.backend(), y.len())?;
                Preconditioner::precondition(self, x, &mut z)?;
                y.axpby(alpha, &z, beta)
            }
            fn cost(&self) -> OperatorCost {
                Preconditioner::<B, S>::cost(self)
            }
        }
    )*};
}

/// No preconditioning: `z = r`.
#[derive(Clone, Copy, Debug)]
pub struct Identity {
    n: usize,
}

impl Identity {
    /// The identity of size `n`.
    pub fn new(n: usize) -> Self {
        Identity { n }
    }
}

impl<B: Backend, S: Scalar> Preconditioner<B, S> for Identity {
    fn size(&self) -> usize {
        self.n
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        z.copy_from(r)
    }
}

/// Diagonal scaling `z = D⁻¹ r`; applied fused with `r · z` in PCG.
pub struct Jacobi<B: Backend, S: Scalar> {
    inv_diag: Vector<B, S>,
}

impl<B: Backend, S: Scalar> Jacobi<B, S> {
    /// From the diagonal of a host matrix.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first row whose diagonal is zero or not finite.
    pub fn new<V: Element>(backend: &B, a: &Csr<Cpu, V>) -> Result<Self> {
        let diag: Vec<f64> = a.diagonal().iter().map(|v| v.as_f64()).collect();
        Self::from_diagonal(backend, &diag)
    }

    /// From a diagonal given on the host.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_diagonal(backend: &B, diag: &[f64]) -> Result<Self> {
        let mut inv = Vec::with_capacity(diag.len());
        for (i, &d) in diag.iter().enumerate() {
            if d == 0.0 || !d.is_finite() {
                return Err(Error::InvalidArgument {
                    op: "Jacobi::new",
                    name: "diagonal",
                    reason: format!(
                        "row {i} has diagonal {d}: Jacobi needs nonzero finite diagonals"
                    ),
                });
            }
            inv.push(S::from_f64(1.0 / d));
        }
        Ok(Jacobi {
            inv_diag: Vector::from_slice(backend, &inv)?,
        })
    }

    /// `D⁻¹` as a vector.
    pub fn inverse_diagonal(&self) -> &Vector<B, S> {
        &self.inv_diag
    }
}

impl<B: Backend, S: Scalar> Preconditioner<B, S> for Jacobi<B, S> {
    fn size(&self) -> usize {
        self.inv_diag.len()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        z.pointwise_mul(&self.inv_diag, r)
    }
    fn precondition_dot(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<S> {
        pointwise_mul_dot(&self.inv_diag, r, z)
    }
    fn cost(&self) -> OperatorCost {
        let n = self.inv_diag.len() as f64;
        OperatorCost {
            flops: n,
            bytes: 3.0 * n * S::DTYPE.size() as f64,
        }
    }
    fn inverse_diagonal(&self) -> Option<&Vector<B, S>> {
        Some(&self.inv_diag)
    }
}

/// Block-Jacobi: the inverses of the dense `m x m` diagonal blocks, applied as one
/// block-diagonal product (a batch of small matrix-vector products).
pub struct BlockJacobi<B: Backend, S: Scalar> {
    inv_blocks: BlockEll<B, S>,
}

impl<B: Backend, S: Scalar> BlockJacobi<B, S> {
    /// From the `m x m` diagonal blocks of a host matrix (the last block may be smaller; it
    /// is padded with the identity). The blocks are inverted on the device by the batched
    /// LU with partial pivoting ([`crate::batched::inverse`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a block size outside 1..=64, a non-square matrix, or a
    /// singular diagonal block (named by its index).
    pub fn new<V: Element>(backend: &B, a: &Csr<Cpu, V>, block_size: usize) -> Result<Self> {
        let (n, m) = (a.nrows(), block_size);
        if a.ncols() != n || !(1..=crate::sparse::block_ell::MAX_BLOCK_SIZE).contains(&m) {
            return Err(Error::InvalidArgument {
                op: "BlockJacobi::new",
                name: "block_size",
                reason: format!(
                    "{m} for a {n} x {} matrix: needs a square matrix and 1 <= m <= 64",
                    a.ncols()
                ),
            });
        }
        let r = n.div_ceil(m);
        let mut blocks = vec![S::ZERO; r * m * m];
        for l in 0..r {
            let block = &mut blocks[l * m * m..(l + 1) * m * m];
            for i in 0..m {
                let row = l * m + i;
                if row >= n {
                    block[i * m + i] = S::ONE;
                    continue;
                }
                let (cols, vals) = a.row(row);
                for (&c, v) in cols.iter().zip(vals) {
                    let c = c as usize;
                    if c >= l * m && c < (l + 1) * m {
                        block[i * m + (c - l * m)] = S::from_f64(v.as_f64());
                    }
                }
            }
        }
        let batch = Batch::from_slice(backend, r, m, m, &blocks)?;
        let (inverse, status) = crate::batched::inverse::<B, S, S>(&batch)?;
        if let Some(&(l, _)) = status.failures()?.first() {
            return Err(Error::InvalidArgument {
                op: "BlockJacobi::new",
                name: "a",
                reason: format!(
                    "diagonal block {l} (rows {}..{}) is singular",
                    l * m,
                    ((l + 1) * m).min(n)
                ),
            });
        }
        let inverses = inverse.to_vec()?;
        let host = BlockEll::from_diagonal_blocks(n, m, &inverses)?;
        Ok(BlockJacobi {
            inv_blocks: host.to_backend(backend)?,
        })
    }

    /// From the diagonal blocks of a block-ELL matrix (its own block size).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_block_ell<V: Element>(backend: &B, a: &BlockEll<Cpu, V>) -> Result<Self> {
        Self::new(backend, &a.to_csr()?, a.block_size())
    }

    /// From the diagonal blocks already on the device: `blocks` holds the `r` square
    /// blocks (any element type; converted to `S`), inverted there by the batched LU with
    /// partial pivoting. Nothing goes through the host.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for non-square blocks or blocks above 64, or naming the
    /// first singular block; device errors.
    pub fn from_blocks<V: Element>(blocks: &Batch<B, V>) -> Result<Self> {
        let converted = blocks.to_precision::<S>()?;
        let (inverse, status) = crate::batched::inverse::<B, S, S>(&converted)?;
        if let Some(&(l, _)) = status.failures()?.first() {
            return Err(Error::InvalidArgument {
                op: "BlockJacobi::from_blocks",
                name: "blocks",
                reason: format!("diagonal block {l} is singular"),
            });
        }
        Ok(BlockJacobi {
            inv_blocks: BlockEll::block_diagonal(&inverse)?,
        })
    }

    /// The inverse blocks as a block-diagonal matrix.
    pub fn inverse_blocks(&self) -> &BlockEll<B, S> {
        &self.inv_blocks
    }
}

impl<B: Backend, S: Scalar> Preconditioner<B, S> for BlockJacobi<B, S> {
    fn size(&self) -> usize {
        self.inv_blocks.nrows()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        self.inv_blocks.spmv(S::ONE, r, S::ZERO, z)
    }
    fn cost(&self) -> OperatorCost {
        LinearOperator::<B, S>::cost(&self.inv_blocks)
    }
}

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
    /// definite, e.g. [`BlockJacobi`]): the Chebyshev polynomial in `M⁻¹A`.
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

/// Two vectors of one backend and precision.
type VectorPair<B, I> = (Vector<B, I>, Vector<B, I>);

/// Applies a preconditioner built in precision `I` (usually f32) inside a solver running
/// in `S` (usually f64): `z = convert(P(convert(r)))`. The rounding makes the operator
/// slightly nonsymmetric: use it with FGMRES or flexible PCG.
pub struct MixedPrecision<B: Backend, I: Scalar, P: Preconditioner<B, I>> {
    inner: P,
    /// `r` and `z` in `I`, kept from one application to the next (large vectors: a fresh
    /// allocation per application cost more than the conversion on a GPU).
    scratch: RefCell<Option<VectorPair<B, I>>>,
    _p: PhantomData<(B, I)>,
}

impl<B: Backend, I: Scalar, P: Preconditioner<B, I>> MixedPrecision<B, I, P> {
    /// Wraps `inner`.
    pub fn new(inner: P) -> Self {
        MixedPrecision {
            inner,
            scratch: RefCell::new(None),
            _p: PhantomData,
        }
    }

    /// The wrapped preconditioner.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

impl<B: Backend, S: Scalar, I: Scalar, P: Preconditioner<B, I>> Preconditioner<B, S>
    for MixedPrecision<B, I, P>
{
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        let mut scratch = self.scratch.borrow_mut();
        let fits = matches!(&*scratch, Some((a, _)) if a.len() == r.len() && a.backend().same_device(r.backend()));
        if !fits {
            *scratch = None;
            let v = || Vector::<B, I>::zeros(r.backend(), r.len());
            *scratch = Some((v()?, v()?));
        }
        let (r_low, z_low) = scratch.as_mut().expect("allocated above");
        r_low.convert_from(r)?;
        self.inner.precondition(r_low, z_low)?;
        z.convert_from(z_low)
    }
    fn cost(&self) -> OperatorCost {
        self.inner.cost()
    }
}

operator_from_preconditioner!(Identity);

impl<B: Backend, S: Scalar> LinearOperator<B, S> for Jacobi<B, S> {
    fn nrows(&self) -> usize {
        self.inv_diag.len()
    }
    fn ncols(&self) -> usize {
        self.inv_diag.len()
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        let mut z = Vector::zeros(x.backend(), y.len())?;
        Preconditioner::precondition(self, x, &mut z)?;
        y.axpby(alpha, &z, beta)
    }
}

impl<B: Backend, S: Scalar> LinearOperator<B, S> for BlockJacobi<B, S> {
    fn nrows(&self) -> usize {
        self.inv_blocks.nrows()
    }
    fn ncols(&self) -> usize {
        self.inv_blocks.nrows()
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.inv_blocks.spmv(alpha, x, beta, y)
    }
}
