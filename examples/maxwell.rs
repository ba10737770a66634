//! Time-domain Maxwell's equations (vacuum, normalised units) by nodal DG on tetrahedra
//! (seed 004): the PEC cavity eigenmode of the unit cube, or any Gmsh tetrahedral mesh with
//! absorbing boundaries by physical tag, on any backend, in f32 or f64, with low-storage
//! RK4, an energy monitor and VTK output.
//!
//! ```text
//! cargo run --release --example maxwell -- --help
//! cargo run --release --example maxwell                      # box:4, N = 3, mode 1,1,0
//! cargo run --release --example maxwell -- --mesh box:8 --order 5 --final-time 1 --json
//! cargo run --release --example maxwell -- --mesh model.msh --absorbing 6,7 --vtk out
//! mpirun -np 2 target/release/examples/maxwell --backend cuda --mesh box:40 --order 4 --json
//! ```
//!
//! Under `mpirun` (a build with `--features mpi`) the tetrahedra are partitioned over the
//! ranks (`--partition`), one device per rank, the face traces exchanged before every RK
//! stage (`--halo`); the JSON then has `ranks`, `halo`, `partition` and `per_rank`.
//!
//! Exit status: 0 done, 2 bad arguments or input (mesh, order, mode, tags, files), 1 other
//! errors.

use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use galerkin::dg::{simulate_cavity, CavityOptions, CavityRun, Flux, TetMesh};
use galerkin::{BackendTask, Error, FullBackend, Result, Scalar};

#[path = "common/mod.rs"]
mod common;
use common::BackendArg;

/// `--flux`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FluxArg {
    /// upwind: dissipates under-resolved modes; energy never grows
    Upwind,
    /// central: energy conserved by the semi-discrete operator
    Central,
}

/// `--precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Precision {
    /// fields and kernels in f32
    F32,
    /// fields and kernels in f64
    F64,
}

/// Maxwell's equations by nodal DG on tetrahedra: the PEC cavity of the unit cube or a
/// Gmsh mesh, low-storage RK4, L² error against the cavity mode and energy drift.
#[derive(Parser, Debug, Clone)]
#[command(name = "maxwell", version, after_help = common::EXIT_HELP)]
struct Args {
    /// The mesh: `box:N` (the unit cube cut into N³ hexahedra of 6 tetrahedra, every
    /// boundary face a perfect conductor) or a Gmsh 2.2/4.1 file with tetrahedra.
    #[arg(long, default_value = "box:4")]
    mesh: String,
    /// Move the interior points of `box:N` by up to this fraction of h (0 ≤ p < 1/6).
    #[arg(long, default_value_t = 0.0)]
    perturbation: f64,
    /// Physical tags of boundary triangles that are absorbing (Silver–Müller), e.g. `6,7`;
    /// every other boundary face is a perfect electric conductor.
    #[arg(long, value_delimiter = ',')]
    absorbing: Vec<i32>,
    /// The polynomial order N (1..=9).
    #[arg(long, default_value_t = 3)]
    order: usize,
    /// The cavity mode `m,n,p` (at most one zero): initial condition and exact solution.
    /// `m,n,0` is E_z = sin(mπx) sin(nπy) cos(ωt), ω = π√(m²+n²).
    #[arg(long, default_value = "1,1,0")]
    mode: String,
    /// Final time T.
    #[arg(long, default_value_t = 0.5)]
    final_time: f64,
    /// CFL number: dt = cfl / (max face scaling · N²), rounded down to end at T.
    #[arg(long, default_value_t = 0.5)]
    cfl: f64,
    /// The surface flux.
    #[arg(long, value_enum, default_value_t = FluxArg::Upwind)]
    flux: FluxArg,
    /// Backend.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// Precision of the fields and kernels.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Time the launch parameters on the device first (cached per device, order and
    /// precision for the process).
    #[arg(long)]
    autotune: bool,
    /// Renumber the elements by a greedy BFS partition into blocks of this many elements
    /// (0: keep the mesh's numbering).
    #[arg(long, default_value_t = 256)]
    block: usize,
    /// Write E and H (`.vtu`, one file per output time) into this directory.
    #[arg(long)]
    vtk: Option<String>,
    /// Times at which to write VTK files (the first step at or after each), besides the
    /// initial and the final time; each in `[0, T]`.
    #[arg(long, value_delimiter = ',')]
    vtk_times: Vec<f64>,
    /// Energy samples over the run (for the monitor and the JSON history), at least 1.
    #[arg(long, default_value_t = 10)]
    energy_samples: usize,
    /// Refuse runs of more time steps than this (T / dt, before starting).
    #[arg(long, default_value_t = 1_000_000)]
    max_steps: usize,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Do not compile the kernels ahead on `box:2` (on a device, compilation then counts in
    /// the setup and the first time steps).
    #[arg(long)]
    no_compile_ahead: bool,
    /// Under mpirun: how the tetrahedra are given to the ranks, on their face graph.
    #[arg(long, default_value = "metis", value_parser = ["contiguous", "metis"])]
    partition: String,
    /// Under mpirun: how the face traces travel. `auto`: device to device (NCCL) where every
    /// rank is on a CUDA GPU of its own and NCCL loads (`libnccl.so.2`, or the path in
    /// `GALERKIN_NCCL`), else through host memory; `host`; `device` (an error where a rank
    /// cannot).
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "device"])]
    halo: String,
    /// Under mpirun: wait for the device before every exchange, so that the per-rank halo
    /// seconds exclude the stage queued before it (one more device round trip a stage).
    #[arg(long)]
    profile: bool,
    /// Under mpirun: this rank's device (default: node rank modulo the devices).
    #[arg(long)]
    device: Option<usize>,
}

