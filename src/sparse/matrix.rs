//! [`SparseMatrix`]: any format behind one type, format selection from the matrix
//! statistics ([`SparseMatrix::auto`]) and by timing on the device ([`SparseMatrix::tune`]).

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::backend::cpu::Cpu;
use crate::error::{Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::{Element, Scalar};
use crate::sparse::block_ell::{BlockEll, BlockEllKernel};
pub use crate::sparse::choose::{choose_format, detect_block_size};
use crate::sparse::coo::Coo;
use crate::sparse::csr::{Csr, CsrKernel};
use crate::sparse::dia::Dia;
use crate::sparse::ell::Ell;
use crate::sparse::ops::SparseOps;
use crate::sparse::ops::{sparse_cost, SparseStorage};
use crate::sparse::sell::{Sell, SellParams};
use crate::sparse::split::RowSplit;
use crate::sparse::staircase::{StaircaseParams, StaircaseSell};
use crate::sparse::FormatLimits;
use crate::vector::Vector;

/// The storage formats, as a run-time value (`"csr"`, `"ell"`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// [`Coo`].
    Coo,
    /// [`Csr`].
    Csr,
    /// [`Ell`].
    Ell,
    /// [`Sell`] (SELL-C-σ).
    Sell,
    /// [`StaircaseSell`].
    Staircase,
    /// [`BlockEll`].
    BlockEll,
    /// [`Dia`].
    Dia,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 7] = [
        Format::Coo,
        Format::Csr,
        Format::Ell,
        Format::Sell,
        Format::Staircase,
        Format::BlockEll,
        Format::Dia,
    ];

    /// The name of the format's SpMV, for error messages.
    pub(crate) const fn spmv_name(self) -> &'static str {
        match self {
            Format::Coo => "Coo::spmv",
            Format::Csr => "Csr::spmv",
            Format::Ell => "Ell::spmv",
            Format::Sell => "Sell::spmv",
            Format::Staircase => "StaircaseSell::spmv",
            Format::BlockEll => "BlockEll::spmv",
            Format::Dia => "Dia::spmv",
        }
    }

    /// The name accepted by [`FromStr`].
    pub const fn name(self) -> &'static str {
        match self {
            Format::Coo => "coo",
            Format::Csr => "csr",
            Format::Ell => "ell",
            Format::Sell => "sell",
            Format::Staircase => "staircase",
            Format::BlockEll => "bell",
            Format::Dia => "dia",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    /// Parses `coo`, `csr`, `ell`, `sell`, `staircase`, `bell` (or `block-ell`), `dia`.
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "coo" => Ok(Format::Coo),
            "csr" => Ok(Format::Csr),
            "ell" => Ok(Format::Ell),
            "sell" | "sell-c-sigma" => Ok(Format::Sell),
            "staircase" | "staircase-sell" => Ok(Format::Staircase),
            "bell" | "block-ell" | "blockell" | "dbf" => Ok(Format::BlockEll),
            "dia" | "diagonal" => Ok(Format::Dia),
            _ => Err(Error::InvalidArgument {
                op: "Format::from_str",
                name: "format",
                reason: format!("`{s}`: expected one of coo, csr, ell, sell, staircase, bell, dia"),
            }),
        }
    }
}

/// Format parameters for [`SparseMatrix::from_csr`]; `None` fields take the defaults
/// derived from the matrix statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FormatOptions {
    /// CSR kernel.
    pub csr_kernel: CsrKernel,
    /// SELL-C-σ parameters.
    pub sell: Option<SellParams>,
    /// Staircase SELL parameters.
    pub staircase: Option<StaircaseParams>,
    /// Block size of the block-ELL format (`None`: detected).
    pub block_size: Option<usize>,
    /// Block-ELL kernel.
    pub block_kernel: BlockEllKernel,
    /// Padding limits of the conversions.
    pub limits: FormatLimits,
    /// Store the matrix as blocks of rows of about this many bytes each ([`RowSplit`]) when
    /// its arrays exceed it. `None`: split only where the device's largest buffer
    /// (`BackendInfo::max_buffer_bytes`, e.g. wgpu's binding limit) requires it.
    pub max_part_bytes: Option<usize>,
}

