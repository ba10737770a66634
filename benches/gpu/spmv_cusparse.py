"""Vendor baseline for the SpMV suite: cuSPARSE CSR SpMV through CuPy on the exact matrices
the Rust bench dumped (`bench --suite spmv --dump DIR`), timed with CUDA events (median of
REPS), f64 and f32 (mixed precision has no cuSPARSE equivalent).

    python3 benches/gpu/spmv_cusparse.py DIR

Bytes counted as for galerkin's CSR: values + column indices + row offsets + x + y, once.
"""
import glob
import os
import sys

import cupy as cp
import cupyx.scipy.sparse as cpsp
import numpy as np

REPS = 30


def median_us(f, reps=REPS, warmup=3):
    for _ in range(warmup):
        f()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    directory = sys.argv[1]
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n# cuSPARSE (CuPy {cp.__version__}) on {dev}: CSR SpMV, CUDA events, median of {REPS}")
    print(f"{'backend':<10} {'matrix':<16} {'prec':<6} {'format':<28} {'time(us)':>9} {'GB/s':>8} {'GFLOP/s':>8}")
    for header in sorted(glob.glob(os.path.join(directory, "*.txt"))):
        name = os.path.basename(header)[:-4]
        nrows, ncols, nnz = (int(v) for v in open(header).read().split())
        base = os.path.join(directory, name)
        row_ptr = np.fromfile(base + ".row_ptr", dtype=np.uint32).astype(np.int32)
        col_idx = np.fromfile(base + ".col_idx", dtype=np.uint32).astype(np.int32)
        values = np.fromfile(base + ".values", dtype=np.float64)
        for dtype, prec in ((np.float64, "f64"), (np.float32, "f32")):
            a = cpsp.csr_matrix(
                (cp.asarray(values.astype(dtype)), cp.asarray(col_idx), cp.asarray(row_ptr)), shape=(nrows, ncols)
            )
            x = cp.ones(ncols, dtype=dtype)
            t = median_us(lambda: a @ x)
            size = np.dtype(dtype).itemsize
            moved = nnz * (size + 4) + (nrows + 1) * 4 + (nrows + ncols) * size
            print(f"{'cusparse':<10} {name:<16} {prec:<6} {'csr (cupy @)':<28} {t:>9.1f} {moved / t / 1e3:>8.1f} {2 * nnz / t / 1e3:>8.1f}")
            del a, x
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
