//! The register kernels (`n <= 8`): one matrix per unit, every index comptime, the group
//! of matrices moved between global and shared memory coalesced: whole (`n² + 1` entries of
//! shared memory a matrix), or one row at a time (`n + 1`) where the whole group would pass
//! the device's [`shared_budget`] — on wgpu, whose multiprocessors hold a quarter of CUDA's
//! shared memory, staging whole groups cost the n = 8 factorizations 3–5x.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{ceil_div, Cube, CubeRuntime};
use crate::batched::cube::factor::newton::{div, recip, root};
use crate::batched::cube::factor::FactorShape;
use crate::batched::cube::stage::{
    fetch_part, load_part, part_bounds, put_part, shared_budget, store_part, Part,
};
use crate::error::{Error, Result};
use crate::scalar::Scalar;

/// Matrices (units) per cube of the register kernels at most.
pub(crate) const SMALL_PER_CUBE: usize = 64;

/// Matrices per cube of the register kernels (`n <= 8`), and whether they are staged row by
/// row: as many matrices as the device's shared memory holds (`n² + 1` entries of `T` and
/// `n` pivots each), at most [`SMALL_PER_CUBE`]; row by row (`n + 1` entries each, and as
/// many matrices as fit so) where the whole group would pass the device's [`shared_budget`].
pub(crate) fn small_per_cube<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    n: usize,
) -> Result<(usize, bool)> {
    let info = b.info();
    let size = T::DTYPE.size();
    let bytes = (n * n + 1) * size + n * size_of::<u32>();
    let fit = info.max_shared_bytes / bytes;
    if fit == 0 {
        return Err(Error::Unsupported {
            backend: info.to_string(),
            what: format!("batched factorization of {n} x {n} {} matrices", T::DTYPE),
            reason: format!(
                "one matrix needs {bytes} bytes of shared memory; the device has {}",
                info.max_shared_bytes
            ),
        });
    }
    let per_cube = fit.min(SMALL_PER_CUBE);
    if per_cube * bytes <= shared_budget(b) {
        return Ok((per_cube, false));
    }
    // Staged row by row, a matrix takes `n + 1` values and its pivots.
    let row_bytes = (n + 1) * size + n * size_of::<u32>();
    Ok((
        (info.max_shared_bytes / row_bytes).min(SMALL_PER_CUBE),
        true,
    ))
}

/// Loads the unit's matrix of group `g` into registers `m`, through shared memory staged
/// whole or row by row ([`FactorShape::by_rows`]: `n` pieces of a row each, instead of one).
/// Row by row, every piece's global loads are issued first (the unit's `n²` values of the
/// whole group, held in registers until their piece passes through shared memory), so the
/// group takes one memory latency instead of `n`: measured on an H100 (f64, wgpu, 2026-11-27)
/// LU 440–447 → 384–391 µs, Cholesky 290–299 → 270–274, the inverse 572–580 → 478–480 at
/// n = 8; no change at n = 4 or in f32. Leaves the unit's own `ld` entries of `sh` free for
/// it (the row scales of LU).
#[cube]
fn stage_in<V: Float, T: Float>(
    a: &Array<V>,
    sh: &mut SharedMemory<T>,
    m: &mut Array<T>,
    g: usize,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube) = comptime![(shape.n, shape.ld, shape.per_cube)];
    let unit = UNIT_POS as usize;
    if comptime![shape.by_rows] {
        let mut loaded = Array::<T>::new(comptime![n * n]);
        // Every piece has the same bounds (the whole matrices' entries).
        let bounds = part_bounds(g, count, comptime![Part::whole(n * n, n, ld, per_cube)]);
        // A unit's share of each piece: `n` values.
        let shares = comptime![(0, n)];
        #[unroll]
        for r in 0..n {
            let part = comptime![Part::piece(r, n, n * n, ld, per_cube)];
            fetch_part::<V, T>(
                a,
                &mut loaded,
                comptime![r * n],
                bounds,
                part,
                per_cube,
                shares,
            );
        }
        #[unroll]
        for r in 0..n {
            let part = comptime![Part::piece(r, n, n * n, ld, per_cube)];
            put_part::<T>(sh, &loaded, comptime![r * n], part, per_cube, shares);
            sync_cube();
            #[unroll]
            for j in 0..n {
                m[r * n + j] = sh[unit * ld + j];
            }
            // The next piece overwrites every unit's slots.
            sync_cube();
        }
    } else {
        let part = comptime![Part::whole(n * n, n * n, ld, per_cube)];
        load_part::<V, T>(a, sh, g, count, part, per_cube);
        sync_cube();
        #[unroll]
        for j in 0..comptime![n * n] {
            m[j] = sh[unit * ld + j];
        }
    }
}

