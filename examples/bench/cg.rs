//! CG suite: time per iteration (fixed iteration count) and time to `rtol = 1e-8` for the
//! issue's matrices, in f64 and with f32 matrix values (mixed: `--spmv-precision` picks; f32
//! vectors have no CG rows); `--dump DIR` writes the
//! matrices for `benches/gpu/cg_cupy.py` (cupyx CG) and `benches/cpu/scipy_cg.py`.

use std::time::Instant;

use galerkin::solver::{cg, pcg, Jacobi, LinearOperator, Progress, SolverParams};
use galerkin::sparse::generate;
use galerkin::sparse::{Csr, Format, FormatOptions, SparseMatrix};
use galerkin::{Backend, BackendTask, Cpu, FullBackend, Result, Vector};

use crate::spmv::{dump, Case};
use crate::Options;

fn cases(options: &Options) -> Vec<Case> {
    let s = |n: f64| ((n * options.scale.cbrt()).round() as usize).max(2);
    let mut out = Vec::new();
    let mut add = |name: String, m: Result<Csr<Cpu, f64>>, fvm: bool| {
        if !options.only.is_empty() && !options.only.iter().any(|o| name.starts_with(o.as_str())) {
            return;
        }
        match m {
            Ok(matrix) => out.push(Case {
                name,
                matrix,
                block_size: None,
                fvm,
            }),
            Err(e) => eprintln!("[bench] {name}: {e}"),
        }
    };
    let n = s(256.0);
    add(format!("poisson7_{n}"), generate::poisson3d_7pt(n), false);
    let n = s(120.0);
    add(
        format!("fvm_tet_{n}"),
        galerkin::fvm::tpfa_tets_structured(n, 0.15, 1),
        true,
    );
    let n = s(216.0);
    add(format!("poisson27_{n}"), generate::poisson3d_27pt(n), false);
    out
}

struct Suite<'a> {
    cases: &'a [Case],
    /// The `--spmv-precision` values this suite runs: "f64", "mixed".
    precisions: &'a [String],
}

fn quiet<'a>(rtol: f64, max_iter: usize) -> SolverParams<'a> {
    SolverParams {
        progress: Progress::Never,
        stagnation_window: 0,
        ..SolverParams::new(rtol, max_iter)
    }
}

