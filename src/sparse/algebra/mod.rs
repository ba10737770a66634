//! Sparse algebra on every backend: the products, filters and graph algorithms that
//! algebraic multigrid's setup is made of, as public operations on [`Csr`] matrices of any
//! backend.
//!
//! | operation | what it computes |
//! |---|---|
//! | [`spgemm`] | `C = A·B`, symbolic then numeric, columns sorted |
//! | [`transpose`] | `Aᵀ`, columns sorted |
//! | [`diagonal`] | the main diagonal (zeros where no entry is stored) |
//! | [`strength`] | the symmetric strength-of-connection filter of smoothed aggregation |
//! | [`aggregate`] | aggregates from a parallel maximal independent set of distance 2 |
//! | [`tentative`] | the tentative prolongator of aggregates and a near-null space (QR per aggregate) |
//! | [`smooth_prolongator`] | `P = T − ω D⁻¹ A T` |
//! | [`convert`] | the matrix with values of another precision |
//! | [`to_sell`] | the matrix in SELL-C (σ = 1), converted where it lives |
//!
//! Every operation runs where its matrices live: on the CPU with rayon (the reference,
//! products accumulated in f64), on CubeCL devices with kernels that make the same choices
//! in the same order — the terms of each output entry of a product summed in the order of the
//! left factor's row (a unit per row; on devices with 32-lane planes, a plane per row for rows
//! above 32 entries, which adds its lanes' sums by a fixed tree; rows above the kernel's limit
//! in pieces, summed piece after piece — with a right factor of at most 512 columns, a cube
//! per row in eight such pieces), ties between aggregation candidates broken by the same
//! hash of the row index — so a hierarchy built on a device is the CPU's up to rounding (the
//! device contracts products into fused multiply-adds; f32 values accumulate in f32 there).
//! No device kernel uses floating-point atomics (absent on wgpu); 32-bit integer atomics
//! count entries, and the orders they leave are sorted away.
//!
//! ```
//! use galerkin::sparse::algebra::{spgemm, strength, transpose};
//! use galerkin::sparse::generate::poisson2d_5pt;
//!
//! let a = poisson2d_5pt(8)?;
//! let a2 = spgemm(&a, &a)?; // the 13-point stencil of A²
//! assert_eq!(a2.nrows(), 64);
//! assert_eq!(a2.row(27).0.len(), 13);
//! let s = strength(&a, 0.25)?; // every off-diagonal of the Laplacian is strong
//! assert_eq!(s.nnz(), a.nnz());
//! assert_eq!(transpose(&a)?.values(), a.values()); // symmetric
//! # Ok::<(), galerkin::Error>(())
//! ```

use rayon::prelude::*;

use crate::backend::core::{check_device, sealed::Sealed, BackendCore};
use crate::backend::Cpu;
use crate::error::{check_len, Error, Result};
use crate::scalar::{Element, Scalar};
use crate::sparse::block_ell::BlockEll;
use crate::sparse::csr::Csr;
use crate::sparse::sell::{Sell, SellParams};
use crate::sparse::{FormatLimits, SparseOps};
use crate::vector::{Vector, VectorOps};

pub(crate) mod aggregate;
mod cube;
pub(crate) mod host;
pub(crate) mod prolong;

/// The aggregates of a square matrix's graph: `aggregate_of[i] < count` for every row `i`.
/// Made by [`aggregate`]; its buffer stays on the matrix's backend.
pub struct Aggregates<B: BackendCore> {
    pub(crate) agg: B::Buffer<u32>,
    pub(crate) count: usize,
    pub(crate) backend: B,
}

