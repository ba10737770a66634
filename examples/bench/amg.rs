//! The AMG setup's sparse operations, level by level, on the hierarchy's own matrices:
//! strength, MIS-2 aggregation, the tentative and smoothed prolongators, the transpose and
//! the two Galerkin SpGEMMs `A·P` and `Pᵀ·(A P)`, each the median of `--reps` (at most 5)
//! calls. `--dump DIR` writes every level's `A` and `P` as raw CSR arrays with our times,
//! for `benches/gpu/spgemm_cusparse.py` (cuSPARSE's SpGEMM through CuPy, same products).
//! Then the cycle of the library's default hierarchy of each matrix, its finest level the
//! format `solve` picks: ms per cycle, unprofiled and per level and operation.

use std::io::Write;
use std::time::Duration;

use galerkin::solver::{Amg, AmgParams, Preconditioner};
use galerkin::sparse::algebra::{
    aggregate, smooth_prolongator, spgemm, strength, tentative, transpose, NearNullSpace,
};
use galerkin::sparse::{Csr, SparseMatrix};
use galerkin::{Backend, BackendTask, Cpu, FullBackend, Result, Scalar, Vector};

use crate::timing::median;
use crate::Options;

/// The strength threshold and the coarsest size of the library's AMG defaults.
fn defaults() -> (f64, usize) {
    let d = galerkin::solver::AmgParams::default();
    (d.theta, d.max_coarse)
}

/// Writes `m` as `DIR/NAME.{row_ptr,col_idx,values,txt}` (the SpMV suite's layout).
fn dump(dir: &str, name: &str, m: &Csr<Cpu, f64>, extra: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = |ext: &str| format!("{dir}/{name}.{ext}");
    std::fs::write(
        path("row_ptr"),
        bytemuck::cast_slice::<u32, u8>(m.row_ptr()),
    )?;
    std::fs::write(
        path("col_idx"),
        bytemuck::cast_slice::<u32, u8>(m.col_idx()),
    )?;
    std::fs::write(path("values"), bytemuck::cast_slice::<f64, u8>(m.values()))?;
    let mut f = std::fs::File::create(path("txt"))?;
    writeln!(f, "{} {} {} {extra}", m.nrows(), m.ncols(), m.nnz())
}

