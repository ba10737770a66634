//! NCCL point-to-point exchanges between CUDA devices of different processes: the device
//! halo of the distributed operators ([`crate::distributed`]), one GPU per rank.
//!
//! NCCL is loaded at run time (`libnccl.so.2`, or the file named by `GALERKIN_NCCL`), so a
//! build with `cuda` neither needs it to build nor to run: where it is missing, the halo goes
//! through host memory and the reason is reported. Only the calls of NCCL 2.x's stable ABI
//! used here are resolved (`ncclGetUniqueId`, `ncclCommInitRank`, `ncclSend`, `ncclRecv`,
//! `ncclGroupStart`/`End`, `ncclCommGetAsyncError`, `ncclCommDestroy`, `ncclGetErrorString`,
//! `ncclGetVersion`).
//!
//! An exchange is posted on a stream of its own, ordered after the work queued on cubecl's
//! stream (so the packed rows are written and the previous readers of the ghost rows are
//! done) without the host waiting for that work: a one-unit kernel queued after it writes a
//! sequence number into a device flag, and a one-thread kernel on the exchange's stream
//! waits for the number before NCCL's sends and receives. (cubecl 0.10 does not expose its
//! CUDA stream, so an event cannot be recorded on it; `cuStreamWaitValue32` refuses cubecl's
//! stream-ordered allocations with `CUDA_ERROR_INVALID_VALUE`, measured on an H200.) The
//! waiting kernel is PTX of its own, loaded once; if the number has not come after 60 s it
//! traps: this rank's `finish` then reports a device error instead of waiting forever (the
//! CUDA context is lost, and a peer waiting for this rank's sends may still block). Where the
//! module cannot be loaded, the host waits for the queued work instead. The local product is
//! then queued on cubecl's stream and runs beside the exchange; finishing waits (on the host)
//! for the exchange's stream before the remote product is queued.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use super::transfer::Failed;
use super::Cuda;
use crate::backend::Run;
use crate::error::{Error, Result};
use crate::vector::Vector;

/// The environment variable naming the NCCL library to load (a path or a file name).
pub(crate) const LIBRARY_VARIABLE: &str = "GALERKIN_NCCL";

type NcclResult = c_int;
type RawComm = *mut c_void;
type RawStream = cudarc::driver::sys::CUstream;

/// `ncclUniqueId`: 128 opaque bytes, made on one rank and handed to the others.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct UniqueId {
    internal: [c_char; 128],
}

impl UniqueId {
    pub(crate) fn to_bytes(self) -> Vec<u8> {
        self.internal.iter().map(|&c| c as u8).collect()
    }

    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut internal = [0 as c_char; 128];
        if bytes.len() != internal.len() {
            return None;
        }
        for (d, &s) in internal.iter_mut().zip(bytes) {
            *d = s as c_char;
        }
        Some(UniqueId { internal })
    }
}

/// `ncclUint8`: the exchanges move bytes.
const NCCL_UINT8: c_int = 1;

/// The NCCL calls used here, resolved once.
struct Lib {
    _lib: libloading::Library,
    name: String,
    version: c_int,
    get_unique_id: unsafe extern "C" fn(*mut UniqueId) -> NcclResult,
    comm_init_rank: unsafe extern "C" fn(*mut RawComm, c_int, UniqueId, c_int) -> NcclResult,
    comm_destroy: unsafe extern "C" fn(RawComm) -> NcclResult,
    comm_get_async_error: unsafe extern "C" fn(RawComm, *mut NcclResult) -> NcclResult,
    send:
        unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, RawStream) -> NcclResult,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, RawStream) -> NcclResult,
    group_start: unsafe extern "C" fn() -> NcclResult,
    group_end: unsafe extern "C" fn() -> NcclResult,
    error_string: unsafe extern "C" fn(NcclResult) -> *const c_char,
}

/// The library's names tried in order: `GALERKIN_NCCL`, then the soname and the plain name
/// (found through `LD_LIBRARY_PATH` and the loader's cache).
fn candidates() -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(v) = std::env::var(LIBRARY_VARIABLE) {
        if !v.is_empty() {
            names.push(v);
        }
    }
    names.extend(["libnccl.so.2".to_string(), "libnccl.so".to_string()]);
    names
}

