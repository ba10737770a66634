//! The DG kernels as conformance checks ([`Check`]): volume, flux (upwind and central, PEC
//! and absorbing faces), lift, update and the fused stage on random fields over a perturbed
//! cube, against the CPU in f64.

use crate::bundle::Backend;
use crate::dg::ops::DgOps;
use crate::error::Result;
use crate::random::random_vec;
use crate::scalar::{DType, Scalar};
use crate::vector::Vector;
use crate::verify::{round_to, Check, CheckOn};

use super::host::Flux;
use super::maxwell::Maxwell;
use super::setup::TetMesh;

/// Which kernel a [`DgCheck`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DgStage {
    /// The volume curl.
    Volume,
    /// The surface flux (both sides of a face by one unit).
    Flux,
    /// The lift.
    Lift,
    /// The low-storage RK update.
    Update,
    /// The fused stage (volume, flux, lift, update).
    Stage,
}

/// One DG kernel at order `order` with `flux` on the perturbed 2³ cube, the faces on
/// `x = 0` absorbing and the rest PEC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DgCheck {
    /// The kernel.
    pub stage: DgStage,
    /// The order `N`.
    pub order: usize,
    /// The flux.
    pub flux: Flux,
}

impl DgCheck {
    /// Every kernel at `N = 2` and `5` with the upwind flux, and the flux and the fused
    /// stage with the central flux too.
    pub fn standard() -> Vec<DgCheck> {
        use DgStage::*;
        let mut out = Vec::new();
        for order in [2, 5] {
            for stage in [Volume, Flux, Lift, Update, Stage] {
                out.push(DgCheck {
                    stage,
                    order,
                    flux: super::host::Flux::Upwind,
                });
            }
            for stage in [Flux, Stage] {
                out.push(DgCheck {
                    stage,
                    order,
                    flux: super::host::Flux::Central,
                });
            }
        }
        out
    }
}

/// The perturbed `n³` cube with the faces on `x = 0` tagged 7 and absorbing.
fn cube_with_absorbing_side(n: usize) -> Result<TetMesh> {
    let mut mesh = TetMesh::unit_cube(n, 0.1, 3)?;
    mesh.tag_boundary(7, |p| p[0] == 0.0)?;
    mesh.with_absorbing(&[7])
}

fn random<B: Backend + DgOps, T: Scalar>(
    b: &B,
    len: usize,
    seed: u64,
    inputs: DType,
) -> Result<Vector<B, T>> {
    let v: Vec<T> = round_to(&random_vec::<f64>(len, seed), inputs)
        .iter()
        .map(|&x| T::from_f64(x))
        .collect();
    Vector::from_slice(b, &v)
}

impl Check for DgCheck {
    fn name(&self) -> String {
        let stage = match self.stage {
            DgStage::Volume => "dg volume",
            DgStage::Flux => "dg flux",
            DgStage::Lift => "dg lift",
            DgStage::Update => "dg update",
            DgStage::Stage => "dg fused stage",
        };
        let flux = match self.flux {
            Flux::Upwind => "upwind",
            Flux::Central => "central",
        };
        format!("{stage} N={} {flux}", self.order)
    }

    /// The volume term sums `3 Np` products per derivative, the lift `4 Nfp`; the geometric
    /// factors are rounded to `T` as well.
    fn terms(&self) -> usize {
        let np = (self.order + 1) * (self.order + 2) * (self.order + 3) / 6;
        match self.stage {
            DgStage::Update => 8,
            DgStage::Flux => 64,
            _ => 16 * np,
        }
    }
}

impl<B: Backend + DgOps> CheckOn<B> for DgCheck {
    fn run<T: Scalar>(&self, b: &B, inputs: DType) -> Result<Vec<T>> {
        let mesh = cube_with_absorbing_side(2)?;
        let dg = Maxwell::<B, T>::new(b, &mesh, self.order, self.flux)?;
        let n = dg.dofs();
        let fl = 6 * dg.shape().face_len();
        let nan = T::from_f64(f64::NAN);
        let q = random::<B, T>(b, n, 31, inputs)?;
        let coef = [-0.4, 0.7, 0.01];
        match self.stage {
            DgStage::Volume => {
                let mut out = Vector::full(b, n, nan)?;
                dg.volume(&q, &mut out)?;
                out.to_vec()
            }
            DgStage::Flux => {
                let mut out = Vector::full(b, fl, nan)?;
                dg.surface_flux(&q, &mut out)?;
                out.to_vec()
            }
            DgStage::Lift => {
                let flux = random::<B, T>(b, fl, 32, inputs)?;
                let mut out = q;
                dg.lift(&flux, &mut out)?;
                out.to_vec()
            }
            DgStage::Update => {
                let rhs = random::<B, T>(b, n, 33, inputs)?;
                let mut res = random::<B, T>(b, n, 34, inputs)?;
                let mut out = q;
                dg.update(coef, &rhs, &mut res, &mut out)?;
                out.to_vec()
            }
            DgStage::Stage => {
                let mut res = random::<B, T>(b, n, 35, inputs)?;
                let mut out = Vector::full(b, n, nan)?;
                dg.fused_stage(coef, &q, &mut res, &mut out)?;
                let mut all = res.to_vec()?;
                all.extend(out.to_vec()?);
                Ok(all)
            }
        }
    }
}
