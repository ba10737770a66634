//! Shared by the command-line examples: matrices from files or generators, vectors from
//! plain-text files, the common command-line values.
// Each example uses a part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use galerkin::sparse::Csr;
use galerkin::{Cpu, Error, Result};

/// Whether `--json` is on: the one JSON object goes to stdout, the text report to stderr.
static JSON: AtomicBool = AtomicBool::new(false);

/// Sends the text report to stderr from now on (`--json`: stdout holds only the JSON object).
pub fn json_mode(on: bool) {
    JSON.store(on, Ordering::Relaxed);
}

/// Whether the text report goes to stderr.
pub fn json_on() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// A line of the text report: on stdout, or on stderr under `--json`.
#[allow(unused_macros)]
macro_rules! say {
    ($($arg:tt)*) => {
        if $crate::common::json_on() {
            eprintln!($($arg)*)
        } else {
            println!($($arg)*)
        }
    };
}
#[allow(unused_imports)]
pub(crate) use say;

/// The exit statuses every example documents in its `--help`.
pub const EXIT_HELP: &str = "Exit status: 0 a meaningful answer (converged to the tolerance, \
checked on the system as given), 1 an error of the device or the library, 2 bad usage or \
input (arguments, files, sizes beyond the memory), 3 ran but did not converge (the reason is \
printed).";

/// Whether this process was started by an MPI launcher (Open MPI, MPICH, PMIx).
#[allow(dead_code)] // not every example runs under mpirun
pub fn under_mpirun() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// The exit status of an error: 2 for bad usage or input (the user can fix it), 1 for a
/// failure of the device or the library ([`Error::is_bad_input`]; under mpirun an
/// [`Error::Rank`] keeps the class of the failing rank's error, so every rank exits alike).
pub fn exit_code(e: &Error) -> std::process::ExitCode {
    if e.is_bad_input() {
        std::process::ExitCode::from(2)
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// Checks that a tolerance is in (0, 1).
pub fn check_tolerance(option: &'static str, tol: f64) -> Result<()> {
    if tol > 0.0 && tol < 1.0 {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op: "command line",
            name: option,
            reason: format!("{tol}: a relative tolerance must be in (0, 1)"),
        })
    }
}

/// Checks that a count is at most `max`.
pub fn check_at_most(option: &'static str, n: usize, max: usize) -> Result<()> {
    if n <= max {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op: "command line",
            name: option,
            reason: format!("{n}: must be at most {max}"),
        })
    }
}

/// Checks that a count is at least 1.
pub fn check_positive(option: &'static str, n: usize) -> Result<()> {
    if n >= 1 {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op: "command line",
            name: option,
            reason: "must be at least 1".into(),
        })
    }
}

/// The generators `load` understands, for help texts.
pub const GENERATORS: &str = "poisson7:N, poisson27:N (3D, N^3 rows), poisson2d:N, fvm-tet:N (two-point-flux \
FVM on 6 N^3 perturbed tetrahedra), fvm-dual:N (its polyhedral dual, (N+1)^3 rows), hdg:P:N (HDG-like \
trace matrix, degree P), dg:B:N (7-block DG-like matrix, block size B, N^3 elements), random:N";

/// The generators, as the `--help` of the examples lists them.
pub const GENERATORS_HELP: &str = "Matrix generators (--matrix NAME:ARGS):
  poisson7:N, poisson27:N   3D Poisson, 7- or 27-point, N^3 rows
  poisson2d:N               2D Poisson, 5-point, N^2 rows
  fvm-tet:N                 two-point-flux FVM on 6 N^3 perturbed tetrahedra
  fvm-dual:N                the same on the polyhedral dual, (N+1)^3 rows
  hdg:P:N                   HDG-like trace matrix, degree P, N x N squares of triangles
  dg:B:N                    7-block DG-like matrix, block size B, N^3 elements
  random:N                  random pattern of awkward row lengths
Anything else is read as a Matrix Market file (.mtx or .mtx.gz).";

