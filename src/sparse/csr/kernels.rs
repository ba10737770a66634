//! CSR SpMV kernels: the rayon reference and two CubeCL kernels (a unit per row, a group
//! of units per row), behind [`CsrFormat`].

use cubecl::prelude::*;
use rayon::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::backend::cube::{ceil_div, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{Element, Scalar};
use crate::sparse::convert::FormatConversion;
use crate::sparse::csr::{Csr, CsrKernel};
use crate::sparse::ops::{axpby_row, AlphaBeta, AlphaBetaLaunch, Scaling};
use crate::sparse::ops::{sealed, FormatKernels, Mover, SparseOps};
use crate::sparse::options::FormatOptions;
use crate::sparse::smoothing::{
    fused_smoothing_cpu, fused_smoothing_cube, smooth_row, with_smooth_launch, SmoothCoefficients,
    SmoothMode, SmoothOperands,
};
use crate::vector::VectorOps;

/// The CSR arrays, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
pub(crate) struct CsrArrays<V: Float> {
    row_ptr: Array<u32>,
    col_idx: Array<u32>,
    values: Array<V>,
}

/// Comptime parameters of [`csr_vector_kernel`].
#[derive_cube_comptime]
struct VectorConfig {
    /// Units per row (a power of two, at most 32).
    group: u32,
    /// Reduce the row sums by plane shuffles (else through shared memory).
    use_plane: bool,
    /// `β = 0`: `y` is not read.
    beta_zero: bool,
    /// Units per cube (the shared-memory size).
    cube_dim: usize,
}

/// CSR, one unit per row. Bytes per nonzero: value + column index + (cached) x; per row:
/// two offsets and y.
#[cube(launch_unchecked)]
fn csr_scalar_kernel<V: Float, T: Float>(
    a: &CsrArrays<V>,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    nrows: usize,
    #[comptime] beta_zero: bool,
) {
    let alpha = scaling.alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut row = ABSOLUTE_POS;
    while row < nrows {
        let start = a.row_ptr[row] as usize;
        let end = a.row_ptr[row + 1] as usize;
        let mut acc = T::new(0.0);
        for k in start..end {
            acc += T::cast_from(a.values[k]) * x[a.col_idx[k] as usize];
        }
        if beta_zero {
            y[row] = alpha * acc;
        } else {
            y[row] = alpha * acc + scaling.beta.get::<T>() * y[row];
        }
        row += stride;
    }
}

/// Row `row`'s product `(A x)_row` by `group` units (lane `lane` of the group), summed by
/// plane shuffles (`use_plane`) or a shared-memory tree (`group > 1`); every unit of the
/// group calls it, in uniform control flow; lane 0 gets the sum (0 past `nrows`).
#[cube]
fn group_row_product<V: Float, T: Float>(
    a: &CsrArrays<V>,
    x: &Array<T>,
    row: usize,
    nrows: usize,
    lane: u32,
    shared: &mut SharedMemory<T>,
    #[comptime] cfg: VectorConfig,
) -> T {
    let group = cfg.group;
    let mut acc = T::new(0.0);
    if row < nrows {
        let end = a.row_ptr[row + 1] as usize;
        let mut k = a.row_ptr[row] as usize + lane as usize;
        while k < end {
            acc += T::cast_from(a.values[k]) * x[a.col_idx[k] as usize];
            k += group as usize;
        }
    }
    if comptime![group > 1] {
        let half = comptime![group / 2];
        if cfg.use_plane {
            let mut offset = half.runtime();
            while offset > 0 {
                acc += plane_shuffle_xor(acc, offset);
                offset /= 2;
            }
        } else {
            let unit = UNIT_POS as usize;
            shared[unit] = acc;
            sync_cube();
            let mut offset = half.runtime();
            while offset > 0 {
                if lane < offset {
                    shared[unit] = shared[unit] + shared[unit + offset as usize];
                }
                sync_cube();
                offset /= 2;
            }
            acc = shared[unit];
            sync_cube();
        }
    }
    acc
}

/// CSR, `group` units per row: lanes stride through the row, then reduce by plane
/// shuffles (`use_plane`) or a shared-memory tree. Every unit runs the same number of
/// iterations so that shuffles and barriers stay in uniform control flow.
#[cube(launch_unchecked)]
fn csr_vector_kernel<V: Float, T: Float>(
    a: &CsrArrays<V>,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    nrows: usize,
    #[comptime] cfg: VectorConfig,
) {
    let alpha = scaling.alpha.get::<T>();
    let group = cfg.group;
    let lane = UNIT_POS % group;
    let groups_per_cube = (CUBE_DIM / group) as usize;
    let total_groups = CUBE_COUNT * groups_per_cube;
    let group_id = CUBE_POS * groups_per_cube + (UNIT_POS / group) as usize;
    let iterations = ceil_div(nrows, total_groups);
    let mut shared = SharedMemory::<T>::new(cfg.cube_dim);
    for it in 0..iterations {
        let row = group_id + it * total_groups;
        let acc = group_row_product::<V, T>(a, x, row, nrows, lane, &mut shared, cfg);
        if lane == 0 && row < nrows {
            if cfg.beta_zero {
                y[row] = alpha * acc;
            } else {
                y[row] = alpha * acc + scaling.beta.get::<T>() * y[row];
            }
        }
    }
}

/// A fused smoothing pass ([`smoothing`](crate::sparse::smoothing)) on CSR: the row product
/// `(A v)ᵢ` as [`csr_vector_kernel`] computes it (`group` units per row; 1: a unit per row),
/// then the row's end by [`smooth_row`].
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn csr_smooth_kernel<V: Float, T: Float>(
    a: &CsrArrays<V>,
    v: &Array<T>,
    a0: &mut Array<T>,
    a1: &mut Array<T>,
    a2: &mut Array<T>,
    a3: &mut Array<T>,
    c: &SmoothCoefficients,
    nrows: usize,
    #[comptime] cfg: VectorConfig,
    #[comptime] mode: SmoothMode,
) {
    let group = cfg.group;
    let lane = UNIT_POS % group;
    let groups_per_cube = (CUBE_DIM / group) as usize;
    let total_groups = CUBE_COUNT * groups_per_cube;
    let group_id = CUBE_POS * groups_per_cube + (UNIT_POS / group) as usize;
    let iterations = ceil_div(nrows, total_groups);
    let mut shared = SharedMemory::<T>::new(cfg.cube_dim);
    for it in 0..iterations {
        let row = group_id + it * total_groups;
        let acc = group_row_product::<V, T>(a, v, row, nrows, lane, &mut shared, cfg);
        if lane == 0 && row < nrows {
            smooth_row::<T>(row, acc, v, a0, a1, a2, a3, c, mode);
        }
    }
}

/// The launch argument of the CSR arrays.
///
/// # Safety
/// The kernel must index them within the CSR invariants.
unsafe fn arrays<R: CubeRuntime, V: Element>(a: &Csr<Cube<R>, V>) -> CsrArraysLaunch<V, R> {
    // SAFETY: the caller's contract.
    unsafe { CsrArraysLaunch::new(a.row_ptr.arg(), a.col_idx.arg(), a.values.arg()) }
}

/// The CSR kernels.
pub struct CsrFormat;

impl sealed::Format for CsrFormat {}

impl FormatKernels for CsrFormat {
    type Matrix<B: BackendCore, V: Element> = Csr<B, V>;
    const NAME: &'static str = "csr";
    const LABEL: &'static str = "csr";
    const SPMV_NAME: &'static str = "Csr::spmv";

    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &Csr<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<Csr<B2, W>> {
        Ok(Csr {
            nrows: a.nrows,
            ncols: a.ncols,
            row_ptr: mover.buffer(&a.row_ptr)?,
            col_idx: mover.buffer(&a.col_idx)?,
            values: mover.values(&a.values)?,
            stats: a.stats,
            kernel: a.kernel,
            backend: mover.backend(),
        })
    }

    /// `y = alpha A x + beta y`, one row at a time, accumulating in `T` in the order of the
    /// stored entries; rayon tasks of 2048 rows.
    fn spmv_cpu<V: Element, T: Scalar>(a: &Csr<Cpu, V>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
        const ROWS: usize = 2048;
        let body = |start: usize, y: &mut [T]| {
            for (i, yi) in y.iter_mut().enumerate() {
                axpby_row(alpha, row_product(a, x, start + i), beta, yi);
            }
        };
        if y.len() < 4 * ROWS {
            body(0, y);
        } else {
            y.par_chunks_mut(ROWS)
                .enumerate()
                .for_each(|(c, y)| body(c * ROWS, y));
        }
    }

    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &Csr<Cube<R>, V>,
        alpha: T,
        x: &CubeBuffer<T>,
        beta: T,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        if a.nrows == 0 {
            return Ok(());
        }
        let s = Scaling::new(alpha, beta);
        match a.kernel.resolve(&a.stats) {
            CsrKernel::Vector { group } => {
                let info = crate::backend::BackendCore::info(b);
                let (count, dim) = b.config().grid(a.nrows * group as usize);
                let cfg = VectorConfig {
                    group,
                    use_plane: info.plane_ops && info.plane_size.0 >= group,
                    beta_zero: s.beta_zero,
                    cube_dim: dim.x as usize,
                };
                b.launch::<(V, T)>(cfg, || {
                    // SAFETY: the CSR invariants (validated on the host, unchanged since)
                    // keep every offset below nnz and every column below ncols; x has ncols
                    // and y nrows entries (checked by SparseStorage::spmv); the group size
                    // is a power of two in 2..=32 (checked by Csr::set_kernel).
                    unsafe {
                        csr_vector_kernel::launch_unchecked::<V, T, R>(
                            b.client(),
                            count,
                            dim,
                            arrays(a),
                            AlphaBetaLaunch::new(s.alpha, s.beta),
                            x.arg(),
                            y.arg(),
                            a.nrows,
                            cfg,
                        )
                    }
                })
            }
            _ => {
                let (count, dim) = b.config().grid(a.nrows);
                b.launch::<(V, T)>(s.beta_zero, || {
                    // SAFETY: as for the vector kernel.
                    unsafe {
                        csr_scalar_kernel::launch_unchecked::<V, T, R>(
                            b.client(),
                            count,
                            dim,
                            arrays(a),
                            AlphaBetaLaunch::new(s.alpha, s.beta),
                            x.arg(),
                            y.arg(),
                            a.nrows,
                            s.beta_zero,
                        )
                    }
                })
            }
        }
    }

    fused_smoothing_cpu!(row_product);

    fused_smoothing_cube!(smooth_cube);
}

