//! The tile kernel of LU: the matrix spread over a `gr x gc` grid of units, each holding a
//! `tr x tc` tile in registers (rows `ti + r gr`, columns `tj + s gc`). Rows are never moved:
//! each unit keeps the current position of its rows (what the row interchanges of partial
//! pivoting would have made of them) and stores every row at its final position, with the
//! multipliers it carries. Step `k` exchanges column `k`, the pivot row and the multipliers
//! through shared memory (`O(n)` values a matrix) with two barriers.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{ceil_div, Cube, CubeRuntime};
use crate::backend::BackendKind;
use crate::batched::cube::factor::columns::COLUMNS_MAX;
use crate::batched::cube::factor::columns::{loaded_matrix, variable};
use crate::batched::cube::factor::newton::{div, recip};
#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
use crate::batched::cube::factor::tiles::FORCE_TILES;
use crate::batched::cube::factor::tiles::{MAX_UNITS, TILES_MAX};

/// The comptime shape of [`lu_tiles_kernel`]: side `n`, tiles of `tr x tc` on a `gr x gc`
/// grid (`gr tr >= n`, `gc tc >= n`), `per_cube` matrices a cube.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LuTileShape {
    pub n: usize,
    pub tr: usize,
    pub tc: usize,
    pub gr: usize,
    pub gc: usize,
    pub per_cube: usize,
    pub pivoting: bool,
    /// Divisions refined from f32 estimates (see `newton`).
    pub refine: bool,
}

impl LuTileShape {
    /// Tiles of 4 x 4: measured on an H200 (2026-11-26, f64, wgpu, `bench --suite batched`)
    /// against eight row groups (8 candidates a pivot search instead of up to 16; tiles 3 x 1,
    /// 5 x 2, 8 x 2): n = 24 1145 / 3161 µs, 40 1985 / 2390, 64 2674 / 3251 (at n = 64,
    /// 16 x 1, 4 x 2, 8 x 1 and 2 x 2 were slower still in an earlier build).
    pub(crate) fn new(n: usize, pivoting: bool) -> Self {
        Self::with_tiles(n, 4, 4, pivoting)
    }

    /// Tiles of `tr x tc`.
    pub(crate) fn with_tiles(n: usize, tr: usize, tc: usize, pivoting: bool) -> Self {
        let (gr, gc) = (n.div_ceil(tr), n.div_ceil(tc));
        LuTileShape {
            n,
            tr,
            tc,
            gr,
            gc,
            per_cube: (MAX_UNITS / (gr * gc)).max(1),
            pivoting,
            refine: false,
        }
    }

    /// With the refined divisions (`refine`) or the exact ones.
    pub(crate) fn with_refine(mut self, refine: bool) -> Self {
        self.refine = refine;
        self
    }

    /// Bytes of shared memory a matrix takes with values of `elem` bytes.
    pub(crate) fn bytes(&self, elem: usize) -> usize {
        self.values() * elem + self.cand_words() * 4
    }

    /// `u32` words of candidates a matrix: two slots of a position and a row per row group
    /// and the row at position `k`.
    const fn cand_words(&self) -> usize {
        2 * (2 * self.gr + 1)
    }

    /// At most as many matrices a cube as `max_shared` bytes hold (at least one).
    pub(crate) fn fit(mut self, elem: usize, max_shared: usize) -> Self {
        self.per_cube = self.per_cube.min(max_shared / self.bytes(elem)).max(1);
        self
    }

    /// The shape the library takes for side `n` ([`new`](Self::new); tests may force others).
    pub(crate) fn choose(n: usize, pivoting: bool) -> Self {
        #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
        if let Some((tr, tc)) = FORCE_TILES.with(|f| f.get()) {
            return Self::with_tiles(n, tr, tc, pivoting);
        }
        Self::new(n, pivoting)
    }

    /// Units a matrix takes.
    pub(crate) fn units(&self) -> usize {
        self.gr * self.gc
    }