fn load() -> std::result::Result<Lib, String> {
    let mut tried = Vec::new();
    for name in candidates() {
        // SAFETY: loading NCCL runs its initializers, which have no preconditions.
        let lib = match unsafe { libloading::Library::new(&name) } {
            Ok(lib) => lib,
            Err(e) => {
                tried.push(format!("{name} ({e})"));
                continue;
            }
        };
        // SAFETY: the symbols are NCCL 2.x's exported functions with these C signatures.
        let resolved = unsafe {
            (|| -> std::result::Result<Lib, libloading::Error> {
                let get_version: unsafe extern "C" fn(*mut c_int) -> NcclResult =
                    *lib.get(b"ncclGetVersion\0")?;
                let mut version = 0;
                get_version(&mut version);
                Ok(Lib {
                    get_unique_id: *lib.get(b"ncclGetUniqueId\0")?,
                    comm_init_rank: *lib.get(b"ncclCommInitRank\0")?,
                    comm_destroy: *lib.get(b"ncclCommDestroy\0")?,
                    comm_get_async_error: *lib.get(b"ncclCommGetAsyncError\0")?,
                    send: *lib.get(b"ncclSend\0")?,
                    recv: *lib.get(b"ncclRecv\0")?,
                    group_start: *lib.get(b"ncclGroupStart\0")?,
                    group_end: *lib.get(b"ncclGroupEnd\0")?,
                    error_string: *lib.get(b"ncclGetErrorString\0")?,
                    version,
                    name: name.clone(),
                    _lib: lib,
                })
            })()
        };
        match resolved {
            Ok(l) => return Ok(l),
            Err(e) => tried.push(format!("{name} (lacks a symbol: {e})")),
        }
    }
    Err(format!(
        "the NCCL library could not be loaded (tried {}); set {LIBRARY_VARIABLE} to its path \
         (e.g. the `nvidia/nccl/lib/libnccl.so.2` of the nvidia-nccl pip package)",
        tried.join(", ")
    ))
}

fn lib() -> std::result::Result<&'static Lib, String> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// NCCL's own message for a result code.
fn check(lib: &Lib, what: &str, code: NcclResult) -> std::result::Result<(), String> {
    if code == 0 {
        return Ok(());
    }
    // SAFETY: ncclGetErrorString returns a static NUL-terminated string for any code.
    let text = unsafe { CStr::from_ptr((lib.error_string)(code)) };
    Err(format!(
        "{what}: NCCL error {code} ({})",
        text.to_string_lossy()
    ))
}

/// The NCCL library's file and version (`2.28.3` as `22803`), or why it cannot be loaded.
pub(crate) fn library() -> std::result::Result<(String, i32), String> {
    lib().map(|l| (l.name.clone(), l.version))
}

/// A new unique id (on the one rank that makes it).
pub(crate) fn unique_id() -> std::result::Result<UniqueId, String> {
    let lib = lib()?;
    let mut id = UniqueId { internal: [0; 128] };
    // SAFETY: writes 128 bytes through a valid pointer.
    check(lib, "ncclGetUniqueId", unsafe {
        (lib.get_unique_id)(&mut id)
    })?;
    Ok(id)
}

/// The raw handles, moved to cubecl's device thread.
#[derive(Clone, Copy)]
struct Raw {
    comm: RawComm,
    stream: RawStream,
}

// SAFETY: NCCL communicators and CUDA streams may be used from any thread; `Raw` is only
// used on cubecl's device thread, one call at a time (the `Nccl` that owns it is not `Sync`
// in practice: it lives behind an `Rc`).
unsafe impl Send for Raw {}

/// An NCCL communicator over the ranks' CUDA devices, with its stream.
pub(crate) struct Nccl {
    backend: Cuda,
    raw: Raw,
    lib: &'static Lib,
    /// How an exchange is ordered after the queued work: on the device (a flag), or by the
    /// host (`Err` with the reason, or the flag's `refused` set once a wait was refused).
    order: std::result::Result<Flag, String>,
    /// The send and receive buffers of the exchange posted and not yet finished: held so
    /// that their memory is not freed or reused while NCCL's stream may still read or write
    /// it (a caller that returns early on an error skips `finish`; the next `start`, or the
    /// drop, finishes the exchange first).
    in_flight: std::cell::RefCell<Option<[Option<cubecl::server::Handle>; 2]>>,
}

