//! A whole solve chosen by name: `A x = b` from a host CSR matrix, with the method,
//! preconditioner, precision and storage format as run-time values — what the `solve`
//! example and the Python package call.
//!
//! [`solve_system`] checks the input, moves the matrix to the backend in the chosen format,
//! builds the preconditioner, runs the method and judges the answer by the **true relative
//! residual of the f64 system as given**, `‖b − A x‖₂ / ‖b‖₂` computed on the host with
//! scaled norms: an f32 solve, or one whose data lost digits on the way, may claim
//! convergence on the system it saw, and [`SystemSolution::converged`] then says no.
//!
//! ```
//! use galerkin::solver::driver::{solve_system, SolveOptions};
//! use galerkin::sparse::generate::poisson3d_7pt;
//! use galerkin::Cpu;
//!
//! let a = poisson3d_7pt(8)?;
//! let b = vec![1.0; a.nrows()];
//! let options = SolveOptions { tol: 1e-10, ..SolveOptions::default() };
//! let solution = solve_system(&Cpu::new(), &a, &b, &options)?;
//! assert!(solution.converged && solution.true_relative_residual <= 1e-10);
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use crate::backend::cpu::Cpu;
use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::scalar::{f32_unrepresentable, DType, Element, Scalar};
use crate::solver::{
    bicgstab, cg, fgmres, gmres, iterative_refinement, mixed_solve, pcg, Amg, AmgInfo, AmgParams,
    BlockJacobi, Chebyshev, ChebyshevParams, Identity, InnerSolver, Jacobi, LinearOperator,
    MixedOuter, MixedParams, MixedPrecision, Preconditioner, RefinementParams, SolveReport,
    SolverParams, Stopping,
};
use crate::sparse::{Csr, Format, FormatOptions, SparseMatrix};
use crate::vector::Vector;

