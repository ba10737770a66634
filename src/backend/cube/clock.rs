//! Holding an NVIDIA GPU's multiprocessor clock up for a wgpu (Vulkan) process.
//!
//! NVIDIA's driver raises a GPU's multiprocessor (SM) clock to its boost for as long as any
//! process holds a CUDA context on it; Vulkan compute work alone does not: measured on an
//! H100 (driver 580, 2026-11-26, `docs/benchmarks.md`), a wgpu-only process ran with the SM
//! clock at the idle 345 MHz most of the time and its SpMV 2.1–2.4x slower than the same
//! kernels run while a CUDA context was open, in the same or in another process. A context
//! retained and left unused (no work, no memory) is enough.
//!
//! So the wgpu backend on an NVIDIA GPU retains the CUDA *primary context* of that GPU for as
//! long as the device connection lives, through the driver library (`libcuda.so.1`, installed
//! with every NVIDIA driver, no CUDA toolkit needed; `nvcuda.dll` on Windows), loaded at run
//! time. Nothing runs on the context; it costs the device memory of a context. Set
//! `GALERKIN_WGPU_CLOCK_HOLD=0` to do without it. When the driver library or the matching
//! device is missing, wgpu runs as it would anyway; [`BackendInfo::clock_held`] says which.
//!
//! [`BackendInfo::clock_held`]: crate::backend::BackendInfo::clock_held

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::mem::ManuallyDrop;

/// PCI vendor id of NVIDIA (wgpu's `AdapterInfo::vendor`).
const VENDOR_NVIDIA: u32 = 0x10de;

/// The environment variable that turns the hold off (`0`, `off`, `false`, `no`).
pub(crate) const ENV: &str = "GALERKIN_WGPU_CLOCK_HOLD";

#[cfg(windows)]
const LIBRARY: &str = "nvcuda.dll";
#[cfg(not(windows))]
const LIBRARY: &str = "libcuda.so.1";

/// `CU_DEVICE_ATTRIBUTE_PCI_BUS_ID`, `_PCI_DEVICE_ID`, `_PCI_DOMAIN_ID` (cuda.h).
const ATTR_PCI_BUS: c_int = 33;
const ATTR_PCI_DEVICE: c_int = 34;
const ATTR_PCI_DOMAIN: c_int = 50;

type CuResult = c_int;
type InitFn = unsafe extern "C" fn(c_uint) -> CuResult;
type CountFn = unsafe extern "C" fn(*mut c_int) -> CuResult;
type GetFn = unsafe extern "C" fn(*mut c_int, c_int) -> CuResult;
type AttributeFn = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CuResult;
type NameFn = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> CuResult;
type RetainFn = unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult;
type ReleaseFn = unsafe extern "C" fn(c_int) -> CuResult;

/// A retained CUDA primary context, released when dropped.
pub(crate) struct ClockHold {
    release: ReleaseFn,
    device: c_int,
    /// Keeps `release` valid. Never unloaded (here or when `acquire` gives up after
    /// `cuInit`): the driver may still run code of the library on its own threads.
    _library: ManuallyDrop<libloading::Library>,
}

impl std::fmt::Debug for ClockHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClockHold")
            .field("cuda_device", &self.device)
            .finish()
    }
}

impl Drop for ClockHold {
    fn drop(&mut self) {
        // SAFETY: `release` was loaded from `_library`, never unloaded; the context of
        // `device` was retained once by `acquire` and is released once here.
        unsafe {
            (self.release)(self.device);
        }
    }
}

