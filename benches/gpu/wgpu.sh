#!/usr/bin/env bash
# Issue 13 (wgpu against CUDA, the batched and solver targets) on the GPU machine, before and
# after, same binaries' commands back to back (after `../shared/gpu/pack --test it --example
# bench --example spmv`, with the previous commit's `bench` copied to .gpu/before/bench.gz):
#   source .gpu/setup.sh; bash benches/gpu/wgpu.sh <part>
# part "t": the device tests of the touched modules on CUDA and wgpu, and the split example;
# part "v": vector suite (dot to host) and batched suite, before and after;
# part "s": SpMV suite (FVM tets, Poisson 7-pt), before and after;
# part "c": CG suite (Poisson 7-pt 256³, FVM tets 120, Poisson 27-pt 216: split on wgpu),
#           after; part "cb": the same, before;
# part "h1"/"h2": the current binaries only (an H200 comparison): batched and SpMV, then CG.
# part "f": after the last change: batched and solver tests, batched n = 8, CG on Poisson.
# part "p": vectors in parts (after `pack --test it --example solve --example bench`): the
#           split/solver/sparse/vector tests on CUDA and wgpu; CG and PCG-Jacobi per iteration
#           on Poisson 7-pt 256³ with vectors in one buffer and in 3 parts (48 MiB buffers).
#           part "p2": CG on Poisson 7-pt 650³ on wgpu (274.6M rows: f64 vectors above the
#           2 GiB binding).
# part "r": the batched kernels (fifth session: register variables, then the shared budget
#           on wgpu): the batched tests on CUDA and wgpu, the batched suite before and after.
# part "o": the layout suite on CUDA and wgpu (staged against interleaved Cholesky, and the
#           shared-memory occupancy probe), PyTorch's batched baseline and the CUDA batched
#           suite on the same sides, then the batched tests (a longer timeout).
# part "x": sixth session: ncu of the CUDA GEMM at n = 32, 56, 64; the SpMV suite on both
#           runtimes. (That session's comparisons of staging, GEMM tiles and factorization
#           kernels ran builds with temporary environment switches, not committed.)
# part "k3": the batched factorization tests on CUDA and wgpu, the batched suite at n = 16, 32.
# part "k4": seventh session (after `pack --tests --example bench`): the column kernels' unit
#           tests and the batched tests on CUDA and wgpu (NVRTC compiles the unrolled kernels:
#           about 200 s), then the batched suite at every side the kernels switch at.
# part "dia": eighth session (after `pack --tests --example bench`): the DIA, sparse, split and
#           solver tests on CUDA and wgpu; the SpMV suite (Poisson 7/27-point, FVM dual: SELL
#           and DIA side by side) and the CG suite (DIA, with SELL beside it) on both runtimes;
#           then the SpMV suite on wgpu alone in its process, against CUDA then wgpu.
# part "clk": ninth session (after `pack --tests --example bench`): the clock test; wgpu alone
#           with the CUDA-context hold and with GALERKIN_WGPU_CLOCK_HOLD=0, the SM clock and
#           memory sampled by nvidia-smi; then each runtime alone in its own process (the way
#           a user runs one): SpMV (4 matrices, f64 and f32 values), CG (Poisson 7-pt, FVM
#           tets 120) and batched (n = 8, 16, 32). About 9 minutes on an H100.
# part "rd": eleventh session (after `pack --tests --example bench`): the unit and integration
#           tests on CUDA and wgpu; then each runtime alone in its own process: the dispatch
#           probe (batches of 1..1024 calls), dot to host, CG (Poisson 7-pt, FVM tets 120),
#           SpMV (4 matrices, f64 and f32 values) and batched (n = 4..64). About 12 minutes on
#           an H100. (The session's before/after comparisons ran temporary environment
#           switches for the old batch sizing and cubecl's read path, not committed.)
# part "tl": twelfth session (after `pack --tests --example bench`): the tile and column
#           kernels' unit tests on CUDA and wgpu, the batched suite at n = 16..64 on both
#           runtimes, PyTorch's batched baseline. (The session's before/after comparisons ran
#           temporary environment switches for the kernel choice, not committed.)
# part "sv": fourteenth session (after `pack --tests --example bench`, the previous commit's
#           library with this bench in .gpu/before/bench.gz): GEMM, LU, Cholesky, their solves
#           with n right-hand sides and the inverse at n = 8..64 ($SIDES) on both runtimes,
#           before and after, and PyTorch's; part "svt": the batched unit and integration
#           tests on CUDA and wgpu.
# part "lu": thirteenth session (after `pack --tests --example bench`): the batched unit tests
#           on CUDA and wgpu, LU and the inverse at n = 12..64 on both runtimes, PyTorch's
#           batched baseline (the row kernel's variants ran temporary switches, not committed).
# part "ft": fifteenth session (after `pack --tests --example bench`): the unit and integration
#           tests on CUDA and wgpu ($TESTS filters the integration tests, e.g. `batched::`).
# part "fa" / "fb": fifteenth session, the issue's before/after (the end of issue 12, commit
#           `271981b`, its `bench` in .gpu/before/bench.gz): each runtime alone in its own
#           process, dot to host, CG (Poisson 7-pt 256³, FVM tets 120; f64 and mixed), SpMV
#           (FVM tets 70, Poisson 7-pt 256³, Poisson 27-pt 192³) and batched (n = 8..64), with
#           this commit's `bench` ("fa", then PyTorch's batched baseline) or the old one ("fb");
#           $SUITES picks among "vector cg spmv batched", $SIDES the batched sides (the
#           twentieth session's H100 table: SIDES=4,8,16,24,32,40,64; its kernel variants ran
#           temporary environment switches, not committed).
# part "nw" / "nwt": sixteenth session (after `pack --tests --example bench`, the previous
#           commit's `bench` in .gpu/before/bench.gz): the batched factorizations at n = 4..64
#           ($SIDES) on both runtimes, before and after (refined f64 division and square root
#           on wgpu), and PyTorch's; "nwt": the refinement's and the batched unit tests, the
#           batched integration tests, on CUDA and wgpu.
# Full logs go to $OUT; a short table is printed.
set -uo pipefail
part=${1:-t}
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
[ -e .gpu/before/bench.gz ] && gunzip -f .gpu/before/bench.gz && chmod +x .gpu/before/bench
it=$(ls $bin/it-* 2>/dev/null | head -1)
both="--backend cuda --backend wgpu"
run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  echo "== $name rc=$?"
  grep -vE "^\[bench\]|^$" "$out/$name.txt" | grep -vE "^#" | cut -c1-150 | tail -${TAIL:-40}
}
case $part in
p)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 300 "$it" --include-ignored split:: solver:: sparse:: vector:: errors:: \
    --skip examples --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  echo "| backend | solver | buffers | iterations | s | us/iteration |"
  for be in cuda wgpu; do
    for pre in none jacobi; do
      for lim in "" "--buffer-limit 50331648"; do
        timeout 200 $bin/solve --matrix poisson7:256 --backend $be --format sell --precond $pre \
          --tol 1e-30 --max-iter 300 --warmup --json $lim > "$out/split_${be}_${pre}_${lim:+parts}.txt" 2>&1
        python3 - "$out/split_${be}_${pre}_${lim:+parts}.txt" "$be" "$pre" "${lim:+3 parts}" <<'PY'
