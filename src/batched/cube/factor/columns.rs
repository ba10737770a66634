//! The column kernels (`8 < n <= 32`): one unit per column, the column in registers (every
//! index a constant where the steps are unrolled; the pivot row, chosen at run time, is
//! reached by a loop of selects), loaded and stored straight from global memory (the units
//! of a matrix read a row together: coalesced). Shared memory holds only what the units of a matrix exchange at a step (the
//! pivot, column `k`, the multipliers) and the row scales of LU: `O(n)` values a matrix
//! instead of the `n²` of the shared-memory kernels. On wgpu, where NVIDIA's Vulkan driver
//! gives a multiprocessor about a quarter of CUDA's shared memory, that is what keeps enough
//! matrices in flight (see [`crate::batched::cube::stage::WGPU_SHARED_BUDGET`]).

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{ceil_div, Cube, CubeRuntime};
use crate::backend::BackendKind;
use crate::batched::cube::factor::newton::root;
use crate::batched::cube::factor::FactorShape;
use crate::batched::cube::stage::SMALL;

/// The largest side the column kernels take (the column is `n` registers of `T`).
pub(crate) const COLUMNS_MAX: usize = 32;

/// Rows of the matrices whose scales one pass of [`lu_columns_kernel`] computes (the pass
/// stages `SCALE_ROWS` rows of each matrix in shared memory).
const SCALE_ROWS: usize = 4;

/// Units per cube the column kernels aim at (matrices per cube: this over `n`, at least one).
const COLUMN_UNITS: usize = 128;

/// Matrices per cube of the column kernels.
pub(crate) fn columns_per_cube(n: usize) -> usize {
    (COLUMN_UNITS / n.max(1)).max(1)
}

/// Whether the column kernels factor `n x n` matrices on `b` (`8 < n <= 32`), measured on
/// an H200 (2026-11-26, f64, `bench --suite batched`): Cholesky on every device (CUDA
/// 1.3–2.1x, wgpu 1.8–2.8x faster than the shared-memory kernel); LU on wgpu only (1.6–2.1x
/// faster there; on CUDA the shared-memory kernel is up to 1.5x faster, its matrices fitting
/// CUDA's larger shared memory), where the row kernel does not take it (`rows::use_rows`,
/// asked first).
pub(crate) fn use_columns<R: CubeRuntime>(b: &Cube<R>, n: usize, cholesky: bool) -> bool {
    n > SMALL && n <= COLUMNS_MAX && (cholesky || b.kind() == BackendKind::Wgpu)
}

/// Whether the column kernels' steps are unrolled on `b`: everywhere but on a Vulkan driver
/// that runs on the CPU (lavapipe: wgpu's adapter type `Cpu`, which the device name
/// carries), whose shader compiler takes minutes over the unrolled `n = 32` kernels, and
/// where registers are not at stake.
pub(crate) fn unroll_columns<R: CubeRuntime>(b: &Cube<R>) -> bool {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if tests::FORCE_UNROLL.with(|f| f.get()) {
        return true;
    }
    !(b.kind() == BackendKind::Wgpu && b.info().device.contains(", Cpu,"))
}

/// The side of the Cholesky column kernel that factors `n x n` matrices on `b`: `n`, or on
/// wgpu at odd sides from 27 the next even side (the matrices padded with the identity,
/// [`load_padded_column`]). NVIDIA's Vulkan compiler makes the unrolled `n = 31` kernel twice
/// as slow as the `n = 32` one; with the units a matrix padded to 32 but the `n = 31` steps,
/// it stays as slow (1089–1159 µs), so it is the code, not the layout. H200, 2026-11-27, f64
/// `bench --suite batched`, wgpu µs, unpadded (two calls) / padded to the next even side /
/// padded to 32: n = 25 492–496 / 505 / 790–793 (not taken), 27 603–605 / 574 / 692–707,
/// 29 595–605 / 579 / 610–612, 31 1044–1059 / 563 / 558–565. (On CUDA, units padded to 32 at
/// n = 25 / 27 were 17% / 6% slower: not tried further.) Measured in f64 on NVIDIA only; the
/// rule also pads f32 and other Vulkan devices (lavapipe: there it only tests the padded
/// kernel with run-time steps).
pub(crate) fn cholesky_padded_side<R: CubeRuntime>(b: &Cube<R>, n: usize) -> usize {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if let Some(side) = tests::FORCE_PAD.with(|f| f.get()) {
        return side.max(n);
    }
    if b.kind() == BackendKind::Wgpu && n % 2 == 1 && (WGPU_PAD_FROM..COLUMNS_MAX).contains(&n) {
        n + 1
    } else {
        n
    }
}

