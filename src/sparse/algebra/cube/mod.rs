//! The sparse algebra on CubeCL devices: a unit per row (or per aggregate; SpGEMM: a plane per
//! row of long rows), an exclusive scan that also measures the rows it offsets, and no
//! floating-point atomics.
//!
//! Each kernel makes the CPU reference's choices in the CPU's order (see the
//! [module docs](super)): SpGEMM merges the selected rows of `B` by their sorted columns
//! with one cursor per entry of `A`'s row: a unit per row with its cursors in shared memory,
//! summing each output entry's terms in the order of `A`'s row as the CPU does; or, on
//! devices with 32-lane planes and for a matrix with a row above 32 entries, a plane per row
//! with the cursors in registers, each lane summing its terms in order and the plane adding
//! the lanes by a fixed tree (deterministic, rounded differently). Rows above the kernel's
//! limit (64 and 128 entries) are cut into pieces (32 and 128), a unit or plane each, then
//! summed in order by a second product. Transposes and aggregate member lists are filled
//! through 32-bit atomic cursors and then sorted per row (a transpose's rows by rank, a unit
//! per entry, unless rows above 1024 entries make `Σ L²` exceed 2³²: then by merging runs).
//! The
//! kernels are in [`kernels`] and [`aggregate_kernels`]; their host side is this file,
//! `spgemm.rs` and `aggregate.rs`.

use cubecl::prelude::*;

use super::{Aggregates, NearNullSpace, SparseAlgebraOps};
use crate::backend::core::BackendCore;
use crate::backend::cube::{scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::csr::Csr;
use crate::sparse::sell::{Sell, SellParams};
use crate::sparse::{to_u32, CsrKernel, FormatLimits, RowStats};
use crate::vector::VectorOps;

mod aggregate;
mod aggregate_kernels;
mod from_block_ell;
mod kernels;
mod spgemm;
mod spgemm_kernels;

use aggregate_kernels::*;
use kernels::*;

// ---------------------------------------------------------------------------------------
// Host side

impl<R: CubeRuntime> Cube<R> {
    /// The row pointers of rows with `counts` entries (`n + 1` offsets), the total, and the
    /// rows' statistics (`ncols` for them).
    pub(super) fn exclusive_scan(
        &self,
        counts: &CubeBuffer<u32>,
        n: usize,
        ncols: usize,
        what: &str,
    ) -> Result<(CubeBuffer<u32>, usize, RowStats)> {
        let tiles = n.div_ceil(TILE).max(1);
        let cubes = tiles.min(65535) as u32;
        let sums = self.alloc::<u32>(tiles)?;
        let stats = self.alloc::<u32>(4 * tiles)?;
        let squares = self.alloc::<f32>(tiles)?;
        let dim = CubeDim::new_1d(SCAN_UNITS as u32);
        self.launch::<()>((), || {
            // SAFETY: a cube per tile (grid-stride over tiles); every index below n or tiles
            // (the arrays have tiles and 4 tiles entries).
            unsafe {
                tile_stats_kernel::launch_unchecked::<R>(
                    self.client(),
                    CubeCount::Static(cubes, 1, 1),
                    dim,
                    counts.arg(),
                    n,
                    tiles,
                    sums.arg(),
                    stats.arg(),
                    squares.arg(),
                )
            }
        })?;
        // The three reads started together, then waited for (one round trip, not three).
        let (sums_h, stats_h, squares_h) = (
            self.download_later(&sums)?,
            self.download_later(&stats)?,
            self.download_later(&squares)?,
        );
        let (sums_h, stats_h, squares_h) = (sums_h.wait()?, stats_h.wait()?, squares_h.wait()?);
        drop((sums, stats, squares));
        let mut offsets = Vec::with_capacity(tiles);
        let mut total = 0u64;
        let (mut big, mut small, mut zero, mut sq) = (0u32, u32::MAX, 0u64, 0f64);
        for t in 0..tiles {
            if stats_h[4 * t] != 0 || total > u64::from(u32::MAX) {
                break;
            }
            offsets.push(total as u32);
            total += u64::from(sums_h[t]);
            big = big.max(stats_h[4 * t + 1]);
            small = small.min(stats_h[4 * t + 2]);
            zero += u64::from(stats_h[4 * t + 3]);
            sq += f64::from(squares_h[t]);
        }
        if offsets.len() < tiles || total > u64::from(u32::MAX) {
            // The scan stopped at the first tile past 2³² or whose own sum wrapped: the
            // tiles' sum where it did not wrap, at least 2³² entries.
            let entries = sums_h.iter().map(|&v| u64::from(v)).sum::<u64>();
            return Err(Error::ResourceLimit {
                backend: self.info().to_string(),
                what: format!("{what}: 2^32 or more entries (u32 offsets)"),
                requested: entries.max(1 << 32),
                limit: u64::from(u32::MAX),
            });
        }
        offsets.push(total as u32);
        let offsets = self.upload(&offsets)?;
        let out = self.alloc_uninit::<u32>(n + 1)?;
        self.launch::<()>((), || {
            // SAFETY: as above; out has n + 1 entries.
            unsafe {
                scan_apply_kernel::launch_unchecked::<R>(
                    self.client(),
                    CubeCount::Static(cubes, 1, 1),
                    dim,
                    counts.arg(),
                    n,
                    tiles,
                    offsets.arg(),
                    out.arg(),
                )
            }
        })?;
        let mean = if n > 0 { total as f64 / n as f64 } else { 0.0 };
        let var = if n > 0 {
            (sq / n as f64 - mean * mean).max(0.0)
        } else {
            0.0
        };
        let stats = RowStats {
            nrows: n,
            ncols,
            nnz: total as usize,
            min: if n == 0 { 0 } else { small as usize },
            max: big as usize,
            mean,
            std_dev: var.sqrt(),
            empty_rows: zero as usize,
        };
        Ok((out, total as usize, stats))
    }

    /// A CSR matrix from device arrays.
    pub(super) fn csr_from<V: Element>(
        &self,
        (nrows, ncols): (usize, usize),
        row_ptr: CubeBuffer<u32>,
        col_idx: CubeBuffer<u32>,
        values: CubeBuffer<V>,
        stats: RowStats,
    ) -> Csr<Self, V> {
        Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
            stats,
            kernel: CsrKernel::Auto,
            backend: self.clone(),
        }
    }

    /// Rows whose flag is 1 numbered from `base` in index order into `agg` (the others kept
    /// or set to NONE); returns how many.
    fn number(
        &self,
        flags: &CubeBuffer<u32>,
        base: u32,
        agg: &mut CubeBuffer<u32>,
        n: usize,
        keep: bool,
    ) -> Result<usize> {
        let (prefix, total, _) = self.exclusive_scan(flags, n, 0, "aggregates")?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>(keep, || {
            // SAFETY: every array holds n values (prefix n + 1).
            unsafe {
                number_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    flags.arg(),
                    prefix.arg(),
                    base,
                    agg.arg(),
                    n,
                    keep,
                )
            }
        })?;
        Ok(total)
    }
}

