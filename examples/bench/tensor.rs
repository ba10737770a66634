//! Tensor and multigrid suites (seed 003).
//!
//! `tensor`: the matrix-free Laplace (BP3 class) and mass (BP1 class) operators in 3D,
//! k = 1..8, in GDoF/s and as a share of the memory roofline (one read of x, one write of
//! y at the measured copy bandwidth): the default path (the one-pass tiled kernel on the
//! GPU backends) beside the cell-by-cell path (atomic scatter where it exists, else
//! colours);
//! the fused patch-smoothing step (all 2^d colours) in GFLOP/s.
//!
//! `mg`: the 3D Poisson solve of the seed's Table 7 (u = Π sin(π xᵢ), relative residual
//! 1e-9): GMRES in f64 preconditioned by one V-cycle in f64, FGMRES around a V-cycle in
//! f32 (mixed), with setup, solve and DoF/s beside the seed's A100 times (kernels compiled
//! by a small solve first).

use std::f64::consts::PI;
use std::time::Instant;

use galerkin::multigrid::{level_rhs, Multigrid, MultigridParams, PatchForm};
use galerkin::solver::{
    fgmres, gmres, pcg, LinearOperator, MixedPrecision, Progress, SolverParams, Stopping,
};
use galerkin::tensor::{ApplyPath, Grid, OperatorKind, TensorOperator, Tiling};
use galerkin::{BackendTask, FullBackend, Precision, Result, Scalar, Vector};

use crate::timing::{copy_bandwidth, gbps, median};
use crate::Options;

/// The seed's Table 7 (A100): (k, level, DoF, iterations, f64 s, mixed s).
const SEED: [(usize, usize, f64, usize, f64, f64); 3] = [
    (1, 9, 135e6, 5, 3.391, 2.385),
    (3, 8, 454e6, 3, 3.941, 2.418),
    (7, 7, 721e6, 2, 5.891, 3.326),
];

/// Flops of one patch of the fused smoother (closure n = 2k+1, interior m = 2k−1, 3D):
/// the x, y, z passes of the local residual and the six eigenvector contractions.
fn patch_flops(k: usize) -> f64 {
    let (n, m) = ((2 * k + 1) as f64, (2 * k - 1) as f64);
    4.0 * m * n.powi(3) + 6.0 * m * m * n * n + 4.0 * m.powi(3) * n + 12.0 * m.powi(4)
}

struct TensorSuite<'a> {
    options: &'a Options,
}

/// The level whose grid has about `target` nodes in 3D at degree k.
fn level_for(k: usize, target: f64) -> usize {
    let cells = ((target.cbrt() - 1.0) / k as f64).max(2.0);
    (cells.log2().round() as usize).max(1)
}

impl BackendTask for TensorSuite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        for &p in &self.options.precisions {
            if !b.supports(p.dtype()) {
                continue;
            }
            match p {
                Precision::F32 => tensor_rows::<B, f32>(&b, self.options)?,
                Precision::F64 => tensor_rows::<B, f64>(&b, self.options)?,
            }
        }
        Ok(())
    }
}

