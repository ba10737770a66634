//! Every vector operation on every backend and precision against a plain f64 loop over the
//! same (rounded) inputs; outputs poisoned with NaN first.

use galerkin::vector::{cg_update, cgcg_update, pointwise_mul_dot, CgCgU};
use galerkin::verify::{poison, random_range, random_vec};
use galerkin::{Backend, BackendCore, Element, Scalar, Storable, Vector};

use crate::backend_tests;
use crate::harness::{assert_close, assert_close_scaled, exact_sum, widen, LENGTHS};

fn poisoned<B: Backend, T: Scalar>(b: &B, n: usize) -> Vector<B, T> {
    Vector::from_slice(b, &poison::<T>(n)).unwrap()
}

fn upload<B: Backend, T: Element>(b: &B, v: &[T]) -> Vector<B, T> {
    Vector::from_slice(b, v).unwrap()
}

fn fill<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let value = T::from_f64(-0.375);
        let mut x = poisoned::<B, T>(b, n);
        x.fill(value).unwrap();
        assert_close(
            &x.to_vec().unwrap(),
            &vec![-0.375; n],
            1,
            &format!("fill n={n}"),
        );
        let full = Vector::full(b, n, T::from_f64(2.5)).unwrap();
        assert_close(
            &full.to_vec().unwrap(),
            &vec![2.5; n],
            1,
            &format!("full n={n}"),
        );
        let zeros = Vector::<B, T>::zeros(b, n).unwrap();
        assert!(zeros.to_vec().unwrap().iter().all(|v| v.as_f64() == 0.0));
    }
}

fn copy<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let xs = random_vec::<T>(n, 1);
        let x = upload(b, &xs);
        let mut y = poisoned::<B, T>(b, n);
        y.copy_from(&x).unwrap();
        assert_eq!(y.to_vec().unwrap(), xs, "copy n={n}");
        let z = x.try_clone().unwrap();
        assert_eq!(z.to_vec().unwrap(), xs, "try_clone n={n}");
    }
}

fn scale<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let xs = random_vec::<T>(n, 2);
        let alpha = T::from_f64(-1.75);
        let mut x = upload(b, &xs);
        x.scale(alpha).unwrap();
        let expected: Vec<f64> = widen(&xs).iter().map(|v| -1.75 * v).collect();
        assert_close(&x.to_vec().unwrap(), &expected, 1, &format!("scale n={n}"));
    }
}

fn axpy<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let (xs, ys) = (random_vec::<T>(n, 3), random_vec::<T>(n, 4));
        let alpha = T::from_f64(0.625);
        let x = upload(b, &xs);
        let mut y = upload(b, &ys);
        y.axpy(alpha, &x).unwrap();
        let expected: Vec<f64> = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| 0.625 * x.as_f64() + y.as_f64())
            .collect();
        assert_close(&y.to_vec().unwrap(), &expected, 2, &format!("axpy n={n}"));
    }
}

fn axpby<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let (xs, ys) = (random_vec::<T>(n, 5), random_vec::<T>(n, 6));
        let x = upload(b, &xs);
        let mut y = upload(b, &ys);
        y.axpby(T::from_f64(1.5), &x, T::from_f64(-0.25)).unwrap();
        let expected: Vec<f64> = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| 1.5 * x.as_f64() - 0.25 * y.as_f64())
            .collect();
        assert_close(&y.to_vec().unwrap(), &expected, 3, &format!("axpby n={n}"));
    }
}

fn pointwise_mul<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let (xs, ys) = (random_vec::<T>(n, 7), random_vec::<T>(n, 8));
        let mut z = poisoned::<B, T>(b, n);
        z.pointwise_mul(&upload(b, &xs), &upload(b, &ys)).unwrap();
        let expected: Vec<f64> = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| x.as_f64() * y.as_f64())
            .collect();
        assert_close(
            &z.to_vec().unwrap(),
            &expected,
            1,
            &format!("pointwise_mul n={n}"),
        );
    }
}

fn pointwise_div<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let xs = random_vec::<T>(n, 9);
        let ys = random_range::<T>(n, 0.5, 2.0, 10);
        let mut z = poisoned::<B, T>(b, n);
        z.pointwise_div(&upload(b, &xs), &upload(b, &ys)).unwrap();
        let expected: Vec<f64> = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| x.as_f64() / y.as_f64())
            .collect();
        assert_close(
            &z.to_vec().unwrap(),
            &expected,
            1,
            &format!("pointwise_div n={n}"),
        );
    }
}

