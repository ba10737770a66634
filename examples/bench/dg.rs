//! Nodal DG Maxwell suites (seed 004).
//!
//! `dg`: one RK stage on the unit cube cut into 6 n³ tetrahedra, orders N = 1..9 (the
//! `--degrees` list), f32 and f64: the solver's stage with the autotuned parameters (fused
//! or four kernels, whichever won: µs, DoF-updates/s, application GFLOP/s, GB/s, % of the
//! measured copy bandwidth for the bytes the stage must move), the fused kernel with the
//! tuned blocking, the same with the operators' placement flipped (shared memory or the
//! cache; `-` where it does not fit), and the four kernels one by one (volume, flux, lift, update) with the
//! default element blocking. Sizes aim at `1.2e8 · --scale` unknowns on a GPU (K ≥ 1M
//! elements for N ≤ 3) and `2e6 · --scale` on the CPU.
//!
//! `dg-accuracy`: the seed's cavity study (its Table 2): mode (1,1,0), T = 1, upwind flux,
//! meshes n = 2, 3, 4, 6, orders 2, 4, 6, 8, f32 and f64: L² errors and EOC.

use std::time::Instant;

use galerkin::dg::{cavity_mode, DgParams, Flux, Maxwell, TetMesh};
use galerkin::verify::random_vec;
use galerkin::{BackendTask, FullBackend, Precision, Result, Scalar, Vector};

use crate::timing::{copy_bandwidth, gbps, median};
use crate::Options;

struct DgSuite<'a> {
    options: &'a Options,
    accuracy: bool,
}

impl BackendTask for DgSuite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        for &p in &self.options.precisions {
            if !b.supports(p.dtype()) {
                continue;
            }
            match (p, self.accuracy) {
                (Precision::F32, false) => stage_rows::<B, f32>(&b, self.options)?,
                (Precision::F64, false) => stage_rows::<B, f64>(&b, self.options)?,
                (Precision::F32, true) => accuracy_rows::<B, f32>(&b)?,
                (Precision::F64, true) => accuracy_rows::<B, f64>(&b)?,
            }
        }
        Ok(())
    }
}

/// Cells per direction of the box with about `target` unknowns at `np` nodes per element.
fn box_size(np: usize, target: f64) -> usize {
    ((target / (36.0 * np as f64)).cbrt().round() as usize).max(1)
}