/// Loads a Matrix Market file or runs a generator. An empty system (a generator of size 0,
/// a file of 0 rows or columns) and extra `:` fields of a generator are refused.
pub fn load(spec: &str) -> Result<Csr<Cpu, f64>> {
    use galerkin::sparse::generate;
    let parts: Vec<&str> = spec.split(':').collect();
    let bad = |reason: String| Error::InvalidArgument {
        op: "--matrix",
        name: "generator",
        reason,
    };
    let num = |i: usize| -> Result<usize> {
        parts
            .get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(format!("generator `{spec}` needs a number in position {i}")))
    };
    // A size: at least 1 (0 gives an empty system, which has no answer to report).
    let size = |i: usize| -> Result<usize> {
        match num(i)? {
            0 => Err(bad(format!(
                "generator `{spec}`: the size in position {i} must be at least 1 (0 gives an \
                 empty system)"
            ))),
            n => Ok(n),
        }
    };
    let fields = match parts[0] {
        "poisson7" | "poisson27" | "poisson2d" | "fvm-tet" | "fvm-dual" | "random" => Some(2),
        "hdg" | "dg" => Some(3),
        _ => None,
    };
    if let Some(fields) = fields {
        if parts.len() > fields {
            return Err(bad(format!(
                "generator `{spec}` takes {} number(s) after `{}:`, found {} (`{}` is extra)",
                fields - 1,
                parts[0],
                parts.len() - 1,
                truncate(&parts[fields..].join(":"))
            )));
        }
    }
    match parts[0] {
        "poisson7" => generate::poisson3d_7pt(size(1)?),
        "poisson27" => generate::poisson3d_27pt(size(1)?),
        "poisson2d" => generate::poisson2d_5pt(size(1)?),
        "fvm-tet" => galerkin::fvm::tpfa_tets_structured(size(1)?, 0.15, 1),
        "fvm-dual" => galerkin::fvm::tpfa_dual_structured(size(1)?, 0.15, 1),
        // The degree P may be 0; the block size B is checked by the generator.
        "hdg" => Ok(generate::hdg_trace(num(1)?, size(2)?, size(2)?, 1)?.0),
        "dg" => Ok(generate::dg_7block(num(1)?, size(2)?, size(2)?, size(2)?, 1)?.0),
        "random" => {
            let n = size(1)?;
            galerkin::sparse::random::random_csr(
                &galerkin::sparse::random::RandomPattern::awkward(n, n),
                1,
            )
        }
        _ => {
            let a = galerkin::sparse::read_matrix_market(spec)?.to_csr()?;
            if a.nrows() == 0 || a.ncols() == 0 {
                return Err(Error::InvalidArgument {
                    op: "--matrix",
                    name: "file",
                    reason: format!(
                        "{spec}: the matrix is {} x {}: an empty system has no answer to report",
                        a.nrows(),
                        a.ncols()
                    ),
                });
            }
            // NaN or infinity (which the format can hold) makes every answer meaningless.
            a.check_finite().map_err(|e| Error::InvalidArgument {
                op: "--matrix",
                name: "file",
                reason: format!("{spec}: {e}"),
            })?;
            Ok(a)
        }
    }
}

/// At most 40 characters of `s`, for messages.
fn truncate(s: &str) -> String {
    if s.chars().count() <= 40 {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(40).collect::<String>())
    }
}

/// Reads one value per line (blank lines and `#`/`%` comments skipped).
pub fn read_vector(path: &str) -> Result<Vec<f64>> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })?;
    let mut values = Vec::new();
    let mut reader = std::io::BufReader::new(file);
    let mut buf = Vec::new();
    for i in 0.. {
        // An endless line must not be read into memory: a number needs far less than 1 KiB.
        match galerkin::limits::read_line(&mut reader, &mut buf, 1024) {
            Ok(0) => break,
            Ok(_) => {}
            Err(galerkin::limits::LineError::TooLong) => {
                return Err(Error::Parse {
                    path: path.into(),
                    line: i as u64 + 1,
                    message: "the line is longer than 1024 bytes: one number per line expected"
                        .into(),
                })
            }
            Err(galerkin::limits::LineError::Io(source)) => {
                return Err(Error::Io {
                    path: path.into(),
                    source,
                })
            }
        }
        let line = String::from_utf8_lossy(&buf);
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
            continue;
        }
        let value = t.parse::<f64>().map_err(|e| Error::Parse {
            path: path.into(),
            line: i as u64 + 1,
            message: format!("`{}` is not a number: {e}", truncate(t)),
        })?;
        if !value.is_finite() {
            return Err(Error::Parse {
                path: path.into(),
                line: i as u64 + 1,
                message: format!(
                    "`{}` is {value}: only finite values are accepted",
                    truncate(t)
                ),
            });
        }
        values.push(value);
    }
    Ok(values)
}

