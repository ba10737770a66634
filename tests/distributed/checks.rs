//! The checks every rank runs under `mpirun` (see `main.rs`).

use std::rc::Rc;

use galerkin::distributed::{
    self, BlockJacobi, Communicator, DistCsr, DistMatrix, DistPreconditioner, DistVector,
    HaloRoute, InnerCg, Partition, PartitionMethod,
};
use galerkin::random::Rng;
use galerkin::solver::{
    bicgstab, gmres, mixed_solve, pcg, Amg, AmgParams, InnerSolver, Jacobi, MixedOuter,
    MixedParams, Preconditioner, Progress, SolveReport, SolverParams, Stopping,
};
use galerkin::sparse::{Csr, SparseMatrix};
use galerkin::{Backend, Cpu, Element, Error, Scalar, Vector};

fn env(name: &str) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} must be set by the launcher"))
}

/// Prints on rank 0.
fn say(comm: &Communicator, s: &str) {
    if comm.is_root() {
        println!("  {s}");
    }
}

pub fn run() {
    let comm = Communicator::mpi().expect("MPI initializes");
    std::panic::set_hook(Box::new(|info| {
        eprintln!("[rank panic] {info}");
        Communicator::abort(1);
    }));
    let (n, seed) = (env("GALERKIN_DIST_N") as usize, env("GALERKIN_DIST_SEED"));
    let a = galerkin::fvm::tpfa_tets_structured(n, 0.15, seed % 1000).unwrap();
    say(
        &comm,
        &format!("{} ranks, FVM {} rows", comm.size(), a.nrows()),
    );
    assert_eq!(
        comm.sum_scalar(comm.rank() as f64),
        (comm.size() * (comm.size() - 1) / 2) as f64
    );

    let cpu = Cpu::new();
    check_device_route_refused(&comm, &cpu, &a);
    check_maxwell(&comm, &cpu, HaloRoute::Auto);
    check_maxwell_refusals(&comm, &cpu);
    for (name, part) in partitions(&comm, &a) {
        let d = DistCsr::from_global(&comm, &a, Rc::new(part)).unwrap();
        let q = d.quality();
        say(&comm, &format!("partition {name}: {q}"));
        check_spmv::<Cpu, f64, f64>(&cpu, &a, &d, seed, 1e-13);
        check_spmv::<Cpu, f32, f64>(&cpu, &a, &d, seed, 1e-6);
        check_spmv::<Cpu, f32, f32>(&cpu, &a, &d, seed, 1e-5);
        check_solvers(&comm, &cpu, &a, &d, name != "uneven");
    }

    #[cfg(feature = "wgpu")]
    match galerkin::Wgpu::new() {
        Ok(w) => {
            say(&comm, &format!("wgpu: {}", galerkin::BackendCore::info(&w)));
            let d = distributed::distribute(&comm, &a, PartitionMethod::Metis).unwrap();
            check_spmv::<galerkin::Wgpu, f64, f64>(&w, &a, &d, seed, 1e-13);
            check_spmv::<galerkin::Wgpu, f32, f32>(&w, &a, &d, seed, 1e-5);
            check_solvers(&comm, &w, &a, &d, false);
            check_maxwell(&comm, &w, HaloRoute::Auto);
        }
        Err(e) => {
            let required = std::env::var("GALERKIN_REQUIRE_BACKENDS").unwrap_or_default();
            assert!(
                !required.contains("wgpu"),
                "wgpu is required but unavailable: {e}"
            );
            say(&comm, &format!("SKIPPING wgpu ranks: {e}"));
        }
    }

    // CUDA ranks (several may share one GPU), where the feature and a device are there.
    #[cfg(feature = "cuda")]
    match galerkin::Cuda::new() {
        Ok(c) => {
            say(&comm, &format!("cuda: {}", galerkin::BackendCore::info(&c)));
            let d = distributed::distribute(&comm, &a, PartitionMethod::Metis).unwrap();
            check_spmv::<galerkin::Cuda, f64, f64>(&c, &a, &d, seed, 1e-13);
            check_spmv::<galerkin::Cuda, f32, f64>(&c, &a, &d, seed, 1e-6);
            check_spmv::<galerkin::Cuda, f32, f32>(&c, &a, &d, seed, 1e-5);
            check_solvers(&comm, &c, &a, &d, true);
            check_maxwell(&comm, &c, HaloRoute::Auto);
        }
        Err(e) => say(&comm, &format!("SKIPPING cuda ranks: {e}")),
    }
    #[cfg(feature = "cuda")]
    check_device_halo(&comm, &a, seed);

    check_matrix_market(&comm, &cpu);
    check_read_errors(&comm, seed);
    comm.agree(Ok(())).unwrap();
    say(&comm, "dist checks passed");
}

