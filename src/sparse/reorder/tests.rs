//! Unit tests of the reordering module: hand-computed cases and the error paths.

use super::*;
use crate::sparse::generate::{poisson2d_5pt, shuffled};
use crate::sparse::Coo;

/// A CSR matrix from `(row, col, value)` triplets.
fn from_triplets(n: usize, m: usize, entries: &[(u32, u32, f64)]) -> Csr<Cpu, f64> {
    let mut coo = Coo::with_capacity(n, m, entries.len());
    for &(r, c, v) in entries {
        coo.push(r as usize, c as usize, v).unwrap();
    }
    coo.to_csr().unwrap()
}

/// A symmetric pattern with a unit diagonal and the given undirected edges.
fn graph(n: usize, edges: &[(u32, u32)]) -> Csr<Cpu, f64> {
    let mut entries: Vec<(u32, u32, f64)> = (0..n as u32).map(|i| (i, i, 1.0)).collect();
    for &(i, j) in edges {
        entries.push((i, j, -1.0));
        entries.push((j, i, -1.0));
    }
    from_triplets(n, n, &entries)
}

fn dense(a: &Csr<Cpu, f64>) -> Vec<Vec<f64>> {
    let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
    for (i, row) in d.iter_mut().enumerate() {
        let (cols, vals) = a.row(i);
        for (&c, &v) in cols.iter().zip(vals) {
            row[c as usize] = v;
        }
    }
    d
}

#[test]
fn bandwidth_and_profile_by_hand() {
    // Row 0: (0,0) (0,3); row 1: empty; row 2: (2,0) (2,2); row 3: (3,1) (3,3).
    let a = from_triplets(
        4,
        4,
        &[
            (0, 0, 1.0),
            (0, 3, 1.0),
            (2, 0, 1.0),
            (2, 2, 1.0),
            (3, 1, 0.0),
            (3, 3, 1.0),
        ],
    );
    assert_eq!(bandwidth(&a), 3);
    assert_eq!(profile(&a), 2 + 2); // row 2: 2 - 0, row 3: 3 - 1 (an explicit zero counts)
    let empty = from_triplets(0, 0, &[]);
    assert_eq!(
        BandStats::of(&empty),
        BandStats {
            bandwidth: 0,
            profile: 0
        }
    );
    // Rectangular: entries right of the diagonal count for the bandwidth only.
    let wide = from_triplets(2, 10, &[(0, 9, 1.0), (1, 0, 1.0)]);
    assert_eq!((bandwidth(&wide), profile(&wide)), (9, 1));
    let stats = ReorderStats::measure(&a, &empty);
    assert!(stats.to_string().starts_with("bandwidth 3 -> 0"), "{stats}");
}

#[test]
fn length_sorts_by_hand() {
    // Row lengths [2, 0, 3, 2, 1].
    let a = from_triplets(
        5,
        5,
        &[
            (0, 0, 1.0),
            (0, 1, 1.0),
            (2, 0, 1.0),
            (2, 1, 1.0),
            (2, 2, 1.0),
            (3, 3, 1.0),
            (3, 4, 1.0),
            (4, 4, 1.0),
        ],
    );
    let asc = sort_rows_by_length(&a, LengthOrder::Ascending);
    assert_eq!(asc.new_to_old(), &[1, 4, 0, 3, 2]);
    let desc = sort_rows_by_length(&a, LengthOrder::Descending);
    assert_eq!(desc.new_to_old(), &[2, 0, 3, 4, 1]);
    // Windows of 3: [0, 1, 2] -> lengths [2, 0, 3] -> [2, 0, 1]; [3, 4] stays.
    let win = sort_rows_by_length_in_windows(&a, 3).unwrap();
    assert_eq!(win.new_to_old(), &[2, 0, 1, 3, 4]);
    assert!(sort_rows_by_length_in_windows(&a, 1).unwrap().is_identity());
    assert_eq!(sort_rows_by_length_in_windows(&a, 99).unwrap(), desc);
    let e = sort_rows_by_length_in_windows(&a, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("sigma"), "{e}");
    let empty = from_triplets(0, 3, &[]);
    assert!(sort_rows_by_length(&empty, LengthOrder::Ascending).is_empty());
}

#[test]
fn permute_symmetric_and_rows_by_hand() {
    let a = from_triplets(
        3,
        3,
        &[
            (0, 0, 1.0),
            (0, 2, 2.0),
            (1, 1, 3.0),
            (2, 0, 4.0),
            (2, 1, 5.0),
        ],
    );
    let p = Permutation::new(vec![2, 0, 1]).unwrap();
    let b = permute_symmetric(&a, &p).unwrap();
    let (da, db) = (dense(&a), dense(&b));
    for i in 0..3 {
        for j in 0..3 {
            assert_eq!(
                db[i][j],
                da[p.new_to_old()[i] as usize][p.new_to_old()[j] as usize]
            );
        }
    }
    crate::sparse::csr::validate(3, 3, b.row_ptr(), b.col_idx(), b.nnz()).unwrap();
    let r = permute_rows(&a, &p).unwrap();
    assert_eq!(dense(&r), [da[2].clone(), da[0].clone(), da[1].clone()]);
    // Errors: rectangular, wrong length.
    let wide = from_triplets(2, 3, &[(0, 2, 1.0)]);
    assert!(permute_symmetric(&wide, &Permutation::identity(2)).is_err());
    assert!(permute_rows(&wide, &Permutation::identity(2)).is_ok());
    assert!(permute_symmetric(&a, &Permutation::identity(4)).is_err());
    assert!(permute_rows(&a, &Permutation::identity(2)).is_err());
}

