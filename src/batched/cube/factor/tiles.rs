//! The tile kernel of Cholesky (`32 < n <= 64`): the matrix spread over a square grid of
//! units, each holding a `t x t` tile of it in registers (rows `ti + r g`, columns
//! `tj + s g` of a `g x g` grid, so that a warp's loads and stores stay contiguous). Step `k`
//! exchanges only column `k` through shared memory: its units publish it, every unit reads
//! the `2 t` entries its rows and columns need and updates its tile, one barrier a step.
//! Shared memory holds `3 n + 6` values a matrix (two column slots, the original diagonal),
//! where the shared-memory kernel holds `n²`: on wgpu (NVIDIA's Vulkan driver gives a
//! multiprocessor about a quarter of CUDA's shared memory) that keeps matrices in flight, and
//! on CUDA the work of a step is spread over `g²` units instead of `n`.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{ceil_div, Cube, CubeRuntime};
use crate::backend::BackendKind;
use crate::batched::cube::factor::columns::loaded_matrix;
use crate::batched::cube::factor::newton;

/// The largest tile side a unit holds (`t² + 2 t` registers of `T`).
const MAX_TILE: usize = 4;

/// Units a cube of the tile kernels aims at (matrices a cube: this over the units of one, at
/// least one); a Cholesky grid takes at most this many.
pub(super) const MAX_UNITS: usize = 256;

/// The comptime shape of [`cholesky_tiles_kernel`]: side `n`, tiles of `t x t` on a `g x g`
/// grid of units (`g t >= n`), `per_cube` matrices a cube.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TileShape {
    pub n: usize,
    pub t: usize,
    pub g: usize,
    pub per_cube: usize,
    /// Divisions and square roots refined from f32 estimates (see `newton`).
    pub refine: bool,
}

impl TileShape {
    /// The smallest tile whose grid takes at most [`MAX_UNITS`] units, as many matrices a
    /// cube as fill them.
    pub(crate) fn new(n: usize) -> Self {
        let t = (1..=MAX_TILE)
            .find(|t| n.div_ceil(*t).pow(2) <= MAX_UNITS)
            .unwrap_or(MAX_TILE);
        let g = n.div_ceil(t);
        TileShape {
            n,
            t,
            g,
            per_cube: (MAX_UNITS / (g * g)).max(1),
            refine: false,
        }
    }

    /// With the refined divisions and square roots (`refine`) or the exact ones.
    pub(crate) fn with_refine(mut self, refine: bool) -> Self {
        self.refine = refine;
        self
    }

    /// Units a matrix takes.
    pub(crate) fn units(&self) -> usize {
        self.g * self.g
    }
}

/// The largest side the tile kernel takes.
pub(crate) const TILES_MAX: usize = MAX_TILE * 16;

/// Whether Cholesky of `n x n` matrices takes the tile kernel: above the column kernels'
/// sides, up to [`TILES_MAX`].
pub(crate) fn use_tiles<R: CubeRuntime>(b: &Cube<R>, n: usize) -> bool {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if FORCE_TILES.with(|f| f.get()).is_some() {
        return n <= TILES_MAX;
    }
    n > super::columns::COLUMNS_MAX
        && n <= TILES_MAX
        && (b.kind() == BackendKind::Wgpu || n >= CUDA_TILES_FROM)
}

/// The smallest side at which CUDA takes the tile kernel (below it, the shared-memory one).
/// Measured on an H200 (2026-11-26, f64, `bench --suite batched`, µs tiles / shared): n = 40
/// 1150 / 958, 48 950 / 1064, 56 1542 / 1226, 64 1309 / 1941. The two kernels trade places
/// with the side (registers and cubes a multiprocessor); the tile kernel is taken only where
/// it was measured ahead by a wide margin. (wgpu: 2.6–8x faster at every measured side above
/// 32: its small shared memory bounds the shared-memory kernel.)
pub(crate) const CUDA_TILES_FROM: usize = 64;

#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
thread_local! {
    /// Tests: the tile kernels at every side on every device, LU with tiles `tr x tc` (this
    /// thread's launches).
    pub(crate) static FORCE_TILES: std::cell::Cell<Option<(usize, usize)>> =
        const { std::cell::Cell::new(None) };
}

