//! Layout experiment (CUDA only): batched Cholesky of SPD matrices stored matrix after matrix
//! (the library's layout and kernel: coalesced staging through shared memory, then one
//! matrix per unit in registers) against the same register algorithm on an interleaved
//! layout (entry `(i, j)` of every matrix contiguous, so a unit's loads are coalesced with
//! no staging), on the same data, in the same process. Both are timed in place after a copy
//! of the input, minus the copy.

use cubecl::prelude::*;
use galerkin::batched::{cholesky, Batch};
use galerkin::{BackendCore, Cuda, Result, Vector};

use crate::batched::{count_for, spd};
use crate::timing::{gbps, median};
use crate::Options;

/// Cholesky (lower, upper part zeroed) of one interleaved matrix per unit, in registers.
#[cube(launch_unchecked)]
fn cholesky_interleaved<F: Float>(a: &mut Array<F>, count: usize, #[comptime] n: usize) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut e = ABSOLUTE_POS;
    while e < count {
        let mut m = Array::<F>::new(comptime![n * n]);
        #[unroll]
        for t in 0..n * n {
            m[t] = a[t * count + e];
        }
        #[unroll]
        for k in 0..n {
            let r = F::sqrt(m[k * n + k]);
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
        }
        #[unroll]
        for i in 0..n {
            #[unroll]
            for j in i + 1..n {
                m[i * n + j] = F::new(0.0);
            }
        }
        #[unroll]
        for t in 0..n * n {
            a[t * count + e] = m[t];
        }
        e += stride;
    }
}

fn launch(b: &Cuda, a: &Vector<Cuda, f64>, count: usize, n: usize) -> Result<()> {
    let buffer = a.buffer()?;
    let cubes = count.div_ceil(256).min(65535) as u32;
    // SAFETY: the buffer holds count · n² values (plus padding); unit e touches entries
    // t · count + e for t < n², e < count.
    unsafe {
        cholesky_interleaved::launch_unchecked::<f64, cubecl::cuda::CudaRuntime>(
            b.client(),
            CubeCount::Static(cubes, 1, 1),
            CubeDim::new_1d(256),
            ArrayArg::from_raw_parts(buffer.handle().clone(), count * n * n),
            count,
            n,
        )
    };
    Ok(())
}

fn one(b: &Cuda, n: usize, reps: usize) -> Result<()> {
    let count = count_for(n, 8, 1e9);
    let data = spd::<f64>(count, n, n as u64);
    let mut inter = vec![0.0; count * n * n];
    for m in 0..count {
        for t in 0..n * n {
            inter[t * count + m] = data[m * n * n + t];
        }
    }
    let contiguous = Batch::from_slice(b, count, n, n, &data)?;
    let interleaved = Vector::from_slice(b, &inter)?;
    // Agreement of the two on the same matrices.
    let (lib, _) = cholesky::<Cuda, f64, f64>(contiguous.try_clone()?)?;
    let mut work = interleaved.try_clone()?;
    launch(b, &work, count, n)?;
    let (l1, l2) = (lib.to_vec()?, work.to_vec()?);
    let mut diff = 0f64;
    for m in (0..count).step_by(997) {
        for t in 0..n * n {
            diff = diff.max((l1[m * n * n + t] - l2[t * count + m]).abs());
        }
    }
    let bytes = 2.0 * (count * n * n * 8) as f64;
    let t_clone = median(b, reps, || contiguous.try_clone().map(|_| ()))?;
    let t_lib = median(b, reps, || {
        cholesky::<Cuda, f64, f64>(contiguous.try_clone()?).map(|_| ())
    })?
    .saturating_sub(t_clone);
    let t_copy = median(b, reps, || work.copy_from(&interleaved))?;
    let t_inter = median(b, reps, || {
        work.copy_from(&interleaved)?;
        launch(b, &work, count, n)?;
        Ok(())
    })?
    .saturating_sub(t_copy);
    println!(
        "cuda   f64  {n:>3} {count:>8}  contiguous+staging {:>8.1} us {:>7.1} GB/s | interleaved {:>8.1} us {:>7.1} GB/s | max |diff| {diff:.1e}",
        t_lib.as_secs_f64() * 1e6,
        gbps(bytes, t_lib),
        t_inter.as_secs_f64() * 1e6,
        gbps(bytes, t_inter),
    );
    Ok(())
}

pub fn run(options: &Options) {
    let b = match Cuda::new() {
        Ok(b) => b,
        Err(e) => {
            println!("\n# layout: {e}");
            return;
        }
    };
    println!(
        "\n# {}  (layout suite: batched Cholesky f64, time minus the input copy; GB/s of matrices in + out)",
        b.info()
    );
    for n in [2, 4, 8] {
        if let Err(e) = one(&b, n, options.reps) {
            println!("layout n={n}: error: {e}");
        }
    }
}
