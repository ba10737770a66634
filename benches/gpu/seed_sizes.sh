#!/usr/bin/env bash
# Seed 003's 3D problems at the seed's sizes (issue 41) on the GPU machine, in one call (after
# `../shared/gpu/pack --test it --example poisson_mg`, carry [".gpu"]):
#   source .gpu/setup.sh; bash benches/gpu/seed_sizes.sh
# k = 1, 3, 7 on 513³, 769³, 897³ unknowns to a relative residual of 1e-9: flexible CG with
# the f32 V-cycle (the SPD case), GMRES(10) with it for k = 1, and f64 throughout where it
# fits; the device memory the library's buffers held at most (memory_bytes) against the
# estimate, per unknown.
set -uo pipefail
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
it=$(ls $bin/it-* | head -1)
GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 120 "$it" kernel_cache > "$out/tests.txt" 2>&1
echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head
printf "%-3s %-3s %-7s %-6s %10s %4s %-5s %8s %8s %9s %10s %6s %6s\n" k L solver prec dofs its conv compile solve total l2 B/dof est
for run in "1 9 cg mixed" "1 9 gmres mixed" "3 8 cg mixed" "7 7 cg mixed" "1 9 cg f64" "3 8 cg f64" "7 7 cg f64"; do
  set -- $run
  timeout 300 $bin/poisson_mg --dim 3 --degree $1 --levels $2 --solver $3 --precision $4 --backend cuda --json > "$out/row.json" 2> "$out/row.err"
  rc=$?
  python3 - "$1" "$2" "$3" "$4" "$rc" "$out/row.json" <<'PY'
import json, sys
k, L, solver, prec, rc, path = sys.argv[1:]
try:
    d = json.load(open(path)); s = d["seconds"]; n = d["dofs"]
    print("%-3s %-3s %-7s %-6s %10d %4d %-5s %8.3f %8.3f %9.3f %10.3e %6.1f %6.1f" % (k, L, solver, prec, n, d["iterations"], d["converged"], s["compile"], s["solve"], s["total"], d["l2_error"] or float("nan"), d["memory_bytes"] / n, d["memory_bytes_estimate"] / n))
    print("    ", {a: round(b, 3) for a, b in s.items()}, "dofs/s %.3e" % d["dofs_per_second"])
except Exception as e:
    print(k, L, solver, prec, "rc", rc, "no JSON:", e)
PY
  [ "$rc" != 0 ] && tail -3 "$out/row.err" || true
done
