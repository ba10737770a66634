//! Matrix Market reader and writer on the real matrices of `$GALERKIN_DATA_DIR/mtx`: shape,
//! entry counts and four reference norms from `MANIFEST.md` (computed there by an
//! independent Python reader with `math.fsum`), and a bit-exact write-read round trip.

use std::path::{Path, PathBuf};

use galerkin::sparse::mtx::{Field, Format, Symmetry};
use galerkin::sparse::{write_matrix_market_with, Coo, Csr, MatrixMarket};
use galerkin::Cpu;

use crate::harness::{announce, exact_sum};

/// What `MANIFEST.md` says about one file.
struct Reference {
    file: &'static str,
    symmetry: Symmetry,
    nrows: usize,
    ncols: usize,
    stored_entries: usize,
    nnz: usize,
    diagonal: usize,
    /// sum(A), ‖A‖_F, ‖A·1‖₂, ‖A·1‖∞ of the expanded matrix.
    norms: [f64; 4],
}

const fn reference(
    file: &'static str,
    symmetry: Symmetry,
    (nrows, ncols, stored_entries, nnz, diagonal): (usize, usize, usize, usize, usize),
    norms: [f64; 4],
) -> Reference {
    Reference {
        file,
        symmetry,
        nrows,
        ncols,
        stored_entries,
        nnz,
        diagonal,
        norms,
    }
}

const REFERENCES: [Reference; 7] = [
    reference(
        "HB_bcsstk09.mtx",
        Symmetry::Symmetric,
        (1083, 1083, 9760, 18437, 1083),
        [
            8.687330265982e+09,
            8.573407485077e+08,
            3.170509406029e+08,
            3.067743986836e+07,
        ],
    ),
    reference(
        "HB_bcsstk10.mtx.gz",
        Symmetry::Symmetric,
        (1086, 1086, 11578, 22070, 1086),
        [
            6.873048203600e+08,
            2.973578577509e+08,
            8.099932997700e+07,
            1.339445064048e+07,
        ],
    ),
    reference(
        "HB_bcsstk13.mtx",
        Symmetry::Symmetric,
        (2003, 2003, 42943, 83883, 2003),
        [
            3.022073990812e+13,
            7.536390473475e+12,
            2.373720172033e+12,
            6.086214309110e+11,
        ],
    ),
    reference(
        "Cylshell_s1rmt3m1.mtx.gz",
        Symmetry::Symmetric,
        (5489, 5489, 112505, 219521, 5489),
        [
            9.514309884906e+06,
            1.746605252855e+07,
            1.081144578821e+06,
            1.728490640122e+05,
        ],
    ),
    reference(
        "Bai_af23560.mtx.gz",
        Symmetry::General,
        (23560, 23560, 484256, 484256, 23560),
        [
            -1.173277087434e+04,
            1.024790564554e+04,
            1.671210150528e+03,
            3.539242981471e+02,
        ],
    ),
    reference(
        "HB_orsreg_1.mtx.gz",
        Symmetry::General,
        (2205, 2205, 14133, 14133, 2205),
        [
            -1.062601543101e+04,
            8.544216805166e+05,
            2.270112908789e+02,
            5.000042860001e+00,
        ],
    ),
    reference(
        "HB_sherman5.mtx.gz",
        Symmetry::General,
        (3312, 3312, 20793, 20793, 3312),
        [
            -9.581972573417e+04,
            1.404250554478e+04,
            4.382910387362e+03,
            3.889672044000e+02,
        ],
    ),
];

/// The MANIFEST values have 13 significant digits.
const RELATIVE_TOLERANCE: f64 = 1e-12;

/// The `mtx` folder of the data directory, or `None` (announced) when it is not set.
fn data_files(test: &str) -> Option<Vec<PathBuf>> {
    let Some(dir) = std::env::var_os("GALERKIN_DATA_DIR") else {
        announce(&format!(
            "[galerkin tests] skipping {test}: GALERKIN_DATA_DIR unset"
        ));
        return None;
    };
    let dir = Path::new(&dir).join("mtx");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "GALERKIN_DATA_DIR is set but {} is unreadable: {e}",
                dir.display()
            )
        })
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    Some(files)
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("?")
}