/// CPU ranks cannot take the device route: asking for it is the same error on every rank,
/// naming the rank and why; `Auto` goes through host memory. One rank has no halo at all.
fn check_device_route_refused(comm: &Communicator, cpu: &Cpu, a: &Csr<Cpu, f64>) {
    let d = distributed::distribute(comm, a, PartitionMethod::Contiguous).unwrap();
    let auto = DistMatrix::<Cpu, f64>::new(cpu, &d, None).unwrap();
    assert_eq!(auto.halo_route(), HaloRoute::Host);
    assert_eq!(auto.halo_transport(), "host memory");
    let device = DistMatrix::<Cpu, f64>::with_halo(cpu, &d, None, HaloRoute::Device);
    if comm.size() == 1 {
        assert_eq!(device.unwrap().halo_route(), HaloRoute::Host);
    } else {
        let e = device.unwrap_err();
        assert!(
            matches!(e, Error::Unsupported { .. })
                && e.to_string()
                    .contains("rank 0 cannot: it runs on the cpu backend"),
            "{e}"
        );
    }
    assert_eq!("nccl".parse::<HaloRoute>().unwrap_err().to_string(), "invalid argument `route` to HaloRoute::from_str: `nccl` is not a halo route: expected `auto`, `host` or `device`");
    say(
        comm,
        "device halo route: refused on CPU ranks, with the reason",
    );
}

/// CUDA ranks on GPUs of their own (as many GPUs on the node as ranks): the halo device to
/// device through NCCL gives the host route's products and solver reports bit for bit.
#[cfg(feature = "cuda")]
fn check_device_halo(comm: &Communicator, a: &Csr<Cpu, f64>, seed: u64) {
    use galerkin::{BackendKind, BackendTask, FullBackend};
    let count = galerkin::device_count(BackendKind::Cuda);
    let own = comm.size() > 1 && count >= comm.size();
    if !comm
        .all_gather(f64::from(u8::from(own)))
        .iter()
        .all(|&f| f == 1.0)
    {
        say(
            comm,
            &format!(
                "SKIPPING the device halo: {} ranks, {count} CUDA device(s) on the node",
                comm.size()
            ),
        );
        return;
    }
    struct Routes<'a> {
        comm: &'a Communicator,
        a: &'a Csr<Cpu, f64>,
        seed: u64,
    }
    impl BackendTask for Routes<'_> {
        type Output = ();
        fn run<B: FullBackend>(self, backend: B) -> galerkin::Result<()> {
            check_routes(self.comm, &backend, self.a, self.seed);
            Ok(())
        }
    }
    galerkin::with_backend_on(
        BackendKind::Cuda,
        comm.node_rank() % count,
        Routes { comm, a, seed },
    )
    .unwrap();
}

