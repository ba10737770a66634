//! The Matrix Market reader: a line reader with line numbers, then banner, size line and
//! entries, each checked with its own error.

use std::io::{BufRead, BufReader};

use super::{Field, Format, MatrixMarket, MatrixMarketHeader, Symmetry, BUFFER};
use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::sparse::Coo;

/// Entries preallocated at most, whatever the header declares and the text could hold: a
/// header that declares more than its file holds must not reserve terabytes. Beyond it,
/// vectors grow.
const PREALLOCATION_CAP: usize = 1 << 24;

/// Host bytes of one stored entry: a `u32` row, a `u32` column and an `f64` value.
const ENTRY_BYTES: u64 = 16;

/// Reads plain or gzip-compressed text; `text_bytes`, when known, bounds the preallocation.
pub(super) fn read_detecting_gzip<R: BufRead>(
    mut reader: R,
    name: &str,
    text_bytes: Option<u64>,
) -> Result<MatrixMarket> {
    let head = reader.fill_buf().map_err(|source| Error::Io {
        path: name.to_string(),
        source,
    })?;
    if head.starts_with(&[0x1f, 0x8b]) {
        let decoder = flate2::bufread::MultiGzDecoder::new(reader);
        // The compressed size says nothing about the number of lines.
        parse(BufReader::with_capacity(BUFFER, decoder), name, None)
    } else {
        parse(reader, name, text_bytes)
    }
}

/// The lines of a file with their 1-based numbers. Each line is read into a buffer the
/// caller owns and reuses, so that the text of a line and the error context (this struct)
/// can be borrowed at the same time.
pub(super) struct Lines<'a, R> {
    pub(super) reader: R,
    pub(super) name: &'a str,
    pub(super) line: u64,
}

/// What a line holds, once leading whitespace is skipped.
pub(super) enum Line<'b> {
    Blank,
    Comment(&'b [u8]),
    Content(&'b str),
}

impl<R: BufRead> Lines<'_, R> {
    /// Reads the next line into `buf`; `None` at the end of the file.
    pub(super) fn next<'b>(&mut self, buf: &'b mut Vec<u8>) -> Result<Option<Line<'b>>> {
        use crate::limits::{read_line, LineError, MAX_LINE_BYTES};
        let read = match read_line(&mut self.reader, buf, MAX_LINE_BYTES) {
            Ok(read) => read,
            Err(LineError::Io(source)) => {
                return Err(Error::Io {
                    path: self.name.to_string(),
                    source,
                })
            }
            Err(LineError::TooLong) => {
                self.line += 1;
                return Err(self.error(format!(
                    "the line is longer than {MAX_LINE_BYTES} bytes (not a Matrix Market file?)"
                )));
            }
        };
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        let Some(start) = buf.iter().position(|b| !b.is_ascii_whitespace()) else {
            return Ok(Some(Line::Blank));
        };
        // Comments may hold any bytes (Latin-1 names are common); content must be UTF-8.
        if buf[start] == b'%' {
            return Ok(Some(Line::Comment(&buf[start..])));
        }
        match std::str::from_utf8(&buf[start..]) {
            Ok(text) => Ok(Some(Line::Content(text))),
            Err(_) => Err(self.error("the line is not valid UTF-8 text".into())),
        }
    }

    /// An [`Error::Parse`] at the current line.
    pub(super) fn error(&self, message: String) -> Error {
        Error::Parse {
            path: self.name.to_string(),
            line: self.line,
            message,
        }
    }
}

/// A comment line without its `%` and trailing blanks.
fn comment_text(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[1..]);
    text.trim_end().to_string()
}

/// Shortens a token quoted in an error message.
fn quote(token: &str) -> String {
    const MAX: usize = 40;
    match token.char_indices().nth(MAX) {
        Some((end, _)) => format!("`{}...`", &token[..end]),
        None => format!("`{token}`"),
    }
}

