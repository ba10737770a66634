//! The kernels of the sparse algebra on CubeCL devices (see [the host side](super)): the
//! scan, the row kernels, the transpose and row sort, and SELL's conversion. SpGEMM's are in
//! [`spgemm_kernels`](super::spgemm_kernels), MIS-2 aggregation's and the prolongators' in
//! [`aggregate_kernels`](super::aggregate_kernels).

use cubecl::prelude::*;

/// Units per cube of the scan (and the shared-memory trees).
pub(super) const SCAN_UNITS: usize = 256;
/// Counts per unit of the scan; a cube covers a tile of `SCAN_UNITS * PER_UNIT`.
pub(super) const PER_UNIT: usize = 16;
pub(super) const TILE: usize = SCAN_UNITS * PER_UNIT;
/// "No aggregate yet".
pub(super) const NONE: u32 = u32::MAX;
/// The 32-bit mixing of [`hash32`](super::aggregate::hash32), on the device.
#[cube]
pub(super) fn hash32(i: u32) -> u32 {
    let mut x = i;
    x = x ^ (x >> 16);
    x *= 0x7feb_352du32;
    x = x ^ (x >> 15);
    x *= 0x846c_a68bu32;
    x ^ (x >> 16)
}

/// The high word of a node's MIS key ([`key_high`](super::aggregate::key_high)).
#[cube]
pub(super) fn key_high(state: u32, i: u32) -> u32 {
    (state << 30) | (hash32(i) >> 2)
}

// ---------------------------------------------------------------------------------------
// Scan

/// Per tile: the sum of the counts (and whether it overflowed u32), the largest, the
/// smallest, the zeros and the sum of squares (f32, for the row statistics).
#[cube(launch_unchecked)]
pub(super) fn tile_stats_kernel(
    counts: &Array<u32>,
    n: usize,
    tiles: usize,
    sums: &mut Array<u32>,
    stats: &mut Array<u32>,
    squares: &mut Array<f32>,
) {
    let mut s_sum = SharedMemory::<u32>::new(SCAN_UNITS);
    let mut s_over = SharedMemory::<u32>::new(SCAN_UNITS);
    let mut s_max = SharedMemory::<u32>::new(SCAN_UNITS);
    let mut s_min = SharedMemory::<u32>::new(SCAN_UNITS);
    let mut s_zero = SharedMemory::<u32>::new(SCAN_UNITS);
    let mut s_sq = SharedMemory::<f32>::new(SCAN_UNITS);
    let unit = UNIT_POS as usize;
    let mut tile = CUBE_POS;
    while tile < tiles {
        let start = tile * TILE + unit * PER_UNIT;
        let mut sum = 0u32;
        let mut over = 0u32;
        let mut big = 0u32;
        let mut small = 0xFFFF_FFFFu32;
        let mut zero = 0u32;
        let mut sq = 0.0f32;
        for e in 0..PER_UNIT {
            let i = start + e;
            if i < n {
                let c = counts[i];
                if c > 0xFFFF_FFFFu32 - sum {
                    over = 1;
                }
                sum += c;
                if c > big {
                    big = c;
                }
                if c < small {
                    small = c;
                }
                if c == 0 {
                    zero += 1;
                }
                let f = f32::cast_from(c);
                sq += f * f;
            }
        }
        s_sum[unit] = sum;
        s_over[unit] = over;
        s_max[unit] = big;
        s_min[unit] = small;
        s_zero[unit] = zero;
        s_sq[unit] = sq;
        sync_cube();
        let mut offset = comptime![SCAN_UNITS / 2].runtime();
        while offset > 0 {
            if unit < offset {
                let a = s_sum[unit];
                let b = s_sum[unit + offset];
                if b > 0xFFFF_FFFFu32 - a {
                    s_over[unit] = 1;
                }
                s_sum[unit] = a + b;
                s_over[unit] = s_over[unit] | s_over[unit + offset];
                if s_max[unit + offset] > s_max[unit] {
                    s_max[unit] = s_max[unit + offset];
                }
                if s_min[unit + offset] < s_min[unit] {
                    s_min[unit] = s_min[unit + offset];
                }
                s_zero[unit] = s_zero[unit] + s_zero[unit + offset];
                s_sq[unit] = s_sq[unit] + s_sq[unit + offset];
            }
            sync_cube();
            offset /= 2;
        }
        if unit == 0 {
            sums[tile] = s_sum[0];
            stats[4 * tile] = s_over[0];
            stats[4 * tile + 1] = s_max[0];
            stats[4 * tile + 2] = s_min[0];
            stats[4 * tile + 3] = s_zero[0];
            squares[tile] = s_sq[0];
        }
        sync_cube();
        tile += CUBE_COUNT;
    }
}

