//! A block-ELL matrix as CSR with f64 values on a CubeCL device, for the AMG setup of a
//! matrix assembled in block-ELL (the HDG trace system): count the nonzero entries of each
//! row's blocks, scan, fill each row in column order, convert the values — no trip through
//! the host.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::Result;
use crate::scalar::Scalar;
use crate::sparse::block_ell::BlockEll;
use crate::sparse::csr::Csr;
use crate::sparse::PAD;
use crate::vector::VectorOps;

/// The nonzero entries of row `i`'s blocks inside the matrix: counted, or (`fill`) written
/// at `row_ptr[i]` in increasing column order — the slots visited by increasing block column
/// (ties by slot, so a repeated block column keeps its entries in slot order, as a stable
/// sort would), each block's columns in order — so the rows need no sort. The block of slot
/// `t`, column `q` of row `i` is `values[i + big_m (t m + q)]`.
#[allow(clippy::collapsible_if, clippy::too_many_arguments)]
#[cube(launch_unchecked)]
fn block_ell_rows_kernel<V: Float>(
    neighbours: &Array<u32>,
    values: &Array<V>,
    row_ptr: &Array<u32>,
    cols: &mut Array<u32>,
    vals: &mut Array<V>,
    counts: &mut Array<u32>,
    nrows: usize,
    ncols: usize,
    m: usize,
    slots: usize,
    big_m: usize,
    #[comptime] fill: bool,
) {
    let stride = CUBE_COUNT * CUBE_DIM as usize;
    let mut i = ABSOLUTE_POS;
    while i < nrows {
        let l = i / m;
        if fill {
            let mut at = row_ptr[i];
            // The last slot emitted, (block column, slot); `started` once there is one.
            let mut last_bc = 0u32;
            let mut last_t = 0usize;
            let mut started = false;
            for _pass in 0..slots {
                let mut best_bc = PAD.runtime();
                let mut best_t = 0usize;
                for t in 0..slots {
                    let bc = neighbours[l * slots + t];
                    let after = !started || bc > last_bc || (bc == last_bc && t > last_t);
                    if bc != PAD && after && bc < best_bc {
                        best_bc = bc;
                        best_t = t;
                    }
                }
                if best_bc != PAD {
                    for q in 0..m {
                        let c = best_bc as usize * m + q;
                        if c < ncols {
                            let v = values[i + big_m * (best_t * m + q)];
                            if v != V::new(0.0) {
                                cols[at as usize] = c as u32;
                                vals[at as usize] = v;
                                at += 1;
                            }
                        }
                    }
                    last_bc = best_bc;
                    last_t = best_t;
                    started = true;
                }
            }
        } else {
            let mut count = 0u32;
            for t in 0..slots {
                let bc = neighbours[l * slots + t];
                if bc != PAD {
                    for q in 0..m {
                        let c = bc as usize * m + q;
                        if c < ncols {
                            if values[i + big_m * (t * m + q)] != V::new(0.0) {
                                count += 1;
                            }
                        }
                    }
                }
            }
            counts[i] = count;
        }
        i += stride;
    }
}

impl<R: CubeRuntime> Cube<R> {
    /// `a` as CSR with f64 values: every nonzero entry of its blocks, columns sorted (as
    /// [`BlockEll::to_csr`] on the host).
    pub(super) fn block_ell_csr<V: Scalar>(&self, a: &BlockEll<Self, V>) -> Result<Csr<Self, f64>> {
        let n = a.nrows;
        let m = a.block_size;
        let big_m = n.div_ceil(m.max(1)) * m;
        let counts = self.alloc_uninit::<u32>(n.max(1))?;
        let (dummy_u, dummy_v) = (self.alloc::<u32>(1)?, self.alloc::<V>(1)?);
        let dummy_u2 = self.alloc::<u32>(1)?;
        let (count, dim) = self.config().grid(n);
        let launch = |row_ptr: &CubeBuffer<u32>,
                      cols: &CubeBuffer<u32>,
                      vals: &CubeBuffer<V>,
                      counts: &CubeBuffer<u32>,
                      fill: bool| {
            self.launch::<V>(fill, || {
                // SAFETY: the block-ELL invariants (neighbours has slots entries per block
                // row, values big_m x slots x m); row_ptr offsets each row's count, which
                // the fill pass reproduces.
                unsafe {
                    block_ell_rows_kernel::launch_unchecked::<V, R>(
                        self.client(),
                        count.clone(),
                        dim,
                        a.neighbours.arg(),
                        a.values.arg(),
                        row_ptr.arg(),
                        cols.arg(),
                        vals.arg(),
                        counts.arg(),
                        n,
                        a.ncols,
                        m,
                        a.slots,
                        big_m,
                        fill,
                    )
                }
            })
        };
        launch(&dummy_u, &dummy_u2, &dummy_v, &counts, false)?;
        let (row_ptr, nnz, stats) =
            self.exclusive_scan(&counts, n, a.ncols, "the CSR copy of a block-ELL matrix")?;
        drop(counts);
        let cols = self.alloc_uninit::<u32>(nnz)?;
        let vals = self.alloc_uninit::<V>(nnz)?;
        launch(&row_ptr, &cols, &vals, &dummy_u, true)?;
        let mut values = self.alloc_uninit::<f64>(nnz)?;
        // SAFETY: both value buffers hold nnz entries of this backend.
        unsafe { self.convert(&vals, &mut values)? };
        Ok(self.csr_from((n, a.ncols), row_ptr, cols, values, stats))
    }
}
