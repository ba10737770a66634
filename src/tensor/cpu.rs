//! The CPU implementation of [`TensorOps`]: the reference the device kernels are tested
//! against. Plain f64 loops over the blocks of nodes (rayon over cells and patches).

use rayon::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::tensor::grid::Grid;
use crate::tensor::ops::{Scatter, TensorOps, Tiling};

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
    fn tensor_tiling<T: Scalar>(
        &self,
        _grid: Grid,
        _request: Option<Tiling>,
    ) -> std::result::Result<Tiling, String> {
        Err("the CPU backend applies the operator cell by cell (no one-pass kernel)".into())
    }

    unsafe fn tensor_tile_apply<T: Scalar>(
        &self,
        _grid: Grid,
        _coef: [T; 2],
        _tiling: Tiling,
        _cell: &Vec<T>,
        _x: &Vec<T>,
        _y: &mut Vec<T>,
    ) -> Result<()> {
        Err(Error::Unsupported {
            backend: self.info().device.clone(),
            what: "the one-pass tensor operator kernel".into(),
            reason: "the CPU backend applies the operator cell by cell".into(),
        })
    }

    unsafe fn tensor_l2_partials<T: Scalar>(
        &self,
        grid: Grid,
        table: &Vec<T>,
        uh: &Vec<T>,
        out: &mut Vec<T>,
    ) -> Result<()> {
        out.fill(T::from_f64(0.0));
        out[0] = T::from_f64(crate::tensor::ops::l2_error_sq(grid, table, uh));
        Ok(())
    }

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

    fn tensor_patch_fits<T: Scalar>(
        &self,
        _grid: Grid,
        _split: bool,
    ) -> std::result::Result<(), usize> {
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
        ax: Option<&Vec<T>>,
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
                let inner: [usize; 3] = std::array::from_fn(|d| origin[d] + usize::from(d < dim));
                let interior = m.pow(dim as u32);
                let mut r: Vec<f64> = match ax {
                    // The split form: the global residual on the interior.
                    Some(ax) => (0..interior)
                        .map(|l| {
                            let g = global_node(grid, m, inner, l);
                            b[g].as_f64() - ax[g].as_f64()
                        })
                        .collect(),
                    None => {
                        let u = load_block(grid, n, origin, xs);
                        let au = local_operator(dim, n, 1, m, mass, stiff, coef, &u);
                        au.iter()
                            .enumerate()
                            .map(|(l, v)| b[global_node(grid, m, inner, l)].as_f64() - v)
                            .collect()
                    }
                };
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
