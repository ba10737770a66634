#!/usr/bin/env bash
# The nodal DG Maxwell issue on the GPU machine (after `../shared/gpu/pack --test it
# --example bench --example maxwell --example conformance`):
#   source .gpu/setup.sh; bash benches/gpu/dg.sh [part]
# part "a": the dg tests (CUDA and wgpu required), conformance of the DG kernels, the dg
#           suite on CUDA in f64;
# part "b": the dg suite on CUDA in f32;
# part "c": the dg suite on wgpu in f64 and f32 (half size: wgpu's 2 GiB buffer limit);
# part "d": the example on both runtimes and precisions, the cavity convergence study
#           (dg-accuracy) on CUDA in f32 and f64, and the ncu view of the fused stage.
# part "e": the dg tests (CUDA and wgpu required), then the dg suite on CUDA in f64 and f32
#           at DEGREES (default 2..7): the `flip µs` column times the tuned blocking with
#           the operators' placement (shared memory or the cache) flipped.
# Full logs go to $OUT; the tail of each is printed.
set -uo pipefail
part=${1:-a}
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
it=$(ls $bin/it-* 2>/dev/null | head -1)
suite() { # backend, precision, timeout[, scale]
  timeout "$3" $bin/bench --suite dg --backend "$1" --precision "$2" --reps 10 --scale "${4:-1}" \
    --degrees "${DEGREES:-1,2,3,4,5,6,7,8,9}" > "$out/dg_$1_$2.txt" 2>&1
  echo "dg $1 $2 rc=$?"; grep -vE "^\[bench\]" "$out/dg_$1_$2.txt" | tail -11
}
examples() {
  for be in cuda wgpu; do
    for p in f64 f32; do
      timeout 60 $bin/maxwell --backend $be --precision $p --mesh box:16 --order 4 --final-time 0.5 --autotune --json > "$out/ex_${be}_${p}.json" 2>&1
      echo "example $be $p rc=$?: $(head -c 700 "$out/ex_${be}_${p}.json" | tr -d '\n' | sed 's/"energy_history":\[[^]]*\]\(,\[[^]]*\]\)*\],//')"
    done
  done
}
if [ "$part" = a ]; then
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 200 "$it" --include-ignored dg:: --skip hdg --skip examples --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  timeout 100 $bin/conformance --backend cuda --backend wgpu --only "dg " > "$out/conformance.txt" 2>&1
  echo "conformance rc=$?"; grep -E "FAIL|checks" "$out/conformance.txt" | tail -5
  suite cuda f64 280
elif [ "$part" = b ]; then
  suite cuda f32 280
elif [ "$part" = c ]; then
  # Half the size: the N = 1 face-flux buffer of the four-kernel path (6 · 4 K Nfp values)
  # passes wgpu's 2 GiB buffer limit in f64 at full size.
  suite wgpu f64 280 0.5
  suite wgpu f32 280 0.5
elif [ "$part" = e ]; then
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 200 "$it" --include-ignored dg:: --skip hdg --skip examples --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  DEGREES=${DEGREES:-2,3,4,5,6,7} suite cuda f64 250
  DEGREES=${DEGREES:-2,3,4,5,6,7} suite cuda f32 200
elif [ "$part" = d ]; then
  examples
  for p in f32 f64; do
    timeout 200 $bin/bench --suite dg-accuracy --backend cuda --precision $p > "$out/acc_$p.txt" 2>&1
    echo "dg-accuracy $p rc=$?"; grep -vE "^\[bench\]" "$out/acc_$p.txt" | tail -18
  done
  if command -v ncu > /dev/null; then
    timeout 150 ncu --kernel-name regex:stage_kernel --launch-skip 5 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
      $bin/maxwell --backend cuda --mesh box:24 --order 4 --final-time 0.05 > "$out/ncu.txt" 2>&1
    echo "ncu rc=$?"; grep -E "stage_kernel|Registers Per|Achieved Occupancy|Duration|Compute \(SM\)|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit" "$out/ncu.txt" | head -16
  fi
fi
