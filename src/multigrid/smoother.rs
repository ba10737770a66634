//! Smoothers of one level: the colourised multiplicative vertex-patch smoother (the seed's)
//! and a Chebyshev–Jacobi smoother for comparison.

use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::operator::LinearOperator;
use crate::random::Rng;
use crate::scalar::Scalar;
use crate::tensor::grid::Grid;
use crate::tensor::ops::{PatchData, TensorOps};
use crate::tensor::TensorOperator;
use crate::vector::Vector;

/// Which smoother the V-cycle uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SmootherKind {
    /// Multiplicative vertex-patch Schwarz, `2^d` colours, local solves by fast
    /// diagonalization (seed 003).
    #[default]
    Patch,
    /// Chebyshev iteration on `D⁻¹A` (degree 4, on `[λmax / 20, 1.2 λmax]`, `λmax` by 30
    /// power iterations), the diagonal computed from the 1D matrices.
    Chebyshev,
}

impl std::str::FromStr for SmootherKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "patch" => Ok(SmootherKind::Patch),
            "chebyshev" => Ok(SmootherKind::Chebyshev),
            _ => Err(Error::InvalidArgument {
                op: "SmootherKind::from_str",
                name: "smoother",
                reason: format!("unknown smoother `{s}`: expected `patch` or `chebyshev`"),
            }),
        }
    }
}

/// Chebyshev degree and range of [`SmootherKind::Chebyshev`].
const CHEBYSHEV_DEGREE: usize = 4;
const CHEBYSHEV_RANGE: f64 = 20.0;

/// The smoother of one level.
pub(crate) enum Smoother<B: Backend + TensorOps, T: Scalar> {
    /// The vertex-patch smoother; its data (one set for every level) is the hierarchy's.
    Patch,
    Chebyshev {
        inv_diag: Vector<B, T>,
        lambda_max: f64,
    },
}

/// One step of the vertex-patch smoother on `a`'s grid: every colour, in order or
/// `reverse`d, with the hierarchy's patch data. On level 1 it is the exact solve
/// (one patch, colour 0; the other colours have none). In the split form each colour
/// first computes `ax = A x` (`ax`: a scratch vector of the grid's size, overwritten;
/// untouched by the fused form).
pub(crate) fn patch_step<B: Backend + TensorOps, T: Scalar>(
    a: &TensorOperator<B, T>,
    data: &PatchData<B, T>,
    x: &mut Vector<B, T>,
    b: &Vector<B, T>,
    reverse: bool,
    ax: &mut Vector<B, T>,
) -> Result<()> {
    let grid = a.grid();
    let coef = a.scaled_coefficients();
    for i in 0..grid.colours() {
        let c = if reverse { grid.colours() - 1 - i } else { i };
        if data.split() {
            if grid.patch_count(c) == 0 {
                continue;
            }
            a.apply(x, ax)?;
            data.smooth(grid, c, coef, b, Some(ax), x)?;
        } else {
            data.smooth(grid, c, coef, b, None, x)?;
        }
    }
    Ok(())
}

impl<B: Backend + TensorOps, T: Scalar> Smoother<B, T> {
    /// The smoother `kind` for operator `a`.
    pub(crate) fn new(backend: &B, kind: SmootherKind, a: &TensorOperator<B, T>) -> Result<Self> {
        match kind {
            SmootherKind::Patch => Ok(Smoother::Patch),
            SmootherKind::Chebyshev => {
                let inv: Vec<T> = a.diagonal()?.iter().map(|d| T::from_f64(1.0 / d)).collect();
                let inv_diag = Vector::from_slice(backend, &inv)?;
                let lambda_max = power_iteration(a, &inv_diag)?;
                Ok(Smoother::Chebyshev {
                    inv_diag,
                    lambda_max,
                })
            }
        }
    }

