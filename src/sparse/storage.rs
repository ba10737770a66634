//! [`SparseStorage`]: what every sparse container is — sizes and footprint, its moves
//! between devices and its checked SpMV, written once for every format — and the
//! `sparse_operator!` line that makes a container a
//! [`LinearOperator`](crate::operator::LinearOperator).
//!
//! A format is one file and one line. The file holds
//! - the container (its host constructors and invariants), with [`SparseStorage`]: sizes and
//!   footprint; its provided methods are the device moves (`to_backend`, `to_host`) and the
//!   checked SpMV (`spmv`, `spmv_dot`, `spmv_dot_device`), the only safe way to the kernels;
//! - a marker type with [`FormatKernels`]: the container type per backend, the format's names,
//!   the list of its arrays for a device move ([`Mover`]), its CPU kernel (the reference) and
//!   its CubeCL launch; the fused `SpMV + dot` variants fall back to SpMV and a separate dot
//!   unless the format fuses them (SELL-C-σ and DIA give the partial sums of the dot from
//!   their product kernel); and [`FormatConversion`](crate::sparse::FormatConversion): its
//!   conversion from CSR and its tune candidates (a format with its own parameters puts them
//!   in [`options`](crate::sparse::options));
//! - one `sparse_operator!(Container)` line: the container as a
//!   [`LinearOperator`](crate::operator::LinearOperator);
//! - `impl sealed::Format` for the container and the marker.
//!
//! The line is the format's entry in the list of [`matrix`](super::matrix), from which the
//! [`Format`](super::Format) enum (names, parsing), [`SparseMatrix`](super::SparseMatrix)
//! (conversion, dispatch, tuning) and the verification rows follow. No backend changes:
//! [`SparseOps`] dispatches to the format's kernels.

