//! The parameters of [`Amg`](super::Amg): smoother, cycle, coarsening and near-null space,
//! and the smoother's Chebyshev coefficients, shared by the cycle and the setup.

use crate::error::{check_len, Error, Result};

/// The smoother of every level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmgSmoother {
    /// Chebyshev polynomial of the Jacobi-scaled operator, of this degree (SpMVs per
    /// smoothing step), on `[1.1 ρ/30, 1.1 ρ]` with `ρ` the Lanczos estimate of `λmax(D⁻¹A)`.
    ///
    /// The default degree 3 is the cheapest per solve on Poisson, FVM and HDG trace systems;
    /// degree 4 takes 8–27% fewer iterations on stiff structural and shell matrices
    /// (bcsstk09/10/13, Cylshell: 34 / 61 / 200 / 124 against degree 3's 37 / 76 / 273 / 148
    /// and PyAMG's 34 / 69 / 295 / 150) at a little more work per solve elsewhere.
    Chebyshev {
        /// Degree, at least 1.
        degree: usize,
    },
    /// The fourth-kind Chebyshev polynomial of the Jacobi-scaled operator (Lottes, "Optimal
    /// polynomial smoothers for multigrid V-cycles", 2023), of this degree (SpMVs per
    /// smoothing step), on `[0, 1.1 ρ]`: no lower end of the interval to choose, and an error
    /// reduction of the high frequencies that improves with the degree as `1/(2 degree + 1)`
    /// rather than levelling off. The same cost per step as [`Chebyshev`](Self::Chebyshev).
    ChebyshevFourthKind {
        /// Degree, at least 1.
        degree: usize,
    },
    /// l1-Jacobi sweeps: `x += D₁⁻¹ (b − A x)` with `(D₁)ᵢᵢ = Σⱼ |aᵢⱼ|` (convergent for any
    /// SPD matrix, no spectral estimate).
    L1Jacobi {
        /// Sweeps per smoothing step, at least 1.
        sweeps: usize,
    },
}

impl AmgSmoother {
    /// The Chebyshev interval `(λmin, λmax)` for the estimate `rho` of `λmax(D⁻¹A)`, and the
    /// centre the scaling `D⁻¹` is divided by (the fourth kind: `3λmax/4`, so that the first
    /// update is `4/(3λmax) D⁻¹ r`; l1-Jacobi: unused, and 1).
    pub(crate) fn interval(self, rho: f64) -> (f64, f64, f64) {
        match self {
            AmgSmoother::Chebyshev { .. } => {
                let (lmin, lmax) = (1.1 * rho / 30.0, 1.1 * rho);
                (lmin, lmax, 0.5 * (lmin + lmax))
            }
            AmgSmoother::ChebyshevFourthKind { .. } => {
                let lmax = 1.1 * rho;
                (0.0, lmax, 0.75 * lmax)
            }
            AmgSmoother::L1Jacobi { .. } => (1.0, 1.0, 1.0),
        }
    }

    /// The coefficients `(α, β)` of steps `1..degree` of the Chebyshev recurrence on
    /// `[lmin, lmax]` (the interval of [`interval`](Self::interval)), each the update
    /// `d ← α s ∘ r + β d` with `s` the scaling divided by the centre: the first kind's
    /// `α = 2ρ'θ/δ`, `β = ρ'ρ` (`ρ' = 1/(2θ/δ − ρ)` from `ρ = δ/θ`), the fourth kind's
    /// [`fourth_kind`]. Empty for l1-Jacobi (plain sweeps) and for degree 1. The cycle's
    /// smoothing and the near-null vectors' improvement both take their steps from here.
    pub(crate) fn steps(self, (lmin, lmax): (f64, f64)) -> impl Iterator<Item = (f64, f64)> {
        let (degree, fourth) = match self {
            AmgSmoother::Chebyshev { degree } => (degree, false),
            AmgSmoother::ChebyshevFourthKind { degree } => (degree, true),
            AmgSmoother::L1Jacobi { .. } => (1, false),
        };
        let (theta, delta) = (0.5 * (lmax + lmin), 0.5 * (lmax - lmin));
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        (1..degree).map(move |i| {
            if fourth {
                fourth_kind(i)
            } else {
                let rho_new = 1.0 / (2.0 * sigma - rho);
                let step = (2.0 * rho_new * theta / delta, rho_new * rho);
                rho = rho_new;
                step
            }
        })
    }
}

