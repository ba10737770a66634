//! The sparse operator family: one generic SpMV entry per operation, whatever the format.
//!
//! A format is one file. It implements
//! - [`FormatKernels`] on a marker type: the container type it stores (per backend), its CPU
//!   kernel and its CubeCL launch; the fused `SpMV + dot` variants fall back to SpMV and a
//!   separate dot unless the format fuses them (SELL-C-σ and DIA give the partial sums of
//!   the dot from their product kernel, `spmv_dot_partials_cube`);
//! - [`SparseStorage`] on its container: sizes and the storage footprint. Its provided
//!   methods are the checked, safe SpMV of the format (`spmv`, `spmv_dot`, `spmv_dot_device`)
//!   and the only way to the unchecked kernels;
//! - [`LinearOperator`](crate::operator::LinearOperator), with the one-line
//!   `sparse_operator!` macro.
//!
//! [`SparseOps`], implemented once by each backend, dispatches to the format's kernels: a
//! new format touches no backend, and a new backend implements one trait with three methods.

use cubecl::prelude::*;
use rayon::prelude::*;

use crate::backend::core::check_device;
use crate::backend::core::{sealed::Sealed, BackendCore};
use crate::backend::cpu::Cpu;
pub(crate) use crate::backend::cube::{AlphaBeta, AlphaBetaLaunch};
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::{check_len, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::Format;
use crate::vector::cube::reduce::{finish, finish_sum, Finish};
use crate::vector::{check_slot, Vector, VectorOps};

/// The kernels of one sparse format, on the CPU and on CubeCL devices.
///
/// Implementations may assume what [`SparseStorage`]'s methods check before calling them:
/// `x` has `ncols` and `y` `nrows` entries (and, for the fused variants, the matrix is
/// square and `slot` is in range); the matrix satisfies its format's invariants (validated
/// when it was built on the host and unchanged since); all buffers live on one device.
pub trait FormatKernels: 'static {
    /// The container, on backend `B` with values `V`.
    type Matrix<B: BackendCore, V: Element>;

    /// `y = α A x + β y` on the CPU (`y` not read when `β = 0`).
    fn spmv_cpu<V: Element, T: Scalar>(
        a: &Self::Matrix<Cpu, V>,
        alpha: T,
        x: &[T],
        beta: T,
        y: &mut [T],
    );

    /// `y = α A x + β y` on a CubeCL device.
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// As the trait docs say: `x` has `ncols` and `y` `nrows` entries; the matrix is valid.
    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        backend: &Cube<R>,
        a: &Self::Matrix<Cube<R>, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()>;

    /// `y = A x` and the per-cube partial sums of `x · y` (square matrices), on a CubeCL
    /// device, where the format fuses the product and the dot in one kernel (SELL-C-σ and
    /// DIA do); `None`, computing nothing, where it does not (the default). The fused calls
    /// below finish these partials, or take the SpMV and a separate dot.
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// As [`spmv_cube`](Self::spmv_cube), and the matrix is square.
    unsafe fn spmv_dot_partials_cube<R: CubeRuntime, V: Element, T: Scalar>(
        backend: &Cube<R>,
        a: &Self::Matrix<Cube<R>, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<Option<CubeBuffer<T>>> {
        let _ = (backend, a, x, y);
        Ok(None)
    }

    /// `y = A x`, returning `x · y` (square matrices), on a CubeCL device: the fused
    /// partials finished on the host (or by one device pass where there are many), else the
    /// SpMV and a dot.
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// As [`spmv_cube`](Self::spmv_cube), and the matrix is square.
    unsafe fn spmv_dot_cube<R: CubeRuntime, V: Element, T: Scalar>(
        backend: &Cube<R>,
        a: &Self::Matrix<Cube<R>, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<T> {
        // SAFETY: the caller's contract; a square matrix makes x and y equally long.
        unsafe {
            match Self::spmv_dot_partials_cube(backend, a, x, y)? {
                Some(partials) => Ok(T::from_f64(finish_sum(backend, &partials)?)),
                None => {
                    Self::spmv_cube(backend, a, T::ONE, x, T::ZERO, y)?;
                    backend.dot(x, y)
                }
            }
        }
    }

    /// `y = A x` with `x · y` left on the device in `scalars[slot]` (square matrices): the
    /// fused partials finished on the device, else the SpMV and a device dot.
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// As [`spmv_dot_cube`](Self::spmv_dot_cube), and `slot < len(scalars)`.
    unsafe fn spmv_dot_device_cube<R: CubeRuntime, V: Element, T: Scalar>(
        backend: &Cube<R>,
        a: &Self::Matrix<Cube<R>, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
        scalars: &mut CubeBuffer<T>,
        slot: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract. An empty matrix still writes its (zero) dot into
        // the slot: the partials of no rows are one zero per cube.
        unsafe {
            match Self::spmv_dot_partials_cube(backend, a, x, y)? {
                Some(partials) => finish(backend, &partials, scalars, slot, Finish::Slot),
                None => {
                    Self::spmv_cube(backend, a, T::ONE, x, T::ZERO, y)?;
                    backend.dot_device(x, y, scalars, slot)
                }
            }
        }
    }
}

/// The sparse operator family: SpMV of any format. Implemented by every backend; sealed.
/// Call it through the containers' [`SparseStorage`] methods, which check first.
///
/// # Safety
/// The methods require what [`FormatKernels`] says its implementations may assume.
pub trait SparseOps: VectorOps + Sealed {
    /// `y = α A x + β y` (`y` not read when `β = 0`).
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// See [`FormatKernels`].
    unsafe fn spmv<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        alpha: T,
        x: &Self::Buffer<T>,
        beta: T,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = A x`, returning `x · y` (square matrices).
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// See [`FormatKernels`].
    unsafe fn spmv_dot<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
    ) -> Result<T>;

    /// `y = A x` with `x · y` left on the device in `scalars[slot]` (square matrices).
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// See [`FormatKernels`]; `slot < len(scalars)`.
    unsafe fn spmv_dot_device<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
        scalars: &mut Self::Buffer<T>,
        slot: usize,
    ) -> Result<()>;
}

impl SparseOps for Cpu {
    unsafe fn spmv<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Cpu, V>,
        alpha: T,
        x: &Vec<T>,
        beta: T,
        y: &mut Vec<T>,
    ) -> Result<()> {
        F::spmv_cpu(a, alpha, x, beta, y);
        Ok(())
    }

    unsafe fn spmv_dot<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Cpu, V>,
        x: &Vec<T>,
        y: &mut Vec<T>,
    ) -> Result<T> {
        F::spmv_cpu(a, T::ONE, x, T::ZERO, y);
        Ok(T::from_f64(crate::vector::cpu::dot(x, y)))
    }

    unsafe fn spmv_dot_device<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Cpu, V>,
        x: &Vec<T>,
        y: &mut Vec<T>,
        scalars: &mut Vec<T>,
        slot: usize,
    ) -> Result<()> {
        F::spmv_cpu(a, T::ONE, x, T::ZERO, y);
        scalars[slot] = T::from_f64(crate::vector::cpu::dot(x, y));
        Ok(())
    }
}

impl<R: CubeRuntime> SparseOps for Cube<R> {
    unsafe fn spmv<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        // SAFETY: the caller's contract is the kernels'.
        unsafe { F::spmv_cube(self, a, alpha, x, beta, y) }
    }

    unsafe fn spmv_dot<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<T> {
        // SAFETY: the caller's contract is the kernels'.
        unsafe { F::spmv_dot_cube(self, a, x, y) }
    }

    unsafe fn spmv_dot_device<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
        scalars: &mut CubeBuffer<T>,
        slot: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract is the kernels'.
        unsafe { F::spmv_dot_device_cube(self, a, x, y, scalars, slot) }
    }
}

/// What every sparse container is: its sizes, its footprint, and its checked SpMV. The
/// provided methods are the only safe way to the format's kernels.
pub trait SparseStorage<B: SparseOps, V: Element>: Sized {
    /// The format's kernels, whose container is `Self`.
    type Kernels: FormatKernels<Matrix<B, V> = Self>;

    /// The format, as a run-time value.
    const FORMAT: Format;

    /// The backend the matrix lives on.
    fn backend(&self) -> &B;

    /// Rows.
    fn nrows(&self) -> usize;

    /// Columns.
    fn ncols(&self) -> usize;

    /// Stored nonzeros (padding excluded).
    fn nnz(&self) -> usize;

    /// Bytes of the stored arrays, padding included.
    fn storage_bytes(&self) -> usize;

    /// Floating-point operations of one SpMV (`2 nnz` unless the format multiplies stored
    /// zeros too).
    fn spmv_flops(&self) -> f64 {
        2.0 * self.nnz() as f64
    }

    /// `y = α A x + β y` (`y` not read when `β = 0`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if `x` does not have
    /// `ncols` or `y` `nrows` entries; [`Error::DeviceMismatch`](crate::error::Error::DeviceMismatch)
    /// if they live on another device than the matrix; device errors.
    fn spmv<T: Scalar>(
        &self,
        alpha: T,
        x: &Vector<B, T>,
        beta: T,
        y: &mut Vector<B, T>,
    ) -> Result<()> {
        check_operands(Self::FORMAT, self, x, y, false)?;
        // SAFETY: x has ncols and y nrows entries on the matrix's device (checked above);
        // the container upholds its format's invariants.
        unsafe {
            self.backend().spmv::<Self::Kernels, V, T>(
                self,
                alpha,
                x.buffer()?,
                beta,
                y.buffer_mut()?,
            )
        }
    }

    /// `y = A x` for a square matrix, returning `x · y` (one pass where the format fuses it).
    ///
    /// # Errors
    /// As [`spmv`](Self::spmv), and
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the matrix is not
    /// square.
    fn spmv_dot<T: Scalar>(&self, x: &Vector<B, T>, y: &mut Vector<B, T>) -> Result<T> {
        check_operands(Self::FORMAT, self, x, y, true)?;
        // SAFETY: a square matrix, x and y of its size on its device (checked above).
        unsafe {
            self.backend()
                .spmv_dot::<Self::Kernels, V, T>(self, x.buffer()?, y.buffer_mut()?)
        }
    }

    /// `y = A x` for a square matrix, with `x · y` left on the device in `scalars[slot]`.
    ///
    /// # Errors
    /// As [`spmv_dot`](Self::spmv_dot), and
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if `slot` is not below
    /// `scalars.len()` (checked before anything is written).
    fn spmv_dot_device<T: Scalar>(
        &self,
        x: &Vector<B, T>,
        y: &mut Vector<B, T>,
        scalars: &mut Vector<B, T>,
        slot: usize,
    ) -> Result<()> {
        check_operands(Self::FORMAT, self, x, y, true)?;
        check_slot(Self::FORMAT.spmv_name(), scalars.len(), slot)?;
        check_device(Self::FORMAT.spmv_name(), self.backend(), scalars.backend())?;
        // SAFETY: as for spmv_dot, and slot < len(scalars) on the same device.
        unsafe {
            self.backend().spmv_dot_device::<Self::Kernels, V, T>(
                self,
                x.buffer()?,
                y.buffer_mut()?,
                scalars.buffer_mut()?,
                slot,
            )
        }
    }
}

/// The checks of every SpMV: `x` has `ncols`, `y` `nrows` entries, both on the matrix's
/// device; with `square`, the matrix is square.
fn check_operands<B: SparseOps, V: Element, M: SparseStorage<B, V>, T: Scalar>(
    format: Format,
    a: &M,
    x: &Vector<B, T>,
    y: &Vector<B, T>,
    square: bool,
) -> Result<()> {
    let op = format.spmv_name();
    if square {
        check_len(
            op,
            "ncols (the matrix must be square)",
            a.nrows(),
            a.ncols(),
        )?;
    }
    check_len(op, "x", a.ncols(), x.len())?;
    check_len(op, "y", a.nrows(), y.len())?;
    check_device(op, a.backend(), x.backend())?;
    check_device(op, a.backend(), y.backend())
}

/// `LinearOperator` for a sparse container: its SpMV, fused variants and cost.
macro_rules! sparse_operator {
    ($matrix:ident) => {
        impl<
                B: $crate::sparse::SparseOps,
                V: $crate::scalar::Element,
                S: $crate::scalar::Scalar,
            > $crate::operator::LinearOperator<B, S> for $matrix<B, V>
        {
            fn nrows(&self) -> usize {
                $crate::sparse::SparseStorage::nrows(self)
            }
            fn ncols(&self) -> usize {
                $crate::sparse::SparseStorage::ncols(self)
            }
            fn apply_add(
                &self,
                alpha: S,
                x: &$crate::vector::Vector<B, S>,
                beta: S,
                y: &mut $crate::vector::Vector<B, S>,
            ) -> $crate::error::Result<()> {
                $crate::sparse::SparseStorage::spmv(self, alpha, x, beta, y)
            }
            fn apply_dot(
                &self,
                x: &$crate::vector::Vector<B, S>,
                y: &mut $crate::vector::Vector<B, S>,
            ) -> $crate::error::Result<S> {
                $crate::sparse::SparseStorage::spmv_dot(self, x, y)
            }
            fn apply_dot_device(
                &self,
                x: &$crate::vector::Vector<B, S>,
                y: &mut $crate::vector::Vector<B, S>,
                scalars: &mut $crate::vector::Vector<B, S>,
                slot: usize,
            ) -> $crate::error::Result<()> {
                $crate::sparse::SparseStorage::spmv_dot_device(self, x, y, scalars, slot)
            }
            fn cost(&self) -> $crate::operator::OperatorCost {
                $crate::sparse::ops::sparse_cost::<B, V, S, Self>(self)
            }
        }
    };
}
pub(crate) use sparse_operator;

/// Cost of a sparse product: its flops; the stored arrays, `x` and `y` once.
pub(crate) fn sparse_cost<B: SparseOps, V: Element, S: Scalar, M: SparseStorage<B, V>>(
    a: &M,
) -> crate::operator::OperatorCost {
    crate::operator::OperatorCost {
        flops: a.spmv_flops(),
        bytes: (a.storage_bytes() + (a.nrows() + a.ncols()) * S::DTYPE.size()) as f64,
    }
}

/// `y = α acc + β y` with `y` not read when `β = 0` (as in BLAS): the end of a row of every
/// CPU SpMV.
#[inline]
pub(crate) fn axpby_row<T: Scalar>(alpha: T, acc: T, beta: T, y: &mut T) {
    *y = if beta == T::ZERO {
        alpha * acc
    } else {
        alpha * acc + beta * *y
    };
}

/// A CPU SpMV one row at a time: `y[r] = α row(r) + β y[r]`, rayon tasks of 2048 rows.
pub(crate) fn rows_cpu<T: Scalar>(y: &mut [T], alpha: T, beta: T, row: impl Fn(usize) -> T + Sync) {
    y.par_chunks_mut(2048).enumerate().for_each(|(chunk, y)| {
        for (i, yi) in y.iter_mut().enumerate() {
            axpby_row(alpha, row(chunk * 2048 + i), beta, yi);
        }
    });
}

/// The scalar arguments every SpMV kernel takes: `α`, `β`, and whether `β = 0` (then `y`
/// is not read, as in BLAS).
pub(crate) struct Scaling {
    pub(crate) alpha: InputScalar,
    pub(crate) beta: InputScalar,
    pub(crate) beta_zero: bool,
}

impl Scaling {
    pub(crate) fn new<T: Scalar>(alpha: T, beta: T) -> Self {
        Scaling {
            alpha: crate::backend::cube::scalar(alpha),
            beta: crate::backend::cube::scalar(beta),
            beta_zero: beta == T::ZERO,
        }
    }
}

/// `acc + v · x[c]` where `keep`, else `acc`, without a branch: where not kept, `x[0]` is
/// read (inside every device buffer, which holds at least 4 elements) and the term is
/// dropped, not multiplied by a zero value (an infinite `x[0]` would give NaN). A branch kept
/// NVIDIA's Vulkan compiler from issuing the loads of a row together (docs/benchmarks.md,
/// issue 13, ninth session).
#[cube]
pub(crate) fn add_if<V: Float, T: Float>(acc: T, keep: bool, c: u32, v: V, x: &Array<T>) -> T {
    let term = T::cast_from(v) * x[select(keep, c, 0u32) as usize];
    select(keep, acc + term, acc)
}

/// `acc + v · x[c]` for a stored slot, `acc` for padding (`c == PAD`), without a branch
/// ([`add_if`]).
#[cube]
pub(crate) fn add_slot<V: Float, T: Float>(acc: T, c: u32, v: V, x: &Array<T>) -> T {
    add_if::<V, T>(acc, c != crate::sparse::PAD, c, v, x)
}