struct Suite<'a> {
    options: &'a Options,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn one<B: FullBackend>(b: &B, spec: &str, options: &Options) -> Result<()> {
    let (theta, max_coarse) = defaults();
    let reps = options.reps.min(5);
    let host = crate::common::load(spec)?;
    let mut a = host.to_backend(b)?;
    let mut near = NearNullSpace::constants(b, a.nrows())?;
    for level in 0..8 {
        if a.nrows() <= max_coarse {
            break;
        }
        let t_strength = median(b, reps, || strength(&a, theta).map(drop))?;
        let s = strength(&a, theta)?;
        let t_agg = median(b, reps, || aggregate(&s).map(drop))?;
        let agg = aggregate(&s)?;
        drop(s);
        let t_tent = median(b, reps, || tentative(&agg, &near).map(drop))?;
        let (t, coarse_near) = tentative(&agg, &near)?;
        drop(agg);
        // ω only scales values: 4/3 over a bound of 2 for ρ(D⁻¹A), as for the Laplacian.
        let omega = 2.0 / 3.0;
        let t_smooth = median(b, reps, || smooth_prolongator(&a, &t, omega).map(drop))?;
        let p = smooth_prolongator(&a, &t, omega)?;
        drop(t);
        let t_tr = median(b, reps, || transpose(&p).map(drop))?;
        let r = transpose(&p)?;
        let t_ap = median(b, reps, || spgemm(&a, &p).map(drop))?;
        let ap = spgemm(&a, &p)?;
        let t_rap = median(b, reps, || spgemm(&r, &ap).map(drop))?;
        let c = spgemm(&r, &ap)?;
        println!(
            "{:<5} {:<14} {:>2} {:>9} {:>10} {:>9} {:>10} {:>10} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
            b.kind().name(),
            spec,
            level,
            a.nrows(),
            a.nnz(),
            p.nnz(),
            ap.nnz(),
            c.nnz(),
            ms(t_strength),
            ms(t_agg),
            ms(t_tent),
            ms(t_smooth),
            ms(t_tr),
            ms(t_ap),
            ms(t_rap),
        );
        spmv_formats(b, &a, level, reps)?;
        if let Some(dir) = &options.dump {
            if b.kind() == galerkin::BackendKind::Cuda || options.backends.len() == 1 {
                let name = format!("{}_L{level}", spec.replace([':', '/', '.'], "_"));
                let ours = format!(
                    "{} {} {:.4} {:.4} {:.4}",
                    ap.nnz(),
                    c.nnz(),
                    ms(t_tr),
                    ms(t_ap),
                    ms(t_rap)
                );
                let (a_host, p_host) = (a.to_host()?, p.to_host()?);
                let written = dump(dir, &format!("{name}_A"), &a_host, "")
                    .and_then(|()| dump(dir, &format!("{name}_P"), &p_host, &ours));
                if let Err(e) = written {
                    eprintln!("[bench] dump {name}: {e}");
                }
            }
        }
        drop((r, ap, p));
        a = c;
        near = coarse_near;
    }
    drop((a, near));
    // The cycle of the default hierarchy, the finest level in the format `solve` picks.
    let (op, choice) = SparseMatrix::<B, f64>::auto(b, &host)?;
    let amg = Amg::<B, f64>::with_operator(b, &host, &op, &AmgParams::default())?;
    let (plain, rhs) = cycle_ms(b, &amg)?;
    println!(
        "  {spec}: one cycle {plain:.3} ms unprofiled (finest level {choice}, {} levels)",
        amg.info().levels.len()
    );
    print_cycle_profile(&amg, &rhs)?;
    drop(amg);
    // The same hierarchy in f32 (`solve --amg-precision f32`: the finest level rounded from
    // the solver's operator, in its format).
    let fine = op.to_precision::<f32>()?;
    let amg = Amg::<B, f32>::with_owned_operator(b, &host, Box::new(fine), &AmgParams::default())?;
    let (plain32, rhs) = cycle_ms(b, &amg)?;
    println!(
        "  {spec}: f32 hierarchy, one cycle {plain32:.3} ms unprofiled ({:.2}x faster than f64)",
        plain / plain32
    );
    print_cycle_profile(&amg, &rhs)?;
    outer_iteration(b, &op, amg, plain32, reps)
}

/// ms per cycle of `amg` (ten back to back after one untimed) on a random right-hand side,
/// which is returned for the profile.
fn cycle_ms<B: FullBackend, T: Scalar>(b: &B, amg: &Amg<'_, B, T>) -> Result<(f64, Vector<B, T>)> {
    let n = amg.size();
    let rhs = Vector::from_slice(b, &galerkin::random::random_vec::<T>(n, 7))?;
    let mut z = Vector::zeros(b, n)?;
    amg.precondition(&rhs, &mut z)?;
    b.synchronize()?;
    let cycles = 10;
    let start = std::time::Instant::now();
    for _ in 0..cycles {
        amg.precondition(&rhs, &mut z)?;
    }
    b.synchronize()?;
    Ok((start.elapsed().as_secs_f64() * 1e3 / cycles as f64, rhs))
}