#[cfg(feature = "cuda")]
fn check_routes<B: Backend>(comm: &Communicator, backend: &B, a: &Csr<Cpu, f64>, seed: u64) {
    let d = distributed::distribute(comm, a, PartitionMethod::Metis).unwrap();
    let m = DistMatrix::<B, f64>::with_halo(backend, &d, None, HaloRoute::Device).unwrap();
    assert_eq!(m.halo_route(), HaloRoute::Device);
    say(comm, &format!("device halo through {}", m.halo_transport()));
    let auto = DistMatrix::<B, f64>::new(backend, &d, None).unwrap();
    assert_eq!(
        auto.halo_route(),
        HaloRoute::Device,
        "auto takes the device route"
    );
    let host = check_spmv_on::<B, f64, f64>(backend, a, &d, seed, 1e-13, HaloRoute::Host);
    let dev = check_spmv_on::<B, f64, f64>(backend, a, &d, seed, 1e-13, HaloRoute::Device);
    assert_eq!(
        host.map(bits),
        dev.map(bits),
        "f64 SpMV: device halo differs from host halo"
    );
    let host = check_spmv_on::<B, f32, f32>(backend, a, &d, seed, 1e-5, HaloRoute::Host);
    let dev = check_spmv_on::<B, f32, f32>(backend, a, &d, seed, 1e-5, HaloRoute::Device);
    assert_eq!(
        host.map(bits),
        dev.map(bits),
        "f32 SpMV: device halo differs from host halo"
    );
    // PCG-Jacobi: the same iterations and residuals, bit for bit.
    let n = a.nrows();
    let bg = random_vec(seed ^ 0xb0b, n);
    let solve = |route| {
        let m = DistMatrix::<B, f64>::with_halo(backend, &d, None, route).unwrap();
        let bj = jacobi_block::<B, f64>(backend, &d);
        let b = DistVector::from_global(backend, d.layout(), &bg).unwrap();
        let mut x = DistVector::zeros(backend, d.layout()).unwrap();
        let r = distributed::cg(
            &m,
            Some(&bj as &dyn DistPreconditioner<B, f64>),
            &b,
            &mut x,
            &quiet(1e-10),
        )
        .unwrap();
        (r, x.gather(0).unwrap(), m.halo_transport())
    };
    let (rh, xh, _) = solve(HaloRoute::Host);
    let (rd, xd, transport) = solve(HaloRoute::Device);
    assert!(rh.converged() && rh.iterations > 5, "{rh}");
    assert_eq!(rh.iterations, rd.iterations);
    let hist = |r: &SolveReport| {
        r.residual_history
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        hist(&rh),
        hist(&rd),
        "PCG residuals: device halo differs from host halo"
    );
    let xbits = |x: Option<Vec<f64>>| x.map(|x| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    assert_eq!(xbits(xh), xbits(xd));
    say(
        comm,
        &format!(
            "device halo: SpMV f64/f32 and PCG ({} iterations) equal the host halo's bit for \
             bit (after the solve: {transport})",
            rd.iterations
        ),
    );
}

/// The bits of values (exact comparisons).
#[cfg(feature = "cuda")]
fn bits<S: Scalar>(v: (Vec<S>, Vec<S>)) -> Vec<u64> {
    v.0.iter()
        .chain(&v.1)
        .map(|x| x.as_f64().to_bits())
        .collect()
}

/// DG Maxwell over the ranks (METIS on the face graph, order 3, a perturbed cube, upwind
/// flux, 10 RK4 steps) against one process on the same backend: the gathered fields, the
/// energy and the L2 error agree to round-off. Returns the gathered fields on rank 0.
fn check_maxwell<B: Backend + galerkin::dg::DgOps>(
    comm: &Communicator,
    backend: &B,
    route: HaloRoute,
) -> Option<[Vec<f64>; 6]> {
    use galerkin::dg::{cavity_mode, Flux, Maxwell, TetMesh};
    use galerkin::distributed::DistMaxwell;
    let mesh = TetMesh::unit_cube(3, 0.1, 5).unwrap();
    let (order, mode, steps) = (3, [1, 1, 0], 10);
    let mut single = Maxwell::<B, f64>::new(backend, &mesh, order, Flux::Upwind).unwrap();
    single.set_fields(|x| cavity_mode(mode, 0.0, x)).unwrap();
    let method = if comm.size() > 1 {
        PartitionMethod::Metis
    } else {
        PartitionMethod::Contiguous
    };
    let mut dist =
        DistMaxwell::<B, f64>::new(backend, comm, &mesh, order, Flux::Upwind, method, route)
            .unwrap();
    dist.set_fields(|x| cavity_mode(mode, 0.0, x)).unwrap();
    assert_eq!(dist.dofs(), single.dofs());
    let dt = single.stable_dt(0.5);
    assert_eq!(dist.stable_dt(0.5), dt);
    let e0 = single.energy().unwrap();
    assert!((dist.energy().unwrap() - e0).abs() <= 1e-13 * e0);
    for _ in 0..steps {
        single.step(dt).unwrap();
        dist.step(dt).unwrap();
    }
    let t = steps as f64 * dt;
    let exact = |x: [f64; 3]| cavity_mode(mode, t, x);
    let (e, err) = (single.energy().unwrap(), single.l2_error(exact).unwrap());
    let (de, derr) = (dist.energy().unwrap(), dist.l2_error(exact).unwrap());
    assert!(
        e < e0 && (de - e).abs() <= 1e-12 * e,
        "energy {de:e} (ranks) vs {e:e}"
    );
    assert!(
        err > 0.0 && (derr - err).abs() <= 1e-9 * err,
        "L2 error {derr:e} vs {err:e}"
    );
    let sent = comm.sum_scalar(dist.trace_values_sent() as f64);
    if comm.size() > 1 {
        assert!(sent > 0.0);
        assert_eq!(dist.halo_times().applications, 5 * steps as u64);
    }
    let gathered = dist.gather(0).unwrap();
    let fields = gathered.map(|(f, nodes)| {
        let want = single.fields().unwrap();
        let scale = want.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = f
            .iter()
            .flatten()
            .zip(want.iter().flatten())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            diff <= 1e-12 * scale,
            "fields differ by {diff:e} (scale {scale:e})"
        );
        assert_eq!(nodes[0], single.geometry().x[0]);
        f
    });
    say(
        comm,
        &format!(
            "DG Maxwell over {} rank(s) ({}, {} trace values a stage): energy {de:.12e}, L2 error {derr:.6e}, as one process",
            comm.size(),
            dist.halo_transport(),
            sent
        ),
    );
    fields
}

