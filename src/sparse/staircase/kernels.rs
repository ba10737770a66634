//! Staircase SELL SpMV kernels: the CubeCL kernel (one launch per step) and the rayon
//! reference, behind [`StaircaseFormat`].

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
use crate::sparse::staircase::StaircaseSell;
use crate::sparse::PAD;
use crate::vector::VectorOps;

/// The stored slots, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
struct StaircaseArrays<V: Float> {
    col_idx: Array<u32>,
    values: Array<V>,
}

/// One step of the staircase, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
struct StepArgs {
    /// Stored length of every row of the step.
    len: usize,
    /// First (permuted) row.
    row_start: usize,
    /// First slot.
    slot_start: usize,
    /// Rows of the step.
    rows: usize,
}

/// Comptime parameters of [`staircase_kernel`].
#[derive_cube_comptime]
struct StaircaseConfig {
    slice_height: usize,
    beta_zero: bool,
}

/// One step: one unit per row of the step. Bytes per stored slot: value + index.
#[cube(launch_unchecked)]
fn staircase_kernel<V: Float, T: Float>(
    a: &StaircaseArrays<V>,
    step: &StepArgs,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    nrows: usize,
    #[comptime] cfg: StaircaseConfig,
) {
    let alpha = scaling.alpha.get::<T>();
    let c = cfg.slice_height;
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut t = ABSOLUTE_POS;
    while t < step.rows {
        let p = step.row_start + t;
        let mut idx = step.slot_start + (t / c) * step.len * c + t % c;
        let mut acc = T::new(0.0);
        for _k in 0..step.len {
            acc = add_slot::<V, T>(acc, a.col_idx[idx], a.values[idx], x);
            idx += c;
        }
        if p < nrows {
            if cfg.beta_zero {
                y[p] = alpha * acc;
            } else {
                y[p] = alpha * acc + scaling.beta.get::<T>() * y[p];
            }
        }
        t += stride;
    }
}

/// The Staircase SELL kernels (in the permuted numbering).
pub struct StaircaseFormat;

impl sealed::Format for StaircaseFormat {}

impl FormatKernels for StaircaseFormat {
    type Matrix<B: BackendCore, V: Element> = StaircaseSell<B, V>;
    const NAME: &'static str = "staircase";
    const ALIASES: &'static [&'static str] = &["staircase-sell"];
    const LABEL: &'static str = "staircase sell";
    const SPMV_NAME: &'static str = "StaircaseSell::spmv";

    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &StaircaseSell<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<StaircaseSell<B2, W>> {
        Ok(StaircaseSell {
            nrows: a.nrows,
            params: a.params,
            steps: a.steps.clone(),
            col_idx: mover.buffer(&a.col_idx)?,
            values: mover.values(&a.values)?,
            perm: mover.buffer(&a.perm)?,
            stored: a.stored,
            stats: a.stats,
            backend: mover.backend(),
        })
    }

    fn spmv_cpu<V: Element, T: Scalar>(
        a: &StaircaseSell<Cpu, V>,
        alpha: T,
        x: &[T],
        beta: T,
        y: &mut [T],
    ) {
        let (n, c) = (a.nrows, a.params.slice_height as usize);
        for step in &a.steps {
            let rows = (step.slices * c).min(n - step.row_start);
            y[step.row_start..step.row_start + rows]
                .par_iter_mut()
                .enumerate()
                .for_each(|(t, yi)| {
                    let base = step.slot_start + (t / c) * step.len * c + t % c;
                    let mut acc = T::ZERO;
                    for k in 0..step.len {
                        let col = a.col_idx[base + k * c];
                        if col == PAD {
                            break;
                        }
                        acc += T::from_f64(a.values[base + k * c].as_f64()) * x[col as usize];
                    }
                    axpby_row(alpha, acc, beta, yi);
                });
        }
    }

    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &StaircaseSell<Cube<R>, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let s = Scaling::new(alpha, beta);
        let cfg = StaircaseConfig {
            slice_height: a.params.slice_height as usize,
            beta_zero: s.beta_zero,
        };
        for step in &a.steps {
            let rows = (step.slices * cfg.slice_height).min(a.nrows - step.row_start);
            let (count, dim) = b.config().grid(rows);
            b.launch::<(V, T)>(cfg, || {
                // SAFETY: the step structure was built on the host with the arrays: every
                // slot of the step lies inside col_idx/values, columns are < nrows or PAD
                // (read as x[0], inside every buffer);
                // x and y have nrows entries (checked by SparseStorage::spmv).
                unsafe {
                    staircase_kernel::launch_unchecked::<V, T, R>(
                        b.client(),
                        count,
                        dim,
                        StaircaseArraysLaunch::new(a.col_idx.arg(), a.values.arg()),
                        StepArgsLaunch::new(step.len, step.row_start, step.slot_start, rows),
                        AlphaBetaLaunch::new(s.alpha, s.beta),
                        x.arg(),
                        y.arg(),
                        a.nrows,
                        cfg,
                    )
                }
            })?;
        }
        Ok(())
    }
}

impl FormatConversion for StaircaseFormat {
    /// `options.staircase`, or the default parameters.
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        options: &FormatOptions,
    ) -> Result<StaircaseSell<B, V>> {
        let params = options.staircase.unwrap_or_default();
        StaircaseSell::from_csr(a, params, &options.limits)?.to_backend(backend)
    }
}
