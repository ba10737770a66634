//! The distributed path of `solve` (feature `mpi`, run under `mpirun -np P`): the same flags,
//! the rows partitioned over the ranks, one device per rank.

use std::time::Instant;

use galerkin::distributed::{
    self, BlockJacobi, Communicator, DistCsr, DistMatrix, DistPreconditioner, DistVector, InnerCg,
    PartitionMethod,
};
use galerkin::solver::{
    Amg, BlockJacobi as LocalBlockJacobi, Chebyshev, ChebyshevParams, Identity, Jacobi,
    Preconditioner, SolveReport, SolverParams, Stopping,
};
use galerkin::{Backend, BackendTask, Error, FullBackend, Result, Scalar};

use super::{Args, PrecondArg, SolverArg};
use crate::common::{read_vector, write_vector, PrecisionArg};

/// What the distributed run reports, per rank and in all.
pub struct DistOutcome {
    pub report: SolveReport,
    pub converged: bool,
}

/// Loads the matrix onto the ranks: a plain coordinate Matrix Market file in parallel parts,
/// anything else (a generator, a `.gz` file) made whole on every rank and split.
fn load(comm: &Communicator, args: &Args, method: PartitionMethod) -> Result<DistCsr> {
    let spec = &args.matrix;
    let generator = spec.contains(':') && !std::path::Path::new(spec).exists();
    if !generator && !spec.ends_with(".gz") {
        return distributed::read_matrix_market(comm, spec, method);
    }
    let a = comm.agree(crate::common::load(spec))?;
    distributed::distribute(comm, &a, method)
}

struct Task<'a> {
    started: &'a std::cell::Cell<bool>,
    comm: &'a Communicator,
    args: &'a Args,
    a: &'a DistCsr,
}

fn local_preconditioner<'p, B: Backend, S: Scalar>(
    backend: &B,
    args: &Args,
    a: &DistCsr,
    local_op: Option<&'p dyn galerkin::solver::LinearOperator<B, S>>,
) -> Result<Box<dyn Preconditioner<B, S> + 'p>> {
    let block = a.local_block();
    if block.nrows() == 0 {
        return Ok(Box::new(Identity::new(0)));
    }
    Ok(match args.precond {
        PrecondArg::None => Box::new(Identity::new(block.nrows())),
        PrecondArg::Jacobi => Box::new(Jacobi::<B, S>::new(backend, block)?),
        PrecondArg::BlockJacobi => Box::new(LocalBlockJacobi::<B, S>::new(
            backend,
            block,
            args.block_size,
        )?),
        PrecondArg::Chebyshev => {
            let op = local_op.ok_or_else(|| Error::InvalidArgument {
                op: "solve",
                name: "--precond",
                reason: "Chebyshev needs the local block on the device".into(),
            })?;
            Box::new(Chebyshev::new(
                backend,
                op,
                &block.diagonal(),
                ChebyshevParams::default(),
            )?)
        }
        // This rank's diagonal block: AMG per rank inside the global Krylov solve.
        PrecondArg::Amg => Box::new(Amg::<B, S>::new(backend, block, &args.amg.params(0.0)?)?),
    })
}

fn params(args: &Args, comm: &Communicator, flexible: bool) -> SolverParams<'static> {
    SolverParams {
        stop: Stopping::new(args.tol, args.max_iter),
        restart: args.restart,
        flexible,
        progress: if comm.is_root() {
            galerkin::solver::Progress::Auto
        } else {
            galerkin::solver::Progress::Never
        },
        ..SolverParams::default()
    }
}

/// The solution, the report, [`timing`], and what carried the halo.
type Solved<B> = (DistVector<B, f64>, SolveReport, Vec<f64>, String);

fn solve_in<B: Backend, S: Scalar>(t: &Task<'_>, backend: &B) -> Result<Solved<B>> {
    let (args, a, comm) = (t.args, t.a, t.comm);
    let format = args.format.format();
    let m = DistMatrix::<B, S>::with_halo(backend, a, format, args.halo.parse()?)?;
    m.set_exact_timing(args.profile);
    let b = rhs::<B, S>(t, backend, &m)?;
    let local = comm.agree(local_preconditioner::<B, S>(
        backend,
        args,
        a,
        m.local_operator::<S>(),
    ))?;
    let bj = BlockJacobi::new(local);
    let mp = (args.precond != PrecondArg::None).then_some(&bj as &dyn DistPreconditioner<B, S>);
    let p = params(args, comm, false);
    let solve = |x: &mut DistVector<B, S>| match args.solver {
        SolverArg::Cg | SolverArg::Pcg => distributed::cg(&m, mp, &b, x, &p),
        SolverArg::Bicgstab => distributed::bicgstab(&m, mp, &b, x, &p),
        SolverArg::Gmres => distributed::gmres(&m, mp, &b, x, &p),
        SolverArg::Fgmres => distributed::fgmres(&m, mp, &b, x, &p),
        SolverArg::Refine => unreachable!("refused before"),
    };
    if args.warmup {
        solve(&mut DistVector::<B, S>::zeros(backend, a.layout())?)?;
    }
    let mut x = DistVector::<B, S>::zeros(backend, a.layout())?;
    comm.reset_counters();
    m.reset_times();
    let report = solve(&mut x)?;
    let times = timing(comm, &m, &report);
    let x64 = DistVector::from_owned(a.layout(), x.owned().to_precision::<f64>()?)?;
    Ok((x64, report, times, m.halo_transport()))
}

