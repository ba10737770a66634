//! Breadth-first searches on the graph: the level structures of the pseudo-peripheral node
//! search ([`Search`]) and the bitmap of visited or placed nodes ([`Bitmap`]).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

use super::{Graph, PREFETCH_DISTANCE};

/// Breadth-first searches that reset in `O(visited)`, not `O(n)`: the bits of the nodes
/// visited last are cleared. Large levels are expanded in parallel; the order inside a level
/// then varies, but the levels as sets do not, and only those are used.
pub(super) struct Search {
    seen: Bitmap,
    pub(super) visited: Vec<u32>,
    last_level_start: usize,
    parallel_level: usize,
}

impl Search {
    pub(super) fn new(n: usize, parallel_level: usize) -> Self {
        Search {
            seen: Bitmap::new(n),
            visited: Vec::new(),
            last_level_start: 0,
            parallel_level,
        }
    }

    /// Visits the component of `root` level by level; returns its eccentricity (the index
    /// of the last level).
    pub(super) fn run(&mut self, graph: &Graph, root: u32) -> usize {
        let Search {
            seen,
            visited,
            parallel_level,
            ..
        } = self;
        if visited.len() >= seen.0.len() {
            seen.clear_all();
        } else {
            for &v in visited.iter() {
                seen.remove_mut(v);
            }
        }
        visited.clear();
        visited.push(root);
        seen.insert_mut(root);
        let (mut start, mut level) = (0, 0);
        loop {
            let end = visited.len();
            if end - start < *parallel_level {
                for k in start..end {
                    if let Some(&ahead) = visited.get(k + PREFETCH_DISTANCE) {
                        graph.prefetch(ahead);
                    }
                    for w in graph.neighbours(visited[k]) {
                        if seen.insert_mut(w) {
                            visited.push(w);
                        }
                    }
                }
            } else {
                let shared = &*seen;
                let next: Vec<u32> = visited[start..end]
                    .par_chunks(256)
                    .flat_map_iter(|chunk| {
                        let mut out = Vec::new();
                        for (k, &v) in chunk.iter().enumerate() {
                            if let Some(&ahead) = chunk.get(k + PREFETCH_DISTANCE) {
                                graph.prefetch(ahead);
                            }
                            out.extend(graph.neighbours(v).filter(|&w| shared.insert(w)));
                        }
                        out
                    })
                    .collect();
                visited.extend_from_slice(&next);
            }
            if visited.len() == end {
                self.last_level_start = start;
                return level;
            }
            (start, level) = (end, level + 1);
        }
    }

    pub(super) fn last_level(&self) -> &[u32] {
        &self.visited[self.last_level_start..]
    }
}

/// One bit per node: 32 times smaller than a `u32` per node, so that the marks of a
/// breadth-first search on millions of nodes stay in cache. Shared access is atomic,
/// exclusive access plain.
pub(super) struct Bitmap(Vec<AtomicU64>);

impl Bitmap {
    pub(super) fn new(n: usize) -> Self {
        Bitmap((0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    pub(super) fn contains(&self, v: u32) -> bool {
        (self.0[v as usize / 64].load(Relaxed) >> (v % 64)) & 1 == 1
    }

    /// Sets the bit of `v` from any thread; true if this call set it.
    pub(super) fn insert(&self, v: u32) -> bool {
        let (word, mask) = (&self.0[v as usize / 64], 1u64 << (v % 64));
        word.load(Relaxed) & mask == 0 && word.fetch_or(mask, Relaxed) & mask == 0
    }

    /// Sets the bit of `v`; true if it was clear.
    pub(super) fn insert_mut(&mut self, v: u32) -> bool {
        let (word, mask) = (self.0[v as usize / 64].get_mut(), 1u64 << (v % 64));
        let was_clear = *word & mask == 0;
        *word |= mask;
        was_clear
    }

    fn remove_mut(&mut self, v: u32) {
        *self.0[v as usize / 64].get_mut() &= !(1u64 << (v % 64));
    }

    fn clear_all(&mut self) {
        self.0.iter_mut().for_each(|word| *word.get_mut() = 0);
    }
}
