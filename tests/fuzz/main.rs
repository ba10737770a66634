//! Mutation fuzzing of every reader and parser a user's input reaches: Matrix Market, Gmsh
//! (and the tetrahedral and triangle meshes built from it) and the expressions of the
//! examples. Stable Rust, no coverage guidance: each target starts from a corpus of valid
//! inputs and of the hostile cases of issue 46, and applies random mutations (bit flips,
//! interesting bytes, deletions, duplications, splices between inputs, numbers replaced by
//! extreme ones, lines repeated, truncation). An input fails the target when the code under
//! test panics or takes longer than `GALERKIN_FUZZ_INPUT_SECONDS` (default 5); errors are
//! the expected outcome of most inputs.
//!
//! `GALERKIN_FUZZ_SECONDS` (default 2) is the time per target; CI runs 60. A finding is
//! written to `target/fuzz-findings/<target>-<n>` and fails the test, with the input's
//! first bytes in the message. `GALERKIN_FUZZ_SEED` changes the seed (default 46).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use galerkin::dg::TetMesh;
use galerkin::expr::Expr;
use galerkin::mesh::tri::TriMesh;

/// xorshift64*: deterministic per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Numbers that break careless code.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2147483648",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999",
    "-9223372036854775809",
    "1e308",
    "1e999",
    "-1e999",
    "1e-320",
    "nan",
    "inf",
    "-0",
    "0x10",
    "1.5D+03",
    "",
];

fn mutate(rng: &mut Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = out.len();
        match rng.below(10) {
            0 if len > 0 => {
                let i = rng.below(len);
                out[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                out[i] = *[0u8, b'\n', b' ', b'-', b'.', b'e', b'$', b'%', 0xff, b'(']
                    .get(rng.below(10))
                    .unwrap_or(&0);
            }
            2 if len > 0 => {
                let (i, n) = (rng.below(len), 1 + rng.below(64));
                out.drain(i..(i + n).min(len));
            }
            3 if len > 0 => {
                let (i, n) = (rng.below(len), 1 + rng.below(256));
                let piece: Vec<u8> = out[i..(i + n).min(len)].to_vec();
                let at = rng.below(len);
                out.splice(at..at, piece);
            }
            4 => {
                let other = &corpus[rng.below(corpus.len())];
                if !other.is_empty() {
                    let (i, n) = (rng.below(other.len()), 1 + rng.below(512));
                    let piece = &other[i..(i + n).min(other.len())];
                    let at = rng.below(len + 1);
                    out.splice(at..at, piece.iter().copied());
                }
            }
            5 | 6 => {
                // A number token replaced by an extreme one.
                let starts: Vec<usize> = (0..len)
                    .filter(|&i| {
                        out[i].is_ascii_digit() && (i == 0 || !out[i - 1].is_ascii_alphanumeric())
                    })
                    .collect();
                if !starts.is_empty() {
                    let s = starts[rng.below(starts.len())];
                    let mut e = s;
                    while e < len && (out[e].is_ascii_alphanumeric() || b".+-".contains(&out[e])) {
                        e += 1;
                    }
                    let number = NUMBERS[rng.below(NUMBERS.len())].as_bytes();
                    out.splice(s..e, number.iter().copied());
                }
            }
            7 => {
                // A line repeated (duplicate elements, entries, sections).
                let lines: Vec<usize> = std::iter::once(0)
                    .chain((0..len).filter(|&i| out[i] == b'\n').map(|i| i + 1))
                    .filter(|&i| i < len)
                    .collect();
                if !lines.is_empty() {
                    let s = lines[rng.below(lines.len())];
                    let e = out[s..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(len, |p| s + p + 1);
                    let line = out[s..e].to_vec();
                    for _ in 0..1 + rng.below(3) {
                        out.splice(e..e, line.iter().copied());
                    }
                }
            }
            8 if len > 0 => out.truncate(rng.below(len)),
            _ => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                out.splice(at..at, bytes);
            }
        }
    }
    out.truncate(1 << 16);
    out
}

