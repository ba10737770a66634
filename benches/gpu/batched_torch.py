"""Vendor baseline for the batched suite: PyTorch (cuBLAS / cuSOLVER / MAGMA) on the same
shapes and counts as `bench --suite batched` (count = ceil(1e9 · scale / (3 n² · size))),
symmetric diagonally dominant matrices, CUDA events, median of REPS.

    python3 benches/gpu/batched_torch.py [scale]
"""
import math
import sys

import torch

REPS = 20
SIZES = [4, 8, 10, 16, 20, 27, 32, 35, 56, 64]


def median_us(f, reps=REPS, warmup=3):
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    scale = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    dev = torch.cuda.get_device_name(0)
    print(f"\n# PyTorch {torch.__version__} on {dev} (CUDA events, median of {REPS})")
    print(f"{'bknd':<6} {'prec':<4} {'n':>3} {'count':>8} {'op':<30} {'time(us)':>10} {'GB/s':>8} {'GFLOP/s':>9}")
    for n in SIZES:
        for dtype, name in ((torch.float64, "f64"), (torch.float32, "f32")):
            size = torch.tensor([], dtype=dtype).element_size()
            count = max(1, math.ceil(1e9 * scale / (3 * n * n * size)))
            g = torch.Generator(device="cuda").manual_seed(n)
            a = torch.rand(count, n, n, device="cuda", dtype=dtype, generator=g) * 2 - 1
            a = (a + a.transpose(1, 2)) / 2 + (n + 1) * torch.eye(n, device="cuda", dtype=dtype)
            b = torch.rand(count, n, n, device="cuda", dtype=dtype, generator=g)
            mat = count * n * n * size
            n3 = count * n ** 3

            def row(op, t, moved, flops):
                print(f"{'torch':<6} {name:<4} {n:>3} {count:>8} {op:<30} {t:>10.1f} {moved / t / 1e3:>8.1f} {flops / t / 1e3:>9.1f}")

            row("bmm C=AB", median_us(lambda: torch.bmm(a, b)), 3 * mat, 2 * n3)
            a0 = a[:1].expand(count, n, n)
            row("bmm C=A0 B (shared A)", median_us(lambda: torch.bmm(a0, b)), 2 * mat, 2 * n3)
            row("lu_factor", median_us(lambda: torch.linalg.lu_factor(a)), 2 * mat, 2 / 3 * n3)
            row("cholesky", median_us(lambda: torch.linalg.cholesky(a)), 2 * mat, n3 / 3)
            lu, piv = torch.linalg.lu_factor(a)
            row("lu_solve n rhs", median_us(lambda: torch.linalg.lu_solve(lu, piv, b)), 3 * mat, 2 * n3)
            l = torch.linalg.cholesky(a)
            row("cholesky_solve n rhs", median_us(lambda: torch.cholesky_solve(b, l)), 3 * mat, 2 * n3)
            del lu, piv, l
            row("inv", median_us(lambda: torch.linalg.inv(a)), 2 * mat, 2 * n3)
            del a, b, a0
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
