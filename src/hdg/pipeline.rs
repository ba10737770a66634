//! The stages of the HDG solve, each a handful of batched device operations. See the
//! [module docs](super) for the equations.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use crate::batched::{cholesky, cholesky_solve, gemm, Batch, GemmParams};
use crate::bundle::Backend;
use crate::error::{Error, Result};
use crate::hdg::coefficients::CoefficientKind;
use crate::hdg::host;
use crate::hdg::launch::HdgMesh;
use crate::hdg::ops::HdgOps;
use crate::hdg::params::{HdgParams, Problem, TracePreconditioner, TraceSolverParams};
use crate::hdg::post_ops::{post_process_operators, SplitPost};
use crate::hdg::reference::{num_modes, PostProcessMatrices, ReferenceMatrices};
use crate::hdg::stacks::stack;
use crate::hdg::stages::{
    Fields, Load, LocalSolvers, Solution, StageTimes, TraceSolution, TraceSystem,
};
use crate::hdg::topology::TraceTopology;
use crate::mesh::tri::TriMesh;
use crate::scalar::{Element, Scalar};
use crate::solver::params::SolverParams;
use crate::solver::precond::chebyshev::{Chebyshev, ChebyshevParams};
use crate::solver::precond::jacobi::BlockJacobi;
use crate::solver::{pcg, Preconditioner};
use crate::solver::{Amg, AmgParams, NearNull};
use crate::vector::Vector;

/// The HDG discretisation of a mesh on a backend: element storage `V` (local matrices and
/// `K`), arithmetic and trace vectors `S` (`f64` with `V = f32` is the mixed precision).
pub struct Hdg<B: Backend + HdgOps, V: Scalar, S: Scalar> {
    pub(super) backend: B,
    pub(super) params: HdgParams,
    pub(super) mesh: TriMesh,
    pub(super) topology: TraceTopology,
    pub(super) stacks: Vec<Batch<B, V>>,
    /// `e0 e0ᵀ`, `N(P+1) x Nu` (`N(P) x Nu` when split): copies the mean of `u` into the
    /// post-processing.
    pub(super) mean: Batch<B, V>,
    /// The post-processing by blocks, where `N(P+1)` exceeds [`MAX_DIM`].
    pub(super) split: Option<SplitPost<B, V>>,
    /// The mesh and its trace topology on the device.
    pub(super) device: HdgMesh<B, V>,
    pub(super) setup_time: Duration,
    pub(super) _s: PhantomData<S>,
}

fn to_elements<V: Element>(values: &[f64]) -> Vec<V> {
    values.iter().map(|&v| V::from_f64(v)).collect()
}