/// `out[i] = offsets[tile] + Σ_{j < i in the tile} counts[j]`, `out[n] = offsets[tiles]`
/// (the total). The tile passes through shared memory, read and written with consecutive
/// units on consecutive counts (each unit's `PER_UNIT` counts a row of `PER_UNIT + 1` words:
/// no bank conflicts as a unit walks its row).
#[cube(launch_unchecked)]
pub(super) fn scan_apply_kernel(
    counts: &Array<u32>,
    n: usize,
    tiles: usize,
    offsets: &Array<u32>,
    out: &mut Array<u32>,
) {
    let mut v = SharedMemory::<u32>::new(comptime![SCAN_UNITS * (PER_UNIT + 1)]);
    let mut s = SharedMemory::<u32>::new(SCAN_UNITS);
    let unit = UNIT_POS as usize;
    let row = unit * comptime![PER_UNIT + 1];
    let mut tile = CUBE_POS;
    while tile < tiles {
        let base = tile * TILE;
        for e in 0..PER_UNIT {
            let k = e * SCAN_UNITS + unit;
            let mut c = 0u32;
            if base + k < n {
                c = counts[base + k];
            }
            v[(k / PER_UNIT) * comptime![PER_UNIT + 1] + k % PER_UNIT] = c;
        }
        sync_cube();
        let mut sum = 0u32;
        for e in 0..PER_UNIT {
            sum += v[row + e];
        }
        s[unit] = sum;
        sync_cube();
        let mut offset = 1usize;
        while offset < SCAN_UNITS {
            let mut add = 0u32;
            if unit >= offset {
                add = s[unit - offset];
            }
            sync_cube();
            s[unit] += add;
            sync_cube();
            offset *= 2;
        }
        let mut run = offsets[tile] + s[unit] - sum;
        for e in 0..PER_UNIT {
            let c = v[row + e];
            v[row + e] = run;
            run += c;
        }
        sync_cube();
        for e in 0..PER_UNIT {
            let k = e * SCAN_UNITS + unit;
            if base + k < n {
                out[base + k] = v[(k / PER_UNIT) * comptime![PER_UNIT + 1] + k % PER_UNIT];
            }
        }
        sync_cube();
        tile += CUBE_COUNT;
    }
    if ABSOLUTE_POS == 0 {
        out[n] = offsets[tiles];
    }
}

// ---------------------------------------------------------------------------------------
// Row kernels

#[cube(launch_unchecked)]
pub(super) fn diagonal_kernel<V: Float>(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    values: &Array<V>,
    d: &mut Array<V>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let mut v = V::new(0.0);
        for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
            if cols[k] as usize == i {
                v = values[k];
            }
        }
        d[i] = v;
        i += stride;
    }
}

#[cube(launch_unchecked)]
pub(super) fn row_abs_sums_kernel<V: Float>(
    row_ptr: &Array<u32>,
    values: &Array<V>,
    d: &mut Array<V>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let mut v = V::new(0.0);
        for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
            v += V::abs(values[k]);
        }
        d[i] = v;
        i += stride;
    }
}

/// Whether `aᵢⱼ = v` is a strong connection (`da`, `db`: |aᵢᵢ|, |aⱼⱼ|).
#[cube]
pub(super) fn strong<V: Float>(i: usize, j: usize, v: V, di: V, dj: V, theta: V) -> bool {
    let mut s = i == j;
    if !s && v != V::new(0.0) {
        s = V::abs(v) >= theta * V::sqrt(di * dj);
    }
    s
}

