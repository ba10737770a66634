//! Batched small dense matrices: GEMM, GEMV, LU (with and without pivoting), triangular
//! solves, inverse, Cholesky — many matrices of one shape in one call.
//!
//! # Layout
//! A [`Batch<B, T>`](Batch) holds `count` matrices of `rows x cols`, each stored row-major
//! and contiguous (`matrix b, entry (i, j)` at `b·rows·cols + i·cols + j`). Device kernels
//! stage whole matrices in shared memory (factorizations) or read them through the cache
//! one output entry per unit (GEMM), so loads stay coalesced without an interleaved layout.
//!
//! # Status
//! Factorizations return a [`Status`] per matrix, as LAPACK's `info`: 0 for success,
//! `k + 1` when the factorization met a zero pivot (LU) or a non-positive leading minor
//! (Cholesky) at step `k`. The other matrices of the batch are computed normally; nothing
//! panics.
//!
//! # Mixed precision
//! Every operation takes the storage type `V` of the batch and the arithmetic type `T`
//! separately (`lu::<_, f32, f64>` factors f32 matrices in f64 and rounds the factors once).

use std::fmt;

use ndarray::{Array2, Array3, ArrayBase, Data, Ix3};

use crate::backend::{Backend, BackendCore, Cpu};
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};

pub(crate) mod cpu;
pub(crate) mod cube;

/// The largest supported matrix dimension of the factorizations.
pub const MAX_DIM: usize = 64;

/// `count` matrices of `rows x cols` on backend `B`. See the [module docs](self).
pub struct Batch<B: BackendCore, T: Element> {
    pub(crate) count: usize,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) data: B::Buffer<T>,
    pub(crate) backend: B,
}

impl<B: BackendCore, T: Element> fmt::Debug for Batch<B, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Batch({} x {}x{} {} on {})",
            self.count,
            self.rows,
            self.cols,
            T::DTYPE,
            self.backend.info()
        )
    }
}

fn size_of_batch(op: &'static str, count: usize, rows: usize, cols: usize) -> Result<usize> {
    count
        .checked_mul(rows)
        .and_then(|v| v.checked_mul(cols))
        .ok_or_else(|| Error::InvalidArgument {
            op,
            name: "shape",
            reason: format!("{count} x {rows} x {cols} overflows"),
        })
}

impl<B: BackendCore, T: Element> Batch<B, T> {
    /// A batch from contiguous row-major data (`count · rows · cols` values).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `data` has the wrong length; allocation errors.
    pub fn from_slice(
        backend: &B,
        count: usize,
        rows: usize,
        cols: usize,
        data: &[T],
    ) -> Result<Self> {
        let len = size_of_batch("Batch::from_slice", count, rows, cols)?;
        crate::error::check_len("Batch::from_slice", "data", len, data.len())?;
        backend.require::<T>("batched matrices")?;
        Ok(Batch {
            count,
            rows,
            cols,
            data: backend.upload(data)?,
            backend: backend.clone(),
        })
    }

    /// A batch from a `(count, rows, cols)` ndarray (any strides).
    ///
    /// # Errors
    /// Allocation errors.
    pub fn from_ndarray<S: Data<Elem = T>>(backend: &B, array: &ArrayBase<S, Ix3>) -> Result<Self> {
        let (c, r, k) = array.dim();
        let data: Vec<T> = array.iter().copied().collect();
        Self::from_slice(backend, c, r, k, &data)
    }

    /// `count` zero matrices.
    ///
    /// # Errors
    /// Allocation errors.
    pub fn zeros(backend: &B, count: usize, rows: usize, cols: usize) -> Result<Self> {
        let len = size_of_batch("Batch::zeros", count, rows, cols)?;
        backend.require::<T>("batched matrices")?;
        Ok(Batch {
            count,
            rows,
            cols,
            data: backend.alloc(len)?,
            backend: backend.clone(),
        })
    }

    /// `count` identity matrices of size `n`.
    ///
    /// # Errors
    /// Allocation errors.
    pub fn identity(backend: &B, count: usize, n: usize) -> Result<Self> {
        let mut data = vec![T::from_f64(0.0); size_of_batch("Batch::identity", count, n, n)?];
        for b in 0..count {
            for i in 0..n {
                data[b * n * n + i * n + i] = T::from_f64(1.0);
            }
        }
        Self::from_slice(backend, count, n, n, &data)
    }