/// What [`SparseMatrix::auto`] chose and why.
#[derive(Clone, Debug, PartialEq)]
pub struct FormatChoice {
    /// The format.
    pub format: Format,
    /// Its parameters, human-readable.
    pub params: String,
    /// Why it was chosen.
    pub reason: String,
}

impl fmt::Display for FormatChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.format, self.params, self.reason)
    }
}

/// A sparse matrix in any format. SpMV works in the original numbering for every format
/// (Staircase SELL permutes `x` in and `y` out around its permuted-space product).
pub enum SparseMatrix<B: SparseOps, V: Element> {
    /// COO.
    Coo(Coo<B, V>),
    /// CSR (with its kernel choice inside).
    Csr(Csr<B, V>),
    /// ELLPACK.
    Ell(Ell<B, V>),
    /// SELL-C-σ.
    Sell(Sell<B, V>),
    /// Staircase SELL.
    Staircase(StaircaseSell<B, V>),
    /// Block ELL (with its kernel choice inside).
    BlockEll(BlockEll<B, V>),
    /// [`Dia`].
    Dia(Dia<B, V>),
    /// Blocks of rows, each in one of the formats above: a matrix larger than one device
    /// buffer (see [`RowSplit`]).
    Split(RowSplit<SparseMatrix<B, V>>),
}

/// `$body` with `$m` bound to the matrix of whichever format `$matrix` holds.
macro_rules! each_format {
    ($matrix:expr, $m:ident => $body:expr) => {
        match $matrix {
            SparseMatrix::Coo($m) => $body,
            SparseMatrix::Csr($m) => $body,
            SparseMatrix::Ell($m) => $body,
            SparseMatrix::Sell($m) => $body,
            SparseMatrix::Staircase($m) => $body,
            SparseMatrix::BlockEll($m) => $body,
            SparseMatrix::Dia($m) => $body,
            SparseMatrix::Split(_) => unreachable!("row-split matrices are handled first"),
        }
    };
}

impl<B: SparseOps, V: Element> SparseMatrix<B, V> {
    /// Converts a host CSR matrix to `format` and moves it to `backend`. A matrix whose
    /// arrays exceed the device's largest buffer (or `options.max_part_bytes`) is stored as
    /// blocks of rows ([`SparseMatrix::Split`]), each block in `format`.
    ///
    /// # Errors
    /// Conversion errors ([`Error::Padding`], [`Error::InvalidArgument`]) and allocation
    /// errors ([`Error::ResourceLimit`] where even a block of 256 rows does not fit one
    /// buffer).
    pub fn from_csr(
        backend: &B,
        a: &Csr<Cpu, V>,
        format: Format,
        options: &FormatOptions,
    ) -> Result<Self> {
        // Staircase SELL renumbers a square matrix as a whole; a block of rows is not square:
        // split, its blocks are SELL-C-σ (the layout Staircase refines), and `format()` says so.
        let block_format = match format {
            Format::Staircase => Format::Sell,
            other => other,
        };
        let single = FormatOptions {
            max_part_bytes: None,
            ..*options
        };
        // A minor piece of a block cut at the parts of x (a few entries near a part's edge)
        // may exceed the padding limit of a padded format: it is stored as CSR then.
        let convert = |part: &Csr<Cpu, V>, minor: bool| match Self::from_csr_single(
            backend,
            part,
            block_format,
            &single,
        ) {
            Err(Error::Padding { .. }) if minor => {
                Self::from_csr_single(backend, part, Format::Csr, &single)
            }
            other => other,
        };
        let estimate = a.nnz() * (V::DTYPE.size() + 4);
        // Blocks for `max_part_bytes`: values, a column index, and room for the padding of the
        // ELL-like formats in the budget. Blocks for the device's limit: the largest array
        // (the values, or the column indices) at 80% of one buffer; a block whose padding
        // takes it over is halved.
        let requested = options
            .max_part_bytes
            .map(|part| part / (2 * (V::DTYPE.size() + 4)));
        let limit = usize::try_from(backend.info().max_buffer_bytes).unwrap_or(usize::MAX);
        let device_nnz = limit / 5 * 4 / V::DTYPE.size().max(4);
        // Vectors longer than one buffer are split into parts: the blocks must follow them.
        let vector_part = crate::backend::vector_part_len(backend.info().max_buffer_bytes);
        if a.nrows() > vector_part || a.ncols() > vector_part {
            let nnz = requested.unwrap_or(device_nnz).min(device_nnz);
            return Ok(SparseMatrix::Split(RowSplit::from_csr(
                a,
                nnz,
                Some(vector_part),
                convert,
            )?));
        }
        if let (Some(part), Some(nnz)) = (options.max_part_bytes, requested) {
            if estimate > part {
                return Ok(SparseMatrix::Split(RowSplit::from_csr(
                    a, nnz, None, convert,
                )?));
            }
        }
        match Self::from_csr_single(backend, a, format, options) {
            Err(Error::ResourceLimit { .. }) if a.nrows() > crate::sparse::SPLIT_ROW_ALIGN => Ok(
                SparseMatrix::Split(RowSplit::from_csr(a, device_nnz, None, convert)?),
            ),
            other => other,
        }
    }