/// The smallest odd side wgpu's Cholesky column kernel pads (see [`cholesky_padded_side`]).
const WGPU_PAD_FROM: usize = 27;

/// Whether the Cholesky column kernel scales column `k` before publishing it (else it
/// publishes it unscaled with `1 / √d` and scales it after the step's barrier): at odd sides.
/// The two forms differ only in what is on the path to the barrier, and the device compilers
/// allocate their registers differently; measured on an H100 (2026-11-26, f64, `bench
/// --suite batched`, µs scaled / unscaled), the side's parity decides on both runtimes:
/// CUDA n = 25..32: 328/402, 416/379, 365/449, 404/379, 375/442, 424/380, 370/516, 486/414
/// (at n <= 20 within 2%); wgpu n = 16..32 even sides 1.05–2.4x faster unscaled, odd sides
/// 25..29 1.02–1.2x faster scaled (n = 31: 7% slower scaled, the one exception, not taken).
/// Again with wgpu's refined root (H100, 2026-11-27, wgpu µs unscaled / scaled): n = 12 277 /
/// 296, 16 293 / 337, 20 489 / 458, 24 443 / 548, 25 538 / 533, 27 624 / 611, 28 568 / 656,
/// 29 865 / 615, 31 1178 / 1262, 32 531 / 1371: the rule still holds but at 20 and 31 (within
/// 8%); CUDA unchanged (odd sides 1.2–1.4x faster scaled, 24 and 32 1.14–1.17x unscaled).
/// `n` is the kernel's side: wgpu's padded odd sides (see [`cholesky_padded_side`]) take the
/// even side's unscaled form.
pub(crate) fn cholesky_scale_first(n: usize) -> bool {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if let Some(first) = tests::FORCE_SCALE_FIRST.with(|f| f.get()) {
        return first;
    }
    n % 2 == 1
}

/// The entry `i` of a unit's column for a run-time row `i` (a loop of selects: the column
/// stays in registers).
#[cube]
fn entry<T: Float>(col: &Array<T>, i: usize, #[comptime] n: usize) -> T {
    let mut v = T::new(0.0);
    #[unroll]
    for r in 0..n {
        if r == i {
            v = col[r];
        }
    }
    v
}

/// `k` as a new run-time variable (`k` is comptime where the steps are unrolled).
#[cube]
#[allow(unused_mut, clippy::let_and_return)] // the `let mut` is the variable
pub(super) fn variable(k: usize) -> usize {
    let mut v = k;
    v
}

/// The matrix a unit of matrix slot `mat` loads: `mat`, or the last matrix past `count` (the
/// kernels' loads are unconditional; nothing is stored for such a slot).
#[cube]
pub(super) fn loaded_matrix(mat: usize, count: usize) -> usize {
    let mut src = mat;
    if src >= count {
        src = count - 1;
    }
    src
}

/// Loads column `c` of matrix `mat` (or of the last matrix, past `count`: unconditional loads,
/// nothing is stored for it).
#[cube]
fn load_column<V: Float, T: Float>(
    a: &Array<V>,
    col: &mut Array<T>,
    mat: usize,
    count: usize,
    c: usize,
    #[comptime] n: usize,
) {
    let at = loaded_matrix(mat, count) * comptime![n * n] + c;
    #[unroll]
    for i in 0..n {
        col[i] = T::cast_from(a[at + i * n]);
    }
}

