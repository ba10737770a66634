//! Batched triangular solves: one kernel for LU, Cholesky and plain triangles, one unit per
//! right-hand-side column, the column kept in `T` (in registers where the loops unroll,
//! `n <= 32`; in shared memory on CUDA above that and for Cholesky's solves; in a local array
//! on wgpu above 32), the factors read through the cache.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::backend::BackendKind;
use crate::batched::cube::factor::newton::{self, refine_f64};
use crate::batched::cube::stage::groups_shape;
use crate::batched::{Batch, Diagonal, Rhs, Triangle};
use crate::error::Result;
use crate::scalar::{Element, Scalar};

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
    /// Units a cube when the columns live in shared memory (`n` entries a unit), 0 when they
    /// live in registers or a local array.
    shared_x: usize,
    /// Divisions by the diagonal in the refined f64 form of [`newton`] (f64 on wgpu).
    refine: bool,
}

/// Entry `i` of the unit's column: in shared memory (slot `xu` of `sx` a cube, entries `sx`
/// apart: a warp's units on consecutive words) when `sx > 0`, else in the local array.
#[cube]
#[allow(unused_assignments)] // `v` is a variable assigned in one branch or the other
fn xget<T: Float>(
    x: &Array<T>,
    xs: &SharedMemory<T>,
    i: usize,
    xu: usize,
    #[comptime] sx: usize,
) -> T {
    let mut v = T::new(0.0);
    if comptime![sx > 0] {
        v = xs[i * sx + xu];
    } else {
        v = x[i];
    }
    v
}

/// Sets entry `i` of the unit's column (see [`xget`]).
#[cube]
fn xset<T: Float>(
    x: &mut Array<T>,
    xs: &mut SharedMemory<T>,
    i: usize,
    v: T,
    xu: usize,
    #[comptime] sx: usize,
) {
    if comptime![sx > 0] {
        xs[i * sx + xu] = v;
    } else {
        x[i] = v;
    }
}

/// `s / d` for a diagonal entry `d`: the refined f64 quotient of [`newton::div`] with
/// `refine` (f64 on wgpu, where NVIDIA's Vulkan f64 division is a long sequence), else the
/// plain division.
#[cube]
fn diagonal_div<T: Float>(s: T, d: T, #[comptime] refine: bool) -> T {
    let mut q = s;
    if comptime![refine] {
        q = newton::div::<T>(s, d, newton::recip::<T>(d, true), true);
    } else {
        q /= d;
    }
    q
}

/// Whether wgpu's f64 solves of `n x n` factors divide by the refined quotient of
/// [`newton::div`] (the caller checks wgpu and f64): LU's inverse (the identity's sweeps) up to
/// n = 32, LU's and the triangular solves of given right-hand sides up to 24, Cholesky's solves
/// and inverse at 24 and 25. NVIDIA's Vulkan f64 division is a long sequence; the refined one
/// is shorter but adds registers, and the unrolled sweeps sit at the driver's register limit.
/// Measured on an H200 (2026-11-27, f64, `bench --suite batched`, µs, plain / refined; noise
/// about 5%; docs/benchmarks.md, nineteenth session): LU's inverse at n = 24 / 25 / 28 1714 /
/// 1580, 2018 / 1826, 2392 / 2070 (another call 2394 / 2087), within 5% at 8, 16, 20, 32;
/// LU's solve at 16 / 20 / 24 499 / 457, 681 / 618, 846 / 714, but at 28 and 32 956 / 1241
/// and 1336 / 1494 (another call: 972 / 1265, 1340 / 1496); Cholesky's solve at 24 / 25 1661
/// / 1468, 1748 / 1689 (another call: 1694 / 1513, 1787 / 1609), but at 16 978 / 1081 (991 /
/// 1104) and at 28 / 32 2024 / 2542, 2593 / 2895. Cholesky's inverse (its identity sweeps)
/// follows its solve, unmeasured; sides above 32 (a local array) were not measured refined.
fn refined_at(n: usize, sw: &Sweeps) -> bool {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if let Some(forced) = tests::FORCE_REFINE.with(|f| f.get()) {
        return forced;
    }
    if sw.transposed {
        (24..=25).contains(&n)
    } else if sw.identity {
        n <= UNROLL_SOLVE
    } else {
        n <= 24
    }
}