impl<R: CubeRuntime> SparseAlgebraOps for Cube<R> {
    fn csr_diagonal<V: Scalar>(&self, a: &Csr<Self, V>) -> Result<CubeBuffer<V>> {
        let n = a.nrows.min(a.ncols);
        let d = self.alloc_uninit::<V>(n)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<V>((), || {
            // SAFETY: the CSR invariants; d has n ≤ nrows values.
            unsafe {
                diagonal_kernel::launch_unchecked::<V, R>(
                    self.client(),
                    count,
                    dim,
                    a.row_ptr.arg(),
                    a.col_idx.arg(),
                    a.values.arg(),
                    d.arg(),
                    n,
                )
            }
        })?;
        Ok(d)
    }

    fn csr_row_abs_sums<V: Scalar>(&self, a: &Csr<Self, V>) -> Result<CubeBuffer<V>> {
        let n = a.nrows;
        let d = self.alloc_uninit::<V>(n)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<V>((), || {
            // SAFETY: the CSR invariants; d has nrows values.
            unsafe {
                row_abs_sums_kernel::launch_unchecked::<V, R>(
                    self.client(),
                    count,
                    dim,
                    a.row_ptr.arg(),
                    a.values.arg(),
                    d.arg(),
                    n,
                )
            }
        })?;
        Ok(d)
    }

