//! Dispatch probe (CUDA and wgpu): where the time of a short kernel goes. For a copy of 2^20
//! f64 and the FVM-tets SpMV (6·70³ and 6·8³ cells, SELL C = 32, f64), three times per
//! call: the wall time in a batch of back-to-back calls (as every suite times), the device
//! time of one call alone, and the device time of 32 calls together, divided by 32. Device
//! time is cubecl's profiler (`ComputeClient::profile`: CUDA events; on wgpu Vulkan timestamp
//! queries at the start and end of a compute pass, so the 32-call column covers only the
//! first submission when `CUBECL_WGPU_MAX_TASKS` is below 32). One call alone is the kernel;
//! 32 together add what the device spends between kernels; the wall time adds what it waits
//! for the host.

use std::time::Duration;

use galerkin::backend::CubeRuntime;
use galerkin::sparse::{Format, FormatOptions, SellParams, SparseMatrix};
use galerkin::{BackendCore, Cube, Error, Result, Vector};

use crate::timing::{batch_time, median, middle};

/// Median over `reps` samples of the device time of `calls` calls of `f`.
fn device_time<R: CubeRuntime>(
    b: &Cube<R>,
    reps: usize,
    calls: usize,
    f: &mut (impl FnMut() -> Result<()> + Send),
) -> Result<Duration> {
    let device_error = |e: &dyn std::fmt::Debug| Error::Device {
        backend: b.info().to_string(),
        message: format!("profiling: {e:?}"),
    };
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        b.synchronize()?;
        let (done, duration) = b
            .client()
            .profile(|| (0..calls).try_for_each(|_| f()), "dispatch probe")
            .map_err(|e| device_error(&e))?;
        done?;
        times.push(cubecl::future::block_on(duration.resolve()).duration());
    }
    Ok(middle(times))
}

fn line<R: CubeRuntime>(
    b: &Cube<R>,
    what: &str,
    reps: usize,
    mut f: impl FnMut() -> Result<()> + Send,
) -> Result<()> {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let wall = median(b, reps, &mut f)?;
    let one = device_time(b, reps, 1, &mut f)?;
    let batch = device_time(b, reps, 32, &mut f)?;
    println!(
        "{:<6} {what:<34} {:>9.1} {:>9.1} {:>9.1}",
        b.kind().name(),
        us(wall),
        us(one),
        us(batch) / 32.0,
    );
    Ok(())
}

/// Prints the probe's table for `b`.
pub fn probe<R: CubeRuntime>(b: &Cube<R>, reps: usize) -> Result<()> {
    println!(
        "dispatch probe (us per call): wall in a batch | device, one call alone | device, per call of 32"
    );
    let n = 1 << 20;
    let x = Vector::<Cube<R>, f64>::full(b, n, 1.0)?;
    let mut y = Vector::<Cube<R>, f64>::zeros(b, n)?;
    line(b, "copy 2^20 f64", reps, || y.copy_from(&x))?;
    let options = FormatOptions {
        sell: Some(SellParams {
            slice_height: 32,
            sigma: 1,
        }),
        ..FormatOptions::default()
    };
    // The suite's size, and a tiny one (3072 rows) whose device time is negligible: its wall
    // time per call is what the host spends on one SpMV call.
    for n in [70, 8] {
        let a = galerkin::fvm::tpfa_tets_structured(n, 0.15, 1)?;
        let m = SparseMatrix::from_csr(b, &a, Format::Sell, &options)?;
        let x = Vector::<Cube<R>, f64>::full(b, a.ncols(), 1.0)?;
        let mut y = Vector::<Cube<R>, f64>::zeros(b, a.nrows())?;
        let what = format!("SpMV FVM tets 6·{n}³ SELL 32 f64");
        line(b, &what, reps, || m.spmv(1.0, &x, 0.0, &mut y))?;
        if n == 70 {
            by_batch(b, reps, || m.spmv(1.0, &x, 0.0, &mut y))?;
        }
    }
    Ok(())
}

/// Wall time per call of `f` in batches of 1 to 1024 back-to-back calls, each batch
/// bracketed by synchronisation: what a batch pays once (filling the pipeline, the final
/// wait) over what each call pays.
fn by_batch<R: CubeRuntime>(
    b: &Cube<R>,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<()> {
    let mut cells = Vec::new();
    for calls in [1u32, 4, 16, 64, 256, 1024] {
        let times = (0..reps.min(9))
            .map(|_| batch_time(b, calls, &mut f))
            .collect::<Result<Vec<_>>>()?;
        cells.push(format!("{calls}: {:.1}", middle(times).as_secs_f64() * 1e6));
    }
    println!(
        "{:<6}   per call, batch of {}",
        b.kind().name(),
        cells.join(" | ")
    );
    Ok(())
}
