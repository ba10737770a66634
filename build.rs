//! Fingerprints the kernel sources for the persistent kernel cache.
//!
//! cubecl keys a compiled kernel by its Rust type name and launch settings, not by its
//! code: a cache kept across builds would hand a rebuilt library the kernels of the old one.
//! `GALERKIN_BUILD_ID` (a hash of every source file, `Cargo.lock`, the enabled features and
//! the profile) names the cache directory of this build, so no two builds share entries.

use std::path::Path;

/// FNV-1a, 64 bits: stable across Rust versions (unlike `DefaultHasher`).
struct Fnv(u64);

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

fn hash_dir(dir: &Path, hash: &mut Fnv) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            hash_dir(&path, hash);
        } else if let Ok(bytes) = std::fs::read(&path) {
            hash.write(path.to_string_lossy().as_bytes());
            hash.write(&bytes);
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
    hash_dir(Path::new("src"), &mut hash);
    if let Ok(lock) = std::fs::read("Cargo.lock") {
        hash.write(&lock);
    }
    let mut features: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("CARGO_FEATURE_"))
        .collect();
    features.sort();
    for var in features
        .iter()
        .map(String::as_str)
        .chain(["PROFILE", "OPT_LEVEL", "TARGET"])
    {
        hash.write(var.as_bytes());
        hash.write(std::env::var(var).unwrap_or_default().as_bytes());
    }
    println!("cargo:rustc-env=GALERKIN_BUILD_ID={:016x}", hash.0);
}
