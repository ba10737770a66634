//! GPU-capable benchmarks: time operations on every available backend and precision with
//! device-side synchronisation, warm-up, and the median of many runs; print bandwidth and
//! the ratio to the measured copy bandwidth of the same device.
//!
//! ```text
//! cargo run --release --example bench -- --help
//! cargo run --release --features cuda,wgpu --example bench -- --backend cuda --suite spmv
//! ```
//! `--scale` multiplies the sizes of the SpMV, CG and batched cases (1 = the sizes of the
//! issue); for `batched`, `--log2` lists the matrix sizes n instead;
//! `--only` keeps the SpMV cases whose name starts with a prefix; `--dump DIR` writes each
//! SpMV matrix as raw CSR arrays for `benches/gpu/spmv_cusparse.py`. `layout` (CUDA and
//! wgpu) compares the batched matrix-after-matrix layout with an interleaved one, probes
//! how much shared memory a multiprocessor gives the cubes, and where a short kernel's time
//! goes (wall time per call against device time, `--only dispatch`).

#[path = "../common/mod.rs"]
mod common;

mod amg;
mod batched;
mod cg;
mod dg;
#[cfg(any(feature = "cuda", feature = "wgpu"))]
mod dispatch;
mod hdg;
mod layout;
mod spmv;
mod tensor;
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
    pub hdg_sizes: Vec<usize>,
    pub hdg_degrees: Vec<usize>,
    pub hdg_chebyshev: bool,
    pub hdg_amg: bool,
    pub hdg_rtol: Option<f64>,
    pub hdg_spmv: bool,
    pub mg_gmres: bool,
    pub tile_sweep: bool,
    pub amg_matrices: Vec<String>,
}

/// A benchmark suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SuiteArg {
    /// fill, copy, axpy, dot, nrm2, fused CG update (sizes from --log2)
    Vector,
    /// SpMV of every format on the large matrices
    Spmv,
    /// CG and PCG per iteration and to 1e-8
    Cg,
    /// batched GEMM, LU, Cholesky, inverse (sides from --log2, default 8..64)
    Batched,
    /// batched Cholesky, matrix after matrix against interleaved, and a shared-memory
    /// occupancy probe (CUDA and wgpu)
    Layout,
    /// the HDG pipeline stage by stage (--hdg-n, --degrees; precisions from --spmv-precision)
    Hdg,
    /// matrix-free Q_k Laplace/mass operators and the patch-smoothing step, 3D, k = 1..8
    /// (precisions from --precision; sizes times --scale)
    Tensor,
    /// the seed's 3D Poisson solves (k = 1, 3, 7 among --degrees): GMRES + V-cycle in f32
    /// and f64 (levels shifted by log8 of --scale)
    Mg,
    /// nodal DG Maxwell: one RK stage (fused, autotuned) and its four kernels, N among
    /// --degrees, f32/f64 (sizes times --scale; K ≥ 1M elements for N ≤ 3 on a GPU)
    Dg,
    /// nodal DG Maxwell: the cavity convergence study (N = 2, 4, 6, 8; n = 2, 3, 4, 6)
    DgAccuracy,
    /// the AMG setup's sparse operations level by level (strength, aggregation,
    /// prolongators, transpose, the Galerkin SpGEMMs) on --amg-matrix
    Amg,
}

/// `--precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PrecisionArg {
    F32,
    F64,
}

/// `--spmv-precision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SpmvPrecisionArg {
    /// f64 values and vectors
    F64,
    /// f32 values, f64 vectors
    Mixed,
    /// f32 values and vectors
    F32,
}

