//! Jacobi (diagonal scaling) and block-Jacobi (the inverses of the diagonal blocks).

use crate::backend::Cpu;
use crate::batched::Batch;
use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::operator::{LinearOperator, OperatorCost};
use crate::scalar::{Element, Scalar};
use crate::solver::precond::Preconditioner;
use crate::sparse::{BlockEll, Csr};
use crate::vector::{pointwise_mul_dot, Vector};

/// Diagonal scaling `z = D⁻¹ r`; applied fused with `r · z` in PCG.
pub struct Jacobi<B: Backend, S: Scalar> {
    pub(super) inv_diag: Vector<B, S>,
}

impl<B: Backend, S: Scalar> Jacobi<B, S> {
    /// From the diagonal of a host matrix.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first row whose diagonal is zero or not finite.
    pub fn new<V: Element>(backend: &B, a: &Csr<Cpu, V>) -> Result<Self> {
        let diag: Vec<f64> = a.diagonal().iter().map(|v| v.as_f64()).collect();
        Self::from_diagonal(backend, &diag)
    }

    /// From a diagonal given on the host.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_diagonal(backend: &B, diag: &[f64]) -> Result<Self> {
        let mut inv = Vec::with_capacity(diag.len());
        for (i, &d) in diag.iter().enumerate() {
            if d == 0.0 || !d.is_finite() {
                return Err(Error::InvalidArgument {
                    op: "Jacobi::new",
                    name: "diagonal",
                    reason: format!(
                        "row {i} has diagonal {d}: Jacobi needs nonzero finite diagonals"
                    ),
                });
            }
            inv.push(S::from_f64(1.0 / d));
        }
        Ok(Jacobi {
            inv_diag: Vector::from_slice(backend, &inv)?,
        })
    }

    /// `D⁻¹` as a vector.
    pub fn inverse_diagonal(&self) -> &Vector<B, S> {
        &self.inv_diag
    }
}

impl<B: Backend, S: Scalar> Preconditioner<B, S> for Jacobi<B, S> {
    fn size(&self) -> usize {
        self.inv_diag.len()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        z.pointwise_mul(&self.inv_diag, r)
    }
    fn precondition_dot(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<S> {
        pointwise_mul_dot(&self.inv_diag, r, z)
    }
    fn cost(&self) -> OperatorCost {
        let n = self.inv_diag.len() as f64;
        OperatorCost {
            flops: n,
            bytes: 3.0 * n * S::DTYPE.size() as f64,
        }
    }
    fn inverse_diagonal(&self) -> Option<&Vector<B, S>> {
        Some(&self.inv_diag)
    }
}

/// Block-Jacobi: the inverses of the dense `m x m` diagonal blocks, applied as one
/// block-diagonal product (a batch of small matrix-vector products).
pub struct BlockJacobi<B: Backend, S: Scalar> {
    inv_blocks: BlockEll<B, S>,
}

impl<B: Backend, S: Scalar> BlockJacobi<B, S> {
    /// From the `m x m` diagonal blocks of a host matrix (the last block may be smaller; it
    /// is padded with the identity). The blocks are inverted on the device by the batched
    /// LU with partial pivoting ([`crate::batched::inverse`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a block size outside 1..=64, a non-square matrix, or a
    /// singular diagonal block (named by its index).
    pub fn new<V: Element>(backend: &B, a: &Csr<Cpu, V>, block_size: usize) -> Result<Self> {
        let (n, m) = (a.nrows(), block_size);
        if a.ncols() != n || !(1..=crate::sparse::block_ell::MAX_BLOCK_SIZE).contains(&m) {
            return Err(Error::InvalidArgument {
                op: "BlockJacobi::new",
                name: "block_size",
                reason: format!(
                    "{m} for a {n} x {} matrix: needs a square matrix and 1 <= m <= 64",
                    a.ncols()
                ),
            });
        }
        let r = n.div_ceil(m);
        let mut blocks = vec![S::ZERO; r * m * m];
        for l in 0..r {
            let block = &mut blocks[l * m * m..(l + 1) * m * m];
            for i in 0..m {
                let row = l * m + i;
                if row >= n {
                    block[i * m + i] = S::ONE;
                    continue;
                }
                let (cols, vals) = a.row(row);
                for (&c, v) in cols.iter().zip(vals) {
                    let c = c as usize;
                    if c >= l * m && c < (l + 1) * m {
                        block[i * m + (c - l * m)] = S::from_f64(v.as_f64());
                    }
                }
            }
        }
        let batch = Batch::from_slice(backend, r, m, m, &blocks)?;
        let (inverse, status) = crate::batched::inverse::<B, S, S>(&batch)?;
        if let Some(&(l, _)) = status.failures()?.first() {
            return Err(Error::InvalidArgument {
                op: "BlockJacobi::new",
                name: "a",
                reason: format!(
                    "diagonal block {l} (rows {}..{}) is singular",
                    l * m,
                    ((l + 1) * m).min(n)
                ),
            });
        }
        let inverses = inverse.to_vec()?;
        let host = BlockEll::from_diagonal_blocks(n, m, &inverses)?;
        Ok(BlockJacobi {
            inv_blocks: host.to_backend(backend)?,
        })
    }