/// Stores column `c` of matrix `mat` (nothing past `count`); `lower`: the entries above the
/// diagonal as zeros.
#[cube]
fn store_column<V: Float, T: Float>(
    a: &mut Array<V>,
    col: &Array<T>,
    mat: usize,
    count: usize,
    c: usize,
    #[comptime] n: usize,
    #[comptime] lower: bool,
) {
    if mat < count {
        let at = mat * comptime![n * n] + c;
        #[unroll]
        for i in 0..n {
            let mut v = col[i];
            if comptime![lower] && i < c {
                v = T::new(0.0);
            }
            a[at + i * n] = V::cast_from(v);
        }
    }
}

/// Loads column `c` of matrix `mat` (as [`load_column`]) of side `m`, padded with the
/// identity to side `n`: the units `c >= m` take column `c` of the identity.
#[cube]
fn load_padded_column<V: Float, T: Float>(
    a: &Array<V>,
    col: &mut Array<T>,
    mat: usize,
    count: usize,
    c: usize,
    #[comptime] m: usize,
    #[comptime] n: usize,
) {
    if c < m {
        load_column::<V, T>(a, col, mat, count, c, m);
        #[unroll]
        for i in m..n {
            col[i] = T::new(0.0);
        }
    } else {
        #[unroll]
        for i in 0..n {
            col[i] = T::new(0.0);
            if c == i {
                col[i] = T::new(1.0);
            }
        }
    }
}

