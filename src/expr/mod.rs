//! Arithmetic expressions typed by users (`--exact "exp(x)*cos(pi*y)"`): parsed once into a
//! flat postfix program, then evaluated at many points, with exact first and second
//! derivatives by forward-mode automatic differentiation (second-order jets).
//!
//! Nothing here can crash, hang or blow up on hostile input: the text is at most
//! [`MAX_LEN`] bytes, the parser is an iterative shunting-yard (no recursion) that refuses
//! more than [`MAX_DEPTH`] levels of nesting, and evaluation — values and derivatives — is
//! one pass over the program, linear in its length. Nothing is differentiated symbolically.
//!
//! ```
//! use galerkin::expr::Expr;
//!
//! let u = Expr::parse("exp(x) * cos(pi * y)", &["x", "y"])?;
//! assert_eq!(u.eval(&[0.0, 0.0]), 1.0);
//! // ∇u and ∇²u = (1 − π²) u, exactly up to rounding.
//! let jet = u.eval_jet(&[0.3, 0.2]);
//! let pi = std::f64::consts::PI;
//! assert!((jet.gradient[1] + pi * 0.3f64.exp() * (pi * 0.2).sin()).abs() < 1e-12);
//! assert!((jet.laplacian() - (1.0 - pi * pi) * jet.value).abs() < 1e-12);
//!
//! let err = Expr::parse("sinn(x)", &["x", "y"]).unwrap_err();
//! assert_eq!(err.position, 0);
//! assert!(err.to_string().starts_with("at byte 0: unknown function `sinn`"));
//! # Ok::<(), galerkin::expr::ExprError>(())
//! ```
//!
//! # Grammar
//!
//! * Numbers: `2`, `2.5`, `.5`, `5.`, `2e3`, `2E-3`, `1.5e+10`; a literal that overflows
//!   `f64` (`1e999`) is an error.
//! * Operators, loosest first: binary `+ -`; `* /`; unary `+ -`; power `^` (also `**`),
//!   right-associative and tighter than unary minus: `-x^2` is `-(x^2)`, `2^-1` is `0.5`,
//!   `2^3^2` is `2^9`. Binary operators are left-associative. There is no implicit
//!   multiplication: `2x` is an error, write `2*x`.
//! * Names: `[A-Za-z_][A-Za-z0-9_]*` or `π`. A name followed by `(` is a function call;
//!   otherwise it is one of the variables given to [`Expr::parse`] or the constant π
//!   (`pi`, `PI`, `π`; a variable of the same name wins). There is no constant `e`: use
//!   `exp(1)`.
//! * Functions of one argument: `sin cos tan asin acos atan sinh cosh tanh exp log ln
//!   log2 log10 sqrt cbrt abs` (`log` and `ln` are both the natural logarithm); of two:
//!   `atan2(y, x)`, `pow(a, b)`, `min(a, b)`, `max(a, b)`.
//! * Whitespace (Unicode) anywhere between tokens; any other character is an error.
//!
//! Results follow `f64`: `log(-1)` is NaN and `1/0` is infinite, never a panic. The
//! derivatives of `abs`, `min` and `max` are those of the selected branch (0 for `abs` at
//! 0); a factor that does not vary contributes no derivative, so `sqrt(y)` has ∂/∂x = 0
//! even at `y = 0`, where ∂/∂y is infinite.

mod jet;
mod parse;
#[cfg(test)]
mod tests;

use std::fmt;

use jet::{Jet2, Number};

/// The longest accepted expression, in bytes of UTF-8 text.
pub const MAX_LEN: usize = 4096;

/// The deepest accepted nesting: every open parenthesis, function call and pending unary
/// sign (`-(-(x))` is 4 levels deep) counts one.
pub const MAX_DEPTH: usize = 64;

/// Stack slots that evaluation keeps on the call stack; deeper programs (long chains of
/// `^`) allocate their stack once per call.
const INLINE_STACK: usize = 32;

