//! `DistMatrix`: a distributed sparse matrix on this rank's device, and its SpMV with the halo
//! exchange overlapped with the local product.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::halo::{device_halo, route_of, transport_of, DeviceHalo, HaloRoute, Run};
use super::layout::{DistCsr, Layout};
use super::vector::DistVector;
use crate::backend::Cpu;
use crate::bundle::Backend;
use crate::error::Result;
use crate::operator::LinearOperator;
use crate::scalar::{Element, Scalar};
use crate::sparse::{Csr, Format, FormatOptions, SparseMatrix};
use crate::vector::{DeviceIndex, Vector};

/// Time and count of a distributed operator's applications on this rank.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HaloTimes {
    /// Applications.
    pub applications: u64,
    /// Packing the rows others need, the exchange beyond the local product, writing the
    /// ghost rows to the device.
    pub halo: Duration,
    /// The local and the remote products (on a device, launches plus the wait for them
    /// before the next halo is packed).
    pub compute: Duration,
}

/// A sparse matrix distributed by rows over the ranks of a communicator: this rank's local
/// block (owned columns) and remote block (ghost columns) in any of the library's formats on
/// its device, and the halo plan. `y = A x` posts the halo receives, packs and sends the rows
/// other ranks read, runs the local product, finishes the exchange, and adds the remote
/// product.
pub struct DistMatrix<B: Backend, V: Element> {
    layout: Rc<Layout>,
    local: Option<SparseMatrix<B, V>>,
    remote: Option<Remote<B, V>>,
    send_index: DeviceIndex<B>,
    backend: B,
    times: Cell<HaloTimes>,
    exact_timing: Cell<bool>,
    /// The layout's send and receive segments as runs `(rank, start, len)`.
    sends: Vec<Run>,
    recvs: Vec<Run>,
    /// The device-to-device exchange, where the halo takes that route.
    device: Option<Rc<dyn DeviceHalo>>,
    /// The device buffer of the packed rows (`Vector<B, S>` of the last `S` applied).
    packed: RefCell<Option<Box<dyn Any>>>,
}

impl<B: Backend, V: Element> std::fmt::Debug for DistMatrix<B, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DistMatrix(rank {}: {} rows, {} ghosts, local {:?})",
            self.layout.comm.rank(),
            self.layout.owned_len(),
            self.layout.ghost_len(),
            self.local.as_ref().map(|m| m.format())
        )
    }
}

impl<B: Backend, V: Element> DistMatrix<B, V> {
    /// Uploads `a` to `backend` with values `V`: the local block in `format` (`None`: chosen
    /// from its statistics, as [`SparseMatrix::auto`]), the remote block in CSR on the rows
    /// that read ghosts only; the halo device to device where every rank can
    /// ([`HaloRoute::Auto`]).
    /// Collective: a rank whose upload fails makes every rank fail with the same error.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::error::Error::Rank) naming the failing rank and its error.
    pub fn new(backend: &B, a: &DistCsr, format: Option<Format>) -> Result<Self> {
        Self::with_halo(backend, a, format, HaloRoute::Auto)
    }

    /// As [`new`](Self::new), with the halo's route chosen: [`HaloRoute::Host`] through host
    /// memory, [`HaloRoute::Device`] device to device (NCCL) or an error, [`HaloRoute::Auto`]
    /// the device where every rank can. The route taken is [`halo_route`](Self::halo_route)'s.
    /// Collective.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`Error::Unsupported`](crate::error::Error::Unsupported) on
    /// every rank for [`HaloRoute::Device`] where some rank cannot take it (the reason names
    /// the rank).
    pub fn with_halo(
        backend: &B,
        a: &DistCsr,
        format: Option<Format>,
        route: HaloRoute,
    ) -> Result<Self> {
        let comm = a.layout.comm.clone();
        let device = device_halo(backend, &comm, route)?;
        let made = (|| -> Result<Self> {
            let local = (a.local.nrows() > 0)
                .then(|| upload(backend, &a.local, format))
                .transpose()?;
            let remote = (a.remote.nnz() > 0)
                .then(|| Remote::new(backend, &a.remote))
                .transpose()?;
            Ok(DistMatrix {
                layout: a.layout.clone(),
                local,
                remote,
                send_index: DeviceIndex::upload(backend, &a.layout.send_index)?,
                backend: backend.clone(),
                times: Cell::new(HaloTimes::default()),
                exact_timing: Cell::new(false),
                sends: runs(&a.layout.sends),
                recvs: runs(&a.layout.recvs),
                device,
                packed: RefCell::new(None),
            })
        })();
        comm.agree(made)
    }

