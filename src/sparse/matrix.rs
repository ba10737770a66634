//! [`SparseMatrix`]: any format behind one type, format selection from the matrix
//! statistics ([`SparseMatrix::auto`]) and by timing on the device ([`SparseMatrix::tune`]).
//!
//! The list of formats is `formats!`'s one invocation below: a new format is its file and
//! one line there. The [`Format`] enum, its names and parsing, the variants of
//! [`SparseMatrix`] and their dispatch, the tune candidates and the verification rows all
//! follow from the list and each format's [`FormatKernels`].

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::backend::cpu::Cpu;
use crate::error::{Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::{Element, Scalar};
use crate::sparse::block_ell::{BlockEll, BlockEllFormat};
pub use crate::sparse::choose::{choose_format, detect_block_size};
use crate::sparse::convert::FormatConversion;
use crate::sparse::coo::{Coo, CooFormat};
use crate::sparse::csr::{Csr, CsrFormat};
use crate::sparse::dia::{Dia, DiaFormat};
use crate::sparse::ell::{Ell, EllFormat};
use crate::sparse::ops::{FormatKernels, SparseOps};
use crate::sparse::options::FormatOptions;
use crate::sparse::sell::{Sell, SellFormat};
use crate::sparse::split::RowSplit;
use crate::sparse::staircase::{StaircaseFormat, StaircaseSell};
use crate::sparse::storage::{sparse_cost, SparseStorage};
use crate::vector::Vector;

/// Generates, from the list of formats (variant, container, kernels), the [`Format`] enum
/// with its names, the [`SparseMatrix`] enum, the conversion into any format, and
/// `each_format!`, which runs an expression on the matrix of whichever format a
/// [`SparseMatrix`] holds. `$d` is a `$` for the inner macro.
macro_rules! formats {
    ($d:tt $( $(#[$doc:meta])* $variant:ident($container:ident, $kernels:ty) ),* $(,)?) => {
        /// The storage formats, as a run-time value (`"csr"`, `"ell"`, ...).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Format {
            $( $(#[$doc])* $variant, )*
        }

        impl Format {
            /// Every format.
            pub const ALL: [Format; 0 $(+ { let _ = Format::$variant; 1 })*] =
                [$(Format::$variant),*];

            /// The name accepted by [`FromStr`].
            pub const fn name(self) -> &'static str {
                match self {
                    $(Format::$variant => <$kernels as FormatKernels>::NAME,)*
                }
            }

            /// What the format is, for tables (`"sell-c-sigma"`).
            pub const fn label(self) -> &'static str {
                match self {
                    $(Format::$variant => <$kernels as FormatKernels>::LABEL,)*
                }
            }

            /// Whether the format holds only matrices whose nonzeros lie on a few diagonals.
            pub const fn few_diagonals(self) -> bool {
                match self {
                    $(Format::$variant => <$kernels as FormatKernels>::FEW_DIAGONALS,)*
                }
            }

            /// The other names the parser accepts.
            fn aliases(self) -> &'static [&'static str] {
                match self {
                    $(Format::$variant => <$kernels as FormatKernels>::ALIASES,)*
                }
            }

            /// The parameter sets [`SparseMatrix::tune`] times for `a` in this format.
            fn tune_candidates<V: Element>(self, a: &Csr<Cpu, V>) -> Vec<(FormatOptions, String)> {
                match self {
                    $(Format::$variant => <$kernels as FormatConversion>::tune_candidates(a),)*
                }
            }
        }

        /// A sparse matrix in any format. SpMV works in the original numbering for every
        /// format (Staircase SELL permutes `x` in and `y` out around its permuted-space
        /// product).
        pub enum SparseMatrix<B: SparseOps, V: Element> {
            $( $(#[$doc])* $variant($container<B, V>), )*
            /// Blocks of rows, each in one of the formats above: a matrix larger than one
            /// device buffer (see [`RowSplit`]).
            Split(RowSplit<SparseMatrix<B, V>>),
        }

        impl<B: SparseOps, V: Element> SparseMatrix<B, V> {
            /// [`from_csr`](Self::from_csr) without splitting.
            pub(crate) fn from_csr_single(
                backend: &B,
                a: &Csr<Cpu, V>,
                format: Format,
                options: &FormatOptions,
            ) -> Result<Self> {
                Ok(match format {
                    $(Format::$variant => SparseMatrix::$variant(
                        <$kernels as FormatConversion>::from_csr(backend, a, options)?,
                    ),)*
                })
            }

            /// A copy on the same backend with values rounded to `W` (once, to nearest
            /// even), in the same format and blocks, made on the device
            /// ([`SparseStorage::to_precision`]): the f32 operator of an f32 preconditioner
            /// inside an f64 solve, without the host.
            ///
            /// # Errors
            /// [`Error::Unsupported`] if the device lacks `W`; device and allocation errors.
            pub fn to_precision<W: Element>(&self) -> Result<SparseMatrix<B, W>> {
                Ok(match self {
                    SparseMatrix::Split(s) => {
                        SparseMatrix::Split(s.try_map(|m| m.to_precision::<W>())?)
                    }
                    $(SparseMatrix::$variant(m) => {
                        SparseMatrix::$variant(SparseStorage::to_precision::<W>(m)?)
                    })*
                })
            }

            /// The format (a split matrix's largest block's: a minor piece cut at a part of
            /// `x` may be CSR).
            pub fn format(&self) -> Format {
                match self {
                    SparseMatrix::Split(s) => {
                        let largest = s.blocks.iter().max_by_key(|b| b.matrix.nnz());
                        largest.map_or(Format::Sell, |b| b.matrix.format())
                    }
                    $(SparseMatrix::$variant(_) => Format::$variant,)*
                }
            }
        }

        /// `$body` with `$m` bound to the matrix of whichever format `$matrix` holds (a
        /// split matrix is handled before).
        macro_rules! each_format {
            ($d matrix:expr, $d m:ident => $d body:expr) => {
                match $d matrix {
                    $(SparseMatrix::$variant($d m) => $d body,)*
                    SparseMatrix::Split(_) => unreachable!("row-split matrices are handled first"),
                }
            };
        }
    };
}

formats! {$
    /// [`Coo`].
    Coo(Coo, CooFormat),
    /// [`Csr`] (with its kernel choice inside).
    Csr(Csr, CsrFormat),
    /// [`Ell`] (ELLPACK).
    Ell(Ell, EllFormat),
    /// [`Sell`] (SELL-C-σ).
    Sell(Sell, SellFormat),
    /// [`StaircaseSell`].
    Staircase(StaircaseSell, StaircaseFormat),
    /// [`BlockEll`] (with its kernel choice inside).
    BlockEll(BlockEll, BlockEllFormat),
    /// [`Dia`].
    Dia(Dia, DiaFormat),
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    /// Parses a format's name or one of its aliases, ignoring case (`coo`, `csr`, `ell`,
    /// `sell`, `staircase`, `bell` or `block-ell`, `dia`, ...).
    fn from_str(s: &str) -> Result<Self> {
        let want = s.trim().to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == want || f.aliases().contains(&want.as_str()))
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                Error::invalid(
                    "Format::from_str",
                    "format",
                    format!("`{s}`: expected one of {}", names.join(", ")),
                )
            })
    }
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
        let candidates: Vec<(Format, FormatOptions, String)> = Format::ALL
            .into_iter()
            .flat_map(|format| {
                format
                    .tune_candidates(a)
                    .into_iter()
                    .map(move |(options, params)| (format, options, params))
            })
            .collect();
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
            other => each_format!(other, m => SparseStorage::spmv_original(m, alpha, x, beta, y)),
        }
    }

    /// Whether the fused products of the matrix's format (`spmv_dot`) work in the original
    /// numbering: every format but Staircase SELL's permuted one, and not across the blocks
    /// of a split matrix.
    fn fuses(&self) -> bool {
        match self {
            SparseMatrix::Split(_) => false,
            other => each_format!(other, m => SparseStorage::original_numbering(m)),
        }
    }
}