/// `(A v)ᵢ`, accumulated in `T` in the order of the stored entries (as [`CsrFormat::spmv_cpu`]).
fn row_product<V: Element, T: Scalar>(a: &Csr<Cpu, V>, v: &[T], i: usize) -> T {
    let (s, e) = (a.row_ptr[i] as usize, a.row_ptr[i + 1] as usize);
    let mut acc = T::ZERO;
    for (&c, val) in a.col_idx[s..e].iter().zip(&a.values[s..e]) {
        acc += T::from_f64(val.as_f64()) * v[c as usize];
    }
    acc
}

/// A fused smoothing pass on a device, the gathered vector `v`, with the SpMV's choice of
/// units per row.
///
/// # Safety
/// A square matrix; `v` and every buffer of `operands` of its size.
unsafe fn smooth_cube<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Csr<Cube<R>, V>,
    v: &CubeBuffer<T>,
    operands: SmoothOperands<'_, T>,
) -> Result<bool> {
    if a.nrows == 0 {
        return Ok(true);
    }
    let group = match a.kernel.resolve(&a.stats) {
        CsrKernel::Vector { group } => group,
        _ => 1,
    };
    let info = crate::backend::BackendCore::info(b);
    let (count, dim) = b.config().grid(a.nrows * group as usize);
    let cfg = VectorConfig {
        group,
        use_plane: info.plane_ops && info.plane_size.0 >= group,
        beta_zero: false,
        cube_dim: dim.x as usize,
    };
    // SAFETY: the caller's contract; the CSR invariants keep every offset below nnz and every
    // column below ncols = nrows; the group size is a power of two in 1..=32.
    let launched = unsafe {
        with_smooth_launch(b, operands, |args| {
            let [a0, a1, a2, a3] = args.arrays;
            let mode = args.mode;
            b.launch::<(V, T)>((cfg, mode), || {
                csr_smooth_kernel::launch_unchecked::<V, T, R>(
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
                    a.nrows,
                    cfg,
                    mode,
                )
            })
        })
    };
    launched.map(|()| true)
}

impl FormatConversion for CsrFormat {
    /// The matrix with `options.csr_kernel`.
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        options: &FormatOptions,
    ) -> Result<Csr<B, V>> {
        a.to_backend(backend)?.with_kernel(options.csr_kernel)
    }

    /// The unit-per-row kernel and groups of 4 and 32 units per row.
    fn tune_candidates<V: Element>(_a: &Csr<Cpu, V>) -> Vec<(FormatOptions, String)> {
        [
            CsrKernel::Scalar,
            CsrKernel::Vector { group: 4 },
            CsrKernel::Vector { group: 32 },
        ]
        .into_iter()
        .map(|kernel| {
            let options = FormatOptions {
                csr_kernel: kernel,
                ..FormatOptions::default()
            };
            (options, format!("{kernel:?}"))
        })
        .collect()
    }
}
