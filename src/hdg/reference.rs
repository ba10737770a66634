//! The reference triangle: quadrature, the orthonormal Dubiner (PKDO) basis, the Legendre
//! trace basis of its edges, and the reference matrices every element matrix is a scaled
//! combination of. Host-side, f64, checked by the unit tests below.
//!
//! ```text
//!   s
//!   v2 (-1, 1)          edges, counterclockwise, parameter t in [-1, 1] from start to end:
//!   | \                   0: v0 -> v1   (r, s) = ( t, -1)
//!   |   \                 1: v1 -> v2   (r, s) = (-t,  t)
//!   v0----v1   r          2: v2 -> v0   (r, s) = (-1, -t)
//! (-1,-1) (1,-1)
//! ```
//!
//! Why the orthonormal Dubiner basis rather than the seed's modified (boundary/interior)
//! basis: its reference mass matrix is the identity, so the element mass matrix of an affine
//! triangle is `|J| I` (no inverse to form), and it is well conditioned at every degree — the
//! seed's errors stop falling after P = 5 for lack of exactly this. The modes are ordered by
//! total degree, so the basis of degree P is the first `(P+1)(P+2)/2` functions of the basis
//! of degree P + 1 (used by the post-processing).
//!
//! References: Hesthaven & Warburton, *Nodal Discontinuous Galerkin Methods* (2008),
//! Appendix A (`JacobiP`, `GradJacobiP`) and §6.1 (`Simplex2DP`, `GradSimplex2DP`);
//! Golub & Welsch (1969) for Gauss quadrature.

use nalgebra::DMatrix;

pub use crate::quadrature::{gauss_legendre, TriangleQuadrature};

/// The largest polynomial degree of the HDG discretisation.
pub const MAX_DEGREE: usize = 9;

fn factorial(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}

/// The orthonormal Jacobi polynomials `P̃_n^{(α,β)}(x)` for `n = 0..=max` at `x`
/// (Hesthaven–Warburton, `JacobiP`, eq. A.2 and the recurrence A.5), for integer α, β ≥ 0:
/// `∫₋₁¹ (1−x)^α (1+x)^β P̃_m P̃_n dx = δ_mn`.
pub fn jacobi(x: f64, alpha: usize, beta: usize, max: usize) -> Vec<f64> {
    let (a, b) = (alpha as f64, beta as f64);
    let mut p = Vec::with_capacity(max + 1);
    let gamma0 = 2f64.powf(a + b + 1.0) / (a + b + 1.0) * factorial(alpha) * factorial(beta)
        / factorial(alpha + beta);
    p.push(1.0 / gamma0.sqrt());
    if max == 0 {
        return p;
    }
    let gamma1 = (a + 1.0) * (b + 1.0) / (a + b + 3.0) * gamma0;
    p.push(((a + b + 2.0) * x / 2.0 + (a - b) / 2.0) / gamma1.sqrt());
    let mut aold = 2.0 / (2.0 + a + b) * ((a + 1.0) * (b + 1.0) / (a + b + 3.0)).sqrt();
    for i in 1..max {
        let i = i as f64;
        let h1 = 2.0 * i + a + b;
        let anew = 2.0 / (h1 + 2.0)
            * ((i + 1.0) * (i + 1.0 + a + b) * (i + 1.0 + a) * (i + 1.0 + b)
                / ((h1 + 1.0) * (h1 + 3.0)))
                .sqrt();
        let bnew = -(a * a - b * b) / (h1 * (h1 + 2.0));
        let n = p.len();
        let next = (-aold * p[n - 2] + (x - bnew) * p[n - 1]) / anew;
        p.push(next);
        aold = anew;
    }
    p
}

/// `d/dx P̃_n^{(α,β)}(x) = √(n (n+α+β+1)) P̃_{n−1}^{(α+1,β+1)}(x)` (H–W eq. A.6), for
/// `n = 0..=max`.
pub fn jacobi_derivative(x: f64, alpha: usize, beta: usize, max: usize) -> Vec<f64> {
    let mut d = vec![0.0; max + 1];
    if max == 0 {
        return d;
    }
    let lower = jacobi(x, alpha + 1, beta + 1, max - 1);
    for n in 1..=max {
        d[n] = ((n * (n + alpha + beta + 1)) as f64).sqrt() * lower[n - 1];
    }
    d
}

/// The `(i, j)` degree pairs of the Dubiner modes up to total degree `p`, by total degree.
pub fn modes(p: usize) -> Vec<(usize, usize)> {
    let mut m = Vec::with_capacity((p + 1) * (p + 2) / 2);
    for d in 0..=p {
        for i in (0..=d).rev() {
            m.push((i, d - i));
        }
    }
    m
}

