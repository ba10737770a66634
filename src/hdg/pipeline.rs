//! The stages of the HDG solve, each a handful of batched device operations. See the
//! [module docs](super) for the equations.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::batched::{cholesky, cholesky_solve, gemm, Batch, GemmParams, MAX_DIM};
use crate::error::{Error, Result};
use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::host::{self, Field, Flux};
use crate::hdg::ops::TRACE_SLOTS;
use crate::hdg::reference::{num_modes, PostProcessMatrices, ReferenceMatrices, MAX_DEGREE};
use crate::hdg::stacks::{stack, Stack};
use crate::hdg::topology::TraceTopology;
use crate::io::vtk::{UnstructuredGrid, VtkCell};
use crate::mesh::tri::TriMesh;
use crate::scalar::{Element, Scalar};
use crate::solver::{
    pcg, BlockJacobi, Chebyshev, ChebyshevParams, Preconditioner, Progress, SolveReport,
    SolverParams,
};
use crate::sparse::BlockEll;
use crate::vector::Vector;

/// The discretisation parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HdgParams {
    /// Polynomial degree `P` (1..=9).
    pub degree: usize,
    /// Stabilisation `τ > 0` (the flux `q̂·n = q·n − τ (u − û)`).
    pub tau: f64,
    /// Reaction coefficient `λ ≥ 0` of `−∇²u + λu = f` (0: Poisson).
    pub lambda: f64,
}

impl HdgParams {
    /// Degree `degree`, `τ = 1`, `λ = 0`.
    pub fn new(degree: usize) -> Self {
        HdgParams {
            degree,
            tau: 1.0,
            lambda: 0.0,
        }
    }

    fn check(&self) -> Result<()> {
        let invalid = |name, reason| Error::InvalidArgument {
            op: "hdg",
            name,
            reason,
        };
        if !(1..=MAX_DEGREE).contains(&self.degree) {
            return Err(invalid(
                "degree",
                format!("P = {}: must be in 1..={MAX_DEGREE}", self.degree),
            ));
        }
        if !(self.tau > 0.0 && self.tau.is_finite()) {
            return Err(invalid(
                "tau",
                format!("{}: must be positive and finite", self.tau),
            ));
        }
        if !(self.lambda >= 0.0 && self.lambda.is_finite()) {
            return Err(invalid(
                "lambda",
                format!("{}: must be non-negative and finite", self.lambda),
            ));
        }
        Ok(())
    }
}

/// The data of a problem: `f`, the Dirichlet values `g_D`, and on Neumann edges the flux
/// `g_N = ∇u·n`.
#[derive(Clone, Copy)]
pub struct Problem<'a> {
    /// The right-hand side `f(x, y)`.
    pub rhs: Field<'a>,
    /// The Dirichlet values `g_D(x, y)`.
    pub dirichlet: Field<'a>,
    /// The outward flux `∇u·n` on Neumann edges (required when the mesh has any).
    pub flux: Option<Flux<'a>>,
}

/// How the trace system is preconditioned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TracePreconditioner {
    /// Block-Jacobi on the edge blocks (their inverses by the batched LU).
    #[default]
    BlockJacobi,
    /// A Chebyshev polynomial of this degree in the block-Jacobi-scaled operator.
    Chebyshev {
        /// Polynomial degree (operator applications per application, minus one).
        degree: usize,
    },
}

/// Parameters of the trace solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceSolverParams {
    /// Relative residual tolerance.
    pub rtol: f64,
    /// Iteration limit.
    pub max_iter: usize,
    /// The preconditioner.
    pub preconditioner: TracePreconditioner,
    /// Progress display of the solver.
    pub progress: Progress,
    /// Read the device-resident residual every this many iterations (PCG keeps its
    /// scalars on the device; each read is a host round trip).
    pub check_every: usize,
}

impl TraceSolverParams {
    /// `rtol = 10⁻¹²` (`10⁻⁵` when the solve runs in f32: the f32 residual of `K`, whose
    /// condition grows like `h⁻²`, stalls near `10⁻⁶`), 20000 iterations, block-Jacobi, no
    /// progress display, the residual read every 10 iterations.
    pub fn for_precision<S: Scalar>() -> Self {
        TraceSolverParams {
            rtol: if S::EPS > 1e-10 { 1e-5 } else { 1e-12 },
            max_iter: 20_000,
            preconditioner: TracePreconditioner::BlockJacobi,
            progress: Progress::Never,
            check_every: 10,
        }
    }
}

/// The local solvers of every element (stage "local"): `𝕌 = Z Bᵀ`, the Cholesky factor of
/// `Z⁻¹` and the local trace matrices `Kᵉ = C − B 𝕌`. Only `𝕌` is needed after assembly
/// ([`release`](Self::release) drops the rest).
pub struct LocalSolvers<B: Backend, V: Element> {
    factor: Option<Batch<B, V>>,
    u_map: Batch<B, V>,
    ke: Option<Batch<B, V>>,
}

impl<B: Backend, V: Element> LocalSolvers<B, V> {
    /// `𝕌` (`count` matrices of `Nu x 3Nλ`): `u = u_f + 𝕌 λᵉ`.
    pub fn u_map(&self) -> &Batch<B, V> {
        &self.u_map
    }