    fn csr_strength<V: Scalar>(&self, a: &Csr<Self, V>, theta: f64) -> Result<Csr<Self, V>> {
        let n = a.nrows;
        let d = self.csr_diagonal(a)?;
        let (count, dim) = self.config().grid(n);
        // The counting pass, then the fill at the scanned offsets (the unused arrays of each
        // pass are small dummies).
        let pass = |row_ptr: &CubeBuffer<u32>,
                    cols: &CubeBuffer<u32>,
                    vals: &CubeBuffer<V>,
                    counts: &CubeBuffer<u32>,
                    fill: bool| {
            self.launch::<V>(fill, || {
                // SAFETY: the CSR invariants; d and counts have n values; with `fill`,
                // row_ptr offsets each row's strong entries within the arrays filled.
                unsafe {
                    strength_kernel::launch_unchecked::<V, R>(
                        self.client(),
                        count.clone(),
                        dim,
                        a.row_ptr.arg(),
                        a.col_idx.arg(),
                        a.values.arg(),
                        d.arg(),
                        scalar(V::from_f64(theta)),
                        row_ptr.arg(),
                        cols.arg(),
                        vals.arg(),
                        counts.arg(),
                        n,
                        fill,
                    )
                }
            })
        };
        self.count_then_fill("the strength graph", n, a.ncols, pass)
    }

