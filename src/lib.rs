//! # galerkin
//!
//! The hot kernels of high-order DG, HDG, FEM and FVM codes — vectors, sparse matrices and
//! SpMV, Krylov solvers, batched small dense matrices — written once with CubeCL for CUDA and
//! wgpu, with a rayon CPU backend that is the default and the reference.
//!
//! ```
//! use galerkin::{Cpu, Vector};
//!
//! let cpu = Cpu::new();
//! let x = Vector::from_slice(&cpu, &[1.0f64, 2.0, 2.0])?;
//! assert_eq!(x.nrm2()?, 3.0);
//! # Ok::<(), galerkin::Error>(())
//! ```
//!
//! See `docs/architecture.md` for the layers and the README for the precision matrix.
#![warn(missing_docs)]

pub mod backend;
pub mod batched;
pub mod dg;
pub mod dist;
pub mod error;
pub mod fvm;
pub mod hdg;
pub mod io;
pub mod mesh;
pub mod multigrid;
pub mod random;
pub mod scalar;
pub mod solver;
pub mod sparse;
pub mod tensor;
pub mod vector;
pub mod verify;

#[cfg(feature = "cuda")]
pub use backend::Cuda;
#[cfg(feature = "wgpu")]
pub use backend::Wgpu;
pub use backend::{
    device_count, with_backend, with_backend_on, Backend, BackendCore, BackendInfo, BackendKind,
    BackendTask, Cpu, Cube,
};
pub use error::{Error, Result};
pub use scalar::{DType, Element, Precision, Scalar, Storable};
pub use vector::{Vector, VectorOps};
