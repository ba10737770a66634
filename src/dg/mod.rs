//! Nodal discontinuous Galerkin on tetrahedra (seed 004). So far, on the host: the
//! reference element ([`reference`]: warp-and-blend nodes, orthonormal basis,
//! differentiation and lift matrices) and the mesh geometry ([`geometry`]: node
//! coordinates, inverse Jacobians, normals, face scalings, `vmapM`/`vmapP`), and the
//! Maxwell operator with low-storage RK4 in f64 ([`host`], the future CPU reference), and
//! the greedy BFS block renumbering of the seed's Algorithm 2 ([`partition`]). The
//! device kernels, the `DgOps` family and the `maxwell` example of issue 12 are still to
//! come.

pub mod geometry;
pub mod host;
pub mod partition;
pub mod reference;

pub use geometry::DgGeometry;
pub use host::{cavity_mode, Flux, MaxwellHost};
pub use partition::{bfs_blocks, BlockOrder};
pub use reference::{check_order, ReferenceTet, MAX_ORDER};
