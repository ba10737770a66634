//! Element types: what can be stored on a device, and what arithmetic runs in.
//!
//! - [`Element`]: a floating-point storage type: `f16`, `bf16`, `f32`, `f64`. Matrices may
//!   store their values in any of them.
//! - [`Scalar`]: an arithmetic type: `f32` or `f64`. Vectors, reductions and solvers run in
//!   a `Scalar`; a matrix stored in a narrower [`Element`] is widened as it is read.
//! - [`Storable`]: anything a device buffer may hold, the element types and the index types
//!   `u32`/`i32`.
//!
//! # Conversions
//! Every element type converts to `f64` exactly ([`Element::as_f64`]), and from `f64` with
//! one rounding to nearest, ties to even ([`Element::from_f64`]). Converting `S -> D` through
//! `f64` is therefore correctly rounded for every pair; [`Lossless`] marks the pairs where it
//! is exact (`f16 -> f32`, `bf16 -> f64`, `f32 -> f64`, ...).
//!
//! # Test tolerance policy
//! A result computed in precision `T` is compared with an f64 reference by the relative norm
//! error `‖y − y_ref‖₂ / ‖y_ref‖₂` (see [`crate::verify`]). It passes when the error is at most
//! [`tolerance::<T>(terms)`](tolerance) `= 8 ε_T √max(terms, 1)`, where `ε_T` is the machine
//! epsilon of `T` (the spacing of `T` at 1: 2⁻²³ for f32, 2⁻⁵² for f64) and `terms` is the
//! number of rounded operations accumulated into one output entry: 1 for element-wise
//! operations, `n` for an inner product of length `n`, the row length for SpMV.
//! `8 ε √n = 16 u √n` (u = ε/2 the unit roundoff) is the probabilistic rounding-error bound of
//! Higham and Mary (SIAM J. Sci. Comput. 41, 2019) with a safety factor; it also covers
//! the deterministic `log₂ n` bound of tree reductions. Results whose reference suffers
//! cancellation (an inner product much smaller than `Σ|xᵢ yᵢ|`) are compared relative to the
//! magnitude of the terms instead ([`crate::verify::compare_scaled`]).

use std::fmt;

use cubecl::prelude::Float as CubeFloat;
use cubecl::CubeElement;

/// Element types as a run-time value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE binary16.
    F16,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    BF16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// 32-bit unsigned integer (indices).
    U32,
    /// 32-bit signed integer (indices with a sentinel).
    I32,
}

impl DType {
    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::U32 | DType::I32 => 4,
            DType::F64 => 8,
        }
    }

    /// The short name used in tables and test names (`"f64"`, `"bf16"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::U32 => "u32",
            DType::I32 => "i32",
        }
    }

    /// Whether this is a floating-point type.
    pub const fn is_float(self) -> bool {
        !matches!(self, DType::U32 | DType::I32)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
}

/// A value a device buffer can hold: the float element types and `u32`/`i32` indices.
pub trait Storable:
    CubeElement
    + cubecl::prelude::Numeric
    + Copy
    + Default
    + fmt::Debug
    + Send
    + Sync
    + 'static
    + sealed::Sealed
{
    /// The run-time tag of the type.
    const DTYPE: DType;
}

impl Storable for u32 {
    const DTYPE: DType = DType::U32;
}
impl Storable for i32 {
    const DTYPE: DType = DType::I32;
}

/// A floating-point storage type: `f16`, `bf16`, `f32` or `f64`.
pub trait Element: Storable + CubeFloat + PartialOrd + fmt::Display {
    /// Machine epsilon: the distance from 1 to the next larger value.
    const EPS: f64;

    /// The exact value as `f64`.
    fn as_f64(self) -> f64;

    /// `x` rounded to this type (to nearest, ties to even; overflow gives ±inf).
    fn from_f64(x: f64) -> Self;

    /// A signed integer that orders like the float (−0 and +0 map to the same value),
    /// so that the difference of two such integers counts the floats between them.
    fn ordered_bits(self) -> i64;

    /// Converts to another element type with one correct rounding.
    fn convert<D: Element>(self) -> D {
        D::from_f64(self.as_f64())
    }
}

/// Marks the conversions `Self -> D` that are exact for every value.
pub trait Lossless<D: Element>: Element {}

impl<T: Element> Lossless<T> for T {}
impl Lossless<f32> for half::f16 {}
impl Lossless<f64> for half::f16 {}
impl Lossless<f32> for half::bf16 {}
impl Lossless<f64> for half::bf16 {}
impl Lossless<f64> for f32 {}

/// Maps sign-magnitude float bits to an order-preserving integer.
fn order(bits: i64, sign_bit: i64) -> i64 {
    if bits & sign_bit != 0 {
        -(bits & (sign_bit - 1))
    } else {
        bits
    }
}

impl Storable for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for half::f16 {
    const EPS: f64 = 9.765625e-4;
    fn as_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
    fn from_f64(x: f64) -> Self {
        half::f16::from_f64(x)
    }
    fn ordered_bits(self) -> i64 {
        order(self.to_bits() as i64, 1 << 15)
    }
}

