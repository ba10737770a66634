//! The tile kernels against the CPU at every side and tile shape, on whatever device is
//! there (forced: the library takes them only above n = 32, and LU only on wgpu).

use super::columns::tests::{close, lu_against_cpu, lu_nan_against_cpu, matrices};
use super::tiles::{TileShape, FORCE_TILES};
use super::tiles_lu::LuTileShape;
use crate::backend::cube::on_test_device;
use crate::backend::Cpu;
use crate::batched::BatchedOps;
use crate::batched::{cholesky, Batch, Pivoting};

/// LU (both pivotings) and Cholesky through the tile kernels, against the CPU: pivots, codes
/// and factors, for a batch of three cubes' worth and a partial one, with a singular member
/// (1), a rounding-level pivot (2, LU) and an indefinite one (1, Cholesky).
fn tiles_against_cpu<B: BatchedOps>(b: &B) {
    if !b.info().supports_f64() {
        eprintln!("[galerkin tests] skipping: no f64 on {}", b.info());
        return;
    }
    let cpu = Cpu::new();
    // Sides from 6 (the members' defects sit in columns 2, 3 and 5).
    for n in [6, 9, 16, 17, 33, 40, 64] {
        for (tr, tc) in [(4, 4), (8, 2), (1, 1), (3, 5)] {
            let shape = LuTileShape::with_tiles(n, tr, tc, true);
            if shape.units() > 256 {
                continue;
            }
            FORCE_TILES.with(|f| f.set(Some((tr, tc))));
            let count = 3 * shape.per_cube + 2;
            for pivoting in [Pivoting::Partial, Pivoting::None] {
                let what = format!("LU n = {n}, tiles {tr} x {tc},");
                lu_against_cpu(b, count, n, 11 + n as u64, pivoting, &what);
            }
        }
        FORCE_TILES.with(|f| f.set(Some((4, 4))));
        lu_nan_against_cpu(b, n, "tiles 4 x 4");
        // Cholesky: its own square shape; any forced value selects the tile kernel.
        FORCE_TILES.with(|f| f.set(Some((4, 4))));
        let count = 3 * TileShape::new(n).per_cube + 2;
        let spd = matrices(count, n, true, n as f64, 71 + n as u64);
        let (want, ws) =
            cholesky::<Cpu, f64, f64>(Batch::from_slice(&cpu, count, n, n, &spd).unwrap()).unwrap();
        // In place: the upper triangle (the input's values) must come back as zeros.
        let (got, gs) =
            cholesky::<B, f64, f64>(Batch::from_slice(b, count, n, n, &spd).unwrap()).unwrap();
        let what = format!("Cholesky n = {n}");
        assert_eq!(gs.codes().unwrap(), ws.codes().unwrap(), "{what}");
        let (g, w) = (got.to_vec().unwrap(), want.to_vec().unwrap());
        // Matrix 1 fails: its factors past the failed step are the GPU kernels' own.
        for m in (0..count).filter(|&m| m != 1) {
            let r = m * n * n..(m + 1) * n * n;
            close(&g[r.clone()], &w[r], &format!("{what}, matrix {m}"));
        }
    }
    FORCE_TILES.with(|f| f.set(None));
}

#[cfg(feature = "wgpu")]
#[test]
#[ignore = "tier 2 (long on lavapipe): cargo test --release -- --ignored"]
fn wgpu_tile_kernels_match_the_cpu() {
    on_test_device("wgpu", crate::backend::Wgpu::new(), |b| {
        tiles_against_cpu(&b)
    });
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_tile_kernels_match_the_cpu() {
    on_test_device("cuda", crate::backend::Cuda::new(), |b| {
        tiles_against_cpu(&b)
    });
}
