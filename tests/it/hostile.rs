//! Hostile input at the front doors (issue 46): each class of input that crashed, hung or
//! gave exit 0 with a wrong answer now ends in a typed error (exit 2) or an honest
//! "not converged" (exit 3), with a message that names what is wrong.

use std::path::PathBuf;
use std::process::Output;

use super::examples::{object, run};

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("galerkin-hostile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Asserts exit status `code`, no panic, and every word in stderr.
fn expect(out: &Output, code: i32, words: &[&str], what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    for w in words {
        assert!(err.contains(w), "{what}: {err:?} lacks {w:?}");
    }
}

/// Points of the grid `x ∈ {0, 1, 2}`, `y, z ∈ {0, 1}`, index `x + 3 (y + 2 z)`.
fn point(x: usize, y: usize, z: usize) -> usize {
    x + 3 * (y + 2 * z)
}

fn coordinates(p: usize) -> [f64; 3] {
    [(p % 3) as f64, ((p / 3) % 2) as f64, (p / 6) as f64]
}

/// The 6 Kuhn tetrahedra of the unit cube whose local corner `(i, j, k)` is the point
/// `corner(i, j, k)`, positively oriented.
fn kuhn(corner: impl Fn(usize, usize, usize) -> usize) -> Vec<[usize; 4]> {
    let mut tets = Vec::new();
    for order in [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ] {
        let mut at = [0usize; 3];
        let mut tet = [corner(0, 0, 0); 4];
        for (s, &axis) in order.iter().enumerate() {
            at[axis] = 1;
            tet[s + 1] = corner(at[0], at[1], at[2]);
        }
        let [a, b, c, d] = tet.map(coordinates);
        let (u, v, w) = (
            [b[0] - a[0], b[1] - a[1], b[2] - a[2]],
            [c[0] - a[0], c[1] - a[1], c[2] - a[2]],
            [d[0] - a[0], d[1] - a[1], d[2] - a[2]],
        );
        let det = u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0])
            + u[2] * (v[0] * w[1] - v[1] * w[0]);
        if det < 0.0 {
            tet.swap(2, 3);
        }
        tets.push(tet);
    }
    tets
}

/// Two unit cubes side by side as Gmsh 2.2; `mirrored` reflects the second cube's
/// tetrahedra in y, so that the diagonals of the shared face do not match.
fn two_cubes(mirrored: bool, extra: &[&str]) -> String {
    let mut tets = kuhn(point);
    tets.extend(kuhn(|i, j, k| {
        point(1 + i, if mirrored { 1 - j } else { j }, k)
    }));
    let mut text = String::from("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n12\n");
    for p in 0..12 {
        let c = coordinates(p);
        text += &format!("{} {} {} {}\n", p + 1, c[0], c[1], c[2]);
    }
    text += &format!("$EndNodes\n$Elements\n{}\n", tets.len() + extra.len());
    for (e, t) in tets.iter().enumerate() {
        text += &format!(
            "{} 4 2 7 1 {} {} {} {}\n",
            e + 1,
            t[0] + 1,
            t[1] + 1,
            t[2] + 1,
            t[3] + 1
        );
    }
    for (k, line) in extra.iter().enumerate() {
        text += &format!("{} {line}\n", tets.len() + k + 1);
    }
    text + "$EndElements\n"
}

/// A mesh case: file name, mirrored second cube, extra element lines, extra arguments and
/// the words of the error.
type MeshCase<'a> = (&'a str, bool, &'a [&'a str], &'a [&'a str], &'a [&'a str]);

