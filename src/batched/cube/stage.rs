//! Moving groups of small matrices between global and shared memory, coalesced, and the
//! launch shape of the kernels that work on such groups.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{Cube, CubeRuntime};
use crate::backend::BackendKind;

/// Shared memory a cube of the batched kernels uses at most on wgpu (where it fits the
/// work). Measured on an H100 (`bench --suite layout`, 2026-11-25): NVIDIA's Vulkan driver
/// gives a multiprocessor about 50–60 KiB of shared memory in all, where CUDA gives 228 KiB,
/// so a memory-bound copy by cubes of 64 units falls from 2421 GB/s with 0.5 KiB a cube
/// to 1184 with 8 KiB and 272 with 32 KiB (CUDA: 2800, 2754, 1424). Small-memory GPUs
/// (AMD, Intel, Apple: 32–64 KiB) are alike.
pub(crate) const WGPU_SHARED_BUDGET: usize = 8 << 10;

/// Shared memory a cube of the batched kernels should use at most on `b`: all the device
/// allows on CUDA (a multiprocessor holds several such cubes), [`WGPU_SHARED_BUDGET`] on
/// wgpu.
pub(crate) fn shared_budget<R: CubeRuntime>(b: &Cube<R>) -> usize {
    let max = b.info().max_shared_bytes;
    match b.kind() {
        BackendKind::Wgpu => WGPU_SHARED_BUDGET.min(max),
        _ => max,
    }
}

/// Matrices up to this size are factored one per unit, entirely in registers, and multiplied
/// one output entry per unit.
pub(crate) const SMALL: usize = 8;

/// Which entries of each matrix of a group are staged, and where they go in shared memory:
/// entries `off..off + len` of matrices of `size` entries (`len = size`: whole matrices), in
/// rows of `n` entries `ld >= n` apart. An odd `ld` keeps units reading one column (or one
/// matrix each, with `n = len`) on distinct banks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Part {
    pub size: usize,
    pub off: usize,
    pub len: usize,
    pub n: usize,
    pub ld: usize,
    pub per_cube: usize,
}

impl Part {
    /// Whole matrices of `size` entries.
    pub(crate) fn whole(size: usize, n: usize, ld: usize, per_cube: usize) -> Self {
        Part {
            size,
            off: 0,
            len: size,
            n,
            ld,
            per_cube,
        }
    }

    /// Piece `i` of matrices of `size` entries cut into pieces of `len` (entries
    /// `i · len..(i + 1) · len`), each matrix's piece in one row at `q · ld` for the group's
    /// matrix `q`. The rows of `n x n` matrices (`len = n`) take `n + 1` entries of shared
    /// memory a matrix instead of `n² + 1` (see [`WGPU_SHARED_BUDGET`]).
    pub(crate) fn piece(i: usize, len: usize, size: usize, ld: usize, per_cube: usize) -> Self {
        Part {
            size,
            off: i * len,
            len,
            n: len,
            ld,
            per_cube,
        }
    }
}

/// The global index of entry `t` of a group's staged part (`base`: the group's first entry).
#[cube]
fn part_index(base: usize, t: usize, #[comptime] p: Part) -> usize {
    let mut at = base + t;
    if comptime![p.len != p.size] {
        at = base + (t / p.len) * p.size + p.off + t % p.len;
    }
    at
}

/// Loads part `p` of the matrices of group `g` into shared memory, coalesced over the whole
/// group (consecutive units read consecutive entries of the part). `units` is the cube size.
/// The loads of a unit are issued [`IN_FLIGHT`] at a time before their stores to shared
/// memory, so their latencies overlap instead of adding up.
#[cube]
pub(crate) fn load_part<V: Float, T: Float>(
    a: &Array<V>,
    sh: &mut SharedMemory<T>,
    g: usize,
    count: usize,
    #[comptime] p: Part,
    #[comptime] units: usize,
) {
    let bounds = part_bounds(g, count, p);
    let mut tmp = Array::<T>::new(IN_FLIGHT);
    let slots = comptime![in_flight(p.per_cube * p.len, units)];
    #[unroll]
    for batch in 0..comptime![(p.per_cube * p.len).div_ceil(units).div_ceil(slots)] {
        let shares = comptime![(batch * slots, (batch + 1) * slots)];
        fetch_part::<V, T>(a, &mut tmp, comptime![0usize], bounds, p, units, shares);
        put_part::<T>(sh, &tmp, comptime![0usize], p, units, shares);
    }
}

