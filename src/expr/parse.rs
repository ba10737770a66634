//! Text to postfix program: a lexer and an iterative shunting-yard parser that folds
//! constant subexpressions as it emits them. Nothing here recurses.

use super::{Binary, ExprError, Op, Unary, MAX_DEPTH, MAX_LEN};

/// What a function name calls.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Callee {
    Unary(Unary),
    Binary(Binary),
}

impl Callee {
    fn arity(self) -> usize {
        match self {
            Callee::Unary(_) => 1,
            Callee::Binary(_) => 2,
        }
    }
}

const FUNCTIONS: [(&str, Callee); 21] = [
    ("sin", Callee::Unary(Unary::Sin)),
    ("cos", Callee::Unary(Unary::Cos)),
    ("tan", Callee::Unary(Unary::Tan)),
    ("asin", Callee::Unary(Unary::Asin)),
    ("acos", Callee::Unary(Unary::Acos)),
    ("atan", Callee::Unary(Unary::Atan)),
    ("sinh", Callee::Unary(Unary::Sinh)),
    ("cosh", Callee::Unary(Unary::Cosh)),
    ("tanh", Callee::Unary(Unary::Tanh)),
    ("exp", Callee::Unary(Unary::Exp)),
    ("log", Callee::Unary(Unary::Ln)),
    ("ln", Callee::Unary(Unary::Ln)),
    ("log2", Callee::Unary(Unary::Log2)),
    ("log10", Callee::Unary(Unary::Log10)),
    ("sqrt", Callee::Unary(Unary::Sqrt)),
    ("cbrt", Callee::Unary(Unary::Cbrt)),
    ("abs", Callee::Unary(Unary::Abs)),
    ("atan2", Callee::Binary(Binary::Atan2)),
    ("pow", Callee::Binary(Binary::Pow)),
    ("min", Callee::Binary(Binary::Min)),
    ("max", Callee::Binary(Binary::Max)),
];

const CONSTANTS: [(&str, f64); 3] = [
    ("pi", std::f64::consts::PI),
    ("PI", std::f64::consts::PI),
    ("π", std::f64::consts::PI),
];

/// Binding strength of unary `+`/`-`: tighter than `*`, looser than `^`.
const UNARY_PRECEDENCE: u8 = 3;

