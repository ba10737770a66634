//! The reference stacks: for each [`CoefficientKind`], the `k` reference matrices whose
//! combination with an element's coefficients is that element's matrix, flattened into a
//! `k x entries` matrix (row `c` the `c`-th reference matrix, row-major) — the `B` operand
//! of the coefficient GEMM.

use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::reference::{num_modes, PostProcessMatrices, ReferenceMatrices};

/// A stack of `k` reference matrices of `rows x cols`.
#[derive(Clone, Debug)]
pub(crate) struct Stack {
    pub(crate) k: usize,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) data: Vec<f64>,
}

impl Stack {
    fn new(k: usize, rows: usize, cols: usize) -> Self {
        Stack {
            k,
            rows,
            cols,
            data: vec![0.0; k * rows * cols],
        }
    }

    fn set(&mut self, c: usize, i: usize, j: usize, v: f64) {
        self.data[(c * self.rows + i) * self.cols + j] = v;
    }
}

/// `A Bᵀ` of two `n x n` row-major matrices.
fn abt(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            out[i * n + j] = (0..n).map(|l| a[i * n + l] * b[j * n + l]).sum();
        }
    }
    out
}

/// The stack of `kind` for degree `rm.degree` (`pp` for the post-processing kinds).
pub(crate) fn stack(
    kind: CoefficientKind,
    rm: &ReferenceMatrices,
    pp: &PostProcessMatrices,
) -> Stack {
    let (nu, nl) = (rm.nu, rm.nl);
    let w = 3 * nl;
    match kind {
        CoefficientKind::Z => {
            let mut s = Stack::new(7, nu, nu);
            let drr = abt(&rm.dr, &rm.dr, nu);
            let drs = abt(&rm.dr, &rm.ds, nu);
            let dss = abt(&rm.ds, &rm.ds, nu);
            for i in 0..nu {
                for j in 0..nu {
                    for l in 0..3 {
                        s.set(l, i, j, rm.e[l][i * nu + j]);
                    }
                    s.set(3, i, j, if i == j { 1.0 } else { 0.0 });
                    s.set(4, i, j, drr[i * nu + j]);
                    s.set(5, i, j, drs[i * nu + j] + drs[j * nu + i]);
                    s.set(6, i, j, dss[i * nu + j]);
                }
            }
            s
        }
        CoefficientKind::B => {
            let mut s = Stack::new(18, nu, w);
            for l in 0..3 {
                let parts = [&rm.f[l], &rm.drf[l], &rm.dsf[l]];
                for (c, part) in parts.iter().enumerate() {
                    for i in 0..nu {
                        for m in 0..nl {
                            s.set(6 * l + 2 * c + m % 2, i, l * nl + m, part[i * nl + m]);
                        }
                    }
                }
            }
            s
        }
        CoefficientKind::C => {
            let mut s = Stack::new(39, w, w);
            for l in 0..3 {
                for m in 0..nl {
                    s.set(l, l * nl + m, l * nl + m, 1.0);
                }
            }
            for l in 0..3 {
                for lp in 0..3 {
                    let ftf = &rm.ftf[3 * l + lp];
                    for m in 0..nl {
                        for mp in 0..nl {
                            let c = 3 + 4 * (3 * l + lp) + 2 * (m % 2) + mp % 2;
                            s.set(c, l * nl + m, lp * nl + mp, ftf[m * nl + mp]);
                        }
                    }
                }
            }
            s
        }
        CoefficientKind::QLambda => {
            let mut s = Stack::new(12, 2 * nu, w);
            for c in 0..2 {
                for l in 0..3 {
                    for i in 0..nu {
                        for m in 0..nl {
                            s.set(
                                6 * c + 2 * l + m % 2,
                                c * nu + i,
                                l * nl + m,
                                rm.f[l][i * nl + m],
                            );
                        }
                    }
                }
            }
            s
        }
        CoefficientKind::QU => {
            let mut s = Stack::new(4, 2 * nu, nu);
            for i in 0..nu {
                for j in 0..nu {
                    // Drᵀ, Dsᵀ in the x block, then in the y block.
                    s.set(0, i, j, rm.dr[j * nu + i]);
                    s.set(1, i, j, rm.ds[j * nu + i]);
                    s.set(2, nu + i, j, rm.dr[j * nu + i]);
                    s.set(3, nu + i, j, rm.ds[j * nu + i]);
                }
            }
            s
        }
        CoefficientKind::S => {
            let n = pp.n;
            let mut s = Stack::new(4, n, n);
            for i in 0..n {
                for j in 0..n {
                    s.set(0, i, j, pp.srr[i * n + j]);
                    s.set(1, i, j, pp.srs[i * n + j] + pp.srs[j * n + i]);
                    s.set(2, i, j, pp.sss[i * n + j]);
                }
            }
            s.set(3, 0, 0, 1.0);
            s
        }
        CoefficientKind::R => {
            let (n, m) = (pp.n, pp.m);
            debug_assert_eq!(m, num_modes(rm.degree));
            let mut s = Stack::new(4, n, 2 * nu);
            for i in 0..n {
                for j in 0..nu {
                    s.set(0, i, j, pp.cr[j * n + i]);
                    s.set(1, i, j, pp.cs[j * n + i]);
                    s.set(2, i, nu + j, pp.cr[j * n + i]);
                    s.set(3, i, nu + j, pp.cs[j * n + i]);
                }
            }
            s
        }
    }
}
