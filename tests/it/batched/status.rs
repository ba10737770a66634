//! The status of the factorizations: a singular or non-SPD member is reported by index and
//! leaves its neighbours as they were, and the status codes of regular, singular and nearly
//! singular matrices are the same on every backend as on the CPU.

use galerkin::batched::{cholesky, inverse, lu, Batch, Pivoting};
use galerkin::verify::Rng;
use galerkin::{Backend, Scalar};

use super::{matrices, to_t};
use crate::backend_tests;

/// A singular member (LU) and a non-SPD member (Cholesky) are reported by index; their
/// neighbours are computed exactly as without them.
fn batched_status_isolates_bad_members<B: Backend, T: Scalar>(b: &B) {
    isolates_bad_members_at::<B, T>(b, &[5, 12]);
}

/// At n = 40 (tier 2): the tile kernels on wgpu, one matrix a cube on its budget.
fn batched_status_isolates_bad_members_at_40<B: Backend, T: Scalar>(b: &B) {
    isolates_bad_members_at::<B, T>(b, &[40]);
}

fn isolates_bad_members_at<B: Backend, T: Scalar>(b: &B, sides: &[usize]) {
    // n = 5: the register kernels on GPUs; n = 12, 40: the shared-memory kernels (several
    // matrices a cube, or one on wgpu's budget at 40).
    for &n in sides {
        let count = 9;
        let mut host = matrices(count, n, false, 31);
        // Matrix 3: column 2 is zero -> zero pivot at step 2 (LAPACK info 3) or later.
        for i in 0..n {
            host[3 * n * n + i * n + 2] = 0.0;
        }
        let clean = matrices(count, n, false, 31);
        let f = lu::<B, T, T>(
            Batch::from_slice(b, count, n, n, &to_t::<T>(&host)).unwrap(),
            Pivoting::Partial,
        )
        .unwrap();
        let g = lu::<B, T, T>(
            Batch::from_slice(b, count, n, n, &to_t::<T>(&clean)).unwrap(),
            Pivoting::Partial,
        )
        .unwrap();
        let failures = f.status().failures().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].0, 3);
        assert!(failures[0].1 >= 1 && failures[0].1 <= n as i32);
        let (fs, gs) = (f.factors().to_vec().unwrap(), g.factors().to_vec().unwrap());
        for m in (0..count).filter(|&m| m != 3) {
            assert_eq!(
                fs[m * n * n..(m + 1) * n * n],
                gs[m * n * n..(m + 1) * n * n],
                "neighbour {m} changed"
            );
        }
        let mut spd = matrices(count, n, true, 32);
        spd[6 * n * n + n + 1] = -1.0; // a negative diagonal entry: not positive definite
        let (_, status) =
            cholesky::<B, T, T>(Batch::from_slice(b, count, n, n, &to_t::<T>(&spd)).unwrap())
                .unwrap();
        assert_eq!(
            status
                .failures()
                .unwrap()
                .iter()
                .map(|f| f.0)
                .collect::<Vec<_>>(),
            vec![6]
        );
        // The inverse reports the same member and leaves the others as without it.
        let (inv_bad, st) =
            inverse::<B, T, T>(&Batch::from_slice(b, count, n, n, &to_t::<T>(&host)).unwrap())
                .unwrap();
        let (inv_clean, _) =
            inverse::<B, T, T>(&Batch::from_slice(b, count, n, n, &to_t::<T>(&clean)).unwrap())
                .unwrap();
        let bad = st.failures().unwrap();
        assert_eq!(
            bad.iter().map(|f| f.0).collect::<Vec<_>>(),
            vec![3],
            "{bad:?}"
        );
        let (ib, ic) = (inv_bad.to_vec().unwrap(), inv_clean.to_vec().unwrap());
        for m in (0..count).filter(|&m| m != 3) {
            assert_eq!(
                ib[m * n * n..(m + 1) * n * n],
                ic[m * n * n..(m + 1) * n * n],
                "inverse of neighbour {m} changed"
            );
        }
    }
}

backend_tests!(batched_status_isolates_bad_members);
backend_tests!(tier2: batched_status_isolates_bad_members_at_40);

/// The kinds of matrix of the status test: well conditioned, exactly singular in four ways,
/// and nearly singular (a duplicated row perturbed well above the singularity threshold).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Regular,
    DuplicateRow,
    ScaledRow,
    DuplicateColumn,
    ZeroRow,
    NearlyDuplicate,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Regular,
        Kind::DuplicateRow,
        Kind::ScaledRow,
        Kind::DuplicateColumn,
        Kind::ZeroRow,
        Kind::NearlyDuplicate,
    ];

    /// Whether matrices of this kind and size are singular (too small for their pattern,
    /// they get a zero row instead).
    fn singular(self, n: usize) -> bool {
        match self {
            Kind::Regular => false,
            Kind::NearlyDuplicate => n == 1,
            _ => true,
        }
    }
}

