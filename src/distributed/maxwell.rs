//! Nodal DG Maxwell over ranks: [`DistMaxwell`] and [`simulate_cavity`].

use std::any::Any;
use std::rc::Rc;
use std::time::Instant;

use super::comm::{from_bytes, to_bytes, Communicator};
use super::halo::{device_halo, route_of, transport_of, DeviceHalo, HaloRoute, Run};
use super::input::{partition_rows, PartitionMethod};
use super::matrix::HaloTimes;
use super::partition::Partition;
use crate::backend::Cpu;
use crate::bundle::Backend;
use crate::dg::host::Fields;
use crate::dg::{face_vertices, DgOps, Flux, Maxwell, MaxwellHost, TetMesh};
use crate::error::{Error, Result};
use crate::mesh::NO_NEIGHBOR;
use crate::scalar::Scalar;
use crate::sparse::Csr;
use crate::vector::{DeviceIndex, Vector};

/// An exchange plan: the positions sent and their runs, the positions received and theirs.
type Plan = (Vec<u32>, Vec<Run>, Vec<u32>, Vec<Run>);

/// The face traces one rank's elements exchange before every stage.
struct TraceHalo<B: Backend, T: Scalar> {
    /// Positions in the fields of the trace values sent, grouped by destination.
    send_index: Option<DeviceIndex<B>>,
    /// Positions in the fields of the ghost trace values received, grouped by source.
    recv_index: Option<DeviceIndex<B>>,
    sends: Vec<Run>,
    recvs: Vec<Run>,
    packed: Option<Vector<B, T>>,
    ghost: Option<Vector<B, T>>,
    device: Option<Rc<dyn DeviceHalo>>,
    exact_timing: bool,
    times: HaloTimes,
}

impl<B: Backend, T: Scalar> TraceHalo<B, T> {
    /// Writes the ghost traces of `q` from their owners, running `during(q)` (work that
    /// reads no ghost) while they travel. Collective.
    fn exchange_around(
        &mut self,
        comm: &Communicator,
        backend: &B,
        q: &mut Vector<B, T>,
        during: &mut dyn FnMut(&Vector<B, T>) -> Result<()>,
    ) -> Result<()> {
        if comm.size() == 1 {
            return during(q);
        }
        let t0 = Instant::now();
        if self.exact_timing {
            backend.synchronize()?;
        }
        let t1 = Instant::now();
        if let (Some(p), Some(i)) = (self.packed.as_mut(), self.send_index.as_ref()) {
            p.gather_from(q, i)?;
        }
        let mut overlapped = std::time::Duration::ZERO;
        match &self.device {
            Some(d) => {
                d.start(
                    self.packed.as_ref().map(|p| p as &dyn Any),
                    &self.sends,
                    self.ghost.as_ref().map(|g| g as &dyn Any),
                    &self.recvs,
                )?;
                let t = Instant::now();
                let local = during(q);
                overlapped = t.elapsed();
                // Finished even when the local work failed: the ghost traces are written
                // until then.
                let finished = d.finish();
                local?;
                finished?;
            }
            None => {
                let packed = match &self.packed {
                    Some(p) => p.to_vec()?,
                    None => Vec::new(),
                };
                let total = self.recvs.iter().map(|r| r.2).sum::<usize>();
                let mut received = vec![T::ZERO; total];
                let mut result = Ok(());
                {
                    let q: &Vector<B, T> = q;
                    comm.exchange_values(
                        &packed,
                        &self.sends,
                        &mut received,
                        &self.recvs,
                        &mut || {
                            let t = Instant::now();
                            result = during(q);
                            overlapped = t.elapsed();
                        },
                    );
                }
                result?;
                if let Some(g) = self.ghost.as_mut() {
                    g.write(&received)?;
                }
            }
        }
        if let (Some(g), Some(i)) = (self.ghost.as_ref(), self.recv_index.as_ref()) {
            g.scatter_to(q, i)?;
        }
        self.times.compute += (t1 - t0) + overlapped;
        self.times.halo += t1.elapsed().saturating_sub(overlapped);
        self.times.applications += 1;
        Ok(())
    }
}

