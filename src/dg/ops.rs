//! [`DgOps`]: the nodal DG Maxwell kernels every backend implements (volume curl, surface
//! flux with both sides of an interior face in one unit, lift, the low-storage RK update,
//! and one fused stage) and the device data they read ([`DgMesh`], whose methods are the
//! checked way to the kernels). The CPU implementation, the reference, is in `cpu.rs`.
//!
//! # Layout (structure of arrays)
//! Fields: one buffer of `6 L` values, `L = K Np`: field `c` (`Ex, Ey, Ez, Hx, Hy, Hz`) of
//! node `i` of element `e` at `c L + e Np + i`. Surface fluxes: `6 F` values, `F = 4 K Nfp`,
//! field `c` of face node `j` of face `f` of element `e` at `c F + (4 e + f) Nfp + j`,
//! already scaled by `fscale / 2`. Operators: `[Dr | Ds | Dt | Lift]`, each column-major
//! (`D[i, j]` at `j Np + i`, `Lift[i, b]` at `b Np + i`; `3 Np² + 4 Np Nfp` values), so
//! that the units of one element, one node each, read a column together. Per element: the
//! inverse Jacobian `[rx, ry, rz, sx, sy, sz, tx, ty, tz]`. Per face: `[nx, ny, nz, fscale / 2]`.
//!
//! # Flux
//! With `[[u]] = u⁺ − u⁻` and `α = 1` (upwind) or `0` (central), on the minus side
//! `s (n × [[H]] + α ([[E]] − n (n·[[E]])))` for `E` and
//! `s (−n × [[E]] + α ([[H]] − n (n·[[H]])))` for `H`, `s = fscale/2`; the plus side sees
//! `−n` and `−[[u]]`, so its flux is the same two cross products with the `α` terms negated
//! (one unit computes both). Perfect conductor: `E⁺ = −E⁻`, `H⁺ = H⁻`. Absorbing
//! (Silver–Müller, first order): the exterior state is zero, so the upwind flux lets every
//! outgoing characteristic leave and nothing enter.

use crate::backend::core::sealed::Sealed;
use crate::backend::core::{check_device, BackendCore};
use crate::error::{check_len, Error, Result};
use crate::scalar::{Scalar, Storable};
use crate::vector::{Vector, VectorOps};

/// The kind of a face: an interior face.
pub const FACE_INTERIOR: u32 = 0;
/// The kind of a face: a perfect electric conductor wall.
pub const FACE_PEC: u32 = 1;
/// The kind of a face: a first-order absorbing (Silver–Müller) boundary.
pub const FACE_ABSORBING: u32 = 2;

/// The sizes of a DG mesh of one order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DgShape {
    /// The order `N`.
    pub order: usize,
    /// Elements `K`.
    pub elements: usize,
    /// Nodes per element `Np`.
    pub np: usize,
    /// Nodes per face `Nfp`.
    pub nfp: usize,
}

impl DgShape {
    /// Nodes of one field, `K Np`.
    pub fn len(&self) -> usize {
        self.elements * self.np
    }

    /// Whether the mesh has no node.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Face nodes of one field, `4 K Nfp`.
    pub fn face_len(&self) -> usize {
        4 * self.elements * self.nfp
    }

    /// Values of the operator buffer, `3 Np² + 4 Np Nfp`.
    pub fn ops_len(&self) -> usize {
        3 * self.np * self.np + 4 * self.np * self.nfp
    }
}

/// Launch parameters of the DG kernels (ignored by the CPU backend).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DgParams {
    /// Elements per cube (work group) of the element-wise kernels.
    pub elements_per_cube: usize,
    /// Elements per unit of the fused stage kernel: each unit serves one node of this many
    /// elements, so each operator entry it reads serves them all (register blocking).
    pub elements_per_unit: usize,
    /// One fused kernel per RK stage ([`DgOps::dg_stage`]) rather than four
    /// (volume, flux, lift, update).
    pub fused: bool,
    /// The fused stage kernel copies the operator matrices (`3 Np² + 4 Np Nfp` values) into
    /// shared memory once per cube and reads them there, rather than through the cache.
    /// Only with `fused`, and only where the device's shared memory holds them beside the
    /// elements' data.
    pub shared_operators: bool,
}

/// The host arrays of a DG mesh, before [`DgMesh::new`] checks and uploads them (the fields
/// of [`DgMesh`] say what each holds).
pub(crate) struct DgMeshArrays<T> {
    pub(crate) ops: Vec<T>,
    pub(crate) elem: Vec<T>,
    pub(crate) face: Vec<T>,
    pub(crate) fmask: Vec<u32>,
    pub(crate) vmap_p: Vec<u32>,
    pub(crate) kind: Vec<u32>,
    pub(crate) pair_face: Vec<u32>,
    pub(crate) pair_slot: Vec<u32>,
}

