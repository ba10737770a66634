//! Cuthill–McKee orderings on the symmetrized pattern, one component at a time.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

use super::Permutation;
use crate::backend::Cpu;
use crate::error::{Error, Result};
use crate::scalar::Element;
use crate::sparse::Csr;

mod pattern;
mod search;

use pattern::{merge_rows, pattern_transpose, structurally_symmetric};
use search::{Bitmap, Search};

/// Rounds of the George–Liu search for a pseudo-peripheral node before the current
/// candidate is accepted. Each round is one breadth-first search of the component and the
/// search stops as soon as the eccentricity stops growing, which on meshes takes 1 or 2
/// rounds; the cap keeps the worst case linear in the size of the component.
const MAX_PERIPHERAL_ROUNDS: usize = 32;

/// How many nodes ahead of its turn in a breadth-first queue a node's adjacency list is
/// prefetched.
const PREFETCH_DISTANCE: usize = 16;

/// Which breadth-first levels are expanded in parallel: those of at least this many nodes.
/// The searches are bound by memory latency, which threads hide; below a few thousand
/// nodes a level is not worth a fork.
#[derive(Clone, Copy, Debug)]
struct Levels {
    /// In the level structures of the George–Liu search (no extra work in parallel).
    search: usize,
    /// In the Cuthill–McKee order itself, which reads each level's adjacency twice in
    /// parallel (claim, then gather) instead of once.
    order: usize,
}

impl Levels {
    const PARALLEL: usize = 2048;

    /// Parallel searches with two threads or more; the parallel order, which does twice the
    /// reads, from four threads on.
    fn for_threads() -> Self {
        let threads = rayon::current_num_threads();
        Levels {
            search: if threads > 1 {
                Self::PARALLEL
            } else {
                usize::MAX
            },
            order: if threads >= 4 {
                Self::PARALLEL
            } else {
                usize::MAX
            },
        }
    }
}

/// The Cuthill–McKee ordering of the square matrix `a`.
///
/// Works on the graph of `A + Aᵀ` without the diagonal, so any square pattern is accepted.
/// Connected components are ordered one after the other, in the order of their smallest
/// (original) index. Each starts from a pseudo-peripheral node (George–Liu: from a node of
/// minimum degree of the component, repeat a breadth-first search from a minimum-degree
/// node of the last level while the eccentricity grows) and is ordered breadth first,
/// the unvisited neighbours of each node appended in increasing degree, ties by index.
/// Every tie is broken by index, so the result is deterministic, and the same with any
/// number of threads.
///
/// Cost: `O(nnz log d)` for the largest degree `d`, in about four breadth-first passes
/// over the graph whose large levels run in parallel; memory `O(n)` beside the matrix when
/// the pattern is structurally symmetric, `O(n + nnz)` otherwise (the pattern of `Aᵀ`).
///
/// # Errors
/// [`Error::DimensionMismatch`] if `a` is not square; [`Error::InvalidMatrix`] if the
/// symmetrized pattern has more than `u32::MAX` entries.
pub fn cuthill_mckee<V: Element>(a: &Csr<Cpu, V>) -> Result<Permutation> {
    let order = with_graph(a, "cuthill_mckee", |g| {
        g.cuthill_mckee(Levels::for_threads())
    })?;
    Ok(Permutation::from_new_to_old_trusted(order))
}

/// The reverse Cuthill–McKee ordering: [`cuthill_mckee`] read backwards. It has the same
/// bandwidth and, on most matrices, a smaller profile (less fill in a banded factorization).
///
/// # Errors
/// As [`cuthill_mckee`].
pub fn reverse_cuthill_mckee<V: Element>(a: &Csr<Cpu, V>) -> Result<Permutation> {
    let mut order = with_graph(a, "reverse_cuthill_mckee", |g| {
        g.cuthill_mckee(Levels::for_threads())
    })?;
    order.reverse();
    Ok(Permutation::from_new_to_old_trusted(order))
}

