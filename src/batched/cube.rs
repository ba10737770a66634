//! CubeCL kernels of the batched dense operations.
//!
//! - GEMM, sides up to 8 (or above 64): one unit per output entry `(b, i, j)`; consecutive
//!   units take consecutive `j`, so a warp reads one row of `A` (broadcast) and consecutive
//!   entries of `B` (coalesced), every matrix reused through the cache. Sides 9..64:
//!   chunks of A and B staged in shared memory, a register tile of up to 4 x 4 outputs per
//!   unit.
//! - Factorizations, n <= 8: one matrix per unit in registers (every index comptime), the
//!   group moved between global and shared memory coalesced. n > 8: `per_cube` matrices per
//!   cube, one unit per row (or per column for row swaps), the matrices in shared memory
//!   with an odd row stride.
//! - Triangular solves (one kernel for LU, Cholesky and plain triangles): one unit per
//!   right-hand-side column, the column kept in a local array in `T`, the factors read
//!   through the cache.

use cubecl::prelude::*;

use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::backend::BackendCore;
use crate::batched::{Batch, BatchedOps, Diagonal, Op, Triangle};
use crate::error::{Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::cube::{grid, scalar};

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn gemm_kernel<V: Float, T: Float>(
    a: &Array<V>,
    b: &Array<V>,
    c: &mut Array<V>,
    alpha: InputScalar,
    beta: InputScalar,
    count: usize,
    m: usize,
    n: usize,
    k: usize,
    a_cols: usize,
    b_cols: usize,
    #[comptime] trans_a: bool,
    #[comptime] trans_b: bool,
    #[comptime] shared_a: bool,
    #[comptime] shared_b: bool,
    #[comptime] beta_zero: bool,
) {
    let total = count * m * n;
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let al = alpha.get::<T>();
    let mut e = ABSOLUTE_POS;
    while e < total {
        let mat = e / (m * n);
        let ij = e % (m * n);
        let i = ij / n;
        let j = ij % n;
        let mut abase = mat * m * k;
        if comptime![shared_a] {
            abase = 0;
        }
        let mut bbase = mat * k * n;
        if comptime![shared_b] {
            bbase = 0;
        }
        let mut acc = T::new(0.0);
        for l in 0..k {
            let mut av = a[abase + i * a_cols + l];
            if comptime![trans_a] {
                av = a[abase + l * a_cols + i];
            }
            let mut bv = b[bbase + l * b_cols + j];
            if comptime![trans_b] {
                bv = b[bbase + j * b_cols + l];
            }
            acc += T::cast_from(av) * T::cast_from(bv);
        }
        if comptime![beta_zero] {
            c[e] = V::cast_from(al * acc);
        } else {
            c[e] = V::cast_from(al * acc + beta.get::<T>() * T::cast_from(c[e]));
        }
        e += stride;
    }
}

/// GEMM for `m, n, k <= 64` through shared memory: `mats` matrices per cube, `rt x ct`
/// units per matrix, each computing a `t x t` tile of C (rows `ti + r rt`, columns
/// `tj + s ct`, so a warp's loads and stores stay contiguous), A and B staged in chunks of
/// `kc` columns of A / rows of B with coalesced loads. Shared rows are `ka = kc | 1` and
/// `nb = n | 1` apart (odd strides: the transposed loads do not hit one bank).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments, clippy::manual_div_ceil)]
fn gemm_tiled_kernel<V: Float, T: Float>(
    a: &Array<V>,
    b: &Array<V>,
    c: &mut Array<V>,
    alpha: InputScalar,
    beta: InputScalar,
    count: usize,
    kc_runtime: usize,
    #[comptime] shape: GemmShape,
    #[comptime] trans_a: bool,
    #[comptime] trans_b: bool,
    #[comptime] shared_a: bool,
    #[comptime] shared_b: bool,
    #[comptime] beta_zero: bool,
) {
    let m = shape.m;
    let n = shape.n;
    let kc = shape.kc;
    let ka = shape.ka;
    let nb = shape.nb;
    let t = shape.t;
    let rt = shape.rt;
    let ct = shape.ct;
    let mats = shape.mats;
    let per = comptime![shape.rt * shape.ct];
    let mut sa = SharedMemory::<T>::new(comptime![shape.mats * shape.m * shape.ka]);
    let mut sb = SharedMemory::<T>::new(comptime![shape.mats * shape.kc * shape.nb]);
    let unit = UNIT_POS as usize;
    let local = unit / per;
    let u = unit % per;
    let ti = u / ct;
    let tj = u % ct;
    let sa_base = local * comptime![shape.m * shape.ka];
    let sb_base = local * comptime![shape.kc * shape.nb];
    let al = alpha.get::<T>();
    let groups = (count + mats - 1) / mats;
    let mut tmp = Array::<T>::new(IN_FLIGHT);
    let mut g = CUBE_POS;
    while g < groups {
        let mut acc = Array::<T>::new(comptime![shape.t * shape.t]);
        #[unroll]
        for q in 0..t * t {
            acc[q] = T::new(0.0);
        }
        for chunk in 0..comptime![(shape.k + shape.kc - 1) / shape.kc] {
            let k0 = chunk * kc;
            // Stage the chunk of A (m x kc) and B (kc x n) of every matrix of the group, in
            // the order of global memory.
            // A's panel: columns k0.. of m x k (or rows k0.. of the stored k x m);
            // B's panel: rows k0.. of k x n (or columns k0.. of the stored n x k).
            let pa = comptime![shape.panel_a(trans_a, shared_a)];
            let pb = comptime![shape.panel_b(trans_b, shared_b)];
            stage_panel::<V, T>(a, &mut sa, &mut tmp, g, count, k0, unit, pa);
            stage_panel::<V, T>(b, &mut sb, &mut tmp, g, count, k0, unit, pb);
            sync_cube();
            let mut av = Array::<T>::new(comptime![shape.t]);
            let mut bv = Array::<T>::new(comptime![shape.t]);
            // Not unrolled over `l`, and its trip count a run-time value so that the CUDA
            // compiler does not unroll it either: unrolled, it took 171 registers per unit
            // at n = 32 and 250 at n = 64 (one cube per SM).
            for l in 0..kc_runtime {
                #[unroll]
                for r in 0..t {
                    let mut row = ti + r * rt;
                    if row >= m {
                        row = m - 1;
                    }
                    av[r] = sa[sa_base + row * ka + l];
                }
                #[unroll]
                for s in 0..t {
                    let mut col = tj + s * ct;
                    if col >= n {
                        col = n - 1;
                    }
                    bv[s] = sb[sb_base + l * nb + col];
                }
                #[unroll]
                for r in 0..t {
                    #[unroll]
                    for s in 0..t {
                        acc[r * t + s] += av[r] * bv[s];
                    }
                }
            }
            sync_cube();
        }
        let mat = g * mats + local;
        if mat < count {
            #[unroll]
            for r in 0..t {
                #[unroll]
                for s in 0..t {
                    let i = ti + r * rt;
                    let j = tj + s * ct;
                    if i < m && j < n {
                        let e = mat * m * n + i * n + j;
                        if comptime![beta_zero] {
                            c[e] = V::cast_from(al * acc[r * t + s]);
                        } else {
                            c[e] = V::cast_from(
                                al * acc[r * t + s] + beta.get::<T>() * T::cast_from(c[e]),
                            );
                        }
                    }
                }
            }
        }
        g += CUBE_COUNT;
    }
}

/// A `kc`-wide panel of one GEMM operand, as stored in global memory (`rows x cols`,
/// row-major, `chunk_cols`: the panel is columns `k0..k0 + kc`, else rows), to be written to
/// shared memory as is or transposed, with rows `ld` apart and `stride` per matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Panel {
    rows: usize,
    cols: usize,
    chunk_cols: bool,
    kc: usize,
    transpose: bool,
    ld: usize,
    stride: usize,
    mats: usize,
    units: usize,
    shared: bool,
    in_flight: usize,
}