/// The device data of a DG mesh (built by [`Maxwell`](super::Maxwell)): every index checked
/// against the array it indexes when it was made, so its methods — the safe way to the
/// [`DgOps`] kernels — check only the vectors and launch parameters they are given.
pub struct DgMesh<B: BackendCore, T: Scalar> {
    pub(crate) backend: B,
    pub(crate) shape: DgShape,
    /// `[Dr | Ds | Dt | Lift]`, column-major.
    pub(crate) ops: B::Buffer<T>,
    /// Per element: the inverse Jacobian (9 values).
    pub(crate) elem: B::Buffer<T>,
    /// Per face: `[nx, ny, nz, fscale / 2]`.
    pub(crate) face: B::Buffer<T>,
    /// The reference face nodes, `4 Nfp`.
    pub(crate) fmask: B::Buffer<u32>,
    /// Per face node: the global node across the face (itself on the boundary).
    pub(crate) vmap_p: B::Buffer<u32>,
    /// Per face: [`FACE_INTERIOR`], [`FACE_PEC`] or [`FACE_ABSORBING`].
    pub(crate) kind: B::Buffer<u32>,
    /// The face units: every boundary face and one face (`4 e + f`) of each interior pair.
    pub(crate) pair_face: B::Buffer<u32>,
    /// Per face unit and face node: the flux slot of the plus side (`u32::MAX` on the
    /// boundary).
    pub(crate) pair_slot: B::Buffer<u32>,
    /// Face units.
    pub(crate) pairs: usize,
}

impl<B: BackendCore, T: Scalar> DgMesh<B, T> {
    /// The mesh's sizes.
    pub fn shape(&self) -> DgShape {
        self.shape
    }
}

/// A buffer of `v` (one value where `v` is empty: no device buffer is empty).
fn upload<B: BackendCore, D: Storable>(b: &B, v: &[D]) -> Result<B::Buffer<D>> {
    if v.is_empty() {
        b.alloc(1)
    } else {
        b.upload(v)
    }
}

impl<B: DgOps, T: Scalar> DgMesh<B, T> {
    /// Checks the arrays of a mesh of `shape` — every length, and every index against the
    /// array it indexes — and uploads them to `backend`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first array that is wrong; device errors.
    pub(crate) fn new(backend: &B, shape: DgShape, a: DgMeshArrays<T>) -> Result<Self> {
        const OP: &str = "DgMesh::new";
        let (k, np, nfp) = (shape.elements, shape.np, shape.nfp);
        let faces = 4 * k;
        let units = a.pair_face.len();
        let fields = 6 * shape.len();
        if fields > u32::MAX as usize / 2 {
            return Err(Error::invalid(
                OP,
                "mesh",
                format!("{fields} field values need 32-bit indices of more than 2^31"),
            ));
        }
        check_len(OP, "operators", shape.ops_len(), a.ops.len())?;
        check_len(OP, "inverse Jacobians", 9 * k, a.elem.len())?;
        check_len(OP, "face factors", 4 * faces, a.face.len())?;
        check_len(OP, "face nodes", 4 * nfp, a.fmask.len())?;
        check_len(OP, "vmapP", shape.face_len(), a.vmap_p.len())?;
        check_len(OP, "face kinds", faces, a.kind.len())?;
        check_len(OP, "face-unit slots", units * nfp, a.pair_slot.len())?;
        let bounded = |name: &'static str, v: &[u32], limit: usize, pad: bool| match v
            .iter()
            .position(|&i| i as usize >= limit && !(pad && i == u32::MAX))
        {
            None => Ok(()),
            Some(at) => Err(Error::invalid(
                OP,
                name,
                format!("entry {at} is {}, not below {limit}", v[at]),
            )),
        };
        bounded("face nodes", &a.fmask, np, false)?;
        bounded("vmapP", &a.vmap_p, shape.len(), false)?;
        bounded("face kinds", &a.kind, 3, false)?;
        bounded("face units", &a.pair_face, faces, false)?;
        bounded("face-unit slots", &a.pair_slot, shape.face_len(), true)?;
        Ok(DgMesh {
            backend: backend.clone(),
            shape,
            ops: upload(backend, &a.ops)?,
            elem: upload(backend, &a.elem)?,
            face: upload(backend, &a.face)?,
            fmask: upload(backend, &a.fmask)?,
            vmap_p: upload(backend, &a.vmap_p)?,
            kind: upload(backend, &a.kind)?,
            pairs: units,
            pair_face: upload(backend, &a.pair_face)?,
            pair_slot: upload(backend, &a.pair_slot)?,
        })
    }

