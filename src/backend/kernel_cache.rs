//! The persistent kernel cache: where compiled device kernels are kept between runs.
//!
//! Compiling kernels is most of what a first call waits for (seconds, against milliseconds of
//! work). The CUDA backend keeps the PTX that NVRTC produced on disk and loads it on the next
//! run instead of compiling again. The cache is on by default:
//!
//! | `GALERKIN_KERNEL_CACHE` | cache directory |
//! |---|---|
//! | unset | `$XDG_CACHE_HOME/galerkin/kernels`, else `$HOME/.cache/galerkin/kernels` |
//! | a path | that directory |
//! | `off`, `0`, `false`, `none` or empty | no cache: every run compiles |
//!
//! Below that directory each build of the library has its own directory, named by a hash of
//! its sources, its `Cargo.lock`, its features and its profile (cubecl keys a kernel by its
//! type name and launch settings, not its code: a rebuilt library must never load the old
//! one's kernels); below that each build of the running program its own, named by the
//! program's file name and a hash of its path, size and modification time (a program's own
//! kernels, or another crate's launched on this backend, are not in the library's hash); and
//! below that each device its own, named by the GPU's model, compute capability and driver
//! version. A cache written by another build, GPU or driver is thus
//! never read; old directories can be deleted at any time (never a part of one). Processes
//! (MPI ranks) may share a cache: entries are appended whole, and the table of contents is
//! written under a lock file.
//!
//! wgpu has no cache of its own here: cubecl 0.10 keeps one only for the SPIR-V of its
//! Vulkan compiler (feature `vulkan`, keyed without the adapter's features), and not for
//! WGSL, the default; the Vulkan driver's own shader cache (NVIDIA keeps one on disk) still
//! applies. A directory that cannot be created or written disables the cache for the process
//! rather than the backend: [`BackendInfo::kernel_cache`](crate::backend::BackendInfo)
//! says which directory a connection uses, if any.

use std::path::{Path, PathBuf};

/// The environment variable that moves (`GALERKIN_KERNEL_CACHE=/path`) or disables
/// (`GALERKIN_KERNEL_CACHE=off`) the kernel cache.
pub const KERNEL_CACHE_ENV: &str = "GALERKIN_KERNEL_CACHE";

/// The fingerprint of this build of the library: a hash of its sources, `Cargo.lock`, the
/// enabled features and the profile (16 hex digits). Names the build's cache directory.
pub const BUILD_ID: &str = env!("GALERKIN_BUILD_ID");

/// The root of the kernel cache as the environment sets it (see the [module](self)): `None`
/// when the cache is off, or when neither `GALERKIN_KERNEL_CACHE`, `XDG_CACHE_HOME` nor
/// `HOME` names a directory.
pub fn kernel_cache_dir() -> Option<PathBuf> {
    resolve(
        std::env::var_os(KERNEL_CACHE_ENV).as_deref(),
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// [`kernel_cache_dir`] for given values of `GALERKIN_KERNEL_CACHE`, `XDG_CACHE_HOME` and
/// `HOME` (`None`: unset).
fn resolve(
    setting: Option<&std::ffi::OsStr>,
    xdg_cache_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    if let Some(setting) = setting {
        let text = setting.to_string_lossy();
        let off = ["", "off", "0", "false", "none", "no"];
        if off.iter().any(|o| text.trim().eq_ignore_ascii_case(o)) {
            return None;
        }
        return Some(PathBuf::from(setting));
    }
    // The XDG base directory specification: a relative XDG_CACHE_HOME is invalid, ignore it.
    if let Some(xdg) = xdg_cache_home.map(Path::new).filter(|p| p.is_absolute()) {
        return Some(xdg.join("galerkin").join("kernels"));
    }
    home.map(Path::new)
        .filter(|p| p.is_absolute())
        .map(|home| home.join(".cache").join("galerkin").join("kernels"))
}

/// `text` as one safe path component: ASCII letters, digits, `.`, `-` and `_`, everything
/// else `_`, at most 96 characters.
pub(crate) fn path_component(text: &str) -> String {
    let mut s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(96)
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        s = "_".to_string();
    }
    s
}

/// The directory of this build's kernels for the device named `device` (already made safe
/// by the caller or not: it is passed through [`path_component`]), created and checked
/// writable; `None` where the cache is off or the directory is not usable.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn device_dir(root: &Path, device: &str) -> Option<PathBuf> {
    let dir = root
        .join(BUILD_ID)
        .join(program())
        .join(path_component(device));
    usable(&dir).then_some(dir)
}

