"""Peeling benchmark: peak memory and time of one probability, log-probability or sample, beside a float64 peeling sampler.

Run:  python benchmarks/bench_peeling_memory.py                     (d = 100,000, k = 200)
      python benchmarks/bench_peeling_memory.py --no-float            (exactdp only)
      python benchmarks/bench_peeling_memory.py --d 20000 --k 50 --noise gumbel exponential
      python benchmarks/bench_peeling_memory.py --gaps                (huge count gaps)

Every instance runs in its own child process (started through a fresh helper process, so
that ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` of the helper is the peak resident
memory of that one child).  ``--cap-gb`` sets the child's address-space limit
(``RLIMIT_AS``), so that a run which would need more memory fails with MemoryError instead
of exhausting the machine; such a run is reported as ``failed``.

Each child first runs the operation on a 3-item instance (one-time lazy imports, not
timed); the time is that of the operation alone, after the mechanism (resp. the float
array) is built.

Instances:
- "distinct": counts ``d, d-1, ..., 1`` (every item its own level: the worst case for
  per-round level tables);
- "zipf": counts ``floor(10**5 // rank)`` for rank ``1..d`` (many ties in the tail).
Operations: ``P(best)`` = ``probability(range(k))``, ``log P(best)`` =
``log_probability(range(k))`` (both certified to ``--dps`` digits), ``sample`` = one
``sample(rng=1)``.  With ``--gaps``: counts ``(G, 3, 0)``, ``k = 2`` for gaps ``G`` from
``2**40`` to ``10**400``, every noise, the same three operations plus
``level_probabilities()``.

Float reference (gumbel noise only), measured in the same run, each instance in its own
child process that imports numpy and not exactdp: a plain numpy float64 peeling with the
same convention as :class:`exactdp.Peeling` (per-round weight ``exp((eps/k) c_j)``, total
budget ``eps`` split over ``k`` rounds).  Its log-probability of a sequence is
``sum_r [(eps/k) c[s_r] - logsumexp_{j remaining} (eps/k) c_j]`` (one masked logsumexp over
the remaining items per round), its probability is ``exp`` of that, and its sample adds
``Gumbel(1)`` noise to ``(eps/k) c`` (numpy ``default_rng(1)``) and reports the top k by
``argpartition`` + ``argsort``.  Before the table, the float log-probability is compared
with exactdp's certified one on small instances (relative difference printed; the run
stops if it exceeds ``1e-11``).  The float reference is *not* certified: it carries
rounding error, ``exp`` underflows to 0 below about ``1e-308`` and a count beyond ``1.8e308``
does not convert to float64 (reported as failed), where exactdp's balls do not.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys

CHILD = r"""
import sys, time
import exactdp
kind, d, k, noise, op, dps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
if kind == "distinct":
    counts = list(range(d, 0, -1))
