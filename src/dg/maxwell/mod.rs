//! [`Maxwell`]: time-domain Maxwell's equations by nodal DG on a tetrahedral mesh, on any
//! backend and precision — the device data, the fields, the low-storage RK4 step (one
//! fused kernel per stage, or four), the energy and the error, the kernels one by one, and
//! the autotuned launch parameters.

use crate::bundle::Backend;
use crate::dg::ops::DgOps;
use crate::error::Result;
use crate::scalar::Scalar;
use crate::vector::Vector;

use super::geometry::DgGeometry;
use super::host::{Fields, Flux, MaxwellHost, LSRK4};
use super::ops::{DgMesh, DgMeshArrays, DgParams, DgShape, FACE_INTERIOR};
use super::reference::{check_order, ReferenceTet};
use super::setup::TetMesh;

mod tune;

/// The application-level work of one RK stage (the seed's count: every multiply and add of
/// the volume, flux, lift and update terms) and the bytes the fused stage must move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageCost {
    /// Floating-point operations per stage.
    pub flops: f64,
    /// Bytes read and written by the fused stage kernel: `q`, `res` (read and written),
    /// `q_next`, the neighbours' face values, the geometric factors and the face tables.
    pub bytes: f64,
}

/// Nodal DG for `E_t = ∇×H`, `H_t = −∇×E` on a tetrahedral mesh: see the
/// [module docs](self) and [`dg`](super).
///
/// ```
/// use galerkin::dg::{cavity_mode, Flux, Maxwell, TetMesh};
/// use galerkin::Cpu;
///
/// let mesh = TetMesh::unit_cube(2, 0.0, 1)?;
/// let mut dg = Maxwell::<Cpu, f64>::new(&Cpu::new(), &mesh, 3, Flux::Upwind)?;
/// dg.set_fields(|x| cavity_mode([1, 1, 0], 0.0, x))?;
/// let e0 = dg.energy()?;
/// let dt = dg.stable_dt(0.5);
/// for _ in 0..10 {
///     dg.step(dt)?;
/// }
/// let err = dg.l2_error(|x| cavity_mode([1, 1, 0], 10.0 * dt, x))?;
/// assert!(err < 1e-2 && dg.energy()? <= e0);
/// # Ok::<(), galerkin::Error>(())
/// ```
pub struct Maxwell<B: Backend + DgOps, T: Scalar> {
    backend: B,
    geo: DgGeometry,
    re: ReferenceTet,
    mesh: DgMesh<B, T>,
    flux: Flux,
    params: DgParams,
    q: Vector<B, T>,
    res: Vector<B, T>,
    next: Vector<B, T>,
    face_flux: Option<Vector<B, T>>,
    time: f64,
}

impl<B: Backend + DgOps, T: Scalar> Maxwell<B, T> {
    /// The order-`order` DG discretisation of `mesh` with `flux`, fields zero, on `backend`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) for an order outside 1..=9 or a bad mesh (none,
    /// or naming the element or face: inverted or degenerate tetrahedra, non-conforming faces), the
    /// backend's errors (no f64, out of memory).
    pub fn new(backend: &B, mesh: &TetMesh, order: usize, flux: Flux) -> Result<Self> {
        check_order("Maxwell::new", order)?;
        if mesh.tets.is_empty() {
            return Err(crate::error::Error::invalid(
                "Maxwell::new",
                "mesh",
                "the mesh has no tetrahedra",
            ));
        }
        backend.require::<T>("Maxwell")?;
        let re = ReferenceTet::new(order)?;
        let geo = DgGeometry::new(&mesh.points, &mesh.tets, &re)?;
        let kinds = mesh.face_kinds(&geo);
        let shape = DgShape {
            order,
            elements: geo.elements,
            np: geo.np,
            nfp: geo.nfp,
        };
        let dev = Self::device_mesh(backend, &geo, &re, &kinds, shape)?;
        let len = dev.dofs();
        let params = backend.dg_default_params::<T>(shape);
        Ok(Maxwell {
            backend: backend.clone(),
            mesh: dev,
            flux,
            params,
            q: Vector::zeros(backend, len)?,
            res: Vector::zeros(backend, len)?,
            next: Vector::zeros(backend, len)?,
            face_flux: None,
            time: 0.0,
            geo,
            re,
        })
    }