/// A mesh that leaves a rank without elements (one tetrahedron over several ranks, or none)
/// is refused on every rank, naming the rank; one tetrahedron in one process runs.
fn check_maxwell_refusals(comm: &Communicator, cpu: &Cpu) {
    use galerkin::dg::{Flux, TetMesh};
    use galerkin::distributed::DistMaxwell;
    let one = TetMesh {
        points: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
        ],
        tets: vec![[0, 1, 2, 3]],
        ..Default::default()
    };
    for (mesh, what) in [
        (one, "one tetrahedron"),
        (TetMesh::default(), "no tetrahedron"),
    ] {
        let made = DistMaxwell::<Cpu, f64>::new(
            cpu,
            comm,
            &mesh,
            2,
            Flux::Upwind,
            PartitionMethod::Contiguous,
            HaloRoute::Auto,
        );
        match made {
            Ok(mut dg) => {
                assert!(comm.size() == 1 && what == "one tetrahedron");
                dg.set_fields(|x| [x[1], 0.0, 0.0, 0.0, 0.0, x[0]]).unwrap();
                dg.step(dg.stable_dt(0.5)).unwrap();
                assert!(dg.energy().unwrap().is_finite());
            }
            Err(e) => {
                let text = e.to_string();
                assert!(
                    text.contains("would own no tetrahedron") || text.contains("no tetrahedra"),
                    "{what}: {text}"
                );
            }
        }
    }
    say(comm, "DG Maxwell: ranks left without elements are refused");
}

