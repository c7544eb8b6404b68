"""exactdp.core.combinatorics against itertools.combinations put in colex order; the
galloping unrank (a floating-point guess, exact steps) against the plain bisection."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, strategies as st

import math
import random

from exactdp.core.combinatorics import rank_combination, unrank_combination

from twins.combinatorics import unrank_combination_bisect


def colex(n: int, m: int) -> list[list[int]]:
    return sorted((list(c) for c in combinations(range(n), m)), key=lambda c: c[::-1])


@pytest.mark.parametrize("n", range(0, 8))
def test_exhaustive_small(n):
    for m in range(0, n + 1):
        for r, subset in enumerate(colex(n, m)):
            assert unrank_combination(r, n, m) == subset == unrank_combination_bisect(r, n, m)
            assert rank_combination(subset) == r


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))).flatmap(
    lambda nm: st.tuples(st.just(nm[0]), st.just(nm[1]), st.integers(0, __import__("math").comb(*nm) - 1))))
def test_random_round_trip(nmr):
    n, m, r = nmr
    subset = unrank_combination(r, n, m)
    assert subset == sorted(set(subset)) and len(subset) == m and all(0 <= x < n for x in subset)
    assert rank_combination(subset) == r


def test_out_of_range_rank_fails_loudly():
    with pytest.raises(AssertionError):
        unrank_combination(10, 5, 2)  # C(5, 2) = 10 subsets: ranks 0..9


@pytest.mark.slow
@given(st.sampled_from([1, 7, 60, 2_000, 166_000, 10**9]).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, min(n, 300)))).flatmap(
    lambda nm: st.tuples(st.just(nm[0]), st.just(nm[1]),
                         st.integers(0, math.comb(*nm) - 1) | st.sampled_from([0, math.comb(*nm) - 1]))))
def test_galloping_equals_bisection(nmr):
    """Large and small n, dense (m near n) and sparse subsets, the first and last ranks: the
    guess only chooses where the exact comparisons look."""
    n, m, r = nmr
    subset = unrank_combination(r, n, m)
    assert subset == unrank_combination_bisect(r, n, m)
    assert all(type(x) is int for x in subset) and rank_combination(subset) == r


def test_galloping_at_the_papers_size():
    """d = 166,000 with 60 distinct counts: the zeros' subsets of Canonical's draws."""
    rng = random.Random(5)
    for n, m in [(165_940, 140), (166_000, 200), (400, 200), (201, 200)]:
        for r in [0, 1, math.comb(n, m) - 1] + [rng.randrange(math.comb(n, m)) for _ in range(20)]:
            assert unrank_combination(r, n, m) == unrank_combination_bisect(r, n, m)
