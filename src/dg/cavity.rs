//! A whole DG Maxwell run: the PEC cavity of the unit cube (or a Gmsh mesh with absorbing
//! faces) started from a cavity mode, low-storage RK4 to a final time, the energy sampled on
//! the way, the L² error against the mode at the end — what the `maxwell` example and the
//! Python package run.
//!
//! ```
//! use galerkin::dg::{simulate_cavity, CavityOptions};
//! use galerkin::Cpu;
//!
//! let options = CavityOptions { mesh: "box:2".into(), order: 2, final_time: 0.05, ..CavityOptions::default() };
//! let (mesh, exact) = options.mesh()?;
//! let run = simulate_cavity::<_, f64>(&Cpu::new(), &mesh, exact, &options)?;
//! assert!(run.unphysical(&options).is_none() && run.l2_error < 0.1);
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::io::IsTerminal;
use std::time::Instant;

use crate::bundle::Backend;
use crate::dg::{cavity_mode, check_mode, check_order, DgOps, Flux, Maxwell, TetMesh, MAX_ORDER};
use crate::error::{Error, Result};
use crate::mesh::gmsh;
use crate::scalar::Scalar;

fn bad(name: &'static str, reason: String) -> Error {
    Error::invalid("maxwell", name, reason)
}

/// What [`simulate_cavity`] runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CavityOptions {
    /// `box:N` (the unit cube cut into N³ hexahedra of 6 tetrahedra, every boundary face a
    /// perfect conductor) or a Gmsh 2.2/4.1 file with tetrahedra (default `box:4`).
    pub mesh: String,
    /// Move the interior points of `box:N` by up to this fraction of h, `0 ≤ p < 1/6`.
    pub perturbation: f64,
    /// Physical tags of absorbing (Silver–Müller) boundary triangles; every other boundary
    /// face is a perfect electric conductor.
    pub absorbing: Vec<i32>,
    /// Polynomial order N, `1..=9` (default 3).
    pub order: usize,
    /// The cavity mode `m, n, p` (at most one zero): initial condition and exact solution
    /// (default `1, 1, 0`).
    pub mode: [usize; 3],
    /// Final time T (default 0.5).
    pub final_time: f64,
    /// CFL number in `(0, 2]`: `dt = cfl / (max face scaling · N²)`, rounded down to end at
    /// T (default 0.5).
    pub cfl: f64,
    /// The surface flux (default upwind).
    pub flux: Flux,
    /// Time the launch parameters on the device first (cached per device, order and
    /// precision for the process).
    pub autotune: bool,
    /// Renumber the elements by a greedy BFS partition into blocks of this many elements
    /// (0: keep the mesh's numbering; default 256).
    pub block: usize,
    /// Energy samples over the run (default 10).
    pub energy_samples: usize,
    /// Refuse runs of more time steps than this (default 1,000,000).
    pub max_steps: usize,
    /// Write E and H (`.vtu`, one file per output time) into this directory.
    pub vtk: Option<String>,
    /// Times at which to write VTK files (the first step at or after each), besides the
    /// initial and the final time.
    pub vtk_times: Vec<f64>,
    /// A progress bar on stderr where it is a terminal, else a line every 10% of a run of at
    /// least 10,000 steps (default false: silent).
    pub progress: bool,
    /// Return the final fields and the nodes in [`CavityRun`] (default false).
    pub keep_fields: bool,
    /// Runs over ranks: wait for the device before every exchange, so that each rank's halo
    /// seconds exclude the stage queued before it (one more device round trip a stage;
    /// default false). No effect in one process.
    pub exact_halo_timing: bool,
}

impl Default for CavityOptions {
    fn default() -> Self {
        CavityOptions {
            mesh: "box:4".into(),
            perturbation: 0.0,
            absorbing: Vec::new(),
            order: 3,
            mode: [1, 1, 0],
            final_time: 0.5,
            cfl: 0.5,
            flux: Flux::Upwind,
            autotune: false,
            block: 256,
            energy_samples: 10,
            max_steps: 1_000_000,
            vtk: None,
            vtk_times: Vec::new(),
            progress: false,
            keep_fields: false,
            exact_halo_timing: false,
        }
    }
}

impl CavityOptions {
    /// Checks the order, the mode, the final time and the CFL number.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option.
    pub fn check(&self) -> Result<()> {
        check_order("maxwell", self.order).map_err(|_| {
            bad(
                "order",
                format!("{} is outside 1..={MAX_ORDER}", self.order),
            )
        })?;
        check_mode(self.mode).map_err(|e| bad("mode", e.to_string()))?;
        if !(self.final_time.is_finite() && self.final_time > 0.0) {
            return Err(bad(
                "final_time",
                format!("{} must be positive", self.final_time),
            ));
        }
        if !(self.cfl.is_finite() && self.cfl > 0.0 && self.cfl <= 2.0) {
            return Err(bad("cfl", format!("{} must be in (0, 2]", self.cfl)));
        }
        Ok(())
    }