/// `b` from `--rhs` (read whole on every rank, the owned rows kept), or `b = A·1`.
fn rhs<B: Backend, S: Scalar>(
    t: &Task<'_>,
    backend: &B,
    m: &DistMatrix<B, S>,
) -> Result<DistVector<B, S>> {
    let layout = t.a.layout();
    match &t.args.rhs {
        Some(path) => {
            let b = t.comm.agree(read_vector(path).and_then(|b| {
                galerkin::error::check_len("solve", "--rhs", layout.global_len(), b.len())?;
                Ok(b.into_iter().map(S::from_f64).collect::<Vec<S>>())
            }))?;
            DistVector::from_global(backend, layout, &b)
        }
        None => {
            let ones = DistVector::from_owned(
                layout,
                galerkin::Vector::full(backend, layout.owned_len(), S::ONE)?,
            )?;
            let mut b = DistVector::zeros(backend, layout)?;
            m.apply(&ones, &mut b)?;
            Ok(b)
        }
    }
}

/// `[compute, halo, reduce, applications]` of this rank.
fn timing<B: Backend, S: Scalar>(
    comm: &Communicator,
    m: &DistMatrix<B, S>,
    r: &SolveReport,
) -> Vec<f64> {
    let h = m.times();
    let reduce = comm.reduction_time().as_secs_f64();
    let halo = h.halo.as_secs_f64();
    let compute = (r.time.as_secs_f64() - halo - reduce).max(0.0);
    vec![compute, halo, reduce, h.applications as f64]
}

fn solve_mixed<B: Backend>(t: &Task<'_>, backend: &B) -> Result<Solved<B>> {
    let (args, a, comm) = (t.args, t.a, t.comm);
    let format = args.format.format();
    let route = args.halo.parse()?;
    let m64 = DistMatrix::<B, f64>::with_halo(backend, a, format, route)?;
    let m32 = DistMatrix::<B, f32>::with_halo(backend, a, format, route)?;
    m64.set_exact_timing(args.profile);
    m32.set_exact_timing(args.profile);
    let b = rhs::<B, f64>(t, backend, &m64)?;
    let local = comm.agree(local_preconditioner::<B, f32>(
        backend,
        args,
        a,
        m32.local_operator::<f32>(),
    ))?;
    let bj = BlockJacobi::new(local);
    let mp = (args.precond != PrecondArg::None).then_some(&bj as &dyn DistPreconditioner<B, f32>);
    let inner = InnerCg::new(&m32, mp, Stopping::new(args.inner_tol, args.inner_max_iter));
    let p = params(args, comm, true);
    if args.warmup {
        let mut x = DistVector::zeros(backend, a.layout())?;
        distributed::mixed_cg(&m64, &inner, &b, &mut x, &p)?;
    }
    let mut x = DistVector::zeros(backend, a.layout())?;
    comm.reset_counters();
    m64.reset_times();
    m32.reset_times();
    let mut report = distributed::mixed_cg(&m64, &inner, &b, &mut x, &p)?;
    report.solver = "flexible CG (f64) + inner PCG (f32)";
    let mut times = timing(comm, &m64, &report);
    let h32 = m32.times();
    times[1] += h32.halo.as_secs_f64();
    times[0] = (report.time.as_secs_f64() - times[1] - times[2]).max(0.0);
    times[3] += h32.applications as f64;
    Ok((x, report, times, m64.halo_transport()))
}

