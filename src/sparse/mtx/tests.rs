//! Reader and writer tests: every malformed input with its line, hand-expanded symmetric,
//! pattern, integer and array files, and bit-exact round trips through plain and gzip files.

use std::io::Write;
use std::path::PathBuf;

use super::*;
use crate::sparse::random::{random_csr, RandomPattern};

const NAME: &str = "test.mtx";

fn read(text: &str) -> Result<MatrixMarket> {
    read_matrix_market_from(text.as_bytes(), NAME)
}

/// The sorted `(row, col, value bits)` triplets of a COO matrix.
fn triplets(coo: &Coo<Cpu, f64>) -> Vec<(u32, u32, u64)> {
    let mut t: Vec<_> = (0..coo.nnz())
        .map(|k| (coo.rows()[k], coo.cols()[k], coo.values()[k].to_bits()))
        .collect();
    t.sort_unstable();
    t
}

/// Hand-written 1-based `(row, col, value)` triplets in the same form.
fn expected(entries: &[(u32, u32, f64)]) -> Vec<(u32, u32, u64)> {
    let mut t: Vec<_> = entries
        .iter()
        .map(|&(r, c, v)| (r - 1, c - 1, v.to_bits()))
        .collect();
    t.sort_unstable();
    t
}

#[track_caller]
fn read_ok(text: &str) -> MatrixMarket {
    read(text).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts that `text` fails to parse at `line` with a message containing `fragment`.
#[track_caller]
fn assert_parse_error(text: &str, line: u64, fragment: &str) {
    match read(text) {
        Err(Error::Parse {
            path,
            line: l,
            message,
        }) => {
            assert_eq!(path, NAME);
            assert_eq!(l, line, "wrong line for `{message}`");
            assert!(
                message.contains(fragment),
                "message `{message}` lacks `{fragment}`"
            );
        }
        Err(e) => panic!("expected a parse error at line {line}, got {e}"),
        Ok(m) => panic!(
            "expected a parse error at line {line}, got a matrix with {} entries",
            m.matrix.nnz()
        ),
    }
}

// ---- malformed input -------------------------------------------------------------------

#[test]
fn banner_errors() {
    assert_parse_error("", 1, "empty file");
    assert_parse_error("\n", 1, "missing banner");
    assert_parse_error("1 1 1\n1 1 1.0\n", 1, "missing banner");
    assert_parse_error(
        "%MatrixMarket matrix coordinate real general\n",
        1,
        "missing banner",
    );
    assert_parse_error(
        "% a comment first\n%%MatrixMarket matrix coordinate real general\n1 1 0\n",
        1,
        "missing banner",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinate real\n1 1 0\n",
        1,
        "garbled banner",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinate real general extra\n",
        1,
        "6 words",
    );
    assert_parse_error(
        "%%MatrixMarket vector coordinate real general\n",
        1,
        "unsupported object `vector`",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinates real general\n",
        1,
        "unknown format `coordinates`",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinate complex general\n",
        1,
        "unsupported field `complex`",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinate float general\n",
        1,
        "unknown field `float`",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinate real hermitian\n",
        1,
        "unsupported symmetry `hermitian`",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinate real skew\n",
        1,
        "unknown symmetry `skew`",
    );
    assert_parse_error(
        "%%MatrixMarket matrix array pattern general\n",
        1,
        "`pattern` field needs the `coordinate` format",
    );
}

#[test]
fn size_line_errors() {
    let banner = "%%MatrixMarket matrix coordinate real general\n";
    assert_parse_error(banner, 1, "without a size line");
    assert_parse_error(
        &format!("{banner}% comment\n\n"),
        3,
        "ends after line 3 without a size line",
    );
    assert_parse_error(
        &format!("{banner}3 3\n"),
        2,
        "expected `nrows ncols entries`, found 2 numbers",
    );
    assert_parse_error(&format!("{banner}%\n3 3 1 1\n"), 3, "found 4 numbers");
    assert_parse_error(&format!("{banner}-3 3 1\n"), 2, "negative nrows `-3`");
    assert_parse_error(&format!("{banner}3 -3 1\n"), 2, "negative ncols `-3`");
    assert_parse_error(&format!("{banner}3 3 -1\n"), 2, "negative entry count `-1`");
    assert_parse_error(&format!("{banner}3 x 1\n"), 2, "malformed ncols `x`");
    assert_parse_error(
        &format!("{banner}3 3 1.5\n"),
        2,
        "malformed entry count `1.5`",
    );
    assert_parse_error(
        &format!("{banner}3 3 99999999999999999999999\n"),
        2,
        "too large",
    );
    assert_parse_error(
        &format!("{banner}4294967296 1 0\n"),
        2,
        "nrows = 4294967296 does not fit",
    );
    assert_parse_error(
        "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n",
        2,
        "must be square, but the size line declares 3 x 4",
    );
    assert_parse_error(
        "%%MatrixMarket matrix array real general\n3 3 9\n",
        2,
        "expected `nrows ncols`, found 3",
    );
    assert_parse_error(
        "%%MatrixMarket matrix array real skew-symmetric\n2 3\n",
        2,
        "must be square",
    );
}

#[test]
fn entry_count_errors() {
    let banner = "%%MatrixMarket matrix coordinate real general\n";
    // Truncated: the error names the last line of the file and both counts.
    assert_parse_error(
        &format!("{banner}3 3 3\n1 1 1.0\n2 2 2.0\n"),
        4,
        "ends after line 4: expected 3 entries (declared on line 2), found 2",
    );
    assert_parse_error(
        &format!("{banner}3 3 3\n1 1 1.0\n\n% trailing\n"),
        5,
        "found 1",
    );
    assert_parse_error(
        &format!("{banner}3 3 1\n"),
        2,
        "expected 1 entries (declared on line 2), found 0",
    );
    // Too many: the error names the first surplus line.
    assert_parse_error(
        &format!("{banner}3 3 1\n1 1 1.0\n\n2 2 2.0\n"),
        5,
        "more entries than the 1 declared on line 2",
    );
    assert_parse_error(
        "%%MatrixMarket matrix array real general\n1 2\n1\n2\n3\n",
        5,
        "more entries than the 2 declared",
    );
    assert_parse_error(
        "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n",
        4,
        "expected 3 entries",
    );
}

#[test]
fn lying_headers_do_not_allocate_what_they_declare() {
    assert_parse_error(
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 1000000000000000000\n1 1 1\n",
        3,
        "expected 1000000000000000000 entries",
    );
    assert_parse_error(
        "%%MatrixMarket matrix array real general\n4294967295 4294967295\n1.0\n",
        3,
        "expected 18446744065119617025 entries",
    );
    assert_parse_error(
        "%%MatrixMarket matrix array integer symmetric\n4294967295 4294967295\n",
        2,
        "found 0",
    );
}

#[test]
fn entry_line_errors() {
    let real = "%%MatrixMarket matrix coordinate real general\n% c\n3 4 2\n1 1 1.0\n";
    assert_parse_error(
        &format!("{real}2 2\n"),
        5,
        "expected 3 tokens (row, column, value), found 2",
    );
    assert_parse_error(&format!("{real}2\n"), 5, "found 1");
    assert_parse_error(&format!("{real}2 2 1.0 7\n"), 5, "found 4");
    assert_parse_error(
        &format!("{real}0 1 1.0\n"),
        5,
        "row index 0 is out of range 1..=3",
    );
    assert_parse_error(
        &format!("{real}4 1 1.0\n"),
        5,
        "row index 4 is out of range 1..=3",
    );
    assert_parse_error(
        &format!("{real}-1 1 1.0\n"),
        5,
        "row index -1 is out of range",
    );
    assert_parse_error(
        &format!("{real}1 5 1.0\n"),
        5,
        "column index 5 is out of range 1..=4",
    );
    assert_parse_error(
        &format!("{real}1 0 1.0\n"),
        5,
        "column index 0 is out of range",
    );
    assert_parse_error(
        &format!("{real}1.0 1 1.0\n"),
        5,
        "malformed row index `1.0`",
    );
    assert_parse_error(&format!("{real}1 x 1.0\n"), 5, "malformed column index `x`");
    assert_parse_error(
        &format!("{real}1 2 1.0.0\n"),
        5,
        "malformed real value `1.0.0`",
    );
    assert_parse_error(&format!("{real}1 2 one\n"), 5, "malformed real value `one`");
    assert_parse_error(&format!("{real}1 2 \u{fffd}\n"), 5, "malformed real value");
    let mut bytes = real.as_bytes().to_vec();
    bytes.extend_from_slice(b"1 2 \xe9\n");
    match read_matrix_market_from(&bytes[..], NAME) {
        Err(Error::Parse {
            line: 5, message, ..
        }) => assert!(message.contains("UTF-8")),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("invalid UTF-8 accepted"),
    }

    let integer = "%%MatrixMarket matrix coordinate integer general\n2 2 1\n";
    assert_parse_error(
        &format!("{integer}1 1 1.5\n"),
        3,
        "malformed integer value `1.5`",
    );
    assert_parse_error(&format!("{integer}1 1 nan\n"), 3, "malformed integer value");
    let pattern = "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n";
    assert_parse_error(
        &format!("{pattern}1 1 1.0\n"),
        3,
        "expected 2 tokens (row, column), found 3",
    );
    assert_parse_error(&format!("{pattern}1\n"), 3, "found 1");
    let array = "%%MatrixMarket matrix array real general\n2 1\n1.0\n";
    assert_parse_error(
        &format!("{array}1.0 2.0\n"),
        4,
        "expected 1 token (value), found 2",
    );
    assert_parse_error(&format!("{array}x\n"), 4, "malformed real value `x`");
}

#[test]
fn symmetric_storage_errors() {
    let symmetric = "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1.0\n";
    assert_parse_error(
        &format!("{symmetric}1 2 1.0\n"),
        4,
        "entry (1, 2) lies above the diagonal",
    );
    let skew = "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.0\n";
    assert_parse_error(
        &format!("{skew}2 2 0.0\n"),
        4,
        "diagonal entry (2, 2) in a skew-symmetric file",
    );
    assert_parse_error(&format!("{skew}2 3 1.0\n"), 4, "above the diagonal");
}

// ---- what real files contain -----------------------------------------------------------

#[test]
fn tolerates_blanks_case_comments_and_crlf() {
    let text = "%%MatrixMarket  Matrix\tCOORDINATE  real     Symmetric           \r\n\
                %\r\n\
                %FILE  s1rmt3m1.mtx   \r\n\
                \r\n\
                \t  \r\n\
                % second comment\r\n\
                \x20  3\t3   3   \r\n\
                % comment among entries\r\n\
                1 1  2.5\r\n\
                \r\n\
                \t3   1 -1.25D+01\r\n\
                3 3 1.0E-2";
    let m = read_ok(text);
    assert_eq!(
        (m.header.format, m.header.field, m.header.symmetry),
        (Format::Coordinate, Field::Real, Symmetry::Symmetric)
    );
    assert_eq!(
        (m.header.nrows, m.header.ncols, m.header.stored_entries),
        (3, 3, 3)
    );
    assert_eq!(
        m.header.comments,
        [
            "",
            "FILE  s1rmt3m1.mtx",
            " second comment",
            " comment among entries"
        ]
    );
    assert_eq!(
        triplets(&m.matrix),
        expected(&[(1, 1, 2.5), (3, 1, -12.5), (1, 3, -12.5), (3, 3, 0.01)])
    );
}

#[test]
fn byte_order_mark_before_the_banner() {
    let m = read_ok("\u{feff}%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n");
    assert_eq!(m.matrix.values(), [2.0]);
}

#[test]
fn latin1_comments_are_kept_lossily() {
    let bytes = b"%%MatrixMarket matrix coordinate real general\n% Reijo Kouhia, Espoo \xe4\n1 1 1\n1 1 3\n";
    let m = read_matrix_market_from(&bytes[..], NAME).unwrap();
    assert_eq!(m.header.comments, [" Reijo Kouhia, Espoo \u{fffd}"]);
    assert_eq!(m.matrix.values(), [3.0]);
}

#[test]
fn nan_and_infinity_are_values() {
    let m = read_ok(
        "%%MatrixMarket matrix coordinate real general\n2 2 4\n1 1 nan\n1 2 Inf\n2 1 -infinity\n2 2 -0\n",
    );
    let v = m.matrix.values();
    assert!(v[0].is_nan());
    assert_eq!(v[1], f64::INFINITY);
    assert_eq!(v[2], f64::NEG_INFINITY);
    assert_eq!(v[3].to_bits(), (-0.0f64).to_bits());
}

#[test]
fn empty_matrices() {
    for text in [
        "%%MatrixMarket matrix coordinate real general\n0 0 0\n",
        "%%MatrixMarket matrix coordinate pattern symmetric\n5 5 0\n\n",
        "%%MatrixMarket matrix array real general\n0 4\n",
        "%%MatrixMarket matrix array real skew-symmetric\n1 1\n",
    ] {
        let m = read_ok(text);
        assert_eq!((m.matrix.nnz(), m.header.stored_entries), (0, 0), "{text}");
        assert_eq!(
            (m.matrix.nrows(), m.matrix.ncols()),
            (m.header.nrows, m.header.ncols)
        );
    }
}

// ---- expansion of every field and symmetry ---------------------------------------------

#[test]
fn coordinate_symmetric_is_expanded() {
    let m = read_ok(
        "%%MatrixMarket matrix coordinate real symmetric\n4 4 5\n1 1 4\n2 1 -1\n3 2 0\n4 1 0.5\n4 4 7\n",
    );
    assert_eq!((m.header.stored_entries, m.matrix.nnz()), (5, 8));
    assert_eq!(
        triplets(&m.matrix),
        expected(&[
            (1, 1, 4.0),
            (2, 1, -1.0),
            (1, 2, -1.0),
            (3, 2, 0.0),
            (2, 3, 0.0),
            (4, 1, 0.5),
            (1, 4, 0.5),
            (4, 4, 7.0),
        ])
    );
}

#[test]
fn coordinate_skew_symmetric_is_negated() {
    let m =
        read_ok("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 2 -2\n");
    assert_eq!(
        triplets(&m.matrix),
        expected(&[(2, 1, 1.5), (1, 2, -1.5), (3, 2, -2.0), (2, 3, 2.0)])
    );
}

#[test]
fn pattern_and_integer_fields() {
    let m = read_ok("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n3 1\n3 3\n");
    assert_eq!(m.header.field, Field::Pattern);
    assert_eq!(
        triplets(&m.matrix),
        expected(&[(1, 1, 1.0), (3, 1, 1.0), (1, 3, 1.0), (3, 3, 1.0)])
    );
    let m = read_ok("%%MatrixMarket matrix coordinate pattern general\n2 3 2\n2 3\n1 1\n");
    assert_eq!(triplets(&m.matrix), expected(&[(2, 3, 1.0), (1, 1, 1.0)]));
    let m = read_ok(
        "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 -7\n3 1 +9007199254740993\n",
    );
    assert_eq!(
        triplets(&m.matrix),
        expected(&[
            (2, 1, -7.0),
            (1, 2, 7.0),
            (3, 1, 9007199254740992.0),
            (1, 3, -9007199254740992.0)
        ])
    );
}

#[test]
fn duplicates_and_zeros_are_kept() {
    let m =
        read_ok("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 2 1.5\n2 2 0\n1 2 2\n");
    assert_eq!(m.matrix.nnz(), 3);
    let csr = m.matrix.to_csr().unwrap();
    assert_eq!(
        (csr.row_ptr(), csr.col_idx(), csr.values()),
        (&[0, 1, 2][..], &[1, 1][..], &[3.5, 0.0][..])
    );
}

#[test]
fn array_general_is_column_major_with_zeros() {
    let m = read_ok("%%MatrixMarket matrix array real general\n% c\n2 3\n1\n2\n0\n4\n5\n-6e-1\n");
    assert_eq!(
        (m.header.format, m.header.stored_entries),
        (Format::Array, 6)
    );
    assert_eq!(
        triplets(&m.matrix),
        expected(&[
            (1, 1, 1.0),
            (2, 1, 2.0),
            (1, 2, 0.0),
            (2, 2, 4.0),
            (1, 3, 5.0),
            (2, 3, -0.6)
        ])
    );
}

#[test]
fn array_symmetric_and_skew_store_the_lower_triangle_by_columns() {
    // a11 a21 a31 | a22 a32 | a33
    let m = read_ok("%%MatrixMarket matrix array integer symmetric\n3 3\n1\n2\n3\n4\n0\n6\n");
    assert_eq!((m.header.stored_entries, m.matrix.nnz()), (6, 9));
    assert_eq!(
        triplets(&m.matrix),
        expected(&[
            (1, 1, 1.0),
            (2, 1, 2.0),
            (1, 2, 2.0),
            (3, 1, 3.0),
            (1, 3, 3.0),
            (2, 2, 4.0),
            (3, 2, 0.0),
            (2, 3, 0.0),
            (3, 3, 6.0),
        ])
    );
    // a21 a31 a41 | a32 a42 | a43
    let m = read_ok("%%MatrixMarket matrix array real skew-symmetric\n4 4\n1\n2\n3\n4\n5\n6\n");
    assert_eq!((m.header.stored_entries, m.matrix.nnz()), (6, 12));
    let mut entries = Vec::new();
    for (k, (r, c)) in [(2, 1), (3, 1), (4, 1), (3, 2), (4, 2), (4, 3)]
        .into_iter()
        .enumerate()
    {
        let v = (k + 1) as f64;
        entries.extend([(r, c, v), (c, r, -v)]);
    }
    assert_eq!(triplets(&m.matrix), expected(&entries));
}

// ---- I/O -------------------------------------------------------------------------------

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "galerkin-mtx-{}-{}-{test}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[track_caller]
fn assert_same_csr<V: Element>(read: &Csr<Cpu, f64>, written: &Csr<Cpu, V>) {
    assert_eq!(
        (read.nrows(), read.ncols()),
        (written.nrows(), written.ncols())
    );
    assert_eq!(read.row_ptr(), written.row_ptr());
    assert_eq!(read.col_idx(), written.col_idx());
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let widened: Vec<f64> = written.values().iter().map(|v| v.as_f64()).collect();
    assert!(bits(read.values()) == bits(&widened), "values differ");
}

/// Matrices with every awkward value a decimal writer can get wrong.
fn special_values() -> Csr<Cpu, f64> {
    let values = [
        -0.0,
        0.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.1,
        1.0 / 3.0,
        -(2.0f64.sqrt()) * 1e8,
        1e300,
    ];
    let n = values.len();
    let row_ptr = (0..=n as u32).collect();
    let col_idx = (0..n as u32).rev().collect();
    Csr::new(n, n + 2, row_ptr, col_idx, values.to_vec()).unwrap()
}

fn round_trip<V: Element>() {
    let dir = TempDir::new(&format!("round-trip-{}", V::DTYPE));
    let patterns = [
        RandomPattern::uniform(0, 0, 0, 0),
        RandomPattern::uniform(1, 1, 1, 1),
        RandomPattern::uniform(37, 1000, 0, 30),
        RandomPattern::uniform(1000, 37, 1, 5),
        RandomPattern::awkward(1003, 1003),
    ];
    for (k, pattern) in patterns.iter().enumerate() {
        let a = random_csr::<V>(pattern, 7 + k as u64).unwrap();
        for file in [format!("a{k}.mtx"), format!("a{k}.mtx.gz")] {
            let path = dir.path(&file);
            write_matrix_market(&path, &a).unwrap();
            let m = MatrixMarket::read(&path).unwrap();
            assert_eq!(m.header.symmetry, Symmetry::General);
            assert_eq!(m.header.stored_entries, a.nnz());
            assert_same_csr(&m.matrix.to_csr().unwrap(), &a);
            // Empty trailing rows and columns survive through the size line.
            assert_eq!(
                (m.matrix.nrows(), m.matrix.ncols()),
                (pattern.nrows, pattern.ncols)
            );
        }
    }
}

#[test]
fn round_trip_is_bit_exact_f64() {
    round_trip::<f64>();
}

#[test]
fn round_trip_is_bit_exact_f32() {
    round_trip::<f32>();
}

#[test]
fn round_trip_is_bit_exact_f16() {
    round_trip::<half::f16>();
}

#[test]
fn round_trip_special_values_through_a_writer() {
    let a = special_values();
    let mut text = Vec::new();
    write_matrix_market_to(&mut text, "memory", &a, Symmetry::General).unwrap();
    let m = read_matrix_market_from(&text[..], "memory").unwrap();
    assert_same_csr(&m.matrix.to_csr().unwrap(), &a);
    let nan = Csr::new(1, 1, vec![0, 1], vec![0], vec![f64::NAN]).unwrap();
    let mut text = Vec::new();
    write_matrix_market_to(&mut text, "memory", &nan, Symmetry::General).unwrap();
    let m = read_matrix_market_from(&text[..], "memory").unwrap();
    assert!(m.matrix.values()[0].is_nan());
}

/// `A + Aᵀ` (or `A - Aᵀ` without the diagonal) of a random square matrix.
fn symmetric_part(a: &Csr<Cpu, f64>, skew: bool) -> Csr<Cpu, f64> {
    let (coo, transpose) = (a.to_coo(), a.transpose().to_coo());
    let (mut rows, mut cols, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for (m, sign) in [(&coo, 1.0), (&transpose, if skew { -1.0 } else { 1.0 })] {
        for k in 0..m.nnz() {
            if !(skew && m.rows()[k] == m.cols()[k]) {
                rows.push(m.rows()[k]);
                cols.push(m.cols()[k]);
                values.push(sign * m.values()[k]);
            }
        }
    }
    Coo::new(a.nrows(), a.ncols(), rows, cols, values)
        .unwrap()
        .to_csr()
        .unwrap()
}

#[test]
fn symmetric_writers_round_trip() {
    let dir = TempDir::new("symmetric");
    let a = random_csr::<f64>(&RandomPattern::awkward(501, 501), 3).unwrap();
    for symmetry in [Symmetry::Symmetric, Symmetry::SkewSymmetric] {
        let s = symmetric_part(&a, symmetry == Symmetry::SkewSymmetric);
        let lower = (0..s.nrows())
            .map(|r| s.row(r).0.iter().filter(|&&c| c as usize <= r).count())
            .sum::<usize>();
        for file in ["s.mtx", "s.mtx.gz"] {
            let path = dir.path(file);
            write_matrix_market_with(&path, &s, symmetry).unwrap();
            let m = MatrixMarket::read(&path).unwrap();
            assert_eq!(m.header.symmetry, symmetry);
            assert_eq!(m.header.stored_entries, lower);
            assert_same_csr(&m.matrix.to_csr().unwrap(), &s);
        }
    }
}

#[test]
fn symmetric_writers_refuse_what_they_cannot_store() {
    let dir = TempDir::new("refuse");
    let refuse = |a: &Csr<Cpu, f64>, symmetry: Symmetry, fragment: &str| {
        let path = dir.path("refused.mtx");
        match write_matrix_market_with(&path, a, symmetry) {
            Err(Error::InvalidArgument { reason, .. }) => {
                assert!(reason.contains(fragment), "`{reason}` lacks `{fragment}`")
            }
            other => panic!("expected a refusal, got {:?}", other.err()),
        }
        assert!(!path.exists(), "a refused write must not create the file");
    };
    let csr = |n, entries: &[(u32, u32, f64)]| {
        let rows = entries.iter().map(|e| e.0).collect();
        let cols = entries.iter().map(|e| e.1).collect();
        let values = entries.iter().map(|e| e.2).collect();
        Coo::new(n, n, rows, cols, values)
            .unwrap()
            .to_csr()
            .unwrap()
    };
    let rectangular = Csr::new(2, 3, vec![0, 0, 0], vec![], Vec::<f64>::new()).unwrap();
    refuse(&rectangular, Symmetry::Symmetric, "square");
    refuse(
        &csr(3, &[(2, 0, 1.0)]),
        Symmetry::Symmetric,
        "(2, 0) (0-based) is stored but (0, 2) is not",
    );
    refuse(
        &csr(3, &[(2, 0, 1.0), (0, 2, 1.0 + f64::EPSILON)]),
        Symmetry::Symmetric,
        "but (2, 0) is 1e0",
    );
    refuse(
        &csr(3, &[(2, 0, 1.0), (0, 2, 1.0)]),
        Symmetry::SkewSymmetric,
        "not -1",
    );
    refuse(&csr(3, &[(1, 1, 0.0)]), Symmetry::SkewSymmetric, "diagonal");
    // A pair of zeros is skew-symmetric whatever their signs.
    let zeros = csr(3, &[(2, 0, 0.0), (0, 2, 0.0)]);
    write_matrix_market_with(dir.path("zeros.mtx"), &zeros, Symmetry::SkewSymmetric).unwrap();
    assert_eq!(read_matrix_market(dir.path("zeros.mtx")).unwrap().nnz(), 2);
}

#[test]
fn gzip_is_detected_by_content_not_name() {
    let dir = TempDir::new("gzip");
    let text = "%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 -3.5\n";
    let disguised = dir.path("compressed.mtx");
    std::fs::write(&disguised, gzip(text.as_bytes())).unwrap();
    let plain = dir.path("plain.mtx.gz");
    std::fs::write(&plain, text).unwrap();
    for path in [&disguised, &plain] {
        let coo = read_matrix_market(path).unwrap();
        assert_eq!(triplets(&coo), expected(&[(2, 1, -3.5)]));
    }
    let compressed = gzip(text.as_bytes());
    let m = read_matrix_market_from(&compressed[..], "memory").unwrap();
    assert_eq!(triplets(&m.matrix), expected(&[(2, 1, -3.5)]));
    // Two gzip members one after the other (as `cat a.gz b.gz` makes) are one text.
    let (head, tail) = text.split_at(50);
    let mut members = gzip(head.as_bytes());
    members.extend(gzip(tail.as_bytes()));
    let m = read_matrix_market_from(&members[..], "memory").unwrap();
    assert_eq!(triplets(&m.matrix), expected(&[(2, 1, -3.5)]));
}

#[test]
fn io_errors_name_the_file() {
    let dir = TempDir::new("io");
    let missing = dir.path("missing.mtx");
    match read_matrix_market(&missing) {
        Err(Error::Io { path, .. }) => assert_eq!(path, missing.display().to_string()),
        other => panic!("expected an I/O error, got {:?}", other.err()),
    }
    let corrupt = dir.path("corrupt.mtx.gz");
    let mut bytes = gzip(b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n");
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&corrupt, &bytes).unwrap();
    assert!(matches!(
        read_matrix_market(&corrupt),
        Err(Error::Io { .. })
    ));
    let a = special_values();
    let unwritable = dir.path("no-such-dir").join("a.mtx");
    assert!(matches!(
        write_matrix_market(&unwritable, &a),
        Err(Error::Io { .. })
    ));
}
