//! SELL-C-σ: sliced ELLPACK with a sorting window.
//!
//! Rows are sorted by decreasing length inside windows of σ rows (σ = 1: no sorting), then
//! cut into slices of C consecutive (sorted) rows; each slice is padded to its own longest
//! row and stored slot-major inside the slice:
//!
//! ```text
//!  slice s, rows p = sC..(s+1)C, width w_s:  slot k of lane j at slice_ptr[s] + k C + j
//!  slice_ptr = [0, w_0 C, w_0 C + w_1 C, ...]           (in slots, on the device)
//!  row_perm[p] = original row of sorted position p      (only when σ > 1)
//! ```
//!
//! C = 1 is CSR without offsets per row; C = n, σ = 1 is ELL. One launch: one unit per
//! sorted row, the slice found by division; `y` is written through `row_perm`, so `x` and
//! `y` stay in the original numbering.

use cubecl::prelude::*;
use rayon::prelude::*;

use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::backend::{BackendCore, Cpu};
use crate::error::{check_len, Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::cube::{grid, scalar};
use crate::sparse::{to_u32, Csr, FormatLimits, RowStats, SparseOps, PAD};
use crate::vector::Vector;

/// Parameters of a SELL-C-σ matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SellParams {
    /// Slice height C (rows per slice): a power of two in 1..=1024.
    pub slice_height: u32,
    /// Sorting window σ in rows (1: no sorting; a multiple of C otherwise).
    pub sigma: u32,
}

impl SellParams {
    /// C = 32 (a warp) and σ = 1 for rows of nearly equal length, else σ = 64 C.
    pub fn default_for(stats: &RowStats) -> Self {
        let regular = (stats.max as f64) <= 1.25 * stats.mean + 1.0;
        SellParams {
            slice_height: 32,
            sigma: if regular { 1 } else { 32 * 64 },
        }
    }

    fn validate(&self) -> Result<()> {
        let c = self.slice_height;
        if !(1..=1024).contains(&c) || !c.is_power_of_two() {
            return Err(Error::InvalidArgument {
                op: "Sell::from_csr",
                name: "slice_height",
                reason: format!("{c}: must be a power of two in 1..=1024"),
            });
        }
        if self.sigma == 0 || (self.sigma > 1 && !self.sigma.is_multiple_of(c)) {
            return Err(Error::InvalidArgument {
                op: "Sell::from_csr",
                name: "sigma",
                reason: format!(
                    "{}: must be 1 or a positive multiple of the slice height {c}",
                    self.sigma
                ),
            });
        }
        Ok(())
    }
}

/// A sparse matrix in SELL-C-σ format. See the [module docs](self).
pub struct Sell<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) params: SellParams,
    pub(crate) slice_ptr: B::Buffer<u32>,
    pub(crate) col_idx: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    pub(crate) row_perm: Option<B::Buffer<u32>>,
    pub(crate) stored: usize,
    pub(crate) stats: RowStats,
    pub(crate) backend: B,
}

/// The row order of SELL-C-σ: decreasing length inside windows of `sigma` rows (stable).
pub(crate) fn window_order(row_ptr: &[u32], sigma: usize) -> Vec<u32> {
    let n = row_ptr.len() - 1;
    let mut order: Vec<u32> = (0..n as u32).collect();
    if sigma > 1 {
        let len = |r: u32| row_ptr[r as usize + 1] - row_ptr[r as usize];
        order
            .par_chunks_mut(sigma)
            .for_each(|w| w.sort_by_key(|&r| std::cmp::Reverse(len(r))));
    }
    order
}

impl<V: Element> Sell<Cpu, V> {
    /// Converts a CSR matrix (exact).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad parameters; [`Error::Padding`] if the padding
    /// exceeds the limit.
    pub fn from_csr(a: &Csr<Cpu, V>, params: SellParams, limits: &FormatLimits) -> Result<Self> {
        params.validate()?;
        let (n, c) = (a.nrows, params.slice_height as usize);
        let order = window_order(&a.row_ptr, params.sigma as usize);
        let len =
            |p: usize| (a.row_ptr[order[p] as usize + 1] - a.row_ptr[order[p] as usize]) as usize;
        let nslices = n.div_ceil(c);
        let mut slice_ptr = Vec::with_capacity(nslices + 1);
        slice_ptr.push(0u64);
        for s in 0..nslices {
            let width = (s * c..((s + 1) * c).min(n)).map(len).max().unwrap_or(0);
            slice_ptr.push(slice_ptr[s] + (width * c) as u64);
        }
        let stored = slice_ptr[nslices];
        limits.check("SELL", stored, a.nnz() as u64)?;
        to_u32(stored as usize, "SELL", "stored slots")?;
        let slice_ptr: Vec<u32> = slice_ptr.into_iter().map(|v| v as u32).collect();
        let mut col_idx = vec![PAD; stored as usize];
        let mut values = vec![V::default(); stored as usize];
        for (p, &r) in order.iter().enumerate() {
            let (s, lane) = (p / c, p % c);
            let (cols, vals) = a.row(r as usize);
            for (k, (&col, &v)) in cols.iter().zip(vals).enumerate() {
                let idx = slice_ptr[s] as usize + k * c + lane;
                col_idx[idx] = col;
                values[idx] = v;
            }
        }
        let sorted = params.sigma > 1;
        Ok(Sell {
            nrows: n,
            ncols: a.ncols,
            params,
            slice_ptr,
            col_idx,
            values,
            row_perm: sorted.then_some(order),
            stored: stored as usize,
            stats: a.stats,
            backend: Cpu::new(),
        })
    }

