"""The number of Peeling's levels (distinct count sequences), counted without building
them (:func:`exactdp.core.combinatorics.count_words`), against brute force: every sequence
of ``k`` distinct items enumerated and its count sequence collected (ties, k = 1, k = d,
d = 1, zeros, negative counts), exactly and saturated at a cap.  And the refusal of
``levels()`` past ``PEELING_LEVELS_LIMIT``, decided by that count before any level is built.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp import errors
from exactdp._oracle.cells import output_orbit_count
from exactdp.core.combinatorics import count_words
from exactdp.mechanisms.peeling import mechanism as peeling


def brute_level_count(counts, k):
    """Distinct count sequences among all sequences of ``k`` distinct items."""
    return len({tuple(counts[i] for i in s) for s in itertools.permutations(range(len(counts)), k)})


def brute_words(sizes, k):
    """Words of length ``k`` over the letters, letter ``c`` at most ``sizes[c]`` times."""
    return sum(1 for w in itertools.product(range(len(sizes)), repeat=k)
               if all(w.count(c) <= s for c, s in enumerate(sizes)))


VECTORS = [list(v) for d in range(1, 6) for v in itertools.product(range(3), repeat=d)]


def test_level_count_equals_brute_force_exhaustively():
    """Every count vector of length 1..5 over {0, 1, 2} (ties, all equal, zeros, d = 1),
    every k = 1..d (k = 1 and k = d included), exact and at every cap around the count."""
    for counts in VECTORS:
        for k in range(1, len(counts) + 1):
            m = exactdp.Peeling(counts, k)
            expected = brute_level_count(counts, k)
            assert m._level_count() == expected, (counts, k)
            mult = list(Counter(counts).values())
            for cap in range(max(0, expected - 2), expected + 2):
                assert count_words(mult, k, cap=cap) == min(expected, cap + 1), (counts, k, cap)


def test_level_count_equals_the_length_of_the_walk():
    for counts in ([5, 3, 3, 0], [1, 1, 1, 0, 0, 0], [7], [4, -1, 2, 2, 7], [0] * 6 + [3, 2]):
        for k in range(1, len(counts) + 1):
            m = exactdp.Peeling(counts, k)
            assert m._level_count() == len(m.levels()) == sum(1 for _ in m.iter_levels()), (counts, k)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=5), st.data())
def test_count_words_hypothesis(sizes, data):
    k = data.draw(st.integers(0, min(6, sum(sizes) + 1)))
    cap = data.draw(st.none() | st.integers(0, 3000))
    expected = brute_words(sizes, k)
    assert count_words(sizes, k, cap=cap) == (expected if cap is None else min(expected, cap + 1))
    assert output_orbit_count(sizes, k, cap=cap) == count_words(sizes, k, cap=cap)


def test_saturation_at_the_papers_size():
    """d = 166,000 with most counts 0: more than 10**6 count sequences at k = 200, decided
    without counting them; small exact counts at k = d."""
    assert count_words([165_940] + [1] * 60, 200, cap=10**6) == 10**6 + 1
    assert count_words([1] * 166_000, 200, cap=10**6) == 10**6 + 1
    assert count_words([165_999, 1], 166_000, cap=10**6) == 166_000  # where the one item goes
    assert count_words([166_000], 166_000, cap=10**6) == 1
    assert count_words([3, 3], 6) == 20 and count_words([3, 3], 7) == 0


def test_levels_are_refused_before_any_is_built(monkeypatch):
    """Regression: many zeros (60 distinct counts, the rest 0; k = 200) walked and built a
    million 200-tuples (minutes, gigabytes) before refusing; the count refuses at once."""
    walked = []
    monkeypatch.setattr(peeling.Peeling, "_count_sequences", lambda self: walked.append(1) or iter(()))
    counts = [1000 - 3 * i for i in range(60)] + [0] * 2000
    m = exactdp.Peeling(counts, 200)
    with pytest.raises(errors.TooManyOutputsError,
                       match=r"PEELING_LEVELS_LIMIT = 1000000 .*raise exactdp\.mechanisms\.peeling\.mechanism\.PEELING_LEVELS_LIMIT"):
        m.levels()
    assert walked == []


def test_the_limit_is_exact(monkeypatch):
    """Exactly ``PEELING_LEVELS_LIMIT`` levels are built; one more is refused."""
    counts = [5, 4, 4, 2, 1, 0]
    n = brute_level_count(counts, 3)
    monkeypatch.setattr(peeling, "PEELING_LEVELS_LIMIT", n - 1)
    with pytest.raises(errors.TooManyOutputsError, match=f"PEELING_LEVELS_LIMIT = {n - 1} "):
        exactdp.Peeling(counts, 3).levels()
    monkeypatch.setattr(peeling, "PEELING_LEVELS_LIMIT", n)
    assert len(exactdp.Peeling(counts, 3).levels()) == n
