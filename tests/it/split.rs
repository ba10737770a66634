//! Vectors longer than one buffer, stored in parts, and the sparse products and Krylov
//! solvers on them: on every backend with a lowered buffer limit
//! (`BackendCore::with_buffer_limit`: parts of 2048 values), against the same operations on
//! vectors in one buffer and the f64 reference; and on wgpu above the device's own limit
//! (lavapipe: 128 MiB).

use galerkin::backend::vector_part_len;
use galerkin::solver::{bicgstab, cg, gmres, pcg, Jacobi, LinearOperator, Progress, SolverParams};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::random::{random_csr, RandomPattern};
use galerkin::sparse::{Csr, Format, FormatLimits, FormatOptions, SparseMatrix, SPLIT_ROW_ALIGN};
use galerkin::vector::{
    cg_scalars, cg_update, cg_update_device, cgcg_update, dot_into, jacobi_xpay_device,
    pcg_jacobi_update_device, pointwise_mul_dot, xpay_device, CgCgU,
};
use galerkin::verify::{poison, random_range, random_vec};
use galerkin::{Backend, BackendCore, Cpu, Error, Scalar, Vector};

use crate::backend_tests;
use crate::harness::{assert_close, exact_sum, widen};
use crate::sparse::reference;

/// The lowered limit: parts of 2048 values.
const LIMIT: u64 = 16 * 1024;

fn limited<B: Backend>(b: &B) -> B {
    b.with_buffer_limit(LIMIT).unwrap()
}

/// `|got − want| ≤ 100 ε Σ|terms|`.
#[track_caller]
fn assert_sum<T: Scalar>(got: T, want: f64, scale: f64, what: &str) {
    let err = (got.as_f64() - want).abs();
    assert!(
        err <= 100.0 * T::EPS * scale.max(f64::MIN_POSITIVE),
        "{what} ({}): {got} vs {want}",
        T::DTYPE
    );
}

