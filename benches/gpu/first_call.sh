#!/usr/bin/env bash
# First calls and the kernel cache (issue 41) on the GPU machine, in one call (after
# `../shared/gpu/pack --test it --example hdg_poisson --example poisson_mg --example maxwell`, carry [".gpu"]):
#   source .gpu/setup.sh; bash benches/gpu/first_call.sh
# Wall time of whole processes (start included) with a fresh cache, then warm, then with the
# cache off; compile seconds apart from the work; four processes filling one fresh cache at
# once, then reading it; the kernel-cache tests; the seed's k = 1 problem (135M unknowns)
# for the L2 error's time against the solve's.
set -uo pipefail
bin=.gpu/bin
out=${OUT:-/tmp/out}
mkdir -p "$out"
it=$(ls $bin/it-* | head -1)
now() { date +%s.%N; }
row() { # label, then the command
  local label=$1; shift
  local t0; t0=$(now)
  "$@" > "$out/row.json" 2> "$out/row.err"
  local rc=$? t1; t1=$(now)
  python3 - "$label" "$rc" "$t0" "$t1" "$out/row.json" <<'PY'
import json, sys
label, rc, t0, t1, path = sys.argv[1:]
try:
    d = json.load(open(path)); s = d["seconds"]
    if isinstance(s, dict):
        compile = s.get("compile", 0)
        work = sum(v for k, v in s.items() if k not in ("compile", "total"))
    else:
        compile, work = d.get("compile_seconds", 0), s + d.get("setup_seconds", 0)
    solve = s.get("solve") if isinstance(s, dict) else None
    print("%-34s rc=%s wall %6.2f s  compile %6.3f  work %6.3f  its %s%s" % (label, rc, float(t1) - float(t0), compile, work, d.get("iterations", d.get("steps")), "  solve %.3f" % solve if solve is not None else ""))
except Exception as e:
    print("%-34s rc=%s wall %6.2f s  (no JSON: %s)" % (label, rc, float(t1) - float(t0), e))
PY
  [ -s "$out/row.err" ] && tail -2 "$out/row.err"
}
export GALERKIN_KERNEL_CACHE=/tmp/kc
rm -rf /tmp/kc ~/.nv/ComputeCache ~/.cache/nvidia
GALERKIN_REQUIRE_BACKENDS=cuda,wgpu timeout 120 "$it" kernel_cache multigrid::l2 > "$out/tests.txt" 2>&1
echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$out/tests.txt" | head
rm -rf /tmp/kc
hdg="$bin/hdg_poisson --mesh square:80 --degree 3 --json"
mg="$bin/poisson_mg --dim 3 --degree 3 --levels 6 --json"
mx="$bin/maxwell --mesh box:8 --order 3 --final-time 0.2 --json"
# ONLY_HDG=1: the HDG rows alone (fresh, warm, no compile-ahead), then stop.
for be in cuda wgpu; do
  rm -rf /tmp/kc ~/.nv/ComputeCache ~/.cache/nvidia
  row "hdg 80² $be first" $hdg --backend $be
  row "hdg 80² $be warm" $hdg --backend $be
  row "hdg 80² $be warm" $hdg --backend $be
  row "hdg 80² $be warm, no compile-ahead" $hdg --backend $be --no-compile-ahead
  [ -n "${ONLY_HDG:-}" ] && continue
  row "mg 3D Q3 L6 $be first" $mg --backend $be
  row "mg 3D Q3 L6 $be warm" $mg --backend $be
  row "mg 3D Q3 L6 $be warm" $mg --backend $be
  row "mg 3D Q3 L6 $be warm, no ahead" $mg --backend $be --no-compile-ahead
  row "hdg 2² $be warm (fixed cost)" $bin/hdg_poisson --mesh square:2 --degree 3 --json --backend $be
  row "maxwell box:8 N3 $be first" $mx --backend $be
  row "maxwell box:8 N3 $be warm" $mx --backend $be
  GALERKIN_KERNEL_CACHE=off row "hdg 80² $be cache off" $hdg --backend $be
  GALERKIN_KERNEL_CACHE=off row "mg 3D Q3 L6 $be cache off" $mg --backend $be
done
[ -n "${ONLY_HDG:-}" ] && exit 0
du -sh /tmp/kc; find /tmp/kc -maxdepth 3 | head
# Four processes fill one fresh cache at once, then four read it: same answers.
rm -rf /tmp/kc4
for i in 1 2 3 4; do
  GALERKIN_KERNEL_CACHE=/tmp/kc4 $mg --backend cuda > "$out/par$i.json" 2> "$out/par$i.err" &
done
wait
for i in 1 2 3 4; do
  GALERKIN_KERNEL_CACHE=/tmp/kc4 $mg --backend cuda > "$out/warm$i.json" 2> "$out/warm$i.err" &
done
wait
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for tag in ("par", "warm"):
    rows = []
    for i in range(1, 5):
        try:
            d = json.load(open(f"{out}/{tag}{i}.json"))
            rows.append((d["iterations"], d["l2_error"], d["relative_residual"], d["seconds"]["compile"]))
        except Exception as e:
            rows.append(("failed", str(e)[:60], open(f"{out}/{tag}{i}.err").read()[-200:]))
    print(tag, rows)
PY
# The seed's k = 1 problem: 513³ = 135M unknowns, GMRES + f32 V-cycle.
GALERKIN_KERNEL_CACHE=/tmp/kc row "mg 3D Q1 L9 mixed cuda" $bin/poisson_mg --dim 3 --degree 1 --levels 9 --solver gmres --precision mixed --backend cuda --json
python3 -c "import json; d=json.load(open('$out/row.json')); print(d['seconds'], d['l2_error'], d['dofs'])"
GALERKIN_KERNEL_CACHE=/tmp/kc row "mg 3D Q3 L7 mixed cuda" $bin/poisson_mg --dim 3 --degree 3 --levels 7 --solver gmres --precision mixed --backend cuda --json
python3 -c "import json; d=json.load(open('$out/row.json')); print(d['seconds'], d['l2_error'], d['dofs'])"
