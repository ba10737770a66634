#!/usr/bin/env bash
# On the GPU machine, after `source .gpu/setup.sh`: installs the CUDA build of the Python
# package carried in .gpu/wheels (made here by `maturin build --release --features cuda`,
# with pytest's wheels beside it), then runs the pytest suite (CPU, wgpu, CUDA, DLPack with
# PyTorch and CuPy), the per-call overhead and the Poisson 7-point solve beside the Rust
# `solve` example (.gpu/bin/solve), and prints a short table.
#   N=256 benches/python/gpu.sh
set -uo pipefail
N=${N:-256}
python3 -m pip install --quiet --no-index --find-links .gpu/wheels galerkin pytest 2>&1 | tail -3
python3 -c 'import galerkin, sys; print("galerkin", galerkin.__version__, galerkin.backends(), sys.version.split()[0])'
python3 -m pytest -q -p no:cacheprovider python/tests 2>&1 | tail -8
for b in cpu cuda; do
  python3 benches/python/overhead.py --backend "$b" --n "$([ "$b" = cuda ] && echo "$N" || echo 64)" \
    --solve-bin .gpu/bin/solve
done