    /// The local trace matrices `Kᵉ` (`3Nλ x 3Nλ`), until released.
    pub fn ke(&self) -> Option<&Batch<B, V>> {
        self.ke.as_ref()
    }

    /// The Cholesky factors of `Z⁻¹` (`Nu x Nu`), until released.
    pub fn factor(&self) -> Option<&Batch<B, V>> {
        self.factor.as_ref()
    }

    /// Drops what only the load and the assembly need (the factors and `Kᵉ`).
    pub fn release(&mut self) {
        self.factor = None;
        self.ke = None;
    }
}

/// The element data of the right-hand side (stage "load").
pub struct Load<B: Backend, V: Element, S: Scalar> {
    /// `u_f = Z fᵉ`, `count x Nu x 1`.
    pub u_f: Batch<B, V>,
    /// The element trace right-hand sides `𝕌ᵀ fᵉ − Kᵉ λ_Dᵉ`, `count x 3Nλ x 1`.
    pub g: Batch<B, V>,
    /// The Dirichlet trace values (`ndir · Nλ`).
    pub lambda_d: Vector<B, S>,
    /// The Neumann loads `∫ g_N ψ` on the free edges (`nfree · Nλ`).
    pub neumann: Vector<B, S>,
}

/// The trace system `K λ = F` (stage "assemble").
pub struct TraceSystem<B: Backend, V: Element, S: Scalar> {
    /// `K` in block-ELL: blocks of `Nλ`, 5 slots per block row, slot 0 the edge itself.
    pub k: BlockEll<B, V>,
    /// `F`.
    pub rhs: Vector<B, S>,
    /// The diagonal blocks of `K` (`nfree x Nλ x Nλ`), for block-Jacobi.
    pub diagonal: Batch<B, V>,
}

/// The solution of the trace system (stage "solve").
pub struct TraceSolution<B: Backend, S: Scalar> {
    /// `λ` on the free edges.
    pub lambda: Vector<B, S>,
    /// What the solver did.
    pub report: SolveReport,
}

/// The recovered fields (stages "recover" and "post-process"), modal coefficients per
/// element.
pub struct Fields<B: Backend, V: Element> {
    /// `u`, `count x Nu x 1`.
    pub u: Batch<B, V>,
    /// `q = ∇u`: `count x 2Nu x 1`, the x component then the y component.
    pub q: Batch<B, V>,
    /// The post-processed `u*` of degree `P + 1`, `count x N(P+1) x 1`; `None` where the
    /// post-processing was not run.
    pub u_star: Option<Batch<B, V>>,
}

/// Wall time of each stage (the device synchronised after each).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Mesh topology, edge-to-element sort, uploads.
    pub setup: Duration,
    /// Local solver generation: coefficients, `Z⁻¹`, Cholesky, `𝕌`, `Kᵉ`.
    pub local: Duration,
    /// The right-hand side: `f` at quadrature points (host), `u_f`, element loads.
    pub load: Duration,
    /// Trace matrix and right-hand side assembly.
    pub assemble: Duration,
    /// The PCG solve (with the preconditioner set-up).
    pub solve: Duration,
    /// Recovery of `u` and `q`.
    pub recover: Duration,
    /// The post-processing `u*`.
    pub post_process: Duration,
}

impl StageTimes {
    /// The sum of the stages.
    pub fn total(&self) -> Duration {
        self.setup
            + self.local
            + self.load
            + self.assemble
            + self.solve
            + self.recover
            + self.post_process
    }