#[cube(launch_unchecked)]
pub(super) fn strength_kernel<V: Float>(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    values: &Array<V>,
    d: &Array<V>,
    theta: InputScalar,
    out_ptr: &Array<u32>,
    out_cols: &mut Array<u32>,
    out_values: &mut Array<V>,
    counts: &mut Array<u32>,
    n: usize,
    #[comptime] fill: bool,
) {
    let theta = theta.get::<V>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let di = V::abs(d[i]);
        let mut at = 0u32;
        if fill {
            at = out_ptr[i];
        }
        for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
            let j = cols[k] as usize;
            if strong::<V>(i, j, values[k], di, V::abs(d[j]), theta) {
                if fill {
                    out_cols[at as usize] = cols[k];
                    out_values[at as usize] = values[k];
                }
                at += 1;
            }
        }
        if !fill {
            counts[i] = at;
        }
        i += stride;
    }
}

/// `flag[0] = 1` if an entry is zero (`zeros`), or not `> 0` (NaN included); `flag` is
/// not touched otherwise. Every unit that writes, writes the same 1.
#[cube(launch_unchecked)]
pub(super) fn flag_values_kernel(
    x: &Array<f64>,
    flag: &mut Array<u32>,
    n: usize,
    #[comptime] zeros: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let positive = x[i] > 0.0; // false for NaN too
        let hit = if zeros { x[i] == 0.0 } else { !positive };
        if hit {
            flag[0] = 1;
        }
        i += stride;
    }
}

#[cube(launch_unchecked)]
pub(super) fn hash_vector_kernel(x: &mut Array<f64>, seed: u32, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        x[i] = f64::cast_from(hash32(u32::cast_from(i) + seed)) / 4_294_967_296.0 + 0.5;
        i += stride;
    }
}

/// `x[i] = 1` where `i` is a multiple of `step`, else 0 (`is_multiple_of` is not available
/// to `#[cube]` code).
#[allow(clippy::manual_is_multiple_of)]
#[cube(launch_unchecked)]
pub(super) fn strided_ones_kernel(x: &mut Array<f64>, step: usize, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        x[i] = select(i % step == 0, 1.0f64, 0.0f64);
        i += stride;
    }
}

/// `x[i] *= factor` (the caller knows no product passes `u32::MAX`).
#[cube(launch_unchecked)]
pub(super) fn scale_u32_kernel(x: &mut Array<u32>, factor: u32, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        x[i] *= factor;
        i += stride;
    }
}

#[cube(launch_unchecked)]
pub(super) fn fill_u32_kernel(x: &mut Array<u32>, value: u32, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        x[i] = value;
        i += stride;
    }
}

// ---------------------------------------------------------------------------------------
// Transpose

#[cube(launch_unchecked)]
pub(super) fn column_counts_kernel(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    counts: &mut Array<Atomic<u32>>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
            counts[cols[k] as usize].fetch_add(1u32);
        }
        i += stride;
    }
}

/// Each entry `(i, c)` to row `c` of the transpose, at `t_ptr[c]` plus the column's 32-bit
/// atomic cursor (so in no particular order within the row); `with_rows`: also the row it
/// landed in (`t_rows`, for [`rank_sort_kernel`]).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(super) fn transpose_fill_kernel<V: Float>(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    values: &Array<V>,
    t_ptr: &Array<u32>,
    cursor: &mut Array<Atomic<u32>>,
    t_cols: &mut Array<u32>,
    t_vals: &mut Array<V>,
    t_rows: &mut Array<u32>,
    n: usize,
    #[comptime] with_rows: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
            let c = cols[k] as usize;
            let dst = t_ptr[c] + cursor[c].fetch_add(1u32);
            t_cols[dst as usize] = u32::cast_from(i);
            t_vals[dst as usize] = values[k];
            if with_rows {
                t_rows[dst as usize] = u32::cast_from(c);
            }
        }
        i += stride;
    }
}