import json, sys
line = next((l for l in open(sys.argv[1]) if l.startswith("{")), None)
if line is None:
    print("|", sys.argv[2], "|", sys.argv[3], "| failed:", open(sys.argv[1]).read()[-300:].replace("\n", " "), "|")
else:
    j = json.loads(line)
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4] or 'one'} | {j['iterations']} | {j['time_s']:.3f} | {1e6 * j['time_s'] / max(j['iterations'], 1):.0f} |")
PY
      done
    done
  done
  ;;
p2)
  /usr/bin/time -v timeout 420 $bin/solve --matrix poisson7:650 --backend wgpu --format sell --precond none \
    --tol 1e-30 --max-iter 30 --warmup --json > "$out/big_wgpu.txt" 2> "$out/big_wgpu.err"
  echo "big rc=$?"; grep -vE "^\{" "$out/big_wgpu.txt" | tail -8; grep "^{" "$out/big_wgpu.txt"
  grep -E "Maximum resident|Elapsed" "$out/big_wgpu.err"; grep -v "^\s" "$out/big_wgpu.err" | tail -3
  ;;
t)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 300 "$it" --include-ignored solver:: sparse:: batched:: vector:: \
    --skip examples --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  TAIL=4 run spmv_split 120 $bin/spmv --matrix poisson27:216 --backend wgpu --format sell
  ;;
