//! Writer tests and bit-exact round trips through plain and gzip files.

use std::io::Write;
use std::path::PathBuf;

use super::*;
use crate::sparse::random::{random_csr, RandomPattern};

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

#[test]
fn declared_counts_beyond_the_host_are_refused_plain_or_gzip() {
    // A tiny file whose size line declares 10^15 entries (16 PB of triplets): refused from
    // the size line whether the file is plain (its length known) or compressed (not).
    let dir = TempDir::new("declared");
    let text = "%%MatrixMarket matrix coordinate real general\n2 2 1000000000000000\n1 1 1\n";
    let plain = dir.path("plain.mtx");
    std::fs::write(&plain, text).unwrap();
    let compressed = dir.path("compressed.mtx.gz");
    std::fs::write(&compressed, gzip(text.as_bytes())).unwrap();
    for path in [&plain, &compressed] {
        match read_matrix_market(path) {
            Err(Error::ResourceLimit { what, .. }) => assert!(
                what.contains("1000000000000000 entries declared on line 2"),
                "{what}"
            ),
            Err(e) => panic!("{}: expected a resource limit, got {e}", path.display()),
            Ok(_) => panic!(
                "{}: expected a resource limit, got a matrix",
                path.display()
            ),
        }
    }
    let bytes = gzip(text.as_bytes());
    assert!(matches!(
        read_matrix_market_from(&bytes[..], "memory.mtx.gz"),
        Err(Error::ResourceLimit { .. })
    ));
}
