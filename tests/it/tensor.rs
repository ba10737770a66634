//! Matrix-free `Q_k` operators, the patch smoother and the transfers on every backend,
//! against matrices assembled on the host in f64 (NaN-poisoned outputs).

use galerkin::tensor::TensorOps;
use std::collections::BTreeMap;

use galerkin::solver::LinearOperator;
use galerkin::sparse::{Coo, Csr};
use galerkin::tensor::{ApplyPath, Basis1d, Grid, OperatorKind, TensorOperator, Tiling};
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Cpu, Error, Scalar, Vector};
use nalgebra::{DMatrix, DVector};

use crate::backend_tests;
use crate::harness::{announce, assert_close_scaled, widen};

/// Whether global node `g` of `grid` is on the boundary.
fn on_boundary(grid: Grid, g: usize) -> bool {
    let n1 = grid.n1();
    let c = [g % n1, (g / n1) % n1, g / (n1 * n1)];
    (0..grid.dim).any(|d| c[d] == 0 || c[d] == n1 - 1)
}

/// The operator `c_lap (∇u, ∇v) + c_mass (u, v)` assembled cell by cell from explicit
/// element matrices (Kronecker products of the 1D matrices, no sum factorization), with
/// identity rows and columns on the boundary.
fn assemble(grid: Grid, laplace: f64, mass: f64) -> BTreeMap<(usize, usize), f64> {
    let basis = Basis1d::new(grid.degree).unwrap();
    let (k, n1, d) = (grid.degree, grid.n1(), grid.dim);
    let n = k + 1;
    let h = 1.0 / grid.cells as f64;
    let local = n.pow(d as u32);
    let idx = |l: usize| [l % n, (l / n) % n, l / (n * n)];
    let mut entries = BTreeMap::new();
    let cells = grid.cells.pow(d as u32);
    for c in 0..cells {
        let cc = [
            c % grid.cells,
            (c / grid.cells) % grid.cells,
            c / (grid.cells * grid.cells),
        ];
        let global = |l: usize| {
            let i = idx(l);
            let z = if d == 3 { cc[2] * k + i[2] } else { 0 };
            (z * n1 + cc[1] * k + i[1]) * n1 + cc[0] * k + i[0]
        };
        for a in 0..local {
            for b in 0..local {
                let (ia, ib) = (idx(a), idx(b));
                let m1 = |dir: usize| basis.mass[ia[dir] * n + ib[dir]] * h;
                let a1 = |dir: usize| basis.stiffness[ia[dir] * n + ib[dir]] / h;
                let mut lap = 0.0;
                for t in 0..d {
                    lap += (0..d)
                        .map(|dir| if dir == t { a1(dir) } else { m1(dir) })
                        .product::<f64>();
                }
                let ms: f64 = (0..d).map(m1).product();
                let (ga, gb) = (global(a), global(b));
                if on_boundary(grid, ga) || on_boundary(grid, gb) {
                    continue;
                }
                *entries.entry((ga, gb)).or_insert(0.0) += laplace * lap + mass * ms;
            }
        }
    }
    for g in (0..grid.len()).filter(|&g| on_boundary(grid, g)) {
        entries.insert((g, g), 1.0);
    }
    entries
}

fn to_csr(n: usize, entries: &BTreeMap<(usize, usize), f64>) -> Csr<Cpu, f64> {
    let mut coo = Coo::<Cpu, f64>::with_capacity(n, n, entries.len());
    for (&(i, j), &v) in entries {
        coo.push(i, j, v).unwrap();
    }
    Csr::from_coo(&coo).unwrap()
}

fn host_apply(entries: &BTreeMap<(usize, usize), f64>, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for (&(i, j), &v) in entries {
        y[i] += v * x[j];
    }
    y
}

