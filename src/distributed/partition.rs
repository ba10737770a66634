//! Row partitions: which rank owns which rows. Contiguous blocks, any owner map, and graph
//! partitions by METIS (feature `metis`, on by `mpi`), with their edge cut and balance.

use std::fmt;

use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::Csr;

/// Which rank owns each global row. Every rank holds the same partition (4 bytes a row, not
/// the matrix); the rows a rank owns are numbered locally in increasing global order.
///
/// ```
/// use galerkin::distributed::Partition;
///
/// let p = Partition::contiguous(10, 3)?;
/// assert_eq!(p.counts(), &[4, 3, 3]);
/// assert_eq!((p.owner(4), p.local_index(4)), (1, 0));
/// # Ok::<(), galerkin::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Partition {
    owner: Vec<u32>,
    local: Vec<u32>,
    counts: Vec<usize>,
    method: &'static str,
    metis_cut: Option<usize>,
}

impl fmt::Debug for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Partition({} rows in {} parts by {}: {:?})",
            self.owner.len(),
            self.counts.len(),
            self.method,
            self.counts
        )
    }
}

/// How a partition splits a matrix: rows and nonzeros per part, and the nonzeros that couple
/// parts (the halo traffic).
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionQuality {
    /// Rows of each part.
    pub rows: Vec<usize>,
    /// Nonzeros of each part's rows.
    pub nnz: Vec<usize>,
    /// Nonzeros `(i, j)` whose row and column have different owners (each direction counted:
    /// for a symmetric matrix, twice the edge cut).
    pub cut_nonzeros: usize,
    /// Largest part over the mean part, by rows (1 is perfect balance).
    pub row_imbalance: f64,
    /// Largest part over the mean part, by nonzeros.
    pub nnz_imbalance: f64,
}

impl fmt::Display for PartitionQuality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} parts, rows {}..{} (imbalance {:.3}), nonzeros imbalance {:.3}, {} nonzeros cut",
            self.rows.len(),
            self.rows.iter().min().unwrap_or(&0),
            self.rows.iter().max().unwrap_or(&0),
            self.row_imbalance,
            self.nnz_imbalance,
            self.cut_nonzeros
        )
    }
}

/// `max / mean` of `v` (1 for an empty or all-zero `v`).
pub(crate) fn imbalance(v: &[usize]) -> f64 {
    let total: usize = v.iter().sum();
    if total == 0 {
        return 1.0;
    }
    *v.iter().max().unwrap_or(&0) as f64 * v.len() as f64 / total as f64
}

impl Partition {
    /// `n` rows in `parts` contiguous blocks, as even as possible (the first `n % parts` get
    /// one row more).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `parts` is 0.
    pub fn contiguous(n: usize, parts: usize) -> Result<Self> {
        check_parts(parts)?;
        let (q, r) = (n / parts, n % parts);
        let mut owner = Vec::with_capacity(n);
        for p in 0..parts {
            owner.extend(std::iter::repeat_n(p as u32, q + usize::from(p < r)));
        }
        let mut part = Self::from_owners(owner, parts)?;
        part.method = "contiguous rows";
        Ok(part)
    }

    /// The partition with `owner[i]` the rank of row `i` (ranks may own no rows).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an owner not below `parts`, or `parts` 0.
    pub fn from_owners(owner: Vec<u32>, parts: usize) -> Result<Self> {
        check_parts(parts)?;
        let mut counts = vec![0usize; parts];
        let mut local = Vec::with_capacity(owner.len());
        for (i, &p) in owner.iter().enumerate() {
            let c = counts
                .get_mut(p as usize)
                .ok_or_else(|| Error::InvalidArgument {
                    op: "Partition::from_owners",
                    name: "owner",
                    reason: format!("row {i} is given to rank {p}, but there are {parts} ranks"),
                })?;
            local.push(*c as u32);
            *c += 1;
        }
        Ok(Partition {
            owner,
            local,
            counts,
            method: "given owners",
            metis_cut: None,
        })
    }