    fn csr_transpose<V: Scalar>(&self, a: &Csr<Self, V>) -> Result<Csr<Self, V>> {
        let (n, m) = (a.nrows, a.ncols);
        let counts = self.alloc::<u32>(m)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: columns are below ncols = len(counts).
            unsafe {
                column_counts_kernel::launch_unchecked::<R>(
                    self.client(),
                    count.clone(),
                    dim,
                    a.row_ptr.arg(),
                    a.col_idx.arg(),
                    counts.arg(),
                    n,
                )
            }
        })?;
        let (t_ptr, nnz, stats) = self.exclusive_scan(&counts, m, n, "the transpose")?;
        debug_assert_eq!(nnz, a.nnz());
        if !self.loops_fit(stats.max.saturating_mul(stats.max) / 2 + a.stats.max) {
            return a.to_host()?.transpose().to_backend(self);
        }
        let mut cursor = counts;
        self.fill_u32(&mut cursor, 0)?;
        // Filled in any order with each entry's row, then sorted out of place a unit per
        // entry (L comparisons each for a row of L), where the rows are at most
        // RANK_SORT_MAX long or their comparisons (Σ L² = m (mean² + σ²)) stay within
        // RANK_SORT_WORK; else sorted in place by merging runs.
        let work = m as f64 * (stats.mean * stats.mean + stats.std_dev * stats.std_dev);
        let rank = stats.max <= RANK_SORT_MAX || work <= RANK_SORT_WORK;
        let mut cols = self.alloc_uninit::<u32>(nnz)?;
        let mut vals = self.alloc_uninit::<V>(nnz)?;
        let rows = self.alloc_uninit::<u32>(if rank { nnz } else { 1 })?;
        self.launch::<V>(rank, || {
            // SAFETY: each column's entries land in its row of the transpose (t_ptr, cursor
            // counting up to the column's count); with `rank`, rows has a slot per entry.
            unsafe {
                transpose_fill_kernel::launch_unchecked::<V, R>(
                    self.client(),
                    count,
                    dim,
                    a.row_ptr.arg(),
                    a.col_idx.arg(),
                    a.values.arg(),
                    t_ptr.arg(),
                    cursor.arg(),
                    cols.arg(),
                    vals.arg(),
                    rows.arg(),
                    n,
                    rank,
                )
            }
        })?;
        drop(cursor);
        if rank {
            let sorted_cols = self.alloc_uninit::<u32>(nnz)?;
            let sorted_vals = self.alloc_uninit::<V>(nnz)?;
            let (count, dim) = self.config().grid(nnz);
            self.launch::<V>((), || {
                // SAFETY: rows names each entry's row of t_ptr (m + 1 offsets); ranks are
                // distinct within a row, below its length.
                unsafe {
                    rank_sort_kernel::launch_unchecked::<V, R>(
                        self.client(),
                        count,
                        dim,
                        t_ptr.arg(),
                        rows.arg(),
                        cols.arg(),
                        vals.arg(),
                        sorted_cols.arg(),
                        sorted_vals.arg(),
                        nnz,
                    )
                }
            })?;
            (cols, vals) = (sorted_cols, sorted_vals);
        } else {
            self.sort_rows(&t_ptr, &mut cols, &mut vals, m, stats.max)?;
        }
        Ok(self.csr_from((m, n), t_ptr, cols, vals, stats))
    }

    fn csr_spgemm<V: Scalar>(&self, a: &Csr<Self, V>, b: &Csr<Self, V>) -> Result<Csr<Self, V>> {
        self.spgemm_on_device(a, b)
    }

    fn block_ell_to_csr<V: Scalar>(
        &self,
        a: &crate::sparse::block_ell::BlockEll<Self, V>,
    ) -> Result<Csr<Self, f64>> {
        self.block_ell_csr(a)
    }

    fn csr_convert<V: Scalar, W: Scalar>(&self, a: &Csr<Self, V>) -> Result<Csr<Self, W>> {
        let mut values = self.alloc_uninit::<W>(a.nnz())?;
        // SAFETY: both value buffers hold nnz entries of this backend.
        unsafe { self.convert(&a.values, &mut values)? };
        Ok(self.csr_from(
            (a.nrows, a.ncols),
            self.duplicate(&a.row_ptr)?,
            self.duplicate(&a.col_idx)?,
            values,
            a.stats,
        ))
    }

    fn csr_to_sell<V: Scalar>(
        &self,
        a: &Csr<Self, V>,
        slice_height: u32,
        limits: &FormatLimits,
    ) -> Result<Sell<Self, V>> {
        let (n, c) = (a.nrows, slice_height as usize);
        let nslices = n.div_ceil(c);
        let widths = self.alloc_uninit::<u32>(nslices)?;
        if nslices > 0 {
            let (count, dim) = self.config().grid(nslices);
            self.launch::<()>(slice_height, || {
                // SAFETY: row_ptr has n + 1 offsets (rows past n are not read); widths has
                // nslices slots.
                unsafe {
                    sell_widths_kernel::launch_unchecked::<R>(
                        self.client(),
                        count,
                        dim,
                        a.row_ptr.arg(),
                        widths.arg(),
                        n,
                        nslices,
                        slice_height,
                    )
                }
            })?;
        }
        // The widths' sum is at most the nonzeros (below 2³²); the slots, `c` times it, are
        // checked against the padding limit first, then against 32-bit offsets, as the host
        // conversion does.
        let (slice_ptr, width_sum, _) =
            self.exclusive_scan(&widths, nslices, 0, "SELL's slice widths")?;
        drop(widths);
        let slots = width_sum as u64 * u64::from(slice_height);
        limits.check("SELL", slots, a.nnz() as u64)?;
        let stored = to_u32(
            usize::try_from(slots).unwrap_or(usize::MAX),
            "SELL",
            "stored slots",
        )? as usize;
        if stored > 0 && slice_height > 1 {
            let (count, dim) = self.config().grid(nslices + 1);
            self.launch::<()>((), || {
                // SAFETY: slice_ptr has nslices + 1 entries, each at most width_sum, so c
                // times it is at most `stored` (< 2³²).
                unsafe {
                    scale_u32_kernel::launch_unchecked::<R>(
                        self.client(),
                        count,
                        dim,
                        slice_ptr.arg(),
                        slice_height,
                        nslices + 1,
                    )
                }
            })?;
        }
        let cols = self.alloc_uninit::<u32>(stored)?;
        let vals = self.alloc_uninit::<V>(stored)?;
        let positions = nslices * c;
        if stored > 0 {
            let (count, dim) = self.config().grid(positions);
            self.launch::<V>(slice_height, || {
                // SAFETY: the CSR invariants of `a`; slice_ptr has nslices + 1 offsets whose
                // last is `stored`, each slice's slots `c` times its width ≥ its rows'
                // lengths, so every slot written is below `stored` and written once.
                unsafe {
                    sell_fill_kernel::launch_unchecked::<V, R>(
                        self.client(),
                        count,
                        dim,
                        a.row_ptr.arg(),
                        a.col_idx.arg(),
                        a.values.arg(),
                        slice_ptr.arg(),
                        cols.arg(),
                        vals.arg(),
                        n,
                        positions,
                        slice_height,
                    )
                }
            })?;
        }
        Ok(Sell {
            nrows: n,
            ncols: a.ncols,
            params: SellParams {
                slice_height,
                sigma: 1,
            },
            slice_ptr,
            col_idx: cols,
            values: vals,
            row_perm: None,
            stored,
            stats: a.stats,
            backend: self.clone(),
        })
    }

    fn csr_aggregate<V: Scalar>(&self, s: &Csr<Self, V>) -> Result<Aggregates<Self>> {
        self.aggregate_on_device(s)
    }

    fn tentative_prolongator(
        &self,
        agg: &Aggregates<Self>,
        b: &NearNullSpace<Self>,
    ) -> Result<(Csr<Self, f64>, NearNullSpace<Self>)> {
        self.tentative_on_device(agg, b)
    }

    fn smoothed_prolongator(
        &self,
        a: &Csr<Self, f64>,
        t: &Csr<Self, f64>,
        diag: &CubeBuffer<f64>,
        omega: f64,
    ) -> Result<Csr<Self, f64>> {
        let p = self.csr_spgemm(a, t)?;
        let n = p.nrows;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: P and T have n rows; diag has n values.
            unsafe {
                smooth_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    p.row_ptr.arg(),
                    p.col_idx.arg(),
                    p.values.arg(),
                    t.row_ptr.arg(),
                    t.col_idx.arg(),
                    t.values.arg(),
                    diag.arg(),
                    scalar(omega),
                    n,
                )
            }
        })?;
        Ok(p)
    }

    fn count_nonpositive(&self, x: &CubeBuffer<f64>) -> Result<usize> {
        self.flag_values(x, false).map(usize::from)
    }

    fn any_zero(&self, x: &CubeBuffer<f64>) -> Result<bool> {
        self.flag_values(x, true)
    }

    fn strided_ones(&self, n: usize, step: usize) -> Result<CubeBuffer<f64>> {
        let x = self.alloc_uninit::<f64>(n)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: x has n values; step >= 1 (checked by NearNullSpace::strided).
            unsafe {
                strided_ones_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    x.arg(),
                    step.max(1),
                    n,
                )
            }
        })?;
        Ok(x)
    }

    fn hash_vector(&self, n: usize, seed: u32) -> Result<CubeBuffer<f64>> {
        let x = self.alloc_uninit::<f64>(n)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: x has n values.
            unsafe {
                hash_vector_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    x.arg(),
                    seed,
                    n,
                )
            }
        })?;
        Ok(x)
    }
}

