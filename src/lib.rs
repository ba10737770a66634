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
mod bundle;
pub mod dg;
pub mod distributed;
pub mod error;
pub mod expr;
pub mod fvm;
pub mod hdg;
pub mod io;
pub mod limits;
pub mod mesh;
pub mod multigrid;
pub mod operator;
pub mod quadrature;
pub mod random;
pub mod scalar;
mod select;
pub mod solver;
pub mod sparse;
pub mod tensor;
pub mod vector;
pub mod verify;

#[cfg(feature = "cuda")]
pub use backend::Cuda;
#[cfg(feature = "wgpu")]
pub use backend::Wgpu;
pub use backend::{device_count, BackendCore, BackendInfo, BackendKind, Cpu, Cube};
pub use bundle::Backend;
pub use error::{Error, Result};
pub use scalar::{DType, Element, Precision, Scalar, Storable};
pub use select::{with_backend, with_backend_on, BackendTask, FullBackend};
pub use vector::{Vector, VectorOps};
