//! The numbers the program runs on: plain `f64` for values, and second-order jets in two
//! variables for values with exact gradients and Hessians (forward-mode AD).

use super::{pow_const, Binary, Jet, Unary};

/// What the evaluator needs of a number type.
pub(super) trait Number: Copy {
    /// Every component NaN.
    const NAN: Self;
    /// A constant.
    fn constant(c: f64) -> Self;
    /// Variable number `index` at `value`.
    fn variable(index: usize, value: f64) -> Self;
    /// `self^c` for a constant c.
    fn pow_const(self, c: f64) -> Self;
    /// `f(self)`.
    fn unary(self, f: Unary) -> Self;
    /// `self ∘ b`.
    fn binary(self, f: Binary, b: Self) -> Self;
}

impl Number for f64 {
    const NAN: Self = f64::NAN;

    #[inline]
    fn constant(c: f64) -> Self {
        c
    }

    #[inline]
    fn variable(_: usize, value: f64) -> Self {
        value
    }

    #[inline]
    fn pow_const(self, c: f64) -> Self {
        pow_const(self, c)
    }

    #[inline]
    fn unary(self, f: Unary) -> Self {
        f.apply(self)
    }

    #[inline]
    fn binary(self, f: Binary, b: Self) -> Self {
        f.apply(self, b)
    }
}

/// A second-order jet in (x, y): a value with its first and second partial derivatives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Jet2 {
    v: f64,
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
    yy: f64,
}

impl From<Jet2> for Jet {
    fn from(j: Jet2) -> Jet {
        Jet {
            value: j.v,
            gradient: [j.x, j.y],
            hessian: [[j.xx, j.xy], [j.xy, j.yy]],
        }
    }
}

/// `c·d`, but 0 when `d` is 0 even if `c` is infinite or NaN: a derivative that vanishes
/// stays zero through any function (`∂/∂x sqrt(y)` is 0 at `y = 0`).
#[inline]
fn times(c: f64, d: f64) -> f64 {
    if d == 0.0 {
        0.0
    } else {
        c * d
    }
}

impl Jet2 {
    fn constant(v: f64) -> Self {
        Jet2 {
            v,
            x: 0.0,
            y: 0.0,
            xx: 0.0,
            xy: 0.0,
            yy: 0.0,
        }
    }

    fn is_constant(&self) -> bool {
        [self.x, self.y, self.xx, self.xy, self.yy]
            .iter()
            .all(|&d| d == 0.0)
    }

    /// `f(self)` given `f = f(v)`, `f'(v)` and `f''(v)`.
    fn chain(self, f: f64, d1: f64, d2: f64) -> Self {
        Jet2 {
            v: f,
            x: times(d1, self.x),
            y: times(d1, self.y),
            xx: times(d1, self.xx) + times(d2, self.x * self.x),
            xy: times(d1, self.xy) + times(d2, self.x * self.y),
            yy: times(d1, self.yy) + times(d2, self.y * self.y),
        }
    }

    /// `f(self, b)` given its value and partials `[f_a, f_b]`, `[f_aa, f_ab, f_bb]`.
    fn chain2(self, b: Self, f: f64, [fa, fb]: [f64; 2], [faa, fab, fbb]: [f64; 3]) -> Self {
        let a = self;
        let second = |ai: f64, aj: f64, bi: f64, bj: f64, aij: f64, bij: f64| {
            times(fa, aij)
                + times(fb, bij)
                + times(faa, ai * aj)
                + times(fab, ai * bj + aj * bi)
                + times(fbb, bi * bj)
        };
        Jet2 {
            v: f,
            x: times(fa, a.x) + times(fb, b.x),
            y: times(fa, a.y) + times(fb, b.y),
            xx: second(a.x, a.x, b.x, b.x, a.xx, b.xx),
            xy: second(a.x, a.y, b.x, b.y, a.xy, b.xy),
            yy: second(a.y, a.y, b.y, b.y, a.yy, b.yy),
        }
    }

    /// `self + s·b`.
    fn linear(self, s: f64, b: Self, v: f64) -> Self {
        Jet2 {
            v,
            x: self.x + s * b.x,
            y: self.y + s * b.y,
            xx: self.xx + s * b.xx,
            xy: self.xy + s * b.xy,
            yy: self.yy + s * b.yy,
        }
    }

    /// `self^c` for c constant here, with value `f`: `c a^(c−1)`, `c (c−1) a^(c−2)`,
    /// the zero coefficients of `c = 0, 1` exact (no `0 · ∞` at `a = 0`).
    fn power(self, c: f64, f: f64) -> Self {
        let a = self.v;
        let d1 = if c == 0.0 {
            0.0
        } else {
            c * pow_const(a, c - 1.0)
        };
        let d2 = if c == 0.0 || c == 1.0 {
            0.0
        } else {
            c * (c - 1.0) * pow_const(a, c - 2.0)
        };
        self.chain(f, d1, d2)
    }

