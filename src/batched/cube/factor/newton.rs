//! The divisions and square roots of the factorizations, with an f64 form for Vulkan that
//! starts from an f32 estimate and refines it by Newton steps.
//!
//! NVIDIA's Vulkan driver spends much of an f64 Cholesky's time in its f64 square root and
//! division; CUDA's are fast. Measured on an H100 (2026-11-27, `bench --suite batched`, f64,
//! wgpu, µs exact / refined): Cholesky n = 8 304 / 292, 12 332 / 276, 16 352 / 297, 20 480 /
//! 386, 24 501 / 447, 28 622 / 549, 32 605 / 526, 40 1258 / 1072, 64 974 / 847; LU n = 40
//! 2042 / 1966 (n = 8 467 / 433 in that call, unchanged in two later ones); but LU's row and
//! column kernels (n = 12..32), where every unit divides at a step, were slower refined (see
//! `FactorShape::refine`).
//!
//! With `refine` on, `1 / d` and `1 / √d` come from the f32 hardware estimate (2 ulp of f32),
//! refined in f64 by one step of third order each (relative error about `e³`, `e ≈ 1e-7`),
//! and quotients and roots take one more residual step, so that with a fused `fma` (NVIDIA's;
//! WGSL does not require one) they are within 1 ulp of the exact ones (the unit test's bound)
//! and `a / a` is exactly 1: an exactly repeated row still leaves an exact zero pivot. Outside
//! f32's comfortable range (`|d|` not in `[1e-37, 1e37]`, the dividend `|a|` not below
//! `f32::MAX`, infinities, NaNs) the exact operations run instead. With `refine` off (CUDA,
//! f32, the CPU's reference) every function is the plain operation.

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{Cube, CubeRuntime};
use crate::backend::BackendKind;
use crate::scalar::{DType, Scalar};

/// Whether the factorizations on `b` in precision `T` take the refined f64 forms: f64 on
/// wgpu (lavapipe included: its `fma` is not fused, so its quotients and roots are within 3
/// ulp rather than 1, which the tests allow).
pub(crate) fn refine_f64<R: CubeRuntime, T: Scalar>(b: &Cube<R>) -> bool {
    b.kind() == BackendKind::Wgpu && T::DTYPE == DType::F64
}

/// The smallest magnitude whose estimate is taken in f32 (a normal f32, its reciprocal and
/// reciprocal root finite).
const LOW: f32 = 1e-37;
/// The largest such magnitude.
const HIGH: f32 = 1e37;

/// A square root and its reciprocal.
#[derive(CubeType)]
pub(crate) struct Root<T: Float> {
    /// `√d`.
    pub root: T,
    /// `1 / √d`.
    pub inv: T,
}

/// `1 / d`.
#[cube]
#[allow(unused_assignments)] // every branch assigns; a cube variable is declared first
pub(crate) fn recip<T: Float>(d: T, #[comptime] refine: bool) -> T {
    let mut y = T::new(0.0);
    if comptime![refine] {
        let m = T::abs(d);
        if m >= T::new(LOW) && m <= T::new(HIGH) {
            y = T::cast_from(f32::new(1.0) / f32::cast_from(d));
            // e = 1 - d y; y (1 + e + e²) has relative error e³.
            let e = fma(-d, y, T::new(1.0));
            y = fma(y, fma(e, e, e), y);
        } else {
            y = T::new(1.0) / d;
        }
    } else {
        y = T::new(1.0) / d;
    }
    y
}

/// `a / d`, given `y = recip(d, refine)`.
#[cube]
#[allow(unused_assignments)] // every branch assigns; a cube variable is declared first
pub(crate) fn div<T: Float>(a: T, d: T, y: T, #[comptime] refine: bool) -> T {
    let mut q = T::new(0.0);
    if comptime![refine] {
        let m = T::abs(d);
        if m >= T::new(LOW) && m <= T::new(HIGH) && T::abs(a) < T::new(f32::MAX) {
            // One residual step from a y: the correctly rounded quotient in all but rare
            // cases, and exactly 1 for a == d.
            q = a * y;
            let r = fma(-q, d, a);
            q = fma(r, y, q);
        } else {
            q = a / d;
        }
    } else {
        q = a / d;
    }
    q
}

/// `√d` and `1 / √d`, for `d > 0`.
#[cube]
#[allow(unused_assignments)] // every branch assigns; a cube variable is declared first
pub(crate) fn root<T: Float>(d: T, #[comptime] refine: bool) -> Root<T> {
    let mut root = T::new(0.0);
    let mut inv = T::new(0.0);
    if comptime![refine] {
        if d >= T::new(LOW) && d <= T::new(HIGH) {
            let mut y = T::cast_from(f32::inverse_sqrt(f32::cast_from(d)));
            // e = 1 - d y²; y (1 + e/2 + 3e²/8) has relative error about 5e³/16.
            let e = fma(-(d * y), y, T::new(1.0));
            y = fma(y * e, fma(T::new(0.375), e, T::new(0.5)), y);
            inv = y;
            // √d = d y, one residual step: r + (d - r²) y / 2.
            let r = d * y;
            root = fma(T::new(0.5) * y, fma(-r, r, d), r);
        } else {
            root = T::sqrt(d);
            inv = T::new(1.0) / root;
        }
    } else {
        root = T::sqrt(d);
        inv = T::new(1.0) / root;
    }
    Root::<T> { root, inv }
}

#[cfg(all(test, any(feature = "wgpu", feature = "cuda")))]
mod tests {
    use super::*;
    use crate::backend::cube::{on_test_device, CubeBuffer};
    use crate::random::Rng;
    use crate::scalar::ulp_distance;

