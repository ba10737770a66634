//! [`Backend`]: the bundle of the core operator families — vectors, sparse matrices, batched
//! dense matrices — that every solver and discretisation builds on.
//!
//! It is defined above the families it bundles (as burn's `Backend` is a list of op traits),
//! so none of them depends on it. A discretisation's own family (`HdgOps`, `TensorOps`,
//! `DgOps`) stands beside it and is named only where it is used
//! (`B: Backend + DgOps`): a solver never depends on discretisation kernels, and a new
//! discretisation does not edit this bundle.

use crate::backend::core::BackendCore;
use crate::batched::BatchedOps;
use crate::sparse::algebra::SparseAlgebraOps;
use crate::sparse::SparseOps;
use crate::vector::VectorOps;

/// A backend: buffers plus the core operator families (vectors, sparse, batched).
/// Implemented by [`Cpu`](crate::Cpu) and [`Cube<R>`](crate::Cube).
///
/// ```text
/// Backend = BackendCore      buffers: allocate, upload, download, synchronize, info
///         + VectorOps        fill, copy, axpy, dot, nrm2, fused CG update, ...
///         + SparseOps        SpMV of every sparse format
///         + BatchedOps       batched small dense GEMM, LU, Cholesky, solves
///         + SparseAlgebraOps SpGEMM, transpose, strength, aggregation (AMG's setup)
/// ```
pub trait Backend: BackendCore + VectorOps + SparseOps + BatchedOps + SparseAlgebraOps {}

impl<B: BackendCore + VectorOps + SparseOps + BatchedOps + SparseAlgebraOps> Backend for B {}