/// Asserts that `d` is `xs · ys` within the rounding of `T` for the sum's magnitude.
fn check_dot<T: Scalar>(d: T, xs: &[T], ys: &[T], what: &str) {
    let terms: Vec<f64> = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| x.as_f64() * y.as_f64())
        .collect();
    let magnitude = exact_sum(terms.iter().map(|t| t.abs()));
    assert_close_scaled(&[d], &[exact_sum(terms)], magnitude, xs.len(), what);
}

fn dot<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let (xs, ys) = (random_vec::<T>(n, 11), random_vec::<T>(n, 12));
        let d = upload(b, &xs).dot(&upload(b, &ys)).unwrap();
        check_dot(d, &xs, &ys, &format!("dot n={n}"));
        // Deterministic: the same bits on a second call.
        let again = upload(b, &xs).dot(&upload(b, &ys)).unwrap();
        assert_eq!(
            d.as_f64().to_bits(),
            again.as_f64().to_bits(),
            "dot n={n} not deterministic"
        );
    }
}

fn nrm2<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let xs = random_vec::<T>(n, 13);
        let got = upload(b, &xs).nrm2().unwrap();
        let expected = exact_sum(widen(&xs).iter().map(|v| v * v)).sqrt();
        assert_close(&[got], &[expected], n, &format!("nrm2 n={n}"));
    }
    // Squares that overflow or underflow the working precision are rescaled.
    let big = T::from_f64(if T::EPS > 1e-10 { 1e30 } else { 1e200 });
    let x = upload(b, &[big, big, big, big, big]);
    let expected = big.as_f64() * 5f64.sqrt();
    assert_close(&[x.nrm2().unwrap()], &[expected], 5, "nrm2 of huge values");
    let tiny = T::from_f64(if T::EPS > 1e-10 { 1e-30 } else { 1e-200 });
    let x = upload(b, &[tiny, -tiny, tiny]);
    assert_close(
        &[x.nrm2().unwrap()],
        &[tiny.as_f64() * 3f64.sqrt()],
        3,
        "nrm2 of tiny values",
    );
}

fn amax<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let mut xs = random_vec::<T>(n, 14);
        if n > 2 {
            xs[n - 2] = T::from_f64(-3.5);
        }
        let got = upload(b, &xs).amax().unwrap();
        let expected = widen(&xs).iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert_eq!(got.as_f64(), expected, "amax n={n}");
        if n > 0 {
            xs[n / 2] = T::from_f64(f64::NAN);
            assert!(
                upload(b, &xs).amax().unwrap().as_f64().is_nan(),
                "amax n={n} must propagate NaN"
            );
        }
    }
}

fn convert<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        // T -> f32 -> T: rounding to f32 is exact for f32 and rounds f64 once.
        let xs = random_vec::<T>(n, 15);
        let x = upload(b, &xs);
        let mut y = Vector::<B, f32>::from_slice(b, &poison::<f32>(n)).unwrap();
        y.convert_from(&x).unwrap();
        let expected: Vec<f32> = xs.iter().map(|v| v.as_f64() as f32).collect();
        assert_eq!(
            y.to_vec().unwrap(),
            expected,
            "convert {}->f32 n={n}",
            T::DTYPE
        );
        let back = y.to_precision::<T>().unwrap();
        let widened: Vec<T> = expected.iter().map(|v| T::from_f64(*v as f64)).collect();
        assert_eq!(
            back.to_vec().unwrap(),
            widened,
            "convert f32->{} n={n}",
            T::DTYPE
        );
    }
}

fn fused_cg_update<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let (ps, qs) = (random_vec::<T>(n, 16), random_vec::<T>(n, 17));
        let (xs, rs) = (random_vec::<T>(n, 18), random_vec::<T>(n, 19));
        let alpha = T::from_f64(0.3125);
        let (p, q) = (upload(b, &ps), upload(b, &qs));
        let (mut x, mut r) = (upload(b, &xs), upload(b, &rs));
        let rr = cg_update(alpha, &p, &q, &mut x, &mut r).unwrap();
        let x_ref: Vec<f64> = xs
            .iter()
            .zip(&ps)
            .map(|(x, p)| x.as_f64() + 0.3125 * p.as_f64())
            .collect();
        let r_ref: Vec<f64> = rs
            .iter()
            .zip(&qs)
            .map(|(r, q)| r.as_f64() - 0.3125 * q.as_f64())
            .collect();
        assert_close(
            &x.to_vec().unwrap(),
            &x_ref,
            2,
            &format!("cg_update x n={n}"),
        );
        let r_new = r.to_vec().unwrap();
        assert_close(&r_new, &r_ref, 2, &format!("cg_update r n={n}"));
        // r·r of the r the kernel stored (its own rounding), accumulated exactly.
        let rr_ref = exact_sum(widen(&r_new).iter().map(|v| v * v));
        assert_close(&[rr], &[rr_ref], n, &format!("cg_update r·r n={n}"));
    }
}