    /// [`from_csr`](Self::from_csr) without splitting.
    pub(crate) fn from_csr_single(
        backend: &B,
        a: &Csr<Cpu, V>,
        format: Format,
        options: &FormatOptions,
    ) -> Result<Self> {
        let limits = &options.limits;
        Ok(match format {
            Format::Coo => SparseMatrix::Coo(a.to_coo().to_backend(backend)?),
            Format::Csr => {
                SparseMatrix::Csr(a.to_backend(backend)?.with_kernel(options.csr_kernel)?)
            }
            Format::Ell => SparseMatrix::Ell(Ell::from_csr(a, limits)?.to_backend(backend)?),
            Format::Dia => SparseMatrix::Dia(Dia::from_csr(a, limits)?.to_backend(backend)?),
            Format::Sell => {
                let params = options
                    .sell
                    .unwrap_or_else(|| SellParams::default_for(a.stats()));
                SparseMatrix::Sell(Sell::from_csr(a, params, limits)?.to_backend(backend)?)
            }
            Format::Staircase => {
                let params = options.staircase.unwrap_or_default();
                SparseMatrix::Staircase(
                    StaircaseSell::from_csr(a, params, limits)?.to_backend(backend)?,
                )
            }
            Format::BlockEll => {
                let m = match options.block_size {
                    Some(m) => m,
                    None => detect_block_size(a, f64::INFINITY).unwrap_or(1),
                };
                SparseMatrix::BlockEll(
                    BlockEll::from_csr(a, m, limits)?
                        .to_backend(backend)?
                        .with_kernel(options.block_kernel),
                )
            }
        })
    }

    /// Picks a format from the matrix statistics ([`choose_format`]; on the CPU backend
    /// always CSR, whose rayon kernel beats the padded formats there), converts, and moves
    /// the matrix to `backend`; falls back to CSR if the chosen conversion is refused.
    ///
    /// # Errors
    /// Allocation errors.
    pub fn auto(backend: &B, a: &Csr<Cpu, V>) -> Result<(Self, FormatChoice)> {
        let choice = if backend.kind() == crate::backend::BackendKind::Cpu {
            FormatChoice {
                format: Format::Csr,
                params: "rayon, one task per 2048 rows".into(),
                reason: "on the CPU, CSR streams the fewest bytes and needs no padding".into(),
            }
        } else {
            choose_format(a)
        };
        let options = FormatOptions {
            block_size: match choice.format {
                Format::BlockEll => detect_block_size(a, 1.15),
                _ => None,
            },
            ..FormatOptions::default()
        };
        match Self::from_csr(backend, a, choice.format, &options) {
            Ok(m) => Ok((m, choice)),
            Err(Error::Padding { .. }) => Ok((
                Self::from_csr(backend, a, Format::Csr, &FormatOptions::default())?,
                FormatChoice {
                    format: Format::Csr,
                    params: "Auto".into(),
                    reason: format!("{} would pad too much", choice.format),
                },
            )),
            Err(e) => Err(e),
        }
    }