/// Element-wise results on split vectors equal those on whole vectors bit for bit (the same
/// kernel per element); reductions match the f64 reference; the device-scalar steps of CG
/// keep their contract.
fn split_vector_ops<B: Backend, T: Scalar>(b: &B) {
    let s = limited(b);
    let part = vector_part_len(LIMIT);
    assert_eq!(part, 2048);
    for len in [part, part + 1, 3 * part + 517] {
        let xs = random_vec::<T>(len, 1);
        let ys = random_vec::<T>(len, 2);
        let ds = random_range::<T>(len, 0.5, 2.0, 3);
        let split = |v: &[T]| Vector::from_slice(&s, v).unwrap();
        let whole = |v: &[T]| Vector::from_slice(b, v).unwrap();
        let x = split(&xs);
        assert_eq!(x.parts(), len.div_ceil(part), "len {len}");
        assert_eq!(x.len(), len);
        assert_eq!(x.to_vec().unwrap(), xs);

        // Element-wise: identical to the whole-vector kernels.
        let alpha = T::from_f64(-0.625);
        let beta = T::from_f64(1.375);
        type Op<'a, B, T> = &'a dyn Fn(&mut Vector<B, T>, &Vector<B, T>, &Vector<B, T>);
        let ops: [(&str, Op<B, T>); 6] = [
            ("copy", &|y, x, _| y.copy_from(x).unwrap()),
            ("scale", &|y, _, _| y.scale(alpha).unwrap()),
            ("axpy", &|y, x, _| y.axpy(alpha, x).unwrap()),
            ("axpby", &|y, x, _| y.axpby(alpha, x, beta).unwrap()),
            ("mul", &|z, x, y| z.pointwise_mul(x, y).unwrap()),
            ("div", &|z, x, y| z.pointwise_div(x, y).unwrap()),
        ];
        for (name, op) in ops {
            let mut got = split(&poison::<T>(len));
            let mut want = whole(&poison::<T>(len));
            if name == "scale" || name == "axpy" || name == "axpby" {
                got.write(&ys).unwrap();
                want.write(&ys).unwrap();
            }
            op(&mut got, &x, &split(&ds));
            op(&mut want, &whole(&xs), &whole(&ds));
            assert_eq!(
                got.to_vec().unwrap(),
                want.to_vec().unwrap(),
                "{name}, len {len}"
            );
        }
        let mut filled = split(&poison::<T>(len));
        filled.fill(beta).unwrap();
        assert!(filled.to_vec().unwrap().iter().all(|&v| v == beta));
        let wide = x.to_precision::<f32>().unwrap();
        assert_eq!(wide.parts(), x.parts());
        let xs32: Vec<f32> = xs.iter().map(|v| v.convert()).collect();
        assert_eq!(wide.to_vec().unwrap(), xs32);

        // Reductions against the f64 reference.
        let y = split(&ys);
        let terms = || xs.iter().zip(&ys).map(|(a, b)| a.as_f64() * b.as_f64());
        let scale = exact_sum(terms().map(f64::abs));
        assert_sum(x.dot(&y).unwrap(), exact_sum(terms()), scale, "dot");
        let sq = exact_sum(xs.iter().map(|v| v.as_f64().powi(2)));
        assert_sum(x.nrm2().unwrap(), sq.sqrt(), sq.sqrt(), "nrm2");
        let amax = xs.iter().map(|v| v.as_f64().abs()).fold(0.0, f64::max);
        assert_eq!(x.amax().unwrap().as_f64(), amax);
        let mut nan = xs.clone();
        nan[len - 1] = T::from_f64(f64::NAN);
        assert!(split(&nan).amax().unwrap().as_f64().is_nan());
        assert!(split(&nan).nrm2().unwrap().as_f64().is_nan());

        // The fused CG update and the Jacobi step.
        let (mut x1, mut r1) = (split(&xs), split(&ys));
        let (mut x2, mut r2) = (whole(&xs), whole(&ys));
        let (p, q) = (random_vec::<T>(len, 4), random_vec::<T>(len, 5));
        let rr1 = cg_update(alpha, &split(&p), &split(&q), &mut x1, &mut r1).unwrap();
        let rr2 = cg_update(alpha, &whole(&p), &whole(&q), &mut x2, &mut r2).unwrap();
        assert_eq!(x1.to_vec().unwrap(), x2.to_vec().unwrap(), "cg_update x");
        let r = r2.to_vec().unwrap();
        assert_eq!(r1.to_vec().unwrap(), r, "cg_update r");
        let rr = exact_sum(r.iter().map(|v| v.as_f64().powi(2)));
        assert_sum(rr1, rr, rr, "cg_update r·r");
        assert_sum(rr2, rr, rr, "cg_update r·r (whole)");
        let mut z1 = split(&poison::<T>(len));
        let rz1 = pointwise_mul_dot(&split(&ds), &split(&r), &mut z1).unwrap();
        let rz = exact_sum(
            r.iter()
                .zip(&ds)
                .map(|(r, d)| r.as_f64().powi(2) * d.as_f64()),
        );
        assert_sum(rz1, rz, rz, "pointwise_mul_dot");
        let mut z2 = whole(&poison::<T>(len));
        pointwise_mul_dot(&whole(&ds), &whole(&r), &mut z2).unwrap();
        assert_eq!(z1.to_vec().unwrap(), z2.to_vec().unwrap());

        device_scalars::<B, T>(b, &s, len);
        cgcg_parts::<B, T>(b, &s, len);
        flexible_low_parts::<B, T>(b, &s, len);
    }
}