impl Storable for half::bf16 {
    const DTYPE: DType = DType::BF16;
}
impl Element for half::bf16 {
    const EPS: f64 = 7.8125e-3;
    fn as_f64(self) -> f64 {
        half::bf16::to_f64(self)
    }
    fn from_f64(x: f64) -> Self {
        half::bf16::from_f64(x)
    }
    fn ordered_bits(self) -> i64 {
        order(self.to_bits() as i64, 1 << 15)
    }
}

impl Storable for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for f32 {
    const EPS: f64 = f32::EPSILON as f64;
    fn as_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn ordered_bits(self) -> i64 {
        order(self.to_bits() as i64, 1 << 31)
    }
}

impl Storable for f64 {
    const DTYPE: DType = DType::F64;
}
impl Element for f64 {
    const EPS: f64 = f64::EPSILON;
    fn as_f64(self) -> f64 {
        self
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn ordered_bits(self) -> i64 {
        let bits = self.to_bits() as i64;
        // The sign bit of an i64 is its own sign: negative floats have negative bits.
        if bits < 0 {
            -(bits & i64::MAX)
        } else {
            bits
        }
    }
}

/// An arithmetic type: `f32` or `f64`. Vectors, reductions and solvers compute in a `Scalar`.
///
/// Host-side arithmetic on a generic `Scalar` uses the operators `+ - * /` (and unary `-`);
/// everything else goes through [`Element::as_f64`] / [`Element::from_f64`].
pub trait Scalar: Element + std::iter::Sum + fmt::LowerExp {
    /// Which precision this is.
    const PRECISION: Precision;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The smallest positive normal value, as f64.
    const MIN_NORMAL: f64;
}

impl Scalar for f32 {
    const PRECISION: Precision = Precision::F32;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const MIN_NORMAL: f64 = f32::MIN_POSITIVE as f64;
}

impl Scalar for f64 {
    const PRECISION: Precision = Precision::F64;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;
}

/// The arithmetic precision of an operation, as a run-time value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Single precision throughout.
    F32,
    /// Double precision throughout.
    F64,
}

impl Precision {
    /// The element type of this precision.
    pub const fn dtype(self) -> DType {
        match self {
            Precision::F32 => DType::F32,
            Precision::F64 => DType::F64,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dtype().name())
    }
}

/// The first entry of `values` that f32 cannot hold: beyond `f32::MAX` (it would become
/// infinite) or, with `underflow`, non-zero below the smallest normal f32 (it would become
/// 0 or lose its digits). Its index and value.
pub fn f32_unrepresentable(values: &[f64], underflow: bool) -> Option<(usize, f64)> {
    values.iter().copied().enumerate().find(|&(_, v)| {
        v.abs() > f32::MAX as f64 || (underflow && v != 0.0 && v.abs() < f32::MIN_POSITIVE as f64)
    })
}

/// The relative-norm tolerance for a result computed in precision `T` with `terms` rounded
/// operations accumulated per output entry: `8 ε_T √max(terms, 1)`. See the
/// [module documentation](self) for where it comes from.
pub fn tolerance<T: Element>(terms: usize) -> f64 {
    8.0 * T::EPS * (terms.max(1) as f64).sqrt()
}

/// Number of representable `T` values between `a` and `b` (0 when equal, `u64::MAX` when
/// either is NaN).
pub fn ulp_distance<T: Element>(a: T, b: T) -> u64 {
    let (x, y) = (a.as_f64(), b.as_f64());
    if x.is_nan() || y.is_nan() {
        return if x.is_nan() && y.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    a.ordered_bits().abs_diff(b.ordered_bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulp_distance_counts_floats_between() {
        assert_eq!(ulp_distance(1.0f32, 1.0f32), 0);
        assert_eq!(ulp_distance(1.0f32, 1.0f32 + f32::EPSILON), 1);
        assert_eq!(ulp_distance(-0.0f64, 0.0f64), 0);
        let tiny = f64::from_bits(1);
        assert_eq!(ulp_distance(-tiny, tiny), 2);
        assert_eq!(
            ulp_distance(half::f16::ONE, half::f16::from_f64(1.0 + 9.765625e-4)),
            1
        );
        assert_eq!(ulp_distance(f32::NAN, 1.0), u64::MAX);
    }

    #[test]
    fn conversions_round_once() {
        // 1 + 2^-24 is a tie between 1 and 1 + 2^-23 in f32: ties to even gives 1.
        assert_eq!(f32::from_f64(1.0 + 2f64.powi(-24)), 1.0);
        assert_eq!(
            f32::from_f64(1.0 + 3.0 * 2f64.powi(-25)),
            1.0 + f32::EPSILON
        );
        assert_eq!(half::bf16::from_f64(1.0).convert::<f64>(), 1.0);
        assert_eq!(half::f16::from_f64(1e6).as_f64(), f64::INFINITY);
        for e in [-3.0f64, 0.1, 1234.5, 6.0e4] {
            let h = half::f16::from_f64(e);
            assert_eq!(h.convert::<f32>().as_f64(), h.as_f64());
        }
    }

    #[test]
    fn tolerance_grows_with_terms() {
        assert_eq!(tolerance::<f64>(0), 8.0 * f64::EPSILON);
        assert!(tolerance::<f32>(10_000) > 99.0 * tolerance::<f32>(1));
        assert!(tolerance::<f32>(1) > tolerance::<f64>(1_000_000));
    }
}
