//! [`TensorOps`]: the tensor-product kernels every backend implements (the cell-wise
//! operator by sum factorization, the fused vertex-patch smoothing step, a banded 1D matrix
//! along one direction, the Dirichlet boundary), and the CPU implementation, the reference.
//!
//! # Layout
//! A level's vector holds every node of the `N1^d` grid (`N1 = k · cells + 1`), boundary
//! included, lexicographic with x fastest: node `(x, y, z)` is `(z N1 + y) N1 + x`.
//!
//! # The local operator
//! On a block of `n^d` nodes with 1D matrices `M`, `A` (`n x n`), the operator is
//! `c_lap (A⊗M⊗M + M⊗A⊗M + M⊗M⊗A) + c_mass M⊗M⊗M` (2D: two factors), restricted to the
//! rows `r0 .. r0 + m` in every direction (all rows for a cell; the `2k − 1` interior rows
//! for a vertex patch, whose closure has `n = 2k + 1` nodes).
//!
//! # Checked entry points
//! The trait's methods are `unsafe` (a kernel indexes its operands by the grid); the safe way
//! to them is below: `boundary`, `CellMatrices`, `PatchData` and `Banded` own their
//! device data and check every vector's length and device before a launch. The operators
//! and multigrid call only these.

use std::collections::BTreeMap;

use crate::backend::core::{check_device, sealed::Sealed};
use crate::error::{check_len, Error, Result};
use crate::scalar::Scalar;
use crate::tensor::basis::check_degree;
use crate::tensor::basis::Basis1d;
use crate::vector::{Vector, VectorOps};

pub use crate::tensor::grid::Grid;

/// The tiling of the one-pass operator kernel ([`TensorOps::tensor_tile_apply`]): a cube
/// owns the nodes of `cells x cells` cells in x and y and marches up `chunk` cell layers
/// in z, a cell layer (`k` output planes) at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tiling {
    /// Cells per tile edge in x and y.
    pub cells: usize,
    /// Cell layers per chunk in z.
    pub chunk: usize,
}

/// How the cell-wise operator adds cell results into the global vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scatter {
    /// All cells at once, adding by atomics.
    Atomic,
    /// The cells of one colour (no two share a node): plain read-modify-write.
    Colour(usize),
}

