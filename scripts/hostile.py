#!/usr/bin/env python3
"""Mutation run of galerkin's five command-line front doors against hostile input.

How the inputs are made: for each door (solve, spmv, hdg_poisson, poisson_mg, maxwell) the
script starts from a small corpus of valid invocations (a dozen or so per door covering its
main options at small sizes: generated matrices, small synthetic Matrix Market and Gmsh
2.2/4.1 files, a few small real files from /work/shared/data read in place) and derives
--per-door inputs from it with a seeded PRNG (Python's `random`, one stream per door and
case, so the same --seed gives the same inputs in any order and with any --jobs). Each input
applies 1-3 mutations to a corpus entry:

* arguments: numeric values replaced by hostile ones (0, -1, +-1e300, nan, inf, 1e-300,
  5e-324, 2^31, 2^32, 2^63, 2^64, 40-digit and 400-digit integers, the empty string,
  garbage, option boundaries such as --degree 10 or --levels 21); values swapped between
  options; options dropped or duplicated; unknown enum values; unknown options; extreme
  sizes (`--matrix random:2^32`, `poisson7:2^21`, `hdg:1000:4`, `--mesh square:65536`,
  `box:2^21`, `--levels 12`, ...); malformed specs (`poisson7:`, `hdg:3`, a directory,
  /dev/null, a mesh given as a matrix); hostile output paths; hostile tag lists, cavity
  modes and time lists; for hdg_poisson hostile expressions in --exact/--rhs/--dirichlet/
  --flux (products and sums of 50-5000 factors, 10 kB of text, parentheses or sin( nested
  100-20000 deep, 1/0, 0/0, log(-1), sqrt(-1), 2e3*x, exp(710*x), unknown names,
  unbalanced or empty text);
* input files, written into a scratch directory (never into the repository): mutated
  copies of small Matrix Market files (general, symmetric, pattern, integer, array,
  skew-symmetric, rectangular, and HB_orsreg_1 from the shared data) and Gmsh files (unit
  square of triangles and unit cube of tetrahedra with tagged boundaries, 2.2 and 4.1, and
  two small real meshes), mutated structurally (header counts such as `1000000000
  1000000000 5`, entry counts that lie, NaN/inf/1e308 values and coordinates, indices 0,
  -1, n+1, 2^31, 2^32, 2^64, duplicated entries/elements, upper-triangle entries in
  symmetric files, elements of other types (lines, quads 3, hexahedra 5, prisms 6,
  pyramids 7, second-order and unknown types) in a tri or tet mesh, degenerate, inverted
  or coincident elements, physical tags that select nothing, missing boundary or volume
  elements, huge or duplicated node tags, MSH versions and binary flags that are not
  supported, 2D meshes given to maxwell and 3D to hdg_poisson) and/or textually (byte
  flips, truncation, duplicated, deleted or swapped lines, CRLF, a byte-order mark, an
  endless line of a few MB without a newline, gzip of the result, truncated gzip, a gzip
  that inflates to 64 MB without a newline); right-hand-side and x vectors with the wrong
  length, NaN/inf, garbage or endless lines.

Every run gets --json; a run is classified as crash (signal, exit >= 128, or stderr with
"panicked", "stack overflow" or "memory allocation of"), hang (past --timeout), usage
(exit 2), error (1), not_converged (3), ok (0) or other_exit; an exit-0 run is further
checked: stdout must be one JSON object (else bad_json), the JSON must not claim an answer
it does not have (wrong_ok: converged with a residual that is null or above the requested
tolerance, a null/NaN number where a number is expected, iterations 0 with a nonzero
right-hand side, energy growth with the upwind flux, a y different from the script's own
product for unmutated Matrix Market input), and stderr must not carry an error message
(suspicious_ok). Children run with RAYON_NUM_THREADS=--threads, RUST_BACKTRACE=1, an
address-space limit (--mem-limit, so that a runaway allocation fails instead of eating the
machine: "memory allocation of N bytes failed" is then reported as a crash) and a 1 GiB
file-size limit, at most --jobs at a time.

Findings (crash, hang, wrong_ok, bad_json) are de-duplicated by (door, class, key), the
key being the first relevant stderr line with digits folded (the panic or allocation line
for crashes, the reason for wrong_ok/bad_json, the mutated options for hangs). Exit status
1 if any finding, else 0. The binaries are copied to a scratch directory at the start (they
may be rebuilt while the script runs); the commands it prints name the --bin directory.
"""

import argparse
import collections
import gzip
import hashlib
import json
import math
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DOORS = ["solve", "spmv", "hdg_poisson", "poisson_mg", "maxwell"]
CLASSES = ["ok", "usage", "error", "not_converged", "crash", "hang", "wrong_ok",
           "bad_json", "suspicious_ok", "other_exit"]
FINDINGS = ("crash", "hang", "wrong_ok", "bad_json")
HERE = os.path.dirname(os.path.abspath(__file__))
# The shared data (read in place, never copied): GALERKIN_DATA_DIR, else ../shared/data
# beside the repository.
DATA = os.environ.get("GALERKIN_DATA_DIR",
                      os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "data"))
DEFAULT_BIN = os.path.join(os.path.dirname(HERE), "target", "release", "examples")

# --------------------------------------------------------------------------------------
# Hostile values
# --------------------------------------------------------------------------------------

HOSTILE_NUMBERS = [
    "0", "-1", "1", "1e300", "-1e300", "nan", "NaN", "-nan", "inf", "-inf", "infinity",
    "1e-300", "-1e-300", "5e-324", "1e309", "-1e309", "-0", "0.0",
    str(2**31), str(2**31 - 1), str(2**32), str(2**32 - 1), str(2**32 + 1),
    str(2**63), str(2**63 - 1), str(2**64), str(2**64 - 1), "9" * 40, "1" + "0" * 400,
    "", " ", "garbage", "0x10", "1e3", "+7", "1_000", "1,5", "3.5", "1e", "٣", "7 ",
]
HOSTILE_INTS_EXTRA = ["0", "1", "2", "-1", str(2**16), str(2**21), str(2**32),
                      str(2**63), str(2**64), "9" * 30, "", "x", "1.5", "1e3", " 4", "-0"]
BAD_ENUM = ["", " ", "CPU", "cpu ", "gpu", "f16", "f128", "auto,csr", "xyz", "0", "-1",
            "Upwind", "none none", "ALL", "a" * 300, "é", "nan"]
HOSTILE_TAGS = ["99", "-1", "0", str(2**31), str(2**31 - 1), str(2**32), "", ",", "1,,2",
                "1,1,1,1,1", "a", "1.5", "1,2,3,4,5,6", "-2147483648", "1 2", "nan",
                ",".join(str(i) for i in range(1, 2000))]
HOSTILE_MODES = ["0,0,0", "0,0,1", "0,1,0", "1000000,1,0", "1,1000000,1", str(2**64) + ",1,0",
                 str(2**32) + ",1,1", "1,1", "1,1,1,1", "-1,1,0", "a,b,c", "", " 1 , 1 , 0 ",
                 "1.5,1,0", "1,,0", "9,9,9", "100,100,100"]
HOSTILE_TIMES = ["nan", "inf", "-1", "1e300", "0.1,nan", "1e-300", "", ",", "0.2,0.1,0.2,0.1",
                 ",".join(["0.01"] * 3000), "-inf,inf", "a"]
BAD_OUT_PATHS = ["", "/proc/hostile-nonexistent/out.vtu", "/proc/hostile-nonexistent/out.txt",
                 "{DIR}", "{DIR}/", ".", "/dev/null", "{DIR}/a/b/c/out.vtu", "{DIR}/x",
                 "{DIR}/f_exists.txt/out.vtu",
                 "{DIR}/" + "n" * 300 + ".vtu", "{DIR}/out.vtu\n", "{DIR}/out.txt"]
OTHER_TYPES = [1, 3, 5, 6, 7, 8, 9, 11, 15, 0, 20, 31, 99, -1, 2**31]
TYPE_NODES = {1: 2, 2: 3, 3: 4, 4: 4, 5: 8, 6: 6, 7: 5, 8: 3, 9: 6, 11: 10, 15: 1}
TYPE_DIM = {1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 3, 7: 3, 8: 1, 9: 2, 11: 3, 15: 0}
HUGE_TRIPLES = ["1000000000 1000000000 5", "4294967296 4294967296 1", "3 3 1000000000",
                "0 0 0", "-1 -1 -1", "18446744073709551616 1 1", "25 25 9223372036854775807",
                "4294967295 4294967295 4294967295", "25 25", "25", "", "25 25 -5",
                "1e3 1e3 10", "25 25 0", "1 1 100", "2147483648 1 1"]
BAD_INDICES = ["0", "-1", "N+1", str(2**31), str(2**32), str(2**32 + 1), str(2**64), "9" * 30,
               "1.5", "nan", "", "1e3"]
BAD_VALUES = ["nan", "NaN", "inf", "-inf", "Infinity", "1e308", "-1e308", "1e309", "1e-320",
              "-0", "1.5D+03", "0x1p3", "1e", "--1", "", "9" * 400]


def hostile_expr(rng, allowed):
    """A hostile expression text for hdg_poisson (`allowed` = number of variables)."""
    atoms = ["x", "y", "(x+1)", "sin(x)", "(x*y+1)", "exp(y)", "cos(pi*x)"]
    if allowed == 4:
        atoms += ["nx", "ny"]
    kind = rng.choice(["product", "product", "sum", "long", "deep", "deep_fn", "tower",
                       "simple", "simple", "simple", "names"])
    if kind == "product":
        k = rng.choice([50, 200, 1000, 5000])
        return "*".join(rng.choice(atoms) for _ in range(k)), "product of %d factors" % k
    if kind == "sum":
        k = rng.choice([50, 500, 5000])
        return "+".join(rng.choice(atoms) for _ in range(k)), "sum of %d terms" % k
    if kind == "long":
        return "x+" * 5000 + "1", "10 kB text"
    if kind == "deep":
        d = rng.choice([100, 1000, 5000, 20000])
        return "(" * d + "x" + ")" * d, "parentheses %d deep" % d
    if kind == "deep_fn":
        d = rng.choice([100, 1000, 5000, 20000])
        f = rng.choice(["sin(", "exp(", "-(", "abs("])
        return f * d + "x" + ")" * d, "%s nested %d deep" % (f, d)
    if kind == "tower":
        d = rng.choice([10, 100, 1000])
        return "^".join(["x"] * d), "power tower of %d" % d
    if kind == "names":
        t = rng.choice(["a*b", "t", "xx", "X", "Y", "z", "foo(x)", "nx*x", "ny", "e", "E",
                        "x*Pi", "PI*x", "π*x", "sinh(x)", "atan2(x,y)", "x.y", "$x"])
        return t, "names " + t
    t = rng.choice([
        "1/0", "0/0", "log(-1)", "sqrt(-1)", "log(0)", "2e3*x", "1e308*1e308", "exp(1000)",
        "exp(710*x)", "x^-1", "1/x", "1/(x-0.5)", "tan(pi/2)", "asin(2)", "", " ", "x*",
        "*x", ")(", "((x)", "x))", "sin", "pi", "nan", "inf", "NaN", "x**2", "1e309", "--x",
        "x y", "x,y", "\u00e9", "\U0001F642", "x^2.5", "abs(x)", "signum(x)", "x%0",
        "1e-400", "2^1024", "y^(1/3)", "x/0*0", "-x^0.5", "x^1e300", "0^0", "(-8)^(1/3)",
        "x\ty", "1e-300*x", "1/(x*y)", "log(x)", "cot(0)", "x!",
    ])
    return t, "expr %r" % t


# --------------------------------------------------------------------------------------
# Synthetic files: Matrix Market
# --------------------------------------------------------------------------------------

def fmt_num(v):
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        return repr(v)
    return str(v)


def poisson2d_entries(n):
    ents = []
    idx = lambda i, j: j * n + i + 1
    for j in range(n):
        for i in range(n):
            r = idx(i, j)
            ents.append((r, r, 4.0))
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                a, b = i + di, j + dj
                if 0 <= a < n and 0 <= b < n:
                    ents.append((r, idx(a, b), -1.0))
    return ents


