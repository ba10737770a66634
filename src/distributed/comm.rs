//! The communicator: rank, size, deterministic global sums, neighbour exchange, agreement on
//! errors. A single process gets [`Communicator::solo`]; with the `mpi` feature,
//! [`Communicator::mpi`] wraps `MPI_COMM_WORLD` (through rsmpi).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::exchange::{DeviceHalo, Run};
use crate::error::{Error, Result};

/// What a message-passing layer provides to [`Communicator`]. Every call is collective
/// (every rank makes it, in the same order) except `rank`/`size`/`node_rank`.
pub(crate) trait Transport {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// This process's rank among the ranks on its node.
    fn node_rank(&self) -> usize;
    /// Every rank's `local` (the same length everywhere), concatenated in rank order.
    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64>;
    /// Every rank's bytes (any lengths), in rank order.
    fn all_gather_bytes(&self, local: &[u8]) -> Vec<Vec<u8>>;
    /// `send[q]` goes to rank `q`; the result's entry `q` came from rank `q`.
    fn all_to_all_bytes(&self, send: &[Vec<u8>]) -> Vec<Vec<u8>>;
    /// Every rank's bytes on rank `root` (in rank order); `None` elsewhere.
    fn gather_bytes(&self, local: &[u8], root: usize) -> Option<Vec<Vec<u8>>>;
    /// Posts the receives and the sends, runs `during`, then waits for all of them.
    fn exchange(
        &self,
        sends: &[(usize, &[u8])],
        recvs: &mut [(usize, &mut [u8])],
        during: &mut dyn FnMut(),
    );
}

/// The device exchanges of a communicator, by device connection.
type DeviceHalos = Vec<(u64, Rc<dyn DeviceHalo>)>;

/// The ranks of a distributed computation: who this process is, global sums, the halo
/// exchange, agreement on errors.
///
/// Sums are deterministic: every rank's partial values are gathered and added in rank order,
/// so every rank gets the same bits, and the same run gives the same bits again (a solver
/// report is identical on every rank). The time spent in sums is counted
/// ([`reduction_time`](Self::reduction_time)).
///
/// ```
/// use galerkin::distributed::Communicator;
///
/// let comm = Communicator::solo();
/// assert_eq!((comm.rank(), comm.size()), (0, 1));
/// assert_eq!(comm.sum(&[1.5, 2.0]), vec![1.5, 2.0]);
/// ```
#[derive(Clone)]
pub struct Communicator {
    transport: Rc<dyn Transport>,
    reduction_time: Rc<Cell<Duration>>,
    reductions: Rc<Cell<u64>>,
    /// The device exchanges made for this communicator, by device connection
    /// ([`device_halo`](super::halo::device_halo)).
    device_halos: Rc<RefCell<DeviceHalos>>,
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Communicator(rank {} of {})", self.rank(), self.size())
    }
}

/// The trivial transport of one process.
struct Solo;

impl Transport for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn node_rank(&self) -> usize {
        0
    }
    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
        local.to_vec()
    }
    fn all_gather_bytes(&self, local: &[u8]) -> Vec<Vec<u8>> {
        vec![local.to_vec()]
    }
    fn all_to_all_bytes(&self, send: &[Vec<u8>]) -> Vec<Vec<u8>> {
        send.to_vec()
    }
    fn gather_bytes(&self, local: &[u8], _root: usize) -> Option<Vec<Vec<u8>>> {
        Some(vec![local.to_vec()])
    }
    fn exchange(
        &self,
        sends: &[(usize, &[u8])],
        recvs: &mut [(usize, &mut [u8])],
        during: &mut dyn FnMut(),
    ) {
        // A single rank has no neighbours; a plan that names itself copies.
        for (to, data) in sends {
            if let Some((_, buf)) = recvs.iter_mut().find(|(from, _)| from == to) {
                buf.copy_from_slice(data);
            }
        }
        during();
    }
}

impl Communicator {
    /// The communicator of a single process (rank 0 of 1): the distributed types and solvers
    /// then do what their single-process counterparts do.
    pub fn solo() -> Self {
        Self::from_transport(Rc::new(Solo))
    }