fn bad(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument {
        op: "maxwell",
        name,
        reason,
    }
}

fn parse_mode(s: &str) -> Result<[usize; 3]> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let nums: Option<Vec<usize>> = parts.iter().map(|p| p.parse().ok()).collect();
    match nums {
        Some(v) if v.len() == 3 => Ok([v[0], v[1], v[2]]),
        _ => Err(bad(
            "--mode",
            format!("`{s}` is not three non-negative integers m,n,p (e.g. 1,1,0)"),
        )),
    }
}

/// Checks `--vtk-times` (finite, not negative, not past `--final-time`) and
/// `--energy-samples` (at least 1), which the library would otherwise skip or move
/// silently.
fn check_outputs(args: &Args) -> Result<()> {
    for &t in &args.vtk_times {
        if !(t.is_finite() && t >= 0.0) {
            return Err(bad(
                "--vtk-times",
                format!("{t} is not a time of the run: times must be finite and at least 0"),
            ));
        }
        // A bad --final-time is reported by the library's own check.
        if args.final_time.is_finite() && t > args.final_time {
            return Err(bad(
                "--vtk-times",
                format!(
                    "{t} is past --final-time {}: no step reaches it",
                    args.final_time
                ),
            ));
        }
    }
    if args.energy_samples == 0 {
        return Err(bad(
            "--energy-samples",
            "0: at least one sample is needed (the energy at the final time)".into(),
        ));
    }
    Ok(())
}

/// The library's options from the command line.
fn options(args: &Args) -> Result<CavityOptions> {
    check_outputs(args)?;
    Ok(CavityOptions {
        mesh: args.mesh.clone(),
        perturbation: args.perturbation,
        absorbing: args.absorbing.clone(),
        order: args.order,
        mode: parse_mode(&args.mode)?,
        final_time: args.final_time,
        cfl: args.cfl,
        flux: match args.flux {
            FluxArg::Upwind => Flux::Upwind,
            FluxArg::Central => Flux::Central,
        },
        autotune: args.autotune,
        block: args.block,
        energy_samples: args.energy_samples,
        max_steps: args.max_steps,
        vtk: args.vtk.clone(),
        vtk_times: args.vtk_times.clone(),
        progress: !args.json,
        keep_fields: false,
        exact_halo_timing: args.profile,
    })
}

struct Outcome {
    run: CavityRun,
    /// The ranks' side of a run under mpirun.
    dist: Option<Dist>,
    /// Seconds spent compiling ahead (`common::compile_ahead`).
    compile_seconds: f64,
    /// `common::memory_bytes` after the run.
    memory_bytes: Option<u64>,
}

/// What a run under mpirun adds.
struct Dist {
    ranks: usize,
    halo: String,
    partition: String,
    per_rank: Vec<galerkin::distributed::RankShare>,
    /// Whether this process reports (rank 0).
    root: bool,
}

struct Task<'a> {
    args: &'a Args,
    options: &'a CavityOptions,
    mesh: TetMesh,
    exact: bool,
    /// Under mpirun: the communicator, and whether the task started (the rank has its
    /// device).
    comm: Option<(
        &'a galerkin::distributed::Communicator,
        &'a std::cell::Cell<bool>,
    )>,
}