/// Contiguous, METIS, and an uneven one: rank 0 owns nothing (with 2+ ranks) and the last
/// rank owns scattered rows, every one of which reads ghosts.
fn partitions(comm: &Communicator, a: &Csr<Cpu, f64>) -> Vec<(&'static str, Partition)> {
    let p = comm.size();
    let n = a.nrows();
    let uneven = if p == 1 {
        Partition::contiguous(n, 1).unwrap()
    } else {
        let others = p - 1;
        let owner = (0..n)
            .map(|g| {
                if g % 7 == 3 {
                    (p - 1) as u32
                } else {
                    // The middle ranks (or the last one with 2 ranks) share the rest.
                    let k = (g * others / n).min(others - 1);
                    (1 + k) as u32
                }
            })
            .collect();
        Partition::from_owners(owner, p).unwrap()
    };
    vec![
        ("contiguous", Partition::contiguous(n, p).unwrap()),
        ("metis", Partition::metis(a, p).unwrap()),
        ("uneven", uneven),
    ]
}

fn random_vec(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.range(-1.0, 1.0)).collect()
}

fn cast<S: Element>(v: &[f64]) -> Vec<S> {
    v.iter().map(|&x| S::from_f64(x)).collect()
}

/// Distributed `y = A x` and `y = 2 A x − y` equal the host f64 SpMV (y poisoned first).
fn check_spmv<B: Backend, V: Element, S: Scalar>(
    backend: &B,
    a: &Csr<Cpu, f64>,
    d: &DistCsr,
    seed: u64,
    tol: f64,
) {
    check_spmv_on::<B, V, S>(backend, a, d, seed, tol, HaloRoute::Auto);
}

/// [`check_spmv`] with the halo's route chosen; the products `A x` and `2 A x − y` gathered
/// on rank 0.
fn check_spmv_on<B: Backend, V: Element, S: Scalar>(
    backend: &B,
    a: &Csr<Cpu, f64>,
    d: &DistCsr,
    seed: u64,
    tol: f64,
    route: HaloRoute,
) -> Option<(Vec<S>, Vec<S>)> {
    let n = a.nrows();
    let xg = random_vec(seed ^ 0x5eed, n);
    let y0 = random_vec(seed ^ 0xbeef, n);
    let cpu = Cpu::new();
    let mut reference = Vector::from_slice(&cpu, &y0).unwrap();
    a.spmv(
        1.0,
        &Vector::from_slice(&cpu, &xg).unwrap(),
        0.0,
        &mut reference,
    )
    .unwrap();
    let ax = reference.to_vec().unwrap();
    let m = DistMatrix::<B, V>::with_halo(backend, d, None, route).unwrap();
    let x = DistVector::from_global(backend, d.layout(), &cast::<S>(&xg)).unwrap();
    let mut y =
        DistVector::from_global(backend, d.layout(), &vec![S::from_f64(f64::NAN); n]).unwrap();
    m.apply(&x, &mut y).unwrap();
    let got = y.gather(0).unwrap();
    let mut y2 = DistVector::from_global(backend, d.layout(), &cast::<S>(&y0)).unwrap();
    m.apply_add(S::from_f64(2.0), &x, -S::ONE, &mut y2).unwrap();
    let got2 = y2.gather(0).unwrap();
    let t = m.times();
    assert_eq!(t.applications, 2);
    let (got, got2) = (got?, got2?);
    {
        let scale = ax.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1.0);
        let e1 = got
            .iter()
            .zip(&ax)
            .map(|(g, r)| (g.as_f64() - r).abs())
            .fold(0.0, f64::max);
        let e2 = got2
            .iter()
            .zip(ax.iter().zip(&y0))
            .map(|(g, (r, y))| (g.as_f64() - (2.0 * r - y)).abs())
            .fold(0.0, f64::max);
        assert!(
            e1 <= tol * scale,
            "SpMV {}/{}: error {e1:e} > {tol:e}",
            std::any::type_name::<V>(),
            std::any::type_name::<S>()
        );
        assert!(
            e2 <= 2.0 * tol * scale,
            "SpMV axpby {}/{}: error {e2:e}",
            std::any::type_name::<V>(),
            std::any::type_name::<S>()
        );
    }
    Some((got, got2))
}