/// Stores the unit's matrix `m` of group `g` into `out` through shared memory (the staging
/// of [`stage_in`]); ends with a barrier, so `sh` is free for the next group.
#[cube]
fn stage_out<V: Float, T: Float>(
    out: &mut Array<V>,
    sh: &mut SharedMemory<T>,
    m: &Array<T>,
    g: usize,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube) = comptime![(shape.n, shape.ld, shape.per_cube)];
    let pieces = comptime![if shape.by_rows { n } else { 1 }];
    let len = comptime![n * n / pieces];
    let unit = UNIT_POS as usize;
    #[unroll]
    for r in 0..pieces {
        if comptime![pieces > 1] {
            // The previous piece has been stored from every unit's slots.
            sync_cube();
        }
        // Whole: every unit is done with its own area (the row scales) before any is
        // overwritten, as each unit writes only its own.
        #[unroll]
        for j in 0..len {
            sh[unit * ld + j] = m[r * len + j];
        }
        sync_cube();
        let part = comptime![Part::piece(r, len, n * n, ld, per_cube)];
        store_part::<V, T>(out, sh, g, count, part);
    }
    sync_cube();
}

/// Partial pivoting at step `k` of an `n x n` matrix held in registers: finds the row
/// `p >= k` with the largest `|m[p][k]|` (the first on ties) and swaps rows `k` and `p`
/// through a comptime loop of selects (no dynamic index, so `m` stays in registers).
/// Returns `p`.
#[cube]
fn pivot_rows<T: Float>(m: &mut Array<T>, #[comptime] n: usize, #[comptime] k: usize) -> usize {
    let mut p = k.runtime();
    let mut best = T::abs(m[k * n + k]);
    #[unroll]
    for i in k + 1..n {
        let v = T::abs(m[i * n + k]);
        if v > best {
            best = v;
            p = i;
        }
    }
    #[unroll]
    for r in k + 1..n {
        if r == p {
            #[unroll]
            for j in 0..n {
                let tmp = m[k * n + j];
                m[k * n + j] = m[r * n + j];
                m[r * n + j] = tmp;
            }
        }
    }
    p
}

/// The row scales of the singularity test (a pivot `|d| <= 4 n ε s` of its row counts as
/// zero), `s[i] = max_j |m[i][j]|`, computed from the matrix in registers and written over
/// the first `n` entries of the unit's own staging area `sh[base..]`, which the registers
/// have made free until the factors are written back. Neither registers nor extra shared
/// memory: measured on an H100, scales in registers or in a shared array of their own cost
/// the n = 8 LU 25-30% (register pressure, and one cube less per SM).
#[cube]
fn row_scales<T: Float>(m: &Array<T>, sh: &mut SharedMemory<T>, base: usize, #[comptime] n: usize) {
    #[unroll]
    for i in 0..n {
        let mut v = T::new(0.0);
        #[unroll]
        for j in 0..n {
            v = T::max(v, T::abs(m[i * n + j]));
        }
        sh[base + i] = v;
    }
}

/// Swaps the scales of rows `k` and `p` (the row swap of pivoting).
#[cube]
fn swap_scales<T: Float>(sh: &mut SharedMemory<T>, base: usize, k: usize, p: usize) {
    if p != k {
        let tmp = sh[base + k];
        sh[base + k] = sh[base + p];
        sh[base + p] = tmp;
    }
}