    /// The layout.
    pub fn layout(&self) -> &Rc<Layout> {
        &self.layout
    }

    /// The format of the local block (`None` on a rank without rows).
    pub fn local_format(&self) -> Option<Format> {
        self.local.as_ref().map(|m| m.format())
    }

    /// This rank's diagonal block on the device as a single-process operator (for
    /// rank-local preconditioners), if the rank has rows.
    pub fn local_operator<S: Scalar>(&self) -> Option<&dyn LinearOperator<B, S>> {
        self.local.as_ref().map(|m| m as &dyn LinearOperator<B, S>)
    }

    /// The route the halo takes: [`HaloRoute::Device`] or [`HaloRoute::Host`] (a single rank,
    /// which has no halo, reports `Host`).
    pub fn halo_route(&self) -> HaloRoute {
        route_of(self.device.as_ref())
    }

    /// What carries the halo: `"host memory"`, or the device library and its version
    /// (`"NCCL 2.28.3 (libnccl.so.2)"`).
    pub fn halo_transport(&self) -> String {
        transport_of(self.device.as_ref())
    }

    /// Halo and compute time of the applications so far.
    pub fn times(&self) -> HaloTimes {
        self.times.get()
    }

    /// Whether [`times`](Self::times) separates halo from compute exactly: the device is
    /// synchronized before each halo is packed (one more round trip per SpMV on a GPU).
    /// Off by default: the halo time then includes the wait for the kernels queued before
    /// the SpMV. The CPU backend is exact either way.
    pub fn set_exact_timing(&self, exact: bool) {
        self.exact_timing.set(exact);
    }

    /// Zeroes [`times`](Self::times).
    pub fn reset_times(&self) {
        self.times.set(HaloTimes::default());
    }

    /// `y = A x`, global: the halo exchange overlapped with the local product. Collective.
    ///
    /// # Errors
    /// Vectors of another distribution; device errors (a device error on one rank is not
    /// agreed: the library's device errors are fatal).
    pub fn apply<S: Scalar>(&self, x: &DistVector<B, S>, y: &mut DistVector<B, S>) -> Result<()> {
        self.apply_add(S::ONE, x, S::ZERO, y)
    }

    /// `y = alpha A x + beta y`, global. Collective.
    ///
    /// # Errors
    /// As [`apply`](Self::apply).
    pub fn apply_add<S: Scalar>(
        &self,
        alpha: S,
        x: &DistVector<B, S>,
        beta: S,
        y: &mut DistVector<B, S>,
    ) -> Result<()> {
        let layout = &self.layout;
        let check = |v: &Rc<Layout>| {
            if layout.same_as(v) {
                Ok(())
            } else {
                Err(crate::error::Error::invalid(
                    "DistMatrix::apply",
                    "x, y",
                    "the vectors are not distributed as the matrix",
                ))
            }
        };
        check(x.layout())?;
        check(y.layout())?;
        let mut times = self.times.get();
        let n_send = layout.send_index.len();
        // With exact timing, wait for the work queued before (it produced x), so that it
        // counts as compute and not as halo. Otherwise the read of the packed rows waits for
        // it (one device round trip fewer).
        let t0 = Instant::now();
        if n_send > 0 && self.exact_timing.get() {
            self.backend.synchronize()?;
        }
        let t1 = Instant::now();
        times.compute += t1 - t0;
        if let Some(device) = &self.device {
            return self.apply_device(device.as_ref(), alpha, x, beta, y, times, t1);
        }

        // Pack the rows others read.
        let packed: Vec<S> = if n_send > 0 {
            let mut send = Vector::<B, S>::zeros(&self.backend, n_send)?;
            send.gather_from(x.owned(), &self.send_index)?;
            send.to_vec()?
        } else {
            Vec::new()
        };
        let mut ghosts = vec![S::ZERO; layout.ghost_len()];

        // Exchange, with the local product in between.
        let mut local_result = Ok(());
        let mut local_time = Duration::ZERO;
        let t2 = Instant::now();
        let (sends, recvs) = (&self.sends, &self.recvs);
        layout
            .comm
            .exchange_values(&packed, sends, &mut ghosts, recvs, &mut || {
                let t = Instant::now();
                local_result = match &self.local {
                    Some(a) => a.apply_add(alpha, x.owned(), beta, y.owned_mut()),
                    None => Ok(()),
                };
                local_time = t.elapsed();
            });
        let exchange = t2.elapsed();
        local_result?;

        // Ghost rows to the device; the remote product.
        let t3 = Instant::now();
        if let Some(remote) = &self.remote {
            let mut slot = x.ghost.borrow_mut();
            let ghost = match slot.as_mut() {
                Some(g) => {
                    g.write(&ghosts)?;
                    g
                }
                None => slot.insert(Vector::from_slice(&self.backend, &ghosts)?),
            };
            let t4 = Instant::now();
            times.halo += (t4 - t3) + (t2 - t1) + exchange.saturating_sub(local_time);
            remote.apply_add(alpha, ghost, y.owned_mut())?;
            times.compute += local_time + t4.elapsed();
        } else {
            times.halo += (t2 - t1) + exchange.saturating_sub(local_time);
            times.compute += local_time;
        }
        times.applications += 1;
        self.times.set(times);
        Ok(())
    }
}