    /// Converts back to CSR (exact, original row order).
    ///
    /// # Errors
    /// Never for a valid SELL matrix.
    pub fn to_csr(&self) -> Result<Csr<Cpu, V>> {
        let (n, c) = (self.nrows, self.params.slice_height as usize);
        let mut rows: Vec<(Vec<u32>, Vec<V>)> = vec![(Vec::new(), Vec::new()); n];
        for p in 0..n {
            let r = self.row_perm.as_ref().map_or(p, |perm| perm[p] as usize);
            let (s, lane) = (p / c, p % c);
            let width = (self.slice_ptr[s + 1] - self.slice_ptr[s]) as usize / c;
            for k in 0..width {
                let idx = self.slice_ptr[s] as usize + k * c + lane;
                if self.col_idx[idx] == PAD {
                    break;
                }
                rows[r].0.push(self.col_idx[idx]);
                rows[r].1.push(self.values[idx]);
            }
        }
        let mut row_ptr = vec![0u32];
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        for (cols, vals) in rows {
            col_idx.extend(cols);
            values.extend(vals);
            row_ptr.push(col_idx.len() as u32);
        }
        Csr::new(n, self.ncols, row_ptr, col_idx, values)
    }
}

impl<B: BackendCore, V: Element> Sell<B, V> {
    /// Rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Stored nonzeros (padding excluded).
    pub fn nnz(&self) -> usize {
        self.stats.nnz
    }

    /// The parameters C and σ.
    pub fn params(&self) -> SellParams {
        self.params
    }

    /// Stored slots, padding included.
    pub fn stored(&self) -> usize {
        self.stored
    }

    /// Bytes of the stored arrays.
    pub fn storage_bytes(&self) -> usize {
        self.stored * (V::DTYPE.size() + 4)
            + 4 * (self.nrows.div_ceil(self.params.slice_height as usize) + 1)
            + if self.row_perm.is_some() {
                4 * self.nrows
            } else {
                0
            }
    }

    /// A copy on another backend.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if that device lacks `V`, or an allocation error.
    pub fn to_backend<B2: BackendCore>(&self, backend: &B2) -> Result<Sell<B2, V>> {
        backend.require::<V>("sparse matrices")?;
        let row_perm = match &self.row_perm {
            Some(p) => Some(backend.upload(&self.backend.download(p)?)?),
            None => None,
        };
        Ok(Sell {
            nrows: self.nrows,
            ncols: self.ncols,
            params: self.params,
            slice_ptr: backend.upload(&self.backend.download(&self.slice_ptr)?)?,
            col_idx: backend.upload(&self.backend.download(&self.col_idx)?)?,
            values: backend.upload(&self.backend.download(&self.values)?)?,
            row_perm,
            stored: self.stored,
            stats: self.stats,
            backend: backend.clone(),
        })
    }

    /// A copy in host memory.
    ///
    /// # Errors
    /// [`Error::Device`] if reading the device fails.
    pub fn to_host(&self) -> Result<Sell<Cpu, V>> {
        self.to_backend(&Cpu::new())
    }
}

impl<B: SparseOps, V: Element> Sell<B, V> {
    /// `y = alpha A x + beta y` in the original numbering (`y` not read when `beta = 0`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `x` does not have `ncols` or `y` `nrows` entries.
    pub fn spmv<T: Scalar>(
        &self,
        alpha: T,
        x: &Vector<B, T>,
        beta: T,
        y: &mut Vector<B, T>,
    ) -> Result<()> {
        check_len("Sell::spmv", "x", self.ncols, x.len())?;
        check_len("Sell::spmv", "y", self.nrows, y.len())?;
        self.backend
            .sell_spmv(self, alpha, x.buffer(), beta, y.buffer_mut())
    }
}

