//! The batched operations: shapes and devices checked here, then the backend's
//! [`BatchedOps`] does the work.

use crate::backend::core::check_device;
use crate::backend::core::BackendCore;
use crate::batched::{
    Batch, BatchedOps, Diagonal, Lu, Op, Pivoting, Rhs, Status, Triangle, MAX_DIM,
};
use crate::error::{check_len, Error, Result};
use crate::scalar::{Element, Scalar};

/// The scalars and transpositions of a batched product `C = α op(A) op(B) + β C`.
///
/// `Default`: `α = 1`, `β = 0`, no transposes: `C = A B`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmParams<T> {
    /// `α`.
    pub alpha: T,
    /// `β` (`C` is not read when it is 0).
    pub beta: T,
    /// How `A` enters the product.
    pub op_a: Op,
    /// How `B` enters the product.
    pub op_b: Op,
}

impl<T: Scalar> Default for GemmParams<T> {
    fn default() -> Self {
        GemmParams {
            alpha: T::ONE,
            beta: T::ZERO,
            op_a: Op::None,
            op_b: Op::None,
        }
    }
}

impl<T: Scalar> GemmParams<T> {
    /// `C = α A B + β C`.
    pub fn new(alpha: T, beta: T) -> Self {
        GemmParams {
            alpha,
            beta,
            ..Self::default()
        }
    }

    /// The same with `A` transposed.
    pub fn transpose_a(self) -> Self {
        GemmParams {
            op_a: Op::Transpose,
            ..self
        }
    }

    /// The same with `B` transposed.
    pub fn transpose_b(self) -> Self {
        GemmParams {
            op_b: Op::Transpose,
            ..self
        }
    }
}

/// Checks that every matrix of `a` is square with `n <= 64`; returns `n`.
fn check_square<B: BackendCore, V: Element>(op: &'static str, a: &Batch<B, V>) -> Result<usize> {
    if a.nrows != a.ncols || a.nrows > MAX_DIM {
        return Err(Error::InvalidArgument {
            op,
            name: "a",
            reason: format!(
                "{} x {} matrices: must be square with n <= {MAX_DIM}",
                a.nrows, a.ncols
            ),
        });
    }
    Ok(a.nrows)
}

/// Checks that `b` holds one right-hand side (of `a`'s rows) per matrix of `a`, on `a`'s
/// device.
fn check_rhs<B: BackendCore, V: Element>(
    op: &'static str,
    a: &Batch<B, V>,
    b: &Batch<B, V>,
) -> Result<()> {
    check_len(op, "b count", a.count, b.count)?;
    check_len(op, "b rows", a.nrows, b.nrows)?;
    check_device(op, &a.backend, &b.backend)
}

/// `C = α op(A) op(B) + β C` for every matrix of the batch. `A` (or `B`) may be a batch
/// of one matrix, shared by all (the DG case: one reference operator times many element
/// matrices). `C` is not read when `β = 0`.
///
/// ```
/// use galerkin::batched::{gemm, Batch, GemmParams};
/// use galerkin::Cpu;
///
/// let cpu = Cpu::new();
/// let a = Batch::from_slice(&cpu, 1, 2, 2, &[1.0f64, 2.0, 3.0, 4.0])?;
/// let x = Batch::from_slice(&cpu, 2, 2, 1, &[1.0f64, 0.0, 0.0, 1.0])?;
/// let mut y = Batch::zeros(&cpu, 2, 2, 1)?;
/// gemm(&GemmParams::<f64>::default(), &a, &x, &mut y)?; // one A, two x
/// assert_eq!(y.to_vec()?, [1.0, 3.0, 2.0, 4.0]);
/// # Ok::<(), galerkin::Error>(())
/// ```
///
/// # Errors
/// [`Error::DimensionMismatch`] for inconsistent shapes or counts;
/// [`Error::DeviceMismatch`] for batches of different devices.
pub fn gemm<B: BatchedOps, V: Element, T: Scalar>(
    params: &GemmParams<T>,
    a: &Batch<B, V>,
    b: &Batch<B, V>,
    c: &mut Batch<B, V>,
) -> Result<()> {
    let (m, ka) = match params.op_a {
        Op::None => (a.nrows, a.ncols),
        Op::Transpose => (a.ncols, a.nrows),
    };
    let (kb, n) = match params.op_b {
        Op::None => (b.nrows, b.ncols),
        Op::Transpose => (b.ncols, b.nrows),
    };
    check_len("gemm", "inner dimension of op(B)", ka, kb)?;
    check_len("gemm", "rows of C", m, c.nrows)?;
    check_len("gemm", "columns of C", n, c.ncols)?;
    for (what, count) in [("count of A", a.count), ("count of B", b.count)] {
        if count != 1 && count != c.count {
            return Err(Error::dims("gemm", what, c.count, count));
        }
    }
    check_device("gemm", &c.backend, &a.backend)?;
    check_device("gemm", &c.backend, &b.backend)?;
    let backend = c.backend.clone();
    // SAFETY: shapes, counts and devices checked above.
    unsafe { backend.batch_gemm(params, a, b, c) }
}

