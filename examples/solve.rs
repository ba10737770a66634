//! Solve `A x = b` from the command line: any matrix, solver, preconditioner, precision and
//! backend; prints the solve report.
//!
//! ```text
//! cargo run --release --example solve -- [--matrix FILE.mtx[.gz] | --matrix GENERATOR]
//!     [--rhs FILE] [--solver cg|pcg|bicgstab|gmres|fgmres|refine]
//!     [--precond none|jacobi|block-jacobi|chebyshev] [--block-size M]
//!     [--precision f32|f64|mixed] [--tol 1e-8] [--max-iter 1000] [--restart 30]
//!     [--format auto|csr|sell|ell|bell|coo] [--backend cpu|wgpu|cuda] [--out FILE]
//! ```
//!
//! Default: the two-point-flux FVM Laplacian on 6·16³ perturbed tetrahedra, b = A·1, CG with
//! Jacobi, f64, CPU. `--precision mixed`: the solver runs in f64, the matrix values are
//! stored in f32 and the preconditioner is built and applied in f32 (PCG then uses the
//! flexible β). `--solver refine`: iterative refinement, f64 residuals and f32 PCG inner
//! solves.

use std::process::ExitCode;
use std::time::Instant;

use galerkin::solver::{
    bicgstab, cg, fgmres, gmres, iterative_refinement, pcg, BlockJacobi, Chebyshev,
    ChebyshevParams, Identity, Jacobi, LinearOperator, MixedPrecision, Preconditioner,
    RefinementParams, SolveReport, SolverParams,
};
use galerkin::sparse::{Csr, Format, FormatOptions, SparseMatrix};
use galerkin::{Backend, BackendKind, BackendTask, Cpu, Element, Error, Result, Scalar, Vector};

#[path = "common/mod.rs"]
mod common;
use common::{load, read_vector, write_vector};

struct Args {
    matrix: String,
    rhs: Option<String>,
    solver: String,
    precond: String,
    block_size: usize,
    precision: String,
    tol: f64,
    max_iter: usize,
    restart: usize,
    format: Option<Format>,
    backend: BackendKind,
    out: Option<String>,
}

fn usage() -> String {
    format!(
        "usage: solve [--matrix FILE.mtx|GENERATOR] [--rhs FILE] [--solver cg|pcg|bicgstab|gmres|fgmres|refine] \
         [--precond none|jacobi|block-jacobi|chebyshev] [--block-size M] [--precision f32|f64|mixed] [--tol T] \
         [--max-iter N] [--restart M] [--format auto|csr|sell|ell|bell|coo] [--backend cpu|wgpu|cuda] [--out FILE]\n\
         generators: {}",
        common::GENERATORS
    )
}

fn parse() -> std::result::Result<Args, String> {
    let mut a = Args {
        matrix: "fvm-tet:16".into(),
        rhs: None,
        solver: "cg".into(),
        precond: "jacobi".into(),
        block_size: 4,
        precision: "f64".into(),
        tol: 1e-8,
        max_iter: 1000,
        restart: 30,
        format: None,
        backend: BackendKind::Cpu,
        out: None,
    };
    let mut it = std::env::args().skip(1);
    let num = |flag: &str, v: String| v.parse::<f64>().map_err(|e| format!("{flag} {v}: {e}"));
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--matrix" => a.matrix = value()?,
            "--rhs" => a.rhs = Some(value()?),
            "--solver" => a.solver = value()?,
            "--precond" => a.precond = value()?,
            "--block-size" => a.block_size = num(&flag, value()?)? as usize,
            "--precision" => a.precision = value()?,
            "--tol" => a.tol = num(&flag, value()?)?,
            "--max-iter" => a.max_iter = num(&flag, value()?)? as usize,
            "--restart" => a.restart = num(&flag, value()?)? as usize,
            "--format" => {
                let v = value()?;
                a.format = if v == "auto" {
                    None
                } else {
                    Some(v.parse().map_err(|e: Error| e.to_string())?)
                };
            }
            "--backend" => a.backend = value()?.parse().map_err(|e: Error| e.to_string())?,
            "--out" => a.out = Some(value()?),
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other}\n{}", usage())),
        }
    }
    let check = |what: &str, v: &str, allowed: &[&str]| {
        if allowed.contains(&v) {
            Ok(())
        } else {
            Err(format!(
                "{what} {v}: expected one of {}",
                allowed.join(", ")
            ))
        }
    };
    check(
        "--solver",
        &a.solver,
        &["cg", "pcg", "bicgstab", "gmres", "fgmres", "refine"],
    )?;
    check(
        "--precond",
        &a.precond,
        &["none", "jacobi", "block-jacobi", "chebyshev"],
    )?;
    check("--precision", &a.precision, &["f32", "f64", "mixed"])?;
    Ok(a)
}

