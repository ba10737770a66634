//! [`Grid`]: the shape of one level (dimension, degree, cells per direction), its nodes,
//! cells and vertex patches, and their colours.

use crate::quadrature::gauss_lobatto;

/// The shape of one level: dimension (2 or 3), degree `k`, cells per direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grid {
    /// 2 or 3.
    pub dim: usize,
    /// The polynomial degree `k`.
    pub degree: usize,
    /// Cells per direction (`2^level`).
    pub cells: usize,
}

impl Grid {
    /// Nodes per direction, `k · cells + 1`.
    pub fn n1(&self) -> usize {
        self.degree * self.cells + 1
    }

    /// Nodes in all, `N1^d`.
    pub fn len(&self) -> usize {
        self.n1().pow(self.dim as u32)
    }

    /// Whether the grid has no node (never, for a valid grid).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The extents `[nx, ny, nz]` (`nz = 1` in 2D).
    pub fn extents(&self) -> [usize; 3] {
        let n = self.n1();
        [n, n, if self.dim == 3 { n } else { 1 }]
    }

    /// The bit of `colour` in direction `d` (0 for the directions past `dim`).
    pub fn colour_bit(&self, colour: usize, d: usize) -> usize {
        if d < self.dim {
            (colour >> d) & 1
        } else {
            0
        }
    }

    /// Cells per direction of colour `colour` (every second cell from the colour's bit),
    /// or all cells with `None`; 1 past `dim`.
    pub fn cell_blocks(&self, colour: Option<usize>) -> [usize; 3] {
        std::array::from_fn(|d| match (d < self.dim, colour) {
            (false, _) => 1,
            (true, None) => self.cells,
            (true, Some(c)) => (self.cells + 1 - self.colour_bit(c, d)) / 2,
        })
    }

    /// Cells (of colour `colour`, or all with `None`).
    pub fn cell_count(&self, colour: Option<usize>) -> usize {
        self.cell_blocks(colour).iter().product()
    }

    /// Vertex patches per direction of colour `colour` (interior vertices `v` with
    /// `(v − 1) mod 2` the colour's bit in every direction); 1 past `dim`.
    pub fn patch_blocks(&self, colour: usize) -> [usize; 3] {
        std::array::from_fn(|d| {
            if d < self.dim {
                (self.cells - self.colour_bit(colour, d)) / 2
            } else {
                1
            }
        })
    }

    /// Vertex patches of colour `colour`.
    pub fn patch_count(&self, colour: usize) -> usize {
        self.patch_blocks(colour).iter().product()
    }

    /// Whether node `g` lies on the boundary of the domain.
    pub fn on_boundary(&self, g: usize) -> bool {
        let n1 = self.n1();
        let c = [g % n1, (g / n1) % n1, g / (n1 * n1)];
        (0..self.dim).any(|d| c[d] == 0 || c[d] == n1 - 1)
    }

    /// The coordinates in `[0, 1]` of the `N1` nodes along one direction (Gauss–Lobatto
    /// nodes in every cell).
    pub fn node_coordinates(&self) -> Vec<f64> {
        let (k, cells) = (self.degree, self.cells);
        let nodes = gauss_lobatto(k);
        (0..self.n1())
            .map(|i| {
                let c = (i / k).min(cells - 1);
                (c as f64 + nodes[i - c * k]) / cells as f64
            })
            .collect()
    }

    /// Colours of cells and of patches: `2^d`.
    pub fn colours(&self) -> usize {
        1 << self.dim
    }
}
