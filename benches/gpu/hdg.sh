#!/usr/bin/env bash
# The HDG issue on the GPU machine, in one call (after `../shared/gpu/pack --test it
# --example bench --example conformance --example hdg_poisson`):
#   source .gpu/setup.sh; bash benches/gpu/hdg.sh [part]
# part "a": tests (CUDA, wgpu), conformance, the 80x80 suite in f64 on cpu/cuda/wgpu with the
#           trace SpMV and cuSPARSE on the same K;
# part "b": mixed and f32 on cuda/wgpu (80x80), and 1M triangles at P = 1..5;
# part "c": the solver and HDG tests, the 80x80 suite in f64 (cuda, wgpu, cpu) and with
#           Chebyshev on cuda; part "d": part b without the 1M SpMV.
# Full logs go to $OUT; the tail of each is printed.
set -uo pipefail
part=${1:-a}
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
if [ "$part" = a ]; then
  it=$(ls $bin/it-* | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 120 "$it" --include-ignored hdg:: --skip examples --skip gmsh --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  timeout 60 $bin/conformance --only hdg > "$out/conformance.txt" 2>&1
  echo "conformance rc=$?"; tail -1 "$out/conformance.txt"; grep -c pass "$out/conformance.txt"
  timeout 380 $bin/bench --suite hdg --backend cuda --backend wgpu --backend cpu --hdg-n 80 --spmv-precision f64 --hdg-spmv --dump "$out/k" --reps 20 > "$out/bench_a.txt" 2>&1
  echo "bench rc=$?"; grep -vE "^\[bench\]" "$out/bench_a.txt" | tail -45
  timeout 60 python3 benches/gpu/spmv_cusparse.py "$out/k" > "$out/cusparse.txt" 2>&1
  echo "cusparse rc=$?"; cat "$out/cusparse.txt" | tail -12
  rm -rf "$out/k"
elif [ "$part" = c ]; then
  it=$(ls $bin/it-* | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 150 "$it" --include-ignored solver:: hdg:: --skip examples --skip gmsh --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  timeout 300 $bin/bench --suite hdg --backend cuda --backend wgpu --backend cpu --hdg-n 80 --spmv-precision f64 > "$out/bench_c.txt" 2>&1
  echo "bench rc=$?"; grep -E "^(cuda|wgpu|cpu) " "$out/bench_c.txt"
  timeout 100 $bin/bench --suite hdg --backend cuda --hdg-n 80 --spmv-precision f64 --hdg-chebyshev > "$out/bench_cheb.txt" 2>&1
  echo "bench chebyshev rc=$?"; grep -E "^(cuda|wgpu|cpu) " "$out/bench_cheb.txt"
else
  timeout 150 $bin/bench --suite hdg --backend cuda --backend wgpu --hdg-n 80 --degrees 1,3,5,7,9 --spmv-precision mixed --spmv-precision f32 > "$out/bench_b.txt" 2>&1
  echo "bench mixed/f32 rc=$?"; grep -E "^(cuda|wgpu) " "$out/bench_b.txt"
  if [ "$part" = b ]; then
    timeout 100 $bin/bench --suite hdg --backend cuda --hdg-n 708 --degrees 3 --spmv-precision f64 --hdg-spmv --dump /tmp/k1m --reps 20 > "$out/bench_1m_spmv.txt" 2>&1
    echo "bench 1M spmv rc=$?"; grep -E "trace SpMV|cuda  f64" "$out/bench_1m_spmv.txt"
    timeout 60 python3 benches/gpu/spmv_cusparse.py /tmp/k1m > "$out/cusparse_1m.txt" 2>&1; tail -2 "$out/cusparse_1m.txt"; rm -rf /tmp/k1m
  fi
  timeout 280 $bin/bench --suite hdg --backend cuda --hdg-n 708 --degrees 1,2,3,4,5 --spmv-precision f64 > "$out/bench_1m.txt" 2>&1
  echo "bench 1M rc=$?"; tail -6 "$out/bench_1m.txt"
fi