/// Both operators (and a Helmholtz mix) against the assembled matrix, every scatter mode
/// the backend has, 2D and 3D, odd and even cell counts.
fn operator_matches_assembled<B: Backend + TensorOps, T: Scalar>(b: &B) {
    let cases = [
        (2, 1, 3),
        (2, 2, 2),
        (2, 4, 3),
        (2, 6, 2),
        (3, 1, 3),
        (3, 2, 2),
        (3, 3, 3),
        (3, 3, 5),
        (3, 5, 2),
        (3, 8, 2),
    ];
    for (dim, degree, cells) in cases {
        let grid = Grid { dim, degree, cells };
        for (kind, (lap, mass)) in [
            (OperatorKind::Laplace, (1.0, 0.0)),
            (OperatorKind::Mass, (0.0, 1.0)),
            (
                OperatorKind::Helmholtz {
                    laplace: 0.5,
                    mass: 3.0,
                },
                (0.5, 3.0),
            ),
        ] {
            let entries = assemble(grid, lap, mass);
            let x: Vec<f64> = random_vec(grid.len(), 40 + degree as u64);
            let xt: Vec<T> = x.iter().map(|&v| T::from_f64(v)).collect();
            let reference = host_apply(&entries, &widen(&xt));
            // The assembled CSR agrees with the host loop (the matrix the test claims).
            let csr = to_csr(grid.len(), &entries);
            let mut yc = Vector::<Cpu, f64>::zeros(&Cpu::new(), grid.len()).unwrap();
            csr.apply(
                &Vector::from_slice(&Cpu::new(), &widen(&xt)).unwrap(),
                &mut yc,
            )
            .unwrap();
            let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert_close_scaled::<f64>(&yc.to_vec().unwrap(), &reference, scale, 64, "CSR");
            let op = TensorOperator::<B, T>::new(b, grid, kind).unwrap();
            // Every path the backend has: the default, both scatters, and one-pass tilings
            // small enough to give several tiles and chunks.
            let mut ops = vec![op.path()];
            if b.tensor_atomic_add::<T>() {
                ops.push(ApplyPath::Atomic);
            }
            ops.push(ApplyPath::Colour);
            for (cells, chunk) in [(1, 1), (2, 1), (1, 2), (3, 2)] {
                if let Ok(t) = b.tensor_tiling::<T>(grid, Some(Tiling { cells, chunk })) {
                    ops.push(ApplyPath::Tiled(t));
                }
            }
            for path in ops {
                let op = TensorOperator::<B, T>::new(b, grid, kind).unwrap();
                let op = match path {
                    ApplyPath::Tiled(t) => op.with_tiling(t),
                    ApplyPath::Atomic => op.with_scatter(true),
                    ApplyPath::Colour => op.with_scatter(false),
                }
                .unwrap();
                let xd = Vector::from_slice(b, &xt).unwrap();
                let mut y = Vector::from_slice(b, &poison::<T>(grid.len())).unwrap();
                op.apply(&xd, &mut y).unwrap();
                let case = format!("{kind:?} {dim}D Q{degree} {cells} cells {path:?}");
                assert_close_scaled::<T>(
                    &y.to_vec().unwrap(),
                    &reference,
                    scale,
                    16 * (degree + 1).pow(dim as u32),
                    &case,
                );
            }
            // apply_add: y = 2 A x − y.
            let xd = Vector::from_slice(b, &xt).unwrap();
            let y0: Vec<T> = random_vec(grid.len(), 7);
            let mut y = Vector::from_slice(b, &y0).unwrap();
            op.apply_add(T::from_f64(2.0), &xd, -T::ONE, &mut y)
                .unwrap();
            let expect: Vec<f64> = reference
                .iter()
                .zip(&y0)
                .map(|(r, y)| 2.0 * r - y.as_f64())
                .collect();
            assert_close_scaled::<T>(
                &y.to_vec().unwrap(),
                &expect,
                2.0 * scale + 1.0,
                16 * (degree + 1).pow(dim as u32),
                "apply_add",
            );
        }
    }
}

/// The interior matrix of the patch of `grid` around vertex `v` (node indices, dense).
fn patch_nodes(grid: Grid, v: [usize; 3]) -> Vec<usize> {
    let (k, n1) = (grid.degree, grid.n1());
    let m = 2 * k - 1;
    let nz = if grid.dim == 3 { m } else { 1 };
    let mut nodes = Vec::new();
    for z in 0..nz {
        for y in 0..m {
            for x in 0..m {
                let gz = if grid.dim == 3 {
                    (v[2] - 1) * k + 1 + z
                } else {
                    0
                };
                nodes.push((gz * n1 + (v[1] - 1) * k + 1 + y) * n1 + (v[0] - 1) * k + 1 + x);
            }
        }
    }
    nodes
}

