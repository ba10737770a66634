//! The outcome of a factorization: per-matrix [`Status`] codes and the [`Lu`] factors.

use std::fmt;

use crate::backend::core::BackendCore;
use crate::batched::Batch;
use crate::error::Result;
use crate::scalar::Element;

/// Per-matrix outcome of a factorization (LAPACK `info`): 0 = success, `k + 1` = zero pivot
/// or non-positive leading minor at step `k`. The codes stay on the device until asked for,
/// so a factorization does not wait for the device.
pub struct Status<B: BackendCore> {
    pub(crate) codes: B::Buffer<i32>,
    pub(crate) backend: B,
}

impl<B: BackendCore> fmt::Debug for Status<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Status({} matrices on {})",
            B::len(&self.codes),
            self.backend.info()
        )
    }
}

impl<B: BackendCore> Status<B> {
    /// The code of every matrix, copied to the host.
    ///
    /// # Errors
    /// Device errors.
    pub fn codes(&self) -> Result<Vec<i32>> {
        self.backend.download(&self.codes)
    }

    /// Whether every matrix succeeded.
    ///
    /// # Errors
    /// Device errors.
    pub fn all_ok(&self) -> Result<bool> {
        Ok(self.codes()?.iter().all(|&c| c == 0))
    }

    /// `(index, code)` of every failed matrix.
    ///
    /// # Errors
    /// Device errors.
    pub fn failures(&self) -> Result<Vec<(usize, i32)>> {
        Ok(self
            .codes()?
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0)
            .map(|(i, &c)| (i, c))
            .collect())
    }

    /// The codes on the device.
    pub fn buffer(&self) -> &B::Buffer<i32> {
        &self.codes
    }
}

/// LU factors of a batch: `P A = L U` with unit lower `L` and upper `U` stored in place,
/// and the row pivots (`pivots[b n + k]` = the row swapped with row `k` at step `k`).
///
/// Made only by [`lu`](crate::batched::lu), so its factors are square (`n <= 64`) and its
/// pivots hold `n` valid row indices per matrix: what [`lu_solve`](crate::batched::lu_solve)
/// relies on.
pub struct Lu<B: BackendCore, T: Element> {
    pub(crate) factors: Batch<B, T>,
    pub(crate) pivots: B::Buffer<u32>,
    pub(crate) status: Status<B>,
}

impl<B: BackendCore, T: Element> Lu<B, T> {
    /// `L` (strictly lower, unit diagonal implied) and `U` (upper) of every matrix.
    pub fn factors(&self) -> &Batch<B, T> {
        &self.factors
    }

    /// Row interchanges, `n` per matrix (`k` itself when no swap), on the device.
    pub fn pivots(&self) -> &B::Buffer<u32> {
        &self.pivots
    }

    /// The row interchanges, copied to the host.
    ///
    /// # Errors
    /// Device errors.
    pub fn pivots_to_vec(&self) -> Result<Vec<u32>> {
        self.factors.backend.download(&self.pivots)
    }

    /// Per-matrix status.
    pub fn status(&self) -> &Status<B> {
        &self.status
    }

    /// The factors and the status, giving up the pivots.
    pub fn into_parts(self) -> (Batch<B, T>, Status<B>) {
        (self.factors, self.status)
    }
}