/// `count` matrices of `kind`: small integers (exact in every precision), so the exact
/// singular ones are singular in every precision; the rows involved vary per matrix. (A
/// row that is the sum of two others is singular too, but elimination leaves a pivot of a
/// few hundred ε there, not a few ε: see the Status section of `galerkin::batched`.)
fn status_matrices<T: Scalar>(count: usize, n: usize, kind: Kind, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count * n * n);
    // Perturbation of the nearly singular kind: far above n ε, far below 1.
    let delta = if T::EPS < 1e-10 { 1e-6 } else { 1e-2 };
    for _ in 0..count {
        let mut m: Vec<f64> = (0..n * n)
            .map(|_| (rng.below(9) as f64 - 4.0).max(-4.0))
            .collect();
        for i in 0..n {
            m[i * n + i] += 4.0 * n as f64; // well conditioned unless made singular below
        }
        let (i, j) = (rng.below(n), rng.below(n));
        let (i, j) = if i == j { (i, (i + 1) % n) } else { (i, j) };
        match kind {
            Kind::Regular => {}
            Kind::DuplicateRow | Kind::NearlyDuplicate if n > 1 => {
                for c in 0..n {
                    m[j * n + c] = m[i * n + c];
                    if kind == Kind::NearlyDuplicate {
                        m[j * n + c] += delta * (1.0 + (c % 3) as f64) * n as f64;
                    }
                }
            }
            Kind::ScaledRow if n > 1 => {
                for c in 0..n {
                    m[j * n + c] = -2.0 * m[i * n + c];
                }
            }
            Kind::DuplicateColumn if n > 1 => {
                for r in 0..n {
                    m[r * n + j] = m[r * n + i];
                }
            }
            Kind::ZeroRow => m[i * n..(i + 1) * n].fill(0.0),
            _ => m[i * n..(i + 1) * n].fill(0.0), // too small for the pattern: a zero row
        }
        out.extend(m);
    }
    out
}

/// Gram matrices `G = M Mᵀ` (+ a regularising multiple of I unless `singular`): positive
/// definite, or semidefinite with a duplicated row of `M` (exactly, in integers).
fn gram_matrices(count: usize, n: usize, singular: bool, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count * n * n);
    for _ in 0..count {
        let mut m: Vec<f64> = (0..n * n).map(|_| rng.below(5) as f64 - 2.0).collect();
        if singular {
            let i = rng.below(n);
            let j = (i + 1 + rng.below(n.max(2) - 1)) % n;
            if i != j {
                for c in 0..n {
                    m[j * n + c] = m[i * n + c];
                }
            } else {
                m.fill(0.0);
            }
        }
        for r in 0..n {
            for c in 0..n {
                let g: f64 = (0..n).map(|k| m[r * n + k] * m[c * n + k]).sum();
                out.push(g + if !singular && r == c { n as f64 } else { 0.0 });
            }
        }
    }
    out
}

/// The status codes of LU (with and without pivoting), the inverse (the register
/// Gauss–Jordan kernel for n <= 8 on GPUs, LU elsewhere) and Cholesky are the same on every
/// backend as on the CPU, for regular, exactly singular and nearly singular matrices at
/// every size and kernel path (registers, staged whole or row by row, shared memory with
/// the scale column, and the 64 x 64 f64 path without one on 32 KiB devices).
fn batched_status_same_on_every_backend<B: Backend, T: Scalar>(b: &B) {
    same_status_at::<B, T>(b, &[1, 3, 8, 9, 16]);
}

/// Every side the kernels switch at (tier 2).
fn batched_status_same_on_every_backend_every_side<B: Backend, T: Scalar>(b: &B) {
    let sides: Vec<usize> = (1..=9).chain([16, 20, 27, 31, 32, 33, 63, 64]).collect();
    same_status_at::<B, T>(b, &sides);
}

fn same_status_at<B: Backend, T: Scalar>(b: &B, sides: &[usize]) {
    let cpu = galerkin::Cpu::new();
    for &n in sides {
        let count = if n > 16 { 7 } else { 33 };
        for kind in Kind::ALL {
            let host = to_t::<T>(&status_matrices::<T>(count, n, kind, 1000 + n as u64));
            let on = |backend: &B| Batch::from_slice(backend, count, n, n, &host).unwrap();
            let on_cpu = || Batch::from_slice(&cpu, count, n, n, &host).unwrap();
            for pivoting in [Pivoting::Partial, Pivoting::None] {
                let got = lu::<B, T, T>(on(b), pivoting)
                    .unwrap()
                    .status()
                    .codes()
                    .unwrap();
                let want = lu::<_, T, T>(on_cpu(), pivoting)
                    .unwrap()
                    .status()
                    .codes()
                    .unwrap();
                assert_eq!(got, want, "LU ({pivoting:?}) n = {n}, {kind:?}");
                if pivoting == Pivoting::Partial {
                    let flagged = want.iter().all(|&c| c != 0);
                    assert_eq!(flagged, kind.singular(n), "n = {n}, {kind:?}: {want:?}");
                }
            }
            let (_, got) = inverse::<B, T, T>(&on(b)).unwrap();
            let (_, want) = inverse::<_, T, T>(&on_cpu()).unwrap();
            let (got, want) = (got.codes().unwrap(), want.codes().unwrap());
            assert_eq!(got, want, "inverse n = {n}, {kind:?}");
            assert_eq!(
                want.iter().all(|&c| c != 0),
                kind.singular(n),
                "inverse n = {n}, {kind:?}: {want:?}"
            );
        }
        for singular in [false, true] {
            let host = to_t::<T>(&gram_matrices(count, n, singular, 2000 + n as u64));
            let (_, got) =
                cholesky::<B, T, T>(Batch::from_slice(b, count, n, n, &host).unwrap()).unwrap();
            let (_, want) =
                cholesky::<_, T, T>(Batch::from_slice(&cpu, count, n, n, &host).unwrap()).unwrap();
            let (got, want) = (got.codes().unwrap(), want.codes().unwrap());
            assert_eq!(got, want, "Cholesky n = {n}, singular {singular}");
            assert_eq!(
                want.iter().all(|&c| c != 0),
                singular,
                "Cholesky n = {n}, singular {singular}: {want:?}"
            );
        }
    }
}

backend_tests!(batched_status_same_on_every_backend);
backend_tests!(tier2: batched_status_same_on_every_backend_every_side);
