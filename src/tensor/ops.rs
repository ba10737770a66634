//! [`TensorOps`]: the tensor-product kernels every backend implements (the cell-wise
//! operator by sum factorization, the fused vertex-patch smoothing step, a banded 1D matrix
//! along one direction, the Dirichlet boundary), and the CPU implementation, the reference.
//!
//! # Layout
//! A level's vector holds every node of the `N1^d` grid (`N1 = k · cells + 1`), boundary
//! included, lexicographic with x fastest: node `(x, y, z)` is `(z N1 + y) N1 + x`.
//!
//! # The local operator
//! On a block of `n^d` nodes with 1D matrices `M`, `A` (`n x n`), the operator is
//! `c_lap (A⊗M⊗M + M⊗A⊗M + M⊗M⊗A) + c_mass M⊗M⊗M` (2D: two factors), restricted to the
//! rows `r0 .. r0 + m` in every direction (all rows for a cell; the `2k − 1` interior rows
//! for a vertex patch, whose closure has `n = 2k + 1` nodes).

use rayon::prelude::*;

use crate::backend::core::sealed::Sealed;
use crate::backend::cpu::Cpu;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::basis::gauss_lobatto;
use crate::vector::VectorOps;

/// The shape of one level: dimension (2 or 3), degree `k`, cells per direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grid {
    /// 2 or 3.
    pub dim: usize,
    /// The polynomial degree `k`.
    pub degree: usize,
    /// Cells per direction (`2^level`).
    pub cells: usize,
}

impl Grid {
    /// Nodes per direction, `k · cells + 1`.
    pub fn n1(&self) -> usize {
        self.degree * self.cells + 1
    }

    /// Nodes in all, `N1^d`.
    pub fn len(&self) -> usize {
        self.n1().pow(self.dim as u32)
    }

    /// Whether the grid has no node (never, for a valid grid).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The extents `[nx, ny, nz]` (`nz = 1` in 2D).
    pub fn extents(&self) -> [usize; 3] {
        let n = self.n1();
        [n, n, if self.dim == 3 { n } else { 1 }]
    }

    /// The bit of `colour` in direction `d` (0 for the directions past `dim`).
    pub fn colour_bit(&self, colour: usize, d: usize) -> usize {
        if d < self.dim {
            (colour >> d) & 1
        } else {
            0
        }
    }

    /// Cells per direction of colour `colour` (every second cell from the colour's bit),
    /// or all cells with `None`; 1 past `dim`.
    pub fn cell_blocks(&self, colour: Option<usize>) -> [usize; 3] {
        std::array::from_fn(|d| match (d < self.dim, colour) {
            (false, _) => 1,
            (true, None) => self.cells,
            (true, Some(c)) => (self.cells + 1 - self.colour_bit(c, d)) / 2,
        })
    }

    /// Cells (of colour `colour`, or all with `None`).
    pub fn cell_count(&self, colour: Option<usize>) -> usize {
        self.cell_blocks(colour).iter().product()
    }

    /// Vertex patches per direction of colour `colour` (interior vertices `v` with
    /// `(v − 1) mod 2` the colour's bit in every direction); 1 past `dim`.
    pub fn patch_blocks(&self, colour: usize) -> [usize; 3] {
        std::array::from_fn(|d| {
            if d < self.dim {
                (self.cells - self.colour_bit(colour, d)) / 2
            } else {
                1
            }
        })
    }

    /// Vertex patches of colour `colour`.
    pub fn patch_count(&self, colour: usize) -> usize {
        self.patch_blocks(colour).iter().product()
    }

    /// Whether node `g` lies on the boundary of the domain.
    pub fn on_boundary(&self, g: usize) -> bool {
        let n1 = self.n1();
        let c = [g % n1, (g / n1) % n1, g / (n1 * n1)];
        (0..self.dim).any(|d| c[d] == 0 || c[d] == n1 - 1)
    }

    /// The coordinates in `[0, 1]` of the `N1` nodes along one direction (Gauss–Lobatto
    /// nodes in every cell).
    pub fn node_coordinates(&self) -> Vec<f64> {
        let (k, cells) = (self.degree, self.cells);
        let nodes = gauss_lobatto(k);
        (0..self.n1())
            .map(|i| {
                let c = (i / k).min(cells - 1);
                (c as f64 + nodes[i - c * k]) / cells as f64
            })
            .collect()
    }

    /// Colours of cells and of patches: `2^d`.
    pub fn colours(&self) -> usize {
        1 << self.dim
    }
}

