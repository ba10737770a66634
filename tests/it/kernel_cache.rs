//! The persistent kernel cache: CUDA keeps what it compiled below this build's directory of
//! the cache root; the CPU and wgpu keep nothing there.

use galerkin::backend::{kernel_cache::BUILD_ID, kernel_cache_dir, BackendKind};
use galerkin::verify::random_vec;
use galerkin::{Backend, Scalar, Vector};

use crate::backend_tests;

/// Every file below `dir`, with its size.
fn files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                out.extend(files(&path));
            } else if let Ok(meta) = e.metadata() {
                out.push((path, meta.len()));
            }
        }
    }
    out
}

fn kernel_cache_location<B: Backend, T: Scalar>(b: &B) {
    // A kernel of this type, compiled (or loaded from the cache) and run.
    let n = 1000;
    let x = Vector::<B, T>::from_slice(b, &random_vec::<T>(n, 5)).unwrap();
    let mut y = Vector::<B, T>::from_slice(b, &random_vec::<T>(n, 6)).unwrap();
    y.axpby(T::from_f64(0.5), &x, T::from_f64(2.0)).unwrap();
    b.synchronize().unwrap();
    let info = b.info();
    match (info.kind, kernel_cache_dir()) {
        (BackendKind::Cuda, Some(root)) => {
            let dir = info
                .kernel_cache
                .as_ref()
                .expect("CUDA uses the kernel cache");
            assert!(dir.starts_with(root.join(BUILD_ID)), "{}", dir.display());
            let name = dir.file_name().unwrap().to_string_lossy().to_string();
            assert!(name.starts_with("cuda-") && name.contains("-sm"), "{name}");
            let written: u64 = files(dir).iter().map(|f| f.1).sum();
            assert!(written > 0, "nothing in {}", dir.display());
        }
        _ => assert_eq!(info.kernel_cache, None, "{info}"),
    }
}

backend_tests!(kernel_cache_location);

/// `memory_peak` while buffers are held: at least their bytes, padding included (other
/// tests allocate on the same connection at the same time, so only a lower bound holds
/// here; the exact accounting is a unit test of `backend::cube::memory`). `None` on the CPU.
fn memory_peak_counts_buffers<B: Backend, T: Scalar>(b: &B) {
    if b.info().kind == BackendKind::Cpu {
        assert_eq!(b.memory_peak(), None);
        return;
    }
    let size = std::mem::size_of::<T>() as u64;
    let x = Vector::<B, T>::from_slice(b, &random_vec::<T>(1001, 1)).unwrap();
    let y = Vector::<B, T>::zeros(b, 3000).unwrap();
    b.reset_memory_peak();
    let peak = b.memory_peak().unwrap();
    assert!(peak >= (1004 + 3000) * size, "{peak}");
    drop((x, y));
}

backend_tests!(memory_peak_counts_buffers);