    /// `self^b = exp(b ln self)` for b varying; NaN derivatives for a base ≤ 0.
    fn pow(self, b: Self) -> Self {
        let f = self.v.powf(b.v);
        if b.is_constant() {
            return self.power(b.v, f);
        }
        let (a, c, ln) = (self.v, b.v, self.v.ln());
        let fa = if c == 0.0 { 0.0 } else { c * a.powf(c - 1.0) };
        let faa = if c == 0.0 || c == 1.0 {
            0.0
        } else {
            c * (c - 1.0) * a.powf(c - 2.0)
        };
        let fab = a.powf(c - 1.0) * (1.0 + c * ln);
        self.chain2(b, f, [fa, f * ln], [faa, fab, f * ln * ln])
    }

    /// `atan2(self, b)`: the angle of the point (b, self).
    fn atan2(self, b: Self) -> Self {
        let (a, c) = (self.v, b.v);
        let r2 = a * a + c * c;
        let r4 = r2 * r2;
        self.chain2(
            b,
            a.atan2(c),
            [c / r2, -a / r2],
            [-2.0 * a * c / r4, (a * a - c * c) / r4, 2.0 * a * c / r4],
        )
    }
}

impl Number for Jet2 {
    const NAN: Self = Jet2 {
        v: f64::NAN,
        x: f64::NAN,
        y: f64::NAN,
        xx: f64::NAN,
        xy: f64::NAN,
        yy: f64::NAN,
    };

    fn constant(c: f64) -> Self {
        Jet2::constant(c)
    }

    /// Variable 0 is x, variable 1 is y, the others are constants.
    fn variable(index: usize, value: f64) -> Self {
        let mut jet = Jet2::constant(value);
        match index {
            0 => jet.x = 1.0,
            1 => jet.y = 1.0,
            _ => {}
        }
        jet
    }

    fn pow_const(self, c: f64) -> Self {
        self.power(c, pow_const(self.v, c))
    }

    fn unary(self, f: Unary) -> Self {
        let value = f.apply(self.v);
        let (d1, d2) = unary_derivatives(f, self.v, value);
        self.chain(value, d1, d2)
    }

    fn binary(self, f: Binary, b: Self) -> Self {
        let (a, c) = (self.v, b.v);
        match f {
            Binary::Add => self.linear(1.0, b, a + c),
            Binary::Sub => self.linear(-1.0, b, a - c),
            Binary::Mul => self.chain2(b, a * c, [c, a], [0.0, 1.0, 0.0]),
            Binary::Div => {
                let (q, r) = (a / c, 1.0 / c);
                self.chain2(b, q, [r, -q * r], [0.0, -r * r, 2.0 * q * r * r])
            }
            Binary::Pow => self.pow(b),
            Binary::Atan2 => self.atan2(b),
            Binary::Min | Binary::Max => {
                if f.selects_left(a, c) {
                    self
                } else {
                    b
                }
            }
        }
    }
}

/// `(f'(x), f''(x))` given `x` and `fx = f(x)`.
fn unary_derivatives(f: Unary, x: f64, fx: f64) -> (f64, f64) {
    use std::f64::consts::{LN_10, LN_2};
    match f {
        Unary::Neg => (-1.0, 0.0),
        Unary::Sin => (x.cos(), -fx),
        Unary::Cos => (-x.sin(), -fx),
        Unary::Tan => {
            let s = 1.0 + fx * fx;
            (s, 2.0 * fx * s)
        }
        Unary::Asin | Unary::Acos => {
            let q = 1.0 - x * x;
            let r = 1.0 / q.sqrt();
            let sign = if f == Unary::Asin { 1.0 } else { -1.0 };
            (sign * r, sign * x * r / q)
        }
        Unary::Atan => {
            let q = 1.0 + x * x;
            (1.0 / q, -2.0 * x / (q * q))
        }
        Unary::Sinh => (x.cosh(), fx),
        Unary::Cosh => (x.sinh(), fx),
        Unary::Tanh => {
            let s = 1.0 - fx * fx;
            (s, -2.0 * fx * s)
        }
        Unary::Exp => (fx, fx),
        Unary::Ln => (1.0 / x, -1.0 / (x * x)),
        Unary::Log2 => (1.0 / (x * LN_2), -1.0 / (x * x * LN_2)),
        Unary::Log10 => (1.0 / (x * LN_10), -1.0 / (x * x * LN_10)),
        Unary::Sqrt => (0.5 / fx, -0.25 / (fx * x)),
        Unary::Cbrt => {
            let s = fx * fx;
            (1.0 / (3.0 * s), -2.0 / (9.0 * s * x))
        }
        Unary::Abs => (
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            },
            0.0,
        ),
    }
}
