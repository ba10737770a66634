//! What a user takes away from a solve: the L2 errors against an exact solution, and the
//! fields sampled for ParaView.

use crate::batched::Batch;
use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::hdg::host;
use crate::hdg::ops::HdgOps;
use crate::hdg::pipeline::Hdg;
use crate::hdg::stages::{Exact, Fields, L2Errors};
use crate::io::vtk::{UnstructuredGrid, VtkCell};
use crate::scalar::Scalar;

/// The values of a batch, widened to f64 on the host.
fn to_f64<B: Backend + HdgOps, V: Scalar>(b: &Batch<B, V>) -> Result<Vec<f64>> {
    Ok(b.to_vec()?.iter().map(|v| v.as_f64()).collect())
}

impl<B: Backend + HdgOps, V: Scalar, S: Scalar> Hdg<B, V, S> {
    /// The L2 errors of `fields` against `exact` (on the host, by quadrature of degree
    /// `2P + 8`).
    ///
    /// # Errors
    /// Device errors (downloading the fields).
    pub fn errors(&self, fields: &Fields<B, V>, exact: &Exact<'_>) -> Result<L2Errors> {
        let p = self.params.degree;
        let scalar = |x: f64, y: f64, out: &mut [f64]| out[0] = (exact.u)(x, y);
        let vector = |x: f64, y: f64, out: &mut [f64]| out.copy_from_slice(&(exact.grad)(x, y));
        let u = host::l2_error(&self.mesh, p, 1, &to_f64(&fields.u)?, &scalar);
        let q = host::l2_error(&self.mesh, p, 2, &to_f64(&fields.q)?, &vector);
        let u_star = match &fields.u_star {
            Some(us) => Some(host::l2_error(&self.mesh, p + 1, 1, &to_f64(us)?, &scalar)),
            None => None,
        };
        Ok(L2Errors { u, q, u_star })
    }

    /// The fields sampled for ParaView: each element cut into `refine²` sub-triangles
    /// with its own points (the fields are discontinuous), point data `u`, `q` (3
    /// components, `z = 0`) and `u_star` when post-processed, cell data `element`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `refine` outside 1..=32 or more points than 32-bit
    /// indices address; [`Error::ResourceLimit`] when the host cannot hold the sampled grid;
    /// device errors.
    pub fn sample(&self, fields: &Fields<B, V>, refine: usize) -> Result<UnstructuredGrid> {
        if !(1..=32).contains(&refine) {
            return Err(Error::InvalidArgument {
                op: "hdg sample",
                name: "refine",
                reason: format!("{refine}: must be in 1..=32"),
            });
        }
        let p = self.params.degree;
        let (reference, sub) = host::sub_triangulation(refine);
        let np = reference.len();
        let count = self.count();
        // Every element has its own `np` points and `refine²` cells: the totals must fit
        // the 32-bit point indices of the cells and the host memory, checked before
        // anything is allocated.
        let too_many = || Error::InvalidArgument {
            op: "hdg sample",
            name: "refine",
            reason: format!(
                "{refine}: {count} elements of {np} points each exceed the 2^32 - 1 points \
                 of a VTK grid; sample with a smaller refinement"
            ),
        };
        let total_points = count.checked_mul(np).ok_or_else(too_many)?;
        u32::try_from(total_points).map_err(|_| too_many())?;
        let total_cells = count.checked_mul(sub.len()).ok_or_else(too_many)?;
        // Per point: coordinates, u, q (2 sampled and 3 written components), u_star.
        crate::limits::check_host_items(
            format_args!("the {total_points} points of a VTK sampling (refine {refine})"),
            total_points as u64,
            (3 + 1 + 2 + 3 + 1) * 8,
        )?;
        // Per cell: 3 point indices and the element number.
        crate::limits::check_host_items(
            format_args!("the {total_cells} cells of a VTK sampling (refine {refine})"),
            total_cells as u64,
            3 * 4 + 8,
        )?;
        let mut points = Vec::with_capacity(total_points);
        for e in 0..count {
            let v = host::triangle(&self.mesh, e);
            points.extend(reference.iter().map(|&[r, s]| {
                let [x, y] = host::map(&v, r, s);
                [x, y, 0.0]
            }));
        }
        // `e * np + v < total_points`, which fits u32 (checked above).
        let connectivity = (0..count)
            .flat_map(|e| sub.iter().flat_map(move |t| t.map(|v| v + (e * np) as u32)))
            .collect();
        let mut grid = UnstructuredGrid::new(points, VtkCell::Triangle, connectivity)?;
        grid.add_point_data(
            "u",
            1,
            host::sample(&self.mesh, p, 1, &to_f64(&fields.u)?, &reference),
        )?;
        let q = host::sample(&self.mesh, p, 2, &to_f64(&fields.q)?, &reference);
        grid.add_point_data(
            "q",
            3,
            q.chunks_exact(2).flat_map(|c| [c[0], c[1], 0.0]).collect(),
        )?;
        if let Some(us) = &fields.u_star {
            grid.add_point_data(
                "u_star",
                1,
                host::sample(&self.mesh, p + 1, 1, &to_f64(us)?, &reference),
            )?;
        }
        let element = (0..count)
            .flat_map(|e| std::iter::repeat_n(e as f64, sub.len()))
            .collect();
        grid.add_cell_data("element", 1, element)?;
        Ok(grid)
    }
}
