//! Quadrature and the nodes of the 1D bases, on the host in f64: Gauss–Legendre rules on
//! `[-1, 1]`, the collapsed (Duffy) rules of the reference triangle, and Gauss–Lobatto
//! points on `[0, 1]`. Shared by HDG (element and trace integrals), the tensor-product
//! bases (their nodes and exact 1D matrices), multigrid (right-hand sides and the L2 error)
//! and the nodal DG nodes (warp-and-blend starts from Gauss–Lobatto points).
//!
//! Reference: Golub & Welsch (1969): the points are the eigenvalues of the symmetric Jacobi
//! matrix of the orthogonal polynomials' three-term recurrence.

use nalgebra::{DMatrix, SymmetricEigen};

/// Gauss–Legendre points and weights on `[-1, 1]`, exact for degree `2n − 1`: the
/// eigenvalues of the symmetric Jacobi matrix of the Legendre recurrence (Golub–Welsch), the
/// weights `2 v₀²` from the first components of its normalised eigenvectors.
pub fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut j = DMatrix::<f64>::zeros(n, n);
    for k in 1..n {
        let b = k as f64 / ((4 * k * k - 1) as f64).sqrt();
        j[(k, k - 1)] = b;
        j[(k - 1, k)] = b;
    }
    let eig = SymmetricEigen::new(j);
    let mut pairs: Vec<(f64, f64)> = (0..n)
        .map(|i| {
            let v0 = eig.eigenvectors[(0, i)];
            (eig.eigenvalues[i], 2.0 * v0 * v0)
        })
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    pairs.into_iter().unzip()
}

/// A quadrature rule on the reference triangle: points `(r, s)` and weights (summing to
/// its area, 2).
#[derive(Clone, Debug)]
pub struct TriangleQuadrature {
    /// r coordinates.
    pub r: Vec<f64>,
    /// s coordinates.
    pub s: Vec<f64>,
    /// Weights.
    pub w: Vec<f64>,
}

impl TriangleQuadrature {
    /// The collapsed (Duffy) product of two `n`-point Gauss–Legendre rules: `r = (1+a)(1−b)/2 − 1`,
    /// `s = b`, weight `w_a w_b (1−b)/2`; exact for total degree `2n − 2`.
    pub fn collapsed(n: usize) -> Self {
        let (x, w) = gauss_legendre(n);
        let mut q = TriangleQuadrature {
            r: Vec::with_capacity(n * n),
            s: Vec::with_capacity(n * n),
            w: Vec::with_capacity(n * n),
        };
        for (&b, &wb) in x.iter().zip(&w) {
            for (&a, &wa) in x.iter().zip(&w) {
                q.r.push((1.0 + a) * (1.0 - b) / 2.0 - 1.0);
                q.s.push(b);
                q.w.push(wa * wb * (1.0 - b) / 2.0);
            }
        }
        q
    }

    /// A rule exact for total degree `degree`.
    pub fn exact_for(degree: usize) -> Self {
        Self::collapsed(degree / 2 + 1 + usize::from(degree % 2 == 1))
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.w.len()
    }

    /// Whether the rule has no points.
    pub fn is_empty(&self) -> bool {
        self.w.is_empty()
    }
}

/// Gauss–Lobatto points on `[0, 1]` (`k + 1` of them, increasing, with both ends): the
/// interior ones are the eigenvalues of the Jacobi matrix of the Jacobi polynomials
/// `P^{(1,1)}` (the zeros of `P'_k`), found by Golub–Welsch.
pub fn gauss_lobatto(k: usize) -> Vec<f64> {
    let m = k.saturating_sub(1);
    let mut j = DMatrix::<f64>::zeros(m, m);
    for n in 1..m {
        let nf = n as f64;
        let b = (nf * (nf + 2.0) / ((2.0 * nf + 1.0) * (2.0 * nf + 3.0))).sqrt();
        j[(n, n - 1)] = b;
        j[(n - 1, n)] = b;
    }
    let mut inner: Vec<f64> = if m == 0 {
        Vec::new()
    } else {
        SymmetricEigen::new(j).eigenvalues.iter().copied().collect()
    };
    inner.sort_by(f64::total_cmp);
    let mut t = Vec::with_capacity(k + 1);
    t.push(0.0);
    t.extend(inner.iter().map(|x| 0.5 * (x + 1.0)));
    t.push(1.0);
    t
}