/// Stages a [`Panel`] of the matrices of group `g` in shared memory: coalesced reads in the
/// order of global memory, a few in flight per unit; entries past the chunked side or past
/// `count` matrices are zeros.
#[cube]
#[allow(clippy::too_many_arguments)]
fn stage_panel<V: Float, T: Float>(
    src: &Array<V>,
    sh: &mut SharedMemory<T>,
    tmp: &mut Array<T>,
    g: usize,
    count: usize,
    k0: usize,
    unit: usize,
    #[comptime] p: Panel,
) {
    let wr = comptime![if p.chunk_cols { p.rows } else { p.kc }];
    let wc = comptime![if p.chunk_cols { p.kc } else { p.cols }];
    let len = comptime![
        p.mats
            * (if p.chunk_cols {
                p.rows * p.kc
            } else {
                p.kc * p.cols
            })
    ];
    let slots = comptime![in_flight(len, p.units).min(p.in_flight)];
    #[unroll]
    for batch in 0..comptime![len.div_ceil(p.units).div_ceil(slots)] {
        #[unroll]
        for it in 0..slots {
            let q = unit + comptime![(batch * slots + it) * p.units];
            let lm = q / comptime![wr * wc];
            let wi = (q % comptime![wr * wc]) / wc;
            let wj = q % wc;
            let mat = g * p.mats + lm;
            let mut base = mat * comptime![p.rows * p.cols];
            if comptime![p.shared] {
                base = 0;
            }
            let mut row = wi + k0;
            let mut col = wj;
            let mut along = row;
            if comptime![p.chunk_cols] {
                row = wi;
                col = wj + k0;
                along = col;
            }
            let mut v = T::new(0.0);
            if q < len
                && mat < count
                && along < comptime![if p.chunk_cols { p.cols } else { p.rows }]
            {
                v = T::cast_from(src[base + row * p.cols + col]);
            }
            tmp[it] = v;
        }
        #[unroll]
        for it in 0..slots {
            let q = unit + comptime![(batch * slots + it) * p.units];
            let lm = q / comptime![wr * wc];
            let wi = (q % comptime![wr * wc]) / wc;
            let wj = q % wc;
            let mut at = wi * p.ld + wj;
            if comptime![p.transpose] {
                at = wj * p.ld + wi;
            }
            if q < len {
                sh[lm * p.stride + at] = tmp[it];
            }
        }
    }
}

