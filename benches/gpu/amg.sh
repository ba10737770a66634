#!/usr/bin/env bash
# AMG (issue 42) on the GPU machine, in one call (after
# `../shared/gpu/pack --test it --example solve --example hdg_poisson --example bench`, with
# carry [".gpu", "bench-wheels"]):
#   source .gpu/setup.sh; bash benches/gpu/amg.sh [part]
# part "a" (default): everything below; part "b": the HDG trace matrix of 160² written by
# hdg_poisson and solved warm by `solve` (AMG with the trace constants against block-Jacobi),
# which separates the cycle's cost from the pipeline's (compilation, the copy of K).
# The AMG tests on CUDA and wgpu; solve with Jacobi against AMG (f64 and the f32 hierarchy)
# on the 3D Laplacian and the FVM matrix; the HDG P = 3 trace solve with block-Jacobi against
# AMG from 80² to 640² on CUDA and wgpu; PyAMG (1 core) on the same 3D matrices.
set -uo pipefail
part=${1:-a}
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
nproc
row() { python3 -c "
import json,sys
d=json.load(sys.stdin); a=d.get('amg') or {}
print('%-6s %-16s %-22s %5s %-5s %8.3f %8.3f %s %s' % (d['backend'], d['matrix'][-16:], sys.argv[1], d['iterations'], d['converged'], d['setup_s'], d['time_s'], a.get('level_rows',''), ('oc %.2f' % a['operator_complexity']) if a else ''))" "$1"; }
if [ "$part" = b ]; then
  timeout 120 $bin/hdg_poisson --mesh square:160 --degree 3 --write-trace /tmp/k160.mtx --no-post-process > "$out/write.txt" 2>&1
  echo "write rc=$?"; grep wrote "$out/write.txt"
  for be in cuda wgpu; do
    for p in "block-jacobi --block-size 4" "amg --amg-near-null-stride 4 --amg-theta 0.1" "amg --amg-near-null-stride 4 --amg-theta 0.1 --amg-precision f32" "amg --amg-theta 0.1"; do
      timeout 120 $bin/solve --matrix /tmp/k160.mtx --backend $be --precond $p --tol 1e-10 --warmup --max-iter 5000 --json 2> "$out/err.txt" | row "$p" || tail -2 "$out/err.txt"
    done
  done
  exit 0
fi
it=$(ls $bin/it-* | head -1)
GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 120 "$it" solver::amg --test-threads 4 > "$out/tests.txt" 2>&1
echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
echo "backend matrix precond its conv setup_s solve_s levels"
for m in poisson7:128 fvm-tet:60 poisson7:256 fvm-tet:120; do
  for be in cuda wgpu; do
    for p in "jacobi" "amg --amg-degree 3" "amg --amg-degree 3 --amg-precision f32"; do
      [ "$be" = wgpu ] && [ "$p" = jacobi ] && continue
      timeout 120 $bin/solve --matrix $m --backend $be --precond $p --tol 1e-8 --warmup --max-iter 5000 --json 2> "$out/err.txt" | row "$p" || tail -2 "$out/err.txt"
    done
  done
done
hrow() { python3 -c "
import json,sys
d=json.load(sys.stdin); a=d.get('amg') or {}
print('%-5s %4s %-13s %5s %-5s solve %8.3f s  total %8.3f s  %s' % (d['backend'][:5], sys.argv[1], d['precond'], d['iterations'], d['converged'], d['seconds']['solve'], d['seconds']['total'], ('setup %.3f s, levels %s' % (a['setup_seconds'], a['level_rows'])) if a else ''))" "$1"; }
for n in 80 160 320 640; do
  for be in cuda wgpu; do
    for p in block-jacobi amg; do
      timeout 120 $bin/hdg_poisson --mesh square:$n --degree 3 --backend $be --precond $p --amg-degree 3 --rtol 1e-10 --no-post-process --json 2> "$out/err.txt" | hrow $n || tail -2 "$out/err.txt"
    done
  done
done
for flag in "" "--hdg-amg"; do
  timeout 200 $bin/bench --suite hdg --backend cuda --hdg-n 320,640 --degrees 3 --spmv-precision f64 --hdg-rtol 1e-10 $flag > "$out/bench_hdg.txt" 2>&1
  echo "bench hdg $flag rc=$?"; grep -E "^(cuda|wgpu|backend) " "$out/bench_hdg.txt"
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target bench-wheels/site bench-wheels/pyamg-*.whl \
  && export PYTHONPATH=$PWD/bench-wheels/site${PYTHONPATH:+:$PYTHONPATH}
timeout 150 python3 scripts/amg_reference.py --poisson3d 128 --tol 1e-8 > "$out/pyamg.txt" 2>&1
echo "pyamg rc=$?"; tail -6 "$out/pyamg.txt"
