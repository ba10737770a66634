#!/usr/bin/env bash
# Distributed runs on the GPU machine (issue 14): correctness of CPU, wgpu and CUDA ranks
# sharing the one GPU, the overhead of several ranks per GPU, CPU scaling on its cores, and
# the host<->device bandwidth the halo staging pays. Staged with
#   GPU_FEATURES=cuda,wgpu,mpi ../shared/gpu/pack --test distributed --example solve
#   mkdir -p .gpu/mpi-debs && cp <Open MPI .debs> .gpu/mpi-debs/   (if the image has no MPI)
# and run as `source .gpu/setup.sh; benches/gpu/dist.sh`. Full outputs go to $OUT.
# PROFILE=1: exact per-rank compute/halo split (`solve --profile`: a device sync per SpMV).
# TWO=1: on a machine with two GPUs, one GPU per rank (checks, then CG on 1 and 2 ranks).
set -uo pipefail
out=${OUT:-/tmp}
if ! command -v mpirun >/dev/null; then
  echo "no mpirun in the image: unpacking the carried Open MPI packages"
  for f in .gpu/mpi-debs/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
mpirun --version | head -1
echo "cores: $(nproc)"
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 300 mpirun --allow-run-as-root --oversubscribe"
checks=$(ls .gpu/bin/dist-* | head -1)
solve=.gpu/bin/solve

echo "== checks (CPU, wgpu and CUDA ranks; several ranks share the GPU)"
for np in 1 2 4; do
  GALERKIN_DIST_CHILD=1 GALERKIN_DIST_N=${N:-12} GALERKIN_DIST_SEED=7 $mpi -np $np "$checks" \
    > "$out/checks-$np.txt" 2>&1
  echo "np=$np rc=$? $(grep -c 'iterations (one process' "$out/checks-$np.txt") solver comparisons;" \
    "$(grep -E 'dist checks passed|panic' "$out/checks-$np.txt" | head -2 | tr '\n' ' ')"
done
grep -E "cuda:|wgpu:|PCG-Jacobi|mixed|GMRES" "$out/checks-4.txt" | head -12

summary() {
  python3 -c '
import json, sys
label = sys.argv[1]
for line in sys.stdin:
    if not line.startswith("{"): continue
    j = json.loads(line); k = max(j["iterations"], 1); r = j.get("per_rank", [])
    w = lambda key: max((x[key] for x in r), default=0.0) / k * 1e6
    print("%-12s %-5s np=%d rows=%d it=%d time=%.3fs %.1f us/it compute=%.1f halo=%.1f reduce=%.1f conv=%s" % (
        label, j["backend"], j["ranks"], j["rows"], j["iterations"], j["time_s"],
        j["time_s"] / k * 1e6, w("compute_s"), w("halo_s"), w("reduce_s"), j["converged"]))
' "$1"
}
if [ -n "${TWO:-}" ]; then
  # On a machine with several GPUs (nvidia-h100-x2): one GPU per rank (the default device of
  # a rank is its node rank modulo the devices).
  nvidia-smi -L
  GALERKIN_DIST_CHILD=1 GALERKIN_DIST_N=${N:-12} GALERKIN_DIST_SEED=7 $mpi -np 2 "$checks" \
    > "$out/checks-two.txt" 2>&1
  echo "checks np=2 rc=$? $(grep -c 'iterations (one process' "$out/checks-two.txt") solver comparisons"
  echo "== one GPU per rank (PCG-Jacobi to 1e-8); 'single' is the one-process solve"
  for be in cuda wgpu; do
    for m in ${GPU_MATRICES:-poisson7:256 fvm-tet:120}; do
      "$solve" --backend $be --matrix "$m" --json --warmup 2>/dev/null | summary "$m single"
      for np in 1 2; do
        $mpi -np $np "$solve" --backend $be --matrix "$m" --partition metis --json --warmup \
          2> "$out/err-two-$be-$np.txt" | summary "$m"
      done
    done
  done
  exit 0
fi
echo "== several ranks sharing one GPU (PCG-Jacobi to 1e-8); 'single' is the one-process solve"
for be in cuda wgpu; do
  for m in ${GPU_MATRICES:-poisson7:128 fvm-tet:60}; do
    "$solve" --backend $be --matrix "$m" --json --warmup 2>/dev/null | summary "$m single"
    for np in 1 2 4; do
      $mpi -np $np "$solve" --backend $be --matrix "$m" --partition metis --json --warmup ${PROFILE:+--profile} 2> "$out/err-$be-$np.txt" \
        | summary "$m"
    done
  done
done
if command -v nvidia-cuda-mps-control >/dev/null && [ -z "${NO_MPS:-}" ]; then
  echo "== the same on CUDA with the MPS daemon (ranks' kernels may run concurrently)"
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  if nvidia-cuda-mps-control -d; then
    for m in ${GPU_MATRICES:-poisson7:128 fvm-tet:60}; do
      for np in 1 2 4; do
        $mpi -np $np "$solve" --backend cuda --matrix "$m" --partition metis --json --warmup 2>> "$out/err-mps.txt" \
          | summary "$m MPS"
        $mpi -np $np "$solve" --backend cuda --matrix "$m" --partition metis --json --warmup --profile \
          2>> "$out/err-mps.txt" | summary "$m MPS exact"
      done
    done
    echo quit | nvidia-cuda-mps-control
  else
    echo "MPS daemon did not start"
  fi
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
if [ -n "${BIG:-}" ]; then
  echo "== Poisson 7-point 256^3 on CUDA: one process, and 1-2 ranks with MPS"
  "$solve" --backend cuda --matrix poisson7:256 --json --warmup 2>/dev/null | summary "p256 single"
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  nvidia-cuda-mps-control -d && for np in 1 2; do
    $mpi -np $np "$solve" --backend cuda --matrix poisson7:256 --json --warmup 2>/dev/null | summary "p256 MPS"
  done
  echo quit | nvidia-cuda-mps-control
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
[ -n "${NO_CPU:-}" ] && exit 0
echo "== CPU ranks, strong (fvm-tet:60) and weak (~384k rows per rank), 1 thread per rank"
for np in 1 2 4 8; do
  RAYON_NUM_THREADS=1 $mpi -np $np "$solve" --matrix fvm-tet:60 --partition metis --json | summary strong
done
n=([1]=40 [2]=50 [4]=63 [8]=80)
for np in 1 2 4 8; do
  RAYON_NUM_THREADS=1 $mpi -np $np "$solve" --matrix "fvm-tet:${n[$np]}" --partition metis --json | summary weak
done
echo "== host<->device copy bandwidth (what the staged halo pays), PyTorch"
python3 - <<'PY'
import torch, time
for nbytes in (1 << 20, 1 << 24):
    n = nbytes // 8
    d = torch.empty(n, dtype=torch.float64, device="cuda")
    for pinned in (False, True):
        h = torch.empty(n, dtype=torch.float64, pin_memory=pinned)
        for name, f in (("H2D", lambda: d.copy_(h)), ("D2H", lambda: h.copy_(d))):
            for _ in range(3): f()
            torch.cuda.synchronize(); t = time.perf_counter()
            for _ in range(20): f()
            torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 20
            print(f"{name} {nbytes >> 20:>3} MiB {'pinned  ' if pinned else 'pageable'}: {nbytes / dt / 1e9:6.1f} GB/s, {dt * 1e6:8.1f} us")
PY