/// A report's fingerprint, equal on every rank.
fn same_on_every_rank(comm: &Communicator, r: &SolveReport) {
    let mut h: u64 = r.iterations as u64;
    for v in r
        .residual_history
        .iter()
        .chain([&r.final_residual, &r.rhs_norm])
    {
        h = h.rotate_left(7) ^ v.to_bits();
    }
    let h = (h >> 12) as f64;
    let all = comm.all_gather(h);
    assert!(
        all.iter().all(|&v| v == all[0]),
        "reports differ between ranks: {r}"
    );
    let t = comm.all_gather(r.time.as_secs_f64());
    assert!(
        t.iter().all(|&v| v == t[0]),
        "report times differ between ranks"
    );
}

/// A preconditioner of this rank's diagonal block (the identity on a rank without rows).
fn per_rank<'a, B: Backend, S: Scalar>(
    d: &DistCsr,
    local: impl FnOnce(&Csr<Cpu, f64>) -> Box<dyn Preconditioner<B, S> + 'a>,
) -> BlockJacobi<'a, B, S> {
    if d.local_block().nrows() == 0 {
        BlockJacobi::new(Box::new(galerkin::solver::Identity::new(0)))
    } else {
        BlockJacobi::new(local(d.local_block()))
    }
}

fn jacobi_block<'a, B: Backend, S: Scalar>(backend: &B, d: &DistCsr) -> BlockJacobi<'a, B, S> {
    per_rank(d, |block| {
        Box::new(Jacobi::<B, S>::new(backend, block).unwrap())
    })
}

fn quiet(rtol: f64) -> SolverParams<'static> {
    SolverParams {
        stop: Stopping::new(rtol, 2000),
        progress: Progress::Never,
        ..SolverParams::default()
    }
}

fn close(comm: &Communicator, what: &str, dist: &SolveReport, single: &SolveReport, slack: usize) {
    same_on_every_rank(comm, dist);
    assert!(
        dist.converged() && single.converged(),
        "{what}: {dist} / {single}"
    );
    let (k1, k2) = (dist.iterations, single.iterations);
    assert!(
        k1.abs_diff(k2) <= slack,
        "{what}: {k1} iterations distributed, {k2} in one process"
    );
    let ratio = dist.final_residual / single.final_residual.max(1e-300);
    say(
        comm,
        &format!("{what}: {k1} iterations (one process {k2}), residual ratio {ratio:.2}"),
    );
}

