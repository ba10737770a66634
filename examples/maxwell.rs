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
//! ```
//!
//! Exit status: 0 done, 2 bad arguments or input (mesh, order, mode, tags, files), 1 other
//! errors.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use galerkin::dg::{cavity_mode, check_mode, check_order, Flux, Maxwell, TetMesh, MAX_ORDER};
use galerkin::mesh::gmsh;
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
    /// initial and the final time.
    #[arg(long, value_delimiter = ',')]
    vtk_times: Vec<f64>,
    /// Energy samples over the run (for the monitor and the JSON history).
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
        Some(v) if v.len() == 3 => {
            let mode = [v[0], v[1], v[2]];
            check_mode(mode).map_err(|e| bad("--mode", e.to_string()))?;
            Ok(mode)
        }
        _ => Err(bad(
            "--mode",
            format!("`{s}` is not three non-negative integers m,n,p (e.g. 1,1,0)"),
        )),
    }
}

/// Refuses a run whose host memory, estimated from the tetrahedra and the order, exceeds
/// what is available: about `1000 + 300 n_p` bytes per tetrahedron (`n_p` nodes per
/// element), measured on the CPU backend (N = 1, 3, 6 on 24,576 tetrahedra: 2.0, 6.5 and
/// 24 kB per tetrahedron).
fn check_memory(args: &Args, tets: u64) -> Result<()> {
    let n = args.order.min(64) as u64;
    let np = (n + 1) * (n + 2) * (n + 3) / 6;
    galerkin::limits::check_host_items(
        format_args!(
            "DG of order {} on {tets} tetrahedra (estimated)",
            args.order
        ),
        tets,
        1000 + 300 * np,
    )
}

/// The mesh and whether the cavity mode is its exact solution.
fn load_mesh(args: &Args) -> Result<(TetMesh, bool)> {
    let mesh = if let Some(n) = args.mesh.strip_prefix("box:") {
        let n: usize = n
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| bad("--mesh", format!("`{}`: box:N needs N ≥ 1", args.mesh)))?;
        check_memory(args, (n as u64).saturating_pow(3).saturating_mul(6))?;
        let mesh = TetMesh::unit_cube(n, args.perturbation, 1)?;
        if !args.absorbing.is_empty() {
            return Err(bad(
                "--absorbing",
                "box meshes carry no physical tags: every boundary face is PEC".into(),
            ));
        }
        mesh
    } else {
        let path = std::path::Path::new(&args.mesh);
        if !path.exists() {
            return Err(bad(
                "--mesh",
                format!("`{}` is neither box:N nor an existing file", args.mesh),
            ));
        }
        let gmsh = gmsh::read(path)?;
        check_memory(args, (gmsh.tets().len()) as u64)?;
        TetMesh::from_gmsh(&gmsh)?.with_absorbing(&args.absorbing)?
    };
    let exact = args.mesh.starts_with("box:");
    let mesh = if args.block > 0 {
        mesh.renumbered(args.block)?
    } else {
        mesh
    };
    Ok((mesh, exact))
}

struct Outcome {
    device: String,
    elements: usize,
    dofs: usize,
    steps: usize,
    dt: f64,
    l2_error: f64,
    exact: bool,
    energy: Vec<(f64, f64)>,
    seconds: f64,
    setup_seconds: f64,
    /// Seconds spent compiling ahead (`common::compile_ahead`).
    compile_seconds: f64,
    /// `common::memory_bytes` after the run.
    memory_bytes: Option<u64>,
    params: String,
    vtk_files: Vec<String>,
}

struct Task<'a> {
    args: &'a Args,
    mesh: TetMesh,
    exact: bool,
    mode: [usize; 3],
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

