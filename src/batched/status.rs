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
    /// LU factors given back, e.g. from a [`factors`](Lu::factors) and
    /// [`pivots_to_vec`](Lu::pivots_to_vec) kept on the host: `factors` square with
    /// `n <= 64`, `pivots` `n` row indices per matrix, each in `k..n` at step `k` (what
    /// partial pivoting makes; `k` itself where no row was swapped). The status is 0 for
    /// every matrix, or `k + 1` for the first zero on the diagonal of `U`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the first bad shape or
    /// pivot (matrix and step); allocation and device errors.
    pub fn from_parts(factors: Batch<B, T>, pivots: &[u32]) -> Result<Self> {
        let n = factors.nrows;
        let bad = |reason: String| crate::Error::invalid("Lu::from_parts", "factors", reason);
        if factors.ncols != n || n > crate::batched::MAX_DIM {
            return Err(bad(format!(
                "{} x {} matrices: must be square with n <= {}",
                factors.nrows,
                factors.ncols,
                crate::batched::MAX_DIM
            )));
        }
        crate::error::check_len("Lu::from_parts", "pivots", factors.count * n, pivots.len())?;
        let values = factors.to_vec()?;
        let mut codes = vec![0i32; factors.count];
        for (m, code) in codes.iter_mut().enumerate() {
            for k in 0..n {
                let p = pivots[m * n + k] as usize;
                if p < k || p >= n {
                    return Err(crate::Error::invalid(
                        "Lu::from_parts",
                        "pivots",
                        format!("matrix {m}, step {k}: row {p} is outside {k}..{n}"),
                    ));
                }
                if *code == 0 && values[m * n * n + k * n + k].as_f64() == 0.0 {
                    *code = k as i32 + 1;
                }
            }
        }
        let backend = factors.backend.clone();
        Ok(Lu {
            pivots: backend.upload(pivots)?,
            status: Status {
                codes: backend.upload(&codes)?,
                backend,
            },
            factors,
        })
    }

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
