//! The unrolled form of the column and row kernels against the CPU, on whatever device is
//! there (on lavapipe, where the library would not unroll them, forced): CI has no GPU, and
//! the unrolled form is the one GPUs run. Also the helpers the tile kernels' tests share, and
//! LU with NaN entries through the library's choice of kernel at every side class.

use std::cell::Cell;

use crate::backend::core::BackendCore;
use crate::backend::cube::on_test_device;
use crate::backend::BackendKind;
use crate::backend::Cpu;
use crate::batched::BatchedOps;
use crate::batched::{cholesky, lu, Batch, Pivoting};
use crate::random::Rng;

thread_local! {
    /// Unroll the column kernels' steps on every device (this thread's launches).
    pub(super) static FORCE_UNROLL: Cell<bool> = const { Cell::new(false) };
    /// Pad the Cholesky column kernel's matrices to this side (this thread's launches).
    pub(super) static FORCE_PAD: Cell<Option<usize>> = const { Cell::new(None) };
    /// Force the Cholesky column kernel's step form (this thread's launches).
    pub(super) static FORCE_SCALE_FIRST: Cell<Option<bool>> = const { Cell::new(None) };
    /// Force LU onto the row kernel (`Some(true)`) or off it at `8 < n <= 32` (this thread's
    /// launches).
    pub(in crate::batched::cube::factor) static FORCE_ROWS: Cell<Option<bool>> =
        const { Cell::new(None) };
    /// Force the row kernel's staging through shared memory on or off (this thread's
    /// launches).
    pub(in crate::batched::cube::factor) static FORCE_STAGED: Cell<Option<bool>> =
        const { Cell::new(None) };
}

/// `count` random `n x n` matrices, `weight` added to the diagonal (SPD when `spd`, with
/// a weight of `n`); matrix 1 is singular (LU: a zero column) or indefinite (Cholesky: a
/// negative diagonal entry).
pub(in crate::batched::cube::factor) fn matrices(
    count: usize,
    n: usize,
    spd: bool,
    weight: f64,
    seed: u64,
) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = vec![0.0; count * n * n];
    for (m, a) in out.chunks_mut(n * n).enumerate() {
        for i in 0..n {
            for j in 0..=i {
                let v = rng.range(-1.0, 1.0);
                a[i * n + j] = v;
                a[j * n + i] = if spd { v } else { rng.range(-1.0, 1.0) };
            }
            a[i * n + i] += weight;
        }
        if m == 2 && !spd {
            // Column 3 three times column 2: a pivot left by rounding at step 3 (flagged,
            // and without pivoting skipped as on the CPU).
            for i in 0..n {
                a[i * n + 3] = 3.0 * a[i * n + 2];
            }
        }
        if m == 1 {
            if spd {
                a[5 * n + 5] = -1.0;
            } else {
                for i in 0..n {
                    a[i * n + 3] = 0.0;
                }
            }
        }
    }
    out
}

pub(in crate::batched::cube) fn close(got: &[f64], want: &[f64], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-11 * (1.0 + w.abs()),
            "{what}: entry {i}: {g} against the CPU's {w}"
        );
    }
}