/// Number of modes of total degree ≤ `p`: `(p+1)(p+2)/2`.
pub const fn num_modes(p: usize) -> usize {
    (p + 1) * (p + 2) / 2
}

/// The collapsed coordinates `(a, b)` of `(r, s)`: `a = 2(1+r)/(1−s) − 1`, `b = s`
/// (`a = −1` at the top vertex).
fn collapse(r: f64, s: f64) -> (f64, f64) {
    let a = if s < 1.0 - 1e-14 {
        2.0 * (1.0 + r) / (1.0 - s) - 1.0
    } else {
        -1.0
    };
    (a, s)
}

/// Values, r-derivatives and s-derivatives of the orthonormal Dubiner modes of degree ≤ `p`
/// at `(r, s)` (H–W `Simplex2DP`, `GradSimplex2DP`):
/// `φ_ij = √2 P̃_i(a) P̃_j^{(2i+1,0)}(b) (1−b)^i`.
pub fn dubiner(p: usize, r: f64, s: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (a, b) = collapse(r, s);
    let fa = jacobi(a, 0, 0, p);
    let dfa = jacobi_derivative(a, 0, 0, p);
    let n = num_modes(p);
    let (mut v, mut vr, mut vs) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for (i, j) in modes(p) {
        let gb = jacobi(b, 2 * i + 1, 0, j)[j];
        let dgb = jacobi_derivative(b, 2 * i + 1, 0, j)[j];
        let half = 0.5 * (1.0 - b);
        v.push(2f64.sqrt() * fa[i] * gb * (1.0 - b).powi(i as i32));
        let lower = if i > 0 { half.powi(i as i32 - 1) } else { 1.0 };
        let dr = dfa[i] * gb * lower;
        let mut ds = dfa[i] * gb * 0.5 * (1.0 + a) * lower;
        let mut tmp = dgb * half.powi(i as i32);
        if i > 0 {
            tmp -= 0.5 * i as f64 * gb * lower;
        }
        ds += fa[i] * tmp;
        let scale = 2f64.powf(i as f64 + 0.5);
        vr.push(dr * scale);
        vs.push(ds * scale);
    }
    (v, vr, vs)
}

/// The point of reference edge `l` at parameter `t ∈ [−1, 1]`.
pub fn edge_point(l: usize, t: f64) -> (f64, f64) {
    match l {
        0 => (t, -1.0),
        1 => (-t, t),
        _ => (-1.0, -t),
    }
}

/// The reference matrices of degree `p` (row-major `Vec`s):
///
/// | matrix | size | entries |
/// |---|---|---|
/// | `dr`, `ds` | `Nu x Nu` | `∫_T φ_i ∂_r φ_j`, `∫_T φ_i ∂_s φ_j` |
/// | `e[l]` | `Nu x Nu` | `∫₋₁¹ φ_i φ_j dt` on edge `l` |
/// | `f[l]` | `Nu x Nλ` | `∫₋₁¹ φ_i ψ_m dt` on edge `l` (ψ: orthonormal Legendre in t) |
/// | `drf[l]`, `dsf[l]` | `Nu x Nλ` | `dr · f[l]`, `ds · f[l]` |
/// | `ftf[l][l']` | `Nλ x Nλ` | `f[l]ᵀ f[l']` |
///
/// The mass matrix is the identity (orthonormal basis) and so is the trace mass `∫ψψ`.
#[derive(Clone, Debug)]
pub struct ReferenceMatrices {
    /// Polynomial degree P.
    pub degree: usize,
    /// Element modes `Nu = (P+1)(P+2)/2`.
    pub nu: usize,
    /// Trace modes per edge `Nλ = P + 1`.
    pub nl: usize,
    /// `∫ φ_i ∂_r φ_j`.
    pub dr: Vec<f64>,
    /// `∫ φ_i ∂_s φ_j`.
    pub ds: Vec<f64>,
    /// Edge mass matrices.
    pub e: [Vec<f64>; 3],
    /// Element–trace edge matrices.
    pub f: [Vec<f64>; 3],
    /// `dr f[l]`.
    pub drf: [Vec<f64>; 3],
    /// `ds f[l]`.
    pub dsf: [Vec<f64>; 3],
    /// `f[l]ᵀ f[l']`, index `3 l + l'`.
    pub ftf: Vec<Vec<f64>>,
}

fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize, ta: bool) -> Vec<f64> {
    let am = if ta {
        DMatrix::from_row_slice(k, m, a).transpose()
    } else {
        DMatrix::from_row_slice(m, k, a)
    };
    let bm = DMatrix::from_row_slice(k, n, b);
    let c = am * bm;
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            out.push(c[(i, j)]);
        }
    }
    out
}

