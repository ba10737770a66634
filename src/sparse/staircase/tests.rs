use super::*;

#[test]
fn steps_cover_every_row_and_merge_small_groups() {
    // 1000 rows: lengths 3 (5 rows), 4 (600), 5 (10), 7 (385); C = 32, α = 0.05.
    let mut h = vec![0usize; 8];
    h[3] = 5;
    h[4] = 600;
    h[5] = 10;
    h[7] = 385;
    let steps = steps_for(&h, 1000, 32, 0.05);
    // 5 rows of length 3 merge into length 4: 605 rows -> 18 slices (576), 29 carried;
    // 29 + 10 rows of length 5 < 50 -> carried to 7: 424 rows -> 14 slices (448).
    assert_eq!(
        steps,
        vec![
            Step {
                len: 4,
                row_start: 0,
                slot_start: 0,
                slices: 18
            },
            Step {
                len: 7,
                row_start: 576,
                slot_start: 576 * 4,
                slices: 14
            },
        ]
    );
    let rows: usize = steps.iter().map(|s| s.slices * 32).sum();
    assert!((1000..1000 + 32).contains(&rows));
}
