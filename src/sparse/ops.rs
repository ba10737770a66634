//! The sparse operator family: [`FormatKernels`], what each format implements on a marker
//! type (its container type, names, the arrays a device move carries, CPU kernel and CubeCL
//! launch; its conversion from CSR is [`FormatConversion`](super::convert::FormatConversion)); [`SparseOps`], one generic SpMV entry per
//! operation that every backend implements once by dispatching to the format's kernels (a
//! new format touches no backend; a new backend implements one trait with three methods);
//! and the pieces the formats' kernels share (the scaling arguments, the branch-free padded
//! slot, the CPU row loop). The container side is [`storage`](super::storage).

use cubecl::prelude::*;
use rayon::prelude::*;

use crate::backend::core::{sealed::Sealed, BackendCore};
use crate::backend::cpu::Cpu;
pub(crate) use crate::backend::cube::{AlphaBeta, AlphaBetaLaunch};
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar, Storable};
use crate::vector::cube::reduce::{finish, finish_sum, Finish};
use crate::vector::VectorOps;

/// Seals the format traits: only this crate's formats implement them.
pub(crate) mod sealed {
    /// Implemented by the containers and kernel markers of this crate's formats.
    pub trait Format {}
}

/// Moves the arrays of a container from one backend to another, for
/// [`FormatKernels::move_to`], and changes the precision of its values on the way: index
/// arrays by [`buffer`](Self::buffer), values by [`values`](Self::values). Between two
/// handles of one device nothing goes through the host (a copy, or a rounding kernel, on
/// the device); otherwise every array goes through the host.
pub struct Mover<'a, B: BackendCore, B2: BackendCore> {
    from: &'a B,
    to: &'a B2,
}

impl<'a, B: BackendCore, B2: BackendCore> Mover<'a, B, B2> {
    /// A move from `from` to `to`.
    pub(crate) fn new(from: &'a B, to: &'a B2) -> Self {
        Mover { from, to }
    }

    /// `buffer` as one of the target backend's, where both handles are of one device.
    fn on_target<'b, T: Storable>(&self, buffer: &'b B::Buffer<T>) -> Option<&'b B2::Buffer<T>> {
        let from = (self.from as &dyn std::any::Any).downcast_ref::<B2>()?;
        if !from.same_device(self.to) {
            return None;
        }
        (buffer as &dyn std::any::Any).downcast_ref::<B2::Buffer<T>>()
    }

    /// `buffer`'s values on the target backend.
    ///
    /// # Errors
    /// Device and allocation errors.
    pub fn buffer<T: Storable>(&self, buffer: &B::Buffer<T>) -> Result<B2::Buffer<T>> {
        if let Some(same) = self.on_target(buffer) {
            return self.to.duplicate(same);
        }
        match self.from.host_slice(buffer) {
            // From the host: no intermediate copy.
            Some(values) => self.to.upload(values),
            None => self.to.upload(&self.from.download(buffer)?),
        }
    }

    /// `buffer`'s values on the host (for a move that reorders them).
    ///
    /// # Errors
    /// Device errors.
    pub fn download<T: Storable>(&self, buffer: &B::Buffer<T>) -> Result<Vec<T>> {
        self.from.download(buffer)
    }

    /// `buffer`'s values on the host, rounded to `W` (for a move that reorders them).
    ///
    /// # Errors
    /// Device errors.
    pub fn download_values<V: Element, W: Element>(&self, buffer: &B::Buffer<V>) -> Result<Vec<W>> {
        let values = self.from.download(buffer)?;
        Ok(round_values(values))
    }

    /// `values` on the target backend.
    ///
    /// # Errors
    /// Allocation errors.
    pub fn upload<T: Storable>(&self, values: &[T]) -> Result<B2::Buffer<T>> {
        self.to.upload(values)
    }

    /// The target backend.
    pub fn backend(&self) -> B2 {
        self.to.clone()
    }
}

