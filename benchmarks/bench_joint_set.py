"""JointSet benchmark: time to compute all level counts with each exact counting method.

Run:  python benchmarks/bench_joint_set.py            (full table, ~5 minutes on 2 cores)
      python benchmarks/bench_joint_set.py --quick    (the DP at d = 10,000 is timed on a
                                                       seeded sample of 300 thresholds and
                                                       extrapolated, marked "~")

Instances: (d, k) in {(1,000, 10), (10,000, 20)};
- "distinct": d distinct counts, a seeded random sample of range(10 * d) (seed 2026);
- "tied": the same counts floor-divided by 50 (about d/5 distinct values, ties everywhere).
Methods (brute force excluded; all exact big integers, results checked equal):
- matrix-paths (M̂): ``levels_matrix_paths`` -- M̂ built once, the rows of A read from it
  by bisection for every candidate threshold, paths by Lemma 7's zero-free blocks with
  Pascal/Toeplitz transfers multiplied as flint integer polynomials;
- matrix-paths (ranking): ``JointSet.levels()`` -- the same path count, the rows of A read
  from the ranking (no M̂ in memory);
- dp: ``levels_dp`` -- the plain dynamic programme over rank positions, O(k d) per
  candidate threshold.
Columns: candidate thresholds (distinct entries of M̂), levels (distinct utilities), digits
of the largest multiplicity, seconds per method.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import exactdp
from exactdp.mechanisms.joint_set import JointSet, _candidate_thresholds, levels_dp, levels_matrix_paths
from exactdp.core.ranking import Ranking


def distinct_counts(d: int) -> list[int]:
    return random.Random(2026).sample(range(10 * d), d)


def tied_counts(d: int) -> list[int]:
    return [c // 50 for c in distinct_counts(d)]


HEADER = ("counts", "d", "k", "thresholds", "levels", "max m digits",
          "matrix-paths (M̂) s", "matrix-paths (ranking) s", "dp s")


def run_one(name, counts, k, dp_sample):
    d = len(counts)
    cands = _candidate_thresholds(Ranking(counts), k)
    t0 = time.perf_counter()
    lv_hat = levels_matrix_paths(counts, k)
    t1 = time.perf_counter()
    lv_rank = list(JointSet(counts, k, epsilon=1).levels())
    t2 = time.perf_counter()
    assert lv_hat == lv_rank
    if dp_sample and dp_sample < len(cands):
        sample = random.Random(1).sample(cands, dp_sample)
        t3 = time.perf_counter()
        levels_dp(counts, k, thresholds=sample)
        dp_time = f"~{(time.perf_counter() - t3) * len(cands) / dp_sample:.0f}"
    else:
        t3 = time.perf_counter()
        lv_dp = levels_dp(counts, k)
        dp_time = f"{time.perf_counter() - t3:.2f}"
        assert lv_dp == lv_hat
    digits = len(str(max(lv.multiplicity for lv in lv_hat)))
    row = (name, f"{d:,}", k, f"{len(cands):,}", f"{len(lv_hat):,}", digits,
           f"{t1 - t0:.2f}", f"{t2 - t1:.2f}", dp_time)
    print("| " + " | ".join(str(x) for x in row) + " |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="time the DP at d = 10,000 on 300 sampled thresholds and extrapolate")
    args = p.parse_args(argv)
    print(f"python {sys.version.split()[0]}, exactdp {exactdp.__version__}")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for d, k in ((1_000, 10), (10_000, 20)):
        for name, make in (("distinct", distinct_counts), ("tied", tied_counts)):
            sample = 300 if args.quick and d >= 10_000 else 0
            run_one(name, make(d), k, sample)


if __name__ == "__main__":
    main()