    /// Refuses a run whose host memory, estimated from the tetrahedra and the order, exceeds
    /// what is available: about `1000 + 300 n_p` bytes per tetrahedron (`n_p` nodes per
    /// element), measured on the CPU backend (N = 1, 3, 6 on 24,576 tetrahedra: 2.0, 6.5 and
    /// 24 kB per tetrahedron).
    fn check_memory(&self, tets: u64) -> Result<()> {
        let n = self.order.min(64) as u64;
        let np = (n + 1) * (n + 2) * (n + 3) / 6;
        crate::limits::check_host_items(
            format_args!(
                "DG of order {} on {tets} tetrahedra (estimated)",
                self.order
            ),
            tets,
            1000 + 300 * np,
        )
    }

    /// The options checked ([`check`](Self::check)), the mesh, and whether the cavity mode
    /// is its exact solution (`box:N`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad option or mesh spec, [`Error::ResourceLimit`]
    /// beyond the memory, and what reading a Gmsh file returns.
    pub fn mesh(&self) -> Result<(TetMesh, bool)> {
        self.check()?;
        let mesh = if let Some(n) = self.mesh.strip_prefix("box:") {
            let n: usize = n
                .parse()
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| bad("mesh", format!("`{}`: box:N needs N ≥ 1", self.mesh)))?;
            self.check_memory((n as u64).saturating_pow(3).saturating_mul(6))?;
            if !self.absorbing.is_empty() {
                return Err(bad(
                    "absorbing",
                    "box meshes carry no physical tags: every boundary face is PEC".into(),
                ));
            }
            TetMesh::unit_cube(n, self.perturbation, 1)?
        } else {
            let path = std::path::Path::new(&self.mesh);
            if !path.exists() {
                return Err(bad(
                    "mesh",
                    format!("`{}` is neither box:N nor an existing file", self.mesh),
                ));
            }
            let gmsh = gmsh::read(path)?;
            self.check_memory(gmsh.tets().len() as u64)?;
            TetMesh::from_gmsh(&gmsh)?.with_absorbing(&self.absorbing)?
        };
        let exact = self.mesh.starts_with("box:");
        let mesh = if self.block > 0 {
            mesh.renumbered(self.block)?
        } else {
            mesh
        };
        Ok((mesh, exact))
    }
}

/// What [`simulate_cavity`] returns.
#[derive(Clone, Debug)]
pub struct CavityRun {
    /// The backend's description.
    pub device: String,
    /// Tetrahedra.
    pub elements: usize,
    /// Unknowns, `6 K Np`.
    pub dofs: usize,
    /// Time steps.
    pub steps: usize,
    /// The step.
    pub dt: f64,
    /// L² error of E and H against the cavity mode at the final time.
    pub l2_error: f64,
    /// Whether the cavity mode is the exact solution (the unit cube).
    pub exact: bool,
    /// `(time, energy)` samples, the initial one first.
    pub energy: Vec<(f64, f64)>,
    /// Seconds of time stepping (host work for the samples and files excluded).
    pub seconds: f64,
    /// Seconds to set up (operators, initial fields, autotuning).
    pub setup_seconds: f64,
    /// The launch parameters, as text.
    pub params: String,
    /// The VTK files written, with their times.
    pub vtk_files: Vec<String>,
    /// `[Ex, Ey, Ez, Hx, Hy, Hz]` at the nodes at the final time
    /// ([`CavityOptions::keep_fields`]).
    pub fields: Option<[Vec<f64>; 6]>,
    /// The nodes' coordinates `[x, y, z]`, in the order of `fields`
    /// ([`CavityOptions::keep_fields`]).
    pub nodes: Option<[Vec<f64>; 3]>,
}

impl CavityRun {
    /// `(E(T) − E(0)) / E(0)`.
    pub fn energy_drift(&self) -> f64 {
        let e0 = self.energy[0].1;
        let e = self.energy.last().map_or(e0, |e| e.1);
        (e - e0) / e0
    }

