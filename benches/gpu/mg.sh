#!/usr/bin/env bash
# The tensor/multigrid issue on the GPU machine, in one call (after `../shared/gpu/pack
# --test it --example bench --example poisson_mg --example conformance`):
#   source .gpu/setup.sh; bash benches/gpu/mg.sh [part]
# part "a": tests (CUDA, wgpu), the example on both, the tensor suite (f64, f32; CUDA and
#           wgpu), the patch kernel under ncu (bank conflicts);
# part "d": after a kernel change: tests, registers/occupancy, tensor suite, solves;
# part "c": after the last changes: tests, conformance, part b, FMG through the example;
# part "b": the solver tests and the seed's 3D solves (see `solves` below);
# part "s": the split patch form (#43, 2026-12-02): tests, the tensor suite (fused and split
#           columns, f64 and f32), the 3D Q7 and Q8 solves on wgpu (split) and CUDA in both
#           forms, the mg suite on wgpu at k = 7 (refused before in f64).
# Full logs go to $OUT; the tail of each is printed.
set -uo pipefail
part=${1:-a}
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
it=$(ls $bin/it-* 2>/dev/null | head -1)
# The device tests matching the filters given (CUDA and wgpu required).
tests() {
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 150 "$it" --include-ignored "$@" --skip examples --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked|\[multigrid\]" "$out/tests.txt" | head -20
}
# The seed's 3D solves: k = 1 at its size on CUDA; k = 3 and 7 one level below (at 454M and
# 721M unknowns cubecl's memory pools, pages of a quarter of the device, run out before
# the device does); wgpu one level smaller still (its 2 GiB buffers).
solves() {
  timeout 100 $bin/bench --suite mg --backend cuda --degrees 1 > "$out/mg_cuda_1.txt" 2>&1
  echo "mg cuda k=1 rc=$?"; grep -vE "^\[bench\]" "$out/mg_cuda_1.txt" | tail -3
  timeout 150 $bin/bench --suite mg --backend cuda --degrees 3,7 --scale 0.125 > "$out/mg_cuda_37.txt" 2>&1
  echo "mg cuda k=3,7 rc=$?"; grep -vE "^\[bench\]" "$out/mg_cuda_37.txt" | tail -5
  timeout 150 $bin/bench --suite mg --backend wgpu --degrees 1,3,7 --scale 0.125 > "$out/mg_wgpu.txt" 2>&1
  echo "mg wgpu rc=$?"; grep -vE "^\[bench\]" "$out/mg_wgpu.txt" | tail -8
}
# The tensor suite on CUDA and wgpu with $1 samples per case.
tensor_suite() {
  timeout 240 $bin/bench --suite tensor --backend cuda --backend wgpu --reps "$1" > "$out/tensor.txt" 2>&1
  echo "tensor rc=$?"; grep -vE "^\[bench\]" "$out/tensor.txt" | tail -44
}
if [ "$part" = a ]; then
  tests tensor:: multigrid::
  for be in cuda wgpu; do
    for p in f64 mixed f32; do
      timeout 60 $bin/poisson_mg --backend $be --dim 3 --degree 3 --levels 5 --solver gmres --precision $p --json > "$out/ex_${be}_${p}.json" 2>&1
      echo "example $be $p rc=$?: $(head -c 400 "$out/ex_${be}_${p}.json")"
    done
  done
  tensor_suite 10
  if command -v ncu > /dev/null; then
    timeout 120 ncu --kernel-name regex:patch_kernel --launch-count 2 --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum \
      $bin/poisson_mg --backend cuda --dim 3 --degree 3 --levels 6 --solver fmg --max-iter 1 > "$out/ncu.txt" 2>&1
    echo "ncu rc=$?"; grep -E "patch_kernel|bank|throughput|dfma" "$out/ncu.txt" | head -12
  fi
elif [ "$part" = d ]; then
  # After a kernel change: registers and occupancy, the tensor suite, the solves.
  tests tensor:: multigrid::
  timeout 120 ncu --kernel-name regex:"cell_atomic|patch_kernel" --launch-skip 20 --launch-count 2 --section SpeedOfLight --section Occupancy --section LaunchStats \
    $bin/poisson_mg --backend cuda --dim 3 --degree 3 --levels 6 --solver gmres --max-iter 3 > "$out/ncu.txt" 2>&1
  echo "ncu rc=$?"; grep -E "cell_atomic|patch_kernel|Registers Per|Achieved Occupancy|Duration|Compute \(SM\)|Memory Throughput  " "$out/ncu.txt" | head -16
  tensor_suite 5
  solves
elif [ "$part" = c ]; then
  tests tensor:: multigrid:: solver::mixed
  timeout 120 $bin/conformance --only tensor --only patch --only mg > "$out/conformance.txt" 2>&1
  echo "conformance rc=$?"; tail -1 "$out/conformance.txt"; grep -cE " pass$" "$out/conformance.txt"; grep -E "FAIL|error" "$out/conformance.txt" | head
  solves
  for p in f64 mixed; do
    timeout 60 $bin/poisson_mg --backend cuda --dim 3 --degree 3 --levels 6 --solver fmg --precision $p --json > "$out/fmg_$p.json" 2>&1
    echo "fmg cuda $p rc=$?: $(head -c 500 "$out/fmg_$p.json")"
  done
elif [ "$part" = s ]; then
  tests tensor:: multigrid::
  tensor_suite 8
  for k in 7 8; do
    for be_form in wgpu:auto cuda:fused cuda:split; do
      be=${be_form%%:*}; form=${be_form##*:}
      timeout 60 $bin/poisson_mg --backend $be --dim 3 --degree $k --levels 4 --solver gmres --patch-form $form --json > "$out/ex_${k}_${be}_${form}.json" 2>&1
      echo "Q$k $be $form rc=$?: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["patch_form"], d["iterations"], "%.2e" % d["relative_residual"], "solve %.4f s" % d["seconds"]["solve"], "%.3e DoF/s" % d["dofs_per_second"])' "$out/ex_${k}_${be}_${form}.json" 2>&1 | tail -1)"
    done
  done
  timeout 150 $bin/bench --suite mg --backend wgpu --degrees 7 --scale 0.125 > "$out/mg_wgpu.txt" 2>&1
  echo "mg wgpu rc=$?"; grep -vE "^\[bench\]" "$out/mg_wgpu.txt" | tail -8
else
  tests solver::
  solves
fi