pub fn write_vector(path: &str, values: &[f64]) -> Result<()> {
    let io = |source| Error::Io {
        path: path.into(),
        source,
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    for v in values {
        writeln!(w, "{v:e}").map_err(io)?;
    }
    w.flush().map_err(io)
}

/// `--backend` of every example.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    /// rayon on the host (always available; the reference)
    Cpu,
    /// wgpu: Vulkan, Metal, DX12 (build with `--features wgpu`)
    Wgpu,
    /// CUDA (build with `--features cuda`)
    Cuda,
}

impl BackendArg {
    /// The library's backend kind.
    pub fn kind(self) -> galerkin::BackendKind {
        match self {
            BackendArg::Cpu => galerkin::BackendKind::Cpu,
            BackendArg::Wgpu => galerkin::BackendKind::Wgpu,
            BackendArg::Cuda => galerkin::BackendKind::Cuda,
        }
    }
}

/// `--format` of the examples that build a sparse matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// chosen from the row statistics (CSR on the CPU backend)
    Auto,
    /// coordinate triplets
    Coo,
    /// compressed sparse rows
    Csr,
    /// ELLPACK
    Ell,
    /// SELL-C-σ
    Sell,
    /// Staircase SELL (permuted numbering)
    Staircase,
    /// block ELL (dense blocks)
    Bell,
    /// diagonals (structured-grid matrices: few distinct column - row)
    Dia,
}

impl FormatArg {
    /// The format, or `None` for automatic selection.
    pub fn format(self) -> Option<galerkin::sparse::Format> {
        use galerkin::sparse::Format;
        match self {
            FormatArg::Auto => None,
            FormatArg::Coo => Some(Format::Coo),
            FormatArg::Csr => Some(Format::Csr),
            FormatArg::Ell => Some(Format::Ell),
            FormatArg::Sell => Some(Format::Sell),
            FormatArg::Staircase => Some(Format::Staircase),
            FormatArg::Bell => Some(Format::BlockEll),
            FormatArg::Dia => Some(Format::Dia),
        }
    }
}

/// `--precision` of the solver examples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PrecisionArg {
    /// everything in f32
    F32,
    /// everything in f64
    F64,
    /// f32 storage / inner work, the answer to f64 accuracy
    Mixed,
}

/// The smoother of `--precond amg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AmgSmootherArg {
    /// Chebyshev polynomial of the Jacobi-scaled operator (--amg-degree SpMVs)
    Chebyshev,
    /// fourth-kind Chebyshev polynomial (Lottes), no lower interval end (--amg-degree SpMVs)
    Chebyshev4,
    /// l1-Jacobi (--amg-degree sweeps)
    L1Jacobi,
}

/// The cycle of `--precond amg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AmgCycleArg {
    /// V-cycle
    V,
    /// W-cycle
    W,
}

/// Precision of the AMG hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AmgPrecisionArg {
    /// the hierarchy in f32 (inside an f64 solve: flexible PCG, the answer still to --tol)
    F32,
    /// the hierarchy in the solve's precision
    Same,
}

/// The largest `--amg-degree`: more smoothing steps per level only cost time.
pub const MAX_AMG_DEGREE: usize = 64;

/// The largest `--amg-improve-candidates`.
pub const MAX_AMG_IMPROVE_CANDIDATES: usize = 100;