/// The tensor-product kernel family: implemented by every backend; sealed. Called by
/// [`tensor`](super) and [`multigrid`](crate::multigrid), which build every argument.
///
/// # Safety
/// Every method requires: the buffers belong to this backend; vectors on a grid have
/// `grid.len()` values; `cell` holds `[M̂ | Â]` (`2 (k+1)²` values); `patch` holds
/// `[M_p | A_p | S | λ]` (`2 (2k+1)² + (2k−1)² + (2k−1)` values, see
/// [`Basis1d`]); `starts`/`values` describe a banded matrix of `rows`
/// rows and `width` values per row whose columns stay inside the input extent.
pub trait TensorOps: VectorOps + Sealed {
    /// `y += Σ over the cells chosen by `scatter` of the local operator applied to x`
    /// (`coef = [c_lap, c_mass]`). [`Scatter::Atomic`] only where
    /// [`atomic_add`](Self::tensor_atomic_add) is true for `T`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn tensor_cell_apply<T: Scalar>(
        &self,
        grid: Grid,
        coef: [T; 2],
        cell: &Self::Buffer<T>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
        scatter: Scatter,
    ) -> Result<()>;

    /// Whether [`Scatter::Atomic`] is available for `T`.
    fn tensor_atomic_add<T: Scalar>(&self) -> bool;

    /// The tiling of the one-pass kernel [`tensor_tile_apply`](Self::tensor_tile_apply)
    /// for `grid` in `T`: `request` checked against the device's limits, or the backend's
    /// choice with `None`.
    ///
    /// # Errors
    /// Why there is no such tiling: no one-pass kernel on this backend or for this
    /// dimension, or a request past the device's units or shared memory per cube.
    fn tensor_tiling<T: Scalar>(
        &self,
        grid: Grid,
        request: Option<Tiling>,
    ) -> std::result::Result<Tiling, String>;

    /// `y = A x` on a 3D grid in one pass: every node of `y` written once, the boundary
    /// rows those of the identity (`y = x` there), boundary values of `x` read as zero
    /// elsewhere (`coef = [c_lap, c_mass]`).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait; `tiling` is one [`tensor_tiling`](Self::tensor_tiling) returned
    /// for this grid and `T`.
    unsafe fn tensor_tile_apply<T: Scalar>(
        &self,
        grid: Grid,
        coef: [T; 2],
        tiling: Tiling,
        cell: &Self::Buffer<T>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// Whether the patch kernel of `grid` fits the device's on-chip memory for `T` (always
    /// on the CPU): the fused form, or with `split` the solve that reads the residual from
    /// `b − A x` ([`tensor_patch_smooth`](Self::tensor_patch_smooth) with `ax`); the bytes
    /// it needs otherwise.
    fn tensor_patch_fits<T: Scalar>(
        &self,
        grid: Grid,
        split: bool,
    ) -> std::result::Result<(), usize>;

    /// On the boundary nodes: `y = src` (or `y = 0` without `src`); interior untouched.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn tensor_boundary<T: Scalar>(
        &self,
        grid: Grid,
        src: Option<&Self::Buffer<T>>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// One colour of the multiplicative vertex-patch smoother: for every patch `j` of
    /// `colour`, `x_j += A_j⁻¹ (b_j − Ā_j x̄_j)` (local residual on the closure, local solve
    /// by fast diagonalization, the interior written). The split form (`ax = Some(A x)`,
    /// the global operator applied to the same `x`): the residual read as `b − ax` on the
    /// interior, which is the local residual there (every cell of an interior node is in
    /// the patch); no closure is loaded, so the kernel needs far less on-chip memory.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait; `ax`, when given, holds `grid.len()` values.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tensor_patch_smooth<T: Scalar>(
        &self,
        grid: Grid,
        colour: usize,
        coef: [T; 2],
        patch: &Self::Buffer<T>,
        b: &Self::Buffer<T>,
        ax: Option<&Self::Buffer<T>>,
        x: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `y = B x` along direction `dir` of an array with extents `ext` (x fastest): `y`
    /// has the extents of `x` with `ext[dir]` replaced by `rows`;
    /// `y[.., i, ..] = Σ_w values[i width + w] x[.., starts[i] + w, ..]`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tensor_line_apply<T: Scalar>(
        &self,
        ext: [usize; 3],
        dir: usize,
        rows: usize,
        width: usize,
        starts: &Self::Buffer<u32>,
        values: &Self::Buffer<T>,
        x: &Self::Buffer<T>,
        y: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// Partial sums of the squared L² error of the grid vector `uh` against a separable
    /// exact solution (the sum over cells of `l2_cell_error_sq`): `out[t]` gets the error of the cells
    /// `t, t + out.len(), …` (or any split of the cells among the entries of `out`: only
    /// their sum is specified). `table` is `l2_table(grid, g)` in `T`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait; `table` holds `l2_table_len(grid)` values and `out` at least one.
    unsafe fn tensor_l2_partials<T: Scalar>(
        &self,
        grid: Grid,
        table: &Self::Buffer<T>,
        uh: &Self::Buffer<T>,
        out: &mut Self::Buffer<T>,
    ) -> Result<()>;
}

/// Shared memory of the patch kernel, in values per patch: fused, the closure `n^d` plus
/// the second x-pass array `m n^{d−1}` (`n = 2k + 1`, `m = 2k − 1`); split, the interior
/// `m^d`.
pub(crate) fn patch_shared_values(grid: Grid, split: bool) -> usize {
    let (n, m, d) = (2 * grid.degree + 1, 2 * grid.degree - 1, grid.dim as u32);
    if split {
        m.pow(d)
    } else {
        n.pow(d) + m * n.pow(d - 1)
    }
}

/// Shared memory of the patch kernel per cube, in values, besides the patches: the
/// eigenvectors `m²` and eigenvalues `m`, and fused the patch matrices `2 n²` (split: two
/// unused values in their place).
pub(crate) fn patch_fixed_values(grid: Grid, split: bool) -> usize {
    let (n, m) = (2 * grid.degree + 1, 2 * grid.degree - 1);
    m * m + m + if split { 2 } else { 2 * n * n }
}

