//! The command-line examples as a user runs them: `--json` is exactly one JSON object on
//! stdout (the text report on stderr) with the keys scripts read, and bad input gets a
//! clear message with exit status 2. `cargo test` builds the examples next to the test
//! binary (`target/<profile>/examples`).

use std::path::PathBuf;
use std::process::{Command, Output};

fn example(name: &str) -> Command {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let path: PathBuf = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is missing: cargo test builds the examples",
        path.display()
    );
    Command::new(path)
}

pub(crate) fn run(name: &str, args: &[&str]) -> Output {
    example(name).args(args).output().expect("the example runs")
}

/// Stdout of a successful run as its one JSON object: the whole of stdout must parse as a
/// single object (nothing before or after it).
fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    object(&out.stdout)
}

/// `stdout` as exactly one JSON object.
pub(crate) fn object(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    let value: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {text}"));
    assert!(value.is_object(), "not an object: {text}");
    value
}

/// A number of a JSON object.
fn number(value: &serde_json::Value, key: &str) -> f64 {
    value[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {value}"))
}

#[test]
fn hdg_poisson_json() {
    let out = run(
        "hdg_poisson",
        &[
            "--mesh",
            "perturbed:8",
            "--degree",
            "3",
            "--exact",
            "exp(x)*cos(pi*y) + PI*x*y",
            "--lambda",
            "1",
            "--neumann",
            "2,3",
            "--json",
        ],
    );
    let v = json(&out);
    for key in [
        "triangles",
        "degree",
        "dofs",
        "iterations",
        "converged",
        "seconds",
        "l2_error",
    ] {
        assert!(v.get(key).is_some(), "{key} missing in {v}");
    }
    for stage in [
        "compile",
        "setup",
        "local",
        "load",
        "assemble",
        "solve",
        "recover",
        "post_process",
        "total",
    ] {
        assert!(number(&v["seconds"], stage) >= 0.0, "{stage}");
    }
    assert_eq!(number(&v, "triangles"), 128.0);
    assert_eq!(number(&v, "degree"), 3.0);
    assert_eq!(v["converged"], true);
    // P = 3 on 8 x 8: errors ~1e-5 (u, q) and ~1e-7 (u*).
    let e = &v["l2_error"];
    let (u, q, us) = (number(e, "u"), number(e, "q"), number(e, "u_star"));
    assert!(u > 0.0 && u < 1e-4 && q < 1e-3 && us < u / 10.0, "{v}");
    // The CPU compiles nothing ahead; its memory_bytes is the peak resident memory.
    assert_eq!(number(&v["seconds"], "compile"), 0.0);
    assert!(number(&v, "memory_bytes") > 1e6, "{v}");
}

#[test]
fn hdg_poisson_bad_input() {
    for (args, words) in [
        (&["--exact", "sin(pi*x"][..], "parenthesis"),
        (&["--exact", "z*x"], "unknown variable"),
        (&["--degree", "10"], "P = 10"),
        (&["--mesh", "square:abc"], "positive integer"),
        (&["--mesh", "/no/such/file.msh"], "/no/such/file.msh"),
        (&["--neumann", "9"], "tag 9"),
        (&["--tau", "-1"], "tau"),
        (&["--vtk", "out.txt"], ".vtu"),
        // `solve`'s AMG options, which the trace solve would otherwise ignore.
        (
            &["--precond", "amg", "--amg-near-null-stride", "4"],
            "--amg-near-null-stride",
        ),
        (&["--amg-precision", "f32"], "--amg-precision"),
        (
            &["--amg-improve-candidates", "2"],
            "--amg-improve-candidates",
        ),
    ] {
        let out = run("hdg_poisson", args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err:?} lacks {words:?}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `poisson_mg --json`: the keys, a converged solve whose true f64 residual meets
/// the tolerance, and an L2 error that falls at rate k + 1 between two levels.
#[test]
fn poisson_mg_json() {
    let solve = |levels: &str, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["--dim", "2", "--degree", "2", "--levels", levels, "--json"];
        args.extend_from_slice(extra);
        let out = run("poisson_mg", &args);
        json(&out)
    };
    let coarse = solve("3", &[]);
    for key in [
        "dim",
        "degree",
        "levels",
        "dofs",
        "iterations",
        "converged",
        "relative_residual",
        "seconds",
        "dofs_per_second",
        "l2_error",
    ] {
        assert!(coarse.get(key).is_some(), "{key} missing in {coarse}");
    }
    assert_eq!(coarse["dofs"], 17 * 17);
    assert_eq!(coarse["converged"], true);
    assert!(coarse["relative_residual"].as_f64().unwrap() <= 1e-9);
    for phase in ["compile", "setup", "rhs", "solve", "total"] {
        assert!(coarse["seconds"][phase].as_f64().unwrap() >= 0.0, "{phase}");
    }
    assert_eq!(coarse["seconds"]["compile"], 0.0);
    assert!(number(&coarse, "memory_bytes") > 1e6, "{coarse}");
    assert!(number(&coarse, "memory_bytes_estimate") > 0.0, "{coarse}");
    // --dry-run: the estimate alone, the same figure, nothing solved.
    let dry = json(&run(
        "poisson_mg",
        &[
            "--dim",
            "2",
            "--degree",
            "2",
            "--levels",
            "3",
            "--json",
            "--dry-run",
        ],
    ));
    assert_eq!(dry["dofs"], 17 * 17);
    assert_eq!(
        dry["memory_bytes_estimate"],
        coarse["memory_bytes_estimate"]
    );
    assert!(dry.get("iterations").is_none());
    let bad = run("poisson_mg", &["--dim", "4", "--dry-run"]);
    assert_eq!(bad.status.code(), Some(2));
    let fine = solve("4", &["--solver", "gmres", "--precision", "mixed"]);
    assert_eq!(fine["converged"], true);
    let rate = (coarse["l2_error"].as_f64().unwrap() / fine["l2_error"].as_f64().unwrap()).log2();
    assert!(rate > 2.8, "L2 rate {rate} for Q2");
    // f ≡ 1 has no exact solution: the key is null.
    assert!(solve("2", &["--rhs", "one"])["l2_error"].is_null());
    // The patch step's form: fused on the CPU by default; split asked for, the same solve.
    assert_eq!(coarse["patch_form"], "fused", "{coarse}");
    let split = solve("3", &["--patch-form", "split"]);
    assert_eq!(split["patch_form"], "split", "{split}");
    assert_eq!(split["iterations"], coarse["iterations"]);
    assert!(split["relative_residual"].as_f64().unwrap() <= 1e-9);
    let (a, b) = (number(&split, "l2_error"), number(&coarse, "l2_error"));
    assert!((a - b).abs() <= 1e-6 * b, "{a} vs {b}");
}

/// Bad dimensions, degrees, levels and tolerances exit with status 2 and name the
/// argument; an f32 solve that cannot reach 1e-9 exits with 3.
#[test]
fn poisson_mg_bad_input() {
    for (args, needle) in [
        (&["--dim", "4"][..], "`dim`"),
        (&["--degree", "0"][..], "`degree`"),
        (&["--degree", "11"][..], "`degree`"),
        (&["--levels", "0"][..], "`levels`"),
        (&["--levels", "21"][..], "`levels`"),
        (&["--tol", "2"][..], "`tol`"),
        (&["--vtk", "out.txt"][..], "--vtk"),
        (
            &["--dim", "3", "--degree", "10", "--levels", "12"][..],
            "unknowns",
        ),
    ] {
        let out = run("poisson_mg", args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let out = run(
        "poisson_mg",
        &[
            "--precision",
            "f32",
            "--levels",
            "3",
            "--max-iter",
            "5",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(object(&out.stdout)["converged"], false);
}

#[test]
fn maxwell_json_and_vtk() {
    let solve = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["--mesh", "box:2", "--final-time", "0.2", "--json"];
        args.extend_from_slice(extra);
        json(&run("maxwell", &args))
    };
    let low = solve(&["--order", "2"]);
    let high = solve(&["--order", "4"]);
    for key in [
        "elements",
        "order",
        "dofs",
        "steps",
        "l2_error",
        "energy_drift",
        "seconds",
        "compile_seconds",
        "dof_updates_per_second",
    ] {
        assert!(low.get(key).is_some(), "{key} missing in {low}");
    }
    assert_eq!(low["compile_seconds"], 0.0);
    assert_eq!(low["elements"], 48);
    assert_eq!(high["dofs"], 6 * 48 * 35);
    let (el, eh) = (
        low["l2_error"].as_f64().unwrap(),
        high["l2_error"].as_f64().unwrap(),
    );
    assert!(eh < el / 10.0 && eh > 0.0, "errors N=2 {el}, N=4 {eh}");
    // Upwind never gains energy; central keeps it to the time-stepping error.
    assert!(low["energy_drift"].as_f64().unwrap() <= 1e-14);
    let central = solve(&["--order", "3", "--flux", "central"]);
    assert!(
        central["energy_drift"].as_f64().unwrap().abs() < 1e-6,
        "{central}"
    );
    let f32 = solve(&["--order", "3", "--precision", "f32", "--mode", "1,2,3"]);
    assert!(f32["l2_error"].as_f64().unwrap() < 0.5, "{f32}");

    let dir = std::env::temp_dir().join(format!("galerkin-maxwell-vtk-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let v = solve(&["--order", "2", "--vtk", d, "--vtk-times", "0.1"]);
    assert_eq!(v["vtk_files"].as_array().unwrap().len(), 3, "{v}");
    let first = std::fs::read_to_string(dir.join("maxwell_0000.vtu")).unwrap();
    assert!(first.contains("Name=\"E\"") && first.contains("Name=\"H\""));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn maxwell_bad_input() {
    let dir = std::env::temp_dir().join(format!("galerkin-maxwell-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Two tetrahedra, the second inverted (vertices 1 and 2 swapped).
    let inverted = dir.join("inverted.msh");
    std::fs::write(
        &inverted,
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n5\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n\
         5 1 1 1\n$EndNodes\n$Elements\n2\n1 4 2 1 1 1 2 3 4\n2 4 2 1 1 3 2 4 5\n$EndElements\n",
    )
    .unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["--order", "10"], "`order`"),
        (&["--mode", "0,0,1"], "mode"),
        (&["--mode", "1;1;0"], "--mode"),
        (&["--mesh", "missing.msh"], "missing.msh"),
        (&["--mesh", inverted.to_str().unwrap()], "tetrahedron 1"),
        (&["--mesh", "box:2", "--absorbing", "3"], "`absorbing`"),
    ];
    for (args, needle) in cases {
        let out = run("maxwell", args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `solve --buffer-limit`: vectors in parts and the matrix in matching blocks give the same
/// iteration count and solution quality as one buffer; a limit below 2048 bytes is an error
/// naming the limit, not a panic. Under `--json` the text report is on stderr.
#[test]
fn solve_buffer_limit() {
    let solve = |extra: &[&str]| -> Output {
        let mut args = vec!["--matrix", "poisson7:14", "--tol", "1e-10", "--json"];
        args.extend_from_slice(extra);
        run("solve", &args)
    };
    let whole = json(&solve(&[]));
    let out = solve(&["--buffer-limit", "16384"]);
    let split = json(&out);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("vectors of 2744 values in 2 parts of at most 2048"),
        "{text}"
    );
    let (kw, ks) = (number(&whole, "iterations"), number(&split, "iterations"));
    assert!((kw - ks).abs() <= 1.0, "{kw} vs {ks}");
    assert!(number(&split, "relative_residual") <= 1e-10, "{split}");
    let bad = solve(&["--buffer-limit", "100"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_ne!(bad.status.code(), Some(0));
    assert!(err.contains("2048") && !err.contains("panicked"), "{err}");
}

/// `solve --json` and `spmv --json`: one object with the keys scripts read, values that
/// agree with the problem (b = A·1, so x ≈ 1; y = A·1 of the 2D Laplacian has ‖y‖∞ = 2 on
/// the corner rows); the text report on stderr.
#[test]
fn solve_and_spmv_json() {
    let s = json(&run(
        "solve",
        &["--matrix", "poisson2d:20", "--tol", "1e-9", "--json"],
    ));
    for key in [
        "ranks",
        "backend",
        "rows",
        "solver",
        "converged",
        "iterations",
        "final_residual",
        "relative_residual",
        "true_relative_residual",
        "time_s",
    ] {
        assert!(s.get(key).is_some(), "{key} missing in {s}");
    }
    assert_eq!(s["rows"], 400);
    assert_eq!(s["converged"], true);
    assert!(number(&s, "true_relative_residual") <= 1.01e-9, "{s}");
    assert!(number(&s, "error_from_ones") < 1e-6, "{s}");

    let out = run("spmv", &["--matrix", "poisson2d:20", "--json", "--bench"]);
    let v = json(&out);
    for key in [
        "backend",
        "rows",
        "cols",
        "nnz",
        "format",
        "storage_bytes",
        "y_norm2",
        "y_norm_inf",
        "seconds",
        "gb_per_s",
        "gflop_per_s",
    ] {
        assert!(v.get(key).is_some(), "{key} missing in {v}");
    }
    assert_eq!(v["nnz"], 5 * 400 - 4 * 20);
    assert_eq!(number(&v, "y_norm_inf"), 2.0, "{v}");
    assert!(number(&v, "seconds") > 0.0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("format:"));
}

/// `solve --precond amg --json` and `hdg_poisson --precond amg --json`: the `amg` object
/// with the keys, levels that shrink, few iterations; bad AMG input refused with
/// exit status 2 and the row named.
#[test]
fn amg_json_and_bad_input() {
    let s = json(&run(
        "solve",
        &["--matrix", "poisson2d:64", "--precond", "amg", "--json"],
    ));
    let amg = &s["amg"];
    for key in [
        "levels",
        "operator_complexity",
        "grid_complexity",
        "setup_seconds",
        "level_rows",
        "level_nnz",
    ] {
        assert!(amg.get(key).is_some(), "{key} missing in {s}");
    }
    let rows: Vec<u64> = amg["level_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(rows.len() >= 2 && rows[0] == 4096, "{s}");
    assert!(rows.windows(2).all(|w| w[1] < w[0] / 3), "{s}");
    assert!(number(amg, "operator_complexity") > 1.0 && number(amg, "operator_complexity") < 2.0);
    assert_eq!(s["converged"], true);
    assert!(number(&s, "iterations") <= 20.0, "{s}");
    assert!(number(&s, "true_relative_residual") <= 1e-8, "{s}");
    // A near-null space given by its stride (one vector, 1 on every 4th row): one value per
    // row of the loaded matrix (it once had none, and the solve was refused).
    let strided = json(&run(
        "solve",
        &[
            "--matrix",
            "poisson2d:64",
            "--precond",
            "amg",
            "--amg-near-null-stride",
            "4",
            "--json",
        ],
    ));
    assert_eq!(strided["converged"], true, "{strided}");
    // The near-null vector improved or not: both converge (the option is parsed and used).
    for steps in ["0", "3"] {
        let improved = json(&run(
            "solve",
            &[
                "--matrix",
                "poisson2d:64",
                "--precond",
                "amg",
                "--amg-improve-candidates",
                steps,
                "--json",
            ],
        ));
        assert_eq!(improved["converged"], true, "{steps}: {improved}");
        assert!(
            number(&improved, "true_relative_residual") <= 1e-8,
            "{steps}: {improved}"
        );
    }
    assert!(
        number(&strided, "true_relative_residual") <= 1e-8,
        "{strided}"
    );
    // Without AMG the key is null.
    let plain = json(&run("solve", &["--matrix", "poisson2d:16", "--json"]));
    assert!(plain["amg"].is_null(), "{plain}");
    // The f32 hierarchy inside the f64 solve answers to the f64 tolerance.
    let mixed = json(&run(
        "solve",
        &[
            "--matrix",
            "fvm-tet:8",
            "--precond",
            "amg",
            "--amg-precision",
            "f32",
            "--tol",
            "1e-10",
            "--json",
        ],
    ));
    assert_eq!(mixed["amg"]["precision"], "f32", "{mixed}");
    assert!(number(&mixed, "true_relative_residual") <= 1e-10, "{mixed}");

    let h = json(&run(
        "hdg_poisson",
        &[
            "--mesh",
            "square:12",
            "--precond",
            "amg",
            "--rtol",
            "1e-10",
            "--json",
        ],
    ));
    assert_eq!(h["converged"], true, "{h}");
    assert!(number(&h["amg"], "levels") >= 2.0, "{h}");
    assert!(number(&h, "iterations") <= 60.0, "{h}");
    assert_eq!(h["precond"], "amg", "{h}");
    // The default, auto: block-Jacobi below 32,768 trace unknowns, AMG from there.
    for (mesh, used) in [("square:12", "blockjacobi"), ("square:64", "amg")] {
        let d = json(&run("hdg_poisson", &["--mesh", mesh, "--json"]));
        assert_eq!(d["precond_requested"], "auto", "{d}");
        assert_eq!(d["precond"], used, "{mesh}: {d}");
        assert_eq!(d["amg"].is_null(), used != "amg", "{d}");
        assert_eq!(d["converged"], true, "{d}");
        let big = number(&d, "dofs") >= galerkin::hdg::TRACE_AMG_MIN_DOFS as f64;
        assert_eq!(big, used == "amg", "{mesh}: {} trace unknowns", d["dofs"]);
    }

    // A zero diagonal, a bad θ, a zero degree.
    let dir = std::env::temp_dir().join(format!("galerkin-amg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("zero_diag.mtx");
    std::fs::write(
        &path,
        "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 2\n1 2 -1\n2 1 -1\n2 3 -1\n3 3 2\n",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    for (args, words) in [
        (
            &["--matrix", file, "--precond", "amg"][..],
            "row 1 has diagonal 0",
        ),
        (&["--precond", "amg", "--amg-theta", "2"], "--amg-theta"),
        (&["--precond", "amg", "--amg-degree", "0"], "--amg-degree"),
    ] {
        let out = run("solve", args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err:?} lacks {words:?}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// On a device, `seconds.compile` is the rehearsal on a small problem; the answer is the same
/// as without it, and the total includes it (wgpu, where the tests require it).
#[cfg(feature = "wgpu")]
#[test]
fn examples_compile_ahead_on_a_device() {
    let required = std::env::var("GALERKIN_REQUIRE_BACKENDS")
        .is_ok_and(|v| v.split(',').any(|k| k.trim().eq_ignore_ascii_case("wgpu")));
    if !required {
        eprintln!("examples_compile_ahead_on_a_device: skipped (wgpu not required)");
        return;
    }
    let mg = |extra: &[&str]| {
        let mut args = vec![
            "--dim",
            "2",
            "--degree",
            "2",
            "--levels",
            "4",
            "--backend",
            "wgpu",
            "--json",
        ];
        args.extend_from_slice(extra);
        json(&run("poisson_mg", &args))
    };
    let (ahead, plain) = (mg(&[]), mg(&["--no-compile-ahead"]));
    // memory_bytes: the device buffers' peak, at least the solution's 17² f64 values, and
    // below the estimate (which leaves room).
    let bytes = number(&ahead, "memory_bytes");
    assert!(
        bytes >= 17.0 * 17.0 * 8.0 && bytes <= number(&ahead, "memory_bytes_estimate") * 2.0,
        "{ahead}"
    );
    let s = &ahead["seconds"];
    assert!(number(s, "compile") > 0.0, "{ahead}");
    assert_eq!(plain["seconds"]["compile"], 0.0);
    let parts: f64 = ["compile", "setup", "rhs", "solve", "error"]
        .iter()
        .map(|p| number(s, p))
        .sum();
    assert!(number(s, "total") >= parts * 0.999, "{ahead}");
    assert_eq!(ahead["iterations"], plain["iterations"]);
    assert_eq!(ahead["converged"], true);
    let (e1, e2) = (number(&ahead, "l2_error"), number(&plain, "l2_error"));
    assert!((e1 - e2).abs() <= 1e-12 * e2, "{e1} {e2}");
    let hdg = |extra: &[&str]| {
        let mut args = vec!["--mesh", "square:6", "--backend", "wgpu", "--json"];
        args.extend_from_slice(extra);
        json(&run("hdg_poisson", &args))
    };
    let (ahead, plain) = (hdg(&[]), hdg(&["--no-compile-ahead"]));
    assert!(number(&ahead["seconds"], "compile") > 0.0, "{ahead}");
    assert_eq!(plain["seconds"]["compile"], 0.0);
    assert_eq!(ahead["iterations"], plain["iterations"]);
    let (u1, u2) = (
        number(&ahead["l2_error"], "u"),
        number(&plain["l2_error"], "u"),
    );
    assert!((u1 - u2).abs() <= 1e-9 * u2, "{u1} {u2}");
    let dg = |extra: &[&str]| {
        let mut args = vec!["--mesh", "box:3", "--order", "3", "--final-time", "0.1"];
        args.extend_from_slice(&["--backend", "wgpu", "--json"]);
        args.extend_from_slice(extra);
        json(&run("maxwell", &args))
    };
    let (ahead, plain) = (dg(&[]), dg(&["--no-compile-ahead"]));
    assert!(number(&ahead, "compile_seconds") > 0.0, "{ahead}");
    assert_eq!(plain["compile_seconds"], 0.0);
    assert_eq!(ahead["steps"], plain["steps"]);
    let (e1, e2) = (number(&ahead, "l2_error"), number(&plain, "l2_error"));
    assert!((e1 - e2).abs() <= 1e-12 * e2, "{e1} {e2}");
}

/// A malformed `cubecl.toml` in the working directory (cubecl reads it when a device first
/// connects): the device is reported unavailable, exit status 2, never a crash.
#[cfg(feature = "wgpu")]
#[test]
fn malformed_cubecl_toml_is_an_error() {
    let dir = std::env::temp_dir().join(format!("galerkin-badcfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cubecl.toml"), "this is [not toml\n").unwrap();
    let out = example("poisson_mg")
        .args(["--backend", "wgpu", "--levels", "2"])
        .current_dir(&dir)
        .output()
        .expect("the example runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not available") && err.contains("format"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
