#!/usr/bin/env bash
# Several GPUs of one host (issue 44): one rank per GPU, the halo through host memory against
# device to device (NCCL); weak and strong scaling of CG on 1, 2 (and 4) GPUs, with the halo's
# share. Staged with
#   GPU_FEATURES=cuda,wgpu,mpi ../shared/gpu/pack --test distributed --example solve
# and run on nvidia-h200-x2 (or -x4) as `source .gpu/setup.sh; benches/gpu/multi.sh`.
# Full outputs go to $OUT. GPUS="1 2" (default: 1 up to the GPUs present, powers of two).
# PARTS="checks sums cg fvm maxwell" (default: all) picks the sections, ROUTES="host device"
# (default: both) the halo routes, e.g. to split a run
# over two calls.
# Prints one line per run: ranks, route, rows, iterations, µs per iteration, the slowest
# rank's compute / halo / reduction µs per iteration, halo µs per SpMV, efficiency.
set -uo pipefail
out=${OUT:-/tmp}
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi -L
mpirun --version | head -1
# NCCL: the library's path for the loader (GALERKIN_NCCL), from the pip package PyTorch uses.
if [ -z "${GALERKIN_NCCL:-}" ]; then
  GALERKIN_NCCL=$(python3 - <<'PY' 2>/dev/null
import glob, os
import nvidia.nccl as m
for d in m.__path__:
    hits = sorted(glob.glob(os.path.join(d, "lib", "libnccl.so*")))
    if hits:
        print(hits[0]); break
PY
)
  export GALERKIN_NCCL
fi
echo "NCCL: ${GALERKIN_NCCL:-<loader path>}"
# NVLink multicast stays off (the machine's rule); the rest of NCCL's choices are its own.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
# GALERKIN_NCCL_HOST_ORDER=1 orders each NCCL exchange by a host wait instead of a device flag.
export GALERKIN_NCCL_HOST_ORDER=${GALERKIN_NCCL_HOST_ORDER:-0}
mpi="timeout 300 mpirun --allow-run-as-root --oversubscribe -x GALERKIN_NCCL -x GALERKIN_NCCL_HOST_ORDER -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS"
checks=$(ls .gpu/bin/distributed-* | head -1)
solve=.gpu/bin/solve
want() { [[ " ${PARTS:-checks sums cg fvm maxwell} " == *" $1 "* ]]; }
gpus=${GPUS:-$(for p in 1 2 4 8; do [ "$p" -le "$ngpu" ] && echo -n "$p "; done)}

want checks && echo "== checks: one GPU per rank, the device halo against the host halo (bit for bit)"
want checks && for np in $gpus; do
  [ "$np" -gt 1 ] || continue
  GALERKIN_DIST_CHILD=1 GALERKIN_DIST_N=${N:-16} GALERKIN_DIST_SEED=7 $mpi -np $np "$checks" \
    > "$out/multi-checks-$np.txt" 2>&1
  echo "np=$np rc=$? $(grep -E 'device halo|dist checks passed|panic|SKIPPING the device' "$out/multi-checks-$np.txt" | tr '\n' ' ')"
done

