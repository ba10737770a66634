//! The public verification harness: it passes correct results and catches wrong ones.

use galerkin::scalar::tolerance;
use galerkin::verify::{check, compare, random_vec, round_to, standard_checks, Check, Rng};
use galerkin::{Backend, DType, Scalar};

use crate::backend_tests;

fn standard_checks_pass<B: Backend, T: Scalar>(b: &B) {
    for c in standard_checks() {
        let report = check::<B, T, _>(b, &c).unwrap();
        assert!(
            report.passed,
            "{} on {} in {}: {report}",
            c.name(),
            b.info(),
            T::DTYPE
        );
    }
}

backend_tests!(standard_checks_pass);

#[test]
fn comparison_reports_error_ulps_and_location() {
    let reference: Vec<f64> = (1..=100).map(|i| i as f64).collect();
    let mut result: Vec<f32> = reference.iter().map(|&v| v as f32).collect();
    let exact = compare(&result, &reference, tolerance::<f32>(1)).unwrap();
    assert!(exact.passed);
    assert_eq!((exact.max_ulp, exact.rel_error), (0, 0.0));

    // Move entry 41 by 3 ulp: caught as 3 ulp at index 41, still within tolerance.
    result[41] = f32::from_bits(result[41].to_bits() + 3);
    let c = compare(&result, &reference, tolerance::<f32>(1)).unwrap();
    assert_eq!((c.max_ulp, c.max_ulp_index), (3, Some(41)));
    assert!(c.passed, "{c}");

    // A real error fails, and so does a NaN where the reference is finite.
    result[7] = 8.5;
    let c = compare(&result, &reference, tolerance::<f32>(1)).unwrap();
    assert!(!c.passed && c.max_ulp_index == Some(7), "{c}");
    result[7] = f32::NAN;
    let c = compare(&result, &reference, 1.0).unwrap();
    assert!(!c.passed && c.nonfinite == 1, "{c}");
    assert!(c.to_string().starts_with("FAIL"));
    assert!(compare(&result[..5], &reference, 1.0).is_err());
}

#[test]
fn rounding_inputs_matches_the_element_type() {
    let v = random_vec::<f64>(1000, 3);
    let r = round_to(&v, DType::F32);
    assert!(v.iter().zip(&r).all(|(a, b)| (*a as f32) as f64 == *b));
    assert_ne!(v, r);
    assert_eq!(round_to(&v, DType::F64), v);
    let h = round_to(&v, DType::BF16);
    assert!(v
        .iter()
        .zip(&h)
        .all(|(a, b)| (a - b).abs() <= a.abs() * 4e-3));
}

#[test]
fn rng_is_reproducible_and_uniform() {
    let (mut a, mut b) = (Rng::new(42), Rng::new(42));
    let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
    assert!(xs.iter().all(|&x| x == b.next_u64()));
    let mut r = Rng::new(1);
    let u: Vec<f64> = (0..100_000).map(|_| r.uniform()).collect();
    let mean = u.iter().sum::<f64>() / u.len() as f64;
    assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    assert!((mean - 0.5).abs() < 0.01, "{mean}");
    assert!((0..1000).all(|_| r.below(7) < 7));
}