    /// Number of matrices.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Rows of each matrix.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of each matrix.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// All matrices, contiguous row-major, copied to the host.
    ///
    /// # Errors
    /// Device errors.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.backend.download(&self.data)
    }

    /// All matrices as a `(count, rows, cols)` array.
    ///
    /// # Errors
    /// Device errors.
    pub fn to_ndarray(&self) -> Result<Array3<T>> {
        Array3::from_shape_vec((self.count, self.rows, self.cols), self.to_vec()?).map_err(|e| {
            Error::InvalidArgument {
                op: "Batch::to_ndarray",
                name: "shape",
                reason: e.to_string(),
            }
        })
    }

    /// A host copy of matrix `index`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `index >= count`; device errors.
    pub fn matrix(&self, index: usize) -> Result<Array2<T>> {
        if index >= self.count {
            return Err(Error::InvalidArgument {
                op: "Batch::matrix",
                name: "index",
                reason: format!("{index} >= count {}", self.count),
            });
        }
        let all = self.to_vec()?;
        let n = self.rows * self.cols;
        Array2::from_shape_vec(
            (self.rows, self.cols),
            all[index * n..(index + 1) * n].to_vec(),
        )
        .map_err(|e| Error::InvalidArgument {
            op: "Batch::matrix",
            name: "shape",
            reason: e.to_string(),
        })
    }

    /// A copy on another backend.
    ///
    /// # Errors
    /// Allocation errors.
    pub fn to_backend<B2: BackendCore>(&self, backend: &B2) -> Result<Batch<B2, T>> {
        Batch::from_slice(backend, self.count, self.rows, self.cols, &self.to_vec()?)
    }

    /// The underlying buffer.
    pub fn buffer(&self) -> &B::Buffer<T> {
        &self.data
    }
}

impl<B: Backend, T: Element> Batch<B, T> {
    /// A copy on the same device.
    ///
    /// # Errors
    /// Allocation errors.
    pub fn try_clone(&self) -> Result<Self> {
        // The copy writes the whole padded buffer: no zero fill first.
        let mut data = self.backend.alloc_uninit::<T>(B::len(&self.data))?;
        self.backend.copy(&self.data, &mut data)?;
        Ok(Batch {
            count: self.count,
            rows: self.rows,
            cols: self.cols,
            data,
            backend: self.backend.clone(),
        })
    }
}

/// Whether an operand enters a product transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Op {
    /// As stored.
    #[default]
    None,
    /// Transposed.
    Transpose,
}

/// Which triangle of a matrix a triangular solve uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Triangle {
    /// The lower triangle (forward substitution).
    Lower,
    /// The upper triangle (back substitution).
    Upper,
}

/// Whether the diagonal of a triangular matrix is taken as stored or as ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Diagonal {
    /// Divide by the stored diagonal.
    NonUnit,
    /// The diagonal is 1 (not read): the `L` of an LU factorization.
    Unit,
}

/// Per-matrix outcome of a factorization (LAPACK `info`): 0 = success, `k + 1` = zero pivot
/// or non-positive leading minor at step `k`. The codes stay on the device until asked for,
/// so a factorization does not wait for the device.
pub struct Status<B: BackendCore> {
    codes: B::Buffer<i32>,
    backend: B,
}

impl<B: BackendCore> fmt::Debug for Status<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Status({} matrices on {})",
            B::len(&self.codes),
            self.backend.info()
        )
    }
}

impl<B: BackendCore> Status<B> {
    /// The code of every matrix, copied to the host.
    ///
    /// # Errors
    /// Device errors.
    pub fn codes(&self) -> Result<Vec<i32>> {
        self.backend.download(&self.codes)
    }

    /// Whether every matrix succeeded.
    ///
    /// # Errors
    /// Device errors.
    pub fn all_ok(&self) -> Result<bool> {
        Ok(self.codes()?.iter().all(|&c| c == 0))
    }

    /// `(index, code)` of every failed matrix.
    ///
    /// # Errors
    /// Device errors.
    pub fn failures(&self) -> Result<Vec<(usize, i32)>> {
        Ok(self
            .codes()?
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0)
            .map(|(i, &c)| (i, c))
            .collect())
    }

    /// The codes on the device.
    pub fn buffer(&self) -> &B::Buffer<i32> {
        &self.codes
    }
}

