"""Per-call overhead of the Python package over the Rust call, and a Poisson 7-point CG solve
from Python beside the Rust `solve` example (same matrix, solver, backend, warm).

    python benches/python/overhead.py [--backend cpu|cuda|wgpu] [--n 256] [--solve-bin PATH] [--json]

Overhead: `galerkin.spmv(A, x)` of a tiny matrix (SciPy CSR, 64 rows) timed from Python,
minus `_galerkin.time_spmv`, the same Rust work timed in Rust over the same number of calls;
the two interleaved over 9 rounds, medians.
Solve: `galerkin.solve(A, b, solver="cg", precond="jacobi", warmup=True)` on SciPy's Poisson
7-point n^3 matrix, b = A·1; its `seconds` (the iterations, timed in Rust) and the Python
call's wall time, against the example's `time_s` with `--warmup` (skipped without
--solve-bin)."""

import argparse
import json
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

import galerkin
from galerkin import _galerkin


def poisson7(n):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    i = sp.identity(n, format="csr")
    return (sp.kron(sp.kron(t, i), i) + sp.kron(sp.kron(i, t), i) + sp.kron(sp.kron(i, i), t)).tocsr()


def overhead(backend, repeat, rounds=9):
    """Python and Rust timings interleaved over `rounds` rounds of `repeat` calls each (so that
    both see the same machine state); the medians and the minima per call."""
    a = poisson7(4)  # 64 rows
    x = np.random.default_rng(1).standard_normal(a.shape[0])
    indptr, indices = a.indptr, a.indices  # what galerkin.spmv hands over (SciPy's int32)
    for _ in range(50):
        galerkin.spmv(a, x, backend=backend)
    py, rs = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeat):
            galerkin.spmv(a, x, backend=backend)
        py.append((time.perf_counter() - t0) / repeat)
        rs.append(_galerkin.time_spmv(indptr, indices, a.data, a.shape, x, repeat, backend=backend))
    med = lambda v: float(np.median(v)) * 1e6
    return {
        "python_us": med(py),
        "rust_us": med(rs),
        "overhead_us": med(py) - med(rs),
        "overhead_min_us": (min(py) - min(rs)) * 1e6,
        "rounds": rounds,
    }


def solve(backend, n, solve_bin):
    t0 = time.perf_counter()
    a = poisson7(n)
    b = a @ np.ones(a.shape[0])
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    x, info = galerkin.solve(a, b, solver="cg", precond="jacobi", backend=backend, warmup=True, max_iter=5000)
    wall = time.perf_counter() - t0
    out = {
        "rows": a.shape[0],
        "scipy_build_s": build,
        "python_iterations": info["iterations"],
        "python_seconds": info["seconds"],
        "python_call_wall_s": wall,
        "python_converged": info["converged"],
        "python_relative_residual": info["relative_residual"],
    }
    if solve_bin:
        cmd = [solve_bin, "--matrix", f"poisson7:{n}", "--backend", backend, "--solver", "cg",
               "--precond", "jacobi", "--warmup", "--max-iter", "5000", "--json"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        rust_wall = time.perf_counter() - t0
        if r.returncode not in (0, 3):
            raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr[-2000:]}")
        v = json.loads(r.stdout)
        out.update({
            "rust_iterations": v["iterations"],
            "rust_seconds": v["time_s"],
            "rust_process_wall_s": rust_wall,
            "python_over_rust": info["seconds"] / v["time_s"],
        })
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--n", type=int, default=64, help="Poisson n^3 (default 64; the target is 256 on a GPU)")
    p.add_argument("--repeat", type=int, default=2000)
    p.add_argument("--solve-bin", help="the Rust `solve` example, for the side-by-side solve")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.backend not in galerkin.backends():
        sys.exit(f"overhead.py: backend {args.backend} is not available here: {galerkin.backends()}")
    res = {"backend": args.backend, "overhead": overhead(args.backend, args.repeat), "solve": solve(args.backend, args.n, args.solve_bin)}
    if args.json:
        print(json.dumps(res))
        return
    o = res["overhead"]
    print(f"spmv 64 rows on {args.backend}, medians of {o['rounds']} interleaved rounds: python {o['python_us']:.1f} us, "
          f"rust {o['rust_us']:.1f} us, overhead {o['overhead_us']:.1f} us (of the minima {o['overhead_min_us']:.1f} us)")
    for k, v in res["solve"].items():
        print(f"  {k:28s} {v}")


if __name__ == "__main__":
    main()