    /// A graph partition of `a` (square) by METIS k-way on the symmetrized pattern
    /// (`A + Aᵀ`, no diagonal): few nonzeros coupling the parts, rows balanced to METIS's
    /// default 3%.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `parts` 0 or a non-square `a`; [`Error::Unsupported`]
    /// if METIS fails (its message is kept).
    #[cfg(feature = "metis")]
    pub fn metis<V: Element>(a: &Csr<Cpu, V>, parts: usize) -> Result<Self> {
        check_parts(parts)?;
        crate::error::check_len("Partition::metis", "ncols (square)", a.nrows(), a.ncols())?;
        let n = a.nrows();
        if parts == 1 || n <= 1 {
            let mut p = Self::contiguous(n, parts)?;
            p.method = "METIS k-way";
            p.metis_cut = Some(0);
            return Ok(p);
        }
        let (xadj, adjncy) = symmetric_graph(a);
        let mut part = vec![0 as metis::Idx; n];
        let failed = |reason: String| Error::Unsupported {
            what: "METIS partitioning".into(),
            backend: "the host".into(),
            reason,
        };
        let cut = metis::Graph::new(1, parts as metis::Idx, &xadj, &adjncy)
            .map_err(|e| failed(format!("{e}")))?
            .part_kway(&mut part)
            .map_err(|e| failed(format!("{e}")))?;
        let mut p = Self::from_owners(part.into_iter().map(|q| q as u32).collect(), parts)?;
        p.method = "METIS k-way";
        p.metis_cut = Some(cut as usize);
        Ok(p)
    }

    /// Global rows.
    pub fn len(&self) -> usize {
        self.owner.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.owner.is_empty()
    }

    /// Ranks.
    pub fn parts(&self) -> usize {
        self.counts.len()
    }

    /// Rows of each rank.
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// The rank owning global row `g` (`g < len()`).
    pub fn owner(&self, g: usize) -> usize {
        self.owner[g] as usize
    }

    /// The position of global row `g` among its owner's rows.
    pub fn local_index(&self, g: usize) -> usize {
        self.local[g] as usize
    }

    /// The global rows of rank `p`, in increasing order (its local numbering).
    pub fn rows_of(&self, p: usize) -> Vec<usize> {
        (0..self.owner.len())
            .filter(|&g| self.owner[g] as usize == p)
            .collect()
    }

    /// How the partition was made (`"contiguous rows"`, `"METIS k-way"`, `"given owners"`).
    pub fn method(&self) -> &'static str {
        self.method
    }

    pub(crate) fn set_method(&mut self, method: &'static str) {
        self.method = method;
    }

    /// METIS's edge cut of the symmetrized graph, for a METIS partition.
    pub fn metis_edge_cut(&self) -> Option<usize> {
        self.metis_cut
    }

    /// Rows, nonzeros and cut nonzeros of `a` under this partition.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `a` does not have [`len`](Self::len) rows and columns.
    pub fn quality<V: Element>(&self, a: &Csr<Cpu, V>) -> Result<PartitionQuality> {
        crate::error::check_len("Partition::quality", "nrows", self.len(), a.nrows())?;
        crate::error::check_len("Partition::quality", "ncols", self.len(), a.ncols())?;
        let mut nnz = vec![0usize; self.parts()];
        let mut cut = 0usize;
        for i in 0..a.nrows() {
            let (cols, _) = a.row(i);
            let p = self.owner[i];
            nnz[p as usize] += cols.len();
            cut += cols
                .iter()
                .filter(|&&j| self.owner[j as usize] != p)
                .count();
        }
        Ok(PartitionQuality {
            row_imbalance: imbalance(&self.counts),
            nnz_imbalance: imbalance(&nnz),
            rows: self.counts.clone(),
            nnz,
            cut_nonzeros: cut,
        })
    }
}

fn check_parts(parts: usize) -> Result<()> {
    if parts == 0 {
        return Err(Error::InvalidArgument {
            op: "Partition",
            name: "parts",
            reason: "a partition needs at least one part".into(),
        });
    }
    Ok(())
}

/// The adjacency (METIS's `xadj`, `adjncy`) of the pattern of `A + Aᵀ` without the diagonal.
#[cfg(feature = "metis")]
fn symmetric_graph<V: Element>(a: &Csr<Cpu, V>) -> (Vec<metis::Idx>, Vec<metis::Idx>) {
    let t = a.transpose();
    let mut xadj = Vec::with_capacity(a.nrows() + 1);
    let mut adjncy = Vec::with_capacity(2 * a.nnz());
    xadj.push(0 as metis::Idx);
    let mut row: Vec<u32> = Vec::new();
    for i in 0..a.nrows() {
        row.clear();
        row.extend_from_slice(a.row(i).0);
        row.extend_from_slice(t.row(i).0);
        row.sort_unstable();
        row.dedup();
        adjncy.extend(
            row.iter()
                .filter(|&&j| j as usize != i)
                .map(|&j| j as metis::Idx),
        );
        xadj.push(adjncy.len() as metis::Idx);
    }
    (xadj, adjncy)
}
