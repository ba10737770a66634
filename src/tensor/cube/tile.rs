//! The one-pass operator kernel: `y = A x` on a 3D grid with every node of `y` written
//! once (no atomics, no colours, no fill or boundary pass).
//!
//! # Layout
//! A cube owns the nodes of an `own x own` tile in x and y (`own = cells · k`, from a
//! multiple of `k`) and a chunk of cell layers in z, and marches up its chunk one cell
//! layer (`k` output planes) at a time. The operator is applied in the form of the global 1D matrices:
//! `y = c_lap K_x b + M_x f`, `b = M_y a`, `f = c_lap K_y a + M_y e`, `a = M_z x`,
//! `e = c_lap K_z x + c_mass M_z x`.
//!
//! - **z pass**: one unit per column of the tile extended by one cell below and one node
//!   above in x and y (`E = (cells + 1) k + 1` columns per direction, the nodes the tile's
//!   rows reach). A unit holds its column's `k + 1` values of the current cell layer in
//!   registers (the next layer's are loaded while the current one is worked on) and forms
//!   `a` and `e` on the layer's planes; the shared vertex plane at the bottom of a layer adds the
//!   layer below's row `k`, carried in registers.
//! - **y pass**: one unit per (plane, cell row, column): it reads the `2k + 1` values its
//!   `k` rows reach into registers and writes `b` and `f`.
//! - **x pass**: one unit per (plane, row, cell): the same along x, and the result to `y`.
//!
//! The reference-cell matrices are constants
//! of the kernel (every index into them is known when the kernel is generated), so each
//! product is one fused multiply-add with an immediate operand.
//!
//! Boundary nodes read as zero and are written as `y = x` (the identity rows of
//! [`TensorOperator`](crate::tensor::TensorOperator)). Two barriers per layer: a pass
//! writes an array the pass two steps later reads, and every unit crosses a barrier in
//! between.

use cubecl::prelude::*;

use super::kernels::Coefficients;
use crate::tensor::basis::Basis1d;

/// Where the cubes of one launch lie: nodes per direction, cells per direction, tiles
/// per direction in x and y, cell layers per chunk in z.
#[derive(CubeType, CubeLaunch)]
pub(super) struct Tiles {
    pub(super) n1: usize,
    pub(super) cells: usize,
    pub(super) tiles: usize,
    pub(super) chunk: usize,
}

/// Part `part` (0, 1, 2) of `[M̂ | Â]` of degree `k` (row-major, `(k+1)²` each) split
/// into three f32 values whose sum is the f64 value: the kernel's constants. Constants of a
/// constant array reach the device rounded to f32 (measured on CUDA and on wgpu: a relative
/// error of 1e-7 in f64), so an f64 value is rebuilt from three f32 ones, exactly (72 bits
/// of mantissa cover 53), and the compiler folds the sums.
fn reference_parts<T: num_traits::NumCast + num_traits::Zero>(k: usize, part: usize) -> Vec<T> {
    // The degree was checked before any launch (check_grid), so the basis exists.
    let basis = Basis1d::new(k).expect("degree checked before the launch");
    basis
        .mass
        .iter()
        .chain(&basis.stiffness)
        .map(|&v| {
            let hi = v as f32;
            let mid = (v - hi as f64) as f32;
            let lo = (v - hi as f64 - mid as f64) as f32;
            let p = [hi, mid, lo][part.min(2)];
            T::from(p as f64).unwrap_or_else(T::zero)
        })
        .collect()
}

/// `(Σ_j M[row, j] w[off + j], Σ_j A[row, j] w[off + j])`, `j ≤ k`, `mats` holding
/// `[M̂ | Â]`, every index known at expansion.
#[cube]
fn dots<T: Float>(
    mats: &Array<T>,
    w: &Array<T>,
    #[comptime] row: usize,
    #[comptime] off: usize,
    #[comptime] k: usize,
) -> (T, T) {
    let n = comptime![k + 1];
    let mut m = T::new(0.0);
    let mut a = T::new(0.0);
    #[unroll]
    for j in 0..n {
        m += mats[comptime![row * n] + j] * w[off + j];
        a += mats[comptime![n * n + row * n] + j] * w[off + j];
    }
    (m, a)
}