/// The form of the vertex-patch smoothing step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PatchForm {
    /// Fused where its kernel fits the device's on-chip memory, else split (the default).
    #[default]
    Auto,
    /// One kernel per colour: the local residual from the patch's closure and the local
    /// solve, all on chip (`(n^d + m n^{d−1})` values a patch, `n = 2k + 1`, `m = 2k − 1`).
    Fused,
    /// Per colour the global operator `A x` (the level's operator kernel), then a kernel that
    /// reads `b − A x` on each patch's interior and solves there (`m^d` values a patch): the
    /// same iterates up to round-off, `2^d` operator launches a step (the level's residual
    /// vector holds `A x`). It fits where the fused kernel does not (wgpu's 48 KiB: f64 from
    /// `k = 7` in 3D).
    Split,
}

impl PatchForm {
    /// The name: `auto`, `fused` or `split`.
    pub fn name(self) -> &'static str {
        match self {
            PatchForm::Auto => "auto",
            PatchForm::Fused => "fused",
            PatchForm::Split => "split",
        }
    }
}

impl std::str::FromStr for PatchForm {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(PatchForm::Auto),
            "fused" => Ok(PatchForm::Fused),
            "split" => Ok(PatchForm::Split),
            _ => Err(Error::InvalidArgument {
                op: "PatchForm::from_str",
                name: "patch_form",
                reason: format!("unknown patch form `{s}`: expected `auto`, `fused` or `split`"),
            }),
        }
    }
}

/// Checks a grid: dimension 2 or 3, degree in range, at least one cell.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `op`.
pub(crate) fn check_grid(op: &'static str, grid: Grid) -> Result<()> {
    if grid.dim != 2 && grid.dim != 3 {
        return Err(Error::invalid(
            op,
            "dim",
            format!("the dimension must be 2 or 3, got {}", grid.dim),
        ));
    }
    check_degree(op, grid.degree)?;
    if grid.cells == 0 {
        return Err(Error::invalid(
            op,
            "cells",
            "a grid needs at least one cell per direction",
        ));
    }
    Ok(())
}

/// On the boundary nodes of `grid`: `y = src` (or `y = 0` without `src`); the interior of
/// `y` untouched.
///
/// # Errors
/// [`Error::InvalidArgument`] for a bad grid, [`Error::DimensionMismatch`] for vectors that
/// are not grid vectors, [`Error::DeviceMismatch`] for `src` on another device.
pub(crate) fn boundary<B: TensorOps, T: Scalar>(
    grid: Grid,
    src: Option<&Vector<B, T>>,
    y: &mut Vector<B, T>,
) -> Result<()> {
    const OP: &str = "tensor boundary";
    check_grid(OP, grid)?;
    check_len(OP, "y", grid.len(), y.len())?;
    if let Some(src) = src {
        check_len(OP, "src", grid.len(), src.len())?;
        check_device(OP, y.backend(), src.backend())?;
    }
    let backend = y.backend().clone();
    let src = src.map(|s| s.buffer()).transpose()?;
    // SAFETY: y (and src) hold grid.len() values of this backend (checked above).
    unsafe { backend.tensor_boundary(grid, src, y.buffer_mut()?) }
}

/// The reference-cell matrices `[M̂ | Â]` of degree `k` on a device: the data of the
/// cell-wise operator.
pub(crate) struct CellMatrices<B: TensorOps, T: Scalar> {
    backend: B,
    degree: usize,
    data: B::Buffer<T>,
}

impl<B: TensorOps, T: Scalar> CellMatrices<B, T> {
    /// Uploads the cell matrices of `basis`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the backend lacks `T`; device errors.
    pub(crate) fn new(backend: &B, basis: &Basis1d) -> Result<Self> {
        backend.require::<T>("tensor-product operators")?;
        let mats: Vec<T> = basis
            .mass
            .iter()
            .chain(&basis.stiffness)
            .map(|&v| T::from_f64(v))
            .collect();
        Ok(CellMatrices {
            backend: backend.clone(),
            degree: basis.degree,
            data: backend.upload(&mats)?,
        })
    }