/// The kernels compiled on `box:2` (one or two time steps, no autotuning, nothing written),
/// then the run.
fn ahead_then_simulate<B: FullBackend, T: Scalar>(b: &B, task: Task<'_>) -> Result<Outcome> {
    let compile = common::compile_ahead(b, task.args.no_compile_ahead, || {
        let mut small = task.args.clone();
        small.mesh = "box:2".into();
        small.perturbation = 0.0;
        small.absorbing.clear();
        small.final_time = 1e-3;
        small.autotune = false;
        small.vtk = None;
        small.vtk_times.clear();
        small.energy_samples = 1;
        small.json = true;
        let (mesh, exact) = load_mesh(&small)?;
        let task = Task {
            args: &small,
            mesh,
            exact,
            mode: task.mode,
        };
        simulate::<B, T>(b, task).map(drop)
    });
    let mut outcome = simulate::<B, T>(b, task)?;
    outcome.compile_seconds = compile;
    outcome.memory_bytes = common::memory_bytes(b);
    Ok(outcome)
}

fn write_vtk<B: FullBackend, T: Scalar>(
    dg: &Maxwell<B, T>,
    dir: &str,
    index: usize,
    files: &mut Vec<String>,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.into(),
        source,
    })?;
    let path = format!("{dir}/maxwell_{index:04}.vtu");
    dg.to_vtk()?.write(&path)?;
    files.push(format!("{path} (t = {:.6})", dg.time()));
    Ok(())
}

fn simulate<B: FullBackend, T: Scalar>(b: &B, task: Task<'_>) -> Result<Outcome> {
    let args = task.args;
    let start = Instant::now();
    let flux = match args.flux {
        FluxArg::Upwind => Flux::Upwind,
        FluxArg::Central => Flux::Central,
    };
    let mut dg = Maxwell::<B, T>::new(b, &task.mesh, args.order, flux)?;
    let mode = task.mode;
    dg.set_fields(|x| cavity_mode(mode, 0.0, x))?;
    if args.autotune {
        dg.autotune()?;
    }
    let setup_seconds = start.elapsed().as_secs_f64();
    let stable_dt = dg.stable_dt(args.cfl);
    let steps = (args.final_time / stable_dt).ceil().max(1.0);
    if !(stable_dt > 0.0 && steps.is_finite() && steps <= args.max_steps as f64) {
        return Err(bad(
            "--final-time",
            format!(
                "T = {:e} with dt = {stable_dt:e} (CFL {}) needs {steps:e} time steps, more than \
                 --max-steps {}: lower --final-time, raise --cfl (≤ 2) or --max-steps",
                args.final_time, args.cfl, args.max_steps
            ),
        ));
    }
    let steps = steps as usize;
    let dt = args.final_time / steps as f64;
    let mut energy = vec![(0.0, dg.energy()?)];
    let mut vtk_files = Vec::new();
    if let Some(dir) = &args.vtk {
        write_vtk(&dg, dir, 0, &mut vtk_files)?;
    }
    let mut vtk_times: Vec<f64> = args.vtk_times.clone();
    vtk_times.sort_by(f64::total_cmp);
    let samples = args.energy_samples.clamp(1, steps);
    let bar = (!args.json && std::io::stderr().is_terminal()).then(|| {
        let p = indicatif::ProgressBar::new(steps as u64).with_message("RK4 steps");
        p.set_style(
            indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} {prefix} {eta}")
                .expect("a valid template"),
        );
        p
    });
    let mut next_vtk = 0;
    let mut elapsed = 0.0;
    let mut clock = Instant::now();
    // Off a terminal, a long run still says how far it is: a line every 10% on stderr.
    let lines = bar.is_none() && steps >= 10_000;
    let run_start = Instant::now();
    dg.run(steps, dt, |dg, s| {
        if let Some(p) = &bar {
            p.set_position(s as u64);
        }
        if lines && s * 10 / steps != (s - 1) * 10 / steps {
            eprintln!(
                "maxwell: step {s} of {steps} (t = {:.6}), {:.1} s",
                dg.time(),
                run_start.elapsed().as_secs_f64()
            );
        }
        let sample = s * samples / steps != (s - 1) * samples / steps;
        let vtk_due = args.vtk.is_some()
            && next_vtk < vtk_times.len()
            && dg.time() >= vtk_times[next_vtk] - 1e-12;
        if sample || vtk_due || s == steps {
            // Host work (energy, files) is kept out of the timing.
            b.synchronize()?;
            elapsed += clock.elapsed().as_secs_f64();
            if sample {
                let e = dg.energy()?;
                energy.push((dg.time(), e));
                if let Some(p) = &bar {
                    p.set_prefix(format!("energy {e:.6e}"));
                }
            }
            if vtk_due || (s == steps && args.vtk.is_some()) {
                if let Some(dir) = &args.vtk {
                    write_vtk(dg, dir, vtk_files.len(), &mut vtk_files)?;
                }
                while next_vtk < vtk_times.len() && dg.time() >= vtk_times[next_vtk] - 1e-12 {
                    next_vtk += 1;
                }
            }
            clock = Instant::now();
        }
        Ok(())
    })?;
    if let Some(p) = bar {
        p.finish_and_clear();
    }
    let final_time = dg.time();
    let l2_error = dg.l2_error(|x| cavity_mode(mode, final_time, x))?;
    Ok(Outcome {
        device: b.info().to_string(),
        elements: dg.shape().elements,
        dofs: dg.dofs(),
        steps,
        dt,
        l2_error,
        exact: task.exact,
        energy,
        seconds: elapsed,
        setup_seconds,
        compile_seconds: 0.0,
        memory_bytes: None,
        params: format!("{:?}", dg.params()),
        vtk_files,
    })
}

