//! CG: the iteration counts of a textbook CG with the documented summation order, reading
//! the device-resident scalars every k iterations, and stopping on the iterate it read.

use galerkin::solver::{cg, pcg, BlockJacobi, Jacobi, Preconditioner, SolverParams, StopReason};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::Csr;
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Scalar, Vector};

use super::{check_report, quiet, spd_problem, tol};
use crate::backend_tests;

/// The summation order of the CPU backend's reductions (see `galerkin::vector`): chunks of
/// 16384, eight f64 lanes per chunk, lanes combined in a fixed order, chunks pairwise.
fn documented_dot(x: &[f64], y: &[f64]) -> f64 {
    fn pairwise(v: &[f64]) -> f64 {
        match v.len() {
            0 => 0.0,
            1 => v[0],
            n => pairwise(&v[..n / 2]) + pairwise(&v[n / 2..]),
        }
    }
    let chunks: Vec<f64> = x
        .chunks(16384)
        .zip(y.chunks(16384))
        .map(|(a, b)| {
            let mut l = [0.0f64; 8];
            for (i, (p, q)) in a.iter().zip(b).enumerate() {
                l[i % 8] += p * q;
            }
            ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
        })
        .collect();
    pairwise(&chunks)
}

/// Textbook CG (Hestenes–Stiefel) with plain loops, in f64, using the documented order.
fn textbook_cg(a: &Csr<Cpu, f64>, b: &[f64], rtol: f64, max_iter: usize) -> usize {
    let n = b.len();
    let spmv = |x: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let (cols, vals) = a.row(i);
                let mut acc = 0.0;
                for (&c, &v) in cols.iter().zip(vals) {
                    acc += v * x[c as usize];
                }
                acc
            })
            .collect()
    };
    let target = rtol * documented_dot(b, b).sqrt();
    let mut x = vec![0.0; n];
    let mut r = b.to_vec();
    let mut p = r.clone();
    let mut rr = documented_dot(&r, &r);
    for k in 1..=max_iter {
        let q = spmv(&p);
        let alpha = rr / documented_dot(&p, &q);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        let rr_new = documented_dot(&r, &r);
        if rr_new.sqrt() <= target {
            return k;
        }
        let beta = rr_new / rr;
        rr = rr_new;
        for i in 0..n {
            p[i] = r[i] + beta * p[i];
        }
    }
    max_iter
}

#[test]
fn cpu_cg_matches_textbook_iteration_counts() {
    let cpu = Cpu::new();
    for (name, a) in [
        ("poisson 24^3", poisson3d_7pt(24).unwrap()),
        (
            "fvm tets",
            galerkin::fvm::tpfa_tets_structured(8, 0.15, 3).unwrap(),
        ),
        ("poisson 9^3", poisson3d_7pt(9).unwrap()),
    ] {
        let rhs = random_vec::<f64>(a.nrows(), 11);
        for rtol in [1e-4, 1e-8, 1e-11] {
            let expected = textbook_cg(&a, &rhs, rtol, 2000);
            let mut x = Vector::zeros(&cpu, a.nrows()).unwrap();
            let b = Vector::from_slice(&cpu, &rhs).unwrap();
            let report = cg(&a, &b, &mut x, &quiet(rtol, 2000)).unwrap();
            assert_eq!(report.iterations, expected, "{name}, rtol {rtol}: {report}");
        }
    }
}

/// Checking the device-resident scalars only every k iterations costs at most k − 1 extra
/// iterations and reaches the same accuracy.
fn cg_check_every<B: Backend, T: Scalar>(b: &B) {
    let a_host = spd_problem::<T>();
    let a = a_host.to_backend(b).unwrap();
    let rhs = random_vec::<T>(a_host.nrows(), 17);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let mut x = Vector::zeros(b, a_host.nrows()).unwrap();
    let every = cg(&a, &bv, &mut x, &quiet(tol::<T>(), 500)).unwrap();
    for k in [3, 10] {
        let mut y = Vector::zeros(b, a_host.nrows()).unwrap();
        let params = SolverParams {
            check_every: k,
            ..quiet(tol::<T>(), 500)
        };
        let r = cg(&a, &bv, &mut y, &params).unwrap();
        check_report(
            &r,
            &a_host,
            &rhs,
            &y.to_vec().unwrap(),
            &format!("cg check_every={k}"),
        );
        assert!(
            r.iterations >= every.iterations && r.iterations < every.iterations + k,
            "{r} vs {every}"
        );
        assert!(r.iterations % k == 0 || r.iterations == 500);
    }
}