impl<B: Backend, V: Element> DistMatrix<B, V> {
    /// `apply_add` with the halo device to device: the rows others read packed into a
    /// device buffer, the exchange posted (after the work queued before), the local product
    /// queued beside it, the exchange finished, the remote product queued.
    #[allow(clippy::too_many_arguments)]
    fn apply_device<S: Scalar>(
        &self,
        device: &dyn DeviceHalo,
        alpha: S,
        x: &DistVector<B, S>,
        beta: S,
        y: &mut DistVector<B, S>,
        mut times: HaloTimes,
        t1: Instant,
    ) -> Result<()> {
        let layout = &self.layout;
        let (n_send, n_ghost) = (layout.send_index.len(), layout.ghost_len());
        let mut packed_slot = self.packed.borrow_mut();
        let packed = if n_send > 0 {
            let p = scratch::<B, S>(&mut packed_slot, &self.backend, n_send)?;
            p.gather_from(x.owned(), &self.send_index)?;
            Some(&*p)
        } else {
            None
        };
        let mut ghost_slot = x.ghost.borrow_mut();
        if n_ghost > 0 && ghost_slot.is_none() {
            *ghost_slot = Some(Vector::zeros(&self.backend, n_ghost)?);
        }
        device.start(
            packed.map(|p| p as &dyn Any),
            &self.sends,
            ghost_slot.as_ref().map(|g| g as &dyn Any),
            &self.recvs,
        )?;
        let t2 = Instant::now();
        let local = match &self.local {
            Some(a) => a.apply_add(alpha, x.owned(), beta, y.owned_mut()),
            None => Ok(()),
        };
        let t3 = Instant::now();
        // Finished even when the local product failed: the ghost rows are written until then.
        let finished = device.finish();
        local?;
        finished?;
        let t4 = Instant::now();
        if let (Some(remote), Some(ghost)) = (&self.remote, ghost_slot.as_ref()) {
            remote.apply_add(alpha, ghost, y.owned_mut())?;
        }
        times.halo += (t2 - t1) + (t4 - t3);
        times.compute += (t3 - t2) + t4.elapsed();
        times.applications += 1;
        self.times.set(times);
        Ok(())
    }
}

/// Segments as runs `(rank, start, len)`.
fn runs(segments: &[super::layout::Segment]) -> Vec<Run> {
    segments.iter().map(|s| (s.rank, s.start, s.len)).collect()
}

/// The remote block on the rows that read ghosts (the boundary rows, few of a rank's rows):
/// CSR over those rows, and where they are among the rank's. Its product adds to `y` on those
/// rows only, so it streams neither `y` nor a row offset for the rows that read no ghost.
struct Remote<B: Backend, V: Element> {
    matrix: SparseMatrix<B, V>,
    rows: DeviceIndex<B>,
    len: usize,
    /// The boundary rows of `y` while the product adds to them (`Vector<B, S>` of the last
    /// `S` applied).
    work: RefCell<Option<Box<dyn Any>>>,
}