    /// Times SpMV for a set of candidate formats and parameters on `backend` (median of
    /// `reps` runs each) and returns the fastest, with every candidate's time.
    ///
    /// # Errors
    /// Allocation and device errors.
    pub fn tune<T: Scalar>(
        backend: &B,
        a: &Csr<Cpu, V>,
        reps: usize,
    ) -> Result<(Self, Vec<(FormatChoice, Duration)>)> {
        let mut candidates: Vec<(Format, FormatOptions, String)> = Vec::new();
        let base = FormatOptions::default();
        for kernel in [
            CsrKernel::Scalar,
            CsrKernel::Vector { group: 4 },
            CsrKernel::Vector { group: 32 },
        ] {
            candidates.push((
                Format::Csr,
                FormatOptions {
                    csr_kernel: kernel,
                    ..base
                },
                format!("{kernel:?}"),
            ));
        }
        for c in [32, 128, 512] {
            for sigma in [1, 64 * c] {
                let sell = SellParams {
                    slice_height: c,
                    sigma,
                };
                candidates.push((
                    Format::Sell,
                    FormatOptions {
                        sell: Some(sell),
                        ..base
                    },
                    format!("C = {c}, sigma = {sigma}"),
                ));
            }
        }
        // DIA (refused, and skipped, unless a few diagonals hold the matrix).
        candidates.push((Format::Dia, base, "diagonals".into()));
        if let Some(m) = detect_block_size(a, 1.5) {
            for kernel in [BlockEllKernel::Direct, BlockEllKernel::InflateContract] {
                candidates.push((
                    Format::BlockEll,
                    FormatOptions {
                        block_size: Some(m),
                        block_kernel: kernel,
                        ..base
                    },
                    format!("block size {m}, {kernel:?}"),
                ));
            }
        }
        let x = Vector::<B, T>::full(backend, a.ncols(), T::ONE)?;
        let mut y = Vector::<B, T>::zeros(backend, a.nrows())?;
        let mut results = Vec::new();
        let mut best: Option<(Self, Duration)> = None;
        for (format, options, params) in candidates {
            let m = match Self::from_csr(backend, a, format, &options) {
                Ok(m) => m,
                Err(Error::Padding { .. }) => continue,
                Err(e) => return Err(e),
            };
            m.spmv(T::ONE, &x, T::ZERO, &mut y)?;
            backend.synchronize()?;
            let mut times = Vec::with_capacity(reps.max(1));
            for _ in 0..reps.max(1) {
                let t0 = Instant::now();
                m.spmv(T::ONE, &x, T::ZERO, &mut y)?;
                backend.synchronize()?;
                times.push(t0.elapsed());
            }
            times.sort();
            let t = times[times.len() / 2];
            results.push((
                FormatChoice {
                    format,
                    params,
                    reason: "timed".into(),
                },
                t,
            ));
            if best.as_ref().is_none_or(|(_, bt)| t < *bt) {
                best = Some((m, t));
            }
        }
        match best {
            Some((m, _)) => Ok((m, results)),
            // CSR is always a candidate and never refused for padding: unreachable, but an
            // error rather than a panic.
            None => Err(Error::InvalidArgument {
                op: "SparseMatrix::tune",
                name: "a",
                reason: "no format could hold the matrix".into(),
            }),
        }
    }