/// The shape of the cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmgCycle {
    /// One coarse correction per level.
    V,
    /// Two coarse corrections per level.
    W,
}

/// The most Lanczos steps [`AmgParams::spectral_steps`] takes.
pub const MAX_SPECTRAL_STEPS: usize = 1000;

/// Parameters of [`Amg`](super::Amg).
#[derive(Clone, Debug, PartialEq)]
pub struct AmgParams {
    /// Strength threshold `θ ∈ [0, 1]`: `aᵢⱼ` is a connection when
    /// `|aᵢⱼ| ≥ θ √(aᵢᵢ aⱼⱼ)` (default 0: every stored nonzero, as PyAMG).
    pub theta: f64,
    /// Smoother (default Chebyshev of degree 3: within 1.5x of PyAMG's iterations, with
    /// its symmetric Gauss–Seidel, on the shared SPD matrices; degree 2 took up to 2x).
    pub smoother: AmgSmoother,
    /// Cycle (default V).
    pub cycle: AmgCycle,
    /// Most levels (default 25).
    pub max_levels: usize,
    /// Coarsen until at most this many rows (default 500); the coarsest operator is
    /// inverted densely up to 2000 rows and smoothed otherwise.
    pub max_coarse: usize,
    /// The near-null space (default: the constants).
    pub near_null: NearNull,
    /// Smoothing steps applied to each near-null vector on the finest level before the
    /// tentative prolongator is built (`A x = 0` relaxed from the vector by the level's
    /// smoother, as PyAMG's `improve_candidates`), so that the vectors follow the matrix's
    /// boundary conditions; 0 uses the vectors as given. Default 2: on the structural and
    /// shell matrices it took the iterations from 1.6x PyAMG's to within 1.1x (bcsstk09 54 →
    /// 37, bcsstk10 109 → 76), and on Poisson and FVM it changed them by one at most. With a
    /// [`NearNull::Strided`] space set 0: smoothing fills the vector's zero rows, which on
    /// the HDG trace system doubled the first coarse level at the same iteration count.
    pub improve_candidates: usize,
    /// On a device, coarse levels of at least this many rows are applied in SELL-32
    /// (σ = 1), converted there, where the padding stays within 1.5x (default 65,536: a
    /// level's SpMV 24–36% faster on Poisson and FVM hierarchies, H200; smaller levels are
    /// launch-bound and stay CSR). `usize::MAX`: every level CSR. The CPU keeps CSR.
    pub coarse_sell_rows: usize,
    /// Lanczos steps of each level's estimate of `λmax(D⁻¹A)`, which sets the Chebyshev
    /// interval (its upper end `1.1 ρ`) and the prolongator's weight `4/(3ρ)` (default 12,
    /// at most 1000). The largest Ritz value approaches `λmax` from below: on Poisson 7-pt
    /// 128³, FVM tetrahedra and Cylshell, 12 steps come within 1.6–2.3% of 60 steps' value
    /// (20 steps: 0.5–1.1%) with the same iteration counts on those and on bcsstk09/10/13;
    /// the estimate costs a level about one SpMV and four vector passes a step.
    pub spectral_steps: usize,
}

/// The near-null space of [`AmgParams`]: the vectors the tentative prolongator reproduces
/// exactly (those the matrix nearly annihilates).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum NearNull {
    /// The constant vector (scalar Laplacians, diffusion, FVM), made on the backend.
    #[default]
    Constants,
    /// One vector, 1 on every `n`-th row from row 0 and 0 elsewhere, made on the backend:
    /// the constant mode of a modal basis of `n` functions per block of rows (the HDG trace
    /// system, `n = P + 1`). Use it with [`AmgParams::improve_candidates`] 0.
    Strided(usize),
    /// These vectors, each of the matrix's size (e.g. the rigid-body modes of elasticity),
    /// moved to the backend.
    Vectors(Vec<Vec<f64>>),
}