#[test]
fn maxwell_refuses_bad_meshes_and_endless_runs() {
    let dir = scratch("maxwell");
    let mesh =
        |name: &str, mirrored: bool, extra: &[&str]| write(&dir, name, &two_cubes(mirrored, extra));
    let maxwell = |path: &str, extra: &[&str]| {
        let mut args = vec!["--mesh", path, "--order", "1", "--final-time", "0.05"];
        args.extend_from_slice(extra);
        run("maxwell", &args)
    };
    // The conforming mesh runs: the controls of the refusals below.
    let good = mesh("good.msh", false, &[]);
    let out = maxwell(&good, &["--json"]);
    expect(&out, 0, &[], "two conforming cubes");
    let v = object(&out.stdout);
    assert!(v["energy_final"].as_f64().unwrap() <= v["energy_initial"].as_f64().unwrap());

    let cases: [MeshCase; 4] = [
        ("mismatched.msh", true, &[], &[], &["not conforming"]),
        (
            "duplicate.msh",
            false,
            &["4 2 7 1 1 2 5 11"],
            &[],
            &["same points"],
        ),
        (
            "hexahedron.msh",
            false,
            &["5 2 7 1 1 2 5 4 7 8 11 10"],
            &[],
            &["Hex8", "does not support"],
        ),
        // Tag 9 on a face shared by two tetrahedra (inside the first cube).
        (
            "interior-tag.msh",
            false,
            &["2 2 9 1 1 5 11"],
            &["--absorbing", "9"],
            &["tag 9", "boundary face"],
        ),
    ];
    for (name, mirrored, extra, args, words) in cases {
        let path = mesh(name, mirrored, extra);
        expect(&maxwell(&path, args), 2, words, name);
    }
    for (args, words) in [
        (
            &["--final-time", "1e300"][..],
            &["time steps", "max_steps"][..],
        ),
        (&["--cfl", "1e-300"], &["time steps"]),
        (&["--mode", "4294967296,1,0"], &["above 1000"]),
    ] {
        expect(&run("maxwell", args), 2, words, &format!("{args:?}"));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The unit square's two triangles beside a square whose left edge carries a hanging node.
const HANGING_2D: &str = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n7\n\
1 0 0 0\n2 1 0 0\n3 1 1 0\n4 0 1 0\n5 2 0 0\n6 2 1 0\n7 1 0.5 0\n$EndNodes\n$Elements\n5\n\
1 2 2 5 5 1 2 3\n2 2 2 5 5 1 3 4\n3 2 2 5 5 2 5 7\n4 2 2 5 5 7 5 6\n5 2 2 5 5 7 6 3\n\
$EndElements\n";

#[test]
fn hdg_poisson_refuses_hostile_expressions_meshes_and_sizes() {
    let dir = scratch("hdg");
    let small = ["--mesh", "square:4", "--degree", "1"];
    let hdg = |extra: &[&str]| {
        let mut args = small.to_vec();
        args.extend_from_slice(extra);
        run("hdg_poisson", &args)
    };
    // A product of 200 factors (the symbolic derivative of old overflowed the stack at ~50)
    // is differentiated and solved.
    let product = vec!["(1+x*y/200)"; 200].join("*");
    let out = hdg(&["--exact", &product, "--json"]);
    expect(&out, 0, &[], "a product of 200 factors");
    assert_eq!(object(&out.stdout)["converged"], true);

    let long = "x+".repeat(5000) + "x";
    let deep = "(".repeat(100) + "x" + &")".repeat(100);
    let hanging = write(&dir, "hanging.msh", HANGING_2D);
    let quads = write(
        &dir,
        "quads.msh",
        &HANGING_2D
            .replace("$Elements\n5\n", "$Elements\n6\n")
            .replace("$EndElements", "6 3 2 5 5 2 5 6 3\n$EndElements"),
    );
    let endless = dir.join("endless.msh");
    std::fs::write(&endless, vec![b'7'; 3 << 20]).unwrap();
    let endless = endless.display().to_string();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (vec!["--exact", &long], vec!["too long"]),
        (vec!["--exact", &deep], vec!["too deep"]),
        (vec!["--exact", "2e3*x"], vec![]),
        (
            vec!["--rhs", "1", "--dirichlet", "0", "--exact", "1/0"],
            vec!["exact", "inf"],
        ),
        (vec!["--mesh", "square:65536"], vec!["triangles", "needs"]),
        (
            vec!["--mesh", &hanging, "--untagged-as", "1"],
            vec!["not conforming"],
        ),
        (vec!["--mesh", &quads, "--untagged-as", "1"], vec!["Quad4"]),
        (vec!["--mesh", &endless], vec!["longer than"]),
    ];
    for (args, words) in &cases {
        let mut full = if args.contains(&"--mesh") {
            small[2..].to_vec()
        } else {
            small.to_vec()
        };
        full.extend_from_slice(args);
        let out = run("hdg_poisson", &full);
        let code = if words.is_empty() { 0 } else { 2 };
        expect(&out, code, words, &format!("{args:?}"));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn solve_and_spmv_refuse_what_they_cannot_answer() {
    let dir = scratch("solve");
    let nan = write(
        &dir,
        "nan.mtx",
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 nan\n2 2 1\n",
    );
    let tiny = write(&dir, "tiny-rhs.txt", &"1e-50\n".repeat(1296));
    let endless = write(&dir, "endless.txt", &"1".repeat(1 << 20));
    let huge = write(&dir, "huge-rhs.txt", &"1e308\n".repeat(1296));
    let small = ["--matrix", "fvm-tet:6"];
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        ("solve", vec!["--tol", "inf"], vec!["(0, 1)"]),
        ("solve", vec!["--tol", "2"], vec!["(0, 1)"]),
        ("solve", vec!["--tol", "0"], vec!["(0, 1)"]),
        ("solve", vec!["--tol=-1"], vec!["(0, 1)"]),
        ("solve", vec!["--tol", "nan"], vec!["(0, 1)"]),
        ("solve", vec!["--max-iter", "0"], vec!["at least 1"]),
        (
            "solve",
            vec!["--solver", "bicgstab", "--precision", "mixed"],
            vec!["no BiCGStab"],
        ),
        (
            "solve",
            vec!["--matrix", &nan],
            vec!["nan.mtx", "(1, 1)", "NaN"],
        ),
        (
            "solve",
            vec!["--rhs", &tiny, "--precision", "f32"],
            vec!["b[0]", "no f32 value"],
        ),
        ("solve", vec!["--rhs", &endless], vec!["longer than"]),
        ("solve", vec!["--rhs", &huge], vec!["‖b‖₂ overflows"]),
        (
            "solve",
            vec!["--matrix", "random:3000000000"],
            vec!["needs"],
        ),
        ("spmv", vec!["--matrix", "random:3000000000"], vec!["needs"]),
        ("spmv", vec!["--matrix", &nan], vec!["(1, 1)", "NaN"]),
    ];
    for (door, args, words) in &cases {
        let mut full = if args.contains(&"--matrix") {
            vec![]
        } else {
            small.to_vec()
        };
        full.extend_from_slice(args);
        expect(&run(door, &full), 2, words, &format!("{door} {args:?}"));
    }
    // The f32 solve of a well-scaled system to a tolerance f32 cannot reach on the f64 system
    // is not reported converged.
    let out = run(
        "solve",
        &[
            "--matrix",
            "fvm-tet:6",
            "--precision",
            "f32",
            "--tol",
            "1e-12",
            "--json",
        ],
    );
    expect(&out, 3, &["not converged"], "f32 to 1e-12");
    let v = object(&out.stdout);
    assert_eq!(v["converged"], false);
    // A tiny right-hand side that f64 holds is solved (no underflow to "b = 0").
    let out = run(
        "solve",
        &["--matrix", "fvm-tet:6", "--rhs", &tiny, "--json"],
    );
    expect(&out, 0, &[], "a right-hand side of 1e-50");
    let v = object(&out.stdout);
    assert!(v["iterations"].as_u64().unwrap() > 0, "{v}");
    assert!(v["true_relative_residual"].as_f64().unwrap() <= 1e-8, "{v}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn poisson_mg_refusals_name_a_real_limit() {
    let out = run(
        "poisson_mg",
        &["--dim", "3", "--degree", "8", "--levels", "7"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains(&i64::MAX.to_string()), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn gmres_refuses_a_restart_the_host_cannot_hold_before_allocating() {
    use galerkin::solver::{fgmres, gmres, Identity, Progress, SolverParams};
    use galerkin::{Cpu, Error, Vector};
    // Restart 10^7 on 2^22 unknowns: a Hessenberg matrix of (2^22 + 1) x 2^22 f64, 140 TB.
    let n = 1 << 22;
    let cpu = Cpu::new();
    let a = Identity::new(n);
    let b = Vector::<Cpu, f64>::full(&cpu, n, 1.0).unwrap();
    let params = SolverParams {
        restart: 10_000_000,
        progress: Progress::Never,
        ..SolverParams::new(1e-8, 10)
    };
    for flexible in [false, true] {
        let mut x = Vector::<Cpu, f64>::zeros(&cpu, n).unwrap();
        let result = if flexible {
            fgmres::<Cpu, f64>(&a, None, &b, &mut x, &params)
        } else {
            gmres::<Cpu, f64>(&a, None, &b, &mut x, &params)
        };
        match result {
            Err(Error::ResourceLimit { what, .. }) => {
                assert!(
                    what.contains("Hessenberg") && what.contains("4194304"),
                    "{what}"
                )
            }
            Err(e) => panic!("expected a resource limit, got {e}"),
            Ok(report) => panic!("expected a resource limit, got {report}"),
        }
    }
}

#[test]
fn gmsh_block_counts_that_overflow_or_exceed_the_host_are_refused() {
    use galerkin::mesh::gmsh::read_from;
    use galerkin::Error;
    let parse_error = |text: &str| match read_from(text.as_bytes(), "hostile.msh") {
        Err(Error::Parse { line, message, .. }) => (line, message),
        Err(e) => panic!("expected a parse error, got {e}"),
        Ok(_) => panic!("expected a parse error, got a mesh"),
    };
    let format = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n";
    // Node blocks whose counts add up past 2^64 (1 + u64::MAX).
    let (line, m) = parse_error(&format!(
        "{format}$Nodes\n2 1 1 1\n0 1 0 1\n1\n0 0 0\n0 1 0 18446744073709551615\n$EndNodes\n"
    ));
    assert_eq!(line, 9, "{m}");
    assert!(m.contains("more than the 1 nodes"), "{m}");
    // Element blocks likewise.
    let (line, m) = parse_error(&format!(
        "{format}$Nodes\n1 1 1 1\n0 1 0 1\n1\n0 0 0\n$EndNodes\n\
         $Elements\n2 1 1 1\n0 1 15 1\n1 1\n0 1 15 18446744073709551615\n$EndElements\n"
    ));
    assert_eq!(line, 14, "{m}");
    assert!(m.contains("more than the 1 elements"), "{m}");
    // A node count no host holds (24 PB of points) is refused at its line, before reading.
    let text = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n1000000000000000\n1 0 0 0\n";
    match read_from(text.as_bytes(), "hostile.msh") {
        Err(Error::ResourceLimit { what, .. }) => assert!(
            what.contains("1000000000000000 nodes declared on line 5"),
            "{what}"
        ),
        Err(e) => panic!("expected a resource limit, got {e}"),
        Ok(_) => panic!("expected a resource limit, got a mesh"),
    }
}
