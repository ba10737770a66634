//! Runs every operator of the library on every backend available on this machine, in every
//! precision the device supports, against the f64 CPU reference, and prints a table:
//! the first thing to run on a new GPU.
//!
//! ```text
//! cargo run --release --example conformance                     # CPU only
//! cargo run --release --features wgpu,cuda --example conformance -- --backend cuda
//! ```
//!
//! Exit status 1 if any check fails, 2 for bad arguments.

use clap::Parser;
use galerkin::dg::DgCheck;
use galerkin::hdg::HdgCheck;
use galerkin::multigrid::TensorCheck;
use galerkin::verify::{check, standard_checks, CheckOn, Comparison};
use galerkin::{BackendKind, BackendTask, Cpu, FullBackend, Result};

#[path = "common/mod.rs"]
mod common;
use common::BackendArg;

/// `--precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PrecisionArg {
    F32,
    F64,
}

/// Every operator of the library, on every backend and precision here, against the f64
/// CPU reference: relative error, tolerance, largest ULP distance, verdict.
#[derive(Parser, Debug)]
#[command(name = "conformance", version)]
struct Args {
    /// Backends to check (repeat the flag; default: every backend compiled in).
    #[arg(long = "backend", value_enum)]
    backends: Vec<BackendArg>,
    /// Precisions to check (repeat the flag; default: f32 and f64).
    #[arg(long = "precision", value_enum)]
    precisions: Vec<PrecisionArg>,
    /// Only the checks whose name contains this (repeat the flag).
    #[arg(long)]
    only: Vec<String>,
}

struct Conformance<'a>(&'a Args);

/// A check as a table row in either precision (object-safe, for lists of checks of
/// different types).
trait CheckRow<B: FullBackend> {
    fn label(&self) -> String;
    fn row_f32(&self, backend: &B) -> (String, Option<Comparison>);
    fn row_f64(&self, backend: &B) -> (String, Option<Comparison>);
}

impl<B: FullBackend, C: CheckOn<B> + CheckOn<Cpu>> CheckRow<B> for C {
    fn label(&self) -> String {
        self.name()
    }
    fn row_f32(&self, backend: &B) -> (String, Option<Comparison>) {
        row::<B, f32, C>(backend, self)
    }
    fn row_f64(&self, backend: &B) -> (String, Option<Comparison>) {
        row::<B, f64, C>(backend, self)
    }
}

fn row<B: FullBackend, T: galerkin::Scalar, C: CheckOn<B> + CheckOn<Cpu>>(
    backend: &B,
    c: &C,
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

/// Rows run, rows failed, and checks whose name `--only` matched, on one backend.
struct Counts {
    run: usize,
    failed: usize,
    matched: usize,
}

impl BackendTask for Conformance<'_> {
    type Output = Counts;
    fn run<B: FullBackend>(self, backend: B) -> Result<Counts> {
        let args = self.0;
        let wants = |p: PrecisionArg| args.precisions.is_empty() || args.precisions.contains(&p);
        println!("\n{}", backend.info());
        let (mut run, mut failed, mut matched) = (0, 0, 0);
        let wanted = |c: &dyn Fn() -> String| {
            args.only.is_empty() || args.only.iter().any(|o| c().contains(o.as_str()))
        };
        let mut check_all = |checks: &mut dyn Iterator<Item = &dyn CheckRow<B>>| {
            for c in checks {
                if !wanted(&|| c.label()) {
                    continue;
                }
                matched += 1;
                let mut rows = Vec::new();
                if wants(PrecisionArg::F32) {
                    rows.push(c.row_f32(&backend));
                }
                if wants(PrecisionArg::F64) {
                    rows.push(c.row_f64(&backend));
                }
                for (line, result) in rows {
                    println!("{line}");
                    // A check the device cannot run in a precision is reported, not counted.
                    if line.contains("unsupported by the device") {
                        continue;
                    }
                    run += 1;
                    failed += usize::from(!result.is_some_and(|r| r.passed));
                }
            }
        };
        let standard = standard_checks();
        check_all(&mut standard.iter().map(|c| c as &dyn CheckRow<B>));
        // The HDG stages (local solvers, assembly, recovery) on a perturbed mesh.
        let hdg = HdgCheck::standard();
        check_all(&mut hdg.iter().map(|c| c as &dyn CheckRow<B>));
        // The tensor-product operators, the patch smoother and the transfers.
        let tensor = TensorCheck::standard();
        check_all(&mut tensor.iter().map(|c| c as &dyn CheckRow<B>));
        // The nodal DG Maxwell kernels (PEC and absorbing faces, upwind and central).
        let dg = DgCheck::standard();
        check_all(&mut dg.iter().map(|c| c as &dyn CheckRow<B>));
        Ok(Counts {
            run,
            failed,
            matched,
        })
    }
}

fn main() {
    let args = Args::parse();
    let kinds: Vec<BackendKind> = if args.backends.is_empty() {
        BackendKind::ALL.to_vec()
    } else {
        args.backends.iter().map(|b| b.kind()).collect()
    };
    println!(
        "{:<34} {:<5} {:<4} {:>10} {:>10} {:>8}  verdict",
        "operator", "bknd", "prec", "rel.err", "tolerance", "max ulp"
    );
    let (mut total, mut failures) = (0, 0);
    // Whether a backend ran its list of checks, and how many of them `--only` kept.
    let (mut listed, mut matched) = (false, 0);
    for kind in kinds {
        if !kind.is_compiled() {
            println!("\n{kind}: not compiled in (build with --features {kind})");
            if !args.backends.is_empty() {
                failures += 1; // asked for explicitly
            }
            continue;
        }
        match galerkin::with_backend(kind, Conformance(&args)) {
            Ok(counts) => {
                total += counts.run;
                failures += counts.failed;
                matched += counts.matched;
                listed = true;
            }
            Err(e) => {
                println!("\n{kind}: unavailable: {e}");
                if !args.backends.is_empty() {
                    failures += 1;
                }
            }
        }
    }
    if listed && matched == 0 && !args.only.is_empty() {
        // A typo in `--only` must not look like a clean run of zero checks.
        let names: Vec<String> = args.only.iter().map(|o| format!("`{o}`")).collect();
        eprintln!(
            "conformance: error: no check name contains {}; run without --only to see the names",
            names.join(" or ")
        );
        std::process::exit(2);
    }
    println!("\n{total} checks, {failures} failed");
    if failures > 0 {
        std::process::exit(1);
    }
}