/// Defines a run-time choice: an enum with its names, `FromStr` (naming every accepted value
/// on a mistake) and `Display`.
macro_rules! choice {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($(#[$vdoc:meta])* $variant:ident = $text:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every value, in the order of the documentation.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The name [`FromStr`] accepts.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                let key = s.trim().to_ascii_lowercase().replace('_', "-");
                $name::ALL.iter().copied().find(|v| v.name() == key).ok_or_else(|| {
                    let names: Vec<&str> = $name::ALL.iter().map(|v| v.name()).collect();
                    Error::invalid(
                        "solve",
                        $what,
                        format!("unknown {} `{s}`: expected one of {}", $what, names.join(", ")),
                    )
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

choice!(
    /// The Krylov method of [`solve_system`].
    Method, "solver" {
        /// Conjugate gradients (plain CG with [`PrecondKind::None`], else PCG).
        Cg = "cg",
        /// Preconditioned conjugate gradients.
        Pcg = "pcg",
        /// BiCGStab.
        Bicgstab = "bicgstab",
        /// Restarted GMRES.
        Gmres = "gmres",
        /// Flexible GMRES.
        Fgmres = "fgmres",
        /// Iterative refinement: f64 residuals, f32 PCG corrections (any precision).
        Refine = "refine",
    }
);

choice!(
    /// The preconditioner of [`solve_system`].
    PrecondKind, "preconditioner" {
        /// None.
        None = "none",
        /// Diagonal scaling.
        Jacobi = "jacobi",
        /// Inverses of the diagonal blocks of [`SolveOptions::block_size`] rows.
        BlockJacobi = "block-jacobi",
        /// A Chebyshev polynomial of the Jacobi-scaled operator.
        Chebyshev = "chebyshev",
        /// Smoothed-aggregation algebraic multigrid, one cycle per application.
        Amg = "amg",
    }
);

choice!(
    /// The precision of [`solve_system`]'s work.
    SolvePrecision, "precision" {
        /// Everything in f32 (the answer is still judged on the f64 system).
        F32 = "f32",
        /// Everything in f64.
        F64 = "f64",
        /// The f64 system answered to the tolerance with the work in f32: an outer f64
        /// iteration (flexible CG for `cg`/`pcg`, FGMRES for `gmres`/`fgmres`) around an f32
        /// inner solve with the preconditioner built in f32.
        Mixed = "mixed",
    }
);

choice!(
    /// The precision of an AMG hierarchy.
    AmgPrecision, "AMG precision" {
        /// In f32 (inside an f64 solve the method becomes flexible: still answered to the
        /// tolerance).
        F32 = "f32",
        /// In the solve's precision.
        Same = "same",
    }
);

/// What [`solve_system`] runs.
#[derive(Clone, Debug)]
pub struct SolveOptions {
    /// The Krylov method (default CG).
    pub method: Method,
    /// The preconditioner (default Jacobi).
    pub precond: PrecondKind,
    /// Rows per block of [`PrecondKind::BlockJacobi`] (default 4).
    pub block_size: usize,
    /// The AMG parameters of [`PrecondKind::Amg`].
    pub amg: AmgParams,
    /// The precision of the AMG hierarchy (default the solve's).
    pub amg_precision: AmgPrecision,
    /// The precision of the work (default f64).
    pub precision: SolvePrecision,
    /// Relative tolerance on `‖b − A x‖₂ / ‖b‖₂` (default 1e-8).
    pub tol: f64,
    /// Iteration limit; outer iterations with [`SolvePrecision::Mixed`] (default 1000).
    pub max_iter: usize,
    /// Krylov dimension between GMRES restarts (default 30).
    pub restart: usize,
    /// Relative tolerance of each f32 inner solve of a mixed solve (default 1e-3).
    pub inner_tol: f64,
    /// Iteration limit of each f32 inner solve of a mixed solve (default 200).
    pub inner_max_iter: usize,
    /// The storage format on the backend (default `None`: chosen by
    /// [`SparseMatrix::auto`]).
    pub format: Option<Format>,
    /// Solve once untimed first (kernel compilation, caches; the AMG hierarchy is also set
    /// up once untimed): the report is the second solve's (default false; not with
    /// [`SolvePrecision::Mixed`]).
    pub warmup: bool,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            method: Method::Cg,
            precond: PrecondKind::Jacobi,
            block_size: 4,
            amg: AmgParams::default(),
            amg_precision: AmgPrecision::Same,
            precision: SolvePrecision::F64,
            tol: 1e-8,
            max_iter: 1000,
            restart: 30,
            inner_tol: 1e-3,
            inner_max_iter: 200,
            format: None,
            warmup: false,
        }
    }
}

impl SolveOptions {
    /// Whether the work runs as a mixed solve: [`SolvePrecision::Mixed`], or iterative
    /// refinement in any precision.
    pub fn is_mixed(&self) -> bool {
        self.precision == SolvePrecision::Mixed || self.method == Method::Refine
    }

    /// The precision the AMG hierarchy is built in (`"f64"` or `"f32"`).
    pub fn amg_precision_name(&self) -> &'static str {
        if self.precision == SolvePrecision::F64
            && self.amg_precision == AmgPrecision::Same
            && self.method != Method::Refine
        {
            "f64"
        } else {
            "f32"
        }
    }

    /// Checks the options no solve can run with: tolerances outside `(0, 1)`, zero counts,
    /// a method that a mixed solve does not have.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the option.
    pub fn check(&self) -> Result<()> {
        for (name, tol) in [("tol", self.tol), ("inner_tol", self.inner_tol)] {
            if !(tol > 0.0 && tol < 1.0) {
                return Err(Error::invalid(
                    "solve",
                    name,
                    format!("{tol}: a relative tolerance must lie in (0, 1)"),
                ));
            }
        }
        for (name, n) in [
            ("max_iter", self.max_iter),
            ("inner_max_iter", self.inner_max_iter),
            ("restart", self.restart),
            ("block_size", self.block_size),
        ] {
            if n == 0 {
                return Err(Error::invalid("solve", name, "0: must be at least 1"));
            }
        }
        if self.precision == SolvePrecision::Mixed && self.method == Method::Bicgstab {
            return Err(Error::invalid(
                "solve",
                "solver",
                "mixed precision has no BiCGStab: it runs flexible CG (cg, pcg), FGMRES around \
                 f32 GMRES (gmres, fgmres) or iterative refinement (refine)",
            ));
        }
        Ok(())
    }
}

/// What [`solve_system`] returns.
#[derive(Clone, Debug)]
pub struct SystemSolution {
    /// The answer, in f64.
    pub x: Vec<f64>,
    /// The method's own report (on the system it saw: in f32 for an f32 solve).
    pub report: SolveReport,
    /// Whether the report says converged **and** the true relative residual of the f64
    /// system meets the tolerance.
    pub converged: bool,
    /// Why the solve stopped, in words (the report's reason, or why a converged report was
    /// overruled by the true residual).
    pub reason: String,
    /// `‖b − A x‖₂ / ‖b‖₂` of the f64 system as given (`‖b − A x‖₂` when `b = 0`).
    pub true_relative_residual: f64,
    /// The storage format used, and why it was chosen.
    pub format: String,
    /// The AMG hierarchy's levels, complexities and setup phases, with [`PrecondKind::Amg`].
    pub amg: Option<AmgInfo>,
    /// Seconds to build the preconditioner (warm with [`SolveOptions::warmup`]).
    pub setup_seconds: f64,
}

/// Solves `A x = b` on `backend` as `options` say, from `x = 0`; see the
/// [module documentation](self).
///
/// # Errors
/// - [`Error::InvalidArgument`]: bad options ([`SolveOptions::check`]), a non-finite value
///   in `A`, a `b` of the wrong length, with a non-finite entry or an overflowing norm, values that the precision cannot
///   hold (f32: every value of `A` and `b` a normal f32 or 0; mixed: none beyond `f32::MAX`).
/// - Whatever moving the matrix, building the preconditioner or the method returns (a
///   non-square matrix, a zero diagonal for Jacobi, a device error).
///
/// A solve that stops without converging is not an error: see
/// [`SystemSolution::converged`].
pub fn solve_system<B: Backend>(
    backend: &B,
    a: &Csr<Cpu, f64>,
    b: &[f64],
    options: &SolveOptions,
) -> Result<SystemSolution> {
    options.check()?;
    crate::error::check_len("solve", "b", a.nrows(), b.len())?;
    if let Some(k) = a.values().iter().position(|v| !v.is_finite()) {
        let (row, col) = a.entry_position(k);
        return Err(Error::invalid(
            "solve",
            "A",
            format!("A[{row}, {col}] (0-based) is {}", a.values()[k]),
        ));
    }
    check_rhs(b)?;
    check_precision(options, a, b)?;
    let solved = match options.precision {
        SolvePrecision::F32 if options.method != Method::Refine => {
            solve_in::<B, f32>(backend, a, b, options)?
        }
        SolvePrecision::F64 if options.method != Method::Refine => {
            solve_in::<B, f64>(backend, a, b, options)?
        }
        _ => solve_mixed(backend, a, b, options)?,
    };
    let true_relative_residual = relative_residual(a, b, &solved.x)?;
    let converged = solved.report.converged() && true_relative_residual <= options.tol;
    let reason = if solved.report.converged() && !converged {
        format!(
            "the {} solve converged, but the true relative residual of the f64 system is \
             {true_relative_residual:.3e} > tol {:e}",
            options.precision, options.tol
        )
    } else {
        solved.report.reason.to_string()
    };
    Ok(SystemSolution {
        x: solved.x,
        report: solved.report,
        converged,
        reason,
        true_relative_residual,
        format: solved.format,
        amg: solved.amg,
        setup_seconds: solved.setup_seconds,
    })
}

/// A solve's result before it is judged.
struct Solved {
    x: Vec<f64>,
    report: SolveReport,
    format: String,
    amg: Option<AmgInfo>,
    setup_seconds: f64,
}

/// The operator on the backend with values `V`, and the format's description.
fn operator<B: Backend, V: Element>(
    b: &B,
    a: &Csr<Cpu, f64>,
    format: Option<Format>,
) -> Result<(SparseMatrix<B, V>, String)> {
    let a: Csr<Cpu, V> = a.convert();
    match format {
        None => {
            let (m, choice) = SparseMatrix::auto(b, &a)?;
            Ok((m, choice.to_string()))
        }
        Some(f) => Ok((
            SparseMatrix::from_csr(b, &a, f, &FormatOptions::default())?,
            format!("{f} (requested)"),
        )),
    }
}

/// A preconditioner, what its setup built and cost, and whether the method must be flexible.
struct Built<'a, B: Backend, P: Scalar> {
    m: Box<dyn Preconditioner<B, P> + 'a>,
    amg: Option<AmgInfo>,
    /// An f32 hierarchy inside a solve in another precision: not exactly symmetric.
    flexible: bool,
    setup_seconds: f64,
}

/// The preconditioner in precision `P` for `a`, whose backend operator is `op`.
fn preconditioner<'a, B: Backend, P: Scalar>(
    b: &B,
    options: &SolveOptions,
    a: &Csr<Cpu, f64>,
    op: &'a SparseMatrix<B, P>,
) -> Result<Built<'a, B, P>> {
    let t0 = Instant::now();
    let mut amg = None;
    let mut flexible = false;
    let m: Box<dyn Preconditioner<B, P> + 'a> = match options.precond {
        PrecondKind::Amg => {
            if options.amg_precision == AmgPrecision::F32 && P::DTYPE != DType::F32 {
                // The finest level in f32 in the solver's format (DIA, SELL, ...: fused
                // smoothing passes, half the bytes of CSR's values and indices for DIA),
                // rounded from the solver's operator on the device.
                let fine = op.to_precision::<f32>()?;
                let h = Amg::<B, f32>::with_owned_operator(b, a, Box::new(fine), &options.amg)?;
                amg = Some(h.info().clone());
                flexible = true;
                Box::new(MixedPrecision::new(h))
            } else {
                // The finest level is the method's operator: no second copy of A.
                let h = Amg::<B, P>::with_operator(b, a, op, &options.amg)?;
                amg = Some(h.info().clone());
                Box::new(h)
            }
        }
        PrecondKind::Jacobi => Box::new(Jacobi::<B, P>::new(b, a)?),
        PrecondKind::BlockJacobi => Box::new(BlockJacobi::<B, P>::new(b, a, options.block_size)?),
        PrecondKind::Chebyshev => Box::new(Chebyshev::new(
            b,
            op,
            &a.diagonal(),
            ChebyshevParams::default(),
        )?),
        PrecondKind::None => Box::new(Identity::new(a.nrows())),
    };
    Ok(Built {
        m,
        amg,
        flexible,
        setup_seconds: t0.elapsed().as_secs_f64(),
    })
}