/// Parse `text` in `variables` into a postfix program that leaves one value on the stack.
pub(super) fn parse(text: &str, variables: &[&str]) -> Result<Vec<Op>, ExprError> {
    if text.len() > MAX_LEN {
        let message = format!(
            "expression too long: {} bytes, the limit is {MAX_LEN}",
            text.len()
        );
        return Err(ExprError::new(MAX_LEN, message));
    }
    if text.trim().is_empty() {
        return Err(ExprError::new(0, "empty expression"));
    }
    let mut parser = Parser {
        lexer: Lexer { text, position: 0 },
        variables,
        output: Vec::new(),
        pending: Vec::new(),
        depth: 0,
    };
    let mut state = State::Operand { after_open: false };
    loop {
        let token = parser.lexer.next_token()?;
        state = match state {
            State::Operand { after_open } => parser.operand(token, after_open)?,
            State::Operator => parser.operator(token)?,
        };
        if token.kind == Kind::End {
            return Ok(parser.output);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind<'a> {
    Number(f64),
    Name(&'a str),
    Open,
    Close,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind<'a>,
    /// Byte offset of its first character.
    position: usize,
}

struct Lexer<'a> {
    text: &'a str,
    /// Byte offset of the next character to read.
    position: usize,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        self.text.get(self.position..).unwrap_or("")
    }

    fn skip_whitespace(&mut self) {
        let rest = self.rest();
        self.position += rest.len() - rest.trim_start().len();
    }

    /// If the next token is `(`, consume it.
    fn take_open(&mut self) -> bool {
        self.skip_whitespace();
        let open = self.rest().starts_with('(');
        self.position += usize::from(open);
        open
    }

    fn next_token(&mut self) -> Result<Token<'a>, ExprError> {
        self.skip_whitespace();
        let (position, rest) = (self.position, self.rest());
        let Some(c) = rest.chars().next() else {
            return Ok(Token {
                kind: Kind::End,
                position,
            });
        };
        let (kind, len) = match c {
            '0'..='9' | '.' => return self.number(),
            'a'..='z' | 'A'..='Z' | '_' => {
                let len = rest
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    .count();
                (Kind::Name(rest.get(..len).unwrap_or("")), len)
            }
            'π' => (Kind::Name("π"), c.len_utf8()),
            '(' => (Kind::Open, 1),
            ')' => (Kind::Close, 1),
            ',' => (Kind::Comma, 1),
            '+' => (Kind::Plus, 1),
            '-' => (Kind::Minus, 1),
            '*' if rest.starts_with("**") => (Kind::Caret, 2),
            '*' => (Kind::Star, 1),
            '/' => (Kind::Slash, 1),
            '^' => (Kind::Caret, 1),
            _ => return Err(ExprError::new(position, unexpected(c))),
        };
        self.position += len;
        Ok(Token { kind, position })
    }

    /// `digits [. digits] [(e|E) [+|-] digits]`, at least one digit before the exponent.
    fn number(&mut self) -> Result<Token<'a>, ExprError> {
        let (start, bytes) = (self.position, self.text.as_bytes());
        let digits_from = |i: usize| {
            let tail = bytes.get(i..).unwrap_or(&[]);
            i + tail.iter().take_while(|b| b.is_ascii_digit()).count()
        };
        let mut end = digits_from(start);
        if bytes.get(end) == Some(&b'.') {
            let fraction_end = digits_from(end + 1);
            if end == start && fraction_end == end + 1 {
                return Err(ExprError::new(start, unexpected('.')));
            }
            end = fraction_end;
        }
        if matches!(bytes.get(end), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
            let exponent_end = digits_from(end + 1 + sign);
            if exponent_end > end + 1 + sign {
                end = exponent_end;
            }
        }
        let literal = self.text.get(start..end).unwrap_or("");
        let value: f64 = literal
            .parse()
            .map_err(|_| ExprError::new(start, format!("invalid number `{literal}`")))?;
        if !value.is_finite() {
            let message = format!("number `{literal}` is too large for f64 (max ~1.8e308)");
            return Err(ExprError::new(start, message));
        }
        self.position = end;
        Ok(Token {
            kind: Kind::Number(value),
            position: start,
        })
    }
}

fn unexpected(c: char) -> String {
    format!("unexpected character {c:?}")
}

/// What the parser expects next.
#[derive(Debug, Clone, Copy)]
enum State {
    /// An operand (number, name, `(`, unary sign); `after_open` right after a `(`.
    Operand { after_open: bool },
    /// A binary operator, `)`, `,` or the end.
    Operator,
}

/// An operator or bracket waiting on the shunting-yard stack.
#[derive(Debug, Clone, Copy)]
enum Pending<'a> {
    Binary(Binary),
    /// Unary minus (`negate`) or plus.
    Sign {
        negate: bool,
    },
    /// A grouping `(` at `position`.
    Group {
        position: usize,
    },
    /// The `(` of a call of `name` (at `position`), with its complete arguments so far.
    Call {
        callee: Callee,
        name: &'a str,
        position: usize,
        arguments: usize,
    },
}

impl Pending<'_> {
    /// How tightly it binds its operands; None for brackets.
    fn precedence(&self) -> Option<u8> {
        match self {
            Pending::Binary(op) => Some(binary_precedence(*op).0),
            Pending::Sign { .. } => Some(UNARY_PRECEDENCE),
            Pending::Group { .. } | Pending::Call { .. } => None,
        }
    }
}

/// Precedence and right-associativity of a binary operator.
fn binary_precedence(op: Binary) -> (u8, bool) {
    match op {
        Binary::Add | Binary::Sub => (1, false),
        Binary::Pow => (4, true),
        _ => (2, false),
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    variables: &'a [&'a str],
    output: Vec<Op>,
    pending: Vec<Pending<'a>>,
    /// Brackets and signs on `pending`.
    depth: usize,
}

