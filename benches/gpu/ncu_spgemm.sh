#!/usr/bin/env bash
# Per-launch times of the SpGEMM kernels of the AMG setup (issue 42), by ncu, after
# `../shared/gpu/pack --example bench`, with carry [".gpu"]:
#   source .gpu/setup.sh; [M=poisson7:256] bash benches/gpu/ncu_spgemm.sh
# The first 60 launches whose names match KERNELS (default: the SpGEMM kernels) of one
# `bench --suite amg` rep on M (default fvm-tet:120): name, grid, block, registers, warps
# active, and the time (`gpu__time_duration.sum`, ns).
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p "$out"
ncu --clock-control none -k "regex:${KERNELS:-spgemm|split_}" --launch-count 60 \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active --csv \
  .gpu/bin/bench --suite amg --backend cuda --amg-matrix ${M:-fvm-tet:120} --reps 1 > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu rc=$?"; tail -3 "$out/ncu.err"
python3 - "$out/ncu.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]
iid, ik, im, iv = h.index("ID"), h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value")
launches = {}
for r in rows[1:]:
    d = launches.setdefault(r[iid], {"k": r[ik].split("(")[0][:40]})
    d[r[im]] = r[iv]
for i, d in sorted(launches.items(), key=lambda x: int(x[0])):
    print("%4s %-40s grid %9s blk %5s reg %4s warps %6s%%  %10s ns" % (i, d["k"], d.get("launch__grid_size"), d.get("launch__block_size"), d.get("launch__registers_per_thread"), d.get("sm__warps_active.avg.pct_of_peak_sustained_active"), d.get("gpu__time_duration.sum")))
PY