impl<B: BackendCore> Aggregates<B> {
    /// The number of aggregates.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The number of rows aggregated.
    pub fn len(&self) -> usize {
        B::len(&self.agg)
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The aggregate of every row, on the host.
    ///
    /// # Errors
    /// Device errors.
    pub fn to_vec(&self) -> Result<Vec<u32>> {
        self.backend.download(&self.agg)
    }
}

/// `k` near-null-space vectors of `rows` entries, column-major (`data[c·rows + i]`), on a
/// backend: what the tentative prolongator must reproduce (the constants for a scalar
/// Laplacian, the rigid-body modes for elasticity).
pub struct NearNullSpace<B: BackendCore> {
    pub(crate) rows: usize,
    pub(crate) k: usize,
    pub(crate) data: B::Buffer<f64>,
    pub(crate) backend: B,
}

impl<B: BackendCore> NearNullSpace<B> {
    /// `vectors` (each `rows` long, at least one) on `backend`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no vectors or a non-finite entry (named);
    /// [`Error::DimensionMismatch`] for vectors of different lengths; device errors.
    pub fn new(backend: &B, vectors: &[Vec<f64>]) -> Result<Self> {
        let rows = vectors.first().map(Vec::len).ok_or_else(|| {
            Error::invalid(
                "NearNullSpace::new",
                "vectors",
                "no vectors: give at least one",
            )
        })?;
        for (c, v) in vectors.iter().enumerate() {
            check_len("NearNullSpace::new", "vector length", rows, v.len())?;
            if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                return Err(Error::invalid(
                    "NearNullSpace::new",
                    "vectors",
                    format!("vector {c} has {} at row {i}", v[i]),
                ));
            }
        }
        crate::limits::check_host_items("the near-null space", (rows * vectors.len()) as u64, 8)?;
        Ok(NearNullSpace {
            rows,
            k: vectors.len(),
            data: backend.upload(&vectors.concat())?,
            backend: backend.clone(),
        })
    }

    /// The constant vector of `rows` entries, made on the backend.
    ///
    /// # Errors
    /// [`Error::ResourceLimit`] when it does not fit; device errors.
    pub fn constants(backend: &B, rows: usize) -> Result<Self>
    where
        B: SparseAlgebraOps,
    {
        Self::strided(backend, rows, 1)
    }

    /// One vector of `rows` entries, 1 on every `stride`-th row from row 0 and 0 elsewhere,
    /// made on the backend: the constant mode of a modal basis of `stride` functions per
    /// block of rows (the HDG trace system's faces).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stride of 0; [`Error::ResourceLimit`] when it does
    /// not fit; device errors.
    pub fn strided(backend: &B, rows: usize, stride: usize) -> Result<Self>
    where
        B: SparseAlgebraOps,
    {
        if stride == 0 {
            return Err(Error::invalid(
                "NearNullSpace::strided",
                "stride",
                "0: must be at least 1",
            ));
        }
        Ok(NearNullSpace {
            rows,
            k: 1,
            data: backend.strided_ones(rows, stride)?,
            backend: backend.clone(),
        })
    }

    /// Rows of each vector.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The number of vectors.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The vectors on the host, column-major.
    ///
    /// # Errors
    /// Device errors.
    pub fn to_vec(&self) -> Result<Vec<f64>> {
        self.backend.download(&self.data)
    }
}

/// The sparse-algebra family: what every backend implements for the operations of this
/// module (see the [module docs](self)). Call the free functions, which check their
/// arguments; the methods assume what those functions check.
pub trait SparseAlgebraOps: BackendCore + VectorOps + SparseOps + Sealed {
    /// The main diagonal (`min(nrows, ncols)` entries).
    #[doc(hidden)]
    fn csr_diagonal<V: Scalar>(&self, a: &Csr<Self, V>) -> Result<Self::Buffer<V>>;

    /// `Σⱼ |aᵢⱼ|` of every row.
    #[doc(hidden)]
    fn csr_row_abs_sums<V: Scalar>(&self, a: &Csr<Self, V>) -> Result<Self::Buffer<V>>;

    /// The strength filter of a square matrix, `θ ∈ [0, 1]`.
    #[doc(hidden)]
    fn csr_strength<V: Scalar>(&self, a: &Csr<Self, V>, theta: f64) -> Result<Csr<Self, V>>;

