//! Batched GEMM: one unit per output entry for small (or very large) sides; for sides
//! 9..64, chunks of A and B staged in shared memory and a register tile of up to 4 x 4
//! outputs per unit.

use cubecl::prelude::*;

use crate::backend::cube::{ceil_div, Cube, CubeRuntime};
use crate::backend::cube::{AlphaBeta, AlphaBetaLaunch};
use crate::batched::cube::stage::{groups_shape, in_flight, shared_budget, IN_FLIGHT, SMALL};
use crate::batched::{Batch, GemmParams, Op};
use crate::error::Result;
use crate::scalar::{Element, Scalar};

/// The run-time sizes of [`gemm_kernel`]: `count` products of `m x k` by `k x n`, the
/// stored row lengths of A and B.
#[derive(CubeType, CubeLaunch)]
struct GemmDims {
    count: usize,
    m: usize,
    n: usize,
    k: usize,
    a_cols: usize,
    b_cols: usize,
}

/// Comptime flags of the GEMM kernels: transposes, shared operands, `β = 0`.
#[derive_cube_comptime]
struct GemmFlags {
    trans_a: bool,
    trans_b: bool,
    /// A is one matrix shared by the batch.
    shared_a: bool,
    /// B is one matrix shared by the batch.
    shared_b: bool,
    beta_zero: bool,
}

