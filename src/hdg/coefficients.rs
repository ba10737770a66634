//! Per-element coefficients: every element matrix of the HDG pipeline is a linear
//! combination of reference matrices ([`ReferenceMatrices`](super::reference)), with
//! coefficients that depend only on the element's geometry (its affine map) and the edge
//! orientations. One device unit per element computes the coefficients of one kind; a
//! batched GEMM `coefficients (elements x k) · references (k x entries)` then writes every
//! element matrix at once.
//!
//! The geometry of triangle `(v0, v1, v2)` mapped from the reference triangle:
//!
//! ```text
//!  x = v0 + (r+1)/2 (v1 − v0) + (s+1)/2 (v2 − v0)
//!  J = x_r y_s − x_s y_r = area / 2          (x_r = (x1 − x0)/2, …)
//!  r_x = y_s/J   r_y = −x_s/J   s_x = −y_r/J   s_y = x_r/J
//!  g_rr = r_x² + r_y²   g_rs = r_x s_x + r_y s_y   g_ss = s_x² + s_y²
//!  edge l: d_l = v_{l+1} − v_l, length |e_l| = |d_l|, N_l = (d_y, −d_x) = |e_l| n_l
//!  σ_l = −1 when local edge l runs against its global edge, else 1; on the trace modes
//!        S_l = diag(σ_l^m), so only the odd modes change sign
//! ```
//!
//! | kind | k | coefficients (in this order) |
//! |---|---|---|
//! | `Z` (Z⁻¹) | 7 | `τ|e_l|/2` (l = 0..3), `λJ`, `J g_rr`, `J g_rs`, `J g_ss` |
//! | `B` (Bᵀ) | 18 | index `6l + 2c + p`: `(|e_l|/2) c_c σ_l^p` with `c_0 = τ`, `c_1 = n_l·(r_x, r_y)`, `c_2 = n_l·(s_x, s_y)` |
//! | `C` | 39 | `τ|e_l|/2` (l = 0..3), then index `3 + 4(3l + l') + 2p + p'`: `(N_l·N_l')/(4J) σ_l^p σ_l'^p'` |
//! | `QLambda` | 12 | index `6c + 2l + p`: `N_{c,l}/(2J) σ_l^p` (`c` = x, y) |
//! | `QU` | 4 | `−r_x, −s_x, −r_y, −s_y` |
//! | `S` (post-processing) | 4 | `J g_rr`, `J g_rs`, `J g_ss`, `1` |
//! | `R` (post-processing) | 4 | `J r_x`, `J s_x`, `J r_y`, `J s_y` |
//!
//! `p`, `p'` select the even (0) or odd (1) trace modes.

/// The kinds of per-element coefficient rows. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoefficientKind {
    /// `Z⁻¹ = Σ τ|e_l|/2 E_l + λ J I + J (g_rr DrDrᵀ + g_rs (DrDsᵀ + DsDrᵀ) + g_ss DsDsᵀ)`.
    Z,
    /// `Bᵀ`, the element-to-trace coupling.
    B,
    /// `C`, the trace–trace part of the local trace operator.
    C,
    /// The trace part of the flux recovery `q = Qλ λ + Qu u`.
    QLambda,
    /// The element part of the flux recovery.
    QU,
    /// The stiffness matrix of the post-processing (with the mean constraint).
    S,
    /// The right-hand-side operator of the post-processing.
    R,
}

impl CoefficientKind {
    /// Every kind, in code order.
    pub const ALL: [CoefficientKind; 7] = [
        CoefficientKind::Z,
        CoefficientKind::B,
        CoefficientKind::C,
        CoefficientKind::QLambda,
        CoefficientKind::QU,
        CoefficientKind::S,
        CoefficientKind::R,
    ];

    /// Coefficients per element.
    pub const fn width(self) -> usize {
        match self {
            CoefficientKind::Z => 7,
            CoefficientKind::B => 18,
            CoefficientKind::C => 39,
            CoefficientKind::QLambda => 12,
            CoefficientKind::QU | CoefficientKind::S | CoefficientKind::R => 4,
        }
    }

    /// The comptime code of the kind in the device kernel.
    pub(crate) const fn code(self) -> u32 {
        match self {
            CoefficientKind::Z => 0,
            CoefficientKind::B => 1,
            CoefficientKind::C => 2,
            CoefficientKind::QLambda => 3,
            CoefficientKind::QU => 4,
            CoefficientKind::S => 5,
            CoefficientKind::R => 6,
        }
    }
}

/// The geometric factors of one affine triangle. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ElementGeometry {
    pub(crate) j: f64,
    pub(crate) rx: f64,
    pub(crate) ry: f64,
    pub(crate) sx: f64,
    pub(crate) sy: f64,
    /// Edge lengths.
    pub(crate) len: [f64; 3],
    /// `N_l = (d_y, −d_x)`, the outward normal times the edge length.
    pub(crate) n: [[f64; 2]; 3],
    /// `σ_l`.
    pub(crate) sign: [f64; 3],
}