/// Sequential multiplicative Schwarz on the host: for every patch in colour order,
/// `x_j += A_jj⁻¹ (b − A x)_j` with dense local solves.
fn sequential_schwarz(
    grid: Grid,
    entries: &BTreeMap<(usize, usize), f64>,
    x: &mut [f64],
    b: &[f64],
) {
    let nv = grid.cells - 1;
    for colour in 0..(1 << grid.dim) {
        let bit = |d: usize| (colour >> d) & 1;
        let vz: Vec<usize> = if grid.dim == 3 {
            (1..=nv).filter(|v| (v - 1) % 2 == bit(2)).collect()
        } else {
            vec![1]
        };
        for &z in &vz {
            for y in (1..=nv).filter(|v| (v - 1) % 2 == bit(1)) {
                for xv in (1..=nv).filter(|v| (v - 1) % 2 == bit(0)) {
                    let nodes = patch_nodes(grid, [xv, y, z]);
                    let r_full: Vec<f64> = {
                        let ax = host_apply(entries, x);
                        b.iter().zip(&ax).map(|(b, a)| b - a).collect()
                    };
                    let m = nodes.len();
                    let a = DMatrix::from_fn(m, m, |i, j| {
                        entries.get(&(nodes[i], nodes[j])).copied().unwrap_or(0.0)
                    });
                    let r = DVector::from_fn(m, |i, _| r_full[nodes[i]]);
                    let c = a.lu().solve(&r).unwrap();
                    for (i, &g) in nodes.iter().enumerate() {
                        x[g] += c[i];
                    }
                }
            }
        }
    }
}

/// One step of the coloured parallel patch smoother equals the sequential multiplicative
/// Schwarz method in colour order; on level 1 (one patch) it is the exact solve.
fn patch_smoother_is_sequential_schwarz<B: Backend + TensorOps, T: Scalar>(b: &B) {
    use galerkin::multigrid::{Multigrid, MultigridParams, PatchForm};
    for (dim, degree, cells) in [
        (2, 1, 4),
        (2, 3, 8),
        (2, 5, 4),
        (3, 1, 4),
        (3, 2, 4),
        (3, 4, 2),
    ] {
        let grid = Grid { dim, degree, cells };
        let levels = cells.trailing_zeros() as usize;
        let entries = assemble(grid, 1.0, 0.0);
        let mut bv: Vec<f64> = widen(&random_vec::<T>(grid.len(), 3));
        let mut x0: Vec<f64> = widen(&random_vec::<T>(grid.len(), 4));
        for g in (0..grid.len()).filter(|&g| on_boundary(grid, g)) {
            bv[g] = 0.0;
            x0[g] = 0.0;
        }
        let mut reference = x0.clone();
        sequential_schwarz(grid, &entries, &mut reference, &bv);
        let to_t = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let bd = Vector::from_slice(b, &to_t(&bv)).unwrap();
        let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        // Both forms of the step: the fused kernel (refused where it does not fit the
        // device's on-chip memory) and the split one (the operator, then the solves).
        for form in [PatchForm::Fused, PatchForm::Split] {
            let params = MultigridParams {
                patch_form: form,
                ..Default::default()
            };
            let case = format!("patch smoother ({form:?}) {dim}D Q{degree} {cells} cells");
            let mg = match Multigrid::<B, T>::new(b, dim, degree, levels, params) {
                Err(Error::Unsupported { reason, .. }) if form == PatchForm::Fused => {
                    announce(&format!("[tensor] {case}: {reason}"));
                    continue;
                }
                mg => mg.unwrap(),
            };
            let mut x = Vector::from_slice(b, &to_t(&x0)).unwrap();
            mg.smooth_once(&mut x, &bd).unwrap();
            assert_close_scaled::<T>(&x.to_vec().unwrap(), &reference, scale, 1 << 14, &case);
        }
        let case = format!("patch smoother {dim}D Q{degree} {cells} cells");
        if cells == 2 {
            // One patch: the exact solution, against a dense solve of the interior system.
            let csr = to_csr(grid.len(), &entries);
            let xs = Vector::from_slice(&Cpu::new(), &reference).unwrap();
            let mut ax = Vector::<Cpu, f64>::zeros(&Cpu::new(), grid.len()).unwrap();
            csr.apply(&xs, &mut ax).unwrap();
            let res: f64 = ax
                .to_vec()
                .unwrap()
                .iter()
                .zip(&bv)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(
                res < 1e-10 * bv.iter().map(|v| v * v).sum::<f64>().sqrt(),
                "{case}: {res}"
            );
        }
    }
}