/// Sides up to which the triangular solves are unrolled, the column in registers.
const UNROLL_SOLVE: usize = 32;

/// Units a cube where the columns live in shared memory (`32 · n` entries a cube).
const SHARED_COLUMNS: usize = 32;

/// Where the solves of `n x n` factors keep their columns on `b`: `(unroll, shared_x)` of
/// [`Sweeps`]. Measured with `bench --suite batched` (f64, µs, `lu solve`/`cholesky solve`
/// with n right-hand sides, the inverse):
/// - Above [`UNROLL_SOLVE`] on CUDA, shared memory (H100, 2026-11-27, n = 40 / 64): LU solves
///   2282 / 3390, Cholesky's 1683 / 2800, the inverse 3189 / 6058, against 4288 / 7207,
///   3793 / 5031 and 5425 / 9837 with the column in a local array (it spills to L2: `8n`
///   bytes a unit), and 2327 / 5278, 2526 / 5790, 3509 / 7818 with 64 units a cube. Every loop
///   unrolled at n = 64 (the column in registers) gave the inverse in 4997 but NVRTC took about
///   90 s a kernel and Cholesky's solve 27,392.
/// - Solves that divide in both sweeps (Cholesky's) on CUDA at every side (H200, 2026-11-27,
///   n = 8 / 16 / 24 / 32): 462 / 645 / 914 / 1184 in shared memory against 528 / 1017 / 2367
///   / 3963 unrolled. NVRTC spills the unrolled form's registers (`ncu` of a build whose
///   backward sweep went by columns, itself slower still, 5088 at n = 32: n = 16, 255
///   registers and 406 MB of local loads a call; n = 32, 64 registers and 4.9 GB). The LU
///   solves and the inverse stay unrolled there (n = 16 / 32: 446 / 865 and 969 / 1606 µs
///   against 708 / 1508 and 1238 / 2035 in shared memory).
/// - On wgpu a local array above 32 (NVIDIA's Vulkan driver gives a multiprocessor little
///   shared memory: 16 units a cube made the inverse at n = 64 1.7x slower).
fn columns_at<R: CubeRuntime>(b: &Cube<R>, n: usize, sw: &Sweeps) -> (bool, usize) {
    #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
    if let Some(forced) = tests::FORCE_COLUMNS.with(|f| f.get()) {
        return forced;
    }
    let cuda = b.kind() == BackendKind::Cuda;
    let divides_twice = sw.forward && !sw.forward_unit && sw.backward && !sw.backward_unit;
    if cuda && (n > UNROLL_SOLVE || divides_twice) {
        (false, SHARED_COLUMNS)
    } else if n <= UNROLL_SOLVE {
        (true, 0)
    } else {
        (false, 0)
    }
}