fn seconds(var: &str, default: f64) -> f64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `target` on mutations of `corpus` for the configured time; returns the inputs run.
fn fuzz(name: &str, corpus: Vec<Vec<u8>>, target: impl Fn(&[u8])) -> usize {
    let budget = Duration::from_secs_f64(seconds("GALERKIN_FUZZ_SECONDS", 2.0));
    let slow = Duration::from_secs_f64(seconds("GALERKIN_FUZZ_INPUT_SECONDS", 5.0));
    let seed = std::env::var("GALERKIN_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(46u64);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let start = Instant::now();
    let mut runs = 0;
    // The corpus itself first, then mutations.
    let mut queue: Vec<Vec<u8>> = corpus.clone();
    while start.elapsed() < budget || !queue.is_empty() {
        let input = queue.pop().unwrap_or_else(|| {
            let base = &corpus[rng.below(corpus.len())];
            mutate(&mut rng, base, &corpus)
        });
        let t = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| target(&input)));
        let took = t.elapsed();
        runs += 1;
        if result.is_err() || took > slow {
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings");
            std::fs::create_dir_all(&dir).ok();
            let path = dir.join(format!("{name}-{runs}"));
            std::fs::write(&path, &input).ok();
            panic!(
                "{name}: {} on input {runs} (saved to {}): {:?}",
                if result.is_err() {
                    "panic".to_string()
                } else {
                    format!("took {took:?}")
                },
                path.display(),
                String::from_utf8_lossy(&input[..input.len().min(300)])
            );
        }
    }
    println!(
        "fuzz {name}: {runs} inputs in {:.1} s, no finding",
        start.elapsed().as_secs_f64()
    );
    runs
}

/// The first `bytes` of a file of the shared data, cut at a line end, if it is there.
fn data_head(relative: &str, bytes: usize) -> Option<Vec<u8>> {
    let dir = std::env::var("GALERKIN_DATA_DIR").unwrap_or_else(|_| "../shared/data".into());
    let text = std::fs::read(std::path::Path::new(&dir).join(relative)).ok()?;
    let mut head = text[..text.len().min(bytes)].to_vec();
    if let Some(end) = head.iter().rposition(|&b| b == b'\n') {
        head.truncate(end + 1);
    }
    Some(head)
}

const MTX: &[&str] = &[
    "%%MatrixMarket matrix coordinate real general\n% a comment\n3 3 4\n1 1 2.0\n2 2 3.5\n3 1 -1e-3\n3 3 4\n",
    "%%MatrixMarket matrix coordinate real symmetric\n4 4 6\n1 1 4\n2 1 -1\n2 2 4\n3 2 -1\n3 3 4\n4 4 4\n",
    "%%MatrixMarket matrix coordinate pattern general\n2 3 3\n1 1\n1 3\n2 2\n",
    "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 2 -7\n",
    "%%MatrixMarket matrix array real general\n2 2\n1.0\n2.0\n3.0\n4.0\n",
    "%%MatrixMarket matrix array real symmetric\n2 2\n1.5D+00\n-2\n3\n",
    // The hostile cases: a huge header, NaN and infinite values, indices out of range.
    "%%MatrixMarket matrix coordinate real general\n1000000000 1000000000 5\n1 1 1\n",
    "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 nan\n2 2 inf\n",
    "%%MatrixMarket matrix coordinate real general\n2 2 2\n0 1 1\n3 2 1\n",
    "%%MatrixMarket matrix array real general\n4294967295 4294967295\n1\n",
];

#[test]
fn matrix_market() {
    let mut corpus: Vec<Vec<u8>> = MTX.iter().map(|s| s.as_bytes().to_vec()).collect();
    corpus.extend(data_head("mtx/HB_bcsstk09.mtx", 4096));
    let runs = fuzz("matrix_market", corpus, |input| {
        if let Ok(m) = galerkin::sparse::read_matrix_market_from(input, "fuzz.mtx") {
            // What the examples do next: CSR, and a product with it (for sizes a fuzz input
            // is about: a header may declare 10⁹ empty rows, which is valid but slow).
            let (rows, cols) = (m.header.nrows, m.header.ncols);
            if rows.max(cols) > 1 << 16 {
                return;
            }
            if let Ok(a) = m.matrix.to_csr() {
                let x = vec![1.0; a.ncols()];
                let _ = a.stats();
                let cpu = galerkin::Cpu::new();
                if let (Ok(xv), Ok(mut y)) = (
                    galerkin::Vector::from_slice(&cpu, &x),
                    galerkin::Vector::zeros(&cpu, a.nrows()),
                ) {
                    let _ = a.spmv(1.0, &xv, 0.0, &mut y);
                }
            }
        }
    });
    assert!(runs >= MTX.len());
}