/// Flexible PCG's step after an f32 preconditioner (`pcg_flexible_convert_device`: on a
/// device one pass for two dot products, the conversion and the rotation) against an f64
/// loop: `z` rounded from the f32 values exactly, `r·z` of the old and the new `z`, `β`
/// from them; the slots it must not touch poisoned and checked; and the same sums as the
/// four separate steps it replaces.
fn fused_flexible_convert<B: Backend, T: Scalar>(b: &B) {
    use galerkin::vector::{
        cg_scalars as cs, dot_into, pcg_flexible_convert_device, pcg_flexible_rotate_device,
    };
    for n in LENGTHS {
        let (rs, zs) = (random_vec::<T>(n, 31), random_vec::<T>(n, 32));
        let lows = random_vec::<f32>(n, 33);
        let (r, low) = (upload(b, &rs), upload(b, &lows));
        let mut start = poison::<T>(cs::FLEXIBLE_LEN);
        start[cs::RZ] = T::from_f64(0.8125);
        let rz_old = 0.8125;
        let fused = {
            let mut z = upload(b, &zs);
            let mut s = upload(b, &start);
            pcg_flexible_convert_device(&mut s, &low, &r, &mut z).unwrap();
            (z.to_vec().unwrap(), s.to_vec().unwrap())
        };
        let steps = {
            let mut z = upload(b, &zs);
            let mut s = upload(b, &start);
            dot_into(&r, &z, &mut s, cs::RZ_PREV).unwrap();
            z.convert_from(&low).unwrap();
            dot_into(&r, &z, &mut s, cs::RZ_NEW).unwrap();
            pcg_flexible_rotate_device(&mut s).unwrap();
            s.to_vec().unwrap()
        };
        let (z, s) = fused;
        let z_ref: Vec<T> = lows.iter().map(|v| T::from_f64(f64::from(*v))).collect();
        assert!(
            z.iter().zip(&z_ref).all(|(a, b)| a.as_f64() == b.as_f64()),
            "flexible convert z n={n} ({})",
            T::DTYPE
        );
        let rw = widen(&rs);
        let prev = exact_sum(rw.iter().zip(widen(&zs)).map(|(r, z)| r * z));
        let next = exact_sum(rw.iter().zip(widen(&z_ref)).map(|(r, z)| r * z));
        let scale = exact_sum(rw.iter().zip(widen(&zs)).map(|(r, z)| (r * z).abs())).max(
            exact_sum(rw.iter().zip(widen(&z_ref)).map(|(r, z)| (r * z).abs())),
        );
        let got = [s[cs::RZ_PREV], s[cs::RZ_NEW], s[cs::RZ], s[cs::RR]];
        assert_close_scaled(
            &got,
            &[prev, next, next, next],
            scale,
            n,
            &format!("flexible convert sums n={n}"),
        );
        let beta = (s[cs::RZ_NEW].as_f64() - s[cs::RZ_PREV].as_f64()) / rz_old;
        assert_close_scaled(
            &[s[cs::BETA]],
            &[beta],
            scale / rz_old,
            4,
            &format!("flexible convert β n={n}"),
        );
        // PQ and slot 3 (unused) are not the step's: still poisoned.
        for slot in [cs::PQ, cs::BETA + 1] {
            assert!(s[slot].as_f64().is_nan(), "slot {slot} written, n={n}");
        }
        // The four steps' sums (the same up to the contraction of a multiply-add).
        assert_close_scaled(
            &[s[cs::RZ_PREV], s[cs::RZ_NEW], s[cs::BETA]],
            &widen(&[steps[cs::RZ_PREV], steps[cs::RZ_NEW], steps[cs::BETA]]),
            scale.max(scale / rz_old),
            4,
            &format!("flexible convert against its four steps n={n}"),
        );
    }
}