impl BackendTask for Task<'_> {
    type Output = DistOutcome;
    fn run<B: FullBackend>(self, backend: B) -> Result<DistOutcome> {
        let (comm, args) = (self.comm, self.args);
        self.started.set(true);
        // Every rank has its device (a rank that failed to get one agrees from outside).
        comm.agree(Ok(()))?;
        let info = comm.all_gather_strings(&backend.info().to_string());
        if comm.is_root() && !args.json {
            for (r, i) in info.iter().enumerate() {
                println!("rank {r}: {i}");
            }
        }
        let (x, report, times, halo) = match args.precision {
            PrecisionArg::F64 => solve_in::<B, f64>(&self, &backend)?,
            PrecisionArg::F32 => solve_in::<B, f32>(&self, &backend)?,
            PrecisionArg::Mixed => solve_mixed::<B>(&self, &backend)?,
        };
        let all: Vec<Vec<f64>> = (0..4).map(|k| comm.all_gather(times[k])).collect();
        let quality = self.a.quality();
        let ghosts = comm.all_gather(self.a.layout().ghost_len() as f64);
        let x = x.gather(0)?;
        if let (Some(x), Some(path)) = (&x, &args.out) {
            write_vector(path, x)?;
        }
        if comm.is_root() {
            let err = match (&x, &args.rhs) {
                (Some(x), None) => Some(
                    (x.iter().map(|v| (v - 1.0) * (v - 1.0)).sum::<f64>() / x.len().max(1) as f64)
                        .sqrt(),
                ),
                _ => None,
            };
            if args.json {
                let per_rank: Vec<serde_json::Value> = (0..comm.size())
                    .map(|r| {
                        serde_json::json!({
                            "rank": r,
                            "rows": quality.rows[r],
                            "nnz": quality.nnz[r],
                            "ghosts": ghosts[r],
                            "compute_s": all[0][r],
                            "halo_s": all[1][r],
                            "reduce_s": all[2][r],
                            "spmv": all[3][r],
                        })
                    })
                    .collect();
                let finite = |v: f64| v.is_finite().then_some(v);
                let value = serde_json::json!({
                    "ranks": comm.size(),
                    "backend": backend.kind().name(),
                    "matrix": args.matrix,
                    "rows": self.a.global_len(),
                    "solver": report.solver,
                    "precision": format!("{:?}", args.precision).to_lowercase(),
                    "converged": report.converged(),
                    "reason": report.reason.to_string(),
                    "iterations": report.iterations,
                    "final_residual": finite(report.final_residual),
                    "relative_residual": finite(report.relative_residual()),
                    "error_from_ones": err,
                    "time_s": report.time.as_secs_f64(),
                    "exact_timing": args.profile,
                    "halo": halo,
                    "partition": {
                        "method": self.a.layout().partition().method().to_string(),
                        "row_imbalance": quality.row_imbalance,
                        "nnz_imbalance": quality.nnz_imbalance,
                        "cut_nonzeros": quality.cut_nonzeros,
                    },
                    "per_rank": per_rank,
                });
                println!("{value}");
            } else {
                println!(
                    "partition: {} — {quality}",
                    self.a.layout().partition().method()
                );
                println!("{report}");
                println!("halo through {halo}");
                println!(
                    "{:>5} {:>10} {:>10} {:>8} {:>11} {:>11} {:>11}",
                    "rank", "rows", "nonzeros", "ghosts", "compute s", "halo s", "reduce s"
                );
                for r in 0..comm.size() {
                    println!(
                        "{r:>5} {:>10} {:>10} {:>8} {:>11.4} {:>11.4} {:>11.4}",
                        quality.rows[r], quality.nnz[r], ghosts[r], all[0][r], all[1][r], all[2][r]
                    );
                }
                if let Some(err) = err {
                    println!("‖x − 1‖₂/√n = {err:.3e} (b = A·1)");
                }
                if let Some(path) = &args.out {
                    println!("x written to {path}");
                }
            }
        }
        Ok(DistOutcome {
            converged: report.converged(),
            report,
        })
    }
}

/// Why these arguments cannot run distributed (`None`: they can).
pub fn unsupported(args: &Args) -> Option<String> {
    if args.buffer_limit.is_some() {
        return Some(
            "--buffer-limit is single-process (distributed vectors are one buffer per rank)".into(),
        );
    }
    if args.solver == SolverArg::Refine {
        return Some("--solver refine is single-process; distributed mixed precision is flexible CG around f32 PCG (--solver cg or pcg with --precision mixed)".into());
    }
    if args.precision == PrecisionArg::Mixed
        && !matches!(args.solver, SolverArg::Cg | SolverArg::Pcg)
    {
        return Some(format!(
            "--precision mixed runs distributed as flexible CG around f32 PCG: use --solver cg or pcg, not {:?}",
            args.solver
        ));
    }
    None
}

/// The distributed solve: exit status 0 converged, 3 not converged, 2 bad arguments, 1
/// errors (the same on every rank).
pub fn run(args: &Args) -> Result<bool> {
    let comm = Communicator::mpi()?;
    let method: PartitionMethod = args.partition.parse()?;
    let t0 = Instant::now();
    let a = load(&comm, args, method)?;
    if comm.is_root() && !args.json {
        println!(
            "matrix: {} rows on {} ranks, distributed in {:.2} s",
            a.global_len(),
            comm.size(),
            t0.elapsed().as_secs_f64()
        );
    }
    let kind = args.backend.kind();
    let device = args
        .device
        .unwrap_or_else(|| comm.node_rank() % galerkin::device_count(kind).max(1));
    let started = std::cell::Cell::new(false);
    let task = Task {
        started: &started,
        comm: &comm,
        args,
        a: &a,
    };
    let mut outcome = galerkin::with_backend_on(kind, device, task);
    if !started.get() {
        // No device here: answer the agreement the other ranks make first.
        outcome = comm.agree(outcome);
    }
    let outcome = comm.agree(outcome)?;
    if comm.is_root() && !outcome.converged {
        eprintln!("solve: not converged: {}", outcome.report.reason);
    }
    Ok(outcome.converged)
}