fn run_case<B: Backend>(
    b: &B,
    case: &Case,
    fixed: usize,
    copy_bw: f64,
    precisions: &[String],
) -> Result<()> {
    let a = &case.matrix;
    let n = a.nrows();
    let (m64, choice) = SparseMatrix::<B, f64>::auto(b, a)?;
    let a32: Csr<Cpu, f32> = a.convert();
    let (m32, _) = SparseMatrix::<B, f32>::auto(b, &a32)?;
    // Where the automatic choice is DIA, SELL (the choice before DIA existed) too, as the
    // baseline of the same run.
    let sell = if m64.format() == Format::Dia && b.kind() != galerkin::BackendKind::Cpu {
        let options = FormatOptions::default();
        Some((
            SparseMatrix::<B, f64>::from_csr(b, a, Format::Sell, &options)?,
            SparseMatrix::<B, f32>::from_csr(b, &a32, Format::Sell, &options)?,
        ))
    } else {
        None
    };
    // b = A·1.
    let ones = Vector::<B, f64>::full(b, n, 1.0)?;
    let mut rhs = Vector::<B, f64>::zeros(b, n)?;
    m64.apply(&ones, &mut rhs)?;
    let jacobi = Jacobi::<B, f64>::new(b, a)?;
    // Vector traffic per iteration beyond the SpMV: the fused update reads x, r, p, q and
    // writes x, r (6n); p = r + βp reads r, p and writes p (3n). p·q is fused into the SpMV.
    let vector_bytes = 8.0 * n as f64 * 9.0;
    let mut ops: Vec<(&str, &dyn LinearOperator<B, f64>)> = vec![("f64", &m64), ("mixed", &m32)];
    if let Some((s64, s32)) = &sell {
        ops.push(("f64/sell", s64));
        ops.push(("mixed/sell", s32));
    }
    ops.retain(|(label, _)| {
        let precision = label.split('/').next().unwrap_or(label);
        precisions.iter().any(|p| p == precision)
    });
    for (label, op) in ops {
        // Per-iteration time: a fixed number of iterations (the tolerance is unreachable),
        // after a short warm-up run that compiles the kernels.
        let mut x = Vector::zeros(b, n)?;
        cg(op, &rhs, &mut x, &quiet(1e-300, 3))?;
        x.fill(0.0)?;
        b.synchronize()?;
        let t0 = Instant::now();
        let r = cg(op, &rhs, &mut x, &quiet(1e-300, fixed))?;
        b.synchronize()?;
        let per_iter = t0.elapsed().as_secs_f64() / r.iterations.max(1) as f64;
        let mut q = Vector::zeros(b, n)?;
        let t_spmv =
            crate::timing::median(b, 10, || op.apply_dot(&ones, &mut q).map(|_| ()))?.as_secs_f64();
        let ideal = t_spmv + vector_bytes / (copy_bw * 1e9);
        println!(
            "{:<10} {:<14} {:<10} {:<12} per iteration {:>8.1} us over {} iterations; SpMV+dot {:.1} us; \
             SpMV + vector traffic at copy bandwidth {:.1} us; ratio {:.2}",
            b.kind().name(),
            case.name,
            label,
            "cg",
            per_iter * 1e6,
            r.iterations,
            t_spmv * 1e6,
            ideal * 1e6,
            per_iter / ideal
        );
        // Checking convergence every 10 iterations instead of every iteration: CG, then PCG
        // with Jacobi (after two iterations that compile its kernels).
        let every_10 = |jacobi: Option<&Jacobi<B, f64>>| -> Result<(f64, usize)> {
            let mut x = Vector::zeros(b, n)?;
            let params = SolverParams {
                check_every: 10,
                ..quiet(1e-300, fixed)
            };
            if let Some(m) = jacobi {
                pcg(op, Some(m), &rhs, &mut x, &quiet(1e-300, 2))?;
                x.fill(0.0)?;
            }
            b.synchronize()?;
            let t0 = Instant::now();
            let r = match jacobi {
                Some(m) => pcg(op, Some(m), &rhs, &mut x, &params)?,
                None => cg(op, &rhs, &mut x, &params)?,
            };
            b.synchronize()?;
            Ok((
                t0.elapsed().as_secs_f64() / r.iterations.max(1) as f64,
                r.iterations,
            ))
        };
        let (cg_every_10, iterations) = every_10(None)?;
        println!(
            "{:<10} {:<14} {:<10} {:<12} per iteration {:>8.1} us over {} iterations (scalars read every 10)",
            b.kind().name(),
            case.name,
            label,
            "cg",
            cg_every_10 * 1e6,
            iterations
        );
        let (pcg_every_10, iterations) = every_10(Some(&jacobi))?;
        println!(
            "{:<10} {:<14} {:<10} {:<12} per iteration {:>8.1} us over {} iterations (scalars read every 10); {:.3}x CG",
            b.kind().name(),
            case.name,
            label,
            "pcg jacobi",
            pcg_every_10 * 1e6,
            iterations,
            pcg_every_10 / cg_every_10
        );
        // Time to 1e-8.
        for precond in ["none", "jacobi"] {
            let mut x = Vector::zeros(b, n)?;
            b.synchronize()?;
            let t0 = Instant::now();
            let r = if precond == "none" {
                cg(op, &rhs, &mut x, &quiet(1e-8, 20_000))?
            } else {
                pcg(op, Some(&jacobi), &rhs, &mut x, &quiet(1e-8, 20_000))?
            };
            let t = t0.elapsed().as_secs_f64();
            println!(
                "{:<10} {:<14} {:<10} {:<12} to 1e-8: {:>8.3} s, {} iterations, true relative residual {:.2e} ({})",
                b.kind().name(),
                case.name,
                label,
                if precond == "none" { "cg" } else { "pcg jacobi" },
                t,
                r.iterations,
                r.relative_residual(),
                r.reason
            );
        }
    }
    println!("{:<10} {:<14} format: {choice}", b.kind().name(), case.name);
    Ok(())
}

impl BackendTask for Suite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        println!("\n# {}  (CG suite)", b.info());
        let len = 1usize << 26;
        let x = Vector::<B, f64>::full(&b, len, 1.0)?;
        let mut y = Vector::<B, f64>::zeros(&b, len)?;
        let copy_bw = crate::timing::gbps(
            16.0 * len as f64,
            crate::timing::median(&b, 10, || y.copy_from(&x))?,
        );
        drop((x, y));
        println!("copy bandwidth (2^26 f64): {copy_bw:.1} GB/s");
        for case in self.cases {
            if let Err(e) = run_case(&b, case, 50, copy_bw, self.precisions) {
                println!("{} {}: error: {e}", b.kind().name(), case.name);
            }
        }
        Ok(())
    }
}

pub fn run(options: &Options) {
    let cases = cases(options);
    if let Some(dir) = &options.dump {
        for c in &cases {
            if let Err(e) = dump(dir, c) {
                eprintln!("[bench] dump {}: {e}", c.name);
            }
        }
    }
    let precisions: Vec<String> = options
        .spmv_precisions
        .iter()
        .filter(|p| *p == "f64" || *p == "mixed")
        .cloned()
        .collect();
    if precisions.is_empty() {
        eprintln!("[bench] cg suite: runs f64 and mixed only; --spmv-precision f32 has no CG rows");
        return;
    }
    for &kind in &options.backends {
        let suite = Suite {
            cases: &cases,
            precisions: &precisions,
        };
        if let Err(e) = galerkin::with_backend(kind, suite) {
            println!("\n# {kind}: {e}");
        }
    }
}