def mtx_bases():
    bases = {}
    ents = poisson2d_entries(5)
    bases["spd_gen"] = dict(fmt="coordinate", field="real", sym="general", m=25, n=25,
                            entries=ents)
    bases["spd_sym"] = dict(fmt="coordinate", field="real", sym="symmetric", m=25, n=25,
                            entries=[(i, j, v) for i, j, v in ents if i >= j])
    rng = random.Random(7)
    pat = {(i, i) for i in range(1, 13)}
    while len(pat) < 40:
        pat.add((rng.randint(1, 12), rng.randint(1, 12)))
    bases["pattern"] = dict(fmt="coordinate", field="pattern", sym="general", m=12, n=12,
                            entries=[(i, j, None) for i, j in sorted(pat)])
    bases["int_sym"] = dict(fmt="coordinate", field="integer", sym="symmetric", m=25, n=25,
                            entries=[(i, j, int(v)) for i, j, v in ents if i >= j])
    dense = [[(6.0 if i == j else (1.0 / (1 + i + j))) for j in range(6)] for i in range(6)]
    bases["array"] = dict(fmt="array", field="real", sym="general", m=6, n=6,
                          entries=[(i + 1, j + 1, dense[i][j]) for j in range(6) for i in range(6)])
    sk = []
    for i in range(1, 9):
        for j in range(1, i):
            if (i + j) % 3 == 0:
                sk.append((i, j, float(i - j)))
    bases["skew"] = dict(fmt="coordinate", field="real", sym="skew-symmetric", m=8, n=8,
                         entries=sk)
    bases["rect"] = dict(fmt="coordinate", field="real", sym="general", m=5, n=7,
                         entries=[(i, j, float(i * j)) for i in range(1, 6) for j in range(1, 8)
                                  if (i + j) % 2 == 0])
    return bases


MTX_BASE_NAMES = ["spd_gen", "spd_sym", "pattern", "int_sym", "array", "skew", "rect"]


def write_mtx(b):
    out = ["%%%%MatrixMarket matrix %s %s %s" % (b["fmt"], b["field"], b["sym"])]
    out.append("% written by scripts/hostile.py")
    out.extend(b.get("extra_comments", []))
    if b["fmt"] == "array":
        out.append(b.get("size_line", "%d %d" % (b["m"], b["n"])))
        for _, _, v in b["entries"]:
            out.append(fmt_num(v))
    else:
        out.append(b.get("size_line", "%d %d %d" % (b["m"], b["n"], b.get("declared", len(b["entries"])))))
        for i, j, v in b["entries"]:
            if v is None:
                out.append("%s %s" % (fmt_num(i), fmt_num(j)))
            else:
                out.append("%s %s %s" % (fmt_num(i), fmt_num(j), fmt_num(v)))
    return ("\n".join(out) + "\n").encode()


def mtx_reference(b, x=None):
    """(rows, cols, y) for a structurally valid coordinate/array matrix, else None."""
    m, n = b["m"], b["n"]
    if "size_line" in b or b.get("declared", len(b["entries"])) != len(b["entries"]):
        return None
    y = [0.0] * m
    xs = x if x is not None else [1.0] * n
    if len(xs) != n:
        return None
    for i, j, v in b["entries"]:
        if not (isinstance(i, int) and isinstance(j, int) and 1 <= i <= m and 1 <= j <= n):
            return None
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                return None
        v = 1.0 if v is None else float(v)
        if b["sym"] != "general" and b["fmt"] == "coordinate" and j > i:
            return None
        if b["sym"] == "skew-symmetric" and i == j:
            return None
        y[i - 1] += v * xs[j - 1]
        if b["sym"] != "general" and i != j:
            y[j - 1] += (v if b["sym"] == "symmetric" else -v) * xs[i - 1]
    return m, n, y


def mutate_mtx_struct(rng, b, desc):
    b = dict(b)
    b["entries"] = list(b["entries"])
    op = rng.choice(["header", "header", "declared", "values", "indices", "dup", "upper",
                     "zeros", "banner", "huge_values", "int_values", "drop_diag", "comments"])
    if op == "header":
        s = rng.choice(HUGE_TRIPLES)
        b["size_line"] = s
        desc.append("size line %r" % s)
    elif op == "declared":
        d = rng.choice([len(b["entries"]) + 1, len(b["entries"]) - 1, 0, 2**32, 2**32 + 3,
                        len(b["entries"]) * 1000, 2**63 - 1])
        b["declared"] = d
        desc.append("declared %d entries of %d" % (d, len(b["entries"])))
    elif op == "values" and b["entries"]:
        k = rng.randint(1, 3)
        for _ in range(k):
            t = rng.randrange(len(b["entries"]))
            i, j, _v = b["entries"][t]
            vv = rng.choice(BAD_VALUES)
            b["entries"][t] = (i, j, vv)
        desc.append("%d value(s) hostile, e.g. %r" % (k, vv))
    elif op == "indices" and b["entries"]:
        t = rng.randrange(len(b["entries"]))
        i, j, v = b["entries"][t]
        bad = rng.choice(BAD_INDICES)
        bad = str(b["m"] + 1) if bad == "N+1" else bad
        if rng.random() < 0.5:
            i = bad
        else:
            j = bad
        b["entries"][t] = (i, j, v)
        desc.append("index %r in entry %d" % (bad, t + 1))
    elif op == "dup" and b["entries"]:
        k = rng.choice([1, 5, 100])
        for _ in range(k):
            b["entries"].append(rng.choice(b["entries"]))
        if rng.random() < 0.5:
            rng.shuffle(b["entries"])
        b["declared"] = len(b["entries"])
        desc.append("%d duplicated entries (count updated)" % k)
    elif op == "upper" and b["entries"]:
        i, j, v = rng.choice(b["entries"])
        b["entries"].append((min(i, j), max(i, j) + (1 if i == j else 0), v))
        b["declared"] = len(b["entries"])
        desc.append("entry above the diagonal")
    elif op == "zeros":
        b["entries"] = [(i, j, 0.0 if v is not None else None) for i, j, v in b["entries"]]
        desc.append("all values zero")
    elif op == "banner":
        s = rng.choice(["%%MatrixMarket matrix coordinate complex general",
                        "%%MatrixMarket matrix coordinate real hermitian",
                        "%%MatrixMarket matrix coordinate pattern general",
                        "%%MatrixMarket matrix array real general",
                        "%%MatrixMarket matrix coordinate real symmetric",
                        "%%MatrixMarket matrix coordinate integer skew-symmetric",
                        "%%MatrixMarket vector coordinate real general",
                        "%%MatrixMarket matrix coordinate", "%%MatrixMarket", "",
                        "%MatrixMarket matrix coordinate real general",
                        "%%matrixmarket MATRIX Coordinate REAL General",
                        "%%MatrixMarket matrix coordinate real general extra words"])
        b["banner_override"] = s
        desc.append("banner %r" % s)
    elif op == "huge_values":
        b["entries"] = [(i, j, (1e308 if v is not None else None)) for i, j, v in b["entries"]]
        desc.append("every value 1e308")
    elif op == "int_values":
        b["entries"] = [(i, j, rng.choice([str(2**63), str(2**64), "-" + str(2**63 + 1), "1.5"]))
                        for i, j, v in b["entries"]]
        desc.append("integer-field overflow/fractions")
    elif op == "drop_diag":
        b["entries"] = [(i, j, v) for i, j, v in b["entries"] if i != j]
        b.pop("declared", None)
        desc.append("diagonal removed")
    else:
        b["extra_comments"] = ["%" + "c" * rng.choice([10, 100000])] * rng.choice([1, 50])
        desc.append("comment lines")
    return b


# --------------------------------------------------------------------------------------
# Synthetic files: Gmsh
# --------------------------------------------------------------------------------------

def square_mesh(n):
    nodes = []
    tag = lambda i, j: j * (n + 1) + i + 1
    for j in range(n + 1):
        for i in range(n + 1):
            nodes.append([tag(i, j), i / n, j / n, 0.0])
    elems = []
    for j in range(n):
        for i in range(n):
            a, b, c, d = tag(i, j), tag(i + 1, j), tag(i + 1, j + 1), tag(i, j + 1)
            elems.append([2, 10, 1, [a, b, c]])
            elems.append([2, 10, 1, [a, c, d]])
    for i in range(n):
        elems.append([1, 1, 1, [tag(i, 0), tag(i + 1, 0)]])
        elems.append([1, 2, 2, [tag(n, i), tag(n, i + 1)]])
        elems.append([1, 3, 3, [tag(i + 1, n), tag(i, n)]])
        elems.append([1, 4, 4, [tag(0, i + 1), tag(0, i)]])
    return dict(dim=2, nodes=nodes, elems=elems)


def cube_mesh(n):
    nodes = []
    tag = lambda i, j, k: (k * (n + 1) + j) * (n + 1) + i + 1
    coord = {}
    for k in range(n + 1):
        for j in range(n + 1):
            for i in range(n + 1):
                t = tag(i, j, k)
                nodes.append([t, i / n, j / n, k / n])
                coord[t] = (i / n, j / n, k / n)
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
    tets = []
    for k in range(n):
        for j in range(n):
            for i in range(n):
                for p in perms:
                    v = [i, j, k]
                    path = [tag(*v)]
                    for ax in p:
                        v[ax] += 1
                        path.append(tag(*v))
                    a, b, c, d = [coord[t] for t in path]
                    vol = det3([b[q] - a[q] for q in range(3)], [c[q] - a[q] for q in range(3)],
                               [d[q] - a[q] for q in range(3)])
                    if vol < 0:
                        path[2], path[3] = path[3], path[2]
                    tets.append(path)
    faces = collections.Counter()
    for t in tets:
        for f in ((t[0], t[1], t[2]), (t[0], t[1], t[3]), (t[0], t[2], t[3]), (t[1], t[2], t[3])):
            faces[tuple(sorted(f))] += 1
    elems = [[4, 10, 1, t] for t in tets]
    for f, c in sorted(faces.items()):
        if c != 1:
            continue
        pts = [coord[t] for t in f]
        for ax in range(3):
            for side, val in ((0, 0.0), (1, 1.0)):
                if all(abs(p[ax] - val) < 1e-12 for p in pts):
                    phys = 1 + 2 * ax + side
                    elems.append([2, phys, phys, list(f)])
    return dict(dim=3, nodes=nodes, elems=elems)


def det3(a, b, c):
    return (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
            + a[2] * (b[0] * c[1] - b[1] * c[0]))


def write_msh22(m):
    out = ["$MeshFormat", m.get("version", "2.2 0 8"), "$EndMeshFormat"]
    out += ["$Nodes", str(m.get("node_count", len(m["nodes"])))]
    out += ["%s %s %s %s" % tuple(fmt_num(v) for v in nd) for nd in m["nodes"]]
    out += ["$EndNodes", "$Elements", str(m.get("elem_count", len(m["elems"])))]
    for k, (typ, phys, geom, nds) in enumerate(m["elems"]):
        out.append(" ".join([str(k + 1), str(typ), "2", str(phys), str(geom)] + [fmt_num(x) for x in nds]))
    out.append("$EndElements")
    return ("\n".join(out) + "\n").encode()


