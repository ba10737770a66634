//! CPU SpMV against `sprs` in the same criterion run, with the CPU copy bandwidth measured
//! beside them. `cargo bench --bench spmv_cpu`
//!
//! galerkin's CPU CSR kernel runs on rayon's pool; sprs's `CsMat * dense` product is
//! single-threaded, so the comparison is also reported per thread in docs/benchmarks.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use galerkin::sparse::generate::{poisson3d_27pt, poisson3d_7pt};
use galerkin::sparse::Csr;
use galerkin::{Cpu, Vector};

fn matrices() -> Vec<(&'static str, Csr<Cpu, f64>)> {
    vec![
        ("poisson7_96", poisson3d_7pt(96).expect("generator")),
        ("poisson27_64", poisson3d_27pt(64).expect("generator")),
        (
            "fvm_tet_40",
            galerkin::fvm::tpfa_tets_structured(40, 0.15, 1).expect("generator"),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let cpu = Cpu::new();
    let mut group = c.benchmark_group("spmv_cpu");
    group.sample_size(20);
    for (name, a) in matrices() {
        let bytes = (a.storage_bytes() + 8 * (a.nrows() + a.ncols())) as u64;
        group.throughput(Throughput::Bytes(bytes));
        let x = Vector::full(&cpu, a.ncols(), 1.0f64).expect("alloc");
        let mut y = Vector::zeros(&cpu, a.nrows()).expect("alloc");
        group.bench_function(BenchmarkId::new("galerkin_csr", name), |b| {
            b.iter(|| a.spmv(1.0, &x, 0.0, &mut y).expect("spmv"))
        });
        let s = sprs::CsMat::new(
            (a.nrows(), a.ncols()),
            a.row_ptr().iter().map(|&v| v as usize).collect(),
            a.col_idx().iter().map(|&v| v as usize).collect(),
            a.values().to_vec(),
        );
        let xs = vec![1.0f64; a.ncols()];
        let mut ys = vec![0.0f64; a.nrows()];
        group.bench_function(BenchmarkId::new("sprs_csr", name), |b| {
            b.iter(|| {
                ys.iter_mut().for_each(|v| *v = 0.0);
                sprs::prod::mul_acc_mat_vec_csr(s.view(), &xs[..], &mut ys[..]);
            })
        });
        // The ceiling: a copy of as many bytes (read + write) as the SpMV moves.
        let n = (bytes / 16) as usize;
        let src = Vector::full(&cpu, n, 1.0f64).expect("alloc");
        let mut dst = Vector::zeros(&cpu, n).expect("alloc");
        group.bench_function(BenchmarkId::new("copy_same_bytes", name), |b| {
            b.iter(|| dst.copy_from(&src).expect("copy"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