    /// `Aᵀ`.
    #[doc(hidden)]
    fn csr_transpose<V: Scalar>(&self, a: &Csr<Self, V>) -> Result<Csr<Self, V>>;

    /// `A·B` (`a.ncols() == b.nrows()`).
    #[doc(hidden)]
    fn csr_spgemm<V: Scalar>(&self, a: &Csr<Self, V>, b: &Csr<Self, V>) -> Result<Csr<Self, V>>;

    /// A block-ELL matrix as CSR in f64 (every nonzero entry of its blocks).
    #[doc(hidden)]
    fn block_ell_to_csr<V: Scalar>(&self, a: &BlockEll<Self, V>) -> Result<Csr<Self, f64>>;

    /// The values converted to `W`.
    #[doc(hidden)]
    fn csr_convert<V: Scalar, W: Scalar>(&self, a: &Csr<Self, V>) -> Result<Csr<Self, W>>;

    /// The matrix in SELL-C (slice height `slice_height`, σ = 1), padding checked against
    /// `limits` before the arrays are allocated.
    fn csr_to_sell<V: Scalar>(
        &self,
        a: &Csr<Self, V>,
        slice_height: u32,
        limits: &FormatLimits,
    ) -> Result<Sell<Self, V>>;

    /// The MIS-2 aggregates of a square matrix's pattern.
    #[doc(hidden)]
    fn csr_aggregate<V: Scalar>(&self, s: &Csr<Self, V>) -> Result<Aggregates<Self>>;

    /// The tentative prolongator and the coarse near-null space (`b.rows == agg.len()`).
    #[doc(hidden)]
    fn tentative_prolongator(
        &self,
        agg: &Aggregates<Self>,
        b: &NearNullSpace<Self>,
    ) -> Result<(Csr<Self, f64>, NearNullSpace<Self>)>;

    /// `T − ω D⁻¹ (A T)` (`diag` of `a`, nonzero; `a.ncols() == t.nrows()`, `a` square, every
    /// row of `T` in the pattern of `A T`).
    #[doc(hidden)]
    fn smoothed_prolongator(
        &self,
        a: &Csr<Self, f64>,
        t: &Csr<Self, f64>,
        diag: &Self::Buffer<f64>,
        omega: f64,
    ) -> Result<Csr<Self, f64>>;

    /// 0 when every entry is `> 0`; otherwise the number of entries that are not (NaN
    /// included) on the CPU, and 1 on a device.
    #[doc(hidden)]
    fn count_nonpositive(&self, x: &Self::Buffer<f64>) -> Result<usize>;

    /// Whether an entry is zero.
    #[doc(hidden)]
    fn any_zero(&self, x: &Self::Buffer<f64>) -> Result<bool>;

    /// `x[i] = hash32(i + seed) / 2³² + 1/2`: a fixed start vector in `[1/2, 3/2)`.
    #[doc(hidden)]
    fn hash_vector(&self, n: usize, seed: u32) -> Result<Self::Buffer<f64>>;

    /// `x[i] = 1` where `i` is a multiple of `step` (at least 1), else 0, made where it lives.
    #[doc(hidden)]
    fn strided_ones(&self, n: usize, step: usize) -> Result<Self::Buffer<f64>>;
}

/// The start vector of [`SparseAlgebraOps::hash_vector`], entry `i`.
pub(crate) fn hash_value(i: usize, seed: u32) -> f64 {
    f64::from(aggregate::hash32((i as u32).wrapping_add(seed))) / 4_294_967_296.0 + 0.5
}

fn check_theta(op: &'static str, theta: f64) -> Result<()> {
    if (0.0..=1.0).contains(&theta) {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            "theta",
            format!("{theta} is outside [0, 1]"),
        ))
    }
}

fn check_square<B: BackendCore, V: Element>(op: &'static str, a: &Csr<B, V>) -> Result<()> {
    check_len(op, "ncols (square)", a.nrows, a.ncols)
}

