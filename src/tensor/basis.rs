//! The 1D ingredients of the Cartesian `Q_k` spaces, in f64 on the host: Gauss–Lobatto
//! nodes, the Lagrange basis on them, the 1D mass and stiffness matrices of a cell, of a
//! vertex patch (two cells), the interpolation from a cell to its two children, and the
//! generalized eigenpairs of the fast-diagonalization patch solver.
//!
//! Every matrix here is for the reference cell `[0, 1]`; a cell of width `h` has mass
//! `h M̂` and stiffness `Â / h`, which the operators fold into two scalar coefficients.

use nalgebra::{DMatrix, SymmetricEigen};

use crate::error::{Error, Result};
use crate::quadrature::gauss_legendre;
pub use crate::quadrature::gauss_lobatto;

/// The largest polynomial degree of the `Q_k` spaces.
pub const MAX_DEGREE: usize = 10;

/// Checks `1 ≤ degree ≤ MAX_DEGREE`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `op` otherwise.
pub fn check_degree(op: &'static str, degree: usize) -> Result<()> {
    if (1..=MAX_DEGREE).contains(&degree) {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            name: "degree",
            reason: format!("the degree k must be in 1..={MAX_DEGREE}, got {degree}"),
        })
    }
}

/// The Lagrange basis on `nodes`: values and derivatives of every basis function at `x`.
fn lagrange(nodes: &[f64], x: f64) -> (Vec<f64>, Vec<f64>) {
    let n = nodes.len();
    let mut v = vec![0.0; n];
    let mut d = vec![0.0; n];
    for i in 0..n {
        let mut value = 1.0;
        let mut deriv = 0.0;
        for j in (0..n).filter(|&j| j != i) {
            let f = 1.0 / (nodes[i] - nodes[j]);
            deriv = deriv * (x - nodes[j]) * f + value * f;
            value *= (x - nodes[j]) * f;
        }
        v[i] = value;
        d[i] = deriv;
    }
    (v, d)
}

/// The 1D data of `Q_k` on the reference cell `[0, 1]`.
#[derive(Clone, Debug)]
pub struct Basis1d {
    /// The degree `k`.
    pub degree: usize,
    /// The `k + 1` Gauss–Lobatto nodes.
    pub nodes: Vec<f64>,
    /// Mass matrix `M̂ᵢⱼ = ∫ φᵢ φⱼ`, `(k + 1)²` values, row-major.
    pub mass: Vec<f64>,
    /// Stiffness matrix `Âᵢⱼ = ∫ φᵢ' φⱼ'`, row-major.
    pub stiffness: Vec<f64>,
}

impl Basis1d {
    /// The basis of degree `k` (exact Gauss quadrature with `k + 1` points).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a degree outside `1..=MAX_DEGREE`.
    pub fn new(k: usize) -> Result<Self> {
        check_degree("Basis1d::new", k)?;
        let nodes = gauss_lobatto(k);
        let n = k + 1;
        let (gx, gw) = gauss_legendre(n);
        let mut mass = vec![0.0; n * n];
        let mut stiffness = vec![0.0; n * n];
        for (x, w) in gx.iter().zip(&gw) {
            let (v, d) = lagrange(&nodes, 0.5 * (x + 1.0));
            for i in 0..n {
                for j in 0..n {
                    mass[i * n + j] += 0.5 * w * v[i] * v[j];
                    stiffness[i * n + j] += 0.5 * w * d[i] * d[j];
                }
            }
        }
        Ok(Basis1d {
            degree: k,
            nodes,
            mass,
            stiffness,
        })
    }

    /// Nodes per cell and direction, `k + 1`.
    pub fn n(&self) -> usize {
        self.degree + 1
    }

    /// The mass and stiffness of a vertex patch (two reference cells side by side,
    /// `2k + 1` nodes), row-major `(2k + 1)²` each.
    pub fn patch_matrices(&self) -> (Vec<f64>, Vec<f64>) {
        let (n, k) = (self.n(), self.degree);
        let p = 2 * k + 1;
        let mut m = vec![0.0; p * p];
        let mut a = vec![0.0; p * p];
        for cell in 0..2 {
            for i in 0..n {
                for j in 0..n {
                    let (gi, gj) = (cell * k + i, cell * k + j);
                    m[gi * p + gj] += self.mass[i * n + j];
                    a[gi * p + gj] += self.stiffness[i * n + j];
                }
            }
        }
        (m, a)
    }

    /// The values of the `k + 1` basis functions at `x` in `[0, 1]`.
    pub(crate) fn values_at(&self, x: f64) -> Vec<f64> {
        lagrange(&self.nodes, x).0
    }

    /// Interpolation from a cell to its two children: `(2k + 1) x (k + 1)` row-major, row
    /// `f` the values of the cell's basis at fine node `f` of the two children.
    pub fn child_interpolation(&self) -> Vec<f64> {
        let (n, k) = (self.n(), self.degree);
        let mut p = Vec::with_capacity((2 * k + 1) * n);
        for f in 0..2 * k + 1 {
            let (child, local) = if f < k { (0, f) } else { (1, f - k) };
            let x = 0.5 * (child as f64 + self.nodes[local]);
            p.extend(self.values_at(x));
        }
        p
    }

