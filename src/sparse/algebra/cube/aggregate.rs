//! Aggregation and the tentative prolongator on CubeCL devices: the host side of
//! [`aggregate_kernels`](super::aggregate_kernels).

use super::aggregate_kernels::*;
use super::kernels::*;
use crate::backend::core::BackendCore;
use crate::backend::cube::{Cube, CubeBuffer, CubeRuntime};
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::sparse::algebra::{Aggregates, NearNullSpace, SparseAlgebraOps};
use crate::sparse::csr::Csr;

impl<R: CubeRuntime> Cube<R> {
    /// MIS-2 aggregation on the device, the same aggregates as the CPU reference.
    pub(super) fn aggregate_on_device<V: Scalar>(
        &self,
        s: &Csr<Self, V>,
    ) -> Result<Aggregates<Self>> {
        let n = s.nrows;
        if !self.loops_fit(s.stats.max) {
            let (agg, count) = crate::sparse::algebra::aggregate::aggregate(&s.to_host()?);
            return Ok(Aggregates {
                agg: self.upload(&agg)?,
                count,
                backend: self.clone(),
            });
        }
        let mut state = self.alloc_uninit::<u32>(n)?;
        self.fill_u32(&mut state, crate::sparse::algebra::aggregate::UNDECIDED)?;
        let (m1h, m1l) = (self.alloc_uninit::<u32>(n)?, self.alloc_uninit::<u32>(n)?);
        let (m2h, m2l) = (self.alloc_uninit::<u32>(n)?, self.alloc_uninit::<u32>(n)?);
        let mut left = self.alloc::<u32>(1)?;
        // live[i] == round: row i's distance-1 maximum is needed in that round (marked by
        // the previous round's decide pass; every row in round 0). After the first rounds
        // few nodes are undecided, and a round reads little more than these flags.
        let mut live = self.alloc_uninit::<u32>(n)?;
        self.fill_u32(&mut live, 0)?;
        let (count, dim) = self.config().grid(n);
        // Every round decides at least the undecided node of largest key; at most
        // MAX_MIS2_ROUNDS rounds, as on the CPU.
        let mut decided = false;
        for round in 0..crate::sparse::algebra::aggregate::MAX_MIS2_ROUNDS as u32 {
            self.write(&mut left, &[0])?;
            for first in [true, false] {
                let (input, output) = if first {
                    ((&m2h, &m2l), (&m1h, &m1l))
                } else {
                    ((&m1h, &m1l), (&m2h, &m2l))
                };
                self.launch::<()>(first, || {
                    // SAFETY: the CSR invariants (columns below n); every array has n
                    // values.
                    unsafe {
                        spread_kernel::launch_unchecked::<R>(
                            self.client(),
                            count.clone(),
                            dim,
                            s.row_ptr.arg(),
                            s.col_idx.arg(),
                            state.arg(),
                            live.arg(),
                            round,
                            input.0.arg(),
                            input.1.arg(),
                            output.0.arg(),
                            output.1.arg(),
                            n,
                            first,
                        )
                    }
                })?;
            }
            self.launch::<()>((), || {
                // SAFETY: the CSR invariants; every array has n values; left has 1.
                unsafe {
                    decide_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        s.row_ptr.arg(),
                        s.col_idx.arg(),
                        state.arg(),
                        m2h.arg(),
                        m2l.arg(),
                        live.arg(),
                        round,
                        left.arg(),
                        n,
                    )
                }
            })?;
            if self.download(&left)?[0] == 0 {
                decided = true;
                break;
            }
        }
        drop(live);
        if !decided {
            // The nodes still undecided after the last round become roots, as on the CPU
            // (so the same aggregates): through the host, as it is rare.
            use crate::sparse::algebra::aggregate::{ROOT, UNDECIDED};
            let mut states = self.download(&state)?;
            states
                .iter_mut()
                .filter(|st| **st == UNDECIDED)
                .for_each(|st| *st = ROOT);
            self.write(&mut state, &states)?;
        }
        drop((m1l, m2h, m2l));
        // Roots numbered in index order.
        let mut flags = m1h;
        let flag = |flags: &mut CubeBuffer<u32>, source: &CubeBuffer<u32>, value: u32| {
            self.launch::<()>((), || {
                // SAFETY: both arrays have n values.
                unsafe {
                    flags_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        source.arg(),
                        value,
                        flags.arg(),
                        n,
                    )
                }
            })
        };
        flag(&mut flags, &state, crate::sparse::algebra::aggregate::ROOT)?;
        let mut agg = self.alloc_uninit::<u32>(n)?;
        let mut total = self.number(&flags, 0, &mut agg, n, false)?;
        let mut other = self.alloc_uninit::<u32>(n)?;
        for roots_only in [true, false] {
            self.launch::<()>(roots_only, || {
                // SAFETY: the CSR invariants; every array has n values; aggregates are
                // below the roots' count.
                unsafe {
                    place_kernel::launch_unchecked::<R>(
                        self.client(),
                        count.clone(),
                        dim,
                        s.row_ptr.arg(),
                        s.col_idx.arg(),
                        state.arg(),
                        agg.arg(),
                        other.arg(),
                        n,
                        roots_only,
                    )
                }
            })?;
            std::mem::swap(&mut agg, &mut other);
        }
        drop(other);
        // Nodes no root reaches: aggregates of their own.
        flag(&mut flags, &agg, NONE)?;
        drop(state);
        total += self.number(&flags, total as u32, &mut agg, n, true)?;
        Ok(Aggregates {
            agg,
            count: total,
            backend: self.clone(),
        })
    }

    /// The tentative prolongator and the coarse near-null space (a QR per aggregate).
    pub(super) fn tentative_on_device(
        &self,
        agg: &Aggregates<Self>,
        b: &NearNullSpace<Self>,
    ) -> Result<(Csr<Self, f64>, NearNullSpace<Self>)> {
        let (n, count, k) = (agg.len(), agg.count, b.k);
        let (grid_n, dim) = self.config().grid(n);
        let (grid_g, _) = self.config().grid(count);
        let sizes = self.alloc::<u32>(count)?;
        self.launch::<()>((), || {
            // SAFETY: aggregates are below count = len(sizes).
            unsafe {
                member_counts_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n.clone(),
                    dim,
                    agg.agg.arg(),
                    sizes.arg(),
                    n,
                )
            }
        })?;
        let (start, _, sizes_stats) =
            self.exclusive_scan(&sizes, count, 0, "the aggregates' members")?;
        let m = sizes_stats.max;
        if !self.loops_fit(m.saturating_mul(m) / 2 + m.saturating_mul(k + 2).saturating_mul(k + 1))
        {
            let host = crate::backend::Cpu::new();
            let (t, bc) = host.tentative_prolongator(
                &Aggregates {
                    agg: self.download(&agg.agg)?,
                    count,
                    backend: host.clone(),
                },
                &NearNullSpace {
                    rows: b.rows,
                    k,
                    data: self.download(&b.data)?,
                    backend: host.clone(),
                },
            )?;
            let rows = t.ncols();
            return Ok((
                t.to_backend(self)?,
                NearNullSpace {
                    rows,
                    k,
                    data: self.upload(&bc.data)?,
                    backend: self.clone(),
                },
            ));
        }
        let mut cursor = sizes;
        self.fill_u32(&mut cursor, 0)?;
        let members = self.alloc_uninit::<u32>(n)?;
        self.launch::<()>((), || {
            // SAFETY: each aggregate's members land within its range of start.
            unsafe {
                member_fill_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n.clone(),
                    dim,
                    agg.agg.arg(),
                    start.arg(),
                    cursor.arg(),
                    members.arg(),
                    n,
                )
            }
        })?;
        drop(cursor);
        // The kernels index B and Q (n·k values), R (count·k²) and B_c (nc·k ≤ count·k², at
        // most k kept columns per aggregate) with 32-bit arithmetic (CubeCL's default
        // addressing): 2³² values or more are refused before Q and R are allocated.
        let k64 = k as u64;
        for (what, values) in [
            (
                "the tentative prolongator's Q",
                (n as u64).saturating_mul(k64),
            ),
            (
                "the aggregates' R factors",
                (count as u64).saturating_mul(k64.saturating_mul(k64)),
            ),
        ] {
            if values > u64::from(u32::MAX) {
                return Err(Error::ResourceLimit {
                    backend: self.info().to_string(),
                    what: format!(
                        "{what} ({values} f64 values; the device kernels index below 2^32)"
                    ),
                    requested: values.saturating_mul(8),
                    limit: u64::from(u32::MAX) * 8,
                });
            }
        }
        let local = self.alloc_uninit::<u32>(n)?;
        let q = self.alloc_uninit::<f64>(n * k)?;
        let r = self.alloc::<f64>(count * k * k)?;
        let kept = self.alloc_uninit::<u32>(count)?;
        let rows = b.rows;
        self.launch::<()>((), || {
            // SAFETY: an aggregate's Q block lies in [start·k, end·k), R's in g·k²..(g+1)·k².
            unsafe {
                aggregate_qr_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_g.clone(),
                    dim,
                    start.arg(),
                    members.arg(),
                    local.arg(),
                    b.data.arg(),
                    rows,
                    k,
                    q.arg(),
                    r.arg(),
                    kept.arg(),
                    count,
                )
            }
        })?;
        drop(members);
        let (offset, nc, _) = self.exclusive_scan(&kept, count, 0, "the coarse unknowns")?;
        let counts = self.alloc_uninit::<u32>(n)?;
        self.launch::<()>((), || {
            // SAFETY: aggregates below count.
            unsafe {
                tentative_counts_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n.clone(),
                    dim,
                    agg.agg.arg(),
                    kept.arg(),
                    counts.arg(),
                    n,
                )
            }
        })?;
        let (t_ptr, nnz, stats) =
            self.exclusive_scan(&counts, n, nc, "the tentative prolongator")?;
        drop(counts);
        let cols = self.alloc_uninit::<u32>(nnz)?;
        let vals = self.alloc_uninit::<f64>(nnz)?;
        self.launch::<()>((), || {
            // SAFETY: row i has kept[agg[i]] entries from t_ptr[i]; Q indices as above.
            unsafe {
                tentative_fill_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_n,
                    dim,
                    agg.agg.arg(),
                    start.arg(),
                    local.arg(),
                    kept.arg(),
                    offset.arg(),
                    q.arg(),
                    k,
                    t_ptr.arg(),
                    cols.arg(),
                    vals.arg(),
                    n,
                )
            }
        })?;
        let bc = self.alloc::<f64>(nc * k)?;
        self.launch::<()>((), || {
            // SAFETY: offset[g] + p < nc for p < kept[g]; R's block as above.
            unsafe {
                coarse_near_null_kernel::launch_unchecked::<R>(
                    self.client(),
                    grid_g,
                    dim,
                    kept.arg(),
                    offset.arg(),
                    r.arg(),
                    k,
                    nc,
                    bc.arg(),
                    count,
                )
            }
        })?;
        let t = self.csr_from((n, nc), t_ptr, cols, vals, stats);
        Ok((
            t,
            NearNullSpace {
                rows: nc,
                k,
                data: bc,
                backend: self.clone(),
            },
        ))
    }
}
