#!/usr/bin/env bash
# Where a first run's compile time goes (issue 41): runs an example once with cubecl's
# compilation log on (every CUDA source), no kernel cache and no driver cache, then times
# NVRTC and the driver's JIT per kernel (compile_cost.py).
#   source .gpu/setup.sh; OUT=$OUT bash benches/gpu/compile_cost.sh [example args...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
OUT=${OUT:-/tmp/compile_cost}
mkdir -p "$OUT"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(hdg_poisson --mesh square:80 --degree 3 --backend cuda --json)
work=$(mktemp -d)
cat > "$work/cubecl.toml" <<TOML
[compilation.logger]
level = "full"
file = "$work/kernels.log"
TOML
bin="$root/.gpu/bin/${args[0]}"
start=$(date +%s.%N)
(cd "$work" && GALERKIN_KERNEL_CACHE=off CUDA_CACHE_DISABLE=1 "$bin" "${args[@]:1}" > "$OUT/run.json")
end=$(date +%s.%N)
echo "wall, logged, no caches: $(python3 -c "print(round($end - $start, 2))") s"
python3 -c "import json;d=json.load(open('$OUT/run.json'));print('seconds:', d.get('seconds'))" || true
# The same run without the log (its formatting and writing cost time too).
start=$(date +%s.%N)
(GALERKIN_KERNEL_CACHE=off CUDA_CACHE_DISABLE=1 "$bin" "${args[@]:1}" > /dev/null)
end=$(date +%s.%N)
echo "wall, no log, no caches: $(python3 -c "print(round($end - $start, 2))") s"
CUDA_CACHE_DISABLE=1 python3 "$here/compile_cost.py" "$work/kernels.log" --json "$OUT/compile_cost.json"