/// Triangular solves for one right-hand-side column per unit, the column kept in registers,
/// shared memory or a local array of `T` (see [`Sweeps`]), the factors read through the
/// cache.
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
    let sx = comptime![sw.shared_x];
    let mut xs =
        SharedMemory::<T>::new(comptime![if sw.shared_x > 0 { n * sw.shared_x } else { 1 }]);
    let xu = UNIT_POS as usize;
    let mut e = ABSOLUTE_POS;
    while e < total {
        let mat = e / nrhs;
        let c = e % nrhs;
        let fb = mat * n * n;
        let bb = mat * n * nrhs;
        let mut x = Array::<T>::new(comptime![if sw.shared_x > 0 { 1 } else { n }]);
        // The identity's column `c` after the row interchanges is `e_q`, `q` where the
        // interchanges take row `c`: one index followed instead of the column swapped.
        let mut q = c;
        if comptime![sw.identity && sw.pivots] {
            #[unroll(sw.unroll)]
            for k in 0..n {
                let p = pivots[mat * n + k] as usize;
                if q == k {
                    q = p;
                } else if q == p {
                    q = k;
                }
            }
        }
        // The row interchanges of a given right-hand side as one permutation of the rows
        // read, `x_i = b_perm(i)`: `n` swaps of indices (a local array indexed at run time)
        // instead of `n²` conditional swaps of `x` that constant indices would need.
        let mut perm = Array::<u32>::new(comptime![if sw.pivots && !sw.identity { n } else { 1 }]);
        if comptime![sw.pivots && !sw.identity] {
            #[unroll(sw.unroll)]
            for i in 0..n {
                perm[i] = i as u32;
            }
            for k in 0..n {
                let p = pivots[mat * n + k] as usize;
                let tmp = perm[k];
                perm[k] = perm[p];
                perm[p] = tmp;
            }
        }
        #[unroll(sw.unroll)]
        for i in 0..n {
            if comptime![sw.identity] {
                let mut v = T::new(0.0);
                if i == q {
                    v = T::new(1.0);
                }
                xset::<T>(&mut x, &mut xs, i, v, xu, sx);
            } else {
                // Row `i` of the right-hand side, or the row the interchanges bring to `i`.
                let mut r = i;
                if comptime![sw.pivots] {
                    r = perm[i] as usize;
                }
                xset::<T>(
                    &mut x,
                    &mut xs,
                    i,
                    T::cast_from(b[bb + r * nrhs + c]),
                    xu,
                    sx,
                );
            }
        }
        if comptime![sw.forward] {
            #[unroll(sw.unroll)]
            for i in 0..n {
                let mut s = xget::<T>(&x, &xs, i, xu, sx);
                #[unroll(sw.unroll)]
                for k in 0..i {
                    s = fma(
                        -T::cast_from(f[fb + i * n + k]),
                        xget::<T>(&x, &xs, k, xu, sx),
                        s,
                    );
                }
                if !comptime![sw.forward_unit] {
                    s = diagonal_div::<T>(s, T::cast_from(f[fb + i * n + i]), sw.refine);
                }
                xset::<T>(&mut x, &mut xs, i, s, xu, sx);
            }
        }
        if comptime![sw.backward] {
            #[unroll(sw.unroll)]
            for ii in 0..n {
                let i = n - 1 - ii;
                let mut s = xget::<T>(&x, &xs, i, xu, sx);
                // k = n - 1 - kk runs over i + 1..n (from the end): a loop from 0, which
                // unrolls (an unrolled loop needs a constant start).
                #[unroll(sw.unroll)]
                for kk in 0..ii {
                    let k = n - 1 - kk;
                    let mut fik = T::cast_from(f[fb + i * n + k]);
                    if comptime![sw.transposed] {
                        fik = T::cast_from(f[fb + k * n + i]);
                    }
                    s = fma(-fik, xget::<T>(&x, &xs, k, xu, sx), s);
                }
                if !comptime![sw.backward_unit] {
                    s = diagonal_div::<T>(s, T::cast_from(f[fb + i * n + i]), sw.refine);
                }
                xset::<T>(&mut x, &mut xs, i, s, xu, sx);
            }
        }
        #[unroll(sw.unroll)]
        for i in 0..n {
            b[bb + i * nrhs + c] = V::cast_from(xget::<T>(&x, &xs, i, xu, sx));
        }
        e += stride;
    }
}