/// LU of one small matrix per unit, in registers (`n <= 8`): every index is comptime; the
/// pivot row is swapped in by a comptime loop of selects rather than a dynamic index. The
/// group of `per_cube` matrices moves between global and shared memory coalesced (a unit
/// reading its own matrix from global memory touches a new line per entry).
#[cube(launch_unchecked)]
pub(crate) fn lu_small_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    pivots: &mut Array<u32>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube, pivoting) =
        comptime![(shape.n, shape.ld, shape.per_cube, shape.pivoting)];
    let mut sh = SharedMemory::<T>::new(per_cube * ld);
    let mut piv = SharedMemory::<u32>::new(per_cube * n);
    let unit = UNIT_POS as usize;
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mut m = Array::<T>::new(comptime![n * n]);
        stage_in::<V, T>(a, &mut sh, &mut m, g, count, shape);
        let mut code = 0i32;
        let tol = singular.get::<T>();
        row_scales::<T>(&m, &mut sh, unit * ld, n);
        #[unroll]
        for k in 0..n {
            let mut p = k.runtime();
            if comptime![pivoting] {
                p = pivot_rows::<T>(&mut m, n, k);
                swap_scales::<T>(&mut sh, unit * ld, k, p);
            }
            piv[unit * n + k] = p as u32;
            let d = m[k * n + k];
            // The status does not gate the elimination: the shared-memory read of the scale
            // stays off the chain of dependent arithmetic (gating on it cost the n = 8 LU
            // a quarter of its speed on an H100). Past a flagged step the factors are not
            // meaningful anyway; an exact zero is still skipped (no division by zero).
            if code == 0 && T::abs(d) <= tol * sh[unit * ld + k] {
                code = (k + 1) as i32;
            }
            if d != T::new(0.0) {
                // Explicit FMAs (WGSL does not contract `a - l * b`). The multipliers stay
                // quotients, not products with `1 / d`: an exactly repeated row must leave an
                // exact zero pivot, so that the status is the CPU's.
                let y = recip::<T>(d, comptime![shape.refine]);
                #[unroll]
                for i in k + 1..n {
                    let l = div::<T>(m[i * n + k], d, y, comptime![shape.refine]);
                    m[i * n + k] = l;
                    #[unroll]
                    for j in k + 1..n {
                        m[i * n + j] = fma(-l, m[k * n + j], m[i * n + j]);
                    }
                }
            }
        }
        let e = g * per_cube + unit;
        if e < count {
            info[e] = code;
        }
        stage_out::<V, T>(a, &mut sh, &m, g, count, shape);
        let mut t = unit;
        while t < per_cube * n {
            if g * per_cube * n + t < count * n {
                pivots[g * per_cube * n + t] = piv[t];
            }
            t += CUBE_DIM as usize;
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// Inverse (into `x`) of one small matrix per unit by Gauss-Jordan elimination with partial pivoting
/// in registers (`n <= 8`), staged like [`lu_small_kernel`]: one pass over the data instead
/// of a factorization and `n` solves. The status is LU's (the pivots are the same).
#[cube(launch_unchecked)]
pub(crate) fn inverse_small_kernel<V: Float, T: Float>(
    a: &Array<V>,
    x: &mut Array<V>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube) = comptime![(shape.n, shape.ld, shape.per_cube)];
    let mut sh = SharedMemory::<T>::new(per_cube * ld);
    let unit = UNIT_POS as usize;
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mut m = Array::<T>::new(comptime![n * n]);
        let mut perm = Array::<u32>::new(n);
        stage_in::<V, T>(a, &mut sh, &mut m, g, count, shape);
        let mut code = 0i32;
        let tol = singular.get::<T>();
        row_scales::<T>(&m, &mut sh, unit * ld, n);
        #[unroll]
        for k in 0..n {
            let p = pivot_rows::<T>(&mut m, n, k);
            swap_scales::<T>(&mut sh, unit * ld, k, p);
            perm[k] = p as u32;
            let d = m[k * n + k];
            // As in the LU kernel: the status does not gate the elimination.
            if code == 0 && T::abs(d) <= tol * sh[unit * ld + k] {
                code = (k + 1) as i32;
            }
            if d != T::new(0.0) {
                // Rows below k in LU's order (multipliers by division, the unscaled row k,
                // its slot (k, k) standing for the identity's 1): their pivots are LU's, so
                // an exactly repeated row still leaves an exact zero pivot. Then row k
                // becomes row k of the inverse-in-progress (divided by the pivot, the slot
                // holding 1 / d), and the rows above, which no later pivot reads, are
                // eliminated with it (one multiplication each instead of a division).
                m[k * n + k] = T::new(1.0);
                let inv = recip::<T>(d, comptime![shape.refine]);
                #[unroll]
                for i in k + 1..n {
                    let l = div::<T>(m[i * n + k], d, inv, comptime![shape.refine]);
                    m[i * n + k] = T::new(0.0);
                    #[unroll]
                    for j in 0..n {
                        m[i * n + j] = fma(-l, m[k * n + j], m[i * n + j]);
                    }
                }
                #[unroll]
                for j in 0..n {
                    m[k * n + j] *= inv;
                }
                #[unroll]
                for i in 0..k {
                    let f = m[i * n + k];
                    m[i * n + k] = T::new(0.0);
                    #[unroll]
                    for j in 0..n {
                        m[i * n + j] = fma(-f, m[k * n + j], m[i * n + j]);
                    }
                }
            }
        }
        // Undo the row interchanges on the columns, last first.
        #[unroll]
        for kk in 0..n {
            let k = comptime![n - 1 - kk];
            let p = perm[k] as usize;
            #[unroll]
            for c in k + 1..n {
                if c == p {
                    #[unroll]
                    for i in 0..n {
                        let tmp = m[i * n + k];
                        m[i * n + k] = m[i * n + c];
                        m[i * n + c] = tmp;
                    }
                }
            }
        }
        let e = g * per_cube + unit;
        if e < count {
            info[e] = code;
        }
        stage_out::<V, T>(x, &mut sh, &m, g, count, shape);
        g += CUBE_COUNT;
    }
}