/// LU (optionally with partial pivoting) of `per_cube` matrices per cube, one unit per
/// column. Step `k`: the unit of column `k` finds the pivot row; every unit swaps rows `k`
/// and `p` of its column; column `k` goes to shared memory, the unit of row `i > k` turns its
/// entry into the multiplier `l_i = a_ik / a_kk` (a division, as in the other kernels, so
/// that the status is the CPU's); every unit `j > k` updates its column with them.
/// The row scales of the singularity test are computed first, `SCALE_ROWS` rows a pass, and
/// follow the row swaps.
#[cube(launch_unchecked)]
#[allow(clippy::collapsible_if)] // a comptime `if` around a run-time one
pub(crate) fn lu_columns_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    pivots: &mut Array<u32>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, per_cube, pivoting, unroll) =
        comptime![(shape.n, shape.per_cube, shape.pivoting, shape.unroll)];
    let rows = comptime![SCALE_ROWS.min(shape.n)];
    let w = comptime![SCALE_ROWS.min(shape.n) * (shape.n + 1)];
    let mut scratch = SharedMemory::<T>::new(comptime![shape.per_cube * w]);
    let mut scale = SharedMemory::<T>::new(comptime![shape.per_cube * shape.n]);
    let mut piv = SharedMemory::<u32>::new(per_cube);
    let unit = UNIT_POS as usize;
    let local = unit / n;
    let c = unit % n;
    let sbase = local * w;
    let tol = singular.get::<T>();
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mat = g * per_cube + local;
        let mut col = Array::<T>::new(n);
        load_column::<V, T>(a, &mut col, mat, count, c, n);
        // Row scales, `rows` rows of every matrix a pass: each unit puts its entries of
        // those rows in shared memory, the unit of row `i` takes their largest magnitude.
        #[unroll]
        for q in 0..comptime![shape.n.div_ceil(SCALE_ROWS.min(shape.n))] {
            #[unroll]
            for r in 0..rows {
                if comptime![q * rows + r < n] {
                    scratch[sbase + r * (n + 1) + c] = T::abs(col[q * rows + r]);
                }
            }
            sync_cube();
            let first = comptime![q * rows];
            if c >= first && c < first + rows {
                let row = sbase + (c - first) * (n + 1);
                let mut v = T::new(0.0);
                #[unroll]
                for j in 0..n {
                    v = T::max(v, scratch[row + j]);
                }
                scale[local * n + c] = v;
            }
            sync_cube();
        }
        let mut code = 0i32;
        // Every step unrolled (on GPUs, `shape.unroll`): its row `k` is a constant, so the
        // column is indexed by constants (registers), only the pivot row `p` is reached by
        // selects; the tests against `k` compare constants, left to the GPU compilers to fold
        // (cubecl keeps them in the source it generates). Not unrolled, the same loops index
        // the column at run time. (cubecl unrolls only ranges with a constant start: hence
        // `0..n` and a test, not `k + 1..n`.)
        #[unroll(unroll)]
        for k in 0..n {
            let mut p = variable(k);
            if comptime![pivoting] {
                if c == k {
                    // The first largest magnitude at or below the diagonal, as the CPU.
                    let mut best = T::abs(col[k]);
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k {
                            let v = T::abs(col[i]);
                            if v > best {
                                best = v;
                                p = i;
                            }
                        }
                    }
                    piv[local] = p as u32;
                }
            }
            // Pivoting: the pivot row is known. Always: every unit is done reading the
            // previous step's multipliers before column `k` overwrites them.
            sync_cube();
            if comptime![pivoting] {
                p = piv[local] as usize;
                if p != k {
                    let vk = col[k];
                    let mut vp = vk;
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k && i == p {
                            vp = col[i];
                            col[i] = vk;
                        }
                    }
                    col[k] = vp;
                    if c == 0 {
                        let t = scale[local * n + k];
                        scale[local * n + k] = scale[local * n + p];
                        scale[local * n + p] = t;
                    }
                }
            }
            if c == 0 && mat < count {
                pivots[mat * n + k] = p as u32;
            }
            // The unit's entry in the pivot row (U's row k).
            let ukj = col[k];
            if c == k {
                #[unroll(unroll)]
                for i in 0..n {
                    if i >= k {
                        scratch[sbase + i] = col[i];
                    }
                }
            }
            sync_cube();
            let d = scratch[sbase + k];
            // A flagged step is skipped, as on the CPU and in the shared-memory kernel (a
            // pivot of `1e-17` left by rounding must not scale the rest): the factors past it
            // are the CPU's too. (The register kernels eliminate through it.)
            let small = T::abs(d) <= tol * scale[local * n + k];
            if small && code == 0 {
                code = (k + 1) as i32;
            }
            let eliminate = !small;
            if eliminate && c > k {
                scratch[sbase + c] = scratch[sbase + c] / d;
            }
            sync_cube();
            if eliminate {
                if c == k {
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k {
                            col[i] = scratch[sbase + i];
                        }
                    }
                } else if c > k {
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k {
                            col[i] = fma(-scratch[sbase + i], ukj, col[i]);
                        }
                    }
                }
            }
        }
        store_column::<V, T>(a, &col, mat, count, c, n, false);
        if c == 0 && mat < count {
            info[mat] = code;
        }
        // The next group's scale passes overwrite what this group's last step read.
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// Cholesky (lower triangle; upper zeroed) of `per_cube` matrices per cube, one unit per
/// column, in one of two step forms (`shape.scale_first`: see [`cholesky_scale_first`]).
/// Step `k`: the unit of column `k` tests its pivot `d` against its original diagonal, takes
/// `√d` and `1 / √d` (one division a step, as in the register kernel) and publishes the verdict
/// with column `k`:
/// - scaled first: it scales its rows below the diagonal and publishes them; every unit
///   `j > k` subtracts `l_i l_j` from its rows `i > k`;
/// - unscaled: it publishes its rows as they are and `1 / √d`, and scales them after the
///   barrier, off the path to it; every unit `j > k` subtracts `a_ik (a_jk / d)`, `i > k`.
///
/// A unit updates its rows `k < i < j` too, above its diagonal, which nothing reads (a column
/// publishes only its rows below the diagonal; the store zeroes the upper triangle): each
/// row's update is a constant's test (`i > k`) instead of one against the unit's column
/// (`i >= j`, a run-time predicate on every FMA). That made the kernel 1.27–1.36x faster on
/// wgpu at n = 26..32 (1.11–1.15x at 24) and 4–10% faster on CUDA at 24..32 (H200,
/// 2026-11-27, f64, µs, before / after:
/// wgpu 24 443 / 386–398, 26 566 / 424–431, 27 578 / 439–444, 28 557 / 410–411, 30 569 /
/// 435–438, 31 573 / 426–435, 32 529 / 399–416; CUDA 24 334 / 320, 26 370 / 354, 27 361 /
/// 329, 28 372 / 357, 30 378 / 356, 31 364 / 338, 32 411 / 378).
///
/// Two alternating slots of shared memory a matrix: one barrier a step.
#[cube(launch_unchecked)]
pub(crate) fn cholesky_columns_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, per_cube, unroll, first) =
        comptime![(shape.n, shape.per_cube, shape.unroll, shape.scale_first)];
    // A slot: column `k` (rows `k + 1..n`), then the verdict (1: factored, 0: failed); the
    // unscaled form adds `1 / √d` (the layouts each form was measured with).
    let w = comptime![if shape.scale_first {
        shape.n + 1
    } else {
        shape.n + 2
    }];
    let verdict_at = comptime![if shape.scale_first {
        shape.n
    } else {
        shape.n + 1
    }];
    let mut scratch = SharedMemory::<T>::new(comptime![shape.per_cube * 2 * w]);
    let unit = UNIT_POS as usize;
    let local = unit / n;
    let c = unit % n;
    let sbase = local * comptime![2 * w];
    let tol = singular.get::<T>();
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mat = g * per_cube + local;
        let mut col = Array::<T>::new(n);
        if comptime![shape.side < shape.n] {
            load_padded_column::<V, T>(a, &mut col, mat, count, c, comptime![shape.side], n);
        } else {
            load_column::<V, T>(a, &mut col, mat, count, c, n);
        }
        let diag = entry::<T>(&col, c, n);
        let mut code = 0i32;
        // Every step unrolled (row `k` a constant) on GPUs, as in the LU kernel.
        #[unroll(unroll)]
        for k in 0..n {
            let slot = sbase + (k % 2) * w;
            if c == k {
                if comptime![!first] {
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k {
                            scratch[slot + i] = col[i];
                        }
                    }
                }
                let d = col[k];
                let mut verdict = T::new(0.0);
                let mut inv = T::new(0.0);
                if code == 0 && d > tol * diag {
                    verdict = T::new(1.0);
                    let r = root::<T>(d, comptime![shape.refine]);
                    inv = r.inv;
                    col[k] = r.root;
                    if comptime![first] {
                        #[unroll(unroll)]
                        for i in 0..n {
                            if i > k {
                                col[i] = col[i] * inv;
                                scratch[slot + i] = col[i];
                            }
                        }
                    }
                }
                if comptime![!first] {
                    scratch[slot + n] = inv;
                }
                scratch[slot + verdict_at] = verdict;
            }
            // Column k is published. Its slot was last read at step k - 2, by units that
            // were done with it before they reached the barrier of step k - 1.
            sync_cube();
            let ok = scratch[slot + verdict_at] != T::new(0.0);
            if !ok && code == 0 {
                code = (k + 1) as i32;
            }
            if comptime![first] {
                if ok && c > k {
                    let lc = scratch[slot + c];
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k {
                            col[i] = fma(-scratch[slot + i], lc, col[i]);
                        }
                    }
                }
            } else if ok {
                let inv = scratch[slot + n];
                if c == k {
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k {
                            col[i] = col[i] * inv;
                        }
                    }
                } else if c > k {
                    // l_c = a_ck / √d, so the update's l_i l_c is a_ik (a_ck / d).
                    let m = scratch[slot + c] * inv * inv;
                    #[unroll(unroll)]
                    for i in 0..n {
                        if i > k {
                            col[i] = fma(-scratch[slot + i], m, col[i]);
                        }
                    }
                }
            }
        }
        if comptime![shape.side < shape.n] {
            // Nothing for the units past the matrix.
            if c < comptime![shape.side] {
                store_column::<V, T>(a, &col, mat, count, c, comptime![shape.side], true);
            }
        } else {
            store_column::<V, T>(a, &col, mat, count, c, n, true);
        }
        if c == 0 && mat < count {
            info[mat] = code;
        }
        // The next group's first steps write the slots this group's last steps read.
        sync_cube();
        g += CUBE_COUNT;
    }
}

#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
pub(in crate::batched::cube) mod tests;