/// The device flag that orders an exchange after the work queued before it: the number of
/// the exchange, written by [`signal_kernel`], waited for on the exchange's stream by
/// [`WAIT_PTX`].
struct Flag {
    buffer: crate::backend::cube::CubeBuffer<u32>,
    address: u64,
    waiter: Waiter,
    count: std::cell::Cell<u32>,
    /// Why the device could not wait on the flag, once it could not (the host waits since).
    refused: std::cell::RefCell<Option<String>>,
}

mod signal {
    use cubecl::prelude::*;

    /// `flag[0] = value`, by one unit: queued after the work an exchange must follow. An
    /// atomic store, so that the waiter's relaxed load on the exchange's stream races with
    /// no weak store (the work before is complete once this kernel runs: stream order).
    #[cube(launch_unchecked)]
    pub(super) fn signal_kernel(flag: &mut Array<Atomic<u32>>, value: u32) {
        if ABSOLUTE_POS == 0 {
            flag[0].store(value);
        }
    }
}
use signal::signal_kernel;

/// The kernel that holds the exchange's stream until the flag at `flag` equals `value` (one
/// thread, polling with a short sleep; `trap` after 60 s). Each `start` is followed by its
/// `finish` (which waits for this kernel) before the next signal is queued, so the flag
/// cannot pass `value` unseen; a `start` whose caller fails before `finish` leaves a waiter
/// that a later signal does not release (it traps after 60 s: the library's device errors
/// are fatal there anyway).
const WAIT_PTX: &str = "\
.version 7.0
.target sm_70
.address_size 64

.visible .entry galerkin_wait_flag(.param .u64 flag, .param .u32 value)
{
    .reg .pred p, late;
    .reg .b32 v, want;
    .reg .b64 addr, t0, t, dt;
    ld.param.u64 addr, [flag];
    ld.param.u32 want, [value];
    cvta.to.global.u64 addr, addr;
    mov.u64 t0, %globaltimer;
SPIN:
    ld.relaxed.gpu.global.u32 v, [addr];
    setp.eq.u32 p, v, want;
    @p bra DONE;
    nanosleep.u32 200;
    mov.u64 t, %globaltimer;
    sub.u64 dt, t, t0;
    setp.gt.u64 late, dt, 60000000000;
    @late trap;
    bra SPIN;
DONE:
    fence.acq_rel.gpu;
    ret;
}
\0";

/// The loaded [`WAIT_PTX`].
#[derive(Clone, Copy)]
struct Waiter {
    module: cudarc::driver::sys::CUmodule,
    function: cudarc::driver::sys::CUfunction,
}

// SAFETY: a CUDA module and function may be used from any thread of the context; they are
// used on cubecl's device thread only.
unsafe impl Send for Waiter {}

impl std::fmt::Debug for Nccl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Nccl({}, version {})", self.lib.name, self.lib.version)
    }
}

impl Cuda {
    /// PCI domain, bus and device of this backend's GPU (`"0000:1b:00"`), which tells the
    /// ranks' GPUs apart.
    pub(crate) fn pci_address(&self) -> Result<String> {
        self.on_device_thread(|| {
            use cudarc::driver::{result, sys};
            let mut dev = 0;
            // SAFETY: writes one device handle through a valid pointer; the device thread
            // has its context current.
            let code = unsafe { sys::cuCtxGetDevice(&mut dev) };
            if code != sys::CUresult::CUDA_SUCCESS {
                return Err(Failed::Direct(format!("cuCtxGetDevice: {code:?}")));
            }
            use sys::CUdevice_attribute::*;
            let attr = |a| {
                // SAFETY: `dev` is a valid device; the query only reads a property.
                unsafe { result::device::get_attribute(dev, a) }
                    .map_err(|e| Failed::Direct(format!("cuDeviceGetAttribute: {e:?}")))
            };
            Ok(format!(
                "{:04x}:{:02x}:{:02x}",
                attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
                attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
                attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
            ))
        })
    }

