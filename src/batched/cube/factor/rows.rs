//! The row kernel of LU (`8 < n <= 32`): one unit per row, the row in registers (every index
//! a constant where the steps are unrolled). Rows are never moved: each unit keeps the
//! position the interchanges of partial pivoting give its row and stores the row there at the
//! end. A step exchanges only the candidates' magnitudes (by position) and the pivot row
//! through shared memory, `O(n)` values a matrix (two barriers a step with pivoting, one
//! without: warp barriers on CUDA at `n = 32`, where a matrix is one warp, see [`plane_rows`]);
//! on CUDA the whole matrices also pass through it on the way in and out (staged).
//! The pivot search is the CPU's own loop over the candidates, run by every unit of the matrix
//! (broadcast reads).

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{ceil_div, Cube, CubeRuntime};
use crate::backend::BackendKind;
use crate::batched::cube::factor::columns::{loaded_matrix, variable, COLUMNS_MAX};
use crate::batched::cube::factor::FactorShape;
use crate::batched::cube::stage::{load_part, store_part, Part, SMALL};
use crate::scalar::Scalar;

/// Whether LU of `n x n` matrices takes the row kernel, measured on an H100 (2026-11-27,
/// f64, `bench --suite batched`, µs, one call): on CUDA at every side `8 < n <= 32` (against
/// the shared-memory kernel, n = 16 / 24 / 32: 357 / 530 / 633 against 485 / 663 / 787; 9..11
/// not measured), on wgpu above 24 (n = 27 / 32: 960 / 1063 against the column kernel's
/// 1053 / 1575; at 16 and 24 the column kernel is ahead, 488 / 695 against 879 / 926).
pub(crate) fn use_rows<R: CubeRuntime>(b: &Cube<R>, n: usize) -> bool {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if let Some(rows) = super::columns::tests::FORCE_ROWS.with(|f| f.get()) {
        return rows && n > SMALL && n <= COLUMNS_MAX;
    }
    let from = match b.kind() {
        BackendKind::Wgpu => WGPU_ROWS_FROM,
        _ => SMALL + 1,
    };
    n >= from && n <= COLUMNS_MAX
}

/// The smallest side wgpu factors with the row kernel (below, the column kernel).
const WGPU_ROWS_FROM: usize = 25;

/// Whether the row kernel synchronises its steps with warp barriers (`__syncwarp`) instead of
/// cube barriers: on CUDA at `n = 32`, where each matrix is one warp (its rows are units
/// `32·m..32·m + 32`). H100, f64 LU, µs (2026-11-27, `bench --suite batched`, two runs):
/// 629 / 627 with cube barriers, 581 / 577 with warp barriers. With one matrix a warp at
/// `16 < n < 32` (lanes `n..32` idle, four matrices a cube) it was slower: n = 24 / 27
/// 623–655 / 583–586 against 526–528 / 588. WGSL has no plane barrier.
pub(crate) fn plane_rows<R: CubeRuntime>(b: &Cube<R>, n: usize) -> bool {
    b.kind() == BackendKind::Cuda && n == WARP
}

/// The warp of CUDA devices.
const WARP: usize = 32;

/// Units per cube the row kernel aims at (matrices per cube: this over `n`, at least one).
const ROWS_UNITS: usize = 128;

/// Whether the row kernel stages the rows through shared memory on `b`: on CUDA (a unit
/// reading its own row touches a new line per entry: n = 32 on an H100, 948 µs unstaged
/// against 640, both with a plane-shuffle search measured alongside), not on wgpu, where the
/// staged matrices take most of the little shared memory NVIDIA's Vulkan driver gives a
/// multiprocessor (n = 32, the same search: 1662 µs staged against 1104).
pub(crate) fn stage_rows<R: CubeRuntime>(b: &Cube<R>) -> bool {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if let Some(staged) = super::columns::tests::FORCE_STAGED.with(|f| f.get()) {
        return staged;
    }
    b.kind() == BackendKind::Cuda
}

/// The staged rows' stride: odd, so that the units of a matrix reading their rows at once
/// spread over the banks.
pub(crate) const fn rows_ld(n: usize) -> usize {
    n | 1
}

/// Matrices per cube of the row kernel: [`ROWS_UNITS`] units, fewer where the device's shared
/// memory would not hold them.
pub(crate) fn rows_per_cube<T: Scalar>(
    b: &Cube<impl CubeRuntime>,
    n: usize,
    staged: bool,
) -> usize {
    let stage = if staged { n * rows_ld(n) } else { 0 };
    let bytes = (stage + 3 * n + 2) * T::DTYPE.size();
    (ROWS_UNITS / n)
        .min(b.info().max_shared_bytes / bytes)
        .max(1)
}

/// A step's barrier among the units of a matrix: a warp barrier where a matrix is one warp
/// (`plane`, see [`plane_rows`]), else the cube's.
#[cube]
fn step_barrier(#[comptime] plane: bool) {
    if comptime![plane] {
        sync_plane();
    } else {
        sync_cube();
    }
}