/// LU factors of a batch: `P A = L U` with unit lower `L` and upper `U` stored in place,
/// and the row pivots (`pivots[b n + k]` = the row swapped with row `k` at step `k`).
pub struct Lu<B: BackendCore, T: Element> {
    /// `L` (strictly lower, unit diagonal implied) and `U` (upper) of every matrix.
    pub factors: Batch<B, T>,
    /// Row interchanges, `n` per matrix (`k` itself when no swap).
    pub pivots: B::Buffer<u32>,
    /// Per-matrix status.
    pub status: Status<B>,
}

/// The batched dense operator family.
pub trait BatchedOps: BackendCore {
    /// `C = α op(A) op(B) + β C`; `a` or `b` may hold a single matrix shared by the batch.
    #[allow(clippy::too_many_arguments)]
    fn batch_gemm<V: Element, T: Scalar>(
        &self,
        alpha: T,
        a: &Batch<Self, V>,
        op_a: Op,
        b: &Batch<Self, V>,
        op_b: Op,
        beta: T,
        c: &mut Batch<Self, V>,
    ) -> Result<()>;

    /// LU factorization in place; returns pivots and status codes (on the device).
    fn batch_lu<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
        pivoting: bool,
    ) -> Result<(Self::Buffer<u32>, Self::Buffer<i32>)>;

    /// Writes the inverse of every matrix of `a` into `x` in one pass when the backend has
    /// a direct kernel for this size, returning the status codes (LU's); `None` (and `x`
    /// untouched) otherwise.
    fn batch_inverse<V: Element, T: Scalar>(
        &self,
        a: &Batch<Self, V>,
        x: &mut Batch<Self, V>,
    ) -> Result<Option<Self::Buffer<i32>>> {
        let _ = (a, x);
        Ok(None)
    }

    /// Solves `L U X = P B` in place in `b` (`n x nrhs` per matrix); with `identity`, `B`
    /// is the identity and `b` is only written (the inverse).
    fn batch_lu_solve<V: Element, T: Scalar>(
        &self,
        lu: &Batch<Self, V>,
        pivots: &Self::Buffer<u32>,
        b: &mut Batch<Self, V>,
        identity: bool,
    ) -> Result<()>;

    /// Solves `T X = B` in place in `b` with the given triangle of `t` (the other triangle is
    /// not read).
    fn batch_triangular_solve<V: Element, T: Scalar>(
        &self,
        t: &Batch<Self, V>,
        triangle: Triangle,
        diagonal: Diagonal,
        b: &mut Batch<Self, V>,
    ) -> Result<()>;

    /// Cholesky `A = L Lᵀ` in place (lower triangle; the strict upper triangle is zeroed).
    fn batch_cholesky<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
    ) -> Result<Self::Buffer<i32>>;

    /// Solves `L Lᵀ X = B` in place in `b` (with `identity`: `B = I`, `b` only written).
    fn batch_cholesky_solve<V: Element, T: Scalar>(
        &self,
        l: &Batch<Self, V>,
        b: &mut Batch<Self, V>,
        identity: bool,
    ) -> Result<()>;
}

fn check_square<B: BackendCore, V: Element>(op: &'static str, a: &Batch<B, V>) -> Result<usize> {
    if a.rows != a.cols || a.rows > MAX_DIM {
        return Err(Error::InvalidArgument {
            op,
            name: "a",
            reason: format!(
                "{} x {} matrices: must be square with n <= {MAX_DIM}",
                a.rows, a.cols
            ),
        });
    }
    Ok(a.rows)
}

fn check_rhs<B: BackendCore, V: Element>(
    op: &'static str,
    a: &Batch<B, V>,
    b: &Batch<B, V>,
) -> Result<()> {
    crate::error::check_len(op, "b count", a.count, b.count)?;
    crate::error::check_len(op, "b rows", a.rows, b.rows)
}

