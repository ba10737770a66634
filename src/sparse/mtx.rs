//! Matrix Market files: the NIST exchange format of SuiteSparse and most sparse codes.
//!
//! ```text
//!  %%MatrixMarket matrix coordinate real symmetric     <- banner: format, field, symmetry
//!  % any number of comment lines                        <- comments (and blank lines)
//!  3 3 4                                                <- nrows ncols stored-entries
//!  1 1  4.0                                             <- 1-based (row, column, value)
//!  2 1 -1.0                                                 lower triangle only: (1, 2)
//!  2 2  4.0                                                 is implied by (2, 1)
//!  3 3  2.0
//! ```
//!
//! The reader streams the file line by line (plain or gzip, detected by the magic bytes
//! `1f 8b`, not the extension) into a [`Coo`] matrix that holds the full matrix: symmetric
//! and skew-symmetric storage is expanded (off-diagonal entries mirrored, negated for
//! skew-symmetric). It accepts
//!
//! | format | fields | symmetries |
//! |---|---|---|
//! | `coordinate` | `real`, `integer`, `pattern` (every value 1) | `general`, `symmetric`, `skew-symmetric` |
//! | `array` (dense, column-major) | `real`, `integer` | `general`, `symmetric`, `skew-symmetric` |
//!
//! and refuses `complex` values and `hermitian` symmetry with an [`Error::Parse`] that says
//! so. What it decides where the specification is silent or real files stray from it:
//! - Keywords are case-insensitive; blanks, tabs and `\r\n` line ends are whitespace;
//!   blank lines and `%` comment lines may appear anywhere after the banner (comments
//!   are kept in [`MatrixMarketHeader::comments`], and may hold any bytes); a UTF-8
//!   byte-order mark before the banner is skipped.
//! - Nothing that the file stores is dropped: explicit zeros are entries, every value of
//!   an array file is an entry (zeros included), and repeated coordinates stay separate
//!   entries of the [`Coo`] matrix (summed by [`Csr::from_coo`]).
//! - NaN and infinite values (`nan`, `inf`, `infinity`, any case) are valid floats and are
//!   read as such. Fortran exponents (`1.5D+03`) are accepted.
//! - Integer values are read as `i64` and stored as the nearest `f64` (exact up to 2⁵³).
//! - A symmetric or skew-symmetric file must store the lower triangle, as the format
//!   says: an entry above the diagonal is an error (mirroring it could silently double an
//!   entry of a file that stores both triangles), and so is a diagonal entry in a
//!   skew-symmetric file.
//! - Memory: the text is never held whole; the matrix takes 16 bytes per expanded entry
//!   (`u32` row, `u32` column, `f64` value). The header's entry count is trusted for
//!   preallocation only up to what the file's size allows (or 2²⁴ entries when the size is
//!   unknown, as for gzip), so a header that lies cannot reserve terabytes.
//! - Every malformed line is an [`Error::Parse`] with its 1-based line number; a
//!   truncated file reports the last line it has and how many entries it holds of how many
//!   were declared.
//!
//! The writer stores `coordinate real` (general, or one triangle of a symmetric or
//! skew-symmetric matrix) with the shortest decimal of every value that reads back to the
//! same `f64`, so a write-read round trip is bit-exact; a path ending in `.gz` is
//! compressed.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::{Coo, Csr};

mod part;
mod read;

pub use part::{read_matrix_market_part, MatrixMarketPart};
#[cfg(test)]
mod tests;
mod write;

use read::read_detecting_gzip;
use write::{check_symmetry, write_entries};

/// Buffer size of the readers and writers.
const BUFFER: usize = 1 << 16;

/// How a file stores the matrix (second word of the banner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `coordinate`: one `row column [value]` line per stored entry.
    Coordinate,
    /// `array`: every value of the (stored part of the) dense matrix, column by column.
    Array,
}

/// The type of the values (third word of the banner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `real`: floating-point values.
    Real,
    /// `integer`: integer values, read as `f64`.
    Integer,
    /// `pattern`: no values (coordinate format only); every entry reads as 1.
    Pattern,
}

/// Which part of the matrix a file stores (fourth word of the banner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symmetry {
    /// `general`: every entry.
    General,
    /// `symmetric`: the lower triangle with the diagonal; `a(j, i) = a(i, j)`.
    Symmetric,
    /// `skew-symmetric`: the strict lower triangle; `a(j, i) = -a(i, j)`, zero diagonal.
    SkewSymmetric,
}

impl Symmetry {
    /// The banner keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            Symmetry::General => "general",
            Symmetry::Symmetric => "symmetric",
            Symmetry::SkewSymmetric => "skew-symmetric",
        }
    }
}

/// What the banner and the size line of a file declare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixMarketHeader {
    /// Coordinate or array.
    pub format: Format,
    /// Real, integer or pattern.
    pub field: Field,
    /// General, symmetric or skew-symmetric.
    pub symmetry: Symmetry,
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
    /// Entries the file stores: the size line's count (coordinate), or the values of the
    /// stored part of the array (`nrows ncols`, `n (n + 1) / 2` symmetric, `n (n - 1) / 2`
    /// skew-symmetric). The matrix has more after symmetric expansion.
    pub stored_entries: usize,
    /// The comment lines, without the leading `%` and trailing blanks, in file order.
    pub comments: Vec<String>,
}