/// The Chronopoulos–Gear step (Jacobi form) on split vectors: the vectors equal the
/// whole-vector step's bit for bit, the two sums within round-off, the other slots kept.
fn cgcg_parts<B: Backend, T: Scalar>(b: &B, s: &B, len: usize) {
    let vecs: Vec<Vec<T>> = (0..6).map(|k| random_vec::<T>(len, 40 + k)).collect();
    let ds = random_range::<T>(len, 0.5, 2.0, 50);
    let start = vec![T::from_f64(-9.0); 3];
    let mut results: Vec<(Vec<T>, Vec<Vec<T>>)> = Vec::new();
    for backend in [s, b] {
        let v = |k: usize| Vector::from_slice(backend, &vecs[k]).unwrap();
        let d = Vector::from_slice(backend, &ds).unwrap();
        let mut sc = Vector::from_slice(backend, &start).unwrap();
        let (w, mut p, mut sv, mut x, mut r, mut u) = (v(0), v(1), v(2), v(3), v(4), v(5));
        let (a, be) = (T::from_f64(0.375), T::from_f64(0.8125));
        let m = CgCgU::Jacobi { d: &d, u: &mut u };
        cgcg_update(
            a,
            be,
            m,
            &w,
            &mut p,
            &mut sv,
            &mut x,
            &mut r,
            &mut sc,
            [2, 0],
        )
        .unwrap();
        let out = [&p, &sv, &x, &r, &u].map(|v| v.to_vec().unwrap()).to_vec();
        results.push((sc.to_vec().unwrap(), out));
    }
    let (split, whole) = (&results[0], &results[1]);
    assert_eq!(split.1, whole.1, "cgcg_update vectors, len {len}");
    let (r, u) = (widen(&whole.1[3]), widen(&whole.1[4]));
    let rr = exact_sum(r.iter().map(|v| v * v));
    let ru = exact_sum(r.iter().zip(&u).map(|(r, u)| r * u));
    for sc in [&split.0, &whole.0] {
        assert_sum(sc[2], rr, rr, "cgcg_update r·r");
        assert_sum(sc[0], ru, ru, "cgcg_update r·u");
        assert_eq!(sc[1].as_f64(), -9.0, "cgcg_update kept slot 1");
    }
}

/// The flexible step around an f32 `z` on split vectors against whole ones: the fused step
/// (`pcg_flexible_low_device`, then the direction from the f32 `z`), and `MixedPrecision`'s
/// direction over three steps (split vectors take its fallback through a `z` in `T`).
fn flexible_low_parts<B: Backend, T: Scalar>(b: &B, s: &B, len: usize) {
    use cg_scalars::{BETA, FLEXIBLE_LEN, RR, RZ, RZ_NEW, RZ_PREV};
    use galerkin::solver::{MixedPrecision, Preconditioner};
    use galerkin::vector::pcg_flexible_low_device;
    let rs: Vec<Vec<T>> = (0..4).map(|k| random_vec::<T>(len, 30 + k)).collect();
    let (lows, olds) = (random_vec::<f32>(len, 40), random_vec::<f32>(len, 41));
    let ps = random_vec::<T>(len, 42);
    let diag = random_range::<f64>(len, 0.5, 2.0, 43);
    let mut start = vec![T::from_f64(f64::NAN); FLEXIBLE_LEN];
    start[RZ] = T::from_f64(0.8125);
    let tol = |w: f64, scale: f64| 1e3 * T::EPS * w.abs().max(scale).max(1.0);
    // Per backend: the fused step's scalars and p, then MixedPrecision's.
    let mut results: Vec<[Vec<T>; 4]> = Vec::new();
    for backend in [s, b] {
        let (low, old) = (
            Vector::from_slice(backend, &lows).unwrap(),
            Vector::from_slice(backend, &olds).unwrap(),
        );
        let r = Vector::from_slice(backend, &rs[0]).unwrap();
        let mut sc = Vector::from_slice(backend, &start).unwrap();
        let mut p = Vector::from_slice(backend, &ps).unwrap();
        pcg_flexible_low_device(&mut sc, &low, &old, &r).unwrap();
        xpay_device(&sc, &low, &mut p).unwrap();
        let fused = (sc.to_vec().unwrap(), p.to_vec().unwrap());
        let m = MixedPrecision::<B, f32, _>::new(
            Jacobi::<B, f32>::from_diagonal(backend, &diag).unwrap(),
        );
        let mut sc = Vector::from_slice(backend, &start).unwrap();
        let mut p = Vector::from_slice(backend, &ps).unwrap();
        let mut z = Vector::<B, T>::zeros(backend, len).unwrap();
        for r in &rs[1..] {
            let r = Vector::from_slice(backend, r).unwrap();
            m.precondition_flexible_direction_device(&r, &mut z, &mut sc, &mut p)
                .unwrap();
        }
        results.push([fused.0, fused.1, sc.to_vec().unwrap(), p.to_vec().unwrap()]);
    }
    let (split, whole) = (&results[0], &results[1]);
    for (what, g, w) in [
        ("fused", &split[0], &whole[0]),
        ("mixed", &split[2], &whole[2]),
    ] {
        let scale = w[RZ_PREV].as_f64().abs().max(w[RZ_NEW].as_f64().abs());
        for slot in [RZ_PREV, RZ_NEW, RZ, RR, BETA] {
            let (g, w) = (g[slot].as_f64(), w[slot].as_f64());
            // β's error is the sums' over the old RZ.
            let scale = if slot == BETA { scale / 0.01 } else { scale };
            assert!(
                (g - w).abs() <= tol(w, scale),
                "{what} slot {slot}: {g} vs {w}"
            );
        }
    }
    for (what, g, w) in [
        ("fused", &split[1], &whole[1]),
        ("mixed", &split[3], &whole[3]),
    ] {
        let scale = w.iter().fold(0.0f64, |m, v| m.max(v.as_f64().abs()));
        for (i, (g, w)) in g.iter().zip(w.iter()).enumerate() {
            let (g, w) = (g.as_f64(), w.as_f64());
            assert!((g - w).abs() <= tol(w, scale), "{what} p[{i}]: {g} vs {w}");
        }
    }
}

