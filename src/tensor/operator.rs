//! [`TensorOperator`]: the matrix-free `Q_k` mass and Laplace operators (CEED BP1/BP3
//! class) with homogeneous Dirichlet boundary conditions, as [`LinearOperator`]s.

use crate::bundle::Backend;
use crate::error::{check_len, Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::Scalar;
use crate::tensor::basis::Basis1d;
use crate::tensor::grid::Grid;
use crate::tensor::ops::{boundary, check_grid, CellMatrices, Scatter, TensorOps, Tiling};
use crate::vector::Vector;

/// Which operator a [`TensorOperator`] applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OperatorKind {
    /// `(∇u, ∇v)`: the stiffness matrix (BP3 class).
    Laplace,
    /// `(u, v)`: the mass matrix (BP1 class).
    Mass,
    /// `a (∇u, ∇v) + c (u, v)`.
    Helmholtz {
        /// The coefficient `a` of the Laplacian.
        laplace: f64,
        /// The coefficient `c` of the mass term.
        mass: f64,
    },
}

impl OperatorKind {
    fn coefficients(self) -> (f64, f64) {
        match self {
            OperatorKind::Laplace => (1.0, 0.0),
            OperatorKind::Mass => (0.0, 1.0),
            OperatorKind::Helmholtz { laplace, mass } => (laplace, mass),
        }
    }
}

/// A matrix-free `Q_k` operator on a Cartesian grid of `[0,1]^d`, applied with sum
/// factorization. Rows and columns of boundary nodes are those of the identity (the
/// boundary values are eliminated), so the operator is symmetric, and positive definite for
/// the Laplacian.
///
/// How it is applied ([`path`](Self::path)):
/// - **Tiled** (the default in 3D on the GPU backends): one kernel that writes every node
///   of the output once, a tile of nodes per cube ([`TensorOps::tensor_tile_apply`]);
///   [`with_tiling`](Self::with_tiling) tunes it.
/// - Otherwise cell by cell, the cell results added into the output by atomics where the
///   backend has them for `T`
///   ([`TensorOps::tensor_atomic_add`](super::TensorOps::tensor_atomic_add)), else by
///   `2^d` colours of cells that share no node; [`with_scatter`](Self::with_scatter) picks
///   one.
///
/// ```
/// use galerkin::tensor::{Grid, OperatorKind, TensorOperator};
/// use galerkin::solver::LinearOperator;
/// use galerkin::{Cpu, Vector};
///
/// let grid = Grid { dim: 2, degree: 3, cells: 4 };
/// let a = TensorOperator::<Cpu, f64>::new(&Cpu::new(), grid, OperatorKind::Laplace)?;
/// let x = Vector::full(&Cpu::new(), grid.len(), 1.0)?;
/// let mut y = Vector::zeros(&Cpu::new(), grid.len())?;
/// a.apply(&x, &mut y)?;
/// // Energy of the discrete function that is 1 inside and 0 on the boundary: positive.
/// assert!(x.dot(&y)? > 0.0);
/// # Ok::<(), galerkin::Error>(())
/// ```
pub struct TensorOperator<B: Backend + TensorOps, T: Scalar> {
    backend: B,
    grid: Grid,
    kind: OperatorKind,
    coef: [T; 2],
    cell: CellMatrices<B, T>,
    path: ApplyPath,
}

/// How a [`TensorOperator`] is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyPath {
    /// One pass with this tiling, every output written once.
    Tiled(Tiling),
    /// Cell by cell, added by atomics.
    Atomic,
    /// Cell by cell, `2^d` colours of cells added in turn.
    Colour,
}

impl<B: Backend + TensorOps, T: Scalar> TensorOperator<B, T> {
    /// The operator `kind` on `grid`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a dimension other than 2 or 3, a degree outside
    /// `1..=10` or no cells; [`Error::Unsupported`] if the backend lacks `T`; device errors.
    pub fn new(backend: &B, grid: Grid, kind: OperatorKind) -> Result<Self> {
        check_grid("TensorOperator::new", grid)?;
        backend.require::<T>("TensorOperator")?;
        let basis = Basis1d::new(grid.degree)?;
        let h = 1.0 / grid.cells as f64;
        let (a, c) = kind.coefficients();
        let d = grid.dim as i32;
        let path = match backend.tensor_tiling::<T>(grid, None) {
            Ok(tiling) => ApplyPath::Tiled(tiling),
            Err(_) if backend.tensor_atomic_add::<T>() => ApplyPath::Atomic,
            Err(_) => ApplyPath::Colour,
        };
        Ok(TensorOperator {
            backend: backend.clone(),
            grid,
            kind,
            coef: [T::from_f64(a * h.powi(d - 2)), T::from_f64(c * h.powi(d))],
            cell: CellMatrices::new(backend, &basis)?,
            path,
        })
    }

    /// The same operator applied cell by cell, scattering by atomics (`true`) or by
    /// colours (`false`).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when asking for atomics the backend lacks for `T`.
    pub fn with_scatter(mut self, atomic: bool) -> Result<Self> {
        if atomic && !self.backend.tensor_atomic_add::<T>() {
            return Err(Error::Unsupported {
                backend: self.backend.info().device.clone(),
                what: format!("atomic add of {} values", T::DTYPE.name()),
                reason: "the device or its runtime has no such atomic; use colouring".into(),
            });
        }
        self.path = if atomic {
            ApplyPath::Atomic
        } else {
            ApplyPath::Colour
        };
        Ok(self)
    }