fn params(options: &SolveOptions, flexible: bool) -> SolverParams<'static> {
    SolverParams {
        stop: Stopping::new(options.tol, options.max_iter),
        restart: options.restart,
        flexible,
        ..SolverParams::default()
    }
}

fn run_method<B: Backend, S: Scalar>(
    options: &SolveOptions,
    op: &dyn LinearOperator<B, S>,
    built: &Built<'_, B, S>,
    bv: &Vector<B, S>,
    x: &mut Vector<B, S>,
) -> Result<SolveReport> {
    let params = params(options, built.flexible);
    let none = options.precond == PrecondKind::None;
    let m = (!none).then_some(built.m.as_ref());
    match options.method {
        Method::Cg if none => cg(op, bv, x, &params),
        Method::Cg | Method::Pcg | Method::Refine => pcg(op, m, bv, x, &params),
        Method::Bicgstab => bicgstab(op, m, bv, x, &params),
        Method::Gmres => gmres(op, m, bv, x, &params),
        Method::Fgmres => fgmres(op, m, bv, x, &params),
    }
}

/// The solve in precision `S` throughout (f32 or f64).
fn solve_in<B: Backend, S: Scalar>(
    b: &B,
    a: &Csr<Cpu, f64>,
    rhs: &[f64],
    options: &SolveOptions,
) -> Result<Solved> {
    let (op, format) = operator::<B, S>(b, a, options.format)?;
    if options.warmup && options.precond == PrecondKind::Amg {
        drop(preconditioner::<B, S>(b, options, a, &op)?);
    }
    let built = preconditioner::<B, S>(b, options, a, &op)?;
    let bv = Vector::from_slice(b, &rhs.iter().map(|&v| S::from_f64(v)).collect::<Vec<_>>())?;
    let mut x = Vector::zeros(b, a.ncols())?;
    if options.warmup {
        let mut scratch = Vector::zeros(b, a.ncols())?;
        run_method(options, &op, &built, &bv, &mut scratch)?;
    }
    let report = run_method(options, &op, &built, &bv, &mut x)?;
    Ok(Solved {
        x: x.to_vec()?.iter().map(|v| v.as_f64()).collect(),
        report,
        format,
        amg: built.amg,
        setup_seconds: built.setup_seconds,
    })
}

