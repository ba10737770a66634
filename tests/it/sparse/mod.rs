//! Sparse formats: SpMV of every format on every backend and precision against a plain f64
//! loop over the CSR matrix; conversions; error paths.
//!
//! The helpers here (the test patterns, the f64 reference, the SpMV check every format runs)
//! are shared by the files of the module and by `dia` and `split`.

use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{Csr, FormatLimits};
use galerkin::verify::{poison, random_vec};
use galerkin::{Backend, Cpu, Element, Scalar, Vector};

use crate::harness::{assert_close, exact_sum};

mod algebra;
mod conversion;
mod matrix;
mod smoothing;
mod split;
mod spmv;

/// The test patterns: empty, 1 x 1, rectangular both ways, awkward (empty rows, a long row),
/// and sizes that are not multiples of any slice height or block size.
pub fn patterns() -> Vec<RandomPattern> {
    vec![
        RandomPattern::uniform(0, 0, 0, 0),
        RandomPattern::uniform(1, 1, 1, 1),
        RandomPattern::awkward(1, 1),
        RandomPattern::uniform(37, 1000, 0, 30),
        RandomPattern::uniform(1000, 37, 1, 5),
        RandomPattern::awkward(1003, 1003),
        RandomPattern::awkward(40_009, 40_009),
        RandomPattern::uniform(20_011, 20_011, 20, 60),
    ]
}

/// f64 reference `alpha A x + beta y` by a compensated sum per row.
pub fn reference<V: Element, T: Scalar>(
    a: &Csr<Cpu, V>,
    alpha: f64,
    x: &[T],
    beta: f64,
    y: &[T],
) -> Vec<f64> {
    (0..a.nrows())
        .map(|r| {
            let (cols, vals) = a.row(r);
            let ax = exact_sum(
                cols.iter()
                    .zip(vals)
                    .map(|(&c, v)| v.as_f64() * x[c as usize].as_f64()),
            );
            alpha * ax
                + if beta == 0.0 {
                    0.0
                } else {
                    beta * y[r].as_f64()
                }
        })
        .collect()
}

/// Runs `spmv` through `run` for every pattern, with `beta = 0` on a poisoned `y` and with
/// `beta != 0`, values stored as `V`. `run` may refuse a conversion with `Error::Padding`
/// (then nothing is compared).
pub fn check_spmv<B: Backend, V: Element, T: Scalar>(
    b: &B,
    name: &str,
    run: impl Fn(&Csr<Cpu, V>, T, &Vector<B, T>, T, &mut Vector<B, T>) -> galerkin::Result<()>,
) {
    let mut refused = 0;
    for (i, p) in patterns().iter().enumerate() {
        let a = random_csr::<V>(p, 100 + i as u64).unwrap();
        let xs = random_vec::<T>(p.ncols, 7);
        let ys = random_vec::<T>(p.nrows, 8);
        let x = Vector::from_slice(b, &xs).unwrap();
        let terms = a.stats().max.max(1) + 1;
        for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.25)] {
            let mut y = if beta == 0.0 {
                Vector::from_slice(b, &poison::<T>(p.nrows)).unwrap()
            } else {
                Vector::from_slice(b, &ys).unwrap()
            };
            match run(&a, T::from_f64(alpha), &x, T::from_f64(beta), &mut y) {
                Ok(()) => {}
                Err(galerkin::Error::Padding { ratio, limit, .. }) => {
                    assert!(ratio > limit);
                    refused += 1;
                    break;
                }
                Err(e) => panic!("{name} {}x{}: {e}", p.nrows, p.ncols),
            }
            let expected = reference(&a, alpha, &xs, beta, &ys);
            let case = format!(
                "{name} {}x{} nnz={} values {} beta={beta}",
                p.nrows,
                p.ncols,
                a.nnz(),
                V::DTYPE
            );
            assert_close(&y.to_vec().unwrap(), &expected, terms, &case);
        }
    }
    // Only the two large patterns may exceed the padding limit.
    assert!(
        refused <= 2,
        "{name}: {refused} of the test matrices refused"
    );
}

/// ELL limits for a test matrix: unlimited padding while the padded matrix stays small
/// (so the long-row cases are computed), the default limit beyond (so they are refused).
fn ell_limits<V: Element>(a: &Csr<Cpu, V>) -> FormatLimits {
    if a.nrows() * a.stats().max <= 1 << 22 {
        FormatLimits::unlimited()
    } else {
        FormatLimits::default()
    }
}

/// Whether DIA would store more than 2²² slots for `a` (random columns: up to `nrows + ncols`
/// diagonals).
fn too_many_diagonals<V: Element>(a: &Csr<Cpu, V>) -> bool {
    galerkin::sparse::diagonal_offsets(a, (1 << 22) / a.nrows().max(1)).is_none()
}
