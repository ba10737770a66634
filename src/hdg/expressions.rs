//! An HDG Poisson problem given as text: the mesh as a spec (`square:N`, `perturbed:N`, a
//! Gmsh file) and the data as expressions in `x`, `y` ([`crate::expr`]) — what the
//! `hdg_poisson` example and the Python package take.
//!
//! ```
//! use galerkin::hdg::{ExpressionProblem, Expressions, MeshSpec};
//!
//! let mesh = MeshSpec::new("square:4").build(3)?;
//! let data = ExpressionProblem::new(&Expressions::default(), &mesh)?; // u = sin(πx) sin(πy)
//! assert!(data.has_exact());
//! # Ok::<(), galerkin::Error>(())
//! ```

use std::sync::Arc;

use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::hdg::{Exact, Fields, Hdg, HdgOps, L2Errors, Problem};
use crate::mesh::tri::{Diagonal, TriMesh};
use crate::mesh::CellKind;
use crate::scalar::Scalar;

/// The exact solution used when neither a right-hand side nor an exact solution is given.
pub const DEFAULT_EXACT: &str = "sin(pi*x)*sin(pi*y)";

fn bad(name: &'static str, reason: String) -> Error {
    Error::invalid("hdg_poisson", name, reason)
}

/// How to build a triangle mesh from a spec.
#[derive(Clone, Debug)]
pub struct MeshSpec<'a> {
    /// `square:N` (N x N squares of 2 triangles on `[0, 1]²`), `perturbed:N` (the same with
    /// interior points moved at random by up to 0.2 h), or a Gmsh file (`.msh`, 2.2 or 4.1)
    /// with 3-node triangles and tagged boundary lines.
    pub spec: &'a str,
    /// How the generated squares are split (default [`Diagonal::Up`]).
    pub diagonal: Diagonal,
    /// Seed of the perturbation of `perturbed:N` (default 1).
    pub seed: u64,
    /// Gmsh files: the tag given to boundary lines without a physical tag (default `None`:
    /// such lines are an error).
    pub untagged_as: Option<i32>,
}

impl<'a> MeshSpec<'a> {
    /// The spec with the defaults.
    pub fn new(spec: &'a str) -> Self {
        MeshSpec {
            spec,
            diagonal: Diagonal::Up,
            seed: 1,
            untagged_as: None,
        }
    }

    /// The mesh, refused before it is built when the HDG solve of `degree` on it would not
    /// fit the host memory (about `1200 + 60 n_p²` bytes per triangle, `n_p` the element's
    /// unknowns: measured on the CPU backend, P = 1, 3, 6 on 80,000 triangles: 1.45, 6.9
    /// and 33 kB per triangle).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad spec, [`Error::ResourceLimit`] beyond the memory,
    /// and whatever reading the Gmsh file returns.
    pub fn build(&self, degree: usize) -> Result<TriMesh> {
        let check_memory = |triangles: u64| {
            let p = degree as u64;
            let np = p.saturating_add(1).saturating_mul(p.saturating_add(2)) / 2;
            crate::limits::check_host_items(
                format_args!(
                    "the HDG solve of degree {degree} on {triangles} triangles (estimated)"
                ),
                triangles,
                np.saturating_mul(np)
                    .saturating_mul(60)
                    .saturating_add(1200),
            )
        };
        let generated = |n: &str, perturbation: f64| -> Result<TriMesh> {
            let n = n.parse::<usize>().map_err(|_| {
                bad(
                    "mesh",
                    format!("{:?}: N must be a positive integer", self.spec),
                )
            })?;
            check_memory(2u64.saturating_mul(n as u64).saturating_mul(n as u64))?;
            TriMesh::unit_square(n, self.diagonal, perturbation, self.seed)
        };
        if let Some(n) = self.spec.strip_prefix("square:") {
            return generated(n, 0.0);
        }
        if let Some(n) = self.spec.strip_prefix("perturbed:") {
            return generated(n, 0.2);
        }
        let gmsh = crate::mesh::gmsh::read(self.spec)?;
        check_memory(gmsh.num_cells(CellKind::Tri3) as u64)?;
        match self.untagged_as {
            Some(tag) => TriMesh::from_gmsh_with_default_tag(&gmsh, tag),
            None => TriMesh::from_gmsh(&gmsh).map_err(|e| match e {
                Error::InvalidArgument { reason, .. } if reason.contains("no physical tag") => bad(
                    "mesh",
                    format!(
                        "{}: {reason}; give such lines a tag (`untagged_as`, --untagged-as)",
                        self.spec
                    ),
                ),
                e => e,
            }),
        }
    }