/// The distributed solvers against the single-process ones, f64, f32 and mixed.
fn check_solvers<B: Backend>(
    comm: &Communicator,
    backend: &B,
    a: &Csr<Cpu, f64>,
    d: &DistCsr,
    all: bool,
) {
    let n = a.nrows();
    let ones = vec![1.0; n];
    let cpu = Cpu::new();
    let mut bh = Vector::zeros(&cpu, n).unwrap();
    a.spmv(1.0, &Vector::from_slice(&cpu, &ones).unwrap(), 0.0, &mut bh)
        .unwrap();
    let bg = bh.to_vec().unwrap();

    // f64, PCG with Jacobi.
    let (single, _) = SparseMatrix::<B, f64>::auto(backend, a).unwrap();
    let jac = Jacobi::<B, f64>::new(backend, a).unwrap();
    let b1 = Vector::from_slice(backend, &bg).unwrap();
    let p = quiet(1e-8);
    let mut x1 = Vector::zeros(backend, n).unwrap();
    let r1 = pcg(&single, Some(&jac), &b1, &mut x1, &p).unwrap();
    let m = DistMatrix::<B, f64>::new(backend, d, None).unwrap();
    let bj = jacobi_block::<B, f64>(backend, d);
    let b = DistVector::from_global(backend, d.layout(), &bg).unwrap();
    let mut x = DistVector::zeros(backend, d.layout()).unwrap();
    let r = distributed::cg(
        &m,
        Some(&bj as &dyn DistPreconditioner<B, f64>),
        &b,
        &mut x,
        &p,
    )
    .unwrap();
    close(comm, "PCG-Jacobi f64", &r, &r1, 1);
    let xg = x.gather(0).unwrap();
    if let Some(xg) = xg {
        let x1 = x1.to_vec().unwrap();
        let e = xg
            .iter()
            .zip(&x1)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(e < 1e-6, "x differs from one process by {e:e}");
    }

    // f32 CG (plain).
    let (single32, _) = SparseMatrix::<B, f32>::auto(backend, &a.convert()).unwrap();
    let b32 = Vector::from_slice(backend, &cast::<f32>(&bg)).unwrap();
    let p32 = quiet(1e-5);
    let mut x32 = Vector::zeros(backend, n).unwrap();
    let r32 = pcg(&single32, None, &b32, &mut x32, &p32).unwrap();
    let m32 = DistMatrix::<B, f32>::new(backend, d, None).unwrap();
    let bd32 = DistVector::from_global(backend, d.layout(), &cast::<f32>(&bg)).unwrap();
    let mut xd32 = DistVector::zeros(backend, d.layout()).unwrap();
    let rd32 = distributed::cg(&m32, None, &bd32, &mut xd32, &p32).unwrap();
    close(comm, "CG f32", &rd32, &r32, 2);

    // AMG per rank on the diagonal block, inside the global PCG: converged to the true
    // residual, in fewer iterations than Jacobi (the same as one process at one rank).
    let amg = per_rank(d, |block| {
        Box::new(Amg::<B, f64>::new(backend, block, &AmgParams::default()).unwrap())
    });
    let mut x = DistVector::zeros(backend, d.layout()).unwrap();
    let ra = distributed::cg(
        &m,
        Some(&amg as &dyn DistPreconditioner<B, f64>),
        &b,
        &mut x,
        &quiet(1e-8),
    )
    .unwrap();
    same_on_every_rank(comm, &ra);
    assert!(ra.converged(), "PCG-AMG per rank: {ra}");
    assert!(ra.iterations < r.iterations, "AMG {ra} against Jacobi {r}");
    say(
        comm,
        &format!(
            "PCG-AMG per rank f64: {} iterations (Jacobi {})",
            ra.iterations, r.iterations
        ),
    );
    if !all {
        return;
    }

    // GMRES(30) and BiCGStab with Jacobi, f64.
    let mut x1 = Vector::zeros(backend, n).unwrap();
    let r1 = gmres(&single, Some(&jac), &b1, &mut x1, &p).unwrap();
    let mut x = DistVector::zeros(backend, d.layout()).unwrap();
    let r = distributed::gmres(
        &m,
        Some(&bj as &dyn DistPreconditioner<B, f64>),
        &b,
        &mut x,
        &p,
    )
    .unwrap();
    close(comm, "GMRES(30)-Jacobi f64", &r, &r1, 1);
    let mut x1 = Vector::zeros(backend, n).unwrap();
    let r1 = bicgstab(&single, Some(&jac), &b1, &mut x1, &p).unwrap();
    let mut x = DistVector::zeros(backend, d.layout()).unwrap();
    let r = distributed::bicgstab(
        &m,
        Some(&bj as &dyn DistPreconditioner<B, f64>),
        &b,
        &mut x,
        &p,
    )
    .unwrap();
    close(comm, "BiCGStab-Jacobi f64", &r, &r1, 2);

    // Mixed: flexible CG (f64) around PCG-Jacobi in f32.
    let p = quiet(1e-10);
    let jac32 = Jacobi::<B, f32>::new(backend, a).unwrap();
    let mixed = MixedParams {
        outer: MixedOuter::FlexibleCg,
        inner: InnerSolver::Cg,
        inner_stop: Stopping::new(1e-3, 200),
        inner_restart: 30,
    };
    let mut x1 = Vector::zeros(backend, n).unwrap();
    let r1 = mixed_solve(&single, &single32, Some(&jac32), &b1, &mut x1, &p, &mixed).unwrap();
    let bj32 = jacobi_block::<B, f32>(backend, d);
    let inner = InnerCg::new(&m32, Some(&bj32), Stopping::new(1e-3, 200));
    let mut x = DistVector::zeros(backend, d.layout()).unwrap();
    let r = distributed::mixed_cg(&m, &inner, &b, &mut x, &p).unwrap();
    close(comm, "mixed f64/f32", &r, &r1, 1);
}

