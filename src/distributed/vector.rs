//! `DistVector`: the owned rows of a distributed vector on this rank's device, with room for
//! its ghost rows (filled by the halo exchange of a distributed SpMV).

use std::cell::RefCell;
use std::rc::Rc;

use super::comm::{from_bytes, to_bytes};
use super::layout::Layout;
use crate::bundle::Backend;
use crate::error::{check_len, Error, Result};
use crate::scalar::{Element, Scalar};
use crate::vector::Vector;

/// A vector distributed by rows: this rank's owned entries (a [`Vector`] on its device) and
/// its ghost entries (copies of rows owned elsewhere, valid after a distributed SpMV read
/// them). Reductions ([`dot`](Self::dot), [`nrm2`](Self::nrm2)) are global and identical on
/// every rank; element-wise operations are local.
pub struct DistVector<B: Backend, T: Element> {
    layout: Rc<Layout>,
    owned: Vector<B, T>,
    pub(crate) ghost: RefCell<Option<Vector<B, T>>>,
}

impl<B: Backend, T: Element> std::fmt::Debug for DistVector<B, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DistVector(rank {}: {} of {} rows, {} ghosts)",
            self.layout.comm.rank(),
            self.layout.owned_len(),
            self.layout.global_len(),
            self.layout.ghost_len()
        )
    }
}

impl<B: Backend, T: Element> DistVector<B, T> {
    /// Zeros with `layout`'s distribution on `backend`.
    ///
    /// # Errors
    /// Device errors.
    pub fn zeros(backend: &B, layout: &Rc<Layout>) -> Result<Self> {
        Self::from_owned(layout, Vector::zeros(backend, layout.owned_len())?)
    }

    /// The distributed vector whose owned rows are `owned`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `owned` does not have the layout's owned length.
    pub fn from_owned(layout: &Rc<Layout>, owned: Vector<B, T>) -> Result<Self> {
        check_len(
            "DistVector::from_owned",
            "owned",
            layout.owned_len(),
            owned.len(),
        )?;
        Ok(DistVector {
            layout: layout.clone(),
            owned,
            ghost: RefCell::new(None),
        })
    }

    /// This rank's rows of a vector every rank holds whole (`global` in global row order).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `global` is not of the global length.
    pub fn from_global(backend: &B, layout: &Rc<Layout>, global: &[T]) -> Result<Self> {
        check_len(
            "DistVector::from_global",
            "global",
            layout.global_len(),
            global.len(),
        )?;
        let mine: Vec<T> = layout.owned.iter().map(|&g| global[g]).collect();
        Self::from_owned(layout, Vector::from_slice(backend, &mine)?)
    }

    /// The layout.
    pub fn layout(&self) -> &Rc<Layout> {
        &self.layout
    }

    /// The owned rows.
    pub fn owned(&self) -> &Vector<B, T> {
        &self.owned
    }

    /// The owned rows, for local element-wise work.
    pub fn owned_mut(&mut self) -> &mut Vector<B, T> {
        &mut self.owned
    }

    /// The owned rows, the distribution dropped.
    pub fn into_owned(self) -> Vector<B, T> {
        self.owned
    }

    /// Owned rows (local length).
    pub fn owned_len(&self) -> usize {
        self.owned.len()
    }

    /// Global length.
    pub fn global_len(&self) -> usize {
        self.layout.global_len()
    }

    /// The whole vector in global row order on rank `root` (`None` elsewhere). Collective.
    ///
    /// # Errors
    /// Device errors (agreed: every rank returns the same error).
    pub fn gather(&self, root: usize) -> Result<Option<Vec<T>>> {
        let comm = &self.layout.comm;
        let mine = comm.agree(self.owned.to_vec())?;
        let mut bytes = to_bytes(&mine);
        // Global ids travel with the values (partitions need not be contiguous).
        let ids: Vec<u64> = self.layout.owned.iter().map(|&g| g as u64).collect();
        bytes.extend(to_bytes(&ids));
        let Some(parts) = comm.gather_bytes(&bytes, root) else {
            return Ok(None);
        };
        let mut out = vec![T::default(); self.global_len()];
        let width = std::mem::size_of::<T>() + 8;
        for part in parts {
            let n = part.len() / width;
            let values: Vec<T> = from_bytes(&part[..n * std::mem::size_of::<T>()]);
            let ids: Vec<u64> = from_bytes(&part[n * std::mem::size_of::<T>()..]);
            for (v, g) in values.into_iter().zip(ids) {
                out[g as usize] = v;
            }
        }
        Ok(Some(out))
    }

    /// Checks that `other` has this vector's distribution.
    pub(crate) fn check_layout<U: Element>(
        &self,
        op: &'static str,
        other: &DistVector<B, U>,
    ) -> Result<()> {
        if self.layout.same_as(&other.layout) {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                op,
                name: "layout",
                reason: "the vectors are distributed differently (different layouts)".into(),
            })
        }
    }
}

impl<B: Backend, T: Scalar> DistVector<B, T> {
    /// A copy (owned rows).
    ///
    /// # Errors
    /// Device errors.
    pub fn try_clone(&self) -> Result<Self> {
        Self::from_owned(&self.layout, self.owned.try_clone()?)
    }

