"""exactdp.core.combinatorics against itertools.combinations put in colex order."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, strategies as st

from exactdp.core.combinatorics import rank_combination, unrank_combination


def colex(n: int, m: int) -> list[list[int]]:
    return sorted((list(c) for c in combinations(range(n), m)), key=lambda c: c[::-1])


@pytest.mark.parametrize("n", range(0, 8))
def test_exhaustive_small(n):
    for m in range(0, n + 1):
        for r, subset in enumerate(colex(n, m)):
            assert unrank_combination(r, n, m) == subset
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