/// Where the time of the f64 flexible PCG around the f32 hierarchy (`solve --amg-precision
/// f32`) goes outside the cycle: each of its vector operations on random data (µs, median),
/// then the solve itself to 1e-8 (b = A·1, x = 0) against its cycles at `cycle_ms` each.
fn outer_iteration<B: FullBackend>(
    b: &B,
    op: &SparseMatrix<B, f64>,
    amg: Amg<'_, B, f32>,
    cycle_ms: f64,
    reps: usize,
) -> Result<()> {
    use galerkin::solver::LinearOperator;
    use galerkin::solver::{MixedPrecision, SolverParams, Stopping};
    use galerkin::vector::{cg_scalars, cg_update_device, pcg_flexible_low_device, xpay_device};
    let n = op.nrows();
    let random = |seed| Vector::from_slice(b, &galerkin::random::random_vec::<f64>(n, seed));
    let (p, mut q, mut x, mut r) = (random(1)?, random(2)?, random(3)?, random(4)?);
    let mut p = p;
    let random32 = |seed| Vector::from_slice(b, &galerkin::random::random_vec::<f32>(n, seed));
    let (mut low, old) = (random32(5)?, random32(6)?);
    let mut s = Vector::from_slice(b, &[1.0, 2.0, 0.5, 1.0, 1.5, 1.25, 0.75])?;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    // The operations of one iteration of the flexible PCG around MixedPrecision, as the
    // solve runs them (the cycle aside).
    let t_apply = median(b, reps, || {
        op.apply_dot_device(&p, &mut q, &mut s, cg_scalars::PQ)
    })?;
    let t_update = median(b, reps, || cg_update_device(&mut s, &p, &q, &mut x, &mut r))?;
    let t_down = median(b, reps, || low.convert_from(&r))?;
    let t_step = median(b, reps, || pcg_flexible_low_device(&mut s, &low, &old, &r))?;
    let t_xpay = median(b, reps, || xpay_device(&s, &low, &mut p))?;
    let sum = t_apply + t_update + t_down + t_step + t_xpay;
    println!(
        "  outer f64 iteration, µs: q = Ap & p·q {:.1}, update {:.1}, f64->f32 {:.1}, flexible step (r·z_old, r·z from the f32 z) {:.1}, xpay from the f32 z {:.1}: {:.1}",
        us(t_apply), us(t_update), us(t_down), us(t_step), us(t_xpay), us(sum)
    );
    let ones = Vector::from_slice(b, &vec![1.0; n])?;
    let mut rhs = Vector::zeros(b, n)?;
    op.apply(&ones, &mut rhs)?;
    let m = MixedPrecision::new(amg);
    let mut runs = Vec::new();
    for _ in 0..3 {
        let mut x = Vector::zeros(b, n)?;
        // When each residual reaches the host (ms from the start).
        let seen = std::cell::RefCell::new(Vec::new());
        let t0 = std::cell::Cell::new(std::time::Instant::now());
        let params = SolverParams {
            stop: Stopping::new(1e-8, 1000),
            flexible: true,
            monitor: galerkin::solver::Monitor::new(|_| {
                seen.borrow_mut()
                    .push(t0.get().elapsed().as_secs_f64() * 1e3);
                galerkin::solver::Control::Continue
            }),
            ..SolverParams::default()
        };
        b.synchronize()?;
        t0.set(std::time::Instant::now());
        let report = galerkin::solver::pcg(op, Some(&m), &rhs, &mut x, &params)?;
        b.synchronize()?;
        let total = t0.get().elapsed().as_secs_f64() * 1e3;
        drop(params);
        runs.push((total, report.iterations, seen.into_inner()));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (solve_ms, its, seen) = runs.swap_remove(1);
    if let (Some(first), Some(last)) = (seen.first(), seen.last()) {
        let steps: Vec<String> = seen
            .windows(2)
            .map(|w| format!("{:.2}", w[1] - w[0]))
            .collect();
        println!(
            "  residuals on the host at {first:.2} ms (the first), then every [{}] ms; the last at {last:.2}, the solve returned at {solve_ms:.2}",
            steps.join(" ")
        );
    }
    let outside = solve_ms - its as f64 * cycle_ms;
    println!(
        "  flexible PCG around the f32 hierarchy: {its} iterations, {solve_ms:.2} ms; {its} cycles {:.2} ms; the rest {outside:.2} ms = {:.1} µs an iteration (the operations above: {:.1})",
        its as f64 * cycle_ms,
        outside * 1e3 / its.max(1) as f64,
        us(sum)
    );
    Ok(())
}

/// The SpMV of level `level`'s operator `a` in CSR (the hierarchy's own) and in SELL-32
/// (σ = 1, and sorted in windows of 2048 rows), µs (median), with SELL's padding.
fn spmv_formats<B: FullBackend>(b: &B, a: &Csr<B, f64>, level: usize, reps: usize) -> Result<()> {
    use galerkin::sparse::{Format, FormatOptions, SellParams};
    let host = a.to_host()?;
    let x = Vector::from_slice(b, &galerkin::random::random_vec::<f64>(host.ncols(), 3))?;
    let mut y = Vector::zeros(b, host.nrows())?;
    let mut line = format!("  L{level} SpMV µs:");
    for (name, format, sell) in [
        ("csr", Format::Csr, None),
        (
            "sell32",
            Format::Sell,
            Some(SellParams {
                slice_height: 32,
                sigma: 1,
            }),
        ),
        (
            "sell32s",
            Format::Sell,
            Some(SellParams {
                slice_height: 32,
                sigma: 2048,
            }),
        ),
        (
            "sell8",
            Format::Sell,
            Some(SellParams {
                slice_height: 8,
                sigma: 1,
            }),
        ),
    ] {
        let options = FormatOptions {
            sell,
            ..FormatOptions::default()
        };
        match SparseMatrix::<B, f64>::from_csr(b, &host, format, &options) {
            Ok(m) => {
                let t = median(b, reps, || m.spmv(1.0, &x, 0.0, &mut y))?;
                let pad = m.storage_bytes() as f64 / (host.nnz() * 12 + host.nrows() * 4) as f64;
                line += &format!(" {name} {:.1} (bytes {pad:.2}x CSR)", t.as_secs_f64() * 1e6);
            }
            Err(e) => line += &format!(" {name} refused ({e})"),
        }
    }
    println!("{line}");
    Ok(())
}

/// Ten cycles of `amg` on `r`, timed per level and operation (between synchronisations),
/// printed in ms per cycle.
pub(crate) fn print_cycle_profile<B: Backend, T: Scalar>(
    amg: &Amg<'_, B, T>,
    r: &Vector<B, T>,
) -> Result<()> {
    let cycles = 10;
    let times = amg.profile(r, cycles)?;
    let info = amg.info();
    let ms = |s: f64| s * 1e3 / cycles as f64;
    println!("  AMG cycle profile (ms per cycle; every operation timed between synchronisations):");
    println!(
        "  {:>2} {:>9} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "l", "rows", "nnz", "smooth", "resid", "restrict", "prolong", "coarse", "total"
    );
    for (l, t) in times.iter().enumerate() {
        let lv = info.levels[l];
        println!(
            "  {l:>2} {:>9} {:>10} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
            lv.rows,
            lv.nnz,
            ms(t.smooth),
            ms(t.residual),
            ms(t.restrict),
            ms(t.prolong),
            ms(t.coarse),
            ms(t.total())
        );
    }
    Ok(())
}

impl BackendTask for Suite<'_> {
    type Output = ();
    fn run<B: FullBackend>(self, b: B) -> Result<()> {
        println!(
            "\n# {}  (AMG setup suite: ms per operation, median)",
            b.info()
        );
        println!(
            "{:<5} {:<14} {:>2} {:>9} {:>10} {:>9} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "back", "matrix", "l", "rows", "nnz(A)", "nnz(P)", "nnz(AP)", "nnz(RAP)", "strength",
            "aggr", "tent", "smoothP", "Pᵀ", "A·P", "Pᵀ·AP"
        );
        for spec in &self.options.amg_matrices {
            if let Err(e) = one(&b, spec, self.options) {
                println!("{:<5} {spec}: error: {e}", b.kind().name());
            }
        }
        Ok(())
    }
}

pub fn run(options: &Options) {
    for &kind in &options.backends {
        if let Err(e) = galerkin::with_backend(kind, Suite { options }) {
            println!("\n# {kind}: {e}");
        }
    }
}