/// The options of smoothed-aggregation AMG (`--precond amg`).
#[derive(clap::Args, Clone, Debug)]
pub struct AmgArgs {
    /// AMG: strength threshold θ in [0, 1] (0 keeps every connection, as PyAMG; default 0,
    /// and 0.1 for the HDG trace system).
    #[arg(long)]
    pub amg_theta: Option<f64>,
    /// AMG: smoother of every level.
    #[arg(long, value_enum, default_value_t = AmgSmootherArg::Chebyshev)]
    pub amg_smoother: AmgSmootherArg,
    /// AMG: Chebyshev degree or l1-Jacobi sweeps, before and after each coarse correction
    /// (1..=64).
    #[arg(long, default_value_t = 3)]
    pub amg_degree: usize,
    /// AMG: cycle.
    #[arg(long, value_enum, default_value_t = AmgCycleArg::V)]
    pub amg_cycle: AmgCycleArg,
    /// AMG: coarsen until at most this many rows (then a dense inverse).
    #[arg(long, default_value_t = 500)]
    pub amg_max_coarse: usize,
    /// AMG: precision of the hierarchy.
    #[arg(long, value_enum, default_value_t = AmgPrecisionArg::Same)]
    pub amg_precision: AmgPrecisionArg,
    /// AMG: near-null space of one vector that is 1 on the first row of every block of this
    /// many rows and 0 elsewhere (the constants of a modal basis with that many modes per
    /// block, e.g. P + 1 for an HDG trace matrix from `hdg_poisson --write-trace`); default:
    /// the constant vector.
    #[arg(long, value_name = "N")]
    pub amg_near_null_stride: Option<usize>,
    /// AMG: smoothing steps applied to the near-null vector on the finest level before the
    /// tentative prolongator (PyAMG's `improve_candidates`); default 2, or 0 with
    /// `--amg-near-null-stride` (smoothing would fill the strided vector's zero rows); at
    /// most 100.
    #[arg(long, value_name = "STEPS")]
    pub amg_improve_candidates: Option<usize>,
}

impl AmgArgs {
    /// The library's parameters, the options checked (`θ` from `--amg-theta`, else
    /// `default_theta`; the near-null space of [`AmgArgs::near_null`]).
    pub fn params(&self, default_theta: f64) -> Result<galerkin::solver::AmgParams> {
        use galerkin::solver::{AmgCycle, AmgParams, AmgSmoother};
        let theta = self.amg_theta.unwrap_or(default_theta);
        check_positive("--amg-degree", self.amg_degree)?;
        check_at_most("--amg-degree", self.amg_degree, MAX_AMG_DEGREE)?;
        if let Some(steps) = self.amg_improve_candidates {
            check_at_most(
                "--amg-improve-candidates",
                steps,
                MAX_AMG_IMPROVE_CANDIDATES,
            )?;
        }
        check_positive("--amg-max-coarse", self.amg_max_coarse)?;
        if !(0.0..=1.0).contains(&theta) {
            return Err(Error::InvalidArgument {
                op: "command line",
                name: "--amg-theta",
                reason: format!("{theta}: must be in [0, 1]"),
            });
        }
        if let Some(stride) = self.amg_near_null_stride {
            check_positive("--amg-near-null-stride", stride)?;
        }
        Ok(AmgParams {
            theta,
            smoother: match self.amg_smoother {
                AmgSmootherArg::Chebyshev => AmgSmoother::Chebyshev {
                    degree: self.amg_degree,
                },
                AmgSmootherArg::Chebyshev4 => AmgSmoother::ChebyshevFourthKind {
                    degree: self.amg_degree,
                },
                AmgSmootherArg::L1Jacobi => AmgSmoother::L1Jacobi {
                    sweeps: self.amg_degree,
                },
            },
            cycle: match self.amg_cycle {
                AmgCycleArg::V => AmgCycle::V,
                AmgCycleArg::W => AmgCycle::W,
            },
            max_coarse: self.amg_max_coarse,
            near_null: self.near_null(),
            improve_candidates: self.amg_improve_candidates.unwrap_or(
                if self.amg_near_null_stride.is_some() {
                    0
                } else {
                    AmgParams::default().improve_candidates
                },
            ),
            ..AmgParams::default()
        })
    }

    /// The near-null space: that of `--amg-near-null-stride` (checked by
    /// [`AmgArgs::params`]), or the library's default, the constants.
    pub fn near_null(&self) -> galerkin::solver::NearNull {
        match self.amg_near_null_stride {
            Some(stride) => galerkin::solver::NearNull::Strided(stride),
            None => galerkin::solver::NearNull::Constants,
        }
    }
}

