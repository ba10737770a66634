"""galerkin: the hot kernels of high-order DG, HDG, FEM and FVM codes, from Python.

SpMV and Krylov solves (CG, BiCGStab, GMRES; Jacobi, block-Jacobi, Chebyshev, smoothed-
aggregation AMG; f32, f64 or mixed precision) on SciPy sparse matrices, batched small dense
matrices, and vectors that live on a backend and speak DLPack — on the CPU (rayon), on wgpu
(Vulkan, Metal) and on CUDA, with the same results.

>>> import numpy as np, scipy.sparse as sp, galerkin
>>> A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(100, 100), format="csr")
>>> x, info = galerkin.solve(A, np.ones(100), precond="amg", tol=1e-10)
>>> info["converged"], info["relative_residual"] <= 1e-10
(True, True)

Every function takes ``backend="cpu" | "wgpu" | "cuda"`` (:func:`backends` says which answer
here) and releases the GIL while it works. Bad input raises ``ValueError`` with the
library's message; a size beyond the device ``MemoryError``; a device failure
``RuntimeError``.
"""

from __future__ import annotations

import numpy as _np

from . import _galerkin
from ._galerkin import Vector, __version__, backends, compiled_backends, from_dlpack
from . import batched

__all__ = [
    "SparseMatrix",
    "Vector",
    "backends",
    "batched",
    "compiled_backends",
    "from_dlpack",
    "hdg_poisson",
    "maxwell",
    "poisson_mg",
    "solve",
    "spmv",
    "__version__",
]


def _csr_arrays(A):
    """The canonical CSR arrays (int64 indices, float64 values) and shape of ``A``."""
    try:
        import scipy.sparse as sp
    except ImportError as e:  # pragma: no cover - scipy is a dependency
        raise ImportError("galerkin needs scipy for sparse matrices") from e
    if sp.issparse(A):
        A = A.tocsr()
    elif isinstance(A, _np.ndarray) or hasattr(A, "__array__"):
        dense = _np.asarray(A)
        if dense.ndim != 2:
            raise ValueError(f"A: a matrix needs 2 dimensions, not {dense.ndim}")
        A = sp.csr_array(dense)
    else:
        raise TypeError(f"A: expected a scipy.sparse matrix or a 2-D array, not {type(A).__name__}")
    if A.dtype.kind == "c":
        raise ValueError("A: complex matrices are not supported")
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    # int32 (SciPy's usual) or int64 indices go through as they are; the Rust side checks them.
    index = A.indices.dtype if A.indices.dtype in (_np.int32, _np.int64) else _np.int64
    indptr = _np.ascontiguousarray(A.indptr, dtype=index)
    indices = _np.ascontiguousarray(A.indices, dtype=index)
    data = _np.ascontiguousarray(A.data, dtype=_np.float64)
    return indptr, indices, data, (int(A.shape[0]), int(A.shape[1]))


def _vector(name, v):
    if isinstance(v, Vector):
        v = v.to_numpy()
    a = _np.asarray(v)
    if a.dtype.kind == "c":
        raise ValueError(f"{name}: complex vectors are not supported")
    if a.ndim != 1:
        raise ValueError(f"{name}: a vector needs 1 dimension, not shape {a.shape}")
    return _np.ascontiguousarray(a, dtype=_np.float64)


class SparseMatrix(_galerkin.SparseMatrix):
    """A sparse matrix moved to a backend once, for repeated products.

    ``SparseMatrix(A, backend="cpu", format="auto", dtype="float64")`` takes any SciPy matrix
    (or a dense 2-D array) with finite values; ``format`` as :func:`spmv`'s; ``dtype`` the
    precision of the values and of the products (``"float32"``: f32 throughout).

    ``M @ v`` with a :class:`Vector` on the same backend and dtype gives a :class:`Vector`
    there — on CUDA the data never leaves the device, and with DLPack it goes on to PyTorch or
    CuPy without a copy. ``M @ x`` with a NumPy array gives a float64 NumPy array.
    Attributes: ``shape``, ``nnz``, ``format`` (with why it was chosen), ``backend``,
    ``dtype``.
    """

    def __new__(cls, A, backend="cpu", format="auto", dtype="float64"):
        indptr, indices, data, shape = _csr_arrays(A)
        return super().__new__(cls, indptr, indices, data, shape, backend, format, str(_np.dtype(dtype)) if not isinstance(dtype, str) else dtype)


