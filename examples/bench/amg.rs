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
    let rhs: Vec<f64> = galerkin::random::random_vec(host.nrows(), 7);
    let rhs = Vector::from_slice(b, &rhs)?;
    let mut z = Vector::zeros(b, host.nrows())?;
    amg.precondition(&rhs, &mut z)?;
    b.synchronize()?;
    let cycles = 10;
    let start = std::time::Instant::now();
    for _ in 0..cycles {
        amg.precondition(&rhs, &mut z)?;
    }
    b.synchronize()?;
    let plain = start.elapsed().as_secs_f64() * 1e3 / cycles as f64;
    println!(
        "  {spec}: one cycle {plain:.3} ms unprofiled (finest level {choice}, {} levels)",
        amg.info().levels.len()
    );
    print_cycle_profile(&amg, &rhs)
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