    /// `y += Σ over the cells chosen by `scatter` of the local operator applied to x`
    /// (`coef = [c_lap, c_mass]`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a grid of another degree or a colour out of range,
    /// [`Error::Unsupported`] for atomics the device lacks for `T`, and the errors of
    /// [`boundary`] for the vectors.
    pub(crate) fn apply(
        &self,
        grid: Grid,
        coef: [T; 2],
        x: &Vector<B, T>,
        y: &mut Vector<B, T>,
        scatter: Scatter,
    ) -> Result<()> {
        const OP: &str = "TensorOperator::apply";
        check_grid(OP, grid)?;
        check_degree_matches(OP, self.degree, grid)?;
        check_grid_vectors(OP, &self.backend, grid, x, y)?;
        match scatter {
            Scatter::Atomic if !self.backend.tensor_atomic_add::<T>() => {
                return Err(Error::Unsupported {
                    backend: self.backend.info().device.clone(),
                    what: format!("atomic add of {} values", T::DTYPE.name()),
                    reason: "the device or its runtime has no such atomic; use colouring".into(),
                })
            }
            Scatter::Colour(c) if c >= grid.colours() => {
                return Err(Error::invalid(
                    OP,
                    "scatter",
                    format!("colour {c} of {} colours", grid.colours()),
                ))
            }
            _ => {}
        }
        // SAFETY: x and y hold grid.len() values of this backend, `data` holds [M̂ | Â] of
        // the grid's degree, atomics exist where asked for (all checked above).
        unsafe {
            self.backend.tensor_cell_apply(
                grid,
                coef,
                &self.data,
                x.buffer()?,
                y.buffer_mut()?,
                scatter,
            )
        }
    }

    /// `y = A x` in one pass with `tiling` (boundary rows the identity).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a grid of another degree or a tiling the backend
    /// refuses, and the errors of [`boundary`] for the vectors.
    pub(crate) fn tile_apply(
        &self,
        grid: Grid,
        coef: [T; 2],
        tiling: Tiling,
        x: &Vector<B, T>,
        y: &mut Vector<B, T>,
    ) -> Result<()> {
        const OP: &str = "TensorOperator::apply";
        check_grid(OP, grid)?;
        check_degree_matches(OP, self.degree, grid)?;
        check_grid_vectors(OP, &self.backend, grid, x, y)?;
        let checked = self
            .backend
            .tensor_tiling::<T>(grid, Some(tiling))
            .map_err(|why| Error::invalid(OP, "tiling", why))?;
        // SAFETY: x and y hold grid.len() values of this backend, `data` holds [M̂ | Â] of
        // the grid's degree, the tiling is one the backend returned for this grid.
        unsafe {
            self.backend.tensor_tile_apply(
                grid,
                coef,
                checked,
                &self.data,
                x.buffer()?,
                y.buffer_mut()?,
            )
        }
    }
}

/// `[M_p | A_p | S | λ]` of the reference vertex patch (patch matrices, generalized
/// eigenvectors and eigenvalues) on a device: the data of the patch-smoothing step, with
/// the form its kernel takes there.
pub(crate) struct PatchData<B: TensorOps, T: Scalar> {
    backend: B,
    dim: usize,
    degree: usize,
    /// The split form ([`PatchForm::Split`]): [`smooth`](Self::smooth) needs `A x`.
    split: bool,
    data: B::Buffer<T>,
}

impl<B: TensorOps, T: Scalar> PatchData<B, T> {
    /// The patch data of `basis` for grids of dimension `dim`, in `form` ([`PatchForm::Auto`]:
    /// fused where it fits the device, else split).
    ///
    /// # Errors
    /// [`Error::Unsupported`] where the kernel of the form asked for (with `Auto`, of both
    /// forms) exceeds the device's on-chip memory for `T` (with the bytes it needs), or the
    /// backend lacks `T`; device errors.
    pub(crate) fn new(backend: &B, dim: usize, basis: &Basis1d, form: PatchForm) -> Result<Self> {
        backend.require::<T>("the vertex-patch smoother")?;
        let grid = Grid {
            dim,
            degree: basis.degree,
            cells: 2,
        };
        let fits = |split: bool| backend.tensor_patch_fits::<T>(grid, split);
        let split = match form {
            PatchForm::Fused => fits(false).map(|()| false),
            PatchForm::Split => fits(true).map(|()| true),
            PatchForm::Auto => fits(false)
                .map(|()| false)
                .or_else(|_| fits(true).map(|()| true)),
        };
        let split = split.map_err(|bytes| Error::Unsupported {
            backend: backend.info().device.clone(),
            what: format!(
                "the vertex-patch smoother for Q{} in {dim}D in {}",
                basis.degree,
                T::DTYPE.name()
            ),
            reason: format!(
                "its {} kernel needs {bytes} bytes of shared memory per patch, the device \
                 allows {}; use {}the Chebyshev smoother or a lower degree",
                if form == PatchForm::Fused {
                    "fused"
                } else {
                    "split"
                },
                backend.info().max_shared_bytes,
                if form == PatchForm::Fused && fits(true).is_ok() {
                    "the split form (PatchForm::Split, which fits), "
                } else {
                    ""
                }
            ),
        })?;
        let (pm, pa) = basis.patch_matrices();
        let (s, lambda) = basis.patch_eigen()?;
        let values: Vec<T> = pm
            .iter()
            .chain(&pa)
            .chain(&s)
            .chain(&lambda)
            .map(|&v| T::from_f64(v))
            .collect();
        Ok(PatchData {
            backend: backend.clone(),
            dim,
            degree: basis.degree,
            split,
            data: backend.upload(&values)?,
        })
    }

