//! The parameters of format conversions: [`FormatOptions`] (each format's parameters and
//! the padding limits) and [`FormatLimits`].

use crate::error::{Error, Result};
use crate::sparse::block_ell::BlockEllKernel;
use crate::sparse::csr::CsrKernel;
use crate::sparse::sell::SellParams;
use crate::sparse::staircase::StaircaseParams;

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
