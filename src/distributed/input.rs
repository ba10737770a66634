//! Getting a problem onto the ranks: a matrix every rank can make (a generator) split by a
//! partition, or a Matrix Market file read in parallel parts and moved to the rows' owners;
//! partitions by contiguous rows or by METIS.

use std::path::Path;
use std::rc::Rc;

use super::comm::{from_bytes, to_bytes, Communicator};
use super::layout::DistCsr;
use super::partition::Partition;
use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::sparse::{read_matrix_market_part, Coo, Csr};

/// How rows are given to ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PartitionMethod {
    /// Contiguous blocks of rows, as even as possible.
    #[default]
    Contiguous,
    /// METIS k-way on the symmetrized pattern (feature `metis`): computed on rank 0 from the
    /// gathered pattern (column indices only, no values), the owner of each row sent to all.
    Metis,
}

impl std::str::FromStr for PartitionMethod {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "contiguous" => Ok(PartitionMethod::Contiguous),
            "metis" => Ok(PartitionMethod::Metis),
            other => Err(Error::InvalidArgument {
                op: "PartitionMethod",
                name: "method",
                reason: format!("unknown partition `{other}`: expected `contiguous` or `metis`"),
            }),
        }
    }
}

/// Distributes a matrix that every rank holds whole (a generator's output): each rank keeps
/// the rows `method` gives it. Collective.
///
/// # Errors
/// As [`DistCsr::from_global`]; METIS failures (agreed).
pub fn distribute(
    comm: &Communicator,
    a: &Csr<Cpu, f64>,
    method: PartitionMethod,
) -> Result<DistCsr> {
    let partition = partition_rows(comm, a, method)?;
    DistCsr::from_global(comm, a, Rc::new(partition))
}

#[cfg(feature = "metis")]
fn metis(a: &Csr<Cpu, f64>, parts: usize) -> Result<Partition> {
    Partition::metis(a, parts)
}

#[cfg(not(feature = "metis"))]
fn metis(_: &Csr<Cpu, f64>, _: usize) -> Result<Partition> {
    Err(Error::Unsupported {
        what: "METIS partitioning".into(),
        backend: "this build".into(),
        reason: "galerkin was built without the `metis` feature (the `mpi` feature enables it)"
            .into(),
    })
}

/// The rows of `a` (every rank holds it whole) given to the ranks by `method`: the same
/// partition on every rank (METIS runs on rank 0). Collective.
///
/// # Errors
/// METIS failures (agreed).
pub(crate) fn partition_rows(
    comm: &Communicator,
    a: &Csr<Cpu, f64>,
    method: PartitionMethod,
) -> Result<Partition> {
    Ok(match method {
        PartitionMethod::Contiguous => comm.agree(Partition::contiguous(a.nrows(), comm.size()))?,
        PartitionMethod::Metis => {
            let mine = if comm.is_root() {
                Some(metis(a, comm.size()))
            } else {
                None
            };
            broadcast_partition(comm, mine, a.nrows())?
        }
    })
}

/// Rank 0's partition (or its error) on every rank.
fn broadcast_partition(
    comm: &Communicator,
    root: Option<Result<Partition>>,
    n: usize,
) -> Result<Partition> {
    let (local, bytes) = match root {
        Some(Ok(p)) => {
            let owners: Vec<u32> = (0..n).map(|g| p.owner(g) as u32).collect();
            (Ok(Some(p)), to_bytes(&owners))
        }
        Some(Err(e)) => (Err(e), Vec::new()),
        None => (Ok(None), Vec::new()),
    };
    let local = comm.agree(local)?;
    let all = comm.all_gather_bytes(&bytes);
    match local {
        Some(p) => Ok(p),
        None => {
            let owners: Vec<u32> = from_bytes(&all[0]);
            let mut p = Partition::from_owners(owners, comm.size())?;
            p.set_method("METIS k-way");
            Ok(p)
        }
    }
}

