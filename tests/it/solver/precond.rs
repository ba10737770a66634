//! Preconditioners: block Jacobi's singular blocks and its construction from block-ELL, and
//! Jacobi fused into PCG against the unfused iteration.

use galerkin::solver::{pcg, BlockJacobi, Jacobi, Preconditioner, SolverParams};
use galerkin::sparse::generate::poisson3d_7pt;
use galerkin::sparse::{Coo, Csr};
use galerkin::verify::random_vec;
use galerkin::{Backend, Cpu, Scalar, Vector};

use super::{check_report, jumping_diffusion, quiet, tol};
use crate::backend_tests;

#[test]
fn block_jacobi_reports_a_singular_block() {
    // Block 1 (rows 3..6) of a 3 x 3 block matrix has a zero row.
    let mut coo = Coo::with_capacity(9, 9, 81);
    for i in 0..9 {
        for j in 0..9 {
            if i / 3 == j / 3 && i != 4 {
                coo.push(i, j, if i == j { 4.0 } else { 1.0 }).unwrap();
            }
        }
    }
    let a = coo.to_csr().unwrap();
    match BlockJacobi::<Cpu, f64>::new(&Cpu::new(), &a, 3) {
        Err(galerkin::Error::InvalidArgument { reason, .. }) => {
            assert!(reason.contains("block 1 (rows 3..6)"), "{reason}")
        }
        other => panic!(
            "expected a singular-block error, got {:?}",
            other.map(|_| ())
        ),
    }
    // From a block-ELL matrix: the same diagonal blocks.
    let good = poisson3d_7pt(6).unwrap();
    let bell = galerkin::sparse::BlockEll::from_csr(
        &good,
        6,
        &galerkin::sparse::FormatLimits::unlimited(),
    )
    .unwrap();
    let p1 = BlockJacobi::<Cpu, f64>::from_block_ell(&Cpu::new(), &bell).unwrap();
    let p2 = BlockJacobi::<Cpu, f64>::new(&Cpu::new(), &good, 6).unwrap();
    let r = Vector::from_slice(&Cpu::new(), &random_vec::<f64>(good.nrows(), 3)).unwrap();
    let (mut z1, mut z2) = (
        Vector::zeros(&Cpu::new(), good.nrows()).unwrap(),
        Vector::zeros(&Cpu::new(), good.nrows()).unwrap(),
    );
    p1.precondition(&r, &mut z1).unwrap();
    p2.precondition(&r, &mut z2).unwrap();
    assert_eq!(z1.to_vec().unwrap(), z2.to_vec().unwrap());
}

/// Jacobi without [`Preconditioner::inverse_diagonal`]: PCG takes the unfused path.
struct Unfused<'a, B: Backend, T: Scalar>(&'a Jacobi<B, T>);

impl<B: Backend, T: Scalar> Preconditioner<B, T> for Unfused<'_, B, T> {
    fn size(&self) -> usize {
        self.0.size()
    }
    fn precondition(&self, r: &Vector<B, T>, z: &mut Vector<B, T>) -> galerkin::Result<()> {
        self.0.precondition(r, z)
    }
}

/// PCG-Jacobi with the scaling fused into the update and the direction gives what the
/// unfused iteration (z stored, separate inner product) gives: bit for bit on the CPU, the
/// same iteration count (±1) and accuracy on a device; on a matrix whose diagonal spans
/// four decades, so the scaling matters.
fn pcg_jacobi_fused_matches_unfused<B: Backend, T: Scalar>(b: &B) {
    let a64 = jumping_diffusion(24, 4.0, 5);
    let a_host: Csr<Cpu, T> = a64.convert();
    let n = a_host.nrows();
    let a = a_host.to_backend(b).unwrap();
    let rhs = random_vec::<T>(n, 29);
    let bv = Vector::from_slice(b, &rhs).unwrap();
    let jacobi = Jacobi::<B, T>::new(b, &a_host).unwrap();
    assert!(Preconditioner::inverse_diagonal(&jacobi).is_some());
    let params = SolverParams {
        check_every: 1,
        ..quiet(tol::<T>(), 2000)
    };
    let poison = vec![T::from_f64(f64::NAN); n];
    let mut x_fused = Vector::from_slice(b, &poison).unwrap();
    x_fused.fill(T::ZERO).unwrap();
    let fused = pcg(&a, Some(&jacobi), &bv, &mut x_fused, &params).unwrap();
    let mut x_plain = Vector::zeros(b, n).unwrap();
    let plain = pcg(&a, Some(&Unfused(&jacobi)), &bv, &mut x_plain, &params).unwrap();
    let (xf, xp) = (x_fused.to_vec().unwrap(), x_plain.to_vec().unwrap());
    check_report(&fused, &a_host, &rhs, &xf, "fused PCG-Jacobi");
    check_report(&plain, &a_host, &rhs, &xp, "unfused PCG-Jacobi");
    assert!(fused.iterations > 20, "{fused}");
    if b.kind() == galerkin::BackendKind::Cpu {
        assert_eq!(fused.iterations, plain.iterations, "{fused} vs {plain}");
        assert_eq!(
            xf, xp,
            "the fused CPU path must reproduce the unfused one bit for bit"
        );
    } else {
        assert!(
            fused.iterations.abs_diff(plain.iterations) <= 1,
            "{fused} vs {plain}"
        );
    }
}

backend_tests!(pcg_jacobi_fused_matches_unfused);
