#!/usr/bin/env bash
# Strong and weak scaling of the distributed CG (solve under mpirun) on CPU ranks, with the
# halo and reduction times separated. Needs a build with `--features mpi`:
#   cargo build --release --features mpi --example solve && benches/cpu/dist.sh
# Prints one row per run: ranks, rows, iterations, time, time per iteration, and the slowest
# rank's compute, halo and reduction time per iteration.
set -euo pipefail
cd "$(dirname "$0")/../.."
solve=target/release/examples/solve
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
run() { # label np matrix partition
  mpirun --allow-run-as-root --oversubscribe -np "$2" "$solve" --matrix "$3" --partition "$4" \
    --precond jacobi --tol 1e-8 --max-iter 5000 --json | grep '^{' | python3 -c '
import json, sys
label = sys.argv[1]
j = json.loads(sys.stdin.read())
k = max(j["iterations"], 1)
ranks = j["per_rank"]
worst = lambda key: max(r[key] for r in ranks) / k * 1e6
p = j["partition"]
row = (label, j["ranks"], j["rows"], j["iterations"], j["time_s"], j["time_s"] / k * 1e6,
       worst("compute_s"), worst("halo_s"), worst("reduce_s"), p["row_imbalance"], p["cut_nonzeros"])
print("%-7s %5d %9d %6d %8.3f %10.1f %10.1f %9.1f %9.1f %6.3f %8d" % row)
' "$1"
}
printf "%-7s %5s %9s %6s %8s %10s %10s %9s %9s %6s %8s\n" run ranks rows iters time_s us/iter compute halo reduce imbal cut
for p in 1 2 4; do run strong "$p" "${STRONG:-fvm-tet:40}" "${PARTITION:-metis}"; done
n=(0 32 40 0 50)
for p in 1 2 4; do run weak "$p" "fvm-tet:${n[$p]}" "${PARTITION:-metis}"; done
