//! Backend instantiation for the tests, and shared helpers.

use std::io::Write;
#[cfg(any(feature = "wgpu", feature = "cuda"))]
use std::sync::OnceLock;

use galerkin::verify::{compare, compare_scaled, Comparison};
use galerkin::{scalar::tolerance, Backend, BackendKind, Element, Scalar};

/// Lengths every vector test runs: empty, one, not a multiple of any vector width, and
/// large enough for many cubes and many rayon chunks.
pub const LENGTHS: [usize; 5] = [0, 1, 31, 1000, (1 << 20) + 3];

/// Prints past libtest's output capture, so that skips are visible in a normal run.
pub fn announce(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
fn required(kind: BackendKind) -> bool {
    std::env::var("GALERKIN_REQUIRE_BACKENDS")
        .map(|v| {
            v.split(',')
                .any(|k| k.trim().eq_ignore_ascii_case(kind.name()))
        })
        .unwrap_or(false)
}

/// Resolves a backend connection once per process: `Some` when usable; `None` (with a
/// message) when absent and not required; a panic when absent and required.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
fn resolve<B: Backend>(
    kind: BackendKind,
    connect: impl FnOnce() -> galerkin::Result<B>,
) -> Option<B> {
    match connect() {
        Ok(b) => {
            announce(&format!("[galerkin tests] {kind} backend: {}", b.info()));
            Some(b)
        }
        Err(e) if required(kind) => {
            panic!("{kind} backend is required (GALERKIN_REQUIRE_BACKENDS) but unavailable: {e}")
        }
        Err(e) => {
            announce(&format!("[galerkin tests] SKIPPING every {kind} test: {e}"));
            None
        }
    }
}

/// The CPU backend.
pub fn cpu() -> Option<galerkin::Cpu> {
    Some(galerkin::Cpu::new())
}

/// The wgpu backend, if its device is present.
#[cfg(feature = "wgpu")]
pub fn wgpu() -> Option<galerkin::Wgpu> {
    static CELL: OnceLock<Option<galerkin::Wgpu>> = OnceLock::new();
    CELL.get_or_init(|| resolve(BackendKind::Wgpu, galerkin::Wgpu::new))
        .clone()
}

/// The CUDA backend, if its device is present.
#[cfg(feature = "cuda")]
pub fn cuda() -> Option<galerkin::Cuda> {
    static CELL: OnceLock<Option<galerkin::Cuda>> = OnceLock::new();
    CELL.get_or_init(|| resolve(BackendKind::Cuda, galerkin::Cuda::new))
        .clone()
}

/// `Some(backend)` if it supports `T`; otherwise announces the skip.
pub fn with_precision<B: Backend, T: Element>(backend: Option<B>, test: &str) -> Option<B> {
    let backend = backend?;
    if backend.supports(T::DTYPE) {
        Some(backend)
    } else {
        announce(&format!(
            "[galerkin tests] skipping {test}: {} has no {}",
            backend.info(),
            T::DTYPE
        ));
        None
    }
}

/// Instantiates generic test bodies `fn name<B: Backend, T: Scalar>(backend: &B)` for every
/// backend compiled in and both precisions: `name::cpu_f32`, `name::wgpu_f64`, ...
///
/// Two tiers: `backend_tests!(a, b)` runs in the default `cargo test` (tier 1: every kernel
/// family on every backend, at the sizes that prove it); `backend_tests!(tier2: c)` marks
/// every instance `#[ignore]`d and `backend_tests!(tier2_devices: d)` the GPU instances only
/// (the CPU's stay in tier 1): the long convergence studies, size sweeps and real-mesh runs,
/// which `cargo test --release -- --ignored` runs (CI runs both tiers; the GPU scripts run
/// the CUDA tests with `--include-ignored`).
#[macro_export]
macro_rules! backend_tests {
    (tier2: $($name:ident),* $(,)?) => {
        $crate::backend_tests!(@emit
            [ignore = "tier 2 (long): cargo test --release -- --ignored"]
            [ignore = "tier 2 (long): cargo test --release -- --ignored"]
            $($name),*);
    };
    (tier2_devices: $($name:ident),* $(,)?) => {
        $crate::backend_tests!(@emit
            [cfg(all())]
            [ignore = "tier 2 (long on a device): cargo test --release -- --ignored"]
            $($name),*);
    };
    // `$cpu` and `$device`: the attribute of the CPU and of the GPU instances.
    (@emit $cpu:tt $device:tt $($name:ident),* $(,)?) => {$(
        mod $name {
            #[allow(unused_imports)]
            use $crate::harness;
            #[test]
            #$cpu
            fn cpu_f32() {
                if let Some(b) = harness::with_precision::<_, f32>(harness::cpu(), stringify!($name)) {
                    super::$name::<_, f32>(&b);
                }
            }
            #[test]
            #$cpu
            fn cpu_f64() {
                if let Some(b) = harness::with_precision::<_, f64>(harness::cpu(), stringify!($name)) {
                    super::$name::<_, f64>(&b);
                }
            }
            #[cfg(feature = "wgpu")]
            #[test]
            #$device
            fn wgpu_f32() {
                if let Some(b) = harness::with_precision::<_, f32>(harness::wgpu(), stringify!($name)) {
                    super::$name::<_, f32>(&b);
                }
            }
            #[cfg(feature = "wgpu")]
            #[test]
            #$device
            fn wgpu_f64() {
                if let Some(b) = harness::with_precision::<_, f64>(harness::wgpu(), stringify!($name)) {
                    super::$name::<_, f64>(&b);
                }
            }
            #[cfg(feature = "cuda")]
            #[test]
            #$device
            fn cuda_f32() {
                if let Some(b) = harness::with_precision::<_, f32>(harness::cuda(), stringify!($name)) {
                    super::$name::<_, f32>(&b);
                }
            }
            #[cfg(feature = "cuda")]
            #[test]
            #$device
            fn cuda_f64() {
                if let Some(b) = harness::with_precision::<_, f64>(harness::cuda(), stringify!($name)) {
                    super::$name::<_, f64>(&b);
                }
            }
        }
    )*};
    ($($name:ident),* $(,)?) => {
        $crate::backend_tests!(@emit [cfg(all())] [cfg(all())] $($name),*);
    };
}

/// Neumaier-compensated sum: the reference for reductions (error independent of length).
pub fn exact_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    for v in values {
        let t = sum + v;
        if sum.abs() >= v.abs() {
            comp += (sum - t) + v;
        } else {
            comp += (v - t) + sum;
        }
        sum = t;
    }
    sum + comp
}

/// Widens a slice to f64.
pub fn widen<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.as_f64()).collect()
}

/// Asserts `result` matches `reference` within the tolerance of `T` for `terms`
/// accumulated operations, with a message naming the case.
#[track_caller]
pub fn assert_close<T: Scalar>(
    result: &[T],
    reference: &[f64],
    terms: usize,
    case: &str,
) -> Comparison {
    let c = compare(result, reference, tolerance::<T>(terms)).expect("lengths agree");
    assert!(c.passed, "{case} ({}): {c}", T::DTYPE);
    c
}

/// As [`assert_close`] but relative to `scale` (for cancelling sums).
#[track_caller]
pub fn assert_close_scaled<T: Scalar>(
    result: &[T],
    reference: &[f64],
    scale: f64,
    terms: usize,
    case: &str,
) {
    let c = compare_scaled(result, reference, scale, tolerance::<T>(terms)).expect("lengths agree");
    assert!(c.passed, "{case} ({}): {c}", T::DTYPE);
}
