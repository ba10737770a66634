//! The Matrix Market writer: `coordinate real`, shortest round-trip decimals.

use std::io::{BufWriter, Write};

use super::{Symmetry, BUFFER};
use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::Csr;

/// Checks that `matrix` has `symmetry` exactly, as
/// [`write_matrix_market_with`](super::write_matrix_market_with) documents.
pub(super) fn check_symmetry<V: Element>(matrix: &Csr<Cpu, V>, symmetry: Symmetry) -> Result<()> {
    let fail = |reason: String| {
        Err(Error::InvalidArgument {
            op: "write_matrix_market",
            name: "symmetry",
            reason,
        })
    };
    if symmetry == Symmetry::General {
        return Ok(());
    }
    if matrix.nrows() != matrix.ncols() {
        return fail(format!(
            "a {} file needs a square matrix, this one is {} x {}",
            symmetry.keyword(),
            matrix.nrows(),
            matrix.ncols()
        ));
    }
    let skew = symmetry == Symmetry::SkewSymmetric;
    for r in 0..matrix.nrows() {
        let (cols, values) = matrix.row(r);
        for (&c, &v) in cols.iter().zip(values) {
            let (c, v) = (c as usize, v.as_f64());
            if skew && c == r {
                return fail(format!(
                    "entry ({r}, {r}) (0-based) is stored on the diagonal, which a \
                     skew-symmetric file cannot hold"
                ));
            }
            let (mirror_cols, mirror_values) = matrix.row(c);
            let Ok(k) = mirror_cols.binary_search(&(r as u32)) else {
                return fail(format!(
                    "entry ({r}, {c}) (0-based) is stored but ({c}, {r}) is not"
                ));
            };
            let m = mirror_values[k].as_f64();
            let same = if skew {
                (m == 0.0 && v == 0.0) || m.to_bits() == (-v).to_bits()
            } else {
                m.to_bits() == v.to_bits()
            };
            if !same {
                return fail(format!(
                    "entry ({r}, {c}) (0-based) is {v:e} but ({c}, {r}) is {m:e}, not {:e}",
                    if skew { -v } else { v }
                ));
            }
        }
    }
    Ok(())
}

/// Writes the banner, the size line and the stored part of the matrix (symmetry checked).
pub(super) fn write_entries<W: Write, V: Element>(
    writer: W,
    name: &str,
    matrix: &Csr<Cpu, V>,
    symmetry: Symmetry,
) -> Result<()> {
    let keep = |row: usize, col: usize| match symmetry {
        Symmetry::General => true,
        Symmetry::Symmetric => col <= row,
        Symmetry::SkewSymmetric => col < row,
    };
    let stored = (0..matrix.nrows())
        .map(|r| {
            matrix
                .row(r)
                .0
                .iter()
                .filter(|&&c| keep(r, c as usize))
                .count()
        })
        .sum::<usize>();
    let mut out = BufWriter::with_capacity(BUFFER, writer);
    let mut write = || -> std::io::Result<()> {
        writeln!(
            out,
            "%%MatrixMarket matrix coordinate real {}",
            symmetry.keyword()
        )?;
        writeln!(out, "{} {} {stored}", matrix.nrows(), matrix.ncols())?;
        for r in 0..matrix.nrows() {
            let (cols, values) = matrix.row(r);
            for (&c, &v) in cols.iter().zip(values) {
                if keep(r, c as usize) {
                    // `{:e}` is the shortest representation that round-trips.
                    writeln!(out, "{} {} {:e}", r + 1, c + 1, v.as_f64())?;
                }
            }
        }
        out.flush()
    };
    write().map_err(|source| Error::Io {
        path: name.to_string(),
        source,
    })
}
