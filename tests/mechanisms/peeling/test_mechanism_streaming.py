"""Peeling's streamed levels (``iter_levels`` / ``iter_level_probabilities``) against the
lists and against plain enumeration of every item sequence.

The twin groups every sequence of distinct items by its count sequence; it never calls
the depth-first walk under test.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import errors
from exactdp.core.levels import Level
from exactdp.mechanisms.peeling import mechanism as peeling


def brute_count_sequences(counts, k):
    """Every count sequence with the number of item sequences having it, best first."""
    tally = Counter(tuple(counts[i] for i in s) for s in itertools.permutations(range(len(counts)), k))
    return [Level(u, m) for u, m in sorted(tally.items(), reverse=True)]


VECTORS = [list(v) for d in range(1, 5) for v in itertools.product(range(3), repeat=d)]


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_streamed_levels_and_probabilities_equal_lists_and_enumeration(noise):
    for counts in VECTORS:
        for k in range(1, len(counts) + 1):
            fresh = exactdp.Peeling(counts, k, base=Fraction(1, 2), noise=noise)
            streamed = list(fresh.iter_levels())
            assert fresh._table is None  # streamed without building the level table
            assert streamed == brute_count_sequences(counts, k), (counts, k)
            pairs = list(exactdp.Peeling(counts, k, base=Fraction(1, 2), noise=noise).iter_level_probabilities(20))
            listed = exactdp.Peeling(counts, k, base=Fraction(1, 2), noise=noise).level_probabilities(20)
            assert pairs == listed, (counts, k)


def test_streams_past_the_levels_limit(monkeypatch):
    monkeypatch.setattr(peeling, "PEELING_LEVELS_LIMIT", 10)
    counts = [5, 4, 4, 2, 1, 0]
    m = exactdp.Peeling(counts, 3, base=Fraction(1, 3))
    with pytest.raises(errors.TooManyOutputsError, match=r"PEELING_LEVELS_LIMIT = 10 .*iter_levels\(\)"):
        m.levels()
    expected = brute_count_sequences(counts, 3)
    assert len(expected) > 10
    assert list(m.iter_levels()) == expected
    pairs = list(m.iter_level_probabilities(25))
    assert [lv for lv, _ in pairs] == expected
    # each level's probability is one output's exact probability times the multiplicity
    total = Fraction(0)
    for lv, p in pairs:
        seq = next(s for s in itertools.permutations(range(6), 3) if tuple(counts[i] for i in s) == lv.utility)
        exact = Fraction(str(m.probability_exact(seq))) * lv.multiplicity
        total += exact
        man, exp = p.man_exp  # the mpf's exact binary value
        assert abs(man * Fraction(2) ** exp - exact) <= Fraction(1, 10**25) * exact
    assert total == 1


def test_a_huge_level_set_streams_lazily():
    m = exactdp.Peeling(list(range(2000)), 60, epsilon=1)  # 2000!/1940! count sequences
    first = list(itertools.islice(m.iter_levels(), 3))
    assert first[0] == Level(tuple(range(1999, 1939, -1)), 1)
    assert first[1].utility[:-1] == first[0].utility[:-1] and first[1].utility[-1] == 1939
    assert m._table is None
    (lv, p), = itertools.islice(m.iter_level_probabilities(30), 1)
    assert lv == first[0] and p == m.probability(tuple(range(1999, 1939, -1)), dps=30)


def test_dps_is_checked_before_the_first_level():
    with pytest.raises(errors.ExactDPError):
        exactdp.Peeling([3, 1, 0], 2).iter_level_probabilities(dps=0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=5), st.data())
def test_streamed_levels_hypothesis(counts, data):
    k = data.draw(st.integers(1, len(counts)))
    noise = data.draw(st.sampled_from(["gumbel", "exponential"]))
    m = exactdp.Peeling(counts, k, epsilon=Fraction(1, 2), noise=noise)
    assert list(m.iter_levels()) == brute_count_sequences(counts, k)
    assert list(m.iter_level_probabilities(15)) == exactdp.Peeling(counts, k, epsilon=Fraction(1, 2), noise=noise).level_probabilities(15)