impl<B: SparseOps, V: Element> Sell<B, V> {
    /// `y = A x` for a square matrix, with `x · y` left on the device in `scalars[slot]`.
    ///
    /// # Errors
    /// As [`spmv_dot`](Self::spmv_dot); an out-of-range slot.
    pub fn spmv_dot_device<T: Scalar>(
        &self,
        x: &Vector<B, T>,
        y: &mut Vector<B, T>,
        scalars: &mut Vector<B, T>,
        slot: usize,
    ) -> Result<()> {
        check_len(
            "Sell::spmv_dot_device",
            "ncols (square matrix)",
            self.nrows,
            self.ncols,
        )?;
        check_len("Sell::spmv_dot_device", "x", self.ncols, x.len())?;
        check_len("Sell::spmv_dot_device", "y", self.nrows, y.len())?;
        if slot >= scalars.len() {
            return Err(Error::InvalidArgument {
                op: "Sell::spmv_dot_device",
                name: "slot",
                reason: format!("{slot} >= {} scalars", scalars.len()),
            });
        }
        self.backend.sell_spmv_dot_device(
            self,
            x.buffer(),
            y.buffer_mut(),
            scalars.buffer_mut(),
            slot,
        )
    }

    /// `y = A x` for a square matrix, returning `x · y`; one pass on devices.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the matrix is not square or a vector has the wrong
    /// length.
    pub fn spmv_dot<T: Scalar>(&self, x: &Vector<B, T>, y: &mut Vector<B, T>) -> Result<T> {
        check_len(
            "Sell::spmv_dot",
            "ncols (square matrix)",
            self.nrows,
            self.ncols,
        )?;
        check_len("Sell::spmv_dot", "x", self.ncols, x.len())?;
        check_len("Sell::spmv_dot", "y", self.nrows, y.len())?;
        self.backend.sell_spmv_dot(self, x.buffer(), y.buffer_mut())
    }
}

/// CPU kernel: slices in parallel; without sorting (σ = 1) each task writes its own slice
/// of `y`, with sorting the products are scattered through the permutation.
pub(crate) fn spmv_cpu<V: Element, T: Scalar>(
    a: &Sell<Cpu, V>,
    alpha: T,
    x: &[T],
    beta: T,
    y: &mut [T],
) {
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
    let update = |yi: &mut T, acc: T| {
        *yi = if beta == T::ZERO {
            alpha * acc
        } else {
            alpha * acc + beta * *yi
        }
    };
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

/// `Σ_k A[p, k] x[col]` for sorted row `p`: a known trip count (the slice width) and
/// unconditional loads of index and value let the compiler pipeline the loop; only the x
/// read is skipped for padding.
#[cube]
fn sell_row<V: Float, T: Float>(
    slice_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    values: &Array<V>,
    x: &Array<T>,
    p: usize,
    #[comptime] slice_height: usize,
) -> T {
    let s = p / slice_height;
    let begin = slice_ptr[s] as usize;
    let end = slice_ptr[s + 1] as usize;
    let width = (end - begin) / slice_height;
    let mut idx = begin + p % slice_height;
    let mut acc = T::new(0.0);
    for _k in 0..width {
        let c = col_idx[idx];
        let v = values[idx];
        if c != PAD {
            acc += T::cast_from(v) * x[c as usize];
        }
        idx += slice_height;
    }
    acc
}

/// One unit per sorted row `p`; slice `p / C`, lane `p % C`. Bytes per stored slot:
/// value + index; per slice: two offsets; per row: y (and the permutation entry).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sell_kernel<V: Float, T: Float>(
    slice_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    values: &Array<V>,
    row_perm: &Array<u32>,
    alpha: InputScalar,
    x: &Array<T>,
    beta: InputScalar,
    y: &mut Array<T>,
    nrows: usize,
    #[comptime] slice_height: usize,
    #[comptime] permuted: bool,
    #[comptime] beta_zero: bool,
) {
    let a = alpha.get::<T>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut p = ABSOLUTE_POS;
    while p < nrows {
        let acc = sell_row::<V, T>(slice_ptr, col_idx, values, x, p, slice_height);
        let mut row = p;
        if comptime![permuted] {
            row = row_perm[p] as usize;
        }
        if comptime![beta_zero] {
            y[row] = a * acc;
        } else {
            y[row] = a * acc + beta.get::<T>() * y[row];
        }
        p += stride;
    }
}