/// `y = α op(A) x + β y` for every matrix: GEMM with `x`, `y` batches of column vectors
/// (`ncols x 1`, `nrows x 1`); `params.op_b` must be [`Op::None`].
///
/// # Errors
/// As [`gemm`]; [`Error::InvalidArgument`] for a transposed `x`.
pub fn gemv<B: BatchedOps, V: Element, T: Scalar>(
    params: &GemmParams<T>,
    a: &Batch<B, V>,
    x: &Batch<B, V>,
    y: &mut Batch<B, V>,
) -> Result<()> {
    if params.op_b != Op::None {
        return Err(Error::InvalidArgument {
            op: "gemv",
            name: "op_b",
            reason: "x is a column vector: it cannot be transposed".into(),
        });
    }
    check_len("gemv", "columns of x (must be 1)", 1, x.ncols)?;
    gemm(params, a, x, y)
}

/// LU factorization of every matrix (computed in `T`, stored in `V`): with partial pivoting
/// (`P A = L U`) or without (`A = L U`, for diagonally dominant batches).
///
/// # Errors
/// [`Error::InvalidArgument`] for non-square matrices or `n > 64`. Singular matrices are
/// reported in the [`Status`], not as errors.
pub fn lu<B: BatchedOps, V: Element, T: Scalar>(
    mut a: Batch<B, V>,
    pivoting: Pivoting,
) -> Result<Lu<B, V>> {
    check_square("lu", &a)?;
    let backend = a.backend.clone();
    // SAFETY: square with n <= 64, checked above; the batch is the backend's own.
    let (pivots, codes) = unsafe { backend.batch_lu::<V, T>(&mut a, pivoting)? };
    Ok(Lu {
        factors: a,
        pivots,
        status: Status {
            codes,
            backend: backend.clone(),
        },
    })
}

/// Solves `A X = B` from LU factors, overwriting `b` (`n x nrhs` per matrix).
///
/// # Errors
/// [`Error::DimensionMismatch`] if `b` does not hold `count` matrices of `n` rows;
/// [`Error::DeviceMismatch`] if it lives on another device.
pub fn lu_solve<B: BatchedOps, V: Element, T: Scalar>(
    lu: &Lu<B, V>,
    b: &mut Batch<B, V>,
) -> Result<()> {
    check_rhs("lu_solve", &lu.factors, b)?;
    // SAFETY: `Lu` is only made by `lu`: square factors, n pivots per matrix (row indices
    // below n); b checked above.
    unsafe {
        lu.factors
            .backend
            .batch_lu_solve::<V, T>(&lu.factors, &lu.pivots, b, Rhs::Given)
    }
}

