"""Peeling benchmark: peak memory and time of one probability, log-probability or sample.

Run:  python benchmarks/bench_peeling_memory.py                     (d = 100,000, k = 200)
      python benchmarks/bench_peeling_memory.py --d 20000 --k 50 --noise gumbel exponential
      python benchmarks/bench_peeling_memory.py --gaps                (huge count gaps)

Every instance runs in its own child process (started through a fresh helper process, so
that ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` of the helper is the peak resident
memory of that one child).  ``--cap-gb`` sets the child's address-space limit
(``RLIMIT_AS``), so that a run which would need more memory fails with MemoryError instead
of exhausting the machine; such a run is reported as ``failed``.

Instances:
- "distinct": counts ``d, d-1, ..., 1`` (every item its own level: the worst case for
  per-round level tables);
- "zipf": counts ``floor(10**5 // rank)`` for rank ``1..d`` (many ties in the tail).
Operations: ``P(best)`` = ``probability(range(k))``, ``log P(best)`` =
``log_probability(range(k))`` (both certified to ``--dps`` digits), ``sample`` = one
``sample(rng=1)``.  With ``--gaps``: counts ``(G, 3, 0)``, ``k = 2`` for gaps ``G`` from
``2**40`` to ``10**400``, every noise, the same three operations plus
``level_probabilities()``.
"""

from __future__ import annotations

import argparse
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
print(f"{time.perf_counter() - t0:.3f} {str(out)[:24]}")
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


def measure(kind: str, d: int, k: int, noise: str, op: str, dps: int, cap: float, timeout: float) -> tuple:
    """(exit status, peak RSS in MiB, seconds or failure text, value) of one instance."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", HELPER, str(cap), CHILD, kind, str(d), str(k), noise, op, str(dps)],
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
    args = ap.parse_args()
    print(f"Peeling, epsilon = 1, {args.dps} digits; Python {platform.python_version()}, {platform.machine()}; "
          f"child memory cap {args.cap_gb} GiB")
    print(f"| counts | d | k | noise | operation | seconds | peak MiB | value |")
    print("|---|---|---|---|---|---|---|---|")
    if args.gaps:
        rows = [(g, 3, 2, noise, op) for g in ("2**40", "10**10", "10**100", "10**400")
                for noise in ("gumbel", "exponential") for op in ("P", "logP", "levels", "sample")]
    else:
        rows = [(kind, d, args.k, noise, op) for kind in args.kinds for d in args.d
                for noise in args.noise for op in args.ops]
    for kind, d, k, noise, op in rows:
        rc, peak, secs, value = measure(kind, d, k, noise, op, args.dps, args.cap_gb, args.timeout)
        label = f"({kind}, 3, 0)" if args.gaps else kind
        print(f"| {label} | {d:,} | {k} | {noise} | {OPS[op]} | {secs} | {peak} | {value} |", flush=True)


if __name__ == "__main__":
    main()