/// The flexible step with both `z` kept in f32 (`pcg_flexible_low_device`, then the
/// direction from the f32 `z`) against the step that stores `z` in `T`
/// (`pcg_flexible_convert_device` from `z = round(old)`, then the direction from it): the
/// same scalars and direction to the bit; the sums against an f64 loop; the slots the step
/// does not own still poisoned.
fn fused_flexible_low<B: Backend, T: Scalar>(b: &B) {
    use galerkin::vector::{
        cg_scalars as cs, pcg_flexible_convert_device, pcg_flexible_low_device, xpay_device,
    };
    for n in LENGTHS {
        let rs = random_vec::<T>(n, 41);
        let (olds, lows) = (random_vec::<f32>(n, 42), random_vec::<f32>(n, 43));
        let ps = random_vec::<T>(n, 44);
        let (r, old, low) = (upload(b, &rs), upload(b, &olds), upload(b, &lows));
        let mut start = poison::<T>(cs::FLEXIBLE_LEN);
        start[cs::RZ] = T::from_f64(0.8125);
        let stored = {
            let z_old: Vec<T> = olds.iter().map(|v| T::from_f64(f64::from(*v))).collect();
            let (mut z, mut s, mut p) = (upload(b, &z_old), upload(b, &start), upload(b, &ps));
            pcg_flexible_convert_device(&mut s, &low, &r, &mut z).unwrap();
            xpay_device(&s, &z, &mut p).unwrap();
            (s.to_vec().unwrap(), p.to_vec().unwrap())
        };
        let kept = {
            let (mut s, mut p) = (upload(b, &start), upload(b, &ps));
            pcg_flexible_low_device(&mut s, &low, &old, &r).unwrap();
            xpay_device(&s, &low, &mut p).unwrap();
            (s.to_vec().unwrap(), p.to_vec().unwrap())
        };
        let bits = |v: &[T]| v.iter().map(|x| x.as_f64().to_bits()).collect::<Vec<_>>();
        for slot in [cs::RZ_PREV, cs::RZ_NEW, cs::RZ, cs::RR, cs::BETA] {
            assert_eq!(
                kept.0[slot].as_f64().to_bits(),
                stored.0[slot].as_f64().to_bits(),
                "flexible low slot {slot} n={n} ({})",
                T::DTYPE
            );
        }
        assert_eq!(bits(&kept.1), bits(&stored.1), "flexible low p n={n}");
        for slot in [cs::PQ, cs::BETA + 1] {
            assert!(kept.0[slot].as_f64().is_nan(), "slot {slot} written, n={n}");
        }
        let rw = widen(&rs);
        let round = |v: &[f32]| -> Vec<f64> {
            v.iter()
                .map(|x| T::from_f64(f64::from(*x)).as_f64())
                .collect()
        };
        let (ow, lw) = (round(&olds), round(&lows));
        let prev = exact_sum(rw.iter().zip(&ow).map(|(r, z)| r * z));
        let next = exact_sum(rw.iter().zip(&lw).map(|(r, z)| r * z));
        let scale = exact_sum(rw.iter().zip(&ow).map(|(r, z)| (r * z).abs()))
            .max(exact_sum(rw.iter().zip(&lw).map(|(r, z)| (r * z).abs())));
        assert_close_scaled(
            &[kept.0[cs::RZ_PREV], kept.0[cs::RZ_NEW]],
            &[prev, next],
            scale,
            n,
            &format!("flexible low sums n={n}"),
        );
        // The direction against an f64 loop from the step's own β.
        let beta = kept.0[cs::BETA].as_f64();
        let want: Vec<f64> = lw
            .iter()
            .zip(widen(&ps))
            .map(|(z, p)| z + beta * p)
            .collect();
        assert_close(&kept.1, &want, 4, &format!("flexible low p n={n}"));
    }
}

