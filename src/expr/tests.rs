use std::f64::consts::PI;
use std::panic::catch_unwind;
use std::time::{Duration, Instant};

use super::*;

/// xorshift64: enough randomness for test points and fuzz strings.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

const XY: &[&str] = &["x", "y"];

fn parse(text: &str) -> Expr {
    Expr::parse(text, XY).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * want.abs().max(1.0)
}

type Field = fn(f64, f64) -> f64;

/// Every operator and function, smooth on (x, y) ∈ [0.2, 0.8]², with its value.
const CASES: &[(&str, Field)] = &[
    ("x + y", |x, y| x + y),
    ("x - y - 1", |x, y| x - y - 1.0),
    ("2 * x * y", |x, y| 2.0 * x * y),
    ("x / y / 2", |x, y| x / y / 2.0),
    ("-x + +y", |x, y| -x + y),
    ("-x^2", |x, _| -(x * x)),
    ("x^3 * y^2", |x, y| x.powi(3) * y * y),
    ("x ** 2.5", |x, _| x.powf(2.5)),
    ("2^x + 2^-1", |x, _| 2f64.powf(x) + 0.5),
    ("x^y", |x, y| x.powf(y)),
    ("2^3^x", |x, _| 2f64.powf(3f64.powf(x))),
    ("sin(pi*x) * sin(PI*y)", |x, y| {
        (PI * x).sin() * (PI * y).sin()
    }),
    ("exp(x) * cos(π*y)", |x, y| x.exp() * (PI * y).cos()),
    ("tan(x) + atan(y)", |x, y| x.tan() + y.atan()),
    ("asin(x) + acos(y)", |x, y| x.asin() + y.acos()),
    ("sinh(x) * cosh(y) + tanh(x*y)", |x, y| {
        x.sinh() * y.cosh() + (x * y).tanh()
    }),
    ("log(x) + ln(y) + log2(x*y) + log10(x+y)", |x, y| {
        x.ln() + y.ln() + (x * y).log2() + (x + y).log10()
    }),
    ("sqrt(x*y) + cbrt(x - 1)", |x, y| {
        (x * y).sqrt() + (x - 1.0).cbrt()
    }),
    ("abs(x - 1) * y", |x, y| (x - 1.0).abs() * y),
    ("atan2(y, x - 1)", |x, y| y.atan2(x - 1.0)),
    ("pow(x, y) + pow(y, 2)", |x, y| x.powf(y) + y * y),
    ("min(x, y + 1) + max(x*y, 0.9)", |x, _| x + 0.9),
    ("1/(1 + x^2 + y^2)", |x, y| 1.0 / (1.0 + x * x + y * y)),
    ("(x - 1)^2 + (y + 1)^-2", |x, y| {
        (x - 1.0).powi(2) + (y + 1.0).powi(-2)
    }),
    (".5*x + 2.5e-1*y + 1E1 + 2e3*x - 1.5e+1", |x, y| {
        0.5 * x + 0.25 * y + 10.0 + 2000.0 * x - 15.0
    }),
    ("((x))*(((y)))", |x, y| x * y),
    ("x*(y+1) - (x+y)*(x-y)", |x, y| {
        x * (y + 1.0) - (x + y) * (x - y)
    }),
    ("exp(sin(x)*cos(y))/sqrt(1+x*y)", |x, y| {
        (x.sin() * y.cos()).exp() / (1.0 + x * y).sqrt()
    }),
];

#[test]
fn values_match_closures() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for &(text, f) in CASES {
        let expr = parse(text);
        for _ in 0..50 {
            let (x, y) = (rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8));
            let (got, want) = (expr.eval(&[x, y]), f(x, y));
            assert!(
                close(got, want, 1e-13),
                "{text} at ({x}, {y}): {got} vs {want}"
            );
            let jet = expr.eval_jet(&[x, y]);
            assert_eq!(jet.value.to_bits(), got.to_bits(), "{text}: jet value");
        }
    }
}

#[test]
fn precedence_and_associativity() {
    for (text, want) in [
        ("-2^2", -4.0),
        ("(-2)^2", 4.0),
        ("2^-1", 0.5),
        ("2^3^2", 512.0),
        ("2**3**2", 512.0),
        ("8/4/2", 1.0),
        ("1-2-3", -4.0),
        ("-3*2+1", -5.0),
        ("2*-3", -6.0),
        ("1 - -1", 2.0),
        ("--+-2", -2.0),
        ("2e3*x", 2000.0),
        ("1e-999 + x", 1.0),
        (" \tx\n*  1 ", 1.0),
        ("5.", 5.0),
        ("2.e1", 20.0),
    ] {
        assert_eq!(parse(text).eval(&[1.0, 0.0]), want, "{text}");
    }
}