/// Why a text is not an expression: where and what.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    /// Byte offset in the text of the offending token (the text's length for a missing
    /// operand at its end, [`MAX_LEN`] for a text that is too long).
    pub position: usize,
    /// What is wrong, for a human: names the token and, for unknown names, what is known.
    pub message: String,
}

impl ExprError {
    fn new(position: usize, message: impl Into<String>) -> Self {
        ExprError {
            position,
            message: message.into(),
        }
    }
}

impl fmt::Display for ExprError {
    /// `at byte 7: unknown function `sinn` (known: sin, cos, ...)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.position, self.message)
    }
}

impl std::error::Error for ExprError {}

/// The value, gradient and Hessian of an expression at a point, with respect to its first
/// two variables (called x and y here), the other variables held fixed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Jet {
    /// The value.
    pub value: f64,
    /// `[∂/∂x, ∂/∂y]`.
    pub gradient: [f64; 2],
    /// `[[∂²/∂x², ∂²/∂x∂y], [∂²/∂y∂x, ∂²/∂y²]]` (symmetric).
    pub hessian: [[f64; 2]; 2],
}

impl Jet {
    /// `∂²/∂x² + ∂²/∂y²`.
    pub fn laplacian(&self) -> f64 {
        self.hessian[0][0] + self.hessian[1][1]
    }
}

/// A parsed expression: a postfix program over a stack, its variables and its text.
/// `Send + Sync`; evaluation takes `&self`.
#[derive(Debug, Clone)]
pub struct Expr {
    text: String,
    variables: Vec<String>,
    program: Vec<Op>,
    /// The most stack slots the program uses.
    stack_size: usize,
}

impl Expr {
    /// Parse `text` as an expression in `variables` (e.g. `&["x", "y"]`, or
    /// `&["x", "y", "nx", "ny"]` for a flux); a variable's index in this slice is its
    /// slot in the `values` of [`Expr::eval`] and [`Expr::eval_jet`]. Names that are not
    /// identifiers can never be referred to. See the [module documentation](self) for the
    /// grammar.
    pub fn parse(text: &str, variables: &[&str]) -> Result<Expr, ExprError> {
        let program = parse::parse(text, variables)?;
        Ok(Expr {
            text: text.to_owned(),
            variables: variables.iter().map(|v| v.to_string()).collect(),
            stack_size: stack_size(&program),
            program,
        })
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The variables it was parsed in, in the order of `values`.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// Whether the text refers to variable number `variable` (an index into
    /// [`Expr::variables`]), even in a term that vanishes such as `0*x`.
    pub fn uses(&self, variable: usize) -> bool {
        self.program.contains(&Op::Var(variable))
    }

    /// The value at the point `values` (one per variable, in the order of
    /// [`Expr::variables`]); NaN if `values` has another length. Allocates nothing unless
    /// the program needs more than 32 stack slots (then once).
    pub fn eval(&self, values: &[f64]) -> f64 {
        self.evaluate::<f64>(values)
    }

    /// The value, gradient and Hessian at the point `values` with respect to the first two
    /// variables, the others held at their values; all NaN if `values` has another length.
    /// A third variable or beyond, such as `nx`, is a constant here.
    pub fn eval_jet(&self, values: &[f64]) -> Jet {
        self.evaluate::<Jet2>(values).into()
    }

    fn evaluate<T: Number>(&self, values: &[f64]) -> T {
        if values.len() != self.variables.len() {
            return T::NAN;
        }
        if self.stack_size <= INLINE_STACK {
            run(&self.program, values, &mut [T::NAN; INLINE_STACK])
        } else {
            run(&self.program, values, &mut vec![T::NAN; self.stack_size])
        }
    }
}

impl fmt::Display for Expr {
    /// The text it was parsed from.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One instruction of the postfix program: pushes a value or replaces the top one or two.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// Push a number.
    Const(f64),
    /// Push variable number `.0`.
    Var(usize),
    /// Raise the top to a constant power (`x^2`, `x^-0.5`).
    PowConst(f64),
    /// Apply a function to the top.
    Unary(Unary),
    /// Pop b, pop a, push `a ∘ b`.
    Binary(Binary),
}

/// Functions of one argument, unary minus included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unary {
    Neg,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Ln,
    Log2,
    Log10,
    Sqrt,
    Cbrt,
    Abs,
}

