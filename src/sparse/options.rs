//! The parameters of format conversions: [`FormatOptions`] (each format's parameters and
//! the padding limits), [`FormatLimits`], and the parameters of the formats that take any
//! ([`CsrKernel`], [`SellParams`], [`StaircaseParams`], [`BlockEllKernel`]) — below the
//! formats, so that each format's file and the conversion dispatch can name them.

use crate::error::{Error, Result};
use crate::sparse::RowStats;

/// Limits on format conversions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FormatLimits {
    /// Largest accepted `stored slots / nonzeros` (default 3): a conversion that would pad
    /// more — one long row turning ELL into gigabytes — is refused with
    /// [`Error::Padding`].
    pub max_padding_ratio: f64,
}

impl Default for FormatLimits {
    fn default() -> Self {
        FormatLimits {
            max_padding_ratio: 3.0,
        }
    }
}

impl FormatLimits {
    /// No limit: accept any padding.
    pub fn unlimited() -> Self {
        FormatLimits {
            max_padding_ratio: f64::INFINITY,
        }
    }

    /// Checks that storing `stored` slots for `nnz` nonzeros is within the limit.
    ///
    /// # Errors
    /// [`Error::Padding`] when it is not.
    pub fn check(&self, format: &'static str, stored: u64, nnz: u64) -> Result<()> {
        let ratio = stored as f64 / (nnz.max(1)) as f64;
        if stored > nnz && ratio > self.max_padding_ratio {
            return Err(Error::Padding {
                format,
                stored,
                nnz,
                ratio,
                limit: self.max_padding_ratio,
            });
        }
        Ok(())
    }
}

/// Format parameters for [`SparseMatrix::from_csr`](crate::sparse::SparseMatrix::from_csr); `None` fields take the defaults
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
    /// Store the matrix as blocks of rows of about this many bytes each ([`RowSplit`](crate::sparse::RowSplit)) when
    /// its arrays exceed it. `None`: split only where the device's largest buffer
    /// (`BackendInfo::max_buffer_bytes`, e.g. wgpu's binding limit) requires it.
    pub max_part_bytes: Option<usize>,
}

/// Which CSR SpMV kernel to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CsrKernel {
    /// Picks from the row-length statistics: [`Vector`](CsrKernel::Vector) with a group of
    /// up to 32 units when rows average 12 or more entries, else [`Scalar`](CsrKernel::Scalar).
    #[default]
    Auto,
    /// One unit per row.
    Scalar,
    /// `group` units per row (a power of two, 2..=32), reduced by plane shuffles where the
    /// device has plane operations and through shared memory elsewhere.
    Vector {
        /// Units per row.
        group: u32,
    },
}

impl CsrKernel {
    /// The concrete kernel for rows with these statistics.
    pub fn resolve(self, stats: &RowStats) -> CsrKernel {
        match self {
            CsrKernel::Auto if stats.mean >= 12.0 => CsrKernel::Vector {
                group: (stats.mean / 2.0).clamp(2.0, 32.0).log2().round().exp2() as u32,
            },
            CsrKernel::Auto => CsrKernel::Scalar,
            k => k,
        }
    }
}

/// Parameters of a SELL-C-σ matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SellParams {
    /// Slice height C (rows per slice): a power of two in 1..=1024.
    pub slice_height: u32,
    /// Sorting window σ in rows (1: no sorting; a multiple of C otherwise).
    pub sigma: u32,
}

impl SellParams {
    /// C = 32 (a warp) and σ = 1 for rows of nearly equal length, else σ = 64 C.
    pub fn default_for(stats: &RowStats) -> Self {
        let regular = (stats.max as f64) <= 1.25 * stats.mean + 1.0;
        SellParams {
            slice_height: 32,
            sigma: if regular { 1 } else { 32 * 64 },
        }
    }

    pub(crate) fn validate(&self, op: &'static str) -> Result<()> {
        let c = self.slice_height;
        if !(1..=1024).contains(&c) || !c.is_power_of_two() {
            return Err(Error::InvalidArgument {
                op,
                name: "slice_height",
                reason: format!("{c}: must be a power of two in 1..=1024"),
            });
        }
        if self.sigma == 0 || (self.sigma > 1 && !self.sigma.is_multiple_of(c)) {
            return Err(Error::InvalidArgument {
                op,
                name: "sigma",
                reason: format!(
                    "{}: must be 1 or a positive multiple of the slice height {c}",
                    self.sigma
                ),
            });
        }
        Ok(())
    }
}

/// Parameters of a Staircase SELL matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StaircaseParams {
    /// Slice height C (`sh` in the seed): a power of two in 1..=1024.
    pub slice_height: u32,
    /// Merge threshold α: a length group holding fewer than `α n` rows is merged into the
    /// next longer one. `α ≤ C/n` gives SELL-C in the new order; the seed's range is `[C/n, 1]`.
    pub alpha: f64,
}

impl Default for StaircaseParams {
    /// C = 512 (the seed's best) and α = 0.05.
    fn default() -> Self {
        StaircaseParams {
            slice_height: 512,
            alpha: 0.05,
        }
    }
}

/// Which block-ELL SpMV kernel to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlockEllKernel {
    /// Read `x` through the neighbour table inside the contraction (one pass).
    #[default]
    Direct,
    /// Gather the inflated vector first, then contract (the seed's kernel).
    InflateContract,
}
