//! The kernels of the cell operator (sum factorization on chip, shared with the patch
//! kernel), the banded line kernel and the boundary copy.

use cubecl::prelude::*;

use crate::backend::cube::{ceil_div, stage};

/// `c_lap` and `c_mass` of the local operator.
#[derive(CubeType, CubeLaunch)]
pub(super) struct Coefficients {
    pub(super) lap: InputScalar,
    pub(super) mass: InputScalar,
}

/// Where the blocks of one launch lie: the count of blocks per direction, the colour's
/// bit per direction, the nodes per direction of the grid, the number of blocks.
#[derive(CubeType, CubeLaunch)]
pub(super) struct Blocks {
    pub(super) cx: usize,
    pub(super) cy: usize,
    pub(super) bx: usize,
    pub(super) by: usize,
    pub(super) bz: usize,
    pub(super) step: usize,
    pub(super) n1: usize,
    pub(super) total: usize,
}

/// The global node of the block's origin (block `b` of the launch, degree `k`).
#[cube]
pub(super) fn block_origin(blocks: &Blocks, b: usize, #[comptime] k: usize) -> usize {
    let ix = b % blocks.cx;
    let iy = (b / blocks.cx) % blocks.cy;
    let iz = b / (blocks.cx * blocks.cy);
    let ox = (blocks.step * ix + blocks.bx) * k;
    let oy = (blocks.step * iy + blocks.by) * k;
    let oz = (blocks.step * iz + blocks.bz) * k;
    (oz * blocks.n1 + oy) * blocks.n1 + ox
}

/// Loads the `n^d` block at `origin` of `x` into `u[base..]` (layout `(z n + y) n + x`),
/// boundary nodes of the grid read as zero (homogeneous Dirichlet).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn load_block<T: Float>(
    x: &Array<T>,
    u: &mut SharedMemory<T>,
    base: usize,
    origin: usize,
    n1: usize,
    lane: usize,
    valid: bool,
    #[comptime] n: usize,
    #[comptime] dim: usize,
) {
    if valid {
        let last = n1 - 1;
        let ox = origin % n1;
        let oy = (origin / n1) % n1;
        let oz = origin / (n1 * n1);
        if comptime![dim == 3] {
            let i = lane % n;
            let j = lane / n;
            let gx = ox + i;
            let gy = oy + j;
            let side = gx == 0 || gx == last || gy == 0 || gy == last;
            #[unroll]
            for z in 0..n {
                let gz = oz + z;
                let v = x[origin + (z * n1 + j) * n1 + i];
                let edge = side || gz == 0 || gz == last;
                u[base + (z * n + j) * n + i] = select(edge, T::new(0.0), v);
            }
        } else {
            let gx = ox + lane;
            let side = gx == 0 || gx == last;
            #[unroll]
            for j in 0..n {
                let gy = oy + j;
                let v = x[origin + j * n1 + lane];
                let edge = side || gy == 0 || gy == last;
                u[base + j * n + lane] = select(edge, T::new(0.0), v);
            }
        }
    }
}

/// Row `row` of an `n`-column matrix at `mat[base..]` times the line `v` (`n` values in
/// registers). The callers loop over the rows at run time and store each result at once:
/// unrolling the rows too kept every row's products live and cost occupancy (158
/// registers per unit in the patch kernel, measured with Nsight Compute).
#[cube]
pub(super) fn row_dot<T: Float>(
    mat: &SharedMemory<T>,
    base: usize,
    row: usize,
    v: &Array<T>,
    #[comptime] n: usize,
) -> T {
    let mut acc = T::new(0.0);
    let start = base + row * n;
    #[unroll]
    for j in 0..n {
        acc += mat[start + j] * v[j];
    }
    acc
}

