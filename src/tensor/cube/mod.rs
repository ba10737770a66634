//! The CubeCL kernels of [`TensorOps`].
//!
//! # Sum factorization on chip
//! A cube holds `cpc` blocks (cells or patch closures, `n^d` nodes each) in shared memory,
//! `n^{d−1}` units per block (`UNIT_POS_X`, one per line of nodes) and one block per
//! `UNIT_POS_Y`. Each 1D contraction is done by the units that own whole lines in its
//! direction: a unit reads its line into registers, multiplies by the small matrix and
//! writes the result back over the line it read, so no unit ever writes a slot another
//! unit reads in the same pass. The local operator takes 7 contractions in 3D (the
//! x-direction products `M x` and `A x` are shared by the three terms), 4 in 2D.

mod kernels;
mod patch;
mod tile;

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{scalar, Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::{DType, Scalar};
use crate::tensor::grid::Grid;
use crate::tensor::ops::{patch_fixed_values, patch_shared_values, Scatter, TensorOps, Tiling};

use kernels::{
    boundary_kernel, cell_atomic_kernel, cell_colour_kernel, l2_kernel, line_kernel, BlocksLaunch,
    CoefficientsLaunch,
};
use patch::patch_kernel;
use tile::{tile_apply_kernel, TilesLaunch};

/// Units per cube and shared values per cube of the one-pass kernel of degree `k` with
/// `cells` cells per tile edge ([`tile`]): `E²` and `2k(E² + E·cells·k)`,
/// `E = (cells + 1) k + 1`.
fn tile_footprint(k: usize, cells: usize) -> (usize, usize) {
    let e = (cells + 1) * k + 1;
    (e * e, 2 * k * (e * e + e * cells * k))
}

/// Cells per tile edge of the one-pass kernel by degree (index `k`; 0 unused).
const TILE_CELLS: [usize; 11] = [1, 15, 7, 4, 4, 3, 3, 3, 2, 2, 2];

/// Cubes wanted in a one-pass launch: many per multiprocessor (short chunks measured
/// faster than long ones, H200); each chunk reads one extra cell layer.
const TILE_CUBES: usize = 8192;

/// The launch's block placement: `counts` blocks per direction, every second block from
/// the colour's bit (`Some(colour)`) or every block (`None`).
fn blocks_arg<R: Runtime>(
    grid: Grid,
    counts: [usize; 3],
    colour: Option<usize>,
) -> BlocksLaunch<R> {
    let c = colour.unwrap_or(0);
    let bit = |d: usize| grid.colour_bit(c, d);
    BlocksLaunch::new(
        counts[0].max(1),
        counts[1].max(1),
        bit(0),
        bit(1),
        bit(2),
        if colour.is_some() { 2 } else { 1 },
        grid.n1(),
        counts.iter().product(),
    )
}

impl<R: CubeRuntime> Cube<R> {
    /// Blocks per cube for blocks of `lanes` units and `shared` values of shared memory
    /// each (plus `fixed` values per cube): about 128 units, within the device's limit.
    fn blocks_per_cube<T: Scalar>(&self, lanes: usize, shared: usize, fixed: usize) -> usize {
        let bytes = std::mem::size_of::<T>();
        let limit = self.info().max_shared_bytes / bytes;
        let by_units = (128 / lanes).max(1);
        let by_memory = limit.saturating_sub(fixed) / shared.max(1);
        by_units.min(by_memory).max(1)
    }

    /// Cube count of a grid-stride launch over `groups` groups.
    fn group_count(&self, groups: usize) -> CubeCount {
        CubeCount::Static(
            groups.clamp(1, self.config().max_cubes as usize) as u32,
            1,
            1,
        )
    }
}

impl<R: CubeRuntime> TensorOps for Cube<R> {
    unsafe fn tensor_cell_apply<T: Scalar>(
        &self,
        grid: Grid,
        coef: [T; 2],
        cell: &CubeBuffer<T>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
        scatter: Scatter,
    ) -> Result<()> {
        let (k, dim) = (grid.degree, grid.dim);
        let n = k + 1;
        let lanes = n.pow(dim as u32 - 1);
        let nd = n.pow(dim as u32);
        let cpc = self.blocks_per_cube::<T>(lanes, 2 * nd, 2 * n * n);
        let colour = match scatter {
            Scatter::Atomic => None,
            Scatter::Colour(c) => Some(c),
        };
        let counts = grid.cell_blocks(colour);
        let total: usize = counts.iter().product();
        if total == 0 {
            return Ok(());
        }
        let cubes = self.group_count(total.div_ceil(cpc));
        let dim3 = CubeDim::new_2d(lanes as u32, cpc as u32);
        let coef = || CoefficientsLaunch::new(scalar(coef[0]), scalar(coef[1]));
        match scatter {
            Scatter::Atomic => self.launch::<T>(("cell-atomic", k, dim, cpc), || {
                // SAFETY: blocks below `total` read and write nodes of the grid (x and y
                // hold grid.len() values); cell holds 2 n² values.
                unsafe {
                    cell_atomic_kernel::launch_unchecked::<T, R>(
                        self.client(),
                        cubes,
                        dim3,
                        cell.arg(),
                        x.arg(),
                        y.arg(),
                        coef(),
                        blocks_arg(grid, counts, colour),
                        k,
                        dim,
                        cpc,
                    )
                }
            }),
            Scatter::Colour(_) => self.launch::<T>(("cell-colour", k, dim, cpc), || {
                // SAFETY: as above.
                unsafe {
                    cell_colour_kernel::launch_unchecked::<T, R>(
                        self.client(),
                        cubes,
                        dim3,
                        cell.arg(),
                        x.arg(),
                        y.arg(),
                        coef(),
                        blocks_arg(grid, counts, colour),
                        k,
                        dim,
                        cpc,
                    )
                }
            }),
        }
    }

    fn tensor_atomic_add<T: Scalar>(&self) -> bool {
        match T::DTYPE {
            DType::F32 => true,
            DType::F64 => self.info().atomic_f64,
            _ => false,
        }
    }

    fn tensor_tiling<T: Scalar>(
        &self,
        grid: Grid,
        request: Option<Tiling>,
    ) -> std::result::Result<Tiling, String> {
        if grid.dim != 3 {
            return Err(format!(
                "the one-pass kernel is 3D only (the grid is {}D)",
                grid.dim
            ));
        }
        let k = grid.degree;
        let info = self.info();
        let units = (info.max_units_per_cube as usize).min(1024);
        let shared = info.max_shared_bytes / std::mem::size_of::<T>();
        let fits = |cells: usize| {
            let (u, s) = tile_footprint(k, cells);
            u <= units && s <= shared
        };
        let cells = match request {
            Some(r) => {
                if r.cells == 0 || r.chunk == 0 {
                    return Err(format!(
                        "a tiling needs at least one cell per tile edge and per chunk, got {r:?}"
                    ));
                }
                if !fits(r.cells) {
                    let (u, s) = tile_footprint(k, r.cells);
                    return Err(format!(
                        "{} cells per tile edge at degree {k} need {u} units and {} bytes of \
                         shared memory per cube; the device has {units} and {}",
                        r.cells,
                        s * std::mem::size_of::<T>(),
                        info.max_shared_bytes
                    ));
                }
                r.cells
            }
            // Small cubes, several per multiprocessor, beat large tiles with less halo:
            // the measured best per degree (H200, f64, `bench --suite tensor
            // --tile-sweep`, 2026-11-30), or the largest that fits below it.
            // Not capped by the grid (tiles past it are masked), so that every level of a
            // hierarchy, and the compile-ahead rehearsal, launch the same kernel.
            None => match (1..=TILE_CELLS[k.min(TILE_CELLS.len() - 1)])
                .rev()
                .find(|&c| fits(c))
            {
                Some(c) => c,
                None => {
                    return Err(format!(
                        "degree {k}: no tile fits {units} units and {} bytes of shared memory",
                        info.max_shared_bytes
                    ))
                }
            },
        };
        let tiles = grid.n1().div_ceil(cells * k);
        let chunk = match request {
            Some(r) => r.chunk.min(grid.cells),
            None => {
                let chunks = TILE_CUBES
                    .div_ceil(tiles * tiles)
                    .clamp(1, grid.cells.div_ceil(4).max(1));
                grid.cells.div_ceil(chunks)
            }
        };
        let chunks = grid.cells.div_ceil(chunk);
        let (mx, my, _) = info.max_cube_count;
        if tiles * tiles > mx as usize || chunks > my as usize {
            return Err(format!(
                "{tiles}² tiles and {chunks} chunks exceed the device's cube count {mx} x {my}"
            ));
        }
        Ok(Tiling { cells, chunk })
    }

    unsafe fn tensor_tile_apply<T: Scalar>(
        &self,
        grid: Grid,
        coef: [T; 2],
        tiling: Tiling,
        _cell: &CubeBuffer<T>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let k = grid.degree;
        let tiles = grid.n1().div_ceil(tiling.cells * k);
        let chunks = grid.cells.div_ceil(tiling.chunk);
        let (units, _) = tile_footprint(k, tiling.cells);
        self.launch::<T>(("tile", k, tiling.cells), || {
            // SAFETY: every cube reads and writes nodes of the grid only (indices checked
            // against n1 in the kernel; x and y hold grid.len() values); the tiling fits
            // the device (tensor_tiling). The cell matrices are constants of the kernel.
            unsafe {
                tile_apply_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    CubeCount::Static((tiles * tiles) as u32, chunks as u32, 1),
                    CubeDim::new_1d(units as u32),
                    x.arg(),
                    y.arg(),
                    CoefficientsLaunch::new(scalar(coef[0]), scalar(coef[1])),
                    TilesLaunch::new(grid.n1(), grid.cells, tiles, tiling.chunk),
                    k,
                    tiling.cells,
                )
            }
        })
    }

    fn tensor_patch_fits<T: Scalar>(
        &self,
        grid: Grid,
        split: bool,
    ) -> std::result::Result<(), usize> {
        let bytes = (patch_shared_values(grid, split) + patch_fixed_values(grid, split))
            * std::mem::size_of::<T>();
        if bytes <= self.info().max_shared_bytes {
            Ok(())
        } else {
            Err(bytes)
        }
    }

    unsafe fn tensor_l2_partials<T: Scalar>(
        &self,
        grid: Grid,
        table: &CubeBuffer<T>,
        uh: &CubeBuffer<T>,
        out: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let units = out.len();
        let (cubes, dim) = self.config().grid(units);
        self.launch::<T>(("l2", grid.degree, grid.dim), || {
            // SAFETY: t < units = out.len(); a cell's nodes lie in the grid vector uh; the
            // table holds l2_table_len(grid) values (the trait's contract).
            unsafe {
                l2_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    table.arg(),
                    uh.arg(),
                    out.arg(),
                    grid.cells,
                    grid.n1(),
                    units,
                    grid.degree,
                    grid.dim,
                )
            }
        })
    }

    unsafe fn tensor_boundary<T: Scalar>(
        &self,
        grid: Grid,
        src: Option<&CubeBuffer<T>>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let total = grid.len();
        let (cubes, dim) = self.config().grid(total);
        let copy = src.is_some();
        let src = src.unwrap_or(&*y).handle().clone();
        self.launch::<T>(("boundary", grid.dim, copy), || {
            // SAFETY: g < total = grid.len() indexes src and y (both grid vectors).
            unsafe {
                boundary_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    ArrayArg::from_raw_parts(src, y.padded_len()),
                    y.arg(),
                    grid.n1(),
                    total,
                    grid.dim,
                    copy,
                )
            }
        })
    }

    unsafe fn tensor_patch_smooth<T: Scalar>(
        &self,
        grid: Grid,
        colour: usize,
        coef: [T; 2],
        patch: &CubeBuffer<T>,
        b: &CubeBuffer<T>,
        ax: Option<&CubeBuffer<T>>,
        x: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (k, dim) = (grid.degree, grid.dim);
        let split = ax.is_some();
        // A unit per line of the block held: the closure's (n) fused, the interior's split.
        let w = if split { 2 * k - 1 } else { 2 * k + 1 };
        let lanes = w.pow(dim as u32 - 1);
        let cpc = self.blocks_per_cube::<T>(
            lanes,
            patch_shared_values(grid, split),
            patch_fixed_values(grid, split),
        );
        let counts = grid.patch_blocks(colour);
        let total: usize = counts.iter().product();
        if total == 0 {
            return Ok(());
        }
        let cubes = self.group_count(total.div_ceil(cpc));
        self.launch::<T>(("patch", k, dim, cpc, split), || {
            // SAFETY: every patch below `total` reads its closure (split: its interior, in b
            // and ax) and writes its interior, nodes of the grid; patch holds the documented
            // values. Fused, ax is b again and not read.
            unsafe {
                patch_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    CubeDim::new_2d(lanes as u32, cpc as u32),
                    patch.arg(),
                    b.arg(),
                    ax.unwrap_or(b).arg(),
                    x.arg(),
                    CoefficientsLaunch::new(scalar(coef[0]), scalar(coef[1])),
                    blocks_arg(grid, counts, Some(colour)),
                    k,
                    dim,
                    cpc,
                    split,
                )
            }
        })
    }

    unsafe fn tensor_line_apply<T: Scalar>(
        &self,
        ext: [usize; 3],
        dir: usize,
        rows: usize,
        width: usize,
        starts: &CubeBuffer<u32>,
        values: &CubeBuffer<T>,
        x: &CubeBuffer<T>,
        y: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let inner: usize = ext[..dir].iter().product();
        let outer: usize = ext[dir + 1..].iter().product();
        let total = inner * rows * outer;
        let (cubes, dim) = self.config().grid(total);
        self.launch::<T>("line", || {
            // SAFETY: the trait's contract keeps every column inside ext[dir].
            unsafe {
                line_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    starts.arg(),
                    values.arg(),
                    x.arg(),
                    y.arg(),
                    inner,
                    ext[dir],
                    rows,
                    width,
                    total,
                )
            }
        })
    }
}
