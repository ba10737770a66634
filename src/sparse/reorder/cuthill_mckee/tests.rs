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
