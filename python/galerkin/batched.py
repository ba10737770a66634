"""Batched small dense matrices: ``(batch, n, n)`` arrays, n <= 64, one kernel for all.

Every factorization returns a per-matrix ``status`` array (int32): 0 where the matrix was
fine, ``k + 1`` where step ``k`` met a zero pivot (LU) or a non-positive leading minor
(Cholesky) — the other matrices of the batch are still answered. ``precision`` is ``"f64"``,
``"f32"`` (storage and arithmetic), or ``"mixed"`` (f32 storage, f64 arithmetic).

>>> import numpy as np
>>> from galerkin import batched
>>> a = np.random.default_rng(0).standard_normal((1000, 8, 8)) + 8 * np.eye(8)
>>> x, status = batched.solve(a, np.ones((1000, 8)))
>>> bool(np.allclose(np.einsum("bij,bj->bi", a, x), 1.0)), int(status.max())
(True, 0)
"""

from __future__ import annotations

import numpy as _np

from . import _galerkin

__all__ = ["gemm", "lu_factor", "lu_solve", "cholesky", "solve", "inv"]


def _stack(name, a, dims=3):
    a = _np.asarray(a)
    if a.dtype.kind == "c":
        raise ValueError(f"{name}: complex arrays are not supported")
    if a.ndim != dims:
        raise ValueError(f"{name}: expected a {dims}-D array, not shape {a.shape}")
    return _np.ascontiguousarray(a, dtype=_np.float64)


def _rhs(b, count, n):
    """``b`` as ``(batch, n, k)``, and whether it was ``(batch, n)``."""
    b = _np.asarray(b)
    vector = b.ndim == 2
    if vector:
        b = b[:, :, None]
    b = _stack("b", b)
    if b.shape[0] != count or b.shape[1] != n:
        raise ValueError(f"b: shape {b.shape[:2]} for {count} matrices of {n} rows")
    return b, vector


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, backend="cpu", precision="f64"):
    """``alpha op(a[i]) @ op(b[i]) + beta c[i]`` for every ``i``.

    ``a`` is ``(batch, m, k)`` or ``(1, m, k)`` (shared by every product), ``b`` likewise;
    ``op`` transposes where ``trans_a``/``trans_b``. ``c`` is needed when ``beta != 0``.
    Returns a new ``(batch, m, n)`` array.
    """
    return _galerkin.batched_gemm(
        _stack("a", a),
        _stack("b", b),
        None if c is None else _stack("c", c),
        alpha=float(alpha),
        beta=float(beta),
        trans_a=bool(trans_a),
        trans_b=bool(trans_b),
        backend=backend,
        precision=precision,
    )


def lu_factor(a, *, backend="cpu", precision="f64"):
    """LU with partial pivoting of every matrix, as ``scipy.linalg.lu_factor`` per matrix.

    Returns ``(lu, piv, status)``: ``lu`` holds unit-lower ``L`` and ``U``; ``piv[i, k]`` is
    the row swapped with row ``k`` at step ``k`` (0-based, as SciPy's).
    """
    lu, piv, status = _galerkin.batched_lu_factor(_stack("a", a), backend=backend, precision=precision)
    return lu, piv, status


def lu_solve(lu_and_piv, b, *, backend="cpu", precision="f64"):
    """Solves with the factors of :func:`lu_factor`: ``lu_and_piv`` is ``(lu, piv)``;
    ``b`` is ``(batch, n)`` or ``(batch, n, k)``. Returns ``x`` shaped like ``b``."""
    lu, piv = lu_and_piv[0], lu_and_piv[1]
    lu = _stack("lu", lu)
    piv = _np.ascontiguousarray(_np.asarray(piv), dtype=_np.int64)
    b, vector = _rhs(b, lu.shape[0], lu.shape[1])
    x = _galerkin.batched_lu_solve(lu, piv, b, backend=backend, precision=precision)
    return x[:, :, 0] if vector else x


def cholesky(a, *, backend="cpu", precision="f64"):
    """Cholesky ``a[i] = L[i] @ L[i].T`` of every symmetric positive definite matrix (the
    lower triangle is read). Returns ``(L, status)`` with ``L`` lower triangular."""
    l, _, status = _galerkin.batched_cholesky(_stack("a", a), backend=backend, precision=precision)
    return _np.tril(l), status


def solve(a, b, *, backend="cpu", precision="f64"):
    """``a[i] @ x[i] = b[i]`` by LU with partial pivoting. ``b`` is ``(batch, n)`` or
    ``(batch, n, k)``. Returns ``(x, status)``; ``x`` of a singular matrix is not
    meaningful (its status says so)."""
    a = _stack("a", a)
    b, vector = _rhs(b, a.shape[0], a.shape[1])
    x, _, status = _galerkin.batched_solve(a, b, backend=backend, precision=precision)
    return (x[:, :, 0] if vector else x), status


def inv(a, *, backend="cpu", precision="f64"):
    """The inverse of every matrix. Returns ``(inverse, status)``."""
    x, _, status = _galerkin.batched_inv(_stack("a", a), backend=backend, precision=precision)
    return x, status
