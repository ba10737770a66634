//! Element-wise vector kernels: one grid-stride pass, `len` valid elements in a buffer
//! padded to whole vectors (the padding lanes written as zeros).

use cubecl::prelude::*;

use crate::backend::cube::{line_size, padded_len, scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::vector::cube::mask_tail;

#[cube(launch_unchecked)]
fn fill_kernel<F: Float, N: Size>(value: InputScalar, x: &mut Array<Vector<F, N>>, len: usize) {
    let v = Vector::<F, N>::new(value.get::<F>());
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        x[i] = mask_tail::<F, N>(v, i, len);
        i += stride;
    }
}

/// `y = x` over `y`'s vectors (`x` at least as long).
#[cube(launch_unchecked)]
fn copy_kernel<F: Float, N: Size>(x: &Array<Vector<F, N>>, y: &mut Array<Vector<F, N>>) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < y.len() {
        y[i] = x[i];
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn convert_kernel<S: Float, D: Float, N: Size>(
    x: &Array<Vector<S, N>>,
    y: &mut Array<Vector<D, N>>,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < y.len() {
        y[i] = Vector::<D, N>::cast_from(x[i]);
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn scale_kernel<F: Float, N: Size>(alpha: InputScalar, x: &mut Array<Vector<F, N>>, len: usize) {
    let a = Vector::<F, N>::new(alpha.get::<F>());
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < x.len() {
        x[i] = mask_tail::<F, N>(a * x[i], i, len);
        i += stride;
    }
}

/// `y = α x + β y`, or `y = α x + y` without `with_beta` (one multiplication less).
#[cube(launch_unchecked)]
fn axpby_kernel<F: Float, N: Size>(
    alpha: InputScalar,
    x: &Array<Vector<F, N>>,
    beta: InputScalar,
    y: &mut Array<Vector<F, N>>,
    len: usize,
    #[comptime] with_beta: bool,
) {
    let a = Vector::<F, N>::new(alpha.get::<F>());
    let b = Vector::<F, N>::new(beta.get::<F>());
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < y.len() {
        let v = if with_beta {
            a * x[i] + b * y[i]
        } else {
            a * x[i] + y[i]
        };
        y[i] = mask_tail::<F, N>(v, i, len);
        i += stride;
    }
}

/// The element-wise product or quotient of [`pointwise`].
#[derive_cube_comptime]
pub(crate) enum Pointwise {
    /// `z = x ∘ y`.
    Multiply,
    /// `z = x / y`.
    Divide,
}

#[cube(launch_unchecked)]
fn pointwise_kernel<F: Float, N: Size>(
    x: &Array<Vector<F, N>>,
    y: &Array<Vector<F, N>>,
    z: &mut Array<Vector<F, N>>,
    len: usize,
    #[comptime] op: Pointwise,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < z.len() {
        let v = match op {
            Pointwise::Multiply => x[i] * y[i],
            Pointwise::Divide => x[i] / y[i],
        };
        z[i] = mask_tail::<F, N>(v, i, len);
        i += stride;
    }
}

/// `y[i] = x[index[i]]` for `i < len` (out-of-range indices skipped).
#[cube(launch_unchecked)]
fn gather_kernel<F: Float>(
    x: &Array<F>,
    index: &Array<u32>,
    y: &mut Array<F>,
    len: usize,
    xlen: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < len {
        let j = index[i] as usize;
        if j < xlen {
            y[i] = x[j];
        }
        i += stride;
    }
}

/// `y[index[i]] = x[i]` for `i < len` (out-of-range indices skipped).
#[cube(launch_unchecked)]
fn scatter_kernel<F: Float>(
    x: &Array<F>,
    index: &Array<u32>,
    y: &mut Array<F>,
    len: usize,
    ylen: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < len {
        let j = index[i] as usize;
        if j < ylen {
            y[j] = x[i];
        }
        i += stride;
    }
}

/// The grid of an element-wise pass over a buffer of `padded` elements in vectors of `line`.
fn shape<R: CubeRuntime>(b: &Cube<R>, padded: usize, line: usize) -> (CubeCount, CubeDim) {
    b.config().grid(padded / line)
}

pub(crate) fn fill<R: CubeRuntime, T: Element>(
    b: &Cube<R>,
    value: T,
    x: &mut CubeBuffer<T>,
) -> Result<()> {
    let line = line_size::<T>();
    let (count, dim) = shape(b, x.padded_len(), line);
    b.launch::<T>(line, || {
        // SAFETY: the grid-stride loop stays within x's padded length, which it owns.
        unsafe {
            fill_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                scalar(value),
                x.arg(),
                x.len,
            )
        }
    })
}

/// `y = x`.
///
/// # Safety
/// `x` and `y` have the same length.
pub(crate) unsafe fn copy<R: CubeRuntime, T: Element>(
    b: &Cube<R>,
    x: &CubeBuffer<T>,
    y: &mut CubeBuffer<T>,
) -> Result<()> {
    let line = line_size::<T>();
    let (count, dim) = shape(b, y.padded_len(), line);
    b.launch::<T>(line, || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths: the loop
        // over y's vectors stays within x's.
        unsafe {
            copy_kernel::launch_unchecked::<T, R>(b.client(), count, dim, line, x.arg(), y.arg())
        }
    })
}