    /// Whether the step takes the split form: [`smooth`](Self::smooth) then needs `A x`.
    pub(crate) fn split(&self) -> bool {
        self.split
    }

    /// One colour of the multiplicative vertex-patch smoother on `grid`: for every patch `j`
    /// of `colour`, `x_j += A_j⁻¹ (b_j − Ā_j x̄_j)`. The split form reads the residual as
    /// `b − ax`, where `ax` must be `A x` of this `x` (the level's operator; boundary values
    /// of `x` read as zero, as the fused kernel reads them); the fused form ignores `ax`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a grid of another dimension or degree, a colour out
    /// of range, or no `ax` in the split form; [`Error::DimensionMismatch`] and
    /// [`Error::DeviceMismatch`] for `b`, `ax` and `x`.
    pub(crate) fn smooth(
        &self,
        grid: Grid,
        colour: usize,
        coef: [T; 2],
        b: &Vector<B, T>,
        ax: Option<&Vector<B, T>>,
        x: &mut Vector<B, T>,
    ) -> Result<()> {
        const OP: &str = "patch smoother";
        check_grid(OP, grid)?;
        check_degree_matches(OP, self.degree, grid)?;
        if grid.dim != self.dim {
            return Err(Error::invalid(
                OP,
                "grid",
                format!("a {}D grid for {}D patch data", grid.dim, self.dim),
            ));
        }
        if colour >= grid.colours() {
            return Err(Error::invalid(
                OP,
                "colour",
                format!("colour {colour} of {}", grid.colours()),
            ));
        }
        check_grid_vectors(OP, &self.backend, grid, b, x)?;
        let ax = match (self.split, ax) {
            (false, _) => None,
            (true, None) => {
                return Err(Error::invalid(
                    OP,
                    "ax",
                    "the split form reads the residual from A x, and none was given",
                ))
            }
            (true, Some(ax)) => {
                check_grid_vectors(OP, &self.backend, grid, b, ax)?;
                Some(ax.buffer()?)
            }
        };
        // SAFETY: b, x (and ax) hold grid.len() values of this backend; `data` is the patch
        // data of the grid's dimension and degree (checked above).
        unsafe {
            self.backend.tensor_patch_smooth(
                grid,
                colour,
                coef,
                &self.data,
                b.buffer()?,
                ax,
                x.buffer_mut()?,
            )
        }
    }
}

/// A banded 1D matrix on a device: `rows` rows of `width` values, row `i` starting at column
/// `starts[i]`, every band inside `cols` columns. Applied along one direction of a
/// tensor-product array (the multigrid transfers, right-hand sides).
pub(crate) struct Banded<B: TensorOps, T: Scalar> {
    backend: B,
    rows: usize,
    cols: usize,
    width: usize,
    starts: B::Buffer<u32>,
    values: B::Buffer<T>,
}