    /// Whether the spec names a generated square (whose boundary carries no Neumann tags).
    pub fn is_generated(&self) -> bool {
        self.spec.starts_with("square:") || self.spec.starts_with("perturbed:")
    }
}

/// The data of `−∇²u + λu = f` as expressions (each `None` for its default).
#[derive(Clone, Debug, Default)]
pub struct Expressions<'a> {
    /// `f(x, y)` (default: `−∇²u + λu` of `exact`, differentiated symbolically).
    pub rhs: Option<&'a str>,
    /// The Dirichlet values `g(x, y)` (default: `exact`, else 0).
    pub dirichlet: Option<&'a str>,
    /// The exact solution `u(x, y)`, for the errors and the defaults (default:
    /// [`DEFAULT_EXACT`] when `rhs` is not given either).
    pub exact: Option<&'a str>,
    /// The Neumann data `∇u·n` in `x, y, nx, ny` (default: from `exact`).
    pub flux: Option<&'a str>,
    /// `λ ≥ 0`.
    pub lambda: f64,
    /// Whether the mesh has Neumann edges (then a flux or an exact solution is needed).
    pub neumann: bool,
}

/// A scalar function of the point, owned.
type BoxedField = Box<dyn Fn(f64, f64) -> f64 + Sync + Send>;
/// A flux `(x, y, n) ↦ ∇u·n`, owned.
type BoxedFlux = Box<dyn Fn(f64, f64, [f64; 2]) -> f64 + Sync + Send>;

/// The problem's functions, parsed and checked finite at every mesh point.
pub struct ExpressionProblem {
    rhs: BoxedField,
    dirichlet: BoxedField,
    flux: Option<BoxedFlux>,
    /// The exact solution: value, gradient and Laplacian by forward differentiation.
    exact: Option<Arc<Expr>>,
}

/// Parses `text` for argument `name` in the given variables.
fn parse(name: &'static str, text: &str, variables: &[&str]) -> Result<Expr> {
    Expr::parse(text, variables).map_err(|e| {
        let shown: String = text.chars().take(60).collect();
        let more = if text.chars().count() > 60 { "..." } else { "" };
        bad(name, format!("cannot parse \"{shown}{more}\": {e}"))
    })
}