/// LU of `count` random `n x n` matrices ([`matrices`], seed `seed`) on `b` against the
/// CPU: pivots, status codes and every factor (the singular members' too: their flagged
/// steps are skipped, as on the CPU).
pub(in crate::batched::cube::factor) fn lu_against_cpu<B: BatchedOps>(
    b: &B,
    count: usize,
    n: usize,
    seed: u64,
    pivoting: Pivoting,
    what: &str,
) {
    // Without pivoting, diagonally dominant matrices (no growth); with it, plain random
    // ones (row swaps at most steps).
    let weight = if pivoting == Pivoting::None {
        n as f64
    } else {
        0.0
    };
    let general = matrices(count, n, false, weight, seed);
    let got = lu::<B, f64, f64>(
        Batch::from_slice(b, count, n, n, &general).unwrap(),
        pivoting,
    )
    .unwrap();
    let want = lu::<Cpu, f64, f64>(
        Batch::from_slice(&Cpu::new(), count, n, n, &general).unwrap(),
        pivoting,
    )
    .unwrap();
    let what = format!("{what} {pivoting:?}");
    // With pivoting, the rows of matrix 2 past its rounding-level column are chosen among
    // rounding noise: its pivots and factors are not compared.
    let skip = if pivoting == Pivoting::Partial {
        2
    } else {
        count
    };
    let (gp, wp) = (got.pivots_to_vec().unwrap(), want.pivots_to_vec().unwrap());
    for m in (0..count).filter(|&m| m != skip) {
        let r = m * n..(m + 1) * n;
        assert_eq!(gp[r.clone()], wp[r], "{what}, matrix {m}");
    }
    assert_eq!(
        got.status().codes().unwrap(),
        want.status().codes().unwrap(),
        "{what}"
    );
    let (g, w) = (
        got.factors().to_vec().unwrap(),
        want.factors().to_vec().unwrap(),
    );
    for m in (0..count).filter(|&m| m != skip) {
        let r = m * n * n..(m + 1) * n * n;
        close(&g[r.clone()], &w[r], &format!("{what}, matrix {m}"));
    }
}

/// LU with partial pivoting of matrices with NaN entries on `b` against the CPU. Members 3,
/// 4, 5 carry the NaNs (at `a_00`, at `a_(n-1)0`, never a pivot, and at `a_21`, `n >= 3`).
/// Everywhere: no pivot leaves the matrix, and the members without NaNs (0; 1, singular) get
/// the CPU's pivots, codes and factors. On CUDA (IEEE comparisons) the NaN members' pivots
/// and codes are the CPU's too: position `k` stays when its entry is NaN, a NaN row is never
/// taken. Vulkan compilers need not keep NaN comparisons (no float controls: NVIDIA's and
/// lavapipe's do not), so on wgpu they are not compared. Member 2's rounding-level pivot
/// leaves its later pivots to rounding (not compared).
pub(in crate::batched::cube::factor) fn lu_nan_against_cpu<B: BatchedOps>(
    b: &B,
    n: usize,
    what: &str,
) {
    let count = 6;
    let mut bad = matrices(count, n, false, 0.0, 31 + n as u64);
    bad[3 * n * n] = f64::NAN;
    bad[4 * n * n + (n - 1) * n] = f64::NAN;
    bad[5 * n * n + 2 * n + 1] = f64::NAN;
    let got = lu::<B, f64, f64>(
        Batch::from_slice(b, count, n, n, &bad).unwrap(),
        Pivoting::Partial,
    )
    .unwrap();
    let want = lu::<Cpu, f64, f64>(
        Batch::from_slice(&Cpu::new(), count, n, n, &bad).unwrap(),
        Pivoting::Partial,
    )
    .unwrap();
    let what = format!("{what}: LU with NaN entries, n = {n}");
    let (gp, wp) = (got.pivots_to_vec().unwrap(), want.pivots_to_vec().unwrap());
    assert!(gp.iter().all(|&p| (p as usize) < n), "{what}: {gp:?}");
    let (gc, wc) = (
        got.status().codes().unwrap(),
        want.status().codes().unwrap(),
    );
    let exact = b.info().kind == BackendKind::Cuda;
    let members: Vec<usize> = if exact {
        vec![0, 1, 3, 4, 5]
    } else {
        vec![0, 1]
    };
    let (g, w) = (
        got.factors().to_vec().unwrap(),
        want.factors().to_vec().unwrap(),
    );
    for m in members {
        let r = m * n..(m + 1) * n;
        assert_eq!(gp[r.clone()], wp[r], "{what}, matrix {m}");
        assert_eq!(gc[m], wc[m], "{what}, matrix {m}");
        if m < 2 {
            let r = m * n * n..(m + 1) * n * n;
            close(&g[r.clone()], &w[r], &format!("{what}, matrix {m}"));
        }
    }
}