    /// The global dot product `self · y`, the same on every rank. Collective.
    ///
    /// # Errors
    /// Different layouts; device errors.
    pub fn dot(&self, y: &Self) -> Result<T> {
        self.check_layout("DistVector::dot", y)?;
        let local = self.owned.dot(&y.owned)?;
        Ok(T::from_f64(self.layout.comm.sum_scalar(local.as_f64())))
    }

    /// The global 2-norm, the same on every rank. Collective.
    ///
    /// # Errors
    /// Device errors.
    pub fn nrm2(&self) -> Result<T> {
        let local = self.owned.dot(&self.owned)?.as_f64();
        Ok(T::from_f64(self.layout.comm.sum_scalar(local).sqrt()))
    }

    /// `self = alpha x + beta self` (local).
    ///
    /// # Errors
    /// Different layouts; device errors.
    pub fn axpby(&mut self, alpha: T, x: &Self, beta: T) -> Result<()> {
        self.check_layout("DistVector::axpby", x)?;
        self.owned.axpby(alpha, &x.owned, beta)
    }

    /// `self += alpha x` (local).
    ///
    /// # Errors
    /// Different layouts; device errors.
    pub fn axpy(&mut self, alpha: T, x: &Self) -> Result<()> {
        self.check_layout("DistVector::axpy", x)?;
        self.owned.axpy(alpha, &x.owned)
    }

    /// `self = x` (local).
    ///
    /// # Errors
    /// Different layouts; device errors.
    pub fn copy_from(&mut self, x: &Self) -> Result<()> {
        self.check_layout("DistVector::copy_from", x)?;
        self.owned.copy_from(&x.owned)
    }

    /// Every owned entry set to `value`.
    ///
    /// # Errors
    /// Device errors.
    pub fn fill(&mut self, value: T) -> Result<()> {
        self.owned.fill(value)
    }
}

impl<B: Backend, T: Scalar> crate::solver::space::KrylovVector<T> for DistVector<B, T> {
    fn zeros_like(&self) -> Result<Self> {
        DistVector::zeros(self.owned.backend(), &self.layout)
    }
    fn duplicate(&self) -> Result<Self> {
        self.try_clone()
    }
    fn dot(&self, y: &Self) -> Result<T> {
        DistVector::dot(self, y)
    }
    fn dot2(&self, a: &Self, b: &Self) -> Result<(T, T)> {
        self.check_layout("DistVector::dot2", a)?;
        self.check_layout("DistVector::dot2", b)?;
        let local = [
            self.owned.dot(&a.owned)?.as_f64(),
            self.owned.dot(&b.owned)?.as_f64(),
        ];
        let g = self.layout.comm.sum(&local);
        Ok((T::from_f64(g[0]), T::from_f64(g[1])))
    }
    fn norm(&self) -> Result<f64> {
        Ok(self.nrm2()?.as_f64())
    }
    fn axpy(&mut self, alpha: T, x: &Self) -> Result<()> {
        DistVector::axpy(self, alpha, x)
    }
    fn axpby(&mut self, alpha: T, x: &Self, beta: T) -> Result<()> {
        DistVector::axpby(self, alpha, x, beta)
    }
    fn copy_from(&mut self, x: &Self) -> Result<()> {
        DistVector::copy_from(self, x)
    }
    fn fill(&mut self, value: T) -> Result<()> {
        DistVector::fill(self, value)
    }
    fn scale(&mut self, alpha: T) -> Result<()> {
        self.owned.scale(alpha)
    }
    fn global_len(&self) -> usize {
        self.layout.global_len()
    }
    /// Classical Gram–Schmidt applied twice: two global sums whatever the basis size.
    fn orthogonalize(&mut self, basis: &[Self]) -> Result<Vec<f64>> {
        let mut h = vec![0.0; basis.len()];
        for _pass in 0..2 {
            let mut local = Vec::with_capacity(basis.len());
            for vi in basis {
                local.push(vi.owned.dot(&self.owned)?.as_f64());
            }
            let g = self.layout.comm.sum(&local);
            for ((vi, &gi), hi) in basis.iter().zip(&g).zip(h.iter_mut()) {
                self.owned.axpy(T::from_f64(-gi), &vi.owned)?;
                *hi += gi;
            }
        }
        Ok(h)
    }
    fn shows_progress(&self) -> bool {
        self.layout.comm.is_root()
    }
    fn finish_report(
        &self,
        report: crate::solver::report::SolveReport,
    ) -> crate::solver::report::SolveReport {
        let slowest = self.layout.comm.max(report.time.as_secs_f64());
        crate::solver::report::SolveReport {
            time: std::time::Duration::from_secs_f64(slowest),
            ..report
        }
    }
}

/// The distributed CG of the host form: local updates and dots on the owned parts, one
/// global sum for the three scalars.
impl<B: Backend, T: Scalar> crate::solver::cg::CgVector<T> for DistVector<B, T> {
    const COLLECTIVE: bool = true;

    fn cg_update(alpha: T, p: &Self, q: &Self, x: &mut Self, r: &mut Self) -> Result<T> {
        crate::vector::cg_update(alpha, &p.owned, &q.owned, &mut x.owned, &mut r.owned)
    }

    fn local_dot(&self, y: &Self) -> Result<T> {
        self.owned.dot(&y.owned)
    }

    fn sum(&self, local: [f64; 3]) -> [f64; 3] {
        let g = self.layout.comm.sum(&local);
        [g[0], g[1], g[2]]
    }
}