def write_msh41(m):
    out = ["$MeshFormat", m.get("version", "4.1 0 8"), "$EndMeshFormat"]
    ents = {}
    for typ, phys, geom, nds in m["elems"]:
        dim = TYPE_DIM.get(typ, 2)
        ents.setdefault((dim, phys), len([k for k in ents if k[0] == dim]) + 1)
    top = max([k[0] for k in ents] + [m["dim"]])
    if (top, None) not in ents and not any(k[0] == top for k in ents):
        ents[(top, 0)] = 1
    counts = [len([k for k in ents if k[0] == d]) for d in range(4)]
    out += ["$Entities", " ".join(map(str, counts))]
    for d in range(4):
        for (dim, phys), t in sorted(ents.items(), key=lambda kv: (kv[0][0], kv[1])):
            if dim != d:
                continue
            ph = "1 %d" % phys if phys != 0 else "0"
            if d == 0:
                out.append("%d 0 0 0 %s" % (t, ph))
            else:
                out.append("%d 0 0 0 1 1 1 %s 0" % (t, ph))
    out.append("$EndEntities")
    nn = m.get("node_count", len(m["nodes"]))
    tags = [nd[0] for nd in m["nodes"]]
    numeric = [t for t in tags if isinstance(t, int)] or [0]
    top_ent = min(t for (d, p), t in ents.items() if d == top)
    out += ["$Nodes", "1 %s %d %d" % (nn, min(numeric), max(numeric)),
            "%d %d 0 %d" % (top, top_ent, len(m["nodes"]))]
    out += [fmt_num(t) for t in tags]
    out += ["%s %s %s" % tuple(fmt_num(v) for v in nd[1:]) for nd in m["nodes"]]
    out.append("$EndNodes")
    blocks = collections.OrderedDict()
    for typ, phys, geom, nds in m["elems"]:
        dim = TYPE_DIM.get(typ, 2)
        blocks.setdefault((dim, ents[(dim, phys)], typ), []).append(nds)
    ne = m.get("elem_count", len(m["elems"]))
    out += ["$Elements", "%d %s 1 %d" % (len(blocks), ne, len(m["elems"]))]
    k = 1
    for (dim, ent, typ), lst in blocks.items():
        out.append("%d %d %d %d" % (dim, ent, typ, len(lst)))
        for nds in lst:
            out.append(" ".join([str(k)] + [fmt_num(x) for x in nds]))
            k += 1
    out.append("$EndElements")
    return ("\n".join(out) + "\n").encode()


def mutate_mesh_struct(rng, m, desc):
    m = dict(m)
    m["nodes"] = [list(nd) for nd in m["nodes"]]
    m["elems"] = [list(e) for e in m["elems"]]
    top_type = 2 if m["dim"] == 2 else 4
    bnd_type = 1 if m["dim"] == 2 else 2
    tags = [nd[0] for nd in m["nodes"]]
    op = rng.choice(["other_types", "other_types", "dup_elems", "degenerate", "bad_ref",
                     "coords", "coincident", "retag", "retag", "untag", "drop_bnd",
                     "drop_top", "invert", "huge_tags", "dup_tags", "remove_node", "scale",
                     "single", "counts", "version", "disconnected"])
    if op == "other_types":
        k = rng.choice([1, 3, 20])
        typ = rng.choice(OTHER_TYPES)
        for _ in range(k):
            nn = TYPE_NODES.get(typ, rng.choice([0, 2, 4, 30]))
            m["elems"].append([typ, rng.choice([10, 1, 0]), 1, [rng.choice(tags) for _ in range(nn)]])
        if rng.random() < 0.5:
            rng.shuffle(m["elems"])
        desc.append("%d element(s) of type %d added" % (k, typ))
    elif op == "dup_elems":
        k = rng.choice([1, 10, 1000])
        tops = [e for e in m["elems"] if e[0] == top_type] or m["elems"]
        for _ in range(k):
            m["elems"].append(list(rng.choice(tops)))
        desc.append("%d duplicated element(s)" % k)
    elif op == "degenerate" and any(e[0] == top_type for e in m["elems"]):
        e = rng.choice([e for e in m["elems"] if e[0] == top_type])
        e[3] = [e[3][0]] * len(e[3]) if rng.random() < 0.5 else [e[3][0], e[3][0]] + e[3][2:]
        desc.append("degenerate element (repeated node)")
    elif op == "bad_ref":
        e = rng.choice(m["elems"])
        bad = rng.choice(["0", "-1", str(max(tags) + 1), str(2**32), str(2**63), str(2**64),
                          "9" * 30, "1.5", "nan", "x"])
        e[3] = list(e[3])
        e[3][rng.randrange(len(e[3]))] = bad
        desc.append("element node reference %s" % bad)
    elif op == "coords":
        k = rng.choice([1, 3, len(m["nodes"])])
        v = rng.choice(["nan", "inf", "-inf", "1e300", "-1e300", "1e309", "5e-324", "x", ""])
        for _ in range(k):
            nd = rng.choice(m["nodes"])
            nd[rng.randint(1, 3 if m["dim"] == 3 else 2)] = v
        desc.append("%d coordinate(s) %r" % (k, v))
    elif op == "coincident":
        for nd in m["nodes"]:
            nd[1:] = [0.5, 0.5, 0.5 if m["dim"] == 3 else 0.0]
        desc.append("all nodes coincident")
    elif op == "retag":
        t = rng.choice([77, -5, 2**31 - 1, 0, 10])
        for e in m["elems"]:
            if e[0] == bnd_type:
                e[1] = t
        desc.append("every boundary element tagged %d" % t)
    elif op == "untag":
        k = rng.choice([1, 5, 10**6])
        bnd = [e for e in m["elems"] if e[0] == bnd_type]
        for e in bnd[:k]:
            e[1] = 0
        desc.append("%s boundary element(s) without physical tag" % ("all" if k >= len(bnd) else k))
    elif op == "drop_bnd":
        m["elems"] = [e for e in m["elems"] if e[0] != bnd_type]
        desc.append("no boundary elements")
    elif op == "drop_top":
        m["elems"] = [e for e in m["elems"] if e[0] != top_type]
        desc.append("no %s" % ("triangles" if m["dim"] == 2 else "tetrahedra"))
    elif op == "invert":
        k = 0
        for e in m["elems"]:
            if e[0] == top_type and rng.random() < 0.5:
                e[3] = [e[3][1], e[3][0]] + e[3][2:]
                k += 1
        desc.append("%d inverted element(s)" % k)
    elif op == "huge_tags":
        base = rng.choice([2**31, 2**40, 2**63 - 10**6, 10**18])
        remap = {t: base + i for i, t in enumerate(tags)}
        for nd in m["nodes"]:
            nd[0] = remap[nd[0]]
        for e in m["elems"]:
            e[3] = [remap.get(x, x) for x in e[3]]
        desc.append("node tags from %d" % base)
    elif op == "dup_tags":
        m["nodes"][1][0] = m["nodes"][0][0]
        desc.append("two nodes share a tag")
    elif op == "remove_node":
        used = {x for e in m["elems"] for x in e[3]}
        victim = rng.choice(sorted(x for x in used if isinstance(x, int)))
        m["nodes"] = [nd for nd in m["nodes"] if nd[0] != victim]
        desc.append("referenced node %d removed" % victim)
    elif op == "scale":
        s = rng.choice([1e-300, 1e300, 1e-160, 1e160, -1.0, 0.0])
        for nd in m["nodes"]:
            nd[1:] = [c * s if isinstance(c, float) else c for c in nd[1:]]
        desc.append("coordinates scaled by %g" % s)
    elif op == "single" and any(e[0] == top_type for e in m["elems"]):
        first = next(e for e in m["elems"] if e[0] == top_type)
        m["elems"] = [first] + [e for e in m["elems"] if e[0] == bnd_type][:3]
        desc.append("a single %s" % ("triangle" if m["dim"] == 2 else "tetrahedron"))
    elif op == "counts":
        which = rng.choice(["node_count", "elem_count"])
        v = rng.choice(["1000000000", str(2**32), str(2**64), "0", "-1", "x", "",
                        str(len(m["nodes"]) + 1), str(max(0, len(m["nodes"]) - 1))])
        m[which] = v
        desc.append("%s %r" % (which, v))
    elif op == "version":
        v = rng.choice(["4.1 1 8", "2.2 1 8", "3.0 0 8", "2.2 0 4", "5 0 8", "4.0 0 8", "nan 0 8",
                        "4.1 0 8 extra", "", "2 0 8", "1.0 0 8", "4.1", "99999999999999999999 0 8"])
        m["version_override"] = v
        desc.append("MeshFormat line %r" % v)
    else:
        shift = max(nd[0] for nd in m["nodes"] if isinstance(nd[0], int))
        extra_n = [[nd[0] + shift, (nd[1] + 5.0) if isinstance(nd[1], float) else nd[1]] + nd[2:]
                   for nd in m["nodes"]]
        extra_e = [[e[0], e[1], e[2], [x + shift if isinstance(x, int) else x for x in e[3]]]
                   for e in m["elems"]]
        m["nodes"] += extra_n
        m["elems"] += extra_e
        desc.append("two disconnected copies")
    return m


def write_mesh(m, version):
    m2 = dict(m)
    if "version_override" in m:
        m2["version"] = m["version_override"]
    return write_msh22(m2) if version == "2.2" else write_msh41(m2)


# --------------------------------------------------------------------------------------
# Text-level mutations (any file)
# --------------------------------------------------------------------------------------

FLIP_BYTES = [b"-", b"0", b"9", b"e", b".", b"\n", b" ", b"\x00", b"\xff", b"%", b"$", b"\t",
              b"n", b"\r", b"1"]


