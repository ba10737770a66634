use super::*;
use crate::sparse::generate::{hdg_trace, poisson3d_27pt, poisson3d_7pt, shuffled};
use crate::sparse::random::{random_csr, RandomPattern};
use crate::sparse::reorder::permute_symmetric;

/// Expanding every level in parallel (threshold 1) gives the sequential order.
#[test]
fn parallel_levels_match_sequential() {
    let grid = poisson3d_7pt(9).unwrap();
    let shuffle = Permutation::new(shuffled(grid.nrows(), 4)).unwrap();
    let matrices = [
        permute_symmetric(&grid, &shuffle).unwrap(),
        poisson3d_27pt(6).unwrap(),
        hdg_trace(0, 7, 5, 2).unwrap().0,
        random_csr::<f64>(&RandomPattern::awkward(3000, 3000), 5).unwrap(),
    ];
    for a in &matrices {
        with_graph(a, "test", |g| {
            let levels = |search, order| Levels { search, order };
            let sequential = g.cuthill_mckee(levels(usize::MAX, usize::MAX));
            assert_eq!(g.cuthill_mckee(levels(1, 1)), sequential);
            assert_eq!(g.cuthill_mckee(levels(3, usize::MAX)), sequential);
            assert_eq!(g.cuthill_mckee(levels(usize::MAX, 3)), sequential);
        })
        .unwrap();
    }
}

#[test]
fn merge_rows_is_the_union_without_diagonal() {
    // A = [[x, x, .], [., ., x], [x, ., x]]: A + Aᵀ off the diagonal is
    // row 0: {1, 2}, row 1: {0, 2}, row 2: {0, 1}.
    let (ptr, idx) = (vec![0, 2, 3, 5], vec![0, 1, 2, 0, 2]);
    assert!(!structurally_symmetric(&ptr, &idx));
    let (t_ptr, t_idx) = pattern_transpose(3, &ptr, &idx);
    assert_eq!(
        (&t_ptr[..], &t_idx[..]),
        (&[0, 2, 3, 5][..], &[0, 2, 0, 1, 2][..])
    );
    let (offsets, adjacency) = merge_rows(&ptr, &idx, &t_ptr, &t_idx).unwrap();
    assert_eq!(offsets, [0, 2, 4, 6]);
    assert_eq!(adjacency, [1, 2, 0, 2, 0, 1]);
    assert!(structurally_symmetric(&offsets, &adjacency));
}
