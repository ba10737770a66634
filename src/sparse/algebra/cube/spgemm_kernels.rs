//! The SpGEMM kernels on CubeCL devices (see [the host side](super::spgemm)): the merge of
//! `B`'s selected rows a unit or a plane per row of `A`, and the split of `A`'s long rows.

use cubecl::prelude::*;

use super::kernels::NONE;

/// SpGEMM's cursor slots per cube (each of three u32 arrays in shared memory: 24 KiB in
/// all, within lavapipe's 32 KiB and NVIDIA's wgpu 48 KiB; a device that offers less gets
/// fewer units per cube, see `spgemm_on_device`).
pub(super) const SPGEMM_CUBE_SLOTS: usize = 2048;
/// SpGEMM splits the rows of `A` into pieces of this many entries when a row is longer than
/// [`SPGEMM_SPLIT_ABOVE`] (a transposed prolongator's rows: hundreds of entries).
pub(super) const SPGEMM_PIECE: usize = 32;
pub(super) const SPGEMM_SPLIT_ABOVE: usize = 64;
/// With plane operations (32 lanes), a matrix `A` with a row above [`SPGEMM_PLANE_ABOVE`]
/// entries takes a plane per row ([`spgemm_plane_kernel`], every row, up to
/// [`SPGEMM_PLANE_MAX`] entries: four cursors a lane), and longer rows are split into pieces
/// of that many.
pub(super) const SPGEMM_PLANE_ABOVE: usize = 32;
pub(super) const SPGEMM_PLANE_MAX: usize = 128;

/// The most planes a dense-row cube takes (its units: 32 a plane).
pub(super) const SPGEMM_DENSE_MAX_PLANES: usize = 32;
/// The shared memory a dense-row cube may take, whatever the device offers beyond it: the
/// number of planes, and so the order of the sums, does not vary between devices that offer
/// at least this much.
pub(super) const SPGEMM_DENSE_SHARED: usize = 48 * 1024;
/// The widest `B` (columns, rounded up to a power of two) the dense-row kernel takes.
pub(super) const SPGEMM_DENSE_MAX_WIDTH: usize = 512;

/// Row `i` of `A·B` for a `B` of at most `width` columns (a coarse level's `R·AP`: few,
/// long rows of `A`, few columns), a cube per row, the row accumulated densely in shared
/// memory. Plane `w` of the cube's `planes` takes the `w`-th of as many consecutive segments
/// of `A`'s row and walks it in `A`'s order, one entry `k` a step: its lanes take the
/// entries of `B`'s row `A(i, k)` (distinct columns: no two lanes add to the same one) and add
/// the products into the plane's own accumulator. Every plane takes the same number of steps
/// (the longest segment's), with a barrier after each, so a column's products are added in
/// `A`'s order; the step's entry of `A` and its row of `B` are read one step ahead. Then each
/// column's segment sums are added in segment order (deterministic for a given `planes`: the
/// split form's pieces, in order), and unit 0 walks the columns in order, counting those
/// touched (`fill` false; entries that cancel count: the pattern is structural) or writing
/// them at `c_ptr[i]`.
#[allow(clippy::manual_div_ceil)]
#[cube(launch_unchecked)]
pub(super) fn spgemm_dense_kernel<V: Float>(
    a_ptr: &Array<u32>,
    a_cols: &Array<u32>,
    a_vals: &Array<V>,
    b_ptr: &Array<u32>,
    b_cols: &Array<u32>,
    b_vals: &Array<V>,
    c_ptr: &Array<u32>,
    c_cols: &mut Array<u32>,
    c_vals: &mut Array<V>,
    counts: &mut Array<u32>,
    n: usize,
    ncols: usize,
    #[comptime] width: usize,
    #[comptime] planes: usize,
    #[comptime] fill: bool,
) {
    let dim = comptime![planes * 32];
    let mut acc = SharedMemory::<V>::new(comptime!(width * planes));
    let mut touched = SharedMemory::<u32>::new(width);
    let t = UNIT_POS as usize;
    let lane = t % 32;
    let w = t / 32;
    let mut i = CUBE_POS;
    while i < n {
        let mut c = t;
        while c < width * planes {
            acc[c] = V::new(0.0);
            c += dim;
        }
        let mut c = t;
        while c < width {
            touched[c] = 0;
            c += dim;
        }
        sync_cube();
        let s = a_ptr[i] as usize;
        let len = a_ptr[i + 1] as usize - s;
        let hi = s + len * (w + 1) / planes;
        // The same for every unit of the cube: at least every segment's length.
        let steps = (len + planes - 1) / planes;
        let base = w * width;
        let mut k = s + len * w / planes;
        let mut start = 0usize;
        let mut end = 0usize;
        let mut av = V::new(0.0);
        if k < hi {
            let j = a_cols[k] as usize;
            start = b_ptr[j] as usize;
            end = b_ptr[j + 1] as usize;
            av = a_vals[k];
        }
        for _ in 0..steps {
            // The next step's entry, read before this one's products are added.
            let next = k + 1;
            let mut next_start = 0usize;
            let mut next_end = 0usize;
            let mut next_av = V::new(0.0);
            if next < hi {
                let j = a_cols[next] as usize;
                next_start = b_ptr[j] as usize;
                next_end = b_ptr[j + 1] as usize;
                next_av = a_vals[next];
            }
            let mut m = start + lane;
            while m < end {
                let col = b_cols[m] as usize;
                acc[base + col] += av * b_vals[m];
                touched[col] = 1;
                m += 32;
            }
            sync_cube();
            k = next;
            start = next_start;
            end = next_end;
            av = next_av;
        }
        let mut c = t;
        while c < width {
            let mut sum = acc[c];
            for q in 1..planes {
                sum += acc[q * width + c];
            }
            acc[c] = sum;
            c += dim;
        }
        sync_cube();
        if t == 0 {
            if fill {
                let mut at = c_ptr[i] as usize;
                for col in 0..ncols {
                    if touched[col] == 1 {
                        c_cols[at] = u32::cast_from(col);
                        c_vals[at] = acc[col];
                        at += 1;
                    }
                }
            } else {
                let mut total = 0u32;
                for col in 0..ncols {
                    total += touched[col];
                }
                counts[i] = total;
            }
        }
        sync_cube();
        i += CUBE_COUNT;
    }
}

