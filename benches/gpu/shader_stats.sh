#!/usr/bin/env bash
# What the two compilers make of the batched kernels, side by side: NVIDIA's Vulkan driver
# (`shader_stats`: registers, local memory, binary size, each kernel two ways) and NVRTC's
# source through nvcc (`-Xptxas -v` registers and spills, `cuobjdump` SASS size). Issue 13
# (eighteenth and nineteenth sessions): the Vulkan build of a kernel against the CUDA one.
# COMPARE=access (default): the buffers a kernel never writes bound `read_write` as cubecl
# binds them, against `read` (robust buffer access on, as wgpu opens the device);
# COMPARE=robust: robust buffer access on against off (bindings as logged). On an H200 (driver
# 580, 2026-11-27) robustness changed no kernel's statistics.
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
compare=${COMPARE:-access}
case "$compare" in
  access) modes=(--robust on --access both) ;;
  robust) modes=(--robust both --access logged) ;;
  *) echo "shader_stats.sh: COMPARE is access or robust, not '$compare'" >&2; exit 2 ;;
esac
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

# Vulkan: one JSON object a kernel and form.
"$stats" "$out/wgpu.log" "${modes[@]}" --json > "$out/vulkan.jsonl"

# CUDA: NVRTC's sources through nvcc for the same architecture.
rm -rf "$out/cu"
"$stats" "$out/cuda.log" --cuda-dir "$out/cu" > /dev/null
for f in "$out"/cu/*.cu; do
  (nvcc -arch=sm_90 -cubin -Xptxas -v -o "${f%.cu}.cubin" "$f" > "${f%.cu}.ptxas" 2>&1 \
    && cuobjdump -sass "${f%.cu}.cubin" | grep -cE '^\s+/\*[0-9a-f]{4,}\*/' > "${f%.cu}.sass" \
    || echo "shader_stats.sh: nvcc failed on $(basename "$f")" >&2) &
done
wait

python3 - "$out" "$compare" <<'PY'
import glob, json, os, re, sys

out, compare = sys.argv[1], sys.argv[2]
# The two forms of each kernel: (JSON key, value of the first form, column label).
FORM = {"access": ("read_only", False, "rw/ro"), "robust": ("robust", True, "on/off")}[compare]
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
    mode = "a" if r.get(FORM[0]) == FORM[1] else "b"
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

label = FORM[2]
print(f"{'kernel':<24} {'n':>3} {'variant':<18} | {'Vulkan regs ' + label:>18} {'local ' + label:>13} "
      f"{'binary ' + label:>17} | {'NVRTC regs':>10} {'spill':>6} {'SASS bytes':>10}")
for key in sorted(set(rows) | set(cuda)):
    v = rows.get(key, {})
    on, off = v.get("a", ("-",) * 3), v.get("b", ("-",) * 3)
    c = cuda.get(key, ("-", "-", "-"))
    print(f"{key[0]:<24} {key[1]:>3} {key[2]:<18} | {str(on[0]) + '/' + str(off[0]):>18} "
          f"{str(on[1]) + '/' + str(off[1]):>13} {str(on[2]) + '/' + str(off[2]):>17} | "
          f"{c[0]:>10} {c[1]:>6} {c[2]:>10}")
PY
