//! The shared-memory kernels (`n > 8`): `per_cube` matrices per cube, one unit per row
//! (or per column for row swaps), the matrices in shared memory with an odd row stride.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{ceil_div, Cube, CubeRuntime};
use crate::backend::BackendKind;
use crate::batched::cube::factor::newton::{div, recip, root};
use crate::batched::cube::factor::FactorShape;
use crate::batched::cube::stage::{load_part, shared_budget, store_part, Part};
use crate::error::{Error, Result};
use crate::scalar::Scalar;

/// LU (optionally with partial pivoting) of `per_cube` matrices per cube, one unit per row.
///
/// The singularity test needs the scale of the original row that became row `k`: kept in
/// the padding column `n` of the shared rows (`ld > n`), moved with the row swaps; where the
/// matrix fills its rows exactly (`ld == n`, e.g. 64 x 64 f64 in 32 KiB), every unit tracks
/// the permutation and reads the original row from global memory instead (`a` is only
/// written back at the end).
#[cube(launch_unchecked)]
#[allow(clippy::collapsible_if)] // a comptime `if` around a run-time one
pub(crate) fn lu_kernel<V: Float, T: Float>(
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
    let part = comptime![Part::whole(n * n, n, ld, per_cube)];
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mat = g * per_cube + local;
        let valid = local < per_cube && mat < count;
        load_part::<V, T>(a, &mut sh, g, count, part, comptime![per_cube * n]);
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
                // As in the register kernels: explicit FMAs, the multiplier a division.
                let y = recip::<T>(d, comptime![shape.refine]);
                let l = div::<T>(sh[base + lane * ld + k], d, y, comptime![shape.refine]);
                sh[base + lane * ld + k] = l;
                for j in k + 1..n {
                    let ukj = sh[base + k * ld + j];
                    sh[base + lane * ld + j] = fma(-l, ukj, sh[base + lane * ld + j]);
                }
            }
            sync_cube();
        }
        store_part::<V, T>(a, &sh, g, count, part);
        if lane == 0 && valid {
            info[mat] = code;
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// Cholesky of `per_cube` matrices per cube (lower triangle; upper zeroed).
#[cube(launch_unchecked)]
#[allow(clippy::collapsible_if)] // a comptime `if` around a run-time one
pub(crate) fn cholesky_kernel<V: Float, T: Float>(
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
    let part = comptime![Part::whole(n * n, n, ld, per_cube)];
    let groups = ceil_div(count, per_cube);
    let mut g = CUBE_POS;
    while g < groups {
        let mat = g * per_cube + local;
        let valid = local < per_cube && mat < count;
        load_part::<V, T>(a, &mut sh, g, count, part, comptime![per_cube * n]);
        sync_cube();
        let mut code = 0i32;
        let tol = singular.get::<T>();
        // The original diagonal, for the singularity test, kept in the upper triangle (never
        // read by the factorization, zeroed at the end): a_kk at row 0, column k (k >= 1;
        // a_00 is still the pivot of step 0). Read only after the first step's barriers.
        if local < per_cube && lane > 0 {
            sh[base + lane] = sh[base + lane * ld + lane];
        }
        for k in 0..n {
            let mut d = T::new(1.0);
            let mut diag = T::new(0.0);
            if local < per_cube {
                d = sh[base + k * ld + k];
                diag = d;
                if k > 0 {
                    diag = sh[base + k];
                }
            }
            sync_cube();
            let ok = code == 0 && d > tol * diag;
            if !ok && code == 0 {
                code = (k + 1) as i32;
            }
            if ok && local < per_cube {
                let refine = comptime![shape.refine];
                let r = root::<T>(d, refine);
                if lane == k {
                    sh[base + k * ld + k] = r.root;
                }
                if lane > k {
                    let a = sh[base + lane * ld + k];
                    sh[base + lane * ld + k] = div::<T>(a, r.root, r.inv, refine);
                }
            }
            sync_cube();
            if ok && local < per_cube && lane > k {
                let lik = sh[base + lane * ld + k];
                for j in k + 1..lane + 1 {
                    let ljk = sh[base + j * ld + k];
                    sh[base + lane * ld + j] = fma(-lik, ljk, sh[base + lane * ld + j]);
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
        store_part::<V, T>(a, &sh, g, count, part);
        if lane == 0 && valid {
            info[mat] = code;
        }
        sync_cube();
        g += CUBE_COUNT;
    }
}

/// Matrices per cube and the shared-memory row stride for the shared-memory
/// factorizations, or an error when one matrix does not fit the device's shared memory.
/// On CUDA the count keeps the most matrices resident on a multiprocessor
/// ([`resident_per_cube`]); elsewhere as many as 256 units or the device's
/// [`shared_budget`] take.
/// The stride is odd where that fits, so that the units of one matrix (one per row)
/// reading a column hit distinct banks (a power-of-two stride serialises them).
pub(crate) fn per_cube<R: CubeRuntime, T: Scalar>(b: &Cube<R>, n: usize) -> Result<(usize, usize)> {
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
    // Fewer matrices a cube where the device's shared budget is small (wgpu): as many as fit
    // it, at least one.
    let within = (shared_budget(b) / bytes.max(1)).clamp(1, fit);
    let most = (256 / n.max(1)).clamp(1, within);
    let per_cube = match b.kind() {
        BackendKind::Cuda => {
            resident_per_cube(info.max_shared_bytes + CUDA_SHARED_RESERVED, bytes, n, most)
        }
        _ => most,
    };
    Ok((per_cube, ld))
}

/// Shared memory a CUDA multiprocessor has beyond the most one cube may take, and reserves
/// for each resident cube (1 KiB from compute capability 8.0 on: H100 228 KiB against 227).
const CUDA_SHARED_RESERVED: usize = 1024;

/// Threads and cubes a CUDA multiprocessor holds at most (compute capability 7.0, 8.0 and 9.0;
/// 7.5, 8.6 and 8.9 hold fewer threads, where the count below may overrate the thread bound).
const CUDA_SM_THREADS: usize = 2048;
const CUDA_SM_CUBES: usize = 32;

/// The matrices a cube (`1..=most`) of `n x n` matrices of `bytes` each that keep the most
/// matrices resident on a multiprocessor of `sm_bytes` shared memory (the shared memory, the
/// thread and the cube limits; registers are not the bound of these kernels); on a tie the
/// fewest warps a matrix (idle lanes of a cube's last warp), then the fewest matrices a cube.
/// One cube of as many as 256 units took four 64 x 64 f64 matrices (133 KiB) and left one cube
/// a multiprocessor; H100, f64 LU, µs, n = 33 / 40 / 48 / 56 / 64 (2026-11-27, `bench --suite
/// batched`, one call): 919 / 1175 / 1337 / 1538 / 2471 with 7 / 6 / 5 / 4 / 4 matrices a cube,
/// 903 / 972 / 1164 / 1474 / 1672 with this count's 6 / 4 / 2 / 3 / 1.
pub(crate) fn resident_per_cube(sm_bytes: usize, bytes: usize, n: usize, most: usize) -> usize {
    // (resident, warps, k): the warps a matrix are warps / k, compared cross-multiplied.
    let mut best = (0, 1, 1);
    for k in 1..=most.max(1) {
        let warps = (k * n).div_ceil(32).max(1);
        let by_shared = sm_bytes / (k * bytes + CUDA_SHARED_RESERVED);
        let by_threads = CUDA_SM_THREADS / (32 * warps);
        let resident = k * by_shared.min(by_threads).min(CUDA_SM_CUBES);
        if resident == 0 {
            continue;
        }
        if resident > best.0 || (resident == best.0 && warps * best.2 < best.1 * k) {
            best = (resident, warps, k);
        }
    }
    best.2
}

#[cfg(test)]
mod tests {
    use super::resident_per_cube;

    /// The H100's counts (227 KiB a cube at most, f64, rows `n + 1 | 1` apart): the most
    /// matrices resident, then the fewest warps a matrix, then the fewest matrices a cube.
    #[test]
    fn resident_per_cube_keeps_the_most_matrices_on_a_multiprocessor() {
        let sm = 227 * 1024 + 1024;
        let f64_bytes = |n: usize| n * ((n + 1) | 1) * 8;
        let most = |n: usize| 256 / n;
        // n = 64: one to three matrices a cube keep six resident; one has the fewest a cube.
        assert_eq!(resident_per_cube(sm, f64_bytes(64), 64, most(64)), 1);
        // n = 48: two, three and four keep twelve; two and four use 1.5 warps a matrix.
        assert_eq!(resident_per_cube(sm, f64_bytes(48), 48, most(48)), 2);
        // n = 40: one, two and four keep sixteen; four use 1.25 warps a matrix.
        assert_eq!(resident_per_cube(sm, f64_bytes(40), 40, most(40)), 4);
        // n = 33: three, four and six keep twenty-four; six use 7/6 warps a matrix.
        assert_eq!(resident_per_cube(sm, f64_bytes(33), 33, most(33)), 6);
        // n = 56: three keep nine.
        assert_eq!(resident_per_cube(sm, f64_bytes(56), 56, most(56)), 3);
        // A matrix larger than the multiprocessor's shared memory: one a cube, never zero.
        assert_eq!(resident_per_cube(1024, 4096, 16, 16), 1);
    }
}
