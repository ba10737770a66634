//! Bad input gives a typed error that says what is wrong, never a panic.

use galerkin::vector::{cg_update, pointwise_mul_dot};
use galerkin::{BackendCore, BackendKind, Cpu, DType, Error, Vector};

fn vec_f64(n: usize) -> Vector<Cpu, f64> {
    Vector::from_slice(&Cpu::new(), &vec![1.0; n]).unwrap()
}

fn assert_mismatch<T: std::fmt::Debug>(r: galerkin::Result<T>, op: &str, what: &str) {
    match r {
        Err(Error::DimensionMismatch {
            op: o,
            what: w,
            expected: 3,
            found: 4,
        }) => {
            assert_eq!((o, w), (op, what));
        }
        other => panic!("expected a dimension mismatch in {op}/{what}, got {other:?}"),
    }
}

#[test]
fn every_vector_op_rejects_mismatched_lengths() {
    let (mut y, x) = (vec_f64(3), vec_f64(4));
    assert_mismatch(y.copy_from(&x), "copy", "x");
    assert_mismatch(y.axpy(1.0, &x), "axpy", "x");
    assert_mismatch(y.axpby(1.0, &x, 1.0), "axpby", "x");
    assert_mismatch(y.dot(&x), "dot", "y");
    let z = vec_f64(3);
    assert_mismatch(y.pointwise_mul(&x, &z), "pointwise_mul", "x");
    assert_mismatch(y.pointwise_div(&z, &x), "pointwise_div", "y");
    assert_mismatch(
        y.convert_from(&Vector::<Cpu, f32>::zeros(&Cpu::new(), 4).unwrap()),
        "convert",
        "x",
    );
    assert_mismatch(y.write(&[1.0; 4]), "Vector::write", "data");
    let (p, q, mut r) = (vec_f64(3), vec_f64(4), vec_f64(3));
    assert_mismatch(cg_update(1.0, &p, &q, &mut y, &mut r), "cg_update", "q");
    assert_mismatch(pointwise_mul_dot(&z, &x, &mut y), "pointwise_mul_dot", "r");
    // Nothing was modified by the failed calls.
    assert_eq!(y.to_vec().unwrap(), vec![1.0; 3]);
}

#[test]
fn unsupported_precision_is_an_error_not_a_crash() {
    let no_f64 = Cpu::with_dtypes(&[DType::F32, DType::U32, DType::I32]);
    assert!(!no_f64.info().supports_f64());
    match Vector::<_, f64>::zeros(&no_f64, 10) {
        Err(Error::Unsupported { what, .. }) => assert!(what.contains("f64"), "{what}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    // f32 still works, and so does an f32 check through the verify harness.
    let x = Vector::<_, f32>::from_slice(&no_f64, &[3.0, 4.0]).unwrap();
    assert_eq!(x.nrm2().unwrap(), 5.0);
    let r = galerkin::verify::check::<_, f64, _>(
        &no_f64,
        &galerkin::verify::StandardCheck::Dot { len: 10, seed: 1 },
    );
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
}

#[test]
fn backend_names_parse_or_explain() {
    assert_eq!("CPU".parse::<BackendKind>().unwrap(), BackendKind::Cpu);
    assert_eq!(" wgpu ".parse::<BackendKind>().unwrap(), BackendKind::Wgpu);
    assert_eq!("cuda".parse::<BackendKind>().unwrap(), BackendKind::Cuda);
    let e = "metal".parse::<BackendKind>().unwrap_err();
    assert!(matches!(e, Error::UnknownBackend(ref s) if s == "metal"));
    assert!(e.to_string().contains("expected one of"), "{e}");
}

#[test]
fn backends_not_compiled_in_say_which_feature() {
    struct Len;
    impl galerkin::BackendTask for Len {
        type Output = usize;
        fn run<B: galerkin::Backend>(self, b: B) -> galerkin::Result<usize> {
            Ok(Vector::<B, f32>::zeros(&b, 7)?.len())
        }
    }
    assert_eq!(galerkin::with_backend(BackendKind::Cpu, Len).unwrap(), 7);
    for kind in [BackendKind::Wgpu, BackendKind::Cuda] {
        if !kind.is_compiled() {
            match galerkin::with_backend(kind, Len) {
                Err(Error::BackendUnavailable { reason, .. }) => {
                    assert!(
                        reason.contains(&format!("--features {}", kind.name())),
                        "{reason}"
                    )
                }
                other => panic!("expected BackendUnavailable for {kind}, got {other:?}"),
            }
        }
    }
}

#[test]
fn impossible_allocations_are_errors() {
    let cpu = Cpu::new();
    match Vector::<_, f64>::zeros(&cpu, usize::MAX / 16) {
        Err(Error::ResourceLimit { requested, .. }) => assert!(requested > 1 << 60),
        other => panic!("expected ResourceLimit, got {other:?}"),
    }
    #[cfg(feature = "wgpu")]
    if let Some(wgpu) = crate::harness::wgpu() {
        let too_many = (wgpu.info().max_buffer_bytes / 4 + 1) as usize;
        match Vector::<_, f32>::zeros(&wgpu, too_many) {
            Err(Error::ResourceLimit { limit, .. }) => {
                assert_eq!(limit, wgpu.info().max_buffer_bytes)
            }
            other => panic!("expected ResourceLimit, got {other:?}"),
        }
    }
}