/// Cholesky of one small matrix per unit, in registers (`n <= 8`), staged like
/// [`lu_small_kernel`].
#[cube(launch_unchecked)]
pub(crate) fn cholesky_small_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube) = comptime![(shape.n, shape.ld, shape.per_cube)];
    let mut sh = SharedMemory::<T>::new(per_cube * ld);
    let unit = UNIT_POS as usize;
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mut m = Array::<T>::new(comptime![n * n]);
        stage_in::<V, T>(a, &mut sh, &mut m, g, count, shape);
        let mut code = 0i32;
        let tol = singular.get::<T>();
        let mut diag = Array::<T>::new(n);
        #[unroll]
        for k in 0..n {
            diag[k] = m[k * n + k];
        }
        #[unroll]
        for k in 0..n {
            let d = m[k * n + k];
            if code == 0 && d > tol * diag[k] {
                // One division per column: measured on an H100, the wgpu (Vulkan) kernel
                // spends its time in f64 divisions.
                let r = root::<T>(d, comptime![shape.refine]);
                let inv = r.inv;
                m[k * n + k] = r.root;
                #[unroll]
                for i in k + 1..n {
                    m[i * n + k] = m[i * n + k] * inv;
                }
                #[unroll]
                for i in k + 1..n {
                    #[unroll]
                    for j in k + 1..i + 1 {
                        m[i * n + j] = fma(-m[i * n + k], m[j * n + k], m[i * n + j]);
                    }
                }
            } else if code == 0 {
                code = (k + 1) as i32;
            }
        }
        #[unroll]
        for i in 0..n {
            #[unroll]
            for j in i + 1..n {
                m[i * n + j] = T::new(0.0);
            }
        }
        let e = g * per_cube + unit;
        if e < count {
            info[e] = code;
        }
        stage_out::<V, T>(a, &mut sh, &m, g, count, shape);
        g += CUBE_COUNT;
    }
}
