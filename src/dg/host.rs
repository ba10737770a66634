//! Maxwell's equations in vacuum (`E_t = ∇×H`, `H_t = −∇×E`, normalised units) by
//! strong-form nodal DG on the host, in f64: the semi-discrete operator (volume curl with
//! the inverse Jacobian, upwind or central surface flux derived from the curl equations —
//! the seed's printed flux matrix swaps the E and H columns —, lift), the discrete energy,
//! the 5-stage low-storage RK4 step and the PEC cavity eigenmode of the unit cube. It is
//! the reference the device kernels of issue 12 will be checked against.
//!
//! Fields: `q = [Ex, Ey, Ez, Hx, Hy, Hz]`, each with one value per global node.
//! Surface terms with `[[u]] = u⁺ − u⁻` and `α = 1` (upwind) or `0` (central):
//! `rhsE += L (fscale/2) (n × [[H]] + α ([[E]] − n (n·[[E]])))`,
//! `rhsH += L (fscale/2) (−n × [[E]] + α ([[H]] − n (n·[[H]])))`;
//! perfect electric conductor walls: `E⁺ = −E⁻`, `H⁺ = H⁻`.

// Index loops over fields, nodes and face nodes are the clearest form of this reference.
#![allow(clippy::needless_range_loop)]

use rayon::prelude::*;

use super::geometry::DgGeometry;
use super::reference::ReferenceTet;
use crate::error::{Error, Result};

/// The six fields, one vector each.
pub type Fields = [Vec<f64>; 6];

/// Low-storage 5-stage RK4 of Carpenter and Kennedy (NASA TM-109112, 1994): `a`, `b`, `c`.
pub const LSRK4: ([f64; 5], [f64; 5], [f64; 5]) = (
    [
        0.0,
        -567301805773.0 / 1357537059087.0,
        -2404267990393.0 / 2016746695238.0,
        -3550918686646.0 / 2091501179385.0,
        -1275806237668.0 / 842570457699.0,
    ],
    [
        1432997174477.0 / 9575080441755.0,
        5161836677717.0 / 13612068292357.0,
        1720146321549.0 / 2090206949498.0,
        3134564353537.0 / 4481467310338.0,
        2277821191437.0 / 14882151754819.0,
    ],
    [
        0.0,
        1432997174477.0 / 9575080441755.0,
        2526269341429.0 / 6820363962896.0,
        2006345519317.0 / 3224310063776.0,
        2802321613138.0 / 2924317926251.0,
    ],
);

/// The flux of the surface terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flux {
    /// Upwind (`α = 1`): dissipates the energy of under-resolved modes.
    Upwind,
    /// Central (`α = 0`): the semi-discrete operator is skew, the energy conserved.
    Central,
}

/// The host Maxwell operator on a mesh with every boundary face a perfect conductor.
pub struct MaxwellHost<'a> {
    geo: &'a DgGeometry,
    re: &'a ReferenceTet,
    alpha: f64,
}

impl<'a> MaxwellHost<'a> {
    /// The operator on `geo` (built for `re`) with `flux`.
    pub fn new(geo: &'a DgGeometry, re: &'a ReferenceTet, flux: Flux) -> Self {
        let alpha = if flux == Flux::Upwind { 1.0 } else { 0.0 };
        MaxwellHost { geo, re, alpha }
    }

    /// Zero fields of the mesh.
    pub fn zeros(&self) -> Fields {
        std::array::from_fn(|_| vec![0.0; self.geo.elements * self.geo.np])
    }

