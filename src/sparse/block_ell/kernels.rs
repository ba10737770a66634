//! Block-ELL SpMV kernels: the rayon reference and the two CubeCL forms (direct, and the
//! seed's inflate + contract), behind [`BlockEllFormat`].

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::sparse::block_ell::{BlockEll, BlockEllKernel};
use crate::sparse::choose::detect_block_size;
use crate::sparse::convert::FormatConversion;
use crate::sparse::csr::Csr;
use crate::sparse::ops::{
    sealed, AlphaBeta, AlphaBetaLaunch, FormatKernels, Mover, Scaling, SparseOps,
};
use crate::sparse::options::FormatOptions;
use crate::sparse::smoothing::{
    fused_smoothing_cpu, fused_smoothing_cube, smooth_row, with_smooth_launch, SmoothCoefficients,
    SmoothMode, SmoothOperands,
};
use crate::sparse::PAD;
use crate::vector::VectorOps;

/// The block-ELL arrays and sizes, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
struct BlockArrays<V: Float> {
    neighbours: Array<u32>,
    values: Array<V>,
    nrows: usize,
    ncols: usize,
    /// Rows padded to whole blocks.
    padded_rows: usize,
    slots: usize,
}

/// Comptime parameters of the block-ELL kernels.
#[derive_cube_comptime]
struct BlockConfig {
    /// The block size `m`.
    m: usize,
    /// Columns unrolled at a time (the direct kernel).
    unroll: usize,
    /// `ncols` is not a multiple of `m`: guard the padded columns.
    ragged: bool,
    /// `β = 0`: `y` is not read.
    beta_zero: bool,
}

/// One product `A[v] x[c]`, zero for a padded column `c >= ncols` (only when `ragged`).
#[cube]
fn block_term<V: Float, T: Float>(
    values: &Array<V>,
    x: &Array<T>,
    v: usize,
    c: usize,
    ncols: usize,
    #[comptime] ragged: bool,
) -> T {
    let mut term = T::new(0.0);
    if ragged {
        if c < ncols {
            term = T::cast_from(values[v]) * x[c];
        }
    } else {
        term = T::cast_from(values[v]) * x[c];
    }
    term
}

/// Row `u`'s product `(A x)_u` (a padded row past `nrows` computes on its block row's
/// padding); `m` is comptime so the inner product over a block row unrolls.
#[cube]
fn block_row_product<V: Float, T: Float>(
    a: &BlockArrays<V>,
    x: &Array<T>,
    u: usize,
    #[comptime] cfg: BlockConfig,
) -> T {
    let m = cfg.m;
    let unroll = cfg.unroll;
    let l = u / m;
    let mut acc = T::new(0.0);
    for slot in 0..a.slots {
        let bc = a.neighbours[l * a.slots + slot];
        if bc != PAD {
            let xbase = bc as usize * m;
            let vbase = u + a.padded_rows * slot * m;
            // Unrolled in chunks of `unroll` columns: a fully unrolled block row of 35 or
            // 64 columns costs registers (occupancy) without adding bandwidth.
            for chunk in 0..comptime![m / unroll] {
                #[unroll]
                for jj in 0..unroll {
                    let j = chunk * unroll + jj;
                    acc += block_term::<V, T>(
                        &a.values,
                        x,
                        vbase + a.padded_rows * j,
                        xbase + j,
                        a.ncols,
                        cfg.ragged,
                    );
                }
            }
            #[unroll]
            for jj in 0..comptime![m % unroll] {
                let j = comptime![m / unroll * unroll] + jj;
                acc += block_term::<V, T>(
                    &a.values,
                    x,
                    vbase + a.padded_rows * j,
                    xbase + j,
                    a.ncols,
                    cfg.ragged,
                );
            }
        }
    }
    acc
}

/// Direct kernel: one unit per row `u` (`m` units per block row, sharing their `x` reads);
/// `m` is comptime so the inner product over a block row unrolls. Bytes per stored block
/// value: the value (coalesced) + `x` (cached, read by `m` units).
#[cube(launch_unchecked)]
fn block_ell_direct_kernel<V: Float, T: Float>(
    a: &BlockArrays<V>,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    #[comptime] cfg: BlockConfig,
) {
    let alpha = scaling.alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut u = ABSOLUTE_POS;
    while u < a.padded_rows {
        let acc = block_row_product::<V, T>(a, x, u, cfg);
        if u < a.nrows {
            if cfg.beta_zero {
                y[u] = alpha * acc;
            } else {
                y[u] = alpha * acc + scaling.beta.get::<T>() * y[u];
            }
        }
        u += stride;
    }
}

