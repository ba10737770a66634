"""Vendor baseline for the AMG suite's SpGEMMs: cuSPARSE through CuPy on the exact level
matrices the Rust bench dumped (`bench --suite amg --dump DIR`): the transpose `R = Pᵀ`,
`A·P` and `R·(A P)`, each timed with CUDA events (median of REPS after a warm-up), f64,
beside our times and nonzero counts from the dump.

    python3 benches/gpu/spgemm_cusparse.py DIR
"""
import glob
import os
import sys

import cupy as cp
import cupyx.scipy.sparse as cpsp
import numpy as np

from spmv_cusparse import median_us  # CUDA-event timing, same directory

REPS = 5


def median_ms(f, reps=REPS, warmup=1):
    return median_us(f, reps=reps, warmup=warmup) / 1e3


def load(base):
    header = open(base + ".txt").read().split()
    nrows, ncols, nnz = (int(v) for v in header[:3])
    row_ptr = np.fromfile(base + ".row_ptr", dtype=np.uint32).astype(np.int32)
    col_idx = np.fromfile(base + ".col_idx", dtype=np.uint32).astype(np.int32)
    values = np.fromfile(base + ".values", dtype=np.float64)
    assert len(values) == nnz and len(row_ptr) == nrows + 1
    m = cpsp.csr_matrix((cp.asarray(values), cp.asarray(col_idx), cp.asarray(row_ptr)), shape=(nrows, ncols))
    return m, header[3:]


def main():
    directory = sys.argv[1]
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n# cuSPARSE SpGEMM (CuPy {cp.__version__}) on {dev}: CUDA events, ms, median of {REPS}; ours from the dump")
    print(
        f"{'level':<22} {'nnz(AP)':>10} {'nnz(RAP)':>10} {'Pᵀ ours':>8} {'cuSP':>8} {'A·P ours':>9} {'cuSP':>8} {'x':>6}"
        f" {'RAP ours':>9} {'cuSP':>8} {'x':>6}"
    )
    for header in sorted(glob.glob(os.path.join(directory, "*_P.txt"))):
        name = os.path.basename(header)[: -len("_P.txt")]
        base = os.path.join(directory, name)
        a, _ = load(base + "_A")
        p, ours = load(base + "_P")
        ours_ap_nnz, ours_rap_nnz = int(ours[0]), int(ours[1])
        ours_tr, ours_ap, ours_rap = (float(v) for v in ours[2:5])
        t_tr = median_ms(lambda: p.T.tocsr())
        r = p.T.tocsr()
        t_ap = median_ms(lambda: a @ p)
        ap = a @ p
        t_rap = median_ms(lambda: r @ ap)
        rap = r @ ap
        same = "" if (ap.nnz, rap.nnz) == (ours_ap_nnz, ours_rap_nnz) else f"  (cuSPARSE nnz {ap.nnz}, {rap.nnz})"
        print(
            f"{name:<22} {ours_ap_nnz:>10} {ours_rap_nnz:>10} {ours_tr:>8.2f} {t_tr:>8.2f} {ours_ap:>9.2f} {t_ap:>8.2f} {t_ap / ours_ap:>5.2f}x"
            f" {ours_rap:>9.2f} {t_rap:>8.2f} {t_rap / ours_rap:>5.2f}x{same}"
        )
        del a, p, r, ap, rap
        cp.get_default_memory_pool().free_all_blocks()
    print("x: cuSPARSE's time over ours (above 1: ours faster)")


if __name__ == "__main__":
    main()
