//! A structured grid of hexahedra split into tetrahedra, with interior points perturbed so
//! that the mesh looks unstructured to a solver (irregular coefficients, no constant
//! stencil) while its connectivity stays that of the grid.
//!
//! Each hexahedron is split into six tetrahedra along its diagonal from the lowest corner
//! to the highest (the Kuhn / Freudenthal split): the six monotone paths from corner
//! `(0,0,0)` to `(1,1,1)`, one per ordering of the axes.
//!
//! ```text
//!        6-------7        corner c sits at (c & 1, c >> 1 & 1, c >> 2 & 1)
//!       /|      /|        path x, y, z: tet (0, 1, 3, 7)
//!      4-------5 |        path y, z, x: tet (0, 2, 6, 7)      ... six in all
//!      | 2-----|-3
//!      |/      |/         every tet contains the diagonal 0-7
//!      0-------1
//! ```
//!
//! Every face of a hexahedron is split along its diagonal from its lowest to its highest
//! corner, the same from both sides, so neighbouring hexahedra conform. Points are numbered
//! x fastest, then y, then z; tetrahedra hexahedron by hexahedron in the same order.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::mesh::{CellBlock, CellKind, Mesh};
use crate::random::Rng;

/// The six Kuhn tetrahedra of a hexahedron, as corner codes, each ordered to be positively
/// oriented (odd axis orderings have their last two vertices swapped).
const KUHN: [[usize; 4]; 6] = [
    [0, 1, 3, 7], // x, y, z (even)
    [0, 2, 6, 7], // y, z, x (even)
    [0, 4, 5, 7], // z, x, y (even)
    [0, 1, 7, 5], // x, z, y (odd)
    [0, 2, 7, 3], // y, x, z (odd)
    [0, 4, 7, 6], // z, y, x (odd)
];

/// A box of `cells[0] x cells[1] x cells[2]` hexahedra, each split into six positively
/// oriented tetrahedra; interior points moved by up to `perturbation` times the grid
/// spacing along each axis (uniformly at random, from `seed`). Boundary points stay on the
/// grid, so the tetrahedra fill the box exactly.
///
/// ```
/// use galerkin::mesh::structured::StructuredTets;
///
/// let mesh = StructuredTets::unit_cube(4, 0.1, 1).build()?;
/// assert_eq!(mesh.points.len(), 5 * 5 * 5);
/// assert_eq!(mesh.tets().len(), 6 * 4 * 4 * 4);
/// # Ok::<(), galerkin::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct StructuredTets {
    /// Hexahedra along x, y, z (each ≥ 1).
    pub cells: [usize; 3],
    /// The lowest corner of the box.
    pub lower: [f64; 3],
    /// The highest corner of the box.
    pub upper: [f64; 3],
    /// Largest move of an interior point along each axis, as a fraction of the spacing
    /// along that axis; in `[0, 1/6)`, which keeps every tetrahedron positively oriented
    /// (each edge vector then changes by less than 1/3 of a spacing per component, so the
    /// scaled Jacobian `I + E` has `‖E‖∞ < 1`).
    pub perturbation: f64,
    /// Seed of the perturbation.
    pub seed: u64,
}

impl Default for StructuredTets {
    fn default() -> Self {
        StructuredTets::unit_cube(1, 0.0, 0)
    }
}

impl StructuredTets {
    /// `n x n x n` hexahedra on the unit cube.
    pub fn unit_cube(n: usize, perturbation: f64, seed: u64) -> Self {
        StructuredTets {
            cells: [n; 3],
            lower: [0.0; 3],
            upper: [1.0; 3],
            perturbation,
            seed,
        }
    }

    /// Number of points: `(nx + 1)(ny + 1)(nz + 1)`.
    pub fn num_points(&self) -> usize {
        self.cells.iter().map(|&n| n + 1).product()
    }

    /// Number of tetrahedra: `6 nx ny nz`.
    pub fn num_tets(&self) -> usize {
        6 * self.cells.iter().product::<usize>()
    }

