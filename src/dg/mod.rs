//! Nodal discontinuous Galerkin on tetrahedra (seed 004). So far: the reference element
//! ([`reference`]) — warp-and-blend nodes, orthonormal basis, differentiation and lift
//! matrices, checked on the host. The meshes, kernels and time stepping of issue 12 are
//! still to come.

pub mod reference;

pub use reference::{check_order, ReferenceTet, MAX_ORDER};