def spmv(A, x, backend="cpu", format="auto", precision="f64"):
    """``y = A @ x`` on a backend.

    Parameters
    ----------
    A : scipy.sparse matrix or array (any format), or a dense 2-D array
        Converted to CSR (duplicates summed); its values must be finite.
    x : 1-D array of ``A.shape[1]`` finite values (or a :class:`Vector`).
    backend : ``"cpu"``, ``"wgpu"`` or ``"cuda"``.
    format : ``"auto"`` (chosen from the row statistics) or a storage format: ``"csr"``,
        ``"coo"``, ``"ell"``, ``"sell"`` (SELL-C-σ), ``"staircase"``, ``"bell"`` (block ELL),
        ``"dia"``.
    precision : ``"f64"``; ``"f32"`` (values and vectors in f32); ``"mixed"`` (f32 values,
        f64 vectors and sums).

    Returns
    -------
    numpy.ndarray of float64, length ``A.shape[0]``.
    """
    indptr, indices, data, shape = _csr_arrays(A)
    return _galerkin.spmv(indptr, indices, data, shape, _vector("x", x), backend, format, precision)


def solve(
    A,
    b,
    solver="cg",
    precond="jacobi",
    precision="f64",
    tol=1e-8,
    max_iter=1000,
    backend="cpu",
    **options,
):
    """Solves ``A x = b`` from ``x = 0``.

    Parameters
    ----------
    A : scipy.sparse matrix (any format) or dense 2-D array, square, finite.
    b : 1-D array of ``A.shape[0]`` finite values.
    solver : ``"cg"`` (plain CG with ``precond="none"``, else PCG), ``"pcg"``,
        ``"bicgstab"``, ``"gmres"``, ``"fgmres"``, ``"refine"`` (iterative refinement).
    precond : ``"none"``, ``"jacobi"``, ``"block-jacobi"``, ``"chebyshev"``, ``"amg"``
        (smoothed aggregation, one V-cycle per application).
    precision : ``"f64"``, ``"f32"``, or ``"mixed"``: the f64 system answered to ``tol``
        with the work in f32 (flexible CG or FGMRES around an f32 inner solve).
    tol : relative tolerance on ``‖b − A x‖₂ / ‖b‖₂``, in (0, 1).
    max_iter : iteration limit (outer iterations with ``"mixed"``).
    backend : ``"cpu"``, ``"wgpu"`` or ``"cuda"``.
    **options : ``format`` (``"auto"``), ``restart`` (30), ``block_size`` (4), ``inner_tol``
        (1e-3), ``inner_max_iter`` (200), ``amg_theta`` (0.0), ``amg_smoother``
        (``"chebyshev"``, ``"chebyshev4"`` — the fourth kind — or ``"l1-jacobi"``), ``amg_degree`` (3), ``amg_cycle`` (``"v"`` or
        ``"w"``), ``amg_max_coarse`` (500), ``amg_precision`` (``"same"`` or ``"f32"``),
        ``amg_improve_candidates`` (2: smoothing steps applied to the constant near-null
        vector before the tentative prolongator, as PyAMG's ``improve_candidates``; 0 uses
        it as given), ``warmup`` (False: solve once untimed first).

    Returns
    -------
    x : numpy.ndarray of float64.
    info : dict with ``iterations``, ``converged`` (the method converged **and** the true
        relative residual of the f64 system meets ``tol``), ``relative_residual`` (true, of
        the system as given), ``solver_relative_residual`` (what the method saw),
        ``reason``, ``seconds`` (the iterations), ``setup_seconds`` (the preconditioner),
        ``total_seconds``, ``format``, ``solver``, ``precond``, ``precision``, ``backend``
        and ``amg`` (``None``, or levels, complexities, rows, nonzeros and format per level).

    A solve that does not converge returns normally with ``info["converged"] == False``.
    """
    if int(max_iter) < 1:
        raise ValueError(f"max_iter: {max_iter}: must be at least 1")
    for name in ("restart", "block_size", "inner_max_iter", "amg_degree", "amg_max_coarse"):
        if name in options and int(options[name]) < 1:
            raise ValueError(f"{name}: {options[name]}: must be at least 1")
    if "amg_improve_candidates" in options and int(options["amg_improve_candidates"]) < 0:
        raise ValueError(
            f"amg_improve_candidates: {options['amg_improve_candidates']}: must be at least 0"
        )
    indptr, indices, data, shape = _csr_arrays(A)
    return _galerkin.solve(
        indptr,
        indices,
        data,
        shape,
        _vector("b", b),
        solver=solver,
        precond=precond,
        precision=precision,
        tol=float(tol),
        max_iter=int(max_iter),
        backend=backend,
        **options,
    )