    /// For each `(a, d)`: `recip(d)`, `div(a, d)`, and `root(|d|)`'s two values.
    #[cube(launch_unchecked)]
    fn newton_kernel<T: Float>(
        a: &Array<T>,
        d: &Array<T>,
        out: &mut Array<T>,
        #[comptime] refine: bool,
    ) {
        let i = ABSOLUTE_POS;
        if i < d.len() {
            let y = recip::<T>(d[i], refine);
            out[4 * i] = y;
            out[4 * i + 1] = div::<T>(a[i], d[i], y, refine);
            let r = root::<T>(T::abs(d[i]), refine);
            out[4 * i + 2] = r.root;
            out[4 * i + 3] = r.inv;
        }
    }

    /// `fma(x[i], y[i], z[i])`.
    #[cube(launch_unchecked)]
    fn fma_kernel(x: &Array<f64>, y: &Array<f64>, z: &Array<f64>, out: &mut Array<f64>) {
        let i = ABSOLUTE_POS;
        if i < out.len() {
            out[i] = fma(x[i], y[i], z[i]);
        }
    }

    /// Whether the device's f64 `fma` is fused (one rounding): WGSL lets it be a product and
    /// a sum (lavapipe's is).
    fn fused_fma<R: CubeRuntime>(b: &Cube<R>) -> bool {
        // (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60, which the rounded product loses.
        let t = 2f64.powi(-30);
        let x = b.upload(&[1.0 + t]).unwrap();
        let y = b.upload(&[1.0 - t]).unwrap();
        let z = b.upload(&[-1.0]).unwrap();
        let out: CubeBuffer<f64> = b.upload(&[f64::NAN]).unwrap();
        b.launch::<()>("fma probe", || {
            // SAFETY: one unit, one value in every array.
            unsafe {
                fma_kernel::launch_unchecked::<R>(
                    b.client(),
                    CubeCount::Static(1, 1, 1),
                    CubeDim::new_1d(1),
                    x.arg(),
                    y.arg(),
                    z.arg(),
                    out.arg(),
                )
            }
        })
        .unwrap();
        let got = b.download(&out).unwrap()[0];
        assert!(got == 0.0 || got == -t * t, "fma probe: {got:e}");
        got != 0.0
    }

    /// The refined forms against the exact operations on the CPU, on random values over the
    /// whole range (the ends take the exact operations) and on `a == d`.
    fn refined_against_cpu<R: CubeRuntime>(b: Cube<R>) {
        if !b.info().supports_f64() {
            eprintln!("[galerkin tests] skipping: no f64 on {}", b.info());
            return;
        }
        let mut rng = Rng::new(5);
        let mut a = Vec::new();
        let mut d = Vec::new();
        for _ in 0..4000 {
            let e = rng.range(-300.0, 300.0);
            let m = rng.range(1.0, 2.0) * 10f64.powf(e);
            d.push(if rng.range(0.0, 1.0) < 0.3 { -m } else { m });
            a.push(rng.range(-1e6, 1e6) * 10f64.powf(rng.range(-40.0, 40.0)));
        }
        // Repeated rows: a == d gives exactly 1.
        a[..200].copy_from_slice(&d[..200]);
        // Ends of the refined range, past them, and non-finite values.
        let ends = [
            1e-37,
            1.0000001e-37,
            9.999999e36,
            1e37,
            2e37,
            1e-38,
            1e-310,
            f64::MAX,
        ];
        for (i, &v) in ends.iter().enumerate() {
            d[200 + i] = v;
            a[200 + i] = 3.0;
        }
        d[210] = 2.0;
        a[210] = f64::INFINITY;
        d[211] = 2.0;
        a[211] = 1e300;
        let fused = fused_fma(&b);
        eprintln!("[galerkin tests] {}: fused f64 fma: {fused}", b.info());
        let n = d.len();
        let da = b.upload(&a).unwrap();
        let dd = b.upload(&d).unwrap();
        let out: CubeBuffer<f64> = b.upload(&vec![f64::NAN; 4 * n]).unwrap();
        b.launch::<()>("newton test", || {
            // SAFETY: one unit per value; the kernel checks the length, out holds 4 n.
            unsafe {
                newton_kernel::launch_unchecked::<f64, R>(
                    b.client(),
                    CubeCount::Static(n.div_ceil(64) as u32, 1, 1),
                    CubeDim::new_1d(64),
                    da.arg(),
                    dd.arg(),
                    out.arg(),
                    true,
                )
            }
        })
        .unwrap();
        let got = b.download(&out).unwrap();
        for i in 0..n {
            let (x, y) = (a[i], d[i]);
            let m = y.abs();
            let want = [1.0 / y, x / y, m.sqrt(), 1.0 / m.sqrt()];
            // recip and the reciprocal root: 2 ulp; quotient and root: at most 1 with a
            // fused fma, else the residual steps' rounded products add up to 2.
            let most = if fused { [2, 1, 1, 2] } else { [2, 3, 3, 2] };
            for k in 0..4 {
                let u = ulp_distance(got[4 * i + k], want[k]);
                assert!(
                    u <= most[k],
                    "{} of a = {x:e}, d = {y:e}: {:e}, exact {:e} ({u} ulp)",
                    ["recip", "div", "root", "inverse root"][k],
                    got[4 * i + k],
                    want[k]
                );
            }
            if i < 200 && fused {
                assert_eq!(got[4 * i + 1], 1.0, "a / a for a = {x:e}");
            }
        }
    }

    #[cfg(feature = "wgpu")]
    #[test]
    fn wgpu_refined_division_and_root() {
        on_test_device("wgpu", crate::backend::Wgpu::new(), refined_against_cpu);
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn cuda_refined_division_and_root() {
        on_test_device("cuda", crate::backend::Cuda::new(), refined_against_cpu);
    }
}
