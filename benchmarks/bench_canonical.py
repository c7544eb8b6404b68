"""Canonical benchmark: every class probability, certified to 30 digits, at d = 10,000, k = 50.

Run:  python benchmarks/bench_canonical.py           (zipf and distinct counts, both noises)
      python benchmarks/bench_canonical.py --quick   (zipf only)

Instances: d = 10,000, k = 50, epsilon = 1, rho = 1/2, so 1 + k(d-k) = 497,501
utility classes;
- "zipf": counts floor(10**5 / rank**1.1), rank = 1..d (as benchmarks/bench_joint.py: long
  runs of tied small counts, so few distinct losses);
- "distinct": d distinct counts, a seeded random sample of range(10 * d) (seed 2026).
Columns: number of levels (distinct losses), seconds for ``levels()``, seconds for
``class_probabilities(dps=30)`` (all classes, each certified to relative error 1e-30,
including the levels' certified probabilities), the certified sum minus 1 (a check), and
peak RSS of the process so far.  Each row uses a fresh mechanism (no warm caches).
The "gamma1" row is CanonicalGamma1 (no utility levels): its "classes s" column times
``group_output_probabilities(dps=30)``, one certified output probability per class.
Target: under 5 s per row on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time

import mpmath

import exactdp


def zipf_counts(d: int) -> list[int]:
    out = []
    with mpmath.workdps(60):
        for rank in range(1, d + 1):
            out.append(int(mpmath.floor(mpmath.mpf(10) ** 5 / mpmath.power(rank, mpmath.mpf("1.1")))))
    return out


def distinct_counts(d: int) -> list[int]:
    return random.Random(2026).sample(range(10 * d), d)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(instances, d: int, k: int) -> None:
    header = f"{'counts':>9} {'noise':>12} {'classes':>8} {'levels':>7} {'levels s':>9} {'classes s':>10} {'|sum-1|':>9} {'peak MiB':>9}"
    print(header)
    print("-" * len(header))
    for name in instances:
        counts = zipf_counts(d) if name == "zipf" else distinct_counts(d)
        for noise in ("gumbel", "exponential"):
            m = exactdp.Canonical(counts, k, epsilon=1, noise=noise)
            t0 = time.perf_counter()
            levels = m.levels()
            t1 = time.perf_counter()
            probs = m.class_probabilities(dps=30)
            t2 = time.perf_counter()
            with mpmath.workdps(40):
                err = abs(mpmath.fsum(p for _, _, p in probs) - 1)
            print(
                f"{name:>9} {noise:>12} {len(probs):>8} {len(levels):>7} {t1 - t0:>9.2f} "
                f"{t2 - t1:>10.2f} {mpmath.nstr(err, 2):>9} {peak_mib():>9.0f}",
                flush=True,
            )
        # CanonicalGamma1 (no utility levels): every class's one-output probability, as the
        # audits and the CLI read them (group_output_probabilities), then the class sum check
        g = exactdp.CanonicalGamma1(counts, k, epsilon=1)
        t1 = time.perf_counter()
        pairs = g.group_output_probabilities(dps=30)
        t2 = time.perf_counter()
        with mpmath.workdps(40):
            err = abs(mpmath.fsum(p for _, _, p in g.class_probabilities(dps=30)) - 1)
        print(f"{name:>9} {'gamma1':>12} {len(pairs):>8} {'-':>7} {'-':>9} {t2 - t1:>10.2f} "
              f"{mpmath.nstr(err, 2):>9} {peak_mib():>9.0f}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="zipf counts only")
    parser.add_argument("-d", type=int, default=10_000)
    parser.add_argument("-k", type=int, default=50)
    args = parser.parse_args(argv)
    run(["zipf"] if args.quick else ["zipf", "distinct"], args.d, args.k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
