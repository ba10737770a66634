//! SpGEMM on CubeCL devices (the host side of [`spgemm_kernel`] and its split form for long
//! rows): see [the module docs](super).

use cubecl::prelude::*;

use super::spgemm_kernels::*;
use crate::backend::core::BackendCore;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::sparse::algebra::SparseAlgebraOps;
use crate::sparse::csr::Csr;
use crate::sparse::RowStats;
use crate::vector::VectorOps;

impl<R: CubeRuntime> Cube<R> {
    /// `A·B` (symbolic, then numeric) by the merge kernel; see the module docs.
    pub(super) fn spgemm_on_device<V: Scalar>(
        &self,
        a: &Csr<Self, V>,
        b: &Csr<Self, V>,
    ) -> Result<Csr<Self, V>> {
        let n = a.nrows;
        let (la, lb) = (a.stats.max, b.stats.max);
        // With 32-lane plane operations, rows above SPGEMM_PLANE_ABOVE take a plane each
        // (cursors in registers, up to SPGEMM_PLANE_MAX entries, longer rows in pieces of
        // that many); else rows above SPGEMM_SPLIT_ABOVE are cut into pieces of SPGEMM_PIECE.
        let info = self.info();
        let planes = info.plane_ops && info.plane_size == (32, 32) && la > SPGEMM_PLANE_ABOVE;
        let (limit, piece) = if planes {
            (SPGEMM_PLANE_MAX, SPGEMM_PLANE_MAX)
        } else {
            (SPGEMM_SPLIT_ABOVE, SPGEMM_PIECE)
        };
        // Rows too long for one merge and a narrow B (a coarse level's R·AP): a cube per row,
        // accumulated densely (each unit walks at most a row's products and the width).
        let width = b.ncols.next_power_of_two().max(32);
        let dense = dense_planes(
            width,
            std::mem::size_of::<V>(),
            info.max_shared_bytes,
            info.max_units_per_cube as usize,
        );
        if la > limit
            && n > 0
            && width <= SPGEMM_DENSE_MAX_WIDTH
            && dense > 0
            && self.loops_fit(la.saturating_mul(lb).saturating_add(width))
        {
            return self.spgemm_dense(a, b, width, dense);
        }
        // A row's merge takes at most (its length) x (the columns it selects) steps.
        if !self.loops_fit(la.saturating_mul(la.saturating_mul(lb)).saturating_mul(2)) {
            let c = crate::sparse::algebra::host::spgemm(&a.to_host()?, &b.to_host()?)?;
            return c.to_backend(self);
        }
        if la > limit && n > 0 {
            return self.spgemm_split(a, b, piece);
        }
        // Without planes: a unit per row, each with `slots` cursor slots in shared memory (a
        // power of two from 8, at least A's longest row), as many units per cube as
        // SPGEMM_CUBE_SLOTS slots allow. With planes: a plane per row, `per_lane` cursors a
        // lane, 8 planes a cube.
        let slots = la.next_power_of_two().max(8);
        let per_lane = la.div_ceil(32).next_power_of_two();
        // The unit kernel's shared memory: three u32 arrays of SPGEMM_CUBE_SLOTS, or as many
        // slots (a power of two) as the device's shared memory holds.
        let cube_slots = SPGEMM_CUBE_SLOTS.min(prev_power_of_two(info.max_shared_bytes / 12));
        if !planes && cube_slots < slots {
            let c = crate::sparse::algebra::host::spgemm(&a.to_host()?, &b.to_host()?)?;
            return c.to_backend(self);
        }
        let (dim, rows_per_cube) = if planes {
            (256, 8)
        } else {
            let dim = cube_slots / slots;
            (dim, dim)
        };
        let cubes = n
            .div_ceil(rows_per_cube)
            .clamp(1, self.config().max_cubes as usize);
        let (count, cube_dim) = (
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(dim as u32),
        );
        // The symbolic pass (counts) and the numeric one (fill at c_ptr), one kernel.
        let pass = |c_ptr: &CubeBuffer<u32>,
                    cols: &CubeBuffer<u32>,
                    vals: &CubeBuffer<V>,
                    counts: &CubeBuffer<u32>,
                    fill: bool| {
            if planes {
                return self.launch::<V>((fill, planes, per_lane), || {
                    // SAFETY: the CSR invariants of A and B (A's columns index B's rows);
                    // 32 per_lane ≥ A's longest row; counts has one slot per row; with
                    // `fill`, c_ptr offsets each row's count, which the numeric pass
                    // reproduces.
                    unsafe {
                        spgemm_plane_kernel::launch_unchecked::<V, R>(
                            self.client(),
                            count.clone(),
                            cube_dim,
                            a.row_ptr.arg(),
                            a.col_idx.arg(),
                            a.values.arg(),
                            b.row_ptr.arg(),
                            b.col_idx.arg(),
                            b.values.arg(),
                            c_ptr.arg(),
                            cols.arg(),
                            vals.arg(),
                            counts.arg(),
                            n,
                            per_lane,
                            fill,
                        )
                    }
                });
            }
            self.launch::<V>((fill, planes, slots), || {
                // SAFETY: the CSR invariants of A and B (A's columns index B's rows); each
                // unit has `slots` ≥ A's longest row cursor slots in shared memory, counts
                // has one per row; with `fill`, c_ptr offsets each row's count, which the
                // numeric pass reproduces.
                unsafe {
                    spgemm_kernel::launch_unchecked::<V, R>(
                        self.client(),
                        count.clone(),
                        cube_dim,
                        a.row_ptr.arg(),
                        a.col_idx.arg(),
                        a.values.arg(),
                        b.row_ptr.arg(),
                        b.col_idx.arg(),
                        b.values.arg(),
                        c_ptr.arg(),
                        cols.arg(),
                        vals.arg(),
                        counts.arg(),
                        n,
                        slots,
                        dim,
                        fill,
                    )
                }
            })
        };
        self.count_then_fill("the product", n, b.ncols, pass)
    }