/// `C = A·B` in CSR: for each row, the union of the rows of `B` that `A`'s row selects
/// (symbolic), then the products summed in the order of `A`'s row (numeric). Columns come
/// out sorted; entries that cancel to zero are kept (the pattern is structural). The CPU
/// accumulates in f64 and rounds once to `V`; a device accumulates in `V` — in `A`'s order a
/// unit per row, or (32-lane planes, a matrix with a row above 32 entries) a plane per row,
/// each lane in order and the lanes by a fixed tree — and sums rows above the kernel's limit
/// (64 entries for the unit kernel, 128 for the plane kernel) in pieces of 32 or 128 (each
/// piece's sum, then the pieces in order); when `B` has at most 512 columns (a coarse level's
/// `R·AP`), such rows take a cube each instead, accumulated densely in shared memory in up to
/// 32 consecutive pieces of the row (each in `A`'s order, then the pieces in order; as many
/// pieces as 48 KiB of shared memory hold, fewer where the device offers less).
///
/// # Errors
/// [`Error::DimensionMismatch`] if `a.ncols() != b.nrows()`; [`Error::DeviceMismatch`] for
/// matrices of two devices; [`Error::InvalidMatrix`] or [`Error::ResourceLimit`] if the
/// product has 2³² or more entries or does not fit in memory; device errors.
pub fn spgemm<B: SparseAlgebraOps, V: Scalar>(a: &Csr<B, V>, b: &Csr<B, V>) -> Result<Csr<B, V>> {
    check_len("spgemm", "b.nrows() (a.ncols())", a.ncols(), b.nrows())?;
    check_device("spgemm", a.backend(), b.backend())?;
    a.backend().csr_spgemm(a, b)
}

/// `Aᵀ` in CSR (columns sorted).
///
/// # Errors
/// Device and allocation errors.
pub fn transpose<B: SparseAlgebraOps, V: Scalar>(a: &Csr<B, V>) -> Result<Csr<B, V>> {
    a.backend().csr_transpose(a)
}

/// The main diagonal, `min(nrows, ncols)` entries (zeros where no entry is stored).
///
/// # Errors
/// Device and allocation errors.
pub fn diagonal<B: SparseAlgebraOps, V: Scalar>(a: &Csr<B, V>) -> Result<Vector<B, V>> {
    let backend = a.backend();
    let d = backend.csr_diagonal(a)?;
    // SAFETY: the buffer was allocated by this backend.
    Ok(unsafe { Vector::from_buffer(backend, d) })
}

/// The symmetric strength of connection: the diagonal and every nonzero off-diagonal entry
/// with `|aᵢⱼ| ≥ θ √|aᵢᵢ aⱼⱼ|` (stored zeros are no connection), values kept (Bell, Dalton
/// and Olson's filter for smoothed aggregation). A zero diagonal makes a row's
/// off-diagonals strong only when `θ = 0`.
///
/// # Errors
/// [`Error::InvalidArgument`] for `θ` outside `[0, 1]`; [`Error::DimensionMismatch`] for a
/// matrix that is not square; device errors.
pub fn strength<B: SparseAlgebraOps, V: Scalar>(a: &Csr<B, V>, theta: f64) -> Result<Csr<B, V>> {
    check_theta("strength", theta)?;
    check_square("strength", a)?;
    a.backend().csr_strength(a, theta)
}

/// Aggregates of the graph of a square matrix's pattern (its strength filter, usually), by
/// a parallel maximal independent set of distance 2 (Bell, Dalton and Olson, 2012): the
/// roots are an MIS-2 (each round, an undecided node whose key is the largest within
/// distance 2 becomes a root, and the nodes that see a root within distance 2 leave; after
/// 64 rounds, which a few suffice for in practice, the nodes still undecided become roots),
/// every other node joins the aggregate of the root neighbour of largest key, then of the
/// placed neighbour of largest key; a node no root reaches is an aggregate of its own. A
/// key is the node's state, a hash of its index, then the index: the result does not
/// depend on the backend or the number of threads.
///
/// # Errors
/// [`Error::DimensionMismatch`] for a matrix that is not square; device errors.
pub fn aggregate<B: SparseAlgebraOps, V: Scalar>(s: &Csr<B, V>) -> Result<Aggregates<B>> {
    check_square("aggregate", s)?;
    s.backend().csr_aggregate(s)
}