    /// The same operator applied in one pass with `tiling` (3D, GPU backends).
    ///
    /// # Errors
    /// [`Error::Unsupported`] where the backend has no one-pass kernel for the grid, or the
    /// tiling does not fit the device (units or shared memory per cube, cube counts); the
    /// message says which.
    pub fn with_tiling(mut self, tiling: Tiling) -> Result<Self> {
        let checked = self
            .backend
            .tensor_tiling::<T>(self.grid, Some(tiling))
            .map_err(|reason| Error::Unsupported {
                backend: self.backend.info().device.clone(),
                what: format!("tiling {tiling:?} of the one-pass operator"),
                reason,
            })?;
        self.path = ApplyPath::Tiled(checked);
        Ok(self)
    }

    /// Whether the cell results are added by atomics.
    pub fn atomic(&self) -> bool {
        self.path == ApplyPath::Atomic
    }

    /// How the operator is applied.
    pub fn path(&self) -> ApplyPath {
        self.path
    }

    /// The grid.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// The operator kind.
    pub fn kind(&self) -> OperatorKind {
        self.kind
    }

    /// The scaled coefficients `[c_lap, c_mass]` of the reference-cell matrices.
    pub(crate) fn scaled_coefficients(&self) -> [T; 2] {
        self.coef
    }

    /// The diagonal, on the host (for Jacobi and Chebyshev smoothers): the Kronecker sums
    /// of the diagonals of the global 1D matrices; 1 on boundary nodes.
    pub fn diagonal(&self) -> Result<Vec<f64>> {
        let basis = Basis1d::new(self.grid.degree)?;
        let (k, n1) = (self.grid.degree, self.grid.n1());
        let n = k + 1;
        let mut dm = vec![0.0; n1];
        let mut da = vec![0.0; n1];
        for c in 0..self.grid.cells {
            for i in 0..n {
                dm[c * k + i] += basis.mass[i * n + i];
                da[c * k + i] += basis.stiffness[i * n + i];
            }
        }
        let [cl, cm] = [self.coef[0].as_f64(), self.coef[1].as_f64()];
        let dim = self.grid.dim;
        let len = self.grid.len();
        let diag = (0..len)
            .map(|g| {
                if self.grid.on_boundary(g) {
                    return 1.0;
                }
                let c = [g % n1, (g / n1) % n1, g / (n1 * n1)];
                let mass: f64 = (0..dim).map(|d| dm[c[d]]).product();
                let lap: f64 = (0..dim)
                    .map(|t| {
                        (0..dim)
                            .map(|d| if d == t { da[c[d]] } else { dm[c[d]] })
                            .product::<f64>()
                    })
                    .sum();
                cl * lap + cm * mass
            })
            .collect();
        Ok(diag)
    }

    /// `y = A x` into `y` (which must be a grid vector).
    fn apply_into(&self, x: &Vector<B, T>, y: &mut Vector<B, T>) -> Result<()> {
        check_len("TensorOperator::apply", "x", self.grid.len(), x.len())?;
        check_len("TensorOperator::apply", "y", self.grid.len(), y.len())?;
        if let ApplyPath::Tiled(tiling) = self.path {
            return self.cell.tile_apply(self.grid, self.coef, tiling, x, y);
        }
        y.fill(T::ZERO)?;
        if self.path == ApplyPath::Atomic {
            self.cell
                .apply(self.grid, self.coef, x, y, Scatter::Atomic)?;
        } else {
            for c in 0..self.grid.colours() {
                self.cell
                    .apply(self.grid, self.coef, x, y, Scatter::Colour(c))?;
            }
        }
        boundary(self.grid, Some(x), y)
    }
}

impl<B: Backend + TensorOps, T: Scalar> LinearOperator<B, T> for TensorOperator<B, T> {
    fn nrows(&self) -> usize {
        self.grid.len()
    }

    fn ncols(&self) -> usize {
        self.grid.len()
    }

    fn apply(&self, x: &Vector<B, T>, y: &mut Vector<B, T>) -> Result<()> {
        self.apply_into(x, y)
    }

    fn apply_add(&self, alpha: T, x: &Vector<B, T>, beta: T, y: &mut Vector<B, T>) -> Result<()> {
        check_len("TensorOperator::apply_add", "y", self.grid.len(), y.len())?;
        let mut t = Vector::zeros(&self.backend, self.grid.len())?;
        self.apply_into(x, &mut t)?;
        y.axpby(alpha, &t, beta)
    }

    fn cost(&self) -> OperatorCost {
        let (n, d) = (self.grid.degree + 1, self.grid.dim as i32);
        let cells = (self.grid.cells as f64).powi(d);
        let contractions = if d == 3 { 7.0 } else { 4.0 };
        OperatorCost {
            flops: cells * contractions * 2.0 * (n as f64).powi(d + 1),
            bytes: 2.0 * self.grid.len() as f64 * std::mem::size_of::<T>() as f64,
        }
    }
}