/// Prolongation reproduces polynomials of degree k; restriction is its transpose.
fn transfers_interpolate_and_are_adjoint<B: Backend + TensorOps, T: Scalar>(b: &B) {
    use galerkin::multigrid::{Multigrid, MultigridParams};
    for (dim, degree) in [(2, 1), (2, 4), (3, 2), (3, 3)] {
        let mg = Multigrid::<B, T>::new(b, dim, degree, 3, MultigridParams::default()).unwrap();
        let (coarse, fine) = (mg.level_grid(2).unwrap(), mg.level_grid(3).unwrap());
        let basis = Basis1d::new(degree).unwrap();
        let coord = |grid: Grid, i: usize| {
            let c = (i / degree).min(grid.cells - 1);
            (c as f64 + basis.nodes[i - c * degree]) / grid.cells as f64
        };
        let poly = |x: f64| (1.0 - 2.0 * x).powi(degree as i32) + 0.25 * x;
        let values = |grid: Grid| -> Vec<f64> {
            let n1 = grid.n1();
            (0..grid.len())
                .map(|g| {
                    let c = [g % n1, (g / n1) % n1, g / (n1 * n1)];
                    (0..dim).map(|d| poly(coord(grid, c[d]))).product()
                })
                .collect()
        };
        let to_t = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let xc = Vector::from_slice(b, &to_t(&values(coarse))).unwrap();
        let mut xf = Vector::from_slice(b, &poison::<T>(fine.len())).unwrap();
        mg.prolongate(3, &xc, &mut xf).unwrap();
        let expect = values(fine);
        assert_close_scaled::<T>(&xf.to_vec().unwrap(), &expect, 2.0, 256, "prolongation");
        // (P u, v) = (u, Pᵀ v).
        let u: Vec<T> = random_vec(coarse.len(), 5);
        let v: Vec<T> = random_vec(fine.len(), 6);
        let mut pu = Vector::from_slice(b, &poison::<T>(fine.len())).unwrap();
        mg.prolongate(3, &Vector::from_slice(b, &u).unwrap(), &mut pu)
            .unwrap();
        let mut rv = Vector::from_slice(b, &poison::<T>(coarse.len())).unwrap();
        mg.restrict(3, &Vector::from_slice(b, &v).unwrap(), &mut rv)
            .unwrap();
        let lhs: f64 = widen(&pu.to_vec().unwrap())
            .iter()
            .zip(&widen(&v))
            .map(|(a, b)| a * b)
            .sum();
        let rhs: f64 = widen(&rv.to_vec().unwrap())
            .iter()
            .zip(&widen(&u))
            .map(|(a, b)| a * b)
            .sum();
        let tol = 1e3 * T::EPS * (fine.len() as f64).sqrt() * lhs.abs().max(1.0);
        assert!((lhs - rhs).abs() < tol, "{dim}D Q{degree}: {lhs} vs {rhs}");
    }
}

/// The default path on grids with several default tiles and chunks in every direction
/// (and a remainder tile), against the f64 CPU operator; boundary rows included.
fn default_path_matches_cpu_on_larger_grids<B: Backend + TensorOps, T: Scalar>(b: &B) {
    for (degree, cells) in [(1, 40), (2, 18), (3, 11), (4, 7), (6, 5), (8, 3)] {
        let grid = Grid {
            dim: 3,
            degree,
            cells,
        };
        let kind = OperatorKind::Helmholtz {
            laplace: 1.5,
            mass: 2.0,
        };
        let x: Vec<f64> = random_vec(grid.len(), 90 + degree as u64);
        let xt: Vec<T> = x.iter().map(|&v| T::from_f64(v)).collect();
        let cpu = Cpu::new();
        let reference_op = TensorOperator::<Cpu, f64>::new(&cpu, grid, kind).unwrap();
        let mut yr = Vector::<Cpu, f64>::zeros(&cpu, grid.len()).unwrap();
        reference_op
            .apply(&Vector::from_slice(&cpu, &widen(&xt)).unwrap(), &mut yr)
            .unwrap();
        let reference = yr.to_vec().unwrap();
        let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let op = TensorOperator::<B, T>::new(b, grid, kind).unwrap();
        let xd = Vector::from_slice(b, &xt).unwrap();
        let mut y = Vector::from_slice(b, &poison::<T>(grid.len())).unwrap();
        op.apply(&xd, &mut y).unwrap();
        assert_close_scaled::<T>(
            &y.to_vec().unwrap(),
            &reference,
            scale,
            16 * (degree + 1).pow(3),
            &format!("Q{degree} {cells} cells {:?}", op.path()),
        );
    }
}

backend_tests!(default_path_matches_cpu_on_larger_grids);

backend_tests!(
    tier2_devices: operator_matches_assembled,
    patch_smoother_is_sequential_schwarz,
    transfers_interpolate_and_are_adjoint,
);