/// GPU-capable benchmarks: device-side timing (synchronise, warm up, median of many runs),
/// bandwidth against the measured copy bandwidth of the same device.
#[derive(clap::Parser, Debug)]
#[command(name = "bench", version)]
struct Cli {
    /// Backends to run (repeat the flag; default: every backend compiled in).
    #[arg(long = "backend", value_enum)]
    backends: Vec<common::BackendArg>,
    /// Suites to run (repeat the flag).
    #[arg(long = "suite", value_enum, default_values_t = [SuiteArg::Vector])]
    suites: Vec<SuiteArg>,
    /// Vector suite: log2 of the lengths (at most 40); batched suite: the matrix sides
    /// (comma-separated).
    #[arg(long = "log2", value_delimiter = ',')]
    log2_sizes: Vec<u32>,
    /// Samples per case (each the mean of a batch of back-to-back calls of at least 5 ms).
    #[arg(long, default_value_t = 30)]
    reps: usize,
    /// Precisions of the vector and batched suites (repeat the flag; default f32 and f64).
    #[arg(long = "precision", value_enum)]
    precisions: Vec<PrecisionArg>,
    /// Precisions of the SpMV and CG suites (repeat; default f64, mixed, f32).
    #[arg(long = "spmv-precision", value_enum)]
    spmv_precisions: Vec<SpmvPrecisionArg>,
    /// Multiplies the sizes of the SpMV, CG and batched cases (1 = the sizes of the issues;
    /// a finite number in (0, 1e6]).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Keep only the SpMV and CG cases whose name starts with this (repeat the flag); for
    /// `batched`, the operations: gemm, copy, lu (with `lu solve`), cholesky (with `cholesky
    /// solve`), inverse; for `layout`, the parts:
    /// cholesky, occupancy, dispatch.
    #[arg(long)]
    only: Vec<String>,
    /// Write each SpMV/CG matrix here as raw CSR arrays, for the vendor scripts in
    /// `benches/gpu` (cuSPARSE through CuPy).
    #[arg(long)]
    dump: Option<String>,
    /// HDG suite: n of the n x n meshes of 2 n² triangles (comma-separated; 80 is the
    /// seed's mesh, 708 gives 1M triangles).
    #[arg(long = "hdg-n", value_delimiter = ',', default_values_t = [80])]
    hdg_sizes: Vec<usize>,
    /// HDG suite: the degrees P (comma-separated, 1..=9); mg suite: the seed's k among them;
    /// dg suite: the orders N; tensor suite: the degrees k among 1..=8.
    #[arg(long = "degrees", value_delimiter = ',', default_values_t = [1, 2, 3, 4, 5, 6, 7, 8, 9])]
    hdg_degrees: Vec<usize>,
    /// HDG suite: precondition PCG with Chebyshev(4) over block-Jacobi.
    #[arg(long)]
    hdg_chebyshev: bool,
    /// HDG suite: precondition PCG with smoothed-aggregation AMG (its setup is in the solve
    /// stage).
    #[arg(long, conflicts_with = "hdg_chebyshev")]
    hdg_amg: bool,
    /// HDG suite: relative tolerance of the trace solve (default 1e-10 in f64, 1e-5 in f32).
    #[arg(long)]
    hdg_rtol: Option<f64>,
    /// HDG suite: also time the trace SpMV (block-ELL against CSR; --dump writes K).
    #[arg(long)]
    hdg_spmv: bool,
    /// mg suite: (F)GMRES around the V-cycle (restart 8; 3 above 300M unknowns) instead of
    /// flexible PCG around the symmetric V-cycle (the default: the SPD case, whose few
    /// vectors let the seed's sizes fit one GPU).
    #[arg(long)]
    mg_gmres: bool,
    /// Tensor suite: also time the one-pass Laplace kernel at tilings around the default
    /// (fewer cells per tile edge, other z chunks), one line per tiling.
    #[arg(long)]
    tile_sweep: bool,
    /// amg suite: the matrices (comma-separated; generators as in `solve --matrix`:
    /// poisson7:N, fvm-tet:N, hdg:P:N, ..., or Matrix Market files).
    #[arg(long = "amg-matrix", value_delimiter = ',', default_values_t = ["poisson7:128".to_string(), "fvm-tet:60".to_string()])]
    amg_matrices: Vec<String>,
}

/// The largest `--log2` of the vector suite: 2^40 elements are 8 TB of f64 already.
const MAX_LOG2: u32 = 40;

/// The largest `--scale`: 10^6 times the issues' sizes (about a petabyte for the SpMV cases).
const MAX_SCALE: f64 = 1e6;

/// Prints a bad command-line value and exits with status 2 (bad usage).
fn usage_error(message: &str) -> ! {
    eprintln!("bench: error: {message}");
    std::process::exit(2);
}

