#!/usr/bin/env bash
# The AMG setup's sparse operations against cuSPARSE, and where the HDG trace AMG's time goes
# (issue 42), in one call on the GPU machine (after `../shared/gpu/pack --test it --example
# bench --example hdg_poisson --example solve`, carry [".gpu"]):
#   source .gpu/setup.sh; bash benches/gpu/amg_setup.sh
# The algebra and AMG tests on CUDA and wgpu; `bench --suite amg` level by level on CUDA with
# the level matrices dumped, then cuSPARSE's transpose and SpGEMMs on the same matrices
# (CuPy); the HDG P = 3 stage with AMG (its cycle profile) and with block-Jacobi; the
# `hdg_poisson` and `solve` AMG reports (setup phases).
set -uo pipefail
bin=.gpu/bin
out=${OUT:-/tmp/out}
dump=${DUMP:-/tmp/amg-levels}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/gpu.txt"
it=$(ls $bin/it-* | head -1)
# TESTS="...": other test filters (default: the algebra, AMG and HDG tests).
GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 200 "$it" ${TESTS:-sparse::algebra solver::amg hdg::} --test-threads 4 > "$out/tests.txt" 2>&1
echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
# NO_VENDOR=1: our rows only (no dump, no cuSPARSE).
timeout 300 $bin/bench --suite amg --backend cuda --amg-matrix ${AMG_MATRICES:-poisson7:256,fvm-tet:120} --reps 3 $([ -z "${NO_VENDOR:-}" ] && echo --dump "$dump") > "$out/amg.txt" 2>&1
echo "bench amg rc=$?"; grep -vE "^$" "$out/amg.txt"
if [ -z "${NO_VENDOR:-}" ]; then
  timeout 200 python3 benches/gpu/spgemm_cusparse.py "$dump" > "$out/cusparse.txt" 2>&1
  echo "cusparse rc=$?"; cat "$out/cusparse.txt"
  rm -rf "$dump"
fi
timeout 100 $bin/bench --suite amg --backend wgpu --amg-matrix poisson7:128 --reps 3 2>&1 | grep -E "^wgpu"
# HDG_AMG_ONLY=1: the AMG stage only (block-Jacobi's is the slow one, 2.6 s on 640²);
# NO_HDG=1: neither (nor the hdg_poisson report).
flags=("--hdg-amg" "")
[ -n "${HDG_AMG_ONLY:-}" ] && flags=("--hdg-amg")
[ -n "${NO_HDG:-}" ] && flags=()
for flag in "${flags[@]}"; do
  timeout 240 $bin/bench --suite hdg --backend cuda --hdg-n ${HDG_N:-320,640} --degrees 3 --spmv-precision f64 --hdg-rtol 1e-10 $flag > "$out/bench_hdg.txt" 2>&1
  echo "bench hdg $flag rc=$?"; grep -E "^(cuda|bknd) |^  " "$out/bench_hdg.txt"
done
hrow() { python3 -c "
import json,sys
d=json.load(sys.stdin); a=d.get('amg') or {}; p=a.get('phases') or {}
ph=' '.join('%s %.3f' % (k[:5], v) for k, v in p.items() if v >= 0.0005)
print('%-5s %4s %-13s %5s %-5s %s | amg setup %s levels %s | %s' % (d['backend'][:5], sys.argv[1], d['precond'], d['iterations'], d['converged'], ' '.join('%s %.3f' % (k, v) for k, v in d['seconds'].items()), ('%.3f' % a['setup_seconds']) if a else '-', a.get('level_rows',''), ph))" "$1"; }
for n in $([ -z "${NO_HDG:-}" ] && echo 640); do
  timeout 120 $bin/hdg_poisson --mesh square:$n --degree 3 --backend cuda --precond amg --amg-degree 3 --rtol ${HDG_RTOL:-1e-8} --no-post-process --json 2> "$out/err.txt" | hrow $n || tail -2 "$out/err.txt"
done
row() { python3 -c "
import json,sys
d=json.load(sys.stdin); a=d.get('amg') or {}; p=a.get('phases') or {}
ph=' '.join('%s %.3f' % (k[:5], v) for k, v in p.items() if v >= 0.0005)
print('%-5s %-14s %5s %-5s setup %7.3f (amg %s) solve %7.3f | %s' % (d['backend'][:5], d['matrix'][-14:], d['iterations'], d['converged'], d['setup_s'], ('%.3f' % a['setup_seconds']) if a else '-', d['time_s'], ph))"; }
# VARIANTS=1: also the f32 hierarchy and the fourth-kind Chebyshev smoother of degree 2.
variants=("--amg-degree 3")
[ -n "${VARIANTS:-}" ] && variants+=("--amg-degree 3 --amg-precision f32" "--amg-smoother chebyshev4 --amg-degree 2")
# WGPU_SOLVE=1: also the default AMG solve on wgpu; CG=1: also the example's default PCG-Jacobi
# (the baseline of the setup + solve target), each with the process's wall time.
for m in poisson7:256 fvm-tet:120; do
  for v in "${variants[@]}"; do
    echo "# $m $v"
    timeout 120 $bin/solve --matrix $m --backend cuda --precond amg $v --tol 1e-8 --warmup --max-iter 5000 --json 2> "$out/err.txt" | row || tail -2 "$out/err.txt"
  done
  if [ -n "${WGPU_SOLVE:-}" ]; then
    echo "# $m wgpu"
    timeout 120 $bin/solve --matrix $m --backend wgpu --precond amg --tol 1e-8 --warmup --max-iter 5000 --json 2> "$out/err.txt" | row || tail -2 "$out/err.txt"
  fi
  if [ -n "${CG:-}" ]; then
    echo "# $m CG (PCG-Jacobi), then AMG cold (no --warmup), whole process"
    timeout 120 $bin/solve --matrix $m --backend cuda --tol 1e-8 --warmup --max-iter 5000 --json 2> "$out/err.txt" | row || tail -2 "$out/err.txt"
    t0=$(date +%s.%N)
    timeout 120 $bin/solve --matrix $m --backend cuda --precond amg --tol 1e-8 --max-iter 5000 --json 2> "$out/err.txt" | row || tail -2 "$out/err.txt"
    echo "wall $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" $t0 $(date +%s.%N)) s"
  fi
done
