"""Every level's certified log-probability at 30 digits for Canonical and JointSet: the
level arrays beside the level objects and a float64 reference, measured in the same run.

    python benchmarks/bench_set_arrays.py                          # d = 10,000, k = 50
    python benchmarks/bench_set_arrays.py --d 166000 --k 50 200 --timeout 900

Each cell is a fresh process (benchmarks/run.py's helper: memory cap, timeout): CPU
seconds (``ru_utime + ru_stime``) and peak resident memory, construction included.
Counts: benchmarks/run.py's shapes ("distinct" ``random.Random(2026).sample(range(10d),
d)``, "heavy" ``floor(10**12 / r**1.1)``, "zipf" ``floor(10**5 / r**1.1)``), epsilon = 1,
Canonical's ``rho = 1/2`` and ``noise="gumbel"``.  Sides:

- ``arrays``: ``iter_level_arrays(dps=30)``, every block read;
- ``objects``: ``iter_level_probabilities(30)`` (``Level`` objects with certified
  probabilities), streamed;
- ``float``: a float64 reference written for this benchmark (no published code has a
  Canonical or JointSet sampler).  Canonical: every class's ``ln C(t-h-2, k-h-1)`` from a
  float64 log-factorial table, the levels by a sort of the loss keys and
  ``numpy.logaddexp.reduceat``, normalised by a log-sum-exp.  JointSet: ``math.log`` of
  the exact levels from the sweep (float64 has no path count of its own), normalised.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def canonical_float(counts: list[int], k: int) -> int:
    """Every level's log-probability of Canonical (rho = 1/2, epsilon = 1) in float64."""
    import numpy as np

    x = np.sort(np.array(counts, dtype=np.int64))[::-1]
    d = len(x)
    logfact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, d + 1, dtype=np.float64)))))
    A = x[:k] - x[k - 1]  # (q - p)(x_(h+1) - x_(k)), q = 2, p = 1
    B = x[k - 1] - x[k:]  # p (x_(k) - x_(t)), t = k+1..d
    h = np.arange(k)[:, None]
    t = np.arange(k + 1, d + 1)[None, :]
    n, j = t - h - 2, k - h - 1
    logsize = (logfact[n] - logfact[j] - logfact[n - j]).ravel()
    keys = (A[:, None] + B[None, :]).ravel()
    order = np.argsort(keys, kind="stable")
    keys, logsize = keys[order], logsize[order]
    firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    logm = np.logaddexp.reduceat(logsize, firsts)
    lk = keys[firsts]
    if lk[0] == 0:
        logm[0] = np.logaddexp(logm[0], 0.0)  # the top-k class
    else:
        logm, lk = np.concatenate(([0.0], logm)), np.concatenate(([0], lk))
    logw = logm - lk / 2.0
    top = logw.max()
    logz = top + np.log(np.exp(logw - top).sum())
    logp = -lk / 2.0 - logz  # one output's log-probability per level
    return len(logp)


def jointset_float(m) -> int:
    import math

    import numpy as np

    from exactdp.mechanisms.joint_set.mechanism import iter_joint_set_levels

    lam = 0.5  # epsilon / (2 sensitivity)
    logs = [math.log(lv.multiplicity) + lam * lv.utility for lv in iter_joint_set_levels(m.ranking, m.k)]
    x = np.array(logs)
    top = x.max()
    logz = top + np.log(np.exp(x - top).sum())
    return len(x - logz)


def child(mech: str, side: str, shape: str, d: int, k: int) -> None:
    from run import make_counts

    import exactdp

    counts = make_counts(shape, d)
    start = cpu()
    if mech == "Canonical" and side == "float":
        n = canonical_float(counts, k)
    else:
        m = getattr(exactdp, mech)(counts, k, epsilon=1)
        if side == "arrays":
            n = sum(len(b) for b in m.iter_level_arrays(dps=30))
        elif side == "objects":
            n = sum(1 for _ in m.iter_level_probabilities(30))
        else:
            n = jointset_float(m)
    print(json.dumps({"cpu": cpu() - start, "levels": n}))


def measure(argv: list[str], cap_gib: float, timeout: float) -> dict:
    from run import HELPER

    cmd = [sys.executable, "-c", HELPER, str(int(cap_gib * 2**30)), str(timeout), sys.executable, __file__, "--child", *argv]
    rep = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
    peak = rep["peak_kib"] / 1024
    if rep["rc"] == "timeout":
        return {"fail": f"> {timeout:g} s", "peak": peak}
    if rep["rc"] != 0 or not rep["out"]:
        last = (rep["err"].strip().splitlines() or [f"exit {rep['rc']}"])[-1]
        return {"fail": f"failed: {last[:40]}", "peak": peak}
    return {**json.loads(rep["out"][0]), "peak": peak}


SIDES = {"Canonical": ("arrays", "objects", "float"), "JointSet": ("arrays", "objects", "float")}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        mech, side, shape, d, k = sys.argv[2:7]
        child(mech, side, shape, int(d), int(k))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--k", type=int, nargs="+", default=[50])
    ap.add_argument("--shapes", nargs="+", default=["heavy", "distinct", "zipf"])
    ap.add_argument("--mechanisms", nargs="+", default=["Canonical", "JointSet"], choices=sorted(SIDES))
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--cap-gib", type=float, default=4.0)
    ap.add_argument("--sides", nargs="+", default=["arrays", "objects", "float"],
                    help="the sides to run (the others are shown as '-')")
    args = ap.parse_args()
    print("| mechanism | counts | d | k | levels | arrays CPU s | objects CPU s | float CPU s | arrays/objects | arrays/float "
          "| peak MiB arrays / objects / float |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mech in args.mechanisms:
        for shape in args.shapes:
            for k in args.k:
                r = {side: measure([mech, side, shape, str(args.d), str(k)], args.cap_gib, args.timeout)
                     if side in args.sides else {"fail": "-", "peak": 0} for side in SIDES[mech]}
                a, o, f = (r[s] for s in SIDES[mech])

                def c(x):
                    return x["fail"] if "fail" in x else f"{x['cpu']:.2f}"

                def p(x):
                    return "-" if x.get("fail") == "-" else f"{x['peak']:,.0f}"

                def q(x, y):
                    return "-" if "fail" in x or "fail" in y else f"{x['cpu'] / y['cpu']:.2f}"

                levels = next((f"{x['levels']:,}" for x in (a, o, f) if "levels" in x), "-")
                print(f"| {mech} | {shape} | {args.d:,} | {k} | {levels} | {c(a)} | {c(o)} | {c(f)} | {q(a, o)} | "
                      f"{q(a, f)} | {' / '.join(p(x) for x in (a, o, f))} |", flush=True)


if __name__ == "__main__":
    main()