pub(super) fn parse_banner<R: BufRead>(
    lines: &mut Lines<'_, R>,
) -> Result<(Format, Field, Symmetry)> {
    let expected = "`%%MatrixMarket matrix <format> <field> <symmetry>`";
    let mut buf = Vec::new();
    if lines.next(&mut buf)?.is_none() {
        lines.line = 1;
        return Err(lines.error(format!("empty file: expected the banner {expected}")));
    }
    let line = String::from_utf8_lossy(&buf);
    // A byte-order mark, as some Windows editors write, is not part of the banner.
    let line = line.strip_prefix('\u{feff}').unwrap_or(&line);
    let words: Vec<String> = line
        .split_ascii_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    if words.first().map(String::as_str) != Some("%%matrixmarket") {
        return Err(lines.error(format!(
            "missing banner: the first line must be {expected}, found {}",
            quote(line.trim())
        )));
    }
    if words.len() != 5 {
        return Err(lines.error(format!(
            "garbled banner: expected {expected} (5 words), found {} words",
            words.len()
        )));
    }
    if words[1] != "matrix" {
        return Err(lines.error(format!(
            "unsupported object {}: only `matrix` is supported",
            quote(&words[1])
        )));
    }
    let format = match words[2].as_str() {
        "coordinate" => Format::Coordinate,
        "array" => Format::Array,
        other => {
            return Err(lines.error(format!(
                "unknown format {}: expected `coordinate` or `array`",
                quote(other)
            )))
        }
    };
    let field =
        match words[3].as_str() {
            "real" => Field::Real,
            "integer" => Field::Integer,
            "pattern" => Field::Pattern,
            "complex" => return Err(lines.error(
                "unsupported field `complex`: galerkin reads real, integer and pattern matrices"
                    .into(),
            )),
            other => {
                return Err(lines.error(format!(
                    "unknown field {}: expected `real`, `integer` or `pattern`",
                    quote(other)
                )))
            }
        };
    let symmetry = match words[4].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => {
            return Err(lines.error(
                "unsupported symmetry `hermitian`: galerkin reads general, symmetric and \
                 skew-symmetric matrices"
                    .into(),
            ))
        }
        other => {
            return Err(lines.error(format!(
                "unknown symmetry {}: expected `general`, `symmetric` or `skew-symmetric`",
                quote(other)
            )))
        }
    };
    if format == Format::Array && field == Field::Pattern {
        return Err(lines.error("the `pattern` field needs the `coordinate` format".into()));
    }
    Ok((format, field, symmetry))
}

/// Parses a dimension or count of the size line.
fn parse_size(token: &str, what: &str) -> std::result::Result<u64, String> {
    token.parse::<u64>().map_err(|e| {
        if token.parse::<i64>().is_ok() {
            format!("negative {what} {}", quote(token))
        } else if *e.kind() == std::num::IntErrorKind::PosOverflow {
            format!("{what} {} is too large", quote(token))
        } else {
            format!(
                "malformed {what} {}: expected a non-negative integer",
                quote(token)
            )
        }
    })
}

/// Parses a 1-based index in `1..=n` into a 0-based one.
fn parse_index(token: &str, n: usize, what: &str) -> std::result::Result<usize, String> {
    match token.parse::<u64>() {
        Ok(i) if i >= 1 && i <= n as u64 => Ok(i as usize - 1),
        Ok(_) => Err(format!("{what} index {token} is out of range 1..={n}")),
        Err(_) if token.parse::<i64>().is_ok() => {
            Err(format!("{what} index {token} is out of range 1..={n}"))
        }
        Err(_) => Err(format!("malformed {what} index {}", quote(token))),
    }
}

/// Parses a value of the given field (not `Pattern`).
fn parse_value(token: &str, field: Field) -> std::result::Result<f64, String> {
    let value = match field {
        Field::Integer => token.parse::<i64>().ok().map(|v| v as f64),
        _ => token.parse::<f64>().ok().or_else(|| parse_fortran(token)),
    };
    value.ok_or_else(|| match field {
        Field::Integer => format!("malformed integer value {}", quote(token)),
        _ => format!("malformed real value {}", quote(token)),
    })
}

/// Parses a Fortran real with a `D` exponent (`1.5D+03`): only on the slow path, after
/// the ordinary parse failed.
fn parse_fortran(token: &str) -> Option<f64> {
    let mut buf = [0u8; 64];
    let bytes = token.as_bytes();
    if bytes.len() > buf.len() || !bytes.iter().any(|&b| b == b'd' || b == b'D') {
        return None;
    }
    for (dst, &b) in buf.iter_mut().zip(bytes) {
        *dst = if b == b'd' || b == b'D' { b'e' } else { b };
    }
    std::str::from_utf8(&buf[..bytes.len()]).ok()?.parse().ok()
}

/// The triplet arrays being filled.
pub(super) struct Triplets {
    pub(super) rows: Vec<u32>,
    pub(super) cols: Vec<u32>,
    pub(super) values: Vec<f64>,
}

