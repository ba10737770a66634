#!/usr/bin/env bash
# Hardware counters of the one-pass tensor kernel (issue 43) on the GPU machine, after
# `../shared/gpu/pack --example bench`, with carry [".gpu"]:
#   source .gpu/setup.sh; bash benches/gpu/ncu_tensor.sh [degrees] [precision]
# One launch of `tile_apply_kernel` per degree (after two warm-up launches), a few counters
# each: time, DRAM and L2 traffic, shared-memory bank conflicts, occupancy, stall reasons.
# KERNEL=patch_kernel: the fused vertex-patch smoother's kernel (one colour) instead.
set -uo pipefail
degrees=${1:-2,5,8}
precision=${2:-f64}
kernel=${KERNEL:-tile_apply}
out=${OUT:-/tmp/out}
mkdir -p "$out"
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
m=$m,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
m=$m,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
m=$m,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum
m=$m,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size
m=$m,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__occupancy_limit_warps,launch__grid_size
m=$m,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active
m=$m,sm__sass_thread_inst_executed_op_dfma_pred_on.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum
m=$m,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
for s in barrier long_scoreboard short_scoreboard mio_throttle lg_throttle wait math_pipe_throttle not_selected selected no_instruction dispatch_stall; do
  m=$m,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
IFS=, read -ra ds <<< "$degrees"
for k in "${ds[@]}"; do
  ncu --clock-control none -k "regex:$kernel" --launch-skip 2 --launch-count 1 --metrics "$m" --csv \
    .gpu/bin/bench --suite tensor --backend cuda --precision "$precision" --degrees "$k" --reps 3 \
    > "$out/ncu_${kernel}_k$k.csv" 2> "$out/ncu_${kernel}_k$k.err"
  echo "$kernel k=$k $precision rc=$?"
  python3 - "$out/ncu_${kernel}_k$k.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    print("  no rows"); sys.exit()
h = rows[0]
iname, iunit, ival = h.index("Metric Name"), h.index("Metric Unit"), h.index("Metric Value")
out = []
for r in rows[1:]:
    n = r[iname].replace("smsp__average_warps_issue_stalled_", "stall_").replace("_per_issue_active.ratio", "")
    out.append(f"{n}={r[ival]}{r[iunit] if r[iunit] not in ('', 'inst', 'warp') else ''}")
print("  " + "\n  ".join(out))
PY
done