r)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 400 "$it" --include-ignored batched:: --skip examples \
    --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  for w in before/bench bin/bench; do
    n=$(basename "$(dirname $w)")
    TAIL=80 run "batched_$n" 280 .gpu/$w --suite batched $both --log2 ${SIDES:-4,6,8,16,32,64} \
      --precision f64 --reps ${REPS:-7}
  done
  ;;
o)
  TAIL=40 run layout 300 $bin/bench --suite layout $both --reps 5
  TAIL=14 run torch 300 python3 benches/gpu/batched_torch.py
  TAIL=60 run batched_cuda 300 $bin/bench --suite batched --backend cuda \
    --log2 4,8,10,16,20,27,32,35,56,64 --precision f64 --reps 7
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 500 "$it" --include-ignored batched:: --skip examples \
    --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  ;;
x)
  for n in 32 56 64; do
    timeout 120 ncu --clock-control none --kernel-name regex:gemm_tiled --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
      --section ComputeWorkloadAnalysis --section WarpStateStats \
      $bin/bench --suite batched --backend cuda --log2 $n --precision f64 --reps 1 --scale 0.2 \
      > "$out/ncu_gemm_$n.txt" 2>&1
    echo "== ncu gemm $n rc=$?"
    grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Shared Memory Configuration|Dynamic Shared|Static Shared|Block Limit|Memory Throughput|Compute \(SM\)|L1/TEX Hit|Bank|Stall|Issue Slots|Executed Ipc" "$out/ncu_gemm_$n.txt" | head -30
  done
  TAIL=120 run spmv 420 $bin/bench --suite spmv $both --only fvm --only poisson --only hdg \
    --only dg7_b8_ --only dg7_b27_ --spmv-precision f64 --reps 5
  ;;
k3)
  # Final (short: the device budget's end): the batched tests of the factorizations, then the
  # batched suite at n = 16 and 32 (the library's choice: column kernels for Cholesky
  # everywhere and for LU on wgpu).
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 110 "$it" --include-ignored batched::factor::batched_cholesky \
    batched::factor::batched_lu batched::status::batched_status batched::factor::batched_inverse_needs \
    batched::factor::batched_mixed --skip examples --test-threads 8 > "$out/tests.txt" 2>&1
  echo "tests rc=$?: $(grep -E 'test result' "$out/tests.txt")"
  grep -E "panicked|FAILED" "$out/tests.txt" | head -5
  timeout 45 $bin/bench --suite batched $both --log2 ${SIDES:-16,32} --precision f64 --reps 3 \
    > "$out/final.txt" 2>&1
  echo "final: $(grep -E '^(cuda|wgpu)' "$out/final.txt" | grep -E 'gemm C=AB|lu|chol|inverse' \
    | awk '{printf "%s%s/%s=%s ", substr($1,1,1), $3, substr($5,1,3), $(NF-3)}')"
  ;;
k4)
  lib=$(ls $bin/galerkin-* 2>/dev/null | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 100 "$lib" columns > "$out/unit.txt" 2>&1
  echo "unit tests rc=$?: $(grep -E 'test result' "$out/unit.txt")"
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 330 "$it" --include-ignored batched:: --skip examples --test-threads 16 \
    > "$out/tests.txt" 2>&1
  echo "tests rc=$?: $(grep -E 'test result' "$out/tests.txt")"
  grep -E "panicked|FAILED" "$out/tests.txt" | head -5
  timeout 200 $bin/bench --suite batched $both --log2 ${SIDES:-2,4,8,9,12,16,20,24,27,32,64} \
    --precision f64 --reps 3 > "$out/final.txt" 2>&1
  echo "final: $(grep -E '^(cuda|wgpu)' "$out/final.txt" | grep -E 'gemm C=AB|lu|chol|inverse' \
    | awk '{printf "%s%s/%s=%s ", substr($1,1,1), $3, substr($5,1,3), $(NF-3)}')"
  ;;
dia)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 280 "$it" --include-ignored dia:: sparse:: split:: solver:: --skip examples \
    --test-threads 8 > "$out/tests.txt" 2>&1
  echo "tests rc=$?: $(grep -E 'test result' "$out/tests.txt")"
  TAIL=60 run spmv 300 $bin/bench --suite spmv $both --only poisson7 --only poisson27 --only fvm_dual \
    --spmv-precision f64 --spmv-precision mixed --reps 5
  TAIL=80 run cg 400 $bin/bench --suite cg $both --only poisson7 --only poisson27 --spmv-precision f64 \
    --spmv-precision mixed --reps 5
  TAIL=12 run wgpu_alone 100 $bin/bench --suite spmv --backend wgpu --only poisson7 --spmv-precision f64 --reps 5
  ;;