/// The f64 system solved to the tolerance with the work in f32 (see [`SolvePrecision`]).
fn solve_mixed<B: Backend>(
    b: &B,
    a: &Csr<Cpu, f64>,
    rhs: &[f64],
    options: &SolveOptions,
) -> Result<Solved> {
    let bv = Vector::from_slice(b, rhs)?;
    let mut x = Vector::<B, f64>::zeros(b, a.ncols())?;
    let (op64, format) = operator::<B, f64>(b, a, options.format)?;
    let op32 = op64.to_precision::<f32>()?;
    let built = preconditioner::<B, f32>(b, options, a, &op32)?;
    let m32 = (options.precond != PrecondKind::None).then_some(built.m.as_ref());
    let report = if options.method == Method::Refine {
        let refinement = RefinementParams {
            stop: Stopping::new(options.tol, options.max_iter),
            inner_stop: Stopping::new(options.inner_tol, options.inner_max_iter),
        };
        iterative_refinement(&op64, &op32, m32, &bv, &mut x, &refinement)?
    } else {
        let spd = matches!(options.method, Method::Cg | Method::Pcg);
        let mixed = MixedParams {
            outer: if spd {
                MixedOuter::FlexibleCg
            } else {
                MixedOuter::Fgmres
            },
            inner: if spd {
                InnerSolver::Cg
            } else {
                InnerSolver::Gmres
            },
            inner_stop: Stopping::new(options.inner_tol, options.inner_max_iter),
            inner_restart: options.restart,
        };
        mixed_solve(
            &op64,
            &op32,
            m32,
            &bv,
            &mut x,
            &params(options, true),
            &mixed,
        )?
    };
    Ok(Solved {
        x: x.to_vec()?,
        report,
        format,
        amg: built.amg.clone(),
        setup_seconds: built.setup_seconds,
    })
}