    /// Shared values of `T` a matrix: two column slots, the multipliers, the pivot row, the
    /// row scales, two slots of candidates' magnitudes, the scale pass's partial maxima.
    const fn values(&self) -> usize {
        5 * self.n + 2 * self.gr + self.gr * self.gc
    }
}

/// Whether LU of `n x n` matrices takes the tile kernel: on wgpu above the column kernels'
/// sides, up to [`TILES_MAX`] (on CUDA the shared-memory kernel was faster at every measured
/// side; `docs/benchmarks.md`, twelfth session).
pub(crate) fn use_lu_tiles<R: CubeRuntime>(b: &Cube<R>, n: usize) -> bool {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if FORCE_TILES.with(|f| f.get()).is_some() {
        return n <= TILES_MAX;
    }
    b.kind() == BackendKind::Wgpu && n > COLUMNS_MAX && n <= TILES_MAX
}

/// LU (optionally with partial pivoting) of `per_cube` matrices a cube, a tile of each a
/// unit (see the [module docs](self)), the same factors, pivots and codes as the CPU's (up to
/// rounding: the update is a fused multiply–add). First the row scales of the singularity
/// test (a pass per row of the tile). Step `k`, from column `k` and each row group's best
/// candidate (largest magnitude among the rows at positions `>= k`, the first position on a
/// tie) published at the end of step `k - 1`:
/// - every unit takes the best candidate `p` (position `k` without pivoting) and the
///   interchange of positions `k` and `p`; the pivot `d` fails the test when
///   `|d| <= tol · scale(p)` (the step is then skipped, as on the CPU);
/// - the multipliers `l_i = a_ik / d` are computed one row a unit (a division each, as on
///   the CPU) from column `k`, the units of the pivot row publish it; barrier;
/// - every unit takes `l_i` into column `k` and subtracts `l_i u_kj` from its entries
///   `j > k` of rows below the pivot;
/// - the units of column `k + 1` publish it and their candidates; barrier.
#[cube(launch_unchecked)]
pub(crate) fn lu_tiles_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    pivots: &mut Array<u32>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: LuTileShape,
) {
    let (n, tr, tc, gr, gc) = comptime![(shape.n, shape.tr, shape.tc, shape.gr, shape.gc)];
    let (per_cube, pivoting) = comptime![(shape.per_cube, shape.pivoting)];
    let per = comptime![shape.gr * shape.gc];
    let w = comptime![shape.values()];
    let mut sh = SharedMemory::<T>::new(comptime![shape.per_cube * shape.values()]);
    // Each slot's candidates (position and row), then the row at position k.
    let mut cand = SharedMemory::<u32>::new(comptime![shape.per_cube * shape.cand_words()]);
    let unit = UNIT_POS as usize;
    let local = unit / per;
    let u = unit % per;
    let ti = u / gc;
    let tj = u % gc;
    let base_sh = local * w;
    let (col_at, l_at, row_at) = (base_sh, base_sh + 2 * n, base_sh + 3 * n);
    let scale_at = base_sh + comptime![4 * shape.n];
    let abs_at = base_sh + comptime![5 * shape.n];
    let part_at = base_sh + comptime![5 * shape.n + 2 * shape.gr];
    let cand_at = local * comptime![shape.cand_words()];
    let tol = singular.get::<T>();
    let groups = ceil_div(count, per_cube);
    // The cube holds `per_cube` whole grids (`groups_shape`): every unit has a matrix.
    let mut cg = CUBE_POS;
    while cg < groups {
        let mat = cg * per_cube + local;
        let base = loaded_matrix(mat, count) * comptime![shape.n * shape.n];
        let mut tile = Sequence::<T>::new();
        #[unroll]
        for r in 0..tr {
            #[unroll]
            for s in 0..tc {
                let i = ti + r * gr;
                let j = tj + s * gc;
                let mut v = T::new(0.0);
                if i < n && j < n {
                    v = T::cast_from(a[base + i * n + j]);
                }
                tile.push(v);
            }
        }
        // The current position of each of the unit's rows (rows past `n`: `n` and above,
        // never a candidate, never stored).
        let mut pos = Sequence::<usize>::new();
        #[unroll]
        for r in 0..tr {
            // A variable (`variable`): the interchanges assign to it.
            pos.push(variable(ti + r * gr));
        }
        // Row scales: the tile's part of row `ti + r gr`, then the row's unit of column
        // group 0 takes the largest of the `gc` parts.
        #[unroll]
        for r in 0..tr {
            let mut m = T::new(0.0);
            #[unroll]
            for s in 0..tc {
                m = T::max(m, T::abs(tile[r * tc + s]));
            }
            sh[part_at + u] = m;
            sync_cube();
            let i = ti + r * gr;
            if tj == 0 && i < n {
                let mut v = T::new(0.0);
                for q in 0..gc {
                    v = T::max(v, sh[part_at + ti * gc + q]);
                }
                sh[scale_at + i] = v;
            }
            sync_cube();
        }
        publish_column::<T>(
            &tile, &pos, &mut sh, &mut cand, 0, col_at, abs_at, cand_at, ti, tj, 0usize, shape,
        );
        sync_cube();
        let mut code = 0i32;
        // Steps k = kb gc + kk: the column block `kb` a constant, so that which of a unit's
        // columns a step updates is decided at compile time but in block `kb` (columns
        // `tj + s gc`: done below `kb`, all updated above it), where it tests `tj` against
        // `kk`.
        #[unroll]
        for kb in 0..tc {
            for kk in 0..gc {
                let k = kk + comptime![kb * shape.gc];
                if k < n {
                    let slot = k % 2;
                    let mut p = k;
                    let mut prow = k;
                    if comptime![pivoting] {
                        let at = abs_at + slot * gr;
                        let cat = cand_at + slot * comptime![2 * shape.gr + 1];
                        // As the CPU: the search starts at position k and takes a row only
                        // when its magnitude compares greater (or equal at an earlier
                        // position), so position k stays when its entry is NaN — with no NaN
                        // test, which NVIDIA's Vulkan compiler folds away (`|x| >= 0`).
                        let rowk = cand[cat + 2 * gr] as usize;
                        let mut best = T::abs(sh[col_at + slot * n + rowk]);
                        prow = rowk;
                        #[unroll]
                        for q in 0..gr {
                            let v = sh[at + q];
                            let pq = cand[cat + 2 * q] as usize;
                            if v > best || (v == best && pq < p) {
                                best = v;
                                p = pq;
                                prow = cand[cat + 2 * q + 1] as usize;
                            }
                        }
                        // Never a position past the matrix (a group without candidates
                        // publishes position n and magnitude -1, never taken).
                        if p >= n {
                            p = k;
                            prow = rowk;
                        }
                    }
                    // The interchange of positions k and p.
                    #[unroll]
                    for r in 0..tr {
                        if pos[r] == p {
                            *pos.index_mut(r) = k;
                        } else if pos[r] == k {
                            *pos.index_mut(r) = p;
                        }
                    }
                    if u == 0 && mat < count {
                        pivots[mat * n + k] = p as u32;
                    }
                    let d = sh[col_at + slot * n + prow];
                    let small = T::abs(d) <= tol * sh[scale_at + prow];
                    if small && code == 0 {
                        code = (k + 1) as i32;
                    }
                    if !small {
                        // The multipliers, one row a unit (rows at positions <= k get values that
                        // nobody reads), and the pivot row.
                        let refine = comptime![shape.refine];
                        let y = recip::<T>(d, refine);
                        let mut i = u;
                        while i < n {
                            sh[l_at + i] = div::<T>(sh[col_at + slot * n + i], d, y, refine);
                            i += per;
                        }
                        #[unroll]
                        for r in 0..tr {
                            if ti + r * gr == prow {
                                #[unroll]
                                for s in kb..tc {
                                    let j = tj + s * gc;
                                    if (comptime![s > kb] || tj > kk) && j < n {
                                        sh[row_at + j] = tile[r * tc + s];
                                    }
                                }
                            }
                        }
                    }
                    sync_cube();
                    if !small {
                        let mut urow = Sequence::<T>::new();
                        #[unroll]
                        for s in 0..tc {
                            if comptime![s < kb] {
                                urow.push(T::new(0.0));
                            } else {
                                let mut j = tj + s * gc;
                                if j >= n {
                                    j = n - 1;
                                }
                                urow.push(sh[row_at + j]);
                            }
                        }
                        #[unroll]
                        for r in 0..tr {
                            if pos[r] > k && pos[r] < n {
                                let l = sh[l_at + ti + r * gr];
                                #[unroll]
                                for s in kb..tc {
                                    let at = comptime![r * shape.tc + s];
                                    if comptime![s > kb] {
                                        *tile.index_mut(at) = fma(-l, urow[s], tile[at]);
                                    } else if tj == kk {
                                        *tile.index_mut(at) = l;
                                    } else if tj > kk {
                                        *tile.index_mut(at) = fma(-l, urow[s], tile[at]);
                                    }
                                }
                            }
                        }
                    }
                    publish_column::<T>(
                        &tile,
                        &pos,
                        &mut sh,
                        &mut cand,
                        k + 1,
                        col_at,
                        abs_at,
                        cand_at,
                        ti,
                        tj,
                        kb,
                        shape,
                    );
                    sync_cube();
                }
            }
        }
        if mat < count {
            let at = mat * comptime![shape.n * shape.n];
            #[unroll]
            for r in 0..tr {
                #[unroll]
                for s in 0..tc {
                    let j = tj + s * gc;
                    let row = pos[r];
                    if row < n && j < n {
                        a[at + row * n + j] = V::cast_from(tile[r * tc + s]);
                    }
                }
            }
            if u == 0 {
                info[mat] = code;
            }
        }
        cg += CUBE_COUNT;
    }
}

