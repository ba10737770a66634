//! The MPI transport (feature `mpi`): `MPI_COMM_WORLD` through rsmpi.
//!
//! MPI is initialized once per process, with `MPI_THREAD_FUNNELED` (rayon's threads never
//! call MPI), on the first [`Communicator::mpi`]; it is finalized when the last
//! communicator handed out is dropped. Every call here is made by the thread that
//! initialized MPI.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use mpi::collective::{CommunicatorCollectives, Root};
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator as _, SimpleCommunicator};
use mpi::Threading;

use super::comm::{Communicator, Transport};
use crate::error::{Error, Result};

/// Tag of the halo messages.
const HALO_TAG: i32 = 7101;

pub(crate) struct MpiTransport {
    world: SimpleCommunicator,
    node_rank: usize,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

thread_local! {
    static WORLD: RefCell<Weak<MpiTransport>> = const { RefCell::new(Weak::new()) };
}

impl Communicator {
    /// `MPI_COMM_WORLD`: initializes MPI on the first call (later calls return the same
    /// world while one is alive); MPI is finalized when the last handle is dropped. Run the
    /// program under `mpirun -np P`; without `mpirun` it is a world of one rank.
    ///
    /// # Errors
    /// [`Error::BackendUnavailable`] if MPI cannot be initialized (for instance after it was
    /// finalized, which MPI allows once per process).
    pub fn mpi() -> Result<Self> {
        if let Some(t) = WORLD.with(|w| w.borrow().upgrade()) {
            return Ok(Communicator::from_transport(t));
        }
        let (universe, _) =
            mpi::initialize_with_threading(Threading::Funneled).ok_or_else(|| {
                Error::BackendUnavailable {
                    backend: "mpi".into(),
                    reason: "MPI could not be initialized (it is initialized once per process, \
                         and not again after it was finalized)"
                        .into(),
                }
            })?;
        let world = universe.world();
        let node_rank = world.split_shared(world.rank()).rank() as usize;
        let t = Rc::new(MpiTransport {
            world,
            node_rank,
            _universe: universe,
        });
        WORLD.with(|w| *w.borrow_mut() = Rc::downgrade(&t));
        Ok(Communicator::from_transport(t))
    }

    /// Ends every rank at once (`MPI_Abort`): for a failure that the other ranks cannot
    /// learn of collectively (a panic). Without MPI, exits the process.
    pub fn abort(code: i32) -> ! {
        if let Some(t) = WORLD.with(|w| w.borrow().upgrade()) {
            t.world.abort(code)
        }
        std::process::exit(code)
    }
}

/// Displacements of `counts`.
fn displs(counts: &[i32]) -> Vec<i32> {
    counts
        .iter()
        .scan(0i32, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect()
}

fn split(buf: Vec<u8>, counts: &[i32]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    for &c in counts {
        out.push(buf[at..at + c as usize].to_vec());
        at += c as usize;
    }
    out
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn node_rank(&self) -> usize {
        self.node_rank
    }

    fn all_gather_f64(&self, local: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; local.len() * self.size()];
        self.world.all_gather_into(local, &mut out[..]);
        out
    }

    fn all_gather_bytes(&self, local: &[u8]) -> Vec<Vec<u8>> {
        let mut counts = vec![0i32; self.size()];
        self.world
            .all_gather_into(&(local.len() as i32), &mut counts[..]);
        let d = displs(&counts);
        let mut buf = vec![0u8; counts.iter().map(|&c| c as usize).sum::<usize>() + 1];
        {
            let mut part = PartitionMut::new(&mut buf[..], &counts[..], &d[..]);
            self.world.all_gather_varcount_into(local, &mut part);
        }
        split(buf, &counts)
    }

    fn all_to_all_bytes(&self, send: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let send_counts: Vec<i32> = send.iter().map(|s| s.len() as i32).collect();
        let mut recv_counts = vec![0i32; self.size()];
        self.world
            .all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        // Never empty: two empty buffers share a dangling address, which MPI rejects as
        // aliased send and receive buffers.
        let mut flat: Vec<u8> = send.concat();
        flat.push(0);
        let sd = displs(&send_counts);
        let rd = displs(&recv_counts);
        let mut buf = vec![0u8; recv_counts.iter().map(|&c| c as usize).sum::<usize>() + 1];
        {
            let part = Partition::new(&flat[..], &send_counts[..], &sd[..]);
            let mut rpart = PartitionMut::new(&mut buf[..], &recv_counts[..], &rd[..]);
            self.world.all_to_all_varcount_into(&part, &mut rpart);
        }
        split(buf, &recv_counts)
    }

    fn gather_bytes(&self, local: &[u8], root: usize) -> Option<Vec<Vec<u8>>> {
        let root_process = self.world.process_at_rank(root as i32);
        let n = local.len() as i32;
        if self.rank() == root {
            let mut counts = vec![0i32; self.size()];
            root_process.gather_into_root(&n, &mut counts[..]);
            let d = displs(&counts);
            let mut buf = vec![0u8; counts.iter().map(|&c| c as usize).sum::<usize>() + 1];
            {
                let mut part = PartitionMut::new(&mut buf[..], &counts[..], &d[..]);
                root_process.gather_varcount_into_root(local, &mut part);
            }
            Some(split(buf, &counts))
        } else {
            root_process.gather_into(&n);
            root_process.gather_varcount_into(local);
            None
        }
    }

    fn exchange(
        &self,
        sends: &[(usize, &[u8])],
        recvs: &mut [(usize, &mut [u8])],
        during: &mut dyn FnMut(),
    ) {
        mpi::request::scope(|scope| {
            let mut pending = Vec::with_capacity(sends.len() + recvs.len());
            for (from, buf) in recvs.iter_mut() {
                let p = self.world.process_at_rank(*from as i32);
                pending.push(p.immediate_receive_into_with_tag(scope, &mut buf[..], HALO_TAG));
            }
            let mut sent = Vec::with_capacity(sends.len());
            for (to, buf) in sends {
                let p = self.world.process_at_rank(*to as i32);
                sent.push(p.immediate_send_with_tag(scope, &buf[..], HALO_TAG));
            }
            during();
            for r in pending {
                r.wait();
            }
            for s in sent {
                s.wait();
            }
        });
    }
}