impl<B: Backend + HdgOps, V: Scalar, S: Scalar> Hdg<B, V, S> {
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
        let (split, mean) =
            post_process_operators(backend, mesh.num_triangles(), &reference, &post, false)?;
        let device = HdgMesh::new(backend, mesh, &topology)?;
        backend.synchronize()?;
        Ok(Hdg {
            backend: backend.clone(),
            params,
            mesh: mesh.clone(),
            stacks,
            mean,
            split,
            device,
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
        self.device.trace_rows()
    }

    /// Time spent in [`new`](Self::new).
    pub fn setup_time(&self) -> Duration {
        self.setup_time
    }

    pub(super) fn count(&self) -> usize {
        self.mesh.num_triangles()
    }

    pub(super) fn nu(&self) -> usize {
        num_modes(self.params.degree)
    }

    pub(super) fn nl(&self) -> usize {
        self.topology.nl
    }

    /// The coefficients of `kind` of every element, `1 x count x k`.
    pub(super) fn coefficients(&self, kind: CoefficientKind) -> Result<Batch<B, V>> {
        let (tau, lambda) = (self.params.tau, self.params.lambda);
        self.device
            .coefficients(kind, S::from_f64(tau), S::from_f64(lambda))
    }

    /// The element matrices of `kind` (`count x rows x cols`): one GEMM of the coefficients
    /// with the reference stack.
    pub(super) fn element_matrices(
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
    pub(super) fn combine(
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

    /// The element trace vectors `λᵉ` (`count x 3Nλ x 1`) of free values `free` and
    /// Dirichlet values `dir` (either may be absent: zeros).
    fn element_traces(
        &self,
        free: Option<&Vector<B, S>>,
        dir: Option<&Vector<B, S>>,
    ) -> Result<Batch<B, V>> {
        self.device.element_traces(free, dir)
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
        let mut system = self.device.assemble::<S>(ke, &load.g)?;
        system.rhs.axpy(S::ONE, &load.neumann)?;
        Ok(system)
    }

    /// Stage "solve": PCG on `K λ = F` with block-Jacobi (or Chebyshev over block-Jacobi).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a singular diagonal block (block-Jacobi, Chebyshev) or a
    /// trace matrix AMG refuses; solver and device errors.
    /// Not converging is not an error: see the report.
    pub fn solve(
        &self,
        system: &TraceSystem<B, V, S>,
        params: &TraceSolverParams,
    ) -> Result<TraceSolution<B, S>> {
        let n = self.dofs();
        let mut lambda = Vector::zeros(&self.backend, n)?;
        let solver = SolverParams {
            stop: params.stop,
            progress: params.progress,
            check_every: params.check_every,
            ..SolverParams::default()
        };
        // Block-Jacobi (alone or inside Chebyshev); AMG does without it.
        let jacobi = || BlockJacobi::<B, S>::from_blocks(&system.diagonal);
        let mut amg_info = None;
        // Auto: AMG where it was faster, and where the backend has the f64 its setup needs.
        let auto = params.preconditioner == TracePreconditioner::Auto;
        let preconditioner = match params.preconditioner {
            TracePreconditioner::Auto if !self.backend.supports(crate::DType::F64) => {
                TracePreconditioner::BlockJacobi
            }
            other => other.resolve(n),
        };
        let mut run = |pre: &dyn Preconditioner<B, S>| {
            pcg(&system.k, Some(pre), &system.rhs, &mut lambda, &solver)
        };
        let report = match preconditioner {
            TracePreconditioner::Auto => unreachable!("resolved above"),
            TracePreconditioner::BlockJacobi => run(&jacobi()?)?,
            TracePreconditioner::Chebyshev { degree } => {
                let jacobi = jacobi()?;
                let cheb = Chebyshev::with_preconditioner(
                    &self.backend,
                    &system.k,
                    &jacobi,
                    ChebyshevParams {
                        degree,
                        ..ChebyshevParams::default()
                    },
                )?;
                run(&cheb)?
            }
            TracePreconditioner::Amg {
                theta,
                smoother,
                cycle,
                max_coarse,
            } => {
                let params = AmgParams {
                    theta,
                    smoother,
                    cycle,
                    max_coarse,
                    near_null: NearNull::Strided(system.k.block_size()),
                    improve_candidates: 0,
                    ..AmgParams::default()
                };
                // K as CSR in f64 for the setup, made on the device (freed after it); the
                // finest level applies K as it is (block-ELL), no second copy.
                let setup = crate::sparse::algebra::block_ell_to_csr(&system.k)
                    .and_then(|k| Amg::<B, S>::from_device_with_operator(k, &system.k, &params));
                match setup {
                    Ok(amg) => {
                        amg_info = Some(amg.info().clone());
                        run(&amg)?
                    }
                    // Auto's AMG does not fit the device: block-Jacobi, which needs no more
                    // than K (asked for by name, AMG's error is the caller's).
                    Err(Error::ResourceLimit { .. }) if auto => run(&jacobi()?)?,
                    Err(e) => return Err(e),
                }
            }
        };
        Ok(TraceSolution {
            lambda,
            report,
            amg: amg_info,
        })
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
}

impl<B: Backend + HdgOps, V: Scalar, S: Scalar> Hdg<B, V, S> {
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
        self.run_observed(problem, solver, post_process, &mut |_, _| {})
    }

    /// As [`run`](Self::run), calling `observe(stage, false)` when a stage starts and
    /// `observe(stage, true)` when it has ended (stage names as in [`StageTimes::stages`]):
    /// for progress displays.
    ///
    /// # Errors
    /// Those of the stages.
    pub fn run_observed(
        &self,
        problem: &Problem<'_>,
        solver: &TraceSolverParams,
        post_process: bool,
        observe: &mut dyn FnMut(&'static str, bool),
    ) -> Result<Solution<B, V, S>> {
        let mut times = StageTimes {
            setup: self.setup_time,
            ..StageTimes::default()
        };
        let o = observe;
        let local = &mut self.timed("local", &mut times.local, o, || self.local_solvers())?;
        let load = self.timed("load", &mut times.load, o, || self.load(local, problem))?;
        let system = self.timed("assemble", &mut times.assemble, o, || {
            self.assemble(local, &load)
        })?;
        local.release();
        let trace = self.timed("solve", &mut times.solve, o, || self.solve(&system, solver))?;
        drop(system);
        let mut fields = self.timed("recover", &mut times.recover, o, || {
            self.recover(local, &load, &trace.lambda)
        })?;
        if post_process {
            self.timed("post_process", &mut times.post_process, o, || {
                self.post_process(&mut fields)
            })?;
        }
        Ok(Solution {
            fields,
            trace,
            times,
        })
    }

    /// Runs stage `name`: announced to `observe`, run, the device synchronised, its wall
    /// time stored in `slot`.
    fn timed<T>(
        &self,
        name: &'static str,
        slot: &mut Duration,
        observe: &mut dyn FnMut(&'static str, bool),
        stage: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        observe(name, false);
        let start = Instant::now();
        let out = stage()?;
        self.backend.synchronize()?;
        *slot = start.elapsed();
        observe(name, true);
        Ok(out)
    }
}

/// The constants of the trace space as a near-null-space vector of `n` trace values in
/// edge blocks of `block` (the first, constant, orthonormal Legendre mode of every edge):
/// `1` at every block's first value, `0` elsewhere. The trace solve's AMG takes it.
pub fn trace_constants(n: usize, block: usize) -> Vec<f64> {
    let mut constants = vec![0.0; n];
    constants
        .iter_mut()
        .step_by(block.max(1))
        .for_each(|v| *v = 1.0);
    constants
}
