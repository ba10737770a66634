//! Aggregation by a parallel maximal independent set of distance 2 (Bell, Dalton and Olson,
//! 2012): the roots are an MIS-2 of the strength graph, every other node joins the
//! aggregate of a root at distance 1, then of a neighbour already placed (distance 2).
//!
//! Ties are broken by a hash of the row index, the same on every backend, so the
//! aggregates (and the whole hierarchy) do not depend on the number of threads.

use rayon::prelude::*;

use crate::backend::Cpu;
use crate::scalar::Element;
use crate::sparse::csr::Csr;

/// A node's key in the MIS rounds: the state in the top 2 bits of the high word (2 root,
/// 1 undecided, 0 out), then 30 bits of the hash of the index; the index in the low word
/// (unique keys, so the maximum is one node). The device kernels compare the same
/// `(high, low)` pairs.
pub(crate) fn key(state: u32, i: usize) -> u64 {
    (u64::from(key_high(state, i as u32)) << 32) | i as u64
}

/// The high word of [`key`].
pub(crate) fn key_high(state: u32, i: u32) -> u32 {
    (state << 30) | (hash32(i) >> 2)
}

/// A 32-bit mixing of the row index (the "lowbias32" finalizer), computed the same way by
/// the device kernels.
pub(crate) fn hash32(i: u32) -> u32 {
    let mut x = i;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

pub(crate) const OUT: u32 = 0;
pub(crate) const UNDECIDED: u32 = 1;
pub(crate) const ROOT: u32 = 2;

/// The most MIS-2 rounds, here and on a device (where each round waits for a read to the
/// host). A round is only sure to decide the undecided node of largest key, so a graph
/// could take about `n / 3` rounds; hashed keys take a few (the number grows like
/// `log n`). The nodes still undecided after the last round become roots, the same on
/// every backend, so the aggregates do not depend on it.
pub(crate) const MAX_MIS2_ROUNDS: usize = 64;

/// `m[i] = max(own[i], max over the neighbours j of own[j])`.
fn spread<W: Element>(s: &Csr<Cpu, W>, own: &[u64], m: &mut [u64]) {
    m.par_iter_mut()
        .enumerate()
        .with_min_len(1024)
        .for_each(|(i, m)| {
            *m = s
                .row(i)
                .0
                .iter()
                .fold(own[i], |acc, &j| acc.max(own[j as usize]));
        });
}

/// The aggregate of every node (`agg[i] < count`) and the number of aggregates, from the
/// strength graph `s` (its pattern; the diagonal may be in it or not).
///
/// Every round makes the undecided node of largest key a root or puts it out; in practice
/// all are decided after a few rounds (the number grows like `log n`), and those left after
/// [`MAX_MIS2_ROUNDS`] become roots.
pub(crate) fn aggregate<W: Element>(s: &Csr<Cpu, W>) -> (Vec<u32>, usize) {
    let n = s.nrows();
    let mut state = vec![UNDECIDED; n];
    let mut own = vec![0u64; n];
    let mut m1 = vec![0u64; n];
    let mut m2 = vec![0u64; n];
    let mut undecided = n;
    for _round in 0..MAX_MIS2_ROUNDS {
        if undecided == 0 {
            break;
        }
        own.par_iter_mut()
            .zip(&state)
            .enumerate()
            .for_each(|(i, (k, &st))| *k = key(st, i));
        spread(s, &own, &mut m1);
        spread(s, &m1, &mut m2);
        state
            .par_iter_mut()
            .zip(&m2)
            .zip(&own)
            .for_each(|((st, &m), &k)| {
                if *st == UNDECIDED {
                    if (m >> 62) as u32 == ROOT {
                        *st = OUT;
                    } else if m == k {
                        *st = ROOT;
                    }
                }
            });
        let left = state.par_iter().filter(|&&st| st == UNDECIDED).count();
        if left == undecided {
            // Cannot happen (the undecided node of largest key is decided in every round);
            // should it, the undecided nodes become roots (below) rather than the loop
            // spinning.
            debug_assert!(false, "an MIS-2 round decided nothing");
            break;
        }
        undecided = left;
    }
    // The nodes still undecided after the last round become roots, as on a device: the
    // roots may then be neighbours, but every node still has an aggregate.
    if undecided > 0 {
        state
            .iter_mut()
            .filter(|st| **st == UNDECIDED)
            .for_each(|st| *st = ROOT);
    }
    // Roots numbered in index order.
    const NONE: u32 = u32::MAX;
    let mut agg = vec![NONE; n];
    let mut count = 0usize;
    for (i, &st) in state.iter().enumerate() {
        if st == ROOT {
            agg[i] = count as u32;
            count += 1;
        }
    }
    // Phase 1: the root neighbour of largest key; phase 2: the placed neighbour of
    // largest key. Each phase reads the previous one's placement only.
    for phase in 0..2 {
        let placed = agg.clone();
        agg.par_iter_mut()
            .enumerate()
            .with_min_len(1024)
            .for_each(|(i, a)| {
                if *a != NONE {
                    return;
                }
                let best = s
                    .row(i)
                    .0
                    .iter()
                    .map(|&j| j as usize)
                    .filter(|&j| placed[j] != NONE && (phase == 1 || state[j] == ROOT))
                    .max_by_key(|&j| key(state[j], j));
                if let Some(j) = best {
                    *a = placed[j];
                }
            });
    }
    // Nodes no root reaches along the graph's direction (a nonsymmetric pattern): their
    // own aggregates.
    for a in agg.iter_mut().filter(|a| **a == NONE) {
        *a = count as u32;
        count += 1;
    }
    (agg, count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::generate::{poisson2d_5pt, poisson3d_7pt};

    /// Distances from `root` along the pattern, up to 3.
    fn within(s: &Csr<Cpu, f64>, root: usize, hops: usize) -> Vec<usize> {
        let mut set = vec![root];
        for _ in 0..hops {
            let mut next = set.clone();
            for &i in &set {
                next.extend(s.row(i).0.iter().map(|&j| j as usize));
            }
            next.sort_unstable();
            next.dedup();
            set = next;
        }
        set
    }

    #[test]
    fn aggregates_are_connected_and_roots_are_an_mis2() {
        for a in [poisson2d_5pt(23).unwrap(), poisson3d_7pt(9).unwrap()] {
            let (agg, count) = aggregate(&a);
            let n = a.nrows();
            assert!(agg.iter().all(|&g| (g as usize) < count));
            // Every aggregate lies within distance 2 of one node (its root) and has at
            // least 2 members on these connected graphs (no singletons).
            let mut members = vec![Vec::new(); count];
            for (i, &g) in agg.iter().enumerate() {
                members[g as usize].push(i);
            }
            for (g, m) in members.iter().enumerate() {
                assert!(m.len() >= 2, "aggregate {g} is {m:?}");
                let centre = m
                    .iter()
                    .find(|&&r| m.iter().all(|i| within(&a, r, 2).contains(i)));
                assert!(centre.is_some(), "aggregate {g} = {m:?} has no centre");
            }
            // Coarsening by a factor typical of MIS-2: between 4 and 30 nodes each.
            let ratio = n as f64 / count as f64;
            assert!(
                (4.0..30.0).contains(&ratio),
                "{n} nodes in {count} aggregates"
            );
        }
    }

    #[test]
    fn aggregation_is_deterministic_and_handles_isolated_nodes() {
        let a = poisson2d_5pt(40).unwrap();
        let first = aggregate(&a);
        for _ in 0..3 {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(3)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| aggregate(&a)), first);
        }
        // A diagonal matrix: every node alone.
        let d = Csr::new(4, 4, vec![0, 1, 2, 3, 4], vec![0, 1, 2, 3], vec![1.0; 4]).unwrap();
        assert_eq!(aggregate(&d), (vec![0, 1, 2, 3], 4));
        // An empty pattern (no diagonal stored) too.
        let e = Csr::<Cpu, f64>::new(3, 3, vec![0, 0, 0, 0], vec![], vec![]).unwrap();
        assert_eq!(aggregate(&e), (vec![0, 1, 2], 3));
    }

    /// A path whose nodes' keys decrease along it decides 3 nodes every 2 rounds (a root
    /// at round 2t + 1, its two successors out at round 2t + 2): in the 64 rounds, the
    /// path's nodes 3t (t < 32, 0-based) become roots and the others up to 95 go out; the
    /// 204 nodes from 96 on are then made roots.
    #[test]
    fn rounds_are_capped_and_the_undecided_become_roots() {
        assert_eq!(MAX_MIS2_ROUNDS, 64);
        let n = 300;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by_key(|&i| std::cmp::Reverse(key(UNDECIDED, i)));
        let mut neighbours = vec![Vec::new(); n];
        for p in 1..n {
            neighbours[order[p - 1]].push(order[p] as u32);
            neighbours[order[p]].push(order[p - 1] as u32);
        }
        let mut row_ptr = vec![0u32];
        let mut cols = Vec::new();
        for mut row in neighbours {
            row.sort_unstable();
            cols.extend(row);
            row_ptr.push(cols.len() as u32);
        }
        let values = vec![1.0; cols.len()];
        let s = Csr::<Cpu, f64>::new(n, n, row_ptr, cols, values).unwrap();
        let (agg, count) = aggregate(&s);
        assert_eq!(count, 32 + (n - 96));
        assert!(agg.iter().all(|&g| (g as usize) < count));
        // Along the path: 3t with 3t + 1 and 3t + 2 with 3t + 3 (t < 32: 95 with 96), every
        // later node alone.
        let at = |p: usize| agg[order[p]];
        for t in 0..32 {
            assert_eq!(at(3 * t), at(3 * t + 1), "t = {t}");
            assert_eq!(at(3 * t + 2), at(3 * t + 3), "t = {t}");
        }
        for p in 97..n {
            assert_ne!(at(p), at(p - 1), "p = {p}");
        }
    }
}