/// `C = α op(A) op(B) + β C` for every matrix of the batch. `A` (or `B`) may be a batch
/// of one matrix, shared by all (the DG case: one reference operator times many element
/// matrices). `C` is not read when `β = 0`.
///
/// # Errors
/// [`Error::DimensionMismatch`] for inconsistent shapes or counts.
#[allow(clippy::too_many_arguments)]
pub fn gemm<B: BatchedOps, V: Element, T: Scalar>(
    alpha: T,
    a: &Batch<B, V>,
    op_a: Op,
    b: &Batch<B, V>,
    op_b: Op,
    beta: T,
    c: &mut Batch<B, V>,
) -> Result<()> {
    let (m, ka) = if op_a == Op::None {
        (a.rows, a.cols)
    } else {
        (a.cols, a.rows)
    };
    let (kb, n) = if op_b == Op::None {
        (b.rows, b.cols)
    } else {
        (b.cols, b.rows)
    };
    crate::error::check_len("gemm", "inner dimension of op(B)", ka, kb)?;
    crate::error::check_len("gemm", "rows of C", m, c.rows)?;
    crate::error::check_len("gemm", "columns of C", n, c.cols)?;
    for (what, count) in [("count of A", a.count), ("count of B", b.count)] {
        if count != 1 && count != c.count {
            return Err(Error::dims("gemm", what, c.count, count));
        }
    }
    c.backend
        .clone()
        .batch_gemm(alpha, a, op_a, b, op_b, beta, c)
}

/// `y = α op(A) x + β y` for every matrix: GEMM with `x`, `y` batches of column vectors
/// (`cols x 1`, `rows x 1`).
///
/// # Errors
/// As [`gemm`].
pub fn gemv<B: BatchedOps, V: Element, T: Scalar>(
    alpha: T,
    a: &Batch<B, V>,
    op: Op,
    x: &Batch<B, V>,
    beta: T,
    y: &mut Batch<B, V>,
) -> Result<()> {
    crate::error::check_len("gemv", "columns of x (must be 1)", 1, x.cols)?;
    gemm(alpha, a, op, x, Op::None, beta, y)
}