/// Whether the environment turns the hold off.
fn disabled_by_env() -> bool {
    std::env::var(ENV).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

/// `(domain, bus, device)` of a PCI address `dddd:bb:dd.f` (hexadecimal, as wgpu's Vulkan
/// adapter writes `device_pci_bus_id`); `None` for anything else (an empty string included).
pub(crate) fn parse_pci_bus_id(id: &str) -> Option<(u32, u32, u32)> {
    let (address, _function) = id.trim().rsplit_once('.')?;
    let mut parts = address.split(':');
    let (domain, bus, device) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    Some((hex(domain)?, hex(bus)?, hex(device)?))
}

impl ClockHold {
    /// Retains the primary context of the CUDA device that is the wgpu adapter with PCI
    /// vendor `vendor`, PCI address `pci_bus_id` (`dddd:bb:dd.f`; may be empty) and name
    /// `name`: the device at that address, or, without an address, the only CUDA device of
    /// that name. `None` for another vendor, when [`ENV`] turns the hold off, or when the
    /// driver library, the device or the context cannot be had.
    pub(crate) fn acquire(vendor: u32, pci_bus_id: &str, name: &str) -> Option<Self> {
        if vendor != VENDOR_NVIDIA || disabled_by_env() {
            return None;
        }
        // SAFETY: loads the NVIDIA driver library by its installed name (running its
        // initialisers, as any CUDA program does); the symbols are looked up with the
        // signatures of cuda.h, and every pointer passed points to a live local of the
        // declared type (the name buffer with its true length).
        unsafe {
            let library = ManuallyDrop::new(libloading::Library::new(LIBRARY).ok()?);
            let init = *library.get::<InitFn>(b"cuInit\0").ok()?;
            let count = *library.get::<CountFn>(b"cuDeviceGetCount\0").ok()?;
            let get = *library.get::<GetFn>(b"cuDeviceGet\0").ok()?;
            let attribute = *library.get::<AttributeFn>(b"cuDeviceGetAttribute\0").ok()?;
            let get_name = *library.get::<NameFn>(b"cuDeviceGetName\0").ok()?;
            let retain = *library
                .get::<RetainFn>(b"cuDevicePrimaryCtxRetain\0")
                .ok()?;
            let release = *library
                .get::<ReleaseFn>(b"cuDevicePrimaryCtxRelease_v2\0")
                .or_else(|_| library.get::<ReleaseFn>(b"cuDevicePrimaryCtxRelease\0"))
                .ok()?;
            if init(0) != 0 {
                return None;
            }
            let mut n: c_int = 0;
            if count(&mut n) != 0 {
                return None;
            }
            let wanted = parse_pci_bus_id(pci_bus_id);
            let mut matches = Vec::new();
            for ordinal in 0..n {
                let mut device: c_int = 0;
                if get(&mut device, ordinal) != 0 {
                    continue;
                }
                let found = match wanted {
                    Some((domain, bus, dev)) => {
                        let read = |attr| {
                            let mut v: c_int = 0;
                            (attribute(&mut v, attr, device) == 0).then_some(v as u32)
                        };
                        read(ATTR_PCI_DOMAIN) == Some(domain)
                            && read(ATTR_PCI_BUS) == Some(bus)
                            && read(ATTR_PCI_DEVICE) == Some(dev)
                    }
                    None => {
                        let mut buf = [0 as c_char; 256];
                        get_name(buf.as_mut_ptr(), buf.len() as c_int, device) == 0
                            && std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy() == name
                    }
                };
                if found {
                    matches.push(device);
                }
            }
            let [device] = matches[..] else {
                return None;
            };
            let mut context: *mut c_void = std::ptr::null_mut();
            if retain(&mut context, device) != 0 {
                return None;
            }
            Some(ClockHold {
                release,
                device,
                _library: library,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses() {
        assert_eq!(parse_pci_bus_id("0000:3b:00.0"), Some((0, 0x3b, 0)));
        assert_eq!(parse_pci_bus_id("0001:C1:1f.3"), Some((1, 0xc1, 0x1f)));
        assert_eq!(parse_pci_bus_id(""), None);
        assert_eq!(parse_pci_bus_id("0000:3b.0"), None);
        assert_eq!(parse_pci_bus_id("0000:3b:00:00.0"), None);
        assert_eq!(parse_pci_bus_id("zz00:3b:00.0"), None);
    }

    #[test]
    fn other_vendors_are_left_alone() {
        // lavapipe (vendor 0x10005) and AMD (0x1002) never load the CUDA driver.
        assert!(ClockHold::acquire(0x10005, "", "llvmpipe").is_none());
        assert!(ClockHold::acquire(0x1002, "0000:03:00.0", "AMD Radeon").is_none());
    }
}
