//! Shared by the command-line examples: matrices from files or generators, vectors from
//! plain-text files, the common command-line values.
// Each example uses a part of this module.
#![allow(dead_code)]

use std::io::{BufRead, Write};
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

/// Loads a Matrix Market file or runs a generator.
pub fn load(spec: &str) -> Result<Csr<Cpu, f64>> {
    use galerkin::sparse::generate;
    let parts: Vec<&str> = spec.split(':').collect();
    let num = |i: usize| -> Result<usize> {
        parts
            .get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::InvalidArgument {
                op: "--matrix",
                name: "generator",
                reason: format!("generator `{spec}` needs a number in position {i}"),
            })
    };
    match parts[0] {
        "poisson7" => generate::poisson3d_7pt(num(1)?),
        "poisson27" => generate::poisson3d_27pt(num(1)?),
        "poisson2d" => generate::poisson2d_5pt(num(1)?),
        "fvm-tet" => galerkin::fvm::tpfa_tets_structured(num(1)?, 0.15, 1),
        "fvm-dual" => galerkin::fvm::tpfa_dual_structured(num(1)?, 0.15, 1),
        "hdg" => Ok(generate::hdg_trace(num(1)?, num(2)?, num(2)?, 1)?.0),
        "dg" => Ok(generate::dg_7block(num(1)?, num(2)?, num(2)?, num(2)?, 1)?.0),
        "random" => {
            let n = num(1)?;
            galerkin::sparse::random::random_csr(
                &galerkin::sparse::random::RandomPattern::awkward(n, n),
                1,
            )
        }
        _ => galerkin::sparse::read_matrix_market(spec)?.to_csr(),
    }
}

/// Reads one value per line (blank lines and `#`/`%` comments skipped).
pub fn read_vector(path: &str) -> Result<Vec<f64>> {
    let file = std::fs::File::open(path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })?;
    let mut values = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with('%') {
            continue;
        }
        values.push(t.parse::<f64>().map_err(|e| Error::Parse {
            path: path.into(),
            line: i as u64 + 1,
            message: format!("`{t}` is not a number: {e}"),
        })?);
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
