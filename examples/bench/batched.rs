//! Batched dense suite: GEMM (and with a shared A), LU, Cholesky and inverse for n = 4..64,
//! with enough matrices to move at least 1 GB; GB/s of the useful traffic (operands in,
//! results out, once), GFLOP/s, and the ratio to the copy bandwidth of the same device.
//! `benches/gpu/batched_torch.py` runs PyTorch (cuBLAS/cuSOLVER) on the same shapes.

use galerkin::batched::{
    cholesky, cholesky_solve, gemm, inverse, lu, lu_solve, Batch, GemmParams, Pivoting,
};
use galerkin::verify::Rng;
use galerkin::{Backend, BackendTask, DType, FullBackend, Precision, Result, Scalar};

use crate::timing::{gbps, median, median_minus};
use crate::Options;

/// The sizes.
pub const SIZES: [usize; 10] = [4, 8, 10, 16, 20, 27, 32, 35, 56, 64];

/// Matrices for `n x n` of `size` bytes so that three batches move about `bytes`.
pub fn count_for(n: usize, size: usize, bytes: f64) -> usize {
    ((bytes / (3 * n * n * size) as f64).ceil() as usize).max(1)
}

/// Symmetric, strictly diagonally dominant matrices with a positive diagonal (SPD).
pub fn spd<T: Scalar>(count: usize, n: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng::new(seed);
    let mut out = vec![T::ZERO; count * n * n];
    for m in out.chunks_mut(n * n) {
        for i in 0..n {
            for j in 0..i {
                let v = T::from_f64(rng.range(-1.0, 1.0));
                m[i * n + j] = v;
                m[j * n + i] = v;
            }
            m[i * n + i] = T::from_f64(n as f64 + 1.0);
        }
    }
    out
}

struct Suite<'a>(&'a Options);

/// One side in precision `T`: the operations whose name starts with one of `only` (all when
/// it is empty): `gemm`, `copy`, `lu`, `cholesky`, `inverse`.
fn one<B: Backend, T: Scalar>(b: &B, n: usize, options: &Options, copy: f64) -> Result<()> {
    let (scale, reps) = (options.scale, options.reps);
    let only = &options.only;
    let wanted = |op: &str| only.is_empty() || only.iter().any(|o| op.starts_with(o.as_str()));
    let size = T::DTYPE.size();
    let count = count_for(n, size, 1e9 * scale);
    let data = spd::<T>(count, n, n as u64);
    let a = Batch::from_slice(b, count, n, n, &data)?;
    let bm = Batch::from_slice(b, count, n, n, &spd::<T>(count, n, 7 + n as u64))?;
    let a0 = Batch::from_slice(b, 1, n, n, &data[..n * n])?;
    let mut c = Batch::<B, T>::zeros(b, count, n, n)?;
    let mat_bytes = (count * n * n * size) as f64;
    let n3 = (count * n * n * n) as f64;
    let row = |op: &str, t: std::time::Duration, bytes: f64, flops: f64| {
        let bw = gbps(bytes, t);
        println!(
            "{:<6} {:<4} {:>3} {:>8} {:<30} {:>10.1} {:>8.1} {:>9.1} {:>6.1}%",
            b.kind().name(),
            T::DTYPE.name(),
            n,
            count,
            op,
            t.as_secs_f64() * 1e6,
            bw,
            flops / t.as_secs_f64() / 1e9,
            100.0 * bw / copy
        );
    };
    if wanted("gemm") {
        let t = median(b, reps, || {
            gemm(&GemmParams::<T>::default(), &a, &bm, &mut c)
        })?;
        row("gemm C=AB", t, 3.0 * mat_bytes, 2.0 * n3);
        let t = median(b, reps, || {
            gemm(&GemmParams::<T>::default(), &a0, &bm, &mut c)
        })?;
        row("gemm C=A0 B (shared A)", t, 2.0 * mat_bytes, 2.0 * n3);
    }
    let clone = || a.try_clone().map(|_| ());
    if wanted("copy") {
        let t_clone = median(b, reps, clone)?;
        row("copy (clone)", t_clone, 2.0 * mat_bytes, 0.0);
    }
    // The factorizations work in place on a clone: each sample subtracts a clone timed
    // right after it.
    if wanted("lu") {
        let t = median_minus(
            b,
            reps,
            || lu::<B, T, T>(a.try_clone()?, Pivoting::Partial).map(|_| ()),
            clone,
        )?;
        row("lu pivoting (- clone)", t, 2.0 * mat_bytes, 2.0 / 3.0 * n3);
        // Solves with n right-hand sides, in place on a clone of them.
        let f = lu::<B, T, T>(a.try_clone()?, Pivoting::Partial)?;
        let t = median_minus(
            b,
            reps,
            || lu_solve::<B, T, T>(&f, &mut bm.try_clone()?),
            || bm.try_clone().map(|_| ()),
        )?;
        row("lu solve n rhs (- clone)", t, 3.0 * mat_bytes, 2.0 * n3);
    }
    if wanted("cholesky") {
        let t = median_minus(
            b,
            reps,
            || cholesky::<B, T, T>(a.try_clone()?).map(|_| ()),
            clone,
        )?;
        row("cholesky (- clone)", t, 2.0 * mat_bytes, n3 / 3.0);
        let (l, _) = cholesky::<B, T, T>(a.try_clone()?)?;
        let t = median_minus(
            b,
            reps,
            || cholesky_solve::<B, T, T>(&l, &mut bm.try_clone()?),
            || bm.try_clone().map(|_| ()),
        )?;
        row(
            "cholesky solve n rhs (- clone)",
            t,
            3.0 * mat_bytes,
            2.0 * n3,
        );
    }
    if !wanted("inverse") {
        return Ok(());
    }
    let t = median(b, reps, || inverse::<B, T, T>(&a).map(|_| ()))?;
    row("inverse", t, 2.0 * mat_bytes, 2.0 * n3);
    if T::DTYPE == DType::F32 && b.info().supports_f64() {
        // Mixed precision: the same f32 storage, f64 arithmetic.
        let t = median(b, reps, || inverse::<B, T, f64>(&a).map(|_| ()))?;
        row("inverse, f64 arithmetic", t, 2.0 * mat_bytes, 2.0 * n3);
    }
    Ok(())
}

impl BackendTask for Suite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        println!(
            "\n# {}  (batched suite; median of {} runs; GB/s of operands in + results out)",
            b.info(),
            self.0.reps
        );
        let copy = crate::timing::copy_bandwidth::<B, f32>(&b)?;
        println!("copy bandwidth: {copy:.1} GB/s");
        println!(
            "{:<6} {:<4} {:>3} {:>8} {:<30} {:>10} {:>8} {:>9} {:>7}",
            "bknd", "prec", "n", "count", "op", "time(us)", "GB/s", "GFLOP/s", "of copy"
        );
        let sizes: Vec<usize> = if self.0.log2_sizes.is_empty() {
            SIZES.to_vec()
        } else {
            self.0.log2_sizes.iter().map(|&v| v as usize).collect()
        };
        for &n in &sizes {
            for &p in &self.0.precisions {
                let r = match p {
                    Precision::F32 => one::<B, f32>(&b, n, self.0, copy),
                    Precision::F64 if b.info().supports_f64() => one::<B, f64>(&b, n, self.0, copy),
                    Precision::F64 => Ok(()),
                };
                if let Err(e) = r {
                    println!("{} n={n} {p}: error: {e}", b.kind().name());
                }
            }
        }
        Ok(())
    }
}

pub fn run(options: &Options) {
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(kind, Suite(options)) {
            println!("\n# {kind}: {e}");
        }
    }
}