struct Task {
    args: Args,
    a: Csr<Cpu, f64>,
    b: Vec<f64>,
}

/// The operator on the device with values `V`, applied in precision `S`.
fn operator<B: Backend, V: Element>(
    b: &B,
    a: &Csr<Cpu, f64>,
    format: Option<Format>,
) -> Result<SparseMatrix<B, V>> {
    let a: Csr<Cpu, V> = a.convert();
    match format {
        None => {
            let (m, choice) = SparseMatrix::auto(b, &a)?;
            println!("format: {choice}");
            Ok(m)
        }
        Some(f) => {
            println!("format: {f} (requested)");
            SparseMatrix::from_csr(b, &a, f, &FormatOptions::default())
        }
    }
}

/// A preconditioner in precision `P` for the host matrix.
fn preconditioner<'a, B: Backend, P: Scalar>(
    b: &B,
    args: &Args,
    a: &Csr<Cpu, f64>,
    op: &'a dyn LinearOperator<B, P>,
) -> Result<Box<dyn Preconditioner<B, P> + 'a>> {
    Ok(match args.precond.as_str() {
        "jacobi" => Box::new(Jacobi::<B, P>::new(b, a)?),
        "block-jacobi" => Box::new(BlockJacobi::<B, P>::new(b, a, args.block_size)?),
        "chebyshev" => Box::new(Chebyshev::new(
            b,
            op,
            &a.diagonal(),
            ChebyshevParams::default(),
        )?),
        _ => Box::new(Identity::new(a.nrows())),
    })
}

fn run_solver<B: Backend, S: Scalar>(
    args: &Args,
    op: &dyn LinearOperator<B, S>,
    m: &dyn Preconditioner<B, S>,
    bv: &Vector<B, S>,
    x: &mut Vector<B, S>,
    flexible: bool,
) -> Result<SolveReport> {
    let params = SolverParams {
        rtol: args.tol,
        max_iter: args.max_iter,
        restart: args.restart,
        flexible,
        ..SolverParams::default()
    };
    let with_m = (args.precond != "none").then_some(m);
    match args.solver.as_str() {
        "cg" if args.precond == "none" => cg(op, bv, x, &params),
        "cg" | "pcg" => pcg(op, Some(m), bv, x, &params),
        "bicgstab" => bicgstab(op, with_m, bv, x, &params),
        "gmres" => gmres(op, with_m, bv, x, &params),
        _ => fgmres(op, with_m, bv, x, &params),
    }
}

fn solve<B: Backend, S: Scalar>(b: &B, t: &Task) -> Result<Vec<f64>> {
    let op = operator::<B, S>(b, &t.a, t.args.format)?;
    let m = preconditioner::<B, S>(b, &t.args, &t.a, &op)?;
    let bv = Vector::from_slice(b, &t.b.iter().map(|&v| S::from_f64(v)).collect::<Vec<_>>())?;
    let mut x = Vector::zeros(b, t.a.ncols())?;
    let report = run_solver(&t.args, &op, m.as_ref(), &bv, &mut x, false)?;
    println!("{report}");
    Ok(x.to_vec()?.iter().map(|v| v.as_f64()).collect())
}

