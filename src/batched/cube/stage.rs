//! Moving groups of small matrices between global and shared memory, coalesced, and the
//! launch shape of the kernels that work on such groups.

use cubecl::prelude::*;

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