def hdg_poisson(
    mesh="square:16",
    degree=3,
    *,
    tau=1.0,
    lambda_=0.0,
    rhs=None,
    dirichlet=None,
    exact=None,
    flux=None,
    neumann=(),
    diagonal="up",
    seed=1,
    untagged_as=None,
    precision="f64",
    precond="auto",
    rtol=None,
    max_iter=20_000,
    post_process=True,
    backend="cpu",
):
    """HDG for ``−∇²u + λu = f`` on triangles, every stage on the backend: the
    ``hdg_poisson`` example's run, as a dict.

    Parameters
    ----------
    mesh : ``"square:N"`` (N x N squares of two triangles on [0, 1]²), ``"perturbed:N"``
        (interior points moved at random), or a Gmsh file with 3-node triangles.
    degree : polynomial degree P, 1..9.
    tau, lambda_ : stabilisation τ > 0 and λ ≥ 0.
    rhs, dirichlet, exact, flux : expressions in ``x, y`` (``flux`` also in ``nx, ny``);
        without ``rhs`` and ``exact`` the exact solution is ``sin(pi*x)*sin(pi*y)``; ``rhs``,
        ``dirichlet`` and ``flux`` default to what ``exact`` gives (differentiated
        symbolically).
    neumann : physical tags of the Neumann boundary edges (Gmsh meshes).
    diagonal : ``"up"``, ``"down"`` or ``"alternating"`` split of generated squares.
    precision : ``"f64"``, ``"f32"``, or ``"mixed"`` (element data and K in f32, the solve
        in f64).
    precond : ``"auto"`` (AMG from 32,768 trace unknowns, block-Jacobi below),
        ``"block-jacobi"``, ``"chebyshev"``, ``"amg"``.
    rtol, max_iter : the trace PCG's tolerance (default 1e-10; 1e-5 in f32) and limit.

    Returns
    -------
    dict with the example's JSON keys — ``backend``, ``precision``, ``triangles``,
    ``degree``, ``dofs``, ``iterations``, ``converged``, ``reason``, ``seconds`` (per stage
    and ``total``), ``memory_bytes``, ``precond``, ``precond_requested``, ``amg``,
    ``l2_error`` (``u``, ``q``, ``u_star``; ``None`` without an exact solution) — and the
    fields as arrays: ``points`` (n, 2), ``cells`` (t, 3), ``u`` (t, Nu) and ``q``
    (t, 2, Nu) in the orthonormal Dubiner basis of each triangle, ``u_star`` (t, N(P+1)).
    """
    if int(max_iter) < 1:
        raise ValueError(f"max_iter: {max_iter}: must be at least 1")
    return _galerkin.hdg_poisson(
        mesh,
        int(degree),
        tau=float(tau),
        lam=float(lambda_),
        rhs=rhs,
        dirichlet=dirichlet,
        exact=exact,
        flux=flux,
        neumann=[int(t) for t in neumann],
        diagonal=diagonal,
        seed=int(seed),
        untagged_as=untagged_as,
        precision=precision,
        precond=precond,
        rtol=None if rtol is None else float(rtol),
        max_iter=int(max_iter),
        post_process=bool(post_process),
        backend=backend,
    )


def poisson_mg(
    dim=2,
    degree=3,
    levels=5,
    *,
    solver="fmg",
    smoother="patch",
    precision="f64",
    rhs="sine",
    tol=1e-9,
    max_iter=100,
    restart=10,
    scatter="auto",
    keep_solution=True,
    backend="cpu",
    patch_form="auto",
):
    """``−Δu = f`` on the unit square or cube with continuous ``Q_k`` elements, matrix-free,
    by geometric multigrid with the vertex-patch smoother (seed 003): the ``poisson_mg``
    example's run, as a dict.

    Parameters
    ----------
    dim : 2 or 3.
    degree : k, 1..10.
    levels : the finest level L, 2^L cells per direction (1..20).
    solver : ``"fmg"`` (full multigrid, then V-cycles), ``"cg"`` (a symmetric V-cycle as the
        preconditioner) or ``"gmres"``.
    smoother : ``"patch"`` or ``"chebyshev"``.
    precision : ``"f64"``, ``"mixed"`` (the V-cycle in f32 inside the f64 solve), ``"f32"``.
    rhs : ``"sine"`` (exact solution Π sin(π xᵢ), so ``l2_error`` is known) or ``"one"``.
    tol, max_iter, restart : the true relative residual of the f64 system to reach, the
        iteration limit, GMRES's restart.
    scatter : ``"auto"``, ``"atomic"`` or ``"colour"``.
    keep_solution : return the nodal solution ``u`` (False for the largest problems).
    patch_form : the patch-smoothing step's form: ``"auto"`` (fused where its kernel fits
        the device's shared memory, else split), ``"fused"`` or ``"split"`` (the level's
        operator, then the local solves: the same iterates in a third of the memory).

    Returns
    -------
    dict with the example's JSON keys — ``dim``, ``degree``, ``levels``, ``dofs``,
    ``solver``, ``smoother``, ``patch_form`` (the form that ran, or None where no patch
    kernel fits), ``precision``, ``backend``, ``iterations``, ``converged``,
    ``relative_residual``, ``residual_history`` (array), ``l2_error``,
    ``l2_error_interpolant`` (‖u_h − I_h u‖, seed 003's Table 7 quantity), ``seconds`` (per
    phase), ``dofs_per_second``, ``memory_bytes``, ``memory_bytes_estimate`` — and ``nodes``
    (the 1D node coordinates) and ``u`` (the nodal solution, shape ``(n1,) * dim``, the last
    axis x).
    """
    for name, v in (("max_iter", max_iter), ("restart", restart)):
        if int(v) < 1:
            raise ValueError(f"{name}: {v}: must be at least 1")
    for name, v in (("dim", dim), ("degree", degree), ("levels", levels)):
        if int(v) < 0:
            raise ValueError(f"{name}: {v}: must not be negative")
    return _galerkin.poisson_mg(
        int(dim),
        int(degree),
        int(levels),
        solver=solver,
        smoother=smoother,
        precision=precision,
        rhs=rhs,
        tol=float(tol),
        max_iter=int(max_iter),
        restart=int(restart),
        scatter=scatter,
        keep_solution=bool(keep_solution),
        backend=backend,
        patch_form=patch_form,
    )