impl Triplets {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Triplets {
            rows: Vec::with_capacity(capacity),
            cols: Vec::with_capacity(capacity),
            values: Vec::with_capacity(capacity),
        }
    }

    /// Stores `(row, col, value)` and, off the diagonal of symmetric storage, its mirror.
    /// Indices were checked against the size (which fits `u32`) by the caller.
    #[inline]
    pub(super) fn push(&mut self, row: usize, col: usize, value: f64, symmetry: Symmetry) {
        self.rows.push(row as u32);
        self.cols.push(col as u32);
        self.values.push(value);
        if row != col && symmetry != Symmetry::General {
            self.rows.push(col as u32);
            self.cols.push(row as u32);
            self.values.push(match symmetry {
                Symmetry::SkewSymmetric => -value,
                _ => value,
            });
        }
    }
}

/// Reads a whole file: banner, comments, size line, entries.
fn parse<R: BufRead>(reader: R, name: &str, text_bytes: Option<u64>) -> Result<MatrixMarket> {
    let mut lines = Lines {
        reader,
        name,
        line: 0,
    };
    let mut buf = Vec::with_capacity(256);
    let (format, field, symmetry) = parse_banner(&mut lines)?;
    let mut header = parse_size_line(&mut lines, &mut buf, format, field, symmetry)?;
    let matrix = read_entries(&mut lines, &mut buf, &mut header, text_bytes)?;
    Ok(MatrixMarket { header, matrix })
}

/// Skips comments and blank lines up to the size line and checks the sizes; the header
/// it returns holds the comments read so far.
pub(super) fn parse_size_line<R: BufRead>(
    lines: &mut Lines<'_, R>,
    buf: &mut Vec<u8>,
    format: Format,
    field: Field,
    symmetry: Symmetry,
) -> Result<MatrixMarketHeader> {
    let mut comments = Vec::new();
    let (expected, count) = match format {
        Format::Coordinate => ("`nrows ncols entries`", 3),
        Format::Array => ("`nrows ncols`", 2),
    };
    let mut sizes = [0u64; 3];
    loop {
        let text = match lines.next(buf)? {
            None => {
                return Err(lines.error(format!(
                    "the file ends after line {} without a size line",
                    lines.line
                )))
            }
            Some(Line::Blank) => continue,
            Some(Line::Comment(line)) => {
                comments.push(comment_text(line));
                continue;
            }
            Some(Line::Content(text)) => text,
        };
        let found = text.split_ascii_whitespace().count();
        if found != count {
            return Err(lines.error(format!(
                "malformed size line: expected {expected}, found {found} numbers"
            )));
        }
        let what = ["nrows", "ncols", "entry count"];
        for (k, token) in text.split_ascii_whitespace().enumerate() {
            sizes[k] = parse_size(token, what[k]).map_err(|m| lines.error(m))?;
        }
        break;
    }
    let [nrows, ncols, entries] = sizes;
    for (n, what) in [(nrows, "nrows"), (ncols, "ncols")] {
        if n > u64::from(u32::MAX) {
            return Err(lines.error(format!(
                "{what} = {n} does not fit the 32-bit indices galerkin uses"
            )));
        }
    }
    if symmetry != Symmetry::General && nrows != ncols {
        return Err(lines.error(format!(
            "a {} matrix must be square, but the size line declares {nrows} x {ncols}",
            symmetry.keyword()
        )));
    }
    let stored_entries = match (format, symmetry) {
        (Format::Coordinate, _) => Some(entries),
        (Format::Array, Symmetry::General) => nrows.checked_mul(ncols),
        (Format::Array, Symmetry::Symmetric) => nrows.checked_mul(nrows + 1).map(|m| m / 2),
        (Format::Array, Symmetry::SkewSymmetric) => {
            nrows.checked_mul(nrows.saturating_sub(1)).map(|m| m / 2)
        }
    }
    .and_then(|s| usize::try_from(s).ok())
    .ok_or_else(|| lines.error("the declared number of entries is too large".into()))?;
    Ok(MatrixMarketHeader {
        format,
        field,
        symmetry,
        nrows: nrows as usize,
        ncols: ncols as usize,
        stored_entries,
        comments,
    })
}

