//! Batched factorizations: LU (with and without pivoting), the one-pass Gauss–Jordan
//! inverse and Cholesky. `n <= 8`: one matrix per unit in registers (every index comptime),
//! the group moved between global and shared memory coalesced. `n > 8`: `per_cube` matrices
//! per cube, one unit per row (or per column for row swaps), the matrices in shared memory
//! with an odd row stride.
//!
//! The singularity test (see "Status" in [`crate::batched`]): step `k` fails when the pivot
//! is at most `n ε` times the scale of its original row (LU) or its original diagonal
//! (Cholesky), the same decision as the CPU's.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{scalar, Cube, CubeBuffer, CubeRuntime};
use crate::batched::cpu::singular_factor;
use crate::batched::cube::stage::{groups_shape, load_group, store_group, SMALL};
use crate::batched::{Batch, Pivoting};
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};

/// The comptime shape of a factorization kernel: side `n`, shared-memory row stride `ld`,
/// matrices per cube, and (LU) whether to pivot.
#[derive_cube_comptime]
struct FactorShape {
    n: usize,
    ld: usize,
    per_cube: usize,
    pivoting: bool,
}

/// Matrices (units) per cube of the register kernels at most.
const SMALL_PER_CUBE: usize = 64;

/// Matrices per cube of the register kernels (`n <= 8`): as many as the device's shared
/// memory holds (`n² + 1` entries of `T` and `n` pivots each), at most [`SMALL_PER_CUBE`].
fn small_per_cube<R: CubeRuntime, T: Scalar>(b: &Cube<R>, n: usize) -> Result<usize> {
    let info = b.info();
    let bytes = (n * n + 1) * T::DTYPE.size() + n * size_of::<u32>();
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
    Ok(fit.min(SMALL_PER_CUBE))
}

/// Partial pivoting at step `k` of an `n x n` matrix held in registers: finds the row
/// `p >= k` with the largest `|m[p][k]|` (the first on ties) and swaps rows `k` and `p`, and
/// their scales in `s`, through a comptime loop of selects (no dynamic index, so `m` stays
/// in registers). Returns `p`.
#[cube]
fn pivot_rows<T: Float>(
    m: &mut Array<T>,
    s: &mut Array<T>,
    #[comptime] n: usize,
    #[comptime] k: usize,
) -> usize {
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
            let tmp = s[k];
            s[k] = s[r];
            s[r] = tmp;
        }
    }
    p
}

/// `s[i] = max_j |m[i][j]|` of an `n x n` matrix in registers: the row scales of the
/// singularity test (a pivot `|d| <= n ε s` of its row counts as zero).
#[cube]
fn row_scales<T: Float>(m: &Array<T>, #[comptime] n: usize) -> Array<T> {
    let mut s = Array::<T>::new(n);
    #[unroll]
    for i in 0..n {
        let mut v = T::new(0.0);
        #[unroll]
        for j in 0..n {
            v = T::max(v, T::abs(m[i * n + j]));
        }
        s[i] = v;
    }
    s
}