fn unrolled_against_cpu<B: BatchedOps>(b: &B) {
    if !b.info().supports_f64() {
        eprintln!("[galerkin tests] skipping: no f64 on {}", b.info());
        return;
    }
    let cpu = Cpu::new();
    FORCE_UNROLL.with(|f| f.set(true));
    for n in [9, 13] {
        // Three groups and a partial one: the tail is clamped on loads, skipped on stores.
        let count = 3 * super::columns_per_cube(n) + 2;
        // LU: the column kernel (on CUDA the shared-memory one), then the row kernel
        // unstaged and staged.
        for (rows, staged) in [(false, false), (true, false), (true, true)] {
            FORCE_ROWS.with(|f| f.set(Some(rows)));
            FORCE_STAGED.with(|f| f.set(Some(staged)));
            let what = if rows {
                format!("row kernel (staged: {staged})")
            } else {
                "column kernel (CUDA: shared-memory kernel)".to_string()
            };
            for pivoting in [Pivoting::Partial, Pivoting::None] {
                let what = format!("LU n = {n}, {what}");
                lu_against_cpu(b, count, n, 7 + n as u64, pivoting, &what);
            }
            lu_nan_against_cpu(b, n, &what);
        }
        FORCE_ROWS.with(|f| f.set(None));
        FORCE_STAGED.with(|f| f.set(None));
        let spd = matrices(count, n, true, n as f64, 70 + n as u64);
        let (want, ws) =
            cholesky::<Cpu, f64, f64>(Batch::from_slice(&cpu, count, n, n, &spd).unwrap()).unwrap();
        let w = want.to_vec().unwrap();
        // Unpadded, and padded with the identity to a larger kernel side.
        for (first, pad) in [
            (true, None),
            (false, None),
            (true, Some(n + 3)),
            (false, Some(n + 4)),
        ] {
            FORCE_SCALE_FIRST.with(|f| f.set(Some(first)));
            FORCE_PAD.with(|f| f.set(pad));
            // In place: the upper triangle (the input's values) must come back as zeros.
            let (got, gs) =
                cholesky::<B, f64, f64>(Batch::from_slice(b, count, n, n, &spd).unwrap()).unwrap();
            let what = format!("Cholesky n = {n}, scaled first: {first}, padded to {pad:?}");
            assert_eq!(gs.codes().unwrap(), ws.codes().unwrap(), "{what}");
            let g = got.to_vec().unwrap();
            close(&g[..n * n], &w[..n * n], &what);
            close(&g[2 * n * n..], &w[2 * n * n..], &what);
            poisoned_upper_changes_nothing(b, n, &spd, &w, &ws.codes().unwrap(), &what);
            // A failure at the last real step (matrix 0's last pivot negative): code `n`,
            // the padded steps after it changing nothing.
            let mut last = spd.clone();
            last[n * n - 1] = -1.0;
            let (_, gs) =
                cholesky::<B, f64, f64>(Batch::from_slice(b, count, n, n, &last).unwrap()).unwrap();
            let (_, ws) =
                cholesky::<Cpu, f64, f64>(Batch::from_slice(&cpu, count, n, n, &last).unwrap())
                    .unwrap();
            let codes = gs.codes().unwrap();
            assert_eq!(codes[0], n as i32, "{what}, last pivot negative");
            assert_eq!(codes, ws.codes().unwrap(), "{what}, last pivot negative");
        }
        FORCE_SCALE_FIRST.with(|f| f.set(None));
        FORCE_PAD.with(|f| f.set(None));
        // The library's own choices: on lavapipe the steps as run-time loops.
        FORCE_UNROLL.with(|f| f.set(false));
        let what = format!("Cholesky n = {n}, the library's form");
        poisoned_upper_changes_nothing(b, n, &spd, &w, &ws.codes().unwrap(), &what);
        FORCE_UNROLL.with(|f| f.set(true));
    }
    FORCE_UNROLL.with(|f| f.set(false));
}