/// Formats whose fused products work in another numbering (Staircase SELL) and split
/// matrices use the plain SpMV and a dot, and the composed smoothing passes; the other
/// formats use their own.
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
        if !self.fuses() {
            self.spmv(S::ONE, x, S::ZERO, y)?;
            return x.dot(y);
        }
        each_format!(self, m => SparseStorage::spmv_dot(m, x, y))
    }
    fn apply_dot_device(
        &self,
        x: &Vector<B, S>,
        y: &mut Vector<B, S>,
        scalars: &mut Vector<B, S>,
        slot: usize,
    ) -> Result<()> {
        if !self.fuses() {
            crate::vector::check_slot("SparseMatrix::apply_dot_device", scalars.len(), slot)?;
            self.spmv(S::ONE, x, S::ZERO, y)?;
            return crate::vector::dot_into(x, y, scalars, slot);
        }
        each_format!(self, m => SparseStorage::spmv_dot_device(m, x, y, scalars, slot))
    }
    fn residual(
        &self,
        b: &Vector<B, S>,
        x: &Vector<B, S>,
        r: &mut Vector<B, S>,
        scaled: Option<crate::operator::ScaledCopy<'_, B, S>>,
    ) -> Result<()> {
        if !self.fuses() {
            return crate::operator::residual_composed(self, b, x, r, scaled);
        }
        each_format!(self, m => SparseStorage::spmv_residual(m, b, x, r, scaled))
    }
    fn smoothing_step(
        &self,
        d: &Vector<B, S>,
        r: &mut Vector<B, S>,
        s: &Vector<B, S>,
        e: &mut Vector<B, S>,
        x: &mut Vector<B, S>,
        coefficients: [S; 3],
    ) -> Result<()> {
        if !self.fuses() {
            return crate::operator::smoothing_step_composed(self, d, r, s, e, x, coefficients);
        }
        each_format!(self, m => SparseStorage::spmv_smoothing_step(m, d, r, s, e, x, coefficients))
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
