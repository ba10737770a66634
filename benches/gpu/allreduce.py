"""The Krylov solvers' global sums over GPUs: what one costs through the host (the device's
partial sums read, then MPI's all-reduce of a few doubles, as `distributed::cg` does) against
through NCCL on the device (the all-reduce on the device, then the read the solver needs for its
next step). Run one rank per GPU under mpirun (benches/gpu/multi.sh does):

    mpirun -np 2 python3 benches/gpu/allreduce.py

Prints, on rank 0, the median microseconds of each way for 1, 3 and 8 doubles.
"""
import os
import statistics
import time

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
import torch  # noqa: E402  (after MPI_Init, as the solvers start)
import torch.distributed as dist  # noqa: E402

torch.cuda.set_device(rank % torch.cuda.device_count())
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=rank, world_size=size)


def timed(f, reps=2000, warm=200):
    for _ in range(warm):
        f()
    samples = []
    for _ in range(5):
        comm.Barrier()
        t = time.perf_counter()
        for _ in range(reps):
            f()
        samples.append((time.perf_counter() - t) / reps * 1e6)
    return statistics.median(samples)


for k in (1, 3, 8):
    d = torch.ones(k, dtype=torch.float64, device="cuda")
    h = np.empty(k)

    def host():
        # The device's partial sums to the host (a sync), then MPI across the ranks.
        comm.Allreduce(d.cpu().numpy(), h)

    def device():
        dist.all_reduce(d)
        d.cpu()  # the solver needs the sums on the host for its next step

    def read_only():
        d.cpu()

    t_read, t_host, t_dev = timed(read_only), timed(host), timed(device)
    if rank == 0:
        print(
            f"all-reduce of {k} f64 over {size} GPUs: read alone {t_read:6.1f} us, "
            f"read + MPI {t_host:6.1f} us, NCCL + read {t_dev:6.1f} us"
        )
dist.destroy_process_group()
