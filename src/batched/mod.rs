//! Batched small dense matrices: GEMM, GEMV, LU (with and without pivoting), triangular
//! solves, inverse, Cholesky — many matrices of one shape in one call.
//!
//! # Layout
//! A [`Batch<B, T>`](Batch) holds `count` matrices of `nrows x ncols`, each stored row-major
//! and contiguous (`matrix b, entry (i, j)` at `b·nrows·ncols + i·ncols + j`). Device kernels
//! stage whole matrices in shared memory (factorizations) or read them through the cache
//! one output entry per unit (GEMM), so loads stay coalesced without an interleaved layout.
//!
//! # Status
//! Factorizations return a [`Status`] per matrix, as LAPACK's `info`: 0 for success,
//! `k + 1` when the factorization met a zero pivot (LU) or a non-positive leading minor
//! (Cholesky) at step `k`. The other matrices of the batch are computed normally; nothing
//! panics.
//!
//! "Zero" is decided with a threshold, so that the same input gets the same status on every
//! backend (a GPU's fused multiply–add leaves `10⁻¹⁷` where the CPU leaves `0`): with `ε` the
//! machine epsilon of the arithmetic type `T`,
//! - LU (and the inverse) stops at step `k` when `|u_kk| ≤ 4 n ε s`, `s = max_j |a_pj|` the
//!   largest magnitude of the original row `p` that became row `k`;
//! - Cholesky stops when the pivot `a_kk − Σ l_kj²` is `≤ 4 n ε a_kk` (original diagonal).
//!
//! Exactly singular matrices (a repeated, scaled or zero row, a repeated column) leave pivots
//! of a few `ε s` (up to 8 `ε s` measured with the inexact f32 division of Vulkan) and are
//! flagged everywhere; matrices whose pivots clear the threshold by a wide margin succeed
//! everywhere. In between — rank deficiency that elimination leaves as a pivot of tens to
//! hundreds of `ε s`, e.g. a row that is the sum of two others — the status can differ
//! between backends, as the rounding of the pivot does. In f32 arithmetic the threshold flags
//! matrices of condition above roughly `1 / (4 n ε)` (3·10⁵ at n = 8): factor such batches with
//! f64 arithmetic (`lu::<_, f32, f64>`).
//!
//! A matrix with NaN entries: on the CPU and CUDA its factors are NaN from its first NaN step
//! on, a NaN pivot is not flagged (`|NaN| ≤ x` is false, as in LAPACK), and the pivots follow
//! the CPU's rule (a NaN at position `k` keeps `k`, a NaN row is never taken). On wgpu its
//! pivots (always within the matrix), code and factors are unspecified: Vulkan compilers need
//! not keep NaN comparisons (NVIDIA's and lavapipe's do not). The other matrices of the batch
//! are unaffected everywhere.
//!
//! # Mixed precision
//! Every operation takes the storage type `V` of the batch and the arithmetic type `T`
//! separately (`lu::<_, f32, f64>` factors f32 matrices in f64 and rounds the factors once).
//!
//! # Layout of the module
//! [`Batch`] and its enums here; the operations in `linalg` (checked, re-exported here);
//! [`BatchedOps`], the backend family they call, in `ops`; the rayon reference kernels in
//! `cpu`; the CubeCL kernels in `cube` (`gemm`, `factor`, `solve`).

use std::fmt;

use ndarray::{Array2, Array3, ArrayBase, Data, Ix3};

use crate::backend::core::BackendCore;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::vector::VectorOps;

mod convert;
pub(crate) mod cpu;
pub(crate) mod cube;
mod linalg;
mod ops;
mod status;

pub use linalg::{
    cholesky, cholesky_inverse, cholesky_solve, gemm, gemv, inverse, lu, lu_solve,
    triangular_solve, GemmParams,
};
pub use ops::{BatchedOps, Rhs};
pub use status::{Lu, Status};

/// The largest supported matrix dimension of the factorizations.
pub const MAX_DIM: usize = 64;

/// `count` matrices of `nrows x ncols` on backend `B`. See the [module docs](self).
pub struct Batch<B: BackendCore, T: Element> {
    pub(crate) count: usize,
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) data: B::Buffer<T>,
    pub(crate) backend: B,
}

impl<B: BackendCore, T: Element> fmt::Debug for Batch<B, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Batch({} x {}x{} {} on {})",
            self.count,
            self.nrows,
            self.ncols,
            T::DTYPE,
            self.backend.info()
        )
    }
}