    /// This process's member of the NCCL communicator `id` (rank `rank` of `size`). Every
    /// rank must call it (it returns when all have joined).
    pub(crate) fn nccl(&self, id: UniqueId, rank: usize, size: usize) -> Result<Nccl> {
        let lib = lib().map_err(|reason| self.nccl_unsupported(reason))?;
        let (rank, size) = (
            c_int::try_from(rank).map_err(|_| self.nccl_unsupported("rank out of range"))?,
            c_int::try_from(size).map_err(|_| self.nccl_unsupported("size out of range"))?,
        );
        let raw = self.on_device_thread(move || {
            // The exchange's stream at the context's highest priority: NCCL's kernels get the
            // SMs as the local product's blocks retire, instead of after the whole product.
            let stream = {
                use cudarc::driver::sys;
                let (mut least, mut greatest) = (0, 0);
                // SAFETY: writes two integers through valid pointers; the device thread has
                // the context current.
                let range = unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) };
                let priority = if range == sys::CUresult::CUDA_SUCCESS {
                    greatest
                } else {
                    0
                };
                let mut stream: sys::CUstream = std::ptr::null_mut();
                let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
                // SAFETY: writes one stream handle through a valid pointer.
                let code = unsafe { sys::cuStreamCreateWithPriority(&mut stream, flags, priority) };
                if code != sys::CUresult::CUDA_SUCCESS {
                    return Err(Failed::Direct(format!(
                        "cuStreamCreateWithPriority: {code:?}"
                    )));
                }
                stream
            };
            let mut comm: RawComm = std::ptr::null_mut();
            // SAFETY: `comm` is written by NCCL; the device thread has this GPU's context
            // current, which NCCL's runtime adopts as its device.
            let code = unsafe { (lib.comm_init_rank)(&mut comm, size, id, rank) };
            if let Err(e) = check(lib, "ncclCommInitRank", code) {
                // SAFETY: the stream was created above and is not used.
                unsafe {
                    let _ = cudarc::driver::result::stream::destroy(stream);
                }
                return Err(Failed::Direct(e));
            }
            Ok(Raw { comm, stream })
        })?;
        let mut nccl = Nccl {
            backend: self.clone(),
            raw,
            lib,
            order: Err(String::new()),
            in_flight: std::cell::RefCell::new(None),
        };
        nccl.order = self.ordering_flag()?;
        Ok(nccl)
    }

    /// The flag of stream-ordered exchanges (`GALERKIN_NCCL_HOST_ORDER=1` chooses the host
    /// wait, for comparison).
    fn ordering_flag(&self) -> Result<std::result::Result<Flag, String>> {
        if std::env::var("GALERKIN_NCCL_HOST_ORDER").is_ok_and(|v| v == "1") {
            return Ok(Err("GALERKIN_NCCL_HOST_ORDER=1".into()));
        }
        let loaded = self.on_device_thread(|| {
            use cudarc::driver::result::module;
            // SAFETY: the image is NUL-terminated PTX; the device thread has the context
            // current.
            let loaded = unsafe { module::load_data(WAIT_PTX.as_ptr().cast()) }.and_then(|m| {
                // SAFETY: `m` was loaded above; the name is the PTX's entry.
                match unsafe { module::get_function(m, c"galerkin_wait_flag".to_owned()) } {
                    Ok(function) => Ok(Waiter {
                        module: m,
                        function,
                    }),
                    Err(e) => {
                        // SAFETY: `m` is unused.
                        let _ = unsafe { module::unload(m) };
                        Err(e)
                    }
                }
            });
            Ok(loaded.map_err(|e| format!("the wait kernel did not load: {e:?}")))
        })?;
        let waiter = match loaded {
            Ok(w) => w,
            Err(why) => return Ok(Err(why)),
        };
        // The flag's zero written before any wait reads it (the upload is queued on cubecl's
        // stream, which the waiter does not follow): one host wait, here.
        let client = &self.inner.client;
        let placed = crate::backend::BackendCore::upload(self, &[0u32]).and_then(|buffer| {
            let handle = buffer.handle().clone();
            let address = self.on_device_thread(move || {
                cubecl::future::block_on(client.sync())?;
                Ok(client.get_resource(handle)?.resource().ptr)
            })?;
            Ok((buffer, address))
        });
        let (buffer, address) = match placed {
            Ok(placed) => placed,
            Err(e) => {
                let _ = self.on_device_thread(move || {
                    // The whole `Waiter` (which is `Send`), not its fields.
                    let waiter = waiter;
                    // SAFETY: the module was loaded above and nothing launched from it.
                    let _ = unsafe { cudarc::driver::result::module::unload(waiter.module) };
                    Ok(())
                });
                return Ok(Err(format!("the flag could not be placed: {e}")));
            }
        };
        Ok(Ok(Flag {
            buffer,
            address,
            waiter,
            count: std::cell::Cell::new(0),
            refused: std::cell::RefCell::new(None),
        }))
    }

    fn nccl_unsupported(&self, reason: impl Into<String>) -> Error {
        Error::Unsupported {
            backend: self.info.to_string(),
            what: "the device halo (NCCL)".into(),
            reason: reason.into(),
        }
    }
}

