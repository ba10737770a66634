#!/usr/bin/env bash
# NVIDIA cuDSS beside AMG-preconditioned CG (issue 42's anchors) on the AMG suite's 3D
# matrices and the HDG P = 3 trace of 320², in one call on the GPU machine.
#
# cuDSS 0.8 (the version nvmath-python 1.0 requires) is an 80 MB wheel, more than a call
# carries with the working tree, so it travels in two parts first. Here:
#   echo /.cudss/ >> .git/info/exclude; mkdir -p .cudss
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     -d .cudss "nvidia-cudss-cu13==0.8.0.10" "nvmath-python==1.0.0"
#   split -b 41M -d -a 1 .cudss/nvidia_cudss_cu13-*.whl .cudss/p && rm .cudss/nvidia_cudss_cu13-*.whl
#   GPU_FEATURES=cuda,wgpu ../shared/gpu/pack --test it --example bench --example solve --example hdg_poisson
# then three `run` calls in a row (the machine must stay warm between them):
#   carry [".cudss/p0"]:                        mkdir -p /tmp/cudss; cp .cudss/p0 /tmp/cudss/
#   carry [".cudss/p1", ".cudss/nvmath_python-1.0.0-cp312-cp312-manylinux_2_28_x86_64.whl"]:
#                                               cp .cudss/p1 .cudss/nvmath_python-*.whl /tmp/cudss/
#   carry [".gpu"]:                             source .gpu/setup.sh; bash benches/gpu/cudss.sh
# MATRICES overrides the generated matrices (default poisson7:128,fvm-tet:60,poisson7:256,fvm-tet:120;
# empty: none); HDG_N the trace's meshes, comma-separated (default 320; empty: none).
set -uo pipefail
bin=.gpu/bin
out=${OUT:-/tmp/out}
dump=/tmp/amg-dump
mkdir -p "$out" "$dump"
whl=/tmp/cudss/nvidia_cudss_cu13-0.8.0.10-py3-none-manylinux_2_17_x86_64.whl
[ -f "$whl" ] || cat /tmp/cudss/p0 /tmp/cudss/p1 > "$whl" || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  "$whl" /tmp/cudss/nvmath_python-*.whl || exit 1
export PYTHONPATH=/tmp/site
matrices=${MATRICES-poisson7:128,fvm-tet:60,poisson7:256,fvm-tet:120}
if [ -n "$matrices" ]; then
  timeout 300 $bin/bench --suite amg --backend cuda --amg-matrix "$matrices" --reps 1 --dump "$dump" > "$out/amg.txt" 2>&1
  echo "dump rc=$?"
fi
ours() { python3 -c "
import json,sys
d=json.load(sys.stdin)
print('ours  %-22s its %4s conv %-5s setup %7.3f s solve %7.3f s total %7.3f s' % (sys.argv[1], d['iterations'], d['converged'], d['setup_s'], d['time_s'], d['setup_s'] + d['time_s']))" "$1"; }
theirs() { python3 -c "
import json,sys
d=json.load(sys.stdin)
print('cuDSS %-22s rows %9d nnz %10d analysis %7.3f factorize %7.3f solve %7.3f total %7.3f s resid %.1e' % (sys.argv[1], d['rows'], d['nnz'], d['analysis_s'], d['factorize_s'], d['solve_s'], d['total_s'], d['relative_residual']))" "$1"; }
IFS=, read -ra ms <<< "$matrices"
for m in "${ms[@]}"; do
  timeout 120 $bin/solve --matrix "$m" --backend cuda --precond amg --tol 1e-8 --warmup --json 2> "$out/err.txt" | ours "$m" || tail -2 "$out/err.txt"
  timeout 200 python3 benches/gpu/cudss.py "$dump/${m//[:\/.]/_}_L0_A" spd 2> "$out/cudss_err.txt" | theirs "$m" || tail -3 "$out/cudss_err.txt"
done
IFS=, read -ra hs <<< "${HDG_N-320}"
for hdg in "${hs[@]}"; do
  timeout 150 $bin/hdg_poisson --mesh square:$hdg --degree 3 --write-trace /tmp/k$hdg.mtx --no-post-process > "$out/write.txt" 2>&1
  echo "trace $hdg rc=$?"
  timeout 150 $bin/solve --matrix /tmp/k$hdg.mtx --backend cuda --precond amg --amg-near-null-stride 4 --amg-theta 0.1 --tol 1e-8 --warmup --json 2> "$out/err.txt" | ours "hdg $hdg² P3" || tail -2 "$out/err.txt"
  timeout 200 python3 benches/gpu/cudss.py /tmp/k$hdg.mtx spd 2> "$out/cudss_err.txt" | theirs "hdg $hdg² P3" || tail -3 "$out/cudss_err.txt"
  rm -f /tmp/k$hdg.mtx
done
