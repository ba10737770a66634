//! Distributed tests under `mpirun` (feature `mpi`; `harness = false`).
//!
//! Run as a test (`cargo build --release --features mpi,wgpu --example solve && cargo test
//! --release --features mpi,wgpu --test dist`: the `solve` example must be built with `mpi`,
//! which `cargo test --test dist` alone does not do), this program starts
//! itself under `mpirun -np 1, 2, 4` (`--allow-run-as-root --oversubscribe`) with a hidden
//! problem size, and each launch runs every check on every rank ([`checks`]): distributed
//! SpMV against the single-process SpMV, distributed CG/PCG/BiCGStab/GMRES and the mixed
//! solve against the single-process solvers (the same residual, iterations ±1), identical
//! reports on every rank, uneven partitions, and a rank that fails to read its part. Then it
//! runs the `solve` example under `mpirun -np 2` and compares its output with one process.
//! A failing check panics, and a panic aborts every rank (`MPI_Abort`): nothing hangs.

mod checks;
mod launch;

fn main() {
    if std::env::var_os("GALERKIN_DIST_CHILD").is_some() {
        checks::run();
    } else {
        launch::run();
    }
}