/// The tentative prolongator `T` (orthonormal columns) and the coarse near-null space
/// `B_c` with `T B_c = B`: per aggregate, the modified Gram–Schmidt QR of the aggregate's
/// rows of `B`. A column that is (numerically) dependent on the previous ones is dropped, so
/// an aggregate smaller than `k` or a degenerate `B` gives fewer coarse unknowns; `B_c`
/// keeps `k` vectors.
///
/// # Errors
/// [`Error::DimensionMismatch`] if `b` does not have a row per aggregated row;
/// [`Error::DeviceMismatch`]; on a device, [`Error::ResourceLimit`] when `Q` (rows·k
/// values) or the aggregates' `R` factors (aggregates·k² values) reach 2³² values (its
/// kernels' 32-bit indices); device errors.
pub fn tentative<B: SparseAlgebraOps>(
    agg: &Aggregates<B>,
    b: &NearNullSpace<B>,
) -> Result<(Csr<B, f64>, NearNullSpace<B>)> {
    check_len("tentative", "near-null space rows", agg.len(), b.rows)?;
    check_device("tentative", &agg.backend, &b.backend)?;
    agg.backend.tentative_prolongator(agg, b)
}

/// `P = T − ω D⁻¹ A T`: the tentative prolongator smoothed by one damped Jacobi step
/// (smoothed aggregation takes `ω = 4 / (3 ρ(D⁻¹A))`). `P` has the pattern of `A T`.
///
/// # Errors
/// [`Error::DimensionMismatch`] for a matrix that is not square or a `T` of another height;
/// [`Error::InvalidArgument`] for a row of `A` without a positive diagonal (named) or an `ω`
/// that is not finite; device errors.
pub fn smooth_prolongator<B: SparseAlgebraOps>(
    a: &Csr<B, f64>,
    t: &Csr<B, f64>,
    omega: f64,
) -> Result<Csr<B, f64>> {
    check_square("smooth_prolongator", a)?;
    check_len("smooth_prolongator", "t.nrows()", a.nrows(), t.nrows())?;
    check_device("smooth_prolongator", a.backend(), t.backend())?;
    if !omega.is_finite() {
        return Err(Error::invalid(
            "smooth_prolongator",
            "omega",
            format!("{omega}"),
        ));
    }
    let backend = a.backend();
    let diag = backend.csr_diagonal(a)?;
    positive_diagonal("smooth_prolongator", a, &diag, None)?;
    backend.smoothed_prolongator(a, t, &diag, omega)
}

/// `a` as CSR with f64 values on the same backend: every nonzero entry of its blocks,
/// columns sorted (what [`BlockEll::to_csr`] gives on the host, without leaving the device):
/// the input of an AMG setup for a matrix assembled in block-ELL.
///
/// # Errors
/// [`Error::ResourceLimit`] if the matrix has 2³² or more nonzeros; device and allocation
/// errors.
pub fn block_ell_to_csr<B: SparseAlgebraOps, V: Scalar>(a: &BlockEll<B, V>) -> Result<Csr<B, f64>> {
    a.backend.block_ell_to_csr(a)
}

/// `a` with values converted to `W` (rounded to nearest), on the same backend.
///
/// # Errors
/// Device and allocation errors.
pub fn convert<B: SparseAlgebraOps, V: Scalar, W: Scalar>(a: &Csr<B, V>) -> Result<Csr<B, W>> {
    a.backend().csr_convert::<V, W>(a)
}