impl BackendTask for Task<'_> {
    type Output = Outcome;
    fn run<B: FullBackend>(self, b: B) -> Result<Outcome> {
        match self.args.precision {
            Precision::F32 => ahead_then_simulate::<B, f32>(&b, self),
            Precision::F64 => ahead_then_simulate::<B, f64>(&b, self),
        }
    }
}

/// The kernels compiled on a small box (one or two time steps, no autotuning, nothing
/// written; under mpirun the distributed run, so the split stage, the trace gathers and the
/// halo route are ready too), then the run.
fn ahead_then_simulate<B: FullBackend, T: Scalar>(b: &B, task: Task<'_>) -> Result<Outcome> {
    let small = |cells: usize| CavityOptions {
        mesh: format!("box:{cells}"),
        perturbation: 0.0,
        absorbing: Vec::new(),
        final_time: 1e-3,
        autotune: false,
        vtk: None,
        vtk_times: Vec::new(),
        energy_samples: 1,
        progress: false,
        ..task.options.clone()
    };
    let (compile, run, dist) = match task.comm {
        None => {
            let compile = common::compile_ahead(b, task.args.no_compile_ahead, || {
                let small = small(2);
                let (mesh, exact) = small.mesh()?;
                simulate_cavity::<B, T>(b, &mesh, exact, &small).map(drop)
            });
            let run = simulate_cavity::<B, T>(b, &task.mesh, task.exact, task.options)?;
            (compile, run, None)
        }
        Some((comm, started)) => {
            started.set(true);
            // Every rank has its device (a rank that failed to get one agrees from outside).
            comm.agree(Ok(()))?;
            let partition = task.args.partition.parse()?;
            let halo = task.args.halo.parse()?;
            // At least 16 tetrahedra a rank, so that no rank is left without.
            let cells = (16.0 * comm.size() as f64 / 6.0).cbrt().ceil().max(2.0) as usize;
            let compile = common::compile_ahead(b, task.args.no_compile_ahead, || {
                let small = small(cells);
                let (mesh, exact) = small.mesh()?;
                galerkin::distributed::simulate_cavity::<B, T>(
                    comm, b, &mesh, exact, &small, partition, halo,
                )
                .map(drop)
            });
            let d = galerkin::distributed::simulate_cavity::<B, T>(
                comm,
                b,
                &task.mesh,
                task.exact,
                task.options,
                partition,
                halo,
            )?;
            let dist = Dist {
                ranks: d.ranks,
                halo: d.halo,
                partition: d.partition,
                per_rank: d.per_rank,
                root: comm.is_root(),
            };
            (compile, d.run, Some(dist))
        }
    };
    let compile = match &task.comm {
        Some((comm, _)) => comm.max(compile),
        None => compile,
    };
    Ok(Outcome {
        run,
        dist,
        compile_seconds: compile,
        memory_bytes: common::memory_bytes(b),
    })
}

