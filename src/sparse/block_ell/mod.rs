//! Block ELLPACK (the dense block format, DBF, of Roca, Nguyen and Peraire): `m x m` dense
//! blocks, a fixed number `s` of block slots per block row, a neighbour table.
//!
//! ```text
//!  block row l (rows l m .. (l+1) m), slot k:  block column  neighbours[l s + k]   (PAD: empty)
//!  value of row i of block row l, slot k, column j of the block:
//!      values[(i + m l) + (m r) (k m + j)]          r = number of block rows
//! ```
//!
//! The value layout is the seed's column-major `A[i + m l + m r k]` with `k = slot m + j`:
//! one unit per matrix row `u = i + m l`, and for a fixed `k` consecutive units read
//! consecutive values (coalesced). Slot order: the diagonal block first when the block row
//! has one, then increasing block column. Rows and columns are padded up to whole blocks
//! (`⌈n/m⌉ m`); padded rows are never written and padded columns never read.
//!
//! Two SpMV kernels ([`BlockEllKernel`]): `Direct` reads `x` through the neighbour table
//! inside the contraction; `InflateContract` is the seed's two-step form: first gather the
//! inflated vector `X[k + q l] = x[neighbour(l, k / m) m + k % m]` (`q = s m`), then the
//! batched small matrix-vector product `y[u] = Σ_k A[u + m r k] X[k + q l]`.

pub use crate::sparse::options::BlockEllKernel;
use rayon::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cpu::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::csr::Csr;
use crate::sparse::ops::{sealed, SparseOps};
use crate::sparse::options::FormatLimits;
use crate::sparse::storage::{sparse_operator, SparseStorage};
use crate::sparse::{to_u32, PAD};

mod kernels;

pub use kernels::BlockEllFormat;

/// The largest supported block size.
pub const MAX_BLOCK_SIZE: usize = 64;

/// A sparse matrix of dense `m x m` blocks. See the [module docs](self).
pub struct BlockEll<B: BackendCore, V: Element> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) block_size: usize,
    pub(crate) slots: usize,
    pub(crate) neighbours: B::Buffer<u32>,
    pub(crate) values: B::Buffer<V>,
    pub(crate) nnz: usize,
    pub(crate) blocks: usize,
    pub(crate) kernel: BlockEllKernel,
    pub(crate) backend: B,
}

/// Block rows and block columns of an `nrows x ncols` matrix with blocks of `m`.
fn block_dims(nrows: usize, ncols: usize, m: usize) -> (usize, usize) {
    (nrows.div_ceil(m), ncols.div_ceil(m))
}

impl<V: Element> BlockEll<Cpu, V> {
    /// Converts a CSR matrix with blocks of size `block_size` (exact: the blocks hold every
    /// stored entry; entries of a block that the CSR matrix does not store are zeros).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a block size outside 1..=64; [`Error::Padding`] if the
    /// stored block values exceed the padding limit relative to the nonzeros.
    pub fn from_csr(a: &Csr<Cpu, V>, block_size: usize, limits: &FormatLimits) -> Result<Self> {
        let m = block_size;
        if !(1..=MAX_BLOCK_SIZE).contains(&m) {
            return Err(Error::InvalidArgument {
                op: "BlockEll::from_csr",
                name: "block_size",
                reason: format!("{m}: must be in 1..={MAX_BLOCK_SIZE}"),
            });
        }
        let (r, _) = block_dims(a.nrows, a.ncols, m);
        // Block columns of every block row: diagonal first, then increasing.
        let block_cols: Vec<Vec<u32>> = (0..r)
            .into_par_iter()
            .map(|l| {
                let mut cols: Vec<u32> = (l * m..((l + 1) * m).min(a.nrows))
                    .flat_map(|row| a.row(row).0.iter().map(|&c| c / m as u32))
                    .collect();
                cols.sort_unstable();
                cols.dedup();
                if let Some(pos) = cols.iter().position(|&c| c as usize == l) {
                    cols[..=pos].rotate_right(1);
                }
                cols
            })
            .collect();
        let slots = block_cols.iter().map(Vec::len).max().unwrap_or(0);
        let stored = (r * slots * m * m) as u64;
        limits.check("BlockEll", stored, a.nnz() as u64)?;
        to_u32(r * m * slots * m, "BlockEll", "stored values")?;
        let mut neighbours = vec![PAD; r * slots];
        for (l, cols) in block_cols.iter().enumerate() {
            neighbours[l * slots..l * slots + cols.len()].copy_from_slice(cols);
        }
        let big_m = r * m;
        let mut values = vec![V::default(); big_m * slots * m];
        for (l, cols) in block_cols.iter().enumerate() {
            for row in l * m..((l + 1) * m).min(a.nrows) {
                let (rc, rv) = a.row(row);
                for (&c, &v) in rc.iter().zip(rv) {
                    // Every block column of the row was listed above.
                    if let Some(slot) = cols.iter().position(|&b| b == c / m as u32) {
                        let k = slot * m + c as usize % m;
                        values[row + big_m * k] = v;
                    }
                }
            }
        }
        let blocks = block_cols.iter().map(Vec::len).sum();
        Ok(BlockEll {
            nrows: a.nrows,
            ncols: a.ncols,
            block_size: m,
            slots,
            neighbours,
            values,
            nnz: a.nnz(),
            blocks,
            kernel: BlockEllKernel::Direct,
            backend: Cpu::new(),
        })
    }