def mutate_text(rng, data, desc):
    op = rng.choice(["flip", "flip", "truncate", "truncate", "dup_lines", "del_lines", "swap",
                     "endless", "crlf", "bom", "empty", "first_line", "gzip_trunc",
                     "big_numbers"])
    if op == "flip" and data:
        k = rng.choice([1, 2, 5, 20])
        b = bytearray(data)
        for _ in range(k):
            p = rng.randrange(len(b))
            b[p] = rng.choice(FLIP_BYTES)[0] if rng.random() < 0.7 else rng.randrange(256)
        desc.append("%d byte(s) flipped" % k)
        return bytes(b)
    if op == "truncate" and data:
        p = rng.randrange(len(data))
        desc.append("truncated at byte %d of %d" % (p, len(data)))
        return data[:p]
    lines = data.split(b"\n")
    if op == "dup_lines" and len(lines) > 1:
        k = rng.choice([1, 3, 50])
        for _ in range(k):
            p = rng.randrange(len(lines))
            lines.insert(p, lines[p])
        desc.append("%d line(s) duplicated" % k)
        return b"\n".join(lines)
    if op == "del_lines" and len(lines) > 1:
        k = min(rng.choice([1, 3]), len(lines) - 1)
        for _ in range(k):
            del lines[rng.randrange(len(lines))]
        desc.append("%d line(s) deleted" % k)
        return b"\n".join(lines)
    if op == "swap" and len(lines) > 2:
        a, c = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[c] = lines[c], lines[a]
        desc.append("lines %d and %d swapped" % (a + 1, c + 1))
        return b"\n".join(lines)
    if op == "endless":
        size = rng.choice([1, 3, 6]) << 20
        unit = rng.choice([b"1", b"1 ", b"9.9e9 ", b"x", b"% "])
        p = rng.randrange(1, max(2, len(lines)))
        head = b"\n".join(lines[:p]) + b"\n"
        desc.append("endless line of %d MB (no newline) after line %d" % (size >> 20, p))
        return head + (unit * (size // len(unit) + 1))[:size]
    if op == "crlf":
        desc.append("CRLF line ends")
        return data.replace(b"\n", b"\r\n")
    if op == "bom":
        desc.append("byte-order mark")
        return b"\xef\xbb\xbf" + data
    if op == "empty":
        desc.append("empty file")
        return b""
    if op == "first_line":
        desc.append("first line only")
        return lines[0] + b"\n"
    if op == "gzip_trunc":
        z = gzip.compress(data, 1)
        p = rng.randrange(2, max(3, len(z)))
        desc.append("gzip truncated at %d of %d bytes" % (p, len(z)))
        return z[:p]
    # big_numbers: make some digit runs very long
    b = re.sub(rb"\d+", lambda mm: mm.group(0) * 40 if rng.random() < 0.05 else mm.group(0), data)
    desc.append("some numbers repeated 40 times")
    return b


def finish_bytes(rng, data, desc, allow_gz=True):
    r = rng.random()
    if allow_gz and r < 0.12:
        desc.append("gzip")
        return gzip.compress(data, 1)
    if allow_gz and r < 0.14:
        desc.append("gzip bomb: 64 MB without newline")
        return gzip.compress(data[:200] + b"7" * (64 << 20), 9)
    if allow_gz and r < 0.16:
        desc.append("gzip magic then garbage")
        return b"\x1f\x8b" + bytes(rng.randrange(256) for _ in range(64))
    return data


# --------------------------------------------------------------------------------------
# File specs: made when the case runs, deterministic from (kind, base, seed)
# --------------------------------------------------------------------------------------

class Bases:
    def __init__(self):
        self.mtx = mtx_bases()
        self.mesh = {"tri": square_mesh(4), "tet": cube_mesh(2)}
        self.real = {}

    def real_bytes(self, name):
        if name not in self.real:
            path = os.path.join(DATA, name)
            with open(path, "rb") as f:
                raw = f.read()
            if raw[:2] == b"\x1f\x8b":
                raw = gzip.decompress(raw)
            self.real[name] = raw
        return self.real[name]


REAL_MTX = "mtx/HB_orsreg_1.mtx.gz"
REAL_TRI = "msh/amfe_c_bow_fine_tri2d_v22.msh"
REAL_TET = "msh/amfe_pleuel_7000_tet3d_v22.msh"


def make_file(bases, spec):
    """Returns (bytes, description list, reference or None) for a file spec."""
    kind, base, seed, nstruct, ntext = spec["kind"], spec["base"], spec["seed"], spec["nstruct"], spec["ntext"]
    rng = random.Random(seed)
    desc = []
    ref = None
    if kind == "mtx":
        if base.startswith("real:"):
            data = bases.real_bytes(base[5:])
            desc.append("copy of %s" % base[5:])
        else:
            b = bases.mtx[base]
            for _ in range(nstruct):
                b = mutate_mtx_struct(rng, b, desc)
            data = write_mtx(b)
            if "banner_override" in b:
                data = data.split(b"\n", 1)
                data = b["banner_override"].encode() + b"\n" + data[1]
            elif ntext == 0 and b["fmt"] == "coordinate":
                ref = mtx_reference(b, spec.get("x"))
            elif ntext == 0 and b["fmt"] == "array" and "size_line" not in b:
                if all(not isinstance(v, str) for _, _, v in b["entries"]):
                    ref = mtx_reference(dict(b, fmt="coordinate"), spec.get("x"))
    elif kind == "mesh":
        if base.startswith("real:"):
            data = bases.real_bytes(base[5:])
            desc.append("copy of %s" % base[5:])
        else:
            shape, version = base.split("/")
            m = bases.mesh[shape]
            for _ in range(nstruct):
                m = mutate_mesh_struct(rng, m, desc)
            data = write_mesh(m, version)
    elif kind == "vec":
        n = spec["len"]
        vals = [repr(1.0 + 0.5 * ((i * 7) % 5)) for i in range(n)]
        for _ in range(nstruct):
            op = rng.choice(["short", "long", "nan", "garbage", "huge", "empty", "comments",
                             "zeros", "many"])
            if op == "short":
                vals = vals[:-1]
            elif op == "long":
                vals.append("1.0")
            elif op == "nan" and vals:
                vals[rng.randrange(len(vals))] = rng.choice(["nan", "inf", "-inf", "1e309", "NaN"])
            elif op == "garbage" and vals:
                vals[rng.randrange(len(vals))] = rng.choice(["x", "1,5", "0x10", "", "1 2", "--"])
            elif op == "huge":
                vals = ["1e308"] * len(vals)
            elif op == "empty":
                vals = []
            elif op == "comments":
                vals = ["# comment", "% comment", ""] + vals
            elif op == "zeros":
                vals = ["0"] * len(vals)
            else:
                vals = vals * 1000
            desc.append("vector: " + op)
        data = ("\n".join(vals) + "\n").encode()
        if nstruct == 0 and ntext == 0:
            ref = [float(v) for v in vals]
    else:
        raise ValueError(kind)
    for _ in range(ntext):
        data = mutate_text(rng, data, desc)
    if spec.get("finish"):
        n = len(desc)
        data = finish_bytes(rng, data, desc)
        if desc[n:] and desc[n:] != ["gzip"]:
            ref = None
    if spec.get("gz"):
        data = gzip.compress(data, 1)
        desc.append("gzip")
    return data, desc, ref


# --------------------------------------------------------------------------------------
# The doors: option schemas and corpora
# --------------------------------------------------------------------------------------

FLAG = ("flag",)
BACKENDS = ("enum", ["cpu", "wgpu", "cuda"])
PRECISIONS = ("enum", ["f32", "f64", "mixed"])
FORMATS = ("enum", ["auto", "coo", "csr", "ell", "sell", "staircase", "bell", "dia"])

SCHEMAS = {
    "solve": {
        "--matrix": ("matrix",), "--rhs": ("vec",),
        "--solver": ("enum", ["cg", "pcg", "bicgstab", "gmres", "fgmres", "refine"]),
        "--precond": ("enum", ["none", "jacobi", "block-jacobi", "chebyshev"]),
        "--block-size": ("int", ["0", "1", "7", "1000000", str(2**32)]),
        "--precision": PRECISIONS, "--tol": ("float", ["1", "2", "0.99999", "1e-16", "1e-30"]),
        "--max-iter": ("int", ["0", "1"]), "--restart": ("int", ["0", "1", "100000", str(2**40)]),
        "--inner-tol": ("float", ["1", "0", "1e-20"]), "--inner-max-iter": ("int", ["0", "1"]),
        "--format": FORMATS, "--backend": BACKENDS, "--out": ("out",),
        "--partition": ("enum", ["contiguous", "metis"]), "--device": ("int", ["0", "7"]),
        "--warmup": FLAG, "--profile": FLAG, "--distributed": FLAG,
        "--buffer-limit": ("int", ["0", "1", "2047", "2048", "8", str(2**64 - 1)]),
    },
    "spmv": {
        "--matrix": ("matrix",), "--format": FORMATS, "--precision": PRECISIONS,
        "--backend": BACKENDS, "--x": ("vec",), "--out": ("out",), "--bench": FLAG,
    },
    "hdg_poisson": {
        "--mesh": ("mesh2",), "--diagonal": ("enum", ["up", "down", "alternating"]),
        "--seed": ("int", ["0", str(2**64 - 1)]), "--untagged-as": ("int", ["0", "-1", "1", "99"]),
        "--degree": ("int", ["0", "1", "9", "10", "100"]),
        "--tau": ("float", ["0", "-1", "1e-300", "1e300"]),
        "--lambda": ("float", ["-1", "1e300", "1e-300", "-1e-300"]),
        "--rhs": ("expr", 2), "--dirichlet": ("expr", 2), "--exact": ("expr", 2),
        "--flux": ("expr", 4), "--neumann": ("tags",), "--backend": BACKENDS,
        "--precision": PRECISIONS,
        "--preconditioner": ("enum", ["block-jacobi", "chebyshev"]),
        "--chebyshev-degree": ("int", ["0", "1", "1000", "1000000"]),
        "--rtol": ("float", ["1", "0", "1e-300", "0.999999"]),
        "--max-iter": ("int", ["0", "1"]), "--no-post-process": FLAG,
        "--vtk": ("out", ".vtu"), "--refine": ("int", ["0", "1", "1000", "100000"]),
    },
    "poisson_mg": {
        "--dim": ("int", ["0", "1", "3", "4"]), "--degree": ("int", ["0", "1", "10", "11"]),
        "--levels": ("int", ["0", "1", "14", "16", "20", "21"]),
        "--solver": ("enum", ["fmg", "cg", "gmres"]),
        "--smoother": ("enum", ["patch", "chebyshev"]), "--precision": PRECISIONS,
        "--rhs": ("enum", ["one", "sine"]), "--tol": ("float", ["1", "2", "1e-16", "1e-30"]),
        "--max-iter": ("int", ["0", "1"]), "--restart": ("int", ["0", "1", "100000"]),
        "--scatter": ("enum", ["auto", "atomic", "colour"]), "--backend": BACKENDS,
        "--vtk": ("out", ".vtu"),
    },
    "maxwell": {
        "--mesh": ("mesh3",), "--perturbation": ("float", ["0.1666", "0.17", "0.5", "-0.1", "1"]),
        "--absorbing": ("tags",), "--order": ("int", ["0", "1", "9", "10"]),
        "--mode": ("mode",), "--final-time": ("float", ["1e-6", "0.001"]),
        "--cfl": ("float", ["2", "2.0000001", "1e-6"]),
        "--flux": ("enum", ["upwind", "central"]), "--backend": BACKENDS,
        "--precision": ("enum", ["f32", "f64"]), "--autotune": FLAG,
        "--block": ("int", ["0", "1", "1000000"]), "--vtk": ("outdir",),
        "--vtk-times": ("times",), "--energy-samples": ("int", ["0", "1", "1000000"]),
    },
}

# File placeholders in the corpus: @mtx:BASE@, @mesh:SHAPE/VERSION@, @vec:N@, @out:EXT@,
# @outdir@, @real:PATH@ (a real file read in place).
CORPUS = {
    "solve": [
        "--matrix poisson2d:8",
        "--matrix poisson7:4 --solver pcg --precond chebyshev",
        "--matrix fvm-tet:3 --solver bicgstab",
        "--matrix fvm-dual:3 --solver gmres --restart 10 --precond none",
        "--matrix hdg:2:3 --solver fgmres --precond block-jacobi --block-size 3",
        "--matrix dg:2:2 --solver gmres --format ell",
        "--matrix random:50 --solver gmres --precond none --max-iter 200",
        "--matrix poisson27:4 --precision mixed --tol 1e-10",
        "--matrix poisson2d:10 --precision f32 --tol 1e-5 --format sell",
        "--matrix poisson2d:6 --solver refine --inner-tol 1e-2 --inner-max-iter 50",
        "--matrix poisson2d:6 --rhs @vec:36@ --out @out:.txt@",
        "--matrix @mtx:spd_gen@ --format coo",
        "--matrix @mtx:spd_sym@ --solver cg --precond block-jacobi --block-size 5",
        "--matrix @mtx:int_sym@ --format dia",
        "--matrix @mtx:array@ --solver bicgstab",
        "--matrix @real:" + REAL_MTX + "@ --solver gmres",
        "--matrix poisson2d:8 --warmup --format dia",
        "--matrix poisson2d:8 --buffer-limit 4096 --format csr",
        "--matrix poisson2d:8 --format bell --precision mixed --solver gmres",
    ],
    "spmv": [
        "--matrix poisson2d:8",
        "--matrix poisson7:4 --format sell",
        "--matrix fvm-tet:3 --format ell --precision f32",
        "--matrix hdg:2:3 --format bell",
        "--matrix dg:3:2 --format sell --precision mixed",
        "--matrix random:100 --format coo",
        "--matrix @mtx:spd_gen@ --x @vec:25@ --out @out:.txt@",
        "--matrix @mtx:spd_sym@ --format dia",
        "--matrix @mtx:pattern@",
        "--matrix @mtx:int_sym@ --precision f32",
        "--matrix @mtx:array@ --format ell",
        "--matrix @mtx:skew@ --format csr",
        "--matrix @mtx:rect@ --format coo",
        "--matrix @real:" + REAL_MTX + "@ --format sell",
        "--matrix poisson27:3 --format ell --precision f32",
    ],
    "hdg_poisson": [
        "--mesh square:4",
        "--mesh square:8 --degree 2 --diagonal down",
        "--mesh perturbed:6 --seed 7 --degree 1 --diagonal alternating",
        "--mesh square:6 --exact exp(x)*cos(pi*y) --lambda 1 --neumann 2,3",
        "--mesh square:5 --rhs 1 --dirichlet 0",
        "--mesh square:4 --precision f32",
        "--mesh square:4 --precision mixed --preconditioner chebyshev --chebyshev-degree 3",
        "--mesh square:6 --rtol 1e-8 --max-iter 500 --tau 2",
        "--mesh square:4 --no-post-process --degree 4",
        "--mesh square:4 --vtk @out:.vtu@ --refine 2",
        "--mesh @mesh:tri/2.2@",
        "--mesh @mesh:tri/4.1@ --neumann 2",
        "--mesh @mesh:tri/2.2@ --exact x*y --flux nx*y+ny*x --neumann 1",
        "--mesh @mesh:tri/4.1@ --untagged-as 5 --degree 2",
        "--mesh @real:" + REAL_TRI + "@ --degree 1 --untagged-as 1",
    ],
    "poisson_mg": [
        "--levels 3",
        "--dim 3 --levels 2 --degree 2",
        "--solver cg --levels 3 --degree 2",
        "--solver gmres --restart 5 --levels 3 --precision mixed",
        "--smoother chebyshev --levels 3",
        "--precision f32 --tol 1e-5 --levels 3",
        "--rhs one --levels 4 --degree 1",
        "--scatter colour --levels 3 --degree 1",
        "--scatter atomic --dim 3 --levels 2 --degree 1 --solver cg",
        "--vtk @out:.vtu@ --levels 2",
        "--max-iter 5 --tol 1e-12 --levels 3",
    ],
    "maxwell": [
        "--mesh box:2 --order 2 --final-time 0.1",
        "--mesh box:2 --order 3 --flux central --final-time 0.05",
        "--mesh box:3 --order 1 --perturbation 0.1 --final-time 0.1 --precision f32",
        "--mesh box:2 --order 2 --mode 1,2,0 --final-time 0.05",
        "--mesh box:2 --order 2 --mode 0,1,1 --block 0 --final-time 0.05",
        "--mesh box:2 --order 1 --mode 1,1,1 --energy-samples 3 --final-time 0.1",
        "--mesh box:2 --order 1 --vtk @outdir@ --vtk-times 0.02,0.05 --final-time 0.1",
        "--mesh @mesh:tet/2.2@ --order 2 --absorbing 1,2 --final-time 0.05",
        "--mesh @mesh:tet/4.1@ --order 1 --final-time 0.05",
        "--mesh @real:" + REAL_TET + "@ --order 1 --final-time 0.01",
        "--mesh box:2 --order 1 --cfl 1.0 --final-time 0.1",
        "--mesh box:2 --order 2 --autotune --final-time 0.02",
    ],
}


def parse_corpus(door, line):
    toks = line.split(" ")
    schema = SCHEMAS[door]
    items = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if schema.get(t, ("",))[0] == "flag":
            items.append([t, None])
            i += 1
        else:
            items.append([t, toks[i + 1]])
            i += 2
    return items


# --------------------------------------------------------------------------------------
# Case generation
# --------------------------------------------------------------------------------------

OUT_OPTS = ("--out", "--vtk")
SAFE_ABS = ("/dev/null", "/proc/hostile-nonexistent/out.vtu", "/proc/hostile-nonexistent/out.txt")


def safe_out(v, casedir):
    """Output paths stay in the case directory (the children run as whoever runs this
    script, maybe root: a swapped --matrix path must never become an --out or --vtk)."""
    if v in SAFE_ABS:
        return v
    parts = v.split("/")
    if ".." in parts or (v.startswith("/") and not v.startswith(casedir + "/") and v != casedir):
        return casedir + "/" + v.strip("/").replace("/", "_").replace(".", "_")
    return v


class Case:
    def __init__(self, door, idx):
        self.door, self.idx = door, idx
        self.items = []       # [[option, value or None] or ["", raw token]]
        self.files = {}       # name -> file spec
        self.desc = []        # mutation descriptions
        self.mutated = []     # option names touched (hang keys)
        self.refs = {}

    def argv(self, casedir):
        out = []
        for opt, val in self.items:
            if opt == "":
                out.append(val.replace("{DIR}", casedir))
                continue
            if val is None:
                out.append(opt)
                continue
            v = val.replace("{DIR}", casedir)
            if opt in OUT_OPTS:
                v = safe_out(v, casedir)
            if v.startswith("-") or (v == "" and "=" in opt):
                out.append(opt + "=" + v if "=" not in opt else opt + v)
            else:
                out += [opt, v]
        return out + ["--json"]


def help_options(help_text):
    """{option: takes_value} of the long options a --help text lists."""
    opts = {}
    for m in re.finditer(r"^\s+(?:-\w, )?(--[\w-]+)(?: <([^>]+)>)?", help_text, re.M):
        opts[m.group(1)] = m.group(2) is not None
    return opts


class Generator:
    def __init__(self, door, seed, help_text=""):
        self.door, self.seed = door, seed
        self.schema = SCHEMAS[door]
        self.corpus = [parse_corpus(door, c) for c in CORPUS[door]]
        # Options that --help lists and the schema above does not know (added since it was
        # written): they get hostile values from a separate stream, so that the inputs of
        # the known options stay the same whatever the binaries' --help says.
        known = set(self.schema) | {"--json", "--help", "--version"}
        self.extra = sorted((o, v) for o, v in help_options(help_text).items() if o not in known)

    def new_file(self, case, rng, kind, base, nstruct=0, ntext=0, finish=False, **extra):
        name = "f%d" % len(case.files)
        ext = {"mtx": ".mtx", "mesh": ".msh", "vec": ".txt"}[kind]
        if extra.get("gz"):
            ext += ".gz"
        spec = dict(kind=kind, base=base, seed=rng.getrandbits(48), nstruct=nstruct, ntext=ntext,
                    finish=finish, **extra)
        case.files[name + ext] = spec
        return "{DIR}/" + name + ext

    def placeholder(self, case, rng, val):
        """Turns a corpus placeholder into a (clean) file path."""
        m = re.fullmatch(r"@(\w+)(?::([^@]*))?@", val or "")
        if not m:
            return val
        kind, arg = m.group(1), m.group(2)
        if kind == "real":
            return os.path.join(DATA, arg)
        if kind == "mtx":
            xlen = None
            return self.new_file(case, rng, "mtx", arg)
        if kind == "mesh":
            return self.new_file(case, rng, "mesh", arg)
        if kind == "vec":
            return self.new_file(case, rng, "vec", "vec", len=int(arg))
        if kind == "out":
            return "{DIR}/out" + arg
        if kind == "outdir":
            return "{DIR}/vtk"
        raise ValueError(val)

    def make(self, idx):
        rng = random.Random("%s:%s:%d" % (self.seed, self.door, idx))
        case = Case(self.door, idx)
        base = self.corpus[idx % len(self.corpus)] if idx < len(self.corpus) else rng.choice(self.corpus)
        case.items = [[o, v] for o, v in base]
        case.base = " ".join(o if v is None else "%s %s" % (o, v) for o, v in base)
        # Corpus entries themselves come first, unmutated.
        nmut = 0 if idx < len(self.corpus) else rng.choices([1, 2, 3], [6, 3, 1])[0]
        pending_files = {}
        for k, (o, v) in enumerate(case.items):
            if v is not None and v.startswith("@"):
                pending_files[k] = v
        for _ in range(nmut):
            self.mutate(case, rng, pending_files)
        for k, v in pending_files.items():
            if k < len(case.items) and case.items[k][1] == v:
                case.items[k][1] = self.placeholder(case, rng, v)
        xr = random.Random("%s:%s:%d:extra" % (self.seed, self.door, idx))
        if self.extra and idx >= len(self.corpus) and xr.random() < 0.1:
            opt, takes = xr.choice(self.extra)
            if takes:
                val = xr.choice(HOSTILE_NUMBERS + HOSTILE_INTS_EXTRA + ["1", "10", "1000"])
                case.items.append([opt, val])
                case.desc.append("%s=%r (option learned from --help)" % (opt, val))
            else:
                case.items.append([opt, None])
                case.desc.append("%s (flag learned from --help)" % opt)
            case.mutated.append(opt)
        return case

    # ---- mutation operators ----
    def mutate(self, case, rng, pending):
        door = self.door
        ops = ["number", "number", "number", "swap", "drop", "dup", "enum", "size", "size",
               "unknown", "out"]
        if door in ("solve", "spmv", "hdg_poisson", "maxwell"):
            ops += ["file"] * 5
        if door == "hdg_poisson":
            ops += ["expr"] * 4 + ["tags"]
        if door == "maxwell":
            ops += ["mode", "tags", "times"]
        op = rng.choice(ops)
        getattr(self, "op_" + op)(case, rng, pending)

    def options_of(self, kinds):
        return [o for o, s in self.schema.items() if s[0] in kinds]

    def set_opt(self, case, opt, val, pending=None):
        for k, it in enumerate(case.items):
            if it[0] == opt:
                it[1] = val
                if pending is not None:
                    pending.pop(k, None)
                break
        else:
            case.items.append([opt, val])
        case.mutated.append(opt)

    def op_number(self, case, rng, pending):
        if not self.options_of(("int", "float")):
            # spmv: the numbers are in the generator spec
            return self.op_size(case, rng, pending)
        opt = rng.choice(self.options_of(("int", "float")))
        extra = list(self.schema[opt][1])
        if self.schema[opt][0] == "int":
            extra += HOSTILE_INTS_EXTRA
        val = rng.choice(HOSTILE_NUMBERS + extra * 2)
        self.set_opt(case, opt, val, pending)
        case.desc.append("%s=%r" % (opt, val))

    def op_swap(self, case, rng, pending):
        valued = [k for k, it in enumerate(case.items) if it[0] and it[1] is not None]
        if len(valued) < 2:
            # swap in a value of another option of the schema
            return self.op_number(case, rng, pending)
        a, b = rng.sample(valued, 2)
        ia, ib = case.items[a], case.items[b]
        ia[1], ib[1] = ib[1], ia[1]
        for k, kk in ((a, b), (b, a)):
            if kk in pending:
                pass
        pa, pb = pending.pop(a, None), pending.pop(b, None)
        if pa is not None:
            pending[b] = pa
        if pb is not None:
            pending[a] = pb
        case.mutated += [ia[0], ib[0]]
        case.desc.append("values of %s and %s swapped" % (ia[0], ib[0]))

    def op_drop(self, case, rng, pending):
        if not case.items:
            return
        k = rng.randrange(len(case.items))
        opt = case.items[k][0]
        del case.items[k]
        newp = {}
        for j, v in pending.items():
            if j != k:
                newp[j - 1 if j > k else j] = v
        pending.clear()
        pending.update(newp)
        case.desc.append("%s dropped" % opt)

    def op_dup(self, case, rng, pending):
        if not case.items:
            return
        opt, val = rng.choice(case.items)
        if rng.random() < 0.5 and val is not None:
            val = rng.choice(HOSTILE_NUMBERS)
        if val is not None and val.startswith("@"):
            val = "{DIR}/missing.file"
        case.items.append([opt, val])
        case.mutated.append(opt)
        case.desc.append("%s duplicated" % opt)

    def op_enum(self, case, rng, pending):
        opts = self.options_of(("enum",))
        opt = rng.choice(opts)
        r = rng.random()
        if r < 0.6:
            val = rng.choice(BAD_ENUM)
        elif r < 0.8:
            val = rng.choice(self.schema[opt][1]).upper()
        else:
            flag = rng.choice(self.options_of(("flag",)) or [opt])
            case.items.append(["", flag + "=" + rng.choice(["true", "1", "", "no"])])
            case.desc.append("flag with a value: %s" % flag)
            return
        self.set_opt(case, opt, val, pending)
        case.desc.append("%s=%r" % (opt, val))

    def op_unknown(self, case, rng, pending):
        tok = rng.choice(["--frobnicate", "--matrix-file", "garbage", "-", "--", "-x",
                          "--json=false", "--tol", "--mesh", "\x01", "--=", "-" * 100,
                          "--" + "a" * 5000])
        if tok in ("--tol", "--mesh") or tok.startswith("--a"):
            case.items.append(["", tok])
        else:
            case.items.insert(rng.randrange(len(case.items) + 1), ["", tok])
            # indices of pending files may have shifted: re-find them
            self.repend(case, pending)
        case.desc.append("unknown token %r" % tok[:40])

    def repend(self, case, pending):
        vals = set(pending.values())
        pending.clear()
        for k, (o, v) in enumerate(case.items):
            if o and v in vals:
                pending[k] = v

    def op_out(self, case, rng, pending):
        opts = self.options_of(("out", "outdir"))
        if not opts:
            return self.op_number(case, rng, pending)
        opt = rng.choice(opts)
        val = rng.choice(BAD_OUT_PATHS)
        if self.schema[opt][0] == "outdir" and rng.random() < 0.3:
            val = "{DIR}/f_exists.txt"
            case.files["f_exists.txt"] = dict(kind="vec", base="vec", seed=0, nstruct=0, ntext=0,
                                              len=3)
        self.set_opt(case, opt, val, pending)
        case.desc.append("%s=%r" % (opt, val))

    def op_size(self, case, rng, pending):
        door = self.door
        if door in ("solve", "spmv"):
            r = rng.random()
            if r < 0.55:
                gen = rng.choice(["poisson7", "poisson27", "poisson2d", "fvm-tet", "fvm-dual",
                                  "random"])
                n = rng.choice(HOSTILE_INTS_EXTRA + [str(2**11), "100000", str(2**20)])
                val = "%s:%s" % (gen, n)
            elif r < 0.8:
                gen = rng.choice(["hdg", "dg"])
                a = rng.choice(["0", "1", "2", "10", "50", "1000", str(2**16), str(2**32), "-1", ""])
                b = rng.choice(["0", "1", "2", "100", str(2**21), str(2**32), str(2**63), "x"])
                val = "%s:%s:%s" % (gen, a, b)
            else:
                val = rng.choice(["poisson7", "poisson7:", "poisson7:4:4", ":4", "hdg:3", "hdg::",
                                  "random:-5", "", ":", "{DIR}", "/dev/null", "/nonexistent.mtx",
                                  "/nonexistent.mtx.gz", os.path.join(DATA, REAL_TRI),
                                  os.path.join(DATA, "SHA256SUMS"), "poisson2d:4 ", "POISSON2D:4",
                                  "poisson2d:+4", "poisson2d:04", "poisson2d:0x4"])
            self.set_opt(case, "--matrix", val, pending)
        elif door == "hdg_poisson":
            r = rng.random()
            if r < 0.7:
                kind = rng.choice(["square", "perturbed"])
                n = rng.choice(HOSTILE_INTS_EXTRA + ["65536", "1000000", "2"])
                val = "%s:%s" % (kind, n)
            else:
                val = rng.choice(["square", "square:", "circle:4", "", "box:4", "{DIR}",
                                  "/dev/null", "/nonexistent.msh", os.path.join(DATA, REAL_TET),
                                  os.path.join(DATA, "mtx/HB_bcsstk09.mtx"), "square:4:4",
                                  "Square:4", "square:-0"])
            self.set_opt(case, "--mesh", val, pending)
        elif door == "maxwell":
            r = rng.random()
            if r < 0.5:
                val = "box:" + rng.choice(HOSTILE_INTS_EXTRA + ["1000", "100000"])
                self.set_opt(case, "--mesh", val, pending)
            elif r < 0.75:
                val = rng.choice(["0", "9", "10", "100", str(2**32), str(2**64)])
                self.set_opt(case, "--order", val, pending)
                if rng.random() < 0.5:
                    self.set_opt(case, "--mesh", "box:1", pending)
                val = "--order %s" % val
            else:
                val = rng.choice(["box", "box:", "square:4", "", "{DIR}", "/dev/null",
                                  "/nonexistent.msh", os.path.join(DATA, REAL_TRI),
                                  os.path.join(DATA, "msh/sparselizard_rc_tet3d_v22.msh"),
                                  "box:2:2", "BOX:2", "box:+2"])
                self.set_opt(case, "--mesh", val, pending)
        else:
            opt = rng.choice(["--levels", "--degree", "--dim", "--restart", "--max-iter"])
            val = rng.choice(["0", "13", "15", "14", "16", "20", "21", str(2**32), str(2**64),
                              "1000000"])
            self.set_opt(case, opt, val, pending)
            if opt != "--levels" and rng.random() < 0.5:
                self.set_opt(case, "--levels", rng.choice(["2", "14", "16"]), pending)
            if rng.random() < 0.3:
                self.set_opt(case, "--dim", "3", pending)
            val = "%s %s" % (opt, val)
        case.desc.append("size %s" % val)

    def op_expr(self, case, rng, pending):
        opt = rng.choice(["--exact", "--exact", "--rhs", "--dirichlet", "--flux"])
        text, d = hostile_expr(rng, 4 if opt == "--flux" else 2)
        self.set_opt(case, opt, text, pending)
        if opt == "--flux" and not any(o == "--neumann" for o, _ in case.items):
            self.set_opt(case, "--neumann", "1")
        case.desc.append("%s: %s" % (opt, d))

    def op_tags(self, case, rng, pending):
        opt = "--neumann" if self.door == "hdg_poisson" else "--absorbing"
        val = rng.choice(HOSTILE_TAGS + ["1,2,3,4", "1,2,3,4,5,6"])
        self.set_opt(case, opt, val, pending)
        case.desc.append("%s=%r" % (opt, val[:40]))

    def op_mode(self, case, rng, pending):
        val = rng.choice(HOSTILE_MODES)
        self.set_opt(case, "--mode", val, pending)
        case.desc.append("--mode=%r" % val)

    def op_times(self, case, rng, pending):
        val = rng.choice(HOSTILE_TIMES)
        self.set_opt(case, "--vtk-times", val, pending)
        if not any(o == "--vtk" for o, _ in case.items):
            self.set_opt(case, "--vtk", "{DIR}/vtk")
        case.desc.append("--vtk-times=%r" % val[:40])

    def op_file(self, case, rng, pending):
        door = self.door
        nstruct = rng.choices([0, 1, 2, 3], [2, 5, 2, 1])[0]
        ntext = rng.choices([0, 1, 2], [5, 4, 1])[0]
        if nstruct == 0 and ntext == 0:
            ntext = 1
        finish = rng.random() < 0.5
        if door in ("solve", "spmv"):
            vec_opt = "--rhs" if door == "solve" else "--x"
            if rng.random() < 0.2:
                # a hostile vector for a matrix whose size we know
                if door == "solve":
                    self.set_opt(case, "--matrix", "poisson2d:6", pending)
                    n = 36
                else:
                    path = self.new_file(case, rng, "mtx", "spd_gen")
                    self.set_opt(case, "--matrix", path, pending)
                    n = 25
                path = self.new_file(case, rng, "vec", "vec", rng.randint(1, 2),
                                     rng.choice([0, 0, 1]), finish, len=n)
                self.set_opt(case, vec_opt, path, pending)
                case.desc.append("hostile %s file" % vec_opt)
                return
            base = rng.choice(MTX_BASE_NAMES * 4 + ["real:" + REAL_MTX])
            if base.startswith("real:"):
                nstruct = 0
            path = self.new_file(case, rng, "mtx", base, nstruct, ntext, finish)
            self.set_opt(case, "--matrix", path, pending)
            # a vector that no longer fits is not interesting: drop it
            case.items = [it for it in case.items if it[0] != vec_opt]
            self.repend(case, pending)
            case.desc.append("mutated Matrix Market file (%s)" % base)
        else:
            shape = "tri" if door == "hdg_poisson" else "tet"
            if rng.random() < 0.1:
                shape = "tet" if shape == "tri" else "tri"
            if rng.random() < 0.1:
                real = REAL_TRI if shape == "tri" else REAL_TET
                base = "real:" + real
                nstruct = 0
            else:
                base = "%s/%s" % (shape, rng.choice(["2.2", "4.1"]))
            path = self.new_file(case, rng, "mesh", base, nstruct, ntext, finish)
            self.set_opt(case, "--mesh", path, pending)
            if door == "maxwell":
                self.set_opt(case, "--final-time", "0.02")
                if rng.random() < 0.3:
                    self.set_opt(case, "--absorbing", rng.choice(["1", "1,2,3,4,5,6", "77", "10"]))
            else:
                r = rng.random()
                if r < 0.3:
                    self.set_opt(case, "--untagged-as", rng.choice(["1", "0", "99"]))
                elif r < 0.5:
                    self.set_opt(case, "--neumann", rng.choice(["1", "2,3", "77", "10"]))
                if base.startswith("real:"):
                    self.set_opt(case, "--degree", "1")
            case.desc.append("mutated Gmsh file (%s)" % base)


# --------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------

def limits(mem_bytes):
    def fn():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return fn


def read_head(path, n):
    try:
        with open(path, "rb") as f:
            data = f.read(n + 1)
    except OSError:
        return b"", False
    return data[:n], len(data) > n


PANIC_RE = re.compile(r"panicked|stack overflow|memory allocation of")
SUSPICIOUS_RE = re.compile(r"(?i)(\berror\b|\bwarning\b|\bfailed\b|\binvalid\b|\bcannot\b|"
                           r"not converged|\bpanic|overflow|\bignor)")


def strict_json(text):
    """Parses stdout as exactly one JSON object (no NaN/Infinity); returns (obj, error)."""
    def bad_constant(c):
        raise ValueError("non-JSON constant %s" % c)
    dec = json.JSONDecoder(parse_constant=bad_constant)
    s = text.strip()
    if not s:
        return None, "stdout is empty"
    try:
        obj, end = dec.raw_decode(s)
    except ValueError as e:
        return None, "stdout is not JSON: %s" % str(e)[:120]
    if s[end:].strip():
        return None, "text after the JSON object: %r" % s[end:].strip()[:80]
    if not isinstance(obj, dict):
        return None, "stdout JSON is a %s, not an object" % type(obj).__name__
    return obj, None


def file_has_extreme(path, limit):
    """Whether a (maybe gzipped) input file holds nan/inf or a number beyond `limit`."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except Exception:
                pass
    except OSError:
        return False
    if re.search(rb"(?i)nan|inf", data):
        return True
    for tok in re.findall(rb"[-+]?[0-9][0-9.]*(?:[eEdD][-+]?[0-9]+)?", data):
        if len(tok) > 30 or b"e" in tok.lower() or b"d" in tok.lower():
            try:
                if abs(float(tok.replace(b"D", b"e").replace(b"d", b"e"))) > limit:
                    return True
            except ValueError:
                pass
    return False


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def opt_value(argv, name):
    val = None
    for k, a in enumerate(argv):
        if a == name and k + 1 < len(argv):
            val = argv[k + 1]
        elif a.startswith(name + "="):
            val = a[len(name) + 1:]
    return val


def as_float(s, default):
    if s is None:
        return default
    try:
        return float(s)
    except ValueError:
        return default


def check_answer(door, argv, obj, case, refs):
    """wrong_ok reasons for an exit-0 (or exit-3) JSON answer."""
    why = []
    ok_exit = True

    def need(key, v):
        if not is_num(v):
            why.append("%s is %s where a number is expected" % (key, json.dumps(v)))

    if door == "solve":
        tol = as_float(opt_value(argv, "--tol"), 1e-8)
        prec = opt_value(argv, "--precision") or "f64"
        for k in ("rows", "nnz", "iterations", "final_residual", "relative_residual",
                  "true_relative_residual", "time_s"):
            need(k, obj.get(k))
        if opt_value(argv, "--rhs") is None:
            need("error_from_ones", obj.get("error_from_ones"))
        if obj.get("converged") is not True:
            why.append("exit 0 but converged = %s" % json.dumps(obj.get("converged")))
        rr = obj.get("relative_residual")
        if is_num(rr) and not (rr <= tol):
            why.append("converged with relative_residual %.3g above --tol %s" % (rr, tol))
        tr = obj.get("true_relative_residual")
        floor = 1e-5 if prec == "f32" else 1e-13
        if is_num(tr) and math.isfinite(tol) and tr > 100 * max(tol, floor):
            why.append("true_relative_residual %.3g > 100 x max(--tol %s, %g)" % (tr, tol, floor))
        if obj.get("iterations") == 0 and is_num(obj.get("final_residual")) and obj["final_residual"] > 0:
            why.append("iterations 0 with a nonzero right-hand side (--tol %s)" % opt_value(argv, "--tol"))
    elif door == "spmv":
        for k in ("rows", "cols", "nnz", "storage_bytes", "y_norm2", "y_norm_inf"):
            need(k, obj.get(k))
        if "--bench" in argv:
            for k in ("seconds", "gb_per_s", "gflop_per_s"):
                need(k, obj.get(k))
        ref = refs.get("spmv")
        if ref is not None:
            m, n, y = ref
            prec = opt_value(argv, "--precision") or "f64"
            rel = 1e-12 if prec == "f64" else 1e-5
            n2 = math.sqrt(sum(v * v for v in y)) if all(math.isfinite(v) for v in y) else None
            ninf = max([abs(v) for v in y] + [0.0]) if n2 is not None else None
            if obj.get("rows") != m or obj.get("cols") != n:
                why.append("shape %sx%s, the file says %dx%d" % (obj.get("rows"), obj.get("cols"), m, n))
            if n2 is not None and is_num(obj.get("y_norm2")) and abs(obj["y_norm2"] - n2) > rel * max(n2, 1e-300) + 1e-300:
                why.append("y_norm2 %.17g, expected %.17g" % (obj["y_norm2"], n2))
            if n2 is not None and is_num(obj.get("y_norm_inf")) and abs(obj["y_norm_inf"] - ninf) > rel * max(ninf, 1e-300) + 1e-300:
                why.append("y_norm_inf %.17g, expected %.17g" % (obj["y_norm_inf"], ninf))
            if n2 is None:
                # the file holds NaN/inf: a null norm is the right answer
                why = [w for w in why if not w.startswith("y_norm")]
        if refs.get("extreme"):
            why = [w for w in why if not re.match(r"y_norm\w* is null", w)]
    elif door == "hdg_poisson":
        for k in ("triangles", "degree", "dofs", "iterations"):
            need(k, obj.get(k))
        if obj.get("converged") is not True:
            why.append("exit 0 but converged = %s" % json.dumps(obj.get("converged")))
        secs = obj.get("seconds") or {}
        for k, v in secs.items():
            need("seconds." + k, v)
        l2 = obj.get("l2_error")
        if isinstance(l2, dict):
            for k in ("u", "q") + (() if "--no-post-process" in argv else ("u_star",)):
                need("l2_error." + k, l2.get(k))
        elif l2 is not None:
            why.append("l2_error is %s" % json.dumps(l2))
        if obj.get("iterations") == 0 and case.nonzero_data(argv):
            why.append("iterations 0 with nonzero data")
    elif door == "poisson_mg":
        tol = as_float(opt_value(argv, "--tol"), 1e-9)
        for k in ("dofs", "iterations", "relative_residual", "dofs_per_second"):
            need(k, obj.get(k))
        if obj.get("converged") is not True:
            why.append("exit 0 but converged = %s" % json.dumps(obj.get("converged")))
        rr = obj.get("relative_residual")
        if is_num(rr) and not (rr <= tol):
            why.append("converged with relative_residual %.3g above --tol %s" % (rr, tol))
        hist = obj.get("residual_history")
        if not isinstance(hist, list) or any(not is_num(v) for v in hist):
            why.append("residual_history holds a non-number")
        if (opt_value(argv, "--rhs") or "sine") == "sine":
            need("l2_error", obj.get("l2_error"))
        for k, v in (obj.get("seconds") or {}).items():
            need("seconds." + k, v)
        solver = opt_value(argv, "--solver") or "fmg"
        if obj.get("iterations") == 0 and solver != "fmg":
            why.append("iterations 0 with a nonzero right-hand side (--tol %s)" % opt_value(argv, "--tol"))
    elif door == "maxwell":
        for k in ("elements", "dofs", "dt", "steps", "l2_error", "energy_initial", "energy_final",
                  "energy_drift", "seconds", "setup_seconds", "dof_updates_per_second", "final_time"):
            need(k, obj.get(k))
        hist = obj.get("energy_history")
        if not isinstance(hist, list) or any(not (isinstance(p, list) and all(is_num(v) for v in p)) for p in hist):
            why.append("energy_history holds a non-number")
        if obj.get("steps") == 0:
            why.append("steps = 0")
        flux = opt_value(argv, "--flux") or "upwind"
        e0, e1 = obj.get("energy_initial"), obj.get("energy_final")
        prec = opt_value(argv, "--precision") or "f64"
        if flux == "upwind" and is_num(e0) and is_num(e1) and e1 > e0 * (1 + (1e-4 if prec == "f32" else 1e-9)) + 1e-300:
            why.append("upwind flux but energy grew: %.6g -> %.6g" % (e0, e1))
    return why


KNOWN_NONZERO = {None, "sin(pi*x)*sin(pi*y)", "exp(x)*cos(pi*y)", "1", "x*y"}


def nonzero_data(argv):
    ex, rhs, di = (opt_value(argv, o) for o in ("--exact", "--rhs", "--dirichlet"))
    if ex is None and rhs is None:
        return True
    if rhs is not None:
        return rhs in KNOWN_NONZERO - {None}
    return ex in KNOWN_NONZERO - {None} and di in KNOWN_NONZERO


Case.nonzero_data = staticmethod(nonzero_data)


def classify(run, case):
    rc, err, out = run["rc"], run["stderr"], run["stdout"]
    if run["timed_out"]:
        return "hang", "timeout after %gs" % run["timeout"]
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "signal %d" % -rc
        return "crash", "killed by %s" % name
    if rc >= 128:
        return "crash", "exit %d" % rc
    m = PANIC_RE.search(err)
    if m:
        return "crash", "stderr: " + m.group(0)
    base = {0: "ok", 1: "error", 2: "usage", 3: "not_converged"}.get(rc, "other_exit")
    if base in ("ok", "not_converged") or out.strip():
        obj, jerr = strict_json(out)
        if jerr and (base in ("ok", "not_converged") or out.strip()):
            return "bad_json", jerr
        if base == "ok":
            why = check_answer(case.door, run["argv"], obj, case, run.get("refs", {}))
            if why:
                return "wrong_ok", "; ".join(why)
            for line in err.splitlines():
                if SUSPICIOUS_RE.search(line):
                    return "suspicious_ok", line.strip()
    return base, ""


def mem_total():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


MEM_TOTAL = mem_total()


def alloc_note(line):
    m = re.search(r"memory allocation of (\d+) bytes failed", line)
    if m and int(m.group(1)) <= MEM_TOTAL:
        return line + " [below this machine's memory: refused by the --mem-limit cap]"
    if m:
        return line + " [more than this machine's memory]"
    return line


def key_line(cls, reason, err, case):
    if cls == "crash":
        lines = err.splitlines()
        for k, line in enumerate(lines):
            if "panicked" in line:
                msg = lines[k + 1].strip() if k + 1 < len(lines) else ""
                loc = re.sub(r"^thread '[^']*' panicked at ", "", line.strip())
                return "panicked at %s %s" % (loc, msg)
            if "memory allocation of" in line or "stack overflow" in line:
                return alloc_note(line.strip())
        return reason
    if cls == "hang":
        return "timeout; mutated: " + ", ".join(sorted(set(case.mutated))) if case.mutated else "timeout"
    return reason


def fold_digits(s):
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", s)


def stderr_excerpt(err, n=8):
    out = []
    frames = []
    lines = err.splitlines()
    for k, line in enumerate(lines):
        s = line.rstrip()
        if re.match(r"^\s+\d+: ", s):
            if ("galerkin::" in s or "exmex" in s or re.search(r"\b(solve|spmv|hdg_poisson|poisson_mg|maxwell)::", s)) and len(frames) < 4:
                frames.append(s.strip())
            continue
        if re.match(r"^\s+at ", s) or s.startswith("stack backtrace") or s.startswith("note: Some details"):
            continue
        if len(out) < n:
            out.append(s[:300])
    return out + (["backtrace: " + " <- ".join(frames)] if frames else [])


def show_cmd(argv, limit=200):
    parts = []
    for a in argv:
        q = shlex.quote(a)
        if len(q) > limit:
            q = q[:limit] + "...(%d chars)" % len(a)
        parts.append(q)
    return " ".join(parts)


def snapshot_bins(bindir, doors, snapdir):
    info = {}
    for d in doors:
        src = os.path.join(bindir, d)
        for attempt in range(10):
            try:
                dst = os.path.join(snapdir, d)
                shutil.copy2(src, dst)
                h = hashlib.sha256(open(dst, "rb").read()).hexdigest()[:16]
                r = subprocess.run([dst, "--help"], capture_output=True, text=True, timeout=30)
                if r.returncode == 0:
                    info[d] = dict(path=dst, sha256=h, mtime=time.strftime(
                        "%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(src))), help=r.stdout)
                    break
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(3)
        else:
            sys.exit("hostile.py: cannot copy a working %s from %s" % (d, bindir))
    return info


def exit_doc(help_text):
    lines = [l.strip() for l in help_text.splitlines() if re.search(r"(?i)exit|status", l)]
    return lines


def main():
    ap = argparse.ArgumentParser(
        description="Throw generated hostile inputs at galerkin's five command-line doors "
                    "(solve, spmv, hdg_poisson, poisson_mg, maxwell) and classify every outcome. "
                    "Exit status 1 if any crash/hang/wrong_ok/bad_json was found.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--bin", default=DEFAULT_BIN, help="directory of the prebuilt door binaries")
    ap.add_argument("--per-door", type=int, default=1000, help="inputs per door (the corpus is run first)")
    ap.add_argument("--seed", default="1", help="seed of the generator (same seed, same inputs)")
    ap.add_argument("--jobs", type=int, default=2, help="processes at a time")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per run; past it a run is a hang")
    ap.add_argument("--door", nargs="+", choices=DOORS, default=None, help="doors to test (default: all)")
    ap.add_argument("--json", metavar="OUT", help="write the table, findings and every run here as JSON")
    ap.add_argument("--keep", metavar="DIR", help="keep the files and a cmd.sh of every finding under DIR")
    ap.add_argument("--threads", type=int, default=1, help="RAYON_NUM_THREADS of the children")
    ap.add_argument("--mem-limit", type=int, default=3072, help="address-space limit of a child, MiB")
    ap.add_argument("--dry-run", action="store_true", help="print the generated commands, run nothing")
    ap.add_argument("--no-snapshot", action="store_true", help="run the binaries in place (no copy)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args()

    doors = args.door or DOORS
    bindir = os.path.abspath(args.bin)
    bases = Bases()
    scratch = tempfile.mkdtemp(prefix="hostile-")
    snapdir = os.path.join(scratch, "bin")
    os.makedirs(snapdir)
    if args.no_snapshot or args.dry_run:
        binfo = {}
        for d in doors:
            try:
                h = subprocess.run([os.path.join(bindir, d), "--help"], capture_output=True,
                                   text=True, timeout=30).stdout
            except (OSError, subprocess.SubprocessError):
                h = ""
            binfo[d] = dict(path=os.path.join(bindir, d), sha256="-", mtime="-", help=h)
    else:
        binfo = snapshot_bins(bindir, doors, snapdir)
    cases = []
    for d in doors:
        g = Generator(d, args.seed, binfo[d]["help"])
        cases += [g.make(i) for i in range(args.per_door)]

    if args.dry_run:
        shutil.rmtree(scratch, ignore_errors=True)
        for c in cases:
            print("%s %5d %s   # %s" % (c.door, c.idx, show_cmd(c.argv("$DIR"), 120), "; ".join(c.desc)))
        return 0
    workroot = os.path.abspath(args.keep) if args.keep else os.path.join(scratch, "work")
    os.makedirs(workroot, exist_ok=True)
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads), RUST_BACKTRACE="1")
    env.pop("OMPI_COMM_WORLD_SIZE", None)
    mem = args.mem_limit << 20

    results = {}
    queue = collections.deque(cases)
    running = {}
    t_start = time.time()
    done = 0
    per_door_done = collections.Counter()

    def start(case):
        casedir = os.path.join(workroot, "%s-%05d" % (case.door, case.idx))
        shutil.rmtree(casedir, ignore_errors=True)
        os.makedirs(casedir)
        refs = {}
        fdesc = []
        for name, spec in case.files.items():
            data, desc, ref = make_file(bases, spec)
            with open(os.path.join(casedir, name), "wb") as f:
                f.write(data)
            fdesc += ["%s: %s" % (name, "; ".join(desc))] if desc else []
            if ref is not None:
                refs[(spec["kind"], name)] = ref
        argv = case.argv(casedir)
        # the reference product for spmv: a clean file (and a clean x, if any)
        frefs, refs = refs, {}
        if case.door == "spmv":
            mine = lambda p: os.path.basename(p) if p and p.startswith(casedir + "/") else None
            mname, xpath = mine(opt_value(argv, "--matrix")), opt_value(argv, "--x")
            mref = frefs.get(("mtx", mname))
            if mref is not None and xpath is None:
                refs["spmv"] = mref
            elif mref is not None:
                x = frefs.get(("vec", mine(xpath)))
                if x is not None:
                    refs["spmv"] = make_file(bases, dict(case.files[mname], x=x))[2]
            # NaN, inf or out-of-range numbers in the inputs: a null norm is an answer
            prec = opt_value(argv, "--precision") or "f64"
            for p in (opt_value(argv, "--matrix"), xpath):
                if mine(p) and file_has_extreme(os.path.join(casedir, mine(p)),
                                                3.4e38 if prec != "f64" else 1e300):
                    refs["extreme"] = True
        exe = binfo[case.door]["path"]
        out = open(os.path.join(casedir, ".stdout"), "wb")
        err = open(os.path.join(casedir, ".stderr"), "wb")
        t0 = time.time()
        try:
            p = subprocess.Popen([exe] + argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 cwd=casedir, env=env, preexec_fn=limits(mem),
                                 start_new_session=True)
        except (OSError, ValueError) as e:
            out.close()
            err.close()
            results[(case.door, case.idx)] = dict(door=case.door, idx=case.idx, argv=argv, rc=None,
                                                  cls="crash", reason="cannot start: %s" % e,
                                                  seconds=0, stderr="", stdout="", timed_out=False)
            return
        running[p] = (case, casedir, argv, t0, out, err, fdesc, refs)

    def finish(p, timed_out):
        nonlocal done
        case, casedir, argv, t0, out, err, fdesc, refs = running.pop(p)
        out.close()
        err.close()
        so, so_trunc = read_head(os.path.join(casedir, ".stdout"), 8 << 20)
        se, _ = read_head(os.path.join(casedir, ".stderr"), 256 << 10)
        run = dict(door=case.door, idx=case.idx, argv=argv, rc=p.returncode, timed_out=timed_out,
                   timeout=args.timeout, seconds=round(time.time() - t0, 3),
                   stdout=so.decode("utf-8", "replace"), stderr=se.decode("utf-8", "replace"),
                   refs=refs, files=fdesc)
        cls, reason = classify(run, case)
        if so_trunc and cls in ("ok", "not_converged"):
            cls, reason = "bad_json", "stdout over 8 MB"
        run["cls"], run["reason"] = cls, reason
        run["key"] = key_line(cls, reason, run["stderr"].replace(casedir, "$DIR"), case)
        run["reason"] = reason.replace(casedir, "$DIR")
        run["desc"] = case.desc
        run["base"] = case.base
        lines = [l.strip() for l in run["stderr"].replace(casedir, "$DIR").splitlines() if l.strip()]
        run["stderr_line"] = next((l for l in lines if re.search(r"(?i)error|invalid|panick|memory all|overflow", l)),
                                  lines[-1] if lines else "")[:300]
        keep = args.keep and cls in FINDINGS
        if keep:
            with open(os.path.join(casedir, "cmd.sh"), "w") as f:
                f.write("#!/bin/sh\n# %s %d: %s\n# mutations: %s\n" % (
                    case.door, case.idx, cls, "; ".join(case.desc + fdesc)))
                f.write("ulimit -v %d\nRAYON_NUM_THREADS=%d RUST_BACKTRACE=1 %s\n" % (
                    mem >> 10, args.threads, shlex.join([os.path.join(bindir, case.door)] + argv)))
        else:
            shutil.rmtree(casedir, ignore_errors=True)
        del run["refs"]
        results[(case.door, case.idx)] = run
        done += 1
        per_door_done[case.door] += 1
        if not args.quiet and (done % 100 == 0 or cls in FINDINGS):
            print("[%6.0fs] %d/%d  %s %d: %s %s" % (time.time() - t_start, done, len(cases), case.door,
                                                   case.idx, cls, ("- " + run["key"][:100]) if cls in FINDINGS else ""),
                  file=sys.stderr, flush=True)

    try:
        while queue or running:
            while queue and len(running) < args.jobs:
                start(queue.popleft())
            now = time.time()
            for p in list(running):
                if p.poll() is not None:
                    finish(p, False)
                elif now - running[p][3] > args.timeout:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    p.wait()
                    finish(p, True)
            time.sleep(0.005)
    except KeyboardInterrupt:
        for p in running:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if args.keep:
            # keep only the case directories of findings
            pass

    elapsed = time.time() - t_start
    runs = [results[(c.door, c.idx)] for c in cases]
    table = collections.OrderedDict((d, collections.Counter()) for d in doors)
    for r in runs:
        table[r["door"]][r["cls"]] += 1

    groups = collections.OrderedDict()
    susp = collections.OrderedDict()
    for r in runs:
        if r["cls"] in FINDINGS:
            k = (r["door"], r["cls"], fold_digits(r["key"]))
            groups.setdefault(k, []).append(r)
        elif r["cls"] == "suspicious_ok":
            k = (r["door"], fold_digits(r["reason"]))
            susp.setdefault(k, []).append(r)

    # exit-status notes: what --help says, and input errors answered with exit 1
    notes = []
    for d in doors:
        doc = exit_doc(binfo[d]["help"])
        if not doc:
            notes.append("%s: --help documents no exit statuses (expected: 0 answer, 1 error, "
                         "2 bad usage/input, 3 not converged)" % d)
    # Exit statuses that disagree with the --help text (notes, not findings): exit 1 ("an
    # error of the device or the library") on what reads as bad input, exit 3 ("did not
    # converge") on input holding NaN or infinity.
    note_rules = [
        ("error", re.compile(r"invalid argument|invalid .* matrix|:\d+: |I/O error on (?!.*out)|"
                             r"not a number|dimension mismatch|needs a number|does not fit|"
                             r"padding ratio"),
         "exit 1 (device/library error) on what reads as bad usage or input (help: 2)"),
        ("not_converged", re.compile(r"NaN or infinity in b\b"),
         "exit 3 (did not converge) on input that holds NaN or infinity (help: 2 bad input)"),
    ]
    exit_notes = collections.OrderedDict()
    for r in runs:
        for cls, rx, label in note_rules:
            if r["cls"] == cls and rx.search(r["stderr"]):
                line = next((l for l in r["stderr"].splitlines() if rx.search(l)), "")
                line = re.sub(re.escape(workroot) + r"/[\w-]+", "$DIR", line)
                exit_notes.setdefault((r["door"], label, fold_digits(line.strip())[:160]), []).append(r)
                break

    # ---- text report ----
    P = print
    P("hostile.py: seed %s, %d inputs per door, timeout %gs, jobs %d, threads %d, mem limit %d MiB, %.0f s"
      % (args.seed, args.per_door, args.timeout, args.jobs, args.threads, args.mem_limit, elapsed))
    P("binaries: %s (%s)" % (bindir, ", ".join("%s %s %s" % (d, binfo[d]["sha256"], binfo[d]["mtime"]) for d in doors)))
    P("")
    cols = ["ok", "usage", "error", "not_converged", "crash", "hang", "wrong_ok", "bad_json",
            "suspicious_ok", "other_exit"]
    P("%-12s %5s " % ("door", "runs") + " ".join("%9s" % c[:9] for c in cols))
    for d, cnt in table.items():
        P("%-12s %5d " % (d, sum(cnt.values())) + " ".join("%9d" % cnt[c] for c in cols))
    P("")
    P("findings (%d groups, %d runs), de-duplicated by (door, class, key):" % (
        len(groups), sum(len(v) for v in groups.values())))
    for (d, cls, _k), rs in groups.items():
        r = rs[0]
        P("")
        P("* %s %s x%d: %s" % (d, cls, len(rs), r["key"][:300]))
        if cls in ("wrong_ok", "bad_json") and r["reason"] != r["key"]:
            P("    reason: %s" % r["reason"][:300])
        P("    $ RAYON_NUM_THREADS=%d %s" % (args.threads, show_cmd([os.path.join(bindir, d)] + r["argv"])))
        P("    mutations: %s" % "; ".join(r["desc"] + r["files"])[:400])
        P("    exit %s after %.2fs; stderr:" % ("timeout" if r["timed_out"] else r["rc"], r["seconds"]))
        for line in stderr_excerpt(r["stderr"]):
            P("      | " + line)
        if len(rs) > 1:
            P("    also: " + ", ".join("%s-%05d" % (x["door"], x["idx"]) for x in rs[1:12]) +
              (" ..." if len(rs) > 12 else ""))
    if susp:
        P("")
        P("suspicious_ok (exit 0 with an error-like line on stderr):")
        for (d, _k), rs in susp.items():
            P("* %s x%d: %s" % (d, len(rs), rs[0]["reason"][:200]))
            P("    $ %s" % show_cmd([os.path.join(bindir, d)] + rs[0]["argv"]))
    P("")
    P("exit-status notes:")
    docs = collections.OrderedDict()
    for d in doors:
        t = " ".join(exit_doc(binfo[d]["help"]))
        if t:
            docs.setdefault(t, []).append(d)
    for t, ds in docs.items():
        P("* --help of %s: %s" % (", ".join(ds), t[:400]))
    for n in notes:
        P("* " + n)
    for d, label in sorted({(dd, lb) for dd, lb, _k in exit_notes}, key=lambda x: (doors.index(x[0]), x[1])):
        mine = [(k, rs) for (dd, lb, k), rs in exit_notes.items() if dd == d and lb == label]
        P("* %s: %d run(s) with %s, %d kind(s), e.g.:"
          % (d, sum(len(rs) for _, rs in mine), label, len(mine)))
        for k, rs in sorted(mine, key=lambda kr: -len(kr[1]))[:5]:
            P("    x%d %s" % (len(rs), k[:150]))
            P("        $ %s" % show_cmd([os.path.join(bindir, d)] + rs[0]["argv"], 120))
    if args.keep:
        P("")
        P("files of the findings: %s/<door>-<index>/ (cmd.sh reproduces)" % workroot)

    if args.json:
        def slim(r):
            return {k: r[k] for k in ("door", "idx", "cls", "rc", "timed_out", "seconds", "reason",
                                      "key", "stderr_line", "argv", "desc", "files", "base")}
        doc = dict(
            meta=dict(seed=args.seed, per_door=args.per_door, timeout=args.timeout, jobs=args.jobs,
                      threads=args.threads, mem_limit_mib=args.mem_limit, seconds=round(elapsed, 1),
                      bin=bindir, binaries={d: {k: binfo[d][k] for k in ("sha256", "mtime")} for d in doors},
                      help_exit_text={d: exit_doc(binfo[d]["help"]) for d in doors}),
            table={d: {c: cnt[c] for c in cols} for d, cnt in table.items()},
            findings=[dict(door=d, cls=cls, key=rs[0]["key"], count=len(rs),
                           command=shlex.join([os.path.join(bindir, d)] + rs[0]["argv"]),
                           reason=rs[0]["reason"], mutations=rs[0]["desc"] + rs[0]["files"],
                           stderr_head=stderr_excerpt(rs[0]["stderr"], 12),
                           runs=["%s-%05d" % (x["door"], x["idx"]) for x in rs])
                      for (d, cls, _k), rs in groups.items()],
            suspicious_ok=[dict(door=d, count=len(rs), line=rs[0]["reason"],
                                command=shlex.join([os.path.join(bindir, d)] + rs[0]["argv"]))
                           for (d, _k), rs in susp.items()],
            exit_notes=notes + [dict(door=d, note=label, count=len(rs), line=k,
                                     command=shlex.join([os.path.join(bindir, d)] + rs[0]["argv"]))
                                for (d, label, k), rs in exit_notes.items()],
            runs=[slim(r) for r in runs],
        )
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 1 if groups else 0


if __name__ == "__main__":
    sys.exit(main())