/// `a` in SELL-C-σ with σ = 1 (rows kept in order, cut into slices of `slice_height`
/// rows, each padded to its longest row: see [`Sell`]), converted on `a`'s backend — on a
/// device by two kernels around a scan of the slices' widths, never through the host — the
/// arrays equal to [`Sell::from_csr`]'s. For an operator built on the device (a Galerkin
/// product) that is applied many times: SELL's SpMV reads whole slices coalesced where a
/// CSR row's group of units reads a few entries each.
///
/// # Errors
/// [`Error::InvalidArgument`] for a slice height that is not a power of two in 1..=1024;
/// [`Error::Padding`] when the stored slots exceed `limits` (checked before the arrays
/// are allocated); [`Error::InvalidMatrix`] for 2³² or more slots (32-bit offsets), as
/// [`Sell::from_csr`]; device errors.
///
/// ```
/// use galerkin::sparse::algebra::to_sell;
/// use galerkin::sparse::generate::poisson2d_5pt;
/// use galerkin::sparse::FormatLimits;
///
/// let a = poisson2d_5pt(16)?;
/// let s = to_sell(&a, 32, &FormatLimits::default())?;
/// assert_eq!(s.to_csr()?.values(), a.values());
/// # Ok::<(), galerkin::Error>(())
/// ```
pub fn to_sell<B: SparseAlgebraOps, V: Scalar>(
    a: &Csr<B, V>,
    slice_height: u32,
    limits: &FormatLimits,
) -> Result<Sell<B, V>> {
    SellParams {
        slice_height,
        sigma: 1,
    }
    .validate("sparse::algebra::to_sell")?;
    a.backend().csr_to_sell(a, slice_height, limits)
}

