//! [`BatchedOps`]: the batched dense family every backend implements, and the CPU
//! implementation (the reference kernels of [`cpu`](super::cpu)).

use crate::backend::core::sealed::Sealed;
use crate::backend::cpu::Cpu;
use crate::batched::linalg::GemmParams;
use crate::batched::{cpu, Batch, Diagonal, Pivoting, Triangle};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::vector::VectorOps;

/// The right-hand side of a batched solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rhs {
    /// Read from `b` (and overwritten by the solution).
    Given,
    /// The identity (`b` is only written): the inverse.
    Identity,
}

/// The batched dense operator family: implemented by every backend; sealed. Call it through
/// the functions of [`batched`](super), which check shapes first.
///
/// # Safety
/// Every method requires what those functions check: the batches and buffers belong to this
/// backend; factorizations get square batches with `n <= 64`; solves get factors of `count`
/// `n x n` matrices, right-hand sides of `count` matrices of `n` rows and (LU) `count · n`
/// pivots, each a row index below `n`; GEMM gets operands whose shapes agree with its
/// [`GemmParams`] (A and B of one or `count` matrices).
pub trait BatchedOps: VectorOps + Sealed {
    /// `C = α op(A) op(B) + β C`; `a` or `b` may hold a single matrix shared by the batch.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn batch_gemm<V: Element, T: Scalar>(
        &self,
        params: &GemmParams<T>,
        a: &Batch<Self, V>,
        b: &Batch<Self, V>,
        c: &mut Batch<Self, V>,
    ) -> Result<()>;

    /// LU factorization in place; returns pivots and status codes (on the device).
    ///
    /// # Errors
    /// Device errors; [`Error::Unsupported`](crate::error::Error::Unsupported) when a matrix does
    /// not fit the device's shared memory.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn batch_lu<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
        pivoting: Pivoting,
    ) -> Result<(Self::Buffer<u32>, Self::Buffer<i32>)>;

    /// Writes the inverse of every matrix of `a` into `x` (of `a`'s shape) in one pass when
    /// the backend has a direct kernel for this size, returning the status codes (LU's);
    /// `None` (and `x` untouched) otherwise.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait; `x` has the shape of `a`.
    unsafe fn batch_inverse<V: Element, T: Scalar>(
        &self,
        a: &Batch<Self, V>,
        x: &mut Batch<Self, V>,
    ) -> Result<Option<Self::Buffer<i32>>> {
        let _ = (a, x);
        Ok(None)
    }

    /// Solves `L U X = P B` in place in `b` (`n x nrhs` per matrix).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn batch_lu_solve<V: Element, T: Scalar>(
        &self,
        lu: &Batch<Self, V>,
        pivots: &Self::Buffer<u32>,
        b: &mut Batch<Self, V>,
        rhs: Rhs,
    ) -> Result<()>;

    /// Solves `T X = B` in place in `b` with the given triangle of `t` (the other triangle is
    /// not read).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn batch_triangular_solve<V: Element, T: Scalar>(
        &self,
        t: &Batch<Self, V>,
        triangle: Triangle,
        diagonal: Diagonal,
        b: &mut Batch<Self, V>,
    ) -> Result<()>;

    /// Cholesky `A = L Lᵀ` in place (lower triangle; the strict upper triangle is zeroed).
    ///
    /// # Errors
    /// As [`batch_lu`](Self::batch_lu).
    ///
    /// # Safety
    /// See the trait.
    unsafe fn batch_cholesky<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
    ) -> Result<Self::Buffer<i32>>;

    /// Solves `L Lᵀ X = B` in place in `b`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn batch_cholesky_solve<V: Element, T: Scalar>(
        &self,
        l: &Batch<Self, V>,
        b: &mut Batch<Self, V>,
        rhs: Rhs,
    ) -> Result<()>;
}

impl BatchedOps for Cpu {
    unsafe fn batch_gemm<V: Element, T: Scalar>(
        &self,
        params: &GemmParams<T>,
        a: &Batch<Self, V>,
        b: &Batch<Self, V>,
        c: &mut Batch<Self, V>,
    ) -> Result<()> {
        cpu::gemm::<V, T>(params, a, b, c);
        Ok(())
    }

    unsafe fn batch_lu<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
        pivoting: Pivoting,
    ) -> Result<(Vec<u32>, Vec<i32>)> {
        Ok(cpu::lu::<V, T>(a, pivoting == Pivoting::Partial))
    }

    unsafe fn batch_lu_solve<V: Element, T: Scalar>(
        &self,
        lu: &Batch<Self, V>,
        pivots: &Vec<u32>,
        b: &mut Batch<Self, V>,
        rhs: Rhs,
    ) -> Result<()> {
        if rhs == Rhs::Identity {
            cpu::set_identity(b);
        }
        cpu::lu_solve::<V, T>(lu, pivots, b);
        Ok(())
    }

    unsafe fn batch_triangular_solve<V: Element, T: Scalar>(
        &self,
        t: &Batch<Self, V>,
        triangle: Triangle,
        diagonal: Diagonal,
        b: &mut Batch<Self, V>,
    ) -> Result<()> {
        cpu::triangular_solve::<V, T>(t, triangle, diagonal, b);
        Ok(())
    }

    unsafe fn batch_cholesky<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
    ) -> Result<Vec<i32>> {
        Ok(cpu::cholesky::<V, T>(a))
    }

    unsafe fn batch_cholesky_solve<V: Element, T: Scalar>(
        &self,
        l: &Batch<Self, V>,
        b: &mut Batch<Self, V>,
        rhs: Rhs,
    ) -> Result<()> {
        if rhs == Rhs::Identity {
            cpu::set_identity(b);
        }
        cpu::cholesky_solve::<V, T>(l, b);
        Ok(())
    }
}
