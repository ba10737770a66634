//! HDG suite: the whole pipeline of seed 001 on an `n x n` square of `2 n²` triangles,
//! stage by stage, for each degree, backend and precision; the seed's Tesla M2090 totals
//! (80 x 80) for comparison; local generation in GFLOP/s, assembly in GB/s against copy;
//! the trace SpMV in block-ELL against CSR on the same `K` (`--dump DIR` writes `K` for
//! `benches/gpu/spmv_cusparse.py`, cuSPARSE through CuPy).

use std::cell::RefCell;
use std::time::Duration;

use galerkin::hdg::{Hdg, HdgParams, Problem, StageTimes, TracePreconditioner, TraceSolverParams};
use galerkin::mesh::tri::{Diagonal, TriMesh};
use galerkin::{BackendTask, FullBackend, Result, Scalar, Vector};

use crate::spmv::{dump, Case};
use crate::timing::{gbps, median};
use crate::Options;

/// The seed's GPU totals on the 80 x 80 mesh (Table 2, ms, Tesla M2090), P = 1..9.
const SEED_TOTAL_MS: [f64; 9] = [
    559.0, 858.0, 1508.0, 2777.0, 4894.0, 8165.0, 12879.0, 20072.0, 28481.0,
];

fn u(x: f64, y: f64) -> f64 {
    (std::f64::consts::PI * x).sin() * (std::f64::consts::PI * y).sin() + x * y
}

fn f(x: f64, y: f64) -> f64 {
    let pi = std::f64::consts::PI;
    2.0 * pi * pi * (pi * x).sin() * (pi * y).sin() + u(x, y)
}

/// Flops of the local stage per element (the GEMMs, the Cholesky factorisation and solves).
fn local_flops(p: usize) -> f64 {
    let nu = ((p + 1) * (p + 2) / 2) as f64;
    let w = 3.0 * (p + 1) as f64;
    2.0 * 7.0 * nu * nu
        + nu.powi(3) / 3.0
        + 2.0 * 18.0 * nu * w
        + 2.0 * nu * nu * w
        + 2.0 * 39.0 * w * w
        + 2.0 * nu * w * w
}

/// The GPU totals by (n, P, precision) and backend, for the speed-up column of the CPU rows.
type Totals = RefCell<Vec<((usize, usize, String), String, Duration)>>;

struct Suite<'a> {
    options: &'a Options,
    totals: &'a Totals,
}

/// The stage times of the run with the median total among `reps`.
fn median_run<B: FullBackend, V: Scalar, S: Scalar>(
    hdg: &Hdg<B, V, S>,
    problem: &Problem<'_>,
    solver: &TraceSolverParams,
    reps: usize,
) -> Result<(StageTimes, usize, bool)> {
    let mut runs = Vec::new();
    for _ in 0..reps {
        let sol = hdg.run(problem, solver, true)?;
        runs.push((
            sol.times,
            sol.trace.report.iterations,
            sol.trace.report.converged(),
        ));
    }
    runs.sort_by_key(|r| r.0.total());
    Ok(runs[runs.len() / 2])
}

