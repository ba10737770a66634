//! How a distributed operator's halo travels: through host memory (any backend, any MPI), or
//! device to device (CUDA ranks on distinct GPUs, through NCCL).

#[cfg(feature = "cuda")]
use std::any::Any;
use std::fmt;
use std::rc::Rc;
use std::str::FromStr;

use super::comm::Communicator;
pub(crate) use super::exchange::{DeviceHalo, Run};
use crate::bundle::Backend;
use crate::error::{Error, Result};

/// The route of a distributed operator's halo (the rows other ranks read).
///
/// ```
/// use galerkin::distributed::HaloRoute;
///
/// assert_eq!("device".parse::<HaloRoute>()?, HaloRoute::Device);
/// assert_eq!(HaloRoute::default().to_string(), "auto");
/// # Ok::<(), galerkin::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HaloRoute {
    /// Device to device where every rank can ([`Device`](Self::Device)'s conditions), else
    /// through host memory. The choice is the same on every rank.
    #[default]
    Auto,
    /// Through host memory: device → host → the communicator → host → device. Any backend,
    /// any MPI library.
    Host,
    /// Device to device through NCCL: every rank on a CUDA device of its own (no two ranks of
    /// a node on one GPU), the NCCL library loadable on every rank (`libnccl.so.2` on the
    /// loader's path, or the file `GALERKIN_NCCL` names), the `cuda` feature compiled in.
    /// Asking for it where a rank cannot is an error on every rank, naming the rank and why.
    Device,
}

impl fmt::Display for HaloRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HaloRoute::Auto => "auto",
            HaloRoute::Host => "host",
            HaloRoute::Device => "device",
        })
    }
}

impl FromStr for HaloRoute {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(HaloRoute::Auto),
            "host" => Ok(HaloRoute::Host),
            "device" => Ok(HaloRoute::Device),
            _ => Err(Error::invalid(
                "HaloRoute::from_str",
                "route",
                format!("`{s}` is not a halo route: expected `auto`, `host` or `device`"),
            )),
        }
    }
}

/// The route a device exchange (or its absence) stands for.
pub(crate) fn route_of(device: Option<&Rc<dyn DeviceHalo>>) -> HaloRoute {
    if device.is_some() {
        HaloRoute::Device
    } else {
        HaloRoute::Host
    }
}

/// What carries a halo: `"host memory"`, or the device library and its version.
pub(crate) fn transport_of(device: Option<&Rc<dyn DeviceHalo>>) -> String {
    match device {
        Some(d) => d.describe(),
        None => "host memory".into(),
    }
}

/// What this rank can do: its device's identity (host and PCI address) and the connection
/// number of its backend, or why it cannot take part.
type Probe = std::result::Result<(u64, String), String>;

#[cfg(feature = "cuda")]
fn probe<B: Backend>(backend: &B) -> Probe {
    let Some(cuda) = (backend as &dyn Any).downcast_ref::<crate::Cuda>() else {
        return Err(format!(
            "it runs on the {} backend, not CUDA",
            backend.kind().name()
        ));
    };
    crate::backend::cube::nccl_library()?;
    let pci = cuda.pci_address().map_err(|e| e.to_string())?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    Ok((cuda.connection_id(), format!("{}/{pci}", host.trim())))
}

#[cfg(not(feature = "cuda"))]
fn probe<B: Backend>(backend: &B) -> Probe {
    Err(format!(
        "it runs on the {} backend, not CUDA (the library was built without the `cuda` feature)",
        backend.kind().name()
    ))
}