const V2: &str = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n\
$PhysicalNames\n2\n2 6 \"outer\"\n3 7 \"solid\"\n$EndPhysicalNames\n\
$Nodes\n8\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 1 1 0\n5 0 0 1\n6 1 0 1\n7 0 1 1\n8 1 1 1\n$EndNodes\n\
$Elements\n8\n1 2 2 6 1 1 2 4\n2 2 2 6 1 1 4 3\n\
3 4 2 7 1 1 2 4 8\n4 4 2 7 1 1 2 8 6\n5 4 2 7 1 1 4 3 8\n6 4 2 7 1 1 3 7 8\n\
7 4 2 7 1 1 5 6 8\n8 4 2 7 1 1 7 5 8\n$EndElements\n";

const V2_TRI: &str = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n\
$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 1 1 0\n4 0 1 0\n$EndNodes\n\
$Elements\n6\n1 1 2 1 1 1 2\n2 1 2 2 2 2 3\n3 1 2 3 3 3 4\n4 1 2 4 4 4 1\n\
5 2 2 5 5 1 2 3\n6 2 2 5 5 1 3 4\n$EndElements\n";

const V41: &str = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n\
$Entities\n1 0 0 1\n1 0 0 0 0\n5 0 0 0 1 1 1 1 9 0\n$EndEntities\n\
$Nodes\n2 4 1 12\n0 1 0 1\n12\n0 0 0\n3 5 0 3\n1\n2\n3\n1 0 0\n0 1 0\n0 0 1\n$EndNodes\n\
$Elements\n1 1 1 1\n3 5 4 1\n1 12 1 2 3\n$EndElements\n";

#[test]
fn gmsh() {
    let hostile = [
        // A duplicated tetrahedron, a hexahedron and a quadrilateral among tetrahedra.
        V2.replace("$Elements\n8\n", "$Elements\n9\n9 4 2 7 1 1 2 4 8\n"),
        V2.replace(
            "$Elements\n8\n",
            "$Elements\n9\n9 5 2 7 1 1 2 4 3 5 6 8 7\n",
        ),
        V2.replace("$Elements\n8\n", "$Elements\n9\n9 3 2 6 1 1 2 4 3\n"),
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4000000000\n".to_string(),
        // A finding: a declared count of 2³² nodes and one node tag 2³² made the node table
        // dense up to the tag (17 GB, 40 s).
        V2.replace("$Nodes\n8\n", "$Nodes\n4294967296\n")
            .replace("\n5 0 0 1\n", "\n4294967296 0 0 1\n"),
    ];
    let mut corpus: Vec<Vec<u8>> = [V2, V2_TRI, V41]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .chain(hostile.iter().map(|s| s.as_bytes().to_vec()))
        .collect();
    corpus.extend(data_head("msh/amfe_pleuel_7000_tet3d_v22.msh", 6000));
    fuzz("gmsh", corpus, |input| {
        if let Ok(mesh) = galerkin::mesh::gmsh::read_from(input, "fuzz.msh") {
            // What the examples do next: the DG and HDG meshes, and their geometry.
            if let Ok(tets) = TetMesh::from_gmsh(&mesh) {
                let _ = tets.clone().with_absorbing(&[6]);
                let _ = galerkin::mesh::tet_neighbors(&tets.tets, tets.points.len())
                    .and_then(|n| galerkin::mesh::check_conforming(&tets.tets, &tets.points, &n));
            }
            let _ = TriMesh::from_gmsh(&mesh);
            let _ = TriMesh::from_gmsh_with_default_tag(&mesh, 1);
        }
    });
}

const EXPRESSIONS: &[&str] = &[
    "sin(pi*x)*sin(pi*y)",
    "exp(x)*cos(pi*y) + 2e3*x^2 - y/(1+x^2)",
    "atan2(y, x) + pow(x, 3) - min(x, y) * max(x, 0.5)",
    "sqrt(abs(x - 0.5)) + log(1 + y) + cbrt(x) - tanh(y) ** 2",
    "nx*cos(x) + ny*y^2",
    "((((((x))))))",
    "1/0",
    "log(-1)",
    "-x^-2^-3",
    "x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x*x",
];

#[test]
fn expressions() {
    let corpus: Vec<Vec<u8>> = EXPRESSIONS.iter().map(|s| s.as_bytes().to_vec()).collect();
    fuzz("expressions", corpus, |input| {
        let text = String::from_utf8_lossy(input);
        for variables in [&["x", "y"][..], &["x", "y", "nx", "ny"][..]] {
            if let Ok(e) = Expr::parse(&text, variables) {
                let values = [0.25, -0.75, 0.6, 0.8];
                let _ = e.eval(&values[..variables.len()]);
                let _ = e.eval_jet(&values[..variables.len()]).laplacian();
            }
        }
    });
}
