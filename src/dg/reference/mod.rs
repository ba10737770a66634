//! The reference tetrahedron of nodal DG (seed 004, after Hesthaven & Warburton, *Nodal
//! Discontinuous Galerkin Methods*, ch. 6 and 10), in f64 on the host: Warburton's
//! warp-and-blend nodes, the orthonormal (Proriol–Koornwinder–Dubiner–Owens) basis and its
//! gradient, the Vandermonde matrix, the differentiation matrices `Dr`, `Ds`, `Dt`, the
//! face node lists and the lift matrix.
//!
//! Reference element: vertices `(−1,−1,−1)`, `(1,−1,−1)`, `(−1,1,−1)`, `(−1,−1,1)`. Faces:
//! 0: `t = −1`, 1: `s = −1`, 2: `r + s + t = −1`, 3: `r = −1`.

use nalgebra::DMatrix;

use crate::error::{Error, Result};

pub(crate) mod basis;
pub(crate) mod warp_blend;

pub use basis::{
    grad_jacobi_p, grad_simplex3d_p, jacobi_p, mode_indices, simplex2d_p, simplex3d_p,
};
pub use warp_blend::nodes;

/// The largest order of the nodal DG elements.
pub const MAX_ORDER: usize = 9;

/// Checks `1 ≤ order ≤ MAX_ORDER`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `op` otherwise.
pub fn check_order(op: &'static str, order: usize) -> Result<()> {
    if (1..=MAX_ORDER).contains(&order) {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op,
            name: "order",
            reason: format!("the order N must be in 1..={MAX_ORDER}, got {order}"),
        })
    }
}

/// Nodes per element, `(N+1)(N+2)(N+3)/6`.
pub fn num_nodes(order: usize) -> usize {
    (order + 1) * (order + 2) * (order + 3) / 6
}

/// Nodes per face, `(N+1)(N+2)/2`.
pub fn num_face_nodes(order: usize) -> usize {
    (order + 1) * (order + 2) / 2
}

/// The reference-element operators of order `N` (all row-major `f64`).
#[derive(Clone, Debug)]
pub struct ReferenceTet {
    /// The order `N`.
    pub order: usize,
    /// The nodes `(r, s, t)`.
    pub nodes: Vec<[f64; 3]>,
    /// The Vandermonde matrix `V[i][j] = ψ_j(x_i)` (`Np x Np`).
    pub vandermonde: DMatrix<f64>,
    /// `Dr`, `Ds`, `Dt` (`Np x Np` each): `(D_r u)_i = ∂u_h/∂r (x_i)`.
    pub diff: [DMatrix<f64>; 3],
    /// The nodes of each face (`4 x Nfp` indices into the element's nodes).
    pub face_nodes: [Vec<usize>; 4],
    /// The lift matrix `M⁻¹ E` (`Np x 4 Nfp`), faces side by side.
    pub lift: DMatrix<f64>,
    /// The mass matrix `(V Vᵀ)⁻¹` of the reference element.
    pub mass: DMatrix<f64>,
}

impl ReferenceTet {
    /// The reference element of order `N`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an order outside `1..=MAX_ORDER`; [`Error::InvalidMatrix`]
    /// if a Vandermonde matrix is singular (never, for these nodes; reported rather than
    /// assumed).
    pub fn new(order: usize) -> Result<Self> {
        check_order("ReferenceTet::new", order)?;
        let x = nodes(order);
        let np = x.len();
        let modes = mode_indices(order);
        let v = DMatrix::from_fn(np, np, |i, j| {
            simplex3d_p(x[i][0], x[i][1], x[i][2], modes[j])
        });
        let grads: Vec<Vec<[f64; 3]>> = x
            .iter()
            .map(|p| {
                modes
                    .iter()
                    .map(|&m| grad_simplex3d_p(p[0], p[1], p[2], m))
                    .collect()
            })
            .collect();
        let singular = |what: &str| Error::InvalidMatrix {
            format: "dense",
            reason: format!("the {what} of order {order} is singular"),
        };
        let vinv = v
            .clone()
            .try_inverse()
            .ok_or_else(|| singular("Vandermonde matrix"))?;
        let diff = [0, 1, 2].map(|d| DMatrix::from_fn(np, np, |i, j| grads[i][j][d]) * &vinv);
        let tol = 1e-10;
        let on = |f: usize, p: &[f64; 3]| match f {
            0 => (1.0 + p[2]).abs() < tol,
            1 => (1.0 + p[1]).abs() < tol,
            2 => (1.0 + p[0] + p[1] + p[2]).abs() < tol,
            _ => (1.0 + p[0]).abs() < tol,
        };
        let face_nodes: [Vec<usize>; 4] =
            [0, 1, 2, 3].map(|f| (0..np).filter(|&i| on(f, &x[i])).collect());
        let nfp = num_face_nodes(order);
        if face_nodes.iter().any(|f| f.len() != nfp) {
            return Err(Error::InvalidMatrix {
                format: "dense",
                reason: format!("a face of the order-{order} element does not have {nfp} nodes"),
            });
        }
        // E: the face mass matrices in the columns of each face.
        let mut emat = DMatrix::<f64>::zeros(np, 4 * nfp);
        for (f, ids) in face_nodes.iter().enumerate() {
            let coords: Vec<(f64, f64)> = ids
                .iter()
                .map(|&i| match f {
                    0 => (x[i][0], x[i][1]),
                    1 => (x[i][0], x[i][2]),
                    2 => (x[i][1], x[i][2]),
                    _ => (x[i][1], x[i][2]),
                })
                .collect();
            let modes2: Vec<(usize, usize)> = (0..=order)
                .flat_map(|i| (0..=order - i).map(move |j| (i, j)))
                .collect();
            let vf = DMatrix::from_fn(nfp, nfp, |a, b| {
                simplex2d_p(coords[a].0, coords[a].1, modes2[b].0, modes2[b].1)
            });
            let mf = (&vf * vf.transpose())
                .try_inverse()
                .ok_or_else(|| singular("face Vandermonde matrix"))?;
            for (a, &i) in ids.iter().enumerate() {
                for b in 0..nfp {
                    emat[(i, f * nfp + b)] = mf[(a, b)];
                }
            }
        }
        let lift = &v * (v.transpose() * emat);
        let mass = (&v * v.transpose())
            .try_inverse()
            .ok_or_else(|| singular("V Vᵀ"))?;
        Ok(ReferenceTet {
            order,
            nodes: x,
            vandermonde: v,
            diff,
            face_nodes,
            lift,
            mass,
        })
    }