/// LU (optionally with partial pivoting) of `per_cube` matrices per cube, one unit per row
/// (see the [module docs](self)); the same pivots, codes and factors as the CPU's (up to
/// rounding: the update is a fused multiply–add). The rows come in and go out through shared
/// memory (`staged`: the cube's matrices move coalesced, rows [`rows_ld`] apart) or straight
/// (a unit reads and writes its own row). Step `k`:
/// - (pivoting) every unit at a position `>= k` publishes the magnitude of its entry `k` at
///   its position; barrier; every unit searches them with the CPU's loop (from position `k`, a
///   later one taken only when strictly larger: a NaN at `k` keeps `k`, a NaN elsewhere is
///   never taken) and takes the interchange of positions `k` and `p`;
/// - the unit now at position `k` publishes its row from `k` on and its row's scale (the
///   largest magnitude of the original row, the singularity test's); barrier;
/// - the pivot fails the test when `|d| <= tol · scale` (the step is then skipped, as on the
///   CPU); else every unit below position `k` turns its entry `k` into the multiplier
///   `l = a_k / d` (a division, as on the CPU) and subtracts `l u_kj` from its entries `j > k`.
///
/// The pivot row has two slots (by the parity of `k`): without pivoting, step `k + 1`'s row is
/// published before every unit is done reading step `k`'s.
#[cube(launch_unchecked)]
pub(crate) fn lu_rows_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    pivots: &mut Array<u32>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, per_cube, pivoting, unroll) =
        comptime![(shape.n, shape.per_cube, shape.pivoting, shape.unroll)];
    let staged = comptime![shape.staged];
    let plane = comptime![shape.plane];
    let ld = comptime![rows_ld(shape.n)];
    // A slot: the row from position k on, then its scale.
    let w = comptime![shape.n + 1];
    let mut cand = SharedMemory::<T>::new(comptime![shape.per_cube * shape.n]);
    let mut prow = SharedMemory::<T>::new(comptime![shape.per_cube * 2 * (shape.n + 1)]);
    // Staged: the cube's matrices, rows `ld` apart.
    let stage_len = comptime![if shape.staged {
        shape.per_cube * shape.n * rows_ld(shape.n)
    } else {
        1
    }];
    let mut stage = SharedMemory::<T>::new(stage_len);
    let part = comptime![Part::whole(
        shape.n * shape.n,
        shape.n,
        rows_ld(shape.n),
        shape.per_cube
    )];
    let unit = UNIT_POS as usize;
    let local = unit / n;
    let i = unit % n;
    let cand_at = local * n;
    let row_at = local * comptime![2 * (shape.n + 1)];
    let stage_at = local * comptime![shape.n * rows_ld(shape.n)] + i * ld;
    let tol = singular.get::<T>();
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mat = g * per_cube + local;
        let mut row = Array::<T>::new(n);
        if comptime![staged] {
            load_part::<V, T>(
                a,
                &mut stage,
                g,
                count,
                part,
                comptime![shape.per_cube * shape.n],
            );
            sync_cube();
            #[unroll]
            for j in 0..n {
                row[j] = stage[stage_at + j];
            }
        } else {
            let at = loaded_matrix(mat, count) * comptime![shape.n * shape.n] + i * n;
            #[unroll]
            for j in 0..n {
                row[j] = T::cast_from(a[at + j]);
            }
        }
        let mut scale = T::new(0.0);
        #[unroll]
        for j in 0..n {
            scale = T::max(scale, T::abs(row[j]));
        }
        let mut pos = i;
        let mut code = 0i32;
        // Every step unrolled on GPUs (`shape.unroll`, as in the column kernels): the row is
        // indexed by constants (registers). cubecl unrolls only ranges with a constant start:
        // hence `0..n` and a test against `k`.
        #[unroll(unroll)]
        for k in 0..n {
            let slot = row_at + (k % 2) * w;
            let mut p = variable(k);
            if comptime![pivoting] {
                if pos >= k {
                    cand[cand_at + pos] = T::abs(row[k]);
                }
                step_barrier(plane);
                let mut best = cand[cand_at + k];
                #[unroll(unroll)]
                for q in 0..n {
                    if q > k {
                        let v = cand[cand_at + q];
                        if v > best {
                            best = v;
                            p = q;
                        }
                    }
                }
                if pos == p {
                    pos = k;
                } else if pos == k {
                    pos = p;
                }
            }
            if pos == k {
                #[unroll(unroll)]
                for j in 0..n {
                    if j >= k {
                        prow[slot + j] = row[j];
                    }
                }
                prow[slot + n] = scale;
            }
            if i == 0 && mat < count {
                pivots[mat * n + k] = p as u32;
            }
            // The pivot row is published; (pivoting) every unit is done with the candidates
            // before the next step's overwrite them.
            step_barrier(plane);
            let d = prow[slot + k];
            let small = T::abs(d) <= tol * prow[slot + n];
            if small && code == 0 {
                code = (k + 1) as i32;
            }
            if !small && pos > k {
                let l = row[k] / d;
                row[k] = l;
                #[unroll(unroll)]
                for j in 0..n {
                    if j > k {
                        row[j] = fma(-l, prow[slot + j], row[j]);
                    }
                }
            }
        }
        if comptime![staged] {
            let to = local * comptime![shape.n * rows_ld(shape.n)] + pos * ld;
            #[unroll]
            for j in 0..n {
                stage[to + j] = row[j];
            }
            sync_cube();
            store_part::<V, T>(a, &stage, g, count, part);
        } else if mat < count {
            let to = mat * comptime![shape.n * shape.n] + pos * n;
            #[unroll]
            for j in 0..n {
                a[to + j] = V::cast_from(row[j]);
            }
        }
        if i == 0 && mat < count {
            info[mat] = code;
        }
        // The next group's load and first step overwrite what this group's last steps read.
        sync_cube();
        g += CUBE_COUNT;
    }
}
