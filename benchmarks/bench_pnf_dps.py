"""PNFJoint benchmark: time and peak memory against the number of certified digits, beside a float64 permute-and-flip.

Run:  python benchmarks/bench_pnf_dps.py
      python benchmarks/bench_pnf_dps.py --dps 30 100 1000 --wide-dps 300 600

Instances (epsilon = 1, sensitivity 1, so a sequence of utility ``u`` is accepted with
probability ``p = exp((u - u_max) / 2)``; the Joint paper, arXiv:2201.12333, Appendix D):

- "small": ``PNFJoint([5, 3, 2, 0], 2, epsilon=1)`` (12 sequences, the exact polynomial
  route of :mod:`exactdp.rules.permute_and_flip`) at every ``--dps``;
- "wide": ``PNFJoint([40, 39, ..., 1], 2, epsilon=1)`` (1,560 sequences, more than
  ``PNF_POLY_SUPPORT_LIMIT``, so the quadrature route) at every ``--wide-dps``; past
  ``PNF_QUADRATURE_MAX_DPS`` digits exactdp raises a PrecisionError naming the limit, and the
  row shows it.

Each row runs ``probability((0, 1), dps=D)`` then ``level_probabilities(dps=D)`` on a fresh
mechanism in its own child process (timed after a warm-up call on a 3-item instance that
pays the one-time lazy imports, about 0.2 s, shown in its own column; the second call
reuses the level table's enclosures computed by the first) (started through a helper process, so that
``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` of the helper is that child's peak
resident memory), and, in another child process that imports numpy and not exactdp, the
float64 reference: it enumerates the ``d!/(d-k)!`` sequences, groups them by the Joint
utility ``u(S) = -max_i (c_(i) - c[s_i])`` and evaluates permute-and-flip's formula
``P(one output of level a) = p_a * int_0^1 F(t) / (1 - t p_a) dt``, ``F(t) = prod_b (1 - t p_b)^(m_b)``, by
Gauss-Legendre quadrature with ``ceil(support / 2) + 1`` nodes (the integrand is a
polynomial of degree ``support - 1``, so the rule is exact up to float rounding).  The
columns "rel. diff" are the relative difference of the float P((0, 1)) from exactdp's, and
the largest one over all level probabilities (multiplicity times that).  The float reference is not certified: its
error is unknown to it, it has 16 digits whatever ``dps`` asks, and float64 underflows
(``p_a < 1e-308``) or overflows (multiplicities past ``1.8e308``) where exactdp does not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

EXACT_CHILD = r"""
import json, sys, time
import mpmath
import exactdp
from exactdp.rules.permute_and_flip import PNF_QUADRATURE_MAX_DPS
counts, k, dps = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
t0 = time.perf_counter()
exactdp.PNFJoint([2, 1, 0], 1, epsilon=1).probability((0,), dps=15)   # warm-up: lazy imports
warm = time.perf_counter() - t0
m = exactdp.PNFJoint(counts, k, epsilon=1)
t0 = time.perf_counter()
try:
    p = m.probability((0, 1), dps=dps)
    t1 = time.perf_counter()
    levels = m.level_probabilities(dps=dps)
    t2 = time.perf_counter()
except exactdp.errors.PrecisionError as e:
    print(json.dumps({"error": f"{type(e).__name__}: {e}", "secs": time.perf_counter() - t0, "warm": warm}))
else:
    print(json.dumps({"warm": warm, "secs": t2 - t0, "secs_p": t1 - t0, "secs_levels": t2 - t1,
                      "P": mpmath.nstr(p, 20), "levels": [mpmath.nstr(q, 20) for _, q in levels],
                      "cap": PNF_QUADRATURE_MAX_DPS}))
"""

FLOAT_LIB = r"""
import itertools, math
import numpy as np

def float_pnf_joint(counts, k, eps=1.0, sensitivity=1.0):
    # (probability of one output of each level and of the whole level, best first;
    #  level index of the sequence (0, .., k-1))
    top = sorted(counts, reverse=True)[:k]
    mult = {}
    for seq in itertools.permutations(range(len(counts)), k):
        u = -max(t - counts[s] for t, s in zip(top, seq))
        mult[u] = mult.get(u, 0) + 1
    us = sorted(mult, reverse=True)
    m = np.array([mult[u] for u in us], dtype=np.float64)
    p = np.exp(eps * (np.array(us, dtype=np.float64) - us[0]) / (2 * sensitivity))
    support = int(m.sum())
    x, w = np.polynomial.legendre.leggauss(math.ceil(support / 2) + 1)
    t, w = (x + 1) / 2, w / 2                                     # nodes and weights on [0, 1]
    log1m = np.log1p(-np.outer(t, p))                             # log(1 - t p_b), shape (nodes, levels)
    log_f = log1m @ m                                             # log F(t)
    probs = p * (w @ np.exp(log_f[:, None] - log1m))              # p_a * int F / (1 - t p_a)
    u_best = -max(t - counts[s] for t, s in zip(top, range(k)))
    return probs, probs * m, us.index(u_best)
