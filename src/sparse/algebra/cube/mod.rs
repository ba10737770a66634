//! The sparse algebra on CubeCL devices: a unit per row (or per aggregate) everywhere, an
//! exclusive scan that also measures the rows it offsets, and no floating-point atomics.
//!
//! Each kernel makes the CPU reference's choices in the CPU's order (see the
//! [module docs](super)): SpGEMM merges the selected rows of `B` by their sorted columns
//! with one cursor per entry of `A`'s row (cursor slots laid out per unit, so a plane's
//! accesses coalesce), so each output entry sums its terms in the order of `A`'s row, as the
//! CPU does (a row above 64 entries in pieces of 32: a unit per piece, then the pieces
//! summed in order by a second product); transposes and aggregate member lists are filled
//! through 32-bit atomic cursors and then sorted per row (long rows by merging runs). The
//! kernels are in [`kernels`] and [`aggregate_kernels`]; this file is the host side.

use cubecl::prelude::*;

use super::{Aggregates, NearNullSpace, SparseAlgebraOps};
use crate::backend::core::BackendCore;
use crate::backend::cube::{copy_words_kernel, scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::csr::Csr;
use crate::sparse::{CsrKernel, RowStats};
use crate::vector::VectorOps;

mod aggregate_kernels;
mod from_block_ell;
mod kernels;

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
        let (sums_h, stats_h, squares_h) = (
            self.download(&sums)?,
            self.download(&stats)?,
            self.download(&squares)?,
        );
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
            return Err(Error::ResourceLimit {
                backend: self.info().to_string(),
                what: format!("{what}: 2^32 or more entries (u32 offsets)"),
                requested: total,
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

    fn u32_copy(&self, x: &CubeBuffer<u32>) -> Result<CubeBuffer<u32>> {
        let n = x.len();
        let y = self.alloc_uninit::<u32>(n)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: both buffers hold n values.
            unsafe {
                copy_words_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    x.arg(),
                    y.arg(),
                    n,
                )
            }
        })?;
        Ok(y)
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
        let counts = self.alloc_uninit::<u32>(n)?;
        let (count, dim) = self.config().grid(n);
        // The unused arrays of each pass are bound to small dummies.
        let dummy_u = self.alloc::<u32>(1)?;
        let dummy_u2 = self.alloc::<u32>(1)?;
        let dummy_v = self.alloc::<V>(1)?;
        self.launch::<V>(false, || {
            // SAFETY: the CSR invariants; d and counts have n values; the fill arrays are
            // not touched when fill is false.
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
                    dummy_u.arg(),
                    dummy_u2.arg(),
                    dummy_v.arg(),
                    counts.arg(),
                    n,
                    false,
                )
            }
        })?;
        let (row_ptr, nnz, stats) =
            self.exclusive_scan(&counts, n, a.ncols, "the strength graph")?;
        drop(counts);
        let cols = self.alloc_uninit::<u32>(nnz)?;
        let vals = self.alloc_uninit::<V>(nnz)?;
        self.launch::<V>(true, || {
            // SAFETY: row_ptr offsets each row's strong entries within nnz.
            unsafe {
                strength_kernel::launch_unchecked::<V, R>(
                    self.client(),
                    count,
                    dim,
                    a.row_ptr.arg(),
                    a.col_idx.arg(),
                    a.values.arg(),
                    d.arg(),
                    scalar(V::from_f64(theta)),
                    row_ptr.arg(),
                    cols.arg(),
                    vals.arg(),
                    dummy_u2.arg(),
                    n,
                    true,
                )
            }
        })?;
        Ok(self.csr_from((n, a.ncols), row_ptr, cols, vals, stats))
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
        let mut cols = self.alloc_uninit::<u32>(nnz)?;
        let mut vals = self.alloc_uninit::<V>(nnz)?;
        self.launch::<V>((), || {
            // SAFETY: each column's entries land in its row of the transpose (t_ptr, cursor
            // counting up to the column's count).
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
                    n,
                )
            }
        })?;
        drop(cursor);
        self.sort_rows(&t_ptr, &mut cols, &mut vals, m, stats.max)?;
        Ok(self.csr_from((m, n), t_ptr, cols, vals, stats))
    }

    fn csr_spgemm<V: Scalar>(&self, a: &Csr<Self, V>, b: &Csr<Self, V>) -> Result<Csr<Self, V>> {
        let n = a.nrows;
        // A row's merge takes at most (its length) x (the columns it selects) steps.
        let (la, lb) = (a.stats.max, b.stats.max);
        if !self.loops_fit(la.saturating_mul(la.saturating_mul(lb)).saturating_mul(2)) {
            let c = super::host::spgemm(&a.to_host()?, &b.to_host()?)?;
            return c.to_backend(self);
        }
        if la > SPGEMM_SPLIT_ABOVE && n > 0 {
            return self.spgemm_split(a, b);
        }
        // Units: enough for every row, but at most SPGEMM_SLOTS cursor slots in all (a unit
        // has a slot per entry of A's longest row) and the grid's most cubes.
        let cubes = n
            .min(SPGEMM_SLOTS / la.max(1))
            .max(1)
            .div_ceil(SPGEMM_DIM)
            .min(self.config().max_cubes as usize);
        let units = cubes * SPGEMM_DIM;
        let slots = units * la.max(1);
        let cur = self.alloc_uninit::<u32>(slots)?;
        let col = self.alloc_uninit::<u32>(slots)?;
        let (count, dim) = (
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(SPGEMM_DIM as u32),
        );
        let counts = self.alloc_uninit::<u32>(n)?;
        let dummy_u = self.alloc::<u32>(1)?;
        let dummy_u2 = self.alloc::<u32>(1)?;
        let dummy_v = self.alloc::<V>(1)?;

        // The symbolic pass (counts) and the numeric one (fill at c_ptr), one kernel.
        let pass = |c_ptr: &CubeBuffer<u32>,
                    cols: &CubeBuffer<u32>,
                    vals: &CubeBuffer<V>,
                    counts: &CubeBuffer<u32>,
                    fill: bool| {
            self.launch::<V>(fill, || {
                // SAFETY: the CSR invariants of A and B (A's columns index B's rows); cur
                // and col have a slot per unit for each entry of the longest row of A,
                // counts one per row; with `fill`, c_ptr offsets each row's count, which
                // the numeric pass reproduces.
                unsafe {
                    spgemm_kernel::launch_unchecked::<V, R>(
                        self.client(),
                        count.clone(),
                        dim,
                        a.row_ptr.arg(),
                        a.col_idx.arg(),
                        a.values.arg(),
                        b.row_ptr.arg(),
                        b.col_idx.arg(),
                        b.values.arg(),
                        cur.arg(),
                        col.arg(),
                        c_ptr.arg(),
                        cols.arg(),
                        vals.arg(),
                        counts.arg(),
                        n,
                        fill,
                    )
                }
            })
        };
        pass(&dummy_u, &dummy_u2, &dummy_v, &counts, false)?;
        let (c_ptr, nnz, stats) = self.exclusive_scan(&counts, n, b.ncols, "the product")?;
        drop(counts);
        let cols = self.alloc_uninit::<u32>(nnz)?;
        let vals = self.alloc_uninit::<V>(nnz)?;
        pass(&c_ptr, &cols, &vals, &dummy_u2, true)?;
        Ok(self.csr_from((n, b.ncols), c_ptr, cols, vals, stats))
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
            self.u32_copy(&a.row_ptr)?,
            self.u32_copy(&a.col_idx)?,
            values,
            a.stats,
        ))
    }

    fn csr_aggregate<V: Scalar>(&self, s: &Csr<Self, V>) -> Result<Aggregates<Self>> {
        let n = s.nrows;
        if !self.loops_fit(s.stats.max) {
            let (agg, count) = super::aggregate::aggregate(&s.to_host()?);
            return Ok(Aggregates {
                agg: self.upload(&agg)?,
                count,
                backend: self.clone(),
            });
        }
        let mut state = self.alloc_uninit::<u32>(n)?;
        self.fill_u32(&mut state, super::aggregate::UNDECIDED)?;
        let (m1h, m1l) = (self.alloc_uninit::<u32>(n)?, self.alloc_uninit::<u32>(n)?);
        let (m2h, m2l) = (self.alloc_uninit::<u32>(n)?, self.alloc_uninit::<u32>(n)?);
        let mut left = self.alloc::<u32>(1)?;
        let (count, dim) = self.config().grid(n);
        // Every round decides at least the undecided node of largest key.
        for _round in 0..=n {
            self.write(&mut left, &[0])?;
            self.launch::<()>(true, || {
                // SAFETY: the CSR invariants (columns below n); every array has n values.
                unsafe {
                    spread_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        s.row_ptr.arg(),
                        s.col_idx.arg(),
                        state.arg(),
                        m2h.arg(),
                        m2l.arg(),
                        m1h.arg(),
                        m1l.arg(),
                        n,
                        true,
                    )
                }
            })?;
            self.launch::<()>(false, || {
                // SAFETY: as above.
                unsafe {
                    spread_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        s.row_ptr.arg(),
                        s.col_idx.arg(),
                        state.arg(),
                        m1h.arg(),
                        m1l.arg(),
                        m2h.arg(),
                        m2l.arg(),
                        n,
                        false,
                    )
                }
            })?;
            self.launch::<()>((), || {
                // SAFETY: every array has n values; left has 1.
                unsafe {
                    decide_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        state.arg(),
                        m2h.arg(),
                        m2l.arg(),
                        left.arg(),
                        n,
                    )
                }
            })?;
            if self.download(&left)?[0] == 0 {
                break;
            }
        }
        drop((m1l, m2h, m2l));
        // Roots numbered in index order.
        let mut flags = m1h;
        let flag = |flags: &mut CubeBuffer<u32>, source: &CubeBuffer<u32>, value: u32| {
            self.launch::<()>((), || {
                // SAFETY: both arrays have n values.
                unsafe {
                    flags_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        source.arg(),
                        value,
                        flags.arg(),
                        n,
                    )
                }
            })
        };
        flag(&mut flags, &state, super::aggregate::ROOT)?;
        let mut agg = self.alloc_uninit::<u32>(n)?;
        let mut total = self.number(&flags, 0, &mut agg, n, false)?;
        let mut other = self.alloc_uninit::<u32>(n)?;
        for roots_only in [true, false] {
            self.launch::<()>(roots_only, || {
                // SAFETY: the CSR invariants; every array has n values; aggregates are
                // below the roots' count.
                unsafe {
                    place_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        s.row_ptr.arg(),
                        s.col_idx.arg(),
                        state.arg(),
                        agg.arg(),
                        other.arg(),
                        n,
                        roots_only,
                    )
                }
            })?;
            std::mem::swap(&mut agg, &mut other);
        }
        drop(other);
        // Nodes no root reaches: aggregates of their own.
        flag(&mut flags, &agg, NONE)?;
        drop(state);
        total += self.number(&flags, total as u32, &mut agg, n, true)?;
        Ok(Aggregates {
            agg,
            count: total,
            backend: self.clone(),
        })
    }

    fn tentative_prolongator(
        &self,
        agg: &Aggregates<Self>,
        b: &NearNullSpace<Self>,
    ) -> Result<(Csr<Self, f64>, NearNullSpace<Self>)> {
        let (n, count, k) = (agg.len(), agg.count, b.k);
        let (grid_n, dim) = self.config().grid(n);
        let (grid_g, _) = self.config().grid(count);
        let sizes = self.alloc::<u32>(count)?;
        self.launch::<()>((), || {
            // SAFETY: aggregates are below count = len(sizes).
            unsafe {
                member_counts_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n.clone(),
                    dim,
                    agg.agg.arg(),
                    sizes.arg(),
                    n,
                )
            }
        })?;
        let (start, _, sizes_stats) =
            self.exclusive_scan(&sizes, count, 0, "the aggregates' members")?;
        let m = sizes_stats.max;
        if !self.loops_fit(m.saturating_mul(m) / 2 + m.saturating_mul(k + 2).saturating_mul(k + 1))
        {
            let host = crate::backend::Cpu::new();
            let (t, bc) = host.tentative_prolongator(
                &Aggregates {
                    agg: self.download(&agg.agg)?,
                    count,
                    backend: host.clone(),
                },
                &NearNullSpace {
                    rows: b.rows,
                    k,
                    data: self.download(&b.data)?,
                    backend: host.clone(),
                },
            )?;
            let rows = t.ncols();
            return Ok((
                t.to_backend(self)?,
                NearNullSpace {
                    rows,
                    k,
                    data: self.upload(&bc.data)?,
                    backend: self.clone(),
                },
            ));
        }
        let mut cursor = sizes;
        self.fill_u32(&mut cursor, 0)?;
        let members = self.alloc_uninit::<u32>(n)?;
        self.launch::<()>((), || {
            // SAFETY: each aggregate's members land within its range of start.
            unsafe {
                member_fill_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n.clone(),
                    dim,
                    agg.agg.arg(),
                    start.arg(),
                    cursor.arg(),
                    members.arg(),
                    n,
                )
            }
        })?;
        drop(cursor);
        crate::limits::check_host_items("the tentative prolongator's Q", (n * k) as u64, 0)?;
        let local = self.alloc_uninit::<u32>(n)?;
        let q = self.alloc_uninit::<f64>(n * k)?;
        let r = self.alloc::<f64>(count * k * k)?;
        let kept = self.alloc_uninit::<u32>(count)?;
        let rows = b.rows;
        self.launch::<()>((), || {
            // SAFETY: an aggregate's Q block lies in [start·k, end·k), R's in g·k²..(g+1)·k².
            unsafe {
                aggregate_qr_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_g.clone(),
                    dim,
                    start.arg(),
                    members.arg(),
                    local.arg(),
                    b.data.arg(),
                    rows,
                    k,
                    q.arg(),
                    r.arg(),
                    kept.arg(),
                    count,
                )
            }
        })?;
        drop(members);
        let (offset, nc, _) = self.exclusive_scan(&kept, count, 0, "the coarse unknowns")?;
        let counts = self.alloc_uninit::<u32>(n)?;
        self.launch::<()>((), || {
            // SAFETY: aggregates below count.
            unsafe {
                tentative_counts_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n.clone(),
                    dim,
                    agg.agg.arg(),
                    kept.arg(),
                    counts.arg(),
                    n,
                )
            }
        })?;
        let (t_ptr, nnz, stats) =
            self.exclusive_scan(&counts, n, nc, "the tentative prolongator")?;
        drop(counts);
        let cols = self.alloc_uninit::<u32>(nnz)?;
        let vals = self.alloc_uninit::<f64>(nnz)?;
        self.launch::<()>((), || {
            // SAFETY: row i has kept[agg[i]] entries from t_ptr[i]; Q indices as above.
            unsafe {
                tentative_fill_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n,
                    dim,
                    agg.agg.arg(),
                    start.arg(),
                    local.arg(),
                    kept.arg(),
                    offset.arg(),
                    q.arg(),
                    k,
                    t_ptr.arg(),
                    cols.arg(),
                    vals.arg(),
                    n,
                )
            }
        })?;
        let bc = self.alloc::<f64>(nc * k)?;
        self.launch::<()>((), || {
            // SAFETY: offset[g] + p < nc for p < kept[g]; R's block as above.
            unsafe {
                coarse_near_null_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_g,
                    dim,
                    kept.arg(),
                    offset.arg(),
                    r.arg(),
                    k,
                    nc,
                    bc.arg(),
                    count,
                )
            }
        })?;
        let t = self.csr_from((n, nc), t_ptr, cols, vals, stats);
        Ok((
            t,
            NearNullSpace {
                rows: nc,
                k,
                data: bc,
                backend: self.clone(),
            },
        ))
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
        let n = x.len();
        let flag = self.alloc::<u32>(1)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: x has n values, flag 1.
            unsafe {
                count_nonpositive_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    x.arg(),
                    flag.arg(),
                    n,
                )
            }
        })?;
        Ok(self.download(&flag)?[0] as usize)
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

    /// `A·B` for an `A` with long rows: each row cut into pieces of [`SPGEMM_PIECE`]
    /// entries (a matrix `A_s` of the pieces, sharing `A`'s entries), `C_s = A_s·B` (a unit
    /// per piece), then `C = S·C_s` with `S` the 0/1 matrix that sums each row's pieces in
    /// order. Each entry of `C` is the sum, in piece order, of its pieces' sums, each in `A`'s
    /// order (the CPU sums every term in `A`'s order: the results differ by rounding).
    fn spgemm_split<V: Scalar>(&self, a: &Csr<Self, V>, b: &Csr<Self, V>) -> Result<Csr<Self, V>> {
        let n = a.nrows;
        let piece = SPGEMM_PIECE as u32;
        let counts = self.alloc_uninit::<u32>(n)?;
        let (count, dim) = self.config().grid(n);
        self.launch::<()>((), || {
            // SAFETY: a_ptr has n + 1 offsets, counts n slots.
            unsafe {
                split_counts_kernel::launch_unchecked::<R>(
                    self.client(),
                    count.clone(),
                    dim,
                    a.row_ptr.arg(),
                    counts.arg(),
                    n,
                    piece,
                )
            }
        })?;
        let (voff, pieces, sel_stats) = self.exclusive_scan(&counts, n, 0, "the row pieces")?;
        drop(counts);
        let split_ptr = self.alloc_uninit::<u32>(pieces + 1)?;
        let sel_cols = self.alloc_uninit::<u32>(pieces)?;
        self.launch::<()>((), || {
            // SAFETY: voff offsets each row's pieces (pieces in all); split_ptr has pieces + 1
            // slots, sel_cols pieces.
            unsafe {
                split_rows_kernel::launch_unchecked::<R>(
                    self.client(),
                    count,
                    dim,
                    a.row_ptr.arg(),
                    voff.arg(),
                    split_ptr.arg(),
                    sel_cols.arg(),
                    n,
                    piece,
                )
            }
        })?;
        let nnz = a.nnz();
        let cols = self.u32_copy(&a.col_idx)?;
        let mut vals = self.alloc_uninit::<V>(nnz)?;
        // SAFETY: same lengths, this backend's buffers.
        unsafe { self.copy(&a.values, &mut vals)? };
        let split_stats = RowStats {
            nrows: pieces,
            ncols: a.ncols,
            nnz,
            min: 0,
            max: SPGEMM_PIECE.min(a.stats.max),
            mean: nnz as f64 / pieces.max(1) as f64,
            std_dev: 0.0,
            empty_rows: 0,
        };
        let a_s = self.csr_from((pieces, a.ncols), split_ptr, cols, vals, split_stats);
        let c_s = self.csr_spgemm(&a_s, b)?;
        drop(a_s);
        let mut ones = self.alloc_uninit::<V>(pieces)?;
        // SAFETY: ones has pieces slots of this backend.
        unsafe { self.fill(V::ONE, &mut ones)? };
        let sel = self.csr_from(
            (n, pieces),
            voff,
            sel_cols,
            ones,
            RowStats {
                ncols: pieces,
                ..sel_stats
            },
        );
        self.csr_spgemm(&sel, &c_s)
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