    /// One smoothing step `x ← S(x, b)`; `reverse` runs the patch colours backwards.
    /// `patch` is the patch data (present whenever a patch smoother was built); `s` holds
    /// three scratch vectors of the level (Chebyshev's), `ax` one more of the level's size
    /// (the split patch form's `A x`); both are overwritten.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn smooth(
        &self,
        a: &TensorOperator<B, T>,
        patch: Option<&PatchData<B, T>>,
        x: &mut Vector<B, T>,
        b: &Vector<B, T>,
        reverse: bool,
        s: &mut [Vector<B, T>; 3],
        ax: &mut Vector<B, T>,
    ) -> Result<()> {
        match (self, patch) {
            (Smoother::Patch, Some(data)) => patch_step(a, data, x, b, reverse, ax),
            (Smoother::Patch, None) => Err(Error::Unsupported {
                backend: x.backend().info().device.clone(),
                what: "the vertex-patch smoother".into(),
                reason: "its kernel does not fit the device (refused by Multigrid::new)".into(),
            }),
            (
                Smoother::Chebyshev {
                    inv_diag,
                    lambda_max,
                },
                _,
            ) => chebyshev(a, inv_diag, *lambda_max, x, b, s),
        }
    }
}

/// `CHEBYSHEV_DEGREE` steps of the Chebyshev iteration for `A x = b` preconditioned by
/// `D⁻¹` on `[λmax / range, λmax]` (Saad, Iterative Methods, Alg. 12.1).
fn chebyshev<B: Backend + TensorOps, T: Scalar>(
    a: &TensorOperator<B, T>,
    inv_diag: &Vector<B, T>,
    lambda_max: f64,
    x: &mut Vector<B, T>,
    b: &Vector<B, T>,
    s: &mut [Vector<B, T>; 3],
) -> Result<()> {
    let [r, d, z] = s;
    let lmin = lambda_max / CHEBYSHEV_RANGE;
    let theta = 0.5 * (lambda_max + lmin);
    let delta = 0.5 * (lambda_max - lmin);
    let sigma = theta / delta;
    let mut rho = 1.0 / sigma;
    a.apply(x, r)?;
    r.axpby(T::ONE, b, -T::ONE)?;
    d.pointwise_mul(inv_diag, r)?;
    d.scale(T::from_f64(1.0 / theta))?;
    for step in 0..CHEBYSHEV_DEGREE {
        x.axpy(T::ONE, d)?;
        if step + 1 == CHEBYSHEV_DEGREE {
            break;
        }
        a.apply(x, r)?;
        r.axpby(T::ONE, b, -T::ONE)?;
        let rho_new = 1.0 / (2.0 * sigma - rho);
        // d = ρ' ρ d + (2 ρ' / δ) D⁻¹ r.
        z.pointwise_mul(inv_diag, r)?;
        d.axpby(
            T::from_f64(2.0 * rho_new / delta),
            z,
            T::from_f64(rho_new * rho),
        )?;
        rho = rho_new;
    }
    Ok(())
}

/// `1.2 λmax(D⁻¹A)` estimated by 30 power iterations from a random start.
fn power_iteration<B: Backend + TensorOps, T: Scalar>(
    a: &TensorOperator<B, T>,
    inv_diag: &Vector<B, T>,
) -> Result<f64> {
    let grid: Grid = a.grid();
    let backend = inv_diag.backend();
    let mut rng = Rng::new(0x5eed_c4eb);
    let start: Vec<T> = (0..grid.len())
        .map(|_| T::from_f64(rng.range(0.5, 1.5)))
        .collect();
    let mut v = Vector::from_slice(backend, &start)?;
    let mut w = Vector::zeros(backend, grid.len())?;
    let mut lambda = 0.0;
    for _ in 0..30 {
        let norm = v.nrm2()?.as_f64();
        v.scale(T::from_f64(1.0 / norm))?;
        a.apply(&v, &mut w)?;
        w.pointwise_mul(inv_diag, &w.try_clone()?)?;
        lambda = v.dot(&w)?.as_f64();
        std::mem::swap(&mut v, &mut w);
    }
    if !(lambda.is_finite() && lambda > 0.0) {
        return Err(Error::InvalidArgument {
            op: "Chebyshev smoother",
            name: "operator",
            reason: format!("the estimate of λmax(D⁻¹A) is {lambda}, not positive"),
        });
    }
    Ok(1.2 * lambda)
}
