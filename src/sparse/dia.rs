//! DIA: the matrix as a few full diagonals, no column indices.
//!
//! ```text
//!  | a00 a01  .   .  |   offsets = [-1, 0, 1]            (column - row, increasing)
//!  | a10 a11 a12  .  |   values  = [ 0  a10 a21 a32 |     diagonal d of row r at d * nrows + r
//!  |  .  a21 a22 a23 |              a00 a11 a22 a33 |     (0 where r + offset is outside
//!  |  .   .  a32 a33 |              a01 a12 a23  0  ]      the columns, or no entry)
//! ```
//!
//! The format for matrices of structured grids (finite differences and finite volumes on
//! a lexicographically numbered box, the 7- and 27-point Poisson operators): a row's columns
//! are `row + offset`, so SpMV streams only the values (8 bytes a slot in f64 instead of
//! ELL's or SELL's 12), and `x` is read at a few fixed distances (coalesced, cached). One unit
//! per row; consecutive units read consecutive values of a diagonal.
//!
//! Invariants: `offsets` strictly increasing, each in `-(nrows - 1)..=ncols - 1`; `values` has
//! `offsets.len() * nrows` entries, zero where the column is outside `0..ncols`; `nrows +
//! ncols <= 2³²` (the kernels wrap `row + offset` in 32 bits and compare with `ncols`).
//! DIA stores no pattern: an explicitly stored zero inside a diagonal is indistinguishable
//! from a gap, and [`Dia::to_csr`] leaves both out. A matrix with many diagonals pads: the
//! conversion is refused when `diagonals * nrows` passes the padding limit.

use cubecl::prelude::*;
use rayon::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::backend::BackendKind;
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::convert::FormatConversion;
use crate::sparse::csr::Csr;
use crate::sparse::ops::{
    add_if, rows_cpu, sealed, AlphaBeta, AlphaBetaLaunch, FormatKernels, Mover, Scaling, SparseOps,
};
use crate::sparse::options::{FormatLimits, FormatOptions};
use crate::sparse::smoothing::{
    fused_smoothing_cpu, fused_smoothing_cube, smooth_row, with_smooth_launch, SmoothCoefficients,
    SmoothMode, SmoothOperands,
};
use crate::sparse::storage::{sparse_operator, SparseStorage};
use crate::sparse::{to_u32, RowStats};
use crate::vector::cube::reduce::{cube_sum_to, partials};
use crate::vector::VectorOps;

/// A sparse matrix in DIA format. See the [module docs](self).
pub struct Dia<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    /// Column minus row of each stored diagonal, increasing (host copy).
    pub(crate) offsets: Vec<i64>,
    /// The offsets as 32-bit two's complement (`row + offset` wraps to a value `>= ncols`
    /// where it is negative).
    pub(crate) offsets_dev: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    pub(crate) stats: RowStats,
    pub(crate) backend: B,
}

/// The distinct diagonals (`column - row`, increasing) of `a`, or `None` when there are more
/// than `max`.
pub fn diagonal_offsets<V: Element>(a: &Csr<Cpu, V>, max: usize) -> Option<Vec<i64>> {
    // Rows in parallel, each chunk's sorted set merged; a chunk stops once it passes `max`.
    let merge = |mut a: Vec<i64>, b: Vec<i64>| {
        a.extend(b);
        a.sort_unstable();
        a.dedup();
        a
    };
    let chunk = 4096;
    (0..a.nrows().div_ceil(chunk))
        .into_par_iter()
        .map(|t| {
            let mut set: Vec<i64> = Vec::new();
            for r in t * chunk..((t + 1) * chunk).min(a.nrows()) {
                for &c in a.row(r).0 {
                    let off = c as i64 - r as i64;
                    if let Err(at) = set.binary_search(&off) {
                        if set.len() == max {
                            return None;
                        }
                        set.insert(at, off);
                    }
                }
            }
            Some(set)
        })
        .try_reduce(Vec::new, |a, b| {
            let m = merge(a, b);
            (m.len() <= max).then_some(m)
        })
}