fn report(args: &Args, outcome: &Outcome) {
    let o = &outcome.run;
    let e0 = o.energy[0].1;
    let e_final = o.energy.last().map_or(e0, |e| e.1);
    let drift = (e_final - e0) / e0;
    let rate = (o.dofs * o.steps) as f64 / o.seconds.max(1e-12);
    if outcome.dist.as_ref().is_some_and(|d| !d.root) {
        return;
    }
    if args.json {
        let mut value = serde_json::json!({
            "mesh": args.mesh,
            "elements": o.elements,
            "order": args.order,
            "dofs": o.dofs,
            "mode": args.mode,
            "flux": format!("{:?}", args.flux).to_lowercase(),
            "precision": format!("{:?}", args.precision).to_lowercase(),
            "backend": o.device,
            "params": o.params,
            "final_time": args.final_time,
            "dt": o.dt,
            "steps": o.steps,
            "l2_error": o.l2_error,
            "l2_error_is_exact": o.exact,
            "energy_initial": e0,
            "energy_final": e_final,
            "energy_drift": drift,
            "energy_history": o.energy,
            "seconds": o.seconds,
            "setup_seconds": o.setup_seconds,
            "compile_seconds": outcome.compile_seconds,
            "memory_bytes": outcome.memory_bytes,
            "dof_updates_per_second": rate,
            "vtk_files": o.vtk_files,
            "ranks": outcome.dist.as_ref().map_or(1, |d| d.ranks),
        });
        if let Some(d) = &outcome.dist {
            value["halo"] = d.halo.clone().into();
            value["partition"] = d.partition.clone().into();
            value["per_rank"] = d
                .per_rank
                .iter()
                .enumerate()
                .map(|(r, s)| {
                    serde_json::json!({
                        "rank": r,
                        "elements": s.elements,
                        "ghost_elements": s.ghost_elements,
                        "trace_values": s.trace_values,
                        "halo_seconds": s.halo_seconds,
                        "compute_seconds": s.compute_seconds,
                    })
                })
                .collect();
        }
        println!("{value}");
        return;
    }
    println!("maxwell on {}", o.device);
    println!(
        "  mesh {}: {} tetrahedra, order {}, {} unknowns (6 fields), {:?} flux, {:?}",
        args.mesh, o.elements, args.order, o.dofs, args.flux, args.precision
    );
    println!("  launch parameters {}", o.params);
    println!(
        "  {} steps of dt = {:.4e} to T = {}",
        o.steps, o.dt, args.final_time
    );
    println!("  {:>10} {:>16}", "time", "energy");
    for (t, e) in &o.energy {
        println!("  {t:>10.5} {e:>16.10e}");
    }
    println!("  energy drift (E(T) − E(0))/E(0): {drift:.3e}");
    let against = if o.exact {
        "the exact cavity mode"
    } else {
        "the cavity mode (not the exact solution on this mesh)"
    };
    println!(
        "  L2 error of E and H against {against}: {:.4e}",
        o.l2_error
    );
    println!(
        "  compile {:.3} s, setup {:.3} s, time stepping {:.3} s: {:.3e} unknown updates per second",
        outcome.compile_seconds, o.setup_seconds, o.seconds, rate
    );
    for f in &o.vtk_files {
        println!("  wrote {f}");
    }
    if let Some(d) = &outcome.dist {
        println!(
            "  {} ranks, {}, face traces through {}",
            d.ranks, d.partition, d.halo
        );
        println!(
            "  {:>5} {:>10} {:>8} {:>14} {:>9} {:>10}",
            "rank", "elements", "ghosts", "trace values", "halo s", "compute s"
        );
        for (r, s) in d.per_rank.iter().enumerate() {
            println!(
                "  {r:>5} {:>10} {:>8} {:>14} {:>9.3} {:>10.3}",
                s.elements, s.ghost_elements, s.trace_values, s.halo_seconds, s.compute_seconds
            );
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    #[cfg(not(feature = "mpi"))]
    if common::under_mpirun() {
        eprintln!("maxwell: error: running under mpirun needs a build with `--features mpi`");
        return ExitCode::from(2);
    }
    let result = (|| -> Result<(CavityOptions, Outcome)> {
        let options = options(&args)?;
        #[cfg(feature = "mpi")]
        let comm = common::under_mpirun()
            .then(galerkin::distributed::Communicator::mpi)
            .transpose()?;
        #[cfg(not(feature = "mpi"))]
        let comm: Option<galerkin::distributed::Communicator> = None;
        let (mesh, exact) = match &comm {
            Some(c) => c.agree(options.mesh())?,
            None => options.mesh()?,
        };
        let started = std::cell::Cell::new(false);
        let task = Task {
            args: &args,
            options: &options,
            mesh,
            exact,
            comm: comm.as_ref().map(|c| (c, &started)),
        };
        let kind = args.backend.kind();
        let outcome = match &comm {
            None => galerkin::with_backend(kind, task),
            Some(c) => {
                let device = args
                    .device
                    .unwrap_or_else(|| c.node_rank() % galerkin::device_count(kind).max(1));
                let mut outcome = galerkin::with_backend_on(kind, device, task);
                if !started.get() {
                    // No device here: answer the agreement the other ranks make first.
                    outcome = c.agree(outcome);
                }
                outcome
            }
        }?;
        report(&args, &outcome);
        Ok((options, outcome))
    })();
    match result {
        Ok((options, o)) => match o.run.unphysical(&options) {
            None => ExitCode::SUCCESS,
            Some(why) => {
                if o.dist.as_ref().is_none_or(|d| d.root) {
                    eprintln!("maxwell: not a meaningful answer: {why}");
                }
                ExitCode::from(3)
            }
        },
        Err(e) => {
            eprintln!("maxwell: {e}");
            common::exit_code(&e)
        }
    }
}