/// The DG Maxwell solver ([`Maxwell`]) over the ranks of a communicator: this rank's
/// tetrahedra and their ghost layer on its device, the ghost traces exchanged before every
/// stage. Every method is collective unless it says otherwise.
///
/// Nodal DG Maxwell over ranks (seed 004's explicit solver, distributed): the tetrahedra
/// partitioned by their face graph (contiguous or METIS), each rank holding its elements and
/// one layer of ghost elements across its partition faces, and before every Runge–Kutta
/// stage the face traces its elements show other ranks exchanged (host memory or device to
/// device, [`HaloRoute`]). Only traces cross: `6 Nfp` values per partition face and stage.
///
/// A ghost element's traces on the faces it shares with owned elements are the owner's
/// values at the start of every stage, which is all the surface flux of the owned elements
/// reads; the ghost's other values are never read by owned elements (the volume terms read
/// the element's own nodes, the flux the neighbour's trace), so the owned fields evolve
/// exactly as in one process. Energy and L² error are sums over owned elements, added over
/// the ranks.
///
/// ```
/// use galerkin::distributed::{Communicator, DistMaxwell, HaloRoute, PartitionMethod};
/// use galerkin::dg::{cavity_mode, Flux, TetMesh};
/// use galerkin::Cpu;
///
/// let comm = Communicator::solo(); // Communicator::mpi()? under mpirun (feature `mpi`)
/// let mesh = TetMesh::unit_cube(2, 0.0, 0)?;
/// let cpu = Cpu::new();
/// let mut dg = DistMaxwell::<Cpu, f64>::new(
///     &cpu, &comm, &mesh, 2, Flux::Upwind, PartitionMethod::Contiguous, HaloRoute::Auto,
/// )?;
/// dg.set_fields(|x| cavity_mode([1, 1, 0], 0.0, x))?;
/// let dt = dg.stable_dt(0.5);
/// for _ in 0..5 {
///     dg.step(dt)?;
/// }
/// assert!(dg.l2_error(|x| cavity_mode([1, 1, 0], 5.0 * dt, x))? < 1e-1);
/// # Ok::<(), galerkin::Error>(())
/// ```
pub struct DistMaxwell<B: Backend + DgOps, T: Scalar> {
    comm: Communicator,
    backend: B,
    dg: Maxwell<B, T>,
    /// Global ids of the local elements: the owned ones (increasing), then the ghosts (by
    /// owner, then increasing).
    elements: Vec<u32>,
    owned: usize,
    /// Owned elements that border no other rank's: the first `interior` local elements.
    interior: usize,
    global_elements: usize,
    partition: Rc<Partition>,
    halo: TraceHalo<B, T>,
}

impl<B: Backend + DgOps, T: Scalar> std::fmt::Debug for DistMaxwell<B, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DistMaxwell(rank {} of {}: {} of {} elements, {} ghosts)",
            self.comm.rank(),
            self.comm.size(),
            self.owned,
            self.global_elements,
            self.elements.len() - self.owned
        )
    }
}

/// The face graph of the tetrahedra (one row per element, its face neighbours), for the
/// partitioner.
fn face_graph(neighbours: &[[u32; 4]]) -> Result<Csr<Cpu, f64>> {
    let k = neighbours.len();
    let mut row_ptr = Vec::with_capacity(k + 1);
    let mut cols = Vec::with_capacity(4 * k);
    row_ptr.push(0u32);
    for (e, n) in neighbours.iter().enumerate() {
        let mut row: Vec<u32> = n.iter().copied().filter(|&o| o != NO_NEIGHBOR).collect();
        row.push(e as u32);
        row.sort_unstable();
        row.dedup();
        cols.extend(row);
        row_ptr.push(u32::try_from(cols.len()).map_err(|_| {
            Error::invalid(
                "DistMaxwell::new",
                "mesh",
                "too many faces for 32-bit indices",
            )
        })?);
    }
    let values = vec![1.0; cols.len()];
    Csr::new(k, k, row_ptr, cols, values)
}