    fn device_mesh(
        backend: &B,
        geo: &DgGeometry,
        re: &ReferenceTet,
        kinds: &[u32],
        shape: DgShape,
    ) -> Result<DgMesh<B, T>> {
        let (np, nfp) = (shape.np, shape.nfp);
        let t = |v: f64| T::from_f64(v);
        let mut ops = Vec::with_capacity(shape.ops_len());
        // Column-major: nalgebra's storage order.
        for d in &re.diff {
            ops.extend(d.iter().map(|&v| t(v)));
        }
        ops.extend(re.lift.iter().map(|&v| t(v)));
        let elem: Vec<T> = geo
            .inverse_jacobian
            .iter()
            .flatten()
            .map(|&v| t(v))
            .collect();
        let face: Vec<T> = (0..4 * geo.elements)
            .flat_map(|f| {
                let n = geo.normals[f];
                [t(n[0]), t(n[1]), t(n[2]), t(0.5 * geo.fscale[f])]
            })
            .collect();
        let fmask: Vec<u32> = re.face_nodes.iter().flatten().map(|&i| i as u32).collect();
        // Face units: boundary faces, and interior faces from the element of lower index.
        let mut pair_face = Vec::new();
        let mut pair_slot = Vec::new();
        let mut local = vec![0u32; np];
        for (face, &kind) in kinds.iter().enumerate() {
            let e = face / 4;
            let other = geo.neighbour[face];
            if kind != FACE_INTERIOR {
                pair_face.push(face as u32);
                pair_slot.extend(std::iter::repeat_n(u32::MAX, nfp));
                continue;
            }
            let o = other as usize;
            if o < e {
                continue;
            }
            let g = (0..4)
                .find(|&g| geo.neighbour[4 * o + g] == e as u32)
                .expect("neighbours are mutual");
            let pf = 4 * o + g;
            // The plus face's slots by the minus element's local node they match.
            for j in 0..nfp {
                let across = geo.vmap_p[pf * nfp + j] as usize;
                local[across - e * np] = (pf * nfp + j) as u32;
            }
            pair_face.push(face as u32);
            pair_slot.extend(re.face_nodes[face % 4].iter().map(|&i| local[i]));
        }
        let arrays = DgMeshArrays {
            ops,
            elem,
            face,
            fmask,
            vmap_p: geo.vmap_p.clone(),
            kind: kinds.to_vec(),
            pair_face,
            pair_slot,
        };
        DgMesh::new(backend, shape, arrays)
    }

    /// The backend the solver runs on.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The mesh's sizes.
    pub fn shape(&self) -> DgShape {
        self.mesh.shape
    }

    /// Degrees of freedom: `6 K Np`.
    pub fn dofs(&self) -> usize {
        6 * self.mesh.shape.len()
    }

    /// The host geometry (node coordinates, factors, maps).
    pub fn geometry(&self) -> &DgGeometry {
        &self.geo
    }

    /// The reference element.
    pub fn reference(&self) -> &ReferenceTet {
        &self.re
    }

    /// The simulated time.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The flux.
    pub fn flux(&self) -> Flux {
        self.flux
    }

    fn alpha(&self) -> T {
        T::from_f64(if self.flux == Flux::Upwind { 1.0 } else { 0.0 })
    }

    /// The launch parameters in use.
    pub fn params(&self) -> DgParams {
        self.params
    }

    /// Sets the launch parameters.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::error::Error::InvalidArgument) if they do not fit the device (units or shared memory per
    /// cube).
    pub fn set_params(&mut self, params: DgParams) -> Result<()> {
        self.mesh.check_params("Maxwell::set_params", params)?;
        self.params = params;
        Ok(())
    }

    /// Sets the fields to `f(x)` at every node (`[Ex, Ey, Ez, Hx, Hy, Hz]`) and the time to 0.
    ///
    /// # Errors
    /// Device errors.
    pub fn set_fields(&mut self, f: impl Fn([f64; 3]) -> [f64; 6] + Sync) -> Result<()> {
        let len = self.mesh.shape.len();
        let x = &self.geo.x;
        let values: Vec<[f64; 6]> = {
            use rayon::prelude::*;
            (0..len)
                .into_par_iter()
                .map(|i| f([x[0][i], x[1][i], x[2][i]]))
                .collect()
        };
        let mut host = vec![T::from_f64(0.0); 6 * len];
        for (i, v) in values.iter().enumerate() {
            for c in 0..6 {
                host[c * len + i] = T::from_f64(v[c]);
            }
        }
        self.q.write(&host)?;
        self.time = 0.0;
        Ok(())
    }

