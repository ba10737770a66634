"""The Python package against NumPy/SciPy: random inputs on every backend this machine has,
bad input, and DLPack. `GALERKIN_REQUIRE_BACKENDS=wgpu` (as CI sets) makes a missing wgpu an
error instead of a skip."""

import gc
import os

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import galerkin
from galerkin import batched

BACKENDS = galerkin.backends()
REQUIRED = [b for b in os.environ.get("GALERKIN_REQUIRE_BACKENDS", "").split(",") if b]
# The device tests of a backend run where it answers; wgpu on lavapipe has f64.
DEVICES = [b for b in ("wgpu", "cuda") if b in BACKENDS]
ALL = ["cpu"] + DEVICES


def test_required_backends_answer():
    assert "cpu" in BACKENDS
    for b in REQUIRED:
        assert b in BACKENDS, f"{b} is required (GALERKIN_REQUIRE_BACKENDS) but absent: {BACKENDS}"
    assert set(BACKENDS) <= set(galerkin.compiled_backends())


def random_matrix(rng, m, n, density=0.05):
    """A random sparse matrix with awkward row lengths: a few long rows, some empty ones."""
    a = sp.random(m, n, density=density, random_state=rng, format="lil")
    for i in rng.choice(m, size=max(1, m // 50), replace=False):
        a[i, rng.choice(n, size=min(n, 40), replace=False)] = rng.standard_normal(min(n, 40))
    a = a.tocsr()
    a.data = rng.standard_normal(a.nnz)
    return a


def spd_matrix(rng, n):
    """2D Poisson on an n x n grid plus a random positive diagonal: SPD, not too easy."""
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    i = sp.identity(n)
    a = (sp.kron(t, i) + sp.kron(i, t)).tocsr()
    return (a + sp.diags(rng.uniform(0.0, 0.1, n * n))).tocsr()


# --- spmv -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("fmt", ["auto", "csr", "sell", "coo"])
def test_spmv_matches_scipy(backend, fmt):
    rng = np.random.default_rng(7)
    a = random_matrix(rng, 531, 417)
    x = rng.standard_normal(417)
    y = galerkin.spmv(a, x, backend=backend, format=fmt)
    ref = a @ x
    assert y.dtype == np.float64 and y.shape == (531,)
    scale = abs(a) @ abs(x)
    assert np.all(np.abs(y - ref) <= 1e-13 * scale + 1e-300)


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("fmt", ["ell", "dia", "bell", "staircase"])
def test_spmv_padded_formats(backend, fmt):
    rng = np.random.default_rng(10)
    a = spd_matrix(rng, 19)
    x = rng.standard_normal(a.shape[0])
    y = galerkin.spmv(a, x, backend=backend, format=fmt)
    assert np.all(np.abs(y - a @ x) <= 1e-13 * (abs(a) @ abs(x)))
    if fmt == "ell":
        # A matrix whose rows differ wildly in length would waste the padding: refused.
        with pytest.raises(ValueError, match="padding"):
            galerkin.spmv(random_matrix(rng, 531, 417), np.ones(417), backend=backend, format=fmt)


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("precision,eps", [("f32", 2e-6), ("mixed", 2e-6)])
def test_spmv_reduced_precision(backend, precision, eps):
    rng = np.random.default_rng(8)
    a = random_matrix(rng, 300, 300)
    x = rng.standard_normal(300)
    y = galerkin.spmv(a, x, backend=backend, precision=precision)
    scale = abs(a) @ abs(x)
    err = np.abs(y - a @ x)
    assert np.all(err <= 8 * eps * scale + 1e-30)
    assert np.any(err > 0), "an f32 product equal to the f64 one everywhere is suspicious"


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("dtype,eps", [("float64", 1e-13), ("float32", 1e-5)])
def test_sparse_matrix_keeps_vectors_on_the_device(backend, dtype, eps):
    rng = np.random.default_rng(15)
    a = random_matrix(rng, 400, 300)
    m = galerkin.SparseMatrix(a, backend=backend, dtype=dtype)
    assert isinstance(m, galerkin.SparseMatrix)
    assert m.shape == (400, 300) and m.nnz == a.nnz and m.backend == backend and m.dtype == dtype
    assert "SparseMatrix" in repr(m) and m.format
    x = rng.standard_normal(300)
    scale = abs(a) @ abs(x) + 1e-300
    y = m @ x
    assert isinstance(y, np.ndarray) and np.all(np.abs(y - a @ x) <= eps * scale)
    v = galerkin.Vector(x, backend=backend, dtype=dtype)
    w = m @ v
    assert isinstance(w, galerkin.Vector) and w.backend == backend and w.dtype == dtype
    assert np.all(np.abs(w.to_numpy() - a @ x.astype(dtype)) <= eps * scale)
    # Repeated products reuse the matrix: y = A A^T-like chain stays on the backend.
    sq = galerkin.SparseMatrix(a @ a.T, backend=backend, dtype=dtype)
    z = sq @ (sq @ galerkin.Vector(rng.standard_normal(400), backend=backend, dtype=dtype))
    assert len(z) == 400
    with pytest.raises(ValueError, match="length 3"):
        m @ np.ones(3)
    other = "float32" if dtype == "float64" else "float64"
    with pytest.raises(ValueError, match="move it"):
        m @ galerkin.Vector(x, backend=backend, dtype=other)
    with pytest.raises(ValueError, match="dtype"):
        galerkin.SparseMatrix(a, dtype="int8")


def test_spmv_takes_any_scipy_format_and_dense():
    rng = np.random.default_rng(9)
    a = random_matrix(rng, 60, 50)
    x = rng.standard_normal(50)
    ref = a @ x
    for m in (a.tocoo(), a.tocsc(), a.tolil(), sp.csr_array(a), a.toarray()):
        assert np.allclose(galerkin.spmv(m, x), ref, rtol=1e-13, atol=1e-13)
    # Duplicates are summed, unsorted indices are sorted.
    coo = sp.coo_matrix(([1.0, 2.0, 3.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    assert np.allclose(galerkin.spmv(coo, [1.0, 10.0]), [30.0, 3.0])


def test_spmv_refuses_bad_input():
    a = sp.identity(4, format="csr")
    with pytest.raises(ValueError, match="length 3"):
        galerkin.spmv(a, np.ones(3))
    bad = a.copy()
    bad.data[2] = np.nan
    with pytest.raises(ValueError, match=r"A\[2, 2\].*NaN"):
        galerkin.spmv(bad, np.ones(4))
    with pytest.raises(ValueError, match=r"x\[1\]"):
        galerkin.spmv(a, [1.0, np.inf, 0.0, 0.0])
    with pytest.raises(ValueError, match="backend"):
        galerkin.spmv(a, np.ones(4), backend="tpu")
    with pytest.raises(ValueError):
        galerkin.spmv(a, np.ones(4), format="hash")
    with pytest.raises(ValueError, match="precision"):
        galerkin.spmv(a, np.ones(4), precision="f16")
    with pytest.raises(ValueError, match="complex"):
        galerkin.spmv(a, np.ones(4) * 1j)
    with pytest.raises(ValueError, match="1 dimension"):
        galerkin.spmv(a, np.ones((4, 1)))
    with pytest.raises(TypeError):
        galerkin.spmv("matrix", np.ones(4))


# --- solve ------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize(
    "precond,precision",
    [("jacobi", "f64"), ("amg", "f64"), ("chebyshev", "f64"), ("jacobi", "mixed"), ("amg", "mixed")],
)
def test_solve_spd_matches_scipy(backend, precond, precision):
    rng = np.random.default_rng(11)
    a = spd_matrix(rng, 24)
    b = rng.standard_normal(a.shape[0])
    x, info = galerkin.solve(a, b, precond=precond, precision=precision, tol=1e-10, backend=backend)
    ref = spla.spsolve(a.tocsc(), b)
    assert info["converged"], info
    assert info["relative_residual"] <= 1e-10
    true = np.linalg.norm(b - a @ x) / np.linalg.norm(b)
    assert abs(true - info["relative_residual"]) <= 1e-3 * true + 1e-16
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert info["backend"] == backend and info["precond"] == precond
    assert info["iterations"] > 0 and info["seconds"] >= 0.0
    if precond == "amg":
        amg = info["amg"]
        assert amg["levels"] >= 2 and amg["operator_complexity"] >= 1.0
        assert amg["rows"][0] == a.shape[0] and len(amg["nonzeros"]) == amg["levels"]
        assert len(amg["formats"]) == amg["levels"] and amg["formats"][1:] == ["csr"] * (amg["levels"] - 1)
    else:
        assert info["amg"] is None


@pytest.mark.parametrize("steps", [0, 2, 5])
def test_amg_improve_candidates(steps):
    # Dirichlet 2-D Laplacian: the option is accepted at every count, and each solve reaches
    # the tolerance against an independent residual.
    n = 24
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    a = (sp.kron(sp.identity(n), t) + sp.kron(t, sp.identity(n))).tocsr()
    b = np.random.default_rng(3).standard_normal(a.shape[0])
    x, info = galerkin.solve(a, b, precond="amg", tol=1e-10, amg_improve_candidates=steps)
    assert info["converged"], info
    assert np.linalg.norm(b - a @ x) <= 1e-10 * np.linalg.norm(b) * 1.01


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("solver", ["gmres", "bicgstab", "fgmres"])
def test_solve_nonsymmetric(backend, solver):
    rng = np.random.default_rng(12)
    n = 400
    a = (random_matrix(rng, n, n, density=0.01) * 0.1 + sp.diags(rng.uniform(2.0, 3.0, n))).tocsr()
    b = rng.standard_normal(n)
    x, info = galerkin.solve(a, b, solver=solver, tol=1e-10, backend=backend)
    assert info["converged"], info
    assert np.linalg.norm(b - a @ x) <= 1.0001e-10 * np.linalg.norm(b)


def test_solve_reports_what_it_did_not_reach():
    rng = np.random.default_rng(13)
    a = spd_matrix(rng, 30)
    b = rng.standard_normal(a.shape[0])
    x, info = galerkin.solve(a, b, max_iter=3)
    assert not info["converged"] and info["iterations"] == 3
    assert info["relative_residual"] > 1e-8
    # f32 work cannot answer the f64 system to 1e-12: not converged, whatever f32 saw.
    x, info = galerkin.solve(a, b, precision="f32", tol=1e-12, max_iter=5000)
    assert not info["converged"]
    assert info["relative_residual"] > 1e-12


def test_the_gil_is_released_while_the_library_works():
    import threading
    import time

    rng = np.random.default_rng(14)
    a = spd_matrix(rng, 150)
    b = rng.standard_normal(a.shape[0])
    span = []

    def work():
        t0 = time.perf_counter()
        galerkin.solve(a, b, precond="none", tol=1e-12, max_iter=2000)
        span.extend([t0, time.perf_counter()])

    worker = threading.Thread(target=work)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.0005)
    worker.join()
    t0, t1 = span
    inside = [t for t in ticks if t0 < t < t1]
    # Python ran in this thread while the solve ran in the other: the GIL was released.
    assert t1 - t0 > 0.02 and len(inside) >= 5, (t1 - t0, len(inside))


def test_solve_refuses_bad_input():
    a = sp.identity(5, format="csr") * 2.0
    b = np.ones(5)
    with pytest.raises(ValueError, match="square"):
        galerkin.solve(sp.random(5, 4, density=0.5, format="csr"), b)
    with pytest.raises(ValueError):
        galerkin.solve(a, np.ones(4))
    for tol in (0.0, 1.0, -1.0, np.nan):
        with pytest.raises(ValueError, match=r"\(0, 1\)"):
            galerkin.solve(a, b, tol=tol)
    with pytest.raises(ValueError, match="at least 1"):
        galerkin.solve(a, b, max_iter=0)
    with pytest.raises(ValueError, match="solver"):
        galerkin.solve(a, b, solver="minres")
    with pytest.raises(ValueError, match="preconditioner"):
        galerkin.solve(a, b, precond="ilu")
    with pytest.raises(ValueError, match="BiCGStab"):
        galerkin.solve(a, b, solver="bicgstab", precision="mixed")
    with pytest.raises(ValueError, match=r"b\[2\]"):
        galerkin.solve(a, [1.0, 1.0, np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="amg_theta"):
        galerkin.solve(a, b, precond="amg", amg_theta=2.0)
    with pytest.raises(ValueError, match="amg_improve_candidates"):
        galerkin.solve(a, b, precond="amg", amg_improve_candidates=-1)
    with pytest.raises(ValueError, match="no f32 value"):
        galerkin.solve(a * 1e300, b, precision="f32")
    with pytest.raises(TypeError):
        galerkin.solve(a, b, no_such_option=1)


# --- batched ----------------------------------------------------------------------------


def diag_dominant(rng, count, n):
    return rng.standard_normal((count, n, n)) + n * np.eye(n)


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True)])
def test_gemm_matches_numpy(backend, trans_a, trans_b):
    rng = np.random.default_rng(21)
    a = rng.standard_normal((37, 5, 7))
    b = rng.standard_normal((37, 7, 3) if not trans_b else (37, 3, 7))
    if trans_a:
        a = rng.standard_normal((37, 7, 5))
    c = rng.standard_normal((37, 5, 3))
    out = batched.gemm(a, b, c, alpha=0.5, beta=-2.0, trans_a=trans_a, trans_b=trans_b, backend=backend)
    opa = a.transpose(0, 2, 1) if trans_a else a
    opb = b.transpose(0, 2, 1) if trans_b else b
    assert np.allclose(out, 0.5 * opa @ opb - 2.0 * c, rtol=1e-13, atol=1e-13)
    shared = batched.gemm(a[:1], b, trans_a=trans_a, trans_b=trans_b, backend=backend)
    assert np.allclose(shared, opa[:1] @ opb, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("n", [1, 4, 13, 32])
def test_lu_solve_inv_match_scipy(backend, n):
    rng = np.random.default_rng(22 + n)
    a = rng.standard_normal((50, n, n))
    b = rng.standard_normal((50, n))
    lu, piv, status = batched.lu_factor(a, backend=backend)
    assert status.dtype == np.int32 and not status.any()
    for i in (0, 17, 49):
        ref_lu, ref_piv = sla.lu_factor(a[i])
        assert np.allclose(lu[i], ref_lu, rtol=1e-10, atol=1e-10)
        assert np.array_equal(piv[i], ref_piv)
    x = batched.lu_solve((lu, piv), b, backend=backend)
    ref = np.linalg.solve(a, b[:, :, None])[:, :, 0]
    assert np.allclose(x, ref, rtol=1e-9, atol=1e-9)
    x2, status = batched.solve(a, b, backend=backend)
    assert np.allclose(x2, ref, rtol=1e-9, atol=1e-9) and not status.any()
    inv, status = batched.inv(a, backend=backend)
    assert np.allclose(inv, np.linalg.inv(a), rtol=1e-8, atol=1e-8) and not status.any()


@pytest.mark.parametrize("backend", ALL)
def test_singular_and_indefinite_matrices_are_flagged_alone(backend):
    rng = np.random.default_rng(23)
    a = diag_dominant(rng, 20, 6)
    a[3, 2, :] = 0.0  # singular
    x, status = batched.solve(a, np.ones((20, 6)), backend=backend)
    assert status[3] != 0 and np.count_nonzero(status) == 1
    good = np.delete(np.arange(20), 3)
    assert np.allclose(np.einsum("bij,bj->bi", a[good], x[good]), 1.0, atol=1e-10)
    spd = a @ a.transpose(0, 2, 1) + np.eye(6)
    spd[5] = -np.eye(6)  # not positive definite
    l, status = batched.cholesky(spd, backend=backend)
    assert status[5] == 1 and np.count_nonzero(status) == 1
    ok = [i for i in range(20) if i != 5]
    assert np.allclose(l[ok], np.linalg.cholesky(spd[ok]), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("backend", ALL)
def test_batched_f32(backend):
    rng = np.random.default_rng(24)
    a = diag_dominant(rng, 30, 8)
    b = rng.standard_normal((30, 8, 2))
    for precision in ("f32", "mixed"):
        x, status = batched.solve(a, b, backend=backend, precision=precision)
        ref = np.linalg.solve(a, b)
        err = np.abs(x - ref).max() / np.abs(ref).max()
        assert err <= 1e-5 and not status.any()


def test_batched_refuses_bad_input():
    with pytest.raises(ValueError, match="square"):
        batched.inv(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="64"):
        batched.inv(np.ones((1, 65, 65)))
    with pytest.raises(ValueError, match="3-D"):
        batched.inv(np.ones((3, 3)))
    a = np.tile(np.eye(3), (2, 1, 1))
    a[1, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r"\[1, 1, 1\]"):
        batched.inv(a)
    with pytest.raises(ValueError, match="b"):
        batched.solve(np.tile(np.eye(3), (2, 1, 1)), np.ones((2, 4)))
    lu, piv, _ = batched.lu_factor(np.tile(np.eye(3), (2, 1, 1)))
    piv[0, 0] = 7
    with pytest.raises(ValueError, match="row 7"):
        batched.lu_solve((lu, piv), np.ones((2, 3)))
    with pytest.raises(ValueError, match="no c"):
        batched.gemm(np.ones((1, 2, 2)), np.ones((1, 2, 2)), beta=1.0)


# --- whole pipelines -------------------------------------------------------------------


@pytest.mark.parametrize("backend", ALL)
def test_hdg_poisson_converges_at_the_rate_of_the_degree(backend):
    errors = []
    for n in (4, 8):
        r = galerkin.hdg_poisson(f"square:{n}", 2, backend=backend, precond="block-jacobi")
        assert r["converged"] and r["iterations"] > 0 and r["triangles"] == 2 * n * n
        assert r["precond"] == "blockjacobi" and r["amg"] is None
        assert r["u"].shape == (2 * n * n, 6) and r["q"].shape == (2 * n * n, 2, 6)
        assert r["u_star"].shape == (2 * n * n, 10)
        assert r["points"].shape == ((n + 1) ** 2, 2) and r["cells"].shape == (2 * n * n, 3)
        assert np.isfinite(r["u"]).all() and r["seconds"]["total"] > 0
        errors.append(r["l2_error"])
    # O(h^(P+1)) for u and q, O(h^(P+2)) for u*: halving h divides them by 8 and 16.
    assert errors[0]["u"] / errors[1]["u"] > 6.0
    assert errors[0]["q"] / errors[1]["q"] > 6.0
    assert errors[0]["u_star"] / errors[1]["u_star"] > 12.0


@pytest.mark.parametrize("backend", DEVICES)
def test_hdg_poisson_device_matches_cpu(backend):
    kw = dict(exact="exp(x)*cos(2*y)", lambda_=1.5, precond="amg")
    ref = galerkin.hdg_poisson("perturbed:6", 3, **kw)
    got = galerkin.hdg_poisson("perturbed:6", 3, backend=backend, **kw)
    assert got["converged"] and got["precond"] == "amg" and got["amg"]["levels"] >= 1
    for f in ("u", "q", "u_star"):
        assert np.abs(got[f] - ref[f]).max() <= 1e-7 * np.abs(ref[f]).max()
    assert abs(got["l2_error"]["u"] - ref["l2_error"]["u"]) <= 1e-3 * ref["l2_error"]["u"]


def test_hdg_poisson_refuses_bad_input():
    with pytest.raises(ValueError, match="precond"):
        galerkin.hdg_poisson("square:2", 1, precond="ilu")
    with pytest.raises(ValueError, match="positive integer"):
        galerkin.hdg_poisson("square:x", 1)
    with pytest.raises(ValueError, match="exact"):
        galerkin.hdg_poisson("square:2", 1, rhs="1", dirichlet="0", exact="1/0")
    with pytest.raises(ValueError, match="rhs"):
        galerkin.hdg_poisson("square:2", 1, rhs="x +* y")
    with pytest.raises(ValueError):
        galerkin.hdg_poisson("square:2", 0)
    with pytest.raises(ValueError, match="rtol"):
        galerkin.hdg_poisson("square:2", 1, rtol=2.0)
    with pytest.raises(MemoryError):
        galerkin.hdg_poisson("square:65536", 9)
    with pytest.raises(OSError):
        galerkin.hdg_poisson("/no/such/mesh.msh", 1)
    # No exact solution: no errors, still converged.
    r = galerkin.hdg_poisson("square:3", 1, rhs="1")
    assert r["converged"] and r["l2_error"] is None


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("solver,precision", [("fmg", "f64"), ("cg", "f64"), ("gmres", "mixed")])
def test_poisson_mg_converges_and_its_error_falls_at_rate_k_plus_1(backend, solver, precision):
    coarse = galerkin.poisson_mg(2, 2, 3, solver=solver, precision=precision, backend=backend)
    fine = galerkin.poisson_mg(2, 2, 4, solver=solver, precision=precision, backend=backend)
    for r in (coarse, fine):
        assert r["converged"] and r["relative_residual"] <= 1e-9
        assert r["iterations"] >= 1 and len(r["residual_history"]) >= 1
    n1 = 2 * 16 + 1
    assert fine["u"].shape == (n1, n1) and fine["nodes"].shape == (n1,)
    # The nodal solution against the exact sin(πx) sin(πy) at the nodes.
    x = fine["nodes"]
    exact = np.outer(np.sin(np.pi * x), np.sin(np.pi * x))
    assert np.abs(fine["u"] - exact).max() < 1e-3
    rate = np.log2(coarse["l2_error"] / fine["l2_error"])
    assert rate > 2.8, rate


def test_poisson_mg_3d_and_bad_input():
    r = galerkin.poisson_mg(3, 2, 2, rhs="one", keep_solution=False)
    assert r["converged"] and r["l2_error"] is None and r["u"] is None
    assert r["dofs"] == 9**3 and r["memory_bytes_estimate"] > 0
    assert r["patch_form"] == "fused"
    # The split form: the same solve.
    s = galerkin.poisson_mg(3, 2, 2, rhs="one", keep_solution=False, patch_form="split")
    assert s["patch_form"] == "split" and s["converged"]
    assert s["iterations"] == r["iterations"]
    assert abs(s["relative_residual"] - r["relative_residual"]) <= 1e-3 * r["relative_residual"]
    for kw, word in [
        (dict(dim=4), "dim"),
        (dict(degree=11), "degree"),
        (dict(levels=0), "levels"),
        (dict(tol=2.0), "tol"),
        (dict(solver="sor"), "solver"),
        (dict(smoother="gs"), "smoother"),
        (dict(scatter="magic"), "scatter"),
        (dict(patch_form="halved"), "patch_form"),
        (dict(rhs="cosine"), "rhs"),
    ]:
        with pytest.raises(ValueError, match=word):
            galerkin.poisson_mg(**kw)
    with pytest.raises((ValueError, MemoryError)):
        galerkin.poisson_mg(3, 10, 12)


@pytest.mark.parametrize("backend", ALL)
def test_maxwell_cavity(backend):
    r = galerkin.maxwell("box:2", 3, final_time=0.1, backend=backend)
    assert r["unphysical"] is None and r["l2_error_is_exact"]
    assert r["l2_error"] < 1e-2 and r["steps"] >= 1
    assert r["energy_final"] <= r["energy_initial"] * (1 + 1e-12)
    assert r["energy_history"].shape[1] == 2 and r["energy_history"][0, 0] == 0.0
    n = r["dofs"] // 6
    assert r["fields"].shape == (6, n) and r["nodes"].shape == (3, n)
    # The fields near the mode at the final time: E_z = sin(πx) sin(πy) cos(ωt).
    x, y = r["nodes"][0], r["nodes"][1]
    t = r["final_time"]
    ez = np.sin(np.pi * x) * np.sin(np.pi * y) * np.cos(np.pi * np.sqrt(2.0) * t)
    # (pointwise on two cells per direction: a wrong component or node order is off by O(1))
    assert np.abs(r["fields"][2] - ez).max() < 0.15
    # Halving h: the error falls by about 2^N.
    fine = galerkin.maxwell("box:4", 3, final_time=0.1, backend=backend, keep_fields=False)
    assert fine["fields"] is None
    assert r["l2_error"] / fine["l2_error"] > 6.0


def test_maxwell_refuses_bad_input():
    for kw, word in [
        (dict(order=10), "order"),
        (dict(mode=(0, 0, 1)), "mode"),
        (dict(final_time=-1.0), "final_time"),
        (dict(cfl=3.0), "cfl"),
        (dict(flux="lax"), "flux"),
        (dict(precision="mixed"), "precision"),
        (dict(mesh="box:0"), "box"),
        (dict(mesh="missing.msh"), "missing.msh"),
        (dict(absorbing=[3]), "absorbing"),
        (dict(final_time=1e300), "time steps"),
    ]:
        with pytest.raises(ValueError, match=word):
            galerkin.maxwell(**kw)


# --- vectors and DLPack -----------------------------------------------------------------


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vector_round_trip(backend, dtype):
    rng = np.random.default_rng(31)
    data = rng.standard_normal(1001)
    v = galerkin.Vector(data, backend=backend, dtype=dtype)
    assert len(v) == 1001 and v.shape == (1001,) and v.backend == backend and v.dtype == dtype
    out = v.to_numpy()
    assert out.dtype == np.dtype(dtype)
    assert np.array_equal(out, data.astype(dtype))
    assert galerkin.from_dlpack(v) is v
    assert "Vector" in repr(v)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cpu_vector_speaks_dlpack_without_a_copy(dtype):
    data = np.random.default_rng(32).standard_normal(257).astype(dtype)
    v = galerkin.Vector(data, dtype=np.dtype(dtype).name)
    assert v.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(v)
    assert view.ctypes.data == v.data_ptr
    assert np.array_equal(view, data)
    del v
    gc.collect()
    assert np.array_equal(view, data), "the exported memory must outlive the Vector object"
    # Back without a copy: the view of the vector's memory is the vector.
    v = galerkin.Vector(data, dtype=np.dtype(dtype).name)
    view = np.from_dlpack(v)
    assert galerkin.from_dlpack(view) is v
    # A slice of it is other memory (another length): copied.
    part = galerkin.from_dlpack(view[1:])
    assert part is not v and np.array_equal(part.to_numpy(), data[1:])
    # NumPy's own memory is copied into a new vector.
    w = galerkin.from_dlpack(data)
    assert w.data_ptr != data.ctypes.data and np.array_equal(w.to_numpy(), data)
    with pytest.raises(ValueError, match="1-D"):
        galerkin.from_dlpack(np.ones((2, 2)))
    with pytest.raises(ValueError, match="contiguous"):
        galerkin.from_dlpack(np.arange(10.0)[::2])
    with pytest.raises(ValueError, match="float"):
        galerkin.from_dlpack(np.arange(10))
    with pytest.raises(TypeError):
        galerkin.from_dlpack([1.0, 2.0])


def test_unused_capsule_frees_its_tensor():
    v = galerkin.Vector(np.ones(10))
    for _ in range(1000):
        v.__dlpack__()
    gc.collect()
    assert np.array_equal(v.to_numpy(), np.ones(10))


@pytest.mark.skipif("wgpu" not in BACKENDS, reason="no wgpu device")
def test_wgpu_vector_has_no_dlpack_export():
    v = galerkin.Vector(np.ones(4), backend="wgpu")
    assert v.__dlpack_device__()[0] == 7
    with pytest.raises(BufferError, match="to_numpy"):
        v.__dlpack__()


@pytest.mark.skipif("cuda" not in BACKENDS, reason="no CUDA device")
def test_cuda_dlpack_with_torch_and_cupy():
    data = np.random.default_rng(33).standard_normal(100_003)
    v = galerkin.Vector(data, backend="cuda")
    assert v.__dlpack_device__() == (2, 0)
    seen = 0
    try:
        import torch

        t = torch.from_dlpack(v)
        assert t.device.type == "cuda" and t.data_ptr() == v.data_ptr
        assert np.array_equal(t.cpu().numpy(), data)
        assert galerkin.from_dlpack(t) is v, "galerkin's own memory comes back without a copy"
        # A matrix on the device times the vector, the product to torch: no host round trip.
        n = 100_003
        a = sp.diags([np.full(n - 7, -0.5), np.full(n, 3.0), np.full(n - 1000, 0.25)], [-7, 0, 1000], format="csr")
        m = galerkin.SparseMatrix(a, backend="cuda")
        y = m @ v
        ty = torch.from_dlpack(y)
        assert ty.device.type == "cuda" and ty.data_ptr() == y.data_ptr
        assert np.allclose(ty.cpu().numpy(), a @ data, rtol=1e-12, atol=1e-12)
        back = galerkin.from_dlpack(t * 2.0)
        assert back.backend == "cuda" and np.array_equal(back.to_numpy(), 2.0 * data)
        seen += 1
    except ImportError:
        pass
    try:
        import cupy

        c = cupy.from_dlpack(v)
        assert c.data.ptr == v.data_ptr
        assert np.array_equal(cupy.asnumpy(c), data)
        assert galerkin.from_dlpack(c) is v
        back = galerkin.from_dlpack(c + 1.0)
        assert np.array_equal(back.to_numpy(), data + 1.0)
        seen += 1
    except ImportError:
        pass
    assert seen > 0, "neither torch nor cupy is installed"