impl<B: Backend + DgOps, T: Scalar> DistMaxwell<B, T> {
    /// The order-`order` DG discretisation of `mesh` (the whole mesh, the same on every
    /// rank) with `flux`, its tetrahedra given to the ranks by `method` on their face graph,
    /// the ghost traces exchanged by `route`; fields zero. Collective.
    ///
    /// # Errors
    /// As [`Maxwell::new`] (agreed: the same [`Error::Rank`] on every rank), METIS failures,
    /// [`Error::InvalidArgument`] on every rank if a rank would own no element (more ranks
    /// than the partition fills), [`HaloRoute::Device`] where a rank cannot take it.
    pub fn new(
        backend: &B,
        comm: &Communicator,
        mesh: &TetMesh,
        order: usize,
        flux: Flux,
        method: PartitionMethod,
        route: HaloRoute,
    ) -> Result<Self> {
        let k = mesh.tets.len();
        let neighbours = comm.agree(crate::mesh::tet_neighbors(&mesh.tets, mesh.points.len()))?;
        // In the DG reference faces' order (`neighbours[e][f]` across `face_vertices(e, f)`).
        let across: [usize; 4] = std::array::from_fn(|f| {
            let mut dg = face_vertices([0, 1, 2, 3], f);
            dg.sort_unstable();
            (0..4)
                .find(|&k| {
                    let mut m = crate::mesh::tet_face([0, 1, 2, 3], k);
                    m.sort_unstable();
                    m == dg
                })
                .expect("both number the four faces of a tetrahedron")
        });
        let neighbours: Vec<[u32; 4]> = neighbours
            .iter()
            .map(|n| std::array::from_fn(|f| n[across[f]]))
            .collect();
        let graph = comm.agree(face_graph(&neighbours))?;
        let mut partition = partition_rows(comm, &graph, method)?;
        drop(graph);
        let me = comm.rank();
        let owner: Vec<usize> = (0..k).map(|e| partition.owner(e)).collect();
        partition.set_method(match method {
            PartitionMethod::Contiguous => "contiguous elements",
            PartitionMethod::Metis => "METIS k-way on the face graph",
        });
        let partition = Rc::new(partition);
        // Every rank needs elements (the same answer everywhere: the partition is global).
        let mut counts = vec![0usize; comm.size()];
        for &o in &owner {
            counts[o] += 1;
        }
        if let Some(empty) = counts.iter().position(|&c| c == 0) {
            return Err(Error::invalid(
                "DistMaxwell::new",
                "mesh",
                format!(
                    "rank {empty} would own no tetrahedron ({k} tetrahedra over {} ranks by {}): \
                     use fewer ranks or a finer mesh",
                    comm.size(),
                    match method {
                        PartitionMethod::Contiguous => "contiguous blocks",
                        PartitionMethod::Metis => "METIS",
                    }
                ),
            ));
        }
        // Owned elements that read no ghost first (their stage runs while the halo
        // travels), then those that do, each increasing; then the ghosts.
        let borders = |e: u32| {
            neighbours[e as usize]
                .iter()
                .any(|&o| o != NO_NEIGHBOR && owner[o as usize] != me)
        };
        let mine = (0..k as u32).filter(|&e| owner[e as usize] == me);
        let mut elements: Vec<u32> = mine.clone().filter(|&e| !borders(e)).collect();
        let interior = elements.len();
        elements.extend(mine.filter(|&e| borders(e)));
        let owned = elements.len();
        let mut ghosts: Vec<(usize, u32)> = elements
            .iter()
            .flat_map(|&e| neighbours[e as usize])
            .filter(|&o| o != NO_NEIGHBOR && owner[o as usize] != me)
            .map(|o| (owner[o as usize], o))
            .collect();
        ghosts.sort_unstable();
        ghosts.dedup();
        elements.extend(ghosts.iter().map(|g| g.1));
        let local = TetMesh {
            points: mesh.points.clone(),
            tets: elements.iter().map(|&e| mesh.tets[e as usize]).collect(),
            boundary_tags: mesh.boundary_tags.clone(),
            absorbing: mesh.absorbing.clone(),
        };
        let dg = comm.agree(Maxwell::<B, T>::new(backend, &local, order, flux))?;
        drop(local);

        // The exchange plan, made alike on every rank from the global mesh: rank p sends
        // rank q the traces (element e, face c) of its elements e whose face c borders an
        // element of q, in increasing (e, c); q receives them in the same order into its
        // ghost copy of e (whose nodes are numbered as the owner's: the same vertices).
        let shape = dg.shape();
        let (np, len) = (shape.np, shape.len());
        let faces = &dg.reference().face_nodes;
        let mut local_of = vec![u32::MAX; k];
        for (l, &g) in elements.iter().enumerate() {
            local_of[g as usize] = l as u32;
        }
        let position = |e: u32, c: usize, field: usize, j: usize| -> Result<u32> {
            let p = field * len + local_of[e as usize] as usize * np + faces[c][j];
            u32::try_from(p).map_err(|_| {
                Error::invalid(
                    "DistMaxwell::new",
                    "mesh",
                    format!("{len} nodes per field on rank {me} exceed 32-bit trace indices"),
                )
            })
        };
        let plan = || -> Result<Plan> {
            let (mut send_index, mut sends) = (Vec::new(), Vec::new());
            let (mut recv_index, mut recvs) = (Vec::new(), Vec::new());
            for q in (0..comm.size()).filter(|&q| q != me) {
                let start = send_index.len();
                for &e in &elements[..owned] {
                    for (c, &o) in neighbours[e as usize].iter().enumerate() {
                        if o != NO_NEIGHBOR && owner[o as usize] == q {
                            for field in 0..6 {
                                for j in 0..faces[c].len() {
                                    send_index.push(position(e, c, field, j)?);
                                }
                            }
                        }
                    }
                }
                if send_index.len() > start {
                    sends.push((q, start, send_index.len() - start));
                }
                let start = recv_index.len();
                for &(_, g) in ghosts.iter().filter(|(o, _)| *o == q) {
                    for (c, &o) in neighbours[g as usize].iter().enumerate() {
                        if o != NO_NEIGHBOR && owner[o as usize] == me {
                            for field in 0..6 {
                                for j in 0..faces[c].len() {
                                    recv_index.push(position(g, c, field, j)?);
                                }
                            }
                        }
                    }
                }
                if recv_index.len() > start {
                    recvs.push((q, start, recv_index.len() - start));
                }
            }
            Ok((send_index, sends, recv_index, recvs))
        };
        let (send_index, sends, recv_index, recvs) = comm.agree(plan())?;
        let upload = |index: &[u32]| -> Result<Option<DeviceIndex<B>>> {
            (!index.is_empty())
                .then(|| DeviceIndex::upload(backend, index))
                .transpose()
        };
        let buffer = |n: usize| -> Result<Option<Vector<B, T>>> {
            (n > 0).then(|| Vector::zeros(backend, n)).transpose()
        };
        let halo = comm.agree((|| {
            Ok(TraceHalo {
                send_index: upload(&send_index)?,
                recv_index: upload(&recv_index)?,
                packed: buffer(send_index.len())?,
                ghost: buffer(recv_index.len())?,
                sends,
                recvs,
                device: None,
                exact_timing: false,
                times: HaloTimes::default(),
            })
        })())?;
        let device = device_halo(backend, comm, route)?;
        Ok(DistMaxwell {
            comm: comm.clone(),
            backend: backend.clone(),
            dg,
            elements,
            owned,
            interior,
            global_elements: k,
            partition,
            halo: TraceHalo { device, ..halo },
        })
    }