clk)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 120 "$it" --include-ignored vector::wgpu_holds --test-threads 1 > "$out/tests.txt" 2>&1
  echo "clock test rc=$?: $(grep -E 'test result' "$out/tests.txt")"
  for hold in 1 0; do
    nvidia-smi --query-gpu=clocks.sm,memory.used --format=csv,noheader,nounits -lms 250 > "$out/clk_$hold.txt" &
    smi=$!
    TAIL=8 run "wgpu_hold_$hold" 150 env GALERKIN_WGPU_CLOCK_HOLD=$hold $bin/bench --suite spmv \
      --backend wgpu --only poisson7_256 --spmv-precision f64 --reps 20
    kill $smi
    echo "hold=$hold: $(awk -F, '$1+0>=1800' "$out/clk_$hold.txt" | wc -l) of $(wc -l < "$out/clk_$hold.txt") clock samples >= 1800 MHz"
  done
  for be in cuda wgpu; do
    TAIL=40 run "spmv_$be" 200 $bin/bench --suite spmv --backend $be --only fvm_tet_70 --only fvm_dual_127 \
      --only poisson7_256 --only poisson27_192 --spmv-precision f64 --spmv-precision mixed --reps 20
    TAIL=20 run "cg_$be" 150 $bin/bench --suite cg --backend $be --only poisson7_256 --only fvm_tet_120 \
      --spmv-precision f64 --spmv-precision mixed --reps 10
    TAIL=20 run "batched_$be" 100 $bin/bench --suite batched --backend $be --log2 8,16,32 --precision f64 --reps 20
  done
  ;;
tl)
  lib=$(ls $bin/galerkin-* 2>/dev/null | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 200 "$lib" tile_tests columns > "$out/unit.txt" 2>&1
  echo "unit rc=$?: $(grep -E 'test result' "$out/unit.txt")"; grep -E "panicked" -A2 "$out/unit.txt" | head -6
  TAIL=80 run batched_tiles 300 $bin/bench --suite batched $both --log2 16,24,32,40,48,56,64 \
    --precision f64 --reps 3
  TAIL=40 run torch 200 python3 benches/gpu/batched_torch.py
  ;;
lu)
  lib=$(ls $bin/galerkin-* 2>/dev/null | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 200 "$lib" batched > "$out/unit.txt" 2>&1
  echo "unit rc=$?: $(grep -E 'test result' "$out/unit.txt")"; grep -E "panicked" -A2 "$out/unit.txt" | head -6
  TAIL=40 run batched_lu 300 $bin/bench --suite batched $both --log2 12,16,20,24,27,32,40,64 \
    --precision f64 --reps 3 --only lu --only inverse
  TAIL=60 run torch 200 python3 benches/gpu/batched_torch.py
  ;;
sv)
  # The previous commit's bench in .gpu/before (the library before, this bench); f64, µs.
  for w in before/bench bin/bench; do
    n=$(basename "$(dirname $w)")
    timeout 280 .gpu/$w --suite batched $both --log2 ${SIDES:-8,16,24,32,40,64} --precision f64 \
      --reps 3 --only lu --only cholesky --only inverse --only gemm > "$out/solves_$n.txt" 2>&1
    echo "== $n rc=$?"
    grep -E "^(cuda|wgpu) " "$out/solves_$n.txt" | grep -v "shared A" | awk '{t=substr($5,1,3); if ($6=="solve") t=t"S";
      printf "%s/%s/%s/%s ", $1, $3, t, $(NF-3)} END {print ""}'
  done
  python3 -c "import sys; sys.path.insert(0, 'benches/gpu'); import batched_torch as t; \
    t.SIZES = [${SIDES:-8,16,24,32,40,64}]; t.main()" > "$out/torch.txt" 2>&1
  echo "== torch rc=$?"
  grep " f64 " "$out/torch.txt" | grep -v "shared A" | awk '{printf "%s/%s/%s ", $3, $5, $(NF-2)} END {print ""}'
  ;;