/// The device-scalar steps of CG on split vectors against the same steps on whole vectors.
fn device_scalars<B: Backend, T: Scalar>(b: &B, s: &B, len: usize) {
    use cg_scalars::{BETA, PCG_LEN, PQ, RR, RZ, RZ_NEW};
    let vecs: Vec<Vec<T>> = (0..5).map(|k| random_vec::<T>(len, 10 + k)).collect();
    let ds = random_range::<T>(len, 0.5, 2.0, 20);
    let mut start = vec![T::from_f64(f64::NAN); PCG_LEN];
    start[RR] = T::from_f64(3.0);
    start[PQ] = T::from_f64(5.0);
    start[RZ] = T::from_f64(7.0);
    let tol = |w: f64| 1e3 * T::EPS * w.abs().max(1.0);
    let mut results: Vec<(Vec<T>, Vec<Vec<T>>)> = Vec::new();
    for backend in [s, b] {
        let v = |k: usize| Vector::from_slice(backend, &vecs[k]).unwrap();
        let d = Vector::from_slice(backend, &ds).unwrap();
        let mut sc = Vector::from_slice(backend, &start).unwrap();
        let (p, q, mut x, mut r, mut dir) = (v(0), v(1), v(2), v(3), v(4));
        dot_into(&p, &q, &mut sc, PQ).unwrap();
        cg_update_device(&mut sc, &p, &q, &mut x, &mut r).unwrap();
        xpay_device(&sc, &r, &mut dir).unwrap();
        pcg_jacobi_update_device(&mut sc, &d, &p, &q, &mut x, &mut r).unwrap();
        jacobi_xpay_device(&sc, &d, &r, &mut dir).unwrap();
        let out = [&x, &r, &dir].map(|v| v.to_vec().unwrap()).to_vec();
        results.push((sc.to_vec().unwrap(), out));
    }
    let (split, whole) = (&results[0], &results[1]);
    for slot in [RR, PQ, BETA, RZ, RZ_NEW] {
        let (g, w) = (split.0[slot].as_f64(), whole.0[slot].as_f64());
        assert!((g - w).abs() <= tol(w), "slot {slot}: {g} vs {w}");
    }
    for (k, (g, w)) in split.1.iter().zip(&whole.1).enumerate() {
        for (i, (g, w)) in g.iter().zip(w).enumerate() {
            let (g, w) = (g.as_f64(), w.as_f64());
            assert!((g - w).abs() <= tol(w), "vector {k}[{i}]: {g} vs {w}");
        }
    }
}

backend_tests!(split_vector_ops);