/// Launches [`solve_kernel`] with `sweeps`.
///
/// # Safety
/// `f` holds `count` `n x n` factors, `b` `count` matrices of `n` rows, `pivots` (read
/// only with `sweeps.pivots`) `count · n` row indices below `n`.
unsafe fn solve<R: CubeRuntime, V: Element, T: Scalar>(
    backend: &Cube<R>,
    f: &Batch<Cube<R>, V>,
    pivots: &CubeBuffer<u32>,
    b: &mut Batch<Cube<R>, V>,
    sweeps: Sweeps,
) -> Result<()> {
    let (n, nrhs) = (f.nrows, b.ncols);
    let total = b.count * nrhs;
    if total == 0 || n == 0 {
        return Ok(());
    }
    let (unroll, shared_x) = columns_at(backend, n, &sweeps);
    let refine = refine_f64::<R, T>(backend) && refined_at(n, &sweeps);
    let sweeps = Sweeps {
        unroll,
        shared_x,
        refine,
        ..sweeps
    };
    let (count, dim) = if shared_x > 0 {
        // Cubes of `shared_x` units, each with its slot (see `xget`), as the other batched
        // kernels' groups; past the most cubes a launch takes, the kernel's grid-stride loop
        // takes the rest (the kernel's `count` says how many columns there are).
        #[allow(unused_mut)]
        let mut launched = total;
        #[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
        if let Some(max) = tests::FORCE_MAX_CUBES.with(|f| f.get()) {
            launched = launched.min(max * shared_x);
        }
        groups_shape(launched, shared_x, 1)
    } else {
        backend.config().grid(total)
    };
    backend.launch::<(V, T)>((n, sweeps), || {
        // SAFETY: the caller's contract: factors hold n x n, pivots n per matrix, each below
        // n (read only with `sweeps.pivots`; they index the local `perm` array), b n x nrhs
        // per matrix; every unit works on its own column below count · nrhs. With the columns
        // in shared memory the cube has `shared_x` units (set just above), so a unit's slot
        // `i · shared_x + UNIT_POS` stays below the `n · shared_x` entries declared; no unit
        // reads another's slot (no barrier).
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
    })
}

/// Solves `L U X = P B` in place in `b`.
///
/// # Safety
/// As [`solve`], with the pivots of an LU factorization.
pub(crate) unsafe fn lu_solve<R: CubeRuntime, V: Element, T: Scalar>(
    backend: &Cube<R>,
    lu: &Batch<Cube<R>, V>,
    pivots: &CubeBuffer<u32>,
    b: &mut Batch<Cube<R>, V>,
    rhs: Rhs,
) -> Result<()> {
    let sweeps = Sweeps {
        identity: rhs == Rhs::Identity,
        pivots: true,
        forward: true,
        forward_unit: true,
        backward: true,
        backward_unit: false,
        transposed: false,
        unroll: false, // set by `solve`
        shared_x: 0,
        refine: false, // set by `solve`
    };
    // SAFETY: the caller's contract.
    unsafe { solve::<R, V, T>(backend, lu, pivots, b, sweeps) }
}

/// Solves `T X = B` in place in `b` with one triangle of `t`.
///
/// # Safety
/// As [`solve`] (no pivots).
pub(crate) unsafe fn triangular_solve<R: CubeRuntime, V: Element, T: Scalar>(
    backend: &Cube<R>,
    t: &Batch<Cube<R>, V>,
    triangle: Triangle,
    diagonal: Diagonal,
    b: &mut Batch<Cube<R>, V>,
) -> Result<()> {
    let (lower, unit) = (triangle == Triangle::Lower, diagonal == Diagonal::Unit);
    let sweeps = Sweeps {
        identity: false,
        pivots: false,
        forward: lower,
        forward_unit: unit,
        backward: !lower,
        backward_unit: unit,
        transposed: false,
        unroll: false, // set by `solve`
        shared_x: 0,
        refine: false, // set by `solve`
    };
    // The pivot argument must be bound: a one-entry buffer, never read.
    let none = backend.alloc::<u32>(1)?;
    // SAFETY: the caller's contract; `sweeps.pivots` is off.
    unsafe { solve::<R, V, T>(backend, t, &none, b, sweeps) }
}

/// Solves `L Lᵀ X = B` in place in `b`.
///
/// # Safety
/// As [`solve`] (no pivots).
pub(crate) unsafe fn cholesky_solve<R: CubeRuntime, V: Element, T: Scalar>(
    backend: &Cube<R>,
    l: &Batch<Cube<R>, V>,
    b: &mut Batch<Cube<R>, V>,
    rhs: Rhs,
) -> Result<()> {
    let sweeps = Sweeps {
        identity: rhs == Rhs::Identity,
        pivots: false,
        forward: true,
        forward_unit: false,
        backward: true,
        backward_unit: false,
        transposed: true,
        unroll: false, // set by `solve`
        shared_x: 0,
        refine: false, // set by `solve`
    };
    let none = backend.alloc::<u32>(1)?;
    // SAFETY: the caller's contract; `sweeps.pivots` is off.
    unsafe { solve::<R, V, T>(backend, l, &none, b, sweeps) }
}

#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
mod tests;