/// Loads the `k + 1` values of cell layer `c` of the unit's column (at `column` of each
/// plane) into `v`; zero where the column is not `open` (outside the grid or on its side
/// boundary) and on the bottom and top planes.
#[cube]
fn load_layer<T: Float>(
    x: &Array<T>,
    v: &mut Array<T>,
    column: usize,
    open: bool,
    c: usize,
    n1: usize,
    #[comptime] k: usize,
) {
    let last = n1 - 1;
    let plane = n1 * n1;
    #[unroll]
    for j in 0..comptime![k + 1] {
        let gz = c * k + j;
        let inside = open && gz != 0 && gz != last;
        let mut val = T::new(0.0);
        if inside {
            val = x[gz * plane + column];
        }
        v[j] = val;
    }
}

/// Loads the `2k + 1` values of `a` and of `b` from `src` on, `stride` apart, into `wa` and
/// `we`: the two cells (the one below and the item's own) that an item's rows reach.
#[cube]
fn load_window<T: Float>(
    a: &SharedMemory<T>,
    b: &SharedMemory<T>,
    wa: &mut Array<T>,
    we: &mut Array<T>,
    src: usize,
    #[comptime] stride: usize,
    #[comptime] k: usize,
) {
    #[unroll]
    for j in 0..comptime![2 * k + 1] {
        wa[j] = a[src + j * stride];
        we[j] = b[src + j * stride];
    }
}

/// Row `r < k` of the item's own cell (from `k` on in the window): `(M̂ wa, Â wa, M̂ we)`;
/// the vertex row (`r = 0`) adds row `k` of the cell below. A pass uses what it needs.
#[cube]
fn cell_row<T: Float>(
    mats: &Array<T>,
    wa: &Array<T>,
    we: &Array<T>,
    #[comptime] r: usize,
    #[comptime] k: usize,
) -> (T, T, T) {
    let (mut m, mut a) = dots::<T>(mats, wa, r, k, k);
    let (mut me, _) = dots::<T>(mats, we, r, k, k);
    if comptime![r == 0] {
        let (lm, la) = dots::<T>(mats, wa, k, 0usize, k);
        let (le, _) = dots::<T>(mats, we, k, 0usize, k);
        m += lm;
        a += la;
        me += le;
    }
    (m, a, me)
}

/// Where item `item` of the y pass, one per (plane, cell row, column), reads in `sa`/`se`
/// and writes in `sb`/`sf`.
#[cube]
fn y_item_at(
    item: usize,
    #[comptime] k: usize,
    #[comptime] cells: usize,
    #[comptime] e: usize,
) -> (usize, usize) {
    let ix = item % e;
    let rest = item / e;
    let cy = rest % cells;
    let i = rest / cells;
    let at = cy * k * e + ix;
    (i * comptime![e * e] + at, i * comptime![e * cells * k] + at)
}

/// Where item `item` of the x pass, one per (plane, owned row, cell), reads in `sb`/`sf`,
/// its plane in the layer, and its first node's row and column in the grid.
#[cube]
fn x_item_at(
    item: usize,
    x0: usize,
    y0: usize,
    #[comptime] k: usize,
    #[comptime] cells: usize,
    #[comptime] e: usize,
) -> (usize, usize, usize, usize) {
    let own = comptime![cells * k];
    let cx = item % cells;
    let rest = item / cells;
    let oy = rest % own;
    let i = rest / own;
    (
        i * comptime![e * own] + oy * e + cx * k,
        i,
        y0 + oy,
        x0 + cx * k,
    )
}

/// The y pass's item at `src` (a column of a cell row, in `sa`/`se`) writing at `dst` (in
/// `sb`/`sf`): it reads the `2k + 1` values its `k` rows reach and writes `b` and `f`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn y_item<T: Float>(
    mats: &Array<T>,
    sa: &SharedMemory<T>,
    se: &SharedMemory<T>,
    sb: &mut SharedMemory<T>,
    sf: &mut SharedMemory<T>,
    wa: &mut Array<T>,
    we: &mut Array<T>,
    src: usize,
    dst: usize,
    c_lap: T,
    #[comptime] k: usize,
    #[comptime] e: usize,
) {
    load_window::<T>(sa, se, wa, we, src, e, k);
    #[unroll]
    for r in 0..k {
        let (bm, bk, em) = cell_row::<T>(mats, wa, we, r, k);
        sb[dst + r * e] = bm;
        sf[dst + r * e] = c_lap * bk + em;
    }
}