/// What needs one buffer says so; vectors split differently do not mix.
fn split_vector_errors<B: Backend, T: Scalar>(b: &B) {
    let s = limited(b);
    let len = 2 * vector_part_len(LIMIT) + 3;
    let x = Vector::<B, T>::from_slice(&s, &random_vec::<T>(len, 1)).unwrap();
    match x.buffer() {
        Err(Error::Unsupported { what, .. }) => assert!(what.contains("3 parts"), "{what}"),
        other => panic!("buffer() of a split vector: {:?}", other.map(|_| ())),
    }
    assert!(x.try_clone().unwrap().into_buffer().is_err());
    let mut y = Vector::<B, T>::zeros(b, len).unwrap();
    assert_eq!(y.parts(), 1);
    match y.axpy(T::ONE, &x) {
        Err(Error::InvalidArgument { reason, .. }) => assert!(reason.contains("parts"), "{reason}"),
        other => panic!("axpy across splits: {other:?}"),
    }
    assert!(matches!(
        b.with_buffer_limit(100),
        Err(Error::InvalidArgument { .. })
    ));
}

backend_tests!(split_vector_errors);

/// More parts than one part has values (parts of 256 at the smallest limit): the dot product
/// and the device-scalar steps still add every part.
fn many_parts<B: Backend, T: Scalar>(b: &B) {
    let s = b
        .with_buffer_limit(galerkin::backend::MIN_BUFFER_LIMIT)
        .unwrap();
    let len = 300 * 256 + 7;
    let xs = random_vec::<T>(len, 1);
    let ys = random_vec::<T>(len, 2);
    let x = Vector::from_slice(&s, &xs).unwrap();
    let y = Vector::from_slice(&s, &ys).unwrap();
    assert_eq!(x.parts(), 301);
    let terms = || xs.iter().zip(&ys).map(|(a, b)| a.as_f64() * b.as_f64());
    let scale = exact_sum(terms().map(f64::abs));
    assert_sum(
        x.dot(&y).unwrap(),
        exact_sum(terms()),
        scale,
        "dot, 301 parts",
    );
    let mut sc = Vector::from_slice(&s, &[T::from_f64(f64::NAN); 4]).unwrap();
    dot_into(&x, &y, &mut sc, 1).unwrap();
    let got = sc.to_vec().unwrap()[1];
    assert_sum(got, exact_sum(terms()), scale, "dot_into, 301 parts");
}

backend_tests!(many_parts);

/// A matrix split into blocks of its own sizing (1536 rows), applied into a vector split
/// otherwise (parts of 2048, made by a handle with another limit): rows reached through views
/// and rows that go through the host both keep their results. And a matrix with many empty
/// rows before its entries is split further (not looped on) when a block does not fit.
fn mismatched_splits<B: Backend, T: Scalar>(b: &B) {
    let n = 5000;
    let a = random_csr::<T>(&RandomPattern::uniform(n, n, 3, 3), 3).unwrap();
    let options = FormatOptions {
        max_part_bytes: Some(1536 * 3 * 2 * (T::DTYPE.size() + 4)),
        ..FormatOptions::default()
    };
    let m = SparseMatrix::from_csr(b, &a, Format::Csr, &options).unwrap();
    let SparseMatrix::Split(split) = &m else {
        panic!("not split");
    };
    assert_eq!(split.blocks()[1].start, 1536);
    let xs = random_vec::<T>(n, 4);
    let x = Vector::from_slice(b, &xs).unwrap();
    let mut y = Vector::from_slice(&limited(b), &poison::<T>(n)).unwrap();
    assert_eq!(y.parts(), 3);
    m.spmv(T::ONE, &x, T::ZERO, &mut y).unwrap();
    let want = reference(&a, 1.0, &xs, 0.0, &xs);
    assert_close(&y.to_vec().unwrap(), &want, 4, "y split otherwise");
    // 300 empty rows, then rows of 2 entries; ELL of a block of 512 rows needs 8 KiB.
    let n = 1024;
    let mut row_ptr = vec![0u32; 301];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for i in 300..n {
        cols.extend([(i - 1) as u32, i as u32]);
        vals.extend([T::from_f64(-1.0), T::from_f64(2.0)]);
        row_ptr.push(cols.len() as u32);
    }
    let a = Csr::new(n, n, row_ptr, cols, vals).unwrap();
    let small = b.with_buffer_limit(4096).unwrap();
    let options = FormatOptions {
        limits: FormatLimits::unlimited(),
        ..FormatOptions::default()
    };
    let m = SparseMatrix::from_csr(&small, &a, Format::Ell, &options).unwrap();
    let xs = random_vec::<T>(n, 5);
    let x = Vector::from_slice(&small, &xs).unwrap();
    let mut y = Vector::from_slice(&small, &poison::<T>(n)).unwrap();
    m.spmv(T::ONE, &x, T::ZERO, &mut y).unwrap();
    let want = reference(&a, 1.0, &xs, 0.0, &xs);
    assert_close(&y.to_vec().unwrap(), &want, 3, "empty rows");
}