/// `‖b − A x‖₂ / ‖b‖₂` of the f64 system on the host, with scaled norms (no overflow or
/// underflow on the way); `‖b − A x‖₂` when `b = 0`.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `b` or `x` does not fit `a`.
pub fn relative_residual(a: &Csr<Cpu, f64>, b: &[f64], x: &[f64]) -> Result<f64> {
    let cpu = Cpu::new();
    let mut r = Vector::from_slice(&cpu, b)?;
    a.spmv(-1.0, &Vector::from_slice(&cpu, x)?, 1.0, &mut r)?;
    let bnorm = Vector::from_slice(&cpu, b)?.nrm2()?;
    Ok(r.nrm2()? / if bnorm > 0.0 { bnorm } else { 1.0 })
}

/// A right-hand side every method can take: finite entries and a finite norm.
fn check_rhs(b: &[f64]) -> Result<()> {
    if let Some((i, v)) = b.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::invalid("solve", "b", format!("b[{i}] is {v}")));
    }
    let norm = Vector::from_slice(&Cpu::new(), b)?.nrm2()?;
    if !norm.is_finite() {
        return Err(Error::invalid(
            "solve",
            "b",
            "‖b‖₂ overflows f64 (its entries are finite, but too large together): scale the \
             system",
        ));
    }
    Ok(())
}