/// Checks the values clap cannot: `--scale` finite in (0, [`MAX_SCALE`]], `--log2` at most
/// [`MAX_LOG2`] for the vector suite and at least 1 for the batched suite (matrix sides).
fn check(cli: &Cli) {
    if !(cli.scale.is_finite() && cli.scale > 0.0 && cli.scale <= MAX_SCALE) {
        usage_error(&format!(
            "invalid value {} for --scale: must be a finite number in (0, {MAX_SCALE:e}]",
            cli.scale
        ));
    }
    if cli.suites.contains(&SuiteArg::Vector) {
        if let Some(&bad) = cli.log2_sizes.iter().find(|&&k| k > MAX_LOG2) {
            usage_error(&format!(
                "invalid value {bad} for --log2: the vector suite takes log2 of the lengths, \
                 at most {MAX_LOG2}"
            ));
        }
    }
    if cli.suites.contains(&SuiteArg::Batched) && cli.log2_sizes.contains(&0) {
        usage_error("invalid value 0 for --log2: the batched suite takes matrix sides, at least 1");
    }
}

fn parse() -> Options {
    let cli = <Cli as clap::Parser>::parse();
    check(&cli);
    let backends = if cli.backends.is_empty() {
        BackendKind::ALL
            .into_iter()
            .filter(|k| k.is_compiled())
            .collect()
    } else {
        cli.backends.iter().map(|b| b.kind()).collect()
    };
    let precisions = if cli.precisions.is_empty() {
        vec![Precision::F32, Precision::F64]
    } else {
        cli.precisions
            .iter()
            .map(|p| match p {
                PrecisionArg::F32 => Precision::F32,
                PrecisionArg::F64 => Precision::F64,
            })
            .collect()
    };
    let spmv_precisions = if cli.spmv_precisions.is_empty() {
        vec!["f64".into(), "mixed".into(), "f32".into()]
    } else {
        cli.spmv_precisions
            .iter()
            .map(|p| {
                match p {
                    SpmvPrecisionArg::F64 => "f64",
                    SpmvPrecisionArg::Mixed => "mixed",
                    SpmvPrecisionArg::F32 => "f32",
                }
                .to_string()
            })
            .collect()
    };
    let suites = cli
        .suites
        .iter()
        .map(|s| {
            match s {
                SuiteArg::Vector => "vector",
                SuiteArg::Spmv => "spmv",
                SuiteArg::Cg => "cg",
                SuiteArg::Batched => "batched",
                SuiteArg::Layout => "layout",
                SuiteArg::Hdg => "hdg",
                SuiteArg::Tensor => "tensor",
                SuiteArg::Mg => "mg",
                SuiteArg::Dg => "dg",
                SuiteArg::DgAccuracy => "dg-accuracy",
                SuiteArg::Amg => "amg",
            }
            .to_string()
        })
        .collect();
    Options {
        backends,
        precisions,
        log2_sizes: cli.log2_sizes,
        reps: cli.reps.max(1),
        suites,
        spmv_precisions,
        scale: cli.scale,
        only: cli.only,
        dump: cli.dump,
        hdg_sizes: cli.hdg_sizes,
        hdg_degrees: cli.hdg_degrees,
        hdg_chebyshev: cli.hdg_chebyshev,
        hdg_amg: cli.hdg_amg,
        hdg_rtol: cli.hdg_rtol,
        hdg_spmv: cli.hdg_spmv,
        mg_gmres: cli.mg_gmres,
        tile_sweep: cli.tile_sweep,
        amg_matrices: cli.amg_matrices,
    }
}

fn main() {
    let options = parse();
    for suite in &options.suites {
        match suite.as_str() {
            "vector" => vector::run(&options),
            "spmv" => spmv::run(&options),
            "cg" => cg::run(&options),
            "batched" => batched::run(&options),
            "hdg" => hdg::run(&options),
            "tensor" => tensor::run(&options),
            "mg" => tensor::run_mg(&options),
            "dg" => dg::run(&options),
            "dg-accuracy" => dg::run_accuracy(&options),
            "amg" => amg::run(&options),
            #[cfg(any(feature = "cuda", feature = "wgpu"))]
            "layout" => layout::run(&options),
            #[cfg(not(any(feature = "cuda", feature = "wgpu")))]
            "layout" => eprintln!("bench: the layout suite needs --features cuda or wgpu"),
            other => eprintln!("bench: unknown suite {other}"),
        }
    }
}