fn report(args: &Args, o: &Outcome) {
    let e0 = o.energy[0].1;
    let e_final = o.energy.last().map_or(e0, |e| e.1);
    let drift = (e_final - e0) / e0;
    let rate = (o.dofs * o.steps) as f64 / o.seconds.max(1e-12);
    if args.json {
        let value = serde_json::json!({
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
            "compile_seconds": o.compile_seconds,
            "memory_bytes": o.memory_bytes,
            "dof_updates_per_second": rate,
            "vtk_files": o.vtk_files,
        });
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
        o.compile_seconds, o.setup_seconds, o.seconds, rate
    );
    for f in &o.vtk_files {
        println!("  wrote {f}");
    }
}

/// Why a finished run is not an answer: non-finite energy or error, or (upwind flux, which
/// only dissipates) energy that grew by more than 1%, the mark of an unstable run.
fn unphysical(args: &Args, o: &Outcome) -> Option<String> {
    let e0 = o.energy[0].1;
    if let Some(&(t, e)) = o.energy.iter().find(|(_, e)| !e.is_finite()) {
        return Some(format!("the energy is {e} at t = {t:.6}"));
    }
    if !o.l2_error.is_finite() {
        return Some(format!("the L2 error is {}", o.l2_error));
    }
    if args.flux == FluxArg::Upwind {
        if let Some(&(t, e)) = o.energy.iter().find(|(_, e)| *e > 1.01 * e0) {
            return Some(format!(
                "the energy grew from {e0:.6e} to {e:.6e} at t = {t:.6} under the upwind flux, \
                 which only dissipates: the run is unstable (lower --cfl)"
            ));
        }
    }
    None
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = (|| -> Result<Outcome> {
        check_order("maxwell", args.order).map_err(|_| {
            bad(
                "--order",
                format!("{} is outside 1..={MAX_ORDER}", args.order),
            )
        })?;
        let mode = parse_mode(&args.mode)?;
        if !(args.final_time.is_finite() && args.final_time > 0.0) {
            return Err(bad(
                "--final-time",
                format!("{} must be positive", args.final_time),
            ));
        }
        if !(args.cfl.is_finite() && args.cfl > 0.0 && args.cfl <= 2.0) {
            return Err(bad("--cfl", format!("{} must be in (0, 2]", args.cfl)));
        }
        let (mesh, exact) = load_mesh(&args)?;
        let task = Task {
            args: &args,
            mesh,
            exact,
            mode,
        };
        let outcome = galerkin::with_backend(args.backend.kind(), task)?;
        report(&args, &outcome);
        Ok(outcome)
    })();
    match result {
        Ok(o) => match unphysical(&args, &o) {
            None => ExitCode::SUCCESS,
            Some(why) => {
                eprintln!("maxwell: not a meaningful answer: {why}");
                ExitCode::from(3)
            }
        },
        Err(e) => {
            eprintln!("maxwell: {e}");
            common::exit_code(&e)
        }
    }
}