fn stage_rows<B: FullBackend, T: Scalar>(b: &B, options: &Options) -> Result<()> {
    let copy = copy_bandwidth::<B, T>(b)?;
    let cpu = b.info().kind == galerkin::BackendKind::Cpu;
    let target = if cpu { 2e6 } else { 1.2e8 } * options.scale;
    println!(
        "dg {} {}: copy {copy:.0} GB/s; fused stage = q read, res read + written, q_next \
         written, face values across, geometry",
        b.info(),
        T::DTYPE
    );
    println!(
        "{:>1} {:>8} {:>10} {:>17} | {:>9} {:>7} {:>7} {:>6} {:>6} | {:>8} {:>8} | {:>8} {:>8} {:>8} {:>8} {:>9} | {:>6}",
        "N", "K", "dofs", "tuned", "stage µs", "GDoF/s", "GFLOP/s", "GB/s", "%roof", "fused µs", "flip µs", "vol µs",
        "flux µs", "lift µs", "upd µs", "4-kern µs", "setup"
    );
    for &order in &options.hdg_degrees {
        if !(1..=9).contains(&order) {
            continue;
        }
        let np = (order + 1) * (order + 2) * (order + 3) / 6;
        let n = box_size(np, target);
        let t0 = Instant::now();
        let mesh = TetMesh::unit_cube(n, 0.05, 1)?.renumbered(256)?;
        let mut dg = Maxwell::<B, T>::new(b, &mesh, order, Flux::Upwind)?;
        dg.set_fields(|x| cavity_mode([1, 2, 3], 0.0, x))?;
        let tuned = dg.autotune()?;
        let setup = t0.elapsed().as_secs_f64();
        let dofs = dg.dofs();
        let cost = dg.stage_cost();
        let q = dg.state().try_clone()?;
        let r = random_vec::<T>(dofs, 3);
        let mut res = Vector::from_slice(b, &r)?;
        let mut next = Vector::zeros(b, dofs)?;
        // The solver's stage with the tuned parameters: a step of dt = 0 (five stages; the
        // fields do not change).
        let t_stage = median(b, options.reps, || dg.step(0.0))? / 5;
        let s = t_stage.as_secs_f64();
        // The fused kernel with the tuned blocking, whichever path won.
        // a = 1, b = 0, dt = 0: the timed stage leaves every value as it was.
        let coef = [1.0, 0.0, 0.0];
        let t_fused = median(b, options.reps, || {
            dg.fused_stage(coef, &q, &mut res, &mut next)
        })?;
        let flipped = DgParams {
            fused: true,
            shared_operators: !tuned.shared_operators,
            ..tuned
        };
        let t_flip = match dg.set_params(flipped) {
            Ok(()) => Some(median(b, options.reps, || {
                dg.fused_stage(coef, &q, &mut res, &mut next)
            })?),
            Err(_) => None,
        };
        // The four kernels with the default blocking (the fused flag does not matter here).
        dg.set_params(DgParams {
            fused: false,
            ..b.dg_default_params::<T>(dg.shape())
        })?;
        let mut rhs = Vector::zeros(b, dofs)?;
        let mut flux = Vector::zeros(b, 6 * dg.shape().face_len())?;
        let t_vol = median(b, options.reps, || dg.volume(&q, &mut rhs))?;
        let t_flux = median(b, options.reps, || dg.surface_flux(&q, &mut flux))?;
        let t_lift = median(b, options.reps, || dg.lift(&flux, &mut rhs))?;
        let mut qq = q.try_clone()?;
        let t_upd = median(b, options.reps, || dg.update(coef, &rhs, &mut res, &mut qq))?;
        let us = |t: std::time::Duration| t.as_secs_f64() * 1e6;
        let sum = us(t_vol) + us(t_flux) + us(t_lift) + us(t_upd);
        let bw = gbps(cost.bytes, t_stage);
        println!(
            "{:>1} {:>8} {:>10} {:>17} | {:>9.1} {:>7.2} {:>7.0} {:>6.0} {:>6.1} | {:>8.1} {:>8} | {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>9.1} | {:>5.1}s",
            order,
            dg.shape().elements,
            dofs,
            format!(
                "{}x{}{}{}",
                tuned.elements_per_cube,
                tuned.elements_per_unit,
                if tuned.fused { " fused" } else { " 4-kern" },
                if tuned.shared_operators { " smem" } else { "" }
            ),
            s * 1e6,
            dofs as f64 / s / 1e9,
            cost.flops / s / 1e9,
            bw,
            100.0 * bw / copy,
            us(t_fused),
            t_flip.map_or("-".into(), |t| format!("{:.1}", us(t))),
            us(t_vol),
            us(t_flux),
            us(t_lift),
            us(t_upd),
            sum,
            setup
        );
    }
    Ok(())
}

fn accuracy_rows<B: FullBackend, T: Scalar>(b: &B) -> Result<()> {
    println!(
        "dg-accuracy {} {}: cavity mode (1,1,0), T = 1, upwind, cfl 0.5",
        b.info(),
        T::DTYPE
    );
    println!(
        "{:>2} {:>4} {:>6} {:>12} {:>6}",
        "N", "n", "K", "L2 error", "EOC"
    );
    for order in [2, 4, 6, 8] {
        let mut last: Option<(f64, f64)> = None;
        for n in [2, 3, 4, 6] {
            let mesh = TetMesh::unit_cube(n, 0.0, 1)?;
            let mut dg = Maxwell::<B, T>::new(b, &mesh, order, Flux::Upwind)?;
            dg.set_fields(|x| cavity_mode([1, 1, 0], 0.0, x))?;
            let t = 1.0;
            let steps = (t / dg.stable_dt(0.5)).ceil() as usize;
            dg.run(steps, t / steps as f64, |_, _| Ok(()))?;
            let err = dg.l2_error(|x| cavity_mode([1, 1, 0], t, x))?;
            let h = 1.0 / n as f64;
            let eoc = last.map(|(e, hl)| (e / err).ln() / (hl / h).ln());
            println!(
                "{:>2} {:>4} {:>6} {:>12.3e} {:>6}",
                order,
                n,
                dg.shape().elements,
                err,
                eoc.map_or("-".into(), |r| format!("{r:.2}"))
            );
            last = Some((err, h));
        }
    }
    Ok(())
}

/// Runs the `dg` suite.
pub fn run(options: &Options) {
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(
            kind,
            DgSuite {
                options,
                accuracy: false,
            },
        ) {
            eprintln!("dg {kind}: {e}");
        }
    }
}

/// Runs the `dg-accuracy` suite.
pub fn run_accuracy(options: &Options) {
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(
            kind,
            DgSuite {
                options,
                accuracy: true,
            },
        ) {
            eprintln!("dg-accuracy {kind}: {e}");
        }
    }
}
