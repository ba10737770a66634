#!/usr/bin/env bash
# The f32 hierarchy against the f64 one inside the same f64 PCG (issue 42's "≥ 1.3x at the same
# iterations"), for one or more builds of `solve` in the same call, runs interleaved so that the
# device's drift falls on every build alike. After `../shared/gpu/pack --example solve`, with
# an older build's `solve` staged beside it as .gpu/bin/solve-<name> (gzipped like the rest):
#   source .gpu/setup.sh; SOLVES="base:.gpu/bin/solve-base new:.gpu/bin/solve" bash benches/gpu/amg_ratio.sh
# Prints one line per run (build, matrix, precision, iterations, solve seconds) and per build
# and matrix the medians and their ratio. MATRICES (default poisson7:256 fvm-tet:120), REPS
# (default 3), BACKEND (default cuda).
set -uo pipefail
solves=${SOLVES:-new:.gpu/bin/solve}
reps=${REPS:-3}
matrices=${MATRICES:-poisson7:256 fvm-tet:120}
backend=${BACKEND:-cuda}
log=$(mktemp)
for rep in $(seq "$reps"); do
  for m in $matrices; do
    for entry in $solves; do
      name=${entry%%:*} bin=${entry#*:}
      for prec in same f32; do
        timeout 120 "$bin" --matrix "$m" --backend "$backend" --precond amg --amg-degree 3 \
          --amg-precision "$prec" --tol 1e-8 --warmup --max-iter 500 --json 2>/dev/null \
          | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sys.argv[1], sys.argv[2], sys.argv[3], d["iterations"], d["converged"], "%.5f" % d["time_s"])' \
            "$name" "$m" "$prec" | tee -a "$log" || echo "$name $m $prec failed"
      done
    done
  done
done
python3 - "$log" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 6]
keys = []
for name, m, *_ in rows:
    if (name, m) not in keys:
        keys.append((name, m))
print("%-8s %-14s %5s %9s %5s %9s %7s" % ("build", "matrix", "its", "f64 s", "its", "f32 s", "ratio"))
for name, m in keys:
    med = {}
    for prec in ("same", "f32"):
        sel = [r for r in rows if r[0] == name and r[1] == m and r[2] == prec]
        med[prec] = (sel[0][3], statistics.median(float(r[5]) for r in sel), [float(r[5]) for r in sel])
    ratios = [a / b for a, b in zip(med["same"][2], med["f32"][2])]
    print("%-8s %-14s %5s %9.5f %5s %9.5f %6.3fx  (runs %s)" % (
        name, m, med["same"][0], med["same"][1], med["f32"][0], med["f32"][1],
        med["same"][1] / med["f32"][1], " ".join("%.3f" % r for r in ratios)))
PY
rm -f "$log"