/// The iterations one kernel invocation may loop through on Mesa's llvmpipe (lavapipe),
/// which stops every loop of a shader invocation after 65535 iterations in all
/// (`LP_MAX_TGSI_LOOP_ITERATIONS`) and carries on with a wrong result; measured here with
/// SpGEMM rows (a merge of 200 rows stopped after 162 of its 200 columns).
const LLVMPIPE_LOOP_BUDGET: usize = 60_000;

impl<R: CubeRuntime> Cube<R> {
    /// Whether a kernel whose invocations loop `iterations` times can run here: always,
    /// except on llvmpipe above its loop budget (the caller then computes on the host).
    fn loops_fit(&self, iterations: usize) -> bool {
        iterations <= LLVMPIPE_LOOP_BUDGET || !self.info().device.contains("llvmpipe")
    }

    /// Whether an entry of `x` is zero (`zeros`) or not `> 0` (NaN included).
    fn flag_values(&self, x: &CubeBuffer<f64>, zeros: bool) -> Result<bool> {
        let n = x.len();
        let flag = self.alloc::<u32>(1)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: x has n values, flag 1.
            unsafe {
                flag_values_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    x.arg(),
                    flag.arg(),
                    n,
                    zeros,
                )
            }
        })?;
        Ok(self.download(&flag)?[0] != 0)
    }

    /// Sorts each row of a CSR pattern by column, values along; `longest`: the longest
    /// row (above [`SORT_RUN`], a scratch copy of the entries is allocated for merging).
    pub(super) fn sort_rows<V: Scalar>(
        &self,
        row_ptr: &CubeBuffer<u32>,
        cols: &mut CubeBuffer<u32>,
        vals: &mut CubeBuffer<V>,
        n: usize,
        longest: usize,
    ) -> Result<()> {
        let long = longest > SORT_RUN;
        let slots = if long { cols.len() } else { 1 };
        let (tmp_c, tmp_v) = (
            self.alloc_uninit::<u32>(slots)?,
            self.alloc_uninit::<V>(slots)?,
        );
        let (count, dim) = self.config().grid(n);
        self.launch::<V>(long, || {
            // SAFETY: row_ptr offsets rows within cols and vals; with `long`, the scratch
            // arrays have a slot per entry (else the kernel does not touch them).
            unsafe {
                sort_rows_kernel::launch_unchecked::<V, R>(
                    self.client(),
                    count,
                    dim,
                    row_ptr.arg(),
                    cols.arg(),
                    vals.arg(),
                    tmp_c.arg(),
                    tmp_v.arg(),
                    n,
                    long,
                )
            }
        })
    }

    /// `x = value` for a u32 buffer of this backend.
    fn fill_u32(&self, x: &mut CubeBuffer<u32>, value: u32) -> Result<()> {
        let n = x.len();
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: x has n values.
            unsafe {
                fill_u32_kernel::launch_unchecked::<R>(self.client(), count, dim, x.arg(), value, n)
            }
        })
    }
}