/// Runs `f` on the graph of `A + Aᵀ` without self loops. A structurally symmetric pattern
/// is used as it is (its diagonal skipped on the fly); otherwise each row is merged with
/// the same row of `Aᵀ`.
fn with_graph<V: Element, R>(
    a: &Csr<Cpu, V>,
    op: &'static str,
    f: impl FnOnce(&Graph) -> R,
) -> Result<R> {
    if a.nrows() != a.ncols() {
        return Err(Error::dims(op, "ncols", a.nrows(), a.ncols()));
    }
    let (row_ptr, col_idx) = (a.row_ptr(), a.col_idx());
    if structurally_symmetric(row_ptr, col_idx) {
        Ok(f(&Graph::new(row_ptr, col_idx)))
    } else {
        let (t_ptr, t_idx) = pattern_transpose(a.nrows(), row_ptr, col_idx);
        let (offsets, adjacency) = merge_rows(row_ptr, col_idx, &t_ptr, &t_idx)?;
        drop((t_ptr, t_idx));
        Ok(f(&Graph::new(&offsets, &adjacency)))
    }
}

/// An undirected graph in CSR form. Adjacency lists may contain the node itself (the
/// diagonal of a borrowed symmetric pattern); [`neighbours`](Self::neighbours) skips it.
struct Graph<'a> {
    offsets: &'a [u32],
    adjacency: &'a [u32],
    degree: Vec<u32>,
}

impl<'a> Graph<'a> {
    fn new(offsets: &'a [u32], adjacency: &'a [u32]) -> Self {
        let degree = (0..offsets.len() - 1)
            .into_par_iter()
            .with_min_len(4096)
            .map(|v| {
                let list = &adjacency[offsets[v] as usize..offsets[v + 1] as usize];
                let with_self = list.binary_search(&(v as u32)).is_ok();
                list.len() as u32 - u32::from(with_self)
            })
            .collect();
        Graph {
            offsets,
            adjacency,
            degree,
        }
    }

    fn len(&self) -> usize {
        self.degree.len()
    }

