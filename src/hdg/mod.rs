//! Hybridizable discontinuous Galerkin (HDG) for 2D elliptic problems on triangles
//! (`−∇²u + λu = f`), the pipeline of seed 001 with the trace system in block-ELL
//! (seed 000): every stage a batch on the device.

pub mod check;
pub mod coefficients;
mod cpu;
pub(crate) mod cube;
pub mod expressions;
pub mod host;
mod launch;
pub mod ops;
mod output;
mod params;
mod pipeline;
mod post;
mod post_ops;
pub mod reference;
mod stacks;
mod stages;
pub mod topology;

pub use check::{HdgCheck, HdgStage};
pub use coefficients::CoefficientKind;
pub use expressions::{ExpressionProblem, Expressions, MeshSpec, DEFAULT_EXACT};
pub use host::{Field, Flux};
pub use ops::{HdgOps, TRACE_SLOTS};
pub use params::{
    HdgParams, Problem, TracePreconditioner, TraceSolverParams, TRACE_AMG_MIN_DOFS, TRACE_AMG_THETA,
};
pub use pipeline::{trace_constants, Hdg};
pub use stages::{
    Exact, Fields, L2Errors, Load, LocalSolvers, Solution, StageTimes, TraceSolution, TraceSystem,
};
pub use topology::TraceTopology;
#[cfg(test)]
mod tests;