"""

FLOAT_CHILD = FLOAT_LIB + r"""
import json, sys, time
counts, k = json.loads(sys.argv[1]), int(sys.argv[2])
float_pnf_joint([2, 1, 0], 1)                                          # warm-up
t0 = time.perf_counter()
probs, level_probs, best = float_pnf_joint(counts, k)
secs = time.perf_counter() - t0
print(json.dumps({"secs": secs, "P": repr(float(probs[best])), "levels": [repr(float(q)) for q in level_probs]}))
"""

HELPER = r"""
import resource, subprocess, sys
proc = subprocess.run([sys.executable, "-c", sys.argv[1]] + sys.argv[2:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(proc.returncode, peak, proc.stdout.strip() or proc.stderr.strip().splitlines()[-1][:200])
"""


def run_child(child: str, counts: list[int], k: int, dps: int, timeout: float) -> tuple[int | str, dict]:
    """(peak RSS in MiB, parsed JSON output) of one child process."""
    try:
        proc = subprocess.run([sys.executable, "-c", HELPER, child, json.dumps(counts), str(k), str(dps)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "-", {"error": f"> {timeout:.0f} s"}
    rc, peak, rest = proc.stdout.strip().split(" ", 2)
    if rc != "0":
        return int(peak) // 1024, {"error": f"exit {rc}: {rest}"}
    return int(peak) // 1024, json.loads(rest)


def rel(a: str, b: str) -> float:
    import mpmath

    x, y = mpmath.mpf(a), mpmath.mpf(b)
    return float(abs(y - x) / abs(x))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dps", type=int, nargs="+", default=[30, 100, 1000, 3000, 10000, 20000])
    ap.add_argument("--wide-dps", type=int, nargs="+", default=[300, 600])
    ap.add_argument("--wide-d", type=int, default=40, help="number of distinct counts of the wide instance")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child")
    args = ap.parse_args()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"PNFJoint, k = 2, epsilon = 1; Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min)")
    print("| instance | support | dps | exactdp warm-up s | exactdp s (P + levels) | float s | exactdp/float | exactdp peak MiB "
          "| float peak MiB | P((0, 1)) exactdp | P((0, 1)) float | rel. diff P | max rel. diff levels |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    small = [5, 3, 2, 0]
    wide = list(range(args.wide_d, 0, -1))
    rows = [("small [5, 3, 2, 0]", small, d) for d in args.dps]
    rows += [(f"wide {args.wide_d} distinct", wide, d) for d in args.wide_dps]
    for name, counts, dps in rows:
        k = 2
        support = len(counts) * (len(counts) - 1)
        epeak, ex = run_child(EXACT_CHILD, counts, k, dps, args.timeout)
        fpeak, fl = run_child(FLOAT_CHILD, counts, k, dps, args.timeout)
        fsecs = f"{fl['secs']:.4f}" if "secs" in fl else fl.get("error", "-")
        if "error" in ex:
            warm = f"{ex['warm']:.3f}" if "warm" in ex else "-"
            if "secs" in ex:
                ex["error"] += f" (raised after {ex['secs']:.4f} s)"
            print(f"| {name} | {support:,} | {dps:,} | {warm} | {ex['error']} | {fsecs} | - | {epeak} | {fpeak} | - "
                  f"| {fl.get('P', '-')} | - | - |", flush=True)
            continue
        r = ex["secs"] / max(fl["secs"], 1e-4)
        ratio = f"{r:.2g}" if r < 10 else f"{r:,.0f}"
        diff_p = rel(ex["P"], fl["P"])
        diff_levels = max(rel(a, b) for a, b in zip(ex["levels"], fl["levels"]))
        if len(ex["levels"]) != len(fl["levels"]):
            diff_levels = float("nan")  # level tables disagree: a defect in one of them
        print(f"| {name} | {support:,} | {dps:,} | {ex['warm']:.3f} | {ex['secs']:.4f} ({ex['secs_p']:.4f} + {ex['secs_levels']:.4f}) "
              f"| {fsecs} | {ratio} | {epeak} | {fpeak} | {ex['P']} | {fl['P']} | {diff_p:.1e} "
              f"| {diff_levels:.1e} |", flush=True)


if __name__ == "__main__":
    main()
