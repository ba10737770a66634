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
        fn run<B: galerkin::FullBackend>(self, b: B) -> galerkin::Result<usize> {
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
    // One buffer of the limit of `with_buffer_limit` is refused with that limit named; a
    // vector above it is stored in parts (tests/it/split.rs).
    let small = cpu.with_buffer_limit(4096).unwrap();
    match galerkin::BackendCore::alloc::<f64>(&small, 513) {
        Err(Error::ResourceLimit { limit, .. }) => assert_eq!(limit, 4096),
        other => panic!("expected ResourceLimit, got {other:?}"),
    }
    assert_eq!(Vector::<_, f64>::zeros(&small, 513).unwrap().parts(), 2);
}

/// `r` is an error (of any kind the entry point documents), never a panic.
fn err<T: std::fmt::Debug>(r: galerkin::Result<T>, what: &str) -> Error {
    match r {
        Err(e) => e,
        Ok(v) => panic!("{what}: expected an error, got Ok({v:?})"),
    }
}

/// Every safe entry point that reaches an unchecked kernel rejects a bad call with an
/// error, on every backend, and leaves its outputs as they were.
fn every_entry_point_rejects_bad_calls<B: galerkin::Backend, T: galerkin::Scalar>(b: &B) {
    use galerkin::batched::{
        cholesky_solve, gemm, gemv, inverse, lu, lu_solve, triangular_solve, Batch, Diagonal,
        GemmParams, Pivoting, Triangle,
    };
    use galerkin::solver::{
        bicgstab, cg, fgmres, gmres, mixed_solve, pcg, Identity, InnerSolve, LinearOperator,
        MixedParams, SolverParams,
    };
    use galerkin::sparse::{
        generate::poisson2d_5pt, BlockEll, Coo, Csr, CsrKernel, Ell, FormatLimits, Sell,
        SellParams, SparseMatrix, SparseStorage, StaircaseParams, StaircaseSell,
    };
    use galerkin::vector::{cg_scalars, cg_update_device, dot_into, xpay_device};

    let t = |v: f64| T::from_f64(v);
    let v = |n: usize, x: f64| Vector::<B, T>::from_slice(b, &vec![t(x); n]).unwrap();

    // Device scalars: slot out of range, too few CG slots; nothing written.
    let (x, y) = (v(6, 1.0), v(6, 2.0));
    let mut scalars = v(cg_scalars::LEN, 9.0);
    err(
        dot_into(&x, &y, &mut scalars, cg_scalars::LEN),
        "dot_into slot",
    );
    err(dot_into(&x, &v(5, 1.0), &mut scalars, 0), "dot_into length");
    let mut short = v(2, 9.0);
    let (p, q, mut xx, mut r) = (v(6, 1.0), v(6, 1.0), v(6, 1.0), v(6, 1.0));
    err(
        cg_update_device(&mut short, &p, &q, &mut xx, &mut r),
        "cg_update_device scalars",
    );
    err(xpay_device(&short, &r, &mut xx), "xpay_device scalars");
    err(
        cg_update_device(&mut scalars, &p, &v(7, 1.0), &mut xx, &mut r),
        "cg_update_device q",
    );
    assert_eq!(scalars.to_vec().unwrap(), vec![t(9.0); cg_scalars::LEN]);
    assert_eq!(xx.to_vec().unwrap(), vec![t(1.0); 6]);

    // Every sparse format: wrong x, wrong y, fused products of a non-square matrix, and a
    // bad device-scalar slot of a square one; y untouched.
    let square: Csr<galerkin::Cpu, T> = poisson2d_5pt(3).unwrap().convert();
    let rect = {
        let mut coo = Coo::<galerkin::Cpu, T>::with_capacity(4, 6, 8);
        for i in 0..4 {
            coo.push(i, i, t(2.0)).unwrap();
            coo.push(i, i + 2, t(-1.0)).unwrap();
        }
        coo.to_csr().unwrap()
    };
    fn check_format<B: galerkin::Backend, T: galerkin::Scalar, M: SparseStorage<B, T>>(
        b: &B,
        square: &M,
        rect: &M,
        name: &str,
    ) {
        let v = |n: usize, x: f64| Vector::<B, T>::from_slice(b, &vec![T::from_f64(x); n]).unwrap();
        let n = square.nrows();
        let mut y = v(n, 5.0);
        err(square.spmv(T::ONE, &v(n + 1, 1.0), T::ZERO, &mut y), name);
        err(
            square.spmv(T::ONE, &v(n, 1.0), T::ZERO, &mut v(n - 1, 1.0)),
            name,
        );
        let (rx, mut ry) = (v(rect.ncols(), 1.0), v(rect.nrows(), 5.0));
        err(rect.spmv_dot(&rx, &mut ry), name);
        let mut s = v(cg_scalars::LEN, 7.0);
        err(rect.spmv_dot_device(&rx, &mut ry, &mut s, 0), name);
        err(square.spmv_dot_device(&v(n, 1.0), &mut y, &mut s, 99), name);
        assert_eq!(
            y.to_vec().unwrap(),
            vec![T::from_f64(5.0); n],
            "{name}: y written"
        );
        assert_eq!(ry.to_vec().unwrap(), vec![T::from_f64(5.0); rect.nrows()]);
        assert_eq!(s.to_vec().unwrap(), vec![T::from_f64(7.0); cg_scalars::LEN]);
    }
    let lim = FormatLimits::unlimited();
    check_format(
        b,
        &square.to_coo().to_backend(b).unwrap(),
        &rect.to_coo().to_backend(b).unwrap(),
        "Coo",
    );
    check_format(
        b,
        &square.to_backend(b).unwrap(),
        &rect.to_backend(b).unwrap(),
        "Csr",
    );
    let ell = |a: &Csr<galerkin::Cpu, T>| Ell::from_csr(a, &lim).unwrap().to_backend(b).unwrap();
    check_format(b, &ell(&square), &ell(&rect), "Ell");
    let sell = |a: &Csr<galerkin::Cpu, T>| {
        Sell::from_csr(
            a,
            SellParams {
                slice_height: 4,
                sigma: 8,
            },
            &lim,
        )
        .unwrap()
        .to_backend(b)
        .unwrap()
    };
    check_format(b, &sell(&square), &sell(&rect), "Sell");
    let bell = |a: &Csr<galerkin::Cpu, T>| {
        BlockEll::from_csr(a, 2, &lim)
            .unwrap()
            .to_backend(b)
            .unwrap()
    };
    check_format(b, &bell(&square), &bell(&rect), "BlockEll");
    // Staircase SELL is square by construction: only the plain checks.
    let stair = StaircaseSell::from_csr(&square, StaircaseParams::default(), &lim)
        .unwrap()
        .to_backend(b)
        .unwrap();
    let mut y = v(9, 5.0);
    err(
        stair.spmv(T::ONE, &v(8, 1.0), T::ZERO, &mut y),
        "Staircase x",
    );
    err(
        stair.spmv_dot_device(&v(9, 1.0), &mut y, &mut v(2, 0.0), 2),
        "Staircase slot",
    );
    err(stair.to_permuted(&v(8, 1.0)), "Staircase to_permuted");
    assert_eq!(y.to_vec().unwrap(), vec![t(5.0); 9]);
    // A CSR kernel group that is not a power of two in 2..=32.
    let mut csr = square.to_backend(b).unwrap();
    err(
        csr.set_kernel(CsrKernel::Vector { group: 3 }),
        "Csr::set_kernel",
    );
    err(
        csr.set_kernel(CsrKernel::Vector { group: 64 }),
        "Csr::set_kernel",
    );

    // Operators: SparseMatrix and the default apply_dot_device check the slot first.
    let (m, _) = SparseMatrix::auto(b, &square).unwrap();
    let mut s = v(cg_scalars::LEN, 7.0);
    let mut y = v(9, 5.0);
    err(
        LinearOperator::<B, T>::apply_dot_device(&m, &v(9, 1.0), &mut y, &mut s, 4),
        "SparseMatrix slot",
    );
    let id = Identity::new(9);
    err(
        LinearOperator::<B, T>::apply_dot_device(&id, &v(9, 1.0), &mut y, &mut s, 4),
        "default slot",
    );
    assert_eq!(y.to_vec().unwrap(), vec![t(5.0); 9]);

    // Solvers: wrong sizes, a preconditioner of the wrong size, restart 0.
    let params = SolverParams::default();
    let bv = v(9, 1.0);
    let mut x5 = v(5, 0.0);
    err(cg(&m, &bv, &mut x5, &params), "cg x");
    err(pcg(&m, None, &v(4, 1.0), &mut v(9, 0.0), &params), "pcg b");
    let small_id = Identity::new(4);
    err(
        pcg(&m, Some(&small_id), &bv, &mut v(9, 0.0), &params),
        "pcg preconditioner",
    );
    err(
        bicgstab(&m, Some(&small_id), &bv, &mut v(9, 0.0), &params),
        "bicgstab preconditioner",
    );
    err(
        gmres(
            &m,
            None,
            &bv,
            &mut v(9, 0.0),
            &SolverParams {
                restart: 0,
                ..SolverParams::default()
            },
        ),
        "gmres restart",
    );
    let rect_op = rect.to_backend(b).unwrap();
    err(
        fgmres(&rect_op, None, &v(4, 1.0), &mut v(6, 0.0), &params),
        "fgmres non-square",
    );
    if b.info().supports_f64() && T::EPS < 1e-10 {
        let a64: Csr<B, f64> = poisson2d_5pt(3).unwrap().to_backend(b).unwrap();
        let a32_wrong: Csr<B, f32> = poisson2d_5pt(4).unwrap().convert().to_backend(b).unwrap();
        let b64 = Vector::<B, f64>::full(b, 9, 1.0).unwrap();
        let mut x64 = Vector::<B, f64>::zeros(b, 9).unwrap();
        err(
            mixed_solve(
                &a64,
                &a32_wrong,
                None,
                &b64,
                &mut x64,
                &params,
                &MixedParams::default(),
            ),
            "mixed_solve a32 shape",
        );
        let a32: Csr<B, f32> = poisson2d_5pt(3).unwrap().convert().to_backend(b).unwrap();
        let bad = MixedParams {
            inner_stop: galerkin::solver::Stopping::new(0.0, 200),
            ..MixedParams::default()
        };
        err(
            InnerSolve::<B, f32>::new(&a32, None, &bad).map(|_| ()),
            "InnerSolve rtol",
        );
    }

    // Batched: every shape error, on poisoned outputs that stay as they were.
    let ones = |c, r, k| Batch::<B, T>::from_slice(b, c, r, k, &vec![t(1.0); c * r * k]).unwrap();
    let a = ones(3, 4, 4);
    let mut c = ones(3, 4, 5);
    err(
        gemm(&GemmParams::<T>::default(), &a, &ones(3, 3, 5), &mut c),
        "gemm inner",
    );
    err(
        gemm(&GemmParams::<T>::default(), &a, &ones(2, 4, 5), &mut c),
        "gemm count",
    );
    err(
        gemm(
            &GemmParams::<T>::default().transpose_b(),
            &a,
            &ones(3, 4, 5),
            &mut c,
        ),
        "gemm op_b",
    );
    let mut yv = ones(3, 4, 1);
    err(
        gemv(&GemmParams::<T>::default(), &a, &ones(3, 4, 2), &mut yv),
        "gemv x columns",
    );
    err(
        gemv(
            &GemmParams::<T>::default().transpose_b(),
            &a,
            &ones(3, 4, 1),
            &mut yv,
        ),
        "gemv op_b",
    );
    assert!(c.to_vec().unwrap().iter().all(|&e| e == t(1.0)));
    err(
        lu::<B, T, T>(ones(3, 4, 5), Pivoting::Partial).map(|_| ()),
        "lu non-square",
    );
    err(
        lu::<B, T, T>(ones(1, 65, 65), Pivoting::Partial).map(|_| ()),
        "lu n > 64",
    );
    err(
        inverse::<B, T, T>(&ones(2, 3, 4)).map(|_| ()),
        "inverse non-square",
    );
    let f = lu::<B, T, T>(ones(3, 4, 4), Pivoting::Partial).unwrap();
    err(lu_solve::<B, T, T>(&f, &mut ones(3, 5, 2)), "lu_solve rows");
    err(
        lu_solve::<B, T, T>(&f, &mut ones(2, 4, 2)),
        "lu_solve count",
    );
    err(
        triangular_solve::<B, T, T>(
            &ones(3, 4, 5),
            Triangle::Lower,
            Diagonal::Unit,
            &mut ones(3, 4, 1),
        ),
        "triangular non-square",
    );
    err(
        triangular_solve::<B, T, T>(&a, Triangle::Upper, Diagonal::NonUnit, &mut ones(3, 3, 1)),
        "triangular rows",
    );
    err(
        cholesky_solve::<B, T, T>(&a, &mut ones(4, 4, 1)),
        "cholesky_solve count",
    );
}

crate::backend_tests!(every_entry_point_rejects_bad_calls);