/// The comptime shape of [`gemm_tiled_kernel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct GemmShape {
    m: usize,
    n: usize,
    k: usize,
    kc: usize,
    ka: usize,
    nb: usize,
    t: usize,
    rt: usize,
    ct: usize,
    mats: usize,
}

impl GemmShape {
    /// The largest side the tiled kernel takes.
    const MAX: usize = 64;

    /// Tiles of `t x t` outputs per unit with at most 256 units per matrix, as many
    /// matrices per cube as fill 256 units, and chunks of `k` within `budget` bytes of
    /// shared memory.
    fn new(m: usize, n: usize, k: usize, elem: usize, budget: usize) -> Self {
        let t = (1..=4)
            .find(|t| m.div_ceil(*t) * n.div_ceil(*t) <= 256)
            .unwrap_or(4);
        let (rt, ct) = (m.div_ceil(t), n.div_ceil(t));
        let mats = (256 / (rt * ct)).max(1);
        let nb = n | 1;
        let per_l = mats * (m + nb) * elem;
        let kc = (budget.saturating_sub(mats * m * elem) / per_l).clamp(1, k);
        GemmShape {
            m,
            n,
            k,
            kc,
            ka: kc | 1,
            nb,
            t,
            rt,
            ct,
            mats,
        }
    }