/// Solves `T X = B` for every matrix, overwriting `b` (`n x nrhs` per matrix), with the
/// lower or upper triangle of `t` and its stored or a unit diagonal. A zero on a non-unit
/// diagonal gives infinities or NaN in that matrix's solution, as in BLAS `trsm`.
///
/// # Errors
/// [`Error::InvalidArgument`] for non-square `t` or `n > 64`; [`Error::DimensionMismatch`]
/// for inconsistent shapes; [`Error::DeviceMismatch`].
pub fn triangular_solve<B: BatchedOps, V: Element, T: Scalar>(
    t: &Batch<B, V>,
    triangle: Triangle,
    diagonal: Diagonal,
    b: &mut Batch<B, V>,
) -> Result<()> {
    check_square("triangular_solve", t)?;
    check_rhs("triangular_solve", t, b)?;
    // SAFETY: shapes and devices checked above.
    unsafe {
        t.backend
            .batch_triangular_solve::<V, T>(t, triangle, diagonal, b)
    }
}

/// The inverse of every matrix: Gauss-Jordan elimination with partial pivoting in one pass
/// where the backend has a kernel for the size (GPU, `n <= 8`), else LU with partial
/// pivoting and solves with the identity. Singular matrices get status `k + 1`, the first
/// zero pivot (see "Status" in the [module docs](super)): the Gauss–Jordan kernel eliminates
/// in LU's order, so its pivots and status are LU's. Their "inverse" is not meaningful.
///
/// # Errors
/// As [`lu`].
pub fn inverse<B: BatchedOps, V: Element, T: Scalar>(
    a: &Batch<B, V>,
) -> Result<(Batch<B, V>, Status<B>)> {
    let n = check_square("inverse", a)?;
    let mut x = Batch::zeros(&a.backend, a.count, n, n)?;
    // SAFETY: square with n <= 64; x has a's shape on its device.
    if let Some(codes) = unsafe { a.backend.batch_inverse::<V, T>(a, &mut x)? } {
        let backend = a.backend.clone();
        return Ok((x, Status { codes, backend }));
    }
    let f = lu::<B, V, T>(a.try_clone()?, Pivoting::Partial)?;
    // SAFETY: factors from `lu`; x has count n x n matrices on the same device.
    unsafe {
        a.backend
            .batch_lu_solve::<V, T>(&f.factors, &f.pivots, &mut x, Rhs::Identity)?
    };
    Ok((x, f.status))
}

/// Cholesky factorization `A = L Lᵀ` of every (symmetric positive definite) matrix, in place:
/// `L` in the lower triangle, zeros above. Matrices that are not positive definite get status
/// `k + 1` (the first non-positive pivot).
///
/// # Errors
/// [`Error::InvalidArgument`] for non-square matrices or `n > 64`.
pub fn cholesky<B: BatchedOps, V: Element, T: Scalar>(
    mut a: Batch<B, V>,
) -> Result<(Batch<B, V>, Status<B>)> {
    check_square("cholesky", &a)?;
    let backend = a.backend.clone();
    // SAFETY: square with n <= 64.
    let codes = unsafe { backend.batch_cholesky::<V, T>(&mut a)? };
    Ok((a, Status { codes, backend }))
}

/// Solves `L Lᵀ X = B` with Cholesky factors, overwriting `b`.
///
/// # Errors
/// As [`triangular_solve`].
pub fn cholesky_solve<B: BatchedOps, V: Element, T: Scalar>(
    l: &Batch<B, V>,
    b: &mut Batch<B, V>,
) -> Result<()> {
    check_square("cholesky_solve", l)?;
    check_rhs("cholesky_solve", l, b)?;
    // SAFETY: shapes and devices checked above.
    unsafe { l.backend.batch_cholesky_solve::<V, T>(l, b, Rhs::Given) }
}

/// The inverse of every SPD matrix through its Cholesky factor.
///
/// # Errors
/// As [`cholesky`].
pub fn cholesky_inverse<B: BatchedOps, V: Element, T: Scalar>(
    a: &Batch<B, V>,
) -> Result<(Batch<B, V>, Status<B>)> {
    let n = check_square("cholesky_inverse", a)?;
    let (l, status) = cholesky::<B, V, T>(a.try_clone()?)?;
    let mut x = Batch::zeros(&a.backend, a.count, n, n)?;
    // SAFETY: square factors of a's shape; x has count n x n matrices on the same device.
    unsafe {
        a.backend
            .batch_cholesky_solve::<V, T>(&l, &mut x, Rhs::Identity)?
    };
    Ok((x, status))
}
