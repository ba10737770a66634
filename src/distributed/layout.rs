//! The row layout of a distributed matrix: owned rows, ghost rows, and the halo plan (which
//! owned rows go to which rank, which ghost rows come from which), built once.

use std::collections::HashMap;
use std::rc::Rc;

use super::comm::{from_bytes, to_bytes, Communicator};
use super::partition::{imbalance, Partition, PartitionQuality};
use crate::backend::Cpu;
use crate::error::{check_len, Result};
use crate::sparse::Csr;

/// A contiguous run of a halo buffer exchanged with one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The other rank.
    pub rank: usize,
    /// First position in the buffer.
    pub start: usize,
    /// Values.
    pub len: usize,
}

/// Owned rows, ghost rows and the halo plan of one rank. Shared (`Rc`) by the matrix and
/// every vector of the same distribution.
#[derive(Debug)]
pub struct Layout {
    pub(crate) comm: Communicator,
    pub(crate) partition: Rc<Partition>,
    /// Global ids of the owned rows, in local order.
    pub(crate) owned: Vec<usize>,
    /// Global ids of the ghost rows, grouped by owner rank (increasing), then increasing.
    pub(crate) ghosts: Vec<usize>,
    /// Local rows sent, concatenated over `sends`.
    pub(crate) send_index: Vec<u32>,
    /// Runs of `send_index` per destination rank.
    pub(crate) sends: Vec<Segment>,
    /// Runs of the ghost buffer per source rank.
    pub(crate) recvs: Vec<Segment>,
}

impl Layout {
    /// The communicator.
    pub fn comm(&self) -> &Communicator {
        &self.comm
    }

    /// The partition.
    pub fn partition(&self) -> &Partition {
        &self.partition
    }

    /// Rows owned here.
    pub fn owned_len(&self) -> usize {
        self.owned.len()
    }

    /// Ghost rows (owned elsewhere, read by this rank's rows).
    pub fn ghost_len(&self) -> usize {
        self.ghosts.len()
    }

    /// Global rows.
    pub fn global_len(&self) -> usize {
        self.partition.len()
    }

    /// Global ids of the owned rows, in local order.
    pub fn owned_rows(&self) -> &[usize] {
        &self.owned
    }

    /// Global ids of the ghost rows, in ghost-buffer order.
    pub fn ghost_rows(&self) -> &[usize] {
        &self.ghosts
    }

    /// Where owned rows are sent (runs of [`send_index`](Self::send_index)).
    pub fn sends(&self) -> &[Segment] {
        &self.sends
    }

    /// Local indices of the rows sent, concatenated over [`sends`](Self::sends).
    pub fn send_index(&self) -> &[u32] {
        &self.send_index
    }

    /// Where ghost rows come from (runs of the ghost buffer).
    pub fn recvs(&self) -> &[Segment] {
        &self.recvs
    }

    /// Whether two layouts are the same distribution (the same object or equal plans).
    pub fn same_as(&self, other: &Layout) -> bool {
        std::ptr::eq(self, other)
            || (self.owned == other.owned
                && self.ghosts == other.ghosts
                && *self.partition == *other.partition)
    }
}

/// A sparse matrix distributed by rows, on the host: each rank's rows split into the local
/// block (columns it owns, numbered locally) and the remote block (ghost columns, numbered in
/// ghost order), with the [`Layout`]. Made collectively; upload it with
/// [`DistMatrix::new`](super::DistMatrix::new).
pub struct DistCsr {
    pub(crate) layout: Rc<Layout>,
    pub(crate) local: Csr<Cpu, f64>,
    pub(crate) remote: Csr<Cpu, f64>,
}

impl std::fmt::Debug for DistCsr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DistCsr(rank {}: {} rows, {} + {} nonzeros, {} ghosts)",
            self.layout.comm.rank(),
            self.local.nrows(),
            self.local.nnz(),
            self.remote.nnz(),
            self.remote.ncols()
        )
    }
}