/// Cholesky (lower triangle; upper zeroed) of `per_cube` matrices a cube, a `t x t` tile of
/// each a unit (see the [module docs](self)). Column `k` is published with `√d`, `1 / √d` and
/// the verdict of its pivot `d = a_kk` (tested against the original diagonal by the unit
/// holding it, the only one that takes the square root and the division). Step `k`: the unit
/// of `a_kk` sets it to `√d`, the units of column `k` scale it by `1 / √d`, and every entry
/// `i >= j > k` subtracts `a_ik (a_jk / d)`; then the units of column `k + 1` publish it into
/// the other of two alternating slots, and the cube meets at the step's one barrier. A failed
/// step stops the factorization, as in the other GPU kernels.
#[cube(launch_unchecked)]
pub(crate) fn cholesky_tiles_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: TileShape,
) {
    let (n, t, g, per_cube) = comptime![(shape.n, shape.t, shape.g, shape.per_cube)];
    let per = comptime![shape.g * shape.g];
    // A slot: column `k`, then `√d`, `1 / √d` and the verdict; two slots, then the original
    // diagonal.
    let mut sh = SharedMemory::<T>::new(comptime![shape.per_cube * (3 * shape.n + 6)]);
    let unit = UNIT_POS as usize;
    let local = unit / per;
    let u = unit % per;
    let ti = u / g;
    let tj = u % g;
    let sbase = local * comptime![3 * shape.n + 6];
    let diag_at = sbase + comptime![2 * (shape.n + 3)];
    let tol = singular.get::<T>();
    let groups = ceil_div(count, per_cube);
    // The cube holds `per_cube` whole grids (`groups_shape`): every unit has a matrix.
    let mut cg = CUBE_POS;
    while cg < groups {
        let mat = cg * per_cube + local;
        let base = loaded_matrix(mat, count) * comptime![shape.n * shape.n];
        // The tile: the lower triangle's entries (the upper ones stay zero).
        let mut tile = Sequence::<T>::new();
        #[unroll]
        for r in 0..t {
            #[unroll]
            for s in 0..t {
                let i = ti + r * g;
                let j = tj + s * g;
                let mut v = T::new(0.0);
                if i < n && j <= i {
                    v = T::cast_from(a[base + i * n + j]);
                }
                tile.push(v);
            }
        }
        // The original diagonal into its place (the units of the grid's diagonal hold it).
        #[unroll]
        for r in 0..t {
            let i = ti + r * g;
            if ti == tj && i < n {
                sh[diag_at + i] = tile[r * t + r];
            }
        }
        sync_cube();
        let mut code = 0i32;
        publish::<T>(
            &tile, &mut sh, sbase, diag_at, 0, code, tol, ti, tj, 0usize, shape,
        );
        sync_cube();
        // Steps k = kb g + kk: the block `kb` of columns a constant, so that the tests of
        // which entries a step updates are mostly decided at compile time (column blocks
        // below `kb` are done, rows blocks below it hold no entry at or below row k, blocks
        // above it are updated whole): an entry tests only against `kk`, in its block `kb`.
        #[unroll]
        for kb in 0..t {
            for kk in 0..g {
                let k = kk + comptime![kb * shape.g];
                if k < n {
                    code = step::<T>(
                        &mut tile, &mut sh, code, sbase, diag_at, k, kk, tol, ti, tj, kb, shape,
                    );
                    sync_cube();
                }
            }
        }
        if mat < count {
            let at = mat * comptime![shape.n * shape.n];
            #[unroll]
            for r in 0..t {
                #[unroll]
                for s in 0..t {
                    let i = ti + r * g;
                    let j = tj + s * g;
                    if i < n && j < n {
                        a[at + i * n + j] = V::cast_from(tile[r * t + s]);
                    }
                }
            }
            if u == 0 {
                info[mat] = code;
            }
        }
        // The next group's first writes go to the slots this group's last steps read
        // (the final barrier of the steps already separates them).
        cg += CUBE_COUNT;
    }
}