fn tensor_rows<B: FullBackend, T: Scalar>(b: &B, options: &Options) -> Result<()> {
    let copy = copy_bandwidth::<B, T>(b)?;
    let cpu = b.info().kind == galerkin::BackendKind::Cpu;
    let target = if cpu { 2e6 } else { 3.2e7 } * options.scale;
    println!(
        "tensor {} {}: copy {copy:.0} GB/s; roofline = 2 N sizeof(T) bytes per apply",
        b.info(),
        T::DTYPE
    );
    println!(
        "{:>2} {:>4} {:>11} | {:>9} {:>7} {:>6} | {:>9} {:>7} {:>6} | {:>9} {:>7} | {:>9} {:>8} {:>5} | {:>9}",
        "k",
        "L",
        "dofs",
        "lap µs",
        "GDoF/s",
        "%roof",
        "cell µs",
        "GDoF/s",
        "%roof",
        "mass µs",
        "%roof",
        "smooth ms",
        "GFLOP/s",
        "form",
        "split ms"
    );
    for k in (1..=8).filter(|k| options.hdg_degrees.contains(k)) {
        let level = level_for(k, target);
        let grid = Grid {
            dim: 3,
            degree: k,
            cells: 1 << level,
        };
        let n = grid.len();
        let bytes = 2.0 * (n * std::mem::size_of::<T>()) as f64;
        let x0: Vec<T> = galerkin::verify::random_vec(n, 11);
        let x = Vector::from_slice(b, &x0)?;
        let mut y = Vector::<B, T>::zeros(b, n)?;
        let mut time = |op: &TensorOperator<B, T>| median(b, options.reps, || op.apply(&x, &mut y));
        let lap = TensorOperator::<B, T>::new(b, grid, OperatorKind::Laplace)?;
        let path = lap.path();
        let t_lap = time(&lap)?;
        // The cell-by-cell path beside a tiled default (atomics where they exist).
        let t_col = match path {
            ApplyPath::Tiled(_) => {
                let cell = TensorOperator::<B, T>::new(b, grid, OperatorKind::Laplace)?
                    .with_scatter(b.tensor_atomic_add::<T>())?;
                Some(time(&cell)?)
            }
            _ => None,
        };
        let mut sweep = Vec::new();
        if let (true, ApplyPath::Tiled(t0)) = (options.tile_sweep, path) {
            let mut seen = std::collections::BTreeSet::new();
            let mut cells = vec![t0.cells, t0.cells + 1, t0.cells * 2, 2, 3, 4, 6];
            cells.retain(|&c| c >= 1 && c <= grid.cells);
            for c in cells {
                for z in [t0.chunk, (t0.chunk / 2).max(1), t0.chunk * 2] {
                    let Ok(op) = TensorOperator::<B, T>::new(b, grid, OperatorKind::Laplace)?
                        .with_tiling(Tiling { cells: c, chunk: z })
                    else {
                        continue;
                    };
                    if let ApplyPath::Tiled(t) = op.path() {
                        if seen.insert((t.cells, t.chunk)) {
                            sweep.push((t, time(&op)?));
                        }
                    }
                }
            }
        }
        let t_mass = time(&TensorOperator::<B, T>::new(b, grid, OperatorKind::Mass)?)?;
        // One patch-smoothing step in the default form (fused where it fits) and split.
        let smooth_time = |form: PatchForm| -> Result<Option<(std::time::Duration, PatchForm)>> {
            let params = MultigridParams {
                patch_form: form,
                ..Default::default()
            };
            match Multigrid::<B, T>::new(b, 3, k, level, params) {
                Ok(mg) => {
                    let rhs = Vector::from_slice(b, &x0)?;
                    let mut z = Vector::<B, T>::zeros(b, n)?;
                    let t = median(b, options.reps.min(10), || mg.smooth_once(&mut z, &rhs))?;
                    Ok(mg.patch_form().map(|f| (t, f)))
                }
                Err(e) => {
                    eprintln!("  k = {k}: no {form:?} patch smoother: {e}");
                    Ok(None)
                }
            }
        };
        let patches = (grid.cells - 1).pow(3) as f64;
        let smooth = smooth_time(PatchForm::Auto)?
            .map(|(t, f)| (t, patches * patch_flops(k) / t.as_secs_f64() / 1e9, f));
        let split = match smooth {
            Some((t, _, PatchForm::Split)) => Some(t),
            _ => smooth_time(PatchForm::Split)?.map(|(t, _)| t),
        };
        let us = |t: std::time::Duration| t.as_secs_f64() * 1e6;
        let gdof = |t: std::time::Duration| n as f64 / t.as_secs_f64() / 1e9;
        let roof = |t| 100.0 * gbps(bytes, t) / copy;
        let (col_us, col_g, col_r) = t_col.map_or(("-".into(), "-".into(), "-".into()), |t| {
            (
                format!("{:.0}", us(t)),
                format!("{:.2}", gdof(t)),
                format!("{:.0}", roof(t)),
            )
        });
        let (sm_ms, sm_gf, sm_form) =
            smooth.map_or(("-".into(), "-".into(), "-".into()), |(t, g, f)| {
                (
                    format!("{:.2}", t.as_secs_f64() * 1e3),
                    format!("{g:.0}"),
                    f.name().to_string(),
                )
            });
        let split_ms = split.map_or("-".into(), |t| format!("{:.2}", t.as_secs_f64() * 1e3));
        println!(
            "{k:>2} {level:>4} {n:>11} | {:>9.0} {:>7.2} {:>6.0} | {col_us:>9} {col_g:>7} {col_r:>6} | {:>9.0} {:>7.0} | {sm_ms:>9} {sm_gf:>8} {sm_form:>5} | {split_ms:>9}",
            us(t_lap),
            gdof(t_lap),
            roof(t_lap),
            us(t_mass),
            roof(t_mass),
        );
        if let ApplyPath::Tiled(t) = path {
            println!(
                "   lap: tiled, {} cells per tile edge, chunk {}",
                t.cells, t.chunk
            );
        }
        for (t, time) in sweep {
            println!(
                "   sweep: tile {:>2} chunk {:>4}: {:>9.0} µs {:>7.2} GDoF/s {:>5.0}%",
                t.cells,
                t.chunk,
                us(time),
                gdof(time),
                roof(time)
            );
        }
    }
    Ok(())
}

/// Runs the tensor suite on every backend.
pub fn run(options: &Options) {
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(kind, TensorSuite { options }) {
            eprintln!("bench tensor on {kind}: {e}");
        }
    }
}

struct MgSuite<'a> {
    options: &'a Options,
}