backend_tests!(mismatched_splits);

/// Every format with split vectors: square (Poisson, 3 parts) and rectangular random
/// matrices whose blocks of rows read several parts of x; blocks stay within one part of y.
fn split_vector_spmv<B: Backend, T: Scalar>(b: &B) {
    let s = limited(b);
    let part = vector_part_len(LIMIT);
    let poisson = poisson3d_7pt(18).unwrap();
    let cast = |a: &Csr<Cpu, f64>| -> Csr<Cpu, T> {
        let vals = a.values().iter().map(|v| T::from_f64(*v)).collect();
        Csr::new(
            a.nrows(),
            a.ncols(),
            a.row_ptr().to_vec(),
            a.col_idx().to_vec(),
            vals,
        )
        .unwrap()
    };
    let matrices = [
        cast(&poisson),
        random_csr::<T>(&RandomPattern::uniform(3001, 7003, 0, 9), 7).unwrap(),
        random_csr::<T>(&RandomPattern::uniform(6000, 1500, 1, 6), 8).unwrap(),
    ];
    let options = FormatOptions {
        limits: FormatLimits::unlimited(),
        ..FormatOptions::default()
    };
    for a in &matrices {
        let xs = random_vec::<T>(a.ncols(), 1);
        let ys = random_vec::<T>(a.nrows(), 2);
        let x = Vector::from_slice(&s, &xs).unwrap();
        let terms = a.stats().max + 2;
        for format in Format::ALL {
            // DIA stores whole diagonals: a block of 256 rows of a random matrix (thousands of
            // diagonals) passes this backend's 16 KiB buffers (refused: ResourceLimit).
            if format == Format::Dia && galerkin::sparse::diagonal_offsets(a, 32).is_none() {
                continue;
            }
            let m = SparseMatrix::from_csr(&s, a, format, &options).unwrap();
            let SparseMatrix::Split(split) = &m else {
                panic!("{format} {}x{}: not split", a.nrows(), a.ncols());
            };
            for block in split.blocks() {
                assert!(block.start.is_multiple_of(SPLIT_ROW_ALIGN));
                assert_eq!(block.start / part, (block.start + block.rows - 1) / part);
                assert_eq!(block.col_start % part, 0);
                assert!(block.cols <= part);
            }
            assert_eq!(m.nnz(), a.nnz());
            for (alpha, beta) in [(1.0, 0.0), (-0.75, 1.25)] {
                let start = if beta == 0.0 {
                    poison::<T>(a.nrows())
                } else {
                    ys.clone()
                };
                let mut y = Vector::from_slice(&s, &start).unwrap();
                m.spmv(T::from_f64(alpha), &x, T::from_f64(beta), &mut y)
                    .unwrap();
                let want = reference(a, alpha, &xs, beta, &ys);
                let case = format!("{format} {}x{} beta={beta}", a.nrows(), a.ncols());
                assert_close(&y.to_vec().unwrap(), &want, terms, &case);
            }
        }
    }
    // The fused paths of the solvers.
    let a = &matrices[0];
    let m = SparseMatrix::from_csr(&s, a, Format::Sell, &options).unwrap();
    let xs = random_vec::<T>(a.ncols(), 3);
    let x = Vector::from_slice(&s, &xs).unwrap();
    let mut y = Vector::from_slice(&s, &poison::<T>(a.nrows())).unwrap();
    let xy = LinearOperator::<B, T>::apply_dot(&m, &x, &mut y).unwrap();
    let want = reference(a, 1.0, &xs, 0.0, &xs);
    assert_close(&y.to_vec().unwrap(), &want, 8, "apply_dot y");
    let terms = || xs.iter().zip(&want).map(|(x, y)| x.as_f64() * y);
    let scale = exact_sum(terms().map(f64::abs));
    assert_sum(xy, exact_sum(terms()), scale, "apply_dot");
    let mut sc = Vector::from_slice(&s, &[T::from_f64(f64::NAN); 3]).unwrap();
    LinearOperator::<B, T>::apply_dot_device(&m, &x, &mut y, &mut sc, 2).unwrap();
    assert_sum(
        sc.to_vec().unwrap()[2],
        exact_sum(terms()),
        scale,
        "apply_dot_device",
    );
}