/// A Matrix Market file as read: its header and the full (expanded) matrix.
pub struct MatrixMarket {
    /// What the file declares.
    pub header: MatrixMarketHeader,
    /// The matrix, symmetric storage expanded, entries in file order (each mirror right
    /// after its entry).
    pub matrix: Coo<Cpu, f64>,
}

impl MatrixMarket {
    /// Reads a Matrix Market file, plain or gzip-compressed (detected by its first bytes).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read or decompressed; [`Error::Parse`] with the
    /// line number for malformed or unsupported content (see the [module docs](self)).
    pub fn read(path: impl AsRef<Path>) -> Result<MatrixMarket> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let io = |source| Error::Io {
            path: name.clone(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let bytes = file.metadata().map_err(io)?.len();
        read_detecting_gzip(BufReader::with_capacity(BUFFER, file), &name, Some(bytes))
    }
}

/// Reads a Matrix Market file into a full COO matrix; [`MatrixMarket::read`] also gives
/// the header.
///
/// # Errors
/// As [`MatrixMarket::read`].
///
/// # Example
/// ```no_run
/// let a = galerkin::sparse::read_matrix_market("bcsstk09.mtx.gz")?.to_csr()?;
/// # Ok::<(), galerkin::Error>(())
/// ```
pub fn read_matrix_market(path: impl AsRef<Path>) -> Result<Coo<Cpu, f64>> {
    MatrixMarket::read(path).map(|m| m.matrix)
}

/// Reads Matrix Market text (plain or gzip-compressed) from any buffered reader; `name`
/// stands for the file in error messages.
///
/// # Errors
/// As [`MatrixMarket::read`].
///
/// # Example
/// ```
/// use galerkin::sparse::read_matrix_market_from;
///
/// let text = "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n1 1 4\n2 1 -1\n";
/// let m = read_matrix_market_from(text.as_bytes(), "inline")?;
/// assert_eq!((m.header.stored_entries, m.matrix.nnz()), (2, 3));
/// # Ok::<(), galerkin::Error>(())
/// ```
pub fn read_matrix_market_from<R: BufRead>(reader: R, name: &str) -> Result<MatrixMarket> {
    read_detecting_gzip(reader, name, None)
}

/// Writes `matrix` as `coordinate real general`, gzip-compressed when the path ends in
/// `.gz`. Every value is written as the shortest decimal that reads back to the same
/// `f64` (which holds every element type exactly), so reading the file gives the same
/// matrix bit for bit.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn write_matrix_market<V: Element>(path: impl AsRef<Path>, matrix: &Csr<Cpu, V>) -> Result<()> {
    write_matrix_market_with(path, matrix, Symmetry::General)
}

/// As [`write_matrix_market`], storing only the lower triangle when `symmetry` is
/// [`Symmetric`](Symmetry::Symmetric) or the strict lower triangle when it is
/// [`SkewSymmetric`](Symmetry::SkewSymmetric). Nothing is written unless the matrix has
/// that symmetry exactly: every mirrored value equal bit for bit (for skew-symmetric,
/// negated; a pair of zeros of any sign counts, its sign is not kept).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the first entry that breaks the symmetry, or if the
/// matrix is not square; [`Error::Io`] if the file cannot be written.
pub fn write_matrix_market_with<V: Element>(
    path: impl AsRef<Path>,
    matrix: &Csr<Cpu, V>,
    symmetry: Symmetry,
) -> Result<()> {
    check_symmetry(matrix, symmetry)?;
    let path = path.as_ref();
    let name = path.display().to_string();
    let io = |source| Error::Io {
        path: name.clone(),
        source,
    };
    let file = File::create(path).map_err(io)?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    if gz {
        let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        write_entries(&mut encoder, &name, matrix, symmetry)?;
        encoder.finish().map_err(io)?;
        Ok(())
    } else {
        write_entries(file, &name, matrix, symmetry)
    }
}

/// As [`write_matrix_market_with`], to any writer (uncompressed); `name` stands for the
/// destination in error messages.
///
/// # Errors
/// As [`write_matrix_market_with`].
///
/// # Example
/// ```
/// use galerkin::sparse::mtx::Symmetry;
/// use galerkin::sparse::{read_matrix_market_from, write_matrix_market_to, Csr};
///
/// // | 2  -1 |
/// // | -1  2 |
/// let a = Csr::new(2, 2, vec![0, 2, 4], vec![0, 1, 0, 1], vec![2.0f32, -1.0, -1.0, 2.0])?;
/// let mut text = Vec::new();
/// write_matrix_market_to(&mut text, "memory", &a, Symmetry::Symmetric)?;
/// assert_eq!(
///     String::from_utf8(text.clone()).unwrap(),
///     "%%MatrixMarket matrix coordinate real symmetric\n2 2 3\n1 1 2e0\n2 1 -1e0\n2 2 2e0\n"
/// );
/// let b = read_matrix_market_from(&text[..], "memory")?.matrix.to_csr()?;
/// assert_eq!((b.col_idx(), b.values()), (a.col_idx(), &[2.0, -1.0, -1.0, 2.0][..]));
/// # Ok::<(), galerkin::Error>(())
/// ```
pub fn write_matrix_market_to<W: Write, V: Element>(
    writer: W,
    name: &str,
    matrix: &Csr<Cpu, V>,
    symmetry: Symmetry,
) -> Result<()> {
    check_symmetry(matrix, symmetry)?;
    write_entries(writer, name, matrix, symmetry)
}
