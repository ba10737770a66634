#!/usr/bin/env python3
"""PyAMG reference for smoothed-aggregation AMG iteration counts.

For each case (a Matrix Market file, or a finite-difference Poisson matrix
built by pyamg.gallery.poisson: 5-point in 2-D, 7-point in 3-D, Dirichlet,
stencil scaled as 4/-1 and 6/-1, no h^2), this script

  * sets b = A*1, x0 = 0,
  * builds ml = pyamg.smoothed_aggregation_solver(A) (PyAMG defaults unless
    --theta, --max-coarse or the smoother options are given),
  * runs ml.solve(b, x0=x0, tol=TOL, accel='cg', residuals=res).

PyAMG's CG stops when its recursively updated residual satisfies
||r||_2 < tol*||b||_2 (criteria 'rr'); the true residual ||b - A x||_2/||b||_2
is recomputed afterwards and reported, together with 'converged', which is
true only when that true relative residual is <= tol.  iterations =
len(res) - 1 (res[0] is the initial residual).

Non-square, non-symmetric or complex matrices are refused: that case gets an
"error" field and the others still run.  PyAMG is single threaded; "threads"
in the JSON is os.cpu_count(), for the record only; BLAS is pinned to one
thread (OPENBLAS_NUM_THREADS etc. default to 1, unless already set).

Examples:
  python3 scripts/amg_reference.py --poisson2d 256 --poisson3d 32
  python3 scripts/amg_reference.py --matrix a.mtx --matrix b.mtx.gz --json > out.json
"""
import argparse
import gzip
import json
import os
import sys
import time
import warnings

# PyAMG is single threaded; its BLAS calls are small vector operations that a
# multithreaded OpenBLAS only slows down (10x on a loaded 2-core machine).
# Pin BLAS to one thread unless the caller chose otherwise.
for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')

import numpy as np  # noqa: E402  (after the thread pinning above)
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import pyamg  # noqa: E402

SMOOTHERS = {
    'default': None,  # PyAMG's own: ('block_gauss_seidel', {'sweep': 'symmetric'})
    'jacobi': 'jacobi',
    'chebyshev': 'chebyshev',
}


def read_mtx(path):
    """Read a Matrix Market file (.mtx or .mtx.gz) into CSR."""
    with warnings.catch_warnings():  # scipy >= 1.18 warns about spmatrix
        warnings.simplefilter('ignore', DeprecationWarning)
        if path.endswith('.gz'):
            with gzip.open(path, 'rb') as f:
                A = scipy.io.mmread(f)
        else:
            A = scipy.io.mmread(path)
    if not sp.issparse(A):
        A = sp.csr_matrix(A)
    return sp.csr_matrix(A)


def check_matrix(A, sym_tol):
    """Return an error message if A is unfit for SA-AMG + CG, else None."""
    if A.shape[0] != A.shape[1]:
        return 'not square (%d x %d)' % A.shape
    if np.iscomplexobj(A.data):
        return 'complex matrices are not supported'
    if A.shape[0] == 0:
        return 'empty matrix'
    if not np.all(np.isfinite(A.data)):
        return 'matrix has NaN or infinite entries'
    amax = abs(A).max()
    asym = abs(A - A.T).max() if A.nnz else 0.0
    if asym > sym_tol * amax:
        return ('not symmetric: max|A - A^T| = %.3g > %.3g * max|A| = %.3g'
                % (asym, sym_tol, sym_tol * amax))
    return None


def run_case(name, A, args):
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    case = {'name': name, 'rows': int(A.shape[0]), 'nnz': int(A.nnz)}
    err = check_matrix(A, args.sym_tol)
    if err:
        case['error'] = err
        return case
    A = A.astype(np.float64)
    diag = A.diagonal()
    case['min_diagonal'] = float(diag.min())
    if diag.min() <= 0:
        case['warning'] = 'diagonal not all positive: A is not SPD'
    kw = {'max_coarse': args.max_coarse}
    if args.theta is not None:
        kw['strength'] = ('symmetric', {'theta': args.theta})
    if SMOOTHERS[args.presmoother] is not None:
        kw['presmoother'] = SMOOTHERS[args.presmoother]
    if SMOOTHERS[args.postsmoother] is not None:
        kw['postsmoother'] = SMOOTHERS[args.postsmoother]
    b = A @ np.ones(A.shape[0])
    x0 = np.zeros(A.shape[0])
    try:
        t0 = time.perf_counter()
        ml = pyamg.smoothed_aggregation_solver(A, **kw)
        t1 = time.perf_counter()
        res = []
        x = ml.solve(b, x0=x0, tol=args.tol, accel='cg', maxiter=args.maxiter,
                     residuals=res)
        t2 = time.perf_counter()
    except Exception as e:  # pylint: disable=broad-except
        case['error'] = '%s: %s' % (type(e).__name__, e)
        return case
    true_rel = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
    case.update({
        'levels': len(ml.levels),
        'operator_complexity': float(ml.operator_complexity()),
        'grid_complexity': float(ml.grid_complexity()),
        'iterations': len(res) - 1,
        'true_relative_residual': true_rel,
        'converged': bool(true_rel <= args.tol),
        'setup_seconds': t1 - t0,
        'solve_seconds': t2 - t1,
        'level_rows': [int(l.A.shape[0]) for l in ml.levels],
        'level_nnz': [int(l.A.nnz) for l in ml.levels],
    })
    return case


