//! A seedable random generator for tests, benchmarks and generated matrices: the same seed
//! gives the same numbers on every platform and version of this crate.

use crate::scalar::Element;

/// A small, fast, seedable generator (xoshiro256**, seeded through SplitMix64): the same
/// seed gives the same numbers on every platform and version of this crate.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^ (x >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// `len` values uniform in `[-1, 1)`, rounded to `T`.
pub fn random_vec<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = Rng::new(seed);
    (0..len)
        .map(|_| T::from_f64(rng.range(-1.0, 1.0)))
        .collect()
}

/// `len` values uniform in `[lo, hi)`, rounded to `T`.
pub fn random_range<T: Element>(len: usize, lo: f64, hi: f64, seed: u64) -> Vec<T> {
    let mut rng = Rng::new(seed);
    (0..len).map(|_| T::from_f64(rng.range(lo, hi))).collect()
}
