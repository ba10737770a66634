//! How [`SparseMatrix::auto`](crate::sparse::SparseMatrix::auto) picks a format from the
//! matrix statistics: dense-block detection, few diagonals, and the row-length rules.

use crate::backend::cpu::Cpu;
use crate::scalar::Element;
use crate::sparse::csr::{Csr, CsrKernel};
use crate::sparse::dia::diagonal_offsets;
use crate::sparse::matrix::{Format, FormatChoice};
use crate::sparse::sell::SellParams;
use crate::sparse::RowStats;

/// The largest block size `m ≥ 2` whose `m x m` blocks hold the matrix with at most
/// `max_fill` stored values per nonzero (dense blocks: close to 1), if any.
///
/// Candidates are the divisors of the gcd of the nonempty row lengths (a matrix of dense
/// `m x m` blocks has row lengths that are multiples of `m`), at most 64.
pub fn detect_block_size<V: Element>(a: &Csr<Cpu, V>, max_fill: f64) -> Option<usize> {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let g = a
        .row_ptr()
        .windows(2)
        .map(|w| (w[1] - w[0]) as usize)
        .filter(|&l| l > 0)
        .fold(0, gcd);
    if g < 2 {
        return None;
    }
    (2..=g.min(crate::sparse::block_ell::MAX_BLOCK_SIZE))
        .rev()
        .filter(|m| g % m == 0)
        .find(|&m| {
            let r = a.nrows().div_ceil(m);
            let mut blocks = 0usize;
            let mut cols: Vec<u32> = Vec::new();
            for l in 0..r {
                cols.clear();
                for row in l * m..((l + 1) * m).min(a.nrows()) {
                    cols.extend(a.row(row).0.iter().map(|&c| c / m as u32));
                }
                cols.sort_unstable();
                cols.dedup();
                blocks += cols.len();
            }
            (blocks * m * m) as f64 <= max_fill * a.nnz().max(1) as f64
        })
}

/// The most diagonals [`choose_format`] takes DIA for.
const DIA_MAX_DIAGONALS: usize = 64;

/// The most stored slots per nonzero [`choose_format`] takes DIA for.
const DIA_MAX_FILL: f64 = 1.2;

/// The format [`SparseMatrix::auto`](crate::sparse::SparseMatrix::auto) picks for a matrix with these statistics, and why.
pub fn choose_format<V: Element>(a: &Csr<Cpu, V>) -> FormatChoice {
    let s: &RowStats = a.stats();
    if let Some(m) = detect_block_size(a, 1.15) {
        return FormatChoice {
            format: Format::BlockEll,
            params: format!("block size {m}, direct kernel"),
            reason: format!("dense {m}x{m} blocks hold the nonzeros with at most 15% fill"),
        };
    }
    // A structured grid's matrix: a few full diagonals store no column index (a third fewer
    // bytes than SELL in f64).
    if let Some(offsets) = diagonal_offsets(a, DIA_MAX_DIAGONALS) {
        let slots = offsets.len() as f64 * a.nrows() as f64;
        if a.nnz() > 0 && slots <= DIA_MAX_FILL * a.nnz() as f64 {
            return FormatChoice {
                format: Format::Dia,
                params: format!("{} diagonals", offsets.len()),
                reason: format!(
                    "{} diagonals hold the nonzeros with {:.1}% padding",
                    offsets.len(),
                    100.0 * (slots / a.nnz() as f64 - 1.0)
                ),
            };
        }
    }
    if s.mean >= 32.0 && s.std_dev > 0.25 * s.mean {
        let kernel = CsrKernel::Auto.resolve(s);
        return FormatChoice {
            format: Format::Csr,
            params: format!("{kernel:?}"),
            reason: format!(
                "long, uneven rows (mean {:.1}, std {:.1}): a group of units per row without padding",
                s.mean, s.std_dev
            ),
        };
    }
    let params = SellParams::default_for(s);
    FormatChoice {
        format: Format::Sell,
        params: format!("C = {}, sigma = {}", params.slice_height, params.sigma),
        reason: if params.sigma == 1 {
            format!(
                "rows of nearly equal length (mean {:.1}, max {}): slices need no sorting",
                s.mean, s.max
            )
        } else {
            format!(
                "uneven rows (mean {:.1}, max {}): sorting windows keep slice padding low",
                s.mean, s.max
            )
        },
    }
}