impl Nccl {
    /// Posts, on the exchange's stream, the sends of `send`'s runs and the receives into
    /// `recv`'s runs, after the work queued on the device so far has finished. Returns at
    /// once; [`finish`](Self::finish) waits. Neither buffer may be written meanwhile (their
    /// memory is held until then). An exchange posted before and not finished is finished
    /// first.
    pub(crate) fn start<T: crate::scalar::Element>(
        &self,
        send: Option<&Vector<Cuda, T>>,
        sends: &[Run],
        recv: Option<&Vector<Cuda, T>>,
        recvs: &[Run],
    ) -> Result<()> {
        if self.in_flight.borrow().is_some() {
            self.finish()?;
        }
        let width = std::mem::size_of::<T>();
        let handle = |v: Option<&Vector<Cuda, T>>, runs: &[Run]| -> Result<_> {
            let need = runs.iter().map(|r| r.1 + r.2).max().unwrap_or(0);
            match v {
                Some(v) if v.len() >= need => Ok(Some(v.buffer()?.handle.clone())),
                None if need == 0 => Ok(None),
                _ => Err(Error::Device {
                    backend: self.backend.info.to_string(),
                    message: format!(
                        "NCCL exchange: a buffer shorter than its runs ({need} values)"
                    ),
                }),
            }
        };
        let (send, recv) = (handle(send, sends)?, handle(recv, recvs)?);
        // Held from before the posts: a failure after some posts still finishes first.
        *self.in_flight.borrow_mut() = Some([send.clone(), recv.clone()]);
        let sends: Vec<Run> = sends.iter().filter(|r| r.2 > 0).copied().collect();
        let recvs: Vec<Run> = recvs.iter().filter(|r| r.2 > 0).copied().collect();
        let (raw, lib) = (self.raw, self.lib);
        let client = &self.backend.inner.client;
        // After the queued work (the packed rows written, the ghost rows' readers done): the
        // flag's number, written by a kernel queued now and waited for by the exchange's
        // stream; or (no flag) the host's wait for the device.
        let wait = match &self.order {
            Ok(flag) if flag.refused.borrow().is_none() => {
                let value = flag.count.get().wrapping_add(1).max(1);
                flag.count.set(value);
                self.backend.launch::<u32>((), || {
                    // SAFETY: one unit writes the flag's one value.
                    unsafe {
                        signal_kernel::launch_unchecked::<cubecl::cuda::CudaRuntime>(
                            client,
                            cubecl::prelude::CubeCount::Static(1, 1, 1),
                            cubecl::prelude::CubeDim::new_1d(1),
                            flag.buffer.arg(),
                            value,
                        )
                    }
                })?;
                Some((flag.address, value, flag.waiter))
            }
            _ => None,
        };
        let refused = self.backend.on_device_thread(move || {
            let raw = raw; // the whole `Raw` (which is `Send`), not its fields
            client.flush()?;
            let mut refused = None;
            if let Some((address, value, waiter)) = wait {
                let (mut address, mut value) = (address, value);
                let mut params = [
                    (&raw mut address).cast::<c_void>(),
                    (&raw mut value).cast::<c_void>(),
                ];
                // SAFETY: the function takes (u64 address, u32 value), as `params` holds; the
                // address is the flag's (alive while `self` is); the stream is this
                // communicator's. The kernel reads one value.
                let launched = unsafe {
                    cudarc::driver::result::launch_kernel(
                        waiter.function,
                        (1, 1, 1),
                        (1, 1, 1),
                        0,
                        raw.stream,
                        &mut params,
                    )
                };
                // The host waits where the launch is refused.
                if let Err(e) = launched {
                    refused = Some(format!("the wait kernel's launch: {e:?}"));
                }
            }
            if wait.is_none() || refused.is_some() {
                cubecl::future::block_on(client.sync())?;
            }
            let address = |h: Option<cubecl::server::Handle>| -> std::result::Result<u64, Failed> {
                Ok(match h {
                    Some(h) => client.get_resource(h)?.resource().ptr,
                    None => 0,
                })
            };
            let (s, r) = (address(send)?, address(recv)?);
            let post = || -> std::result::Result<(), String> {
                for &(peer, start, len) in &sends {
                    let ptr = (s + (start * width) as u64) as *const c_void;
                    // SAFETY: `ptr` addresses `len` values of the send buffer (checked
                    // above), which stays alive and unwritten until `finish`.
                    let code = unsafe {
                        (lib.send)(
                            ptr,
                            len * width,
                            NCCL_UINT8,
                            peer as c_int,
                            raw.comm,
                            raw.stream,
                        )
                    };
                    check(lib, "ncclSend", code)?;
                }
                for &(peer, start, len) in &recvs {
                    let ptr = (r + (start * width) as u64) as *mut c_void;
                    // SAFETY: as for the sends, in the receive buffer.
                    let code = unsafe {
                        (lib.recv)(
                            ptr,
                            len * width,
                            NCCL_UINT8,
                            peer as c_int,
                            raw.comm,
                            raw.stream,
                        )
                    };
                    check(lib, "ncclRecv", code)?;
                }
                Ok(())
            };
            // SAFETY: group calls bracket the posts; the group is always closed.
            check(lib, "ncclGroupStart", unsafe { (lib.group_start)() }).map_err(Failed::Direct)?;
            let posted = post();
            // SAFETY: closes the group opened above.
            let closed = check(lib, "ncclGroupEnd", unsafe { (lib.group_end)() });
            posted.and(closed).map_err(Failed::Direct)?;
            Ok(refused)
        })?;
        if let (Some(why), Ok(flag)) = (refused, &self.order) {
            *flag.refused.borrow_mut() = Some(why);
        }
        Ok(())
    }