#[allow(clippy::too_many_arguments)]
fn one<B: FullBackend, V: Scalar, S: Scalar>(
    b: &B,
    prec: &str,
    mesh: &TriMesh,
    n: usize,
    p: usize,
    options: &Options,
    copy: f64,
    totals: &mut Vec<((usize, usize, String), String, Duration)>,
) -> Result<()> {
    let params = HdgParams::new(p);
    let mut params = params;
    params.lambda = 1.0;
    let hdg = Hdg::<B, V, S>::new(b, mesh, params, &[])?;
    let problem = Problem {
        rhs: &f,
        dirichlet: &u,
        flux: None,
    };
    let mut solver = TraceSolverParams::for_precision::<S>();
    solver.preconditioner = TracePreconditioner::BlockJacobi;
    if options.hdg_chebyshev {
        solver.preconditioner = TracePreconditioner::Chebyshev { degree: 4 };
    }
    if options.hdg_amg {
        solver.preconditioner = TracePreconditioner::amg();
    }
    if let Some(rtol) = options.hdg_rtol {
        solver.stop.rtol = rtol;
    }
    let reps = if b.kind() == galerkin::BackendKind::Cpu {
        1
    } else {
        3
    };
    if b.kind() != galerkin::BackendKind::Cpu {
        // Warm-up: kernel compilation.
        hdg.run(&problem, &solver, true)?;
    }
    let (t, it, converged) = median_run(&hdg, &problem, &solver, reps)?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let total = t.total().saturating_sub(t.setup);
    let seed = if n == 80 {
        SEED_TOTAL_MS.get(p - 1).copied()
    } else {
        None
    };
    let key = (n, p, prec.to_string());
    let vs_cpu = if b.kind() == galerkin::BackendKind::Cpu {
        // The GPU backends ran first: their speed-up over this CPU run.
        let ups: Vec<String> = totals
            .iter()
            .filter(|(k, _, _)| *k == key)
            .map(|(_, kind, g)| {
                format!(
                    "{}:{:.0}x",
                    &kind[..2],
                    total.as_secs_f64() / g.as_secs_f64()
                )
            })
            .collect();
        if ups.is_empty() {
            "-".into()
        } else {
            ups.join(",")
        }
    } else {
        totals.push((key, b.kind().name().to_string(), total));
        "-".into()
    };
    let count = mesh.num_triangles() as f64;
    let local_gflops = count * local_flops(p) / t.local.as_secs_f64() / 1e9;
    let (nl, nfree) = (p + 1, hdg.topology().nfree() as f64);
    let w = 3.0 * nl as f64;
    let vsize = std::mem::size_of::<V>() as f64;
    let asm_bytes = count * w * w * vsize + nfree * 5.0 * (nl * nl) as f64 * vsize + 28.0 * nfree;
    println!(
        "{:<5} {:<5} {:>4} {:>8} {:>2} {:>9} {:>5}{} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>9.2} {:>8.2} {:>8.2} {:>9.2} {:>8} {:>7} {:>8.1} {:>7.1} {:>5.1}% {}",
        b.kind().name(),
        prec,
        n,
        mesh.num_triangles(),
        p,
        hdg.dofs(),
        it,
        if converged { " " } else { "!" },
        ms(t.setup),
        ms(t.local),
        ms(t.load),
        ms(t.assemble),
        ms(t.solve),
        ms(t.recover),
        ms(t.post_process),
        ms(total),
        seed.map_or("-".into(), |s| format!("{s:.0}")),
        seed.map_or("-".into(), |s| format!("{:.0}x", s / ms(total))),
        local_gflops,
        gbps(asm_bytes, t.assemble),
        100.0 * gbps(asm_bytes, t.assemble) / copy,
        vs_cpu,
    );
    if options.hdg_spmv && b.kind() != galerkin::BackendKind::Cpu {
        trace_spmv::<B, V, S>(b, &hdg, &problem, prec, n, p, options, copy)?;
    }
    if options.hdg_amg && b.kind() != galerkin::BackendKind::Cpu {
        amg_profile::<B, V, S>(&hdg, &problem, &solver)?;
    }
    Ok(())
}

/// Where an AMG cycle's time goes on the assembled `K`: the hierarchy built as the trace
/// solve builds it, then 10 cycles with every operation timed between synchronisations.
fn amg_profile<B: FullBackend, V: Scalar, S: Scalar>(
    hdg: &Hdg<B, V, S>,
    problem: &Problem<'_>,
    solver: &TraceSolverParams,
) -> Result<()> {
    let TracePreconditioner::Amg {
        theta,
        smoother,
        cycle,
        max_coarse,
    } = solver.preconditioner
    else {
        return Ok(());
    };
    let local = hdg.local_solvers()?;
    let load = hdg.load(&local, problem)?;
    let system = hdg.assemble(&local, &load)?;
    let params = galerkin::solver::AmgParams {
        theta,
        smoother,
        cycle,
        max_coarse,
        near_null: galerkin::solver::NearNull::Strided(system.k.block_size()),
        improve_candidates: 0,
        ..galerkin::solver::AmgParams::default()
    };
    let k = galerkin::sparse::algebra::block_ell_to_csr(&system.k)?;
    let amg = galerkin::solver::Amg::<B, S>::from_device_with_operator(k, &system.k, &params)?;
    crate::amg::print_cycle_profile(&amg, &system.rhs)
}