use crate::backend::core::check_device;
use crate::backend::cpu::Cpu;
use crate::error::{check_len, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::ops::{sealed, FormatKernels, Mover, SparseOps};
use crate::vector::{check_slot, Vector};

/// What every sparse container is: its sizes, its footprint, its moves between devices and
/// its checked SpMV. The provided methods are the only safe way to the format's kernels.
/// Sealed: the formats are this crate's (a new one is a file of [`sparse`](crate::sparse)).
pub trait SparseStorage<B: SparseOps, V: Element>: Sized + sealed::Format {
    /// The format's kernels, whose container is `Self`.
    type Kernels: FormatKernels<Matrix<B, V> = Self>;

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

    /// A copy on another backend.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::error::Error::Unsupported) if that device lacks `V`;
    /// device and allocation errors.
    fn to_backend<B2: SparseOps>(
        &self,
        backend: &B2,
    ) -> Result<<Self::Kernels as FormatKernels>::Matrix<B2, V>> {
        backend.require::<V>("sparse matrices")?;
        Self::Kernels::move_to::<B, B2, V, V>(self, &Mover::new(self.backend(), backend))
    }

    /// A copy on the same backend with values rounded to `W` (once, to nearest even), made
    /// on the device: the index arrays copied there, the values rounded there. E.g. the f32
    /// operator of an f32 preconditioner inside an f64 solve, from the f64 one, without the
    /// host.
    ///
    /// # Errors
    /// [`Error::Unsupported`](crate::error::Error::Unsupported) if the device lacks `W`;
    /// device and allocation errors.
    fn to_precision<W: Element>(&self) -> Result<<Self::Kernels as FormatKernels>::Matrix<B, W>> {
        self.backend().require::<W>("sparse matrices")?;
        Self::Kernels::move_to::<B, B, V, W>(self, &Mover::new(self.backend(), self.backend()))
    }

    /// A copy in host memory.
    ///
    /// # Errors
    /// [`Error::Device`](crate::error::Error::Device) if reading the device fails.
    fn to_host(&self) -> Result<<Self::Kernels as FormatKernels>::Matrix<Cpu, V>> {
        self.to_backend(&Cpu::new())
    }

    /// Whether [`spmv`](Self::spmv) works in the matrix's original numbering (every format
    /// but Staircase SELL, which multiplies in its own row order: see
    /// [`spmv_original`](Self::spmv_original)).
    fn original_numbering(&self) -> bool {
        true
    }

    /// `y = α A x + β y` in the original numbering of the matrix: [`spmv`](Self::spmv),
    /// or the product around the permutations where the format renumbers.
    ///
    /// # Errors
    /// As [`spmv`](Self::spmv).
    fn spmv_original<T: Scalar>(
        &self,
        alpha: T,
        x: &Vector<B, T>,
        beta: T,
        y: &mut Vector<B, T>,
    ) -> Result<()> {
        self.spmv(alpha, x, beta, y)
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
        check_operands(self, x, y, false)?;
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
        check_operands(self, x, y, true)?;
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
        check_operands(self, x, y, true)?;
        let op = Self::Kernels::SPMV_NAME;
        check_slot(op, scalars.len(), slot)?;
        check_device(op, self.backend(), scalars.backend())?;
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

    /// `r = b − A x` and, with `scaled = Some((s, d))`, `d = s ∘ r`, for a square matrix:
    /// one pass where the format fuses it (CSR, block-ELL's direct kernel, DIA; SELL-C-σ on
    /// devices), else the SpMV and the vector operations (also for vectors split into parts).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) if the matrix is
    /// not square or a vector does not have its size;
    /// [`Error::DeviceMismatch`](crate::error::Error::DeviceMismatch) if a vector lives on
    /// another device; device errors.
    fn spmv_residual<T: Scalar>(
        &self,
        b: &Vector<B, T>,
        x: &Vector<B, T>,
        r: &mut Vector<B, T>,
        mut scaled: Option<crate::operator::ScaledCopy<'_, B, T>>,
    ) -> Result<()> {
        let op = Self::Kernels::SPMV_NAME;
        let mut vectors = vec![("b", b.len(), b.parts()), ("x", x.len(), x.parts())];
        vectors.push(("r", r.len(), r.parts()));
        if let Some((s, d)) = &scaled {
            vectors.extend([("s", s.len(), s.parts()), ("d", d.len(), d.parts())]);
            check_device(op, self.backend(), s.backend())?;
            check_device(op, self.backend(), d.backend())?;
        }
        check_smoothing(self, op, &vectors)?;
        check_operands(self, x, r, true)?;
        check_device(op, self.backend(), b.backend())?;
        if vectors.iter().all(|v| v.2 == 1) {
            // SAFETY: a square matrix and every buffer of its size on its device (checked
            // above), each vector in one buffer.
            let fused = unsafe {
                let buffers = match &mut scaled {
                    Some((s, d)) => Some((s.buffer()?, d.buffer_mut()?)),
                    None => None,
                };
                self.backend().residual::<Self::Kernels, V, T>(
                    self,
                    b.buffer()?,
                    x.buffer()?,
                    r.buffer_mut()?,
                    buffers,
                )?
            };
            if fused {
                return Ok(());
            }
        }
        residual_parts(self, b, x, r, scaled)
    }

    /// One step of a diagonally scaled polynomial smoother for a square matrix,
    /// `r −= A d; e = α s ∘ r + β d; x += e + γ d` with `[α, β, γ] = coefficients`: one pass
    /// where the format fuses it (as for `spmv_residual`), else the SpMV and the vector
    /// operations.
    ///
    /// # Errors
    /// As [`spmv_residual`](Self::spmv_residual).
    #[allow(clippy::too_many_arguments)]
    fn spmv_smoothing_step<T: Scalar>(
        &self,
        d: &Vector<B, T>,
        r: &mut Vector<B, T>,
        s: &Vector<B, T>,
        e: &mut Vector<B, T>,
        x: &mut Vector<B, T>,
        coefficients: [T; 3],
    ) -> Result<()> {
        let op = Self::Kernels::SPMV_NAME;
        let vectors = [
            ("d", d.len(), d.parts()),
            ("r", r.len(), r.parts()),
            ("s", s.len(), s.parts()),
            ("e", e.len(), e.parts()),
            ("x", x.len(), x.parts()),
        ];
        check_smoothing(self, op, &vectors)?;
        check_operands(self, d, r, true)?;
        for backend in [s.backend(), e.backend(), x.backend()] {
            check_device(op, self.backend(), backend)?;
        }
        if vectors.iter().all(|v| v.2 == 1) {
            // SAFETY: as for spmv_residual.
            let fused = unsafe {
                self.backend().smoothing_step::<Self::Kernels, V, T>(
                    self,
                    d.buffer()?,
                    r.buffer_mut()?,
                    s.buffer()?,
                    e.buffer_mut()?,
                    x.buffer_mut()?,
                    coefficients,
                )?
            };
            if fused {
                return Ok(());
            }
        }
        let [alpha, beta, gamma] = coefficients;
        self.spmv(-T::ONE, d, T::ONE, r)?;
        e.pointwise_mul(s, r)?;
        e.axpby(beta, d, alpha)?;
        x.axpy(T::ONE, e)?;
        if gamma != T::ZERO {
            x.axpy(gamma, d)?;
        }
        Ok(())
    }
}

/// The length checks of the fused smoothing passes: a square matrix, every vector of its
/// size.
fn check_smoothing<B: SparseOps, V: Element, M: SparseStorage<B, V>>(
    a: &M,
    op: &'static str,
    vectors: &[(&'static str, usize, usize)],
) -> Result<()> {
    check_len(
        op,
        "ncols (the matrix must be square)",
        a.nrows(),
        a.ncols(),
    )?;
    for &(name, len, _) in vectors {
        check_len(op, name, a.nrows(), len)?;
    }
    Ok(())
}

/// [`SparseStorage::spmv_residual`] by the SpMV and vector operations (checked).
fn residual_parts<B: SparseOps, V: Element, M: SparseStorage<B, V>, T: Scalar>(
    a: &M,
    b: &Vector<B, T>,
    x: &Vector<B, T>,
    r: &mut Vector<B, T>,
    scaled: Option<crate::operator::ScaledCopy<'_, B, T>>,
) -> Result<()> {
    r.copy_from(b)?;
    a.spmv(-T::ONE, x, T::ONE, r)?;
    if let Some((s, d)) = scaled {
        d.pointwise_mul(s, r)?;
    }
    Ok(())
}

/// The checks of every SpMV: `x` has `ncols`, `y` `nrows` entries, both on the matrix's
/// device; with `square`, the matrix is square.
fn check_operands<B: SparseOps, V: Element, M: SparseStorage<B, V>, T: Scalar>(
    a: &M,
    x: &Vector<B, T>,
    y: &Vector<B, T>,
    square: bool,
) -> Result<()> {
    let op = M::Kernels::SPMV_NAME;
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

/// What one line gives a sparse container: its sizes, device moves and SpMV as inherent
/// methods (forwarding to [`SparseStorage`], so a user needs no trait in scope, and no
/// method is ambiguous with [`LinearOperator`](crate::operator::LinearOperator)'s), and the
/// container as a `LinearOperator`: its SpMV, fused variants and cost.
macro_rules! sparse_operator {
    ($matrix:ident) => {
        impl<B: $crate::sparse::SparseOps, V: $crate::scalar::Element> $matrix<B, V> {
            /// Rows.
            pub fn nrows(&self) -> usize {
                $crate::sparse::SparseStorage::nrows(self)
            }

            /// Columns.
            pub fn ncols(&self) -> usize {
                $crate::sparse::SparseStorage::ncols(self)
            }

            /// Stored nonzeros (padding excluded).
            pub fn nnz(&self) -> usize {
                $crate::sparse::SparseStorage::nnz(self)
            }

            /// Bytes of the stored arrays, padding included.
            pub fn storage_bytes(&self) -> usize {
                $crate::sparse::SparseStorage::storage_bytes(self)
            }

            /// The backend the matrix lives on.
            pub fn backend(&self) -> &B {
                $crate::sparse::SparseStorage::backend(self)
            }

            /// A copy on another backend.
            ///
            /// # Errors
            /// [`Error::Unsupported`]($crate::error::Error::Unsupported) if that device
            /// lacks `V`; device and allocation errors.
            pub fn to_backend<B2: $crate::sparse::SparseOps>(
                &self,
                backend: &B2,
            ) -> $crate::error::Result<$matrix<B2, V>> {
                $crate::sparse::SparseStorage::to_backend(self, backend)
            }

            /// A copy in host memory.
            ///
            /// # Errors
            /// [`Error::Device`]($crate::error::Error::Device) if reading the device fails.
            pub fn to_host(&self) -> $crate::error::Result<$matrix<$crate::backend::Cpu, V>> {
                $crate::sparse::SparseStorage::to_host(self)
            }

            /// `y = alpha A x + beta y` (`y` not read when `beta = 0`).
            ///
            /// # Errors
            /// As [`SparseStorage::spmv`]($crate::sparse::SparseStorage::spmv).
            pub fn spmv<T: $crate::scalar::Scalar>(
                &self,
                alpha: T,
                x: &$crate::vector::Vector<B, T>,
                beta: T,
                y: &mut $crate::vector::Vector<B, T>,
            ) -> $crate::error::Result<()> {
                $crate::sparse::SparseStorage::spmv(self, alpha, x, beta, y)
            }
        }

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
            fn residual(
                &self,
                b: &$crate::vector::Vector<B, S>,
                x: &$crate::vector::Vector<B, S>,
                r: &mut $crate::vector::Vector<B, S>,
                scaled: Option<$crate::operator::ScaledCopy<'_, B, S>>,
            ) -> $crate::error::Result<()> {
                $crate::sparse::SparseStorage::spmv_residual(self, b, x, r, scaled)
            }
            fn smoothing_step(
                &self,
                d: &$crate::vector::Vector<B, S>,
                r: &mut $crate::vector::Vector<B, S>,
                s: &$crate::vector::Vector<B, S>,
                e: &mut $crate::vector::Vector<B, S>,
                x: &mut $crate::vector::Vector<B, S>,
                coefficients: [S; 3],
            ) -> $crate::error::Result<()> {
                $crate::sparse::SparseStorage::spmv_smoothing_step(
                    self,
                    d,
                    r,
                    s,
                    e,
                    x,
                    coefficients,
                )
            }
            fn cost(&self) -> $crate::operator::OperatorCost {
                $crate::sparse::storage::sparse_cost::<B, V, S, Self>(self)
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