    /// The fields on the host in f64.
    ///
    /// # Errors
    /// Device errors.
    pub fn fields(&self) -> Result<Fields> {
        let len = self.mesh.shape.len();
        let v = self.q.to_vec()?;
        Ok(std::array::from_fn(|c| {
            v[c * len..(c + 1) * len]
                .iter()
                .map(|x| x.as_f64())
                .collect()
        }))
    }

    /// The fields as one device vector (`6 K Np`, [layout](super::ops)).
    pub fn state(&self) -> &Vector<B, T> {
        &self.q
    }

    fn host(&self) -> MaxwellHost<'_> {
        MaxwellHost::new(&self.geo, &self.re, self.flux)
    }

    /// The discrete energy `½ Σ_e J_e qᵀ M q` (computed on the host).
    ///
    /// # Errors
    /// Device errors.
    pub fn energy(&self) -> Result<f64> {
        Ok(self.host().energy(&self.fields()?))
    }

    /// The discrete L² error of all six fields against `exact` at the nodes.
    ///
    /// # Errors
    /// Device errors.
    pub fn l2_error(&self, exact: impl Fn([f64; 3]) -> [f64; 6] + Sync) -> Result<f64> {
        let mut q = self.fields()?;
        let x = &self.geo.x;
        for i in 0..self.mesh.shape.len() {
            let v = exact([x[0][i], x[1][i], x[2][i]]);
            for c in 0..6 {
                q[c][i] -= v[c];
            }
        }
        let host = self.host();
        Ok(host.inner(&q, &q).max(0.0).sqrt())
    }

    /// A stable step: `cfl / (max fscale · N²)`.
    pub fn stable_dt(&self, cfl: f64) -> f64 {
        self.host().stable_dt(cfl)
    }

    /// One low-storage RK4 step of `dt`.
    ///
    /// # Errors
    /// Device errors.
    pub fn step(&mut self, dt: f64) -> Result<()> {
        self.step_with(dt, &mut |_| Ok(()))
    }

    /// One step of `dt`, `before_stage(q)` called on the fields before each of the five
    /// stages reads them (the distributed solver's halo exchange writes the ghost traces).
    pub(crate) fn step_with(
        &mut self,
        dt: f64,
        before_stage: &mut dyn FnMut(&mut Vector<B, T>) -> Result<()>,
    ) -> Result<()> {
        let (a, b, _) = LSRK4;
        for s in 0..5 {
            before_stage(&mut self.q)?;
            self.stage([a[s], b[s], dt])?;
        }
        self.time += dt;
        Ok(())
    }

    /// One step of `dt` with every stage split around an exchange (the distributed solver's
    /// halo): `exchange(q, interior)` writes the ghost traces into `q` and runs `interior(q)`
    /// while they travel, `interior` being the fused stage on elements `0..split` (which read
    /// no ghost); the stage then runs on `split..end`. Elements from `end` on (ghosts) are not
    /// updated. With the four kernels (no fused stage), the exchange comes first and the whole
    /// stage after it.
    #[allow(clippy::type_complexity)]
    pub(crate) fn step_overlapped(
        &mut self,
        dt: f64,
        split: usize,
        end: usize,
        exchange: &mut dyn FnMut(
            &mut Vector<B, T>,
            &mut dyn FnMut(&Vector<B, T>) -> Result<()>,
        ) -> Result<()>,
    ) -> Result<()> {
        let (a, b, _) = LSRK4;
        for s in 0..5 {
            let coef = [a[s], b[s], dt];
            if !self.params.fused {
                exchange(&mut self.q, &mut |_| Ok(()))?;
                self.stage(coef)?;
                continue;
            }
            let c = coef.map(T::from_f64);
            let (alpha, params) = (self.alpha(), self.params);
            let Maxwell {
                mesh, q, res, next, ..
            } = self;
            exchange(q, &mut |q| {
                mesh.stage_range(alpha, c, q, res, next, params, 0..split)
            })?;
            mesh.stage_range(alpha, c, q, res, next, params, split..end)?;
            std::mem::swap(q, next);
        }
        self.time += dt;
        Ok(())
    }

    /// One RK stage with `coef = [a, b, dt]`, by the fused kernel or the four kernels.
    fn stage(&mut self, coef: [f64; 3]) -> Result<()> {
        let c = coef.map(T::from_f64);
        let alpha = self.alpha();
        if self.params.fused {
            self.mesh.stage(
                alpha,
                c,
                &self.q,
                &mut self.res,
                &mut self.next,
                self.params,
            )?;
            std::mem::swap(&mut self.q, &mut self.next);
            return Ok(());
        }
        if self.face_flux.is_none() {
            self.face_flux = Some(Vector::zeros(&self.backend, self.mesh.flux_len())?);
        }
        let flux = self.face_flux.as_mut().expect("allocated above");
        // `next` serves as the right-hand side.
        self.mesh.volume(&self.q, &mut self.next, self.params)?;
        self.mesh.flux(alpha, &self.q, flux)?;
        self.mesh.lift(flux, &mut self.next, self.params)?;
        self.mesh.update(c, &self.next, &mut self.res, &mut self.q)
    }

    /// Runs `steps` steps of `dt`, calling `observe(step)` after each.
    ///
    /// # Errors
    /// Device errors, and whatever `observe` returns.
    pub fn run(
        &mut self,
        steps: usize,
        dt: f64,
        mut observe: impl FnMut(&Self, usize) -> Result<()>,
    ) -> Result<()> {
        for s in 0..steps {
            self.step(dt)?;
            observe(self, s + 1)?;
        }
        Ok(())
    }

    /// `out = (∇×H, −∇×E)` of `q`: the volume kernel alone.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) unless both hold [`dofs`](Self::dofs) values; device
    /// errors.
    pub fn volume(&self, q: &Vector<B, T>, out: &mut Vector<B, T>) -> Result<()> {
        self.mesh.volume(q, out, self.params)
    }

    /// The surface fluxes of `q` at every face node (`6 · 4 K Nfp` values, scaled by
    /// `fscale/2`), both sides of each interior face by one unit.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for wrong lengths; device errors.
    pub fn surface_flux(&self, q: &Vector<B, T>, flux: &mut Vector<B, T>) -> Result<()> {
        self.mesh.flux(self.alpha(), q, flux)
    }

    /// `out += Lift · flux`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for wrong lengths; device errors.
    pub fn lift(&self, flux: &Vector<B, T>, out: &mut Vector<B, T>) -> Result<()> {
        self.mesh.lift(flux, out, self.params)
    }

    /// The fused stage on given vectors: `res = a res + dt L(q)`, `q_next = q + b res`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for wrong lengths; device errors.
    pub fn fused_stage(
        &self,
        coef: [f64; 3],
        q: &Vector<B, T>,
        res: &mut Vector<B, T>,
        q_next: &mut Vector<B, T>,
    ) -> Result<()> {
        let c = coef.map(T::from_f64);
        self.mesh
            .stage(self.alpha(), c, q, res, q_next, self.params)
    }

    /// The RK update alone: `res = a res + dt rhs; q += b res`.
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`](crate::error::Error::DimensionMismatch) for wrong lengths; device errors.
    pub fn update(
        &self,
        coef: [f64; 3],
        rhs: &Vector<B, T>,
        res: &mut Vector<B, T>,
        q: &mut Vector<B, T>,
    ) -> Result<()> {
        self.mesh.update(coef.map(T::from_f64), rhs, res, q)
    }

    /// The work and traffic of one stage.
    pub fn stage_cost(&self) -> StageCost {
        let s = self.mesh.shape;
        let (k, np, nfp) = (s.elements as f64, s.np as f64, s.nfp as f64);
        let size = std::mem::size_of::<T>() as f64;
        // Volume: 18 dot products of length Np and the curl; flux: ~60 per face node;
        // lift: 6 products of length 4 Nfp; update: 4 per value.
        let flops = k * (36.0 * np * np + 96.0 * np + 240.0 * nfp + 48.0 * np * nfp + 24.0 * np);
        let fields = 4.0 * 6.0 * k * np * size;
        let faces = k * 4.0 * nfp * (6.0 * size + 4.0) + k * 4.0 * (4.0 * size + 4.0);
        StageCost {
            flops,
            bytes: fields + faces + k * 9.0 * size,
        }
    }
}