/// Central differences of `eval` at (x, y): gradient with step 1e-4, Hessian with 1e-3.
fn finite_differences(expr: &Expr, x: f64, y: f64) -> ([f64; 2], [f64; 3]) {
    let f = |dx: f64, dy: f64| expr.eval(&[x + dx, y + dy]);
    let h = 1e-4;
    let gradient = [
        (f(h, 0.0) - f(-h, 0.0)) / (2.0 * h),
        (f(0.0, h) - f(0.0, -h)) / (2.0 * h),
    ];
    let h = 1e-3;
    let hessian = [
        (f(h, 0.0) - 2.0 * f(0.0, 0.0) + f(-h, 0.0)) / (h * h),
        (f(h, h) - f(h, -h) - f(-h, h) + f(-h, -h)) / (4.0 * h * h),
        (f(0.0, h) - 2.0 * f(0.0, 0.0) + f(0.0, -h)) / (h * h),
    ];
    (gradient, hessian)
}

#[test]
fn jets_match_finite_differences() {
    let mut rng = Rng(12345);
    for &(text, _) in CASES {
        let expr = parse(text);
        for _ in 0..20 {
            let (x, y) = (rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8));
            let jet = expr.eval_jet(&[x, y]);
            let (g, h) = finite_differences(&expr, x, y);
            let at = format!("{text} at ({x}, {y}): {jet:?} vs {g:?} {h:?}");
            assert!(close(jet.gradient[0], g[0], 1e-5), "∂x {at}");
            assert!(close(jet.gradient[1], g[1], 1e-5), "∂y {at}");
            assert!(close(jet.hessian[0][0], h[0], 1e-4), "∂xx {at}");
            assert!(close(jet.hessian[0][1], h[1], 1e-4), "∂xy {at}");
            assert_eq!(jet.hessian[0][1], jet.hessian[1][0], "{at}");
            assert!(close(jet.hessian[1][1], h[2], 1e-4), "∂yy {at}");
        }
    }
}

/// `(text, exact jet)` for hand-derived cases.
type ExactCase = (&'static str, fn(f64, f64) -> Jet);

fn jet(value: f64, gradient: [f64; 2], [xx, xy, yy]: [f64; 3]) -> Jet {
    Jet {
        value,
        gradient,
        hessian: [[xx, xy], [xy, yy]],
    }
}

fn assert_jet_close(got: Jet, want: Jet, tol: f64, what: &str) {
    let flat = |j: Jet| {
        let [[xx, xy], [yx, yy]] = j.hessian;
        [j.value, j.gradient[0], j.gradient[1], xx, xy, yx, yy]
    };
    for (g, w) in flat(got).into_iter().zip(flat(want)) {
        assert!(close(g, w, tol), "{what}: {got:?} vs {want:?}");
    }
}

#[test]
fn jets_match_exact_derivatives() {
    let cases: [ExactCase; 6] = [
        ("sin(pi*x)*sin(pi*y)", |x, y| {
            let (sx, cx, sy, cy) = (
                (PI * x).sin(),
                (PI * x).cos(),
                (PI * y).sin(),
                (PI * y).cos(),
            );
            let pp = PI * PI;
            jet(
                sx * sy,
                [PI * cx * sy, PI * sx * cy],
                [-pp * sx * sy, pp * cx * cy, -pp * sx * sy],
            )
        }),
        ("exp(x)*cos(pi*y)", |x, y| {
            let (u, v) = (x.exp() * (PI * y).cos(), -PI * x.exp() * (PI * y).sin());
            jet(u, [u, v], [u, v, -PI * PI * u])
        }),
        ("x^3*y^2", |x, y| {
            let g = [3.0 * x * x * y * y, 2.0 * x.powi(3) * y];
            jet(
                x.powi(3) * y * y,
                g,
                [6.0 * x * y * y, 6.0 * x * x * y, 2.0 * x.powi(3)],
            )
        }),
        ("(x-1)^2", |x, _| {
            jet((x - 1.0).powi(2), [2.0 * (x - 1.0), 0.0], [2.0, 0.0, 0.0])
        }),
        ("1/(1+x^2+y^2)", |x, y| {
            let q = 1.0 + x * x + y * y;
            let q3 = q * q * q;
            let g = [-2.0 * x / (q * q), -2.0 * y / (q * q)];
            jet(
                1.0 / q,
                g,
                [
                    (8.0 * x * x - 2.0 * q) / q3,
                    8.0 * x * y / q3,
                    (8.0 * y * y - 2.0 * q) / q3,
                ],
            )
        }),
        ("atan2(y,x)", |x, y| {
            let r2 = x * x + y * y;
            let r4 = r2 * r2;
            jet(
                y.atan2(x),
                [-y / r2, x / r2],
                [2.0 * x * y / r4, (y * y - x * x) / r4, -2.0 * x * y / r4],
            )
        }),
    ];
    let mut rng = Rng(777);
    for (text, exact) in cases {
        let expr = parse(text);
        for _ in 0..50 {
            let (x, y) = (rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0));
            if x.hypot(y) > 0.1 {
                assert_jet_close(expr.eval_jet(&[x, y]), exact(x, y), 1e-12, text);
            }
        }
    }
    let at_zero = parse("(x-1)^2").eval_jet(&[0.0, 0.0]);
    assert_eq!(at_zero, jet(1.0, [-2.0, 0.0], [2.0, 0.0, 0.0]));
}

