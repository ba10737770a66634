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
print(f"{label:7} {j[\"ranks\"]:>5} {j[\"rows\"]:>9} {j[\"iterations\"]:>6} {j[\"time_s\"]:>8.3f} "
      f"{j[\"time_s\"]/k*1e6:>10.1f} {worst(\"compute_s\"):>10.1f} {worst(\"halo_s\"):>9.1f} {worst(\"reduce_s\"):>9.1f} "
      f"{j[\"partition\"][\"row_imbalance\"]:>6.3f} {j[\"partition\"][\"cut_nonzeros\"]:>8}")
' "$1"
}
printf "%-7s %5s %9s %6s %8s %10s %10s %9s %9s %6s %8s\n" run ranks rows iters time_s us/iter compute halo reduce imbal cut
for p in 1 2 4; do run strong "$p" "${STRONG:-fvm-tet:40}" "${PARTITION:-metis}"; done
n=(0 32 40 0 50)
for p in 1 2 4; do run weak "$p" "fvm-tet:${n[$p]}" "${PARTITION:-metis}"; done