/// The trace SpMV on the assembled `K`: block-ELL against CSR on the device; `--dump`
/// writes `K` for cuSPARSE.
#[allow(clippy::too_many_arguments)]
fn trace_spmv<B: FullBackend, V: Scalar, S: Scalar>(
    b: &B,
    hdg: &Hdg<B, V, S>,
    problem: &Problem<'_>,
    prec: &str,
    n: usize,
    p: usize,
    options: &Options,
    copy: f64,
) -> Result<()> {
    let local = hdg.local_solvers()?;
    let load = hdg.load(&local, problem)?;
    let system = hdg.assemble(&local, &load)?;
    let rows = system.k.nrows();
    let x = Vector::<B, S>::from_slice(b, &galerkin::verify::random_vec::<S>(rows, 3))?;
    let mut y = Vector::<B, S>::zeros(b, rows)?;
    let vsize = std::mem::size_of::<V>();
    let ssize = std::mem::size_of::<S>();
    let t_bell = median(b, options.reps, || {
        system.k.spmv(S::ONE, &x, S::ZERO, &mut y)
    })?;
    let bell_bytes = system.k.storage_bytes() + 2 * rows * ssize;
    let host = system.k.to_host()?.to_csr()?;
    let csr = host.to_backend(b)?;
    let t_csr = median(b, options.reps, || csr.spmv(S::ONE, &x, S::ZERO, &mut y))?;
    let csr_bytes = host.nnz() * (vsize + 4) + (rows + 1) * 4 + 2 * rows * ssize;
    let name = format!("hdg_n{n}_p{p}");
    println!(
        "  trace SpMV {name} {prec}: {} rows, {} nnz | block-ELL {:.1} us {:.0} GB/s ({:.0}% of copy) | CSR {:.1} us {:.0} GB/s | block-ELL {:.2}x CSR",
        rows,
        host.nnz(),
        t_bell.as_secs_f64() * 1e6,
        gbps(bell_bytes as f64, t_bell),
        100.0 * gbps(bell_bytes as f64, t_bell) / copy,
        t_csr.as_secs_f64() * 1e6,
        gbps(csr_bytes as f64, t_csr),
        t_csr.as_secs_f64() / t_bell.as_secs_f64()
    );
    if let (Some(dir), "f64") = (&options.dump, prec) {
        let case = Case {
            name,
            matrix: host.convert::<f64>(),
            block_size: Some(p + 1),
            fvm: false,
        };
        if let Err(e) = dump(dir, &case) {
            eprintln!("[bench] dump {}: {e}", case.name);
        }
    }
    Ok(())
}

impl BackendTask for Suite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        let o = self.options;
        println!(
            "\n# {}  (hdg suite: -∇²u + u = f on n x n squares of 2 triangles, Dirichlet; times in ms, GPU: median of 3 runs after a warm-up, CPU: one run; total = all stages but setup; PCG {}, rtol 1e-12 (f64, mixed) / 1e-5 (f32); xcpu on the CPU rows: each GPU's speed-up)",
            b.info(),
            if o.hdg_chebyshev { "Chebyshev(4) over block-Jacobi" } else { "block-Jacobi" }
        );
        let copy = crate::timing::copy_bandwidth::<B, f32>(&b)?;
        println!("copy bandwidth: {copy:.1} GB/s");
        println!(
            "{:<5} {:<5} {:>4} {:>8} {:>2} {:>9} {:>6} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8} {:>7} {:>8} {:>7} {:>6} xcpu",
            "bknd", "prec", "n", "tri", "P", "dofs", "iter", "setup", "local", "load", "assemble", "solve",
            "recover", "post", "total", "seed", "xseed", "GFLOP/s", "asmGB/s", "ofcopy"
        );
        let mut totals = self.totals.borrow_mut();
        for &n in &o.hdg_sizes {
            let mesh = TriMesh::unit_square(n, Diagonal::Up, 0.0, 0)?;
            for &p in &o.hdg_degrees {
                for prec in &o.spmv_precisions {
                    let r = match (prec.as_str(), b.info().supports_f64()) {
                        ("f64", true) => {
                            one::<B, f64, f64>(&b, prec, &mesh, n, p, o, copy, &mut totals)
                        }
                        ("mixed", true) => {
                            one::<B, f32, f64>(&b, prec, &mesh, n, p, o, copy, &mut totals)
                        }
                        ("f32", _) => {
                            one::<B, f32, f32>(&b, prec, &mesh, n, p, o, copy, &mut totals)
                        }
                        _ => Ok(()),
                    };
                    if let Err(e) = r {
                        println!("{} n={n} P={p} {prec}: error: {e}", b.kind().name());
                    }
                }
            }
        }
        Ok(())
    }
}

pub fn run(options: &Options) {
    let mut kinds = options.backends.clone();
    // The CPU last (the slowest), its rows showing each GPU's speed-up over it.
    kinds.sort_by_key(|k| *k == galerkin::BackendKind::Cpu);
    let totals = Totals::default();
    for kind in kinds {
        let suite = Suite {
            options,
            totals: &totals,
        };
        if let Err(e) = galerkin::with_backend(kind, suite) {
            println!("\n# {kind}: {e}");
        }
    }
}