/// A fused smoothing pass ([`smoothing`](crate::sparse::smoothing)) on block-ELL: the row
/// product `(A v)ᵤ` as [`block_ell_direct_kernel`] computes it, then the row's end by
/// [`smooth_row`].
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn block_ell_smooth_kernel<V: Float, T: Float>(
    a: &BlockArrays<V>,
    v: &Array<T>,
    a0: &mut Array<T>,
    a1: &mut Array<T>,
    a2: &mut Array<T>,
    a3: &mut Array<T>,
    c: &SmoothCoefficients,
    #[comptime] cfg: BlockConfig,
    #[comptime] mode: SmoothMode,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut u = ABSOLUTE_POS;
    while u < a.padded_rows {
        let acc = block_row_product::<V, T>(a, v, u, cfg);
        if u < a.nrows {
            smooth_row::<T>(u, acc, v, a0, a1, a2, a3, c, mode);
        }
        u += stride;
    }
}

/// Inflation: `X[k + q l] = x[neighbour(l, k / m) m + k % m]`, 0 for padding slots and
/// padded columns. One unit per entry of `X`.
#[cube(launch_unchecked)]
fn block_ell_inflate_kernel<V: Float, T: Float>(
    a: &BlockArrays<V>,
    x: &Array<T>,
    inflated: &mut Array<T>,
    #[comptime] m: usize,
) {
    let q = a.slots * m;
    let total = (a.padded_rows / m) * q;
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut e = ABSOLUTE_POS;
    while e < total {
        let l = e / q;
        let k = e % q;
        let bc = a.neighbours[l * a.slots + k / m];
        let c = bc as usize * m + k % m;
        let mut v = T::new(0.0);
        if bc != PAD && c < a.ncols {
            v = x[c];
        }
        inflated[e] = v;
        e += stride;
    }
}

/// Contraction: `y[u] = α Σ_k A[u + M k] X[k + q l] + β y[u]`, one unit per row.
#[cube(launch_unchecked)]
fn block_ell_contract_kernel<V: Float, T: Float>(
    a: &BlockArrays<V>,
    inflated: &Array<T>,
    scaling: &AlphaBeta,
    y: &mut Array<T>,
    #[comptime] cfg: BlockConfig,
) {
    let alpha = scaling.alpha.get::<T>();
    let m = cfg.m;
    let q = a.slots * m;
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut u = ABSOLUTE_POS;
    while u < a.nrows {
        let xbase = (u / m) * q;
        let mut acc = T::new(0.0);
        for k in 0..q {
            acc += T::cast_from(a.values[u + a.padded_rows * k]) * inflated[xbase + k];
        }
        if cfg.beta_zero {
            y[u] = alpha * acc;
        } else {
            y[u] = alpha * acc + scaling.beta.get::<T>() * y[u];
        }
        u += stride;
    }
}

/// The launch argument of the block-ELL arrays.
///
/// # Safety
/// The kernel must index them within the block-ELL invariants.
unsafe fn arrays<R: CubeRuntime, V: Element>(a: &BlockEll<Cube<R>, V>) -> BlockArraysLaunch<V, R> {
    let padded_rows = a.nrows.div_ceil(a.block_size) * a.block_size;
    // SAFETY: the caller's contract.
    unsafe {
        BlockArraysLaunch::new(
            a.neighbours.arg(),
            a.values.arg(),
            a.nrows,
            a.ncols,
            padded_rows,
            a.slots,
        )
    }
}

/// The block-ELL kernels.
pub struct BlockEllFormat;

impl sealed::Format for BlockEllFormat {}

impl FormatKernels for BlockEllFormat {
    type Matrix<B: BackendCore, V: Element> = BlockEll<B, V>;
    const NAME: &'static str = "bell";
    const ALIASES: &'static [&'static str] = &["block-ell", "blockell", "dbf"];
    const LABEL: &'static str = "block-ell";
    const SPMV_NAME: &'static str = "BlockEll::spmv";

    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &BlockEll<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<BlockEll<B2, W>> {
        Ok(BlockEll {
            nrows: a.nrows,
            ncols: a.ncols,
            block_size: a.block_size,
            slots: a.slots,
            neighbours: mover.buffer(&a.neighbours)?,
            values: mover.values(&a.values)?,
            nnz: a.nnz,
            blocks: a.blocks,
            kernel: a.kernel,
            backend: mover.backend(),
        })
    }

    /// Rows in parallel (rayon tasks of 2048), each row's block slots in order.
    fn spmv_cpu<V: Element, T: Scalar>(
        a: &BlockEll<Cpu, V>,
        alpha: T,
        x: &[T],
        beta: T,
        y: &mut [T],
    ) {
        crate::sparse::ops::rows_cpu(y, alpha, beta, |u| row_product(a, x, u));
    }

    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &BlockEll<Cube<R>, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        if a.nrows == 0 {
            return Ok(());
        }
        let m = a.block_size;
        let padded_rows = a.nrows.div_ceil(m) * m;
        let s = Scaling::new(alpha, beta);
        let cfg = BlockConfig {
            m,
            unroll: if m <= 16 { m } else { 8 },
            ragged: !a.ncols.is_multiple_of(m),
            beta_zero: s.beta_zero,
        };
        // SAFETY (all launches): block-ELL invariants (built on the host): neighbours has
        // r * slots entries (block columns < ⌈ncols/m⌉ or PAD), values r m * slots m; padded
        // columns are guarded by `ragged` or `c < ncols`; x has ncols and y nrows entries
        // (checked by SparseStorage::spmv).
        match a.kernel {
            BlockEllKernel::Direct => {
                let (count, dim) = b.config().grid(padded_rows);
                b.launch::<(V, T)>(cfg, || unsafe {
                    block_ell_direct_kernel::launch_unchecked::<V, T, R>(
                        b.client(),
                        count,
                        dim,
                        arrays(a),
                        AlphaBetaLaunch::new(s.alpha, s.beta),
                        x.arg(),
                        y.arg(),
                        cfg,
                    )
                })
            }
            BlockEllKernel::InflateContract => {
                let q = a.slots * m;
                let total = (padded_rows / m) * q;
                let inflated = crate::backend::BackendCore::alloc::<T>(b, total)?;
                let (count, dim) = b.config().grid(total);
                // `inflated` holds r q entries, one per unit of the inflation.
                b.launch::<(V, T)>(m, || unsafe {
                    block_ell_inflate_kernel::launch_unchecked::<V, T, R>(
                        b.client(),
                        count,
                        dim,
                        arrays(a),
                        x.arg(),
                        inflated.arg(),
                        m,
                    )
                })?;
                let (count, dim) = b.config().grid(a.nrows);
                // Every row reads the q inflated entries of its block row.
                b.launch::<(V, T)>(cfg, || unsafe {
                    block_ell_contract_kernel::launch_unchecked::<V, T, R>(
                        b.client(),
                        count,
                        dim,
                        arrays(a),
                        inflated.arg(),
                        AlphaBetaLaunch::new(s.alpha, s.beta),
                        y.arg(),
                        cfg,
                    )
                })
            }
        }
    }

    fused_smoothing_cpu!(row_product);

    fused_smoothing_cube!(smooth_cube);
}

