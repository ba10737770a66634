//! The CubeCL kernels of [`TensorOps`].
//!
//! # Sum factorization on chip
//! A cube holds `cpc` blocks (cells or patch closures, `n^d` nodes each) in shared memory,
//! `n^{d−1}` units per block (`UNIT_POS_X`, one per line of nodes) and one block per
//! `UNIT_POS_Y`. Each 1D contraction is done by the units that own whole lines in its
//! direction: a unit reads its line into registers, multiplies by the small matrix and
//! writes the result back over the line it read, so no unit ever writes a slot another
//! unit reads in the same pass. The local operator takes 7 contractions in 3D (the
//! x-direction products `M x` and `A x` are shared by the three terms), 4 in 2D.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{ceil_div, scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{DType, Scalar};
use crate::tensor::ops::{patch_shared_values, Grid, Scatter, TensorOps};

/// `c_lap` and `c_mass` of the local operator.
#[derive(CubeType, CubeLaunch)]
struct Coefficients {
    lap: InputScalar,
    mass: InputScalar,
}

/// Where the blocks of one launch lie: the count of blocks per direction, the colour's
/// bit per direction, the nodes per direction of the grid, the number of blocks.
#[derive(CubeType, CubeLaunch)]
struct Blocks {
    cx: usize,
    cy: usize,
    bx: usize,
    by: usize,
    bz: usize,
    n1: usize,
    total: usize,
}

/// The global node of the block's origin (block `b` of the launch, degree `k`).
#[cube]
fn block_origin(blocks: &Blocks, b: usize, #[comptime] k: usize) -> usize {
    let ix = b % blocks.cx;
    let iy = (b / blocks.cx) % blocks.cy;
    let iz = b / (blocks.cx * blocks.cy);
    let ox = (2usize * ix + blocks.bx) * k;
    let oy = (2usize * iy + blocks.by) * k;
    let oz = (2usize * iz + blocks.bz) * k;
    (oz * blocks.n1 + oy) * blocks.n1 + ox
}