    pub(crate) fn from_transport(transport: Rc<dyn Transport>) -> Self {
        Communicator {
            transport,
            reduction_time: Rc::new(Cell::new(Duration::ZERO)),
            reductions: Rc::new(Cell::new(0)),
            device_halos: Rc::new(RefCell::new(Vec::new())),
        }
    }

    /// This process's rank, `0..size`.
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.transport.size()
    }

    /// Whether this is rank 0 (the one that prints and writes).
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// This process's rank among the ranks on its node (MPI's shared-memory split), for
    /// choosing a device: `node_rank % devices`.
    pub fn node_rank(&self) -> usize {
        self.transport.node_rank()
    }

    /// The element-wise sum of every rank's `local` (the same length on every rank), added
    /// in rank order: the same bits on every rank.
    pub fn sum(&self, local: &[f64]) -> Vec<f64> {
        let all = self.timed(|t| t.all_gather_f64(local));
        let k = local.len();
        let mut out = vec![0.0; k];
        if k == 0 {
            return out;
        }
        for part in all.chunks_exact(k) {
            for (o, v) in out.iter_mut().zip(part) {
                *o += v;
            }
        }
        out
    }

    /// The sum of one value over the ranks.
    pub fn sum_scalar(&self, local: f64) -> f64 {
        self.sum(&[local])[0]
    }

    /// The largest of every rank's value.
    pub fn max(&self, local: f64) -> f64 {
        self.all_gather(local)
            .into_iter()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Every rank's value, in rank order.
    pub fn all_gather(&self, local: f64) -> Vec<f64> {
        self.timed(|t| t.all_gather_f64(&[local]))
    }

    /// Every rank's text, in rank order (for reports: device names, messages).
    pub fn all_gather_strings(&self, local: &str) -> Vec<String> {
        self.transport
            .all_gather_bytes(local.as_bytes())
            .into_iter()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect()
    }

    /// Every rank's bytes, in rank order.
    pub(crate) fn all_gather_bytes(&self, local: &[u8]) -> Vec<Vec<u8>> {
        self.transport.all_gather_bytes(local)
    }

    /// `send[q]` to rank `q`; entry `q` of the result came from rank `q`.
    pub(crate) fn all_to_all_bytes(&self, send: &[Vec<u8>]) -> Vec<Vec<u8>> {
        debug_assert_eq!(send.len(), self.size());
        self.transport.all_to_all_bytes(send)
    }

    /// Every rank's bytes on `root`, `None` on the other ranks.
    pub(crate) fn gather_bytes(&self, local: &[u8], root: usize) -> Option<Vec<Vec<u8>>> {
        self.transport.gather_bytes(local, root)
    }

    /// The neighbour exchange: receives and sends posted, `during` run, then both finished.
    pub(crate) fn exchange(
        &self,
        sends: &[(usize, &[u8])],
        recvs: &mut [(usize, &mut [u8])],
        during: &mut dyn FnMut(),
    ) {
        self.transport.exchange(sends, recvs, during)
    }

    /// The neighbour exchange of values: run `(rank, start, len)` of `sends` is
    /// `packed[start..start + len]` sent to `rank`; the runs of `recvs` (in order, back to
    /// back from 0) are filled in `received` from their ranks; `during` runs between posting
    /// and waiting. The messages are views of the buffers, not copies.
    pub(crate) fn exchange_values<T: bytemuck::Pod>(
        &self,
        packed: &[T],
        sends: &[Run],
        received: &mut [T],
        recvs: &[Run],
        during: &mut dyn FnMut(),
    ) {
        let width = std::mem::size_of::<T>();
        let bytes: &[u8] = bytemuck::cast_slice(packed);
        let sends: Vec<(usize, &[u8])> = sends
            .iter()
            .map(|&(rank, start, len)| (rank, &bytes[start * width..(start + len) * width]))
            .collect();
        let mut slices: Vec<(usize, &mut [u8])> = Vec::with_capacity(recvs.len());
        let mut rest: &mut [u8] = bytemuck::cast_slice_mut(received);
        for &(rank, _, len) in recvs {
            let (head, tail) = rest.split_at_mut(len * width);
            slices.push((rank, head));
            rest = tail;
        }
        self.exchange(&sends, &mut slices, during);
    }

    /// One result for all ranks: `Ok` everywhere if every rank's `local` is `Ok`, otherwise
    /// the same [`Error::Rank`] on every rank, naming the lowest failing rank and its error
    /// (the other ranks' `Ok` values are dropped). A collective call: every rank must make
    /// it, so that no rank waits for one that gave up.
    ///
    /// The error keeps whether the failing rank's error was bad input
    /// ([`Error::is_bad_input`]), so that every rank classes it the same.
    ///
    /// # Errors
    /// [`Error::Rank`] as above.
    pub fn agree<T>(&self, local: Result<T>) -> Result<T> {
        // 0: Ok; 1: an error of the device or the library; 2: bad input.
        let failed = match &local {
            Ok(_) => 0.0,
            Err(e) if e.is_bad_input() => 2.0,
            Err(_) => 1.0,
        };
        let flags = self.transport.all_gather_f64(&[failed]);
        let Some(first) = flags.iter().position(|&f| f != 0.0) else {
            return local;
        };
        let message = match &local {
            Err(e) => e.to_string(),
            Ok(_) => String::new(),
        };
        let messages = self.transport.all_gather_bytes(message.as_bytes());
        Err(Error::Rank {
            rank: first,
            ranks: flags.iter().filter(|&&f| f != 0.0).count(),
            message: String::from_utf8_lossy(&messages[first]).into_owned(),
            bad_input: flags[first] == 2.0,
        })
    }

    /// Time spent in global sums (including the wait for the slowest rank) since the last
    /// [`reset_counters`](Self::reset_counters).
    pub fn reduction_time(&self) -> Duration {
        self.reduction_time.get()
    }

    /// Global sums done since the last [`reset_counters`](Self::reset_counters).
    pub fn reductions(&self) -> u64 {
        self.reductions.get()
    }

    /// Zeroes the reduction time and count.
    pub fn reset_counters(&self) {
        self.reduction_time.set(Duration::ZERO);
        self.reductions.set(0);
    }

    /// The device exchange made before for the device connection `key`.
    pub(crate) fn cached_device_halo(&self, key: u64) -> Option<Rc<dyn DeviceHalo>> {
        let cache = self.device_halos.borrow();
        cache
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, h)| h.clone())
    }

    /// Keeps `halo` for the device connection `key` (replacing an older one).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn cache_device_halo(&self, key: u64, halo: Rc<dyn DeviceHalo>) {
        let mut cache = self.device_halos.borrow_mut();
        cache.retain(|(k, _)| *k != key);
        cache.push((key, halo));
    }

    fn timed<R>(&self, f: impl FnOnce(&dyn Transport) -> R) -> R {
        let t0 = Instant::now();
        let out = f(self.transport.as_ref());
        self.reduction_time
            .set(self.reduction_time.get() + t0.elapsed());
        self.reductions.set(self.reductions.get() + 1);
        out
    }
}