#[test]
fn powers_of_negative_and_zero_bases() {
    let vars = &["x", "y", "n"];
    for (text, x, n, want) in [
        ("x^3", -2.0, 0.0, jet(-8.0, [12.0, 0.0], [-12.0, 0.0, 0.0])),
        (
            "pow(x, 3)",
            -2.0,
            0.0,
            jet(-8.0, [12.0, 0.0], [-12.0, 0.0, 0.0]),
        ),
        ("x^n", -2.0, 3.0, jet(-8.0, [12.0, 0.0], [-12.0, 0.0, 0.0])),
        ("x^-2", -2.0, 0.0, jet(0.25, [0.25, 0.0], [0.375, 0.0, 0.0])),
        ("x^2", 0.0, 0.0, jet(0.0, [0.0, 0.0], [2.0, 0.0, 0.0])),
        ("x^1", 0.0, 0.0, jet(0.0, [1.0, 0.0], [0.0, 0.0, 0.0])),
        ("x^0", 0.0, 0.0, jet(1.0, [0.0, 0.0], [0.0, 0.0, 0.0])),
        ("x^(n-1)", 0.0, 1.0, jet(1.0, [0.0, 0.0], [0.0, 0.0, 0.0])),
    ] {
        let expr = Expr::parse(text, vars).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(expr.eval(&[x, 0.5, n]), want.value, "{text}");
        assert_jet_close(expr.eval_jet(&[x, 0.5, n]), want, 1e-15, text);
    }
}

#[test]
fn branches_and_singular_points() {
    let minmax = parse("min(x, y) + 2*max(x, y)");
    assert_eq!(minmax.eval_jet(&[1.0, 2.0]).gradient, [1.0, 2.0]);
    assert_eq!(minmax.eval_jet(&[3.0, 2.0]).gradient, [2.0, 1.0]);
    assert_eq!(parse("abs(x)").eval_jet(&[-3.0, 0.0]).gradient, [-1.0, 0.0]);
    assert_eq!(parse("abs(x)").eval_jet(&[0.0, 0.0]).gradient, [0.0, 0.0]);
    let root = parse("sqrt(y)").eval_jet(&[1.0, 0.0]);
    assert_eq!(root.gradient, [0.0, f64::INFINITY]);
    assert_eq!(root.hessian[0], [0.0, 0.0]);
    assert!(parse("log(x)").eval(&[-1.0, 0.0]).is_nan());
    assert!(parse("sqrt(x)").eval_jet(&[-1.0, 0.0]).gradient[0].is_nan());
    assert_eq!(parse("1/x").eval(&[0.0, 0.0]), f64::INFINITY);
    assert!(parse("x^y").eval_jet(&[-1.0, 0.5]).value.is_nan());
}

