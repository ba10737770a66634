//! What a setup reports ([`AmgInfo`]) and where a cycle's time goes ([`AmgLevelTimes`]).

/// Rows and stored nonzeros of one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmgLevelInfo {
    /// Rows (unknowns) of the level's operator.
    pub rows: usize,
    /// Stored nonzeros of the level's operator.
    pub nnz: usize,
    /// How the cycle applies the level: `"csr"`, `"sell-32"` (a large coarse level on a
    /// device, [`AmgParams::coarse_sell_rows`](super::AmgParams::coarse_sell_rows)), or
    /// `"operator"` (the finest level: the caller's operator, in its own format).
    pub format: &'static str,
}

/// Seconds of each setup phase, summed over the levels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AmgPhases {
    /// Checks of a host matrix (square, finite) before its move.
    pub check: f64,
    /// Moving a host matrix and the near-null space to the backend.
    pub transfer: f64,
    /// Checks and Lanczos spectral estimates.
    pub spectral: f64,
    /// Strength of connection.
    pub strength: f64,
    /// MIS-2 aggregation.
    pub aggregation: f64,
    /// Tentative prolongators (QR per aggregate), and the near-null vectors' improvement
    /// ([`AmgParams::improve_candidates`](super::AmgParams::improve_candidates)).
    pub tentative: f64,
    /// Prolongator smoothing (`A T`) and transposes.
    pub prolongator: f64,
    /// Galerkin products `Pᵀ (A P)`.
    pub galerkin: f64,
    /// The coarse solver (dense inverse).
    pub coarse: f64,
    /// The levels converted to `T` (f64: moved as they are), the work vectors allocated and
    /// the coarse inverse moved to the backend.
    pub upload: f64,
}

/// Seconds one level spent in the cycles of [`Amg::profile`](super::Amg::profile), each
/// operation timed between two synchronisations of the backend (so the sums exceed an
/// unprofiled cycle by the launch gaps the synchronisations expose).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AmgLevelTimes {
    /// Pre- and post-smoothing.
    pub smooth: f64,
    /// The residual before the restriction.
    pub residual: f64,
    /// `R r` (to the next level).
    pub restrict: f64,
    /// `x += P x_c` (from the next level).
    pub prolong: f64,
    /// The coarsest level's solve.
    pub coarse: f64,
}

impl AmgLevelTimes {
    /// The level's total.
    pub fn total(&self) -> f64 {
        self.smooth + self.residual + self.restrict + self.prolong + self.coarse
    }
}

/// What the setup built: the levels, the complexities and the time spent.
#[derive(Clone, Debug, PartialEq)]
pub struct AmgInfo {
    /// Every level, finest first.
    pub levels: Vec<AmgLevelInfo>,
    /// `Σ nnz(A_l) / nnz(A_0)`: the cycle's work and the hierarchy's memory relative to the
    /// matrix.
    pub operator_complexity: f64,
    /// `Σ rows(A_l) / rows(A_0)`.
    pub grid_complexity: f64,
    /// Whole setup, seconds.
    pub setup_seconds: f64,
    /// Seconds per phase.
    pub phases: AmgPhases,
    /// `"dense"` (inverse of the coarsest operator) or `"smoother"` (a matrix that stopped
    /// coarsening above the dense limit).
    pub coarse_solver: &'static str,
}