/// Values that the precision cannot hold: with f32 every value of A and b must be a normal
/// f32 or 0; with a mixed solve (whose f32 copy only preconditions) none may overflow.
fn check_precision(options: &SolveOptions, a: &Csr<Cpu, f64>, b: &[f64]) -> Result<()> {
    let underflow = match options.precision {
        SolvePrecision::F64 if options.method != Method::Refine => return Ok(()),
        SolvePrecision::F32 => true,
        _ => false,
    };
    let refuse = |what: String, v: f64| {
        Error::invalid(
            "solve",
            "precision",
            format!(
                "{what} = {v:e} has no f32 value ({}): scale the system, or use precision {}",
                if v.abs() > f32::MAX as f64 {
                    "it would become infinite"
                } else {
                    "it would become 0 or lose its digits"
                },
                if underflow { "mixed or f64" } else { "f64" }
            ),
        )
    };
    if let Some((k, v)) = f32_unrepresentable(a.values(), underflow) {
        let (row, col) = a.entry_position(k);
        return Err(refuse(format!("A[{row}, {col}] (0-based)"), v));
    }
    if let Some((i, v)) = f32_unrepresentable(b, underflow) {
        return Err(refuse(format!("b[{i}] (0-based)"), v));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::generate::poisson3d_7pt;

    #[test]
    fn names_parse_and_unknown_names_list_the_choices() {
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>().unwrap(), *m);
        }
        assert_eq!(
            "Block_Jacobi".parse::<PrecondKind>().unwrap(),
            PrecondKind::BlockJacobi
        );
        let e = "minres".parse::<Method>().unwrap_err().to_string();
        assert!(e.contains("minres") && e.contains("bicgstab"), "{e}");
        let e = "f16".parse::<SolvePrecision>().unwrap_err().to_string();
        assert!(e.contains("mixed"), "{e}");
    }

    /// Every precision answers a random right-hand side to the tolerance of the f64 system,
    /// checked here independently of the driver's own residual; an f32 solve asked for more
    /// than f32 can give is not reported converged.
    #[test]
    fn solutions_are_judged_on_the_f64_system() {
        let a = poisson3d_7pt(10).unwrap();
        let mut rng = crate::random::Rng::new(5);
        let b: Vec<f64> = (0..a.nrows()).map(|_| rng.range(-1.0, 1.0)).collect();
        let cpu = Cpu::new();
        for (precision, precond) in [
            (SolvePrecision::F64, PrecondKind::Jacobi),
            (SolvePrecision::Mixed, PrecondKind::Amg),
            (SolvePrecision::F64, PrecondKind::None),
        ] {
            let options = SolveOptions {
                precision,
                precond,
                tol: 1e-10,
                ..SolveOptions::default()
            };
            let s = solve_system(&cpu, &a, &b, &options).unwrap();
            let mut r = b.clone();
            for (i, ri) in r.iter_mut().enumerate() {
                let (lo, hi) = (a.row_ptr()[i] as usize, a.row_ptr()[i + 1] as usize);
                for k in lo..hi {
                    *ri -= a.values()[k] * s.x[a.col_idx()[k] as usize];
                }
            }
            let rel = r.iter().map(|v| v * v).sum::<f64>().sqrt()
                / b.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!(
                s.converged && rel <= 1e-10,
                "{precision} {precond}: {rel:e}"
            );
            assert!((rel - s.true_relative_residual).abs() <= 1e-3 * rel);
            assert_eq!(s.amg.is_some(), precond == PrecondKind::Amg);
        }
        let options = SolveOptions {
            precision: SolvePrecision::F32,
            tol: 1e-12,
            ..SolveOptions::default()
        };
        let s = solve_system(&cpu, &a, &b, &options).unwrap();
        assert!(
            !s.converged && s.true_relative_residual > 1e-12,
            "{}",
            s.reason
        );
        let bad = SolveOptions {
            tol: 0.0,
            ..SolveOptions::default()
        };
        assert!(solve_system(&cpu, &a, &b, &bad).is_err());
        assert!(solve_system(&cpu, &a, &b[1..], &SolveOptions::default()).is_err());
    }
}
