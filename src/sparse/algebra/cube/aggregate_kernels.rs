//! The aggregation kernels of the sparse algebra on CubeCL devices (see [the host
//! side](super)): MIS-2 aggregation, the member lists, the tentative prolongator by a QR per
//! aggregate, the coarse near-null space and the smoothed prolongator.

use cubecl::prelude::*;

use super::kernels::key_high;

/// `m[i]` = the largest key within distance 1 of `i`, for the rows whose result the round
/// reads. `first`: keys from `state`, for the nodes `i` with `live[i] == round` (every node
/// in round 0), which the decide pass of the previous round marked: the undecided nodes and
/// their neighbours. Otherwise: from `(in_hi, in_lo)`, for the undecided nodes only (the
/// decide pass reads no other). Rows skipped keep a stale `m`, which no one reads.
#[cube(launch_unchecked)]
pub(super) fn spread_kernel(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    state: &Array<u32>,
    live: &Array<u32>,
    round: u32,
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
        let mut needed = state[i] == 1;
        if first {
            needed = round == 0 || live[i] == round;
        }
        if needed {
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
        }
        i += stride;
    }
}

/// An undecided node whose distance-2 maximum is a root leaves; one that is its own
/// maximum becomes a root; one that stays undecided sets `left[0] = 1` and marks itself
/// and its neighbours `live = round + 1`: the rows whose distance-1 maxima the next round
/// needs (the pattern need not be symmetric: the marks go along the undecided node's row).
#[cube(launch_unchecked)]
pub(super) fn decide_kernel(
    row_ptr: &Array<u32>,
    cols: &Array<u32>,
    state: &mut Array<u32>,
    m_hi: &Array<u32>,
    m_lo: &Array<u32>,
    live: &mut Array<u32>,
    round: u32,
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
                live[i] = round + 1;
                for k in row_ptr[i] as usize..row_ptr[i + 1] as usize {
                    let j = cols[k] as usize;
                    live[j] = round + 1;
                }
            }
        }
        i += stride;
    }
}

/// `flags[i] = 1` where `state[i] == value` (`by_state`) or `agg[i] == NONE`.
#[cube(launch_unchecked)]
pub(super) fn flags_kernel(state: &Array<u32>, value: u32, flags: &mut Array<u32>, n: usize) {
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
pub(super) fn number_kernel(
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
pub(super) fn place_kernel(
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
pub(super) fn member_counts_kernel(agg: &Array<u32>, counts: &mut Array<Atomic<u32>>, n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        counts[agg[i] as usize].fetch_add(1u32);
        i += stride;
    }
}

#[cube(launch_unchecked)]
pub(super) fn member_fill_kernel(
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
pub(super) fn aggregate_qr_kernel(
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
pub(super) fn tentative_counts_kernel(
    agg: &Array<u32>,
    kept: &Array<u32>,
    counts: &mut Array<u32>,
    n: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < n {
        counts[i] = kept[agg[i] as usize];
        i += stride;
    }
}

#[cube(launch_unchecked)]
pub(super) fn tentative_fill_kernel(
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
pub(super) fn coarse_near_null_kernel(
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
pub(super) fn smooth_kernel(
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
