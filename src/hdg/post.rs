//! The local post-processing `u*` of degree `P + 1` (Cockburn, Gopalakrishnan & Sayas):
//! directly where its element matrices fit the batched limit, by blocks above it (P = 9).

use crate::backend::Backend;
use crate::batched::{cholesky, cholesky_solve, gemm, Batch, GemmParams, Status, MAX_DIM};
use crate::error::{Error, Result};
use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::pipeline::Hdg;
use crate::hdg::reference::{num_modes, PostProcessMatrices, ReferenceMatrices};
use crate::hdg::stacks::{stack, Stack};
use crate::hdg::stages::Fields;
use crate::scalar::{Element, Scalar};

impl<B: Backend, V: Scalar, S: Scalar> Hdg<B, V, S> {
    /// Stage "post-process": `u*` of degree `P + 1` with `(∇u*, ∇w) = (q, ∇w)` for every
    /// `w` of degree `P + 1` and the mean of `u` (Cockburn, Gopalakrishnan & Sayas 2010):
    /// a batched Cholesky of the element stiffness matrices (with the mean constraint on
    /// the constant mode) and one solve.
    ///
    /// Where `N(P+1)` exceeds the batched limit [`MAX_DIM`] (P = 9: 66 modes), the system
    /// is split into the modes of degree ≤ P and those of degree P + 1 and solved by block
    /// elimination (the Schur complement of the first block), every block within the limit.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming a triangle whose matrix is not positive definite in
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
        let mut out = self.backend.alloc::<V>(count * n)?;
        // SAFETY: gather checks every index against its source (out-of-range entries are
        // left alone: each gather fills its own block); out holds count n values.
        unsafe {
            self.backend.gather(x1.buffer(), &split.place1, &mut out)?;
            self.backend.gather(x2.buffer(), &split.place2, &mut out)?;
        }
        Ok(Batch::from_buffer(&self.backend, count, n, 1, out))
    }
}

/// The block operators (when split) and `e0 e0ᵀ` of the post-processing.
pub(super) type PostOperators<B, V> = (Option<SplitPost<B, V>>, Batch<B, V>);

/// The operators of the post-processing that do not depend on the element: the block
/// stacks and placements when `N(P+1)` exceeds [`MAX_DIM`] (or `split`), and `e0 e0ᵀ`
/// (`N(P+1) x N_u`, or `N(P) x N_u` by blocks) that copies the mean of `u`.
pub(super) fn post_process_operators<B: Backend, V: Element>(
    backend: &B,
    count: usize,
    reference: &ReferenceMatrices,
    post: &PostProcessMatrices,
    split: bool,
) -> Result<PostOperators<B, V>> {
    let (n, nu) = (post.n, reference.nu);
    let split = if split || n > MAX_DIM {
        Some(SplitPost::new(
            backend,
            count,
            &stack(CoefficientKind::S, reference, post),
            &stack(CoefficientKind::R, reference, post),
            nu,
        )?)
    } else {
        None
    };
    let rows = if split.is_some() { nu } else { n };
    let mut e0 = vec![V::from_f64(0.0); rows * nu];
    e0[0] = V::from_f64(1.0);
    Ok((split, Batch::from_slice(backend, 1, rows, nu, &e0)?))
}

/// An error naming the first triangle whose matrix `what` failed its Cholesky factorisation.
fn check_spd(status: &Status<impl Backend>, what: &str) -> Result<()> {
    match status.failures()?.first() {
        Some(&(e, _)) => Err(Error::InvalidArgument {
            op: "hdg post-process",
            name: "mesh",
            reason: format!("the {what} of triangle {e} is not positive definite"),
        }),
        None => Ok(()),
    }
}

/// The reference stacks and placements of the post-processing by blocks (see
/// [`Hdg::post_process`]).
pub(super) struct SplitPost<B: Backend, V: Element> {
    n1: usize,
    n2: usize,
    s11: Batch<B, V>,
    s12: Batch<B, V>,
    s22: Batch<B, V>,
    r1: Batch<B, V>,
    r2: Batch<B, V>,
    /// `u*[e n + j] = x₁[e n₁ + j]` for `j < n₁` (else an out-of-range index).
    place1: B::Buffer<u32>,
    /// `u*[e n + j] = x₂[e n₂ + j − n₁]` for `j ≥ n₁`.
    place2: B::Buffer<u32>,
}

impl<B: Backend, V: Element> SplitPost<B, V> {
    pub(super) fn new(backend: &B, count: usize, s: &Stack, r: &Stack, nu: usize) -> Result<Self> {
        let n = s.rows;
        let (n1, n2) = (nu, n - nu);
        let block = |st: &Stack, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
            let (nr, nc) = (rows.len(), cols.len());
            let mut data = Vec::with_capacity(st.k * nr * nc);
            for c in 0..st.k {
                for i in rows.clone() {
                    for j in cols.clone() {
                        data.push(V::from_f64(st.data[(c * st.rows + i) * st.cols + j]));
                    }
                }
            }
            Batch::from_slice(backend, 1, st.k, nr * nc, &data)
        };
        crate::sparse::to_u32(count * n, "hdg", "post-processing values")?;
        let (mut p1, mut p2) = (vec![u32::MAX; count * n], vec![u32::MAX; count * n]);
        for e in 0..count {
            for j in 0..n {
                if j < n1 {
                    p1[e * n + j] = (e * n1 + j) as u32;
                } else {
                    p2[e * n + j] = (e * n2 + j - n1) as u32;
                }
            }
        }
        Ok(SplitPost {
            n1,
            n2,
            s11: block(s, 0..n1, 0..n1)?,
            s12: block(s, 0..n1, n1..n)?,
            s22: block(s, n1..n, n1..n)?,
            r1: block(r, 0..n1, 0..r.cols)?,
            r2: block(r, n1..n, 0..r.cols)?,
            place1: backend.upload(&p1)?,
            place2: backend.upload(&p2)?,
        })
    }
}
