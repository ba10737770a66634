#!/usr/bin/env bash
# AMG with the setup on the device (issue 42), in one call on the GPU machine (after
# `../shared/gpu/pack --test it --example solve --example hdg_poisson --example bench`, with
# carry [".gpu", "bench-wheels"]):
#   source .gpu/setup.sh; bash benches/gpu/amg_device.sh
# The sparse-algebra, fused-smoothing and AMG tests on CUDA and wgpu; `solve` with Jacobi against AMG (f64 and
# the f32 hierarchy) on the 3D Laplacian and the FVM matrix, with the setup's phases; the HDG
# P = 3 trace solve (bench, warm) with block-Jacobi against AMG; PyAMG on Poisson 128³.
set -uo pipefail
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
it=$(ls $bin/it-* | head -1)
# TESTS: the test filters (default: the sparse algebra, the fused smoothing passes, AMG).
GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 150 "$it" ${TESTS:-sparse::algebra sparse::smoothing solver::amg} --test-threads 4 > "$out/tests.txt" 2>&1
echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
row() { python3 -c "
import json,sys
d=json.load(sys.stdin); a=d.get('amg') or {}; p=a.get('phases') or {}
ph=' '.join('%s %.3f' % (k[:5], v) for k, v in p.items() if v >= 0.0005)
print('%-5s %-14s %-28s %5s %-5s setup %7.3f (amg %s) solve %7.3f %s %s | %s' % (d['backend'][:5], d['matrix'][-14:], sys.argv[1], d['iterations'], d['converged'], d['setup_s'], ('%.3f' % a['setup_seconds']) if a else '-', d['time_s'], a.get('level_rows',''), ('oc %.2f' % a['operator_complexity']) if a else '', ph))" "$1"; }
for m in poisson7:128 fvm-tet:60 poisson7:256 fvm-tet:120; do
  for be in cuda wgpu; do
    for p in "jacobi" "amg --amg-degree 3" "amg --amg-degree 3 --amg-precision f32"; do
      [ "$be" = wgpu ] && [ "$p" != "amg --amg-degree 3" ] && continue
      timeout 120 $bin/solve --matrix $m --backend $be --precond $p --tol 1e-8 --warmup --max-iter 5000 --json 2> "$out/err.txt" | row "$p" || tail -2 "$out/err.txt"
    done
  done
done
hrow() { python3 -c "
import json,sys
d=json.load(sys.stdin); a=d.get('amg') or {}; p=a.get('phases') or {}
ph=' '.join('%s %.3f' % (k[:5], v) for k, v in p.items() if v >= 0.0005)
print('%-5s %4s %-13s %5s %-5s %s | amg setup %s levels %s | %s' % (d['backend'][:5], sys.argv[1], d['precond'], d['iterations'], d['converged'], ' '.join('%s %.3f' % (k, v) for k, v in d['seconds'].items()), ('%.3f' % a['setup_seconds']) if a else '-', a.get('level_rows',''), ph))" "$1"; }
for n in 320 640; do
  for p in block-jacobi amg; do
    timeout 120 $bin/hdg_poisson --mesh square:$n --degree 3 --backend cuda --precond $p --amg-degree 3 --rtol 1e-10 --no-post-process --json 2> "$out/err.txt" | hrow $n || tail -2 "$out/err.txt"
  done
done
for flag in "" "--hdg-amg"; do
  timeout 200 $bin/bench --suite hdg --backend cuda --hdg-n 320,640 --degrees 3 --spmv-precision f64 --hdg-rtol 1e-10 $flag > "$out/bench_hdg.txt" 2>&1
  echo "bench hdg $flag rc=$?"; grep -E "^(cuda|wgpu|backend) " "$out/bench_hdg.txt"
done
if ls bench-wheels/pyamg-*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target bench-wheels/site bench-wheels/pyamg-*.whl \
    && export PYTHONPATH=$PWD/bench-wheels/site${PYTHONPATH:+:$PYTHONPATH}
  timeout 100 python3 scripts/amg_reference.py --poisson3d 128 --tol 1e-8 > "$out/pyamg.txt" 2>&1
  echo "pyamg rc=$?"; tail -4 "$out/pyamg.txt"
fi