impl<V: Element> Dia<Cpu, V> {
    /// Converts a CSR matrix: one stored diagonal for each distinct `column - row`.
    ///
    /// # Errors
    /// [`Error::Padding`] if `diagonals * nrows` exceeds the limit relative to the nonzeros;
    /// [`Error::InvalidArgument`] if `nrows + ncols` passes `2³²` or the slots pass `u32`.
    pub fn from_csr(a: &Csr<Cpu, V>, limits: &FormatLimits) -> Result<Self> {
        let (n, m) = (a.nrows, a.ncols);
        if n as u64 + m as u64 > 1u64 << 32 {
            return Err(Error::InvalidArgument {
                op: "Dia::from_csr",
                name: "a",
                reason: format!("{n} rows + {m} columns pass 2^32 (32-bit column arithmetic)"),
            });
        }
        // The padding limit bounds the diagonals (slots = diagonals * nrows): the scan stops
        // past that many.
        let most = if n == 0 {
            0
        } else {
            let bound = limits.max_padding_ratio * a.nnz().max(1) as f64 / n as f64;
            (n + m).min(bound.max(0.0).min(usize::MAX as f64) as usize)
        };
        let offsets = diagonal_offsets(a, most).ok_or_else(|| {
            let (stored, nnz) = ((most as u64 + 1) * n as u64, a.nnz() as u64);
            Error::Padding {
                format: "DIA",
                stored,
                nnz,
                ratio: stored as f64 / nnz.max(1) as f64,
                limit: limits.max_padding_ratio,
            }
        })?;
        let slots = offsets.len() as u64 * n as u64;
        limits.check("DIA", slots, a.nnz() as u64)?;
        to_u32(slots as usize, "DIA", "diagonals * nrows")?;
        let mut values = vec![V::default(); slots as usize];
        // Every slot in parallel (slot `i` is row `i % n` of diagonal `i / n`): a task per
        // diagonal left all but `diagonals` threads idle, 7 of 16 on a 7-point stencil.
        values.par_iter_mut().enumerate().for_each(|(i, v)| {
            let (r, off) = (i % n, offsets[i / n]);
            let c = r as i64 + off;
            if c >= 0 && (c as usize) < m {
                let (cols, vals) = a.row(r);
                if let Ok(k) = cols.binary_search(&(c as u32)) {
                    *v = vals[k];
                }
            }
        });
        let offsets_dev = offsets.iter().map(|&o| o as i32 as u32).collect();
        Ok(Dia {
            nrows: n,
            ncols: m,
            offsets,
            offsets_dev,
            values,
            stats: a.stats,
            backend: Cpu::new(),
        })
    }

    /// Converts back to CSR: every nonzero value of the stored diagonals (explicitly stored
    /// zeros of the source are not kept: DIA does not store a pattern).
    ///
    /// # Errors
    /// Never for a valid DIA matrix; [`Error::InvalidMatrix`]
    /// otherwise.
    pub fn to_csr(&self) -> Result<Csr<Cpu, V>> {
        let n = self.nrows;
        let mut row_ptr = Vec::with_capacity(n + 1);
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        row_ptr.push(0u32);
        for r in 0..n {
            for (d, &off) in self.offsets.iter().enumerate() {
                let c = r as i64 + off;
                let v = self.values[d * n + r];
                if c >= 0 && (c as usize) < self.ncols && v != V::default() {
                    col_idx.push(c as u32);
                    values.push(v);
                }
            }
            row_ptr.push(to_u32(col_idx.len(), "DIA", "nonzeros")?);
        }
        Csr::new(n, self.ncols, row_ptr, col_idx, values)
    }
}

impl<B: BackendCore, V: Element> Dia<B, V> {
    /// The stored diagonals, `column - row`, increasing.
    pub fn offsets(&self) -> &[i64] {
        &self.offsets
    }

    /// Row-length statistics of the matrix.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }
}

impl<B: SparseOps, V: Element> Dia<B, V> {}

impl<B: SparseOps, V: Element> SparseStorage<B, V> for Dia<B, V> {
    type Kernels = DiaFormat;

    fn backend(&self) -> &B {
        &self.backend
    }
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn nnz(&self) -> usize {
        self.stats.nnz
    }
    /// Padding included.
    fn storage_bytes(&self) -> usize {
        self.offsets.len() * (self.nrows * V::DTYPE.size() + 4)
    }
}