    /// `A·B` by [`spgemm_dense_kernel`] (`B` of at most `width` columns, a power of two;
    /// `planes` as [`dense_planes`] gives): a cube per row of `A`, symbolic then numeric.
    fn spgemm_dense<V: Scalar>(
        &self,
        a: &Csr<Self, V>,
        b: &Csr<Self, V>,
        width: usize,
        planes: usize,
    ) -> Result<Csr<Self, V>> {
        let n = a.nrows;
        let cubes = n.clamp(1, self.config().max_cubes as usize);
        let (count, dim) = (
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(32 * planes as u32),
        );
        let pass = |c_ptr: &CubeBuffer<u32>,
                    cols: &CubeBuffer<u32>,
                    vals: &CubeBuffer<V>,
                    counts: &CubeBuffer<u32>,
                    fill: bool| {
            self.launch::<V>((fill, width, planes), || {
                // SAFETY: the CSR invariants of A and B (A's columns index B's rows, B's
                // columns below ncols <= width, distinct within a row); counts has one slot
                // per row; with `fill`, c_ptr offsets each row's count, which the numeric
                // pass reproduces; 32 planes units a cube and width (planes + 1) values of
                // shared memory fit the device (dense_planes).
                unsafe {
                    spgemm_dense_kernel::launch_unchecked::<V, R>(
                        self.client(),
                        count.clone(),
                        dim,
                        a.row_ptr.arg(),
                        a.col_idx.arg(),
                        a.values.arg(),
                        b.row_ptr.arg(),
                        b.col_idx.arg(),
                        b.values.arg(),
                        c_ptr.arg(),
                        cols.arg(),
                        vals.arg(),
                        counts.arg(),
                        n,
                        b.ncols,
                        width,
                        planes,
                        fill,
                    )
                }
            })
        };
        self.count_then_fill("the product", n, b.ncols, pass)
    }