/// `MixedPrecision`'s flexible direction (both `z` kept in f32, the old one its own last
/// output) against the trait's default path around the same f32 preconditioner (`z`
/// converted and stored in `T`, the sums by `dot`), four steps of random residuals from
/// `z = 0`: the sums, β and the direction agree to rounding every step, so the turn of its
/// two `z` follows the steps. A `p` of the wrong length is refused before any work: the
/// scalars are left as they were.
fn mixed_precision_direction_matches_the_default<B: Backend, T: Scalar>(b: &B) {
    use galerkin::solver::{Jacobi, MixedPrecision, Preconditioner};
    use galerkin::vector::cg_scalars as cs;
    /// Only `precondition` forwarded: the trait's default flexible steps.
    struct Plain<P>(P);
    impl<B: Backend, S: Scalar, P: Preconditioner<B, S>> Preconditioner<B, S> for Plain<P> {
        fn size(&self) -> usize {
            self.0.size()
        }
        fn precondition(&self, r: &Vector<B, S>, z: &mut Vector<B, S>) -> galerkin::Result<()> {
            self.0.precondition(r, z)
        }
    }
    for n in [1usize, 31, 1000, (1 << 16) + 3] {
        let diag = random_range::<f64>(n, 0.5, 2.0, 50);
        let jacobi = || Jacobi::<B, f32>::from_diagonal(b, &diag).unwrap();
        let kept = MixedPrecision::<B, f32, _>::new(jacobi());
        let plain = Plain(MixedPrecision::<B, f32, _>::new(jacobi()));
        let mut start = poison::<T>(cs::FLEXIBLE_LEN);
        start[cs::RZ] = T::from_f64(0.8125);
        let ps = random_vec::<T>(n, 51);
        let (mut s1, mut p1, mut z1) = (upload(b, &start), upload(b, &ps), poisoned::<B, T>(b, n));
        let (mut s2, mut p2) = (upload(b, &start), upload(b, &ps));
        let mut z2 = Vector::<B, T>::zeros(b, n).unwrap();
        for step in 0..4u64 {
            let r = upload(b, &random_vec::<T>(n, 52 + step));
            kept.precondition_flexible_direction_device(&r, &mut z1, &mut s1, &mut p1)
                .unwrap();
            plain
                .precondition_flexible_direction_device(&r, &mut z2, &mut s2, &mut p2)
                .unwrap();
            let (a, want) = (s1.to_vec().unwrap(), widen(&s2.to_vec().unwrap()));
            let scale = want[cs::RZ_PREV].abs().max(want[cs::RZ_NEW].abs());
            for slot in [cs::RZ_PREV, cs::RZ_NEW, cs::RZ, cs::RR] {
                assert_close_scaled(
                    &a[slot..=slot],
                    &want[slot..=slot],
                    scale,
                    n,
                    &format!("mixed direction slot {slot} step {step} n={n}"),
                );
            }
            // β = (RZ_NEW − RZ_PREV) / RZ: its error is the sums' over the denominator.
            let beta_scale = scale / want[cs::RZ].abs().min(scale).max(f64::MIN_POSITIVE);
            assert_close_scaled(
                &a[cs::BETA..=cs::BETA],
                &want[cs::BETA..=cs::BETA],
                beta_scale.max(want[cs::BETA].abs()),
                n,
                &format!("mixed direction beta step {step} n={n}"),
            );
            let want_p = widen(&p2.to_vec().unwrap());
            let p_scale = want_p.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert_close_scaled(
                &p1.to_vec().unwrap(),
                &want_p,
                p_scale,
                n,
                &format!("mixed direction p step {step} n={n}"),
            );
        }
        // A wrong length: refused first, the scalars untouched.
        let before = s1.to_vec().unwrap();
        let r = upload(b, &random_vec::<T>(n, 60));
        let mut short = poisoned::<B, T>(b, n + 1);
        let err = kept
            .precondition_flexible_direction_device(&r, &mut z1, &mut s1, &mut short)
            .unwrap_err();
        assert!(
            matches!(err, galerkin::Error::DimensionMismatch { .. }),
            "{err}"
        );
        let after = s1.to_vec().unwrap();
        let bits = |v: &[T]| v.iter().map(|x| x.as_f64().to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&after),
            bits(&before),
            "scalars changed by a refused call"
        );
    }
}

