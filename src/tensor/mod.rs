//! Continuous `Q_k` finite elements on Cartesian grids of the unit square and cube,
//! matrix-free: the 1D bases ([`Basis1d`]), the tensor-product kernel family
//! ([`TensorOps`]: sum factorization on chip cell by cell or in one pass over tiles of nodes,
//! the fused vertex-patch smoothing step, banded 1D matrices along one direction), and the
//! mass and Laplace operators
//! ([`TensorOperator`]) that the solvers take as [`LinearOperator`](crate::operator::LinearOperator)s.
//! The multigrid built on them is in [`multigrid`](crate::multigrid) (seed 003).

pub mod basis;
mod cpu;
pub(crate) mod cube;
pub(crate) mod grid;
pub(crate) mod operator;
pub mod ops;

pub use basis::{check_degree, gauss_lobatto, Basis1d, MAX_DEGREE};
pub use grid::Grid;
pub use operator::{ApplyPath, OperatorKind, TensorOperator};
pub use ops::{PatchForm, Scatter, TensorOps, Tiling};
