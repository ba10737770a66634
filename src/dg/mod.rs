//! Nodal discontinuous Galerkin on tetrahedra for Maxwell's equations (seed 004): the
//! reference element ([`reference`](mod@reference): warp-and-blend nodes, orthonormal basis,
//! differentiation and lift matrices), the mesh input ([`setup`]: the unit-cube generator,
//! Gmsh meshes with absorbing tags, the greedy BFS renumbering of [`partition`]), the mesh
//! geometry ([`geometry`]: node coordinates, inverse Jacobians, normals, face scalings,
//! `vmapM`/`vmapP`), the kernel family every backend implements ([`ops`]: volume curl,
//! surface flux, lift, low-storage RK update and one fused stage), the solver on any
//! backend and precision ([`Maxwell`], with autotuned launch parameters), and the f64
//! host operator ([`host`]) that the CPU kernels are checked against.

pub mod cavity;
pub mod check;
mod cpu;
pub(crate) mod cube;
pub mod geometry;
pub mod host;
pub mod maxwell;
pub mod ops;
pub mod output;
pub mod partition;
pub mod reference;
pub mod setup;

pub use cavity::{simulate_cavity, CavityOptions, CavityRun};
pub use check::{DgCheck, DgStage};
pub use geometry::{face_vertices, DgGeometry};
pub use host::{cavity_mode, check_mode, Flux, MaxwellHost, MAX_MODE};
pub use maxwell::{Maxwell, StageCost};
pub use ops::{DgOps, DgParams, DgShape, FACE_ABSORBING, FACE_INTERIOR, FACE_PEC};
pub use output::sub_tets;
pub use partition::{bfs_blocks, BlockOrder};
pub use reference::{check_order, ReferenceTet, MAX_ORDER};
pub use setup::TetMesh;