/// Reads the entry lines (and the comments among them) after the size line.
fn read_entries<R: BufRead>(
    lines: &mut Lines<'_, R>,
    buf: &mut Vec<u8>,
    header: &mut MatrixMarketHeader,
    text_bytes: Option<u64>,
) -> Result<Coo<Cpu, f64>> {
    let (nrows, stored, symmetry) = (header.nrows, header.stored_entries, header.symmetry);
    let size_line = lines.line;
    let expansion = if symmetry == Symmetry::General { 1 } else { 2 };
    // The reader never holds more than the declared entries (expanded), so a count the
    // host cannot hold is refused now, before the text is read, plain or gzip-compressed.
    crate::limits::check_host_items(
        format!(
            "the {stored} entries declared on line {size_line} of {}",
            lines.name
        ),
        (stored as u64).saturating_mul(expansion as u64),
        ENTRY_BYTES,
    )?;
    // Preallocate what the header declares, but no more than the text can hold (an
    // entry line has at least 2 bytes) and never more than the cap.
    let bound = match text_bytes {
        Some(bytes) => usize::try_from(bytes / 2).unwrap_or(usize::MAX),
        None => PREALLOCATION_CAP,
    };
    let capacity = stored.min(bound).min(PREALLOCATION_CAP);
    let mut triplets = Triplets::with_capacity(capacity.saturating_mul(expansion));

    // An array's position advances down the stored part of each column.
    let first_row = |col: usize| match symmetry {
        Symmetry::General => 0,
        Symmetry::Symmetric => col,
        Symmetry::SkewSymmetric => col + 1,
    };
    let (mut array_row, mut array_col) = (first_row(0), 0usize);
    let mut read = 0usize;
    loop {
        let text = match lines.next(buf)? {
            None => break,
            Some(Line::Blank) => continue,
            Some(Line::Comment(line)) => {
                header.comments.push(comment_text(line));
                continue;
            }
            Some(Line::Content(text)) => text,
        };
        if read == stored {
            return Err(lines.error(format!(
                "more entries than the {stored} declared on line {size_line}"
            )));
        }
        let entry = match header.format {
            Format::Coordinate => coordinate_entry(text, header),
            Format::Array => array_value(text, header.field).map(|v| (array_row, array_col, v)),
        };
        let (row, col, value) = entry.map_err(|m| lines.error(m))?;
        triplets.push(row, col, value, symmetry);
        if header.format == Format::Array {
            array_row += 1;
            if array_row == nrows {
                array_col += 1;
                array_row = first_row(array_col);
            }
        }
        read += 1;
    }
    if read < stored {
        return Err(lines.error(format!(
            "the file ends after line {}: expected {stored} entries (declared on line \
             {size_line}), found {read}",
            lines.line
        )));
    }
    let Triplets { rows, cols, values } = triplets;
    // Every index was checked against the size line, which fits u32.
    Ok(Coo {
        nrows,
        ncols: header.ncols,
        rows,
        cols,
        values,
        backend: Cpu::new(),
    })
}

/// The 0-based `(row, col, value)` of a coordinate entry line.
#[inline]
pub(super) fn coordinate_entry(
    text: &str,
    header: &MatrixMarketHeader,
) -> std::result::Result<(usize, usize, f64), String> {
    let field = header.field;
    let mut tokens = text.split_ascii_whitespace();
    let wrong = || wrong_tokens(text, Format::Coordinate, field);
    let (Some(i), Some(j)) = (tokens.next(), tokens.next()) else {
        return Err(wrong());
    };
    let value = match field {
        Field::Pattern => None,
        _ => Some(tokens.next().ok_or_else(wrong)?),
    };
    if tokens.next().is_some() {
        return Err(wrong());
    }
    let row = parse_index(i, header.nrows, "row")?;
    let col = parse_index(j, header.ncols, "column")?;
    let value = match value {
        Some(v) => parse_value(v, field)?,
        None => 1.0,
    };
    let symmetry = header.symmetry;
    if symmetry != Symmetry::General && col > row {
        return Err(format!(
            "entry ({i}, {j}) lies above the diagonal: a {} file stores the lower triangle \
             only",
            symmetry.keyword()
        ));
    }
    if symmetry == Symmetry::SkewSymmetric && col == row {
        return Err(format!(
            "diagonal entry ({i}, {j}) in a skew-symmetric file, whose diagonal is zero and \
             not stored"
        ));
    }
    Ok((row, col, value))
}

/// The value of an array entry line.
#[inline]
fn array_value(text: &str, field: Field) -> std::result::Result<f64, String> {
    let mut tokens = text.split_ascii_whitespace();
    match (tokens.next(), tokens.next()) {
        (Some(v), None) => parse_value(v, field),
        _ => Err(wrong_tokens(text, Format::Array, field)),
    }
}

/// The message for an entry line with the wrong number of tokens.
fn wrong_tokens(text: &str, format: Format, field: Field) -> String {
    let expected = match (format, field) {
        (Format::Array, _) => "1 token (value)",
        (Format::Coordinate, Field::Pattern) => "2 tokens (row, column)",
        (Format::Coordinate, _) => "3 tokens (row, column, value)",
    };
    format!(
        "expected {expected}, found {}",
        text.split_ascii_whitespace().count()
    )
}