/// The first global entry of group `g`'s matrices and the end of the batch's entries.
#[cube]
pub(crate) fn part_bounds(g: usize, count: usize, #[comptime] p: Part) -> (usize, usize) {
    (g * comptime![p.per_cube * p.size], count * p.size)
}

/// Loads shares `shares.0..shares.1` of a unit of a group's part `p` (share `i`: entry
/// `unit + i · units` of the part, as [`load_part`] coalesces them) into registers
/// `dst[at..]`, zero past the group or past the batch's end (`bounds`: [`part_bounds`]).
#[cube]
pub(crate) fn fetch_part<V: Float, T: Float>(
    a: &Array<V>,
    dst: &mut Array<T>,
    #[comptime] at: usize,
    bounds: (usize, usize),
    #[comptime] p: Part,
    #[comptime] units: usize,
    #[comptime] shares: (usize, usize),
) {
    let (base, end) = bounds;
    let group_len = comptime![p.per_cube * p.len];
    let unit = UNIT_POS as usize;
    #[unroll]
    for it in 0..comptime![shares.1 - shares.0] {
        let t = unit + comptime![(shares.0 + it) * units];
        let i = part_index(base, t, p);
        let mut v = T::new(0.0);
        if t < group_len && i < end {
            v = T::cast_from(a[i]);
        }
        dst[comptime![at + it]] = v;
    }
}

/// Writes the shares that [`fetch_part`] loaded into `src[at..]` to their places
/// in shared memory.
#[cube]
pub(crate) fn put_part<T: Float>(
    sh: &mut SharedMemory<T>,
    src: &Array<T>,
    #[comptime] at: usize,
    #[comptime] p: Part,
    #[comptime] units: usize,
    #[comptime] shares: (usize, usize),
) {
    let group_len = comptime![p.per_cube * p.len];
    let unit = UNIT_POS as usize;
    #[unroll]
    for it in 0..comptime![shares.1 - shares.0] {
        let t = unit + comptime![(shares.0 + it) * units];
        if t < group_len {
            sh[(t / p.n) * p.ld + t % p.n] = src[comptime![at + it]];
        }
    }
}

/// Global loads a unit keeps in flight while staging matrices in shared memory.
pub(crate) const IN_FLIGHT: usize = 8;

/// Loads in flight per unit for `len` entries over `units` units: [`IN_FLIGHT`], or fewer
/// when the unit has fewer to load.
pub(crate) const fn in_flight(len: usize, units: usize) -> usize {
    let per_unit = len.div_ceil(units);
    if per_unit < IN_FLIGHT {
        per_unit
    } else {
        IN_FLIGHT
    }
}

/// Stores part `p` of the matrices of group `g` from shared memory (the layout of
/// [`load_part`]).
#[cube]
pub(crate) fn store_part<V: Float, T: Float>(
    a: &mut Array<V>,
    sh: &SharedMemory<T>,
    g: usize,
    count: usize,
    #[comptime] p: Part,
) {
    let group_len = comptime![p.per_cube * p.len];
    let base = g * comptime![p.per_cube * p.size];
    let end = count * p.size;
    let mut t = UNIT_POS as usize;
    while t < group_len {
        let at = part_index(base, t, p);
        if at < end {
            a[at] = V::cast_from(sh[(t / p.n) * p.ld + t % p.n]);
        }
        t += CUBE_DIM as usize;
    }
}

/// Cubes of `per_cube` matrices (groups) covering `count` matrices, `n` units per matrix.
pub(crate) fn groups_shape(count: usize, per_cube: usize, n: usize) -> (CubeCount, CubeDim) {
    let groups = count.div_ceil(per_cube).clamp(1, 65535);
    (
        CubeCount::Static(groups as u32, 1, 1),
        CubeDim::new_1d((per_cube * n) as u32),
    )
}
