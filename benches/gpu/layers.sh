#!/usr/bin/env bash
# Issue 40 (the structure: layers, formats, one CG iteration, checked pipelines) on the GPU
# machine: the library before and after, the same bench commands back to back, and the
# out-of-bounds audit. After `../shared/gpu/pack --tests --example bench`, with the previous
# library's bench in .gpu/before/bench.gz:
#   source .gpu/setup.sh; bash benches/gpu/layers.sh <part>
# part "bench":    SpMV, CG, batched, HDG, multigrid and DG suites on CUDA in f64, each suite
#                  before then after in processes of their own (SUITES selects, e.g.
#                  SUITES="spmv cg"); the table lines go to stdout, the logs to $OUT.
# part "validate": the unit and integration tests on CUDA with cubecl's launch validation
#                  (`cubecl.toml`: [compilation] check_mode = "validate": every kernel reads
#                  and writes through bounds checks that print "[VALIDATION ...] Encountered
#                  OOB"); the reports are counted by kernel.
# part "sanitize": the CUDA tests of $TESTS (default: every family but the batched
#                  factorizations, whose unrolled kernels take NVRTC minutes) under
#                  compute-sanitizer memcheck.
set -uo pipefail
part=${1:-bench}
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
it=$(ls $bin/it-* 2>/dev/null | head -1)
unit=$(ls $bin/galerkin-* 2>/dev/null | head -1)

# One suite, before and after: $1 suite, $2 timeout, the rest the bench options.
compare() {
  local suite=$1 limit=$2
  shift 2
  for which in before after; do
    local exe=$bin/bench
    [ "$which" = before ] && exe=.gpu/before/bench
    timeout "$limit" "$exe" --suite "$suite" --backend cuda "$@" > "$out/${suite}_$which.txt" 2>&1
    echo "== $suite $which rc=$?"
    grep -vE "^\[bench\]|^\s*$" "$out/${suite}_$which.txt" | tail -n "${LINES_SHOWN:-14}"
  done
}

if [ "$part" = bench ]; then
  [ -f .gpu/before/bench ] || gunzip -k .gpu/before/bench.gz
  chmod +x .gpu/before/bench
  for suite in ${SUITES:-spmv cg batched hdg mg dg}; do
    case $suite in
      spmv) compare spmv 90 --spmv-precision f64 --reps 5 ;;
      cg) compare cg 90 --spmv-precision f64 --reps 3 ;;
      batched) compare batched 150 --precision f64 --log2 4,8,16,32,64 --reps 5 ;;
      hdg) compare hdg 90 --hdg-n 80 --degrees 1,3,5 --spmv-precision f64 --reps 5 ;;
      mg) compare mg 90 --degrees 1,3 --scale 0.125 ;;
      dg) compare dg 90 --precision f64 --degrees 1,4,7 --reps 5 --scale 0.5 ;;
    esac
  done
elif [ "$part" = validate ]; then
  printf '[compilation]\ncheck_mode = "validate"\n' > cubecl.toml
  GALERKIN_REQUIRE_BACKENDS=cuda timeout 280 "$unit" --include-ignored cuda --test-threads 4 > "$out/validate_unit.txt" 2>&1
  echo "unit rc=$?"; grep -E "test result|FAILED|panicked" "$out/validate_unit.txt" | head -5
  GALERKIN_REQUIRE_BACKENDS=cuda timeout 280 "$it" --include-ignored cuda --skip examples --test-threads 4 > "$out/validate_it.txt" 2>&1
  echo "it rc=$?"; grep -E "test result|FAILED|panicked" "$out/validate_it.txt" | head -10
  rm -f cubecl.toml
  echo "OOB reports: $(cat "$out"/validate_*.txt | grep -c 'Encountered OOB')"
  cat "$out"/validate_*.txt | grep -o '\[VALIDATION [^]]*\]: Encountered OOB [a-z]* in [^ ]*' | sort | uniq -c | sort -rn | head -20
elif [ "$part" = sanitize ]; then
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [ -n "$san" ] || { echo "no compute-sanitizer"; exit 1; }
  filters=${TESTS:-"vector:: sparse:: dia:: split:: solver:: hdg:: tensor:: multigrid:: dg:: batched::batched_gemm"}
  # shellcheck disable=SC2086
  GALERKIN_REQUIRE_BACKENDS=cuda timeout 500 "$san" --tool memcheck --leak-check no --print-limit 20 \
    "$it" --include-ignored $filters --skip wgpu --skip cpu_ --skip examples --test-threads 1 > "$out/sanitize.txt" 2>&1
  echo "sanitize rc=$?"; grep -E "test result|FAILED|ERROR SUMMARY|Invalid|out of bounds" "$out/sanitize.txt" | sort | uniq -c | head -20
fi
