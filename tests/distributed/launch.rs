//! The parent: launches the checks and the `solve` and `maxwell` examples under `mpirun`.

use std::path::PathBuf;
use std::process::{Command, Output};

/// `mpirun` with the flags CI needs (root, more ranks than cores).
fn mpirun(np: usize) -> Command {
    let mut c = Command::new("timeout");
    c.args([
        "900",
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
    ]);
    c.arg(np.to_string());
    // Open MPI: no attempt to use high-speed fabrics that a CI machine lacks.
    c.env("OMPI_MCA_btl", "self,vader,tcp")
        .env("OMPI_MCA_pml", "ob1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("RAYON_NUM_THREADS", "1");
    c
}

fn show(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    dir.join("examples").join(name)
}

pub fn run() {
    if Command::new("mpirun").arg("--version").output().is_err() {
        panic!(
            "mpirun is not installed: the distributed tests need MPI \
             (apt-get install -y libopenmpi-dev openmpi-bin)"
        );
    }
    let exe = std::env::current_exe().expect("test binary path");
    // A hidden size: the same on every rank of a launch, different from run to run.
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    let n = 5 + (seed % 4) as usize;
    for np in [1usize, 2, 4] {
        let t0 = std::time::Instant::now();
        let out = mpirun(np)
            .arg(&exe)
            .env("GALERKIN_DIST_CHILD", "1")
            .env("GALERKIN_DIST_N", n.to_string())
            .env("GALERKIN_DIST_SEED", seed.to_string())
            .output()
            .expect("mpirun runs");
        let text = show(
            &format!("checks on {np} ranks (fvm-tet:{n}, seed {seed})"),
            &out,
        );
        assert!(out.status.success(), "{text}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("dist checks passed"),
            "{text}"
        );
        println!(
            "dist: {np} rank(s): checks passed in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
    solve_example(n);
    maxwell_example();
    println!("dist: all distributed tests passed");
}

/// `maxwell` under `mpirun -np 2` (METIS on the face graph) gives the one-process run's
/// energy and L2 error, and `--json` reports the ranks' shares; `--halo device` on CPU ranks
/// is refused with the reason, status 2.
fn maxwell_example() {
    let maxwell = example("maxwell");
    assert!(
        maxwell.exists(),
        "{} is missing: build it first with `cargo build --release --features mpi,wgpu --example maxwell`",
        maxwell.display()
    );
    let args = [
        "--mesh",
        "box:3",
        "--perturbation",
        "0.1",
        "--order",
        "3",
        "--final-time",
        "0.05",
        "--json",
    ];
    let json = |out: &Output, what: &str| -> serde_json::Value {
        let text = show(what, out);
        assert!(out.status.success(), "{text}");
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim())
            .unwrap_or_else(|e| panic!("--json did not print one JSON object ({e})\n{text}"))
    };
    let one = json(
        &Command::new(&maxwell).args(args).output().unwrap(),
        "maxwell, one process",
    );
    for np in [2, 3] {
        // With 3 ranks, the exact halo timing too: the same answer, both times reported.
        let profile: &[&str] = if np == 3 { &["--profile"] } else { &[] };
        let out = mpirun(np)
            .arg(&maxwell)
            .args(args)
            .args(profile)
            .output()
            .unwrap();
        let what = format!("maxwell under mpirun -np {np}");
        let dist = json(&out, &what);
        let text = show(&what, &out);
        assert_eq!(
            dist["ranks"],
            serde_json::json!(np),
            "{} was built without the `mpi` feature? {text}",
            maxwell.display()
        );
        assert_eq!(dist["dofs"], one["dofs"], "{text}");
        assert_eq!(dist["steps"], one["steps"], "{text}");
        for key in ["l2_error", "energy_final"] {
            let (a, b) = (dist[key].as_f64().unwrap(), one[key].as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-10 * b.abs(),
                "{key}: {a:e} vs {b:e}\n{text}"
            );
        }
        let per_rank = dist["per_rank"].as_array().expect("per_rank");
        assert_eq!(per_rank.len(), np, "{text}");
        let elements: u64 = per_rank
            .iter()
            .map(|r| r["elements"].as_u64().unwrap())
            .sum();
        assert_eq!(serde_json::json!(elements), one["elements"], "{text}");
        assert!(
            per_rank.iter().all(|r| r["trace_values"].as_u64() > Some(0)
                && r["halo_seconds"].as_f64() > Some(0.0)
                && r["compute_seconds"].as_f64() > Some(0.0)),
            "{text}"
        );
        assert_eq!(dist["halo"], serde_json::json!("host memory"), "{text}");
        println!(
            "dist: maxwell on {np} ranks matches one process (L2 error {:.6e})",
            dist["l2_error"].as_f64().unwrap()
        );
    }
    let out = mpirun(2)
        .arg(&maxwell)
        .args(["--mesh", "box:2", "--halo", "device"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        show("maxwell --halo device", &out)
    );
    assert!(
        stderr.contains("rank 0 cannot: it runs on the cpu backend, not CUDA"),
        "{}",
        show("maxwell --halo device", &out)
    );
}

/// `solve` under `mpirun -np 2` writes the same solution as one process, and `--json`
/// reports per-rank times and the partition.
fn solve_example(n: usize) {
    let solve = example("solve");
    assert!(
        solve.exists(),
        "{} is missing: cargo test builds the examples",
        solve.display()
    );
    let dir = std::env::temp_dir().join(format!("galerkin-dist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let matrix = format!("fvm-tet:{n}");
    let one = dir.join("x1.txt");
    let two = dir.join("x2.txt");
    let out = Command::new(&solve)
        .args(["--matrix", &matrix, "--out"])
        .arg(&one)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show("solve, one process", &out));
    for partition in ["contiguous", "metis"] {
        let out = mpirun(2)
            .arg(&solve)
            .args([
                "--matrix",
                &matrix,
                "--partition",
                partition,
                "--json",
                "--out",
            ])
            .arg(&two)
            .output()
            .unwrap();
        let text = show(
            &format!("solve under mpirun -np 2 --partition {partition}"),
            &out,
        );
        assert!(out.status.success(), "{text}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let report: serde_json::Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("--json did not print one JSON object ({e})\n{text}"));
        assert_ne!(
            report["ranks"],
            serde_json::json!(1),
            "{} was built without the `mpi` feature (it ran single-process under mpirun): \
             build it first with `cargo build --release --features mpi,wgpu --example solve`",
            solve.display()
        );
        assert_eq!(report["ranks"], serde_json::json!(2), "{text}");
        assert_eq!(report["converged"], serde_json::json!(true), "{text}");
        assert!(
            report["iterations"].as_u64().is_some_and(|n| n > 0),
            "{text}"
        );
        let partition_report = &report["partition"];
        for key in ["row_imbalance", "cut_nonzeros"] {
            assert!(
                partition_report[key].is_number(),
                "partition.{key} missing\n{text}"
            );
        }
        let per_rank = report["per_rank"]
            .as_array()
            .unwrap_or_else(|| panic!("per_rank missing\n{text}"));
        assert_eq!(per_rank.len(), 2, "{text}");
        for rank in per_rank {
            for key in ["halo_s", "reduce_s", "compute_s"] {
                assert!(
                    rank[key].as_f64().is_some_and(|t| t >= 0.0),
                    "per_rank.{key} missing\n{text}"
                );
            }
        }
        let read = |p: &PathBuf| -> Vec<f64> {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| l.trim().parse().unwrap())
                .collect()
        };
        let (x1, x2) = (read(&one), read(&two));
        assert_eq!(x1.len(), x2.len());
        let err = x1
            .iter()
            .zip(&x2)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-6, "solutions differ by {err:e}\n{text}");
        println!("dist: solve --partition {partition} on 2 ranks matches one process (max difference {err:.1e})");
    }
    // Bad input: every rank exits with the same clear error, status 1, no hang.
    let out = mpirun(2)
        .arg(&solve)
        .args(["--matrix", "/nonexistent/matrix.mtx"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "{}",
        show("solve with a missing file", &out)
    );
    assert!(
        stderr.contains("/nonexistent/matrix.mtx"),
        "{}",
        show("missing file", &out)
    );
    // Arguments the distributed solve cannot run: status 2 on every rank, before MPI starts.
    let out = mpirun(2)
        .arg(&solve)
        .args(["--matrix", &matrix, "--solver", "refine"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        show("solve --solver refine", &out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("single-process"),
        "{}",
        show("solve --solver refine", &out)
    );
    std::fs::remove_dir_all(&dir).ok();
}