impl<B: TensorOps, T: Scalar> Banded<B, T> {
    /// From sparse rows (`(column, value)` pairs, columns increasing), keeping each row's
    /// band; starts are clamped so that every band stays inside the `cols` columns.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a column at or past `cols`, or a band wider than
    /// `cols`; device errors.
    pub(crate) fn from_rows(
        backend: &B,
        rows: &[BTreeMap<usize, f64>],
        cols: usize,
    ) -> Result<Self> {
        const OP: &str = "Banded::from_rows";
        let band = |r: &BTreeMap<usize, f64>| {
            let lo = r.keys().next().copied().unwrap_or(0);
            let hi = r.keys().next_back().copied().unwrap_or(0);
            (lo, hi)
        };
        if let Some(c) = rows
            .iter()
            .filter_map(|r| r.keys().next_back())
            .find(|&&c| c >= cols)
        {
            return Err(Error::invalid(
                OP,
                "rows",
                format!("column {c} of a matrix of {cols} columns"),
            ));
        }
        let width = rows
            .iter()
            .map(|r| band(r).1 + 1 - band(r).0)
            .max()
            .unwrap_or(1);
        if width > cols {
            return Err(Error::invalid(
                OP,
                "rows",
                format!("a band of {width} columns in a matrix of {cols}"),
            ));
        }
        let mut starts = Vec::with_capacity(rows.len());
        let mut values = Vec::with_capacity(rows.len() * width);
        for r in rows {
            let s = band(r).0.min(cols - width);
            starts.push(s as u32);
            values.extend((s..s + width).map(|j| T::from_f64(r.get(&j).copied().unwrap_or(0.0))));
        }
        Ok(Banded {
            backend: backend.clone(),
            rows: rows.len(),
            cols,
            width,
            starts: backend.upload(&starts)?,
            values: backend.upload(&values)?,
        })
    }

    /// `y = B x` along `dir` of `x` with extents `ext` (`ext[dir] = cols`); `y` gets the
    /// extents of `x` with `ext[dir] = rows`. `x` and `y` may be longer than their arrays
    /// (scratch vectors).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `dir` ≥ 3 or vectors shorter than their arrays,
    /// [`Error::DimensionMismatch`] if `ext[dir]` is not `cols`, [`Error::DeviceMismatch`].
    pub(crate) fn apply(
        &self,
        ext: [usize; 3],
        dir: usize,
        x: &Vector<B, T>,
        y: &mut Vector<B, T>,
    ) -> Result<()> {
        const OP: &str = "Banded::apply";
        if dir >= 3 {
            return Err(Error::invalid(
                OP,
                "dir",
                format!("{dir}: must be 0, 1 or 2"),
            ));
        }
        check_len(OP, "ext[dir]", self.cols, ext[dir])?;
        let input: usize = ext.iter().product();
        let output = input / self.cols.max(1) * self.rows;
        for (name, need, len) in [("x", input, x.len()), ("y", output, y.len())] {
            if len < need {
                return Err(Error::invalid(
                    OP,
                    name,
                    format!("{len} values, fewer than the {need} of its array"),
                ));
            }
        }
        check_device(OP, &self.backend, x.backend())?;
        check_device(OP, &self.backend, y.backend())?;
        // SAFETY: every band lies inside `cols = ext[dir]` columns (from_rows), x holds at
        // least Π ext values and y the same with ext[dir] = rows, on this backend (checked).
        unsafe {
            self.backend.tensor_line_apply(
                ext,
                dir,
                self.rows,
                self.width,
                &self.starts,
                &self.values,
                x.buffer()?,
                y.buffer_mut()?,
            )
        }
    }
}

/// Checks that `grid` has the degree its data was made for.
fn check_degree_matches(op: &'static str, degree: usize, grid: Grid) -> Result<()> {
    if grid.degree == degree {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            "grid",
            format!("degree {} for data of degree {degree}", grid.degree),
        ))
    }
}

/// Checks that `x` and `y` are grid vectors on `backend`'s device.
fn check_grid_vectors<B: VectorOps, T: Scalar>(
    op: &'static str,
    backend: &B,
    grid: Grid,
    x: &Vector<B, T>,
    y: &Vector<B, T>,
) -> Result<()> {
    check_len(op, "x", grid.len(), x.len())?;
    check_len(op, "y", grid.len(), y.len())?;
    check_device(op, backend, x.backend())?;
    check_device(op, backend, y.backend())
}

/// Values of [`l2_table`] for `grid`: `q n` basis values, `q` weights, `cells q` values of
/// the exact solution's factor (`n = k + 1`, `q = k + 2`).
pub(crate) fn l2_table_len(grid: Grid) -> usize {
    let (n, q) = (grid.degree + 1, grid.degree + 2);
    q * n + q + grid.cells * q
}