impl ReferenceMatrices {
    /// The matrices of degree `p`, by quadrature exact for every product.
    pub fn new(p: usize) -> Self {
        let (nu, nl) = (num_modes(p), p + 1);
        let q = TriangleQuadrature::exact_for(2 * p);
        let (mut dr, mut ds) = (vec![0.0; nu * nu], vec![0.0; nu * nu]);
        for k in 0..q.len() {
            let (v, vr, vs) = dubiner(p, q.r[k], q.s[k]);
            for i in 0..nu {
                for j in 0..nu {
                    dr[i * nu + j] += q.w[k] * v[i] * vr[j];
                    ds[i * nu + j] += q.w[k] * v[i] * vs[j];
                }
            }
        }
        let (t, w) = gauss_legendre(p + 2);
        let mut e: [Vec<f64>; 3] = std::array::from_fn(|_| vec![0.0; nu * nu]);
        let mut f: [Vec<f64>; 3] = std::array::from_fn(|_| vec![0.0; nu * nl]);
        for l in 0..3 {
            for (&tk, &wk) in t.iter().zip(&w) {
                let (r, s) = edge_point(l, tk);
                let (v, _, _) = dubiner(p, r, s);
                let psi = jacobi(tk, 0, 0, p);
                for i in 0..nu {
                    for j in 0..nu {
                        e[l][i * nu + j] += wk * v[i] * v[j];
                    }
                    for m in 0..nl {
                        f[l][i * nl + m] += wk * v[i] * psi[m];
                    }
                }
            }
        }
        let drf = std::array::from_fn(|l| matmul(&dr, &f[l], nu, nu, nl, false));
        let dsf = std::array::from_fn(|l| matmul(&ds, &f[l], nu, nu, nl, false));
        let ftf = (0..9)
            .map(|k| matmul(&f[k / 3], &f[k % 3], nl, nu, nl, true))
            .collect();
        ReferenceMatrices {
            degree: p,
            nu,
            nl,
            dr,
            ds,
            e,
            f,
            drf,
            dsf,
            ftf,
        }
    }
}

/// The reference matrices of the local post-processing (degree `P + 1` for `u*`), with
/// `n = num_modes(P + 1)` and `m = num_modes(P)`:
/// `srr/srs/sss[i][j] = ∫ ∂_a φ_i ∂_b φ_j` (`n x n`, `a, b ∈ {r, s}`; `srs` is `∂_r φ_i ∂_s φ_j`),
/// `cr/cs[i][j] = ∫ φ_i ∂_r φ_j`, `∫ φ_i ∂_s φ_j` with `i < m` (degree P) and `j < n`.
#[derive(Clone, Debug)]
pub struct PostProcessMatrices {
    /// Modes of degree ≤ P + 1.
    pub n: usize,
    /// Modes of degree ≤ P.
    pub m: usize,
    /// `∫ ∂_r φ_i ∂_r φ_j`.
    pub srr: Vec<f64>,
    /// `∫ ∂_r φ_i ∂_s φ_j`.
    pub srs: Vec<f64>,
    /// `∫ ∂_s φ_i ∂_s φ_j`.
    pub sss: Vec<f64>,
    /// `∫ φ_i ∂_r φ_j`, `m x n`.
    pub cr: Vec<f64>,
    /// `∫ φ_i ∂_s φ_j`, `m x n`.
    pub cs: Vec<f64>,
}

