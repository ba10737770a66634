//! GPU-capable benchmarks: time operations on every available backend and precision with
//! device-side synchronisation, warm-up, and the median of many runs; print bandwidth and
//! the ratio to the measured copy bandwidth of the same device.
//!
//! ```text
//! cargo run --release --example bench -- [--backend cpu|wgpu|cuda]... [--suite vector|spmv|cg|batched|layout]...
//!     [--log2 26,27,28] [--reps 30] [--precision f32|f64]...
//!     [--spmv-precision f64|mixed|f32]... [--scale 1.0] [--only NAME-PREFIX]... [--dump DIR]
//! ```
//! `--scale` multiplies the sizes of the SpMV, CG and batched cases (1 = the sizes of the
//! issue); for `batched`, `--log2` lists the matrix sizes n instead;
//! `--only` keeps the SpMV cases whose name starts with a prefix; `--dump DIR` writes each
//! SpMV matrix as raw CSR arrays for `benches/gpu/spmv_cusparse.py`. `layout` (CUDA only)
//! compares the batched matrix-after-matrix layout with an interleaved one.

mod batched;
mod cg;
#[cfg(feature = "cuda")]
mod layout;
mod spmv;
mod timing;
mod vector;

use galerkin::{BackendKind, Precision};

/// Command-line options shared by the suites.
pub struct Options {
    pub backends: Vec<BackendKind>,
    pub precisions: Vec<Precision>,
    pub log2_sizes: Vec<u32>,
    pub reps: usize,
    pub suites: Vec<String>,
    pub spmv_precisions: Vec<String>,
    pub scale: f64,
    pub only: Vec<String>,
    pub dump: Option<String>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        backends: Vec::new(),
        precisions: Vec::new(),
        log2_sizes: Vec::new(),
        reps: 30,
        suites: Vec::new(),
        spmv_precisions: Vec::new(),
        scale: 1.0,
        only: Vec::new(),
        dump: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--backend" => o
                .backends
                .push(value()?.parse().map_err(|e| format!("{e}"))?),
            "--precision" => o.precisions.push(match value()?.as_str() {
                "f32" => Precision::F32,
                "f64" => Precision::F64,
                p => return Err(format!("unknown precision {p}: expected f32 or f64")),
            }),
            "--log2" => {
                for s in value()?.split(',') {
                    o.log2_sizes
                        .push(s.trim().parse().map_err(|e| format!("--log2 {s}: {e}"))?);
                }
            }
            "--reps" => o.reps = value()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--suite" => o.suites.push(value()?),
            "--spmv-precision" => o.spmv_precisions.push(value()?),
            "--scale" => o.scale = value()?.parse().map_err(|e| format!("--scale: {e}"))?,
            "--only" => o.only.push(value()?),
            "--dump" => o.dump = Some(value()?),
            "-h" | "--help" => {
                println!("see the header of examples/bench/main.rs");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.backends.is_empty() {
        o.backends = BackendKind::ALL
            .into_iter()
            .filter(|k| k.is_compiled())
            .collect();
    }
    if o.precisions.is_empty() {
        o.precisions = vec![Precision::F32, Precision::F64];
    }
    if o.suites.is_empty() {
        o.suites = vec!["vector".into()];
    }
    if o.spmv_precisions.is_empty() {
        o.spmv_precisions = vec!["f64".into(), "mixed".into(), "f32".into()];
    }
    o.reps = o.reps.max(1);
    Ok(o)
}

fn main() {
    let options = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(2);
        }
    };
    for suite in &options.suites {
        match suite.as_str() {
            "vector" => vector::run(&options),
            "spmv" => spmv::run(&options),
            "cg" => cg::run(&options),
            "batched" => batched::run(&options),
            #[cfg(feature = "cuda")]
            "layout" => layout::run(&options),
            #[cfg(not(feature = "cuda"))]
            "layout" => eprintln!("bench: the layout suite needs --features cuda"),
            other => eprintln!("bench: unknown suite {other}"),
        }
    }
}