    /// `out = L(q)`, the semi-discrete right-hand side.
    pub fn rhs(&self, q: &Fields, out: &mut Fields) {
        let (g, re) = (self.geo, self.re);
        let (np, nfp) = (g.np, g.nfp);
        let alpha = self.alpha;
        let results: Vec<[Vec<f64>; 6]> = (0..g.elements)
            .into_par_iter()
            .map(|e| {
                let m = &g.inverse_jacobian[e];
                // ∂/∂x_d of field c at the element's nodes.
                let grad = |c: usize, d: usize| -> Vec<f64> {
                    let u = &q[c][e * np..(e + 1) * np];
                    (0..np)
                        .map(|i| {
                            let (mut dr, mut ds, mut dt) = (0.0, 0.0, 0.0);
                            for (j, uj) in u.iter().enumerate() {
                                dr += re.diff[0][(i, j)] * uj;
                                ds += re.diff[1][(i, j)] * uj;
                                dt += re.diff[2][(i, j)] * uj;
                            }
                            m[d] * dr + m[3 + d] * ds + m[6 + d] * dt
                        })
                        .collect()
                };
                // curl of (F0, F1, F2) stored in fields base..base+3.
                let curl = |base: usize| -> [Vec<f64>; 3] {
                    let d = |c: usize, x: usize| grad(base + c, x);
                    let (dzy, dyz, dxz, dzx, dyx, dxy) =
                        (d(2, 1), d(1, 2), d(0, 2), d(2, 0), d(1, 0), d(0, 1));
                    [
                        dzy.iter().zip(&dyz).map(|(a, b)| a - b).collect(),
                        dxz.iter().zip(&dzx).map(|(a, b)| a - b).collect(),
                        dyx.iter().zip(&dxy).map(|(a, b)| a - b).collect(),
                    ]
                };
                let ce = curl(0);
                let ch = curl(3);
                let mut r: [Vec<f64>; 6] = [
                    ch[0].clone(),
                    ch[1].clone(),
                    ch[2].clone(),
                    ce[0].iter().map(|v| -v).collect(),
                    ce[1].iter().map(|v| -v).collect(),
                    ce[2].iter().map(|v| -v).collect(),
                ];
                // Surface fluxes at the element's 4 Nfp face nodes, then the lift.
                let mut flux: [Vec<f64>; 6] = std::array::from_fn(|_| vec![0.0; 4 * nfp]);
                for f in 0..4 {
                    let face = 4 * e + f;
                    let n = g.normals[face];
                    let boundary = g.neighbour[face] == u32::MAX;
                    for j in 0..nfp {
                        let (mi, pi) = (
                            g.vmap_m[face * nfp + j] as usize,
                            g.vmap_p[face * nfp + j] as usize,
                        );
                        let jump = |c: usize| {
                            if boundary {
                                // PEC: E⁺ = −E⁻, H⁺ = H⁻.
                                if c < 3 {
                                    -2.0 * q[c][mi]
                                } else {
                                    0.0
                                }
                            } else {
                                q[c][pi] - q[c][mi]
                            }
                        };
                        let de = [jump(0), jump(1), jump(2)];
                        let dh = [jump(3), jump(4), jump(5)];
                        let nde = n[0] * de[0] + n[1] * de[1] + n[2] * de[2];
                        let ndh = n[0] * dh[0] + n[1] * dh[1] + n[2] * dh[2];
                        let cross = |a: [f64; 3]| {
                            [
                                n[1] * a[2] - n[2] * a[1],
                                n[2] * a[0] - n[0] * a[2],
                                n[0] * a[1] - n[1] * a[0],
                            ]
                        };
                        let nxh = cross(dh);
                        let nxe = cross(de);
                        let s = 0.5 * g.fscale[face];
                        for d in 0..3 {
                            flux[d][f * nfp + j] = s * (nxh[d] + alpha * (de[d] - nde * n[d]));
                            flux[3 + d][f * nfp + j] = s * (-nxe[d] + alpha * (dh[d] - ndh * n[d]));
                        }
                    }
                }
                for c in 0..6 {
                    for i in 0..np {
                        let mut acc = 0.0;
                        for (b, fv) in flux[c].iter().enumerate() {
                            acc += re.lift[(i, b)] * fv;
                        }
                        r[c][i] += acc;
                    }
                }
                r
            })
            .collect();
        for (e, r) in results.into_iter().enumerate() {
            for c in 0..6 {
                out[c][e * np..(e + 1) * np].copy_from_slice(&r[c]);
            }
        }
    }