    /// `(name, time)` of every stage, in order.
    pub fn stages(&self) -> [(&'static str, Duration); 7] {
        [
            ("setup", self.setup),
            ("local", self.local),
            ("load", self.load),
            ("assemble", self.assemble),
            ("solve", self.solve),
            ("recover", self.recover),
            ("post_process", self.post_process),
        ]
    }
}

/// The HDG discretisation of a mesh on a backend: element storage `V` (local matrices and
/// `K`), arithmetic and trace vectors `S` (`f64` with `V = f32` is the mixed precision).
pub struct Hdg<B: Backend, V: Scalar, S: Scalar> {
    backend: B,
    params: HdgParams,
    mesh: TriMesh,
    topology: TraceTopology,
    stacks: Vec<Batch<B, V>>,
    /// `e0 e0ᵀ`, `N(P+1) x Nu` (`N(P) x Nu` when split): copies the mean of `u` into the
    /// post-processing.
    mean: Batch<B, V>,
    /// The post-processing by blocks, where `N(P+1)` exceeds [`MAX_DIM`].
    split: Option<SplitPost<B, V>>,
    vertices: B::Buffer<V>,
    flips: B::Buffer<u32>,
    elem_dofs: B::Buffer<u32>,
    gather_free: B::Buffer<u32>,
    gather_dir: B::Buffer<u32>,
    rows: B::Buffer<u32>,
    diag_index: B::Buffer<u32>,
    setup_time: Duration,
    _s: PhantomData<S>,
}

fn to_elements<V: Element>(values: &[f64]) -> Vec<V> {
    values.iter().map(|&v| V::from_f64(v)).collect()
}

impl<B: Backend, V: Scalar, S: Scalar> Hdg<B, V, S> {
    /// Prepares the discretisation: topology (every boundary edge Dirichlet except those
    /// tagged `neumann_tags`), reference matrices, uploads, and the edge-to-element lists
    /// by sort-by-key on the device.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `P` outside 1..=9, `τ ≤ 0`, `λ < 0`, an unknown
    /// Neumann tag, or a pure Neumann problem with `λ = 0` (singular); [`Error::Unsupported`] when the device lacks `V` or `S`; device errors.
    pub fn new(
        backend: &B,
        mesh: &TriMesh,
        params: HdgParams,
        neumann_tags: &[i32],
    ) -> Result<Self> {
        let start = Instant::now();
        params.check()?;
        backend.require::<V>("HDG element matrices")?;
        backend.require::<S>("HDG trace vectors")?;
        let p = params.degree;
        let nl = p + 1;
        let topology = TraceTopology::new(mesh, nl, neumann_tags)?;
        if topology.ndirichlet() == 0 && params.lambda == 0.0 {
            return Err(Error::InvalidArgument {
                op: "hdg",
                name: "neumann tags",
                reason: format!(
                    "every boundary edge is Neumann (tags {neumann_tags:?}) and λ = 0: u is fixed only \
                     up to a constant; keep a Dirichlet edge or set λ > 0"
                ),
            });
        }
        let reference = ReferenceMatrices::new(p);
        let post = PostProcessMatrices::new(p);
        let stacks = CoefficientKind::ALL
            .iter()
            .map(|&kind| {
                let s = stack(kind, &reference, &post);
                Batch::from_slice(backend, 1, s.k, s.rows * s.cols, &to_elements::<V>(&s.data))
            })
            .collect::<Result<Vec<_>>>()?;
        let (n, nu) = (post.n, reference.nu);
        let split = if n > MAX_DIM {
            Some(SplitPost::new(
                backend,
                mesh.num_triangles(),
                &stack(CoefficientKind::S, &reference, &post),
                &stack(CoefficientKind::R, &reference, &post),
                nu,
            )?)
        } else {
            None
        };
        let mean_rows = if split.is_some() { nu } else { n };
        let mut e0 = vec![V::from_f64(0.0); mean_rows * nu];
        e0[0] = V::from_f64(1.0);
        let mean = Batch::from_slice(backend, 1, mean_rows, nu, &e0)?;
        let vertices: Vec<f64> = mesh
            .triangles
            .iter()
            .flat_map(|t| t.iter().flat_map(|&v| mesh.points[v as usize]))
            .collect();
        let (gather_free, gather_dir) = topology.gathers(mesh);
        let nfree = topology.nfree();
        let mut diag_index = vec![0u32; nfree * nl * nl];
        let big = nfree * nl;
        for l in 0..nfree {
            for i in 0..nl {
                for j in 0..nl {
                    diag_index[l * nl * nl + i * nl + j] = (i + nl * l + big * j) as u32;
                }
            }
        }
        crate::sparse::to_u32(big * TRACE_SLOTS * nl, "hdg", "trace matrix values")?;
        let elem_dofs = backend.upload(&topology.elem_dofs)?;
        let mut rows = backend.alloc::<u32>(2 * nfree)?;
        // SAFETY: elem_dofs holds 3 count entries, rows 2 nfree, both on this backend.
        unsafe { backend.hdg_edge_elements(&elem_dofs, &mut rows)? };
        backend.synchronize()?;
        Ok(Hdg {
            backend: backend.clone(),
            params,
            mesh: mesh.clone(),
            stacks,
            mean,
            split,
            vertices: backend.upload(&to_elements::<V>(&vertices))?,
            flips: backend.upload(&topology.flips)?,
            elem_dofs,
            gather_free: backend.upload(&gather_free)?,
            gather_dir: backend.upload(&gather_dir)?,
            rows,
            diag_index: backend.upload(&diag_index)?,
            topology,
            setup_time: start.elapsed(),
            _s: PhantomData,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &HdgParams {
        &self.params
    }

    /// The mesh.
    pub fn mesh(&self) -> &TriMesh {
        &self.mesh
    }

    /// The trace unknowns.
    pub fn topology(&self) -> &TraceTopology {
        &self.topology
    }

    /// Trace unknowns: free edges times `P + 1`.
    pub fn dofs(&self) -> usize {
        self.topology.nfree() * self.topology.nl
    }

    /// The edge-to-element lists of the free edges as the device built them
    /// (`(e << 2) | j`, two per edge, [`NO_ELEMENT`](crate::mesh::tri::NO_ELEMENT) for a
    /// missing second).
    ///
    /// # Errors
    /// Device errors.
    pub fn trace_rows(&self) -> Result<Vec<u32>> {
        self.backend.download(&self.rows)
    }

    /// Time spent in [`new`](Self::new).
    pub fn setup_time(&self) -> Duration {
        self.setup_time
    }

    fn count(&self) -> usize {
        self.mesh.num_triangles()
    }

    fn nu(&self) -> usize {
        num_modes(self.params.degree)
    }

    fn nl(&self) -> usize {
        self.topology.nl
    }

    /// The coefficients of `kind` of every element, `1 x count x k`.
    fn coefficients(&self, kind: CoefficientKind) -> Result<Batch<B, V>> {
        let (count, k) = (self.count(), kind.width());
        let mut out = self.backend.alloc::<V>(count * k)?;
        // SAFETY: vertices 6 count, flips count, out count k, all on this backend.
        unsafe {
            self.backend.hdg_coefficients::<V, S>(
                kind,
                S::from_f64(self.params.tau),
                S::from_f64(self.params.lambda),
                &self.vertices,
                &self.flips,
                &mut out,
            )?
        };
        Ok(Batch::from_buffer(&self.backend, 1, count, k, out))
    }

    /// The element matrices of `kind` (`count x rows x cols`): one GEMM of the coefficients
    /// with the reference stack.
    fn element_matrices(
        &self,
        kind: CoefficientKind,
        rows: usize,
        cols: usize,
    ) -> Result<Batch<B, V>> {
        let c = self.coefficients(kind)?;
        self.combine(&c, &self.stacks[kind.code() as usize], rows, cols)
    }

    /// `count x rows x cols` element matrices from the coefficients `c` (`1 x count x k`)
    /// and a stack (`1 x k x rows·cols`).
    fn combine(
        &self,
        c: &Batch<B, V>,
        stack: &Batch<B, V>,
        rows: usize,
        cols: usize,
    ) -> Result<Batch<B, V>> {
        let count = self.count();
        let mut out = Batch::zeros(&self.backend, 1, count, rows * cols)?;
        gemm::<B, V, S>(&GemmParams::default(), c, stack, &mut out)?;
        out.reshape(count, rows, cols)
    }

    /// Converts a trace-precision buffer into the element storage precision.
    fn to_storage(&self, x: B::Buffer<S>, len: usize) -> Result<B::Buffer<V>> {
        let mut out = self.backend.alloc::<V>(len)?;
        // SAFETY: both buffers hold `len` values of this backend.
        unsafe { self.backend.convert(&x, &mut out)? };
        Ok(out)
    }

    /// The element trace vectors `λᵉ` (`count x 3Nλ x 1`) of free values `free` and
    /// Dirichlet values `dir` (either may be absent: zeros).
    fn element_traces(
        &self,
        free: Option<&Vector<B, S>>,
        dir: Option<&Vector<B, S>>,
    ) -> Result<Batch<B, V>> {
        let len = self.count() * 3 * self.nl();
        let mut out = self.backend.alloc::<S>(len)?;
        // SAFETY: gather checks every index against the source length; out has len values.
        unsafe {
            if let Some(x) = free {
                self.backend
                    .gather(x.buffer(), &self.gather_free, &mut out)?;
            }
            if let Some(x) = dir {
                self.backend
                    .gather(x.buffer(), &self.gather_dir, &mut out)?;
            }
        }
        let out = self.to_storage(out, len)?;
        Ok(Batch::from_buffer(
            &self.backend,
            self.count(),
            3 * self.nl(),
            1,
            out,
        ))
    }

    /// Stage "local": `Z⁻¹` by coefficient GEMM, its Cholesky factor, `Bᵀ`, `𝕌 = Z Bᵀ`
    /// (Cholesky solves), and `Kᵉ = C − (Bᵀ)ᵀ 𝕌`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming an element whose `Z⁻¹` is not positive definite;
    /// device errors.
    pub fn local_solvers(&self) -> Result<LocalSolvers<B, V>> {
        let (nu, w) = (self.nu(), 3 * self.nl());
        let zinv = self.element_matrices(CoefficientKind::Z, nu, nu)?;
        let (factor, status) = cholesky::<B, V, S>(zinv)?;
        if let Some(&(e, code)) = status.failures()?.first() {
            return Err(Error::InvalidArgument {
                op: "hdg local solvers",
                name: "mesh",
                reason: format!(
                    "the local matrix Z⁻¹ of triangle {e} is not positive definite in {} (pivot {code}); \
                     the triangle may be too thin for this precision",
                    S::DTYPE
                ),
            });
        }
        let bt = self.element_matrices(CoefficientKind::B, nu, w)?;
        let mut u_map = bt.try_clone()?;
        cholesky_solve::<B, V, S>(&factor, &mut u_map)?;
        let mut ke = self.element_matrices(CoefficientKind::C, w, w)?;
        let minus = GemmParams::new(S::from_f64(-1.0), S::ONE).transpose_a();
        gemm::<B, V, S>(&minus, &bt, &u_map, &mut ke)?;
        Ok(LocalSolvers {
            factor: Some(factor),
            u_map,
            ke: Some(ke),
        })
    }

    /// Stage "load": `fᵉ = ∫ f φ` (the host evaluates `f` at the quadrature points, one
    /// GEMM does the rest), `u_f = Z fᵉ`, the element trace loads `𝕌ᵀ fᵉ − Kᵉ λ_Dᵉ`, the
    /// Dirichlet values by edge L2 projection and the Neumann loads.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the mesh has Neumann edges and `problem.flux` is
    /// `None`, or when `local` was released; device errors.
    pub fn load(&self, local: &LocalSolvers<B, V>, problem: &Problem<'_>) -> Result<Load<B, V, S>> {
        let released = || Error::InvalidArgument {
            op: "hdg load",
            name: "local",
            reason: "the local solvers were released: load before release()".into(),
        };
        let factor = local.factor.as_ref().ok_or_else(released)?;
        let ke = local.ke.as_ref().ok_or_else(released)?;
        let (count, nu, nl) = (self.count(), self.nu(), self.nl());
        let q = host::load_quadrature(self.params.degree);
        let fq = host::rhs_at_points(&self.mesh, &q, problem.rhs);
        let fq = Batch::from_slice(&self.backend, 1, count, q.len(), &to_elements::<V>(&fq))?;
        let phi = host::weighted_basis(self.params.degree, &q);
        let phi = Batch::from_slice(&self.backend, 1, q.len(), nu, &to_elements::<V>(&phi))?;
        let mut fe = Batch::zeros(&self.backend, 1, count, nu)?;
        gemm::<B, V, S>(&GemmParams::default(), &fq, &phi, &mut fe)?;
        let fe = fe.reshape(count, nu, 1)?;
        let mut u_f = fe.try_clone()?;
        cholesky_solve::<B, V, S>(factor, &mut u_f)?;
        let mut g = Batch::zeros(&self.backend, count, 3 * nl, 1)?;
        gemm::<B, V, S>(
            &GemmParams::default().transpose_a(),
            &local.u_map,
            &fe,
            &mut g,
        )?;
        let lambda_d = host::dirichlet_values(&self.mesh, &self.topology, problem.dirichlet);
        let lambda_d = Vector::from_slice(&self.backend, &to_elements::<S>(&lambda_d))?;
        let lde = self.element_traces(None, Some(&lambda_d))?;
        gemm::<B, V, S>(
            &GemmParams::new(S::from_f64(-1.0), S::ONE),
            ke,
            &lde,
            &mut g,
        )?;
        let has_neumann = self.topology.neumann.iter().any(|&b| b);
        let neumann = match (has_neumann, problem.flux) {
            (false, _) => vec![0.0; self.dofs()],
            (true, Some(flux)) => host::neumann_values(&self.mesh, &self.topology, flux),
            (true, None) => {
                return Err(Error::InvalidArgument {
                    op: "hdg load",
                    name: "flux",
                    reason: "the mesh has Neumann edges: the problem needs a flux ∇u·n".into(),
                })
            }
        };
        let neumann = Vector::from_slice(&self.backend, &to_elements::<S>(&neumann))?;
        Ok(Load {
            u_f,
            g,
            lambda_d,
            neumann,
        })
    }

    /// Stage "assemble": `K` in block-ELL and `F = Σ gᵉ + b_N`, one unit per output value
    /// (no atomics), and the diagonal blocks for block-Jacobi.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `local` was released; device errors.
    pub fn assemble(
        &self,
        local: &LocalSolvers<B, V>,
        load: &Load<B, V, S>,
    ) -> Result<TraceSystem<B, V, S>> {
        let ke = local.ke.as_ref().ok_or_else(|| Error::InvalidArgument {
            op: "hdg assemble",
            name: "local",
            reason: "the local solvers were released: assemble before release()".into(),
        })?;
        let (nfree, nl) = (self.topology.nfree(), self.nl());
        let b = &self.backend;
        let mut values = b.alloc::<V>(nfree * nl * TRACE_SLOTS * nl)?;
        let mut neighbours = b.alloc::<u32>(nfree * TRACE_SLOTS)?;
        let mut rhs = b.alloc::<S>(nfree * nl)?;
        // SAFETY: the lengths of the HdgOps contract: ke count (3nl)², rows 2 nfree,
        // elem_dofs 3 count, values nfree nl · 5 nl, neighbours 5 nfree, rhs nfree nl.
        unsafe {
            b.hdg_assemble_matrix(
                nl,
                ke.buffer(),
                &self.rows,
                &self.elem_dofs,
                &mut values,
                &mut neighbours,
            )?;
            b.hdg_assemble_vector(nl, load.g.buffer(), &self.rows, &mut rhs)?;
        }
        let mut diagonal = b.alloc::<V>(nfree * nl * nl)?;
        // SAFETY: gather checks its indices; diagonal holds nfree nl² values.
        unsafe { b.gather(&values, &self.diag_index, &mut diagonal)? };
        // SAFETY: the assembly kernel writes neighbours below nfree or PAD, and the value
        // layout of BlockEll (nfree nl rows, 5 slots of nl).
        let k = unsafe {
            BlockEll::from_raw_parts(
                b,
                nfree,
                nl,
                TRACE_SLOTS,
                neighbours,
                values,
                self.topology.blocks(),
            )
        };
        // SAFETY: rhs was allocated by this backend.
        let mut rhs = unsafe { Vector::from_buffer(b, rhs) };
        rhs.axpy(S::ONE, &load.neumann)?;
        Ok(TraceSystem {
            k,
            rhs,
            diagonal: Batch::from_buffer(b, nfree, nl, nl, diagonal),
        })
    }

    /// Stage "solve": PCG on `K λ = F` with block-Jacobi (or Chebyshev over block-Jacobi).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a singular diagonal block; solver and device errors.
    /// Not converging is not an error: see the report.
    pub fn solve(
        &self,
        system: &TraceSystem<B, V, S>,
        params: &TraceSolverParams,
    ) -> Result<TraceSolution<B, S>> {
        let n = self.dofs();
        let mut lambda = Vector::zeros(&self.backend, n)?;
        let solver = SolverParams {
            rtol: params.rtol,
            max_iter: params.max_iter,
            progress: params.progress,
            check_every: params.check_every,
            ..SolverParams::default()
        };
        let jacobi = BlockJacobi::<B, S>::from_blocks(&system.diagonal)?;
        let report = match params.preconditioner {
            TracePreconditioner::BlockJacobi => pcg(
                &system.k,
                Some(&jacobi as &dyn Preconditioner<B, S>),
                &system.rhs,
                &mut lambda,
                &solver,
            )?,
            TracePreconditioner::Chebyshev { degree } => {
                let cheb = Chebyshev::with_preconditioner(
                    &self.backend,
                    &system.k,
                    &jacobi,
                    ChebyshevParams {
                        degree,
                        ..ChebyshevParams::default()
                    },
                )?;
                pcg(
                    &system.k,
                    Some(&cheb as &dyn Preconditioner<B, S>),
                    &system.rhs,
                    &mut lambda,
                    &solver,
                )?
            }
        };
        Ok(TraceSolution { lambda, report })
    }

    /// Stage "recover": from the trace values `lambda` on the free edges (the solution of
    /// [`solve`](Self::solve)), `u = u_f + 𝕌 λᵉ`, then `q = Qλ λᵉ + Qu u` with `Qλ`, `Qu`
    /// generated by coefficient GEMMs (not stored between stages).
    ///
    /// # Errors
    /// [`Error::DimensionMismatch`] when `lambda` does not have [`dofs`](Self::dofs)
    /// values; device errors.
    pub fn recover(
        &self,
        local: &LocalSolvers<B, V>,
        load: &Load<B, V, S>,
        lambda: &Vector<B, S>,
    ) -> Result<Fields<B, V>> {
        crate::error::check_len("hdg recover", "lambda", self.dofs(), lambda.len())?;
        let (count, nu, w) = (self.count(), self.nu(), 3 * self.nl());
        let lam = self.element_traces(Some(lambda), Some(&load.lambda_d))?;
        let add = GemmParams::new(S::ONE, S::ONE);
        let mut u = load.u_f.try_clone()?;
        gemm::<B, V, S>(&add, &local.u_map, &lam, &mut u)?;
        let mut q = Batch::zeros(&self.backend, count, 2 * nu, 1)?;
        {
            let q_lambda = self.element_matrices(CoefficientKind::QLambda, 2 * nu, w)?;
            gemm::<B, V, S>(&GemmParams::default(), &q_lambda, &lam, &mut q)?;
        }
        let q_u = self.element_matrices(CoefficientKind::QU, 2 * nu, nu)?;
        gemm::<B, V, S>(&add, &q_u, &u, &mut q)?;
        Ok(Fields { u, q, u_star: None })
    }

    /// Stage "post-process": `u*` of degree `P + 1` with `(∇u*, ∇w) = (q, ∇w)` for every
    /// `w` of degree `P + 1` and the mean of `u` (Cockburn, Gopalakrishnan & Sayas 2010):
    /// a batched Cholesky of the element stiffness matrices (with the mean constraint on
    /// the constant mode) and one solve.
    ///
    /// Where `N(P+1)` exceeds the batched limit [`MAX_DIM`] (P = 9: 66 modes), the system
    /// is split into the modes of degree ≤ P and those of degree P + 1 and solved by block
    /// elimination (the Schur complement of the first block), every block within the limit.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming a triangle whose matrix is not positive definite in
    /// the working precision; device errors.
    pub fn post_process(&self, fields: &mut Fields<B, V>) -> Result<()> {
        let (count, nu) = (self.count(), self.nu());
        let n = num_modes(self.params.degree + 1);
        if let Some(split) = &self.split {
            fields.u_star = Some(self.post_process_split(split, fields)?);
            return Ok(());
        }
        let s = self.element_matrices(CoefficientKind::S, n, n)?;
        let (factor, status) = cholesky::<B, V, S>(s)?;
        check_spd(&status, "post-processing matrix")?;
        let r = self.element_matrices(CoefficientKind::R, n, 2 * nu)?;
        let mut us = Batch::zeros(&self.backend, count, n, 1)?;
        gemm::<B, V, S>(&GemmParams::default(), &r, &fields.q, &mut us)?;
        gemm::<B, V, S>(
            &GemmParams::new(S::ONE, S::ONE),
            &self.mean,
            &fields.u,
            &mut us,
        )?;
        cholesky_solve::<B, V, S>(&factor, &mut us)?;
        fields.u_star = Some(us);
        Ok(())
    }

    /// Uses the post-processing by blocks at any degree (tests compare it with the direct
    /// solve).
    #[cfg(test)]
    pub(super) fn force_split_post_process(&mut self) -> Result<()> {
        let (reference, post) = (
            ReferenceMatrices::new(self.params.degree),
            PostProcessMatrices::new(self.params.degree),
        );
        let nu = reference.nu;
        self.split = Some(SplitPost::new(
            &self.backend,
            self.count(),
            &stack(CoefficientKind::S, &reference, &post),
            &stack(CoefficientKind::R, &reference, &post),
            nu,
        )?);
        let mut e0 = vec![V::from_f64(0.0); nu * nu];
        e0[0] = V::from_f64(1.0);
        self.mean = Batch::from_slice(&self.backend, 1, nu, nu, &e0)?;
        Ok(())
    }

    /// The post-processing by blocks: `[A B; Bᵀ C] [x₁; x₂] = [b₁; b₂]` with `A` over the
    /// `N(P)` modes of degree ≤ P (the constant mode and its mean constraint among them) and
    /// `C` over the new modes; `Y = A⁻¹B`, `Σ = C − BᵀY`, `y₁ = A⁻¹b₁`,
    /// `x₂ = Σ⁻¹(b₂ − Bᵀy₁)`, `x₁ = y₁ − Y x₂`.
    fn post_process_split(
        &self,
        split: &SplitPost<B, V>,
        fields: &Fields<B, V>,
    ) -> Result<Batch<B, V>> {
        let (count, nu) = (self.count(), self.nu());
        let (n1, n2) = (split.n1, split.n2);
        let cs = self.coefficients(CoefficientKind::S)?;
        let a = self.combine(&cs, &split.s11, n1, n1)?;
        let b = self.combine(&cs, &split.s12, n1, n2)?;
        let mut schur = self.combine(&cs, &split.s22, n2, n2)?;
        drop(cs);
        let (fa, status) = cholesky::<B, V, S>(a)?;
        check_spd(&status, "post-processing matrix (degree ≤ P block)")?;
        let mut y = b.try_clone()?;
        cholesky_solve::<B, V, S>(&fa, &mut y)?;
        let minus = GemmParams::new(S::from_f64(-1.0), S::ONE);
        gemm::<B, V, S>(&minus.transpose_a(), &b, &y, &mut schur)?;
        let (fs, status) = cholesky::<B, V, S>(schur)?;
        check_spd(&status, "post-processing matrix (Schur complement)")?;
        let cr = self.coefficients(CoefficientKind::R)?;
        let mut x1 = Batch::zeros(&self.backend, count, n1, 1)?;
        gemm::<B, V, S>(
            &GemmParams::default(),
            &self.combine(&cr, &split.r1, n1, 2 * nu)?,
            &fields.q,
            &mut x1,
        )?;
        gemm::<B, V, S>(
            &GemmParams::new(S::ONE, S::ONE),
            &self.mean,
            &fields.u,
            &mut x1,
        )?;
        let mut x2 = Batch::zeros(&self.backend, count, n2, 1)?;
        gemm::<B, V, S>(
            &GemmParams::default(),
            &self.combine(&cr, &split.r2, n2, 2 * nu)?,
            &fields.q,
            &mut x2,
        )?;
        cholesky_solve::<B, V, S>(&fa, &mut x1)?;
        gemm::<B, V, S>(&minus.transpose_a(), &b, &x1, &mut x2)?;
        cholesky_solve::<B, V, S>(&fs, &mut x2)?;
        gemm::<B, V, S>(&minus, &y, &x2, &mut x1)?;
        let n = n1 + n2;
        let mut out = self.backend.alloc::<V>(count * n)?;
        // SAFETY: gather checks every index against its source (out-of-range entries are
        // left alone: each gather fills its own block); out holds count n values.
        unsafe {
            self.backend.gather(x1.buffer(), &split.place1, &mut out)?;
            self.backend.gather(x2.buffer(), &split.place2, &mut out)?;
        }
        Ok(Batch::from_buffer(&self.backend, count, n, 1, out))
    }
}

/// An error naming the first triangle whose matrix `what` failed its Cholesky factorisation.
fn check_spd(status: &crate::batched::Status<impl Backend>, what: &str) -> Result<()> {
    match status.failures()?.first() {
        Some(&(e, _)) => Err(Error::InvalidArgument {
            op: "hdg post-process",
            name: "mesh",
            reason: format!("the {what} of triangle {e} is not positive definite"),
        }),
        None => Ok(()),
    }
}

/// The reference stacks and placements of the post-processing by blocks (see
/// [`Hdg::post_process`]).
struct SplitPost<B: Backend, V: Element> {
    n1: usize,
    n2: usize,
    s11: Batch<B, V>,
    s12: Batch<B, V>,
    s22: Batch<B, V>,
    r1: Batch<B, V>,
    r2: Batch<B, V>,
    /// `u*[e n + j] = x₁[e n₁ + j]` for `j < n₁` (else an out-of-range index).
    place1: B::Buffer<u32>,
    /// `u*[e n + j] = x₂[e n₂ + j − n₁]` for `j ≥ n₁`.
    place2: B::Buffer<u32>,
}

impl<B: Backend, V: Element> SplitPost<B, V> {
    fn new(backend: &B, count: usize, s: &Stack, r: &Stack, nu: usize) -> Result<Self> {
        let n = s.rows;
        let (n1, n2) = (nu, n - nu);
        let block = |st: &Stack, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
            let (nr, nc) = (rows.len(), cols.len());
            let mut data = Vec::with_capacity(st.k * nr * nc);
            for c in 0..st.k {
                for i in rows.clone() {
                    for j in cols.clone() {
                        data.push(V::from_f64(st.data[(c * st.rows + i) * st.cols + j]));
                    }
                }
            }
            Batch::from_slice(backend, 1, st.k, nr * nc, &data)
        };
        crate::sparse::to_u32(count * n, "hdg", "post-processing values")?;
        let (mut p1, mut p2) = (vec![u32::MAX; count * n], vec![u32::MAX; count * n]);
        for e in 0..count {
            for j in 0..n {
                if j < n1 {
                    p1[e * n + j] = (e * n1 + j) as u32;
                } else {
                    p2[e * n + j] = (e * n2 + j - n1) as u32;
                }
            }
        }
        Ok(SplitPost {
            n1,
            n2,
            s11: block(s, 0..n1, 0..n1)?,
            s12: block(s, 0..n1, n1..n)?,
            s22: block(s, n1..n, n1..n)?,
            r1: block(r, 0..n1, 0..r.cols)?,
            r2: block(r, n1..n, 0..r.cols)?,
            place1: backend.upload(&p1)?,
            place2: backend.upload(&p2)?,
        })
    }
}

/// An exact solution, for the errors: `u` and its gradient.
#[derive(Clone, Copy)]
pub struct Exact<'a> {
    /// `u(x, y)`.
    pub u: Field<'a>,
    /// `∇u(x, y)`.
    pub grad: &'a (dyn Fn(f64, f64) -> [f64; 2] + Sync),
}

/// L2 errors of the recovered fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct L2Errors {
    /// `‖u − u_h‖`.
    pub u: f64,
    /// `‖∇u − q_h‖`.
    pub q: f64,
    /// `‖u − u*_h‖`, when post-processed.
    pub u_star: Option<f64>,
}

/// Everything a run produced.
pub struct Solution<B: Backend, V: Element, S: Scalar> {
    /// The recovered fields.
    pub fields: Fields<B, V>,
    /// The trace solution and its solver report.
    pub trace: TraceSolution<B, S>,
    /// Stage times.
    pub times: StageTimes,
}

impl<B: Backend, V: Scalar, S: Scalar> Hdg<B, V, S> {
    /// Every stage in order (local, load, assemble, solve, recover, and the post-processing
    /// when `post_process`), the device synchronised after each for the times.
    ///
    /// # Errors
    /// Those of the stages.
    pub fn run(
        &self,
        problem: &Problem<'_>,
        solver: &TraceSolverParams,
        post_process: bool,
    ) -> Result<Solution<B, V, S>> {
        let mut times = StageTimes {
            setup: self.setup_time,
            ..StageTimes::default()
        };
        let local = &mut self.timed(&mut times.local, || self.local_solvers())?;
        let load = self.timed(&mut times.load, || self.load(local, problem))?;
        let system = self.timed(&mut times.assemble, || self.assemble(local, &load))?;
        local.release();
        let trace = self.timed(&mut times.solve, || self.solve(&system, solver))?;
        drop(system);
        let mut fields = self.timed(&mut times.recover, || {
            self.recover(local, &load, &trace.lambda)
        })?;
        if post_process {
            self.timed(&mut times.post_process, || self.post_process(&mut fields))?;
        }
        Ok(Solution {
            fields,
            trace,
            times,
        })
    }