/// LU of one small matrix per unit, in registers (`n <= 8`): every index is comptime; the
/// pivot row is swapped in by a comptime loop of selects rather than a dynamic index. The
/// group of `per_cube` matrices moves between global and shared memory coalesced (a unit
/// reading its own matrix from global memory touches a new line per entry).
#[cube(launch_unchecked)]
#[allow(clippy::manual_div_ceil)]
fn lu_small_kernel<V: Float, T: Float>(
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
    let groups = (count + per_cube - 1) / per_cube;
    let mut g = CUBE_POS;
    while g < groups {
        load_group::<V, T>(a, &mut sh, g, count, n * n, n * n, ld, per_cube, per_cube);
        sync_cube();
        let mut m = Array::<T>::new(comptime![n * n]);
        #[unroll]
        for t in 0..n * n {
            m[t] = sh[unit * ld + t];
        }
        let mut code = 0i32;
        let tol = singular.get::<T>();
        let mut s = row_scales::<T>(&m, n);
        #[unroll]
        for k in 0..n {
            let mut p = k.runtime();
            if comptime![pivoting] {
                p = pivot_rows::<T>(&mut m, &mut s, n, k);
            }
            piv[unit * n + k] = p as u32;
            let d = m[k * n + k];
            if T::abs(d) <= tol * s[k] {
                if code == 0 {
                    code = (k + 1) as i32;
                }
            } else {
                #[unroll]
                for i in k + 1..n {
                    let l = m[i * n + k] / d;
                    m[i * n + k] = l;
                    #[unroll]
                    for j in k + 1..n {
                        let ukj = m[k * n + j];
                        m[i * n + j] -= l * ukj;
                    }
                }
            }
        }
        #[unroll]
        for t in 0..n * n {
            sh[unit * ld + t] = m[t];
        }
        let e = g * per_cube + unit;
        if e < count {
            info[e] = code;
        }
        sync_cube();
        store_group::<V, T>(a, &sh, g, count, n * n, n * n, ld, per_cube);
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
#[allow(clippy::manual_div_ceil)]
fn inverse_small_kernel<V: Float, T: Float>(
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
    let groups = (count + per_cube - 1) / per_cube;
    let mut g = CUBE_POS;
    while g < groups {
        load_group::<V, T>(a, &mut sh, g, count, n * n, n * n, ld, per_cube, per_cube);
        sync_cube();
        let mut m = Array::<T>::new(comptime![n * n]);
        let mut perm = Array::<u32>::new(n);
        #[unroll]
        for t in 0..n * n {
            m[t] = sh[unit * ld + t];
        }
        let mut code = 0i32;
        let tol = singular.get::<T>();
        let mut s = row_scales::<T>(&m, n);
        #[unroll]
        for k in 0..n {
            let p = pivot_rows::<T>(&mut m, &mut s, n, k);
            perm[k] = p as u32;
            let d = m[k * n + k];
            if T::abs(d) <= tol * s[k] {
                if code == 0 {
                    code = (k + 1) as i32;
                }
            } else {
                // Eliminate with the multipliers `l = m[i][k] / d` and the unscaled row k
                // (the order of LU: rows below k get LU's values, so the pivots, and the
                // status, are LU's), the slot (k, k) standing for the identity's 1; then
                // row k becomes row k of the inverse-in-progress, divided by the pivot.
                m[k * n + k] = T::new(1.0);
                #[unroll]
                for i in 0..n {
                    if comptime![i != k] {
                        let l = m[i * n + k] / d;
                        m[i * n + k] = T::new(0.0);
                        #[unroll]
                        for j in 0..n {
                            let v = m[k * n + j];
                            m[i * n + j] -= l * v;
                        }
                    }
                }
                let inv = T::new(1.0) / d;
                #[unroll]
                for j in 0..n {
                    m[k * n + j] *= inv;
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
        #[unroll]
        for t in 0..n * n {
            sh[unit * ld + t] = m[t];
        }
        let e = g * per_cube + unit;
        if e < count {
            info[e] = code;
        }
        sync_cube();
        store_group::<V, T>(x, &sh, g, count, n * n, n * n, ld, per_cube);
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// Cholesky of one small matrix per unit, in registers (`n <= 8`), staged like
/// [`lu_small_kernel`].
#[cube(launch_unchecked)]
#[allow(clippy::manual_div_ceil)]
fn cholesky_small_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube) = comptime![(shape.n, shape.ld, shape.per_cube)];
    let mut sh = SharedMemory::<T>::new(per_cube * ld);
    let unit = UNIT_POS as usize;
    let groups = (count + per_cube - 1) / per_cube;
    let mut g = CUBE_POS;
    while g < groups {
        load_group::<V, T>(a, &mut sh, g, count, n * n, n * n, ld, per_cube, per_cube);
        sync_cube();
        let mut m = Array::<T>::new(comptime![n * n]);
        #[unroll]
        for t in 0..n * n {
            m[t] = sh[unit * ld + t];
        }
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
                let r = T::sqrt(d);
                m[k * n + k] = r;
                #[unroll]
                for i in k + 1..n {
                    m[i * n + k] = m[i * n + k] / r;
                }
                #[unroll]
                for i in k + 1..n {
                    #[unroll]
                    for j in k + 1..i + 1 {
                        let v = m[i * n + k] * m[j * n + k];
                        m[i * n + j] -= v;
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
        #[unroll]
        for t in 0..n * n {
            sh[unit * ld + t] = m[t];
        }
        let e = g * per_cube + unit;
        if e < count {
            info[e] = code;
        }
        sync_cube();
        store_group::<V, T>(a, &sh, g, count, n * n, n * n, ld, per_cube);
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// LU (optionally with partial pivoting) of `per_cube` matrices per cube, one unit per row.
///
/// The singularity test needs the scale of the original row that became row `k`: kept in
/// the padding column `n` of the shared rows (`ld > n`), moved with the row swaps; where the
/// matrix fills its rows exactly (`ld == n`, e.g. 64 x 64 f64 in 32 KiB), every unit tracks
/// the permutation and reads the original row from global memory instead (`a` is only
/// written back at the end).
#[cube(launch_unchecked)]
#[allow(clippy::manual_div_ceil, clippy::collapsible_if)]
fn lu_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    pivots: &mut Array<u32>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube, pivoting) =
        comptime![(shape.n, shape.ld, shape.per_cube, shape.pivoting)];
    let mut sh = SharedMemory::<T>::new(per_cube * n * ld);
    let unit = UNIT_POS as usize;
    let local = unit / n;
    let lane = unit % n;
    let base = local * n * ld;
    let tol = singular.get::<T>();
    let scale_in_shared = comptime![ld > n];
    let groups = (count + per_cube - 1) / per_cube;
    let mut g = CUBE_POS;
    while g < groups {
        let mat = g * per_cube + local;
        let valid = local < per_cube && mat < count;
        load_group::<V, T>(a, &mut sh, g, count, n * n, n, ld, per_cube, per_cube * n);
        sync_cube();
        let mut perm = Array::<u32>::new(n);
        if comptime![scale_in_shared] {
            if local < per_cube {
                let mut v = T::new(0.0);
                for j in 0..n {
                    v = T::max(v, T::abs(sh[base + lane * ld + j]));
                }
                sh[base + lane * ld + n] = v;
            }
            sync_cube();
        } else {
            for i in 0..n {
                perm[i] = i as u32;
            }
        }
        let mut code = 0i32;
        for k in 0..n {
            // Every unit of the matrix searches the pivot column itself (broadcast reads of
            // shared memory): no extra shared slot.
            let mut p = k;
            if comptime![pivoting] {
                if local < per_cube {
                    let mut best = T::abs(sh[base + k * ld + k]);
                    for i in k + 1..n {
                        let v = T::abs(sh[base + i * ld + k]);
                        if v > best {
                            best = v;
                            p = i;
                        }
                    }
                }
            }
            // Every unit has read the pivot column before any swaps it.
            sync_cube();
            if p != k && local < per_cube {
                let tmp = sh[base + k * ld + lane];
                sh[base + k * ld + lane] = sh[base + p * ld + lane];
                sh[base + p * ld + lane] = tmp;
                if comptime![scale_in_shared] {
                    if lane == 0 {
                        let tmp = sh[base + k * ld + n];
                        sh[base + k * ld + n] = sh[base + p * ld + n];
                        sh[base + p * ld + n] = tmp;
                    }
                } else {
                    let tmp = perm[k];
                    perm[k] = perm[p];
                    perm[p] = tmp;
                }
            }
            if lane == 0 && valid {
                pivots[mat * n + k] = p as u32;
            }
            sync_cube();
            let mut d = T::new(0.0);
            let mut scale = T::new(0.0);
            if local < per_cube {
                d = sh[base + k * ld + k];
                if comptime![scale_in_shared] {
                    scale = sh[base + k * ld + n];
                } else if valid {
                    let row = mat * n * n + perm[k] as usize * n;
                    for j in 0..n {
                        scale = T::max(scale, T::abs(T::cast_from(a[row + j])));
                    }
                }
            }
            if T::abs(d) <= tol * scale {
                if code == 0 {
                    code = (k + 1) as i32;
                }
            } else if lane > k && local < per_cube {
                let l = sh[base + lane * ld + k] / d;
                sh[base + lane * ld + k] = l;
                for j in k + 1..n {
                    let ukj = sh[base + k * ld + j];
                    sh[base + lane * ld + j] -= l * ukj;
                }
            }
            sync_cube();
        }
        store_group::<V, T>(a, &sh, g, count, n * n, n, ld, per_cube);
        if lane == 0 && valid {
            info[mat] = code;
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// Cholesky of `per_cube` matrices per cube (lower triangle; upper zeroed).
#[cube(launch_unchecked)]
#[allow(clippy::manual_div_ceil, clippy::collapsible_if)]
fn cholesky_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    info: &mut Array<i32>,
    singular: InputScalar,
    count: usize,
    #[comptime] shape: FactorShape,
) {
    let (n, ld, per_cube) = comptime![(shape.n, shape.ld, shape.per_cube)];
    let mut sh = SharedMemory::<T>::new(per_cube * n * ld);
    let unit = UNIT_POS as usize;
    let local = unit / n;
    let lane = unit % n;
    let base = local * n * ld;
    let groups = (count + per_cube - 1) / per_cube;
    let mut g = CUBE_POS;
    while g < groups {
        let mat = g * per_cube + local;
        let valid = local < per_cube && mat < count;
        load_group::<V, T>(a, &mut sh, g, count, n * n, n, ld, per_cube, per_cube * n);
        sync_cube();
        let mut code = 0i32;
        let tol = singular.get::<T>();
        for k in 0..n {
            let mut d = T::new(1.0);
            // The original diagonal, from global memory (written back only at the end).
            let mut diag = T::new(0.0);
            if local < per_cube {
                d = sh[base + k * ld + k];
            }
            if valid {
                diag = T::cast_from(a[mat * n * n + k * n + k]);
            }
            sync_cube();
            let ok = code == 0 && d > tol * diag;
            if !ok && code == 0 {
                code = (k + 1) as i32;
            }
            if ok && local < per_cube {
                let r = T::sqrt(d);
                if lane == k {
                    sh[base + k * ld + k] = r;
                }
                if lane > k {
                    sh[base + lane * ld + k] = sh[base + lane * ld + k] / r;
                }
            }
            sync_cube();
            if ok && local < per_cube && lane > k {
                let lik = sh[base + lane * ld + k];
                for j in k + 1..lane + 1 {
                    let ljk = sh[base + j * ld + k];
                    sh[base + lane * ld + j] -= lik * ljk;
                }
            }
            sync_cube();
        }
        if local < per_cube {
            for j in lane + 1..n {
                sh[base + lane * ld + j] = T::new(0.0);
            }
        }
        sync_cube();
        store_group::<V, T>(a, &sh, g, count, n * n, n, ld, per_cube);
        if lane == 0 && valid {
            info[mat] = code;
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// Matrices per cube and the shared-memory row stride for the shared-memory
/// factorizations, or an error when one matrix does not fit the device's shared memory.
/// The stride is odd where that fits, so that the units of one matrix (one per row)
/// reading a column hit distinct banks (a power-of-two stride serialises them).
fn per_cube<R: CubeRuntime, T: Scalar>(b: &Cube<R>, n: usize) -> Result<(usize, usize)> {
    let info = b.info();
    let size = T::DTYPE.size();
    // An odd stride above n (n + 1 or n + 2) avoids bank conflicts and leaves a padding
    // column for the row scales of the singularity test (see `lu_kernel`).
    let ld = [(n + 1) | 1, n + 1, n]
        .into_iter()
        .find(|&ld| n * ld * size <= info.max_shared_bytes)
        .unwrap_or(n);
    let bytes = n * ld * size;
    let fit = info.max_shared_bytes / bytes.max(1);
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
    Ok(((256 / n.max(1)).clamp(1, fit), ld))
}

/// The shape of a factorization of `n x n` matrices in precision `T` on this device: the
/// register kernels up to [`SMALL`], the shared-memory ones above.
fn factor_shape<R: CubeRuntime, T: Scalar>(
    b: &Cube<R>,
    n: usize,
    pivoting: bool,
) -> Result<FactorShape> {
    if n <= SMALL {
        Ok(FactorShape {
            n,
            ld: n * n + 1,
            per_cube: small_per_cube::<R, T>(b, n)?,
            pivoting,
        })
    } else {
        let (per_cube, ld) = per_cube::<R, T>(b, n)?;
        Ok(FactorShape {
            n,
            ld,
            per_cube,
            pivoting,
        })
    }
}

/// LU of every matrix in place; the pivots and status codes.
///
/// # Safety
/// `a` holds square `n x n` matrices, `n <= 64` (checked by [`lu`](crate::batched::lu)).
pub(crate) unsafe fn lu<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &mut Batch<Cube<R>, V>,
    pivoting: Pivoting,
) -> Result<(CubeBuffer<u32>, CubeBuffer<i32>)> {
    let n = a.nrows;
    let pivots = b.alloc::<u32>(a.count * n)?;
    let info = b.alloc::<i32>(a.count)?;
    if a.count == 0 || n == 0 {
        return Ok((pivots, info));
    }
    let shape = factor_shape::<R, T>(b, n, pivoting == Pivoting::Partial)?;
    let singular = scalar(singular_factor::<T>(n));
    if n <= SMALL {
        let (count, dim) = groups_shape(a.count, shape.per_cube, 1);
        b.launch::<(V, T)>(shape, || {
            // SAFETY: one matrix per unit, groups of `per_cube` below count; pivots and info
            // hold n and 1 entries per matrix; shared memory per_cube (n² + 1 + n) entries,
            // sized by small_per_cube to the device.
            unsafe {
                lu_small_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    a.data.arg(),
                    pivots.arg(),
                    info.arg(),
                    singular,
                    a.count,
                    shape,
                )
            }
        })?;
    } else {
        let (count, dim) = groups_shape(a.count, shape.per_cube, n);
        b.launch::<(V, T)>(shape, || {
            // SAFETY: the group loop stays below count matrices of n x n; pivots and info
            // hold n and 1 entries per matrix; shared memory per cube was sized by per_cube.
            unsafe {
                lu_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    a.data.arg(),
                    pivots.arg(),
                    info.arg(),
                    singular,
                    a.count,
                    shape,
                )
            }
        })?;
    }
    Ok((pivots, info))
}

/// The inverse of every matrix into `x` by the register Gauss–Jordan kernel (`n <= 8`);
/// `None` for larger matrices (then LU and solves do it).
///
/// # Safety
/// `a` holds square `n x n` matrices and `x` has `a`'s shape.
pub(crate) unsafe fn inverse<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &Batch<Cube<R>, V>,
    x: &mut Batch<Cube<R>, V>,
) -> Result<Option<CubeBuffer<i32>>> {
    let n = a.nrows;
    if n == 0 || n > SMALL {
        return Ok(None);
    }
    let info = b.alloc::<i32>(a.count)?;
    if a.count > 0 {
        let shape = factor_shape::<R, T>(b, n, true)?;
        let singular = scalar(singular_factor::<T>(n));
        let (count, dim) = groups_shape(a.count, shape.per_cube, 1);
        b.launch::<(V, T)>(shape, || {
            // SAFETY: as for the small LU kernel; `x` has the shape of `a` (the contract).
            unsafe {
                inverse_small_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    a.data.arg(),
                    x.data.arg(),
                    info.arg(),
                    singular,
                    a.count,
                    shape,
                )
            }
        })?;
    }
    Ok(Some(info))
}

/// Cholesky of every matrix in place; the status codes.
///
/// # Safety
/// As [`lu`].
pub(crate) unsafe fn cholesky<R: CubeRuntime, V: Element, T: Scalar>(
    b: &Cube<R>,
    a: &mut Batch<Cube<R>, V>,
) -> Result<CubeBuffer<i32>> {
    let n = a.nrows;
    let info = b.alloc::<i32>(a.count)?;
    if a.count == 0 || n == 0 {
        return Ok(info);
    }
    let shape = factor_shape::<R, T>(b, n, false)?;
    let singular = scalar(singular_factor::<T>(n));
    let units = if n <= SMALL { 1 } else { n };
    let (count, dim) = groups_shape(a.count, shape.per_cube, units);
    if n <= SMALL {
        b.launch::<(V, T)>(shape, || {
            // SAFETY: as for the small LU kernel.
            unsafe {
                cholesky_small_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    a.data.arg(),
                    info.arg(),
                    singular,
                    a.count,
                    shape,
                )
            }
        })?;
    } else {
        b.launch::<(V, T)>(shape, || {
            // SAFETY: as for the shared-memory LU kernel.
            unsafe {
                cholesky_kernel::launch_unchecked::<V, T, R>(
                    b.client(),
                    count,
                    dim,
                    a.data.arg(),
                    info.arg(),
                    singular,
                    a.count,
                    shape,
                )
            }
        })?;
    }
    Ok(info)
}
