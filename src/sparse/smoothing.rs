//! The fused smoothing passes of the sparse formats: `r = b − A x` (with `d = s ∘ r`), and
//! one step of a diagonally scaled polynomial smoother, `r −= A d; e = α s ∘ r + β d;
//! x += e + γ d`, each one pass over the matrix where the format fuses them (CSR,
//! block-ELL's direct kernel and DIA on every backend, SELL-C-σ on devices), behind
//! [`LinearOperator::residual`](crate::operator::LinearOperator::residual) and
//! [`LinearOperator::smoothing_step`](crate::operator::LinearOperator::smoothing_step).
//! A format's kernel computes its row's product `(A v)ᵢ` as in its SpMV and ends the row
//! with [`smooth_row`] (devices) or [`smooth_rows_cpu`] (the CPU) instead of storing `yᵢ`;
//! `fused_smoothing_cpu!(row_product)` and `fused_smoothing_cube!(smooth_cube)` in its
//! `impl FormatKernels` write the four trait methods around those two functions.
//! Every row reads the gathered vector `v` (`x`, or `d`) and writes only its own entries of
//! the others, so one kernel computes the whole pass.

use cubecl::prelude::*;
use rayon::prelude::*;

use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::backend::BackendCore;
use crate::error::Result;
use crate::scalar::Scalar;

/// The coefficients `α, β, γ` of a smoothing step, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
pub(crate) struct SmoothCoefficients {
    pub(crate) alpha: InputScalar,
    pub(crate) beta: InputScalar,
    pub(crate) gamma: InputScalar,
}

/// Which pass a fused kernel computes.
#[derive_cube_comptime]
pub(crate) struct SmoothMode {
    /// The step (`v = d`; arrays `r, s, e, x`), else the residual (`v = x`; arrays
    /// `b, r, s, d`).
    pub(crate) step: bool,
    /// The residual also writes `d = s ∘ r` (else `s` and `d` are unused).
    pub(crate) scaled: bool,
}

/// The end of row `row` of a fused pass, `av = (A v)_row`: the residual
/// (`a0 = b`, `a1 = r`, `a2 = s`, `a3 = d`) or the step (`v = d`, `a0 = r`, `a1 = s`,
/// `a2 = e`, `a3 = x`).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn smooth_row<T: Float>(
    row: usize,
    av: T,
    v: &Array<T>,
    a0: &mut Array<T>,
    a1: &mut Array<T>,
    a2: &mut Array<T>,
    a3: &mut Array<T>,
    c: &SmoothCoefficients,
    #[comptime] mode: SmoothMode,
) {
    if mode.step {
        let r = a0[row] - av;
        a0[row] = r;
        let d = v[row];
        let e = c.beta.get::<T>() * d + c.alpha.get::<T>() * (a1[row] * r);
        a2[row] = e;
        let gamma = c.gamma.get::<T>();
        let mut xi = a3[row] + e;
        // γ = 0: `d` adds nothing, not even a NaN (as the composed path, and BLAS's β = 0).
        if gamma != T::new(0.0) {
            xi += gamma * d;
        }
        a3[row] = xi;
    } else {
        let r = a0[row] - av;
        a1[row] = r;
        if mode.scaled {
            a3[row] = a2[row] * r;
        }
    }
}

/// The launch arguments of a fused pass: the four arrays (in [`smooth_row`]'s order; small
/// distinct placeholders where the residual has no `s` and `d`), the coefficients and the
/// mode.
pub(crate) struct SmoothLaunch<R: CubeRuntime> {
    pub(crate) arrays: [ArrayArg<R>; 4],
    pub(crate) coefficients: SmoothCoefficientsLaunch<R>,
    pub(crate) mode: SmoothMode,
}

/// The operands of a fused pass on a device.
pub(crate) enum SmoothOperands<'b, T: Scalar> {
    /// `r = b − A x` (`v = x`), and `d = s ∘ r` with `scaled`.
    Residual {
        b: &'b CubeBuffer<T>,
        r: &'b mut CubeBuffer<T>,
        scaled: Option<(&'b CubeBuffer<T>, &'b mut CubeBuffer<T>)>,
    },
    /// `r −= A d; e = α s ∘ r + β d; x += e + γ d` (`v = d`).
    Step {
        r: &'b mut CubeBuffer<T>,
        s: &'b CubeBuffer<T>,
        e: &'b mut CubeBuffer<T>,
        x: &'b mut CubeBuffer<T>,
        coefficients: [T; 3],
    },
}

