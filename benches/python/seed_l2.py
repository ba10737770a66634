"""Seed 003's Table 7 column: which L2 quantity it reports. Runs `galerkin.poisson_mg` in 3D at the
seed's sizes (CG around the V-cycle to 1e-9) and prints the true L2 error (Gauss, k + 2 points)
beside ‖u_h − I_h u‖ (the solution against the nodal interpolant), with the seed's values.

    python benches/python/seed_l2.py [--backend cuda] [--cases 1:9:mixed,3:8:mixed,...]"""

import argparse
import time

import galerkin

SEED = {1: 1.12e-6, 3: 2.30e-13, 7: 2.89e-16}  # Table 7, Q_k at its finest level

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--backend", default="cuda")
p.add_argument("--cases", default="1:9:mixed,3:8:mixed,3:8:f64,7:7:mixed")
args = p.parse_args()
print(f"{'k':>2} {'L':>2} {'precision':>9} {'dofs':>12} {'its':>4} {'rel. res.':>10} {'L2 (true)':>10} {'|u_h-I_h u|':>11} {'seed':>9} {'s':>6}")
for case in args.cases.split(","):
    k, level, precision = case.split(":")
    k, level = int(k), int(level)
    t0 = time.perf_counter()
    r = galerkin.poisson_mg(3, k, level, solver="cg", precision=precision, backend=args.backend, keep_solution=False)
    print(f"{k:>2} {level:>2} {precision:>9} {r['dofs']:>12} {r['iterations']:>4} {r['relative_residual']:>10.2e} "
          f"{r['l2_error']:>10.3e} {r['l2_error_interpolant']:>11.3e} {SEED.get(k, float('nan')):>9.2e} {time.perf_counter() - t0:>6.1f}")
