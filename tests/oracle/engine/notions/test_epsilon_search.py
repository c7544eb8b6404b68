"""exactdp._oracle.notions.epsilon_search: the least epsilon for a delta per direction, against
the prefix formula computed by brute force from exact probabilities."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest

from exactdp._oracle.cells import pair_cells
from exactdp._oracle.notions.epsilon_search import complete, merge, one_direction


def _brute(p: dict, q: dict, delta: Fraction) -> mpmath.mpf:
    """The least eps >= 0 with sum max(0, P - e^eps Q) <= delta: max(0, max over prefixes T
    of the outputs by decreasing P/Q with P(T) > delta of ln((P(T) - delta) / Q(T))); inf
    when the mass where Q = 0 exceeds delta."""
    if sum(p[o] for o in p if q[o] == 0) > delta:
        return mpmath.inf
    order = sorted((o for o in p if q[o] > 0 and p[o] > 0), key=lambda o: p[o] / q[o], reverse=True)
    best, pt, qt = mpmath.mpf(0), sum(p[o] for o in p if q[o] == 0), Fraction(0)
    with mpmath.workdps(60):
        for o in order:
            pt, qt = pt + p[o], qt + q[o]
            if pt > delta:
                best = max(best, mpmath.log(mpmath.mpf((pt - delta).numerator) / (pt - delta).denominator
                                            * qt.denominator / qt.numerator))
    return best


def _table(rng: random.Random, n: int, zero: bool) -> dict:
    weights = [rng.randint(0 if zero else 1, 9) for _ in range(n)]
    weights[0] = max(weights[0], 1)
    total = sum(weights)
    return {(i,): Fraction(w, total) for i, w in enumerate(weights)}


@pytest.mark.parametrize("seed", range(12))
def test_one_direction_equals_the_prefix_formula(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 5)
    p, q = _table(rng, n, zero=False), _table(rng, n, zero=seed % 3 == 0)
    pair = pair_cells(p, q, 20, 1000)
    for delta in (Fraction(0), Fraction(1, 100), Fraction(1, 7), Fraction(1, 2)):
        outcomes: dict = {}
        merge(outcomes, {"a>b": one_direction(pair, delta, "a>b", 20), "b>a": one_direction(pair, delta, "b>a", 20)})
        assert complete(outcomes), (p, q, delta, outcomes)
        for direction, (x, y) in (("a>b", (p, q)), ("b>a", (q, p))):
            got, want = outcomes[direction][0], _brute(x, y, delta)
            if mpmath.isinf(want) or want == 0:
                assert got == want, (direction, p, q, delta, got, want)
            else:
                assert abs(got - want) <= want * mpmath.mpf(10) ** -19, (direction, p, q, delta, got, want)
