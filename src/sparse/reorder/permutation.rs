//! Permutations of `0..n`, stored both ways.

use rayon::prelude::*;

use crate::error::{check_len, Error, Result};

/// Below this length the gathers and scatters run on one thread.
const PARALLEL_LEN: usize = 1 << 16;

/// A permutation of `0..n`, stored as `new_to_old` and its inverse `old_to_new`.
///
/// Position `i` of the new order holds old index `new_to_old[i]`, and
/// `old_to_new[new_to_old[i]] == i`. Applied to a vector it gathers,
/// `y[i] = x[new_to_old[i]]` ([`apply_to_slice`](Self::apply_to_slice)); applied to a
/// matrix it is `P A Pᵀ` with `P[i, new_to_old[i]] = 1`
/// ([`permute_symmetric`](super::permute_symmetric)).
///
/// ```text
///  old order  x = [a b c d]      new_to_old = [2 0 3 1]   y = P x = [c a d b]
///                                old_to_new = [1 3 0 2]   x = Pᵀ y
/// ```
///
/// Invariant (checked by [`Permutation::new`]): `new_to_old` is a bijection of `0..n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    new_to_old: Vec<u32>,
    old_to_new: Vec<u32>,
}

impl Permutation {
    /// The permutation whose new position `i` holds old index `new_to_old[i]`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first entry that is out of range `0..n` or
    /// repeats an earlier one.
    pub fn new(new_to_old: Vec<u32>) -> Result<Self> {
        let old_to_new = invert_checked(&new_to_old, "Permutation::new", "new_to_old")?;
        Ok(Permutation {
            new_to_old,
            old_to_new,
        })
    }

    /// The permutation that sends old index `i` to new position `old_to_new[i]`.
    ///
    /// # Errors
    /// As [`new`](Self::new), for `old_to_new`.
    pub fn from_old_to_new(old_to_new: Vec<u32>) -> Result<Self> {
        let new_to_old = invert_checked(&old_to_new, "Permutation::from_old_to_new", "old_to_new")?;
        Ok(Permutation {
            new_to_old,
            old_to_new,
        })
    }

    /// Builds from a `new_to_old` array the caller knows to be a bijection.
    ///
    /// # Panics
    /// In debug builds, if it is not one (a broken internal invariant).
    pub(crate) fn from_new_to_old_trusted(new_to_old: Vec<u32>) -> Self {
        debug_assert!(invert_checked(&new_to_old, "internal", "new_to_old").is_ok());
        let mut old_to_new = vec![0u32; new_to_old.len()];
        for (i, &p) in new_to_old.iter().enumerate() {
            old_to_new[p as usize] = i as u32;
        }
        Permutation {
            new_to_old,
            old_to_new,
        }
    }

    /// The identity permutation of `0..n`.
    ///
    /// # Panics
    /// If `n > u32::MAX` (indices are `u32`, as are the dimensions of every matrix).
    pub fn identity(n: usize) -> Self {
        assert!(
            u32::try_from(n).is_ok(),
            "a permutation of {n} indices does not fit u32"
        );
        let id: Vec<u32> = (0..n).map(|i| i as u32).collect();
        Permutation {
            new_to_old: id.clone(),
            old_to_new: id,
        }
    }

    /// `n`, the number of permuted indices.
    pub fn len(&self) -> usize {
        self.new_to_old.len()
    }

    /// Whether `n = 0`.
    pub fn is_empty(&self) -> bool {
        self.new_to_old.is_empty()
    }

    /// Whether every index stays in place.
    pub fn is_identity(&self) -> bool {
        self.new_to_old
            .iter()
            .enumerate()
            .all(|(i, &p)| p as usize == i)
    }

    /// New position `i` holds old index `new_to_old()[i]`.
    pub fn new_to_old(&self) -> &[u32] {
        &self.new_to_old
    }

    /// Old index `i` moves to new position `old_to_new()[i]`.
    pub fn old_to_new(&self) -> &[u32] {
        &self.old_to_new
    }

    /// The inverse permutation (`Pᵀ`): the two arrays swap roles.
    pub fn inverse(&self) -> Permutation {
        Permutation {
            new_to_old: self.old_to_new.clone(),
            old_to_new: self.new_to_old.clone(),
        }
    }

    /// The permutation that applies `self` first and `then` second (`P_then P_self`):
    /// `r.new_to_old[i] = self.new_to_old[then.new_to_old[i]]`, so that
    /// `r.apply_to_slice(x) == then.apply_to_slice(self.apply_to_slice(x))`.
    ///
    /// This is how a Cuthill–McKee order is refined by a row-length sort computed on the
    /// already reordered matrix.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if the lengths differ.
    pub fn compose(&self, then: &Permutation) -> Result<Permutation> {
        check_len("Permutation::compose", "then", self.len(), then.len())?;
        let new_to_old: Vec<u32> = then
            .new_to_old
            .iter()
            .map(|&j| self.new_to_old[j as usize])
            .collect();
        Ok(Permutation::from_new_to_old_trusted(new_to_old))
    }