impl DistCsr {
    /// The distributed matrix from this rank's rows: `rows` has one row per row the
    /// partition gives this rank (in increasing global order) and global column indices
    /// (`ncols` = global size). Collective: every rank calls it with its rows.
    ///
    /// # Errors
    /// The same [`Error::Rank`](crate::error::Error::Rank) on every rank if any rank's rows do not fit the partition
    /// (wrong row count, wrong column count, a partition for another number of ranks).
    pub fn from_rows(
        comm: &Communicator,
        partition: Rc<Partition>,
        rows: &Csr<Cpu, f64>,
    ) -> Result<Self> {
        let rank = comm.rank();
        let check = (|| {
            check_len(
                "DistCsr::from_rows",
                "partition parts (ranks)",
                comm.size(),
                partition.parts(),
            )?;
            check_len(
                "DistCsr::from_rows",
                "rows of this rank",
                partition.counts()[rank],
                rows.nrows(),
            )?;
            check_len(
                "DistCsr::from_rows",
                "ncols (global size)",
                partition.len(),
                rows.ncols(),
            )
        })();
        comm.agree(check)?;
        let owned = partition.rows_of(rank);

        // Ghost columns, grouped by owner rank, then by global id.
        let mut ghost_keys: Vec<(usize, usize)> = rows
            .col_idx()
            .iter()
            .map(|&g| g as usize)
            .filter(|&g| partition.owner(g) != rank)
            .map(|g| (partition.owner(g), g))
            .collect();
        ghost_keys.sort_unstable();
        ghost_keys.dedup();
        let ghost_of: HashMap<usize, u32> = ghost_keys
            .iter()
            .enumerate()
            .map(|(k, &(_, g))| (g, k as u32))
            .collect();
        let ghosts: Vec<usize> = ghost_keys.iter().map(|&(_, g)| g).collect();
        let mut recvs: Vec<Segment> = Vec::new();
        for (k, &(q, _)) in ghost_keys.iter().enumerate() {
            match recvs.last_mut() {
                Some(s) if s.rank == q => s.len += 1,
                _ => recvs.push(Segment {
                    rank: q,
                    start: k,
                    len: 1,
                }),
            }
        }

        // Tell each owner which of its rows this rank reads; learn which of ours others read.
        let mut requests = vec![Vec::new(); comm.size()];
        for s in &recvs {
            let ids: Vec<u64> = ghosts[s.start..s.start + s.len]
                .iter()
                .map(|&g| g as u64)
                .collect();
            requests[s.rank] = to_bytes(&ids);
        }
        let asked = comm.all_to_all_bytes(&requests);
        let mut send_index = Vec::new();
        let mut sends = Vec::new();
        for (p, bytes) in asked.iter().enumerate() {
            let ids: Vec<u64> = from_bytes(bytes);
            if ids.is_empty() {
                continue;
            }
            let start = send_index.len();
            // Every id was chosen by its reader as owned here.
            send_index.extend(
                ids.iter()
                    .map(|&g| partition.local_index(g as usize) as u32),
            );
            sends.push(Segment {
                rank: p,
                start,
                len: ids.len(),
            });
        }

        // Split the rows into the local and the remote block.
        let (mut lp, mut lc, mut lv) = (vec![0u32], Vec::new(), Vec::new());
        let (mut rp, mut rc, mut rv) = (vec![0u32], Vec::new(), Vec::new());
        for i in 0..rows.nrows() {
            let (cols, vals) = rows.row(i);
            for (&g, &v) in cols.iter().zip(vals) {
                let g = g as usize;
                if partition.owner(g) == rank {
                    lc.push(partition.local_index(g) as u32);
                    lv.push(v);
                } else {
                    rc.push(ghost_of[&g]);
                    rv.push(v);
                }
            }
            // Ghost numbering groups columns by owner: sort each row by its new columns.
            sort_row(&mut lc[lp[i] as usize..], &mut lv[lp[i] as usize..]);
            sort_row(&mut rc[rp[i] as usize..], &mut rv[rp[i] as usize..]);
            lp.push(lc.len() as u32);
            rp.push(rc.len() as u32);
        }
        let n = owned.len();
        let blocks = Csr::new(n, n, lp, lc, lv)
            .and_then(|local| Ok((local, Csr::new(n, ghosts.len(), rp, rc, rv)?)));
        let (local, remote) = comm.agree(blocks)?;
        let layout = Rc::new(Layout {
            comm: comm.clone(),
            partition,
            owned,
            ghosts,
            send_index,
            sends,
            recvs,
        });
        Ok(DistCsr {
            layout,
            local,
            remote,
        })
    }

