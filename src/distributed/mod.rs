//! Distributed vectors, sparse matrices and Krylov solvers over MPI: one rank per device (or
//! per CPU), rows partitioned among the ranks.
//!
//! | piece | what |
//! |---|---|
//! | [`Communicator`] | rank, size, deterministic global sums, the halo exchange, agreement on errors; [`Communicator::solo`] for one process, [`Communicator::mpi`] (feature `mpi`) for `MPI_COMM_WORLD` |
//! | [`Partition`] | the owner of each row: contiguous blocks, any owner map, METIS k-way (feature `metis`), with edge cut and balance ([`PartitionQuality`]) |
//! | [`DistCsr`], [`Layout`] | a rank's rows on the host, split into the local block (owned columns) and the remote block (ghost columns), and the halo plan (who sends which rows to whom), built once |
//! | [`DistMatrix`] | the blocks on the rank's device in any format; SpMV overlaps the local product with the halo exchange (receives posted, rows packed and sent, local product, exchange finished, remote product), the halo by the [`HaloRoute`] chosen |
//! | [`DistVector`] | owned rows on the device plus ghost rows; global dot and norm |
//! | [`cg`], [`bicgstab`], [`gmres`], [`fgmres`], [`mixed_cg`] | the single-process algorithms on distributed operators, one global sum per group of inner products, [`SolveReport`](crate::solver::SolveReport) identical on every rank; [`BlockJacobi`] per rank |
//! | [`DistMaxwell`] | nodal DG Maxwell (seed 004) over the ranks: elements partitioned on their face graph, a ghost layer, the face traces exchanged before every RK stage |
//! | [`distribute`], [`read_matrix_market`] | a generated matrix split by a partition; a Matrix Market file read in parallel parts, no rank holding the whole matrix |
//!
//! A halo travels device to device through NCCL where every rank runs on a CUDA GPU of its
//! own and NCCL loads ([`HaloRoute`]; packed on the device, exchanged on a stream of its own
//! beside the local product), else it is staged through host memory (device → host → MPI →
//! host → device), which works with any MPI library and any backend. Both routes move the
//! same bits: a solve gives the same report either way. Everything is collective: every rank calls the same
//! functions in the same order; an error on one rank is turned into the same
//! [`Error::Rank`](crate::error::Error::Rank) on every rank where the library can see it
//! ([`Communicator::agree`]), so that no rank waits for one that gave up.
//!
//! ```
//! use std::rc::Rc;
//! use galerkin::distributed::{self, Communicator, DistMatrix, DistVector, PartitionMethod};
//! use galerkin::solver::SolverParams;
//! use galerkin::sparse::generate::poisson3d_7pt;
//! use galerkin::Cpu;
//!
//! let comm = Communicator::solo(); // Communicator::mpi()? under mpirun (feature `mpi`)
//! let a = distributed::distribute(&comm, &poisson3d_7pt(12)?, PartitionMethod::Contiguous)?;
//! let cpu = Cpu::new();
//! let m = DistMatrix::<Cpu, f64>::new(&cpu, &a, None)?;
//! let b = DistVector::from_global(&cpu, a.layout(), &vec![1.0; a.global_len()])?;
//! let mut x = DistVector::zeros(&cpu, a.layout())?;
//! let report = distributed::cg(&m, None, &b, &mut x, &SolverParams::default())?;
//! assert!(report.converged());
//! # Ok::<(), galerkin::Error>(())
//! ```

mod bicgstab;
mod comm;
mod exchange;
mod gmres;
mod halo;
mod input;
mod layout;
mod matrix;
mod maxwell;
mod mixed;
#[cfg(feature = "mpi")]
mod mpi;
mod partition;
mod solver;
mod vector;

pub use bicgstab::bicgstab;
pub use comm::Communicator;
pub use gmres::{fgmres, gmres};
pub use halo::HaloRoute;
pub use input::{distribute, read_matrix_market, PartitionMethod};
pub use layout::{DistCsr, Layout, Segment};
pub use matrix::{DistMatrix, DistOperator, HaloTimes};
pub use maxwell::{simulate_cavity, DistCavityRun, DistMaxwell, RankShare};
pub use mixed::{mixed_cg, InnerCg};
pub use partition::{Partition, PartitionQuality};
pub use solver::{cg, BlockJacobi, DistPreconditioner};
pub use vector::DistVector;