/// The x pass's item at `src` (a cell of an owned row, in `sb`/`sf`): the `k` nodes from
/// `gx0` on, at `g0` in `y`, or `y = x` where the row is on a `side` of the grid or a node
/// on its x boundary.
#[cube]
#[allow(clippy::too_many_arguments)]
fn x_item<T: Float>(
    mats: &Array<T>,
    sb: &SharedMemory<T>,
    sf: &SharedMemory<T>,
    x: &Array<T>,
    y: &mut Array<T>,
    wa: &mut Array<T>,
    we: &mut Array<T>,
    src: usize,
    g0: usize,
    gx0: usize,
    side: bool,
    n1: usize,
    c_lap: T,
    #[comptime] k: usize,
) {
    let last = n1 - 1;
    load_window::<T>(sb, sf, wa, we, src, 1usize, k);
    #[unroll]
    for r in 0..k {
        let gx = gx0 + r;
        if gx < n1 {
            let (_, lb, mf) = cell_row::<T>(mats, wa, we, r, k);
            let g = g0 + r;
            let mut out = c_lap * lb + mf;
            if side || gx == 0 || gx == last {
                out = x[g];
            }
            y[g] = out;
        }
    }
}

/// Whether the kernel works out its y- and x-pass indices once before the march
/// (`true`) or on every layer: once saves instructions where the passes are short (k ≤ 3:
/// 1.08–1.23x, H200 f64) but keeps more registers live across the march, which cost
/// occupancy at k ≥ 4 (k = 4: 0.79x, k = 7: 0.76x).
const fn hoisted(k: usize) -> bool {
    k <= 3
}