/// Cholesky on `b` of the SPD batch `spd` (side `n`) with its upper triangle poisoned (NaN
/// and 1e300) gives the CPU's factors `want` and codes `codes` of the clean batch: the column
/// kernel updates a column's rows above its diagonal too and must drop them.
fn poisoned_upper_changes_nothing<B: BatchedOps>(
    b: &B,
    n: usize,
    spd: &[f64],
    want: &[f64],
    codes: &[i32],
    what: &str,
) {
    let count = spd.len() / (n * n);
    let mut poisoned = spd.to_vec();
    for (m, a) in poisoned.chunks_mut(n * n).enumerate() {
        for i in 0..n {
            for j in i + 1..n {
                a[i * n + j] = if (i + j + m) % 2 == 0 {
                    f64::NAN
                } else {
                    1e300
                };
            }
        }
    }
    let (got, gs) =
        cholesky::<B, f64, f64>(Batch::from_slice(b, count, n, n, &poisoned).unwrap()).unwrap();
    let what = format!("{what}, upper triangle poisoned");
    assert_eq!(gs.codes().unwrap(), codes, "{what}");
    let g = got.to_vec().unwrap();
    // Matrix 1 fails at step 6: its partial factor is skipped here, as in the clean case.
    close(&g[..n * n], &want[..n * n], &what);
    close(&g[2 * n * n..], &want[2 * n * n..], &what);
}

/// The library pads wgpu's Cholesky at the odd sides 27..31 to the next even side (see
/// [`super::cholesky_padded_side`]), and nothing elsewhere.
fn padded_sides<R: crate::backend::cube::CubeRuntime>(b: &crate::backend::cube::Cube<R>) {
    for n in 9..=32 {
        let shape =
            crate::batched::cube::factor::factor_shape::<R, f64>(b, n, false, true).unwrap();
        let want = if b.kind() == BackendKind::Wgpu && n >= 27 && n % 2 == 1 {
            n + 1
        } else {
            n
        };
        assert_eq!(
            (shape.side, shape.n),
            (n, want),
            "Cholesky n = {n} on {}",
            b.info()
        );
        let lu = crate::batched::cube::factor::factor_shape::<R, f64>(b, n, true, false).unwrap();
        assert_eq!((lu.side, lu.n), (n, n), "LU n = {n} on {}", b.info());
    }
}

#[cfg(feature = "wgpu")]
#[test]
#[ignore = "tier 2 (long on lavapipe): cargo test --release -- --ignored"]
fn wgpu_pads_odd_cholesky_sides() {
    on_test_device("wgpu", crate::backend::Wgpu::new(), |b| padded_sides(&b));
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_pads_no_cholesky_side() {
    on_test_device("cuda", crate::backend::Cuda::new(), |b| padded_sides(&b));
}

/// The library's choice of LU kernel at every side class (register, column or row,
/// shared-memory, tile kernels), with NaN entries, against the CPU.
fn nan_pivots_against_cpu<B: BatchedOps>(b: &B) {
    if !b.info().supports_f64() {
        eprintln!("[galerkin tests] skipping: no f64 on {}", b.info());
        return;
    }
    for n in [4, 8, 12, 24, 27, 32, 40, 64] {
        lu_nan_against_cpu(b, n, "the library's choice");
    }
}

#[cfg(feature = "wgpu")]
#[test]
#[ignore = "tier 2 (long on lavapipe): cargo test --release -- --ignored"]
fn wgpu_nan_pivots_match_the_cpu() {
    on_test_device("wgpu", crate::backend::Wgpu::new(), |b| {
        nan_pivots_against_cpu(&b)
    });
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_nan_pivots_match_the_cpu() {
    on_test_device("cuda", crate::backend::Cuda::new(), |b| {
        nan_pivots_against_cpu(&b)
    });
}

#[cfg(feature = "wgpu")]
#[test]
fn wgpu_unrolled_column_and_row_kernels_match_the_cpu() {
    on_test_device("wgpu", crate::backend::Wgpu::new(), |b| {
        unrolled_against_cpu(&b)
    });
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_unrolled_column_and_row_kernels_match_the_cpu() {
    on_test_device("cuda", crate::backend::Cuda::new(), |b| {
        unrolled_against_cpu(&b)
    });
}