/// Sorts each row by column, out of place, a unit per entry: entry `k` of row `rows[k]`
/// goes to the row's start plus its rank, the number of the row's entries before it in
/// (column, position) order (a row's columns need not be distinct). `L²` comparisons for a
/// row of `L` entries, but the units of a plane mostly share a row and read the same
/// column at once: far quicker than a unit per row sorting in global memory, where the rows
/// are at most [`RANK_SORT_MAX`] long or their `Σ L²` is at most [`RANK_SORT_WORK`].
#[cube(launch_unchecked)]
pub(super) fn rank_sort_kernel<V: Float>(
    row_ptr: &Array<u32>,
    rows: &Array<u32>,
    cols: &Array<u32>,
    vals: &Array<V>,
    out_cols: &mut Array<u32>,
    out_vals: &mut Array<V>,
    nnz: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut k = ABSOLUTE_POS;
    while k < nnz {
        let r = rows[k] as usize;
        let s = row_ptr[r] as usize;
        let e = row_ptr[r + 1] as usize;
        let key = cols[k];
        let mut rank = 0usize;
        for q in s..e {
            let c = cols[q];
            let before = c < key || (c == key && q < k);
            rank += select(before, 1usize, 0usize);
        }
        out_cols[s + rank] = key;
        out_vals[s + rank] = vals[k];
        k += stride;
    }
}

/// The longest row [`rank_sort_kernel`] sorts in any matrix (longer ones: [`sort_rows_kernel`],
/// unless their comparisons stay within [`RANK_SORT_WORK`]).
pub(super) const RANK_SORT_MAX: usize = 1024;
/// The comparisons (`Σ L²` over the rows) of a [`rank_sort_kernel`] whose rows may be longer
/// than [`RANK_SORT_MAX`]: 2³², a few milliseconds on a GPU (a coarse level's transposed
/// prolongator, with a few rows of thousands of entries, sorted by merging took 6 ms on an
/// H200 against cuSPARSE's 0.12).
pub(super) const RANK_SORT_WORK: f64 = 4_294_967_296.0;

/// Rows up to this long are sorted by insertion; longer ones by merging sorted runs of
/// this length.
pub(super) const SORT_RUN: usize = 32;

/// Insertion sort of `cols[s..e]` (values along).
#[cube]
pub(super) fn insertion_sort<V: Float>(
    cols: &mut Array<u32>,
    vals: &mut Array<V>,
    s: usize,
    e: usize,
) {
    for k in s + 1..e {
        let c = cols[k];
        let v = vals[k];
        let mut m = k;
        // (No short-circuit in kernels: the bound is checked before the read.)
        loop {
            if m <= s {
                break;
            }
            if cols[m - 1] <= c {
                break;
            }
            cols[m] = cols[m - 1];
            vals[m] = vals[m - 1];
            m -= 1;
        }
        cols[m] = c;
        vals[m] = v;
    }
}

/// One merge pass over `[s, e)`: the sorted runs of length `w` of `src` merged in pairs
/// into `dst` (stable).
#[allow(clippy::collapsible_if)]
#[cube]
pub(super) fn merge_runs<V: Float>(
    src_c: &Array<u32>,
    src_v: &Array<V>,
    dst_c: &mut Array<u32>,
    dst_v: &mut Array<V>,
    s: usize,
    e: usize,
    w: usize,
) {
    let mut lo = s;
    while lo < e {
        let mut mid = lo + w;
        if mid > e {
            mid = e;
        }
        let mut hi = mid + w;
        if hi > e {
            hi = e;
        }
        let mut p = lo;
        let mut q = mid;
        for k in lo..hi {
            let mut left = false;
            if q >= hi {
                left = true;
            } else {
                if p < mid {
                    left = src_c[p] <= src_c[q];
                }
            }
            if left {
                dst_c[k] = src_c[p];
                dst_v[k] = src_v[p];
                p += 1;
            } else {
                dst_c[k] = src_c[q];
                dst_v[k] = src_v[q];
                q += 1;
            }
        }
        lo = hi;
    }
}