/// The Chronopoulos–Gear step in its three forms (no preconditioner, Jacobi, another `u`)
/// against an f64 loop; the device scalars poisoned first, the untouched slots checked.
fn fused_cgcg_update<B: Backend, T: Scalar>(b: &B) {
    let (alpha, beta) = (0.3125, 0.71875);
    for n in LENGTHS {
        for mode in ["identity", "jacobi", "other"] {
            let v = |seed: u64| random_vec::<T>(n, seed);
            let (ps, ss, xs, rs, ws, us) = (v(30), v(31), v(32), v(33), v(34), v(35));
            let ds = random_range::<T>(n, 0.5, 2.0, 36);
            let (mut p, mut s) = (upload(b, &ps), upload(b, &ss));
            let (mut x, mut r, w) = (upload(b, &xs), upload(b, &rs), upload(b, &ws));
            let (mut u, d) = (upload(b, &us), upload(b, &ds));
            let mut scalars = poisoned::<B, T>(b, 4);
            let m = match mode {
                "identity" => CgCgU::Identity,
                "jacobi" => CgCgU::Jacobi { d: &d, u: &mut u },
                _ => CgCgU::Other(&mut u),
            };
            let (a, be) = (T::from_f64(alpha), T::from_f64(beta));
            cgcg_update(
                a,
                be,
                m,
                &w,
                &mut p,
                &mut s,
                &mut x,
                &mut r,
                &mut scalars,
                [3, 1],
            )
            .unwrap();
            let f = |v: &[T], i: usize| v[i].as_f64();
            let src = if mode == "identity" { &rs } else { &us };
            let p_ref: Vec<f64> = (0..n).map(|i| f(src, i) + beta * f(&ps, i)).collect();
            let s_ref: Vec<f64> = (0..n).map(|i| f(&ws, i) + beta * f(&ss, i)).collect();
            let x_ref: Vec<f64> = (0..n).map(|i| f(&xs, i) + alpha * p_ref[i]).collect();
            let r_ref: Vec<f64> = (0..n).map(|i| f(&rs, i) - alpha * s_ref[i]).collect();
            let case = |what: &str| format!("cgcg_update {mode} {what} n={n}");
            assert_close(&p.to_vec().unwrap(), &p_ref, 2, &case("p"));
            assert_close(&s.to_vec().unwrap(), &s_ref, 2, &case("s"));
            assert_close(&x.to_vec().unwrap(), &x_ref, 4, &case("x"));
            let r_new = widen(&r.to_vec().unwrap());
            // The 2-norm of the terms (r and α s may cancel).
            let scale =
                exact_sum((0..n).map(|i| f(&rs, i).powi(2) + (alpha * s_ref[i]).powi(2))).sqrt();
            assert_close_scaled(&r.to_vec().unwrap(), &r_ref, scale, 4, &case("r"));
            let u_new = widen(&u.to_vec().unwrap());
            let u_ref: Vec<f64> = match mode {
                "jacobi" => (0..n).map(|i| f(&ds, i) * r_new[i]).collect(),
                _ => widen(&us),
            };
            assert_close(&u.to_vec().unwrap(), &u_ref, 1, &case("u"));
            // The sums of the vectors the kernel stored, accumulated exactly.
            let sc = scalars.to_vec().unwrap();
            let rr = exact_sum(r_new.iter().map(|v| v * v));
            let ru = match mode {
                "jacobi" => exact_sum(r_new.iter().zip(&u_new).map(|(r, u)| r * u)),
                _ => rr,
            };
            assert_close(&[sc[3], sc[1]], &[rr, ru], n.max(1), &case("sums"));
            assert!(
                sc[0].as_f64().is_nan() && sc[2].as_f64().is_nan(),
                "{}: the other slots were written",
                case("scalars")
            );
        }
    }
}

fn fused_pointwise_mul_dot<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let (ds, rs) = (random_range::<T>(n, 0.5, 2.0, 20), random_vec::<T>(n, 21));
        let mut z = poisoned::<B, T>(b, n);
        let rz = pointwise_mul_dot(&upload(b, &ds), &upload(b, &rs), &mut z).unwrap();
        let z_ref: Vec<f64> = ds
            .iter()
            .zip(&rs)
            .map(|(d, r)| d.as_f64() * r.as_f64())
            .collect();
        assert_close(
            &z.to_vec().unwrap(),
            &z_ref,
            1,
            &format!("pointwise_mul_dot z n={n}"),
        );
        let rz_ref = exact_sum(rs.iter().zip(&z_ref).map(|(r, z)| r.as_f64() * z));
        assert_close(&[rz], &[rz_ref], n, &format!("pointwise_mul_dot r·z n={n}"));
    }
}