impl ExpressionProblem {
    /// Parses the expressions and checks every function (the exact solution and its
    /// gradient too) finite at every point of `mesh`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the expression (`rhs`, `dirichlet`, `exact`,
    /// `flux`, `lambda`) that cannot be parsed, is missing, or is not finite at a mesh point.
    pub fn new(e: &Expressions<'_>, mesh: &TriMesh) -> Result<Self> {
        const XY: &[&str] = &["x", "y"];
        if !(e.lambda >= 0.0 && e.lambda.is_finite()) {
            return Err(bad(
                "lambda",
                format!("{}: must be finite and ≥ 0", e.lambda),
            ));
        }
        let exact = match (e.exact, e.rhs.is_none()) {
            (Some(t), _) => Some(Arc::new(parse("exact", t, XY)?)),
            (None, true) => Some(Arc::new(parse("exact", DEFAULT_EXACT, XY)?)),
            (None, false) => None,
        };
        let lambda = e.lambda;
        let rhs: BoxedField = match (e.rhs, &exact) {
            (Some(t), _) => {
                let f = parse("rhs", t, XY)?;
                Box::new(move |x, y| f.eval(&[x, y]))
            }
            (None, Some(u)) => {
                let u = Arc::clone(u);
                Box::new(move |x, y| {
                    let j = u.eval_jet(&[x, y]);
                    -j.laplacian() + lambda * j.value
                })
            }
            (None, None) => {
                return Err(bad(
                    "rhs",
                    "give a right-hand side or an exact solution".into(),
                ))
            }
        };
        let dirichlet: BoxedField = match (e.dirichlet, &exact) {
            (Some(t), _) => {
                let g = parse("dirichlet", t, XY)?;
                Box::new(move |x, y| g.eval(&[x, y]))
            }
            (None, Some(u)) => {
                let u = Arc::clone(u);
                Box::new(move |x, y| u.eval(&[x, y]))
            }
            (None, None) => Box::new(|_, _| 0.0),
        };
        let flux: Option<BoxedFlux> = match (e.flux, &exact) {
            (Some(t), _) => {
                let h = parse("flux", t, &["x", "y", "nx", "ny"])?;
                Some(Box::new(move |x, y, n: [f64; 2]| {
                    h.eval(&[x, y, n[0], n[1]])
                }))
            }
            (None, Some(u)) => {
                let u = Arc::clone(u);
                Some(Box::new(move |x, y, n: [f64; 2]| {
                    let g = u.eval_jet(&[x, y]).gradient;
                    g[0] * n[0] + g[1] * n[1]
                }))
            }
            (None, None) if e.neumann => {
                return Err(bad(
                    "flux",
                    "Neumann edges need a flux or an exact solution".into(),
                ))
            }
            (None, None) => None,
        };
        for p in &mesh.points {
            let (x, y) = (p[0], p[1]);
            let mut values = vec![("rhs", rhs(x, y)), ("dirichlet", dirichlet(x, y))];
            if let Some(u) = &exact {
                let j = u.eval_jet(&[x, y]);
                values.extend([
                    ("exact", j.value),
                    ("exact (its gradient)", j.gradient[0] + j.gradient[1]),
                ]);
            }
            for (name, v) in values {
                if !v.is_finite() {
                    return Err(bad(
                        if name.starts_with("exact") {
                            "exact"
                        } else {
                            name
                        },
                        format!("{name}: the expression is {v} at the mesh point ({x}, {y})"),
                    ));
                }
            }
        }
        Ok(ExpressionProblem {
            rhs,
            dirichlet,
            flux,
            exact,
        })
    }

    /// The problem for [`Hdg::run`].
    pub fn problem(&self) -> Problem<'_> {
        Problem {
            rhs: &*self.rhs,
            dirichlet: &*self.dirichlet,
            flux: self.flux.as_deref().map(|f| f as _),
        }
    }

    /// Whether an exact solution is known (given, or the default).
    pub fn has_exact(&self) -> bool {
        self.exact.is_some()
    }

    /// The L2 errors of `fields` against the exact solution, `None` without one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if an error is not finite (the exact solution or its
    /// gradient is not finite at some quadrature point); device errors.
    pub fn errors<B: Backend + HdgOps, V: Scalar, S: Scalar>(
        &self,
        hdg: &Hdg<B, V, S>,
        fields: &Fields<B, V>,
    ) -> Result<Option<L2Errors>> {
        let Some(u) = &self.exact else {
            return Ok(None);
        };
        let ue = |x: f64, y: f64| u.eval(&[x, y]);
        let ge = |x: f64, y: f64| u.eval_jet(&[x, y]).gradient;
        let e = hdg.errors(fields, &Exact { u: &ue, grad: &ge })?;
        if !(e.u.is_finite() && e.q.is_finite() && e.u_star.is_none_or(f64::is_finite)) {
            return Err(bad(
                "exact",
                format!(
                    "the L2 errors are not finite (u: {}, q: {}): the exact solution or its \
                     gradient is not finite at some quadrature point",
                    e.u, e.q
                ),
            ));
        }
        Ok(Some(e))
    }
}