/// One unit per output entry `(b, i, j)` (sides up to 8, or above 64).
#[cube(launch_unchecked)]
fn gemm_kernel<V: Float, T: Float>(
    a: &Array<V>,
    b: &Array<V>,
    c: &mut Array<V>,
    scaling: &AlphaBeta,
    dims: &GemmDims,
    #[comptime] flags: GemmFlags,
) {
    let (count, m, n, k) = (dims.count, dims.m, dims.n, dims.k);
    let (a_cols, b_cols) = (dims.a_cols, dims.b_cols);
    let total = count * m * n;
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let al = scaling.alpha.get::<T>();
    let mut e = ABSOLUTE_POS;
    while e < total {
        let mat = e / (m * n);
        let ij = e % (m * n);
        let i = ij / n;
        let j = ij % n;
        let mut abase = mat * m * k;
        if flags.shared_a {
            abase = 0;
        }
        let mut bbase = mat * k * n;
        if flags.shared_b {
            bbase = 0;
        }
        let mut acc = T::new(0.0);
        for l in 0..k {
            // The index is chosen at compile time and read once: reading the untransposed
            // entry first (and overwriting it) read past the last matrix of a transposed
            // operand (cubecl's launch validation, CUDA, issue 40).
            let mut ai = abase + i * a_cols + l;
            if flags.trans_a {
                ai = abase + l * a_cols + i;
            }
            let mut bi = bbase + l * b_cols + j;
            if flags.trans_b {
                bi = bbase + j * b_cols + l;
            }
            acc = fma(T::cast_from(a[ai]), T::cast_from(b[bi]), acc);
        }
        if flags.beta_zero {
            c[e] = V::cast_from(al * acc);
        } else {
            c[e] = V::cast_from(al * acc + scaling.beta.get::<T>() * T::cast_from(c[e]));
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
fn gemm_tiled_kernel<V: Float, T: Float>(
    a: &Array<V>,
    b: &Array<V>,
    c: &mut Array<V>,
    scaling: &AlphaBeta,
    count: usize,
    kc_runtime: usize,
    #[comptime] shape: GemmShape,
    #[comptime] flags: GemmFlags,
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
    let al = scaling.alpha.get::<T>();
    let groups = ceil_div(count, mats);
    let mut g = CUBE_POS;
    while g < groups {
        // Accumulators and operands in variables (a `Sequence`) rather than local arrays:
        // the GEMM numbers in docs/benchmarks.md (issue 13, fifth session) were measured
        // so, together with equal-width chunks; the two changes were not timed apart.
        let mut acc = Sequence::<T>::new();
        #[unroll]
        for _q in 0..t * t {
            acc.push(zero::<T>());
        }
        for chunk in 0..comptime![shape.k.div_ceil(shape.kc)] {
            let k0 = chunk * kc;
            // Stage the chunk of A (m x kc) and B (kc x n) of every matrix of the group, in
            // the order of global memory.
            // A's panel: columns k0.. of m x k (or rows k0.. of the stored k x m);
            // B's panel: rows k0.. of k x n (or columns k0.. of the stored n x k).
            let pa = comptime![shape.panel_a(flags.trans_a, flags.shared_a)];
            let pb = comptime![shape.panel_b(flags.trans_b, flags.shared_b)];
            stage_panel::<V, T>(a, &mut sa, g, count, k0, unit, pa);
            stage_panel::<V, T>(b, &mut sb, g, count, k0, unit, pb);
            sync_cube();
            // Not unrolled over `l`, and its trip count a run-time value so that the CUDA
            // compiler does not unroll it either: unrolled, it took 171 registers per unit
            // at n = 32 and 250 at n = 64 (one cube per SM).
            for l in 0..kc_runtime {
                let mut av = Sequence::<T>::new();
                #[unroll]
                for r in 0..t {
                    let mut row = ti + r * rt;
                    if row >= m {
                        row = m - 1;
                    }
                    av.push(sa[sa_base + row * ka + l]);
                }
                let mut bv = Sequence::<T>::new();
                #[unroll]
                for s in 0..t {
                    let mut col = tj + s * ct;
                    if col >= n {
                        col = n - 1;
                    }
                    bv.push(sb[sb_base + l * nb + col]);
                }
                #[unroll]
                for r in 0..t {
                    #[unroll]
                    for s in 0..t {
                        // Explicit FMAs: WGSL does not contract `a * b + c`.
                        *acc.index_mut(r * t + s) = fma(av[r], bv[s], acc[r * t + s]);
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
                        if flags.beta_zero {
                            c[e] = V::cast_from(al * acc[r * t + s]);
                        } else {
                            c[e] = V::cast_from(
                                al * acc[r * t + s] + scaling.beta.get::<T>() * T::cast_from(c[e]),
                            );
                        }
                    }
                }
            }
        }
        g += CUBE_COUNT;
    }
}

/// A new variable holding zero (a `let mut` in a kernel declares a variable; pushed into a
/// [`Sequence`], it is one accumulator register).
#[cube]
#[allow(unused_mut, clippy::let_and_return)] // the `let mut` is the variable
fn zero<T: Float>() -> T {
    let mut z = T::new(0.0);
    z
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
fn stage_panel<V: Float, T: Float>(
    src: &Array<V>,
    sh: &mut SharedMemory<T>,
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
        let mut tmp = Sequence::<T>::new();
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
            tmp.push(v);
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
    /// shared memory, of equal width.
    fn new(m: usize, n: usize, k: usize, elem: usize, budget: usize) -> Self {
        let t = (1..=4)
            .find(|t| m.div_ceil(*t) * n.div_ceil(*t) <= 256)
            .unwrap_or(4);
        let (rt, ct) = (m.div_ceil(t), n.div_ceil(t));
        let mats = (256 / (rt * ct)).max(1);
        let nb = n | 1;
        let per_l = mats * (m + nb) * elem;
        let widest = (budget.saturating_sub(mats * m * elem) / per_l).clamp(1, k);
        // As few chunks as fit the budget, of equal width: every chunk runs `kc` steps, so a
        // last chunk of mostly padding would cost a whole chunk (n = 48: 47 + 1 columns).
        let kc = k.div_ceil(k.div_ceil(widest));
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

/// Shared memory for the chunks of A and B of [`gemm_tiled_kernel`] (the device's limit
/// applies too): 36 KiB, a chunk of `k` at a time; 72 KiB for sides above 56, where all of
/// `k` fits at once (64 x 64: 65 KiB a cube, one barrier pair a matrix instead of two).
/// Measured on an H100 (2026-11-27, CUDA f64, `bench --suite batched`, two calls, `C = AB` /
/// `C = A0 B` with A shared): n = 64 462 / 463 µs with one chunk against 555–564 with two
/// (shared A 480–482 against 488–499). At n = 48 one chunk made `C = AB` faster (488 against
/// 629–639) but the shared-A form slower (558 against 494–497); at 56 both slower (941–946
/// against 801–808; 816 against 646–651); at 40 it changes nothing (one chunk either way).
/// Also measured and not taken: 4 or 8 loads in flight a unit instead of 2 (n = 56: 745 / 674
/// against 801, but 40: 652 / 1060 against 617; 64: 530 / 627 against 561), 2 to 4 matrices
/// a cube at 56 and 64, tiles of 3 x 3 at 27..64.
fn gemm_budget(m: usize, n: usize) -> usize {
    if m.min(n) > 56 {
        72 << 10
    } else {
        36 << 10
    }
}

/// `C = α op(A) op(B) + β C`.
///
/// # Safety
/// Shapes, counts and devices as [`gemm`](crate::batched::gemm) checks them.
pub(crate) unsafe fn gemm<R: CubeRuntime, V: Element, T: Scalar>(
    backend: &Cube<R>,
    params: &GemmParams<T>,
    a: &Batch<Cube<R>, V>,
    b: &Batch<Cube<R>, V>,
    c: &mut Batch<Cube<R>, V>,
) -> Result<()> {
    let (m, n) = (c.nrows, c.ncols);
    let k = if params.op_a == Op::None {
        a.ncols
    } else {
        a.nrows
    };
    let total = c.count * m * n;
    if total == 0 {
        return Ok(());
    }
    let flags = GemmFlags {
        trans_a: params.op_a == Op::Transpose,
        trans_b: params.op_b == Op::Transpose,
        shared_a: a.count == 1,
        shared_b: b.count == 1,
        beta_zero: params.beta == T::ZERO,
    };
    let scaling = || {
        AlphaBetaLaunch::new(
            crate::backend::cube::scalar(params.alpha),
            crate::backend::cube::scalar(params.beta),
        )
    };
    if k > 0 && m.max(n).max(k) > SMALL && m.max(n).max(k) <= GemmShape::MAX {
        let budget = gemm_budget(m, n).min(shared_budget(backend));
        let shape = GemmShape::new(m, n, k, T::DTYPE.size(), budget);
        let (count, dim) = groups_shape(c.count, shape.mats, shape.rt * shape.ct);
        debug_assert_eq!(dim.x as usize, shape.units());
        return backend.launch::<(V, T)>((shape, flags), || {
            // SAFETY: shapes and counts checked by `gemm` (A and B hold `count` or one
            // matrix of the sizes indexed); the staging loops stay below `mats` matrices of
            // the shape and the shared arrays are sized for them; rows and columns past the
            // matrix are clamped on reads and skipped on writes.
            unsafe {
                gemm_tiled_kernel::launch_unchecked::<V, T, R>(
                    backend.client(),
                    count,
                    dim,
                    a.data.arg(),
                    b.data.arg(),
                    c.data.arg(),
                    scaling(),
                    c.count,
                    shape.kc,
                    shape,
                    flags,
                )
            }
        });
    }
    let (count, dim) = backend.config().grid(total);
    backend.launch::<(V, T)>(flags, || {
        // SAFETY: shapes and counts checked by `gemm` (A and B hold `count` or one matrix of
        // the sizes indexed); every unit writes only C entries below count·m·n.
        unsafe {
            gemm_kernel::launch_unchecked::<V, T, R>(
                backend.client(),
                count,
                dim,
                a.data.arg(),
                b.data.arg(),
                c.data.arg(),
                scaling(),
                GemmDimsLaunch::new(c.count, m, n, k, a.ncols, b.ncols),
                flags,
            )
        }
    })
}