/// `Vec<T>` of plain numbers as bytes and back (for the byte-level transport).
pub(crate) fn to_bytes<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// Bytes back into numbers (copied: the bytes need not be aligned).
pub(crate) fn from_bytes<T: bytemuck::Pod>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    let mut out = vec![T::zeroed(); n];
    bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(&b[..n * std::mem::size_of::<T>()]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agree_keeps_whether_the_error_was_bad_input() {
        let comm = Communicator::solo();
        let bad = comm
            .agree::<()>(Err(Error::invalid("op", "x", "out of range")))
            .unwrap_err();
        assert!(
            matches!(
                &bad,
                Error::Rank {
                    rank: 0,
                    ranks: 1,
                    bad_input: true,
                    ..
                }
            ),
            "{bad}"
        );
        assert!(bad.is_bad_input());
        // Agreeing again on an agreed error keeps its class.
        let again = comm.agree::<()>(Err(bad)).unwrap_err();
        assert!(again.is_bad_input(), "{again}");
        let device = comm
            .agree::<()>(Err(Error::Device {
                backend: "cpu".into(),
                message: "lost".into(),
            }))
            .unwrap_err();
        assert!(
            matches!(
                &device,
                Error::Rank {
                    bad_input: false,
                    ..
                }
            ),
            "{device}"
        );
        assert!(!device.is_bad_input());
        assert_eq!(comm.agree(Ok(3)).unwrap(), 3);
    }
}
