//! Limits on what input may make the library do: host memory checked before a large
//! allocation, bounded line lengths for the text readers.
//!
//! Every size a user can type (a generator's `N`, a header's entry count, a mesh's
//! refinement) is turned into the bytes it would allocate and checked with
//! [`check_host_bytes`] first, so that too large a request is an
//! [`Error::ResourceLimit`] naming what was asked for, not an abort in the allocator.
//!
//! ```
//! use galerkin::limits::{check_host_bytes, bytes_for};
//!
//! // 10^15 f64 values cannot be had on any machine of today.
//! let request = bytes_for(1_000_000_000_000_000, 8).unwrap();
//! assert!(check_host_bytes("a vector", request).is_err());
//! assert!(check_host_bytes("a vector", 1024).is_ok());
//! ```

use std::io::BufRead;

use crate::error::{Error, Result};

/// The longest line the text readers (Matrix Market, Gmsh, plain vectors) accept, in bytes.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// `count · each` bytes, or `None` if that overflows `u64`.
pub fn bytes_for(count: u64, each: u64) -> Option<u64> {
    count.checked_mul(each)
}

/// The host's physical memory (`MemTotal` of `/proc/meminfo` on Linux), or `None` where it
/// cannot be read.
pub fn host_memory_total() -> Option<u64> {
    meminfo_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemTotal:")
}

/// A field of the text of `/proc/meminfo` or `/proc/self/status` (`Name: N kB`), in bytes.
fn meminfo_field(meminfo: &str, name: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The host memory available now (`MemAvailable` of `/proc/meminfo` on Linux, plus free
/// swap, at most what an address-space limit or a cgroup memory limit leaves), or `None`
/// where it cannot be read.
pub fn host_memory_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let available = meminfo_field(&meminfo, "MemAvailable:")?;
    let memory = available.saturating_add(meminfo_field(&meminfo, "SwapFree:").unwrap_or(0));
    // A process limit (`ulimit -v`) or a container's (cgroup v2 `memory.max`) leaves less.
    Some(
        [address_space_left(), cgroup_memory_left()]
            .into_iter()
            .flatten()
            .fold(memory, u64::min),
    )
}

/// What is left of this process's cgroup (v2) memory limit, if it has one.
fn cgroup_memory_left() -> Option<u64> {
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok() // "max" does not parse: no limit
    };
    Some(read("memory.max")?.saturating_sub(read("memory.current").unwrap_or(0)))
}

/// What is left of the process's address-space limit (`RLIMIT_AS`, from
/// `/proc/self/limits` and `VmSize` of `/proc/self/status`), if there is one.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft: u64 = line
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?; // "unlimited" does not parse: no limit
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    Some(soft.saturating_sub(meminfo_field(&status, "VmSize:")?))
}

/// The most host memory this process has held resident (`VmHWM` of `/proc/self/status` on
/// Linux), or `None` where it cannot be read.
pub fn peak_resident_bytes() -> Option<u64> {
    meminfo_field(
        &std::fs::read_to_string("/proc/self/status").ok()?,
        "VmHWM:",
    )
}

/// Checks that `requested` bytes of host memory for `what` can be had: at most the memory
/// available now ([`host_memory_available`]) and at most `isize::MAX`.
///
/// # Errors
/// [`Error::ResourceLimit`] naming `what`, the request and the limit.
pub fn check_host_bytes(what: impl std::fmt::Display, requested: u64) -> Result<()> {
    let limit = host_memory_available()
        .unwrap_or(isize::MAX as u64)
        .min(isize::MAX as u64);
    if requested > limit {
        return Err(Error::ResourceLimit {
            backend: "host memory (available now)".into(),
            what: what.to_string(),
            requested,
            limit,
        });
    }
    Ok(())
}

/// Checks `count` items of `each` bytes for `what` ([`check_host_bytes`]; an overflowing
/// product is refused the same way).
///
/// # Errors
/// [`Error::ResourceLimit`].
pub fn check_host_items(what: impl std::fmt::Display, count: u64, each: u64) -> Result<()> {
    check_host_bytes(what, bytes_for(count, each).unwrap_or(u64::MAX))
}

/// Why [`read_line`] did not return a line.
#[derive(Debug)]
pub enum LineError {
    /// The line is longer than the limit (the bytes read so far are discarded).
    TooLong,
    /// The reader failed.
    Io(std::io::Error),
}

/// Reads one line (with its `\n`, if any) into `buf`, at most `limit` bytes; `Ok(0)` at the
/// end of the input.
///
/// # Errors
/// [`LineError::TooLong`] or the reader's [`LineError::Io`]. A longer line is [`LineError::TooLong`] after reading `limit + 1`
/// bytes, so an endless line (`/dev/zero`) costs no more than the limit.
pub fn read_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
) -> std::result::Result<usize, LineError> {
    use std::io::Read;
    buf.clear();
    let read = reader
        .by_ref()
        .take(limit as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(LineError::Io)?;
    if buf.len() > limit && buf.last() != Some(&b'\n') {
        buf.clear();
        return Err(LineError::TooLong);
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded() {
        let text = b"short\nexactly8\n".to_vec();
        let mut reader = std::io::Cursor::new(text);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut reader, &mut buf, 9).unwrap(), 6);
        assert_eq!(buf, b"short\n");
        assert_eq!(read_line(&mut reader, &mut buf, 9).unwrap(), 9);
        assert_eq!(read_line(&mut reader, &mut buf, 9).unwrap(), 0);
        let endless = std::io::repeat(b'7');
        let mut reader = std::io::BufReader::new(endless);
        assert!(matches!(
            read_line(&mut reader, &mut buf, 1000),
            Err(LineError::TooLong)
        ));
    }

    #[test]
    fn impossible_requests_are_refused() {
        let e = check_host_items("a mesh", u64::MAX / 2, 16).unwrap_err();
        assert!(e.to_string().contains("a mesh"), "{e}");
        assert!(check_host_items("a vector", 1000, 8).is_ok());
        assert_eq!(bytes_for(u64::MAX, 2), None);
    }
}