backend_tests!(split_vector_spmv);

/// CG, PCG-Jacobi (the fused device path), BiCGStab and GMRES on split vectors: the same
/// iteration counts (±1, ±2 in f32) and solutions as on vectors in one buffer.
fn split_vector_solvers<B: Backend, T: Scalar>(b: &B) {
    let s = limited(b);
    let a64 = poisson3d_7pt(18).unwrap();
    let vals = a64.values().iter().map(|v| T::from_f64(*v)).collect();
    let a = Csr::new(
        a64.nrows(),
        a64.ncols(),
        a64.row_ptr().to_vec(),
        a64.col_idx().to_vec(),
        vals,
    )
    .unwrap();
    let n = a.nrows();
    let bs = random_vec::<T>(n, 9);
    let rtol = if T::EPS > 1e-10 { 1e-5 } else { 1e-10 };
    let params = SolverParams {
        progress: Progress::Never,
        ..SolverParams::new(rtol, 500)
    };
    let slack = if T::EPS > 1e-10 { 2 } else { 1 };
    let mut runs = Vec::new();
    for backend in [&s, b] {
        let m =
            SparseMatrix::from_csr(backend, &a, Format::Sell, &FormatOptions::default()).unwrap();
        assert_eq!(
            matches!(m, SparseMatrix::Split(_)),
            std::ptr::eq(backend, &s)
        );
        let jacobi = Jacobi::new(backend, &a).unwrap();
        let rhs = Vector::from_slice(backend, &bs).unwrap();
        let mut out = Vec::new();
        for name in ["cg", "pcg-jacobi", "bicgstab", "gmres"] {
            let mut x = Vector::<B, T>::zeros(backend, n).unwrap();
            let report = match name {
                "cg" => cg(&m, &rhs, &mut x, &params),
                "pcg-jacobi" => pcg(&m, Some(&jacobi), &rhs, &mut x, &params),
                "bicgstab" => bicgstab(&m, None, &rhs, &mut x, &params),
                _ => gmres(&m, None, &rhs, &mut x, &params),
            }
            .unwrap();
            assert!(report.converged(), "{name} on {}: {report}", backend.info());
            out.push((name, report.iterations, x.to_vec().unwrap()));
        }
        runs.push(out);
    }
    for ((name, k1, x1), (_, k2, x2)) in runs[0].iter().zip(&runs[1]) {
        // BiCGStab's count follows the rounding of its inner products (added part by part).
        let slack = if *name == "bicgstab" {
            slack + 1
        } else {
            slack
        };
        assert!(
            k1.abs_diff(*k2) <= slack,
            "{name}: {k1} iterations split, {k2} whole"
        );
        let scale = x2.iter().map(|v| v.as_f64().abs()).fold(0.0, f64::max);
        let diff = widen(x1)
            .iter()
            .zip(widen(x2))
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            diff <= 100.0 * rtol * scale,
            "{name}: solutions differ by {diff}"
        );
    }
}