/// Builds the launch arguments of `operands` and runs `launch` with them.
///
/// # Errors
/// Allocation errors (the placeholders) and what `launch` returns.
///
/// # Safety
/// The arguments alias the buffers of `operands`; `launch` must index them as
/// [`smooth_row`] does, within the rows of the operator (every buffer has that many
/// entries, checked by the caller).
pub(crate) unsafe fn with_smooth_launch<R: CubeRuntime, T: Scalar>(
    backend: &Cube<R>,
    operands: SmoothOperands<'_, T>,
    launch: impl FnOnce(SmoothLaunch<R>) -> Result<()>,
) -> Result<()> {
    let scalar = crate::backend::cube::scalar::<T>;
    match operands {
        SmoothOperands::Residual { b, r, scaled } => {
            let coefficients =
                SmoothCoefficientsLaunch::new(scalar(T::ZERO), scalar(T::ZERO), scalar(T::ZERO));
            match scaled {
                Some((s, d)) => {
                    // SAFETY: the caller's contract.
                    let args = unsafe {
                        SmoothLaunch {
                            arrays: [b.arg(), r.arg(), s.arg(), d.arg()],
                            coefficients,
                            mode: SmoothMode {
                                step: false,
                                scaled: true,
                            },
                        }
                    };
                    launch(args)
                }
                None => {
                    let (p0, p1) = (backend.alloc_uninit::<T>(1)?, backend.alloc_uninit::<T>(1)?);
                    // SAFETY: the caller's contract; the placeholders are not indexed
                    // without `scaled`.
                    let args = unsafe {
                        SmoothLaunch {
                            arrays: [b.arg(), r.arg(), p0.arg(), p1.arg()],
                            coefficients,
                            mode: SmoothMode {
                                step: false,
                                scaled: false,
                            },
                        }
                    };
                    // The placeholders live until the launch is queued (cubecl keeps its
                    // own reference to their memory after).
                    let result = launch(args);
                    drop((p0, p1));
                    result
                }
            }
        }
        SmoothOperands::Step {
            r,
            s,
            e,
            x,
            coefficients: [alpha, beta, gamma],
        } => {
            // SAFETY: the caller's contract.
            let args = unsafe {
                SmoothLaunch {
                    arrays: [r.arg(), s.arg(), e.arg(), x.arg()],
                    coefficients: SmoothCoefficientsLaunch::new(
                        scalar(alpha),
                        scalar(beta),
                        scalar(gamma),
                    ),
                    mode: SmoothMode {
                        step: true,
                        scaled: false,
                    },
                }
            };
            launch(args)
        }
    }
}

/// The operands of a fused pass on the CPU (as [`SmoothOperands`]).
pub(crate) enum CpuSmooth<'b, T> {
    /// `r = b − A x`, and `d = s ∘ r` with `scaled`.
    Residual {
        b: &'b [T],
        r: &'b mut [T],
        scaled: Option<(&'b [T], &'b mut [T])>,
    },
    /// `r −= A d; e = α s ∘ r + β d; x += e + γ d`.
    Step {
        d: &'b [T],
        r: &'b mut [T],
        s: &'b [T],
        e: &'b mut [T],
        x: &'b mut [T],
        coefficients: [T; 3],
    },
}

/// A fused pass on the CPU: `av(i) = (A v)ᵢ` for the format's row `i`, then the row's end,
/// in rayon tasks of 2048 rows (as the formats' SpMV).
pub(crate) fn smooth_rows_cpu<T: Scalar>(
    operands: CpuSmooth<'_, T>,
    av: impl Fn(usize) -> T + Sync,
) {
    const ROWS: usize = 2048;
    match operands {
        CpuSmooth::Residual { b, r, scaled } => match scaled {
            Some((s, d)) => r
                .par_chunks_mut(ROWS)
                .zip(d.par_chunks_mut(ROWS))
                .enumerate()
                .for_each(|(c, (r, d))| {
                    for (k, (ri, di)) in r.iter_mut().zip(d).enumerate() {
                        let i = c * ROWS + k;
                        *ri = b[i] - av(i);
                        *di = s[i] * *ri;
                    }
                }),
            None => r.par_chunks_mut(ROWS).enumerate().for_each(|(c, r)| {
                for (k, ri) in r.iter_mut().enumerate() {
                    let i = c * ROWS + k;
                    *ri = b[i] - av(i);
                }
            }),
        },
        CpuSmooth::Step {
            d,
            r,
            s,
            e,
            x,
            coefficients: [alpha, beta, gamma],
        } => r
            .par_chunks_mut(ROWS)
            .zip(e.par_chunks_mut(ROWS))
            .zip(x.par_chunks_mut(ROWS))
            .enumerate()
            .for_each(|(c, ((r, e), x))| {
                for (k, ((ri, ei), xi)) in r.iter_mut().zip(e).zip(x).enumerate() {
                    let i = c * ROWS + k;
                    *ri -= av(i);
                    *ei = beta * d[i] + alpha * (s[i] * *ri);
                    *xi += *ei;
                    if gamma != T::ZERO {
                        *xi += gamma * d[i];
                    }
                }
            }),
    }
}