    /// `(p, q)_M = Σ_e J_e pᵀ M q` over the six fields.
    pub fn inner(&self, p: &Fields, q: &Fields) -> f64 {
        let (g, np) = (self.geo, self.geo.np);
        (0..g.elements)
            .map(|e| {
                let mut s = 0.0;
                for c in 0..6 {
                    for i in 0..np {
                        let mut mq = 0.0;
                        for j in 0..np {
                            mq += self.re.mass[(i, j)] * q[c][e * np + j];
                        }
                        s += p[c][e * np + i] * mq;
                    }
                }
                g.jacobian[e] * s
            })
            .sum()
    }

    /// The energy `½ (q, q)_M`.
    pub fn energy(&self, q: &Fields) -> f64 {
        0.5 * self.inner(q, q)
    }

    /// One step of the low-storage RK4 from time `t` with step `dt`; `res` and `k` are
    /// scratch fields.
    pub fn step(&self, q: &mut Fields, res: &mut Fields, k: &mut Fields, dt: f64) {
        let (a, b, _) = LSRK4;
        for stage in 0..5 {
            self.rhs(q, k);
            for c in 0..6 {
                for ((r, kv), qv) in res[c].iter_mut().zip(&k[c]).zip(q[c].iter_mut()) {
                    *r = a[stage] * *r + dt * kv;
                    *qv += b[stage] * *r;
                }
            }
        }
    }

    /// A stable step for order `N`: `cfl · min_e (1 / max_f fscale) / N²`.
    pub fn stable_dt(&self, cfl: f64) -> f64 {
        let n = self.re.order as f64;
        let worst = self.geo.fscale.iter().cloned().fold(0.0, f64::max);
        cfl / (worst * n * n)
    }
}

/// Checks a cavity mode `[m, n, p]`: at most one index zero (two zeros give the zero
/// field), none above [`MAX_MODE`].
///
/// # Errors
/// [`Error::InvalidArgument`] naming the mode otherwise.
pub fn check_mode(mode: [usize; 3]) -> Result<()> {
    if mode.iter().filter(|&&i| i == 0).count() > 1 {
        return Err(Error::InvalidArgument {
            op: "cavity_mode",
            name: "mode",
            reason: format!(
                "the cavity mode {mode:?} has more than one zero index, so its field is zero; \
                 give at most one zero, e.g. 1,1,0"
            ),
        });
    }
    if let Some(&i) = mode.iter().find(|&&i| i > MAX_MODE) {
        return Err(Error::InvalidArgument {
            op: "cavity_mode",
            name: "mode",
            reason: format!(
                "the cavity mode {mode:?} has index {i}, above {MAX_MODE}: resolving it would \
                 take more than 10^9 elements"
            ),
        });
    }
    Ok(())
}

/// The largest index of a cavity mode [`check_mode`] accepts.
pub const MAX_MODE: usize = 1000;