    fn units(&self) -> usize {
        self.mats * self.rt * self.ct
    }

    /// A's panel: `m x kc` in shared memory, rows `ka` apart.
    fn panel_a(&self, trans: bool, shared: bool) -> Panel {
        let (rows, cols) = if trans {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        };
        Panel {
            rows,
            cols,
            chunk_cols: !trans,
            kc: self.kc,
            transpose: trans,
            ld: self.ka,
            stride: self.m * self.ka,
            mats: self.mats,
            units: self.units(),
            shared,
            // Fewer loads in flight with the large register tiles (registers).
            in_flight: if self.t >= 3 { 2 } else { IN_FLIGHT },
        }
    }

    /// B's panel: `kc x n` in shared memory, rows `nb` apart.
    fn panel_b(&self, trans: bool, shared: bool) -> Panel {
        let (rows, cols) = if trans {
            (self.n, self.k)
        } else {
            (self.k, self.n)
        };
        Panel {
            rows,
            cols,
            chunk_cols: trans,
            kc: self.kc,
            transpose: trans,
            ld: self.nb,
            stride: self.kc * self.nb,
            mats: self.mats,
            units: self.units(),
            shared,
            // Fewer loads in flight with the large register tiles (registers).
            in_flight: if self.t >= 3 { 2 } else { IN_FLIGHT },
        }
    }
}