impl BackendTask for MgSuite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        let cpu = b.info().kind == galerkin::BackendKind::Cpu;
        let gmres_outer = self.options.mg_gmres;
        println!(
            "mg {}: 3D, u = Π sin(π xᵢ), {} + one V-cycle, to 1e-9",
            b.info(),
            if gmres_outer {
                "(F)GMRES(f64)"
            } else {
                "flexible PCG(f64)"
            }
        );
        println!(
            "{:>2} {:>3} {:>11} {:>6} | {:>5} {:>8} {:>8} {:>10} {:>10} | {:>9} | seed A100: {:>5} {:>8} {:>10}",
            "k", "L", "dofs", "V", "its", "setup s", "solve s", "DoF/s solve", "DoF/s e2e", "rel res", "its", "solve s", "DoF/s"
        );
        let rows = SEED
            .iter()
            .filter(|r| self.options.hdg_degrees.contains(&r.0));
        for &(k, l_seed, dofs_seed, its_seed, t64, tmix) in rows {
            let shift = if cpu { 4 } else { 0 };
            let level = ((l_seed as f64 + self.options.scale.log2() / 3.0).round() as usize)
                .saturating_sub(shift)
                .max(2);
            for mixed in [true, false] {
                // A small solve first, so that the timed one does not include the JIT
                // compilation of its kernels (they depend on k and T, not on the level).
                let warm = if mixed {
                    solve_row::<B, f32>(&b, k, 2, gmres_outer)
                } else {
                    solve_row::<B, f64>(&b, k, 2, gmres_outer)
                };
                if let Err(e) = warm {
                    println!("{k:>2}   2: {e}");
                    continue;
                }
                let row = if mixed {
                    solve_row::<B, f32>(&b, k, level, gmres_outer)
                } else {
                    solve_row::<B, f64>(&b, k, level, gmres_outer)
                };
                let seed_t = if mixed { tmix } else { t64 };
                match row {
                    Ok((n, its, setup, solve, rel)) => println!(
                        "{k:>2} {level:>3} {n:>11} {:>6} | {its:>5} {setup:>8.3} {solve:>8.3} {:>10.3e} {:>10.3e} | {rel:>9.2e} | {:>15} {seed_t:>8.3} {:>10.3e}",
                        if mixed { "f32" } else { "f64" },
                        n as f64 / solve,
                        n as f64 / (setup + solve),
                        its_seed,
                        dofs_seed / seed_t,
                    ),
                    Err(e) => println!("{k:>2} {level:>3}: {e}"),
                }
            }
        }
        Ok(())
    }
}

/// One solve: (dofs, iterations, setup s (hierarchy, operator, right-hand side), solve s,
/// true relative residual). Flexible PCG around the symmetric V-cycle, or (`gmres_outer`)
/// GMRES (FGMRES around an f32 cycle).
fn solve_row<B: FullBackend, T: Scalar>(
    b: &B,
    k: usize,
    level: usize,
    gmres_outer: bool,
) -> Result<(usize, usize, f64, f64, f64)> {
    let t0 = Instant::now();
    let mg_params = MultigridParams {
        symmetric: !gmres_outer,
        ..Default::default()
    };
    let mg = Multigrid::<B, T>::new(b, 3, k, level, mg_params)?;
    let grid = mg.grid();
    let a = TensorOperator::<B, f64>::new(b, grid, OperatorKind::Laplace)?;
    let rhs = level_rhs::<B, f64>(b, grid, 3.0 * PI * PI, |x| (PI * x).sin())?;
    let mut x = Vector::<B, f64>::zeros(b, grid.len())?;
    b.synchronize()?;
    let setup = t0.elapsed().as_secs_f64();
    let mixed = T::DTYPE != galerkin::DType::F64;
    let params = SolverParams {
        stop: Stopping::new(1e-9, 20),
        // GMRES(m) keeps m + 1 basis vectors: 8 where they fit, 3 at the largest sizes.
        restart: if grid.len() > 300_000_000 { 3 } else { 8 },
        // A V-cycle in f32 inside an f64 solve is not exactly linear: flexible PCG for it.
        flexible: mixed,
        progress: Progress::Never,
        ..Default::default()
    };
    let m = MixedPrecision::<B, T, _>::new(&mg);
    let t0 = Instant::now();
    let report = match (gmres_outer, mixed) {
        (false, _) => pcg(&a, Some(&m), &rhs, &mut x, &params)?,
        (true, false) => gmres(&a, Some(&m), &rhs, &mut x, &params)?,
        (true, true) => fgmres(&a, Some(&m), &rhs, &mut x, &params)?,
    };
    b.synchronize()?;
    let solve = t0.elapsed().as_secs_f64();
    Ok((
        grid.len(),
        report.iterations,
        setup,
        solve,
        report.relative_residual(),
    ))
}

/// Runs the multigrid suite on every backend.
pub fn run_mg(options: &Options) {
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(kind, MgSuite { options }) {
            eprintln!("bench mg on {kind}: {e}");
        }
    }
}