impl From<Vec<Vec<f64>>> for NearNull {
    /// [`NearNull::Vectors`], or [`NearNull::Constants`] for no vectors (what an empty list
    /// meant before `NearNull`).
    fn from(vectors: Vec<Vec<f64>>) -> Self {
        if vectors.is_empty() {
            NearNull::Constants
        } else {
            NearNull::Vectors(vectors)
        }
    }
}

impl Default for AmgParams {
    fn default() -> Self {
        AmgParams {
            theta: 0.0,
            smoother: AmgSmoother::Chebyshev { degree: 3 },
            cycle: AmgCycle::V,
            max_levels: 25,
            max_coarse: 500,
            near_null: NearNull::Constants,
            improve_candidates: 2,
            coarse_sell_rows: 65_536,
            spectral_steps: 12,
        }
    }
}

impl AmgParams {
    /// Checks the parameters for `n` rows; the errors name `op` (the constructor called).
    pub(super) fn check(&self, op: &'static str, n: usize) -> Result<()> {
        let bad = |name, reason: String| Err(Error::invalid(op, name, reason));
        if !(0.0..=1.0).contains(&self.theta) {
            return bad("theta", format!("{} is outside [0, 1]", self.theta));
        }
        match self.smoother {
            AmgSmoother::Chebyshev { degree: 0 }
            | AmgSmoother::ChebyshevFourthKind { degree: 0 } => {
                return bad("smoother", "Chebyshev degree 0: must be at least 1".into())
            }
            AmgSmoother::L1Jacobi { sweeps: 0 } => {
                return bad(
                    "smoother",
                    "l1-Jacobi with 0 sweeps: must be at least 1".into(),
                )
            }
            _ => {}
        }
        if self.max_levels == 0 {
            return bad("max_levels", "0: must be at least 1".into());
        }
        if self.max_coarse == 0 {
            return bad("max_coarse", "0: must be at least 1".into());
        }
        if !(1..=MAX_SPECTRAL_STEPS).contains(&self.spectral_steps) {
            return bad(
                "spectral_steps",
                format!(
                    "{}: must be in 1..={MAX_SPECTRAL_STEPS}",
                    self.spectral_steps
                ),
            );
        }
        match &self.near_null {
            NearNull::Constants => {}
            NearNull::Strided(0) => {
                return bad("near_null", "a stride of 0: must be at least 1".into())
            }
            NearNull::Strided(stride) if n > 1 && *stride >= n => {
                return bad(
                    "near_null",
                    format!(
                        "a stride of {stride} for {n} rows gives one unit vector, not a \
                         near-null space"
                    ),
                )
            }
            NearNull::Strided(_) => {}
            NearNull::Vectors(vectors) => {
                if vectors.is_empty() {
                    return bad(
                        "near_null",
                        "no vectors: give at least one (or Constants)".into(),
                    );
                }
                for (c, v) in vectors.iter().enumerate() {
                    check_len(op, "near_null vector", n, v.len())?;
                    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                        return bad("near_null", format!("vector {c} has {} at row {i}", v[i]));
                    }
                }
                if vectors.iter().all(|v| v.iter().all(|&x| x == 0.0)) {
                    return bad("near_null", "every vector is zero".into());
                }
            }
        }
        Ok(())
    }
}

/// Step `i ≥ 1` of the fourth-kind Chebyshev smoother, as the coefficients `(α, β)` of
/// `d = α s ∘ r + β d` with the scaling `s = 4/(3λmax) D⁻¹`: `β = (2i−1)/(2i+3)` and
/// `α = (8i+4)/(2i+3) · 3/4`.
fn fourth_kind(i: usize) -> (f64, f64) {
    let i = i as f64;
    (
        3.0 * (2.0 * i + 1.0) / (2.0 * i + 3.0),
        (2.0 * i - 1.0) / (2.0 * i + 3.0),
    )
}