nw)
  for w in before/bench bin/bench; do
    n=$(basename "$(dirname $w)")
    for be in cuda wgpu; do
      timeout 200 .gpu/$w --suite batched --backend $be --log2 ${SIDES:-4,8,12,16,20,24,28,32,40,48,64} \
        --precision f64 --reps 3 --only lu --only cholesky --only inverse > "$out/nw_${n}_$be.txt" 2>&1
      echo "== $n $be rc=$?"
      grep -E "^$be " "$out/nw_${n}_$be.txt" | grep -v "shared A\|solve" | awk '{printf "%s/%s/%s ", substr($5,1,3), $3, $(NF-3)} END {print ""}'
    done
  done
  python3 -c "import sys; sys.path.insert(0, 'benches/gpu'); import batched_torch as t; \
    t.SIZES = [${SIDES:-4,8,12,16,20,24,28,32,40,48,64}]; t.main()" > "$out/torch.txt" 2>&1
  echo "== torch rc=$?"
  grep " f64 " "$out/torch.txt" | grep -v "shared A" | awk '{printf "%s/%s/%s ", $3, $5, $(NF-2)} END {print ""}'
  ;;
nwt)
  lib=$(ls $bin/galerkin-* 2>/dev/null | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 250 "$lib" newton batched --test-threads 8 > "$out/unit.txt" 2>&1
  echo "unit rc=$?: $(grep -E 'test result' "$out/unit.txt")"; grep -E "panicked" -A2 "$out/unit.txt" | head -6
  grep -E "fused f64 fma" "$out/unit.txt"
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 300 "$it" --include-ignored batched:: --skip examples --test-threads 16 \
    > "$out/it.txt" 2>&1
  echo "it rc=$?: $(grep -E 'test result' "$out/it.txt")"; grep -E "panicked" -A2 "$out/it.txt" | head -6
  ;;
svt)
  lib=$(ls $bin/galerkin-* 2>/dev/null | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 250 "$lib" batched > "$out/unit.txt" 2>&1
  echo "unit rc=$?: $(grep -E 'test result' "$out/unit.txt")"; grep -E "panicked" -A2 "$out/unit.txt" | head -6
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 420 "$it" --include-ignored batched:: --skip examples --test-threads 16 \
    > "$out/it.txt" 2>&1
  echo "it rc=$?: $(grep -E 'test result' "$out/it.txt")"; grep -E "panicked" -A2 "$out/it.txt" | head -6
  ;;
rd)
  lib=$(ls $bin/galerkin-* 2>/dev/null | head -1)
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 150 "$lib" --test-threads 8 > "$out/unit.txt" 2>&1
  echo "unit rc=$?: $(grep -E 'test result' "$out/unit.txt")"
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 420 "$it" --include-ignored --skip examples --test-threads 8 > "$out/tests.txt" 2>&1
  echo "it rc=$?: $(grep -E 'test result' "$out/tests.txt")"; grep -E "panicked|FAILED" "$out/tests.txt" | head -8
  for be in cuda wgpu; do
    TAIL=6 run "probe_$be" 100 $bin/bench --suite layout --only dispatch --backend $be --reps 9
    TAIL=8 run "vector_$be" 100 $bin/bench --suite vector --backend $be --log2 20,27 --precision f64 --reps 10
    TAIL=20 run "cg_$be" 150 $bin/bench --suite cg --backend $be --only poisson7_256 --only fvm_tet_120 \
      --spmv-precision f64 --spmv-precision mixed --reps 5
    TAIL=40 run "spmv_$be" 200 $bin/bench --suite spmv --backend $be --only fvm_tet_70 --only fvm_dual_127 \
      --only poisson7_256 --only poisson27_192 --spmv-precision f64 --spmv-precision mixed --reps 10
    TAIL=30 run "batched_$be" 150 $bin/bench --suite batched --backend $be --log2 4,8,16,32,64 \
      --precision f64 --reps 7
  done
  ;;