/// The one-pass 3D operator (module docs): cube `(CUBE_POS_X, CUBE_POS_Y)` = (tile,
/// chunk); exactly `E²` units (the y and x passes then give each unit at most one item, worked
/// out once before the march). The reference matrices are constants of the kernel (see
/// [`reference_parts`]): with them in shared memory instead, one load per product, the
/// kernel ran 1.4x (k = 1) to 11x (k = 8) slower (H200, f64).
#[cube(launch_unchecked)]
pub(super) fn tile_apply_kernel<T: Float>(
    x: &Array<T>,
    y: &mut Array<T>,
    coef: &Coefficients,
    tiles: &Tiles,
    #[comptime] k: usize,
    #[comptime] cells: usize,
) {
    let hi = Array::<T>::from_data(comptime![reference_parts::<T>(k, 0)]);
    let mid = Array::<T>::from_data(comptime![reference_parts::<T>(k, 1)]);
    let lo = Array::<T>::from_data(comptime![reference_parts::<T>(k, 2)]);
    let mut mats = Array::<T>::new(comptime![2 * (k + 1) * (k + 1)]);
    #[unroll]
    for i in 0..comptime![2 * (k + 1) * (k + 1)] {
        mats[i] = hi[i] + mid[i] + lo[i];
    }

    let n = comptime![k + 1];
    let own = comptime![cells * k];
    let e = comptime![(cells + 1) * k + 1];
    let ee = comptime![e * e];
    let wlen = comptime![2 * k + 1];
    let units = CUBE_DIM as usize;
    let mut sa = SharedMemory::<T>::new(comptime![k * e * e]);
    let mut se = SharedMemory::<T>::new(comptime![k * e * e]);
    let mut sb = SharedMemory::<T>::new(comptime![k * e * own]);
    let mut sf = SharedMemory::<T>::new(comptime![k * e * own]);

    let c_lap = coef.lap.get::<T>();
    let c_mass = coef.mass.get::<T>();
    let n1 = tiles.n1;
    let last = n1 - 1;
    let t = UNIT_POS as usize;
    let tile = CUBE_POS_X as usize;
    let x0 = (tile % tiles.tiles) * own;
    let y0 = (tile / tiles.tiles) * own;
    let c0 = CUBE_POS_Y as usize * tiles.chunk;
    let mut c1 = c0 + tiles.chunk;
    if c1 > tiles.cells {
        c1 = tiles.cells;
    }

    // The unit's column of the extended tile: global (gx, gy) = (x0 + ex − k, y0 + ey − k).
    let has_col = t < ee;
    let gxp = x0 + t % e;
    let gyp = y0 + t / e;
    let in_grid = has_col && gxp >= k && gyp >= k && gxp - k < n1 && gyp - k < n1;
    let mut column = 0usize;
    let mut open = false;
    if in_grid {
        let gx = gxp - k;
        let gy = gyp - k;
        column = gy * n1 + gx;
        open = gx != 0 && gx != last && gy != 0 && gy != last;
    }

    // The unit's item of the y and x passes, the same on every layer: at most one each,
    // as the items (k·E·cells and k²·cells²) are fewer than the E² units. Where hoisted(k),
    // its indices are worked out once here (unused otherwise: the passes work them out).
    let y_on = t < comptime![k * e * cells];
    let (y_src, y_dst) = y_item_at(t, k, cells, e);
    let (x_src, x_plane, x_gy, x_gx) = x_item_at(t, x0, y0, k, cells, e);
    let x_on = t < comptime![k * own * cells] && x_gy < n1;
    // The node (x_gx, x_gy) in its plane, and whether the row lies on a side of the grid.
    let x_node = x_gy * n1 + x_gx;
    let x_side = x_gy == 0 || x_gy == last;
    let plane = n1 * n1;

    let mut v = Array::<T>::new(n);
    let mut w = Array::<T>::new(n);
    let mut wa = Array::<T>::new(wlen);
    let mut we = Array::<T>::new(wlen);
    let mut cm = T::new(0.0);
    let mut ck = T::new(0.0);
    if c0 > 0 {
        load_layer::<T>(x, &mut v, column, open, c0 - 1, n1, k);
        let (m, a) = dots::<T>(&mats, &v, k, 0usize, k);
        cm = m;
        ck = a;
    }
    load_layer::<T>(x, &mut v, column, open, c0, n1, k);

    let mut c = c0;
    while c < c1 {
        if c + 1 < c1 {
            load_layer::<T>(x, &mut w, column, open, c + 1, n1, k);
        }
        // z pass: the k planes of the layer, one unit per column.
        if has_col {
            #[unroll]
            for p in 0..k {
                let (m, a) = dots::<T>(&mats, &v, p, 0usize, k);
                let mut am = m;
                let mut ak = a;
                if comptime![p == 0] {
                    am += cm;
                    ak += ck;
                }
                sa[p * ee + t] = am;
                se[p * ee + t] = c_lap * ak + c_mass * am;
            }
        }
        sync_cube();
        // y pass: one unit per (plane, cell row, column).
        if comptime![hoisted(k)] {
            if y_on {
                y_item::<T>(
                    &mats, &sa, &se, &mut sb, &mut sf, &mut wa, &mut we, y_src, y_dst, c_lap, k, e,
                );
            }
        } else {
            let mut item = t;
            while item < comptime![k * e * cells] {
                let (src, dst) = y_item_at(item, k, cells, e);
                y_item::<T>(
                    &mats, &sa, &se, &mut sb, &mut sf, &mut wa, &mut we, src, dst, c_lap, k, e,
                );
                item += units;
            }
        }
        sync_cube();
        // x pass: one unit per (plane, owned row, cell); the results to y.
        if comptime![hoisted(k)] {
            if x_on {
                let gz = c * k + x_plane;
                let side = x_side || gz == 0 || gz == last;
                x_item::<T>(
                    &mats,
                    &sb,
                    &sf,
                    x,
                    y,
                    &mut wa,
                    &mut we,
                    x_src,
                    gz * plane + x_node,
                    x_gx,
                    side,
                    n1,
                    c_lap,
                    k,
                );
            }
        } else {
            let mut item = t;
            while item < comptime![k * own * cells] {
                let (src, i, gy, gx0) = x_item_at(item, x0, y0, k, cells, e);
                let gz = c * k + i;
                if gy < n1 {
                    let side = gy == 0 || gy == last || gz == 0 || gz == last;
                    x_item::<T>(
                        &mats,
                        &sb,
                        &sf,
                        x,
                        y,
                        &mut wa,
                        &mut we,
                        src,
                        (gz * n1 + gy) * n1 + gx0,
                        gx0,
                        side,
                        n1,
                        c_lap,
                        k,
                    );
                }
                item += units;
            }
        }
        let (m, a) = dots::<T>(&mats, &v, k, 0usize, k);
        cm = m;
        ck = a;
        #[unroll]
        for j in 0..n {
            v[j] = w[j];
        }
        c += 1;
    }

    // The top boundary plane, by the last chunk: y = x (own² < E² units, one node each).
    if c1 == tiles.cells && c0 < c1 && t < comptime![own * own] {
        let gx = x0 + t % own;
        let gy = y0 + t / own;
        if gx < n1 && gy < n1 {
            let g = last * plane + gy * n1 + gx;
            y[g] = x[g];
        }
    }
}