    fn neighbours(&self, v: u32) -> impl Iterator<Item = u32> + '_ {
        let (s, e) = (
            self.offsets[v as usize] as usize,
            self.offsets[v as usize + 1] as usize,
        );
        self.adjacency[s..e]
            .iter()
            .copied()
            .filter(move |&w| w != v)
    }

    /// Asks the cache for the adjacency list of `v`, a few nodes ahead of its turn in a
    /// breadth-first queue: in that order consecutive nodes lie far apart in memory, and the
    /// searches are bound by these misses.
    #[inline]
    fn prefetch(&self, v: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let start = self.offsets[v as usize] as usize;
            if let Some(first) = self.adjacency.get(start) {
                // SAFETY: a prefetch only hints the cache; the pointer is in bounds anyway.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(first).cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = v;
    }

    /// The `(degree, index)` key that orders nodes by degree, ties by index; the node is
    /// its low 32 bits.
    fn key(&self, v: u32) -> u64 {
        (u64::from(self.degree[v as usize]) << 32) | u64::from(v)
    }

    /// The node of least key in `nodes`; `nodes[0]` (or node 0) if none is less, which
    /// covers the empty list that a component never is.
    fn min_key(&self, nodes: &[u32]) -> u32 {
        let key = |&v: &u32| self.key(v);
        let least = if nodes.len() >= Levels::PARALLEL {
            nodes.par_iter().map(key).min()
        } else {
            nodes.iter().map(key).min()
        };
        // The low 32 bits of the key are the node.
        least.map_or(nodes.first().copied().unwrap_or(0), |k| k as u32)
    }

    /// The Cuthill–McKee order (`new_to_old`), component by component. Large levels are
    /// expanded in parallel as `levels` says, with the same result.
    fn cuthill_mckee(&self, levels: Levels) -> Vec<u32> {
        let n = self.len();
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut search = Search::new(n, levels.search);
        let mut placed = Bitmap::new(n);
        // Claims serve the parallel expansion only.
        let claim: Vec<AtomicU32> = if levels.order < n {
            (0..n).map(|_| AtomicU32::new(u32::MAX)).collect()
        } else {
            Vec::new()
        };
        let mut last = Vec::new();
        let mut children: Vec<u64> = Vec::new();
        for seed in 0..n as u32 {
            if placed.contains(seed) {
                continue;
            }
            let root = if self.degree[seed as usize] == 0 {
                seed
            } else {
                self.pseudo_peripheral(seed, &mut search, &mut last)
            };
            // Breadth first from the root, level by level; `order` is the queue.
            let mut start = order.len();
            order.push(root);
            placed.insert_mut(root);
            while start < order.len() {
                let end = order.len();
                if end - start < levels.order {
                    for k in start..end {
                        if let Some(&ahead) = order.get(k + PREFETCH_DISTANCE) {
                            self.prefetch(ahead);
                        }
                        let v = order[k];
                        children.clear();
                        children.extend(
                            self.neighbours(v)
                                .filter(|&w| !placed.contains(w))
                                .map(|w| self.key(w)),
                        );
                        children.sort_unstable();
                        for &c in &children {
                            placed.insert_mut(c as u32);
                            order.push(c as u32);
                        }
                    }
                } else {
                    let next = self.expand_level(&order[start..end], &placed, &claim);
                    order.extend_from_slice(&next);
                }
                start = end;
            }
        }
        order
    }

    /// The next Cuthill–McKee level after `level`, in parallel. Sequentially, the parent
    /// at position `p` of the level takes its unplaced neighbours that no earlier parent
    /// took: here every such node is first claimed by its earliest parent (an atomic
    /// minimum), then each parent lists the nodes it claimed by increasing key. The result
    /// is the sequential one.
    fn expand_level(&self, level: &[u32], placed: &Bitmap, claim: &[AtomicU32]) -> Vec<u32> {
        const CHUNK: usize = 256;
        // Every node claimed here is placed below, so the claims of unplaced nodes are
        // still u32::MAX: no reset is needed.
        level
            .par_iter()
            .enumerate()
            .with_min_len(CHUNK)
            .for_each(|(p, &v)| {
                if let Some(&ahead) = level.get(p + PREFETCH_DISTANCE) {
                    self.prefetch(ahead);
                }
                for w in self.neighbours(v) {
                    if !placed.contains(w) {
                        claim[w as usize].fetch_min(p as u32, Relaxed);
                    }
                }
            });
        let next: Vec<u32> = level
            .par_chunks(CHUNK)
            .enumerate()
            .flat_map_iter(|(c, chunk)| {
                let mut out = Vec::new();
                let mut children: Vec<u64> = Vec::new();
                for (k, &v) in chunk.iter().enumerate() {
                    if let Some(&ahead) = chunk.get(k + PREFETCH_DISTANCE) {
                        self.prefetch(ahead);
                    }
                    let p = (c * CHUNK + k) as u32;
                    children.clear();
                    children.extend(
                        self.neighbours(v)
                            .filter(|&w| {
                                !placed.contains(w) && claim[w as usize].load(Relaxed) == p
                            })
                            .map(|w| self.key(w)),
                    );
                    children.sort_unstable();
                    out.extend(children.iter().map(|&c| c as u32));
                }
                out
            })
            .collect();
        next.par_iter().with_min_len(CHUNK).for_each(|&w| {
            placed.insert(w);
        });
        next
    }

    /// A pseudo-peripheral node of the component of `seed` (George–Liu).
    fn pseudo_peripheral(&self, seed: u32, search: &mut Search, last: &mut Vec<u32>) -> u32 {
        // The first search finds the component and its minimum-degree node; when that is
        // the seed itself (a corner of a naturally numbered grid), it is also the first
        // level structure.
        let mut eccentricity = search.run(self, seed);
        let mut root = self.min_key(&search.visited);
        if root != seed {
            eccentricity = search.run(self, root);
        }
        last.clear();
        last.extend_from_slice(search.last_level());
        for _ in 0..MAX_PERIPHERAL_ROUNDS {
            let candidate = self.min_key(last);
            let e = search.run(self, candidate);
            if e <= eccentricity {
                break;
            }
            (root, eccentricity) = (candidate, e);
            last.clear();
            last.extend_from_slice(search.last_level());
        }
        root
    }
}

#[cfg(test)]
mod tests;