/// dot and nrm2 of 10^8 elements within 1e-5 relative of the f64 value (skipped, with a
/// message, where one buffer cannot hold 10^8 values).
/// `download_later` returns the values of its call, though the work queued after it (and run
/// while the caller waits) overwrites the buffer; a read dropped unread leaves the next reads
/// intact.
fn download_later<B: Backend, T: Scalar>(b: &B) {
    for n in LENGTHS {
        let xs = random_vec::<T>(n, 61);
        let mut x = upload(b, &xs);
        let read = b.download_later(x.buffer().unwrap()).unwrap();
        x.scale(T::from_f64(2.0)).unwrap();
        x.axpy(T::ONE, &upload(b, &xs)).unwrap();
        assert_eq!(widen(&read.wait().unwrap()), widen(&xs), "n={n}: read");
        let thrice: Vec<f64> = xs.iter().map(|v| 3.0 * v.as_f64()).collect();
        assert_close(&x.to_vec().unwrap(), &thrice, 1, &format!("n={n}: after"));
        // Reads dropped unread (they wait for their copy), then reads of the same size.
        for round in 0..3 {
            drop(b.download_later(x.buffer().unwrap()).unwrap());
            let again = b
                .download_later(x.buffer().unwrap())
                .unwrap()
                .wait()
                .unwrap();
            assert_close(&again, &thrice, 1, &format!("n={n}: round {round}"));
        }
    }
}

/// Several threads reading results from one device at once (cubecl's device thread waits
/// for each read): every thread gets its own values, and none waits forever.
fn reads_from_several_threads<B: Backend, T: Scalar>(b: &B) {
    const N: usize = 10_000;
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                for k in 0..10u64 {
                    let seed = 100 * t + k;
                    let (xs, ys) = (random_vec::<T>(N, seed), random_vec::<T>(N, seed + 50));
                    let (x, mut y) = (upload(b, &xs), upload(b, &ys));
                    let what = format!("thread {t}, round {k}");
                    check_dot(x.dot(&y).unwrap(), &xs, &ys, &what);
                    y.copy_from(&x).unwrap();
                    b.synchronize().unwrap();
                    assert_eq!(widen(&y.to_vec().unwrap()), widen(&xs), "{what}: copy");
                }
            });
        }
    });
}

/// Downloads return exactly what was uploaded, for every length (odd byte counts included:
/// wgpu's own read copies whole 4-byte words and trims the padding) and for `T`,
/// `u32` and `f16`; straight after the upload, after a kernel wrote the buffer, and through
/// `download_later`.
fn downloads_every_length<B: Backend, T: Scalar>(b: &B) {
    fn round_trip<B: Backend, U: Storable + PartialEq + std::fmt::Debug>(
        b: &B,
        data: &[U],
        what: &str,
    ) {
        let buffer = b.upload(data).unwrap();
        assert_eq!(b.download(&buffer).unwrap(), data, "{what}: download");
        assert_eq!(
            b.download_later(&buffer).unwrap().wait().unwrap(),
            data,
            "{what}: download_later"
        );
    }
    // Up to and past 1 MiB: CUDA copies uploads from 1 MiB on by its own copy (padded
    // tails zeroed on the device), smaller ones through cubecl.
    for n in [
        0,
        1,
        2,
        3,
        5,
        31,
        1000,
        (1 << 16) + 3,
        (1 << 18) - 1,
        1 << 18,
        (1 << 18) + 1,
        (1 << 20) + 3,
    ] {
        let xs = random_vec::<T>(n, 71 + n as u64);
        round_trip(b, &xs, &format!("{} n={n}", T::DTYPE));
        let words: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        round_trip(b, &words, &format!("u32 n={n}"));
        let halves: Vec<half::f16> = xs.iter().map(|v| half::f16::from_f64(v.as_f64())).collect();
        round_trip(b, &halves, &format!("f16 n={n}"));
        let mut y = poisoned::<B, T>(b, n);
        y.copy_from(&upload(b, &xs)).unwrap();
        assert_eq!(
            widen(&y.to_vec().unwrap()),
            widen(&xs),
            "n={n}: after a kernel"
        );
    }
}