/// LU factorization of every matrix (computed in `T`, stored in `V`): with partial pivoting
/// (`pivoting = true`, `P A = L U`) or without (`A = L U`, for diagonally dominant batches).
///
/// # Errors
/// [`Error::InvalidArgument`] for non-square matrices or `n > 64`. Singular matrices are
/// reported in the [`Status`], not as errors.
pub fn lu<B: BatchedOps, V: Element, T: Scalar>(
    mut a: Batch<B, V>,
    pivoting: bool,
) -> Result<Lu<B, V>> {
    check_square("lu", &a)?;
    let backend = a.backend.clone();
    let (pivots, codes) = backend.batch_lu::<V, T>(&mut a, pivoting)?;
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
/// [`Error::DimensionMismatch`] for inconsistent shapes.
pub fn lu_solve<B: BatchedOps, V: Element, T: Scalar>(
    lu: &Lu<B, V>,
    b: &mut Batch<B, V>,
) -> Result<()> {
    check_rhs("lu_solve", &lu.factors, b)?;
    lu.factors
        .backend
        .batch_lu_solve::<V, T>(&lu.factors, &lu.pivots, b, false)
}

/// Solves `T X = B` for every matrix, overwriting `b` (`n x nrhs` per matrix), with the
/// lower or upper triangle of `t` and its stored or a unit diagonal. A zero on a non-unit
/// diagonal gives infinities or NaN in that matrix's solution, as in BLAS `trsm`.
///
/// # Errors
/// [`Error::InvalidArgument`] for non-square `t` or `n > 64`; [`Error::DimensionMismatch`]
/// for inconsistent shapes.
pub fn triangular_solve<B: BatchedOps, V: Element, T: Scalar>(
    t: &Batch<B, V>,
    triangle: Triangle,
    diagonal: Diagonal,
    b: &mut Batch<B, V>,
) -> Result<()> {
    check_square("triangular_solve", t)?;
    check_rhs("triangular_solve", t, b)?;
    t.backend
        .batch_triangular_solve::<V, T>(t, triangle, diagonal, b)
}

/// The inverse of every matrix: Gauss-Jordan elimination with partial pivoting in one pass
/// where the backend has a kernel for the size (GPU, `n <= 8`), else LU with partial
/// pivoting and solves with the identity. Singular matrices get status `k + 1` (the first
/// zero pivot: LU's in exact arithmetic; for a numerically singular matrix the two
/// eliminations may round a pivot differently); their "inverse" is not meaningful.
///
/// # Errors
/// As [`lu`].
pub fn inverse<B: Backend, V: Element, T: Scalar>(
    a: &Batch<B, V>,
) -> Result<(Batch<B, V>, Status<B>)> {
    let n = check_square("inverse", a)?;
    let mut x = Batch::zeros(&a.backend, a.count, n, n)?;
    if let Some(codes) = a.backend.batch_inverse::<V, T>(a, &mut x)? {
        let backend = a.backend.clone();
        return Ok((x, Status { codes, backend }));
    }
    let f = lu::<B, V, T>(a.try_clone()?, true)?;
    a.backend
        .batch_lu_solve::<V, T>(&f.factors, &f.pivots, &mut x, true)?;
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
    let codes = backend.batch_cholesky::<V, T>(&mut a)?;
    Ok((a, Status { codes, backend }))
}

/// Solves `L Lᵀ X = B` with Cholesky factors, overwriting `b`.
///
/// # Errors
/// [`Error::DimensionMismatch`] for inconsistent shapes.
pub fn cholesky_solve<B: BatchedOps, V: Element, T: Scalar>(
    l: &Batch<B, V>,
    b: &mut Batch<B, V>,
) -> Result<()> {
    check_square("cholesky_solve", l)?;
    check_rhs("cholesky_solve", l, b)?;
    l.backend.batch_cholesky_solve::<V, T>(l, b, false)
}

/// The inverse of every SPD matrix through its Cholesky factor.
///
/// # Errors
/// As [`cholesky`].
pub fn cholesky_inverse<B: Backend, V: Element, T: Scalar>(
    a: &Batch<B, V>,
) -> Result<(Batch<B, V>, Status<B>)> {
    let n = check_square("cholesky_inverse", a)?;
    let (l, status) = cholesky::<B, V, T>(a.try_clone()?)?;
    let mut x = Batch::zeros(&a.backend, a.count, n, n)?;
    a.backend.batch_cholesky_solve::<V, T>(&l, &mut x, true)?;
    Ok((x, status))
}

impl BatchedOps for Cpu {
    fn batch_gemm<V: Element, T: Scalar>(
        &self,
        alpha: T,
        a: &Batch<Self, V>,
        op_a: Op,
        b: &Batch<Self, V>,
        op_b: Op,
        beta: T,
        c: &mut Batch<Self, V>,
    ) -> Result<()> {
        cpu::gemm::<V, T>(alpha, a, op_a, b, op_b, beta, c);
        Ok(())
    }

    fn batch_lu<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
        pivoting: bool,
    ) -> Result<(Vec<u32>, Vec<i32>)> {
        Ok(cpu::lu::<V, T>(a, pivoting))
    }

    fn batch_lu_solve<V: Element, T: Scalar>(
        &self,
        lu: &Batch<Self, V>,
        pivots: &Vec<u32>,
        b: &mut Batch<Self, V>,
        identity: bool,
    ) -> Result<()> {
        if identity {
            cpu::set_identity(b);
        }
        cpu::lu_solve::<V, T>(lu, pivots, b);
        Ok(())
    }

    fn batch_triangular_solve<V: Element, T: Scalar>(
        &self,
        t: &Batch<Self, V>,
        triangle: Triangle,
        diagonal: Diagonal,
        b: &mut Batch<Self, V>,
    ) -> Result<()> {
        cpu::triangular_solve::<V, T>(
            t,
            triangle == Triangle::Lower,
            diagonal == Diagonal::Unit,
            b,
        );
        Ok(())
    }

    fn batch_cholesky<V: Element, T: Scalar>(&self, a: &mut Batch<Self, V>) -> Result<Vec<i32>> {
        Ok(cpu::cholesky::<V, T>(a))
    }

    fn batch_cholesky_solve<V: Element, T: Scalar>(
        &self,
        l: &Batch<Self, V>,
        b: &mut Batch<Self, V>,
        identity: bool,
    ) -> Result<()> {
        if identity {
            cpu::set_identity(b);
        }
        cpu::cholesky_solve::<V, T>(l, b);
        Ok(())
    }
}