fn size_of_batch(op: &'static str, count: usize, nrows: usize, ncols: usize) -> Result<usize> {
    count
        .checked_mul(nrows)
        .and_then(|v| v.checked_mul(ncols))
        .ok_or_else(|| Error::InvalidArgument {
            op,
            name: "shape",
            reason: format!("{count} x {nrows} x {ncols} overflows"),
        })
}

impl<B: BackendCore, T: Element> Batch<B, T> {
    /// A batch from contiguous row-major data (`count · nrows · ncols` values).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `data` has the wrong length; allocation errors.
    pub fn from_slice(
        backend: &B,
        count: usize,
        nrows: usize,
        ncols: usize,
        data: &[T],
    ) -> Result<Self> {
        let len = size_of_batch("Batch::from_slice", count, nrows, ncols)?;
        crate::error::check_len("Batch::from_slice", "data", len, data.len())?;
        backend.require::<T>("batched matrices")?;
        Ok(Batch {
            count,
            nrows,
            ncols,
            data: backend.upload(data)?,
            backend: backend.clone(),
        })
    }

    /// A batch from a `(count, nrows, ncols)` ndarray (any strides).
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
    pub fn zeros(backend: &B, count: usize, nrows: usize, ncols: usize) -> Result<Self> {
        let len = size_of_batch("Batch::zeros", count, nrows, ncols)?;
        backend.require::<T>("batched matrices")?;
        Ok(Batch {
            count,
            nrows,
            ncols,
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
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Columns of each matrix.
    pub fn ncols(&self) -> usize {
        self.ncols
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

    /// All matrices as a `(count, nrows, ncols)` array.
    ///
    /// # Errors
    /// Device errors.
    pub fn to_ndarray(&self) -> Result<Array3<T>> {
        Array3::from_shape_vec((self.count, self.nrows, self.ncols), self.to_vec()?).map_err(|e| {
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
        let n = self.nrows * self.ncols;
        Array2::from_shape_vec(
            (self.nrows, self.ncols),
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
        Batch::from_slice(backend, self.count, self.nrows, self.ncols, &self.to_vec()?)
    }

    /// The underlying buffer.
    pub fn buffer(&self) -> &B::Buffer<T> {
        &self.data
    }

    /// The same values seen as `count` matrices of `nrows x ncols` (row-major data
    /// unchanged: one `m x (k n)` matrix becomes `m` matrices of `k x n`, say).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the new shape holds a different number of values.
    pub fn reshape(self, count: usize, nrows: usize, ncols: usize) -> Result<Self> {
        let len = size_of_batch("Batch::reshape", count, nrows, ncols)?;
        crate::error::check_len(
            "Batch::reshape",
            "values of the new shape",
            self.count * self.nrows * self.ncols,
            len,
        )?;
        Ok(Batch {
            count,
            nrows,
            ncols,
            ..self
        })
    }

    /// A batch over `buffer`, a buffer of `backend`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the buffer holds fewer than `count · nrows · ncols`
    /// values (the kernels index that many, unchecked).
    pub(crate) fn from_buffer(
        backend: &B,
        count: usize,
        nrows: usize,
        ncols: usize,
        buffer: B::Buffer<T>,
    ) -> Result<Self> {
        let need = count.checked_mul(nrows).and_then(|v| v.checked_mul(ncols));
        if need.is_none_or(|need| B::len(&buffer) < need) {
            return Err(Error::invalid(
                "Batch::from_buffer",
                "buffer",
                format!(
                    "{} values for {count} matrices of {nrows} x {ncols}",
                    B::len(&buffer)
                ),
            ));
        }
        Ok(Batch {
            count,
            nrows,
            ncols,
            data: buffer,
            backend: backend.clone(),
        })
    }
}

impl<B: VectorOps, T: Element> Batch<B, T> {
    /// A copy on the same device.
    ///
    /// # Errors
    /// Allocation errors.
    pub fn try_clone(&self) -> Result<Self> {
        // The copy writes the whole padded buffer: no zero fill first.
        let mut data = self.backend.alloc_uninit::<T>(B::len(&self.data))?;
        // SAFETY: both buffers hold len(data) values and belong to the batch's backend.
        unsafe { self.backend.copy(&self.data, &mut data)? };
        Ok(Batch {
            count: self.count,
            nrows: self.nrows,
            ncols: self.ncols,
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

/// Whether an LU factorization pivots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pivoting {
    /// Partial (row) pivoting: `P A = L U`, for any nonsingular matrix.
    #[default]
    Partial,
    /// None: `A = L U`, for diagonally dominant (or SPD) batches; a zero pivot stops the
    /// factorization of that matrix.
    None,
}
