//! Hybridizable discontinuous Galerkin (HDG) for 2D elliptic problems on triangles
//! (`−∇²u + λu = f`), the pipeline of seed 001 with the trace system in block-ELL
//! (seed 000): every stage a batch on the device.

pub mod check;
pub mod coefficients;
pub(crate) mod cube;
pub mod host;
pub mod ops;
mod pipeline;
pub mod reference;
mod stacks;
pub mod topology;

pub use check::{HdgCheck, HdgStage};
pub use coefficients::CoefficientKind;
pub use host::{Field, Flux};
pub use ops::{HdgOps, TRACE_SLOTS};
pub use pipeline::{
    Exact, Fields, Hdg, HdgParams, L2Errors, Load, LocalSolvers, Problem, Solution, StageTimes,
    TracePreconditioner, TraceSolution, TraceSolverParams, TraceSystem,
};
pub use topology::TraceTopology;
#[cfg(test)]
mod tests;
