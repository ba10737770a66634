"""Where a first run's kernel compilation goes (issue 41): NVRTC and the driver's JIT, per kernel.

Reads the CUDA sources that cubecl logged (`cubecl.toml`: `[compilation.logger]` `level =
"full"`, `file = ...`) during one run of an example, and compiles each again the way cubecl
0.10 does (`--gpu-architecture=sm_XXa`, the toolkit's include path, `-lineinfo`, PTX, then
`cuModuleLoadData`, which JIT-compiles the PTX), timing each step; and, for comparison, the
same source without its `#include <cuda_runtime.h>` line, without `-lineinfo`, and compiled
by NVRTC straight to a cubin (no JIT at load).

    CUDA_CACHE_DISABLE=1 python3 compile_cost.py KERNELS.log [--json OUT.json]
"""
import json
import os
import re
import sys
import time

os.environ.setdefault("CUDA_CACHE_DISABLE", "1")
import cupy  # noqa: E402
from cupy.cuda import driver, nvrtc  # noqa: E402


def cuda_root():
    for p in (os.environ.get("CUDA_PATH"), "/usr/local/cuda", "/opt/cuda", "/usr"):
        if p and os.path.isdir(os.path.join(p, "include")):
            return p
    return "/usr/local/cuda"


def compile_src(src, options, cubin=False):
    t = time.perf_counter()
    prog = nvrtc.createProgram(src, "k.cu", [], [])
    try:
        nvrtc.compileProgram(prog, options)
        image = nvrtc.getCUBIN(prog) if cubin else nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return time.perf_counter() - t, image


def load(image):
    t = time.perf_counter()
    m = driver.moduleLoadData(image)
    dt = time.perf_counter() - t
    driver.moduleUnload(m)
    return dt


def main():
    log = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    blocks = log.split("[START_KERNEL_COMPILATION]")[1:]
    kernels = []
    for b in blocks:
        name = re.search(r"^\s*name: (.*)$", b, re.M)
        src = re.search(r"source:\n```\w*\n(.*?)\n```", b, re.S)
        if src:
            kernels.append(((name.group(1) if name else "?")[:90], src.group(1)))
    cupy.zeros(1)  # the context
    cc = cupy.cuda.Device(0).compute_capability
    arch = f"--gpu-architecture=sm_{cc}a" if int(cc) >= 90 else f"--gpu-architecture=sm_{cc}"
    inc = f"--include-path={cuda_root()}/include"
    base = [arch, inc, "-lineinfo"]
    rows, failed = [], 0
    for name, src in kernels:
        noinc = src.replace("#include <cuda_runtime.h>\n", "", 1)
        r = {"name": name, "bytes": len(src)}
        r["nvrtc"], ptx = compile_src(src, base)
        r["jit"] = load(ptx)
        try:
            r["nvrtc_noinc"], _ = compile_src(noinc, base)
            r["nvrtc_noinc_nolineinfo"], _ = compile_src(noinc, [arch, inc])
            r["cubin_nvrtc"], cub = compile_src(noinc, [arch, inc], cubin=True)
            r["cubin_load"] = load(cub)
        except Exception as e:  # noqa: BLE001
            failed += 1
            r["error"] = str(e)[:200]
        rows.append(r)
    keys = ["nvrtc", "jit", "nvrtc_noinc", "nvrtc_noinc_nolineinfo", "cubin_nvrtc", "cubin_load"]
    ok = [r for r in rows if "error" not in r]
    total = {k: sum(r.get(k, 0.0) for r in ok) for k in keys}
    total_all = {k: sum(r.get(k, 0.0) for r in rows) for k in ("nvrtc", "jit")}
    print(f"kernels: {len(rows)} (variants failed on {failed})")
    print(f"as cubecl: nvrtc {total_all['nvrtc']:.2f} s + JIT {total_all['jit']:.2f} s")
    print("where every variant compiled: " + ", ".join(f"{k} {v:.2f} s" for k, v in total.items()))
    print("slowest 12 (nvrtc + JIT, s):")
    for r in sorted(rows, key=lambda r: -(r["nvrtc"] + r["jit"]))[:12]:
        print(f"  {r['nvrtc']:.3f} + {r['jit']:.3f}  {r['bytes']:>7} B  {r['name']}")
    names = {}
    for r in rows:
        short = r["name"].split("<")[0].split("::")[-1]
        names[short] = names.get(short, 0) + 1
    print("most repeated kernel names: " + ", ".join(f"{n} x{c}" for n, c in sorted(names.items(), key=lambda x: -x[1])[:15]))
    if "--json" in sys.argv:
        json.dump({"rows": rows, "total": total, "total_all": total_all}, open(sys.argv[sys.argv.index("--json") + 1], "w"))


if __name__ == "__main__":
    main()
