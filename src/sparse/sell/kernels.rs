//! SELL-C-σ SpMV kernels: the rayon reference, the CubeCL SpMV and the fused SpMV + dot,
//! behind [`SellFormat`].

use cubecl::prelude::*;
use rayon::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::sparse::convert::FormatConversion;
use crate::sparse::csr::Csr;
use crate::sparse::ops::{
    add_slot, axpby_row, sealed, AlphaBeta, AlphaBetaLaunch, FormatKernels, Mover, Scaling,
    SparseOps,
};
use crate::sparse::options::FormatOptions;
use crate::sparse::sell::{Sell, SellParams};
use crate::sparse::smoothing::{
    fused_smoothing_cube, smooth_row, with_smooth_launch, SmoothCoefficients, SmoothMode,
    SmoothOperands,
};
use crate::sparse::PAD;
use crate::vector::cube::reduce::{cube_sum_to, partials};
use crate::vector::VectorOps;

/// The SELL arrays, as one kernel argument; `row_perm` is bound (to `slice_ptr`) even when
/// there is no permutation, and read only with [`SellConfig::permuted`].
#[derive(CubeType, CubeLaunch)]
struct SellArrays<V: Float> {
    slice_ptr: Array<u32>,
    col_idx: Array<u32>,
    values: Array<V>,
    row_perm: Array<u32>,
    nrows: usize,
}

/// Comptime parameters of the SELL kernels.
#[derive_cube_comptime]
struct SellConfig {
    /// C.
    slice_height: usize,
    /// σ > 1: rows were sorted, `y` is written through `row_perm`.
    permuted: bool,
    /// `β = 0`: `y` is not read.
    beta_zero: bool,
    /// Units per cube (the fused kernel's reduction).
    cube_dim: usize,
}

/// `Σ_k A[p, k] x[col]` for sorted row `p`: a known trip count (the slice width) and
/// unconditional loads of index, value and x ([`add_slot`]: `x[0]` for padding, the term
/// dropped) let the compiler pipeline the loop. Against the x read in a branch (H100,
/// 2026-11-26): with f32 values, Poisson 7-point 10% (CUDA) and 15% (wgpu) faster, 27-point
/// 14% on wgpu, FVM dual about 4% on CUDA; f64 and the FVM matrices on wgpu within the
/// spread (±10% there).
#[cube]
fn sell_row<V: Float, T: Float>(
    a: &SellArrays<V>,
    x: &Array<T>,
    p: usize,
    #[comptime] slice_height: usize,
) -> T {
    let s = p / slice_height;
    let begin = a.slice_ptr[s] as usize;
    let end = a.slice_ptr[s + 1] as usize;
    let width = (end - begin) / slice_height;
    let mut idx = begin + p % slice_height;
    let mut acc = T::new(0.0);
    for _k in 0..width {
        let c = a.col_idx[idx];
        let v = a.values[idx];
        acc = add_slot::<V, T>(acc, c, v, x);
        idx += slice_height;
    }
    acc
}

/// One unit per sorted row `p`; slice `p / C`, lane `p % C`. Bytes per stored slot:
/// value + index; per slice: two offsets; per row: y (and the permutation entry).
#[cube(launch_unchecked)]
fn sell_kernel<V: Float, T: Float>(
    a: &SellArrays<V>,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    #[comptime] cfg: SellConfig,
) {
    let alpha = scaling.alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut p = ABSOLUTE_POS;
    while p < a.nrows {
        let acc = sell_row::<V, T>(a, x, p, cfg.slice_height);
        let mut row = p;
        if cfg.permuted {
            row = a.row_perm[p] as usize;
        }
        if cfg.beta_zero {
            y[row] = alpha * acc;
        } else {
            y[row] = alpha * acc + scaling.beta.get::<T>() * y[row];
        }
        p += stride;
    }
}

/// A fused smoothing pass ([`smoothing`](crate::sparse::smoothing)): the row product of
/// [`sell_row`] for sorted row `p`, then the end of its original row by [`smooth_row`].
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sell_smooth_kernel<V: Float, T: Float>(
    a: &SellArrays<V>,
    v: &Array<T>,
    a0: &mut Array<T>,
    a1: &mut Array<T>,
    a2: &mut Array<T>,
    a3: &mut Array<T>,
    c: &SmoothCoefficients,
    #[comptime] cfg: SellConfig,
    #[comptime] mode: SmoothMode,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut p = ABSOLUTE_POS;
    while p < a.nrows {
        let acc = sell_row::<V, T>(a, v, p, cfg.slice_height);
        let mut row = p;
        if cfg.permuted {
            row = a.row_perm[p] as usize;
        }
        smooth_row::<T>(row, acc, v, a0, a1, a2, a3, c, mode);
        p += stride;
    }
}