/// The data of the L² error on `grid` against `u(x) = Π g(x_d)` by `q = k + 2` Gauss points
/// per direction and cell: `[φ | w | G]` with `φ[p n + i]` the Lagrange basis function `i`
/// (Gauss–Lobatto nodes) at point `p`, `w[p]` the weight times `h/2`, and `G[c q + p] =
/// g(x)` at point `p` of cell `c` along one direction (`u` is separable: `q` evaluations of
/// `g` per cell and direction, not `q^d` per cell).
pub(crate) fn l2_table(grid: Grid, g: &(impl Fn(f64) -> f64 + Sync)) -> Result<Vec<f64>> {
    use rayon::prelude::*;
    let basis = Basis1d::new(grid.degree)?;
    let q = grid.degree + 2;
    let (gx, gw) = crate::quadrature::gauss_legendre(q);
    let h = 1.0 / grid.cells as f64;
    let mut table = Vec::with_capacity(l2_table_len(grid));
    for &x in &gx {
        table.extend(basis.values_at(0.5 * (x + 1.0)));
    }
    table.extend(gw.iter().map(|w| 0.5 * w * h));
    let values: Vec<f64> = (0..grid.cells * q)
        .into_par_iter()
        .map(|i| g((((i / q) as f64) + 0.5 * (gx[i % q] + 1.0)) * h))
        .collect();
    table.extend(values);
    Ok(table)
}

/// `‖u_h − u‖²` over the whole grid: [`l2_cell_error_sq`] of every cell, in parallel.
pub(crate) fn l2_error_sq<T: Scalar>(grid: Grid, table: &[T], uh: &[T]) -> f64 {
    use rayon::prelude::*;
    (0..grid.cells.pow(grid.dim as u32))
        .into_par_iter()
        .map(|c| l2_cell_error_sq(grid, table, uh, c))
        .sum()
}

/// `∫_K (u_h − u)²` on cell `c` (x fastest) by the Gauss points of [`l2_table`], in f64:
/// for each point plane `pz` the nodal values are contracted along z, then y, then x (the
/// device kernel's order). `table` and `uh` as [`TensorOps::tensor_l2_partials`] takes them.
pub(crate) fn l2_cell_error_sq<T: Scalar>(grid: Grid, table: &[T], uh: &[T], c: usize) -> f64 {
    const N: usize = crate::tensor::basis::MAX_DEGREE + 1;
    let (k, n, q, n1, cells) = (
        grid.degree,
        grid.degree + 1,
        grid.degree + 2,
        grid.n1(),
        grid.cells,
    );
    let phi = |p: usize, i: usize| table[p * n + i].as_f64();
    let w = |p: usize| table[q * n + p].as_f64();
    let gval = |cell: usize, p: usize| table[q * n + q + cell * q + p].as_f64();
    let (cx, cy, cz) = (c % cells, (c / cells) % cells, c / (cells * cells));
    let origin = ((cz * k) * n1 + cy * k) * n1 + cx * k;
    let (nz, qz) = if grid.dim == 3 { (n, q) } else { (1, 1) };
    let mut sum = 0.0;
    let mut plane = [0.0; N * N];
    let mut row = [0.0; N];
    for pz in 0..qz {
        // The nodal values contracted along z at point plane pz.
        for y in 0..n {
            for x in 0..n {
                let mut v = 0.0;
                for z in 0..nz {
                    let f = if grid.dim == 3 { phi(pz, z) } else { 1.0 };
                    v += f * uh[origin + (z * n1 + y) * n1 + x].as_f64();
                }
                plane[y * n + x] = v;
            }
        }
        let (gz, wz) = if grid.dim == 3 {
            (gval(cz, pz), w(pz))
        } else {
            (1.0, 1.0)
        };
        for py in 0..q {
            for x in 0..n {
                row[x] = (0..n).map(|y| phi(py, y) * plane[y * n + x]).sum();
            }
            let gyz = gval(cy, py) * gz;
            let wyz = w(py) * wz;
            for px in 0..q {
                let u: f64 = (0..n).map(|x| phi(px, x) * row[x]).sum();
                let e = u - gval(cx, px) * gyz;
                sum += w(px) * wyz * e * e;
            }
        }
    }
    sum
}