    /// Values of a field vector: `6 K Np`.
    pub fn dofs(&self) -> usize {
        6 * self.shape.len()
    }

    /// Values of a surface-flux vector: `6 · 4 K Nfp`.
    pub fn flux_len(&self) -> usize {
        6 * self.shape.face_len()
    }

    /// Checks that `params` fit the device for this mesh in `T`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when they do not (units or shared memory per cube).
    pub fn check_params(&self, op: &'static str, params: DgParams) -> Result<()> {
        if self.backend.dg_params_fit::<T>(self.shape, params) {
            Ok(())
        } else {
            Err(Error::invalid(
                op,
                "params",
                format!(
                    "{params:?} does not fit {} for order {} in {}",
                    self.backend.info(),
                    self.shape.order,
                    T::DTYPE
                ),
            ))
        }
    }

    /// Checks that `v` holds `len` values on this mesh's device.
    fn check(
        &self,
        op: &'static str,
        name: &'static str,
        v: &Vector<B, T>,
        len: usize,
    ) -> Result<()> {
        check_device(op, &self.backend, v.backend())?;
        check_len(op, name, len, v.len())
    }

    /// `out = (∇×H, −∇×E)` of `q` element by element (the volume term).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] unless both hold [`dofs`](Self::dofs) values,
    /// [`Error::DeviceMismatch`], [`Error::InvalidArgument`] for launch parameters that do
    /// not fit; device errors.
    pub fn volume(&self, q: &Vector<B, T>, out: &mut Vector<B, T>, params: DgParams) -> Result<()> {
        const OP: &str = "DgMesh::volume";
        self.check(OP, "q", q, self.dofs())?;
        self.check(OP, "out", out, self.dofs())?;
        self.check_params(OP, params)?;
        // SAFETY: field vectors of this mesh on its device; params fit (checked above).
        unsafe {
            self.backend
                .dg_volume(self, q.buffer()?, out.buffer_mut()?, params)
        }
    }

    /// The surface fluxes of `q` at every face node ([`flux_len`](Self::flux_len) values,
    /// scaled by `fscale/2`), both sides of an interior face by one unit; `alpha = 1`
    /// upwind, `0` central.
    ///
    /// # Errors
    /// As [`volume`](Self::volume).
    pub fn flux(&self, alpha: T, q: &Vector<B, T>, flux: &mut Vector<B, T>) -> Result<()> {
        const OP: &str = "DgMesh::flux";
        self.check(OP, "q", q, self.dofs())?;
        self.check(OP, "flux", flux, self.flux_len())?;
        // SAFETY: a field and a flux vector of this mesh on its device (checked above).
        unsafe {
            self.backend
                .dg_flux(self, alpha, q.buffer()?, flux.buffer_mut()?)
        }
    }

    /// `out += Lift · flux` element by element.
    ///
    /// # Errors
    /// As [`volume`](Self::volume).
    pub fn lift(
        &self,
        flux: &Vector<B, T>,
        out: &mut Vector<B, T>,
        params: DgParams,
    ) -> Result<()> {
        const OP: &str = "DgMesh::lift";
        self.check(OP, "flux", flux, self.flux_len())?;
        self.check(OP, "out", out, self.dofs())?;
        self.check_params(OP, params)?;
        // SAFETY: a flux and a field vector of this mesh on its device; params fit.
        unsafe {
            self.backend
                .dg_lift(self, flux.buffer()?, out.buffer_mut()?, params)
        }
    }

    /// The low-storage RK update, `coef = [a, b, dt]`: `res = a res + dt rhs; q += b res`.
    ///
    /// # Errors
    /// As [`volume`](Self::volume).
    pub fn update(
        &self,
        coef: [T; 3],
        rhs: &Vector<B, T>,
        res: &mut Vector<B, T>,
        q: &mut Vector<B, T>,
    ) -> Result<()> {
        const OP: &str = "DgMesh::update";
        for (name, v) in [("rhs", rhs), ("res", &*res), ("q", &*q)] {
            self.check(OP, name, v, self.dofs())?;
        }
        // SAFETY: three field vectors of this mesh on its device (checked above).
        unsafe {
            self.backend.dg_update(
                self.dofs(),
                coef,
                rhs.buffer()?,
                res.buffer_mut()?,
                q.buffer_mut()?,
            )
        }
    }

    /// One fused RK stage, `coef = [a, b, dt]`: `res = a res + dt L(q)`, `q_next = q + b res`.
    ///
    /// # Errors
    /// As [`volume`](Self::volume).
    #[allow(clippy::too_many_arguments)]
    pub fn stage(
        &self,
        alpha: T,
        coef: [T; 3],
        q: &Vector<B, T>,
        res: &mut Vector<B, T>,
        q_next: &mut Vector<B, T>,
        params: DgParams,
    ) -> Result<()> {
        self.stage_range(alpha, coef, q, res, q_next, params, 0..self.shape.elements)
    }