impl<B: BackendCore, V: Element> sealed::Format for Dia<B, V> {}

sparse_operator!(Dia);

/// The DIA arrays, as one kernel argument.
#[derive(CubeType, CubeLaunch)]
struct DiaArrays<V: Float> {
    offsets: Array<u32>,
    values: Array<V>,
    /// The diagonals (not `offsets.len()`, which is the buffer's padded length: found on
    /// CUDA, where the entries past the offsets made SpMV wrong).
    diagonals: usize,
    nrows: usize,
    ncols: u32,
}

/// `acc` plus diagonal `d`'s term of row `r` (its value at `idx`) where that column is
/// inside the matrix. Negative columns wrap past 2³¹ (`nrows + ncols <= 2³²`): one comparison.
#[cube]
fn dia_add<V: Float, T: Float>(
    a: &DiaArrays<V>,
    x: &Array<T>,
    acc: T,
    r: u32,
    d: usize,
    idx: usize,
) -> T {
    let mut sum = acc;
    let c = r + a.offsets[d];
    let v = a.values[idx];
    if c < a.ncols {
        sum += T::cast_from(v) * x[c as usize];
    }
    sum
}

/// [`dia_add`] without a branch ([`add_if`]): outside the matrix the term is dropped, so
/// that every load of an unrolled row can be issued at once (NVIDIA's Vulkan compiler did
/// not hoist the loads out of the branches).
#[cube]
fn dia_add_select<V: Float, T: Float>(
    a: &DiaArrays<V>,
    x: &Array<T>,
    acc: T,
    r: u32,
    d: usize,
    idx: usize,
) -> T {
    let c = r + a.offsets[d];
    add_if::<V, T>(acc, c < a.ncols, c, a.values[idx], x)
}

/// `Σ_d A[row, row + offset_d] x[row + offset_d]`: every value loaded (the diagonals are
/// full), `x` only where the column is inside the matrix. `unrolled > 0`: that many
/// diagonals, the loop unrolled and branch-free (every load of the row issued at once).
#[cube]
fn dia_row<V: Float, T: Float>(
    a: &DiaArrays<V>,
    x: &Array<T>,
    row: usize,
    #[comptime] unrolled: usize,
) -> T {
    let mut acc = T::new(0.0);
    let r = row as u32;
    if comptime![unrolled > 0] {
        #[unroll]
        for d in 0..unrolled {
            acc = dia_add_select::<V, T>(a, x, acc, r, d, row + d * a.nrows);
        }
    } else {
        let mut idx = row;
        for d in 0..a.diagonals {
            acc = dia_add::<V, T>(a, x, acc, r, d, idx);
            idx += a.nrows;
        }
    }
    acc
}

/// The diagonals [`dia_row`] unrolls for on `b` (0: a run-time loop): on wgpu. Measured on
/// an H100 (2026-11-26, wgpu, µs, unrolled branch-free / unrolled with the branch / run-time
/// loop): Poisson 7-point with f32 values 512 / 607 / 644, 27-point 450 / 773 / 766, FVM dual
/// 192 / 227 / 207; f64 values 773 / 744 / 771, 751 / 935 / 913, 212 / 259 / 266 (`spmv
/// --bench`, 30 products each waited for: the times include the waits). On CUDA the run-time
/// loop with the branch reads at the copy bandwidth (Poisson 7-point f64) and the unrolled
/// forms gained nothing consistent.
fn unrolled<R: CubeRuntime>(b: &Cube<R>, diagonals: usize) -> usize {
    if b.kind() == BackendKind::Wgpu && diagonals <= DIA_UNROLL {
        diagonals
    } else {
        0
    }
}

/// The most diagonals the kernels unroll their loop over (a kernel per count).
const DIA_UNROLL: usize = 32;