/// Loads the matrices (`size` entries each) of group `g` into shared memory, coalesced over
/// the whole group, with rows of `n` entries `ld >= n` apart in shared memory: an odd `ld`
/// keeps units reading one column (or one matrix each, with `n = size`) on distinct banks.
/// `units` is the cube size. The loads of a unit are issued [`IN_FLIGHT`] at a time before
/// their stores to shared memory, so their latencies overlap instead of adding up.
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_group<V: Float, T: Float>(
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
const IN_FLIGHT: usize = 8;

/// Loads in flight per unit for `len` entries over `units` units: [`IN_FLIGHT`], or fewer
/// when the unit has fewer to load.
const fn in_flight(len: usize, units: usize) -> usize {
    let per_unit = len.div_ceil(units);
    if per_unit < IN_FLIGHT {
        per_unit
    } else {
        IN_FLIGHT
    }
}

/// Stores the matrices of group `g` from shared memory (the layout of [`load_group`]).
#[cube]
fn store_group<V: Float, T: Float>(
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

/// Matrices up to this size are factored one per unit, entirely in registers.
const SMALL: usize = 8;

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
    count: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
    #[comptime] pivoting: bool,
) {
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
        #[unroll]
        for k in 0..n {
            let mut p = k.runtime();
            if comptime![pivoting] {
                p = pivot_rows::<T>(&mut m, n, k);
            }
            piv[unit * n + k] = p as u32;
            let d = m[k * n + k];
            if d == T::new(0.0) {
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
    count: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
) {
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
        #[unroll]
        for k in 0..n {
            let p = pivot_rows::<T>(&mut m, n, k);
            perm[k] = p as u32;
            let d = m[k * n + k];
            if d == T::new(0.0) {
                if code == 0 {
                    code = (k + 1) as i32;
                }
            } else {
                // Row k becomes row k of the inverse-in-progress: divide by the pivot, the
                // pivot's own slot holding 1 / d.
                let inv = T::new(1.0) / d;
                m[k * n + k] = T::new(1.0);
                #[unroll]
                for j in 0..n {
                    m[k * n + j] *= inv;
                }
                #[unroll]
                for i in 0..n {
                    if comptime![i != k] {
                        let f = m[i * n + k];
                        m[i * n + k] = T::new(0.0);
                        #[unroll]
                        for j in 0..n {
                            let v = m[k * n + j];
                            m[i * n + j] -= f * v;
                        }
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
    count: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
) {
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
        #[unroll]
        for k in 0..n {
            let d = m[k * n + k];
            if code == 0 && d > T::new(0.0) {
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

/// LU (optionally with partial pivoting) of `per_cube` matrices per cube.
#[cube(launch_unchecked)]
#[allow(clippy::manual_div_ceil, clippy::collapsible_if)]
fn lu_kernel<V: Float, T: Float>(
    a: &mut Array<V>,
    pivots: &mut Array<u32>,
    info: &mut Array<i32>,
    count: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
    #[comptime] pivoting: bool,
) {
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
        for k in 0..n {
            // Every unit of the matrix searches the pivot column itself (broadcast reads of
            // shared memory): no extra shared slot, so a 64 x 64 f64 matrix fits in 32 KiB.
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
            }
            if lane == 0 && valid {
                pivots[mat * n + k] = p as u32;
            }
            sync_cube();
            let mut d = T::new(0.0);
            if local < per_cube {
                d = sh[base + k * ld + k];
            }
            if d == T::new(0.0) {
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
    count: usize,
    #[comptime] n: usize,
    #[comptime] ld: usize,
    #[comptime] per_cube: usize,
) {
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
        for k in 0..n {
            let mut d = T::new(1.0);
            if local < per_cube {
                d = sh[base + k * ld + k];
            }
            sync_cube();
            let ok = code == 0 && d > T::new(0.0);
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

/// The steps of a batched triangular solve (comptime): the right-hand side (`identity`: the
/// identity, else read from `b`), the row interchanges of an LU, a forward sweep with the
/// lower triangle and a backward sweep with the upper triangle (or, `transposed`, with the
/// transpose of the lower one: Cholesky's `Lᵀ`), each with a unit or the stored diagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Sweeps {
    identity: bool,
    pivots: bool,
    forward: bool,
    forward_unit: bool,
    backward: bool,
    backward_unit: bool,
    transposed: bool,
    /// Every loop unrolled (the column in registers; for small `n`).
    unroll: bool,
}

/// Sides up to which the triangular solves are unrolled, the column in registers.
const UNROLL_SOLVE: usize = 32;

/// Triangular solves for one right-hand-side column per unit, the column kept in a local
/// array of `T`, the factors read through the cache.
#[cube(launch_unchecked)]
fn solve_kernel<V: Float, T: Float>(
    f: &Array<V>,
    pivots: &Array<u32>,
    b: &mut Array<V>,
    count: usize,
    nrhs: usize,
    #[comptime] n: usize,
    #[comptime] sw: Sweeps,
) {
    let total = count * nrhs;
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut e = ABSOLUTE_POS;
    while e < total {
        let mat = e / nrhs;
        let c = e % nrhs;
        let fb = mat * n * n;
        let bb = mat * n * nrhs;
        let mut x = Array::<T>::new(n);
        #[unroll(sw.unroll)]
        for i in 0..n {
            if comptime![sw.identity] {
                x[i] = T::new(0.0);
                if i == c {
                    x[i] = T::new(1.0);
                }
            } else {
                x[i] = T::cast_from(b[bb + i * nrhs + c]);
            }
        }
        if comptime![sw.pivots] {
            #[unroll(sw.unroll)]
            for k in 0..n {
                let p = pivots[mat * n + k] as usize;
                if comptime![sw.unroll] {
                    // Constant indices only, so that `x` stays in registers.
                    #[unroll]
                    for r in 0..n {
                        if r == p && r != k {
                            let tmp = x[k];
                            x[k] = x[r];
                            x[r] = tmp;
                        }
                    }
                } else if p != k {
                    let tmp = x[k];
                    x[k] = x[p];
                    x[p] = tmp;
                }
            }
        }
        if comptime![sw.forward] {
            #[unroll(sw.unroll)]
            for i in 0..n {
                let mut s = x[i];
                #[unroll(sw.unroll)]
                for k in 0..i {
                    s -= T::cast_from(f[fb + i * n + k]) * x[k];
                }
                if !comptime![sw.forward_unit] {
                    s /= T::cast_from(f[fb + i * n + i]);
                }
                x[i] = s;
            }
        }
        if comptime![sw.backward] {
            #[unroll(sw.unroll)]
            for ii in 0..n {
                let i = n - 1 - ii;
                let mut s = x[i];
                // k = n - 1 - kk runs over i + 1..n (from the end): a loop from 0, which
                // unrolls (an unrolled loop needs a constant start).
                #[unroll(sw.unroll)]
                for kk in 0..ii {
                    let k = n - 1 - kk;
                    let mut fik = T::cast_from(f[fb + i * n + k]);
                    if comptime![sw.transposed] {
                        fik = T::cast_from(f[fb + k * n + i]);
                    }
                    s -= fik * x[k];
                }
                if !comptime![sw.backward_unit] {
                    s /= T::cast_from(f[fb + i * n + i]);
                }
                x[i] = s;
            }
        }
        #[unroll(sw.unroll)]
        for i in 0..n {
            b[bb + i * nrhs + c] = V::cast_from(x[i]);
        }
        e += stride;
    }
}

/// Matrices per cube and the shared-memory row stride for the shared-memory
/// factorizations, or an error when one matrix does not fit the device's shared memory.
/// The stride is odd where that fits, so that the units of one matrix (one per row)
/// reading a column hit distinct banks (a power-of-two stride serialises them).
fn per_cube<R: CubeRuntime, T: Scalar>(b: &Cube<R>, n: usize) -> Result<(usize, usize)> {
    let info = b.info();
    let size = T::DTYPE.size();
    let ld = if n * (n | 1) * size <= info.max_shared_bytes {
        n | 1
    } else {
        n
    };
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

fn groups_shape(count: usize, per_cube: usize, n: usize) -> (CubeCount, CubeDim) {
    let groups = count.div_ceil(per_cube).clamp(1, 65535);
    (
        CubeCount::Static(groups as u32, 1, 1),
        CubeDim::new_1d((per_cube * n) as u32),
    )
}

impl<R: CubeRuntime> BatchedOps for Cube<R> {
    fn batch_gemm<V: Element, T: Scalar>(
        &self,
        alpha: T,
        a: &Batch<Self, V>,
        op_a: Op,
        b: &Batch<Self, V>,
        op_b: Op,
        beta: T,
        c: &mut Batch<Self, V>,
    ) -> Result<()> {
        let (m, n) = (c.rows, c.cols);
        let k = if op_a == Op::None { a.cols } else { a.rows };
        let total = c.count * m * n;
        if total == 0 {
            return Ok(());
        }
        if k > 0 && m.max(n).max(k) > SMALL && m.max(n).max(k) <= GemmShape::MAX {
            let budget = (36 << 10).min(self.info().max_shared_bytes);
            let shape = GemmShape::new(m, n, k, T::DTYPE.size(), budget);
            let (count, dim) = groups_shape(c.count, shape.mats, shape.rt * shape.ct);
            debug_assert_eq!(dim.x as usize, shape.units());
            // SAFETY: as below; the staging loops stay below `mats` matrices of the shape
            // and the shared arrays are sized for them; rows and columns past the matrix
            // are clamped on reads and skipped on writes.
            unsafe {
                gemm_tiled_kernel::launch_unchecked::<V, T, R>(
                    self.client(),
                    count,
                    dim,
                    a.data.arg(),
                    b.data.arg(),
                    c.data.arg(),
                    scalar(alpha),
                    scalar(beta),
                    c.count,
                    shape.kc,
                    shape,
                    op_a == Op::Transpose,
                    op_b == Op::Transpose,
                    a.count == 1,
                    b.count == 1,
                    beta == T::ZERO,
                )
            }
            return Ok(());
        }
        let (count, dim) = grid(self, total);
        // SAFETY: shapes and counts checked by `gemm` (A and B hold `count` or one matrix of
        // the sizes indexed); every unit writes only C entries below count·m·n.
        unsafe {
            gemm_kernel::launch_unchecked::<V, T, R>(
                self.client(),
                count,
                dim,
                a.data.arg(),
                b.data.arg(),
                c.data.arg(),
                scalar(alpha),
                scalar(beta),
                c.count,
                m,
                n,
                k,
                a.cols,
                b.cols,
                op_a == Op::Transpose,
                op_b == Op::Transpose,
                a.count == 1,
                b.count == 1,
                beta == T::ZERO,
            )
        }
        Ok(())
    }

    fn batch_lu<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
        pivoting: bool,
    ) -> Result<(CubeBuffer<u32>, CubeBuffer<i32>)> {
        let n = a.rows;
        let pivots = self.alloc::<u32>(a.count * n)?;
        let info = self.alloc::<i32>(a.count)?;
        if a.count > 0 && n > 0 && n <= SMALL {
            let per = small_per_cube::<R, T>(self, n)?;
            let (count, dim) = groups_shape(a.count, per, 1);
            // SAFETY: one matrix per unit, groups of `per` below count; pivots and info
            // hold n and 1 entries per matrix; shared memory per(n² + 1 + n) entries.
            unsafe {
                lu_small_kernel::launch_unchecked::<V, T, R>(
                    self.client(),
                    count,
                    dim,
                    a.data.arg(),
                    pivots.arg(),
                    info.arg(),
                    a.count,
                    n,
                    n * n + 1,
                    per,
                    pivoting,
                )
            }
        } else if a.count > 0 && n > 0 {
            let (per, ld) = per_cube::<R, T>(self, n)?;
            let (count, dim) = groups_shape(a.count, per, n);
            // SAFETY: the group loop stays below count matrices of n x n; pivots and info
            // hold n and 1 entries per matrix; shared memory per cube was checked above.
            unsafe {
                lu_kernel::launch_unchecked::<V, T, R>(
                    self.client(),
                    count,
                    dim,
                    a.data.arg(),
                    pivots.arg(),
                    info.arg(),
                    a.count,
                    n,
                    ld,
                    per,
                    pivoting,
                )
            }
        }
        Ok((pivots, info))
    }

    fn batch_inverse<V: Element, T: Scalar>(
        &self,
        a: &Batch<Self, V>,
        x: &mut Batch<Self, V>,
    ) -> Result<Option<CubeBuffer<i32>>> {
        let n = a.rows;
        if n == 0 || n > SMALL {
            return Ok(None);
        }
        crate::error::check_len("inverse", "x count", a.count, x.count)?;
        crate::error::check_len("inverse", "x rows", n, x.rows)?;
        crate::error::check_len("inverse", "x cols", n, x.cols)?;
        let info = self.alloc::<i32>(a.count)?;
        if a.count > 0 {
            let per = small_per_cube::<R, T>(self, n)?;
            let (count, dim) = groups_shape(a.count, per, 1);
            // SAFETY: as for the small LU kernel; `x` is checked to have the shape of `a`.
            unsafe {
                inverse_small_kernel::launch_unchecked::<V, T, R>(
                    self.client(),
                    count,
                    dim,
                    a.data.arg(),
                    x.data.arg(),
                    info.arg(),
                    a.count,
                    n,
                    n * n + 1,
                    per,
                )
            }
        }
        Ok(Some(info))
    }

    fn batch_lu_solve<V: Element, T: Scalar>(
        &self,
        lu: &Batch<Self, V>,
        pivots: &CubeBuffer<u32>,
        b: &mut Batch<Self, V>,
        identity: bool,
    ) -> Result<()> {
        let sweeps = Sweeps {
            identity,
            pivots: true,
            forward: true,
            forward_unit: true,
            backward: true,
            backward_unit: false,
            transposed: false,
            unroll: false, // set by `solve`
        };
        solve::<R, V, T>(self, lu, pivots, b, sweeps)
    }

    fn batch_cholesky<V: Element, T: Scalar>(
        &self,
        a: &mut Batch<Self, V>,
    ) -> Result<CubeBuffer<i32>> {
        let n = a.rows;
        let info = self.alloc::<i32>(a.count)?;
        if a.count > 0 && n > 0 && n <= SMALL {
            let per = small_per_cube::<R, T>(self, n)?;
            let (count, dim) = groups_shape(a.count, per, 1);
            // SAFETY: as for the small LU kernel.
            unsafe {
                cholesky_small_kernel::launch_unchecked::<V, T, R>(
                    self.client(),
                    count,
                    dim,
                    a.data.arg(),
                    info.arg(),
                    a.count,
                    n,
                    n * n + 1,
                    per,
                )
            }
        } else if a.count > 0 && n > 0 {
            let (per, ld) = per_cube::<R, T>(self, n)?;
            let (count, dim) = groups_shape(a.count, per, n);
            // SAFETY: as for the LU kernel.
            unsafe {
                cholesky_kernel::launch_unchecked::<V, T, R>(
                    self.client(),
                    count,
                    dim,
                    a.data.arg(),
                    info.arg(),
                    a.count,
                    n,
                    ld,
                    per,
                )
            }
        }
        Ok(info)
    }

    fn batch_triangular_solve<V: Element, T: Scalar>(
        &self,
        t: &Batch<Self, V>,
        triangle: Triangle,
        diagonal: Diagonal,
        b: &mut Batch<Self, V>,
    ) -> Result<()> {
        let lower = triangle == Triangle::Lower;
        let unit = diagonal == Diagonal::Unit;
        let sweeps = Sweeps {
            identity: false,
            pivots: false,
            forward: lower,
            forward_unit: unit,
            backward: !lower,
            backward_unit: unit,
            transposed: false,
            unroll: false, // set by `solve`
        };
        let none = self.alloc::<u32>(1)?;
        solve::<R, V, T>(self, t, &none, b, sweeps)
    }

    fn batch_cholesky_solve<V: Element, T: Scalar>(
        &self,
        l: &Batch<Self, V>,
        b: &mut Batch<Self, V>,
        identity: bool,
    ) -> Result<()> {
        let sweeps = Sweeps {
            identity,
            pivots: false,
            forward: true,
            forward_unit: false,
            backward: true,
            backward_unit: false,
            transposed: true,
            unroll: false, // set by `solve`
        };
        let none = self.alloc::<u32>(1)?;
        solve::<R, V, T>(self, l, &none, b, sweeps)
    }
}

fn solve<R: CubeRuntime, V: Element, T: Scalar>(
    backend: &Cube<R>,
    f: &Batch<Cube<R>, V>,
    pivots: &CubeBuffer<u32>,
    b: &mut Batch<Cube<R>, V>,
    sweeps: Sweeps,
) -> Result<()> {
    let (n, nrhs) = (f.rows, b.cols);
    let total = b.count * nrhs;
    if total == 0 || n == 0 {
        return Ok(());
    }
    let sweeps = Sweeps {
        unroll: n <= UNROLL_SOLVE,
        ..sweeps
    };
    let (count, dim) = grid(backend, total);
    // SAFETY: counts and row counts checked by the public functions; factors hold n x n,
    // pivots n per matrix (read only with `sweeps.pivots`), b n x nrhs per matrix; every
    // unit works on its own column below count · nrhs.
    unsafe {
        solve_kernel::launch_unchecked::<V, T, R>(
            backend.client(),
            count,
            dim,
            f.data.arg(),
            pivots.arg(),
            b.data.arg(),
            b.count,
            nrhs,
            n,
            sweeps,
        )
    }
    Ok(())
}
