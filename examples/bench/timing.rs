//! Timing helpers: synchronise, warm up, batch launches, take the median of many samples.

use std::time::{Duration, Instant};

use galerkin::{Backend, Result};

/// Shortest batch worth timing: long enough that one synchronisation (tens of µs on a GPU)
/// is noise.
const MIN_BATCH_TIME: Duration = Duration::from_millis(5);

/// Median time of one call of `f`: after warm-up, `reps` samples, each the average over a
/// batch of back-to-back calls bracketed by device synchronisation (the batch is sized to
/// take at least 5 ms, so that synchronisation latency does not count). A call that returns
/// a value to the host (a dot product) synchronises inside the batch anyway: its time
/// includes that read-back, as it does for the caller.
pub fn median<B: Backend>(
    backend: &B,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Duration> {
    for _ in 0..2 {
        f()?;
    }
    let batch = batch_size(backend, &mut f)?;
    let times = (0..reps)
        .map(|_| batch_time(backend, batch, &mut f))
        .collect::<Result<Vec<_>>>()?;
    Ok(middle(times))
}

/// Median over `reps` samples of the time of one call of `f` minus one call of `base`, each
/// sample timing a batch of `f` and then a batch of `base` back to back (batches sized as in
/// [`median`] from `f`): for an operation that cannot run without `base` (a factorization
/// that consumes a clone of its input), a disturbance during one batch spoils one sample,
/// not the result. Zero where `base` took longer.
pub fn median_minus<B: Backend>(
    backend: &B,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
    mut base: impl FnMut() -> Result<()>,
) -> Result<Duration> {
    for _ in 0..2 {
        f()?;
        base()?;
    }
    let batch = batch_size(backend, &mut f)?;
    let mut diffs = Vec::with_capacity(reps);
    for _ in 0..reps {
        let with = batch_time(backend, batch, &mut f)?;
        let without = batch_time(backend, batch, &mut base)?;
        diffs.push(with.saturating_sub(without));
    }
    Ok(middle(diffs))
}

/// Most calls in one timed batch.
const MAX_BATCH: u32 = 20_000;

/// Calls of `f` a timed batch takes: enough that a batch of back-to-back calls, bracketed by
/// synchronisation, lasts [`MIN_BATCH_TIME`] (1 to [`MAX_BATCH`]). The batch grows from one
/// call until it does: sized from one synchronised call instead, a runtime whose
/// synchronisation costs more than the call (wgpu's read-back latency) got batches far
/// shorter than intended, and that latency counted in every call.
fn batch_size<B: Backend>(backend: &B, f: &mut impl FnMut() -> Result<()>) -> Result<u32> {
    let mut calls = 1u32;
    loop {
        let total = batch_time(backend, calls, f)? * calls;
        if total >= MIN_BATCH_TIME || calls >= MAX_BATCH {
            return Ok(calls);
        }
        let grow = 1.2 * MIN_BATCH_TIME.as_secs_f64() / total.as_secs_f64().max(1e-7);
        calls = (f64::from(calls) * grow.clamp(2.0, 64.0)).min(f64::from(MAX_BATCH)) as u32;
    }
}

/// The time of one call of `f` over a batch of `batch` back-to-back calls, bracketed by
/// device synchronisation.
pub fn batch_time<B: Backend>(
    backend: &B,
    batch: u32,
    f: &mut impl FnMut() -> Result<()>,
) -> Result<Duration> {
    backend.synchronize()?;
    let t0 = Instant::now();
    for _ in 0..batch {
        f()?;
    }
    backend.synchronize()?;
    Ok(t0.elapsed() / batch)
}

/// The median of `samples` (the upper one of an even count).
pub fn middle(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The copy bandwidth of `b` (GB/s, bytes read plus written) over 2^26 values of `T`.
///
/// # Errors
/// Device errors.
pub fn copy_bandwidth<B: Backend, T: galerkin::Scalar>(b: &B) -> Result<f64> {
    let len = 1usize << 26;
    let x = galerkin::Vector::<B, T>::full(b, len, T::ONE)?;
    let mut y = galerkin::Vector::<B, T>::zeros(b, len)?;
    let bytes = 2.0 * (len * std::mem::size_of::<T>()) as f64;
    Ok(gbps(bytes, median(b, 10, || y.copy_from(&x))?))
}

/// GB/s for `bytes` moved in `t`.
pub fn gbps(bytes: f64, t: Duration) -> f64 {
    bytes / t.as_secs_f64() / 1e9
}