    /// How exchanges are ordered after the work queued before them: `"device flag"`, or
    /// `"host wait"` (with the reason where the device refused to wait on the flag).
    pub(crate) fn ordering(&self) -> String {
        match &self.order {
            Err(why) => format!("host wait ({why})"),
            Ok(flag) => match &*flag.refused.borrow() {
                None => "device flag".into(),
                Some(why) => format!("host wait ({why})"),
            },
        }
    }

    /// Waits until the exchange posted by [`start`](Self::start) is done, and reports an
    /// asynchronous NCCL error (a peer that failed).
    pub(crate) fn finish(&self) -> Result<()> {
        let (raw, lib) = (self.raw, self.lib);
        // The buffers are released after the stream's wait (even a failed one: the context
        // is then lost, and nothing of it runs any more).
        let _held = self.in_flight.borrow_mut().take();
        self.backend.on_device_thread(move || {
            let raw = raw; // the whole `Raw` (which is `Send`), not its fields
                           // SAFETY: the stream is this communicator's, alive until drop.
            unsafe { cudarc::driver::result::stream::synchronize(raw.stream) }
                .map_err(|e| Failed::Direct(format!("cuStreamSynchronize: {e:?}")))?;
            let mut state: NcclResult = 0;
            // SAFETY: writes one result code through a valid pointer.
            check(lib, "ncclCommGetAsyncError", unsafe {
                (lib.comm_get_async_error)(raw.comm, &mut state)
            })
            .and_then(|()| check(lib, "NCCL exchange", state))
            .map_err(Failed::Direct)
        })
    }
}