    /// Why a finished run is not an answer: a non-finite energy or error, or (upwind flux,
    /// which only dissipates) energy that grew by more than 1%, the mark of an unstable run.
    pub fn unphysical(&self, options: &CavityOptions) -> Option<String> {
        let e0 = self.energy[0].1;
        if let Some(&(t, e)) = self.energy.iter().find(|(_, e)| !e.is_finite()) {
            return Some(format!("the energy is {e} at t = {t:.6}"));
        }
        if !self.l2_error.is_finite() {
            return Some(format!("the L2 error is {}", self.l2_error));
        }
        if options.flux == Flux::Upwind {
            if let Some(&(t, e)) = self.energy.iter().find(|(_, e)| *e > 1.01 * e0) {
                return Some(format!(
                    "the energy grew from {e0:.6e} to {e:.6e} at t = {t:.6} under the upwind \
                     flux, which only dissipates: the run is unstable (lower the CFL number)"
                ));
            }
        }
        None
    }
}

/// What the cavity run needs of a solver: [`Maxwell`] in one process, and
/// [`DistMaxwell`](crate::distributed::DistMaxwell) over ranks (whose methods are collective,
/// so every rank runs the same driver).
pub(crate) trait CavitySolver {
    /// Sets the fields to `f(x)`.
    fn set_fields(&mut self, f: &(dyn Fn([f64; 3]) -> [f64; 6] + Sync)) -> Result<()>;
    /// Times the launch parameters.
    fn autotune(&mut self) -> Result<()>;
    /// A stable step.
    fn stable_dt(&self, cfl: f64) -> f64;
    /// One RK4 step.
    fn step(&mut self, dt: f64) -> Result<()>;
    /// The discrete energy.
    fn energy(&self) -> Result<f64>;
    /// The L² error against `exact`.
    fn l2_error(&self, exact: &(dyn Fn([f64; 3]) -> [f64; 6] + Sync)) -> Result<f64>;
    /// The simulated time.
    fn time(&self) -> f64;
    /// Waits for the device (over ranks: for every rank's device, a barrier).
    fn synchronize(&self) -> Result<()>;
    /// Writes the fields as VTK.
    fn write_vtk(&self, path: &str) -> Result<()>;
    /// Elements and unknowns of the whole mesh.
    fn size(&self) -> (usize, usize);
    /// The launch parameters, as text.
    fn params(&self) -> String;
    /// The final fields and the nodes (on the rank that reports; `None` elsewhere).
    #[allow(clippy::type_complexity)]
    fn fields_and_nodes(&self) -> Result<Option<([Vec<f64>; 6], [Vec<f64>; 3])>>;
    /// Whether this process prints (rank 0).
    fn prints(&self) -> bool;
    /// The seconds every process agrees on for a phase that took `local` here (the slowest).
    fn agreed_seconds(&self, local: f64) -> f64;
}

impl<B: Backend + DgOps, T: Scalar> CavitySolver for Maxwell<B, T> {
    fn set_fields(&mut self, f: &(dyn Fn([f64; 3]) -> [f64; 6] + Sync)) -> Result<()> {
        Maxwell::set_fields(self, f)
    }
    fn autotune(&mut self) -> Result<()> {
        Maxwell::autotune(self).map(drop)
    }
    fn stable_dt(&self, cfl: f64) -> f64 {
        Maxwell::stable_dt(self, cfl)
    }
    fn step(&mut self, dt: f64) -> Result<()> {
        Maxwell::step(self, dt)
    }
    fn energy(&self) -> Result<f64> {
        Maxwell::energy(self)
    }
    fn l2_error(&self, exact: &(dyn Fn([f64; 3]) -> [f64; 6] + Sync)) -> Result<f64> {
        Maxwell::l2_error(self, exact)
    }
    fn time(&self) -> f64 {
        Maxwell::time(self)
    }
    fn synchronize(&self) -> Result<()> {
        self.backend().synchronize()
    }
    fn write_vtk(&self, path: &str) -> Result<()> {
        self.to_vtk()?.write(path)
    }
    fn size(&self) -> (usize, usize) {
        (self.shape().elements, self.dofs())
    }
    fn params(&self) -> String {
        format!("{:?}", Maxwell::params(self))
    }
    fn fields_and_nodes(&self) -> Result<Option<([Vec<f64>; 6], [Vec<f64>; 3])>> {
        Ok(Some((self.fields()?, self.geometry().x.clone())))
    }
    fn prints(&self) -> bool {
        true
    }
    fn agreed_seconds(&self, local: f64) -> f64 {
        local
    }
}