/// Checks that `diag` (of `a`) is positive; the error names the first row that is not:
/// empty, or with its diagonal. `level` (AMG's) words the reason for a coarse operator.
pub(crate) fn positive_diagonal<B: SparseAlgebraOps>(
    op: &'static str,
    a: &Csr<B, f64>,
    diag: &B::Buffer<f64>,
    level: Option<usize>,
) -> Result<()> {
    let backend = a.backend();
    if backend.count_nonpositive(diag)? == 0 {
        return Ok(());
    }
    // The slow path explains: find the row on the host.
    let d = backend.download(diag)?;
    let row_ptr = backend.download(&a.row_ptr)?;
    let (i, v) = d
        .iter()
        .enumerate()
        .find(|(_, &d)| d.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
        .map(|(i, &v)| (i, v))
        .unwrap_or((0, f64::NAN));
    let what = if row_ptr[i] == row_ptr[i + 1] {
        "is empty".to_string()
    } else {
        format!("has diagonal {v}")
    };
    let reason = match level {
        None | Some(0) => format!(
            "row {i} {what}: a symmetric positive definite matrix is needed (positive diagonal)"
        ),
        Some(l) => format!(
            "row {i} of the Galerkin operator of level {l} {what}: the matrix is not positive definite"
        ),
    };
    Err(Error::invalid(op, "a", reason))
}

impl SparseAlgebraOps for Cpu {
    fn block_ell_to_csr<V: Scalar>(&self, a: &BlockEll<Cpu, V>) -> Result<Csr<Cpu, f64>> {
        Ok(a.to_csr()?.convert::<f64>())
    }

    fn csr_diagonal<V: Scalar>(&self, a: &Csr<Cpu, V>) -> Result<Vec<V>> {
        Ok(a.diagonal())
    }

    fn csr_row_abs_sums<V: Scalar>(&self, a: &Csr<Cpu, V>) -> Result<Vec<V>> {
        Ok((0..a.nrows())
            .into_par_iter()
            .with_min_len(4096)
            .map(|i| V::from_f64(a.row(i).1.iter().map(|v| v.as_f64().abs()).sum::<f64>()))
            .collect())
    }

    fn csr_strength<V: Scalar>(&self, a: &Csr<Cpu, V>, theta: f64) -> Result<Csr<Cpu, V>> {
        host::strength(a, theta)
    }

    fn csr_transpose<V: Scalar>(&self, a: &Csr<Cpu, V>) -> Result<Csr<Cpu, V>> {
        Ok(a.transpose())
    }

    fn csr_spgemm<V: Scalar>(&self, a: &Csr<Cpu, V>, b: &Csr<Cpu, V>) -> Result<Csr<Cpu, V>> {
        host::spgemm(a, b)
    }

    fn csr_convert<V: Scalar, W: Scalar>(&self, a: &Csr<Cpu, V>) -> Result<Csr<Cpu, W>> {
        Ok(a.convert())
    }

    fn csr_to_sell<V: Scalar>(
        &self,
        a: &Csr<Cpu, V>,
        slice_height: u32,
        limits: &FormatLimits,
    ) -> Result<Sell<Cpu, V>> {
        let params = SellParams {
            slice_height,
            sigma: 1,
        };
        Sell::from_csr(a, params, limits)
    }

    fn csr_aggregate<V: Scalar>(&self, s: &Csr<Cpu, V>) -> Result<Aggregates<Cpu>> {
        let (agg, count) = aggregate::aggregate(s);
        Ok(Aggregates {
            agg,
            count,
            backend: Cpu::new(),
        })
    }

    fn tentative_prolongator(
        &self,
        agg: &Aggregates<Cpu>,
        b: &NearNullSpace<Cpu>,
    ) -> Result<(Csr<Cpu, f64>, NearNullSpace<Cpu>)> {
        let (t, bc) = prolong::tentative(&agg.agg, agg.count, b.rows, b.k, &b.data)?;
        let rows = t.ncols();
        Ok((
            t,
            NearNullSpace {
                rows,
                k: b.k,
                data: bc,
                backend: Cpu::new(),
            },
        ))
    }

    fn smoothed_prolongator(
        &self,
        a: &Csr<Cpu, f64>,
        t: &Csr<Cpu, f64>,
        diag: &Vec<f64>,
        omega: f64,
    ) -> Result<Csr<Cpu, f64>> {
        prolong::smooth(a, t, diag, omega)
    }

    fn count_nonpositive(&self, x: &Vec<f64>) -> Result<usize> {
        Ok(x.par_iter()
            .filter(|&&d| d.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater))
            .count())
    }

    fn any_zero(&self, x: &Vec<f64>) -> Result<bool> {
        Ok(x.par_iter().any(|&v| v == 0.0))
    }

    fn strided_ones(&self, n: usize, step: usize) -> Result<Vec<f64>> {
        crate::limits::check_host_items("a near-null vector", n as u64, 8)?;
        let step = step.max(1);
        Ok((0..n)
            .into_par_iter()
            .map(|i| if i % step == 0 { 1.0 } else { 0.0 })
            .collect())
    }

    fn hash_vector(&self, n: usize, seed: u32) -> Result<Vec<f64>> {
        crate::limits::check_host_items("a start vector", n as u64, 8)?;
        Ok((0..n)
            .into_par_iter()
            .map(|i| hash_value(i, seed))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A coarse level's row is named as empty or by its diagonal, with the operation.
    #[test]
    fn positive_diagonal_names_an_empty_coarse_row() {
        let cpu = Cpu::new();
        let a = Csr::<Cpu, f64>::new(3, 3, vec![0, 1, 1, 2], vec![0, 2], vec![1.0, 1.0]).unwrap();
        let diag = cpu.csr_diagonal(&a).unwrap();
        let e = positive_diagonal("Amg::from_device", &a, &diag, Some(2))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("row 1 of the Galerkin operator of level 2 is empty"),
            "{e}"
        );
        assert!(e.contains("Amg::from_device"), "{e}");
        let b = Csr::<Cpu, f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, -2.0]).unwrap();
        let diag = cpu.csr_diagonal(&b).unwrap();
        let e = positive_diagonal("Amg::new", &b, &diag, Some(1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("row 1 of the Galerkin operator of level 1 has diagonal -2"),
            "{e}"
        );
    }
}