/// The units of column `k` (if `k < n`; in column block `from` or the next) publish its
/// entries at the rows of positions `>= k` into slot `k % 2`, and (pivoting) their row group's
/// candidate: the largest magnitude among those rows, the first position on a tie (`-1` and
/// position `n` where the unit has none; NaN magnitudes never); the unit of the row at
/// position `k` publishes that row (the search starts from it).
#[cube]
#[allow(clippy::too_many_arguments)]
fn publish_column<T: Float>(
    tile: &Sequence<T>,
    pos: &Sequence<usize>,
    sh: &mut SharedMemory<T>,
    cand: &mut SharedMemory<u32>,
    k: usize,
    col_at: usize,
    abs_at: usize,
    cand_at: usize,
    ti: usize,
    tj: usize,
    #[comptime] from: usize,
    #[comptime] shape: LuTileShape,
) {
    let (n, tr, tc, gr, gc) = comptime![(shape.n, shape.tr, shape.tc, shape.gr, shape.gc)];
    let slot = k % 2;
    // Column k lies in column block `from` or the next.
    #[unroll]
    for s in from..comptime![(from + 2).min(shape.tc)] {
        if tj + s * gc == k {
            let mut best = T::new(-1.0);
            let mut bpos = variable(n);
            let mut brow = variable(0);
            #[unroll]
            for r in 0..tr {
                let i = ti + r * gr;
                if pos[r] >= k && pos[r] < n {
                    let v = tile[r * tc + s];
                    sh[col_at + slot * n + i] = v;
                    let m = T::abs(v);
                    if comptime![shape.pivoting] && pos[r] == k {
                        cand[cand_at + slot * comptime![2 * shape.gr + 1] + 2 * gr] = i as u32;
                    }
                    if m > best || (m == best && pos[r] < bpos) {
                        best = m;
                        bpos = pos[r];
                        brow = i;
                    }
                }
            }
            if comptime![shape.pivoting] {
                sh[abs_at + slot * gr + ti] = best;
                let at = cand_at + slot * comptime![2 * shape.gr + 1] + 2 * ti;
                cand[at] = bpos as u32;
                cand[at + 1] = brow as u32;
            }
        }
    }
}