fn reduction_accuracy_1e8<B: Backend, T: Scalar>(b: &B) {
    let n = 100_000_000usize;
    let bytes = (n * T::DTYPE.size()) as u64;
    if bytes > b.info().max_buffer_bytes {
        crate::harness::announce(&format!(
            "[galerkin tests] skipping reduction_accuracy_1e8 on {}: {bytes} bytes exceed its largest buffer ({} bytes)",
            b.info(),
            b.info().max_buffer_bytes
        ));
        return;
    }
    let xs = random_range::<T>(n, 0.0, 1.0, 22);
    let ys = random_range::<T>(n, 0.0, 1.0, 23);
    let (x, y) = (upload(b, &xs), upload(b, &ys));
    let dot = x.dot(&y).unwrap().as_f64();
    let dot_ref = exact_sum(xs.iter().zip(&ys).map(|(a, b)| a.as_f64() * b.as_f64()));
    let nrm = x.nrm2().unwrap().as_f64();
    let nrm_ref = exact_sum(xs.iter().map(|a| a.as_f64() * a.as_f64())).sqrt();
    let (e_dot, e_nrm) = (
        (dot - dot_ref).abs() / dot_ref,
        (nrm - nrm_ref).abs() / nrm_ref,
    );
    crate::harness::announce(&format!(
        "[galerkin tests] 1e8 {} on {}: dot rel. error {e_dot:.1e}, nrm2 rel. error {e_nrm:.1e}",
        T::DTYPE,
        b.info()
    ));
    assert!(
        e_dot < 1e-5 && e_nrm < 1e-5,
        "dot {e_dot:e}, nrm2 {e_nrm:e}"
    );
}

backend_tests!(
    fill,
    copy,
    scale,
    axpy,
    axpby,
    pointwise_mul,
    pointwise_div,
    dot,
    nrm2,
    amax,
    convert,
    fused_cg_update,
    fused_cgcg_update,
    fused_flexible_convert,
    fused_flexible_low,
    mixed_precision_direction_matches_the_default,
    fused_pointwise_mul_dot,
    reads_from_several_threads,
    download_later,
    downloads_every_length,
);
backend_tests!(tier2: reduction_accuracy_1e8);

/// The CPU reductions do not depend on the number of threads.
#[test]
fn cpu_reductions_are_independent_of_the_thread_count() {
    let n = (1 << 20) + 3;
    let (xs, ys) = (random_vec::<f32>(n, 31), random_vec::<f32>(n, 32));
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let cpu = galerkin::Cpu::new();
            let (x, y) = (upload(&cpu, &xs), upload(&cpu, &ys));
            (x.dot(&y).unwrap().to_bits(), x.nrm2().unwrap().to_bits())
        })
    };
    let one = run(1);
    for threads in [2, 3, 7] {
        assert_eq!(run(threads), one, "{threads} threads");
    }
}

/// wgpu on an NVIDIA GPU holds a CUDA context open for the multiprocessor clock wherever the
/// driver library is there (the CUDA backend connecting shows it is), and says so in its
/// device name; on lavapipe and other vendors it never does.
#[cfg(feature = "wgpu")]
#[test]
fn wgpu_holds_the_clock_on_nvidia_only() {
    let Some(w) = crate::harness::wgpu() else {
        return;
    };
    let info = w.info();
    assert_eq!(
        info.clock_held,
        info.device.contains(", clock held"),
        "{}",
        info.device
    );
    if !info.device.starts_with("NVIDIA") {
        assert!(!info.clock_held, "{}", info.device);
    } else {
        #[cfg(feature = "cuda")]
        if crate::harness::cuda().is_some() && std::env::var("GALERKIN_WGPU_CLOCK_HOLD").is_err() {
            assert!(info.clock_held, "{}", info.device);
        }
    }
}

/// Large uploads to a CUDA device (several hundred MB: the sizes where cubecl's transfer
/// paths change) arrive whole and in place.
fn large_uploads_arrive_whole<B: Backend, T: Scalar>(b: &B) {
    if !matches!(b.kind(), galerkin::BackendKind::Cuda) {
        return; // the other backends' uploads are covered at every size above
    }
    let chunk = (64 << 20) / std::mem::size_of::<T>();
    for n in [3 * chunk + 7, 4 * chunk] {
        let data: Vec<T> = (0..n)
            .map(|i| T::from_f64((i % 1_000_003) as f64 - 5e5))
            .collect();
        let v = Vector::from_slice(b, &data).unwrap();
        let back = v.to_vec().unwrap();
        assert_eq!(back.len(), n);
        if let Some(i) = (0..n).find(|&i| back[i] != data[i]) {
            panic!(
                "n = {n}: value {i} arrived as {} (sent {})",
                back[i], data[i]
            );
        }
    }
}

backend_tests!(large_uploads_arrive_whole);