/// The local operator (module docs of [`ops`](super::ops)) on the block in `u[bu..]`,
/// rows `r0 .. r0 + m` in every direction; the result is left in `u` at
/// `(l n + j) n + i` (`i, j, l < m`). `q[bq..]` holds `m n^{d−1}` values of scratch;
/// `mats` holds `[M | A]` (`n x n` each). Every unit of the cube must call it. Each pass
/// reads its whole line into registers first, so it may overwrite the line in place.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_local<T: Float>(
    u: &mut SharedMemory<T>,
    q: &mut SharedMemory<T>,
    mats: &SharedMemory<T>,
    bu: usize,
    bq: usize,
    lane: usize,
    c_lap: T,
    c_mass: T,
    #[comptime] n: usize,
    #[comptime] r0: usize,
    #[comptime] m: usize,
    #[comptime] dim: usize,
) {
    let nz = comptime![if dim == 3 { n } else { 1 }];
    let nn = comptime![n * n];
    let mut v = Array::<T>::new(n);
    let mut w = Array::<T>::new(n);
    // x pass: the unit of line (y, z) forms M x and A x on its line.
    if lane < n * nz {
        let line = bu + lane * n;
        #[unroll]
        for j in 0..n {
            v[j] = u[line + j];
        }
        for i in 0..m {
            u[line + i] = row_dot::<T>(mats, 0usize, r0 + i, &v, n);
            q[bq + lane * m + i] = row_dot::<T>(mats, nn, r0 + i, &v, n);
        }
    }
    sync_cube();
    // y pass: the unit of line (x = i, z) forms M(Mx), A(Mx), M(Ax).
    if lane < m * nz {
        let i = lane % m;
        let z = lane / m;
        #[unroll]
        for j in 0..n {
            v[j] = u[bu + (z * n + j) * n + i];
            w[j] = q[bq + (z * n + j) * m + i];
        }
        for j in 0..m {
            let pm = row_dot::<T>(mats, 0usize, r0 + j, &v, n);
            let pa = row_dot::<T>(mats, nn, r0 + j, &v, n);
            let qm = row_dot::<T>(mats, 0usize, r0 + j, &w, n);
            let s = c_lap * (pa + qm) + c_mass * pm;
            if comptime![dim == 3] {
                u[bu + (z * n + j) * n + i] = pm;
                q[bq + (z * n + j) * m + i] = s;
            } else {
                u[bu + j * n + i] = s;
            }
        }
    }
    sync_cube();
    // z pass (3D): the unit of line (i, j) forms c_lap A(MMx) + M(s).
    if comptime![dim == 3] {
        if lane < m * m {
            let i = lane % m;
            let j = lane / m;
            #[unroll]
            for z in 0..n {
                v[z] = u[bu + (z * n + j) * n + i];
                w[z] = q[bq + (z * n + j) * m + i];
            }
            for l in 0..m {
                let pa = row_dot::<T>(mats, nn, r0 + l, &v, n);
                let qm = row_dot::<T>(mats, 0usize, r0 + l, &w, n);
                u[bu + (l * n + j) * n + i] = c_lap * pa + qm;
            }
        }
        sync_cube();
    }
}

/// Loads cell `b` of the launch into its slot of `u` (`UNIT_POS_Y`) and applies the local
/// operator (all rows); returns the cell's origin node. Every unit of the cube must call it.
#[cube]
#[allow(clippy::too_many_arguments)]
fn cell_apply<T: Float>(
    x: &Array<T>,
    u: &mut SharedMemory<T>,
    q: &mut SharedMemory<T>,
    mats: &SharedMemory<T>,
    coef: &Coefficients,
    blocks: &Blocks,
    b: usize,
    valid: bool,
    #[comptime] k: usize,
    #[comptime] dim: usize,
) -> usize {
    let n = comptime![k + 1];
    let nd = comptime![if dim == 3 { n * n * n } else { n * n }];
    let lane = UNIT_POS_X as usize;
    let base = UNIT_POS_Y as usize * nd;
    let origin = block_origin(blocks, b, k);
    load_block::<T>(x, u, base, origin, blocks.n1, lane, valid, n, dim);
    sync_cube();
    let c_lap = coef.lap.get::<T>();
    let c_mass = coef.mass.get::<T>();
    apply_local::<T>(
        u, q, mats, base, base, lane, c_lap, c_mass, n, 0usize, n, dim,
    );
    origin
}