/// The CPU side of a format's fused passes, inside its `impl FormatKernels`:
/// `residual_cpu` and `smoothing_step_cpu` by [`smooth_rows_cpu`] over the format's
/// `$row(a, v, i)`, the product `(A v)ᵢ` of row `i`.
macro_rules! fused_smoothing_cpu {
    ($row:path) => {
        fn residual_cpu<V: $crate::scalar::Element, T: $crate::scalar::Scalar>(
            a: &Self::Matrix<$crate::backend::cpu::Cpu, V>,
            b: &[T],
            x: &[T],
            r: &mut [T],
            scaled: Option<(&[T], &mut [T])>,
        ) -> bool {
            let operands = $crate::sparse::smoothing::CpuSmooth::Residual { b, r, scaled };
            $crate::sparse::smoothing::smooth_rows_cpu(operands, |i| $row(a, x, i));
            true
        }

        fn smoothing_step_cpu<V: $crate::scalar::Element, T: $crate::scalar::Scalar>(
            a: &Self::Matrix<$crate::backend::cpu::Cpu, V>,
            d: &[T],
            r: &mut [T],
            s: &[T],
            e: &mut [T],
            x: &mut [T],
            coefficients: [T; 3],
        ) -> bool {
            let operands = $crate::sparse::smoothing::CpuSmooth::Step {
                d,
                r,
                s,
                e,
                x,
                coefficients,
            };
            $crate::sparse::smoothing::smooth_rows_cpu(operands, |i| $row(a, d, i));
            true
        }
    };
}
pub(crate) use fused_smoothing_cpu;

/// The device side of a format's fused passes, inside its `impl FormatKernels`:
/// `residual_cube` and `smoothing_step_cube` by the format's
/// `unsafe fn $smooth(backend, a, v, operands) -> Result<bool>`, which launches its kernel
/// with the gathered vector `v` (or returns `false`, launching nothing, where the matrix's
/// kernel choice has no fused pass).
macro_rules! fused_smoothing_cube {
    ($smooth:path) => {
        unsafe fn residual_cube<
            R: $crate::backend::cube::CubeRuntime,
            V: $crate::scalar::Element,
            T: $crate::scalar::Scalar,
        >(
            b: &$crate::backend::cube::Cube<R>,
            a: &Self::Matrix<$crate::backend::cube::Cube<R>, V>,
            rhs: &$crate::backend::cube::CubeBuffer<T>,
            x: &$crate::backend::cube::CubeBuffer<T>,
            r: &mut $crate::backend::cube::CubeBuffer<T>,
            scaled: Option<(
                &$crate::backend::cube::CubeBuffer<T>,
                &mut $crate::backend::cube::CubeBuffer<T>,
            )>,
        ) -> $crate::error::Result<bool> {
            let operands =
                $crate::sparse::smoothing::SmoothOperands::Residual { b: rhs, r, scaled };
            // SAFETY: the caller's contract (a square matrix, every buffer of its size).
            unsafe { $smooth(b, a, x, operands) }
        }

        unsafe fn smoothing_step_cube<
            R: $crate::backend::cube::CubeRuntime,
            V: $crate::scalar::Element,
            T: $crate::scalar::Scalar,
        >(
            b: &$crate::backend::cube::Cube<R>,
            a: &Self::Matrix<$crate::backend::cube::Cube<R>, V>,
            d: &$crate::backend::cube::CubeBuffer<T>,
            r: &mut $crate::backend::cube::CubeBuffer<T>,
            s: &$crate::backend::cube::CubeBuffer<T>,
            e: &mut $crate::backend::cube::CubeBuffer<T>,
            x: &mut $crate::backend::cube::CubeBuffer<T>,
            coefficients: [T; 3],
        ) -> $crate::error::Result<bool> {
            let operands = $crate::sparse::smoothing::SmoothOperands::Step {
                r,
                s,
                e,
                x,
                coefficients,
            };
            // SAFETY: the caller's contract.
            unsafe { $smooth(b, a, d, operands) }
        }
    };
}
pub(crate) use fused_smoothing_cube;
