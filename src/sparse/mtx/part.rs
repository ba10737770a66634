//! One part of a Matrix Market file, for reading in parallel: the entries whose lines start in
//! the part's share of the file's bytes (plain coordinate files), so that no process reads
//! or holds the whole matrix.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use super::read::{coordinate_entry, parse_banner, parse_size_line, Line, Lines, Triplets};
use super::{Format, MatrixMarketHeader, BUFFER};
use crate::error::{Error, Result};
use crate::limits::{read_line, LineError, MAX_LINE_BYTES};

/// The entries of one part of a Matrix Market file ([`read_matrix_market_part`]), symmetric
/// storage expanded (a mirror entry stays with its entry, whichever row it is in).
#[derive(Clone, Debug)]
pub struct MatrixMarketPart {
    /// What the file declares.
    pub header: MatrixMarketHeader,
    /// 0-based rows of the entries.
    pub rows: Vec<u32>,
    /// 0-based columns.
    pub cols: Vec<u32>,
    /// Values (1 for a pattern file).
    pub values: Vec<f64>,
    /// Entry lines read (before expansion): the parts' counts add up to the declared count.
    pub entry_lines: usize,
}

/// Reads part `part` of `parts` of a plain-text coordinate Matrix Market file: the header,
/// then only the entry lines that start in the part's share of the bytes after the size
/// line (`parts` equal shares; a line belongs to the share its first byte is in). The parts
/// together hold every entry once. Errors name the file and the line (counted only when an
/// error is found).
///
/// # Errors
/// [`Error::Io`]; [`Error::Parse`] for a bad header or entry; [`Error::Unsupported`] for a
/// gzip-compressed or `array` file (read those whole with
/// [`MatrixMarket::read`](super::MatrixMarket::read)); [`Error::InvalidArgument`] for
/// `part >= parts`.
pub fn read_matrix_market_part(
    path: impl AsRef<Path>,
    part: usize,
    parts: usize,
) -> Result<MatrixMarketPart> {
    let path = path.as_ref();
    let name = path.display().to_string();
    if part >= parts {
        return Err(Error::InvalidArgument {
            op: "read_matrix_market_part",
            name: "part",
            reason: format!("part {part} of {parts} does not exist"),
        });
    }
    let io = |source| Error::Io {
        path: name.clone(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io)?;
    if n == 2 && magic == [0x1f, 0x8b] {
        return Err(unsupported(
            &name,
            "a gzip-compressed file cannot be split by bytes",
        ));
    }
    file.seek(SeekFrom::Start(0)).map_err(io)?;

    // The header, counting the bytes it takes.
    let mut lines = Lines {
        reader: BufReader::with_capacity(
            4096,
            Counting {
                inner: &mut file,
                read: 0,
            },
        ),
        name: &name,
        line: 0,
    };
    let mut buf = Vec::with_capacity(256);
    let (format, field, symmetry) = parse_banner(&mut lines)?;
    let header = parse_size_line(&mut lines, &mut buf, format, field, symmetry)?;
    if header.format == Format::Array {
        return Err(unsupported(
            &name,
            "an `array` file has no coordinates to split by",
        ));
    }
    let header_lines = lines.line;
    let data_start = lines.reader.get_ref().read - lines.reader.buffer().len() as u64;
    drop(lines);

    // This part's byte share, moved to the start of the first line that begins in it.
    let data = file_len.saturating_sub(data_start);
    let share = |k: usize| data_start + (data as u128 * k as u128 / parts as u128) as u64;
    let (begin, end) = (share(part), share(part + 1));
    let start = match line_start_at_or_after(&mut file, begin, data_start) {
        Ok(start) => start,
        Err(LineError::Io(source)) => return Err(io(source)),
        // The line that straddles the share's start is too long: name it.
        Err(LineError::TooLong) => {
            return Err(at_line(
                path,
                &name,
                begin.saturating_sub(1),
                header_lines,
                too_long(&name),
            ))
        }
    };
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut reader = BufReader::with_capacity(BUFFER, &mut file);
    let mut at = start;
    let mut triplets = Triplets::with_capacity(0);
    let mut entry_lines = 0usize;
    let mut raw = Vec::with_capacity(256);
    while at < end {
        let line_at = at;
        let read = match read_line(&mut reader, &mut raw, MAX_LINE_BYTES) {
            Ok(read) => read,
            Err(LineError::Io(source)) => return Err(io(source)),
            Err(LineError::TooLong) => {
                return Err(at_line(path, &name, line_at, header_lines, too_long(&name)))
            }
        };
        if read == 0 {
            break;
        }
        at += read as u64;
        let mut one = Lines {
            reader: &raw[..],
            name: &name,
            line: 0,
        };
        let mut text_buf = Vec::new();
        let text = match one.next(&mut text_buf) {
            Ok(Some(Line::Content(text))) => text,
            Ok(_) => continue,
            Err(e) => return Err(at_line(path, &name, line_at, header_lines, e)),
        };
        let (row, col, value) = coordinate_entry(text, &header).map_err(|message| {
            at_line(
                path,
                &name,
                line_at,
                header_lines,
                Error::Parse {
                    path: name.clone(),
                    line: 0,
                    message,
                },
            )
        })?;
        triplets.push(row, col, value, header.symmetry);
        entry_lines += 1;
    }
    let Triplets { rows, cols, values } = triplets;
    Ok(MatrixMarketPart {
        header,
        rows,
        cols,
        values,
        entry_lines,
    })
}

fn unsupported(name: &str, reason: &str) -> Error {
    Error::Unsupported {
        what: format!("reading {name} in parts"),
        backend: "the Matrix Market reader".into(),
        reason: format!("{reason}; read it whole (MatrixMarket::read)"),
    }
}

/// The error for a line longer than [`MAX_LINE_BYTES`] (its line number is set by
/// [`at_line`]).
fn too_long(name: &str) -> Error {
    Error::Parse {
        path: name.to_string(),
        line: 0,
        message: format!(
            "the line is longer than {MAX_LINE_BYTES} bytes (not a Matrix Market file?)"
        ),
    }
}

/// The first line start at or after `pos` (`pos` itself if the byte before it ends a line).
/// The rest of the line skipped is read with the same bound as every line.
fn line_start_at_or_after(
    file: &mut File,
    pos: u64,
    data_start: u64,
) -> std::result::Result<u64, LineError> {
    if pos <= data_start {
        return Ok(data_start);
    }
    file.seek(SeekFrom::Start(pos - 1)).map_err(LineError::Io)?;
    let mut reader = BufReader::with_capacity(4096, file);
    let mut skipped = Vec::new();
    let n = read_line(&mut reader, &mut skipped, MAX_LINE_BYTES)?;
    Ok(pos - 1 + n as u64)
}

/// The error `e` (from one line) with the line's number in the file, counted now.
fn at_line(path: &Path, name: &str, line_at: u64, header_lines: u64, e: Error) -> Error {
    let line = File::open(path)
        .ok()
        .and_then(|f| {
            let mut count = 0u64;
            let mut reader = BufReader::with_capacity(BUFFER, f.take(line_at));
            loop {
                let chunk = reader.fill_buf().ok()?;
                if chunk.is_empty() {
                    break;
                }
                count += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
                let n = chunk.len();
                reader.consume(n);
            }
            Some(count + 1)
        })
        .unwrap_or(header_lines);
    match e {
        Error::Parse { message, .. } => Error::Parse {
            path: name.to_string(),
            line,
            message,
        },
        other => other,
    }
}

/// A reader that counts the bytes it hands out.
struct Counting<'f> {
    inner: &'f mut File,
    read: u64,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}