impl<B: BackendCore, B2: VectorOps> Mover<'_, B, B2> {
    /// `buffer`'s values on the target backend, rounded to `W` (once, to nearest even; as
    /// [`buffer`](Self::buffer) when `W` is `V`): on the device when both handles are of
    /// one device, else on the host.
    ///
    /// # Errors
    /// Device and allocation errors.
    pub fn values<V: Element, W: Element>(&self, buffer: &B::Buffer<V>) -> Result<B2::Buffer<W>> {
        if std::any::TypeId::of::<V>() == std::any::TypeId::of::<W>() {
            let moved: Box<dyn std::any::Any> = Box::new(self.buffer(buffer)?);
            return Ok(*moved
                .downcast::<B2::Buffer<W>>()
                .expect("V and W are one type"));
        }
        if let Some(same) = self.on_target(buffer) {
            let mut rounded = self.to.alloc_uninit::<W>(B2::len(same))?;
            // SAFETY: both buffers hold `len(same)` values, on the target's device.
            unsafe { self.to.convert(same, &mut rounded)? };
            return Ok(rounded);
        }
        let rounded: Vec<W> = match self.from.host_slice(buffer) {
            Some(values) => values.iter().map(|&v| W::from_f64(v.as_f64())).collect(),
            None => round_values(self.from.download(buffer)?),
        };
        self.to.upload(&rounded)
    }
}

/// `values` rounded to `W` (through f64, which holds every element exactly: one rounding).
fn round_values<V: Element, W: Element>(values: Vec<V>) -> Vec<W> {
    values
        .into_iter()
        .map(|v| W::from_f64(v.as_f64()))
        .collect()
}

/// The kernels of one sparse format, on the CPU and on CubeCL devices.
///
/// Implementations may assume what [`SparseStorage`](crate::sparse::SparseStorage)'s methods check before calling them:
/// `x` has `ncols` and `y` `nrows` entries (and, for the fused variants, the matrix is
/// square and `slot` is in range); the matrix satisfies its format's invariants (validated
/// when it was built on the host and unchanged since); all buffers live on one device.
pub trait FormatKernels: sealed::Format + 'static {
    /// The container, on backend `B` with values `V`.
    type Matrix<B: BackendCore, V: Element>;

    /// The name [`Format`](crate::sparse::Format) prints and parses (`"ell"`).
    const NAME: &'static str;

    /// Other names the parser accepts (`"block-ell"`, `"dbf"`, ...).
    const ALIASES: &'static [&'static str] = &[];

    /// What the format is, for tables and check names (`"sell-c-sigma"`).
    const LABEL: &'static str;

    /// The name of the format's SpMV, for error messages (`"Ell::spmv"`).
    const SPMV_NAME: &'static str;

    /// Whether the format holds only matrices whose nonzeros lie on a few diagonals (its
    /// tests and checks then use banded matrices).
    const FEW_DIAGONALS: bool = false;

    /// The matrix on the backend `mover` moves to, its values rounded to `W`: every index
    /// array of the container moved by [`Mover::buffer`], the values by [`Mover::values`]
    /// (or by their download and upload where the move reorders them).
    ///
    /// # Errors
    /// Device and allocation errors.
    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &Self::Matrix<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<Self::Matrix<B2, W>>;

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

    /// The fused residual on the CPU, `r = b − A x` (and `d = s ∘ r` with `scaled`), for
    /// [`LinearOperator::residual`](crate::operator::LinearOperator::residual); `false`,
    /// computing nothing, where the format does not fuse it (the default: the caller then
    /// takes the SpMV and vector operations).
    fn residual_cpu<V: Element, T: Scalar>(
        a: &Self::Matrix<Cpu, V>,
        b: &[T],
        x: &[T],
        r: &mut [T],
        scaled: Option<(&[T], &mut [T])>,
    ) -> bool {
        let _ = (a, b, x, r, scaled);
        false
    }

    /// The fused smoothing step on the CPU, `r −= A d; e = α s ∘ r + β d; x += e + γ d`
    /// (`[α, β, γ] = coefficients`), for
    /// [`LinearOperator::smoothing_step`](crate::operator::LinearOperator::smoothing_step);
    /// `false`, computing nothing, where the format does not fuse it (the default).
    #[allow(clippy::too_many_arguments)]
    fn smoothing_step_cpu<V: Element, T: Scalar>(
        a: &Self::Matrix<Cpu, V>,
        d: &[T],
        r: &mut [T],
        s: &[T],
        e: &mut [T],
        x: &mut [T],
        coefficients: [T; 3],
    ) -> bool {
        let _ = (a, d, r, s, e, x, coefficients);
        false
    }

    /// [`residual_cpu`](Self::residual_cpu) on a CubeCL device: `Ok(false)`, computing
    /// nothing, where the format does not fuse it (the default).
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// As [`spmv_cube`](Self::spmv_cube), the matrix square and every buffer of its size.
    unsafe fn residual_cube<R: CubeRuntime, V: Element, T: Scalar>(
        backend: &Cube<R>,
        a: &Self::Matrix<Cube<R>, V>,
        b: &CubeBuffer<T>,
        x: &CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
        scaled: Option<(&CubeBuffer<T>, &mut CubeBuffer<T>)>,
    ) -> Result<bool> {
        let _ = (backend, a, b, x, r, scaled);
        Ok(false)
    }

    /// [`smoothing_step_cpu`](Self::smoothing_step_cpu) on a CubeCL device: `Ok(false)`,
    /// computing nothing, where the format does not fuse it (the default).
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// As [`residual_cube`](Self::residual_cube).
    #[allow(clippy::too_many_arguments)]
    unsafe fn smoothing_step_cube<R: CubeRuntime, V: Element, T: Scalar>(
        backend: &Cube<R>,
        a: &Self::Matrix<Cube<R>, V>,
        d: &CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
        s: &CubeBuffer<T>,
        e: &mut CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
        coefficients: [T; 3],
    ) -> Result<bool> {
        let _ = (backend, a, d, r, s, e, x, coefficients);
        Ok(false)
    }
}

