//! Cross-backend verification: run an operation on any backend and on the f64 CPU
//! reference, and compare.
//!
//! A [`Check`] is an operation with its inputs (generated from a seed). [`check`] runs it on
//! a backend in precision `T` and on [`Cpu`](crate::backend::Cpu) in f64 — with the inputs rounded to `T` first,
//! so both runs see the same numbers — and returns a [`Comparison`]: the relative norm error,
//! the largest error in units in the last place (ULP) of `T` and where it occurs, and a
//! verdict against the precision-scaled [`tolerance`](crate::scalar::tolerance).
//!
//! ```
//! use galerkin::verify::{check, StandardCheck};
//! use galerkin::Cpu;
//!
//! let report = check::<_, f32, _>(&Cpu::new(), &StandardCheck::Dot { len: 1000, seed: 7 })?;
//! assert!(report.passed, "{report}");
//! # Ok::<(), galerkin::Error>(())
//! ```
//!
//! [`standard_checks`] lists one check per operator of the library; the `conformance`
//! example runs them on every backend and precision of the machine.

mod checks;
mod compare;

pub use crate::random::{random_range, random_vec, Rng};
pub use checks::{standard_checks, StandardCheck};
pub use compare::{check, compare, compare_scaled, poison, round_to, Check, CheckOn, Comparison};