    /// Nodes per element.
    pub fn np(&self) -> usize {
        self.nodes.len()
    }

    /// The 2-norm condition number of the Vandermonde matrix.
    pub fn vandermonde_condition(&self) -> f64 {
        let sv = self.vandermonde.clone().singular_values();
        let max = sv.iter().cloned().fold(0.0, f64::max);
        let min = sv.iter().cloned().fold(f64::INFINITY, f64::min);
        max / min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differentiation_is_exact_for_degree_n() {
        let d = |e: i32, x: f64| {
            if e == 0 {
                0.0
            } else {
                e as f64 * x.powi(e - 1)
            }
        };
        for order in 1..=MAX_ORDER {
            let e = ReferenceTet::new(order).unwrap();
            let mut worst = 0.0f64;
            // Every monomial r^a s^b t^c of total degree ≤ N.
            for (a, b, c) in mode_indices(order) {
                let (a, b, c) = (a as i32, b as i32, c as i32);
                let u = nalgebra::DVector::from_iterator(
                    e.np(),
                    e.nodes
                        .iter()
                        .map(|p| p[0].powi(a) * p[1].powi(b) * p[2].powi(c)),
                );
                for dir in 0..3 {
                    let du = &e.diff[dir] * &u;
                    for (i, p) in e.nodes.iter().enumerate() {
                        let (r, s, t) = (p[0], p[1], p[2]);
                        let exact = match dir {
                            0 => d(a, r) * s.powi(b) * t.powi(c),
                            1 => r.powi(a) * d(b, s) * t.powi(c),
                            _ => r.powi(a) * s.powi(b) * d(c, t),
                        };
                        worst = worst.max((du[i] - exact).abs());
                    }
                }
            }
            assert!(
                worst < 1e-10 * (order * order) as f64 * 10.0,
                "N = {order}: {worst}"
            );
        }
    }

    #[test]
    fn vandermonde_is_well_conditioned_and_mass_integrates() {
        for order in 1..=MAX_ORDER {
            let e = ReferenceTet::new(order).unwrap();
            let cond = e.vandermonde_condition();
            // Warp-and-blend nodes keep the Lebesgue constant and the condition small
            // (equidistant nodes reach ~1e3 at N = 9).
            assert!(cond < 200.0, "N = {order}: cond {cond}");
            // 1ᵀ M 1 is the volume of the reference element, 4/3.
            let ones = nalgebra::DVector::from_element(e.np(), 1.0);
            let vol = (ones.transpose() * &e.mass * &ones)[(0, 0)];
            assert!((vol - 4.0 / 3.0).abs() < 1e-10, "N = {order}: {vol}");
        }
    }

    #[test]
    fn lift_integrates_face_data() {
        // M L g = E g: for g ≡ 1 on face 0 (area 2), 1ᵀ M L g = ∫_face 1 = 2.
        for order in 1..=MAX_ORDER {
            let e = ReferenceTet::new(order).unwrap();
            let nfp = num_face_nodes(order);
            let mut g = nalgebra::DVector::zeros(4 * nfp);
            for b in 0..nfp {
                g[b] = 1.0;
            }
            let ones = nalgebra::DVector::from_element(e.np(), 1.0);
            let area = (ones.transpose() * &e.mass * (&e.lift * &g))[(0, 0)];
            assert!((area - 2.0).abs() < 1e-10, "N = {order}: {area}");
            // Face 2 (the slanted one): its mass matrix is taken in its own reference
            // coordinates (s, t), area 2 there; the physical factor √3 is the surface
            // Jacobian's business.
            let mut g = nalgebra::DVector::zeros(4 * nfp);
            for b in 0..nfp {
                g[2 * nfp + b] = 1.0;
            }
            let area = (ones.transpose() * &e.mass * (&e.lift * &g))[(0, 0)];
            assert!(
                (area - 2.0).abs() < 1e-10,
                "N = {order}: face 2 in its reference coordinates: {area}"
            );
        }
    }

    #[test]
    fn order_out_of_range_is_an_error() {
        assert!(matches!(
            ReferenceTet::new(0),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            ReferenceTet::new(10),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