    /// Generates the mesh: one [`Tet4`](CellKind::Tet4) block, tags 0. Cost O(points +
    /// tets).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a cell count is 0, the box is empty or not finite, a
    /// cell width (`(upper - lower) / cells` along an axis) is not finite and positive or
    /// is below the resolution of f64 at the box (about `1.4e-14` times its largest
    /// coordinate), the perturbation is outside `[0, 1/6)`, or the mesh would need indices
    /// of 32 bits or more.
    pub fn build(&self) -> Result<Mesh> {
        const OP: &str = "StructuredTets::build";
        let [nx, ny, nz] = self.cells;
        if nx == 0 || ny == 0 || nz == 0 {
            return Err(Error::invalid(
                OP,
                "cells",
                format!("{:?}: every count must be at least 1", self.cells),
            ));
        }
        for d in 0..3 {
            if !(self.lower[d].is_finite()
                && self.upper[d].is_finite()
                && self.lower[d] < self.upper[d])
            {
                return Err(Error::invalid(
                    OP,
                    "lower, upper",
                    format!(
                        "the box {:?} to {:?} is empty or not finite",
                        self.lower, self.upper
                    ),
                ));
            }
        }
        if !(0.0..1.0 / 6.0).contains(&self.perturbation) {
            return Err(Error::invalid(
                OP,
                "perturbation",
                format!("{} is outside [0, 1/6)", self.perturbation),
            ));
        }
        let too_large = self
            .cells
            .iter()
            .try_fold(6u64, |acc, &n| acc.checked_mul(n as u64))
            .is_none_or(|t| t * 4 >= u32::MAX as u64);
        if too_large {
            return Err(Error::invalid(
                OP,
                "cells",
                format!("{:?} needs more than 2^32 indices", self.cells),
            ));
        }
        // Points (3 f64) and tetrahedra (4 u32 and the tags).
        let cells = (nx as u64) * (ny as u64) * (nz as u64);
        crate::limits::check_host_bytes(
            format_args!("a {nx} x {ny} x {nz} mesh of 6 tetrahedra per cell"),
            (self.num_points() as u64) * 24 + cells * 6 * 24,
        )?;

        let h: [f64; 3] =
            std::array::from_fn(|d| (self.upper[d] - self.lower[d]) / self.cells[d] as f64);
        for (d, axis) in ["x", "y", "z"].into_iter().enumerate() {
            // The spacing must be a finite positive number that the coordinates resolve: a
            // box wider than f64 holds (`[-1e308, 1e308]`) gives inf and NaN points, a
            // spacing below the rounding of the coordinates gives coincident points.
            let scale = self.lower[d].abs().max(self.upper[d].abs());
            if !(h[d].is_finite() && h[d] > 0.0 && h[d] > 64.0 * f64::EPSILON * scale) {
                return Err(Error::invalid(
                    OP,
                    "lower, upper",
                    format!(
                        "along {axis}, {} cells from {} to {} are {} wide: the width must be \
                         finite, positive and above the resolution of f64 at the box",
                        self.cells[d], self.lower[d], self.upper[d], h[d]
                    ),
                ));
            }
        }
        let coordinate = |d: usize, i: usize| {
            if i == self.cells[d] {
                self.upper[d]
            } else {
                self.lower[d] + i as f64 * h[d]
            }
        };
        let mut rng = Rng::new(self.seed);
        let mut points = Vec::with_capacity(self.num_points());
        for k in 0..=nz {
            for j in 0..=ny {
                for i in 0..=nx {
                    let mut p = [coordinate(0, i), coordinate(1, j), coordinate(2, k)];
                    let interior = [(i, nx), (j, ny), (k, nz)]
                        .iter()
                        .all(|&(i, n)| i > 0 && i < n);
                    if interior && self.perturbation > 0.0 {
                        for d in 0..3 {
                            p[d] += self.perturbation * h[d] * rng.range(-1.0, 1.0);
                        }
                    }
                    points.push(p);
                }
            }
        }

        let (sx, sy) = (nx + 1, (nx + 1) * (ny + 1));
        let offset: [usize; 8] =
            std::array::from_fn(|c| (c & 1) + (c >> 1 & 1) * sx + (c >> 2 & 1) * sy);
        let mut connectivity = vec![0u32; 4 * self.num_tets()];
        // One chunk per row of hexahedra (fixed j, k).
        connectivity
            .par_chunks_mut(24 * nx)
            .enumerate()
            .for_each(|(row, chunk)| {
                let (j, k) = (row % ny, row / ny);
                for i in 0..nx {
                    let base = i + j * sx + k * sy;
                    for (t, tet) in KUHN.iter().enumerate() {
                        for (v, &corner) in tet.iter().enumerate() {
                            chunk[24 * i + 4 * t + v] = (base + offset[corner]) as u32;
                        }
                    }
                }
            });
        let ntets = self.num_tets();
        Ok(Mesh {
            points,
            blocks: vec![CellBlock {
                kind: CellKind::Tet4,
                connectivity,
                physical: vec![0; ntets],
                elementary: vec![0; ntets],
            }],
            physical_names: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{tet_neighbors, tet_volume, NO_NEIGHBOR};

    #[test]
    fn kuhn_table_is_positive_and_covers_the_cube() {
        let corner = |c: usize| [(c & 1) as f64, (c >> 1 & 1) as f64, (c >> 2 & 1) as f64];
        let total: f64 = KUHN
            .iter()
            .map(|t| {
                let v = tet_volume(&t.map(corner));
                assert_eq!(v, 1.0 / 6.0, "{t:?}");
                v
            })
            .sum();
        assert!((total - 1.0).abs() < 1e-15);
    }

    #[test]
    fn perturbed_box_is_filled_exactly_and_conforms() {
        let spec = StructuredTets {
            cells: [3, 4, 5],
            lower: [-1.0, 0.5, 2.0],
            upper: [0.5, 1.0, 4.5],
            perturbation: 0.16,
            seed: 11,
        };
        let mesh = spec.build().unwrap();
        let tets = mesh.tets();
        assert_eq!(tets.len(), spec.num_tets());
        assert_eq!(mesh.points.len(), spec.num_points());
        let mut total = 0.0;
        for t in &tets {
            let v = tet_volume(&t.map(|i| mesh.points[i as usize]));
            assert!(v > 0.0, "{t:?} has volume {v}");
            total += v;
        }
        let box_volume = 1.5 * 0.5 * 2.5;
        assert!((total - box_volume).abs() < 1e-12 * box_volume, "{total}");
        let neighbors = tet_neighbors(&tets, mesh.points.len()).unwrap();
        let boundary = neighbors
            .iter()
            .flatten()
            .filter(|&&n| n == NO_NEIGHBOR)
            .count();
        assert_eq!(boundary, 2 * 2 * (3 * 4 + 4 * 5 + 3 * 5));
        // Unperturbed points are exactly on the grid; perturbed ones moved.
        assert_eq!(mesh.points[0], [-1.0, 0.5, 2.0]);
        assert_eq!(*mesh.points.last().unwrap(), [0.5, 1.0, 4.5]);
        let interior = 1 + 4 * (1 + 5);
        assert_ne!(mesh.points[interior], [-0.5, 0.625, 2.5]);
    }

    #[test]
    fn bad_specifications_are_errors() {
        let bad = [
            StructuredTets::unit_cube(0, 0.0, 0),
            StructuredTets::unit_cube(2, 0.2, 0),
            StructuredTets::unit_cube(2, -0.1, 0),
            StructuredTets::unit_cube(2, f64::NAN, 0),
            StructuredTets {
                upper: [1.0, 0.0, 1.0],
                ..StructuredTets::unit_cube(2, 0.0, 0)
            },
            StructuredTets::unit_cube(1 << 11, 0.0, 0),
        ];
        for spec in bad {
            assert!(spec.build().is_err(), "{spec:?}");
        }
    }

    #[test]
    fn boxes_beyond_f64_are_errors_not_nan_points() {
        // (upper - lower) overflows to inf: the points would be NaN.
        let huge = StructuredTets {
            lower: [-1e308; 3],
            upper: [1e308; 3],
            ..StructuredTets::unit_cube(2, 0.0, 0)
        };
        let e = huge.build().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("along x"), "{e}");
        // Only z is too thin for its coordinates: the points would coincide.
        let thin = StructuredTets {
            lower: [0.0, 0.0, 1e10],
            upper: [1.0, 1.0, 1e10 + 1e-4],
            ..StructuredTets::unit_cube(2, 0.0, 0)
        };
        let e = thin.build().unwrap_err();
        assert!(e.to_string().contains("along z"), "{e}");
        // A wide box that f64 holds is fine.
        let wide = StructuredTets {
            lower: [-1e300; 3],
            upper: [1e300; 3],
            ..StructuredTets::unit_cube(2, 0.0, 0)
        };
        let mesh = wide.build().unwrap();
        assert!(mesh.points.iter().flatten().all(|c| c.is_finite()));
    }
}