/// The sparse operator family: SpMV of any format. Implemented by every backend; sealed.
/// Call it through the containers' [`SparseStorage`](crate::sparse::SparseStorage) methods, which check first.
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

    /// The fused residual `r = b − A x` (and `d = s ∘ r`): `Ok(false)`, computing nothing,
    /// where the format does not fuse it.
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// See [`FormatKernels`]; the matrix is square and every buffer has its size.
    #[allow(clippy::type_complexity)]
    unsafe fn residual<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        b: &Self::Buffer<T>,
        x: &Self::Buffer<T>,
        r: &mut Self::Buffer<T>,
        scaled: Option<(&Self::Buffer<T>, &mut Self::Buffer<T>)>,
    ) -> Result<bool>;

    /// The fused smoothing step `r −= A d; e = α s ∘ r + β d; x += e + γ d`: `Ok(false)`,
    /// computing nothing, where the format does not fuse it.
    ///
    /// # Errors
    /// Device and kernel-compilation errors.
    ///
    /// # Safety
    /// As [`residual`](Self::residual).
    #[allow(clippy::too_many_arguments)]
    unsafe fn smoothing_step<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        d: &Self::Buffer<T>,
        r: &mut Self::Buffer<T>,
        s: &Self::Buffer<T>,
        e: &mut Self::Buffer<T>,
        x: &mut Self::Buffer<T>,
        coefficients: [T; 3],
    ) -> Result<bool>;
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

    #[allow(clippy::type_complexity)]
    unsafe fn residual<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Cpu, V>,
        b: &Vec<T>,
        x: &Vec<T>,
        r: &mut Vec<T>,
        scaled: Option<(&Vec<T>, &mut Vec<T>)>,
    ) -> Result<bool> {
        let scaled = scaled.map(|(s, d)| (s.as_slice(), d.as_mut_slice()));
        Ok(F::residual_cpu(a, b, x, r, scaled))
    }

    unsafe fn smoothing_step<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Cpu, V>,
        d: &Vec<T>,
        r: &mut Vec<T>,
        s: &Vec<T>,
        e: &mut Vec<T>,
        x: &mut Vec<T>,
        coefficients: [T; 3],
    ) -> Result<bool> {
        Ok(F::smoothing_step_cpu(a, d, r, s, e, x, coefficients))
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

    #[allow(clippy::type_complexity)]
    unsafe fn residual<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        b: &CubeBuffer<T>,
        x: &CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
        scaled: Option<(&CubeBuffer<T>, &mut CubeBuffer<T>)>,
    ) -> Result<bool> {
        // SAFETY: the caller's contract is the kernels'.
        unsafe { F::residual_cube(self, a, b, x, r, scaled) }
    }

    unsafe fn smoothing_step<F: FormatKernels, V: Element, T: Scalar>(
        &self,
        a: &F::Matrix<Self, V>,
        d: &CubeBuffer<T>,
        r: &mut CubeBuffer<T>,
        s: &CubeBuffer<T>,
        e: &mut CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
        coefficients: [T; 3],
    ) -> Result<bool> {
        // SAFETY: the caller's contract is the kernels'.
        unsafe { F::smoothing_step_cube(self, a, d, r, s, e, x, coefficients) }
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
