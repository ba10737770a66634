//! [`FormatConversion`]: how a format is made from CSR, and the parameter sets
//! [`SparseMatrix::tune`](crate::sparse::SparseMatrix::tune) times for it — the part of a
//! format that names [`Csr`] and [`FormatOptions`], kept apart from the kernel family so that
//! the family sits below every format's container.

use crate::backend::cpu::Cpu;
use crate::error::Result;
use crate::scalar::Element;
use crate::sparse::csr::Csr;
use crate::sparse::ops::{FormatKernels, SparseOps};
use crate::sparse::options::FormatOptions;

/// How a format is made from a host CSR matrix and tuned. Sealed with [`FormatKernels`]:
/// implemented by each format's marker, in the format's file.
pub trait FormatConversion: FormatKernels {
    /// Converts a host CSR matrix and moves it to `backend`, with the format's parameters
    /// from `options` (or derived from the matrix's statistics where `options` leaves them
    /// open).
    ///
    /// # Errors
    /// The format's conversion errors ([`Error::Padding`](crate::error::Error::Padding)
    /// where it would pad beyond `options.limits`, ...), device and allocation errors.
    fn from_csr<B: SparseOps, V: Element>(
        backend: &B,
        a: &Csr<Cpu, V>,
        options: &FormatOptions,
    ) -> Result<Self::Matrix<B, V>>;

    /// The parameter sets [`SparseMatrix::tune`](crate::sparse::SparseMatrix::tune) times
    /// for `a`, each with its description; none (the default) where the format is not a
    /// candidate.
    fn tune_candidates<V: Element>(a: &Csr<Cpu, V>) -> Vec<(FormatOptions, String)> {
        let _ = a;
        Vec::new()
    }
}
