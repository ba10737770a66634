//! [`DgOps`] for the CubeCL backends: launches of the kernels in [`kernels`].

mod kernels;

use cubecl::prelude::*;

use crate::backend::core::BackendCore;
use crate::backend::cube::{scalar, Cube, CubeBuffer, CubeRuntime};
use crate::dg::ops::{DgMesh, DgOps, DgParams, DgShape};
use crate::error::Result;
use crate::scalar::Scalar;

use kernels::{
    flux_kernel, lift_kernel, stage_kernel, update_kernel, volume_kernel, StageCoefLaunch,
};

fn coef<R: Runtime, T: Scalar>(c: [T; 3], alpha: T) -> StageCoefLaunch<R> {
    StageCoefLaunch::new(scalar(c[0]), scalar(c[1]), scalar(c[2]), scalar(alpha))
}

/// Cubes of a fused stage launch with the operators in shared memory (each cube copies them
/// once; 2,048 cubes are 15 a multiprocessor on a 132-multiprocessor GPU).
const STAGED_CUBES: usize = 2048;

/// Shared-memory values per element of the fused stage kernel, `6 (Np + 4 Nfp)`.
fn stage_values(shape: DgShape) -> usize {
    6 * (shape.np + 4 * shape.nfp)
}

impl<R: CubeRuntime> Cube<R> {
    /// Cube count and dim of an element-wise launch, `epc epu` elements per cube, at most
    /// `most` cubes (the kernels loop over the rest).
    fn element_grid(
        &self,
        shape: DgShape,
        epc: usize,
        epu: usize,
        most: usize,
    ) -> (CubeCount, CubeDim) {
        let groups = shape.elements.div_ceil(epc * epu);
        let most = most.min(self.config().max_cubes as usize);
        (
            CubeCount::Static(groups.clamp(1, most.max(1)) as u32, 1, 1),
            CubeDim::new_2d(shape.np as u32, epc as u32),
        )
    }
}

