"""JointSet benchmark: all level counts by the sweep of ``levels()``, beside the paper's
per-threshold recount and the plain dynamic programme, each in its own child process.

Run:  python benchmarks/bench_joint_set.py            (the table of docs/joint_set.md, ~6 minutes)
      python benchmarks/bench_joint_set.py --quick    (d <= 10,000, k <= 20 only)
      python benchmarks/bench_joint_set.py --full-dp  (the DP on every threshold, hours at d = 10,000)

Counts (rank r = 1..d): "distinct" ``random.Random(2026).sample(range(10*d), d)``; "tied"
the same floor-divided by 50 (about d/5 distinct values); "zipf" ``floor(10**5 / r**1.1)``;
"heavy" ``floor(10**12 / r**1.1)`` (heavy-tailed, distinct at the top), the shapes of
``benchmarks/run.py``.

Methods (all exact big integers; the levels of the three are checked equal):

- sweep: ``iter_joint_set_levels`` (what ``JointSet.levels()`` and ``iter_levels()`` run):
  the event heap gives the thresholds where a row of ones grows, and Lemma 7's path count
  is updated where the staircase changed (``exactdp.mechanisms.joint_set.sweep``);
- recount: ``levels_matrix_paths``, the paper's method as stated: M̂ built once, and at
  every candidate threshold the rows of A read by bisection and all paths recounted by
  Lemma 7's zero-free blocks (the previous ``levels()``);
- dp: ``levels_dp``, the plain dynamic programme, O(k d) per threshold; at d >= 10,000 it
  is timed on a seeded sample of 300 thresholds and extrapolated (marked "~") unless
  ``--full-dp``.

No float64 reference exists for JointSet's level counts (the published code has no set
mechanism), so the ratio is against the paper's exact recount, measured in the same run.
Columns: candidate thresholds (distinct entries of M̂), levels, digits of the largest
multiplicity, CPU seconds of each method (``ru_utime + ru_stime`` of its child), the
ratio recount/sweep, and each child's peak resident memory in MiB (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import make_counts as shared_counts  # noqa: E402  (the shared count shapes)


def make_counts(shape: str, d: int) -> list[int]:
    if shape == "tied":
        return [c // 50 for c in shared_counts("distinct", d)]
    return shared_counts(shape, d)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(method: str, shape: str, d: int, k: int, sample: int) -> None:
    sys.path.insert(0, str(ROOT))
    from exactdp.core.ranking import Ranking
    from exactdp.mechanisms.joint_set.mechanism import candidate_thresholds, iter_joint_set_levels, levels_dp, levels_matrix_paths

    counts = make_counts(shape, d)
    out: dict = {}
    if method == "sweep":
        t = cpu()
        levels = list(iter_joint_set_levels(Ranking(counts), k))
        out["cpu"] = cpu() - t
        out["levels"] = len(levels)
        out["digits"] = len(str(max(lv.multiplicity for lv in levels)))
        out["key"] = hash(tuple(levels))
        out["thresholds"] = len(candidate_thresholds(Ranking(counts), k))
    elif method == "recount":
        t = cpu()
        levels = levels_matrix_paths(counts, k)
        out["cpu"] = cpu() - t
        out["key"] = hash(tuple(levels))
    else:
        cands = candidate_thresholds(Ranking(counts), k)
        if sample and sample < len(cands):
            chosen = random.Random(1).sample(cands, sample)
            t = cpu()
            levels_dp(counts, k, thresholds=chosen)
            out["cpu"] = (cpu() - t) * len(cands) / sample
            out["estimated"] = True
        else:
            t = cpu()
            levels = levels_dp(counts, k)
            out["cpu"] = cpu() - t
            out["key"] = hash(tuple(levels))
    out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def spawn(*args: object) -> dict:
    res = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


HEADER = ("counts", "d", "k", "thresholds", "levels", "max m digits", "sweep s", "recount s",
          "recount/sweep", "dp s", "peak MiB sweep / recount")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="d <= 10,000 and k <= 20 only")
    p.add_argument("--full-dp", action="store_true", help="run the DP on every threshold")
    p.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        method, shape, d, k, sample = args.child
        child(method, shape, int(d), int(k), int(sample))
        return
    sys.path.insert(0, str(ROOT))
    import exactdp

    print(f"python {sys.version.split()[0]}, exactdp {exactdp.__version__}")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    rows = [(1_000, 10, "distinct"), (1_000, 10, "tied"), (10_000, 20, "distinct"), (10_000, 20, "tied")]
    if not args.quick:
        rows += [(10_000, 50, shape) for shape in ("zipf", "distinct", "heavy")]
    for d, k, shape in rows:
        sample = 0 if args.full_dp or d < 10_000 else 300
        sweep = spawn("sweep", shape, d, k, 0)
        recount = spawn("recount", shape, d, k, 0)
        dp = spawn("dp", shape, d, k, sample)
        if recount["key"] != sweep["key"] or ("key" in dp and dp["key"] != sweep["key"]):
            raise SystemExit(f"{shape} d={d} k={k}: the methods' levels differ")
        dp_s = f"~{dp['cpu']:.0f}" if dp.get("estimated") else f"{dp['cpu']:.2f}"
        row = (shape, f"{d:,}", k, f"{sweep['thresholds']:,}", f"{sweep['levels']:,}", sweep["digits"],
               f"{sweep['cpu']:.2f}", f"{recount['cpu']:.2f}", f"{recount['cpu'] / sweep['cpu']:.1f}x", dp_s,
               f"{sweep['maxrss_mib']:.0f} / {recount['maxrss_mib']:.0f}")
        print("| " + " | ".join(str(x) for x in row) + " |", flush=True)


if __name__ == "__main__":
    main()
