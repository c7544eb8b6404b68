"""Draws the sampler test needs when a level is rare, and what finding them costs.

Run:  python benchmarks/bench_certify_tail.py

For each mechanism: ``certify.samples_needed(m)`` (power 0.99 against the least favourable
deviation of total variation 0.05 at alpha = 1e-6) and its seconds, the rare tail of the
test at that ``n`` (levels expecting fewer than 5 draws that no other rare level could be
pooled with; tested by the exact binomial test), and the verdict of ``n`` exact draws
(seeded; not drawn past 10^6).  Only public names are used, so the same script runs on older versions of
exactdp (there the "rare tail" column reads "-").
"""

from __future__ import annotations

import time

import exactdp
from exactdp import certify


def _cases() -> list[tuple[str, object]]:
    return [
        ("Joint([5,5,4,4], k=1, eps=4)", exactdp.Joint([5, 5, 4, 4], 1, epsilon=4)),
        ("Joint([5,5,4,4,0], k=1, eps=4)", exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)),
        ("Joint([5,5,4,4,-3], k=1, eps=4)", exactdp.Joint([5, 5, 4, 4, -3], 1, epsilon=4)),
        ("Joint([4,3,3,1,0], k=2, eps=1)", exactdp.Joint([4, 3, 3, 1, 0], 2, epsilon=1)),
        ("Joint([10,5,1,1], k=2, eps=2)", exactdp.Joint([10, 5, 1, 1], 2, epsilon=2)),
        ("Joint(0..11, k=3, eps=0.5)", exactdp.Joint(list(range(12)), 3, epsilon=0.5)),
    ]


def main() -> None:
    print("| mechanism | samples_needed | seconds | rare tail at that n | verdict of n exact draws |")
    print("|---|---|---|---|---|")
    for name, m in _cases():
        t = time.perf_counter()
        n = certify.samples_needed(m)
        elapsed = time.perf_counter() - t
        plan = certify.sensitivity(m, n).plan
        levels = getattr(plan, "tail_levels", None)
        tail = "-" if levels is None else (
            f"{levels} level(s), {n * plan.tail_probability:.3g} draws expected" if levels else "none")
        verdict = certify.goodness_of_fit(m.samples(n, rng=1), m).verdict if n <= 10**6 else "not drawn (n > 10^6)"
        print(f"| {name} | {n:,} | {elapsed:.2f} | {tail} | {verdict} |")


if __name__ == "__main__":
    main()
