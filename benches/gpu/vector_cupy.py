"""Vendor baseline for the vector suite: the same operations through CuPy (cuBLAS and
CuPy's elementwise kernels) on the same sizes, timed with CUDA events (median of REPS).

    python3 benches/gpu/vector_cupy.py [log2 sizes, default 26 27 28]

Prints rows in the same columns as `examples/bench` so the tables can be read side by side.
"""
import sys

import cupy as cp
from cupy import cublas

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
    sizes = [int(a) for a in sys.argv[1:]] or [26, 27, 28]
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"\n# cupy {cp.__version__} on {dev} (CUDA events, median of {REPS})")
    print(f"{'backend':<10} {'prec':<4} {'n':<5} {'op':<18} {'time(us)':>10} {'GB/s':>9} {'of copy':>8}")
    axpy_kernel = cp.ElementwiseKernel("T a, T x", "T y", "y = a * x + y", "galerkin_axpy")
    for log2 in sizes:
        n = 1 << log2
        for dtype, name in ((cp.float32, "f32"), (cp.float64, "f64")):
            rng = cp.random.default_rng(1)
            x = rng.standard_normal(n, dtype=dtype)
            y = rng.standard_normal(n, dtype=dtype)
            nbytes = n * x.itemsize
            a = dtype(1e-3)
            rows = []
            t_copy = median_us(lambda: cp.copyto(y, x))
            copy_bw = 2 * nbytes / t_copy / 1e3

            def row(op, moved, t):
                bw = moved * nbytes / t / 1e3
                print(f"{'cupy':<10} {name:<4} 2^{log2:<3} {op:<18} {t:>10.1f} {bw:>9.1f} {100 * bw / copy_bw:>7.1f}%")

            row("copy (copyto)", 2, t_copy)
            row("axpy (cublas)", 3, median_us(lambda: cublas.axpy(a, x, y)))
            row("axpy (elementwise)", 3, median_us(lambda: axpy_kernel(a, x, y)))
            row("dot (on device)", 2, median_us(lambda: cp.dot(x, y)))
            row("dot (cublas, dev)", 2, median_us(lambda: cublas.dot(x, y)))
            row("dot (to host)", 2, median_us(lambda: float(cp.dot(x, y))))
            row("nrm2 (to host)", 1, median_us(lambda: float(cp.linalg.norm(x))))
            del x, y
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