/// The cell operator, cells of one colour, `y += A_K x` by read-modify-write.
#[cube(launch_unchecked)]
pub(super) fn cell_colour_kernel<T: Float>(
    cell: &Array<T>,
    x: &Array<T>,
    y: &mut Array<T>,
    coef: &Coefficients,
    blocks: &Blocks,
    #[comptime] k: usize,
    #[comptime] dim: usize,
    #[comptime] cpc: usize,
) {
    let n = comptime![k + 1];
    let nd = comptime![if dim == 3 { n * n * n } else { n * n }];
    let mut u = SharedMemory::<T>::new(comptime![cpc * nd]);
    let mut q = SharedMemory::<T>::new(comptime![cpc * nd]);
    let mut mats = SharedMemory::<T>::new(comptime![2 * n * n]);
    stage::<T>(cell, &mut mats, 0usize, comptime![2 * n * n]);
    sync_cube();
    let lane = UNIT_POS_X as usize;
    let slot = UNIT_POS_Y as usize;
    let groups = ceil_div(blocks.total, cpc);
    let mut g = CUBE_POS;
    while g < groups {
        let b = g * cpc + slot;
        let valid = b < blocks.total;
        let origin = cell_apply::<T>(x, &mut u, &mut q, &mats, coef, blocks, b, valid, k, dim);
        if valid {
            scatter_block::<T>(&u, y, slot * nd, origin, blocks.n1, lane, n, dim);
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// `y[g] += u[..]` over the unit's line of the block (plain adds: the colour's cells
/// share no node).
#[cube]
pub(super) fn scatter_block<T: Float>(
    u: &SharedMemory<T>,
    y: &mut Array<T>,
    base: usize,
    origin: usize,
    n1: usize,
    lane: usize,
    #[comptime] n: usize,
    #[comptime] dim: usize,
) {
    if comptime![dim == 3] {
        let i = lane % n;
        let j = lane / n;
        #[unroll]
        for z in 0..n {
            let gi = origin + (z * n1 + j) * n1 + i;
            y[gi] += u[base + (z * n + j) * n + i];
        }
    } else {
        #[unroll]
        for j in 0..n {
            let gi = origin + j * n1 + lane;
            y[gi] += u[base + j * n + lane];
        }
    }
}

/// The cell operator, all cells, `y += A_K x` by atomic adds.
#[cube(launch_unchecked)]
pub(super) fn cell_atomic_kernel<T: Float>(
    cell: &Array<T>,
    x: &Array<T>,
    y: &mut Array<Atomic<T>>,
    coef: &Coefficients,
    blocks: &Blocks,
    #[comptime] k: usize,
    #[comptime] dim: usize,
    #[comptime] cpc: usize,
) {
    let n = comptime![k + 1];
    let nd = comptime![if dim == 3 { n * n * n } else { n * n }];
    let mut u = SharedMemory::<T>::new(comptime![cpc * nd]);
    let mut q = SharedMemory::<T>::new(comptime![cpc * nd]);
    let mut mats = SharedMemory::<T>::new(comptime![2 * n * n]);
    stage::<T>(cell, &mut mats, 0usize, comptime![2 * n * n]);
    sync_cube();
    let lane = UNIT_POS_X as usize;
    let slot = UNIT_POS_Y as usize;
    let groups = ceil_div(blocks.total, cpc);
    let mut g = CUBE_POS;
    while g < groups {
        let b = g * cpc + slot;
        let valid = b < blocks.total;
        let origin = cell_apply::<T>(x, &mut u, &mut q, &mats, coef, blocks, b, valid, k, dim);
        if valid {
            let base = slot * nd;
            if comptime![dim == 3] {
                let i = lane % n;
                let j = lane / n;
                #[unroll]
                for z in 0..n {
                    let gi = origin + (z * blocks.n1 + j) * blocks.n1 + i;
                    y[gi].fetch_add(u[base + (z * n + j) * n + i]);
                }
            } else {
                #[unroll]
                for j in 0..n {
                    let gi = origin + j * blocks.n1 + lane;
                    y[gi].fetch_add(u[base + j * n + lane]);
                }
            }
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// `y = B x` along one direction (see [`TensorOps::tensor_line_apply`]), one unit per
/// output value.
#[cube(launch_unchecked)]
pub(super) fn line_kernel<T: Float>(
    starts: &Array<u32>,
    values: &Array<T>,
    x: &Array<T>,
    y: &mut Array<T>,
    inner: usize,
    n: usize,
    rows: usize,
    width: usize,
    total: usize,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut u = ABSOLUTE_POS;
    while u < total {
        let lo = u % inner;
        let rest = u / inner;
        let i = rest % rows;
        let o = rest / rows;
        let s = starts[i] as usize;
        let mut acc = T::new(0.0);
        for w in 0..width {
            acc += values[i * width + w] * x[(o * n + s + w) * inner + lo];
        }
        y[u] = acc;
        u += stride;
    }
}

/// `y = src` (or 0) on the boundary nodes of an `n1^dim` grid.
#[cube(launch_unchecked)]
pub(super) fn boundary_kernel<T: Float>(
    src: &Array<T>,
    y: &mut Array<T>,
    n1: usize,
    total: usize,
    #[comptime] dim: usize,
    #[comptime] copy: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let last = n1 - 1;
    let mut g = ABSOLUTE_POS;
    while g < total {
        let i = g % n1;
        let j = (g / n1) % n1;
        let mut edge = i == 0 || i == last || j == 0 || j == last;
        if comptime![dim == 3] {
            let l = g / (n1 * n1);
            edge = edge || l == 0 || l == last;
        }
        if edge {
            if comptime![copy] {
                y[g] = src[g];
            } else {
                y[g] = T::new(0.0);
            }
        }
        g += stride;
    }
}

/// Partial sums of the squared L² error (`tensor::ops::l2_cell_error_sq`, in the same
/// order): unit `t < units` adds the cells `t, t + units, …` and writes `out[t]`. `table` is
/// `[φ | w | G]` of `tensor::ops::l2_table`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(super) fn l2_kernel<T: Float>(
    table: &Array<T>,
    uh: &Array<T>,
    out: &mut Array<T>,
    cells: usize,
    n1: usize,
    units: usize,
    #[comptime] k: usize,
    #[comptime] dim: usize,
) {
    let n = comptime![k + 1];
    let q = comptime![k + 2];
    let w0 = comptime![q * n];
    let g0 = comptime![q * n + q];
    let nz = comptime![if dim == 3 { k + 1 } else { 1 }];
    let qz = comptime![if dim == 3 { k + 2 } else { 1 }];
    let total = if comptime![dim == 3] {
        cells * cells * cells
    } else {
        cells * cells
    };
    let mut plane = Array::<T>::new(comptime![n * n]);
    let mut row = Array::<T>::new(n);
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut t = ABSOLUTE_POS;
    while t < units {
        let mut acc = T::new(0.0);
        let mut c = t;
        while c < total {
            let cx = c % cells;
            let cy = (c / cells) % cells;
            let cz = c / (cells * cells);
            let origin = ((cz * k) * n1 + cy * k) * n1 + cx * k;
            for pz in 0..qz {
                for y in 0..n {
                    for x in 0..n {
                        let mut v = T::new(0.0);
                        for z in 0..nz {
                            let mut f = T::new(1.0);
                            if comptime![dim == 3] {
                                f = table[pz * n + z];
                            }
                            v += f * uh[origin + (z * n1 + y) * n1 + x];
                        }
                        plane[y * n + x] = v;
                    }
                }
                let mut gz = T::new(1.0);
                let mut wz = T::new(1.0);
                if comptime![dim == 3] {
                    gz = table[g0 + cz * q + pz];
                    wz = table[w0 + pz];
                }
                for py in 0..q {
                    for x in 0..n {
                        let mut v = T::new(0.0);
                        for y in 0..n {
                            v += table[py * n + y] * plane[y * n + x];
                        }
                        row[x] = v;
                    }
                    let gyz = table[g0 + cy * q + py] * gz;
                    let wyz = table[w0 + py] * wz;
                    for px in 0..q {
                        let mut u = T::new(0.0);
                        for x in 0..n {
                            u += table[px * n + x] * row[x];
                        }
                        let e = u - table[g0 + cx * q + px] * gyz;
                        acc += table[w0 + px] * wyz * e * e;
                    }
                }
            }
            c += units;
        }
        out[t] = acc;
        t += stride;
    }
}
