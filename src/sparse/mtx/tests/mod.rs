//! Reader tests: every malformed input with its line, hand-expanded symmetric, pattern,
//! integer and array files. The writer and round trips through files are in `io`.

use super::*;

mod io;

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
    // More entries than any host holds: refused from the size line, before any entry is
    // read or any memory reserved for them.
    for text in [
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 1000000000000000000\n1 1 1\n",
        "%%MatrixMarket matrix coordinate real general\n2 2 1000000000000000\n1 1 1\n",
        "%%MatrixMarket matrix array real general\n4294967295 4294967295\n1.0\n",
        "%%MatrixMarket matrix array integer symmetric\n4294967295 4294967295\n",
    ] {
        match read(text) {
            Err(Error::ResourceLimit { what, .. }) => assert!(
                what.contains("declared on line 2") && what.contains(NAME),
                "{what}"
            ),
            Err(e) => panic!("expected a resource limit for {text:?}, got {e}"),
            Ok(_) => panic!("expected a resource limit for {text:?}, got a matrix"),
        }
    }
    // A count the host could hold that the text does not: the error comes at its end.
    assert_parse_error(
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 1000\n1 1 1\n",
        3,
        "expected 1000 entries",
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
