//! The vertex-patch smoothing kernel: the local residual by the cell operator's sum
//! factorization restricted to the interior rows (fused) or read from `b − A x` (split),
//! then the fast-diagonalization solve direction by direction.

use cubecl::prelude::*;

use crate::backend::cube::{ceil_div, stage};

use super::kernels::{apply_local, block_origin, load_block, Blocks, Coefficients};

/// Applies `S` (or `Sᵀ`) along the line of `m` values at `u[start + t step]`, in place
/// (the line read into registers first; the output rows looped at run time, see
/// [`row_dot`](super::kernels::row_dot)).
#[cube]
pub(super) fn line_eigen<T: Float>(
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
/// Fused: each patch's closure (`n^d` values, layout `(z n + y) n + x`) is loaded and the
/// local operator applied on chip, leaving the interior's `Āx` at stride `w = n`. Split
/// (`ax` holds the global `A x`): only the interior is kept, `m^d` values at stride `w = m`,
/// read as `b − ax`; the patch matrices and the second x-pass array are not held. The solve
/// passes are the same code at stride `w`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
pub(super) fn patch_kernel<T: Float>(
    patch: &Array<T>,
    b: &Array<T>,
    ax: &Array<T>,
    x: &mut Array<T>,
    coef: &Coefficients,
    blocks: &Blocks,
    #[comptime] k: usize,
    #[comptime] dim: usize,
    #[comptime] cpc: usize,
    #[comptime] split: bool,
) {
    let n = comptime![2 * k + 1];
    let m = comptime![2 * k - 1];
    let w = comptime![if split { m } else { n }];
    let nd = comptime![if dim == 3 { w * w * w } else { w * w }];
    let qd = comptime![if split {
        1
    } else if dim == 3 {
        m * n * n
    } else {
        m * n
    }];
    let mats_len = comptime![if split { 2 } else { 2 * n * n }];
    let mut u = SharedMemory::<T>::new(comptime![cpc * nd]);
    let mut q = SharedMemory::<T>::new(comptime![cpc * qd]);
    let mut mats = SharedMemory::<T>::new(mats_len);
    let mut s = SharedMemory::<T>::new(comptime![m * m]);
    let mut lambda = SharedMemory::<T>::new(m);
    if comptime![!split] {
        stage::<T>(patch, &mut mats, 0usize, comptime![2 * n * n]);
    }
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
        if comptime![!split] {
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
        }
        if comptime![dim == 3] {
            // r = b − Āx on the interior, then Sᵀ along z (unit of line (i, j)).
            if lane < m * m {
                let i = lane % m;
                let j = lane / m;
                if valid {
                    #[unroll]
                    for l in 0..m {
                        let at = bu + (l * w + j) * w + i;
                        let gi = inner + (l * n1 + j) * n1 + i;
                        if comptime![split] {
                            u[at] = b[gi] - ax[gi];
                        } else {
                            u[at] = b[gi] - u[at];
                        }
                    }
                }
                line_eigen::<T>(&mut u, &s, bu + j * w + i, w * w, m, true);
            }
            sync_cube();
            // Sᵀ along y (unit of line (i, l)).
            if lane < m * m {
                line_eigen::<T>(&mut u, &s, bu + (lane / m) * w * w + lane % m, w, m, true);
            }
            sync_cube();
            // Sᵀ along x, the eigenvalue scaling, S along x (unit of line (j, l)).
            if lane < m * m {
                let j = lane % m;
                let l = lane / m;
                let start = bu + (l * w + j) * w;
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
                line_eigen::<T>(&mut u, &s, bu + (lane / m) * w * w + lane % m, w, m, false);
            }
            sync_cube();
            if lane < m * m {
                let i = lane % m;
                let j = lane / m;
                line_eigen::<T>(&mut u, &s, bu + j * w + i, w * w, m, false);
                if valid {
                    #[unroll]
                    for l in 0..m {
                        let gi = inner + (l * n1 + j) * n1 + i;
                        x[gi] += u[bu + (l * w + j) * w + i];
                    }
                }
            }
        } else {
            // r = b − Āx, Sᵀ along y (unit of column i).
            if lane < m {
                if valid {
                    #[unroll]
                    for j in 0..m {
                        let at = bu + j * w + lane;
                        let gi = inner + j * n1 + lane;
                        if comptime![split] {
                            u[at] = b[gi] - ax[gi];
                        } else {
                            u[at] = b[gi] - u[at];
                        }
                    }
                }
                line_eigen::<T>(&mut u, &s, bu + lane, w, m, true);
            }
            sync_cube();
            // Sᵀ along x, scaling, S along x (unit of row j).
            if lane < m {
                let start = bu + lane * w;
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
                line_eigen::<T>(&mut u, &s, bu + lane, w, m, false);
                if valid {
                    #[unroll]
                    for j in 0..m {
                        x[inner + j * n1 + lane] += u[bu + j * w + lane];
                    }
                }
            }
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}
