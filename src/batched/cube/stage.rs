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

/// Loads the matrices (`size` entries each) of group `g` into shared memory, coalesced over
/// the whole group, with rows of `n` entries `ld >= n` apart in shared memory: an odd `ld`
/// keeps units reading one column (or one matrix each, with `n = size`) on distinct banks.
/// `units` is the cube size. The loads of a unit are issued [`IN_FLIGHT`] at a time before
/// their stores to shared memory, so their latencies overlap instead of adding up.
#[cube]
pub(crate) fn load_group<V: Float, T: Float>(
    a: &Array<V>,
    sh: &mut SharedMemory<T>,
    g: usize,
    count: usize,
    #[comptime] size: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
    #[comptime] units: usize,
) {
    let group_len = comptime![per_cube * size];
    let base = g * group_len;
    let end = count * size;
    let unit = UNIT_POS as usize;
    let mut tmp = Array::<T>::new(IN_FLIGHT);
    let slots = comptime![in_flight(per_cube * size, units)];
    #[unroll]
    for batch in 0..comptime![(per_cube * size).div_ceil(units).div_ceil(slots)] {
        #[unroll]
        for it in 0..slots {
            let t = unit + comptime![(batch * slots + it) * units];
            let mut v = T::new(0.0);
            if t < group_len && base + t < end {
                v = T::cast_from(a[base + t]);
            }
            tmp[it] = v;
        }
        #[unroll]
        for it in 0..slots {
            let t = unit + comptime![(batch * slots + it) * units];
            if t < group_len {
                sh[(t / n) * ld + t % n] = tmp[it];
            }
        }
    }
}

/// Loads row `r` of each of the matrices (`n x n`) of group `g` into shared memory, the row
/// of the group's matrix `q` at `sh[q * ld..]`, coalesced (consecutive units read one row,
/// then the same row of the next matrix). Staging a group row by row needs `n + 1` entries
/// of shared memory a matrix instead of `n² + 1` (see [`WGPU_SHARED_BUDGET`]).
#[cube]
pub(crate) fn load_row<V: Float, T: Float>(
    a: &Array<V>,
    sh: &mut SharedMemory<T>,
    g: usize,
    count: usize,
    #[comptime] r: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
) {
    let len = comptime![per_cube * n];
    let base = g * comptime![per_cube * n * n] + comptime![r * n];
    let end = count * comptime![n * n];
    let unit = UNIT_POS as usize;
    let slots = comptime![in_flight(per_cube * n, per_cube)];
    #[unroll]
    for batch in 0..comptime![(per_cube * n).div_ceil(per_cube).div_ceil(slots)] {
        let mut tmp = Array::<T>::new(IN_FLIGHT);
        #[unroll]
        for it in 0..slots {
            let t = unit + comptime![(batch * slots + it) * per_cube];
            let at = base + (t / n) * comptime![n * n] + t % n;
            let mut v = T::new(0.0);
            if t < len && at < end {
                v = T::cast_from(a[at]);
            }
            tmp[it] = v;
        }
        #[unroll]
        for it in 0..slots {
            let t = unit + comptime![(batch * slots + it) * per_cube];
            if t < len {
                sh[(t / n) * ld + t % n] = tmp[it];
            }
        }
    }
}

/// Stores row `r` of the matrices of group `g` from shared memory (the layout of
/// [`load_row`]).
#[cube]
pub(crate) fn store_row<V: Float, T: Float>(
    a: &mut Array<V>,
    sh: &SharedMemory<T>,
    g: usize,
    count: usize,
    #[comptime] r: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
) {
    let len = comptime![per_cube * n];
    let base = g * comptime![per_cube * n * n] + comptime![r * n];
    let end = count * comptime![n * n];
    let mut t = UNIT_POS as usize;
    while t < len {
        let at = base + (t / n) * comptime![n * n] + t % n;
        if at < end {
            a[at] = V::cast_from(sh[(t / n) * ld + t % n]);
        }
        t += CUBE_DIM as usize;
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

/// Stores the matrices of group `g` from shared memory (the layout of [`load_group`]).
#[cube]
pub(crate) fn store_group<V: Float, T: Float>(
    a: &mut Array<V>,
    sh: &SharedMemory<T>,
    g: usize,
    count: usize,
    #[comptime] size: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
) {
    let group_len = per_cube * size;
    let base = g * group_len;
    let end = count * size;
    let mut t = UNIT_POS as usize;
    while t < group_len {
        if base + t < end {
            a[base + t] = V::cast_from(sh[(t / n) * ld + t % n]);
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