def maxwell(
    mesh="box:4",
    order=3,
    *,
    mode=(1, 1, 0),
    final_time=0.5,
    cfl=0.5,
    flux="upwind",
    precision="f64",
    perturbation=0.0,
    absorbing=(),
    block=256,
    energy_samples=10,
    max_steps=1_000_000,
    autotune=False,
    keep_fields=True,
    backend="cpu",
):
    """Maxwell's equations by nodal DG on tetrahedra (seed 004): the PEC cavity of the unit
    cube (``"box:N"``) or a Gmsh mesh, started from the cavity mode ``mode`` and stepped by
    low-storage RK4 to ``final_time`` — the ``maxwell`` example's run, as a dict.

    Parameters
    ----------
    mesh : ``"box:N"`` (N³ hexahedra of 6 tetrahedra) or a Gmsh 2.2/4.1 file.
    order : N, 1..9.
    mode : ``(m, n, p)``, at most one zero.
    final_time, cfl : T > 0 and the CFL number in (0, 2].
    flux : ``"upwind"`` or ``"central"``.
    precision : ``"f64"`` or ``"f32"``.
    perturbation : interior points of ``box:N`` moved by up to this fraction of h.
    absorbing : physical tags of absorbing (Silver–Müller) boundary faces (Gmsh meshes).
    block, energy_samples, max_steps, autotune : as the example's options.
    keep_fields : return the final ``fields`` and their ``nodes``.

    Returns
    -------
    dict with the example's JSON keys — ``mesh``, ``elements``, ``order``, ``dofs``,
    ``mode``, ``flux``, ``precision``, ``backend``, ``params``, ``final_time``, ``dt``,
    ``steps``, ``l2_error``, ``l2_error_is_exact``, ``energy_initial``, ``energy_final``,
    ``energy_drift``, ``energy_history`` (array of (t, energy)), ``seconds``,
    ``setup_seconds``, ``memory_bytes``, ``dof_updates_per_second`` — ``unphysical`` (why
    the run is not an answer, e.g. energy growth under the upwind flux, or ``None``), and
    ``fields`` (6, n: Ex, Ey, Ez, Hx, Hy, Hz at the nodes) and ``nodes`` (3, n).
    """
    m = tuple(int(v) for v in mode)
    if len(m) != 3 or min(m) < 0:
        raise ValueError(f"mode: {mode}: three non-negative integers (m, n, p)")
    for name, v in (("order", order), ("block", block), ("energy_samples", energy_samples), ("max_steps", max_steps)):
        if int(v) < 0:
            raise ValueError(f"{name}: {v}: must not be negative")
    return _galerkin.maxwell(
        mesh,
        int(order),
        mode=m,
        final_time=float(final_time),
        cfl=float(cfl),
        flux=flux,
        precision=precision,
        perturbation=float(perturbation),
        absorbing=[int(t) for t in absorbing],
        block=int(block),
        energy_samples=int(energy_samples),
        max_steps=int(max_steps),
        autotune=bool(autotune),
        keep_fields=bool(keep_fields),
        backend=backend,
    )