#[test]
fn flux_variables_are_constants_of_the_jet() {
    let vars = &["x", "y", "nx", "ny"];
    let flux = Expr::parse("nx*cos(x) + ny*y^2", vars).unwrap_or_else(|e| panic!("{e}"));
    let (x, y, nx, ny) = (0.3, 0.7, 0.6, -0.8);
    assert_eq!(flux.eval(&[x, y, nx, ny]), nx * x.cos() + ny * y * y);
    let j = flux.eval_jet(&[x, y, nx, ny]);
    assert_jet_close(
        j,
        jet(
            j.value,
            [-nx * x.sin(), 2.0 * ny * y],
            [-nx * x.cos(), 0.0, 2.0 * ny],
        ),
        1e-15,
        "flux",
    );
    assert!(flux.uses(2) && flux.uses(3) && !flux.uses(4));
    assert_eq!(flux.variables(), ["x", "y", "nx", "ny"]);
}

#[test]
fn api_details() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Expr>();
    let expr = parse("2*pi*x");
    assert_eq!(expr.program.len(), 3, "2*pi folds to one constant");
    assert_eq!(expr.text(), "2*pi*x");
    assert_eq!(expr.to_string(), "2*pi*x");
    assert!(expr.uses(0) && !expr.uses(1));
    assert!(expr.eval(&[1.0]).is_nan() && expr.eval(&[1.0, 2.0, 3.0]).is_nan());
    assert!(expr.eval_jet(&[]).value.is_nan());
    assert!(parse("0*y").uses(1), "uses is syntactic");
    let shadowed =
        Expr::parse("pi + exp + exp(0)", &["pi", "exp"]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shadowed.eval(&[1.0, 2.0]), 4.0);
    let constant = Expr::parse("sin(pi/2)", &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (constant.eval(&[]), constant.eval_jet(&[]).gradient),
        (1.0, [0.0, 0.0])
    );
    let lap = parse("x^2 + 3*y^2").eval_jet(&[0.1, 0.2]).laplacian();
    assert!(close(lap, 8.0, 1e-15));
}

#[test]
fn errors_name_their_position_and_cause() {
    for (text, position, keyword) in [
        ("", 0, "empty expression"),
        (" \t ", 0, "empty expression"),
        ("x + z", 4, "unknown variable `z` (allowed: x, y;"),
        ("e", 0, "unknown variable"),
        (
            "x + sinn(y)",
            4,
            "unknown function `sinn` (known: sin, cos,",
        ),
        ("sin", 0, "parentheses"),
        ("(x + y", 0, "unbalanced"),
        ("sin(x", 0, "unbalanced"),
        ("x + y)", 5, "unbalanced"),
        ("x +", 3, "missing operand at the end"),
        ("-", 1, "missing operand"),
        ("x^", 2, "missing operand"),
        ("x * * y", 4, "missing operand before `*`"),
        ("/ x", 0, "missing operand"),
        ("x + ()", 5, "empty parentheses"),
        ("sin(x,)", 6, "missing operand before `)`"),
        ("min(,y)", 4, "missing operand before `,`"),
        ("x y", 2, "expected an operator before `y`"),
        ("2x", 1, "expected an operator"),
        ("x(y)", 1, "expected an operator before `(`"),
        ("2 3", 2, "expected an operator before `3`"),
        ("sin()", 0, "`sin` takes 1 argument, got 0"),
        ("1 + atan2(x)", 4, "`atan2` takes 2 arguments, got 1"),
        ("sin(x, y)", 0, "got 2"),
        ("max(x, y, 1)", 0, "got 3"),
        ("x, y", 1, "`,` outside"),
        ("(x, y)", 2, "`,` outside"),
        ("x # y", 2, "unexpected character '#'"),
        ("x\u{7}", 1, "unexpected character"),
        ("x + é", 4, "unexpected character"),
        ("x + .", 4, "unexpected character '.'"),
        ("1e999 * x", 0, "`1e999`"),
    ] {
        let err = Expr::parse(text, XY).expect_err(text);
        assert_eq!(err.position, position, "{text:?}: {err}");
        assert!(err.message.contains(keyword), "{text:?}: {err}");
        assert_eq!(
            err.to_string(),
            format!("at byte {position}: {}", err.message)
        );
    }
    let none = Expr::parse("x", &[]).expect_err("no variables");
    assert!(none.message.contains("allowed: none"), "{none}");
}