    /// The format.
    pub fn format(&self) -> Format {
        match self {
            SparseMatrix::Split(s) => {
                // The largest block's (a minor piece cut at a part of x may be CSR).
                let largest = s.blocks.iter().max_by_key(|b| b.matrix.nnz());
                largest.map_or(Format::Sell, |b| b.matrix.format())
            }
            SparseMatrix::Coo(_) => Format::Coo,
            SparseMatrix::Csr(_) => Format::Csr,
            SparseMatrix::Ell(_) => Format::Ell,
            SparseMatrix::Sell(_) => Format::Sell,
            SparseMatrix::Staircase(_) => Format::Staircase,
            SparseMatrix::BlockEll(_) => Format::BlockEll,
            SparseMatrix::Dia(_) => Format::Dia,
        }
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        match self {
            SparseMatrix::Split(s) => s.nrows,
            other => each_format!(other, m => SparseStorage::nrows(m)),
        }
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        match self {
            SparseMatrix::Split(s) => s.ncols,
            other => each_format!(other, m => SparseStorage::ncols(m)),
        }
    }

    /// Nonzeros.
    pub fn nnz(&self) -> usize {
        match self {
            SparseMatrix::Split(s) => s.blocks.iter().map(|b| b.matrix.nnz()).sum(),
            other => each_format!(other, m => SparseStorage::nnz(m)),
        }
    }

    /// Bytes of the stored arrays, padding included.
    pub fn storage_bytes(&self) -> usize {
        match self {
            SparseMatrix::Split(s) => s.blocks.iter().map(|b| b.matrix.storage_bytes()).sum(),
            other => each_format!(other, m => SparseStorage::storage_bytes(m)),
        }
    }

    /// `y = alpha A x + beta y` in the original numbering (`y` not read when `beta = 0`).
    ///
    /// # Errors
    /// As [`SparseStorage::spmv`].
    pub fn spmv<T: Scalar>(
        &self,
        alpha: T,
        x: &Vector<B, T>,
        beta: T,
        y: &mut Vector<B, T>,
    ) -> Result<()> {
        match self {
            SparseMatrix::Split(s) => s.spmv(alpha, x, beta, y, |m, a, x, b, y| m.spmv(a, x, b, y)),
            SparseMatrix::Staircase(m) => m.spmv_original(alpha, x, beta, y),
            other => each_format!(other, m => SparseStorage::spmv(m, alpha, x, beta, y)),
        }
    }
}

/// Staircase SELL's fused products stay in its permuted numbering, so it uses the plain
/// SpMV and a dot; the other formats use their own.
impl<B: SparseOps, V: Element, S: Scalar> LinearOperator<B, S> for SparseMatrix<B, V> {
    fn nrows(&self) -> usize {
        SparseMatrix::nrows(self)
    }
    fn ncols(&self) -> usize {
        SparseMatrix::ncols(self)
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }
    fn apply_dot(&self, x: &Vector<B, S>, y: &mut Vector<B, S>) -> Result<S> {
        match self {
            SparseMatrix::Staircase(_) | SparseMatrix::Split(_) => {
                self.spmv(S::ONE, x, S::ZERO, y)?;
                x.dot(y)
            }
            other => each_format!(other, m => SparseStorage::spmv_dot(m, x, y)),
        }
    }
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        match self {
            SparseMatrix::Staircase(_) | SparseMatrix::Split(_) => {
                crate::vector::check_slot("SparseMatrix::apply_dot_device", scalars.len(), slot)?;
                self.spmv(S::ONE, x, S::ZERO, y)?;
                crate::vector::dot_into(x, y, scalars, slot)
            }
            other => {
                each_format!(other, m => SparseStorage::spmv_dot_device(m, x, y, scalars, slot))
            }
        }
    }
    fn cost(&self) -> OperatorCost {
        match self {
            SparseMatrix::Split(s) => OperatorCost {
                flops: s
                    .blocks
                    .iter()
                    .map(|b| LinearOperator::<B, S>::cost(&b.matrix).flops)
                    .sum(),
                bytes: (self.storage_bytes() + (s.nrows + s.ncols) * S::DTYPE.size()) as f64,
            },
            other => each_format!(other, m => sparse_cost::<B, V, S, _>(m)),
        }
    }
}