/// Step `k = kb g + kk` of [`cholesky_tiles_kernel`] on the unit's tile (see there), up to
/// the barrier: the update by column `k`, then column `k + 1` published; the status code
/// after the step.
#[cube]
#[allow(clippy::too_many_arguments)]
fn step<T: Float>(
    tile: &mut Sequence<T>,
    sh: &mut SharedMemory<T>,
    code: i32,
    sbase: usize,
    diag_at: usize,
    k: usize,
    kk: usize,
    tol: T,
    ti: usize,
    tj: usize,
    #[comptime] kb: usize,
    #[comptime] shape: TileShape,
) -> i32 {
    let (n, t, g) = comptime![(shape.n, shape.t, shape.g)];
    let cur = sbase + (k % 2) * comptime![shape.n + 3];
    let ok = sh[cur + n + 2] != T::new(0.0);
    let mut c = code;
    if !ok && c == 0 {
        c = (k + 1) as i32;
    }
    if ok {
        let root = sh[cur + n];
        let inv = sh[cur + n + 1];
        let inv2 = inv * inv;
        // Column k at the unit's rows and (over d) at its columns, blocks kb.. (rows and
        // columns past the matrix read its last entry: their entries are never stored).
        let mut li = Sequence::<T>::new();
        let mut lj = Sequence::<T>::new();
        #[unroll]
        for r in 0..t {
            if comptime![r < kb] {
                li.push(T::new(0.0));
                lj.push(T::new(0.0));
            } else {
                let mut i = ti + r * g;
                if i >= n {
                    i = n - 1;
                }
                li.push(sh[cur + i]);
                let mut j = tj + r * g;
                if j >= n {
                    j = n - 1;
                }
                lj.push(sh[cur + j] * inv2);
            }
        }
        // Entries of row block r >= kb, column block kb <= s <= r (s > r: above the
        // diagonal).
        #[unroll]
        for r in kb..t {
            #[unroll]
            for s in kb..r + 1 {
                let at = comptime![r * shape.t + s];
                if comptime![s == kb] {
                    // Column tj + kb g: column k itself when tj = kk, updated when tj > kk.
                    if tj == kk {
                        if comptime![r == kb] {
                            if ti == kk {
                                *tile.index_mut(at) = root;
                            } else if ti > kk {
                                *tile.index_mut(at) = tile[at] * inv;
                            }
                        } else {
                            *tile.index_mut(at) = tile[at] * inv;
                        }
                    } else if tj > kk && (comptime![r > s] || ti >= tj) {
                        *tile.index_mut(at) = fma(-li[r], lj[s], tile[at]);
                    }
                } else if comptime![r > s] || ti >= tj {
                    *tile.index_mut(at) = fma(-li[r], lj[s], tile[at]);
                }
            }
        }
    }
    // Column k + 1 into the other slot: it was last read at step k - 1, by units that were
    // done with it before that step's barrier.
    // (After the last step there is no column n: its `d` would be read past the matrix's
    // shared values where the grid has padding.)
    if k + 1 < n {
        publish::<T>(tile, sh, sbase, diag_at, k + 1, c, tol, ti, tj, kb, shape);
    }
    c
}

/// The units of column `k < n` (in column block `from` or the next) publish its rows `k..n`
/// into slot `k % 2`; the unit holding `d = a_kk` tests it against the original diagonal
/// (`code`: the steps so far) and publishes `√d`, `1 / √d` and the verdict (1: factored, 0:
/// failed) after the column: one square root and one division a step, off every other unit.
#[cube]
#[allow(clippy::too_many_arguments)]
fn publish<T: Float>(
    tile: &Sequence<T>,
    sh: &mut SharedMemory<T>,
    sbase: usize,
    diag_at: usize,
    k: usize,
    code: i32,
    tol: T,
    ti: usize,
    tj: usize,
    #[comptime] from: usize,
    #[comptime] shape: TileShape,
) {
    let (n, t, g) = comptime![(shape.n, shape.t, shape.g)];
    let slot = sbase + (k % 2) * comptime![shape.n + 3];
    // Column k lies in block `from` or the next; its rows k.. in blocks `from`...
    #[unroll]
    for s in from..comptime![(from + 2).min(shape.t)] {
        if tj + s * g == k {
            #[unroll]
            for r in from..t {
                let i = ti + r * g;
                if i >= k && i < n {
                    sh[slot + i] = tile[r * t + s];
                }
                if comptime![r == s] && i == k {
                    let d = tile[r * t + s];
                    let mut root = T::new(0.0);
                    let mut inv = T::new(0.0);
                    let mut verdict = T::new(0.0);
                    if code == 0 && d > tol * sh[diag_at + k] {
                        let r = newton::root::<T>(d, comptime![shape.refine]);
                        root = r.root;
                        inv = r.inv;
                        verdict = T::new(1.0);
                    }
                    sh[slot + n] = root;
                    sh[slot + n + 1] = inv;
                    sh[slot + n + 2] = verdict;
                }
            }
        }
    }
}