/// `y = x` rounded to `D`.
///
/// # Safety
/// `x` and `y` have the same length.
pub(crate) unsafe fn convert<R: CubeRuntime, S: Element, D: Element>(
    b: &Cube<R>,
    x: &CubeBuffer<S>,
    y: &mut CubeBuffer<D>,
) -> Result<()> {
    let line = line_size::<S>().min(line_size::<D>());
    let (count, dim) = shape(b, y.padded_len(), line);
    b.launch::<(S, D)>(line, || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths; padding
        // zeros convert to zeros.
        unsafe {
            convert_kernel::launch_unchecked::<S, D, R>(
                b.client(),
                count,
                dim,
                line,
                x.arg(),
                y.arg(),
            )
        }
    })
}

pub(crate) fn scale<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    alpha: T,
    x: &mut CubeBuffer<T>,
) -> Result<()> {
    let line = line_size::<T>();
    let (count, dim) = shape(b, x.padded_len(), line);
    b.launch::<T>(line, || {
        // SAFETY: the grid-stride loop stays within x's padded length, which it owns.
        unsafe {
            scale_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                scalar(alpha),
                x.arg(),
                x.len,
            )
        }
    })
}

/// `y = α x + β y` (`β = None`: `y = α x + y`).
///
/// # Safety
/// `x` and `y` have the same length.
pub(crate) unsafe fn axpby<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    alpha: T,
    x: &CubeBuffer<T>,
    beta: Option<T>,
    y: &mut CubeBuffer<T>,
) -> Result<()> {
    let line = line_size::<T>();
    let (count, dim) = shape(b, y.padded_len(), line);
    let with_beta = beta.is_some();
    b.launch::<T>((line, with_beta), || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths.
        unsafe {
            axpby_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                scalar(alpha),
                x.arg(),
                scalar(beta.unwrap_or(T::ONE)),
                y.arg(),
                y.len,
                with_beta,
            )
        }
    })
}

/// `z = x ∘ y` or `z = x / y`.
///
/// # Safety
/// `x`, `y` and `z` have the same length.
pub(crate) unsafe fn pointwise<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    x: &CubeBuffer<T>,
    y: &CubeBuffer<T>,
    z: &mut CubeBuffer<T>,
    op: Pointwise,
) -> Result<()> {
    let line = line_size::<T>();
    let (count, dim) = shape(b, z.padded_len(), line);
    b.launch::<T>((line, op), || {
        // SAFETY: equal lengths (the caller's contract), so equal padded lengths.
        unsafe {
            pointwise_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                line,
                x.arg(),
                y.arg(),
                z.arg(),
                z.len,
                op,
            )
        }
    })
}

pub(crate) fn gather<R: CubeRuntime, T: Element>(
    b: &Cube<R>,
    x: &CubeBuffer<T>,
    index: &CubeBuffer<u32>,
    y: &mut CubeBuffer<T>,
) -> Result<()> {
    let len = y.len.min(index.len);
    let (count, dim) = shape(b, padded_len(len), 1);
    b.launch::<T>((), || {
        // SAFETY: i < min(len(y), len(index)); x is read only below its length (checked
        // in the kernel), so any index content is safe.
        unsafe {
            gather_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                x.arg(),
                index.arg(),
                y.arg(),
                len,
                x.len,
            )
        }
    })
}

pub(crate) fn scatter<R: CubeRuntime, T: Element>(
    b: &Cube<R>,
    x: &CubeBuffer<T>,
    index: &CubeBuffer<u32>,
    y: &mut CubeBuffer<T>,
) -> Result<()> {
    let len = x.len.min(index.len);
    let (count, dim) = shape(b, padded_len(len), 1);
    b.launch::<T>((), || {
        // SAFETY: i < min(len(x), len(index)); y is written only below its length (checked
        // in the kernel), so any index content is safe.
        unsafe {
            scatter_kernel::launch_unchecked::<T, R>(
                b.client(),
                count,
                dim,
                x.arg(),
                index.arg(),
                y.arg(),
                len,
                y.len,
            )
        }
    })
}
