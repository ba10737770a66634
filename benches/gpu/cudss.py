"""NVIDIA cuDSS (nvmath-python's sparse direct solver) on one matrix, the anchor issue 42
asks for beside our AMG-preconditioned CG: analysis (reordering and symbolic factorization),
numeric factorization and solve, each timed on the host around a device synchronisation, the
second of two runs reported (the first loads the library), with the relative residual of the
answer. The matrix is either a raw CSR dump of `bench --suite amg --dump DIR` (BASE.txt,
BASE.row_ptr, BASE.col_idx, BASE.values) or a Matrix Market file (`hdg_poisson --write-trace`).

    python3 benches/gpu/cudss.py BASE|FILE.mtx [spd|general]

Prints one JSON line: {matrix, rows, nnz, analysis_s, factorize_s, solve_s, total_s,
relative_residual}. cuDSS 0.8 (the version nvmath-python 1.0 requires) comes as wheels carried
to the GPU machine (benches/gpu/cudss.sh).
"""
import ctypes
import glob
import json
import os
import sys
import time


def preload():
    """Loads cuDSS and the CUDA 13 libraries it needs from the Python path, where the
    carried wheel and the machine's own `nvidia-*` packages put them."""
    for name in ("libnvrtc.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcudss.so.0"):
        found = [p for d in sys.path for p in glob.glob(os.path.join(d, "nvidia", "*", "lib", name))]
        if not found:
            sys.exit(f"cudss.py: {name} not found on the Python path")
        ctypes.CDLL(found[0], mode=ctypes.RTLD_GLOBAL)


def load(path):
    if path.endswith(".mtx"):
        import cupy as cp
        import cupyx.scipy.sparse as cpsp
        import pandas as pd

        skip = 0
        with open(path) as f:
            for line in f:
                skip += 1
                if not line.startswith("%"):
                    n, m, nnz = (int(v) for v in line.split())
                    break
        t = pd.read_csv(path, sep=r"\s+", header=None, skiprows=skip, names=["i", "j", "v"], engine="c")
        assert len(t) == nnz, (len(t), nnz)
        coo = cpsp.coo_matrix(
            (cp.asarray(t["v"].to_numpy()), (cp.asarray(t["i"].to_numpy() - 1), cp.asarray(t["j"].to_numpy() - 1))),
            shape=(n, m),
        )
        return coo.tocsr()
    from spgemm_cusparse import load as load_dump  # the dump's reader, same directory

    return load_dump(path)[0]


def main():
    path = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "spd"
    preload()
    import cupy as cp
    from nvmath.sparse.advanced import DirectSolver, DirectSolverMatrixType, DirectSolverOptions

    a = load(path)
    n = a.shape[0]
    rng = cp.random.default_rng(7)
    x_true = rng.uniform(-1.0, 1.0, n)
    b = a @ x_true
    matrix_type = DirectSolverMatrixType.SPD if kind == "spd" else DirectSolverMatrixType.GENERAL
    # The host phases (reordering, symbolic factorization) multithreaded through cuDSS's
    # OpenMP layer, from the same wheel: without it the analysis runs on one core.
    mt = [p for d in sys.path for p in glob.glob(os.path.join(d, "nvidia", "*", "lib", "libcudss_mtlayer_gomp.so.0"))]
    options = DirectSolverOptions(sparse_system_type=matrix_type, multithreading_lib=mt[0] if mt else None)
    sync = cp.cuda.Device().synchronize
    for run in range(2):
        sync()
        t0 = time.perf_counter()
        with DirectSolver(a, b, options=options) as solver:
            solver.plan()
            sync()
            t1 = time.perf_counter()
            solver.factorize()
            sync()
            t2 = time.perf_counter()
            x = solver.solve()
            sync()
            t3 = time.perf_counter()
    r = b - a @ x
    print(
        json.dumps(
            {
                "matrix": os.path.basename(path),
                "rows": n,
                "nnz": int(a.nnz),
                "analysis_s": t1 - t0,
                "factorize_s": t2 - t1,
                "solve_s": t3 - t2,
                "total_s": t3 - t0,
                "relative_residual": float(cp.linalg.norm(r) / cp.linalg.norm(b)),
            }
        )
    )


if __name__ == "__main__":
    main()