backend_tests!(tier2_devices: split_vector_solvers);

/// Above the device's own limit (lavapipe binds 128 MiB): a tridiagonal system with more
/// f64 rows than one buffer holds; vector operations, SpMV in CSR and SELL, and five CG
/// iterations against the CPU. Skipped where one buffer holds the vectors.
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "tier 2 (long): cargo test --release -- --ignored"]
fn wgpu_vectors_above_the_binding_limit() {
    let Some(b) = crate::harness::wgpu() else {
        return;
    };
    if !b.supports(galerkin::DType::F64) {
        return;
    }
    let limit = b.info().max_buffer_bytes;
    let part = vector_part_len(limit);
    let n = part + part / 3 + 5;
    if n > 40_000_000 {
        crate::harness::announce(&format!(
            "[galerkin tests] {} binds {limit} bytes: vectors above it are not exercised",
            b.info()
        ));
        return;
    }
    let mut row_ptr = Vec::with_capacity(n + 1);
    let (mut cols, mut vals) = (Vec::with_capacity(3 * n), Vec::with_capacity(3 * n));
    row_ptr.push(0u32);
    for i in 0..n {
        for (j, v) in [(i.wrapping_sub(1), -1.0), (i, 2.5), (i + 1, -1.0)] {
            if j < n {
                cols.push(j as u32);
                vals.push(v);
            }
        }
        row_ptr.push(cols.len() as u32);
    }
    let a: Csr<Cpu, f64> = Csr::new(n, n, row_ptr, cols, vals).unwrap();
    let xs = random_vec::<f64>(n, 11);
    let cpu = Cpu::new();
    let x = Vector::from_slice(&b, &xs).unwrap();
    assert!(x.parts() >= 2, "{n} f64 in {} parts", x.parts());
    let xc = Vector::from_slice(&cpu, &xs).unwrap();
    let dot = x.dot(&x).unwrap();
    let want = xc.dot(&xc).unwrap();
    assert!((dot - want).abs() <= 1e-12 * want, "dot {dot} vs {want}");
    let mut want_y = Vector::<Cpu, f64>::zeros(&cpu, n).unwrap();
    a.spmv(1.0, &xc, 0.0, &mut want_y).unwrap();
    let want_y = want_y.to_vec().unwrap();
    for format in [Format::Csr, Format::Sell] {
        let m = SparseMatrix::from_csr(&b, &a, format, &FormatOptions::default()).unwrap();
        assert!(matches!(m, SparseMatrix::Split(_)), "{format}");
        let mut y = Vector::from_slice(&b, &poison::<f64>(n)).unwrap();
        m.spmv(1.0, &x, 0.0, &mut y).unwrap();
        let worst = y
            .to_vec()
            .unwrap()
            .iter()
            .zip(&want_y)
            .map(|(g, w)| (g - w).abs() / w.abs().max(1.0))
            .fold(0.0f64, f64::max);
        assert!(worst <= 1e-14, "{format}: relative error {worst}");
        if format == Format::Sell {
            // Five CG iterations (not converged) against the CPU's five.
            let params = SolverParams {
                progress: Progress::Never,
                ..SolverParams::new(1e-30, 5)
            };
            let rhs = Vector::from_slice(&b, &want_y).unwrap();
            let mut xg = Vector::<_, f64>::zeros(&b, n).unwrap();
            let rg = cg(&m, &rhs, &mut xg, &params).unwrap();
            let rhs_c = Vector::from_slice(&cpu, &want_y).unwrap();
            let mut xc = Vector::<Cpu, f64>::zeros(&cpu, n).unwrap();
            let rc = cg(&a, &rhs_c, &mut xc, &params).unwrap();
            assert_eq!(rg.iterations, rc.iterations);
            let worst = xg
                .to_vec()
                .unwrap()
                .iter()
                .zip(xc.to_vec().unwrap())
                .map(|(g, c)| (g - c).abs())
                .fold(0.0f64, f64::max);
            assert!(worst <= 1e-10, "CG iterates differ by {worst}");
        }
    }
}
