"""worst_case over a third-party law that breaks ties by position (not symmetric in tied
items), for every notion and both relations, against plain enumeration of the neighbours.

References: tests/twins/worst.py (every neighbour from the change vectors, the notion of
each pair from exact Fractions) on the same law; the law is written here, as another
library would: item ``i`` weighs ``2**c_i * (i + 1)``, so tied items are not alike.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest

from exactdp import audit

from twins.worst import neighbours_brute, worst_case_brute

NOTIONS = {"pure": ({"epsilon": 1}, {}),
           "approx": ({"epsilon": Fraction(1, 3), "delta": Fraction(1, 10)}, {"epsilon": Fraction(1, 3)}),
           "renyi": ({"alpha": 2, "epsilon": 1}, {"alpha": 2}),
           "zcdp": ({"rho": Fraction(1, 2)}, {})}


def positional(counts: tuple[int, ...]) -> dict[tuple[int, ...], Fraction]:
    """Top-1: item ``i`` with probability proportional to ``2**c_i * (i + 1)``."""
    weights = {(i,): Fraction(2) ** c * (i + 1) for i, c in enumerate(counts)}
    total = sum(weights.values())
    return {o: w / total for o, w in weights.items()}


def positional_pairs(counts: tuple[int, ...]) -> dict[tuple[int, ...], Fraction]:
    """Top-2 by drawing twice without replacement from :func:`positional`."""
    one = positional(counts)
    return {(i, j): one[(i,)] * one[(j,)] / (1 - one[(i,)]) for i, j in itertools.permutations(range(len(counts)), 2)}


@pytest.mark.slow
@pytest.mark.parametrize("law", [positional, positional_pairs])
@pytest.mark.parametrize("counts", [(1, 1), (2, 1, 1), (0, 0, 0)])
@pytest.mark.parametrize("relation", ["add_remove", "swap"])
@pytest.mark.parametrize("notion", list(NOTIONS))
def test_every_neighbour_of_a_positional_law(law, counts, relation, notion):
    kwargs, twin_kwargs = NOTIONS[notion]
    w = audit.worst_case(law, counts, relation, notion=notion, dps=20 if notion != "zcdp" else 6, **kwargs)
    want, values = worst_case_brute(law, counts, relation, notion, **twin_kwargs)
    assert len(w.results) == len(neighbours_brute(counts, relation)) == w.neighbours_total
    with mpmath.workdps(50):
        if notion == "zcdp":  # the twin's estimate is a sampled sup: inside the bracket
            assert w.lower <= want * (1 + mpmath.mpf(10) ** -15) and want <= w.upper * (1 + mpmath.mpf(10) ** -15)
        else:
            assert abs(w.value - want) <= abs(want) * mpmath.mpf(10) ** -18
            assert abs(values[w.neighbour] - want) <= abs(want) * mpmath.mpf(10) ** -18  # the witness neighbour


def test_trusting_symmetry_misses_the_worst_neighbour():
    """Negative control: symmetric=True audits one neighbour per class of tied items, which
    is wrong for this law (item 1 weighs twice item 0 at equal counts): the swap neighbour
    (0, 2) of (1, 1) has loss ln 3, the classes' representative only ln 2."""
    full = audit.worst_case(positional, (1, 1), "swap", epsilon=1, dps=20)
    trusted = audit.worst_case(positional, (1, 1), "swap", epsilon=1, dps=20, symmetric=True)
    with mpmath.workdps(40):
        assert abs(full.value - mpmath.log(3)) < mpmath.mpf(10) ** -19
        assert abs(trusted.value - mpmath.log(2)) < mpmath.mpf(10) ** -19
