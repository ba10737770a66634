"""Vendor baseline for the CG suite: cupyx.scipy.sparse.linalg.cg (cuSPARSE SpMV + cuBLAS)
on the matrices the Rust bench dumped (`bench --suite cg --dump DIR`), b = A·1, rtol 1e-8;
also the time per iteration over 50 iterations.

    python3 benches/gpu/cg_cupy.py DIR
"""
import glob
import os
import sys
import time

import cupy as cp
import cupyx.scipy.sparse as cpsp
import cupyx.scipy.sparse.linalg as cpla
import numpy as np


def load(base, nrows, ncols):
    row_ptr = np.fromfile(base + ".row_ptr", dtype=np.uint32).astype(np.int32)
    col_idx = np.fromfile(base + ".col_idx", dtype=np.uint32).astype(np.int32)
    values = np.fromfile(base + ".values", dtype=np.float64)
    return cpsp.csr_matrix((cp.asarray(values), cp.asarray(col_idx), cp.asarray(row_ptr)), shape=(nrows, ncols))


def run_cg(a, b, rtol, maxiter):
    try:
        return cpla.cg(a, b, tol=rtol, maxiter=maxiter)
    except TypeError:
        return cpla.cg(a, b, rtol=rtol, maxiter=maxiter)


def main():
    directory = sys.argv[1]
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n# cupyx.scipy.sparse.linalg.cg (CuPy {cp.__version__}) on {dev}, f64, b = A·1")
    for header in sorted(glob.glob(os.path.join(directory, "*.txt"))):
        name = os.path.basename(header)[:-4]
        nrows, ncols, nnz = (int(v) for v in open(header).read().split())
        a = load(os.path.join(directory, name), nrows, ncols)
        b = a @ cp.ones(ncols)
        iters = [0]

        def count(_xk):
            iters[0] += 1

        run_cg(a, b, 1e-30, 5)  # warm-up
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        try:
            x, info = cpla.cg(a, b, tol=1e-30, maxiter=50)
        except TypeError:
            x, info = cpla.cg(a, b, rtol=1e-30, maxiter=50)
        cp.cuda.Device().synchronize()
        per_iter = (time.perf_counter() - t0) / 50
        print(f"{'cupy':<10} {name:<14} {'f64':<6} {'cg':<12} per iteration {per_iter * 1e6:>8.1f} us over 50 iterations")
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        try:
            x, info = cpla.cg(a, b, tol=1e-8, maxiter=20000, callback=count)
        except TypeError:
            x, info = cpla.cg(a, b, rtol=1e-8, maxiter=20000, callback=count)
        cp.cuda.Device().synchronize()
        t = time.perf_counter() - t0
        rel = float(cp.linalg.norm(b - a @ x) / cp.linalg.norm(b))
        print(f"{'cupy':<10} {name:<14} {'f64':<6} {'cg':<12} to 1e-8: {t:>8.3f} s, {iters[0]} iterations, true relative residual {rel:.2e} (info {info})")
        del a, b, x
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