/// A fused smoothing pass on a device, the gathered vector `v`.
///
/// # Safety
/// A square matrix; `v` and every buffer of `operands` of its size.
unsafe fn smooth_cube<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Sell<Cube<R>, V>,
    v: &CubeBuffer<T>,
    operands: SmoothOperands<'_, T>,
) -> Result<bool> {
    if a.nrows == 0 {
        return Ok(true);
    }
    let (count, dim) = b.config().grid(a.nrows);
    let cfg = SellConfig {
        slice_height: a.params.slice_height as usize,
        permuted: a.row_perm.is_some(),
        beta_zero: false,
        cube_dim: dim.x as usize,
    };
    // SAFETY: the caller's contract and the SELL invariants (as for the SpMV); row_perm is
    // a permutation, so every original row is ended by one unit.
    let launched = unsafe {
        with_smooth_launch(b, operands, |args| {
            let [a0, a1, a2, a3] = args.arrays;
            let mode = args.mode;
            b.launch::<(V, T)>((cfg, mode), || {
                sell_smooth_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    arrays(a),
                    v.arg(),
                    a0,
                    a1,
                    a2,
                    a3,
                    args.coefficients,
                    cfg,
                    mode,
                )
            })
        })
    };
    launched.map(|()| true)
}

/// `y = A x` and partial sums of `x · y`, one per cube (square matrices): the SpMV and the
/// following inner product of CG in one pass, saving a read of `x` and `y`.
#[cube(launch_unchecked)]
fn sell_dot_kernel<V: Float, T: Float>(
    a: &SellArrays<V>,
    x: &Array<T>,
    y: &mut Array<T>,
    partials: &mut Array<T>,
    #[comptime] cfg: SellConfig,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut p = ABSOLUTE_POS;
    let mut dot = T::new(0.0);
    while p < a.nrows {
        let acc = sell_row::<V, T>(a, x, p, cfg.slice_height);
        let mut row = p;
        if cfg.permuted {
            row = a.row_perm[p] as usize;
        }
        y[row] = acc;
        dot += x[row] * acc;
        p += stride;
    }
    cube_sum_to::<T>(dot, partials, cfg.cube_dim);
}

/// The launch argument of the SELL arrays.
///
/// # Safety
/// The kernel must index them within the SELL invariants.
unsafe fn arrays<R: CubeRuntime, V: Element>(a: &Sell<Cube<R>, V>) -> SellArraysLaunch<V, R> {
    let perm = a.row_perm.as_ref().unwrap_or(&a.slice_ptr);
    // SAFETY: the caller's contract.
    unsafe {
        SellArraysLaunch::new(
            a.slice_ptr.arg(),
            a.col_idx.arg(),
            a.values.arg(),
            perm.arg(),
            a.nrows,
        )
    }
}

/// Launches [`sell_dot_kernel`] and returns the per-cube partials of `x · y`.
///
/// # Safety
/// As [`FormatKernels::spmv_dot_cube`].
unsafe fn spmv_dot_partials<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Sell<Cube<R>, V>,
    x: &CubeBuffer<T>,
    y: &mut CubeBuffer<T>,
) -> Result<CubeBuffer<T>> {
    // At most `reduce_cubes` cubes (8192): measured on an H200, the full element-wise grid
    // (65535 cubes) made the one-cube finishing pass over the partials cost more than the
    // extra parallelism saved (CG on Poisson 256³: 1.03 ms per iteration against 0.88 ms).
    let (cubes, count, dim) = b.config().reduce(a.nrows);
    let out = partials::<R, T>(b, cubes);
    let cfg = SellConfig {
        slice_height: a.params.slice_height as usize,
        permuted: a.row_perm.is_some(),
        beta_zero: true,
        cube_dim: dim.x as usize,
    };
    b.launch::<(V, T)>(cfg, || {
        // SAFETY: SELL invariants (built on the host): slice_ptr has nslices + 1 offsets
        // into col_idx/values, columns are < ncols or PAD (read as x[0], inside every buffer
        // of at least 4 elements), row_perm is a permutation of 0..nrows; the matrix is
        // square and x, y have nrows entries (checked by SparseStorage::spmv_dot); `out`
        // holds one slot per cube.
        unsafe {
            sell_dot_kernel::launch_unchecked::<V, T, R>(
                b.client(),
                count,
                dim,
                arrays(a),
                x.arg(),
                y.arg(),
                out.arg(),
                cfg,
            )
        }
    })?;
    Ok(out)
}

/// The SELL-C-σ kernels.
pub struct SellFormat;

impl sealed::Format for SellFormat {}