    /// The fast-diagonalization data of a vertex patch: with `A_I`, `M_I` the interior
    /// (`m = 2k − 1`) blocks of the patch matrices, the solution of `A_I S = M_I S Λ` with
    /// `Sᵀ M_I S = I`. Returns `(S, λ)`, `S` row-major `m x m` (column `j` the `j`-th
    /// eigenvector), `λ` increasing.
    ///
    /// # Errors
    /// [`Error::InvalidMatrix`] if the interior mass block is not positive definite (it
    /// always is; reported rather than assumed).
    pub fn patch_eigen(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        let p = 2 * self.degree + 1;
        let m = p - 2;
        let (pm, pa) = self.patch_matrices();
        let mi = DMatrix::from_fn(m, m, |i, j| pm[(i + 1) * p + j + 1]);
        let ai = DMatrix::from_fn(m, m, |i, j| pa[(i + 1) * p + j + 1]);
        let chol = mi.cholesky().ok_or_else(|| Error::InvalidMatrix {
            format: "dense",
            reason: "the interior patch mass matrix is not positive definite".into(),
        })?;
        let l = chol.l();
        let linv = l
            .clone()
            .try_inverse()
            .ok_or_else(|| Error::InvalidMatrix {
                format: "dense",
                reason: "the Cholesky factor of the patch mass matrix is singular".into(),
            })?;
        let c = &linv * ai * linv.transpose();
        let c = (&c + c.transpose()) * 0.5;
        let eig = SymmetricEigen::new(c);
        let s = linv.transpose() * &eig.eigenvectors;
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]));
        let mut sv = vec![0.0; m * m];
        for (jj, &j) in order.iter().enumerate() {
            for i in 0..m {
                sv[i * m + jj] = s[(i, j)];
            }
        }
        let lambda = order.iter().map(|&j| eig.eigenvalues[j]).collect();
        Ok((sv, lambda))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_lobatto_integrates_and_is_symmetric() {
        for k in 1..=MAX_DEGREE {
            let t = gauss_lobatto(k);
            assert_eq!(t.len(), k + 1);
            for i in 0..=k {
                assert!((t[i] + t[k - i] - 1.0).abs() < 1e-13, "k = {k}");
            }
            assert!(t.windows(2).all(|w| w[0] < w[1]));
        }
        // Q2's middle node is 1/2; Q3's interior nodes are (1 ± 1/√5)/2.
        assert!((gauss_lobatto(2)[1] - 0.5).abs() < 1e-15);
        assert!((gauss_lobatto(3)[1] - 0.5 * (1.0 - 1.0 / 5f64.sqrt())).abs() < 1e-14);
    }

    #[test]
    fn matrices_reproduce_integrals_of_polynomials() {
        for k in 1..=MAX_DEGREE {
            let b = Basis1d::new(k).unwrap();
            let n = b.n();
            // u = x^k, v = 1 + x: ∫ u v = 1/(k+1) + 1/(k+2); ∫ u' v' = 1 (k ≥ 1).
            let u: Vec<f64> = b.nodes.iter().map(|x| x.powi(k as i32)).collect();
            let v: Vec<f64> = b.nodes.iter().map(|x| 1.0 + x).collect();
            let quad = |m: &[f64]| -> f64 {
                (0..n)
                    .map(|i| (0..n).map(|j| u[i] * m[i * n + j] * v[j]).sum::<f64>())
                    .sum()
            };
            let kf = k as f64;
            assert!((quad(&b.mass) - (1.0 / (kf + 1.0) + 1.0 / (kf + 2.0))).abs() < 1e-12);
            assert!((quad(&b.stiffness) - 1.0).abs() < 1e-10, "k = {k}");
        }
    }

    #[test]
    fn patch_eigenvectors_diagonalize_both_matrices() {
        for k in 1..=MAX_DEGREE {
            let b = Basis1d::new(k).unwrap();
            let (s, lambda) = b.patch_eigen().unwrap();
            let p = 2 * k + 1;
            let m = p - 2;
            let (pm, pa) = b.patch_matrices();
            for i in 0..m {
                for j in 0..m {
                    let (mut sms, mut sas) = (0.0, 0.0);
                    for a in 0..m {
                        for c in 0..m {
                            let w = s[a * m + i] * s[c * m + j];
                            sms += w * pm[(a + 1) * p + c + 1];
                            sas += w * pa[(a + 1) * p + c + 1];
                        }
                    }
                    let id = if i == j { 1.0 } else { 0.0 };
                    assert!((sms - id).abs() < 1e-9, "k = {k}");
                    assert!(
                        (sas - id * lambda[i]).abs() < 1e-7 * lambda[m - 1],
                        "k = {k}"
                    );
                }
            }
            assert!(lambda[0] > 0.0);
        }
    }

    #[test]
    fn child_interpolation_reproduces_polynomials() {
        for k in 1..=MAX_DEGREE {
            let b = Basis1d::new(k).unwrap();
            let p = b.child_interpolation();
            let coarse: Vec<f64> = b
                .nodes
                .iter()
                .map(|x| (1.0 - 2.0 * x).powi(k as i32))
                .collect();
            for f in 0..2 * k + 1 {
                let (child, local) = if f < k { (0, f) } else { (1, f - k) };
                let x = 0.5 * (child as f64 + b.nodes[local]);
                let v: f64 = (0..=k).map(|c| p[f * (k + 1) + c] * coarse[c]).sum();
                assert!(
                    (v - (1.0 - 2.0 * x).powi(k as i32)).abs() < 1e-10,
                    "k = {k}"
                );
            }
        }
    }

    #[test]
    fn degree_out_of_range_is_an_error() {
        assert!(matches!(
            Basis1d::new(0),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            Basis1d::new(11),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