/// The `amg` object of `--json`: levels, complexities, setup seconds (whole and per phase),
/// rows and nonzeros per level, and the precision of the hierarchy.
pub fn amg_json(info: &galerkin::solver::AmgInfo, precision: &str) -> serde_json::Value {
    let p = &info.phases;
    serde_json::json!({
        "levels": info.levels.len(),
        "operator_complexity": info.operator_complexity,
        "grid_complexity": info.grid_complexity,
        "setup_seconds": info.setup_seconds,
        "precision": precision,
        "coarse_solver": info.coarse_solver,
        "level_rows": info.levels.iter().map(|l| l.rows).collect::<Vec<_>>(),
        "level_nnz": info.levels.iter().map(|l| l.nnz).collect::<Vec<_>>(),
        "level_formats": info.levels.iter().map(|l| l.format).collect::<Vec<_>>(),
        "phases": {
            "spectral": p.spectral, "strength": p.strength, "aggregation": p.aggregation,
            "tentative": p.tentative, "prolongator": p.prolongator, "galerkin": p.galerkin,
            "coarse": p.coarse, "upload": p.upload, "check": p.check, "transfer": p.transfer,
        },
    })
}

/// The AMG setup report as a table (on the text report's stream).
pub fn amg_table(info: &galerkin::solver::AmgInfo) {
    say!(
        "AMG hierarchy ({} levels, coarse solve: {}):",
        info.levels.len(),
        info.coarse_solver
    );
    say!(
        "  {:>5} {:>12} {:>14} {:>8} {:>9}",
        "level",
        "rows",
        "nonzeros",
        "nnz/row",
        "format"
    );
    for (l, lv) in info.levels.iter().enumerate() {
        say!(
            "  {l:>5} {:>12} {:>14} {:>8.1} {:>9}",
            lv.rows,
            lv.nnz,
            lv.nnz as f64 / lv.rows.max(1) as f64,
            lv.format
        );
    }
    let p = &info.phases;
    say!(
        "  operator complexity {:.3}, grid complexity {:.3}; setup {:.3} s (spectral {:.3}, \
         strength {:.3}, aggregation {:.3}, tentative {:.3}, prolongator {:.3}, galerkin {:.3}, \
         coarse {:.3}, upload {:.3})",
        info.operator_complexity,
        info.grid_complexity,
        info.setup_seconds,
        p.spectral,
        p.strength,
        p.aggregation,
        p.tentative,
        p.prolongator,
        p.galerkin,
        p.coarse,
        p.upload
    );
}

/// Compiles a pipeline's kernels before it is timed: runs `rehearse` (the same pipeline on a
/// small problem of the same kind) on a device backend and returns its wall seconds, the
/// example's `seconds.compile` (a few milliseconds with a warm kernel cache). 0 on the CPU
/// (nothing to compile) or with `skip`. A failed rehearsal is not reported here: the real
/// run meets the same failure and reports it.
pub fn compile_ahead<B: galerkin::backend::BackendCore>(
    b: &B,
    skip: bool,
    rehearse: impl FnOnce() -> Result<()>,
) -> f64 {
    if skip || b.info().kind == galerkin::backend::BackendKind::Cpu {
        return 0.0;
    }
    let start = std::time::Instant::now();
    let _ = rehearse().and_then(|()| b.synchronize());
    // The run's memory_bytes counts the run, not the rehearsal.
    b.reset_memory_peak();
    start.elapsed().as_secs_f64()
}

/// The example's `memory_bytes`: on a device the most bytes the library's buffers held at
/// once ([`BackendCore::memory_peak`](galerkin::backend::BackendCore::memory_peak)); on the
/// CPU the process's peak resident memory (`VmHWM`, Linux; `None` elsewhere), which also
/// counts the program and its inputs.
pub fn memory_bytes<B: galerkin::backend::BackendCore>(b: &B) -> Option<u64> {
    b.memory_peak()
        .or_else(galerkin::limits::peak_resident_bytes)
}
