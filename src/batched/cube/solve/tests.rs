//! The solve kernel's three places for the columns (registers, a local array, shared memory)
//! forced on whatever device is there, against the CPU: CI has no GPU, and the shared-memory
//! form is the one CUDA runs above n = 32.

use std::cell::Cell;

use crate::backend::cube::on_test_device;
use crate::backend::BackendKind;
use crate::backend::Cpu;
use crate::batched::cube::factor::columns::tests::close;
use crate::batched::BatchedOps;
use crate::batched::{
    cholesky, cholesky_inverse, cholesky_solve, inverse, lu, lu_solve, triangular_solve, Batch,
    Diagonal, Pivoting, Triangle,
};
use crate::random::Rng;

thread_local! {
    /// Force where the solves keep their columns, `(unroll, shared_x)` of `Sweeps` (this
    /// thread's launches).
    pub(super) static FORCE_COLUMNS: Cell<Option<(bool, usize)>> = const { Cell::new(None) };
    /// Cap the cubes of a shared-memory launch (the grid-stride loop takes the rest).
    pub(super) static FORCE_MAX_CUBES: Cell<Option<usize>> = const { Cell::new(None) };
    /// Force the refined division by the diagonal on or off (f64 on wgpu only: elsewhere the
    /// solves never refine).
    pub(super) static FORCE_REFINE: Cell<Option<bool>> = const { Cell::new(None) };
}

/// `count` random `n x n` matrices with `weight` added to the diagonal (symmetric when `spd`,
/// then positive definite with a weight of `n`; with a weight of 0, partial pivoting
/// interchanges rows).
fn matrices(count: usize, n: usize, spd: bool, weight: f64, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = vec![0.0; count * n * n];
    for a in out.chunks_mut(n * n) {
        for i in 0..n {
            for j in 0..=i {
                let v = rng.range(-1.0, 1.0);
                a[i * n + j] = v;
                a[j * n + i] = if spd { v } else { rng.range(-1.0, 1.0) };
            }
            a[i * n + i] += weight;
        }
    }
    out
}

/// Every solve (LU with given right-hand sides and the identity, Cholesky's two, the four
/// triangular ones) of `count` matrices of side `n` on `b`, against the CPU.
fn solves_against_cpu<B: BatchedOps>(b: &B, n: usize, count: usize, what: &str) {
    let cpu = Cpu::new();
    let nrhs = 3;
    let general = matrices(count, n, false, 0.0, 11 + n as u64);
    let spd = matrices(count, n, true, n as f64, 12 + n as u64);
    let mut rng = Rng::new(13 + n as u64);
    let rhs: Vec<f64> = (0..count * n * nrhs)
        .map(|_| rng.range(-1.0, 1.0))
        .collect();
    let on = |data: &[f64], cols: usize| Batch::from_slice(b, count, n, cols, data).unwrap();
    let on_cpu = |data: &[f64], cols: usize| Batch::from_slice(&cpu, count, n, cols, data).unwrap();
    let what = format!("{what}, n = {n}");
    // The device's result against the CPU's.
    let same = |got: &Batch<B, f64>, want: &Batch<Cpu, f64>, op: &str| {
        let what = format!("{what}: {op}");
        close(&got.to_vec().unwrap(), &want.to_vec().unwrap(), &what);
    };

    let f = lu::<B, f64, f64>(on(&general, n), Pivoting::Partial).unwrap();
    let fc = lu::<Cpu, f64, f64>(on_cpu(&general, n), Pivoting::Partial).unwrap();
    // The row interchanges are exercised: most pivots are not on the diagonal.
    let pivots = fc.pivots_to_vec().unwrap();
    let moved = pivots
        .iter()
        .enumerate()
        .filter(|(k, p)| **p as usize != k % n)
        .count();
    assert!(
        moved > pivots.len() / 2,
        "{what}: only {moved} interchanges"
    );
    let mut x = on(&rhs, nrhs);
    let mut xc = on_cpu(&rhs, nrhs);
    lu_solve::<B, f64, f64>(&f, &mut x).unwrap();
    lu_solve::<Cpu, f64, f64>(&fc, &mut xc).unwrap();
    same(&x, &xc, "lu_solve");
    let (inv, _) = inverse::<B, f64, f64>(&on(&general, n)).unwrap();
    let (invc, _) = inverse::<Cpu, f64, f64>(&on_cpu(&general, n)).unwrap();
    same(&inv, &invc, "inverse");

    let (l, _) = cholesky::<B, f64, f64>(on(&spd, n)).unwrap();
    let (lc, _) = cholesky::<Cpu, f64, f64>(on_cpu(&spd, n)).unwrap();
    let mut x = on(&rhs, nrhs);
    let mut xc = on_cpu(&rhs, nrhs);
    cholesky_solve::<B, f64, f64>(&l, &mut x).unwrap();
    cholesky_solve::<Cpu, f64, f64>(&lc, &mut xc).unwrap();
    same(&x, &xc, "cholesky_solve");
    let (inv, _) = cholesky_inverse::<B, f64, f64>(&on(&spd, n)).unwrap();
    let (invc, _) = cholesky_inverse::<Cpu, f64, f64>(&on_cpu(&spd, n)).unwrap();
    same(&inv, &invc, "cholesky_inverse");

    // The triangles of a diagonally dominant matrix: the unit-diagonal solves with the
    // triangles of the undominated one above are too ill-conditioned to compare to 1e-11
    // (n = 33 on CUDA and NVIDIA's Vulkan: 1.9e-11).
    let dominant = matrices(count, n, false, n as f64, 14 + n as u64);
    for triangle in [Triangle::Lower, Triangle::Upper] {
        for diagonal in [Diagonal::Unit, Diagonal::NonUnit] {
            let mut x = on(&rhs, nrhs);
            let mut xc = on_cpu(&rhs, nrhs);
            let t = on(&dominant, n);
            let tc = on_cpu(&dominant, n);
            triangular_solve::<B, f64, f64>(&t, triangle, diagonal, &mut x).unwrap();
            triangular_solve::<Cpu, f64, f64>(&tc, triangle, diagonal, &mut xc).unwrap();
            same(
                &x,
                &xc,
                &format!("triangular_solve {triangle:?} {diagonal:?}"),
            );
        }
    }
}