    /// [`stage`](Self::stage) for the elements of `range` only: their `res` and `q_next`
    /// written, the rest left as they are (`q` read wherever their faces reach). Runs a
    /// stage in parts, e.g. the elements that read no ghost while a halo is exchanged.
    ///
    /// # Errors
    /// As [`stage`](Self::stage); [`Error::InvalidArgument`] for a range beyond the
    /// elements.
    #[allow(clippy::too_many_arguments)]
    pub fn stage_range(
        &self,
        alpha: T,
        coef: [T; 3],
        q: &Vector<B, T>,
        res: &mut Vector<B, T>,
        q_next: &mut Vector<B, T>,
        params: DgParams,
        range: std::ops::Range<usize>,
    ) -> Result<()> {
        const OP: &str = "DgMesh::stage";
        for (name, v) in [("q", q), ("res", &*res), ("q_next", &*q_next)] {
            self.check(OP, name, v, self.dofs())?;
        }
        self.check_params(OP, params)?;
        if range.start > range.end || range.end > self.shape.elements {
            return Err(Error::invalid(
                OP,
                "range",
                format!(
                    "elements {range:?} are not within the mesh's {}",
                    self.shape.elements
                ),
            ));
        }
        if range.is_empty() {
            return Ok(());
        }
        // SAFETY: field vectors of this mesh on its device, q_next distinct from q (one is
        // borrowed mutably), params fit and the range lies within the elements (checked
        // above).
        unsafe {
            self.backend.dg_stage(
                self,
                alpha,
                coef,
                q.buffer()?,
                res.buffer_mut()?,
                q_next.buffer_mut()?,
                params,
                range,
            )
        }
    }
}

/// The nodal DG kernel family: implemented by every backend; sealed. Called by
/// [`Maxwell`](super::Maxwell), which builds every argument.
///
/// # Safety
/// Every method requires: the buffers belong to this backend; field buffers hold `6 L`
/// values and flux buffers `6 F` ([module docs](self)); `mesh` was built consistently
/// (every index inside its array); `params` passed [`dg_params_fit`](Self::dg_params_fit).
pub trait DgOps: VectorOps + Sealed {
    /// `rhs = (∇×H, −∇×E)` element by element (the volume term).
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn dg_volume<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        q: &Self::Buffer<T>,
        rhs: &mut Self::Buffer<T>,
        params: DgParams,
    ) -> Result<()>;

    /// The surface fluxes of every face node, both sides of an interior face by one unit.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn dg_flux<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        alpha: T,
        q: &Self::Buffer<T>,
        flux: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// `rhs += Lift · flux` element by element.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    unsafe fn dg_lift<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        flux: &Self::Buffer<T>,
        rhs: &mut Self::Buffer<T>,
        params: DgParams,
    ) -> Result<()>;

    /// The low-storage RK update over `len` values, `coef = [a, b, dt]`:
    /// `res = a res + dt rhs; q += b res`.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait; `rhs`, `res`, `q` hold `len` values.
    unsafe fn dg_update<T: Scalar>(
        &self,
        len: usize,
        coef: [T; 3],
        rhs: &Self::Buffer<T>,
        res: &mut Self::Buffer<T>,
        q: &mut Self::Buffer<T>,
    ) -> Result<()>;

    /// One fused RK stage, `coef = [a, b, dt]`: `res = a res + dt L(q)`,
    /// `q_next = q + b res` (volume, the element's own face fluxes, lift and update in one
    /// kernel; `q_next` must not be `q`, which neighbours still read), for the `elements`
    /// (a range within the mesh's) only.
    ///
    /// # Errors
    /// Device errors.
    ///
    /// # Safety
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn dg_stage<T: Scalar>(
        &self,
        mesh: &DgMesh<Self, T>,
        alpha: T,
        coef: [T; 3],
        q: &Self::Buffer<T>,
        res: &mut Self::Buffer<T>,
        q_next: &mut Self::Buffer<T>,
        params: DgParams,
        elements: std::ops::Range<usize>,
    ) -> Result<()>;

    /// The default launch parameters for `shape` in `T`.
    fn dg_default_params<T: Scalar>(&self, shape: DgShape) -> DgParams;

    /// Whether `params` fit the device for `shape` in `T` (units and on-chip memory per
    /// cube).
    fn dg_params_fit<T: Scalar>(&self, shape: DgShape, params: DgParams) -> bool;
}