/// One unit per row. Bytes per stored slot: the value (+ x, cached).
#[cube(launch_unchecked)]
fn dia_kernel<V: Float, T: Float>(
    a: &DiaArrays<V>,
    scaling: &AlphaBeta,
    x: &Array<T>,
    y: &mut Array<T>,
    #[comptime] beta_zero: bool,
    #[comptime] unrolled: usize,
) {
    let alpha = scaling.alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut row = ABSOLUTE_POS;
    while row < a.nrows {
        let acc = dia_row::<V, T>(a, x, row, unrolled);
        if beta_zero {
            y[row] = alpha * acc;
        } else {
            y[row] = alpha * acc + scaling.beta.get::<T>() * y[row];
        }
        row += stride;
    }
}

/// A fused smoothing pass ([`smoothing`](crate::sparse::smoothing)): the row product of
/// [`dia_row`], then the row's end by [`smooth_row`].
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn dia_smooth_kernel<V: Float, T: Float>(
    a: &DiaArrays<V>,
    v: &Array<T>,
    a0: &mut Array<T>,
    a1: &mut Array<T>,
    a2: &mut Array<T>,
    a3: &mut Array<T>,
    c: &SmoothCoefficients,
    #[comptime] unrolled: usize,
    #[comptime] mode: SmoothMode,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut row = ABSOLUTE_POS;
    while row < a.nrows {
        let acc = dia_row::<V, T>(a, v, row, unrolled);
        smooth_row::<T>(row, acc, v, a0, a1, a2, a3, c, mode);
        row += stride;
    }
}

/// A fused smoothing pass on a device, the gathered vector `v`.
///
/// # Safety
/// A square matrix; `v` and every buffer of `operands` of its size.
unsafe fn smooth_cube<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Dia<Cube<R>, V>,
    v: &CubeBuffer<T>,
    operands: SmoothOperands<'_, T>,
) -> Result<bool> {
    if a.nrows == 0 {
        return Ok(true);
    }
    let (count, dim) = b.config().grid(a.nrows);
    let unrolled = unrolled(b, a.offsets.len());
    // SAFETY: the caller's contract and the DIA invariants (as for the SpMV).
    let launched = unsafe {
        with_smooth_launch(b, operands, |args| {
            let [a0, a1, a2, a3] = args.arrays;
            let mode = args.mode;
            b.launch::<(V, T)>((unrolled, mode), || {
                dia_smooth_kernel::launch_unchecked::<V, T, R>(
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
                    unrolled,
                    mode,
                )
            })
        })
    };
    launched.map(|()| true)
}

/// `(A v)_r` on the CPU, the diagonals in order.
fn row_product<V: Element, T: Scalar>(a: &Dia<Cpu, V>, v: &[T], r: usize) -> T {
    let (n, m) = (a.nrows, a.ncols as i64);
    let mut acc = T::ZERO;
    for (d, &off) in a.offsets.iter().enumerate() {
        let c = r as i64 + off;
        if c >= 0 && c < m {
            acc += T::from_f64(a.values[d * n + r].as_f64()) * v[c as usize];
        }
    }
    acc
}

/// `y = A x` and partial sums of `x · y`, one per cube (square matrices): CG's SpMV and the
/// inner product after it in one pass.
#[cube(launch_unchecked)]
fn dia_dot_kernel<V: Float, T: Float>(
    a: &DiaArrays<V>,
    x: &Array<T>,
    y: &mut Array<T>,
    partials: &mut Array<T>,
    #[comptime] cube_dim: usize,
    #[comptime] unrolled: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut row = ABSOLUTE_POS;
    let mut dot = T::new(0.0);
    while row < a.nrows {
        let acc = dia_row::<V, T>(a, x, row, unrolled);
        y[row] = acc;
        dot += x[row] * acc;
        row += stride;
    }
    cube_sum_to::<T>(dot, partials, cube_dim);
}

/// The launch argument of the DIA arrays.
///
/// # Safety
/// The kernel must index them within the DIA invariants.
unsafe fn arrays<R: CubeRuntime, V: Element>(a: &Dia<Cube<R>, V>) -> DiaArraysLaunch<V, R> {
    // SAFETY: the caller's contract.
    unsafe {
        DiaArraysLaunch::new(
            a.offsets_dev.arg(),
            a.values.arg(),
            a.offsets.len(),
            a.nrows,
            a.ncols as u32,
        )
    }
}