impl ElementGeometry {
    /// From the vertices `[x0, y0, x1, y1, x2, y2]` and the flip mask (bit `l` set when
    /// local edge `l` runs against its global edge).
    pub(crate) fn new(v: [f64; 6], flips: u32) -> Self {
        let (xr, xs) = (0.5 * (v[2] - v[0]), 0.5 * (v[4] - v[0]));
        let (yr, ys) = (0.5 * (v[3] - v[1]), 0.5 * (v[5] - v[1]));
        let j = xr * ys - xs * yr;
        let mut len = [0.0; 3];
        let mut n = [[0.0; 2]; 3];
        let mut sign = [1.0; 3];
        for l in 0..3 {
            let m = (l + 1) % 3;
            let (dx, dy) = (v[2 * m] - v[2 * l], v[2 * m + 1] - v[2 * l + 1]);
            len[l] = (dx * dx + dy * dy).sqrt();
            n[l] = [dy, -dx];
            if flips & (1 << l) != 0 {
                sign[l] = -1.0;
            }
        }
        ElementGeometry {
            j,
            rx: ys / j,
            ry: -xs / j,
            sx: -yr / j,
            sy: xr / j,
            len,
            n,
            sign,
        }
    }

    fn metric(&self) -> (f64, f64, f64) {
        (
            self.rx * self.rx + self.ry * self.ry,
            self.rx * self.sx + self.ry * self.sy,
            self.sx * self.sx + self.sy * self.sy,
        )
    }

    /// `σ_l^p`.
    fn parity(&self, l: usize, p: usize) -> f64 {
        if p == 1 {
            self.sign[l]
        } else {
            1.0
        }
    }

    /// The coefficients of `kind` into `out` (`kind.width()` values).
    pub(crate) fn coefficients(
        &self,
        kind: CoefficientKind,
        tau: f64,
        lambda: f64,
        out: &mut [f64],
    ) {
        let (grr, grs, gss) = self.metric();
        let j = self.j;
        match kind {
            CoefficientKind::Z => {
                for (o, len) in out.iter_mut().zip(self.len) {
                    *o = 0.5 * tau * len;
                }
                out[3] = lambda * j;
                out[4] = j * grr;
                out[5] = j * grs;
                out[6] = j * gss;
            }
            CoefficientKind::B => {
                for l in 0..3 {
                    let [nx, ny] = self.n[l];
                    let c = [
                        0.5 * tau * self.len[l],
                        0.5 * (nx * self.rx + ny * self.ry),
                        0.5 * (nx * self.sx + ny * self.sy),
                    ];
                    for (k, ck) in c.iter().enumerate() {
                        for p in 0..2 {
                            out[6 * l + 2 * k + p] = ck * self.parity(l, p);
                        }
                    }
                }
            }
            CoefficientKind::C => {
                for (o, len) in out.iter_mut().zip(self.len) {
                    *o = 0.5 * tau * len;
                }
                for l in 0..3 {
                    for m in 0..3 {
                        let nn = self.n[l][0] * self.n[m][0] + self.n[l][1] * self.n[m][1];
                        for p in 0..2 {
                            for q in 0..2 {
                                out[3 + 4 * (3 * l + m) + 2 * p + q] =
                                    nn / (4.0 * j) * self.parity(l, p) * self.parity(m, q);
                            }
                        }
                    }
                }
            }
            CoefficientKind::QLambda => {
                for c in 0..2 {
                    for l in 0..3 {
                        for p in 0..2 {
                            out[6 * c + 2 * l + p] = self.n[l][c] / (2.0 * j) * self.parity(l, p);
                        }
                    }
                }
            }
            CoefficientKind::QU => {
                out[..4].copy_from_slice(&[-self.rx, -self.sx, -self.ry, -self.sy]);
            }
            CoefficientKind::S => {
                out[..4].copy_from_slice(&[j * grr, j * grs, j * gss, 1.0]);
            }
            CoefficientKind::R => {
                out[..4].copy_from_slice(&[j * self.rx, j * self.sx, j * self.ry, j * self.sy]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_of_the_reference_triangle_is_the_identity() {
        let g = ElementGeometry::new([-1.0, -1.0, 1.0, -1.0, -1.0, 1.0], 0b010);
        assert_eq!((g.j, g.rx, g.ry, g.sx, g.sy), (1.0, 1.0, 0.0, 0.0, 1.0));
        assert_eq!(g.len[0], 2.0);
        assert!((g.len[1] - 8f64.sqrt()).abs() < 1e-15);
        // Outward normals times lengths: bottom (0, −2), hypotenuse (2, 2), left (−2, 0).
        assert_eq!(g.n, [[0.0, -2.0], [2.0, 2.0], [-2.0, 0.0]]);
        assert_eq!(g.sign, [1.0, -1.0, 1.0]);
        let mut c = [0.0; 12];
        g.coefficients(CoefficientKind::QLambda, 1.0, 0.0, &mut c);
        // Component y of edge 1, odd modes: N_y/(2J) σ = 2/2 · (−1).
        assert_eq!(c[6 + 2 + 1], -1.0);
    }
}
