"""CPU baseline for the CG suite: scipy.sparse.linalg.cg on the matrices the Rust bench
dumped (`bench --suite cg --backend cpu --scale S --dump DIR`), b = A·1, rtol 1e-8.

    python3 benches/cpu/scipy_cg.py DIR
"""
import glob
import os
import sys
import time

import numpy as np
import scipy
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def main():
    directory = sys.argv[1]
    print(f"\n# scipy.sparse.linalg.cg (SciPy {scipy.__version__}), f64, b = A·1")
    for header in sorted(glob.glob(os.path.join(directory, "*.txt"))):
        name = os.path.basename(header)[:-4]
        nrows, ncols, nnz = (int(v) for v in open(header).read().split())
        base = os.path.join(directory, name)
        a = sp.csr_matrix(
            (
                np.fromfile(base + ".values", dtype=np.float64),
                np.fromfile(base + ".col_idx", dtype=np.uint32).astype(np.int32),
                np.fromfile(base + ".row_ptr", dtype=np.uint32).astype(np.int32),
            ),
            shape=(nrows, ncols),
        )
        b = a @ np.ones(ncols)
        iters = [0]

        def count(_xk):
            iters[0] += 1

        t0 = time.perf_counter()
        x, info = spla.cg(a, b, rtol=1e-8, maxiter=20000, callback=count)
        t = time.perf_counter() - t0
        rel = np.linalg.norm(b - a @ x) / np.linalg.norm(b)
        print(f"{'scipy':<10} {name:<14} {'f64':<6} {'cg':<12} to 1e-8: {t:>8.3f} s, {iters[0]} iterations, true relative residual {rel:.2e} (info {info})")


if __name__ == "__main__":
    main()