/// Launches [`dia_dot_kernel`] and returns the per-cube partials of `x · y`.
///
/// # Safety
/// As [`FormatKernels::spmv_dot_cube`].
unsafe fn spmv_dot_partials<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Dia<Cube<R>, V>,
    x: &CubeBuffer<T>,
    y: &mut CubeBuffer<T>,
) -> Result<CubeBuffer<T>> {
    let (cubes, count, dim) = b.config().reduce(a.nrows);
    let out = partials::<R, T>(b, cubes);
    let cube_dim = dim.x as usize;
    let unrolled = unrolled(b, a.offsets.len());
    b.launch::<(V, T)>((cube_dim, unrolled), || {
        // SAFETY: DIA invariants (built on the host): values hold diagonals * nrows slots,
        // x is read at a column below ncols or (branch-free) at 0, inside every buffer (at
        // least 4 elements); the matrix is square and x, y have nrows entries (checked by
        // SparseStorage::spmv_dot); `out` holds one slot per cube.
        unsafe {
            dia_dot_kernel::launch_unchecked::<V, T, R>(
                b.client(),
                count,
                dim,
                arrays(a),
                x.arg(),
                y.arg(),
                out.arg(),
                cube_dim,
                unrolled,
            )
        }
    })?;
    Ok(out)
}

/// The DIA kernels.
pub struct DiaFormat;

impl sealed::Format for DiaFormat {}

impl FormatKernels for DiaFormat {
    type Matrix<B: BackendCore, V: Element> = Dia<B, V>;
    const NAME: &'static str = "dia";
    const ALIASES: &'static [&'static str] = &["diagonal"];
    const LABEL: &'static str = "dia";
    const SPMV_NAME: &'static str = "Dia::spmv";
    const FEW_DIAGONALS: bool = true;

    fn move_to<B: BackendCore, B2: VectorOps, V: Element, W: Element>(
        a: &Dia<B, V>,
        mover: &Mover<'_, B, B2>,
    ) -> Result<Dia<B2, W>> {
        Ok(Dia {
            nrows: a.nrows,
            ncols: a.ncols,
            offsets: a.offsets.clone(),
            offsets_dev: mover.buffer(&a.offsets_dev)?,
            values: mover.values(&a.values)?,
            stats: a.stats,
            backend: mover.backend(),
        })
    }

    fn spmv_cpu<V: Element, T: Scalar>(a: &Dia<Cpu, V>, alpha: T, x: &[T], beta: T, y: &mut [T]) {
        rows_cpu(y, alpha, beta, |r| row_product(a, x, r));
    }

    unsafe fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &Dia<Cube<R>, V>,
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
        let unrolled = unrolled(b, a.offsets.len());
        b.launch::<(V, T)>((s.beta_zero, unrolled), || {
            // SAFETY: DIA invariants (validated on conversion): diagonals * nrows values, a
            // column read only when below ncols, or (branch-free) column 0, inside every buffer
            // (at least 4 elements); x has ncols and y nrows entries (checked by
            // SparseStorage::spmv).
            unsafe {
                dia_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    arrays(a),
                    AlphaBetaLaunch::new(s.alpha, s.beta),
                    x.arg(),
                    y.arg(),
                    s.beta_zero,
                    unrolled,
                )
            }
        })
    }

    unsafe fn spmv_dot_partials_cube<R: CubeRuntime, V: Element, T: Scalar>(
        b: &Cube<R>,
        a: &Dia<Cube<R>, V>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<Option<CubeBuffer<T>>> {
        // SAFETY: the caller's contract.
        unsafe { spmv_dot_partials(b, a, x, y).map(Some) }
    }

    fused_smoothing_cpu!(row_product);

    fused_smoothing_cube!(smooth_cube);
}

impl FormatConversion for DiaFormat {
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        options: &FormatOptions,
    ) -> Result<Dia<B, V>> {
        Dia::from_csr(a, &options.limits)?.to_backend(backend)
    }

    /// One candidate (refused, and skipped, unless a few diagonals hold the matrix).
    fn tune_candidates<V: Element>(_a: &Csr<Cpu, V>) -> Vec<(FormatOptions, String)> {
        vec![(FormatOptions::default(), "diagonals".into())]
    }
}