impl Unary {
    fn apply(self, x: f64) -> f64 {
        match self {
            Unary::Neg => -x,
            Unary::Sin => x.sin(),
            Unary::Cos => x.cos(),
            Unary::Tan => x.tan(),
            Unary::Asin => x.asin(),
            Unary::Acos => x.acos(),
            Unary::Atan => x.atan(),
            Unary::Sinh => x.sinh(),
            Unary::Cosh => x.cosh(),
            Unary::Tanh => x.tanh(),
            Unary::Exp => x.exp(),
            Unary::Ln => x.ln(),
            Unary::Log2 => x.log2(),
            Unary::Log10 => x.log10(),
            Unary::Sqrt => x.sqrt(),
            Unary::Cbrt => x.cbrt(),
            Unary::Abs => x.abs(),
        }
    }
}

/// Binary operators and functions of two arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    /// `atan2(a, b)` = the angle of the point (b, a).
    Atan2,
    Min,
    Max,
}

impl Binary {
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Pow => a.powf(b),
            Binary::Atan2 => a.atan2(b),
            Binary::Min | Binary::Max => {
                if self.selects_left(a, b) {
                    a
                } else {
                    b
                }
            }
        }
    }

    /// Whether `min`/`max` select their first argument (as `f64::min`/`max`: a NaN
    /// argument loses); true for the other operators.
    fn selects_left(self, a: f64, b: f64) -> bool {
        match self {
            Binary::Min => !a.is_nan() && (b.is_nan() || a <= b),
            Binary::Max => !a.is_nan() && (b.is_nan() || a >= b),
            _ => true,
        }
    }
}

/// `a^c` for a constant c: exact products for small integer powers, so negative bases
/// work (`(-2)^3 = -8`).
fn pow_const(a: f64, c: f64) -> f64 {
    if c == 2.0 {
        a * a
    } else if c == c.trunc() && c.abs() <= 64.0 {
        a.powi(c as i32)
    } else {
        a.powf(c)
    }
}

/// The most stack slots `program` uses.
fn stack_size(program: &[Op]) -> usize {
    let (mut depth, mut most) = (0usize, 0usize);
    for op in program {
        match op {
            Op::Const(_) | Op::Var(_) => depth += 1,
            Op::PowConst(_) | Op::Unary(_) => {}
            Op::Binary(_) => depth = depth.saturating_sub(1),
        }
        most = most.max(depth);
    }
    most
}

/// Run `program` on `stack` (at least [`stack_size`] slots) at the point `values`: NaN
/// for a malformed program rather than a panic.
fn run<T: Number>(program: &[Op], values: &[f64], stack: &mut [T]) -> T {
    let mut top = 0;
    for op in program {
        let result = match *op {
            Op::Const(c) => T::constant(c),
            Op::Var(i) => T::variable(i, values.get(i).copied().unwrap_or(f64::NAN)),
            Op::PowConst(c) => pop(stack, &mut top).pow_const(c),
            Op::Unary(f) => pop(stack, &mut top).unary(f),
            Op::Binary(f) => {
                let b = pop(stack, &mut top);
                pop(stack, &mut top).binary(f, b)
            }
        };
        match stack.get_mut(top) {
            Some(slot) => *slot = result,
            None => return T::NAN,
        }
        top += 1;
    }
    match (top, stack.first()) {
        (1, Some(&result)) => result,
        _ => T::NAN,
    }
}

fn pop<T: Number>(stack: &[T], top: &mut usize) -> T {
    match top.checked_sub(1) {
        Some(below) => {
            *top = below;
            stack.get(below).copied().unwrap_or(T::NAN)
        }
        None => T::NAN,
    }
}
