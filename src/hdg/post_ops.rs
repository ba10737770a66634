//! The element-independent operators of the HDG post-processing (split into blocks where
//! `N(P+1)` exceeds the batched size limit), built once per pipeline.

use crate::batched::{Batch, Status, MAX_DIM};
use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::ops::HdgOps;
use crate::hdg::reference::{PostProcessMatrices, ReferenceMatrices};
use crate::hdg::stacks::{stack, Stack};
use crate::scalar::Element;
use crate::vector::DeviceIndex;

/// The block operators (when split) and `e0 e0ᵀ` of the post-processing.
pub(super) type PostOperators<B, V> = (Option<SplitPost<B, V>>, Batch<B, V>);

/// The operators of the post-processing that do not depend on the element: the block
/// stacks and placements when `N(P+1)` exceeds [`MAX_DIM`] (or `split`), and `e0 e0ᵀ`
/// (`N(P+1) x N_u`, or `N(P) x N_u` by blocks) that copies the mean of `u`.
pub(super) fn post_process_operators<B: Backend + HdgOps, V: Element>(
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
pub(super) fn check_spd(status: &Status<impl Backend>, what: &str) -> Result<()> {
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
/// `Hdg::post_process`).
pub(super) struct SplitPost<B: Backend + HdgOps, V: Element> {
    pub(super) n1: usize,
    pub(super) n2: usize,
    pub(super) s11: Batch<B, V>,
    pub(super) s12: Batch<B, V>,
    pub(super) s22: Batch<B, V>,
    pub(super) r1: Batch<B, V>,
    pub(super) r2: Batch<B, V>,
    /// `u*[e n + j] = x₁[e n₁ + j]` for `j < n₁` (else an out-of-range index).
    pub(super) place1: DeviceIndex<B>,
    /// `u*[e n + j] = x₂[e n₂ + j − n₁]` for `j ≥ n₁`.
    pub(super) place2: DeviceIndex<B>,
}

impl<B: Backend + HdgOps, V: Element> SplitPost<B, V> {
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
            place1: DeviceIndex::upload(backend, &p1)?,
            place2: DeviceIndex::upload(backend, &p2)?,
        })
    }
}