/// sum(A), ‖A‖_F, ‖A·1‖₂, ‖A·1‖∞, each from compensated sums.
fn norms(coo: &Coo<Cpu, f64>) -> [f64; 4] {
    let values = coo.values();
    let csr = coo.to_csr().unwrap();
    let row_sums: Vec<f64> = (0..csr.nrows())
        .map(|r| exact_sum(csr.row(r).1.iter().copied()))
        .collect();
    [
        exact_sum(values.iter().copied()),
        exact_sum(values.iter().map(|v| v * v)).sqrt(),
        exact_sum(row_sums.iter().map(|s| s * s)).sqrt(),
        row_sums.iter().fold(0.0f64, |m, s| m.max(s.abs())),
    ]
}

#[test]
fn real_files_match_the_manifest() {
    let Some(files) = data_files("mtx::real_files_match_the_manifest") else {
        return;
    };
    let mut checked = Vec::new();
    for path in &files {
        let name = file_name(path);
        let m = MatrixMarket::read(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let h = &m.header;
        assert_eq!(
            (h.format, h.field),
            (Format::Coordinate, Field::Real),
            "{name}"
        );
        let Some(r) = REFERENCES.iter().find(|r| r.file == name) else {
            announce(&format!(
                "[galerkin tests] {name}: read, {} x {}, {} entries; no reference values",
                h.nrows,
                h.ncols,
                m.matrix.nnz()
            ));
            continue;
        };
        let coo = &m.matrix;
        let diagonal = (0..coo.nnz())
            .filter(|&k| coo.rows()[k] == coo.cols()[k])
            .count();
        assert_eq!(
            (
                h.symmetry,
                h.nrows,
                h.ncols,
                h.stored_entries,
                coo.nnz(),
                diagonal
            ),
            (
                r.symmetry,
                r.nrows,
                r.ncols,
                r.stored_entries,
                r.nnz,
                r.diagonal
            ),
            "{name}: symmetry, rows, cols, stored entries, expanded nnz, diagonal entries"
        );
        assert_eq!((coo.nrows(), coo.ncols()), (r.nrows, r.ncols), "{name}");
        let found = norms(coo);
        for ((what, f), e) in ["sum(A)", "‖A‖_F", "‖A·1‖₂", "‖A·1‖∞"]
            .iter()
            .zip(found)
            .zip(r.norms)
        {
            let error = (f - e).abs() / e.abs();
            assert!(
                error <= RELATIVE_TOLERANCE,
                "{name}: {what} = {f:.12e}, MANIFEST {e:.12e} (relative error {error:.1e})"
            );
        }
        checked.push(name.to_string());
    }
    for r in &REFERENCES {
        assert!(
            checked.iter().any(|c| c == r.file),
            "{} is listed in MANIFEST.md but missing from the data directory",
            r.file
        );
    }
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn real_files_round_trip_bit_exact() {
    let Some(files) = data_files("mtx::real_files_round_trip_bit_exact") else {
        return;
    };
    let dir = TempDir(std::env::temp_dir().join(format!("galerkin-it-mtx-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    for path in &files {
        let name = file_name(path);
        let original = MatrixMarket::read(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let a: Csr<Cpu, f64> = original.matrix.to_csr().unwrap();
        let symmetry = original.header.symmetry;
        let copy = dir.0.join(format!("{name}.copy.mtx.gz"));
        write_matrix_market_with(&copy, &a, symmetry).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = MatrixMarket::read(&copy).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The same triangle is stored again (the files have no duplicate coordinates).
        assert_eq!(
            back.header.stored_entries, original.header.stored_entries,
            "{name}"
        );
        assert_eq!(back.header.symmetry, symmetry, "{name}");
        let b = back.matrix.to_csr().unwrap();
        assert_eq!((b.nrows(), b.ncols()), (a.nrows(), a.ncols()), "{name}");
        assert_eq!(b.row_ptr(), a.row_ptr(), "{name}");
        assert_eq!(b.col_idx(), a.col_idx(), "{name}");
        let bits = |m: &Csr<Cpu, f64>| m.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&b) == bits(&a),
            "{name}: values differ after the round trip"
        );
    }
}
