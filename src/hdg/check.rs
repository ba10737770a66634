//! [`HdgCheck`]: the HDG stages as [`Check`]s for the conformance table: each stage on any
//! backend and precision against the CPU in f64 on the same perturbed mesh (its points
//! rounded to the precision of the run, so that both see the same geometry).

use crate::bundle::Backend;
use crate::error::Result;
use crate::hdg::ops::HdgOps;
use crate::hdg::{Hdg, HdgParams, Problem};
use crate::mesh::tri::{square_tags, Diagonal, TriMesh};
use crate::random::random_vec;
use crate::scalar::{DType, Scalar};
use crate::vector::Vector;
use crate::verify::{round_to, Check, CheckOn};

/// An HDG stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HdgStage {
    /// The local solvers: `𝕌` and `Kᵉ` (coefficient kernels, GEMMs, batched Cholesky).
    Local,
    /// The trace system: the block-ELL values of `K` and `F` (assembly without atomics, edge
    /// lists by sort-by-key).
    Assembly,
    /// `u`, `q` and the post-processed `u*` from random trace values.
    Recovery,
}

/// One HDG stage at degree `degree` on an `n x n` perturbed square (Neumann on one side,
/// `τ = 1.5`, `λ = 1`), element matrices and arithmetic in the precision of the run. (Mixed
/// precision, f32 storage with f64 arithmetic, is the f32 storage path of these kernels
/// with the f64 batched kernels: the tests compare its errors with f64.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HdgCheck {
    /// The stage.
    pub stage: HdgStage,
    /// `P`.
    pub degree: usize,
    /// Squares per side.
    pub n: usize,
}

impl HdgCheck {
    /// The checks of the conformance table: every stage at P = 2 and 5.
    pub fn standard() -> Vec<HdgCheck> {
        let mut out = Vec::new();
        for stage in [HdgStage::Local, HdgStage::Assembly, HdgStage::Recovery] {
            for degree in [2, 5] {
                out.push(HdgCheck {
                    stage,
                    degree,
                    n: 7,
                });
            }
        }
        out
    }

    fn mesh(&self, inputs: DType) -> Result<TriMesh> {
        let mut mesh = TriMesh::unit_square(self.n, Diagonal::Alternating, 0.2, 11)?;
        for p in &mut mesh.points {
            let r = round_to(p, inputs);
            *p = [r[0], r[1]];
        }
        Ok(mesh)
    }

    fn output<B: Backend + HdgOps, V: Scalar, S: Scalar>(
        &self,
        b: &B,
        inputs: DType,
    ) -> Result<Vec<f64>> {
        let mesh = self.mesh(inputs)?;
        let mut params = HdgParams::new(self.degree);
        params.tau = 1.5;
        params.lambda = 1.0;
        let hdg = Hdg::<B, V, S>::new(b, &mesh, params, &[square_tags::RIGHT])?;
        let widen = |v: Vec<V>| v.into_iter().map(|x| x.as_f64()).collect::<Vec<f64>>();
        let local = hdg.local_solvers()?;
        if self.stage == HdgStage::Local {
            let mut out = widen(local.u_map().to_vec()?);
            if let Some(ke) = local.ke() {
                out.extend(widen(ke.to_vec()?));
            }
            return Ok(out);
        }
        let f = |x: f64, y: f64| (3.0 * x).sin() * (2.0 * y).cos() + x * y;
        let flux = |x: f64, y: f64, n: [f64; 2]| x * n[0] - y * n[1];
        let problem = Problem {
            rhs: &f,
            dirichlet: &f,
            flux: Some(&flux),
        };
        let load = hdg.load(&local, &problem)?;
        if self.stage == HdgStage::Assembly {
            let system = hdg.assemble(&local, &load)?;
            let k = system.k.to_host()?.to_csr()?;
            let mut out: Vec<f64> = k.values().iter().map(|v| v.as_f64()).collect();
            out.extend(system.rhs.to_vec()?.iter().map(|v| v.as_f64()));
            return Ok(out);
        }
        let lambda = round_to(&random_vec::<f64>(hdg.dofs(), 5), inputs);
        let lambda: Vec<S> = lambda.iter().map(|&v| S::from_f64(v)).collect();
        let mut fields = hdg.recover(&local, &load, &Vector::from_slice(b, &lambda)?)?;
        hdg.post_process(&mut fields)?;
        let mut out = widen(fields.u.to_vec()?);
        out.extend(widen(fields.q.to_vec()?));
        if let Some(us) = &fields.u_star {
            out.extend(widen(us.to_vec()?));
        }
        Ok(out)
    }
}

impl Check for HdgCheck {
    fn name(&self) -> String {
        let stage = match self.stage {
            HdgStage::Local => "hdg local solvers",
            HdgStage::Assembly => "hdg assembly K, F",
            HdgStage::Recovery => "hdg recovery u, q, u*",
        };
        format!("{stage} P={}", self.degree)
    }

    /// The local solves amplify round-off by the condition of `Z⁻¹`, the recovery by that
    /// of the post-processing matrices: `(4 N_u)²` (measured errors: 1-4 x 10⁻⁷ in f32 and
    /// 1-4 x 10⁻¹⁶ in f64 on lavapipe and the CPU, about 1% of the tolerance at P = 5).
    fn terms(&self) -> usize {
        let nu = (self.degree + 1) * (self.degree + 2) / 2;
        16 * nu * nu
    }
}

impl<B: Backend + HdgOps> CheckOn<B> for HdgCheck {
    fn run<T: Scalar>(&self, b: &B, inputs: DType) -> Result<Vec<T>> {
        let out = self.output::<B, T, T>(b, inputs)?;
        Ok(out.into_iter().map(T::from_f64).collect())
    }
}