    /// The communicator.
    pub fn comm(&self) -> &Communicator {
        &self.comm
    }

    /// This rank's solver on its elements and their ghosts (local; for launch parameters,
    /// [`Maxwell::autotune`], the stage cost). Its energy and error count the ghosts too:
    /// use this type's.
    pub fn local(&mut self) -> &mut Maxwell<B, T> {
        &mut self.dg
    }

    /// The partition of the elements.
    pub fn partition(&self) -> &Partition {
        &self.partition
    }

    /// Elements of the whole mesh.
    pub fn global_elements(&self) -> usize {
        self.global_elements
    }

    /// Elements this rank owns (local).
    pub fn owned_elements(&self) -> usize {
        self.owned
    }

    /// Ghost elements this rank holds (local).
    pub fn ghost_elements(&self) -> usize {
        self.elements.len() - self.owned
    }

    /// Unknowns of the whole problem, `6 K Np`.
    pub fn dofs(&self) -> usize {
        6 * self.global_elements * self.dg.shape().np
    }

    /// Trace values this rank sends before every stage (local).
    pub fn trace_values_sent(&self) -> usize {
        self.halo.sends.iter().map(|r| r.2).sum()
    }

    /// The simulated time.
    pub fn time(&self) -> f64 {
        self.dg.time()
    }