/// Runs the cavity on `mesh` (from [`CavityOptions::mesh`]; `exact` as it says) in
/// precision `T`; see the [module documentation](self).
///
/// # Errors
/// [`Error::InvalidArgument`] for bad options or a run of more than `max_steps` steps
/// (refused before it starts); device and file errors. An unstable run is not an error:
/// see [`CavityRun::unphysical`].
pub fn simulate_cavity<B: Backend + DgOps, T: Scalar>(
    b: &B,
    mesh: &TetMesh,
    exact: bool,
    options: &CavityOptions,
) -> Result<CavityRun> {
    options.check()?;
    let start = Instant::now();
    let mut dg = Maxwell::<B, T>::new(b, mesh, options.order, options.flux)?;
    drive(&mut dg, b.info().to_string(), exact, options, start)
}

/// The run of [`simulate_cavity`] on any [`CavitySolver`], set up from `start` on.
pub(crate) fn drive<S: CavitySolver>(
    dg: &mut S,
    device: String,
    exact: bool,
    options: &CavityOptions,
    start: Instant,
) -> Result<CavityRun> {
    let mode = options.mode;
    dg.set_fields(&|x| cavity_mode(mode, 0.0, x))?;
    if options.autotune {
        dg.autotune()?;
    }
    let setup_seconds = dg.agreed_seconds(start.elapsed().as_secs_f64());
    let stable_dt = dg.stable_dt(options.cfl);
    let steps = (options.final_time / stable_dt).ceil().max(1.0);
    if !(stable_dt > 0.0 && steps.is_finite() && steps <= options.max_steps as f64) {
        return Err(bad(
            "final_time",
            format!(
                "T = {:e} with dt = {stable_dt:e} (CFL {}) needs {steps:e} time steps, more than \
                 the limit of {} (max_steps): lower the final time, raise the CFL number (≤ 2) \
                 or the limit",
                options.final_time, options.cfl, options.max_steps
            ),
        ));
    }
    let steps = steps as usize;
    let dt = options.final_time / steps as f64;
    let mut energy = vec![(0.0, dg.energy()?)];
    let mut vtk_files = Vec::new();
    let write_vtk = |dg: &S, files: &mut Vec<String>| -> Result<()> {
        let Some(dir) = &options.vtk else {
            return Ok(());
        };
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.into(),
            source,
        })?;
        let path = format!("{dir}/maxwell_{:04}.vtu", files.len());
        dg.write_vtk(&path)?;
        files.push(format!("{path} (t = {:.6})", dg.time()));
        Ok(())
    };
    write_vtk(dg, &mut vtk_files)?;
    let mut vtk_times = options.vtk_times.clone();
    vtk_times.sort_by(f64::total_cmp);
    let samples = options.energy_samples.clamp(1, steps);
    let progress = options.progress && dg.prints();
    let bar = (progress && std::io::stderr().is_terminal()).then(|| {
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
    let lines = progress && bar.is_none() && steps >= 10_000;
    let run_start = Instant::now();
    let mut result = Ok(());
    for s in 1..=steps {
        result = dg.step(dt);
        if result.is_err() {
            break;
        }
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
        let vtk_due = options.vtk.is_some()
            && next_vtk < vtk_times.len()
            && dg.time() >= vtk_times[next_vtk] - 1e-12;
        if sample || vtk_due || s == steps {
            // Host work (energy, files) is kept out of the timing.
            result = dg.synchronize();
            if result.is_err() {
                break;
            }
            elapsed += clock.elapsed().as_secs_f64();
            if sample {
                let e = dg.energy()?;
                energy.push((dg.time(), e));
                if let Some(p) = &bar {
                    p.set_prefix(format!("energy {e:.6e}"));
                }
            }
            if vtk_due || s == steps {
                write_vtk(dg, &mut vtk_files)?;
                while next_vtk < vtk_times.len() && dg.time() >= vtk_times[next_vtk] - 1e-12 {
                    next_vtk += 1;
                }
            }
            // Ranks leave the host work together: a rank that finished its share first
            // would otherwise wait for the others in its next exchange, inside the timing.
            result = dg.synchronize();
            if result.is_err() {
                break;
            }
            clock = Instant::now();
        }
    }
    if let Some(p) = bar {
        p.finish_and_clear();
    }
    result?;
    let final_time = dg.time();
    let l2_error = dg.l2_error(&|x| cavity_mode(mode, final_time, x))?;
    let (elements, dofs) = dg.size();
    let (fields, nodes) = match options
        .keep_fields
        .then(|| dg.fields_and_nodes())
        .transpose()?
    {
        Some(Some((f, x))) => (Some(f), Some(x)),
        _ => (None, None),
    };
    Ok(CavityRun {
        device,
        elements,
        dofs,
        steps,
        dt,
        l2_error,
        exact,
        energy,
        seconds: dg.agreed_seconds(elapsed),
        setup_seconds,
        params: dg.params(),
        vtk_files,
        fields,
        nodes,
    })
}