/// The PEC cavity eigenmode `[m, n, p]` of the unit cube (at most one index zero, see
/// [`check_mode`]) at time `t`, at point `x`: `E = A(x) cos(ωt)`, `H = −(∇×A)(x) sin(ωt)/ω`,
/// `ω = π √(m² + n² + p²)`, with
/// `A = (a cos(mπx) sin(nπy) sin(pπz), b sin(mπx) cos(nπy) sin(pπz), c sin(mπx) sin(nπy) cos(pπz))`
/// and `(a, b, c) ⊥ (m, n, p)`: `(0, 0, 1)` for `p = 0` (so `m,n,0` is
/// `E_z = sin(mπx) sin(nπy) cos(ωt)`), `(1, 0, 0)` for `m = 0`, `(0, 1, 0)` for `n = 0`,
/// `(n, −m, 0)` otherwise. Tangential `E` vanishes on the walls and `∇·E = 0`.
pub fn cavity_mode(mode: [usize; 3], t: f64, x: [f64; 3]) -> [f64; 6] {
    use std::f64::consts::PI;
    let k = mode.map(|i| i as f64 * PI);
    let w = (k[0] * k[0] + k[1] * k[1] + k[2] * k[2]).sqrt();
    let amp = match mode {
        [_, _, 0] => [0.0, 0.0, 1.0],
        [0, _, _] => [1.0, 0.0, 0.0],
        [_, 0, _] => [0.0, 1.0, 0.0],
        [m, n, _] => [n as f64, -(m as f64), 0.0],
    };
    let s: [f64; 3] = std::array::from_fn(|d| (k[d] * x[d]).sin());
    let c: [f64; 3] = std::array::from_fn(|d| (k[d] * x[d]).cos());
    let (ct, st) = ((w * t).cos(), if w > 0.0 { (w * t).sin() / w } else { 0.0 });
    let curl = [
        (amp[2] * k[1] - amp[1] * k[2]) * s[0] * c[1] * c[2],
        (amp[0] * k[2] - amp[2] * k[0]) * c[0] * s[1] * c[2],
        (amp[1] * k[0] - amp[0] * k[1]) * c[0] * c[1] * s[2],
    ];
    [
        amp[0] * c[0] * s[1] * s[2] * ct,
        amp[1] * s[0] * c[1] * s[2] * ct,
        amp[2] * s[0] * s[1] * c[2] * ct,
        -curl[0] * st,
        -curl[1] * st,
        -curl[2] * st,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::structured::StructuredTets;
    use crate::random::random_vec;

    fn setup(n: usize, order: usize, perturbation: f64) -> (DgGeometry, ReferenceTet) {
        let mesh = StructuredTets::unit_cube(n, perturbation, 5)
            .build()
            .unwrap();
        let re = ReferenceTet::new(order).unwrap();
        (
            DgGeometry::new(&mesh.points, &mesh.tets(), &re).unwrap(),
            re,
        )
    }

    #[test]
    fn central_flux_is_skew_and_upwind_dissipates() {
        let (g, re) = setup(2, 3, 0.1);
        let len = g.elements * g.np;
        let q: Fields = std::array::from_fn(|c| random_vec::<f64>(len, 10 + c as u64));
        for (flux, skew) in [(Flux::Central, true), (Flux::Upwind, false)] {
            let op = MaxwellHost::new(&g, &re, flux);
            let mut lq = op.zeros();
            op.rhs(&q, &mut lq);
            let s = op.inner(&q, &lq);
            let scale = op.inner(&q, &q).sqrt() * op.inner(&lq, &lq).sqrt();
            if skew {
                assert!(
                    s.abs() < 1e-12 * scale,
                    "central: (q, Lq) = {s} (scale {scale})"
                );
            } else {
                assert!(
                    s < -1e-6 * scale,
                    "upwind: (q, Lq) = {s} should be negative"
                );
            }
        }
    }

    #[test]
    fn constant_fields_have_no_interior_residual() {
        let (g, re) = setup(3, 2, 0.1);
        let len = g.elements * g.np;
        let q: Fields = std::array::from_fn(|c| vec![0.3 + c as f64; len]);
        let op = MaxwellHost::new(&g, &re, Flux::Upwind);
        let mut lq = op.zeros();
        op.rhs(&q, &mut lq);
        for e in (0..g.elements).filter(|&e| (0..4).all(|f| g.neighbour[4 * e + f] != u32::MAX)) {
            for c in 0..6 {
                for i in 0..g.np {
                    assert!(lq[c][e * g.np + i].abs() < 1e-10, "element {e}");
                }
            }
        }
    }

    #[test]
    fn cavity_modes_solve_maxwell() {
        // E_t = ∇×H and H_t = −∇×E by central differences; tangential E on the walls.
        let h = 1e-5;
        for mode in [[1, 1, 0], [2, 1, 0], [0, 1, 2], [1, 0, 1], [1, 2, 3]] {
            let (x, t) = ([0.31, 0.47, 0.73], 0.29);
            let at = |dx: [f64; 3], dt: f64| {
                cavity_mode(mode, t + dt, [x[0] + dx[0], x[1] + dx[1], x[2] + dx[2]])
            };
            let dd = |c: usize, d: usize| {
                let mut e = [0.0; 3];
                e[d] = h;
                (at(e, 0.0)[c] - at(e.map(|v| -v), 0.0)[c]) / (2.0 * h)
            };
            let curl = |b: usize| {
                [
                    dd(b + 2, 1) - dd(b + 1, 2),
                    dd(b, 2) - dd(b + 2, 0),
                    dd(b + 1, 0) - dd(b, 1),
                ]
            };
            let (ce, ch) = (curl(0), curl(3));
            for c in 0..3 {
                let et = (at([0.0; 3], h)[c] - at([0.0; 3], -h)[c]) / (2.0 * h);
                let ht = (at([0.0; 3], h)[3 + c] - at([0.0; 3], -h)[3 + c]) / (2.0 * h);
                assert!((et - ch[c]).abs() < 1e-5, "{mode:?}: E_t");
                assert!((ht + ce[c]).abs() < 1e-5, "{mode:?}: H_t");
            }
            let wall = cavity_mode(mode, t, [0.0, 0.4, 0.6]);
            assert!(wall[1].abs() < 1e-12 && wall[2].abs() < 1e-12, "{mode:?}");
            assert!(check_mode(mode).is_ok());
        }
        assert!(check_mode([0, 0, 3]).is_err());
    }

    #[test]
    fn lsrk4_is_fourth_order() {
        // y' = i y as a real system (x, y): the error after t = 1 falls as dt⁴.
        let run = |steps: usize| {
            let dt = 1.0 / steps as f64;
            let (a, b, _) = LSRK4;
            let (mut u, mut res) = ([1.0f64, 0.0], [0.0f64; 2]);
            for _ in 0..steps {
                for s in 0..5 {
                    let k = [-u[1], u[0]];
                    for d in 0..2 {
                        res[d] = a[s] * res[d] + dt * k[d];
                        u[d] += b[s] * res[d];
                    }
                }
            }
            ((u[0] - 1f64.cos()).powi(2) + (u[1] - 1f64.sin()).powi(2)).sqrt()
        };
        let rate = (run(10) / run(20)).log2();
        assert!(rate > 3.8, "rate {rate}");
    }

    #[test]
    fn cavity_mode_converges_at_order_n_plus_one() {
        for order in [2, 3] {
            let mut errors = Vec::new();
            for n in [2, 4] {
                let (g, re) = setup(n, order, 0.0);
                let op = MaxwellHost::new(&g, &re, Flux::Upwind);
                let mut q = op.zeros();
                let node = |i: usize| [g.x[0][i], g.x[1][i], g.x[2][i]];
                for i in 0..g.elements * g.np {
                    let v = cavity_mode([1, 1, 0], 0.0, node(i));
                    for c in 0..6 {
                        q[c][i] = v[c];
                    }
                }
                let final_time = 0.2;
                let steps = (final_time / op.stable_dt(0.5)).ceil() as usize;
                let dt = final_time / steps as f64;
                let (mut res, mut k) = (op.zeros(), op.zeros());
                let e0 = op.energy(&q);
                for _ in 0..steps {
                    op.step(&mut q, &mut res, &mut k, dt);
                }
                assert!(op.energy(&q) <= e0 * (1.0 + 1e-12), "upwind energy grew");
                let mut err = op.zeros();
                for i in 0..g.elements * g.np {
                    let v = cavity_mode([1, 1, 0], final_time, node(i));
                    for c in 0..6 {
                        err[c][i] = q[c][i] - v[c];
                    }
                }
                errors.push(op.inner(&err, &err).sqrt());
            }
            let rate = (errors[0] / errors[1]).log2();
            eprintln!("[dg] N = {order}: cavity errors {errors:?}, rate {rate:.2}");
            assert!(
                rate > order as f64 + 0.5,
                "N = {order}: errors {errors:?}, rate {rate}"
            );
        }
    }
}