impl FormatKernels for SellFormat {
    type Matrix<B: BackendCore, V: Element> = Sell<B, V>;
    const NAME: &'static str = "sell";
    const ALIASES: &'static [&'static str] = &["sell-c-sigma"];
    const LABEL: &'static str = "sell-c-sigma";
    const SPMV_NAME: &'static str = "Sell::spmv";

    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &Sell<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<Sell<B2, W>> {
        let row_perm = match &a.row_perm {
            Some(p) => Some(mover.buffer(p)?),
            None => None,
        };
        Ok(Sell {
            nrows: a.nrows,
            ncols: a.ncols,
            params: a.params,
            slice_ptr: mover.buffer(&a.slice_ptr)?,
            col_idx: mover.buffer(&a.col_idx)?,
            values: mover.values(&a.values)?,
            row_perm,
            stored: a.stored,
            stats: a.stats,
            backend: mover.backend(),
        })
    }

    /// Slices in parallel; without sorting (σ = 1) each task writes its own slice of `y`,
    /// with sorting the products are scattered through the permutation.
    fn spmv_cpu<V: Element, T: Scalar>(a: &Sell<Cpu, V>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
        let (n, c) = (a.nrows, a.params.slice_height as usize);
        let row_sum = |p: usize| {
            let s = p / c;
            let width = (a.slice_ptr[s + 1] - a.slice_ptr[s]) as usize / c;
            let mut acc = T::ZERO;
            for k in 0..width {
                let idx = a.slice_ptr[s] as usize + k * c + p % c;
                let col = a.col_idx[idx];
                if col == PAD {
                    break;
                }
                acc += T::from_f64(a.values[idx].as_f64()) * x[col as usize];
            }
            acc
        };
        let update = |yi: &mut T, acc: T| axpby_row(alpha, acc, beta, yi);
        match &a.row_perm {
            None => {
                let rows_per_task = c * 2048usize.div_ceil(c);
                y.par_chunks_mut(rows_per_task)
                    .enumerate()
                    .for_each(|(t, y)| {
                        for (i, yi) in y.iter_mut().enumerate() {
                            update(yi, row_sum(t * rows_per_task + i));
                        }
                    });
            }
            Some(perm) => {
                let sums: Vec<T> = (0..n).into_par_iter().map(row_sum).collect();
                for (p, acc) in sums.into_iter().enumerate() {
                    update(&mut y[perm[p] as usize], acc);
                }
            }
        }
    }

    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &Sell<Cube<R>, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        if a.nrows == 0 {
            return Ok(());
        }
        let (count, dim) = b.config().grid(a.nrows);
        let s = Scaling::new(alpha, beta);
        let cfg = SellConfig {
            slice_height: a.params.slice_height as usize,
            permuted: a.row_perm.is_some(),
            beta_zero: s.beta_zero,
            cube_dim: dim.x as usize,
        };
        b.launch::<(V, T)>(cfg, || {
            // SAFETY: SELL invariants (built on the host): slice_ptr has nslices + 1 offsets
            // into col_idx/values, columns are < ncols or PAD (read as x[0], inside every
            // buffer of at least 4 elements), row_perm is a permutation of 0..nrows; x has
            // ncols and y nrows entries (checked by SparseStorage::spmv).
            unsafe {
                sell_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    arrays(a),
                    AlphaBetaLaunch::new(s.alpha, s.beta),
                    x.arg(),
                    y.arg(),
                    cfg,
                )
            }
        })
    }

    unsafe fn spmv_dot_partials_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &Sell<Cube<R>, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<Option<CubeBuffer<T>>> {
        // SAFETY: the caller's contract.
        unsafe { spmv_dot_partials(b, a, x, y).map(Some) }
    }

    fused_smoothing_cube!(smooth_cube);
}

impl FormatConversion for SellFormat {
    /// `options.sell`, or C and σ from the row statistics.
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        options: &FormatOptions,
    ) -> Result<Sell<B, V>> {
        let params = options
            .sell
            .unwrap_or_else(|| SellParams::default_for(a.stats()));
        Sell::from_csr(a, params, &options.limits)?.to_backend(backend)
    }

    /// Slices of C = 32, 128, 512 rows, unsorted (σ = 1) and sorted over 64 slices.
    fn tune_candidates<V: Element>(_a: &Csr<Cpu, V>) -> Vec<(FormatOptions, String)> {
        let mut candidates = Vec::new();
        for c in [32, 128, 512] {
            for sigma in [1, 64 * c] {
                let sell = SellParams {
                    slice_height: c,
                    sigma,
                };
                let options = FormatOptions {
                    sell: Some(sell),
                    ..FormatOptions::default()
                };
                candidates.push((options, format!("C = {c}, sigma = {sigma}")));
            }
        }
        candidates
    }
}