#[test]
fn cuthill_mckee_on_a_path_recovers_it() {
    let n = 50;
    let p = shuffled(n, 3);
    let edges: Vec<(u32, u32)> = (0..n - 1).map(|i| (p[i], p[i + 1])).collect();
    let a = graph(n, &edges);
    for order in [
        cuthill_mckee(&a).unwrap(),
        reverse_cuthill_mckee(&a).unwrap(),
    ] {
        let b = permute_symmetric(&a, &order).unwrap();
        assert_eq!(bandwidth(&b), 1);
    }
    // The endpoints have degree 1: the lower-index endpoint starts CM.
    let start = p[0].min(p[n - 1]);
    assert_eq!(cuthill_mckee(&a).unwrap().new_to_old()[0], start);
    assert_eq!(
        *reverse_cuthill_mckee(&a)
            .unwrap()
            .new_to_old()
            .last()
            .unwrap(),
        start
    );
}

#[test]
fn cuthill_mckee_by_hand() {
    // A "lollipop": a triangle 0-1-2 with a tail 2-3-4, and the isolated node 5 and the
    // edge 6-7. Minimum degree in the big component: node 4 (degree 1). From 4 the last
    // level is {0, 1}, eccentricity 3; from 0 the eccentricity is also 3: keep 4.
    // BFS from 4: 4, 3, 2, then 2's children {0, 1} by (degree 2, 2): 0, 1.
    let a = graph(8, &[(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (6, 7)]);
    assert_eq!(
        cuthill_mckee(&a).unwrap().new_to_old(),
        &[4, 3, 2, 0, 1, 5, 6, 7]
    );
    assert_eq!(
        reverse_cuthill_mckee(&a).unwrap().new_to_old(),
        &[7, 6, 5, 1, 0, 2, 3, 4]
    );
    // Neighbours by increasing degree: a star whose leaves have degrees 1, 3, 2.
    // 0 is the hub; 1 has degree 1; 2 is joined to 4 and 5; 3 to 6.
    let b = graph(7, &[(0, 1), (0, 2), (0, 3), (2, 4), (2, 5), (3, 6)]);
    let order = cuthill_mckee(&b).unwrap();
    let pos = |v: u32| order.old_to_new()[v as usize];
    // Whatever the root, when 0 is expanded its unvisited children come by degree.
    let hub = pos(0);
    let children: Vec<u32> = order.new_to_old()[hub as usize + 1..]
        .iter()
        .copied()
        .filter(|v| [1, 2, 3].contains(v))
        .collect();
    assert!(children.windows(2).all(|w| {
        let deg = |v: u32| b.row(v as usize).0.len();
        deg(w[0]) <= deg(w[1])
    }));
}

#[test]
fn cuthill_mckee_symmetrizes_the_pattern() {
    // Only the upper triangle of a 2D grid: CM must see the whole grid.
    let full = poisson2d_5pt(7).unwrap();
    let mut entries = Vec::new();
    for i in 0..full.nrows() {
        for &c in full.row(i).0.iter().filter(|&&c| c as usize >= i) {
            entries.push((i as u32, c, 1.0));
        }
    }
    let upper = from_triplets(49, 49, &entries);
    assert_eq!(
        cuthill_mckee(&upper).unwrap(),
        cuthill_mckee(&full).unwrap()
    );
    // Without a diagonal, too.
    let strict: Vec<_> = entries.iter().copied().filter(|e| e.0 != e.1).collect();
    let strict = from_triplets(49, 49, &strict);
    assert_eq!(
        cuthill_mckee(&strict).unwrap(),
        cuthill_mckee(&full).unwrap()
    );
}

#[test]
fn cuthill_mckee_edge_cases() {
    let empty = from_triplets(0, 0, &[]);
    assert!(cuthill_mckee(&empty).unwrap().is_empty());
    // No entries at all: every node is its own component, in index order.
    let zero = from_triplets(4, 4, &[]);
    assert!(cuthill_mckee(&zero).unwrap().is_identity());
    let wide = from_triplets(2, 3, &[]);
    let e = cuthill_mckee(&wide).unwrap_err().to_string();
    assert!(e.contains("cuthill_mckee") && e.contains("ncols"), "{e}");
    assert!(reverse_cuthill_mckee(&wide).is_err());
}
