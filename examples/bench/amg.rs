//! The AMG setup's sparse operations, level by level, on the hierarchy's own matrices:
//! strength, MIS-2 aggregation, the tentative and smoothed prolongators, the transpose and
//! the two Galerkin SpGEMMs `A·P` and `Pᵀ·(A P)`, each the median of `--reps` (at most 5)
//! calls. `--dump DIR` writes every level's `A` and `P` as raw CSR arrays with our times,
//! for `benches/gpu/spgemm_cusparse.py` (cuSPARSE's SpGEMM through CuPy, same products).

use std::io::Write;
use std::time::Duration;

use galerkin::sparse::algebra::{
    aggregate, smooth_prolongator, spgemm, strength, tentative, transpose, NearNullSpace,
};
use galerkin::sparse::Csr;
use galerkin::{BackendTask, Cpu, FullBackend, Result};

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
