"""How far is the workshop paper's Algorithm 1, as printed, from the exponential mechanism?

Exhaustive over count vectors in {0, ..., MAX}^d (default MAX = 3, d <= 4; ``--d 5`` adds
d = 5, a few minutes), every k, for each reading of Algorithm 1 (exactdp.mechanisms.joint_set.paper.READINGS):

- the smallest counterexample to "Algorithm 1 samples the exponential mechanism"
  (order: d, then largest count, then k, then the counts lexicographically), over all
  count vectors and over vectors with distinct counts (the paper's assumption);
- the largest total variation distance to the exponential mechanism;
- the largest exact privacy loss max_{D', o} |ln P(o|D) - ln P(o|D')| over add/remove
  neighbours D' (any counts >= 0), at eps = 1 and eps = 1/10, with its witness, and the
  number of instances whose loss exceeds eps (an eps-DP violation);
- how often line 4 (as printed, strict reading) has no set of the sampled utility.

Every number is exact or certified (exactdp.mechanisms.joint_set.paper.total_variation / privacy_loss);
printed with 6 significant digits.  Run:  python examples/joint_set_paper_analysis.py
"""

from __future__ import annotations

import argparse
import itertools
import time
from fractions import Fraction

import mpmath

from exactdp.mechanisms.joint_set.paper import (
    READINGS,
    add_remove_neighbours,
    paper_algorithm1_terms,
    reading_terms,
    privacy_loss,
    total_variation,
)


def instances(max_d: int, max_count: int):
    """(counts, k) in the counterexample order: d, largest count, k, counts."""
    for d in range(1, max_d + 1):
        for top in range(0, max_count + 1):
            vecs = [c for c in itertools.product(range(top + 1), repeat=d) if max(c) == top]
            for k in range(1, d + 1):
                for c in vecs:
                    yield c, k


def same_as_em(counts, k, reading) -> bool:
    return total_variation(counts, k, 1, reading=reading, dps=10) == 0


def outputs_a_set(counts, k, reading) -> bool:
    return any(o is not None for o in reading_terms(counts, k, reading))


def fmt(x) -> str:
    return "inf" if x == mpmath.inf else mpmath.nstr(x, 6)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, default=4, help="largest d (default 4)")
    p.add_argument("--max-count", type=int, default=3)
    args = p.parse_args(argv)
    t0 = time.time()
    cases = list(instances(args.d, args.max_count))
    print(f"{len(cases)} instances (counts in {{0..{args.max_count}}}^d, d <= {args.d}, every k)\n")

    print("## Smallest counterexamples (distribution differs from the exponential mechanism)\n")
    print("(\"outputs a set\": the printed algorithm outputs some set with positive probability;")
    print(" the strict reading outputs nothing at all when every set has utility 0)\n")
    for reading in READINGS[1:]:
        first_any = next(((c, k) for c, k in cases if not same_as_em(c, k, reading)), None)
        first_set = next(
            ((c, k) for c, k in cases if outputs_a_set(c, k, reading) and not same_as_em(c, k, reading)), None
        )
        first_distinct = next(
            ((c, k) for c, k in cases
             if len(set(c)) == len(c) and outputs_a_set(c, k, reading) and not same_as_em(c, k, reading)),
            None,
        )
        print(f"- {reading}: any {first_any}; outputs a set: {first_set}; "
              f"outputs a set, distinct counts: {first_distinct}")

    print("\n## Smallest eps-DP violations at eps = 1 (loss > eps)\n")
    one = mpmath.mpf(1)
    for reading in READINGS:
        cache: dict = {}
        first_any = next(
            ((c, k, r.neighbour, r.loss) for c, k in cases
             for r in [privacy_loss(c, k, 1, reading=reading, dps=10, _cache=cache)] if r.loss > one),
            None,
        )
        first_distinct = None
        for c, k in cases:
            if len(set(c)) != len(c):
                continue
            nbs = [n for n in add_remove_neighbours(c) if len(set(n)) == len(n)]
            if not nbs:
                continue
            r = privacy_loss(c, k, 1, reading=reading, neighbours=nbs, dps=10, _cache=cache)
            if r.loss > one:
                first_distinct = (c, k, r.neighbour, r.loss)
                break
        show = lambda w: None if w is None else f"D={w[0]}, k={w[1]}, D'={w[2]}, loss={fmt(w[3])}"
        print(f"- {reading}: any counts: {show(first_any)}; D and D' both distinct: {show(first_distinct)}")

    for eps in (Fraction(1), Fraction(1, 10)):
        eps_mp = mpmath.mpf(eps.numerator) / eps.denominator
        print(f"\n## eps = {eps}\n")
        print("| reading | differs from EM | max TV (witness) | max loss / eps (witness D, k -> D', output) | loss > eps | loss > eps, D distinct |")
        print("|---|---|---|---|---|---|")
        for reading in READINGS:
            cache: dict = {}
            differs = 0
            best_tv, tv_w = mpmath.mpf(0), None
            best_loss, loss_w = mpmath.mpf(-1), None
            over = over_distinct = 0
            for c, k in cases:
                if reading != "em" and eps == 1:
                    tv = total_variation(c, k, eps, reading=reading, dps=10)
                    if tv > 0:
                        differs += 1
                    if tv > best_tv:
                        best_tv, tv_w = tv, (c, k)
                r = privacy_loss(c, k, eps, reading=reading, dps=10, _cache=cache)
                if r.loss > eps_mp:
                    over += 1
                    over_distinct += len(set(c)) == len(c)
                if r.loss > best_loss:
                    best_loss, loss_w = r.loss, (c, k, r.neighbour, sorted(r.output) if r.output is not None else None)
            tv_cell = "-" if reading == "em" or eps != 1 else f"{fmt(best_tv)} {tv_w}"
            diff_cell = "-" if reading == "em" or eps != 1 else f"{differs}"
            print(
                f"| {reading} | {diff_cell} | {tv_cell} | {fmt(best_loss / eps_mp)} {loss_w} | {over} | {over_distinct} |"
            )

    nothing = [(c, k) for c, k in cases if paper_algorithm1_terms(c, k, strict=True) == {None: {0: 1}}]
    no_set = [
        (c, k) for c, k in cases
        if None in paper_algorithm1_terms(c, k, strict=True) and (c, k) not in set(nothing)
    ]
    print(f"\nstrict reading: every weight of line 3 is 0 (all sets have utility 0): {len(nothing)} instances")
    print(f"strict reading, line 4 finds no set of the sampled utility: {len(no_set)} instances; "
          f"first {no_set[:3]}")
    print(f"\n({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
