//! The orthonormal bases of the reference simplices: the Jacobi polynomials, the
//! Proriol–Koornwinder–Dubiner–Owens basis of the tetrahedron and its gradient, and the
//! triangle's basis (for the faces).

use crate::dg::reference::num_nodes;

fn factorial(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}

/// The orthonormal Jacobi polynomial `P_n^{(α,β)}(x)` (weight `(1−x)^α (1+x)^β` on
/// `[−1, 1]`), integer `α, β ≥ 0`.
pub fn jacobi_p(x: f64, alpha: usize, beta: usize, n: usize) -> f64 {
    let (a, b) = (alpha as f64, beta as f64);
    let gamma0 = 2f64.powf(a + b + 1.0) / (a + b + 1.0) * factorial(alpha) * factorial(beta)
        / factorial(alpha + beta);
    let p0 = 1.0 / gamma0.sqrt();
    if n == 0 {
        return p0;
    }
    let gamma1 = (a + 1.0) * (b + 1.0) / (a + b + 3.0) * gamma0;
    let p1 = ((a + b + 2.0) * x / 2.0 + (a - b) / 2.0) / gamma1.sqrt();
    let (mut prev, mut cur) = (p0, p1);
    let mut aold = 2.0 / (2.0 + a + b) * ((a + 1.0) * (b + 1.0) / (a + b + 3.0)).sqrt();
    for i in 1..n {
        let fi = i as f64;
        let h1 = 2.0 * fi + a + b;
        let anew = 2.0 / (h1 + 2.0)
            * ((fi + 1.0) * (fi + 1.0 + a + b) * (fi + 1.0 + a) * (fi + 1.0 + b)
                / (h1 + 1.0)
                / (h1 + 3.0))
                .sqrt();
        let bnew = -(a * a - b * b) / h1 / (h1 + 2.0);
        let next = (-aold * prev + (x - bnew) * cur) / anew;
        prev = cur;
        cur = next;
        aold = anew;
    }
    cur
}

/// `d/dx P_n^{(α,β)}(x)` of the orthonormal Jacobi polynomial.
pub fn grad_jacobi_p(x: f64, alpha: usize, beta: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        ((n * (n + alpha + beta + 1)) as f64).sqrt() * jacobi_p(x, alpha + 1, beta + 1, n - 1)
    }
}

/// The collapsed coordinates `(a, b, c)` of `(r, s, t)`.
fn rst_to_abc(r: f64, s: f64, t: f64) -> (f64, f64, f64) {
    let a = if (s + t).abs() > 1e-14 {
        2.0 * (1.0 + r) / (-s - t) - 1.0
    } else {
        -1.0
    };
    let b = if (t - 1.0).abs() > 1e-14 {
        2.0 * (1.0 + s) / (1.0 - t) - 1.0
    } else {
        -1.0
    };
    (a, b, t)
}

/// The `(i, j, k)` of every basis function, `i + j + k ≤ N`, in the book's order.
pub fn mode_indices(order: usize) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::with_capacity(num_nodes(order));
    for i in 0..=order {
        for j in 0..=order - i {
            for k in 0..=order - i - j {
                out.push((i, j, k));
            }
        }
    }
    out
}

/// The orthonormal basis function `(i, j, k)` at `(r, s, t)`.
pub fn simplex3d_p(r: f64, s: f64, t: f64, (i, j, k): (usize, usize, usize)) -> f64 {
    let (a, b, c) = rst_to_abc(r, s, t);
    let h1 = jacobi_p(a, 0, 0, i);
    let h2 = jacobi_p(b, 2 * i + 1, 0, j);
    let h3 = jacobi_p(c, 2 * (i + j) + 2, 0, k);
    2.0 * 2f64.sqrt() * h1 * h2 * (1.0 - b).powi(i as i32) * h3 * (1.0 - c).powi((i + j) as i32)
}

/// The gradient `(∂/∂r, ∂/∂s, ∂/∂t)` of basis function `(i, j, k)` at `(r, s, t)`.
pub fn grad_simplex3d_p(r: f64, s: f64, t: f64, (i, j, k): (usize, usize, usize)) -> [f64; 3] {
    let (a, b, c) = rst_to_abc(r, s, t);
    let fa = jacobi_p(a, 0, 0, i);
    let dfa = grad_jacobi_p(a, 0, 0, i);
    let gb = jacobi_p(b, 2 * i + 1, 0, j);
    let dgb = grad_jacobi_p(b, 2 * i + 1, 0, j);
    let hc = jacobi_p(c, 2 * (i + j) + 2, 0, k);
    let dhc = grad_jacobi_p(c, 2 * (i + j) + 2, 0, k);
    let hb = 0.5 * (1.0 - b);
    let hcc = 0.5 * (1.0 - c);
    let pw = |x: f64, e: usize| x.powi(e as i32);
    let mut dr = dfa * gb * hc;
    if i > 0 {
        dr *= pw(hb, i - 1);
    }
    if i + j > 0 {
        dr *= pw(hcc, i + j - 1);
    }
    let mut ds = 0.5 * (1.0 + a) * dr;
    let mut tmp = dgb * pw(hb, i);
    if i > 0 {
        tmp += -0.5 * i as f64 * gb * pw(hb, i - 1);
    }
    if i + j > 0 {
        tmp *= pw(hcc, i + j - 1);
    }
    tmp = fa * tmp * hc;
    ds += tmp;
    let mut dt = 0.5 * (1.0 + a) * dr + 0.5 * (1.0 + b) * tmp;
    let mut tmp = dhc * pw(hcc, i + j);
    if i + j > 0 {
        tmp -= 0.5 * (i + j) as f64 * hc * pw(hcc, i + j - 1);
    }
    tmp = fa * gb * tmp * pw(hb, i);
    dt += tmp;
    let scale = 2f64.powf((2 * i + j) as f64 + 1.5);
    [dr * scale, ds * scale, dt * scale]
}

/// The orthonormal 2D basis function `(i, j)` on the reference triangle
/// `(−1,−1), (1,−1), (−1,1)` at `(r, s)`.
pub fn simplex2d_p(r: f64, s: f64, i: usize, j: usize) -> f64 {
    let a = if (s - 1.0).abs() > 1e-14 {
        2.0 * (1.0 + r) / (1.0 - s) - 1.0
    } else {
        -1.0
    };
    let h1 = jacobi_p(a, 0, 0, i);
    let h2 = jacobi_p(s, 2 * i + 1, 0, j);
    2f64.sqrt() * h1 * h2 * (1.0 - s).powi(i as i32)
}