impl Drop for Nccl {
    fn drop(&mut self) {
        let (raw, lib) = (self.raw, self.lib);
        let waiter = self.order.as_ref().ok().map(|f| f.waiter);
        let _ = self.backend.on_device_thread(move || {
            let raw = raw; // the whole `Raw` (which is `Send`), not its fields
                           // SAFETY: the communicator, the stream and the wait module are this value's and no
                           // longer used; the stream is synchronized first (nothing of it is pending after
                           // `finish`, and the wait kernel's launches are done).
            unsafe {
                let _ = cudarc::driver::result::stream::synchronize(raw.stream);
                if let Some(w) = waiter {
                    let _ = cudarc::driver::result::module::unload(w.module);
                }
                let _ = (lib.comm_destroy)(raw.comm);
                let _ = cudarc::driver::result::stream::destroy(raw.stream);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::Rng;

    /// A one-rank NCCL communicator exchanges with itself: runs of the send buffer land in
    /// the runs of the receive buffer (poisoned first), bit for bit, in f64 and f32; a run
    /// beyond a buffer is refused before NCCL is called. Needs a CUDA device and NCCL (the
    /// GPU machine: `GALERKIN_NCCL` names the library).
    #[test]
    fn nccl_exchanges_runs_with_itself() {
        super::super::on_test_device("cuda", Cuda::new(), |cuda| {
            let required = std::env::var("GALERKIN_REQUIRE_BACKENDS")
                .is_ok_and(|v| v.split(',').any(|k| k.trim() == "nccl"));
            if let Err(e) = library() {
                assert!(!required, "NCCL is required: {e}");
                eprintln!("[galerkin tests] skipping: {e}");
                return;
            }
            let nccl = cuda.nccl(unique_id().unwrap(), 0, 1).unwrap();
            let mut rng = Rng::new(44);
            let values: Vec<f64> = (0..1000).map(|_| rng.range(-1.0, 1.0)).collect();
            let sends = [(0, 100, 300), (0, 600, 400)];
            let recvs = [(0, 0, 300), (0, 300, 400)];
            let want: Vec<f64> = values[100..400]
                .iter()
                .chain(&values[600..1000])
                .copied()
                .collect();
            let send = Vector::from_slice(&cuda, &values).unwrap();
            let recv = Vector::from_slice(&cuda, &vec![f64::NAN; 700]).unwrap();
            nccl.start(Some(&send), &sends, Some(&recv), &recvs)
                .unwrap();
            nccl.finish().unwrap();
            let got = recv.to_vec().unwrap();
            assert!(got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()));

            let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            let send = Vector::from_slice(&cuda, &values32).unwrap();
            let recv = Vector::from_slice(&cuda, &vec![f32::NAN; 700]).unwrap();
            nccl.start(Some(&send), &sends, Some(&recv), &recvs)
                .unwrap();
            nccl.finish().unwrap();
            let got = recv.to_vec().unwrap();
            assert!(got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == (*b as f32).to_bits()));

            // Ordered after the queued work without the host waiting: a send buffer of 2²³
            // values scaled by a kernel queued just before the exchange arrives scaled (the
            // exchange reads the last values the kernel writes).
            let host_order = std::env::var("GALERKIN_NCCL_HOST_ORDER").is_ok_and(|v| v == "1");
            let n = 1 << 23;
            let big: Vec<f64> = (0..n).map(|i| (i % 1009) as f64 - 500.0).collect();
            let mut scaled = Vector::from_slice(&cuda, &big).unwrap();
            let into = Vector::from_slice(&cuda, &vec![f64::NAN; 1000]).unwrap();
            for round in 1..=3 {
                scaled.scale(2.0).unwrap();
                let (sends, recvs) = ([(0, n - 1000, 1000)], [(0, 0, 1000)]);
                nccl.start(Some(&scaled), &sends, Some(&into), &recvs)
                    .unwrap();
                nccl.finish().unwrap();
                let got = into.to_vec().unwrap();
                let factor = f64::from(1u32 << round);
                assert!(
                    got.iter()
                        .zip(&big[n - 1000..])
                        .all(|(g, b)| *g == b * factor),
                    "round {round}: the exchange did not wait for the queued kernel"
                );
            }
            if !host_order {
                assert_eq!(nccl.ordering(), "device flag");
            }

            // A receive run past the buffer's end: refused, nothing posted.
            let short = Vector::from_slice(&cuda, &[0.0f32; 10]).unwrap();
            let e = nccl
                .start(Some(&send), &sends, Some(&short), &recvs)
                .unwrap_err();
            assert!(e.to_string().contains("shorter than its runs"), "{e}");
        });
    }
}
