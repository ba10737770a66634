//! The sparse algebra on CubeCL devices: a unit per row (or per aggregate) everywhere, an
//! exclusive scan that also measures the rows it offsets, and no floating-point atomics.
//!
//! Each kernel makes the CPU reference's choices in the CPU's order (see the
//! [module docs](super)): SpGEMM merges the selected rows of `B` by their sorted columns
//! with one cursor per entry of `A`'s row (kept in a scratch array), so each output entry
//! sums its terms in the order of `A`'s row, as the CPU does; transposes and aggregate
//! member lists are filled through 32-bit atomic cursors and then sorted per row.

use cubecl::prelude::*;

use super::{Aggregates, NearNullSpace, SparseAlgebraOps};
use crate::backend::core::BackendCore;
use crate::backend::cube::{copy_words_kernel, scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::csr::Csr;
use crate::sparse::{CsrKernel, RowStats};
use crate::vector::VectorOps;

/// Units per cube of the scan (and the shared-memory trees).
const SCAN_UNITS: usize = 256;
/// Counts per unit of the scan; a cube covers a tile of `SCAN_UNITS * PER_UNIT`.
const PER_UNIT: usize = 16;
const TILE: usize = SCAN_UNITS * PER_UNIT;
/// "No aggregate yet".
const NONE: u32 = u32::MAX;
/// Units per cube of SpGEMM.
const SPGEMM_DIM: usize = 256;
/// The most cursor slots (of `cur` and of `col`) SpGEMM allocates: 32M, 128 MB each.
const SPGEMM_SLOTS: usize = 1 << 25;
/// SpGEMM splits the rows of `A` into pieces of this many entries when a row is longer than
/// [`SPGEMM_SPLIT_ABOVE`] (a transposed prolongator's rows: hundreds of entries).
const SPGEMM_PIECE: usize = 32;
const SPGEMM_SPLIT_ABOVE: usize = 64;

/// The 32-bit mixing of [`hash32`](super::aggregate::hash32), on the device.
#[cube]
fn hash32(i: u32) -> u32 {
    let mut x = i;
    x = x ^ (x >> 16);
    x *= 0x7feb_352du32;
    x = x ^ (x >> 15);
    x *= 0x846c_a68bu32;
    x ^ (x >> 16)
}

/// The high word of a node's MIS key ([`key_high`](super::aggregate::key_high)).
#[cube]
fn key_high(state: u32, i: u32) -> u32 {
    (state << 30) | (hash32(i) >> 2)
}

// ---------------------------------------------------------------------------------------
// Scan

/// Per tile: the sum of the counts (and whether it overflowed u32), the largest, the
/// smallest, the zeros and the sum of squares (f32, for the row statistics).
#[cube(launch_unchecked)]
fn tile_stats_kernel(
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
/// (the total).
#[cube(launch_unchecked)]
fn scan_apply_kernel(
    counts: &Array<u32>,
    n: usize,
    tiles: usize,
    offsets: &Array<u32>,
    out: &mut Array<u32>,
) {
    let mut s = SharedMemory::<u32>::new(SCAN_UNITS);
    let unit = UNIT_POS as usize;
    let mut tile = CUBE_POS;
    while tile < tiles {
        let start = tile * TILE + unit * PER_UNIT;
        let mut sum = 0u32;
        for e in 0..PER_UNIT {
            let i = start + e;
            if i < n {
                sum += counts[i];
            }
        }
        s[unit] = sum;
        sync_cube();
        let mut offset = 1usize;
        while offset < SCAN_UNITS {
            let mut v = 0u32;
            if unit >= offset {
                v = s[unit - offset];
            }
            sync_cube();
            s[unit] += v;
            sync_cube();
            offset *= 2;
        }
        let mut run = offsets[tile] + s[unit] - sum;
        for e in 0..PER_UNIT {
            let i = start + e;
            if i < n {
                out[i] = run;
                run += counts[i];
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
fn diagonal_kernel<V: Float>(
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
fn row_abs_sums_kernel<V: Float>(
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
fn strong<V: Float>(i: usize, j: usize, v: V, di: V, dj: V, theta: V) -> bool {
    let mut s = i == j;
    if !s && v != V::new(0.0) {
        s = V::abs(v) >= theta * V::sqrt(di * dj);
    }
    s
}

#[cube(launch_unchecked)]
fn strength_kernel<V: Float>(
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

#[cube(launch_unchecked)]
fn count_nonpositive_kernel(x: &Array<f64>, flag: &mut Array<u32>, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let positive = x[i] > 0.0; // false for NaN too
        if !positive {
            flag[0] = 1;
        }
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn hash_vector_kernel(x: &mut Array<f64>, seed: u32, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        x[i] = f64::cast_from(hash32(u32::cast_from(i) + seed)) / 4_294_967_296.0 + 0.5;
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn fill_u32_kernel(x: &mut Array<u32>, value: u32, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        x[i] = value;
        i += stride;
    }
}

// ---------------------------------------------------------------------------------------
// SpGEMM

/// Row `i` of `A·B` by a merge of the selected rows of `B`: entry `k` of `A`'s row keeps a
/// cursor into row `A(i, k)` of `B` and the column it shows (`u32::MAX` once the row is used
/// up). The unit that runs rows `t, t + stride, …` keeps the cursor of its row's `j`-th
/// entry at `cur[j stride + t]` and its column at `col[j stride + t]`: the units of a plane
/// walk their rows' cursors in step, so their reads and writes of the slots coalesce. Each
/// step takes the smallest column shown, sums the products of the cursors on it (in `A`'s
/// order), advances them and finds the next smallest column in the same pass. `fill`: write
/// the row at `c_ptr[i]`; else count it. (The nested ifs stay: kernel conditions do not
/// short-circuit, and `B`'s columns must not be read past a row's end.)
#[allow(clippy::collapsible_if)]
#[cube(launch_unchecked)]
fn spgemm_kernel<V: Float>(
    a_ptr: &Array<u32>,
    a_cols: &Array<u32>,
    a_vals: &Array<V>,
    b_ptr: &Array<u32>,
    b_cols: &Array<u32>,
    b_vals: &Array<V>,
    cur: &mut Array<u32>,
    col: &mut Array<u32>,
    c_ptr: &Array<u32>,
    c_cols: &mut Array<u32>,
    c_vals: &mut Array<V>,
    counts: &mut Array<u32>,
    n: usize,
    #[comptime] fill: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let t = ABSOLUTE_POS;
    let mut i = t;
    while i < n {
        let s = a_ptr[i] as usize;
        let e = a_ptr[i + 1] as usize;
        let mut low = comptime![NONE].runtime();
        for k in s..e {
            let j = a_cols[k] as usize;
            let c = b_ptr[j];
            let slot = (k - s) * stride + t;
            cur[slot] = c;
            let mut v = comptime![NONE].runtime();
            if c < b_ptr[j + 1] {
                v = b_cols[c as usize];
            }
            col[slot] = v;
            if v < low {
                low = v;
            }
        }
        let mut at = 0u32;
        if fill {
            at = c_ptr[i];
        }
        let mut count = 0u32;
        while low != NONE {
            let mut acc = V::new(0.0);
            let mut next = comptime![NONE].runtime();
            for k in s..e {
                let slot = (k - s) * stride + t;
                let mut v = col[slot];
                if v == low {
                    let c = cur[slot];
                    if fill {
                        acc += a_vals[k] * b_vals[c as usize];
                    }
                    let c = c + 1;
                    cur[slot] = c;
                    v = NONE;
                    if c < b_ptr[a_cols[k] as usize + 1] {
                        v = b_cols[c as usize];
                    }
                    col[slot] = v;
                }
                if v < next {
                    next = v;
                }
            }
            if fill {
                c_cols[at as usize] = low;
                c_vals[at as usize] = acc;
                at += 1;
            }
            count += 1;
            low = next;
        }
        if !fill {
            counts[i] = count;
        }
        i += stride;
    }
}

/// `counts[i]` = the pieces of `chunk` entries row `i` splits into (`⌈len / chunk⌉`).
#[allow(clippy::manual_div_ceil)]
#[cube(launch_unchecked)]
fn split_counts_kernel(a_ptr: &Array<u32>, counts: &mut Array<u32>, n: usize, chunk: u32) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let len = a_ptr[i + 1] - a_ptr[i];
        counts[i] = (len + chunk - 1) / chunk;
        i += stride;
    }
}

/// The pieces of every row: piece `v = voff[i] + j` of row `i` starts at entry
/// `a_ptr[i] + j chunk` (`split_ptr[v]`) and is column `v` of the row selector
/// (`sel_cols[v] = v`); `split_ptr[voff[n]] = a_ptr[n]`.
#[cube(launch_unchecked)]
fn split_rows_kernel(
    a_ptr: &Array<u32>,
    voff: &Array<u32>,
    split_ptr: &mut Array<u32>,
    sel_cols: &mut Array<u32>,
    n: usize,
    chunk: u32,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let first = voff[i];
        for j in 0..voff[i + 1] - first {
            let v = first + j;
            split_ptr[v as usize] = a_ptr[i] + j * chunk;
            sel_cols[v as usize] = v;
        }
        if i + 1 == n {
            let last = voff[n] as usize;
            split_ptr[last] = a_ptr[n];
        }
        i += stride;
    }
}

// ---------------------------------------------------------------------------------------
// Transpose

#[cube(launch_unchecked)]
fn column_counts_kernel(
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

#[cube(launch_unchecked)]
fn transpose_fill_kernel<V: Float>(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    values: &Array<V>,
    t_ptr: &Array<u32>,
    cursor: &mut Array<Atomic<u32>>,
    t_cols: &mut Array<u32>,
    t_vals: &mut Array<V>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
            let c = cols[k] as usize;
            let dst = t_ptr[c] + cursor[c].fetch_add(1u32);
            t_cols[dst as usize] = u32::cast_from(i);
            t_vals[dst as usize] = values[k];
        }
        i += stride;
    }
}

/// Rows up to this long are sorted by insertion; longer ones by merging sorted runs of
/// this length.
const SORT_RUN: usize = 32;

/// Insertion sort of `cols[s..e]` (values along).
#[cube]
fn insertion_sort<V: Float>(cols: &mut Array<u32>, vals: &mut Array<V>, s: usize, e: usize) {
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
fn merge_runs<V: Float>(
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
fn sort_rows_kernel<V: Float>(
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

// ---------------------------------------------------------------------------------------
// Aggregation

/// `m[i]` = the largest key within distance 1 of `i`; `first`: keys from `state`, else
/// from `(in_hi, in_lo)`.
#[cube(launch_unchecked)]
fn spread_kernel(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    state: &Array<u32>,
    in_hi: &Array<u32>,
    in_lo: &Array<u32>,
    out_hi: &mut Array<u32>,
    out_lo: &mut Array<u32>,
    n: usize,
    #[comptime] first: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let mut bh = in_hi[i];
        let mut bl = in_lo[i];
        if first {
            bh = key_high(state[i], u32::cast_from(i));
            bl = u32::cast_from(i);
        }
        for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
            let j = cols[k];
            let mut h = in_hi[j as usize];
            let mut l = in_lo[j as usize];
            if first {
                h = key_high(state[j as usize], j);
                l = j;
            }
            if h > bh || (h == bh && l > bl) {
                bh = h;
                bl = l;
            }
        }
        out_hi[i] = bh;
        out_lo[i] = bl;
        i += stride;
    }
}

/// An undecided node whose distance-2 maximum is a root leaves; one that is its own
/// maximum becomes a root; `left[0] = 1` if any stays undecided.
#[cube(launch_unchecked)]
fn decide_kernel(
    state: &mut Array<u32>,
    m_hi: &Array<u32>,
    m_lo: &Array<u32>,
    left: &mut Array<u32>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        if state[i] == 1 {
            if (m_hi[i] >> 30) == 2 {
                state[i] = 0;
            } else if m_lo[i] == u32::cast_from(i) {
                state[i] = 2;
            } else {
                left[0] = 1;
            }
        }
        i += stride;
    }
}

/// `flags[i] = 1` where `state[i] == value` (`by_state`) or `agg[i] == NONE`.
#[cube(launch_unchecked)]
fn flags_kernel(state: &Array<u32>, value: u32, flags: &mut Array<u32>, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let mut f = 0u32;
        if state[i] == value {
            f = 1;
        }
        flags[i] = f;
        i += stride;
    }
}

/// `agg[i] = base + prefix[i]` where `flags[i]`, else (`keep`) as it was or `NONE`.
#[cube(launch_unchecked)]
fn number_kernel(
    flags: &Array<u32>,
    prefix: &Array<u32>,
    base: u32,
    agg: &mut Array<u32>,
    n: usize,
    #[comptime] keep: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        if flags[i] == 1 {
            agg[i] = base + prefix[i];
        } else if !keep {
            agg[i] = 0xFFFF_FFFFu32;
        }
        i += stride;
    }
}

/// An unplaced node joins the aggregate of its neighbour of largest key among the roots
/// (`roots_only`) or the placed nodes.
#[cube(launch_unchecked)]
fn place_kernel(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    state: &Array<u32>,
    agg_in: &Array<u32>,
    agg_out: &mut Array<u32>,
    n: usize,
    #[comptime] roots_only: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let mine = agg_in[i];
        if mine != 0xFFFF_FFFFu32 {
            agg_out[i] = mine;
        } else {
            let mut found = false;
            let mut bh = 0u32;
            let mut bl = 0u32;
            let mut best = 0xFFFF_FFFFu32;
            for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
                let j = cols[k];
                let placed = agg_in[j as usize];
                let mut ok = placed != 0xFFFF_FFFFu32;
                if roots_only && state[j as usize] != 2 {
                    ok = false;
                }
                if ok {
                    let h = key_high(state[j as usize], j);
                    if !found || h > bh || (h == bh && j > bl) {
                        found = true;
                        bh = h;
                        bl = j;
                        best = placed;
                    }
                }
            }
            agg_out[i] = best;
        }
        i += stride;
    }
}

// ---------------------------------------------------------------------------------------
// Tentative prolongator

#[cube(launch_unchecked)]
fn member_counts_kernel(agg: &Array<u32>, counts: &mut Array<Atomic<u32>>, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        counts[agg[i] as usize].fetch_add(1u32);
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn member_fill_kernel(
    agg: &Array<u32>,
    start: &Array<u32>,
    cursor: &mut Array<Atomic<u32>>,
    members: &mut Array<u32>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let g = agg[i] as usize;
        let at = start[g] + cursor[g].fetch_add(1u32);
        members[at as usize] = u32::cast_from(i);
        i += stride;
    }
}

/// Per aggregate: its members sorted, each member's place in it, and the modified
/// Gram–Schmidt QR of its rows of `B` (`k` columns): `Q` in `q[start·k ..]` column-major
/// (`m` rows), `R` in `r[g·k·k ..]` row-major, the kept columns in `kept[g]`.
#[cube(launch_unchecked)]
fn aggregate_qr_kernel(
    start: &Array<u32>,
    members: &mut Array<u32>,
    local: &mut Array<u32>,
    b: &Array<f64>,
    rows: usize,
    k: usize,
    q: &mut Array<f64>,
    r: &mut Array<f64>,
    kept: &mut Array<u32>,
    count: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut g = ABSOLUTE_POS;
    while g < count {
        let s = start[g] as usize;
        let e = start[g + 1] as usize;
        let m = e - s;
        for t in s + 1..e {
            let v = members[t];
            let mut p = t;
            loop {
                if p <= s {
                    break;
                }
                if members[p - 1] <= v {
                    break;
                }
                members[p] = members[p - 1];
                p -= 1;
            }
            members[p] = v;
        }
        for t in s..e {
            local[members[t] as usize] = u32::cast_from(t - s);
        }
        let base = s * k;
        let mut nk = 0usize;
        for c in 0..k {
            let slot = base + nk * m;
            let mut norm0 = 0.0f64;
            for l in 0..m {
                let v = b[c * rows + members[s + l] as usize];
                q[slot + l] = v;
                norm0 += v * v;
            }
            norm0 = f64::sqrt(norm0);
            for p in 0..nk {
                let qp = base + p * m;
                let mut coef = 0.0f64;
                for l in 0..m {
                    coef += q[qp + l] * q[slot + l];
                }
                for l in 0..m {
                    q[slot + l] -= coef * q[qp + l];
                }
                r[g * k * k + p * k + c] = coef;
            }
            let mut norm = 0.0f64;
            for l in 0..m {
                norm += q[slot + l] * q[slot + l];
            }
            norm = f64::sqrt(norm);
            if norm > 1e-10 * norm0 && norm > 0.0 {
                r[g * k * k + nk * k + c] = norm;
                for l in 0..m {
                    q[slot + l] = q[slot + l] / norm;
                }
                nk += 1;
            }
        }
        kept[g] = u32::cast_from(nk);
        g += stride;
    }
}

/// `counts[i] = kept[agg[i]]`.
#[cube(launch_unchecked)]
fn tentative_counts_kernel(agg: &Array<u32>, kept: &Array<u32>, counts: &mut Array<u32>, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        counts[i] = kept[agg[i] as usize];
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn tentative_fill_kernel(
    agg: &Array<u32>,
    start: &Array<u32>,
    local: &Array<u32>,
    kept: &Array<u32>,
    offset: &Array<u32>,
    q: &Array<f64>,
    k: usize,
    t_ptr: &Array<u32>,
    t_cols: &mut Array<u32>,
    t_vals: &mut Array<f64>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let g = agg[i] as usize;
        let s = start[g] as usize;
        let m = start[g + 1] as usize - s;
        let at = t_ptr[i] as usize;
        for p in 0..kept[g] as usize {
            t_cols[at + p] = offset[g] + u32::cast_from(p);
            t_vals[at + p] = q[s * k + p * m + local[i] as usize];
        }
        i += stride;
    }
}

#[cube(launch_unchecked)]
fn coarse_near_null_kernel(
    kept: &Array<u32>,
    offset: &Array<u32>,
    r: &Array<f64>,
    k: usize,
    nc: usize,
    bc: &mut Array<f64>,
    count: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut g = ABSOLUTE_POS;
    while g < count {
        let o = offset[g] as usize;
        for p in 0..kept[g] as usize {
            for c in 0..k {
                bc[c * nc + o + p] = r[g * k * k + p * k + c];
            }
        }
        g += stride;
    }
}

/// `P(i, :) = −ω/dᵢ (A T)(i, :) + T(i, :)` in place on the pattern of `A T`.
#[cube(launch_unchecked)]
fn smooth_kernel(
    p_ptr: &Array<u32>,
    p_cols: &Array<u32>,
    p_vals: &mut Array<f64>,
    t_ptr: &Array<u32>,
    t_cols: &Array<u32>,
    t_vals: &Array<f64>,
    d: &Array<f64>,
    omega: InputScalar,
    n: usize,
) {
    let omega = omega.get::<f64>();
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let s = -omega / d[i];
        let ps = p_ptr[i] as usize;
        let pe = p_ptr[i + 1] as usize;
        for k in ps..pe {
            p_vals[k] = p_vals[k] * s;
        }
        for t in t_ptr[i] as usize..t_ptr[i + 1] as usize {
            let c = t_cols[t];
            for k in ps..pe {
                if p_cols[k] == c {
                    p_vals[k] += t_vals[t];
                }
            }
        }
        i += stride;
    }
}

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

        self.launch::<V>(false, || {
            // SAFETY: the CSR invariants of A and B (A's columns index B's rows); cur and
            // col have a slot per unit for each entry of the longest row of A, counts one
            // per row.
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
                    dummy_u.arg(),
                    dummy_u2.arg(),
                    dummy_v.arg(),
                    counts.arg(),
                    n,
                    false,
                )
            }
        })?;
        let (c_ptr, nnz, stats) = self.exclusive_scan(&counts, n, b.ncols, "the product")?;
        drop(counts);
        let cols = self.alloc_uninit::<u32>(nnz)?;
        let vals = self.alloc_uninit::<V>(nnz)?;
        self.launch::<V>(true, || {
            // SAFETY: as above; c_ptr offsets each row's count, which the numeric pass
            // reproduces.
            unsafe {
                spgemm_kernel::launch_unchecked::<V, R>(
                    self.client(),
                    count,
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
                    dummy_u2.arg(),
                    n,
                    true,
                )
            }
        })?;
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
