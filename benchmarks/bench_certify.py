"""The sampler test's verdict beside a float chi-square test of the same draws.

Run:  python benchmarks/bench_certify.py            (four mechanisms, 20,000 draws each)
      python benchmarks/bench_certify.py --n 50000

For each mechanism the draws are made once (not timed); then, interleaved (float, exactdp,
float, exactdp: the faster of two rounds is reported, so load from other processes on the
machine hits both alike):

- float64 reference: ``scipy.stats.chisquare`` over every output, its expected counts from
  float probabilities (``distribution(dps=17)`` converted once, outside the timing) — a
  p-value and nothing else;
- exactdp: ``certify.goodness_of_fit(draws, m)`` and its ``verdict_line()`` (the exact
  level probabilities certified to 30 digits, the bins, both stages, the power at the least
  favourable alternative, the deviation invisible to the bins and the ``n`` needed).

The table gives seconds, the ratio exactdp/float and the peak of Python allocations of each
(``tracemalloc``).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections import Counter
from typing import Callable

import numpy as np
from scipy import stats

import exactdp
from exactdp import certify


def _measure(fn: Callable[[], object]) -> tuple[float, float, object]:
    tracemalloc.start()
    t = time.perf_counter()
    value = fn()
    elapsed = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak / 2**20, value


def _cases() -> list[tuple[str, object]]:
    return [
        ("Joint([4,3,3,1,0], k=2)", exactdp.Joint([4, 3, 3, 1, 0], 2, epsilon=1)),
        ("Joint(0..11, k=3)", exactdp.Joint(list(range(12)), 3, epsilon=0.5)),
        ("JointSet([5]+[0]*29, k=2)", exactdp.JointSet([5] + [0] * 29, 2, epsilon=1)),
        ("Peeling(0..9, k=3)", exactdp.Peeling(list(range(10)), 3, epsilon=1)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    print(f"n = {args.n:,} draws per mechanism; seconds are the faster of two interleaved rounds\n")
    print("| mechanism | outputs | verdict | float s | exactdp s | exactdp/float | peak MiB float / exactdp |")
    print("|---|---|---|---|---|---|---|")
    for name, m in _cases():
        draws = m.samples(args.n, rng=1)
        dist = [(o, float(p)) for o, p in m.distribution(dps=17)]
        keys = [o for o, _ in dist]
        probs = np.array([p for _, p in dist])

        def reference() -> float:
            tally = Counter(draws)
            observed = np.array([tally[o] for o in keys], dtype=float)
            return float(stats.chisquare(observed, probs / probs.sum() * len(draws)).pvalue)

        def exact() -> str:
            fit = certify.goodness_of_fit(draws, m)
            fit.verdict_line()
            return fit.verdict

        best_f = best_e = float("inf")
        peak_f = peak_e = 0.0
        verdict = ""
        for _ in range(2):
            t, peak_f, _p = _measure(reference)
            best_f = min(best_f, t)
            t, peak_e, verdict = _measure(exact)
            best_e = min(best_e, t)
        print(f"| {name} | {len(keys):,} | {verdict} | {best_f:.4f} | {best_e:.3f} | {best_e / best_f:.0f}x | "
              f"{peak_f:.1f} / {peak_e:.1f} |")


if __name__ == "__main__":
    main()