elif kind == "zipf":
    counts = [10**5 // r for r in range(1, d + 1)]
else:  # a gap: counts (G, 3, 0)
    counts = [eval(kind), 3, 0]
w = exactdp.Peeling([2, 1, 0], 2, epsilon=1, noise=noise)   # warm-up: lazy imports, not timed
w.probability((0, 1), dps=15), w.sample(rng=0)
m = exactdp.Peeling(counts, k, epsilon=1, noise=noise)
best = tuple(range(k))
t0 = time.perf_counter()
if op == "P":
    out = m.probability(best, dps=dps)
elif op == "logP":
    out = m.log_probability(best, dps=dps)
elif op == "levels":
    out = sum(p for _, p in m.level_probabilities(dps=dps))
else:
    out = m.sample(rng=1)[:3]
print(f"{time.perf_counter() - t0:.4f} {str(out)[:24]}")
"""

HELPER = r"""
import resource, subprocess, sys
cap = float(sys.argv[1])
def limit():
    if cap > 0:
        n = int(cap * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (n, n))
proc = subprocess.run([sys.executable, "-c", sys.argv[2]] + sys.argv[3:], capture_output=True, text=True,
                      preexec_fn=limit)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
last = proc.stderr.strip().splitlines()[-1:] if proc.returncode else []
print(proc.returncode, peak, proc.stdout.strip() or ("failed: " + (last[0][:60] if last else "")))
"""


FLOAT_LIB = r"""
import numpy as np

def float_counts(kind, d):
    if kind == "distinct":
        return np.arange(d, 0, -1, dtype=np.float64)
    if kind == "zipf":
        return np.array([10**5 // r for r in range(1, d + 1)], dtype=np.float64)
    return np.array([float(eval(kind)), 3.0, 0.0])   # OverflowError past 1.8e308

def float_log_probability(counts, seq, eps):
    # sum over rounds of (eps/k) c[s_r] - logsumexp over the remaining items of (eps/k) c_j
    k = len(seq)
    a = (eps / k) * np.asarray(counts, dtype=np.float64)
    remaining = np.ones(a.size, dtype=bool)
    total = 0.0
    for s in seq:
        rest = a[remaining]
        top = rest.max()
        total += a[s] - (top + np.log(np.exp(rest - top).sum()))
        remaining[s] = False
    return total

def float_sample(counts, k, eps, seed=1):
    a = (eps / k) * np.asarray(counts, dtype=np.float64)
    noisy = a + np.random.default_rng(seed).gumbel(size=a.size)
    top = np.argpartition(-noisy, k - 1)[:k]
    return tuple(int(i) for i in top[np.argsort(-noisy[top], kind="stable")])
"""

FLOAT_CHILD = FLOAT_LIB + r"""
import sys, time
kind, d, k, noise, op = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
float_log_probability([2.0, 1.0, 0.0], (0, 1), 1.0), float_sample([2.0, 1.0, 0.0], 2, 1.0)   # warm-up
counts = float_counts(kind, d)
best = tuple(range(k))
t0 = time.perf_counter()
if op == "P":
    out = float(np.exp(float_log_probability(counts, best, 1.0)))
elif op == "logP":
    out = float_log_probability(counts, best, 1.0)
else:
    out = float_sample(counts, k, 1.0)[:3]
print(f"{time.perf_counter() - t0:.4f} {str(out)[:24]}")
"""


def check_float_reference(tol: float = 1e-11) -> float:
    """Largest relative difference between the float64 log-probability and exactdp's
    certified one (30 digits) over small instances; raises if it exceeds ``tol``."""
    import random

    import exactdp

    ns: dict = {}
    exec(FLOAT_LIB, ns)
    rng = random.Random(7)
    worst = 0.0
    for d, k, eps in [(6, 3, 1), (50, 5, 1), (200, 20, 3), (1000, 10, 0.5)]:
        counts = [rng.randrange(3 * d) for _ in range(d)]
        m = exactdp.Peeling(counts, k, epsilon=eps)
        for _ in range(3):
            seq = tuple(rng.sample(range(d), k))
            exact = float(m.log_probability(seq, dps=30))
            approx = ns["float_log_probability"](counts, seq, float(eps))
            worst = max(worst, abs(approx - exact) / abs(exact))
    if not worst <= tol:
        raise SystemExit(f"float reference disagrees with exactdp: relative difference {worst:.3g} > {tol}")
    return worst


def measure(kind: str, d: int, k: int, noise: str, op: str, dps: int, cap: float, timeout: float,
            child: str = CHILD) -> tuple:
    """(exit status, peak RSS in MiB, seconds or failure text, value) of one instance."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", HELPER, str(cap), child, kind, str(d), str(k), noise, op, str(dps)],
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return ("timeout", "-", f"> {timeout:.0f} s", "")
    rc, peak, rest = proc.stdout.strip().split(" ", 2)
    if rc != "0" or rest.startswith("failed"):
        return (rc, int(peak) // 1024, f"failed (exit {rc}): {rest.removeprefix('failed: ')}", "")
    secs, value = rest.split(" ", 1)
    return (rc, int(peak) // 1024, secs, value)


OPS = {"P": "P(best)", "logP": "log P(best)", "sample": "sample", "levels": "level_probabilities"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[100_000])
    ap.add_argument("--k", type=int, default=200)
    ap.add_argument("--dps", type=int, default=30)
    ap.add_argument("--kinds", nargs="+", default=["distinct", "zipf"])
    ap.add_argument("--noise", nargs="+", default=["gumbel"])
    ap.add_argument("--ops", nargs="+", default=["P", "logP", "sample"])
    ap.add_argument("--cap-gb", type=float, default=4.0, help="address-space limit of each child (0: none)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per instance")
    ap.add_argument("--gaps", action="store_true", help="counts (G, 3, 0), k = 2, G up to 10**400")
    ap.add_argument("--no-float", action="store_true", help="skip the float64 reference")
    args = ap.parse_args()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Peeling, epsilon = 1, {args.dps} digits; Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min); child memory cap {args.cap_gb} GiB")
    if not args.no_float:
        print(f"float64 reference vs exactdp log-probability on small instances: largest relative "
              f"difference {check_float_reference():.1e}")
    print("| counts | d | k | noise | operation | exactdp s | float s | exactdp/float | exactdp peak MiB "
          "| float peak MiB | exactdp value | float value |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    if args.gaps:
        rows = [(g, 3, 2, noise, op) for g in ("2**40", "10**10", "10**100", "10**400")
                for noise in ("gumbel", "exponential") for op in ("P", "logP", "levels", "sample")]
    else:
        rows = [(kind, d, args.k, noise, op) for kind in args.kinds for d in args.d
                for noise in args.noise for op in args.ops]
    for kind, d, k, noise, op in rows:
        rc, peak, secs, value = measure(kind, d, k, noise, op, args.dps, args.cap_gb, args.timeout)
        if args.no_float or noise != "gumbel" or op == "levels":
            fpeak, fsecs, fvalue = "-", "-", "(no float reference)" if not args.no_float else "-"
        else:
            _, fpeak, fsecs, fvalue = measure(kind, d, k, noise, op, args.dps, args.cap_gb, args.timeout,
                                              child=FLOAT_CHILD)
        ratio = "-"
        try:
            r = float(secs) / max(float(fsecs), 1e-4)
            ratio = f"{r:.2g}" if r < 10 else f"{r:,.0f}"
        except ValueError:
            pass
        label = f"({kind}, 3, 0)" if args.gaps else kind
        print(f"| {label} | {d:,} | {k} | {noise} | {OPS[op]} | {secs} | {fsecs} | {ratio} | {peak} | {fpeak} "
              f"| {value} | {fvalue} |", flush=True)


if __name__ == "__main__":
    main()
