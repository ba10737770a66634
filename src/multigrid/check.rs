//! The tensor kernels as conformance checks ([`Check`]): both operators (with each
//! scatter), one patch-smoothing step and both transfers, on random inputs, against the
//! CPU in f64.

use crate::bundle::Backend;
use crate::error::Result;
use crate::operator::LinearOperator;
use crate::random::random_vec;
use crate::scalar::{DType, Scalar};
use crate::tensor::grid::Grid;
use crate::tensor::ops::TensorOps;
use crate::tensor::{OperatorKind, TensorOperator};
use crate::vector::Vector;
use crate::verify::{round_to, Check, CheckOn};

use super::{Multigrid, MultigridParams, PatchForm};

/// Which kernel a [`TensorCheck`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorStage {
    /// The Laplace operator, cell results added by atomics (where the backend has them).
    LaplaceAtomic,
    /// The Laplace operator, cell results added by colours.
    LaplaceColour,
    /// The mass operator.
    Mass,
    /// One step of the vertex-patch smoother (all colours) in the default form.
    Smoother,
    /// One step of the vertex-patch smoother in the split form ([`PatchForm::Split`]: the
    /// operator, then the local solves).
    SmootherSplit,
    /// Prolongation from level 1 to level 2.
    Prolongate,
    /// Restriction from level 2 to level 1.
    Restrict,
}

/// One tensor kernel in dimension `dim` at degree `degree` on level 2 (4 cells per
/// direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorCheck {
    /// The kernel.
    pub stage: TensorStage,
    /// 2 or 3.
    pub dim: usize,
    /// `k`.
    pub degree: usize,
}

impl TensorCheck {
    /// Every kernel in 2D and 3D at `k = 2` and `5`.
    pub fn standard() -> Vec<TensorCheck> {
        use TensorStage::*;
        let mut out = Vec::new();
        for stage in [
            LaplaceAtomic,
            LaplaceColour,
            Mass,
            Smoother,
            SmootherSplit,
            Prolongate,
            Restrict,
        ] {
            for dim in [2, 3] {
                for degree in [2, 5] {
                    out.push(TensorCheck { stage, dim, degree });
                }
            }
        }
        out
    }

    fn grid(&self, cells: usize) -> Grid {
        Grid {
            dim: self.dim,
            degree: self.degree,
            cells,
        }
    }
}

/// Random values on `grid`, rounded to `inputs`, zero on the boundary.
fn random_interior<B: Backend + TensorOps, T: Scalar>(
    b: &B,
    grid: Grid,
    seed: u64,
    inputs: DType,
) -> Result<Vector<B, T>> {
    let values = round_to(&random_vec::<f64>(grid.len(), seed), inputs);
    let values: Vec<T> = values
        .iter()
        .enumerate()
        .map(|(g, &v)| T::from_f64(if grid.on_boundary(g) { 0.0 } else { v }))
        .collect();
    Vector::from_slice(b, &values)
}

impl Check for TensorCheck {
    fn name(&self) -> String {
        let stage = match self.stage {
            TensorStage::LaplaceAtomic => "tensor laplace (atomic)",
            TensorStage::LaplaceColour => "tensor laplace (colours)",
            TensorStage::Mass => "tensor mass",
            TensorStage::Smoother => "patch smoother step",
            TensorStage::SmootherSplit => "patch smoother step (split)",
            TensorStage::Prolongate => "mg prolongation",
            TensorStage::Restrict => "mg restriction",
        };
        format!("{stage} {}D k={}", self.dim, self.degree)
    }

    /// Entries of the operators sum `(2k + 1)^d` products; the smoother's local solves
    /// amplify round-off by the condition of the patch matrices (`~ (2k)^4`).
    fn terms(&self) -> usize {
        let n = (2 * self.degree + 1).pow(self.dim as u32);
        match self.stage {
            TensorStage::Smoother | TensorStage::SmootherSplit => 64 * n * (2 * self.degree).pow(4),
            _ => 16 * n,
        }
    }
}

impl<B: Backend + TensorOps> CheckOn<B> for TensorCheck {
    fn run<T: Scalar>(&self, b: &B, inputs: DType) -> Result<Vec<T>> {
        let fine = self.grid(4);
        match self.stage {
            TensorStage::LaplaceAtomic | TensorStage::LaplaceColour | TensorStage::Mass => {
                let kind = if self.stage == TensorStage::Mass {
                    OperatorKind::Mass
                } else {
                    OperatorKind::Laplace
                };
                let mut op = TensorOperator::<B, T>::new(b, fine, kind)?;
                let atomic = self.stage == TensorStage::LaplaceAtomic && b.tensor_atomic_add::<T>();
                op = op.with_scatter(atomic)?;
                let x = random_interior::<B, T>(b, fine, 21, inputs)?;
                let mut y = Vector::full(b, fine.len(), T::from_f64(f64::NAN))?;
                op.apply(&x, &mut y)?;
                y.to_vec()
            }
            TensorStage::Smoother | TensorStage::SmootherSplit => {
                let params = MultigridParams {
                    patch_form: if self.stage == TensorStage::SmootherSplit {
                        PatchForm::Split
                    } else {
                        PatchForm::Auto
                    },
                    ..Default::default()
                };
                let mg = Multigrid::<B, T>::new(b, self.dim, self.degree, 2, params)?;
                let mut x = random_interior::<B, T>(b, fine, 22, inputs)?;
                let rhs = random_interior::<B, T>(b, fine, 23, inputs)?;
                mg.smooth_once(&mut x, &rhs)?;
                x.to_vec()
            }
            TensorStage::Prolongate | TensorStage::Restrict => {
                let mg = Multigrid::<B, T>::new(
                    b,
                    self.dim,
                    self.degree,
                    2,
                    MultigridParams::default(),
                )?;
                let coarse = self.grid(2);
                if self.stage == TensorStage::Prolongate {
                    let x = random_interior::<B, T>(b, coarse, 24, inputs)?;
                    let mut y = Vector::full(b, fine.len(), T::from_f64(f64::NAN))?;
                    mg.prolongate(2, &x, &mut y)?;
                    y.to_vec()
                } else {
                    let x = random_interior::<B, T>(b, fine, 25, inputs)?;
                    let mut y = Vector::full(b, coarse.len(), T::from_f64(f64::NAN))?;
                    mg.restrict(2, &x, &mut y)?;
                    y.to_vec()
                }
            }
        }
    }
}