impl<R: CubeRuntime> DgOps for Cube<R> {
    unsafe fn dg_volume<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        q: &CubeBuffer<T>,
        rhs: &mut CubeBuffer<T>,
        params: DgParams,
    ) -> Result<()> {
        let s = mesh.shape;
        let epc = params.elements_per_cube;
        let (cubes, dim) = self.element_grid(s, epc, 1, usize::MAX);
        self.launch::<T>(("dg-volume", s.np, epc), || {
            // SAFETY: element e < K reads q and writes rhs at c L + e Np + lane (< 6 L),
            // ops rows below 3 Np², elem below 9 K.
            unsafe {
                volume_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    mesh.ops.arg(),
                    mesh.elem.arg(),
                    q.arg(),
                    rhs.arg(),
                    s.elements,
                    s.np,
                    epc,
                )
            }
        })
    }

    unsafe fn dg_flux<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        alpha: T,
        q: &CubeBuffer<T>,
        flux: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let s = mesh.shape;
        let units = mesh.pairs * s.nfp;
        if units == 0 {
            return Ok(());
        }
        let (cubes, dim) = self.config().grid(units);
        let zero = T::from_f64(0.0);
        self.launch::<T>(("dg-flux", s.np, s.nfp), || {
            // SAFETY: t < pairs Nfp indexes pair_slot; the mesh's tables index faces below
            // 4 K, face nodes below 4 K Nfp and nodes below K Np.
            unsafe {
                flux_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    mesh.face.arg(),
                    mesh.fmask.arg(),
                    mesh.vmap_p.arg(),
                    mesh.kind.arg(),
                    mesh.pair_face.arg(),
                    mesh.pair_slot.arg(),
                    q.arg(),
                    flux.arg(),
                    coef([zero; 3], alpha),
                    units,
                    s.len(),
                    s.face_len(),
                    s.np,
                    s.nfp,
                )
            }
        })
    }

    unsafe fn dg_lift<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        flux: &CubeBuffer<T>,
        rhs: &mut CubeBuffer<T>,
        params: DgParams,
    ) -> Result<()> {
        let s = mesh.shape;
        let epc = params.elements_per_cube;
        let (cubes, dim) = self.element_grid(s, epc, 1, usize::MAX);
        self.launch::<T>(("dg-lift", s.np, epc), || {
            // SAFETY: element e < K reads flux below 6 F and updates rhs below 6 L.
            unsafe {
                lift_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    mesh.ops.arg(),
                    flux.arg(),
                    rhs.arg(),
                    s.elements,
                    s.np,
                    s.nfp,
                    epc,
                )
            }
        })
    }

    unsafe fn dg_update<T: Scalar>(
        &self,
        len: usize,
        c: [T; 3],
        rhs: &CubeBuffer<T>,
        res: &mut CubeBuffer<T>,
        q: &mut CubeBuffer<T>,
    ) -> Result<()> {
        let (cubes, dim) = self.config().grid(len);
        self.launch::<T>("dg-update", || {
            // SAFETY: i < len, which every buffer holds.
            unsafe {
                update_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    rhs.arg(),
                    res.arg(),
                    q.arg(),
                    coef(c, T::from_f64(0.0)),
                    len,
                )
            }
        })
    }

    unsafe fn dg_stage<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        alpha: T,
        c: [T; 3],
        q: &CubeBuffer<T>,
        res: &mut CubeBuffer<T>,
        q_next: &mut CubeBuffer<T>,
        params: DgParams,
        range: std::ops::Range<usize>,
    ) -> Result<()> {
        let s = mesh.shape;
        let (epc, epu) = (params.elements_per_cube, params.elements_per_unit);
        // Cubes for the range's elements only.
        let part = DgShape {
            elements: range.len(),
            ..s
        };
        let staged = params.shared_operators;
        // Each cube copies the operators once: with them in shared memory, a few cubes a
        // multiprocessor loop over the element groups rather than a cube a group.
        let most = if staged { STAGED_CUBES } else { usize::MAX };
        let (cubes, dim) = self.element_grid(part, epc, epu, most);
        self.launch::<T>(("dg-stage", s.np, epc, epu, staged), || {
            // SAFETY: as the volume, flux and lift kernels together; q_next is not q.
            unsafe {
                stage_kernel::launch_unchecked::<T, R>(
                    self.client(),
                    cubes,
                    dim,
                    mesh.ops.arg(),
                    mesh.elem.arg(),
                    mesh.face.arg(),
                    mesh.fmask.arg(),
                    mesh.vmap_p.arg(),
                    mesh.kind.arg(),
                    q.arg(),
                    res.arg(),
                    q_next.arg(),
                    coef(c, alpha),
                    s.elements,
                    range.start,
                    range.end,
                    s.np,
                    s.nfp,
                    epc,
                    epu,
                    staged,
                )
            }
        })
    }

    fn dg_default_params<T: Scalar>(&self, shape: DgShape) -> DgParams {
        // About 256 units per cube, within the device's limits.
        let mut epc = (256 / shape.np).max(1);
        while epc > 1
            && !self.dg_params_fit::<T>(
                shape,
                DgParams {
                    elements_per_cube: epc,
                    elements_per_unit: 1,
                    fused: true,
                    shared_operators: false,
                },
            )
        {
            epc -= 1;
        }
        DgParams {
            elements_per_cube: epc,
            elements_per_unit: 1,
            fused: true,
            shared_operators: false,
        }
    }

    fn dg_params_fit<T: Scalar>(&self, shape: DgShape, params: DgParams) -> bool {
        let (epc, epu) = (params.elements_per_cube, params.elements_per_unit);
        let info = self.info();
        // The fused kernel stages epc epu elements per cube; the others epc.
        let staged = if params.fused { epc * epu } else { epc };
        let operators = if params.shared_operators {
            shape.ops_len()
        } else {
            0
        };
        let bytes = (stage_values(shape) * staged + operators) * std::mem::size_of::<T>();
        epc >= 1
            && epu >= 1
            && (params.fused || (epu == 1 && !params.shared_operators))
            && shape.np * epc <= info.max_units_per_cube as usize
            && bytes <= info.max_shared_bytes
    }
}