/// Row `i` of `A·B` by a merge of the selected rows of `B`: entry `k` of `A`'s row keeps a
/// cursor into row `A(i, k)` of `B`, that row's end, and the column the cursor shows
/// (`u32::MAX` once the row is used up). The cursors live in shared memory, `slots` per unit
/// (at least the longest row of `A`): the unit `t` of a cube keeps its row's `j`-th cursor
/// at `j dim + t`, so the units of a plane touch consecutive words (no bank conflicts). Each
/// step takes the smallest column shown, sums the products of the cursors on it (in `A`'s
/// order), advances them and finds the next smallest column in the same pass. `fill`: write
/// the row at `c_ptr[i]`; else count it. No unit reads another's slots: no barriers. (The
/// nested ifs stay: kernel conditions do not short-circuit, and `B`'s columns must not be
/// read past a row's end.)
#[allow(clippy::collapsible_if)]
#[cube(launch_unchecked)]
pub(super) fn spgemm_kernel<V: Float>(
    a_ptr: &Array<u32>,
    a_cols: &Array<u32>,
    a_vals: &Array<V>,
    b_ptr: &Array<u32>,
    b_cols: &Array<u32>,
    b_vals: &Array<V>,
    c_ptr: &Array<u32>,
    c_cols: &mut Array<u32>,
    c_vals: &mut Array<V>,
    counts: &mut Array<u32>,
    n: usize,
    #[comptime] slots: usize,
    #[comptime] dim: usize,
    #[comptime] fill: bool,
) {
    let mut cur = SharedMemory::<u32>::new(comptime!(slots * dim));
    let mut end = SharedMemory::<u32>::new(comptime!(slots * dim));
    let mut col = SharedMemory::<u32>::new(comptime!(slots * dim));
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let t = UNIT_POS as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        let s = a_ptr[i] as usize;
        let e = a_ptr[i + 1] as usize;
        let mut low = comptime![NONE].runtime();
        for k in s..e {
            let j = a_cols[k] as usize;
            let c = b_ptr[j];
            let f = b_ptr[j + 1];
            let slot = (k - s) * dim + t;
            cur[slot] = c;
            end[slot] = f;
            let mut v = comptime![NONE].runtime();
            if c < f {
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
                let slot = (k - s) * dim + t;
                let mut v = col[slot];
                if v == low {
                    let c = cur[slot];
                    if fill {
                        acc += a_vals[k] * b_vals[c as usize];
                    }
                    let c = c + 1;
                    cur[slot] = c;
                    v = NONE;
                    if c < end[slot] {
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

/// Row `i` of `A·B` by the same merge as [`spgemm_kernel`], a plane of 32 lanes per row
/// (for a matrix `A` with a row above 32 entries, on devices with plane operations): lane `l`
/// holds, in registers, the cursors of the row's entries `l, l + 32, …` (`per_lane` of
/// them, so rows up to `32 per_lane` entries). Each step takes the plane's smallest shown
/// column (`plane_min`), each lane sums its products on it in `A`'s order, and the plane
/// adds the lanes' sums (`plane_sum`: a fixed tree, so the result is deterministic but
/// rounds differently from the CPU's order). Every lane of a plane runs the same steps
/// (uniform control flow for the plane operations).
#[allow(clippy::collapsible_if)]
#[cube(launch_unchecked)]
pub(super) fn spgemm_plane_kernel<V: Float>(
    a_ptr: &Array<u32>,
    a_cols: &Array<u32>,
    a_vals: &Array<V>,
    b_ptr: &Array<u32>,
    b_cols: &Array<u32>,
    b_vals: &Array<V>,
    c_ptr: &Array<u32>,
    c_cols: &mut Array<u32>,
    c_vals: &mut Array<V>,
    counts: &mut Array<u32>,
    n: usize,
    #[comptime] per_lane: usize,
    #[comptime] fill: bool,
) {
    let lane = UNIT_POS_PLANE as usize;
    let planes = (CUBE_DIM / PLANE_DIM) as usize;
    let total = CUBE_COUNT * planes;
    let plane = CUBE_POS * planes + (UNIT_POS / PLANE_DIM) as usize;
    let width = PLANE_DIM as usize;
    let rounds = crate::backend::cube::ceil_div(n, total);
    let mut cur = Array::<u32>::new(per_lane);
    let mut end = Array::<u32>::new(per_lane);
    let mut col = Array::<u32>::new(per_lane);
    let mut av = Array::<V>::new(per_lane);
    for round in 0..rounds {
        let i = plane + round * total;
        let mut s = 0usize;
        let mut e = 0usize;
        if i < n {
            s = a_ptr[i] as usize;
            e = a_ptr[i + 1] as usize;
        }
        let mut low = comptime![NONE].runtime();
        #[unroll]
        for m in 0..per_lane {
            // The offset within the row first: `s + offset` cannot wrap past a row's end.
            let offset = m * width + lane;
            let k = s + offset;
            cur[m] = 0;
            end[m] = 0;
            col[m] = comptime![NONE].runtime();
            av[m] = V::new(0.0);
            if offset < e - s {
                let j = a_cols[k] as usize;
                let c = b_ptr[j];
                let f = b_ptr[j + 1];
                cur[m] = c;
                end[m] = f;
                if fill {
                    av[m] = a_vals[k];
                }
                if c < f {
                    col[m] = b_cols[c as usize];
                }
            }
            if col[m] < low {
                low = col[m];
            }
        }
        low = plane_min(low);
        let mut at = 0u32;
        if fill && i < n {
            at = c_ptr[i];
        }
        let mut count = 0u32;
        while low != NONE {
            let mut acc = V::new(0.0);
            let mut next = comptime![NONE].runtime();
            #[unroll]
            for m in 0..per_lane {
                if col[m] == low {
                    let c = cur[m];
                    if fill {
                        acc += av[m] * b_vals[c as usize];
                    }
                    let c = c + 1;
                    cur[m] = c;
                    col[m] = comptime![NONE].runtime();
                    if c < end[m] {
                        col[m] = b_cols[c as usize];
                    }
                }
                if col[m] < next {
                    next = col[m];
                }
            }
            if fill {
                let sum = plane_sum(acc);
                if lane == 0 {
                    c_cols[at as usize] = low;
                    c_vals[at as usize] = sum;
                }
                at += 1;
            }
            count += 1;
            low = plane_min(next);
        }
        if !fill && lane == 0 && i < n {
            counts[i] = count;
        }
    }
}

/// `counts[i]` = the pieces of `chunk` entries row `i` splits into (`⌈len / chunk⌉`).
#[allow(clippy::manual_div_ceil)]
#[cube(launch_unchecked)]
pub(super) fn split_counts_kernel(
    a_ptr: &Array<u32>,
    counts: &mut Array<u32>,
    n: usize,
    chunk: u32,
) {
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
pub(super) fn split_rows_kernel(
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
