//! Kernel expansion and compilation failures, made visible.
//!
//! cubecl 0.10 expands and compiles a kernel on the device's runner thread (named `DS…`),
//! inside a `catch_unwind` that only logs: a kernel whose expansion panics is simply not run,
//! and no client call reports it. So a panic hook, installed once when the first device
//! connects, records every panic of a runner thread here; [`take`] hands them to whoever
//! waits for the device next ([`Cube::flush`](super::Cube::flush)), which returns them as
//! [`Error::KernelCompilation`](crate::error::Error::KernelCompilation). Errors that cubecl does
//! return (WGSL validation, NVRTC, resource limits) come back from `client.flush()` itself.

use std::sync::{Mutex, Once};

/// Panics of runner threads since the last [`take`].
static RECORDED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Installs the recording hook (once per process), chained before the previous hook so that
/// the panic is still printed as usual.
pub(crate) fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let runner = std::thread::current()
                .name()
                .is_some_and(|name| name.starts_with("DS"));
            if runner {
                let message = match info.payload().downcast_ref::<&str>() {
                    Some(s) => (*s).to_string(),
                    None => info
                        .payload()
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| "a panic without a message".into()),
                };
                let place = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                RECORDED
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(format!("{message}{place}"));
            }
            previous(info);
        }));
    });
}

/// The runner-thread panics recorded since the last call (and forgets them).
pub(crate) fn take() -> Vec<String> {
    std::mem::take(&mut *RECORDED.lock().unwrap_or_else(|e| e.into_inner()))
}