/// `(A v)ᵤ`, accumulated in `T` block slot by block slot (as [`BlockEllFormat::spmv_cpu`]).
fn row_product<V: Element, T: Scalar>(a: &BlockEll<Cpu, V>, v: &[T], u: usize) -> T {
    let (m, s) = (a.block_size, a.slots);
    let big_m = a.nrows.div_ceil(m) * m;
    let l = u / m;
    let mut acc = T::ZERO;
    for slot in 0..s {
        let bc = a.neighbours[l * s + slot];
        if bc == PAD {
            continue;
        }
        for j in 0..m {
            let c = bc as usize * m + j;
            if c < a.ncols {
                acc += T::from_f64(a.values[u + big_m * (slot * m + j)].as_f64()) * v[c];
            }
        }
    }
    acc
}

/// A fused smoothing pass on a device with the direct kernel's mapping, the gathered
/// vector `v`.
///
/// # Safety
/// A square matrix; `v` and every buffer of `operands` of its size.
unsafe fn smooth_cube<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &BlockEll<Cube<R>, V>,
    v: &CubeBuffer<T>,
    operands: SmoothOperands<'_, T>,
) -> Result<bool> {
    if a.kernel != BlockEllKernel::Direct {
        return Ok(false); // the inflate-contract form has no fused pass
    }
    if a.nrows == 0 {
        return Ok(true);
    }
    let m = a.block_size;
    let padded_rows = a.nrows.div_ceil(m) * m;
    let cfg = BlockConfig {
        m,
        unroll: if m <= 16 { m } else { 8 },
        ragged: !a.ncols.is_multiple_of(m),
        beta_zero: false,
    };
    let (count, dim) = b.config().grid(padded_rows);
    // SAFETY: the caller's contract and the block-ELL invariants (as for the direct SpMV);
    // rows past nrows only compute.
    let launched = unsafe {
        with_smooth_launch(b, operands, |args| {
            let [a0, a1, a2, a3] = args.arrays;
            let mode = args.mode;
            b.launch::<(V, T)>((cfg, mode), || {
                block_ell_smooth_kernel::launch_unchecked::<V, T, R>(
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

impl FormatConversion for BlockEllFormat {
    /// Blocks of `options.block_size` (detected where `None`), `options.block_kernel`.
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        options: &FormatOptions,
    ) -> Result<BlockEll<B, V>> {
        let m = match options.block_size {
            Some(m) => m,
            None => detect_block_size(a, f64::INFINITY).unwrap_or(1),
        };
        Ok(BlockEll::from_csr(a, m, &options.limits)?
            .to_backend(backend)?
            .with_kernel(options.block_kernel))
    }

    /// Both kernels, where the matrix has dense blocks (at most 1.5x padding).
    fn tune_candidates<V: Element>(a: &Csr<Cpu, V>) -> Vec<(FormatOptions, String)> {
        let Some(m) = detect_block_size(a, 1.5) else {
            return Vec::new();
        };
        [BlockEllKernel::Direct, BlockEllKernel::InflateContract]
            .into_iter()
            .map(|kernel| {
                let options = FormatOptions {
                    block_size: Some(m),
                    block_kernel: kernel,
                    ..FormatOptions::default()
                };
                (options, format!("block size {m}, {kernel:?}"))
            })
            .collect()
    }
}