impl<B: Backend, V: Element> Remote<B, V> {
    fn new(backend: &B, remote: &Csr<Cpu, f64>) -> Result<Self> {
        let rows: Vec<u32> = (0..remote.nrows())
            .filter(|&i| !remote.row(i).0.is_empty())
            .map(|i| i as u32)
            .collect();
        let mut row_ptr = Vec::with_capacity(rows.len() + 1);
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        row_ptr.push(0u32);
        for &i in &rows {
            let (c, v) = remote.row(i as usize);
            cols.extend_from_slice(c);
            values.extend_from_slice(v);
            row_ptr.push(cols.len() as u32);
        }
        let compact = Csr::new(rows.len(), remote.ncols(), row_ptr, cols, values)?;
        Ok(Remote {
            matrix: upload(backend, &compact, Some(Format::Csr))?,
            rows: DeviceIndex::upload(backend, &rows)?,
            len: rows.len(),
            work: RefCell::new(None),
        })
    }

    /// `y += α R g` on the boundary rows: gathered, added to, scattered back (the same
    /// operations in the same order as the product on every row, so the same bits).
    fn apply_add<S: Scalar>(
        &self,
        alpha: S,
        ghost: &Vector<B, S>,
        y: &mut Vector<B, S>,
    ) -> Result<()> {
        let mut slot = self.work.borrow_mut();
        let work = scratch::<B, S>(&mut slot, y.backend(), self.len)?;
        work.gather_from(y, &self.rows)?;
        self.matrix.apply_add(alpha, ghost, S::ONE, work)?;
        work.scatter_to(y, &self.rows)
    }
}

/// The device vector of `len` values of `S` kept in `slot` between applications (an
/// operator of values `V` applies to vectors of any `S`): the one there if it has type `S`,
/// else a new one, zeroed.
fn scratch<'a, B: Backend, S: Scalar>(
    slot: &'a mut Option<Box<dyn Any>>,
    backend: &B,
    len: usize,
) -> Result<&'a mut Vector<B, S>> {
    if !slot.as_ref().is_some_and(|v| v.is::<Vector<B, S>>()) {
        *slot = Some(Box::new(Vector::<B, S>::zeros(backend, len)?));
    }
    Ok(slot
        .as_mut()
        .and_then(|v| v.downcast_mut::<Vector<B, S>>())
        .expect("made above"))
}

fn upload<B: Backend, V: Element>(
    backend: &B,
    a: &Csr<Cpu, f64>,
    format: Option<Format>,
) -> Result<SparseMatrix<B, V>> {
    let a: Csr<Cpu, V> = a.convert();
    match format {
        None => Ok(SparseMatrix::auto(backend, &a)?.0),
        Some(f) => SparseMatrix::from_csr(backend, &a, f, &FormatOptions::default()),
    }
}

/// A distributed operator: what the distributed solvers apply.
pub trait DistOperator<B: Backend, S: Scalar> {
    /// The distribution of `x` and `y`.
    fn layout(&self) -> &Rc<Layout>;

    /// `y = A x`. Collective.
    ///
    /// # Errors
    /// Distribution mismatches; device errors.
    fn apply(&self, x: &DistVector<B, S>, y: &mut DistVector<B, S>) -> Result<()>;

    /// The whole operator as a single-process one, when this rank's rows read no other
    /// rank's (no ghosts): what a one-rank solve hands to [`crate::solver`]. Default `None`.
    fn as_local(&self) -> Option<&dyn LinearOperator<B, S>> {
        None
    }
}

impl<B: Backend, V: Element, S: Scalar> DistOperator<B, S> for DistMatrix<B, V> {
    fn layout(&self) -> &Rc<Layout> {
        &self.layout
    }

    fn apply(&self, x: &DistVector<B, S>, y: &mut DistVector<B, S>) -> Result<()> {
        DistMatrix::apply(self, x, y)
    }

    fn as_local(&self) -> Option<&dyn LinearOperator<B, S>> {
        if self.layout.ghost_len() == 0 {
            self.local_operator::<S>()
        } else {
            None
        }
    }
}