    /// The halo's route (see [`DistMatrix::halo_route`](super::DistMatrix::halo_route)).
    pub fn halo_route(&self) -> HaloRoute {
        route_of(self.halo.device.as_ref())
    }

    /// What carries the halo: `"host memory"` or the device library.
    pub fn halo_transport(&self) -> String {
        transport_of(self.halo.device.as_ref())
    }

    /// Time and count of the exchanges on this rank (`compute` holds the waits for the
    /// device before them under [`set_exact_timing`](Self::set_exact_timing)). Local.
    pub fn halo_times(&self) -> HaloTimes {
        self.halo.times
    }

    /// Zeroes [`halo_times`](Self::halo_times). Local.
    pub fn reset_halo_times(&mut self) {
        self.halo.times = HaloTimes::default();
    }

    /// Whether every exchange first waits for the device (so that the halo time does not
    /// include the stage queued before it). Local; off by default.
    pub fn set_exact_timing(&mut self, exact: bool) {
        self.halo.exact_timing = exact;
    }

    /// Sets the fields to `f(x)` at every node.
    ///
    /// # Errors
    /// Device errors (agreed).
    pub fn set_fields(&mut self, f: impl Fn([f64; 3]) -> [f64; 6] + Sync) -> Result<()> {
        let local = self.dg.set_fields(f);
        self.comm.agree(local)
    }

    /// A stable step: the single-process [`Maxwell::stable_dt`] of the whole mesh (the
    /// smallest over the ranks).
    pub fn stable_dt(&self, cfl: f64) -> f64 {
        self.comm
            .all_gather(self.dg.stable_dt(cfl))
            .into_iter()
            .fold(f64::INFINITY, f64::min)
    }

    /// One low-storage RK4 step of `dt`, the ghost traces exchanged before every stage while
    /// the elements that read no ghost take their stage (the fused kernel; with the four
    /// kernels the exchange comes first).
    ///
    /// # Errors
    /// Device errors (not agreed: the library's device errors are fatal).
    pub fn step(&mut self, dt: f64) -> Result<()> {
        let DistMaxwell {
            dg,
            halo,
            comm,
            backend,
            interior,
            owned,
            ..
        } = self;
        dg.step_overlapped(dt, *interior, *owned, &mut |q, during| {
            halo.exchange_around(comm, backend, q, during)
        })
    }

    /// This rank's fields with the ghost elements' values zeroed.
    fn owned_fields(&self) -> Result<Fields> {
        let mut q = self.dg.fields()?;
        let start = self.owned * self.dg.shape().np;
        for c in &mut q {
            c[start..].fill(0.0);
        }
        Ok(q)
    }