/// The device exchange for `backend`'s ranks under `route`: `None` for the host route (asked
/// for, or chosen by `Auto` because some rank cannot), one communicator per device connection
/// shared by every operator of `comm`. Collective.
///
/// # Errors
/// [`Error::Unsupported`] on every rank when `route` is `Device` and some rank cannot (named,
/// with its reason); [`Error::Rank`] if making the NCCL communicator fails on some rank.
pub(crate) fn device_halo<B: Backend>(
    backend: &B,
    comm: &Communicator,
    route: HaloRoute,
) -> Result<Option<Rc<dyn DeviceHalo>>> {
    if route == HaloRoute::Host || comm.size() == 1 {
        return Ok(None);
    }
    let local = probe(backend);
    let cached = local
        .as_ref()
        .ok()
        .and_then(|(key, _)| comm.cached_device_halo(*key));
    let line = match (&local, &cached) {
        (Ok((_, id)), Some(_)) => format!("cached {id}"),
        (Ok((_, id)), None) => format!("ok {id}"),
        (Err(why), _) => format!("no {why}"),
    };
    let all = comm.all_gather_strings(&line);
    let mut refusal = None;
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (rank, l) in all.iter().enumerate() {
        let (state, rest) = l.split_once(' ').unwrap_or((l, ""));
        if state == "no" {
            refusal = Some(format!("rank {rank} cannot: {rest}"));
            break;
        }
        if let Some(&(_, other)) = seen.iter().find(|(id, _)| *id == rest) {
            refusal = Some(format!(
                "ranks {other} and {rank} share the GPU {rest}; NCCL needs one GPU per rank"
            ));
            break;
        }
        seen.push((rest, rank));
    }
    if let Some(reason) = refusal {
        return match route {
            HaloRoute::Device => Err(Error::Unsupported {
                backend: backend.info().to_string(),
                what: "the device halo".into(),
                reason,
            }),
            _ => Ok(None),
        };
    }
    if all.iter().all(|l| l.starts_with("cached ")) {
        return Ok(cached);
    }
    create(backend, comm).map(Some)
}

#[cfg(feature = "cuda")]
fn create<B: Backend>(backend: &B, comm: &Communicator) -> Result<Rc<dyn DeviceHalo>> {
    use crate::backend::core::BackendCore;
    use crate::backend::cube::{nccl_unique_id, NcclId};
    let cuda = (backend as &dyn Any)
        .downcast_ref::<crate::Cuda>()
        .expect("every rank probed CUDA");
    let id = if comm.is_root() {
        nccl_unique_id().map_err(|reason| Error::Unsupported {
            backend: cuda.info().to_string(),
            what: "the device halo".into(),
            reason,
        })
    } else {
        Ok(NcclId::from_bytes(&[0; 128]).expect("128 bytes"))
    };
    let id = comm.agree(id)?;
    let ids = comm.all_gather_bytes(&id.to_bytes());
    let id = NcclId::from_bytes(&ids[0]).ok_or_else(|| Error::Device {
        backend: cuda.info().to_string(),
        message: "rank 0's NCCL id did not arrive whole".into(),
    })?;
    let made = cuda.nccl(id, comm.rank(), comm.size());
    let nccl: Rc<dyn DeviceHalo> = Rc::new(comm.agree(made)?);
    comm.cache_device_halo(cuda.connection_id(), nccl.clone());
    Ok(nccl)
}

#[cfg(not(feature = "cuda"))]
fn create<B: Backend>(_backend: &B, _comm: &Communicator) -> Result<Rc<dyn DeviceHalo>> {
    unreachable!("no rank can probe a device halo without the `cuda` feature")
}

#[cfg(feature = "cuda")]
impl DeviceHalo for crate::backend::cube::Nccl {
    fn start(
        &self,
        send: Option<&dyn Any>,
        sends: &[Run],
        recv: Option<&dyn Any>,
        recvs: &[Run],
    ) -> Result<()> {
        use crate::{Cuda, Vector};
        // The distributed vectors' element types: f64 and f32.
        fn typed<T: crate::scalar::Element>(
            v: Option<&dyn Any>,
        ) -> Option<Option<&Vector<Cuda, T>>> {
            match v {
                None => Some(None),
                Some(v) => v.downcast_ref::<Vector<Cuda, T>>().map(Some),
            }
        }
        if let (Some(s), Some(r)) = (typed::<f64>(send), typed::<f64>(recv)) {
            return crate::backend::cube::Nccl::start(self, s, sends, r, recvs);
        }
        if let (Some(s), Some(r)) = (typed::<f32>(send), typed::<f32>(recv)) {
            return crate::backend::cube::Nccl::start(self, s, sends, r, recvs);
        }
        Err(Error::invalid(
            "DeviceHalo::start",
            "send, recv",
            "the device halo moves f64 or f32 CUDA vectors",
        ))
    }

    fn finish(&self) -> Result<()> {
        crate::backend::cube::Nccl::finish(self)
    }

    fn describe(&self) -> String {
        match crate::backend::cube::nccl_library() {
            Ok((name, v)) => format!(
                "NCCL {}.{}.{} ({name}; ordered by {})",
                v / 10000,
                v / 100 % 100,
                v % 100,
                self.ordering()
            ),
            Err(e) => e,
        }
    }
}