/// Entries `(row, col, value)` (global indices) sent to the owners of their rows under
/// `partition`, and each rank's rows made from what it received (duplicates summed).
fn to_owners(
    comm: &Communicator,
    partition: Rc<Partition>,
    rows: &[u32],
    cols: &[u32],
    values: &[f64],
) -> Result<DistCsr> {
    let size = comm.size();
    let mut out: Vec<(Vec<u32>, Vec<u32>, Vec<f64>)> = vec![Default::default(); size];
    for ((&i, &j), &v) in rows.iter().zip(cols).zip(values) {
        let o = &mut out[partition.owner(i as usize)];
        o.0.push(i);
        o.1.push(j);
        o.2.push(v);
    }
    let send: Vec<Vec<u8>> = out
        .iter()
        .map(|(r, c, v)| {
            let mut b = to_bytes(&[r.len() as u64]);
            b.extend(to_bytes(r));
            b.extend(to_bytes(c));
            b.extend(to_bytes(v));
            b
        })
        .collect();
    drop(out);
    let got = comm.all_to_all_bytes(&send);
    drop(send);
    let me = comm.rank();
    let mut coo_rows = Vec::new();
    let (mut coo_cols, mut coo_vals) = (Vec::new(), Vec::new());
    for b in &got {
        let n = from_bytes::<u64>(&b[..8])[0] as usize;
        let r: Vec<u32> = from_bytes(&b[8..8 + 4 * n]);
        coo_rows.extend(r.iter().map(|&g| partition.local_index(g as usize) as u32));
        coo_cols.extend(from_bytes::<u32>(&b[8 + 4 * n..8 + 8 * n]));
        coo_vals.extend(from_bytes::<f64>(&b[8 + 8 * n..]));
    }
    let coo = Coo::new(
        partition.counts()[me],
        partition.len(),
        coo_rows,
        coo_cols,
        coo_vals,
    )?;
    let mine = Csr::from_coo(&coo)?;
    DistCsr::from_rows(comm, partition, &mine)
}

/// Reads a Matrix Market file in parallel: rank `k` parses the `k`-th share of the entry
/// lines ([`read_matrix_market_part`]), the entries go to their rows' owners, and no rank
/// holds more than its rows (with METIS, rank 0 also holds the pattern while it partitions).
/// Plain-text coordinate files only. Collective; an error on any rank (a missing file, a
/// bad line, too few entries) is every rank's error.
///
/// # Errors
/// [`Error::Rank`] naming the failing rank and its error (file, line and what is wrong).
pub fn read_matrix_market(
    comm: &Communicator,
    path: impl AsRef<Path>,
    method: PartitionMethod,
) -> Result<DistCsr> {
    let path = path.as_ref();
    let part = comm.agree(
        read_matrix_market_part(path, comm.rank(), comm.size()).and_then(|p| {
            if p.header.nrows != p.header.ncols {
                return Err(Error::InvalidMatrix {
                    format: "distributed",
                    reason: format!(
                        "{}: a distributed solve needs a square matrix, the file declares {} x {}",
                        path.display(),
                        p.header.nrows,
                        p.header.ncols
                    ),
                });
            }
            Ok(p)
        }),
    )?;
    let lines = comm.sum_scalar(part.entry_lines as f64) as usize;
    if lines != part.header.stored_entries {
        return comm.agree(Err(Error::Parse {
            path: path.display().to_string(),
            line: 0,
            message: format!(
                "the file holds {lines} entry lines, the size line declares {}",
                part.header.stored_entries
            ),
        }));
    }
    let n = part.header.nrows;
    let contiguous = Rc::new(Partition::contiguous(n, comm.size())?);
    let first = to_owners(comm, contiguous, &part.rows, &part.cols, &part.values)?;
    drop(part);
    match method {
        PartitionMethod::Contiguous => Ok(first),
        PartitionMethod::Metis => repartition(comm, &first),
    }
}

/// Moves `a`'s rows to a METIS partition computed on rank 0 from the gathered pattern.
fn repartition(comm: &Communicator, a: &DistCsr) -> Result<DistCsr> {
    let layout = a.layout();
    let (local, remote) = (a.local_block(), a.remote_block());
    // This rank's rows with global columns.
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &g) in layout.owned_rows().iter().enumerate() {
        let (lc, lv) = local.row(i);
        let (rc, rv) = remote.row(i);
        for (&c, &v) in lc.iter().zip(lv) {
            rows.push(g as u32);
            cols.push(layout.owned_rows()[c as usize] as u32);
            vals.push(v);
        }
        for (&c, &v) in rc.iter().zip(rv) {
            rows.push(g as u32);
            cols.push(layout.ghost_rows()[c as usize] as u32);
            vals.push(v);
        }
    }
    let mut pattern = to_bytes(&[rows.len() as u64]);
    pattern.extend(to_bytes(&rows));
    pattern.extend(to_bytes(&cols));
    let n = layout.global_len();
    let root = comm.gather_bytes(&pattern, 0).map(|parts| {
        let (mut r, mut c) = (Vec::new(), Vec::new());
        for b in &parts {
            let k = from_bytes::<u64>(&b[..8])[0] as usize;
            r.extend(from_bytes::<u32>(&b[8..8 + 4 * k]));
            c.extend(from_bytes::<u32>(&b[8 + 4 * k..]));
        }
        let ones = vec![1.0; r.len()];
        Coo::new(n, n, r, c, ones)
            .and_then(|coo| Csr::from_coo(&coo))
            .and_then(|g| metis(&g, comm.size()))
    });
    let partition = broadcast_partition(comm, root, n)?;
    to_owners(comm, Rc::new(partition), &rows, &cols, &vals)
}