    /// Converts back to CSR, keeping exactly the entries the source CSR matrix stored
    /// that are nonzero, plus every nonzero block entry (zeros inside blocks are dropped:
    /// a block format cannot tell a stored zero from fill).
    ///
    /// # Errors
    /// Never for a valid block-ELL matrix.
    pub fn to_csr(&self) -> Result<Csr<Cpu, V>> {
        let (m, s) = (self.block_size, self.slots);
        let big_m = self.nrows.div_ceil(m) * m;
        let mut row_ptr = vec![0u32];
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        let mut entries: Vec<(u32, V)> = Vec::new();
        for row in 0..self.nrows {
            let l = row / m;
            entries.clear();
            for slot in 0..s {
                let bc = self.neighbours[l * s + slot];
                if bc == PAD {
                    continue;
                }
                for j in 0..m {
                    let c = bc as usize * m + j;
                    let v = self.values[row + big_m * (slot * m + j)];
                    if c < self.ncols && v.as_f64() != 0.0 {
                        entries.push((c as u32, v));
                    }
                }
            }
            entries.sort_by_key(|e| e.0);
            for &(c, v) in &entries {
                col_idx.push(c);
                values.push(v);
            }
            row_ptr.push(col_idx.len() as u32);
        }
        Csr::new(self.nrows, self.ncols, row_ptr, col_idx, values)
    }

    /// A block-diagonal matrix: block `l` (row-major `m x m`, `blocks[l m² ..]`) on the
    /// diagonal. The last block may extend past `n`; its entries there are ignored.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a block size outside 1..=64 or a `blocks` array of the
    /// wrong length.
    pub fn from_diagonal_blocks(n: usize, block_size: usize, blocks: &[V]) -> Result<Self> {
        let m = block_size;
        if !(1..=MAX_BLOCK_SIZE).contains(&m) {
            return Err(Error::InvalidArgument {
                op: "BlockEll::from_diagonal_blocks",
                name: "block_size",
                reason: format!("{m}: must be in 1..={MAX_BLOCK_SIZE}"),
            });
        }
        let r = n.div_ceil(m);
        if blocks.len() != r * m * m {
            return Err(Error::InvalidArgument {
                op: "BlockEll::from_diagonal_blocks",
                name: "blocks",
                reason: format!("{} values for {r} blocks of {m} x {m}", blocks.len()),
            });
        }
        let big_m = r * m;
        let mut values = vec![V::default(); big_m * m];
        for l in 0..r {
            for i in 0..m {
                for j in 0..m {
                    values[(l * m + i) + big_m * j] = blocks[l * m * m + i * m + j];
                }
            }
        }
        let nnz = (0..n)
            .map(|row| ((row / m) * m + m).min(n) - (row / m) * m)
            .sum();
        Ok(BlockEll {
            nrows: n,
            ncols: n,
            block_size: m,
            slots: 1,
            neighbours: (0..r as u32).collect(),
            values,
            nnz,
            blocks: r,
            kernel: BlockEllKernel::Direct,
            backend: Cpu::new(),
        })
    }

    /// The neighbour table (`block rows x slots`, [`PAD`] for empty slots).
    pub fn neighbours(&self) -> &[u32] {
        &self.neighbours
    }
}

impl<B: BackendCore, V: Element> BlockEll<B, V> {
    /// A square `n x n` matrix (`n = r m`) over arrays already in the block-ELL layout of
    /// the [module docs](self), with `blocks` non-empty blocks.
    ///
    /// # Safety
    /// `neighbours` holds `r · slots` entries, each below `r` or [`PAD`], the block columns
    /// of a block row distinct (in any slot order); `values` holds
    /// `r m · slots m` values; both belong to `backend`. (The SpMV kernels index `x` through
    /// the neighbour table without checking it.)
    pub(crate) unsafe fn from_raw_parts(
        backend: &B,
        block_rows: usize,
        block_size: usize,
        slots: usize,
        neighbours: B::Buffer<u32>,
        values: B::Buffer<V>,
        blocks: usize,
    ) -> Self {
        let m = block_size;
        BlockEll {
            nrows: block_rows * m,
            ncols: block_rows * m,
            block_size: m,
            slots,
            neighbours,
            values,
            nnz: blocks * m * m,
            blocks,
            kernel: BlockEllKernel::Direct,
            backend: backend.clone(),
        }
    }

    /// The block size `m`.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Block slots per block row.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Non-empty blocks.
    pub fn blocks(&self) -> usize {
        self.blocks
    }
}

impl<B: BackendCore, V: Element> BlockEll<B, V> {
    /// The SpMV kernel the matrix uses (default [`BlockEllKernel::Direct`]).
    pub fn kernel(&self) -> BlockEllKernel {
        self.kernel
    }

    /// Chooses the SpMV kernel.
    pub fn set_kernel(&mut self, kernel: BlockEllKernel) {
        self.kernel = kernel;
    }

    /// The matrix with another SpMV kernel.
    pub fn with_kernel(mut self, kernel: BlockEllKernel) -> Self {
        self.kernel = kernel;
        self
    }
}

impl<B: SparseOps, V: Element> BlockEll<B, V> {}

impl<B: SparseOps, V: Element> SparseStorage<B, V> for BlockEll<B, V> {
    type Kernels = BlockEllFormat;

    fn backend(&self) -> &B {
        &self.backend
    }
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn nnz(&self) -> usize {
        self.nnz
    }
    /// Padding blocks included.
    fn storage_bytes(&self) -> usize {
        let r = self.nrows.div_ceil(self.block_size);
        r * self.slots * (self.block_size * self.block_size * V::DTYPE.size() + 4)
    }
    /// Every stored block value is multiplied, zero or not.
    fn spmv_flops(&self) -> f64 {
        let m = self.block_size;
        2.0 * (self.nrows.div_ceil(m) * self.slots * m * m) as f64
    }
}

impl<B: BackendCore, V: Element> sealed::Format for BlockEll<B, V> {}

sparse_operator!(BlockEll);