backend_tests!(cg_check_every);

/// CG reads its scalars while the next direction and product run, unless its residuals so
/// far say the read will show convergence (then it reads first). A solve that stops at a
/// read (converged before the limit) returns exactly the iterate of one stopped there by the
/// limit (nothing queued after the last update), bit for bit, with one product more where
/// the read came behind that work (`Some(true)`: a stop the residuals did not foretell),
/// none where it came first, either where `overlapped` is `None`.
fn stops_on_the_iterate_it_read<B: Backend, T: Scalar>(
    b: &B,
    a: &Csr<B, T>,
    m: Option<&dyn Preconditioner<B, T>>,
    rtol: f64,
    what: &str,
    overlapped: Option<bool>,
) {
    let n = a.nrows();
    let bv = Vector::from_slice(b, &random_vec::<T>(n, 41)).unwrap();
    let solve = |max_iter: usize| {
        let mut x = Vector::from_slice(b, &vec![T::from_f64(f64::NAN); n]).unwrap();
        x.fill(T::ZERO).unwrap();
        let params = quiet(rtol, max_iter);
        let report = match m {
            Some(m) => pcg(a, Some(m), &bv, &mut x, &params),
            None => cg(a, &bv, &mut x, &params),
        };
        let report = report.unwrap();
        (report, x.to_vec().unwrap())
    };
    let (read, x_read) = solve(1000);
    assert_eq!(read.reason, StopReason::Converged, "{what}: {read}");
    assert!(read.iterations > 5, "{what}: {read}");
    let (limit, x_limit) = solve(read.iterations);
    assert_eq!(
        read.iterations, limit.iterations,
        "{what}: {read} vs {limit}"
    );
    let extra = read.operator_applications - limit.operator_applications;
    match overlapped {
        Some(true) => assert_eq!(extra, 1, "{what}: {read} vs {limit}"),
        Some(false) => assert_eq!(extra, 0, "{what}: {read} vs {limit}"),
        None => assert!(extra <= 1, "{what}: {read} vs {limit}"),
    }
    let same = x_read
        .iter()
        .zip(&x_limit)
        .all(|(u, v)| u.as_f64().to_bits() == v.as_f64().to_bits());
    assert!(same, "{what}: the overlapped work changed x");
}

/// [`stops_on_the_iterate_it_read`] for plain CG, PCG-Jacobi (fused) and PCG with block
/// Jacobi (a preconditioner applied in the overlap) on a Poisson matrix, and for CG on a
/// diagonal matrix of 8 distinct values: a Krylov space that holds the solution after 8
/// steps, so the residual falls at once where the ones before foretold no stop (the read
/// comes behind the next product).
fn cg_stops_on_the_iterate_it_read<B: Backend, T: Scalar>(b: &B) {
    let a_host = spd_problem::<T>();
    let a = a_host.to_backend(b).unwrap();
    let jacobi = Jacobi::<B, T>::new(b, &a_host).unwrap();
    let blocks = BlockJacobi::<B, T>::new(b, &a_host, 6).unwrap();
    let jacobi: &dyn Preconditioner<B, T> = &jacobi;
    let blocks: &dyn Preconditioner<B, T> = &blocks;
    for (what, m) in [
        ("CG", None),
        ("PCG-Jacobi", Some(jacobi)),
        ("PCG-block-Jacobi", Some(blocks)),
    ] {
        stops_on_the_iterate_it_read(b, &a, m, tol::<T>(), what, None);
    }
    let n = 400;
    let values: Vec<T> = (0..n).map(|i| T::from_f64(1.0 + (i % 8) as f64)).collect();
    let diagonal = Csr::new(
        n,
        n,
        (0..=n as u32).collect(),
        (0..n as u32).collect(),
        values,
    )
    .unwrap()
    .to_backend(b)
    .unwrap();
    stops_on_the_iterate_it_read(b, &diagonal, None, tol::<T>(), "CG, 8 values", Some(true));
}

backend_tests!(cg_stops_on_the_iterate_it_read);