    /// The fields sampled for ParaView: each element cut into `refine²` sub-triangles
    /// with its own points (the fields are discontinuous), point data `u`, `q` (3
    /// components, `z = 0`) and `u_star` when post-processed, cell data `element`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `refine` outside 1..=32; device errors.
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
        let mut points = Vec::with_capacity(count * np);
        for e in 0..count {
            let v = host::triangle(&self.mesh, e);
            points.extend(reference.iter().map(|&[r, s]| {
                let [x, y] = host::map(&v, r, s);
                [x, y, 0.0]
            }));
        }
        let connectivity = (0..count)
            .flat_map(|e| sub.iter().flat_map(move |t| t.map(|v| v + (e * np) as u32)))
            .collect();
        let mut grid = UnstructuredGrid::new(points, VtkCell::Triangle, connectivity)?;
        let to_f64 = |b: &Batch<B, V>| -> Result<Vec<f64>> {
            Ok(b.to_vec()?.iter().map(|v| v.as_f64()).collect())
        };
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

    /// Runs `stage`, synchronises the device and stores the wall time in `slot`.
    fn timed<T>(&self, slot: &mut Duration, stage: impl FnOnce() -> Result<T>) -> Result<T> {
        let start = Instant::now();
        let out = stage()?;
        self.backend.synchronize()?;
        *slot = start.elapsed();
        Ok(out)
    }

    /// The L2 errors of `fields` against `exact` (on the host, by quadrature of degree
    /// `2P + 8`).
    ///
    /// # Errors
    /// Device errors (downloading the fields).
    pub fn errors(&self, fields: &Fields<B, V>, exact: &Exact<'_>) -> Result<L2Errors> {
        let p = self.params.degree;
        let to_f64 = |b: &Batch<B, V>| -> Result<Vec<f64>> {
            Ok(b.to_vec()?.iter().map(|v| v.as_f64()).collect())
        };
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
}