ft)
  lib=$(ls $bin/galerkin-* 2>/dev/null | head -1)
  if [ -z "${TESTS:-}" ]; then
    GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 200 "$lib" --test-threads 8 > "$out/unit.txt" 2>&1
    echo "unit rc=$?: $(grep -E 'test result' "$out/unit.txt")"; grep -E "panicked" -A2 "$out/unit.txt" | head -6
  fi
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout ${LIMIT:-380} "$it" --include-ignored ${TESTS:-} --skip examples --test-threads 16 > "$out/it.txt" 2>&1
  echo "it rc=$?: $(grep -E 'test result' "$out/it.txt")"; grep -E "panicked|FAILED" "$out/it.txt" | head -8
  ;;
fa|fb)
  on() { case " ${SUITES:-vector cg spmv batched} " in *" $1 "*) return 0;; esac; return 1; }
  w=$bin/bench; tag=after
  [ "$part" = fb ] && w=.gpu/before/bench && tag=before
  for be in cuda wgpu; do
    on vector && TAIL=6 run "vector_${tag}_$be" 100 $w --suite vector --backend $be --log2 26,27 --precision f64 --reps 10
    on cg && TAIL=12 run "cg_${tag}_$be" 150 $w --suite cg --backend $be --only poisson7_256 --only fvm_tet_120 \
      --spmv-precision f64 --spmv-precision mixed --reps 3
    on spmv && TAIL=40 run "spmv_${tag}_$be" 150 $w --suite spmv --backend $be --only fvm_tet_70 --only poisson7_256 \
      ${SPMV_MORE---only poisson27_192} --spmv-precision f64 --reps 5
    on batched && TAIL=30 run "batched_${tag}_$be" 150 $w --suite batched --backend $be --log2 ${SIDES:-8,16,24,32,40,64} \
      --precision f64 --reps 3
  done
  [ "$part" = fa ] && on batched && TAIL=40 run torch 150 python3 -c "import sys; sys.path.insert(0, 'benches/gpu'); \
    import batched_torch as t; t.SIZES = [${SIDES:-8,16,24,32,40,64}]; t.main()"
  ;;
v)
  for w in before/bench bin/bench; do
    n=$(basename "$(dirname $w)")
    TAIL=30 run "vector_$n" 150 .gpu/$w --suite vector $both --log2 26,27 --precision f64 --reps 15
    TAIL=60 run "batched_$n" 200 .gpu/$w --suite batched $both --log2 8,16,32,64 --precision f64 --reps 10
  done
  ;;
s)
  for w in before/bench bin/bench; do
    n=$(basename "$(dirname $w)")
    TAIL=60 run "spmv_$n" 280 .gpu/$w --suite spmv $both --only fvm_tet --only poisson7 --spmv-precision f64 --reps 10
  done
  ;;
c)
  TAIL=60 run cg_after 400 $bin/bench --suite cg $both --spmv-precision f64 --spmv-precision mixed --reps 5
  ;;
cb)
  TAIL=60 run cg_before 400 .gpu/before/bench --suite cg $both --spmv-precision f64 --spmv-precision mixed --reps 5
  ;;
h1)
  TAIL=60 run batched_now 220 $bin/bench --suite batched $both --log2 8,16,32,64 --precision f64 --reps 10
  TAIL=60 run spmv_now 250 $bin/bench --suite spmv $both --only fvm_tet --only poisson7 --spmv-precision f64 --reps 10
  ;;
h2)
  TAIL=60 run cg_now 400 $bin/bench --suite cg $both --spmv-precision f64 --spmv-precision mixed --reps 5
  TAIL=30 run vector_now 150 $bin/bench --suite vector $both --log2 26,27 --precision f64 --reps 15
  ;;
f)
  # After the last change (reciprocal in the register Cholesky; the CG bench warms PCG up).
  GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 200 "$it" --include-ignored batched:: solver::precond::pcg --skip examples \
    --test-threads 4 > "$out/tests.txt" 2>&1
  echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head -20
  TAIL=60 run batched_final 200 $bin/bench --suite batched $both --log2 8 --precision f64 --reps 10
  TAIL=60 run cg_final 300 $bin/bench --suite cg $both --only poisson7 --spmv-precision f64 --spmv-precision mixed --reps 5
  ;;
esac