    /// The rows `partition` gives this rank, taken from a matrix every rank holds whole (a
    /// generator's output, cheap to make everywhere). For files, read in parallel
    /// ([`read_matrix_market`](super::read_matrix_market)) instead.
    ///
    /// # Errors
    /// As [`from_rows`](Self::from_rows), and a matrix that is not square or does not match
    /// the partition.
    pub fn from_global(
        comm: &Communicator,
        a: &Csr<Cpu, f64>,
        partition: Rc<Partition>,
    ) -> Result<Self> {
        let check = (|| {
            check_len(
                "DistCsr::from_global",
                "ncols (square)",
                a.nrows(),
                a.ncols(),
            )?;
            check_len(
                "DistCsr::from_global",
                "partition rows",
                a.nrows(),
                partition.len(),
            )?;
            check_len(
                "DistCsr::from_global",
                "partition parts (ranks)",
                comm.size(),
                partition.parts(),
            )
        })();
        comm.agree(check)?;
        let rows = partition.rows_of(comm.rank());
        let (mut p, mut c, mut v) = (vec![0u32], Vec::new(), Vec::new());
        for &g in &rows {
            let (cols, vals) = a.row(g);
            c.extend_from_slice(cols);
            v.extend_from_slice(vals);
            p.push(c.len() as u32);
        }
        let mine = Csr::new(rows.len(), a.ncols(), p, c, v)?;
        Self::from_rows(comm, partition, &mine)
    }

    /// The layout.
    pub fn layout(&self) -> &Rc<Layout> {
        &self.layout
    }

    /// This rank's diagonal block (owned rows and columns, local numbering): what a
    /// block-Jacobi preconditioner inverts.
    pub fn local_block(&self) -> &Csr<Cpu, f64> {
        &self.local
    }

    /// This rank's coupling to the other ranks (owned rows, ghost columns).
    pub fn remote_block(&self) -> &Csr<Cpu, f64> {
        &self.remote
    }

    /// Global rows (and columns).
    pub fn global_len(&self) -> usize {
        self.layout.global_len()
    }

    /// The balance of the distribution, gathered: rows and nonzeros per rank, cut nonzeros
    /// (the sum of the remote blocks). Collective.
    pub fn quality(&self) -> PartitionQuality {
        let comm = &self.layout.comm;
        let rows: Vec<usize> = comm
            .all_gather(self.local.nrows() as f64)
            .iter()
            .map(|&v| v as usize)
            .collect();
        let nnz: Vec<usize> = comm
            .all_gather((self.local.nnz() + self.remote.nnz()) as f64)
            .iter()
            .map(|&v| v as usize)
            .collect();
        let cut = comm.sum_scalar(self.remote.nnz() as f64) as usize;
        PartitionQuality {
            row_imbalance: imbalance(&rows),
            nnz_imbalance: imbalance(&nnz),
            rows,
            nnz,
            cut_nonzeros: cut,
        }
    }
}

/// Sorts one row's `(column, value)` pairs by column.
fn sort_row(cols: &mut [u32], vals: &mut [f64]) {
    if cols.windows(2).all(|w| w[0] < w[1]) {
        return;
    }
    let mut pairs: Vec<(u32, f64)> = cols.iter().copied().zip(vals.iter().copied()).collect();
    pairs.sort_unstable_by_key(|p| p.0);
    for (k, (c, v)) in pairs.into_iter().enumerate() {
        cols[k] = c;
        vals[k] = v;
    }
}
