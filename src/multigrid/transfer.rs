//! Grid transfer between levels `l − 1` and `l`: interpolation of the coarse `Q_k` function
//! on the fine grid (prolongation) and its transpose (restriction), matrix-free as three
//! (two in 2D) banded 1D matrices applied direction by direction.

use std::collections::BTreeMap;

use crate::bundle::Backend;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::tensor::grid::Grid;
use crate::tensor::ops::{Banded, TensorOps};
use crate::tensor::Basis1d;
use crate::vector::Vector;

/// Prolongation and restriction between a coarse grid and its refinement.
pub(crate) struct Transfer<B: Backend + TensorOps, T: Scalar> {
    pub(crate) coarse: Grid,
    pub(crate) fine: Grid,
    prolong: Banded<B, T>,
    restrict: Banded<B, T>,
}

impl<B: Backend + TensorOps, T: Scalar> Transfer<B, T> {
    /// The transfer from `coarse` to its refinement.
    pub(crate) fn new(backend: &B, coarse: Grid, basis: &Basis1d) -> Result<Self> {
        let fine = Grid {
            cells: 2 * coarse.cells,
            ..coarse
        };
        let (k, nc, nf) = (coarse.degree, coarse.n1(), fine.n1());
        let child = basis.child_interpolation();
        let mut p = vec![BTreeMap::new(); nf];
        let mut r = vec![BTreeMap::new(); nc];
        for c in 0..coarse.cells {
            for f in 0..=2 * k {
                for j in 0..=k {
                    // A node on a parent's boundary gets the same value from both parents
                    // (interpolation is continuous): insert, never add.
                    let (i, jc, v) = (2 * k * c + f, k * c + j, child[f * (k + 1) + j]);
                    if v != 0.0 {
                        p[i].insert(jc, v);
                        r[jc].insert(i, v);
                    }
                }
            }
        }
        Ok(Transfer {
            coarse,
            fine,
            prolong: Banded::from_rows(backend, &p, nc)?,
            restrict: Banded::from_rows(backend, &r, nf)?,
        })
    }

    /// Length of the scratch vectors [`prolongate`](Self::prolongate) and
    /// [`restrict`](Self::restrict) need (two of them).
    pub(crate) fn scratch_len(&self) -> usize {
        let (nc, nf) = (self.coarse.n1(), self.fine.n1());
        nc * nf.pow(self.coarse.dim as u32 - 1)
    }

    /// Applies `mat` along every direction, from `from` nodes per direction to `to`.
    fn chain(
        &self,
        mat: &Banded<B, T>,
        from: usize,
        to: usize,
        x: &Vector<B, T>,
        y: &mut Vector<B, T>,
        s: &mut [Vector<B, T>; 2],
    ) -> Result<()> {
        let dim = self.coarse.dim;
        let mut ext = [from, from, if dim == 3 { from } else { 1 }];
        let [s0, s1] = s;
        mat.apply(ext, 0, x, s0)?;
        ext[0] = to;
        if dim == 2 {
            return mat.apply(ext, 1, s0, y);
        }
        mat.apply(ext, 1, s0, s1)?;
        ext[1] = to;
        mat.apply(ext, 2, s1, y)
    }

    /// `fine = P coarse`.
    pub(crate) fn prolongate(
        &self,
        coarse: &Vector<B, T>,
        fine: &mut Vector<B, T>,
        s: &mut [Vector<B, T>; 2],
    ) -> Result<()> {
        self.chain(
            &self.prolong,
            self.coarse.n1(),
            self.fine.n1(),
            coarse,
            fine,
            s,
        )
    }

    /// `coarse = Pᵀ fine`.
    pub(crate) fn restrict(
        &self,
        fine: &Vector<B, T>,
        coarse: &mut Vector<B, T>,
        s: &mut [Vector<B, T>; 2],
    ) -> Result<()> {
        self.chain(
            &self.restrict,
            self.fine.n1(),
            self.coarse.n1(),
            fine,
            coarse,
            s,
        )
    }
}
