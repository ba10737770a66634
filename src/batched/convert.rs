//! Conversions between a batch and other containers: a vector's values seen as matrices,
//! a gather from another batch, another precision, and the block-diagonal sparse matrix of
//! its matrices.

use crate::backend::core::check_device;
use crate::batched::{size_of_batch, Batch};
use crate::error::{check_len, Error, Result};
use crate::scalar::Element;
use crate::sparse::block_ell::{BlockEll, MAX_BLOCK_SIZE};
use crate::sparse::to_u32;
use crate::vector::{DeviceIndex, Vector, VectorOps};

impl<B: VectorOps, T: Element> Batch<B, T> {
    /// The values of `v` as `count` matrices of `nrows x ncols` (row-major, matrix after
    /// matrix), without a copy.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `v` does not hold `count · nrows · ncols` values;
    /// [`Error::Unsupported`] for a vector split into parts.
    pub fn from_vector(v: Vector<B, T>, count: usize, nrows: usize, ncols: usize) -> Result<Self> {
        let len = size_of_batch("Batch::from_vector", count, nrows, ncols)?;
        check_len("Batch::from_vector", "vector", len, v.len())?;
        let backend = v.backend().clone();
        Batch::from_buffer(&backend, count, nrows, ncols, v.into_buffer()?)
    }

    /// `self[i] = x[index[i]]` over the values of the batches (row-major, matrix after
    /// matrix) for every `i` below `min(self's values, index.len())` whose `index[i]` is
    /// inside `x`; the other values of `self` are left as they are.
    ///
    /// # Errors
    /// [`Error::DeviceMismatch`] for operands on another device.
    pub fn gather_from(&mut self, x: &Batch<B, T>, index: &DeviceIndex<B>) -> Result<()> {
        const OP: &str = "Batch::gather_from";
        check_device(OP, &self.backend, x.backend())?;
        check_device(OP, &self.backend, index.backend())?;
        // SAFETY: the buffers belong to one device (checked above); the gather bounds every
        // index and every write.
        unsafe {
            self.backend
                .gather(x.buffer(), index.buffer(), &mut self.data)
        }
    }

    /// A new batch of the same shape holding `self` rounded to `D`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the device lacks `D`; allocation errors.
    pub fn to_precision<D: Element>(&self) -> Result<Batch<B, D>> {
        self.backend.require::<D>("Batch::to_precision")?;
        // The whole padded buffer, so that both have the same length (convert's contract).
        let mut data = self.backend.alloc::<D>(B::len(&self.data))?;
        // SAFETY: both buffers hold len(self.data) values of the batch's backend.
        unsafe { self.backend.convert(&self.data, &mut data)? };
        Batch::from_buffer(&self.backend, self.count, self.nrows, self.ncols, data)
    }
}

impl<B: VectorOps, V: Element> BlockEll<B, V> {
    /// The block-diagonal matrix of the square matrices of `blocks`, built on their device
    /// (a gather into the block-ELL layout).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for non-square blocks or blocks above 64; allocation
    /// errors.
    pub fn block_diagonal(blocks: &Batch<B, V>) -> Result<Self> {
        let (r, m) = (blocks.count(), blocks.nrows());
        if blocks.ncols() != m || !(1..=MAX_BLOCK_SIZE).contains(&m) {
            return Err(Error::InvalidArgument {
                op: "BlockEll::block_diagonal",
                name: "blocks",
                reason: format!(
                    "{m} x {}: must be square with 1 <= m <= {MAX_BLOCK_SIZE}",
                    blocks.ncols()
                ),
            });
        }
        to_u32(r * m * m, "BlockEll", "stored values")?;
        let backend = blocks.backend();
        let big_m = r * m;
        let mut index = vec![0u32; big_m * m];
        for l in 0..r {
            for i in 0..m {
                for j in 0..m {
                    index[(l * m + i) + big_m * j] = (l * m * m + i * m + j) as u32;
                }
            }
        }
        let index = DeviceIndex::upload(backend, &index)?;
        let mut values = Batch::<B, V>::zeros(backend, 1, big_m, m)?;
        values.gather_from(blocks, &index)?;
        let values = values.data;
        let neighbours = backend.upload(&(0..r as u32).collect::<Vec<_>>())?;
        // SAFETY: r entries 0..r (one slot), r m · m values.
        Ok(unsafe { Self::from_raw_parts(backend, r, m, 1, neighbours, values, r) })
    }
}