#[test]
fn long_products_are_linear_and_exact() {
    let n = MAX_LEN.div_ceil(2);
    let text = vec!["x"; n].join("*");
    assert_eq!(text.len(), MAX_LEN - 1);
    let start = Instant::now();
    let expr = parse(&text);
    let x = 1.0001f64;
    let n = n as f64;
    let want = jet(
        x.powf(n),
        [n * x.powf(n - 1.0), 0.0],
        [n * (n - 1.0) * x.powf(n - 2.0), 0.0, 0.0],
    );
    for _ in 0..200 {
        assert!(close(expr.eval(&[x, 0.0]), want.value, 1e-11));
        assert_jet_close(expr.eval_jet(&[x, 0.0]), want, 1e-11, "x*x*...*x");
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let tower = parse(&vec!["x"; n as usize].join("^"));
    assert!(tower.stack_size > INLINE_STACK);
    let j = tower.eval_jet(&[1.0, 0.0]);
    assert_eq!((j.value, j.gradient), (1.0, [1.0, 0.0]));
}

#[test]
fn hostile_sizes_and_depths_are_refused() {
    let err = Expr::parse(&vec!["x"; 5_000].join("*"), XY).expect_err("5000 factors");
    assert!(
        err.message
            .contains("too long: 9999 bytes, the limit is 4096"),
        "{err}"
    );
    let err = Expr::parse(&"1+".repeat(5_000), XY).expect_err("10 kB");
    assert!(err.message.contains("too long"), "{err}");
    let nested = |n: usize, open: &str| format!("{}x{}", open.repeat(n), ")".repeat(n));
    assert!(Expr::parse(&nested(10_000, "("), XY).is_err());
    parse(&nested(MAX_DEPTH, "("));
    parse(&nested(MAX_DEPTH, "sin("));
    for (text, position) in [
        (nested(2_000, "("), MAX_DEPTH),
        (nested(MAX_DEPTH + 1, "exp("), 4 * MAX_DEPTH),
        (format!("{}x", "-".repeat(4_000)), MAX_DEPTH),
        (format!("2{}", "^-2".repeat(1_000)), 2 + 3 * MAX_DEPTH),
    ] {
        let err = Expr::parse(&text, XY).expect_err("deep");
        assert_eq!(err.position, position, "{err}");
        assert!(
            err.message.contains("too deep") && err.message.contains("64"),
            "{err}"
        );
    }
}

/// The stack depth after running `program`, or None if an operation lacks operands.
fn final_depth(program: &[Op]) -> Option<usize> {
    program.iter().try_fold(0usize, |depth, op| match op {
        Op::Const(_) | Op::Var(_) => Some(depth + 1),
        Op::PowConst(_) | Op::Unary(_) => depth.checked_sub(1).map(|d| d + 1),
        Op::Binary(_) => depth.checked_sub(2).map(|d| d + 1),
    })
}

fn survives(text: &str) -> bool {
    let outcome = catch_unwind(|| match Expr::parse(text, XY) {
        Ok(expr) => {
            assert_eq!(final_depth(&expr.program), Some(1), "{text:?}");
            let _ = (expr.eval(&[0.3, -0.7]), expr.eval_jet(&[0.0, 0.0]));
            let _ = (expr.eval(&[]), expr.eval_jet(&[1.0; 3]));
            true
        }
        Err(e) => {
            assert!(e.position <= text.len().max(MAX_LEN), "{text:?}: {e}");
            false
        }
    });
    outcome.unwrap_or_else(|_| panic!("panicked on {text:?}"))
}

#[test]
fn random_input_never_panics() {
    let mut rng = Rng(0xdead_beef);
    for _ in 0..3_000 {
        let len = rng.below(48);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        survives(&String::from_utf8_lossy(&bytes));
        let ascii: String = (0..len)
            .map(|_| (rng.below(96) as u8 + 32) as char)
            .collect();
        survives(&ascii);
    }
    const SOUP: &[&str] = &[
        "x", "y", "pi", "π", "1", "2.5", "1e3", ".5", "0", "+", "-", "*", "/", "^", "**", "(", "(",
        ")", ")", ",", "sin(", "atan2(", "pow(", "min(", "sqrt(", "log(", "abs", "nx", " ",
    ];
    let mut parsed = 0;
    for round in 0..6_000 {
        let len = if round % 100 == 0 {
            2_000
        } else {
            rng.below(24)
        };
        let text: String = (0..len).map(|_| SOUP[rng.below(SOUP.len())]).collect();
        parsed += usize::from(survives(&text));
    }
    assert!(parsed > 100, "only {parsed} token soups parsed");
}