impl PostProcessMatrices {
    /// The matrices for the post-processing of a degree-`p` solution.
    pub fn new(p: usize) -> Self {
        let (n, m) = (num_modes(p + 1), num_modes(p));
        let q = TriangleQuadrature::exact_for(2 * p + 2);
        let mut out = PostProcessMatrices {
            n,
            m,
            srr: vec![0.0; n * n],
            srs: vec![0.0; n * n],
            sss: vec![0.0; n * n],
            cr: vec![0.0; m * n],
            cs: vec![0.0; m * n],
        };
        for k in 0..q.len() {
            let (v, vr, vs) = dubiner(p + 1, q.r[k], q.s[k]);
            let w = q.w[k];
            for i in 0..n {
                for j in 0..n {
                    out.srr[i * n + j] += w * vr[i] * vr[j];
                    out.srs[i * n + j] += w * vr[i] * vs[j];
                    out.sss[i * n + j] += w * vs[i] * vs[j];
                }
            }
            for (i, vi) in v.iter().enumerate().take(m) {
                for j in 0..n {
                    out.cr[i * n + j] += w * vi * vr[j];
                    out.cs[i * n + j] += w * vi * vs[j];
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_legendre_integrates_its_degree_exactly() {
        for n in 1..=12 {
            let (x, w) = gauss_legendre(n);
            for d in 0..2 * n {
                let got: f64 = x.iter().zip(&w).map(|(x, w)| w * x.powi(d as i32)).sum();
                let want = if d % 2 == 0 {
                    2.0 / (d + 1) as f64
                } else {
                    0.0
                };
                assert!((got - want).abs() < 1e-13, "n {n} degree {d}: {got} {want}");
            }
        }
    }

    #[test]
    fn triangle_quadrature_integrates_monomials() {
        // ∫_T (1+r)^a (1+s)^b over the reference triangle = 2^{a+b+2} a! b! / (a+b+2)!.
        for degree in 0..=20 {
            let q = TriangleQuadrature::exact_for(degree);
            for a in 0..=degree {
                let b = degree - a;
                let got: f64 = (0..q.len())
                    .map(|k| q.w[k] * (1.0 + q.r[k]).powi(a as i32) * (1.0 + q.s[k]).powi(b as i32))
                    .sum();
                let want = 2f64.powi((a + b + 2) as i32) * factorial(a) * factorial(b)
                    / factorial(a + b + 2);
                assert!(
                    (got - want).abs() < 1e-12 * want.max(1.0),
                    "{a} {b}: {got} {want}"
                );
            }
        }
    }

    #[test]
    fn dubiner_basis_is_orthonormal() {
        for p in 0..=10 {
            let q = TriangleQuadrature::exact_for(2 * p);
            let n = num_modes(p);
            let mut g = vec![0.0; n * n];
            for k in 0..q.len() {
                let (v, _, _) = dubiner(p, q.r[k], q.s[k]);
                for i in 0..n {
                    for j in 0..n {
                        g[i * n + j] += q.w[k] * v[i] * v[j];
                    }
                }
            }
            for i in 0..n {
                for j in 0..n {
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!(
                        (g[i * n + j] - want).abs() < 1e-12,
                        "p {p} ({i},{j}) {}",
                        g[i * n + j]
                    );
                }
            }
        }
    }

    #[test]
    fn dubiner_derivatives_match_finite_differences() {
        let h = 1e-6;
        for p in [1, 4, 9] {
            for &(r, s) in &[(-0.3, -0.4), (0.2, -0.9), (-0.8, 0.5)] {
                let (_, vr, vs) = dubiner(p, r, s);
                let (a, _, _) = dubiner(p, r + h, s);
                let (b, _, _) = dubiner(p, r - h, s);
                let (c, _, _) = dubiner(p, r, s + h);
                let (d, _, _) = dubiner(p, r, s - h);
                for i in 0..vr.len() {
                    let fr = (a[i] - b[i]) / (2.0 * h);
                    let fs = (c[i] - d[i]) / (2.0 * h);
                    assert!(
                        (vr[i] - fr).abs() < 1e-5 * (1.0 + fr.abs()),
                        "p {p} mode {i} r"
                    );
                    assert!(
                        (vs[i] - fs).abs() < 1e-5 * (1.0 + fs.abs()),
                        "p {p} mode {i} s"
                    );
                }
            }
        }
    }

    #[test]
    fn reference_matrices_satisfy_the_divergence_theorem() {
        // ∫_T φ_0 ∂_r φ_j = ∮ φ_0 φ_j n_r for every mode j (φ_0 constant), and the edge
        // matrix of edge 0 maps the constant to the first trace mode.
        for p in 1..=MAX_DEGREE {
            let m = ReferenceMatrices::new(p);
            // ∫_T ∂_r φ_0 = 0 and ∫_T φ_0 ∂_r φ_j = c ∫ ∂_r φ_j = c ∮ φ_j n_r.
            let c = 1.0 / 2f64.sqrt(); // φ_0 = 1/√2
            for j in 0..m.nu {
                // ∮ φ_j n_r ds over the reference boundary: edge 1 (n_r = 1/√2, ds = √2 dt),
                // edge 2 (n_r = −1, ds = dt).
                let mut flux = 0.0;
                let (t, w) = gauss_legendre(p + 2);
                for (&tk, &wk) in t.iter().zip(&w) {
                    let (r1, s1) = edge_point(1, tk);
                    let (r2, s2) = edge_point(2, tk);
                    flux += wk * dubiner(p, r1, s1).0[j] - wk * dubiner(p, r2, s2).0[j];
                }
                assert!((m.dr[j] - c * flux).abs() < 1e-12, "p {p} j {j}");
            }
            // The trace matrices of edge 0 at φ_0 are ∫ φ_0 ψ_m dt = (1/√2) √2 δ_m0.
            assert!((m.f[0][0] - 1.0).abs() < 1e-13);
            for mm in 1..m.nl {
                assert!(m.f[0][mm].abs() < 1e-13);
            }
        }
    }
}