/// Sorts each row's (column, value) pairs by column: insertion sort up to [`SORT_RUN`]
/// entries; above, insertion-sorted runs of [`SORT_RUN`] merged pairwise through `tmp_c`,
/// `tmp_v` (a slot per entry; `long`: rows can be longer than a run, else unused), so a
/// long row (a transposed prolongator's) costs `L log L`, not `L²`.
#[cube(launch_unchecked)]
pub(super) fn sort_rows_kernel<V: Float>(
    row_ptr: &Array<u32>,
    cols: &mut Array<u32>,
    vals: &mut Array<V>,
    tmp_c: &mut Array<u32>,
    tmp_v: &mut Array<V>,
    n: usize,
    #[comptime] long: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let run = comptime![SORT_RUN];
    let mut i = ABSOLUTE_POS;
    while i < n {
        let s = row_ptr[i] as usize;
        let e = row_ptr[i + 1] as usize;
        if !long || e - s <= run {
            insertion_sort::<V>(cols, vals, s, e);
        } else {
            let mut c0 = s;
            while c0 < e {
                let mut c1 = c0 + run;
                if c1 > e {
                    c1 = e;
                }
                insertion_sort::<V>(cols, vals, c0, c1);
                c0 = c1;
            }
            let mut w = comptime![SORT_RUN].runtime();
            let mut in_tmp = false;
            while w < e - s {
                if in_tmp {
                    merge_runs::<V>(tmp_c, tmp_v, cols, vals, s, e, w);
                } else {
                    merge_runs::<V>(cols, vals, tmp_c, tmp_v, s, e, w);
                }
                in_tmp = !in_tmp;
                w *= 2;
            }
            if in_tmp {
                for k in s..e {
                    cols[k] = tmp_c[k];
                    vals[k] = tmp_v[k];
                }
            }
        }
        i += stride;
    }
}

/// `widths[s]` = the width of slice `s` of `c` rows: its longest row (rows past `n` count as
/// empty). Unscaled: their sum is at most the nonzeros (no wrap in `u32`); the slots are `c`
/// times it, counted in `u64` on the host.
#[cube(launch_unchecked)]
pub(super) fn sell_widths_kernel(
    row_ptr: &Array<u32>,
    widths: &mut Array<u32>,
    n: usize,
    nslices: usize,
    #[comptime] c: u32,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut s = ABSOLUTE_POS;
    while s < nslices {
        let first = s * c as usize;
        let mut width = 0u32;
        for j in 0..c as usize {
            let r = first + j;
            if r < n {
                let len = row_ptr[r + 1] - row_ptr[r];
                width = select(len > width, len, width);
            }
        }
        widths[s] = width;
        s += stride;
    }
}

/// Position `p` (lane `p % c` of slice `p / c`: row `p`, or padding past `n`) of SELL-C:
/// its row's entries at slots `slice_ptr[s] + k c + lane`, then the padding (column
/// [`PAD`](crate::sparse::PAD), value 0) up to the slice's width.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(super) fn sell_fill_kernel<V: Float>(
    row_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    values: &Array<V>,
    slice_ptr: &Array<u32>,
    sell_cols: &mut Array<u32>,
    sell_vals: &mut Array<V>,
    n: usize,
    positions: usize,
    #[comptime] c: u32,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut p = ABSOLUTE_POS;
    while p < positions {
        let s = p / c as usize;
        let lane = p % c as usize;
        let base = slice_ptr[s] as usize;
        let width = (slice_ptr[s + 1] as usize - base) / c as usize;
        let mut start = 0usize;
        let mut len = 0usize;
        if p < n {
            start = row_ptr[p] as usize;
            len = row_ptr[p + 1] as usize - start;
        }
        for k in 0..width {
            let slot = base + k * c as usize + lane;
            if k < len {
                sell_cols[slot] = col_idx[start + k];
                sell_vals[slot] = values[start + k];
            } else {
                sell_cols[slot] = u32::MAX;
                sell_vals[slot] = V::new(0.0);
            }
        }
        p += stride;
    }
}
