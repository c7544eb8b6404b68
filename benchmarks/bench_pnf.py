"""PNFJoint benchmark: certified probabilities of every level.

Run:  python benchmarks/bench_pnf.py                 (d = 10,000, k = 100, 30 digits)
      python benchmarks/bench_pnf.py --d 2000 --k 50 --dps 50

Instances:
- "zipf": counts floor(10**5 / rank**1.1), rank = 1..d.  Each floor is computed with mpmath
  and then *verified in integers*: c = floor(10**5 / r**1.1) iff c**10 * r**11 <= 10**50 <
  (c+1)**10 * r**11, so no float rounding can change a count.
- "consecutive": counts d, d-1, ..., 1.
Columns: number of levels, decimal digits of the largest multiplicity (beyond ~308 digits
a float64 implementation overflows), seconds for levels(), seconds for all level
probabilities certified to ``dps`` digits (permute-and-flip, fresh table), the certified
sum minus 1, and the largest relative difference from the exponential mechanism (Joint),
which permute-and-flip approaches like 1/S when S = sum_b m_b p_b is huge.
Target: all levels to 30 certified digits in under 5 s on 2 cores.
"""

from __future__ import annotations

import argparse
import platform
import time

import mpmath

import exactdp


def zipf_counts(d: int) -> list[int]:
    out = []
    with mpmath.workdps(40):
        for r in range(1, d + 1):
            c = int(mpmath.floor(mpmath.mpf(10) ** 5 / mpmath.power(r, mpmath.mpf(11) / 10)))
            # certify the floor exactly: c <= 10**5 / r**1.1 < c + 1
            while c**10 * r**11 > 10**50:
                c -= 1
            while (c + 1) ** 10 * r**11 <= 10**50:
                c += 1
            out.append(c)
    return out


def run(d: int, k: int, dps: int) -> None:
    rows = []
    for name, counts in [("zipf", zipf_counts(d)), ("consecutive", list(range(d, 0, -1)))]:
        m = exactdp.PNFJoint(counts, k, epsilon=1)
        t0 = time.perf_counter()
        levels = m.levels()
        t_levels = time.perf_counter() - t0
        t0 = time.perf_counter()
        lp = m.level_probabilities(dps=dps)
        t_probs = time.perf_counter() - t0
        em = exactdp.Joint(counts, k, epsilon=1).level_probabilities(dps=dps)
        with mpmath.workdps(dps + 20):
            total = sum(p for _, p in lp) - 1
            diff = max(abs(a - b) / b for (_, a), (_, b) in zip(lp, em))
        digits = max(len(str(lv.multiplicity)) for lv in levels)
        rows.append((name, d, k, len(levels), digits, t_levels, t_probs, total, diff))
    print(f"PNFJoint, epsilon = 1, {dps} certified digits; Python {platform.python_version()}, "
          f"{platform.machine()}")
    head = ("instance", "d", "k", "levels", "max m digits", "levels() s", "all P(level) s",
            "sum - 1", "max |PNF/EM - 1|")
    print("  ".join(f"{h:>14}" for h in head))
    for name, d_, k_, nl, dig, tl, tp, tot, diff in rows:
        print("  ".join(f"{x:>14}" for x in (name, d_, k_, nl, dig, f"{tl:.3f}", f"{tp:.3f}",
                                              mpmath.nstr(tot, 3), mpmath.nstr(diff, 3))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--dps", type=int, default=30)
    args = ap.parse_args()
    run(args.d, args.k, args.dps)


if __name__ == "__main__":
    main()