/// How the cell-wise operator adds cell results into the global vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scatter {
    /// All cells at once, adding by atomics.
    Atomic,
    /// The cells of one colour (no two share a node): plain read-modify-write.
    Colour(usize),
}

/// The tensor-product kernel family: implemented by every backend; sealed. Called by
/// [`tensor`](super) and [`multigrid`](crate::multigrid), which build every argument.
///
/// # Safety
/// Every method requires: the buffers belong to this backend; vectors on a grid have
/// `grid.len()` values; `cell` holds `[M̂ | Â]` (`2 (k+1)²` values); `patch` holds
/// `[M_p | A_p | S | λ]` (`2 (2k+1)² + (2k−1)² + (2k−1)` values, see
/// [`Basis1d`](super::Basis1d)); `starts`/`values` describe a banded matrix of `rows`
/// rows and `width` values per row whose columns stay inside the input extent.
pub trait TensorOps: VectorOps + Sealed {
    /// `y += Σ over the cells chosen by `scatter` of the local operator applied to x`
    /// (`coef = [c_lap, c_mass]`). [`Scatter::Atomic`] only where
    /// [`atomic_add`](Self::tensor_atomic_add) is true for `T`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn tensor_cell_apply<T: Scalar>(
        &self,
        grid: Grid,
        coef: [T; 2],
        cell: &Self::Buffer<T>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
        scatter: Scatter,
    ) -> Result<()>;

    /// Whether [`Scatter::Atomic`] is available for `T`.
    fn tensor_atomic_add<T: Scalar>(&self) -> bool;

    /// Whether the fused patch kernel of `grid` fits the device's on-chip memory for `T`
    /// (always on the CPU); the bytes it needs otherwise.
    fn tensor_patch_fits<T: Scalar>(&self, grid: Grid) -> std::result::Result<(), usize>;

    /// On the boundary nodes: `y = src` (or `y = 0` without `src`); interior untouched.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn tensor_boundary<T: Scalar>(
        &self,
        grid: Grid,
        src: Option<&Self::Buffer<T>>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// One colour of the multiplicative vertex-patch smoother: for every patch `j` of
    /// `colour`, `x_j += A_j⁻¹ (b_j − Ā_j x̄_j)` (local residual on the closure, local solve
    /// by fast diagonalization, the interior written).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn tensor_patch_smooth<T: Scalar>(
        &self,
        grid: Grid,
        colour: usize,
        coef: [T; 2],
        patch: &Self::Buffer<T>,
        b: &Self::Buffer<T>,
        x: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = B x` along direction `dir` of an array with extents `ext` (x fastest): `y`
    /// has the extents of `x` with `ext[dir]` replaced by `rows`;
    /// `y[.., i, ..] = Σ_w values[i width + w] x[.., starts[i] + w, ..]`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tensor_line_apply<T: Scalar>(
        &self,
        ext: [usize; 3],
        dir: usize,
        rows: usize,
        width: usize,
        starts: &Self::Buffer<u32>,
        values: &Self::Buffer<T>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;
}

/// Shared memory of the fused patch kernel, in values: the closure `n^d` plus the second
/// x-pass array `m n^{d−1}` (`n = 2k + 1`, `m = 2k − 1`), per patch.
pub(crate) fn patch_shared_values(grid: Grid) -> usize {
    let n = 2 * grid.degree + 1;
    n.pow(grid.dim as u32) + (n - 2) * n.pow(grid.dim as u32 - 1)
}

/// Shared memory of the fused patch kernel per cube, in values, besides the patches: the
/// patch matrices `2 n²`, the eigenvectors `m²` and eigenvalues `m`.
pub(crate) fn patch_fixed_values(grid: Grid) -> usize {
    let (n, m) = (2 * grid.degree + 1, 2 * grid.degree - 1);
    2 * n * n + m * m + m
}

/// `mat` (`ncols` columns, rows `r0 .. r0 + m`) applied along `dir` of `data` (extents
/// `ext`), the result with `ext[dir] = m`.
fn contract(
    mat: &[f64],
    ncols: usize,
    r0: usize,
    m: usize,
    data: &[f64],
    ext: [usize; 3],
    dir: usize,
) -> (Vec<f64>, [usize; 3]) {
    let inner: usize = ext[..dir].iter().product();
    let outer: usize = ext[dir + 1..].iter().product();
    let n = ext[dir];
    let mut out = vec![0.0; inner * m * outer];
    for o in 0..outer {
        for i in 0..m {
            for j in 0..n {
                let a = mat[(r0 + i) * ncols + j];
                if a == 0.0 {
                    continue;
                }
                let src = &data[(o * n + j) * inner..(o * n + j + 1) * inner];
                let dst = &mut out[(o * m + i) * inner..(o * m + i + 1) * inner];
                for (d, s) in dst.iter_mut().zip(src) {
                    *d += a * s;
                }
            }
        }
    }
    let mut e = ext;
    e[dir] = m;
    (out, e)
}

/// The local operator (module docs) on `u` (`n^d` values), rows `r0 .. r0 + m`.
#[allow(clippy::too_many_arguments)]
fn local_operator(
    dim: usize,
    n: usize,
    r0: usize,
    m: usize,
    mass: &[f64],
    stiff: &[f64],
    coef: [f64; 2],
    u: &[f64],
) -> Vec<f64> {
    let ext = [n, n, if dim == 3 { n } else { 1 }];
    let mut out = vec![0.0; m.pow(dim as u32)];
    for term in 0..=dim {
        let c = if term < dim { coef[0] } else { coef[1] };
        if c == 0.0 {
            continue;
        }
        let (mut v, mut e) = (u.to_vec(), ext);
        for dir in 0..dim {
            let mat = if dir == term { stiff } else { mass };
            (v, e) = contract(mat, n, r0, m, &v, e, dir);
        }
        for (o, x) in out.iter_mut().zip(&v) {
            *o += c * x;
        }
    }
    out
}

/// Global node of local node `l` (`n^d` block, x fastest) of the block at `origin`.
fn global_node(grid: Grid, n: usize, origin: [usize; 3], l: usize) -> usize {
    let n1 = grid.n1();
    let (x, y, z) = (l % n, (l / n) % n, l / (n * n));
    ((origin[2] + z) * n1 + origin[1] + y) * n1 + origin[0] + x
}

/// The block at `origin` of `x`, boundary nodes read as zero (homogeneous Dirichlet).
fn load_block<T: Scalar>(grid: Grid, n: usize, origin: [usize; 3], x: &[T]) -> Vec<f64> {
    (0..n.pow(grid.dim as u32))
        .map(|l| {
            let g = global_node(grid, n, origin, l);
            if grid.on_boundary(g) {
                0.0
            } else {
                x[g].as_f64()
            }
        })
        .collect()
}

/// Splits a linear index over `counts` into coordinates (x fastest).
fn coords(mut i: usize, counts: [usize; 3]) -> [usize; 3] {
    let mut c = [0; 3];
    for d in 0..3 {
        c[d] = i % counts[d].max(1);
        i /= counts[d].max(1);
    }
    c
}

impl TensorOps for Cpu {
    unsafe fn tensor_cell_apply<T: Scalar>(
        &self,
        grid: Grid,
        coef: [T; 2],
        cell: &Vec<T>,
        x: &Vec<T>,
        y: &mut Vec<T>,
        scatter: Scatter,
    ) -> Result<()> {
        let (k, n) = (grid.degree, grid.degree + 1);
        let mats: Vec<f64> = cell.iter().map(|v| v.as_f64()).collect();
        let (mass, stiff) = mats.split_at(n * n);
        let coef = [coef[0].as_f64(), coef[1].as_f64()];
        let colours: Vec<usize> = match scatter {
            Scatter::Atomic => (0..grid.colours()).collect(),
            Scatter::Colour(c) => vec![c],
        };
        for c in colours {
            let counts = grid.cell_blocks(Some(c));
            let count = grid.cell_count(Some(c));
            let results: Vec<(usize, Vec<f64>)> = (0..count)
                .into_par_iter()
                .map(|i| {
                    let ci = coords(i, counts);
                    let origin: [usize; 3] = std::array::from_fn(|d| {
                        if d < grid.dim {
                            (2 * ci[d] + grid.colour_bit(c, d)) * k
                        } else {
                            0
                        }
                    });
                    let origin_node = global_node(grid, n, origin, 0);
                    let u = load_block(grid, n, origin, x);
                    (
                        origin_node,
                        local_operator(grid.dim, n, 0, n, mass, stiff, coef, &u),
                    )
                })
                .collect();
            for (origin_node, v) in results {
                let n1 = grid.n1();
                let origin = [
                    origin_node % n1,
                    (origin_node / n1) % n1,
                    origin_node / (n1 * n1),
                ];
                for (l, value) in v.iter().enumerate() {
                    let g = global_node(grid, n, origin, l);
                    y[g] = T::from_f64(y[g].as_f64() + value);
                }
            }
        }
        Ok(())
    }

    fn tensor_atomic_add<T: Scalar>(&self) -> bool {
        true
    }

    fn tensor_patch_fits<T: Scalar>(&self, _grid: Grid) -> std::result::Result<(), usize> {
        Ok(())
    }

    unsafe fn tensor_boundary<T: Scalar>(
        &self,
        grid: Grid,
        src: Option<&Vec<T>>,
        y: &mut Vec<T>,
    ) -> Result<()> {
        y.par_iter_mut().enumerate().for_each(|(g, v)| {
            if grid.on_boundary(g) {
                *v = src.map_or(T::ZERO, |s| s[g]);
            }
        });
        Ok(())
    }

    unsafe fn tensor_patch_smooth<T: Scalar>(
        &self,
        grid: Grid,
        colour: usize,
        coef: [T; 2],
        patch: &Vec<T>,
        b: &Vec<T>,
        x: &mut Vec<T>,
    ) -> Result<()> {
        let (k, dim) = (grid.degree, grid.dim);
        let (n, m) = (2 * k + 1, 2 * k - 1);
        let data: Vec<f64> = patch.iter().map(|v| v.as_f64()).collect();
        let (mass, rest) = data.split_at(n * n);
        let (stiff, rest) = rest.split_at(n * n);
        let (s, lambda) = rest.split_at(m * m);
        let st: Vec<f64> = (0..m * m).map(|i| s[(i % m) * m + i / m]).collect();
        let coef = [coef[0].as_f64(), coef[1].as_f64()];
        let counts = grid.patch_blocks(colour);
        let count = grid.patch_count(colour);
        let xs: &Vec<T> = x;
        let corrections: Vec<([usize; 3], Vec<f64>)> = (0..count)
            .into_par_iter()
            .map(|i| {
                let pi = coords(i, counts);
                // Vertex v = 1 + bit + 2 i; the closure starts at node (v − 1) k.
                let origin: [usize; 3] = std::array::from_fn(|d| {
                    if d < dim {
                        (2 * pi[d] + grid.colour_bit(colour, d)) * k
                    } else {
                        0
                    }
                });
                let u = load_block(grid, n, origin, xs);
                let au = local_operator(dim, n, 1, m, mass, stiff, coef, &u);
                let inner: [usize; 3] = std::array::from_fn(|d| origin[d] + usize::from(d < dim));
                let mut r: Vec<f64> = au
                    .iter()
                    .enumerate()
                    .map(|(l, v)| b[global_node(grid, m, inner, l)].as_f64() - v)
                    .collect();
                let mut e = [m, m, if dim == 3 { m } else { 1 }];
                for dir in 0..dim {
                    (r, e) = contract(&st, m, 0, m, &r, e, dir);
                }
                for (l, v) in r.iter_mut().enumerate() {
                    let c = coords(l, e);
                    let ls: f64 = (0..dim).map(|d| lambda[c[d]]).sum();
                    *v /= coef[0] * ls + coef[1];
                }
                for dir in 0..dim {
                    (r, e) = contract(s, m, 0, m, &r, e, dir);
                }
                (inner, r)
            })
            .collect();
        for (inner, r) in corrections {
            for (l, v) in r.iter().enumerate() {
                let g = global_node(grid, m, inner, l);
                x[g] = T::from_f64(x[g].as_f64() + v);
            }
        }
        Ok(())
    }

    unsafe fn tensor_line_apply<T: Scalar>(
        &self,
        ext: [usize; 3],
        dir: usize,
        rows: usize,
        width: usize,
        starts: &Vec<u32>,
        values: &Vec<T>,
        x: &Vec<T>,
        y: &mut Vec<T>,
    ) -> Result<()> {
        let inner: usize = ext[..dir].iter().product();
        let outer: usize = ext[dir + 1..].iter().product();
        let n = ext[dir];
        let total = (inner * rows * outer).min(y.len());
        y[..total].par_iter_mut().enumerate().for_each(|(u, out)| {
            let (lo, rest) = (u % inner, u / inner);
            let (i, o) = (rest % rows, rest / rows);
            let s = starts[i] as usize;
            let mut acc = 0.0;
            for w in 0..width {
                acc += values[i * width + w].as_f64() * x[(o * n + s + w) * inner + lo].as_f64();
            }
            *out = T::from_f64(acc);
        });
        Ok(())
    }
}
