#!/usr/bin/env bash
# What the two compilers make of the batched kernels, side by side: NVIDIA's Vulkan driver
# (`shader_stats`: registers, local memory, binary size, with robust buffer access on and
# off) and NVRTC's source through nvcc (`-Xptxas -v` registers and spills, `cuobjdump` SASS
# size). Issue 13 (eighteenth session): the Vulkan build of a kernel against the CUDA one.
#
# Build and stage (this machine):
#   GPU_FEATURES=cuda,wgpu,shader-stats ../shared/gpu/pack --example bench --example shader_stats
# Run (GPU machine; `run` with carry [".gpu"]):
#   source .gpu/setup.sh; bash benches/gpu/shader_stats.sh [OPS] [SIDES]
# OPS: `bench --only` operations, comma-separated (default cholesky); SIDES: the batched
# suite's sides (default 24,26,28,32). Writes vulkan.jsonl, the logs and the CUDA sources
# under $OUT/shader_stats (or /tmp/shader_stats) and prints one table.
set -euo pipefail
ops=${1:-cholesky}
sides=${2:-24,26,28,32}
bench=.gpu/bin/bench
stats=.gpu/bin/shader_stats
out=${OUT:-/tmp}/shader_stats
mkdir -p "$out"
only=()
IFS=, read -ra list <<< "$ops"
for op in "${list[@]}"; do only+=(--only "$op"); done

# The kernels as each runtime compiles them: a tenth of the suite's batch, one sample (only
# the logs matter here).
for backend in wgpu cuda; do
  rm -f "$out/$backend.log"
  CUBECL_DEBUG_LOG="$out/$backend.log" timeout 300 "$bench" --suite batched --precision f64 \
    --reps 1 --scale 0.1 --log2 "$sides" --backend "$backend" "${only[@]}" > /dev/null 2>&1 \
    || echo "shader_stats.sh: bench on $backend stopped ($?); using the kernels it logged" >&2
done

# Vulkan: one JSON object a kernel and robustness mode.
"$stats" "$out/wgpu.log" --json > "$out/vulkan.jsonl"

# CUDA: NVRTC's sources through nvcc for the same architecture.
rm -rf "$out/cu"
"$stats" "$out/cuda.log" --cuda-dir "$out/cu" > /dev/null
for f in "$out"/cu/*.cu; do
  (nvcc -arch=sm_90 -cubin -Xptxas -v -o "${f%.cu}.cubin" "$f" > "${f%.cu}.ptxas" 2>&1 \
    && cuobjdump -sass "${f%.cu}.cubin" | grep -cE '^\s+/\*[0-9a-f]{4,}\*/' > "${f%.cu}.sass" \
    || echo "shader_stats.sh: nvcc failed on $(basename "$f")" >&2) &
done
wait

python3 - "$out" <<'PY'
import glob, json, os, re, sys

out = sys.argv[1]
NVIDIA_LOCAL_OFFSET = 1 << 36  # driver 580 reports 2^36 plus the bytes a unit spills


def side(args):
    m = re.search(r"(?:^|[ _])n[=_](\d+)", args)
    return int(m.group(1)) if m else -1


def variant(args):
    # The flags that tell a kernel's variants apart on both runtimes.
    on = re.findall(r"(identity|transposed|pivoting|trans_a|trans_b)[=_]true", args)
    return ",".join(on) or "-"


rows = {}
for line in open(os.path.join(out, "vulkan.jsonl")):
    r = json.loads(line)
    s = r["statistics"]
    key = (r["kernel"], side(r["args"]), variant(r["args"]))
    mode = "on" if r["robust"] else "off"
    local = s.get("Local Memory Size", "-")
    if local != "-" and int(local) >= NVIDIA_LOCAL_OFFSET:
        local = int(local) - NVIDIA_LOCAL_OFFSET
    rows.setdefault(key, {})[mode] = (s.get("Register Count", "-"), local, s.get("Binary Size", "-"))

cuda = {}
for f in sorted(glob.glob(os.path.join(out, "cu", "*.cu"))):
    stem = os.path.basename(f)[:-3]
    m = re.match(r"\d+_([A-Za-z0-9]+)_?(.*)$", stem)
    key = (m.group(1), side(m.group(2)), variant(m.group(2)))
    v = open(f[:-3] + ".ptxas").read() if os.path.exists(f[:-3] + ".ptxas") else ""
    regs = re.search(r"Used (\d+) registers", v)
    spill = re.search(r"(\d+) bytes spill stores", v)
    sass = open(f[:-3] + ".sass").read().strip() if os.path.exists(f[:-3] + ".sass") else ""
    cuda[key] = (regs.group(1) if regs else "-", spill.group(1) if spill else "-",
                 int(sass) * 16 if sass.isdigit() else "-")

print(f"{'kernel':<24} {'n':>3} {'variant':<18} | {'Vulkan regs on/off':>18} {'local on/off':>13} "
      f"{'binary on/off':>17} | {'NVRTC regs':>10} {'spill':>6} {'SASS bytes':>10}")
for key in sorted(set(rows) | set(cuda)):
    v = rows.get(key, {})
    on, off = v.get("on", ("-",) * 3), v.get("off", ("-",) * 3)
    c = cuda.get(key, ("-", "-", "-"))
    print(f"{key[0]:<24} {key[1]:>3} {key[2]:<18} | {str(on[0]) + '/' + str(off[0]):>18} "
          f"{str(on[1]) + '/' + str(off[1]):>13} {str(on[2]) + '/' + str(off[2]):>17} | "
          f"{c[0]:>10} {c[1]:>6} {c[2]:>10}")
PY