def print_table(cases, out):
    head = ('%-26s %8s %9s %3s %6s %6s %5s %10s %9s %9s'
            % ('case', 'rows', 'nnz', 'lev', 'opcx', 'grcx', 'its',
               'true_rrel', 'setup_s', 'solve_s'))
    print(head, file=out)
    print('-' * len(head), file=out)
    for c in cases:
        if 'error' in c:
            print('%-26s %8d %9d  refused/failed: %s'
                  % (c['name'], c['rows'], c['nnz'], c['error']), file=out)
            continue
        flag = '' if c['converged'] else '  NOT CONVERGED'
        if 'warning' in c:
            flag += '  (' + c['warning'] + ')'
        print('%-26s %8d %9d %3d %6.3f %6.3f %5d %10.3e %9.3f %9.3f%s'
              % (c['name'], c['rows'], c['nnz'], c['levels'],
                 c['operator_complexity'], c['grid_complexity'],
                 c['iterations'], c['true_relative_residual'],
                 c['setup_seconds'], c['solve_seconds'], flag), file=out)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog=__doc__.split('\n', 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--matrix', action='append', default=[], metavar='PATH',
                   help='Matrix Market file (.mtx or .mtx.gz); repeatable')
    p.add_argument('--poisson2d', action='append', type=int, default=[],
                   metavar='N', help='5-point Laplacian on an N x N grid; repeatable')
    p.add_argument('--poisson3d', action='append', type=int, default=[],
                   metavar='N', help='7-point Laplacian on an N^3 grid; repeatable')
    p.add_argument('--tol', type=float, default=1e-8,
                   help='relative residual tolerance ||b-Ax||/||b|| (default 1e-8)')
    p.add_argument('--maxiter', type=int, default=1000,
                   help='maximum CG iterations (default 1000; PyAMG\'s own is 100)')
    p.add_argument('--theta', type=float, default=None,
                   help="strength threshold for ('symmetric', {'theta': T}) "
                        '(default: PyAMG default, theta 0)')
    p.add_argument('--max-coarse', type=int, default=10,
                   help='max rows on the coarsest level (default 10, as PyAMG)')
    p.add_argument('--presmoother', choices=sorted(SMOOTHERS), default='default',
                   help='default = symmetric block Gauss-Seidel (PyAMG default)')
    p.add_argument('--postsmoother', choices=sorted(SMOOTHERS), default='default',
                   help='as --presmoother')
    p.add_argument('--sym-tol', type=float, default=1e-10,
                   help='refuse A if max|A-A^T| > SYM_TOL * max|A| (default 1e-10)')
    p.add_argument('--json', action='store_true',
                   help='also print one JSON object on stdout')
    args = p.parse_args(argv)
    if not (args.matrix or args.poisson2d or args.poisson3d):
        p.error('give at least one --matrix, --poisson2d or --poisson3d')
    if not args.tol > 0 or args.maxiter < 1 or args.max_coarse < 1:
        p.error('--tol must be > 0, --maxiter and --max-coarse >= 1')
    if min(args.poisson2d + args.poisson3d + [1]) < 1:
        p.error('--poisson2d/--poisson3d N needs N >= 1')

    cases = []
    for path in args.matrix:
        name = os.path.basename(path)
        try:
            A = read_mtx(path)
        except Exception as e:  # pylint: disable=broad-except
            cases.append({'name': name, 'rows': 0, 'nnz': 0,
                          'error': 'cannot read: %s: %s' % (type(e).__name__, e)})
            continue
        cases.append(run_case(name, A, args))
    for n in args.poisson2d:
        cases.append(run_case('poisson2d_%d' % n,
                              pyamg.gallery.poisson((n, n), format='csr'), args))
    for n in args.poisson3d:
        cases.append(run_case('poisson3d_%d' % n,
                              pyamg.gallery.poisson((n, n, n), format='csr'), args))

    print('pyamg %s, numpy %s, scipy %s, python %s; tol %g, accel cg, '
          'pre %s, post %s, theta %s, max_coarse %d'
          % (pyamg.__version__, np.__version__, scipy.__version__,
             sys.version.split()[0], args.tol, args.presmoother,
             args.postsmoother, 'default' if args.theta is None else args.theta,
             args.max_coarse), file=sys.stderr)
    print_table(cases, sys.stderr)
    if args.json:
        json.dump({'cases': cases, 'pyamg_version': pyamg.__version__,
                   'threads': os.cpu_count(),
                   'blas_threads': os.environ['OPENBLAS_NUM_THREADS'],
                   'python_version': sys.version.split()[0],
                   'numpy_version': np.__version__,
                   'scipy_version': scipy.__version__}, sys.stdout, indent=1)
        print()
    return 0


if __name__ == '__main__':
    sys.exit(main())