/// A Matrix Market file read in parallel parts equals the file read whole; PCG on it.
fn check_matrix_market(comm: &Communicator, cpu: &Cpu) {
    let Some(dir) = std::env::var_os("GALERKIN_DATA_DIR") else {
        say(
            comm,
            "SKIPPING the Matrix Market checks: GALERKIN_DATA_DIR is not set",
        );
        return;
    };
    let path = std::path::Path::new(&dir).join("mtx/HB_bcsstk09.mtx");
    let whole = galerkin::sparse::read_matrix_market(&path)
        .unwrap()
        .to_csr()
        .unwrap();
    for method in [PartitionMethod::Contiguous, PartitionMethod::Metis] {
        let d = distributed::read_matrix_market(comm, &path, method).unwrap();
        assert_eq!(d.global_len(), whole.nrows());
        say(
            comm,
            &format!(
                "bcsstk09 read in {} parts, {method:?}: {}",
                comm.size(),
                d.quality()
            ),
        );
        check_spmv::<Cpu, f64, f64>(cpu, &whole, &d, 99, 1e-13);
        check_solvers(comm, cpu, &whole, &d, false);
    }
}

/// A rank that fails to read its part: every rank gets the same error, naming that rank,
/// the file and the line.
fn check_read_errors(comm: &Communicator, seed: u64) {
    let path = std::env::temp_dir().join(format!("galerkin-dist-bad-{seed}-{}.mtx", comm.rank()));
    let mut text = String::from("%%MatrixMarket matrix coordinate real general\n40 40 40\n");
    for i in 1..40 {
        text += &format!("{i} {i} 2.0\n");
    }
    text += "40 x 2.0\n";
    std::fs::write(&path, text).unwrap();
    let err =
        distributed::read_matrix_market(comm, &path, PartitionMethod::Contiguous).unwrap_err();
    std::fs::remove_file(&path).ok();
    let last = comm.size() - 1;
    match &err {
        Error::Rank {
            rank,
            ranks,
            message,
            bad_input,
        } => {
            assert_eq!((*rank, *ranks), (last, 1), "{err}");
            assert!(*bad_input, "a parse error is bad input: {err}");
            assert!(
                message.contains(":42:"),
                "the line number is missing: {err}"
            );
        }
        other => panic!("expected Error::Rank, got {other}"),
    }
    let missing =
        distributed::read_matrix_market(comm, "/nonexistent/a.mtx", PartitionMethod::Contiguous)
            .unwrap_err();
    assert!(
        matches!(&missing, Error::Rank { rank: 0, ranks, .. } if *ranks == comm.size()),
        "{missing}"
    );
    assert!(
        missing.is_bad_input(),
        "a missing file is bad input: {missing}"
    );
    say(comm, &format!("read errors agreed: {err}"));
}