    /// From the diagonal blocks of a block-ELL matrix (its own block size).
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn from_block_ell<V: Element>(backend: &B, a: &BlockEll<Cpu, V>) -> Result<Self> {
        Self::new(backend, &a.to_csr()?, a.block_size())
    }

    /// From the diagonal blocks already on the device: `blocks` holds the `r` square
    /// blocks (any element type; converted to `S`), inverted there by the batched LU with
    /// partial pivoting. Nothing goes through the host.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for non-square blocks or blocks above 64, or naming the
    /// first singular block; device errors.
    pub fn from_blocks<V: Element>(blocks: &Batch<B, V>) -> Result<Self> {
        let converted = blocks.to_precision::<S>()?;
        let (inverse, status) = crate::batched::inverse::<B, S, S>(&converted)?;
        if let Some(&(l, _)) = status.failures()?.first() {
            return Err(Error::InvalidArgument {
                op: "BlockJacobi::from_blocks",
                name: "blocks",
                reason: format!("diagonal block {l} is singular"),
            });
        }
        Ok(BlockJacobi {
            inv_blocks: BlockEll::block_diagonal(&inverse)?,
        })
    }

    /// The inverse blocks as a block-diagonal matrix.
    pub fn inverse_blocks(&self) -> &BlockEll<B, S> {
        &self.inv_blocks
    }
}

impl<B: Backend, S: Scalar> Preconditioner<B, S> for BlockJacobi<B, S> {
    fn size(&self) -> usize {
        self.inv_blocks.nrows()
    }
    fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> Result<()> {
        self.inv_blocks.spmv(S::ONE, r, S::ZERO, z)
    }
    fn cost(&self) -> OperatorCost {
        LinearOperator::<B, S>::cost(&self.inv_blocks)
    }
}

impl<B: Backend, S: Scalar> LinearOperator<B, S> for Jacobi<B, S> {
    fn nrows(&self) -> usize {
        self.inv_diag.len()
    }
    fn ncols(&self) -> usize {
        self.inv_diag.len()
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        let mut z = Vector::zeros(x.backend(), y.len())?;
        Preconditioner::precondition(self, x, &mut z)?;
        y.axpby(alpha, &z, beta)
    }
}

impl<B: Backend, S: Scalar> LinearOperator<B, S> for BlockJacobi<B, S> {
    fn nrows(&self) -> usize {
        self.inv_blocks.nrows()
    }
    fn ncols(&self) -> usize {
        self.inv_blocks.nrows()
    }
    fn apply_add(&self, alpha: S, x: &Vector<B, S>, beta: S, y: &mut Vector<B, S>) -> Result<()> {
        self.inv_blocks.spmv(alpha, x, beta, y)
    }
}
