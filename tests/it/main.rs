//! The integration tests: one binary, one module per operator family.
//!
//! Every generic test body runs on every backend compiled in, in f32 and f64, through
//! [`backend_tests!`]: `vector::dot::cpu_f32`, `vector::dot::wgpu_f64`, ... A GPU backend
//! whose device is absent is skipped with a message on stderr, unless it is named in
//! `GALERKIN_REQUIRE_BACKENDS` (comma-separated, e.g. `wgpu` in CI), in which case its tests
//! fail.

mod batched;
mod dg;
mod dia;
mod errors;
mod examples;
mod harness;
mod hdg;
mod hostile;
mod kernel_cache;
mod mesh;
mod mtx;
mod multigrid;
mod reorder;
mod solver;
mod sparse;
mod split;
mod tensor;
mod vector;
mod verify;