    fn host(&self) -> MaxwellHost<'_> {
        MaxwellHost::new(self.dg.geometry(), self.dg.reference(), self.dg.flux())
    }

    /// The discrete energy of the whole mesh, `½ Σ_e J_e qᵀ M q` (host sums over owned
    /// elements, added in rank order).
    ///
    /// # Errors
    /// Device errors (agreed).
    pub fn energy(&self) -> Result<f64> {
        let local = self.owned_fields().map(|q| self.host().energy(&q));
        Ok(self.comm.sum_scalar(self.comm.agree(local)?))
    }

    /// The discrete L² error of the six fields against `exact` over the whole mesh.
    ///
    /// # Errors
    /// Device errors (agreed).
    pub fn l2_error(&self, exact: impl Fn([f64; 3]) -> [f64; 6] + Sync) -> Result<f64> {
        let local = self.owned_fields().map(|mut q| {
            let x = &self.dg.geometry().x;
            for i in 0..self.owned * self.dg.shape().np {
                let v = exact([x[0][i], x[1][i], x[2][i]]);
                for c in 0..6 {
                    q[c][i] -= v[c];
                }
            }
            self.host().inner(&q, &q)
        });
        let sum = self.comm.sum_scalar(self.comm.agree(local)?);
        Ok(sum.max(0.0).sqrt())
    }

    /// The fields of the whole mesh in its element order on rank `root` (`None` on the
    /// other ranks), with the nodes' coordinates.
    ///
    /// # Errors
    /// Device errors (agreed).
    #[allow(clippy::type_complexity)]
    pub fn gather(&self, root: usize) -> Result<Option<(Fields, [Vec<f64>; 3])>> {
        let np = self.dg.shape().np;
        let n = self.owned * np;
        let q = self.comm.agree(self.dg.fields())?;
        let x = &self.dg.geometry().x;
        let mut bytes = to_bytes(&[self.owned as u64]);
        bytes.extend(to_bytes(&self.elements[..self.owned]));
        for c in q.iter().chain(x.iter()) {
            bytes.extend(to_bytes(&c[..n]));
        }
        let Some(parts) = self.comm.gather_bytes(&bytes, root) else {
            return Ok(None);
        };
        let total = self.global_elements * np;
        let mut fields: Fields = std::array::from_fn(|_| vec![0.0; total]);
        let mut nodes: [Vec<f64>; 3] = std::array::from_fn(|_| vec![0.0; total]);
        for part in parts {
            let owned = from_bytes::<u64>(&part[..8])[0] as usize;
            let ids: Vec<u32> = from_bytes(&part[8..8 + 4 * owned]);
            let values: Vec<f64> = from_bytes(&part[8 + 4 * owned..]);
            let m = owned * np;
            for (c, chunk) in values.chunks_exact(m.max(1)).take(9).enumerate() {
                let out = if c < 6 {
                    &mut fields[c]
                } else {
                    &mut nodes[c - 6]
                };
                for (l, &g) in ids.iter().enumerate() {
                    let g = g as usize;
                    out[g * np..(g + 1) * np].copy_from_slice(&chunk[l * np..(l + 1) * np]);
                }
            }
        }
        Ok(Some((fields, nodes)))
    }
}

impl<B: Backend + DgOps, T: Scalar> crate::dg::cavity::CavitySolver for DistMaxwell<B, T> {
    fn set_fields(&mut self, f: &(dyn Fn([f64; 3]) -> [f64; 6] + Sync)) -> Result<()> {
        DistMaxwell::set_fields(self, f)
    }
    fn autotune(&mut self) -> Result<()> {
        let local = self.dg.autotune().map(drop);
        self.comm.agree(local)
    }
    fn stable_dt(&self, cfl: f64) -> f64 {
        DistMaxwell::stable_dt(self, cfl)
    }
    fn step(&mut self, dt: f64) -> Result<()> {
        DistMaxwell::step(self, dt)
    }
    fn energy(&self) -> Result<f64> {
        DistMaxwell::energy(self)
    }
    fn l2_error(&self, exact: &(dyn Fn([f64; 3]) -> [f64; 6] + Sync)) -> Result<f64> {
        DistMaxwell::l2_error(self, exact)
    }
    fn time(&self) -> f64 {
        DistMaxwell::time(self)
    }
    fn synchronize(&self) -> Result<()> {
        let local = self.backend.synchronize();
        self.comm.agree(local)
    }
    fn write_vtk(&self, _path: &str) -> Result<()> {
        Err(Error::invalid(
            "maxwell",
            "vtk",
            "VTK output is written by one process only: run without mpirun to write it",
        ))
    }
    fn size(&self) -> (usize, usize) {
        (self.global_elements, self.dofs())
    }
    fn params(&self) -> String {
        format!("{:?}", self.dg.params())
    }
    fn fields_and_nodes(&self) -> Result<Option<(Fields, [Vec<f64>; 3])>> {
        self.gather(0)
    }
    fn prints(&self) -> bool {
        self.comm.is_root()
    }
    fn agreed_seconds(&self, local: f64) -> f64 {
        self.comm.max(local)
    }
}