/// The running program's name and a hash of its path, size and modification time: kernels
/// a program defines itself (or takes from another crate) are not in [`BUILD_ID`], so each
/// build of a program gets its own directory; runs of the same binary (MPI ranks) share it.
fn program() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "unknown-program".to_string();
    };
    let name = exe
        .file_name()
        .map_or("program".into(), |n| n.to_string_lossy().into_owned());
    // std's hasher with its fixed keys: the same for every run of one binary, which is all
    // this name needs (another build is another binary).
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    exe.hash(&mut hasher);
    if let Ok(meta) = std::fs::metadata(&exe) {
        meta.len().hash(&mut hasher);
        meta.modified().ok().hash(&mut hasher);
    }
    path_component(&format!("{name}-{:016x}", hasher.finish()))
}

/// Whether `dir` exists (or can be created) and a file in it can be opened for appending,
/// as cubecl's cache will (it panics where it cannot).
fn usable(dir: &Path) -> bool {
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    let ok = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn the_environment_moves_or_disables_the_cache() {
        let xdg = Some(OsStr::new("/xdg"));
        let home = Some(OsStr::new("/home/u"));
        assert_eq!(
            resolve(None, xdg, home),
            Some(PathBuf::from("/xdg/galerkin/kernels"))
        );
        assert_eq!(
            resolve(None, None, home),
            Some(PathBuf::from("/home/u/.cache/galerkin/kernels"))
        );
        // A relative XDG_CACHE_HOME is invalid (XDG specification).
        assert_eq!(
            resolve(None, Some(OsStr::new("rel")), home),
            Some(PathBuf::from("/home/u/.cache/galerkin/kernels"))
        );
        assert_eq!(resolve(None, None, None), None);
        for off in ["off", "OFF", "0", "false", "none", "", " no "] {
            assert_eq!(resolve(Some(OsStr::new(off)), xdg, home), None, "{off:?}");
        }
        assert_eq!(
            resolve(Some(OsStr::new("/tmp/k")), xdg, home),
            Some(PathBuf::from("/tmp/k"))
        );
    }

    #[test]
    fn device_names_become_one_safe_path_component() {
        assert_eq!(
            path_component("NVIDIA H200 sm90 / driver 12.8"),
            "NVIDIA_H200_sm90___driver_12.8"
        );
        assert_eq!(path_component(".."), "_");
        assert_eq!(path_component(""), "_");
        assert_eq!(path_component(&"x".repeat(500)).len(), 96);
    }

    #[test]
    fn the_build_directory_is_created_and_an_unusable_root_disables_the_cache() {
        assert_eq!(BUILD_ID.len(), 16);
        assert!(BUILD_ID.chars().all(|c| c.is_ascii_hexdigit()));
        let root = std::env::temp_dir().join(format!("galerkin-kc-{}", std::process::id()));
        let dir = device_dir(&root, "GPU 0").expect("a temporary directory is usable");
        assert_eq!(dir, root.join(BUILD_ID).join(program()).join("GPU_0"));
        assert!(dir.is_dir());
        // The same program, the same directory.
        assert_eq!(device_dir(&root, "GPU 0"), Some(dir));
        // A regular file where the root should be: not usable, so no cache (never a panic).
        let file = root.join("file");
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(device_dir(&file, "GPU 0"), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
