//! Runs every operator of the library on every backend available on this machine, in every
//! precision the device supports, against the f64 CPU reference, and prints a table:
//! the first thing to run on a new GPU.
//!
//! ```text
//! cargo run --release --example conformance                     # CPU only
//! cargo run --release --features wgpu,cuda --example conformance
//! ```
//!
//! Exit status 1 if any check fails.

use galerkin::verify::{check, standard_checks, Check, Comparison};
use galerkin::{Backend, BackendKind, BackendTask, Result};

struct Conformance;

fn row<B: Backend, T: galerkin::Scalar>(
    backend: &B,
    c: &impl Check,
) -> (String, Option<Comparison>) {
    let name = format!(
        "{:<34} {:<5} {:<4}",
        c.name(),
        backend.kind().name(),
        T::DTYPE.name()
    );
    if !backend.supports(T::DTYPE) {
        return (
            format!(
                "{name} {:>10} {:>10} {:>8}  unsupported by the device",
                "-", "-", "-"
            ),
            None,
        );
    }
    match check::<B, T, _>(backend, c) {
        Ok(r) => (
            format!(
                "{name} {:>10.2e} {:>10.2e} {:>8}  {}",
                r.rel_error,
                r.tolerance,
                r.max_ulp,
                if r.passed { "pass" } else { "FAIL" }
            ),
            Some(r),
        ),
        Err(e) => (format!("{name} error: {e}"), None),
    }
}

impl BackendTask for Conformance {
    type Output = (usize, usize);
    fn run<B: Backend>(self, backend: B) -> Result<(usize, usize)> {
        println!("\n{}", backend.info());
        let (mut run, mut failed) = (0, 0);
        for c in standard_checks() {
            for (line, result) in [row::<B, f32>(&backend, &c), row::<B, f64>(&backend, &c)] {
                println!("{line}");
                if let Some(r) = result {
                    run += 1;
                    failed += usize::from(!r.passed);
                } else if line.contains("error:") {
                    run += 1;
                    failed += 1;
                }
            }
        }
        Ok((run, failed))
    }
}

fn main() {
    println!(
        "{:<34} {:<5} {:<4} {:>10} {:>10} {:>8}  verdict",
        "operator", "bknd", "prec", "rel.err", "tolerance", "max ulp"
    );
    let (mut total, mut failures) = (0, 0);
    for kind in BackendKind::ALL {
        if !kind.is_compiled() {
            println!("\n{kind}: not compiled in (build with --features {kind})");
            continue;
        }
        match galerkin::with_backend(kind, Conformance) {
            Ok((run, failed)) => {
                total += run;
                failures += failed;
            }
            Err(e) => println!("\n{kind}: unavailable: {e}"),
        }
    }
    println!("\n{total} checks, {failures} failed");
    if failures > 0 {
        std::process::exit(1);
    }
}
