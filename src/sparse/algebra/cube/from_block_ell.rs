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
/// at `row_ptr[i]` in increasing column order — the block columns (distinct in a block row)
/// visited in increasing order, each one's columns in order, as [`BlockEll::to_csr`] sorts
/// them — so the rows need no sort. The block of slot
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
            // The last block column emitted; `started` once there is one.
            let mut last_bc = 0u32;
            let mut started = false;
            for _pass in 0..slots {
                let mut best_bc = PAD.runtime();
                for t in 0..slots {
                    let bc = neighbours[l * slots + t];
                    if bc != PAD && (!started || bc > last_bc) && bc < best_bc {
                        best_bc = bc;
                    }
                }
                if best_bc != PAD {
                    // Column by column (the block columns of a block row are distinct; were
                    // one held by several slots, its entries would come in slot order).
                    for q in 0..m {
                        let c = best_bc as usize * m + q;
                        if c < ncols {
                            for t in 0..slots {
                                if neighbours[l * slots + t] == best_bc {
                                    let v = values[i + big_m * (t * m + q)];
                                    if v != V::new(0.0) {
                                        cols[at as usize] = c as u32;
                                        vals[at as usize] = v;
                                        at += 1;
                                    }
                                }
                            }
                        }
                    }
                    last_bc = best_bc;
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
        let c = self.count_then_fill("the CSR copy of a block-ELL matrix", n, a.ncols, launch)?;
        let mut values = self.alloc_uninit::<f64>(c.nnz())?;
        // SAFETY: both value buffers hold nnz entries of this backend.
        unsafe { self.convert(&c.values, &mut values)? };
        Ok(self.csr_from((n, a.ncols), c.row_ptr, c.col_idx, values, c.stats))
    }
}

#[cfg(all(test, feature = "wgpu"))]
mod tests {
    use crate::backend::Cpu;
    use crate::sparse::block_ell::BlockEll;
    use crate::sparse::PAD;

    /// Block rows whose slots hold their block columns in any order (as the HDG assembly
    /// leaves them; `from_csr` puts the diagonal first, then increasing): the device's rows
    /// are the host's, entry for entry.
    #[test]
    fn unordered_slots_give_sorted_rows() {
        let Ok(wgpu) = crate::Wgpu::new() else {
            eprintln!("[galerkin tests] skipping: no wgpu adapter");
            return;
        };
        let (r, m, slots) = (3usize, 2usize, 4usize);
        // Block row 0: columns 2, 0, PAD, 1; row 1: PAD, 1, 0, PAD; row 2: 1, PAD, 2, 0.
        let neighbours = vec![2, 0, PAD, 1, PAD, 1, 0, PAD, 1, PAD, 2, 0];
        let values: Vec<f64> = (0..r * m * slots * m).map(|k| 1.0 + k as f64).collect();
        // SAFETY: 3 · 4 neighbours below 3 or PAD, distinct in each block row; 6 · 8
        // values; both on the host.
        let host =
            unsafe { BlockEll::from_raw_parts(&Cpu::new(), r, m, slots, neighbours, values, 8) };
        let want = host.to_csr().unwrap();
        let dev = host.to_backend(&wgpu).unwrap();
        let got = crate::sparse::algebra::block_ell_to_csr(&dev)
            .unwrap()
            .to_host()
            .unwrap();
        assert_eq!(got.row_ptr(), want.row_ptr());
        assert_eq!(got.col_idx(), want.col_idx());
        assert_eq!(got.values(), want.values());
    }
}