fn columns_against_cpu<B: BatchedOps>(b: &B) {
    if !b.info().supports_f64() {
        eprintln!("[galerkin tests] skipping: no f64 on {}", b.info());
        return;
    }
    // Cubes of 32 units over 3 or n columns a matrix: several cubes and a partial one, and
    // (shared memory) as few as two cubes launched, the grid-stride loop taking the rest.
    let places = [
        ((true, 0), "registers"),
        ((false, 0), "a local array"),
        ((false, 32), "shared memory"),
    ];
    // Each place with the plain and (wgpu, f64) the refined division by the diagonal (the
    // solves refine only on wgpu).
    let forms: &[bool] = if b.info().kind == BackendKind::Wgpu {
        &[false, true]
    } else {
        &[false]
    };
    for &refine in forms {
        FORCE_REFINE.with(|f| f.set(Some(refine)));
        for ((unroll, shared_x), place) in places {
            FORCE_COLUMNS.with(|f| f.set(Some((unroll, shared_x))));
            FORCE_MAX_CUBES.with(|f| f.set((shared_x > 0).then_some(2)));
            // The unrolled form at 33 takes lavapipe minutes to compile: 12 only (and the
            // refined forms at 12 only).
            let sides: &[usize] = if unroll || refine { &[12] } else { &[12, 33] };
            for &n in sides {
                let what = format!("columns in {place}, refined division {refine}");
                solves_against_cpu(b, n, 23, &what);
            }
        }
    }
    FORCE_REFINE.with(|f| f.set(None));
    FORCE_COLUMNS.with(|f| f.set(None));
    FORCE_MAX_CUBES.with(|f| f.set(None));
}

#[cfg(feature = "wgpu")]
#[test]
#[ignore = "tier 2 (long on lavapipe): cargo test --release -- --ignored"]
fn wgpu_solve_columns_match_the_cpu() {
    on_test_device("wgpu", crate::backend::Wgpu::new(), |b| {
        columns_against_cpu(&b)
    });
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_solve_columns_match_the_cpu() {
    on_test_device("cuda", crate::backend::Cuda::new(), |b| {
        columns_against_cpu(&b)
    });
}