    /// Gathers `x` into the new order: `y[i] = x[new_to_old[i]]` (`y = P x`).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `x` does not have `n` entries.
    pub fn apply_to_slice<T: Copy + Send + Sync>(&self, x: &[T]) -> Result<Vec<T>> {
        check_len("Permutation::apply_to_slice", "x", self.len(), x.len())?;
        Ok(gather(x, &self.new_to_old))
    }

    /// Scatters `y` back into the old order: `x[new_to_old[i]] = y[i]` (`x = Pᵀ y`), the
    /// inverse of [`apply_to_slice`](Self::apply_to_slice).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] if `y` does not have `n` entries.
    pub fn unapply<T: Copy + Send + Sync>(&self, y: &[T]) -> Result<Vec<T>> {
        check_len("Permutation::unapply", "y", self.len(), y.len())?;
        // A scatter through new_to_old is a gather through old_to_new: no write conflicts.
        Ok(gather(y, &self.old_to_new))
    }
}

/// `out[i] = x[index[i]]`, in parallel for long inputs.
fn gather<T: Copy + Send + Sync>(x: &[T], index: &[u32]) -> Vec<T> {
    if index.len() < PARALLEL_LEN {
        index.iter().map(|&p| x[p as usize]).collect()
    } else {
        index.par_iter().map(|&p| x[p as usize]).collect()
    }
}

/// The inverse of `p`, or an error naming the first entry that breaks bijectivity.
fn invert_checked(p: &[u32], op: &'static str, name: &'static str) -> Result<Vec<u32>> {
    let n = p.len();
    if u32::try_from(n).is_err() {
        return Err(Error::InvalidArgument {
            op,
            name,
            reason: format!("{n} entries: indices are u32, at most u32::MAX entries"),
        });
    }
    // No position equals u32::MAX, since n <= u32::MAX.
    const UNSET: u32 = u32::MAX;
    let mut inverse = vec![UNSET; n];
    for (i, &v) in p.iter().enumerate() {
        let slot = inverse
            .get_mut(v as usize)
            .ok_or_else(|| Error::InvalidArgument {
                op,
                name,
                reason: format!("entry {i} = {v} is out of range 0..{n}"),
            })?;
        if *slot != UNSET {
            return Err(Error::InvalidArgument {
                op,
                name,
                reason: format!("entry {i} = {v} repeats entry {}", *slot),
            });
        }
        *slot = i as u32;
    }
    Ok(inverse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_checks_bijection_and_names_the_entry() {
        let p = Permutation::new(vec![2, 0, 3, 1]).unwrap();
        assert_eq!(p.old_to_new(), &[1, 3, 0, 2]);
        let e = Permutation::new(vec![0, 4, 1]).unwrap_err().to_string();
        assert!(e.contains("entry 1 = 4 is out of range 0..3"), "{e}");
        let e = Permutation::new(vec![1, 0, 1]).unwrap_err().to_string();
        assert!(e.contains("entry 2 = 1 repeats entry 0"), "{e}");
        let e = Permutation::from_old_to_new(vec![0, 0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("old_to_new") && e.contains("repeats"), "{e}");
        assert!(Permutation::new(vec![]).unwrap().is_empty());
    }

    #[test]
    fn apply_unapply_inverse_compose() {
        let p = Permutation::new(vec![2, 0, 3, 1]).unwrap();
        let x = ['a', 'b', 'c', 'd'];
        let y = p.apply_to_slice(&x).unwrap();
        assert_eq!(y, ['c', 'a', 'd', 'b']);
        assert_eq!(p.unapply(&y).unwrap(), x);
        assert_eq!(p.inverse().apply_to_slice(&y).unwrap(), x);
        let q = Permutation::new(vec![3, 2, 1, 0]).unwrap();
        let pq = p.compose(&q).unwrap();
        assert_eq!(
            pq.apply_to_slice(&x).unwrap(),
            q.apply_to_slice(&p.apply_to_slice(&x).unwrap()).unwrap()
        );
        assert!(p.compose(&p.inverse()).unwrap().is_identity());
        assert!(p.compose(&Permutation::identity(3)).is_err());
        assert!(p.apply_to_slice(&[1, 2]).is_err());
        assert!(p.unapply(&[1, 2, 3, 4, 5]).is_err());
        assert!(Permutation::identity(5).is_identity());
        assert!(!p.is_identity());
    }

    #[test]
    fn parallel_path_matches_serial() {
        let n = PARALLEL_LEN + 17;
        let rev: Vec<u32> = (0..n as u32).rev().collect();
        let p = Permutation::new(rev).unwrap();
        let x: Vec<u64> = (0..n as u64).collect();
        let y = p.apply_to_slice(&x).unwrap();
        assert!(y.iter().enumerate().all(|(i, &v)| v as usize == n - 1 - i));
        assert_eq!(p.unapply(&y).unwrap(), x);
    }
}
