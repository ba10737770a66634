//! Batched triangular solves: one kernel for LU, Cholesky and plain triangles, one unit per
//! right-hand-side column, the column kept in a local array in `T` (in registers when the
//! loops unroll, `n <= 32`), the factors read through the cache.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
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
        #[unroll(sw.unroll)]
        for i in 0..n {
            if comptime![sw.identity] {
                x[i] = T::new(0.0);
                if i == q {
                    x[i] = T::new(1.0);
                }
            } else {
                x[i] = T::cast_from(b[bb + i * nrhs + c]);
            }
        }
        if comptime![sw.pivots && !sw.identity] {
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
                    s = fma(-T::cast_from(f[fb + i * n + k]), x[k], s);
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
                    s = fma(-fik, x[k], s);
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
    let sweeps = Sweeps {
        unroll: n <= UNROLL_SOLVE,
        ..sweeps
    };
    let (count, dim) = backend.config().grid(total);
    backend.launch::<(V, T)>((n, sweeps), || {
        // SAFETY: the caller's contract: factors hold n x n, pivots n per matrix (read only
        // with `sweeps.pivots`), b n x nrhs per matrix; every unit works on its own column
        // below count · nrhs.
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
    };
    let none = backend.alloc::<u32>(1)?;
    // SAFETY: the caller's contract; `sweeps.pivots` is off.
    unsafe { solve::<R, V, T>(backend, l, &none, b, sweeps) }
}