/// `y = A x` and partial sums of `x · y`, one per cube (square matrices): the SpMV and the
/// following inner product of CG in one pass, saving a read of `x` and `y`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sell_dot_kernel<V: Float, T: Float>(
    slice_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    values: &Array<V>,
    row_perm: &Array<u32>,
    x: &Array<T>,
    y: &mut Array<T>,
    partials: &mut Array<T>,
    nrows: usize,
    #[comptime] slice_height: usize,
    #[comptime] permuted: bool,
    #[comptime] cube_dim: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut p = ABSOLUTE_POS;
    let mut dot = T::new(0.0);
    while p < nrows {
        let acc = sell_row::<V, T>(slice_ptr, col_idx, values, x, p, slice_height);
        let mut row = p;
        if comptime![permuted] {
            row = row_perm[p] as usize;
        }
        y[row] = acc;
        dot += x[row] * acc;
        p += stride;
    }
    crate::vector::cube::cube_sum_to::<T>(dot, partials, cube_dim);
}

/// Launches [`sell_dot_kernel`] and returns the per-cube partials of `x · y`.
fn spmv_dot_partials<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Sell<Cube<R>, V>,
    x: &CubeBuffer<T>,
    y: &mut CubeBuffer<T>,
) -> CubeBuffer<T> {
    // At most `reduce_cubes` cubes (8192): measured on an H200, the full element-wise grid
    // (65535 cubes) made the one-cube finishing pass over the partials cost more than the
    // extra parallelism saved (CG on Poisson 256³: 1.03 ms per iteration against 0.88 ms).
    let (cubes, count, dim) = crate::vector::cube::reduce_shape(b, a.nrows * 4, 4);
    let out = crate::vector::cube::partials::<R, T>(b, cubes);
    let perm = a.row_perm.as_ref().unwrap_or(&a.slice_ptr);
    // SAFETY: as for sell_kernel; the matrix is square (checked by the caller), so x is
    // indexed by rows as well; `out` holds one slot per cube.
    unsafe {
        sell_dot_kernel::launch_unchecked::<V, T, R>(
            b.client(),
            count,
            dim,
            a.slice_ptr.arg(),
            a.col_idx.arg(),
            a.values.arg(),
            perm.arg(),
            x.arg(),
            y.arg(),
            out.arg(),
            a.nrows,
            a.params.slice_height as usize,
            a.row_perm.is_some(),
            dim.x as usize,
        )
    }
    out
}

/// `y = A x`, returning `x · y`.
pub(crate) fn spmv_dot_cube<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Sell<Cube<R>, V>,
    x: &CubeBuffer<T>,
    y: &mut CubeBuffer<T>,
) -> Result<T> {
    if a.nrows == 0 {
        return Ok(T::ZERO);
    }
    let out = spmv_dot_partials(b, a, x, y);
    Ok(T::from_f64(crate::vector::cube::finish_sum(b, &out)?))
}

/// `y = A x` with `x · y` left on the device in `scalars[slot]`.
pub(crate) fn spmv_dot_device_cube<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Sell<Cube<R>, V>,
    x: &CubeBuffer<T>,
    y: &mut CubeBuffer<T>,
    scalars: &mut CubeBuffer<T>,
    slot: usize,
) -> Result<()> {
    if a.nrows == 0 {
        return crate::vector::VectorOps::fill(b, T::ZERO, scalars);
    }
    let out = spmv_dot_partials(b, a, x, y);
    crate::vector::cube::finish(b, &out, scalars, slot, 0);
    Ok(())
}

/// Launches [`sell_kernel`].
pub(crate) fn spmv_cube<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Sell<Cube<R>, V>,
    alpha: T,
    x: &CubeBuffer<T>,
    beta: T,
    y: &mut CubeBuffer<T>,
) {
    if a.nrows == 0 {
        return;
    }
    let (count, dim) = grid(b, a.nrows);
    // The permutation argument must be bound even when unused: bind slice_ptr instead.
    let perm = a.row_perm.as_ref().unwrap_or(&a.slice_ptr);
    // SAFETY: SELL invariants (built on the host): slice_ptr has nslices + 1 offsets into
    // col_idx/values, columns are < ncols or PAD, row_perm is a permutation of 0..nrows;
    // x has ncols and y nrows entries (checked by Sell::spmv).
    unsafe {
        sell_kernel::launch_unchecked::<V, T, R>(
            b.client(),
            count,
            dim,
            a.slice_ptr.arg(),
            a.col_idx.arg(),
            a.values.arg(),
            perm.arg(),
            scalar(alpha),
            x.arg(),
            scalar(beta),
            y.arg(),
            a.nrows,
            a.params.slice_height as usize,
            a.row_perm.is_some(),
            beta == T::ZERO,
        )
    }
}