summary() {
  python3 -c '
import json, sys
label, base = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
for line in sys.stdin:
    if not line.startswith("{"): continue
    j = json.loads(line); k = max(j["iterations"], 1); r = j.get("per_rank", [])
    w = lambda key: max((x[key] for x in r), default=0.0) / k * 1e6
    spmv = max((x["spmv"] for x in r), default=1) or 1
    halo_per = max((x["halo_s"] for x in r), default=0.0) / spmv * 1e6
    us = j["time_s"] / k * 1e6
    eff = (base / us) if base > 0 else float("nan")
    print("%-7s np=%d %-6s rows=%-9d it=%-4d %8.1f us/it  compute=%7.1f halo=%7.1f reduce=%6.1f  halo/SpMV=%7.1f us  %s conv=%s" % (
        label, j["ranks"], j.get("halo", "?")[:6], j["rows"], j["iterations"], us,
        w("compute_s"), w("halo_s"), w("reduce_s"), halo_per,
        ("eff=%.2f" % eff) if base > 0 else "", j["converged"]))
' "$@"
}
us_per_it() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{"): j=json.loads(l); print(j["time_s"]/max(j["iterations"],1)*1e6)' "$1"; }
run() { # label np matrix partition route [extra]
  local label=$1 np=$2 m=$3 part=$4 route=$5; shift 5
  $mpi -np $np "$solve" --backend cuda --matrix "$m" --partition $part --halo $route --json --warmup "$@" \
    2> "$out/multi-err-$label-$np-$route.txt"
}

want sums && echo "== global sums: read + MPI against NCCL + read (benches/gpu/allreduce.py)"
want sums && for np in $gpus; do
  [ "$np" -gt 1 ] || continue
  $mpi -np $np python3 benches/gpu/allreduce.py 2> "$out/multi-allreduce-$np.txt" | grep all-reduce
done

if want cg; then
echo "== CG (PCG-Jacobi to 1e-8), Poisson 7-point, slabs; f64"
echo "-- strong: 256^3 in all (efficiency = 1-GPU time / (P x time))"
run strong 1 poisson7:256 contiguous host > "$out/multi-strong-1.json"
summary strong < "$out/multi-strong-1.json" 2>/dev/null
base=$(us_per_it "$out/multi-strong-1.json")
for np in $gpus; do
  [ "$np" -gt 1 ] || continue
  for route in ${ROUTES:-host device}; do
    run strong $np poisson7:256 contiguous $route | summary strong "$(python3 -c "print($base / $np)")" 2>/dev/null
  done
done
echo "-- strong, NCCL ordered by a host wait (GALERKIN_NCCL_HOST_ORDER=1) instead of the device flag"
for np in $gpus; do
  [ "$np" -gt 1 ] || continue
  GALERKIN_NCCL_HOST_ORDER=1 run strong $np poisson7:256 contiguous device \
    | summary strong-h "$(python3 -c "print($base / $np)")" 2>/dev/null
done
echo "-- weak: 256^3 rows per GPU (322^3 on 2, 406^3 on 4; efficiency = 1-GPU µs/it / µs/it)"
declare -A weak=([1]=256 [2]=322 [4]=406 [8]=512)
for np in $gpus; do
  for route in ${ROUTES:-host device}; do
    [ "$np" -eq 1 ] && continue  # the strong run's 256^3 is the base
    run weak $np "poisson7:${weak[$np]}" contiguous $route | summary weak "$base" 2>/dev/null
  done
done
echo "-- the halo alone (exact timing: a device sync before each halo), 256^3 on 2 GPUs"
for route in ${ROUTES:-host device}; do
  run exact 2 poisson7:256 contiguous $route --profile | summary exact 2>/dev/null
done
fi
if want fvm; then
  echo "== CG, FVM two-point flux on tetrahedra (fvm-tet:120, 10.4M rows), METIS"
  run fvm 1 fvm-tet:120 metis host > "$out/multi-fvm-1.json"
  summary fvm < "$out/multi-fvm-1.json" 2>/dev/null
  fbase=$(us_per_it "$out/multi-fvm-1.json")
  for np in $gpus; do
    [ "$np" -gt 1 ] || continue
    for route in ${ROUTES:-host device}; do
      run fvm $np fvm-tet:120 metis $route | summary fvm "$(python3 -c "print($fbase / $np)")" 2>/dev/null
    done
  done
fi

want maxwell || exit 0
maxwell=.gpu/bin/maxwell
echo "== DG Maxwell, N = 4, f64, upwind, one rank per GPU (weak: ~1.2e8 unknowns per GPU; strong: box:46)"
declare -A mweak=([1]=46 [2]=58 [4]=73 [8]=92)
mrun() { # label np mesh route [extra]
  local label=$1 np=$2 mesh=$3 route=$4; shift 4
  if [ "$np" -eq 1 ]; then
    "$maxwell" --backend cuda --mesh "$mesh" --order 4 --final-time "${MT:-0.02}" --json \
      2> "$out/multi-err-maxwell-$label-1.txt"
  else
    $mpi -np "$np" "$maxwell" --backend cuda --mesh "$mesh" --order 4 --final-time "${MT:-0.02}" \
      --halo "$route" --json "$@" 2> "$out/multi-err-maxwell-$label-$np-$route.txt"
  fi
}
msummary() { # label [base seconds per step x np for strong, or per step for weak]
  python3 -c '
import json, sys
label, base = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
for line in sys.stdin:
    if not line.startswith("{"): continue
    j = json.loads(line); s = j["seconds"] / max(j["steps"], 1)
    halo = max((r["halo_seconds"] for r in j.get("per_rank", [])), default=0.0) / max(j["steps"], 1)
    comp = max((r.get("compute_seconds", 0.0) for r in j.get("per_rank", [])), default=0.0) / max(j["steps"], 1)
    print("%-7s np=%d %-6s dofs=%.3e steps=%d %8.2f ms/step %.3e upd/s halo=%6.2f ms/step (%4.1f%%) compute=%6.2f L2=%.4e %s" % (
        label, j["ranks"], j.get("halo", "-")[:6], j["dofs"], j["steps"], s * 1e3,
        j["dof_updates_per_second"], halo * 1e3, 100 * halo / s, comp * 1e3, j["l2_error"],
        ("eff=%.2f" % (base / s)) if base > 0 else ""))
' "$@"
}
mper() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{"): j=json.loads(l); print(j["seconds"]/max(j["steps"],1))' "$1"; }
mrun base 1 box:46 - > "$out/multi-maxwell-1.json"
msummary one < "$out/multi-maxwell-1.json"
mbase=$(mper "$out/multi-maxwell-1.json")
for np in $gpus; do
  [ "$np" -gt 1 ] || continue
  for route in ${ROUTES:-host device}; do
    mrun strong "$np" box:46 "$route" | msummary strong "$(python3 -c "print($mbase / $np)")"
    mrun weak "$np" "box:${mweak[$np]}" "$route" | msummary weak "$mbase"
  done
done
echo "-- the halo alone (--profile: a device sync before each exchange), box:46 on 2 GPUs"
for route in ${ROUTES:-host device}; do
  [ "$ngpu" -ge 2 ] && mrun exact 2 box:46 "$route" --profile | msummary exact
done