impl<'a> Parser<'a> {
    /// The text of `token` (just read).
    fn spelling(&self, token: Token<'a>) -> &'a str {
        match token.kind {
            Kind::End => "the end",
            _ => self
                .lexer
                .text
                .get(token.position..self.lexer.position)
                .unwrap_or(""),
        }
    }

    fn operand(&mut self, token: Token<'a>, after_open: bool) -> Result<State, ExprError> {
        let position = token.position;
        match token.kind {
            Kind::Number(value) => self.emit(Op::Const(value)),
            Kind::Name(name) => return self.name(name, position),
            Kind::Open => {
                self.push_nested(Pending::Group { position }, position)?;
                return Ok(State::Operand { after_open: true });
            }
            Kind::Plus | Kind::Minus => {
                let negate = token.kind == Kind::Minus;
                self.push_nested(Pending::Sign { negate }, position)?;
                return Ok(State::Operand { after_open: false });
            }
            Kind::Close if after_open => return Err(self.empty_parentheses(position)),
            Kind::End => {
                let message = "missing operand at the end of the expression";
                return Err(ExprError::new(position, message));
            }
            _ => {
                let message = format!("missing operand before `{}`", self.spelling(token));
                return Err(ExprError::new(position, message));
            }
        }
        Ok(State::Operator)
    }

    fn empty_parentheses(&self, position: usize) -> ExprError {
        match self.pending.last() {
            Some(&Pending::Call {
                callee,
                name,
                position,
                ..
            }) => arity_error(name, callee, 0, position),
            _ => ExprError::new(position, "missing operand: empty parentheses `()`"),
        }
    }

    /// A function call, a variable or a constant.
    fn name(&mut self, name: &'a str, position: usize) -> Result<State, ExprError> {
        let variable = self.variables.iter().position(|v| *v == name);
        let constant = CONSTANTS.iter().find(|(n, _)| *n == name).map(|c| c.1);
        let function = FUNCTIONS.iter().find(|(n, _)| *n == name).map(|f| f.1);
        if let Some(callee) = function.filter(|_| self.lexer.take_open()) {
            let call = Pending::Call {
                callee,
                name,
                position,
                arguments: 0,
            };
            self.push_nested(call, position)?;
            return Ok(State::Operand { after_open: true });
        }
        let op = match (variable, constant, function) {
            (Some(index), _, _) => Op::Var(index),
            (None, Some(value), _) => Op::Const(value),
            (None, None, Some(_)) => {
                let message = format!("function `{name}` needs its argument in parentheses");
                return Err(ExprError::new(position, message));
            }
            (None, None, None) if self.lexer.take_open() => {
                return Err(ExprError::new(position, unknown_function(name)));
            }
            (None, None, None) => {
                return Err(ExprError::new(position, self.unknown_variable(name)));
            }
        };
        self.emit(op);
        Ok(State::Operator)
    }

    fn unknown_variable(&self, name: &str) -> String {
        let allowed = match self.variables {
            [] => "none".to_string(),
            names => names.join(", "),
        };
        format!("unknown variable `{name}` (allowed: {allowed}; constants: pi, PI, π)")
    }

    fn operator(&mut self, token: Token<'a>) -> Result<State, ExprError> {
        let op = match token.kind {
            Kind::Plus => Binary::Add,
            Kind::Minus => Binary::Sub,
            Kind::Star => Binary::Mul,
            Kind::Slash => Binary::Div,
            Kind::Caret => Binary::Pow,
            Kind::Close => return self.close(token.position).map(|_| State::Operator),
            Kind::Comma => {
                self.comma(token.position)?;
                return Ok(State::Operand { after_open: false });
            }
            Kind::End => return self.finish().map(|_| State::Operator),
            Kind::Number(_) | Kind::Name(_) | Kind::Open => {
                let message = format!(
                    "expected an operator before `{}` (no implicit multiplication: write `2*x`, not `2x`)",
                    self.spelling(token)
                );
                return Err(ExprError::new(token.position, message));
            }
        };
        self.binary(op);
        Ok(State::Operand { after_open: false })
    }

    /// Emit the pending operators that bind tighter than `op`, then push it.
    fn binary(&mut self, op: Binary) {
        let (precedence, right_associative) = binary_precedence(op);
        while let Some(top) = self.pending.last().and_then(Pending::precedence) {
            if top < precedence || (top == precedence && right_associative) {
                break;
            }
            self.pop_operator();
        }
        self.pending.push(Pending::Binary(op));
    }

    /// Emit the operators down to the innermost `(`, remove it and emit its call.
    fn close(&mut self, position: usize) -> Result<(), ExprError> {
        loop {
            match self.pending.last().copied() {
                None => {
                    let message = "unbalanced parenthesis: `)` without a matching `(`";
                    return Err(ExprError::new(position, message));
                }
                Some(Pending::Group { .. }) => break,
                Some(Pending::Call {
                    callee,
                    name,
                    position,
                    arguments,
                }) => {
                    if arguments + 1 != callee.arity() {
                        return Err(arity_error(name, callee, arguments + 1, position));
                    }
                    self.emit(match callee {
                        Callee::Unary(f) => Op::Unary(f),
                        Callee::Binary(f) => Op::Binary(f),
                    });
                    break;
                }
                Some(_) => self.pop_operator(),
            }
        }
        self.pending.pop();
        self.depth = self.depth.saturating_sub(1);
        Ok(())
    }

    /// Emit the operators of the argument just ended and count it.
    fn comma(&mut self, position: usize) -> Result<(), ExprError> {
        loop {
            match self.pending.last_mut() {
                Some(Pending::Call { arguments, .. }) => {
                    *arguments += 1;
                    return Ok(());
                }
                None | Some(Pending::Group { .. }) => {
                    let message = "`,` outside the arguments of a function";
                    return Err(ExprError::new(position, message));
                }
                Some(_) => self.pop_operator(),
            }
        }
    }

    /// Emit every pending operator; a `(` left is unbalanced.
    fn finish(&mut self) -> Result<(), ExprError> {
        while let Some(top) = self.pending.last().copied() {
            match top {
                Pending::Group { position } | Pending::Call { position, .. } => {
                    let message = "unbalanced parenthesis: `(` is never closed";
                    return Err(ExprError::new(position, message));
                }
                _ => self.pop_operator(),
            }
        }
        Ok(())
    }

    /// Push a bracket or sign, refusing nesting deeper than [`MAX_DEPTH`].
    fn push_nested(&mut self, pending: Pending<'a>, position: usize) -> Result<(), ExprError> {
        if self.depth >= MAX_DEPTH {
            let message = format!(
                "too deep: more than {MAX_DEPTH} nested parentheses, function calls or signs"
            );
            return Err(ExprError::new(position, message));
        }
        self.depth += 1;
        self.pending.push(pending);
        Ok(())
    }

    /// Pop the top operator (not a bracket) and emit it.
    fn pop_operator(&mut self) {
        match self.pending.pop() {
            Some(Pending::Binary(op)) => self.emit(Op::Binary(op)),
            Some(Pending::Sign { negate }) => {
                self.depth = self.depth.saturating_sub(1);
                if negate {
                    self.emit(Op::Unary(Unary::Neg));
                }
            }
            Some(bracket) => self.pending.push(bracket),
            None => {}
        }
    }

    /// Append `op`, folding it into constant operands: `2*pi` becomes one constant, `x^2`
    /// a [`Op::PowConst`]. Folding runs the evaluator's own `f64` arithmetic.
    fn emit(&mut self, op: Op) {
        let out = &mut self.output;
        match (op, out.as_slice()) {
            (Op::Unary(f), [.., Op::Const(a)]) => {
                let value = f.apply(*a);
                out.pop();
                out.push(Op::Const(value));
            }
            (Op::PowConst(c), [.., Op::Const(a)]) => {
                let value = super::pow_const(*a, c);
                out.pop();
                out.push(Op::Const(value));
            }
            (Op::Binary(f), [.., Op::Const(a), Op::Const(b)]) => {
                let value = f.apply(*a, *b);
                out.truncate(out.len() - 2);
                out.push(Op::Const(value));
            }
            (Op::Binary(Binary::Pow), [.., Op::Const(c)]) => {
                let c = *c;
                out.pop();
                out.push(Op::PowConst(c));
            }
            _ => out.push(op),
        }
    }
}

fn arity_error(name: &str, callee: Callee, got: usize, position: usize) -> ExprError {
    let (n, plural) = match callee.arity() {
        1 => (1, ""),
        n => (n, "s"),
    };
    let message =
        format!("wrong number of arguments: `{name}` takes {n} argument{plural}, got {got}");
    ExprError::new(position, message)
}

fn unknown_function(name: &str) -> String {
    let known: Vec<&str> = FUNCTIONS.iter().map(|(n, _)| *n).collect();
    format!("unknown function `{name}` (known: {})", known.join(", "))
}
