//! The local post-processing `u*` of degree `P + 1` (Cockburn, Gopalakrishnan & Sayas):
//! directly where its element matrices fit the batched limit, by blocks above it (P = 9).

use crate::batched::{cholesky, cholesky_solve, gemm, Batch, GemmParams};
use crate::bundle::Backend;
use crate::error::Result;
use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::ops::HdgOps;
use crate::hdg::pipeline::Hdg;
use crate::hdg::reference::num_modes;
use crate::hdg::stages::Fields;
use crate::scalar::Scalar;

use super::post_ops::{check_spd, SplitPost};

impl<B: Backend + HdgOps, V: Scalar, S: Scalar> Hdg<B, V, S> {
    /// Stage "post-process": `u*` of degree `P + 1` with `(∇u*, ∇w) = (q, ∇w)` for every
    /// `w` of degree `P + 1` and the mean of `u` (Cockburn, Gopalakrishnan & Sayas 2010):
    /// a batched Cholesky of the element stiffness matrices (with the mean constraint on
    /// the constant mode) and one solve.
    ///
    /// Where `N(P+1)` exceeds the batched limit [`MAX_DIM`](crate::batched::MAX_DIM) (P = 9: 66 modes), the system
    /// is split into the modes of degree ≤ P and those of degree P + 1 and solved by block
    /// elimination (the Schur complement of the first block), every block within the limit.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) naming a triangle whose matrix is not positive definite in
    /// the working precision; device errors.
    pub fn post_process(&self, fields: &mut Fields<B, V>) -> Result<()> {
        let (count, nu) = (self.count(), self.nu());
        let n = num_modes(self.params.degree + 1);
        if let Some(split) = &self.split {
            fields.u_star = Some(self.post_process_split(split, fields)?);
            return Ok(());
        }
        let s = self.element_matrices(CoefficientKind::S, n, n)?;
        let (factor, status) = cholesky::<B, V, S>(s)?;
        check_spd(&status, "post-processing matrix")?;
        let r = self.element_matrices(CoefficientKind::R, n, 2 * nu)?;
        let mut us = Batch::zeros(&self.backend, count, n, 1)?;
        gemm::<B, V, S>(&GemmParams::default(), &r, &fields.q, &mut us)?;
        gemm::<B, V, S>(
            &GemmParams::new(S::ONE, S::ONE),
            &self.mean,
            &fields.u,
            &mut us,
        )?;
        cholesky_solve::<B, V, S>(&factor, &mut us)?;
        fields.u_star = Some(us);
        Ok(())
    }

    /// Uses the post-processing by blocks at any degree (tests compare it with the direct
    /// solve).
    #[cfg(test)]
    pub(super) fn force_split_post_process(&mut self) -> Result<()> {
        use crate::hdg::post_ops::post_process_operators;
        use crate::hdg::reference::{PostProcessMatrices, ReferenceMatrices};
        let (reference, post) = (
            ReferenceMatrices::new(self.params.degree),
            PostProcessMatrices::new(self.params.degree),
        );
        (self.split, self.mean) =
            post_process_operators(&self.backend, self.count(), &reference, &post, true)?;
        Ok(())
    }

    /// The post-processing by blocks: `[A B; Bᵀ C] [x₁; x₂] = [b₁; b₂]` with `A` over the
    /// `N(P)` modes of degree ≤ P (the constant mode and its mean constraint among them) and
    /// `C` over the new modes; `Y = A⁻¹B`, `Σ = C − BᵀY`, `y₁ = A⁻¹b₁`,
    /// `x₂ = Σ⁻¹(b₂ − Bᵀy₁)`, `x₁ = y₁ − Y x₂`.
    fn post_process_split(
        &self,
        split: &SplitPost<B, V>,
        fields: &Fields<B, V>,
    ) -> Result<Batch<B, V>> {
        let (count, nu) = (self.count(), self.nu());
        let (n1, n2) = (split.n1, split.n2);
        let cs = self.coefficients(CoefficientKind::S)?;
        let a = self.combine(&cs, &split.s11, n1, n1)?;
        let b = self.combine(&cs, &split.s12, n1, n2)?;
        let mut schur = self.combine(&cs, &split.s22, n2, n2)?;
        drop(cs);
        let (fa, status) = cholesky::<B, V, S>(a)?;
        check_spd(&status, "post-processing matrix (degree ≤ P block)")?;
        let mut y = b.try_clone()?;
        cholesky_solve::<B, V, S>(&fa, &mut y)?;
        let minus = GemmParams::new(S::from_f64(-1.0), S::ONE);
        gemm::<B, V, S>(&minus.transpose_a(), &b, &y, &mut schur)?;
        let (fs, status) = cholesky::<B, V, S>(schur)?;
        check_spd(&status, "post-processing matrix (Schur complement)")?;
        let cr = self.coefficients(CoefficientKind::R)?;
        let mut x1 = Batch::zeros(&self.backend, count, n1, 1)?;
        gemm::<B, V, S>(
            &GemmParams::default(),
            &self.combine(&cr, &split.r1, n1, 2 * nu)?,
            &fields.q,
            &mut x1,
        )?;
        gemm::<B, V, S>(
            &GemmParams::new(S::ONE, S::ONE),
            &self.mean,
            &fields.u,
            &mut x1,
        )?;
        let mut x2 = Batch::zeros(&self.backend, count, n2, 1)?;
        gemm::<B, V, S>(
            &GemmParams::default(),
            &self.combine(&cr, &split.r2, n2, 2 * nu)?,
            &fields.q,
            &mut x2,
        )?;
        cholesky_solve::<B, V, S>(&fa, &mut x1)?;
        gemm::<B, V, S>(&minus.transpose_a(), &b, &x1, &mut x2)?;
        cholesky_solve::<B, V, S>(&fs, &mut x2)?;
        gemm::<B, V, S>(&minus, &y, &x2, &mut x1)?;
        let n = n1 + n2;
        // Each gather fills its own block (out-of-range indices leave the other alone).
        let mut out = Batch::zeros(&self.backend, count, n, 1)?;
        out.gather_from(&x1, &split.place1)?;
        out.gather_from(&x2, &split.place2)?;
        Ok(out)
    }
}