/// Loads the `n^d` block at `origin` of `x` into `u[base..]` (layout `(z n + y) n + x`),
/// boundary nodes of the grid read as zero (homogeneous Dirichlet).
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_block<T: Float>(
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

/// `w = mat[r0.., ..] v` for the `m` rows from `r0` of an `n`-column matrix in `mat`.
#[cube]
fn rows_times<T: Float>(
    mat: &SharedMemory<T>,
    mat_base: usize,
    v: &Array<T>,
    w: &mut Array<T>,
    #[comptime] n: usize,
    #[comptime] r0: usize,
    #[comptime] m: usize,
) {
    #[unroll]
    for i in 0..m {
        let mut acc = T::new(0.0);
        #[unroll]
        for j in 0..n {
            acc += mat[mat_base + (r0 + i) * n + j] * v[j];
        }
        w[i] = acc;
    }
}

/// The local operator (module docs of [`ops`](super::ops)) on the block in `u[bu..]`,
/// rows `r0 .. r0 + m` in every direction; the result is left in `u` at
/// `(l n + j) n + i` (`i, j, l < m`). `q[bq..]` holds `m n^{d−1}` values of scratch;
/// `mats` holds `[M | A]` (`n x n` each). Every unit of the cube must call it.
#[cube]
#[allow(clippy::too_many_arguments)]
fn apply_local<T: Float>(
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
    let mut v = Array::<T>::new(n);
    let mut w = Array::<T>::new(n);
    let mut pm = Array::<T>::new(n);
    let mut pa = Array::<T>::new(n);
    let mut qm = Array::<T>::new(n);
    // x pass: the unit of line (y, z) forms M x and A x on its line.
    if lane < n * nz {
        let line = bu + lane * n;
        #[unroll]
        for j in 0..n {
            v[j] = u[line + j];
        }
        rows_times::<T>(mats, 0usize, &v, &mut w, n, r0, m);
        rows_times::<T>(mats, n * n, &v, &mut pa, n, r0, m);
        #[unroll]
        for i in 0..m {
            u[line + i] = w[i];
            q[bq + lane * m + i] = pa[i];
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
        rows_times::<T>(mats, 0usize, &v, &mut pm, n, r0, m);
        rows_times::<T>(mats, n * n, &v, &mut pa, n, r0, m);
        rows_times::<T>(mats, 0usize, &w, &mut qm, n, r0, m);
        #[unroll]
        for j in 0..m {
            let s = c_lap * (pa[j] + qm[j]) + c_mass * pm[j];
            if comptime![dim == 3] {
                u[bu + (z * n + j) * n + i] = pm[j];
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
            rows_times::<T>(mats, n * n, &v, &mut pa, n, r0, m);
            rows_times::<T>(mats, 0usize, &w, &mut qm, n, r0, m);
            #[unroll]
            for l in 0..m {
                u[bu + (l * n + j) * n + i] = c_lap * pa[l] + qm[l];
            }
        }
        sync_cube();
    }
}

/// Copies `len` values of `src[offset..]` into `dst` (all units of the cube share the work).
#[cube]
fn stage<T: Float>(src: &Array<T>, dst: &mut SharedMemory<T>, offset: usize, len: usize) {
    let units = (CUBE_DIM_X * CUBE_DIM_Y) as usize;
    let mut t = (UNIT_POS_Y * CUBE_DIM_X + UNIT_POS_X) as usize;
    while t < len {
        dst[t] = src[offset + t];
        t += units;
    }
}

/// The cell operator, cells of one colour, `y += A_K x` by read-modify-write.
#[cube(launch_unchecked)]
fn cell_colour_kernel<T: Float>(
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
    let c_lap = coef.lap.get::<T>();
    let c_mass = coef.mass.get::<T>();
    let groups = ceil_div(blocks.total, cpc);
    let mut g = CUBE_POS;
    while g < groups {
        let b = g * cpc + slot;
        let valid = b < blocks.total;
        let origin = block_origin(blocks, b, k);
        load_block::<T>(x, &mut u, slot * nd, origin, blocks.n1, lane, valid, n, dim);
        sync_cube();
        apply_local::<T>(
            &mut u,
            &mut q,
            &mats,
            slot * nd,
            slot * nd,
            lane,
            c_lap,
            c_mass,
            n,
            0usize,
            n,
            dim,
        );
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
fn scatter_block<T: Float>(
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
fn cell_atomic_kernel<T: Float>(
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
    let c_lap = coef.lap.get::<T>();
    let c_mass = coef.mass.get::<T>();
    let groups = ceil_div(blocks.total, cpc);
    let mut g = CUBE_POS;
    while g < groups {
        let b = g * cpc + slot;
        let valid = b < blocks.total;
        // All cells: the launch's `Blocks` has colour bits 0 and counts halved, so map
        // the cell index directly.
        let ix = b % blocks.cx;
        let iy = (b / blocks.cx) % blocks.cy;
        let iz = b / (blocks.cx * blocks.cy);
        let origin = ((iz * k) * blocks.n1 + iy * k) * blocks.n1 + ix * k;
        load_block::<T>(x, &mut u, slot * nd, origin, blocks.n1, lane, valid, n, dim);
        sync_cube();
        apply_local::<T>(
            &mut u,
            &mut q,
            &mats,
            slot * nd,
            slot * nd,
            lane,
            c_lap,
            c_mass,
            n,
            0usize,
            n,
            dim,
        );
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

/// Applies `S` (or `Sᵀ`) along the line of `m` values at `u[start + t step]`, in place.
#[cube]
fn line_eigen<T: Float>(
    u: &mut SharedMemory<T>,
    s: &SharedMemory<T>,
    start: usize,
    step: usize,
    #[comptime] m: usize,
    #[comptime] transpose: bool,
) {
    let mut v = Array::<T>::new(m);
    #[unroll]
    for t in 0..m {
        v[t] = u[start + t * step];
    }
    #[unroll]
    for a in 0..m {
        let mut acc = T::new(0.0);
        #[unroll]
        for t in 0..m {
            if comptime![transpose] {
                acc += s[t * m + a] * v[t];
            } else {
                acc += s[a * m + t] * v[t];
            }
        }
        u[start + a * step] = acc;
    }
}

/// One colour of the vertex-patch smoother (see [`TensorOps::tensor_patch_smooth`]).
#[cube(launch_unchecked)]
fn patch_kernel<T: Float>(
    patch: &Array<T>,
    b: &Array<T>,
    x: &mut Array<T>,
    coef: &Coefficients,
    blocks: &Blocks,
    #[comptime] k: usize,
    #[comptime] dim: usize,
    #[comptime] cpc: usize,
) {
    let n = comptime![2 * k + 1];
    let m = comptime![2 * k - 1];
    let nd = comptime![if dim == 3 { n * n * n } else { n * n }];
    let qd = comptime![if dim == 3 { m * n * n } else { m * n }];
    let mut u = SharedMemory::<T>::new(comptime![cpc * nd]);
    let mut q = SharedMemory::<T>::new(comptime![cpc * qd]);
    let mut mats = SharedMemory::<T>::new(comptime![2 * n * n]);
    let mut s = SharedMemory::<T>::new(comptime![m * m]);
    let mut lambda = SharedMemory::<T>::new(m);
    stage::<T>(patch, &mut mats, 0usize, comptime![2 * n * n]);
    stage::<T>(patch, &mut s, comptime![2 * n * n], comptime![m * m]);
    stage::<T>(patch, &mut lambda, comptime![2 * n * n + m * m], m);
    sync_cube();
    let lane = UNIT_POS_X as usize;
    let slot = UNIT_POS_Y as usize;
    let bu = slot * nd;
    let c_lap = coef.lap.get::<T>();
    let c_mass = coef.mass.get::<T>();
    let groups = ceil_div(blocks.total, cpc);
    let n1 = blocks.n1;
    let mut g = CUBE_POS;
    while g < groups {
        let p = g * cpc + slot;
        let valid = p < blocks.total;
        let origin = block_origin(blocks, p, k);
        let inner =
            origin + 1usize + n1 + comptime![if dim == 3 { 1usize } else { 0usize }] * n1 * n1;
        load_block::<T>(x, &mut u, bu, origin, n1, lane, valid, n, dim);
        sync_cube();
        apply_local::<T>(
            &mut u,
            &mut q,
            &mats,
            bu,
            slot * qd,
            lane,
            c_lap,
            c_mass,
            n,
            1usize,
            m,
            dim,
        );
        if comptime![dim == 3] {
            // r = b − Āx on the interior, then Sᵀ along z (unit of line (i, j)).
            if lane < m * m {
                let i = lane % m;
                let j = lane / m;
                if valid {
                    #[unroll]
                    for l in 0..m {
                        let at = bu + (l * n + j) * n + i;
                        u[at] = b[inner + (l * n1 + j) * n1 + i] - u[at];
                    }
                }
                line_eigen::<T>(&mut u, &s, bu + j * n + i, n * n, m, true);
            }
            sync_cube();
            // Sᵀ along y (unit of line (i, l)).
            if lane < m * m {
                line_eigen::<T>(&mut u, &s, bu + (lane / m) * n * n + lane % m, n, m, true);
            }
            sync_cube();
            // Sᵀ along x, the eigenvalue scaling, S along x (unit of line (j, l)).
            if lane < m * m {
                let j = lane % m;
                let l = lane / m;
                let start = bu + (l * n + j) * n;
                line_eigen::<T>(&mut u, &s, start, 1usize, m, true);
                #[unroll]
                for i in 0..m {
                    let d = c_lap * (lambda[i] + lambda[j] + lambda[l]) + c_mass;
                    u[start + i] = u[start + i] / d;
                }
                line_eigen::<T>(&mut u, &s, start, 1usize, m, false);
            }
            sync_cube();
            if lane < m * m {
                line_eigen::<T>(&mut u, &s, bu + (lane / m) * n * n + lane % m, n, m, false);
            }
            sync_cube();
            if lane < m * m {
                let i = lane % m;
                let j = lane / m;
                line_eigen::<T>(&mut u, &s, bu + j * n + i, n * n, m, false);
                if valid {
                    #[unroll]
                    for l in 0..m {
                        let gi = inner + (l * n1 + j) * n1 + i;
                        x[gi] += u[bu + (l * n + j) * n + i];
                    }
                }
            }
        } else {
            // r = b − Āx, Sᵀ along y (unit of column i).
            if lane < m {
                if valid {
                    #[unroll]
                    for j in 0..m {
                        let at = bu + j * n + lane;
                        u[at] = b[inner + j * n1 + lane] - u[at];
                    }
                }
                line_eigen::<T>(&mut u, &s, bu + lane, n, m, true);
            }
            sync_cube();
            // Sᵀ along x, scaling, S along x (unit of row j).
            if lane < m {
                let start = bu + lane * n;
                line_eigen::<T>(&mut u, &s, start, 1usize, m, true);
                #[unroll]
                for i in 0..m {
                    let d = c_lap * (lambda[i] + lambda[lane]) + c_mass;
                    u[start + i] = u[start + i] / d;
                }
                line_eigen::<T>(&mut u, &s, start, 1usize, m, false);
            }
            sync_cube();
            if lane < m {
                line_eigen::<T>(&mut u, &s, bu + lane, n, m, false);
                if valid {
                    #[unroll]
                    for j in 0..m {
                        x[inner + j * n1 + lane] += u[bu + j * n + lane];
                    }
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
fn line_kernel<T: Float>(
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
fn boundary_kernel<T: Float>(
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

/// The launch's block placement for `counts` blocks per direction with colour `colour`.
fn blocks_arg<R: Runtime>(grid: Grid, counts: [usize; 3], colour: usize) -> BlocksLaunch<R> {
    let bit = |d: usize| if d < grid.dim { (colour >> d) & 1 } else { 0 };
    BlocksLaunch::new(
        counts[0].max(1),
        counts[1].max(1),
        bit(0),
        bit(1),
        bit(2),
        grid.n1(),
        counts.iter().product(),
    )
}

/// Blocks per direction of the cells of `colour` (all cells with `None`).
fn cell_counts(grid: Grid, colour: Option<usize>) -> [usize; 3] {
    std::array::from_fn(|d| match (d < grid.dim, colour) {
        (false, _) => 1,
        (true, None) => grid.cells,
        (true, Some(c)) => (grid.cells + 1 - ((c >> d) & 1)) / 2,
    })
}

impl<R: CubeRuntime> Cube<R> {
    /// Blocks per cube for blocks of `lanes` units and `shared` values of shared memory
    /// each (plus `fixed` values per cube): about 128 units, within the device's limit.
    fn blocks_per_cube<T: Scalar>(&self, lanes: usize, shared: usize, fixed: usize) -> usize {
        let bytes = std::mem::size_of::<T>();
        let limit = self.info().max_shared_bytes / bytes;
        let by_units = (128 / lanes).max(1);
        let by_memory = limit.saturating_sub(fixed) / shared.max(1);
        by_units.min(by_memory).max(1)
    }

    /// Cube count of a grid-stride launch over `groups` groups.
    fn group_count(&self, groups: usize) -> CubeCount {
        CubeCount::Static(
            groups.clamp(1, self.config().max_cubes as usize) as u32,
            1,
            1,
        )
    }
}

impl<R: CubeRuntime> TensorOps for Cube<R> {
    unsafe fn tensor_cell_apply<T: Scalar>(
        &self,
        grid: Grid,
        coef: [T; 2],
        cell: &CubeBuffer<T>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
        scatter: Scatter,
    ) -> Result<()> {
        let (k, dim) = (grid.degree, grid.dim);
        let n = k + 1;
        let lanes = n.pow(dim as u32 - 1);
        let nd = n.pow(dim as u32);
        let cpc = self.blocks_per_cube::<T>(lanes, 2 * nd, 2 * n * n);
        let (counts, colour) = match scatter {
            Scatter::Atomic => (cell_counts(grid, None), 0),
            Scatter::Colour(c) => (cell_counts(grid, Some(c)), c),
        };
        let total: usize = counts.iter().product();
        if total == 0 {
            return Ok(());
        }
        let cubes = self.group_count(total.div_ceil(cpc));
        let dim3 = CubeDim::new_2d(lanes as u32, cpc as u32);
        let coef = || CoefficientsLaunch::new(scalar(coef[0]), scalar(coef[1]));
        match scatter {
            Scatter::Atomic => self.launch::<T>(("cell-atomic", k, dim, cpc), || {
                // SAFETY: blocks below `total` read and write nodes of the grid (x and y
                // hold grid.len() values); cell holds 2 n² values.
                unsafe {
                    cell_atomic_kernel::launch_unchecked::<T, R>(
                        self.client(),
                        cubes,
                        dim3,
                        cell.arg(),
                        x.arg(),
                        y.arg(),
                        coef(),
                        blocks_arg(grid, counts, colour),
                        k,
                        dim,
                        cpc,
                    )
                }
            }),
            Scatter::Colour(_) => self.launch::<T>(("cell-colour", k, dim, cpc), || {
                // SAFETY: as above.
                unsafe {
                    cell_colour_kernel::launch_unchecked::<T, R>(
                        self.client(),
                        cubes,
                        dim3,
                        cell.arg(),
                        x.arg(),
                        y.arg(),
                        coef(),
                        blocks_arg(grid, counts, colour),
                        k,
                        dim,
                        cpc,
                    )
                }
            }),
        }
    }

    fn tensor_atomic_add<T: Scalar>(&self) -> bool {
        match T::DTYPE {
            DType::F32 => true,
            DType::F64 => self.info().atomic_f64,
            _ => false,
        }
    }

    fn tensor_patch_fits<T: Scalar>(&self, grid: Grid) -> std::result::Result<(), usize> {
        let (n, m) = (2 * grid.degree + 1, 2 * grid.degree - 1);
        let bytes = (patch_shared_values(grid) + 2 * n * n + m * m + m) * std::mem::size_of::<T>();
        if bytes <= self.info().max_shared_bytes {
            Ok(())
        } else {
            Err(bytes)
        }
    }

    unsafe fn tensor_boundary<T: Scalar>(
        &self,
        grid: Grid,
        src: Option<&CubeBuffer<T>>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let total = grid.len();
        let (cubes, dim) = self.config().grid(total);
        let copy = src.is_some();
        let src = src.unwrap_or(&*y).handle().clone();
        self.launch::<T>(("boundary", grid.dim, copy), || {
            // SAFETY: g < total = grid.len() indexes src and y (both grid vectors).
            unsafe {
                boundary_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    ArrayArg::from_raw_parts(src, y.padded_len()),
                    y.arg(),
                    grid.n1(),
                    total,
                    grid.dim,
                    copy,
                )
            }
        })
    }

    unsafe fn tensor_patch_smooth<T: Scalar>(
        &self,
        grid: Grid,
        colour: usize,
        coef: [T; 2],
        patch: &CubeBuffer<T>,
        b: &CubeBuffer<T>,
        x: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (k, dim) = (grid.degree, grid.dim);
        let (n, m) = (2 * k + 1, 2 * k - 1);
        let lanes = n.pow(dim as u32 - 1);
        let fixed = 2 * n * n + m * m + m;
        let cpc = self.blocks_per_cube::<T>(lanes, patch_shared_values(grid), fixed);
        let counts: [usize; 3] = std::array::from_fn(|d| {
            if d < dim {
                (grid.cells - ((colour >> d) & 1)) / 2
            } else {
                1
            }
        });
        let total: usize = counts.iter().product();
        if total == 0 {
            return Ok(());
        }
        let cubes = self.group_count(total.div_ceil(cpc));
        self.launch::<T>(("patch", k, dim, cpc), || {
            // SAFETY: every patch below `total` reads its closure and writes its interior,
            // nodes of the grid; patch holds the documented values.
            unsafe {
                patch_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    CubeDim::new_2d(lanes as u32, cpc as u32),
                    patch.arg(),
                    b.arg(),
                    x.arg(),
                    CoefficientsLaunch::new(scalar(coef[0]), scalar(coef[1])),
                    blocks_arg(grid, counts, colour),
                    k,
                    dim,
                    cpc,
                )
            }
        })
    }

    unsafe fn tensor_line_apply<T: Scalar>(
        &self,
        ext: [usize; 3],
        dir: usize,
        rows: usize,
        width: usize,
        starts: &CubeBuffer<u32>,
        values: &CubeBuffer<T>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let inner: usize = ext[..dir].iter().product();
        let outer: usize = ext[dir + 1..].iter().product();
        let total = inner * rows * outer;
        let (cubes, dim) = self.config().grid(total);
        self.launch::<T>("line", || {
            // SAFETY: the trait's contract keeps every column inside ext[dir].
            unsafe {
                line_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    starts.arg(),
                    values.arg(),
                    x.arg(),
                    y.arg(),
                    inner,
                    ext[dir],
                    rows,
                    width,
                    total,
                )
            }
        })
    }
}