    /// A sparse result (`what`, for errors) of `n` rows and `ncols` columns by the two
    /// passes of one kernel around a scan: `pass(c_ptr, cols, vals, counts, fill)` counts each row's entries into `counts`
    /// (`fill` false; the other arrays are dummies), then writes each row at its offset in
    /// `c_ptr` (`fill` true; `counts` is a dummy).
    pub(super) fn count_then_fill<V: Scalar>(
        &self,
        what: &str,
        n: usize,
        ncols: usize,
        pass: impl Fn(
            &CubeBuffer<u32>,
            &CubeBuffer<u32>,
            &CubeBuffer<V>,
            &CubeBuffer<u32>,
            bool,
        ) -> Result<()>,
    ) -> Result<Csr<Self, V>> {
        let counts = self.alloc_uninit::<u32>(n)?;
        let dummy_u = self.alloc::<u32>(1)?;
        let dummy_u2 = self.alloc::<u32>(1)?;
        let dummy_v = self.alloc::<V>(1)?;
        pass(&dummy_u, &dummy_u2, &dummy_v, &counts, false)?;
        let (c_ptr, nnz, stats) = self.exclusive_scan(&counts, n, ncols, what)?;
        drop(counts);
        let cols = self.alloc_uninit::<u32>(nnz)?;
        let vals = self.alloc_uninit::<V>(nnz)?;
        pass(&c_ptr, &cols, &vals, &dummy_u2, true)?;
        Ok(self.csr_from((n, ncols), c_ptr, cols, vals, stats))
    }

    /// `A·B` for an `A` with long rows: each row cut into pieces of `piece` entries (a
    /// matrix `A_s` of the pieces, sharing `A`'s entries), `C_s = A_s·B` (a unit or a plane
    /// per piece), then `C = S·C_s` with `S` the 0/1 matrix that sums each row's pieces in
    /// order. Each entry of `C` is the sum, in piece order, of its pieces' sums, each in `A`'s
    /// order (the CPU sums every term in `A`'s order: the results differ by rounding).
    pub(super) fn spgemm_split<V: Scalar>(
        &self,
        a: &Csr<Self, V>,
        b: &Csr<Self, V>,
        piece: usize,
    ) -> Result<Csr<Self, V>> {
        let n = a.nrows;
        let chunk = piece as u32;
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
                    chunk,
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
                    chunk,
                )
            }
        })?;
        let nnz = a.nnz();
        let cols = self.duplicate(&a.col_idx)?;
        let mut vals = self.alloc_uninit::<V>(nnz)?;
        // SAFETY: same lengths, this backend's buffers.
        unsafe { self.copy(&a.values, &mut vals)? };
        let split_stats = RowStats {
            nrows: pieces,
            ncols: a.ncols,
            nnz,
            min: 0,
            max: piece.min(a.stats.max),
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
}

/// The planes of a dense-row SpGEMM cube for a `B` of `width` columns (a power of two) and
/// values of `value` bytes: as many (a power of two, at most [`SPGEMM_DENSE_MAX_PLANES`]) as
/// the accumulators (`width` values a plane) and the touched flags (`width` u32) fit in
/// [`SPGEMM_DENSE_SHARED`] or the device's shared memory if less, with 32 units a plane
/// within the device's units a cube; 0 if not one fits.
pub(super) fn dense_planes(
    width: usize,
    value: usize,
    max_shared: usize,
    max_units: usize,
) -> usize {
    let budget = max_shared
        .min(SPGEMM_DENSE_SHARED)
        .saturating_sub(width.saturating_mul(4));
    let fit = budget / width.saturating_mul(value).max(1);
    prev_power_of_two(fit.min(SPGEMM_DENSE_MAX_PLANES).min(max_units / 32))
}

/// The largest power of two at most `n` (0 for 0).
fn prev_power_of_two(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        1 << (usize::BITS - 1 - n.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_planes_fill_the_shared_memory_and_the_cube() {
        // 48 KiB: 16 planes of 256 f64 columns (2 KiB each, 1 KiB of flags), 8 of 512.
        assert_eq!(dense_planes(256, 8, 227 * 1024, 1024), 16);
        assert_eq!(dense_planes(512, 8, 48 * 1024, 1024), 8);
        assert_eq!(dense_planes(32, 4, 48 * 1024, 1024), 32);
        // lavapipe's 32 KiB; a device of 256 units a cube.
        assert_eq!(dense_planes(512, 8, 32 * 1024, 1024), 4);
        assert_eq!(dense_planes(64, 4, 48 * 1024, 256), 8);
        // Not one plane: 0.
        assert_eq!(dense_planes(512, 8, 4 * 1024, 1024), 0);
        assert_eq!(dense_planes(32, 8, 48 * 1024, 16), 0);
    }
}