/// One rank's share of a [`simulate_cavity`] run.
#[derive(Clone, Debug, PartialEq)]
pub struct RankShare {
    /// Elements it owns.
    pub elements: usize,
    /// Ghost elements it holds.
    pub ghost_elements: usize,
    /// Trace values it sends before every stage.
    pub trace_values: usize,
    /// Seconds of its exchanges during the time stepping (packing, the exchange, writing the
    /// ghosts; on a device also the wait for the stage queued before, unless
    /// [`exact_halo_timing`](crate::dg::CavityOptions::exact_halo_timing)).
    pub halo_seconds: f64,
    /// Seconds of stage work around its exchanges: the interior stage queued during them, and
    /// with exact timing the wait for the stage before.
    pub compute_seconds: f64,
}

/// What [`simulate_cavity`] returns: the run, as one process reports it, and the ranks'
/// shares.
#[derive(Clone, Debug)]
pub struct DistCavityRun {
    /// The run: elements and unknowns of the whole mesh, the slowest rank's seconds; the
    /// fields (with [`CavityOptions::keep_fields`](crate::dg::CavityOptions::keep_fields)) on
    /// rank 0 only.
    pub run: crate::dg::CavityRun,
    /// Ranks.
    pub ranks: usize,
    /// What carried the halo (`"host memory"`, `"NCCL 2.28.3 (…)"`).
    pub halo: String,
    /// How the elements were partitioned.
    pub partition: String,
    /// Every rank's share, in rank order.
    pub per_rank: Vec<RankShare>,
}

/// [`simulate_cavity`](crate::dg::simulate_cavity) over the ranks of `comm`: the same run,
/// energy samples and L² error, with the tetrahedra partitioned by `method` and the halo
/// routed by `route`. Collective.
///
/// # Errors
/// As [`simulate_cavity`](crate::dg::simulate_cavity) (agreed over the ranks), and VTK
/// output, which is single-process.
pub fn simulate_cavity<B: Backend + DgOps, T: Scalar>(
    comm: &Communicator,
    b: &B,
    mesh: &TetMesh,
    exact: bool,
    options: &crate::dg::CavityOptions,
    method: PartitionMethod,
    route: HaloRoute,
) -> Result<DistCavityRun> {
    comm.agree(options.check())?;
    if options.vtk.is_some() {
        return Err(Error::invalid(
            "maxwell",
            "vtk",
            "VTK output is written by one process only: run without mpirun to write it",
        ));
    }
    let start = Instant::now();
    let mut dg =
        DistMaxwell::<B, T>::new(b, comm, mesh, options.order, options.flux, method, route)?;
    let device = comm.all_gather_strings(&b.info().to_string());
    let device = if device.iter().all(|d| *d == device[0]) {
        device[0].clone()
    } else {
        device.join("; ")
    };
    dg.set_exact_timing(options.exact_halo_timing);
    dg.reset_halo_times();
    let run = crate::dg::cavity::drive(&mut dg, device, exact, options, start)?;
    let t = dg.halo_times();
    let share = [
        dg.owned_elements() as f64,
        dg.ghost_elements() as f64,
        dg.trace_values_sent() as f64,
        t.halo.as_secs_f64(),
        t.compute.as_secs_f64(),
    ];
    let all: Vec<Vec<f64>> = share.iter().map(|&v| comm.all_gather(v)).collect();
    let per_rank = (0..comm.size())
        .map(|r| RankShare {
            elements: all[0][r] as usize,
            ghost_elements: all[1][r] as usize,
            trace_values: all[2][r] as usize,
            halo_seconds: all[3][r],
            compute_seconds: all[4][r],
        })
        .collect();
    Ok(DistCavityRun {
        run,
        ranks: comm.size(),
        halo: dg.halo_transport(),
        partition: dg.partition().method().to_string(),
        per_rank,
    })
}