fn solve_mixed<B: Backend>(b: &B, t: &Task) -> Result<Vec<f64>> {
    let bv = Vector::from_slice(b, &t.b)?;
    let mut x = Vector::<B, f64>::zeros(b, t.a.ncols())?;
    let op32 = operator::<B, f32>(b, &t.a, t.args.format)?;
    let report = if t.args.solver == "refine" {
        let op64 = operator::<B, f64>(b, &t.a, t.args.format)?;
        let m32 = preconditioner::<B, f32>(b, &t.args, &t.a, &op32)?;
        let params = RefinementParams {
            rtol: t.args.tol,
            ..RefinementParams::default()
        };
        iterative_refinement(&op64, &op32, Some(m32.as_ref()), &bv, &mut x, &params)?
    } else {
        // f32 values in the f64 solver, f32 preconditioner (flexible β in PCG).
        let m32 = preconditioner::<B, f32>(b, &t.args, &t.a, &op32)?;
        let mixed = MixedPrecision::new(m32);
        run_solver(
            &t.args,
            &op32 as &dyn LinearOperator<B, f64>,
            &mixed,
            &bv,
            &mut x,
            true,
        )?
    };
    println!("{report}");
    let x = x.to_vec()?;
    // The mixed operator has f32 values: measure the residual with the f64 matrix too.
    let cpu = Cpu::new();
    let mut r = Vector::from_slice(&cpu, &t.b)?;
    t.a.spmv(-1.0, &Vector::from_slice(&cpu, &x)?, 1.0, &mut r)?;
    let bnorm = t.b.iter().map(|v| v * v).sum::<f64>().sqrt();
    println!(
        "residual with the f64 matrix: {:.3e} (relative {:.3e})",
        r.nrm2()?,
        r.nrm2()? / bnorm
    );
    Ok(x)
}

impl BackendTask for Task {
    type Output = Vec<f64>;
    fn run<B: Backend>(self, b: B) -> Result<Vec<f64>> {
        println!("backend: {}", b.info());
        match (self.args.precision.as_str(), self.args.solver.as_str()) {
            ("f32", _) => solve::<B, f32>(&b, &self),
            ("mixed", _) | (_, "refine") => solve_mixed(&b, &self),
            _ => solve::<B, f64>(&b, &self),
        }
    }
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("solve: {e}");
            return ExitCode::from(2);
        }
    };
    let result = (|| -> Result<()> {
        let t0 = Instant::now();
        let a = load(&args.matrix)?;
        let s = a.stats();
        println!(
            "matrix: {} x {}, {} nonzeros (row length {}..{}, mean {:.2}); built in {:.2} s",
            a.nrows(),
            a.ncols(),
            a.nnz(),
            s.min,
            s.max,
            s.mean,
            t0.elapsed().as_secs_f64()
        );
        let b = match &args.rhs {
            Some(path) => {
                let b = read_vector(path)?;
                galerkin::error::check_len("solve", "--rhs", a.nrows(), b.len())?;
                b
            }
            None => {
                // b = A·1, so the exact solution is known.
                let cpu = Cpu::new();
                let mut b = Vector::zeros(&cpu, a.nrows())?;
                a.spmv(1.0, &Vector::full(&cpu, a.ncols(), 1.0)?, 0.0, &mut b)?;
                b.to_vec()?
            }
        };
        println!(
            "solver: {}, preconditioner: {}, precision: {}, tolerance {:e}",
            args.solver, args.precond, args.precision, args.tol
        );
        let (out, rhs_given) = (args.out.clone(), args.rhs.is_some());
        let backend = args.backend;
        let x = galerkin::with_backend(backend, Task { args, a, b })?;
        if !rhs_given {
            let err = x.iter().map(|v| (v - 1.0) * (v - 1.0)).sum::<f64>().sqrt()
                / (x.len().max(1) as f64).sqrt();
            println!("‖x − 1‖₂/√n = {err:.3e} (b = A·1)");
        }
        if let Some(path) = out {
            write_vector(&path, &x)?;
            println!("x written to {path}");
        }
        Ok(())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("solve: error: {e}");
            ExitCode::FAILURE
        }
    }
}
