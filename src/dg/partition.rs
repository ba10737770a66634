//! Element renumbering for locality (the seed's Algorithm 2): a greedy breadth-first
//! partition of the face-neighbour graph into blocks of at most `block` elements, each
//! block grown from the lowest-numbered element not yet placed. Elements of one block are
//! numbered consecutively, so a device block that owns them finds most face neighbours
//! inside itself.

use std::collections::VecDeque;

use crate::error::{Error, Result};
use crate::mesh::NO_NEIGHBOR;

/// A renumbering: `order[new] = old`, and block `b` holds new numbers
/// `starts[b] .. starts[b + 1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockOrder {
    /// Old element of every new position.
    pub order: Vec<u32>,
    /// Start of every block in `order`, and `order.len()` at the end.
    pub starts: Vec<usize>,
}

/// The greedy BFS partition of the elements with face neighbours `neighbours`
/// ([`NO_NEIGHBOR`] on the boundary) into blocks of at most `block` elements.
///
/// # Errors
/// [`Error::InvalidArgument`] for `block = 0` or a neighbour index out of range.
pub fn bfs_blocks(neighbours: &[[u32; 4]], block: usize) -> Result<BlockOrder> {
    let k = neighbours.len();
    if block == 0 {
        return Err(Error::InvalidArgument {
            op: "bfs_blocks",
            name: "block",
            reason: "a block holds at least one element".into(),
        });
    }
    if let Some((e, _)) = neighbours
        .iter()
        .enumerate()
        .find(|(_, n)| n.iter().any(|&o| o != NO_NEIGHBOR && o as usize >= k))
    {
        return Err(Error::InvalidArgument {
            op: "bfs_blocks",
            name: "neighbours",
            reason: format!("element {e} names a neighbour beyond the {k} elements"),
        });
    }
    let mut placed = vec![false; k];
    let mut order = Vec::with_capacity(k);
    let mut starts = vec![0];
    let mut next_seed = 0;
    let mut queue = VecDeque::new();
    while order.len() < k {
        while placed[next_seed] {
            next_seed += 1;
        }
        let start = order.len();
        queue.clear();
        queue.push_back(next_seed as u32);
        placed[next_seed] = true;
        while let Some(e) = queue.pop_front() {
            order.push(e);
            if order.len() - start == block {
                break;
            }
            for &o in &neighbours[e as usize] {
                if o != NO_NEIGHBOR
                    && !placed[o as usize]
                    && order.len() + queue.len() - start < block
                {
                    placed[o as usize] = true;
                    queue.push_back(o);
                }
            }
        }
        // Elements queued but not taken (block full) go back to the pool.
        for &e in &queue {
            placed[e as usize] = false;
            next_seed = next_seed.min(e as usize);
        }
        starts.push(order.len());
    }
    Ok(BlockOrder { order, starts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::structured::StructuredTets;
    use crate::mesh::tet_neighbors;

    #[test]
    fn blocks_are_a_connected_permutation() {
        let mesh = StructuredTets::unit_cube(5, 0.1, 2).build().unwrap();
        let tets = mesh.tets();
        let nb = tet_neighbors(&tets, mesh.points.len()).unwrap();
        for block in [1, 7, 32, 100] {
            let b = bfs_blocks(&nb, block).unwrap();
            let mut seen = vec![false; tets.len()];
            for &e in &b.order {
                assert!(!seen[e as usize], "element {e} twice");
                seen[e as usize] = true;
            }
            assert!(seen.iter().all(|&s| s));
            assert_eq!(*b.starts.last().unwrap(), tets.len());
            for w in b.starts.windows(2) {
                let members = &b.order[w[0]..w[1]];
                assert!(!members.is_empty() && members.len() <= block);
                // Connected: every member after the first has a neighbour placed before it
                // in the block (BFS order).
                for (i, &e) in members.iter().enumerate().skip(1) {
                    assert!(
                        nb[e as usize].iter().any(|o| members[..i].contains(o)),
                        "block {w:?}: element {e} is not reached from the block"
                    );
                }
            }
            // Most blocks are full.
            let full = b.starts.windows(2).filter(|w| w[1] - w[0] == block).count();
            assert!(
                full * block >= tets.len() / 2,
                "block {block}: {full} full blocks"
            );
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(bfs_blocks(&[[NO_NEIGHBOR; 4]], 0).is_err());
        assert!(bfs_blocks(&[[5, NO_NEIGHBOR, NO_NEIGHBOR, NO_NEIGHBOR]], 4).is_err());
        assert_eq!(bfs_blocks(&[], 4).unwrap().order.len(), 0);
    }
}
