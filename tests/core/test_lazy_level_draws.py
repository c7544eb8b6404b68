"""Batched level draws and level look-ups on a lazy level table, reading only the blocks they need.

- ``cdf_bounds`` iterates the running sums without counting the levels and stops at the
  first lower bound of ``2**64 - 1``: on a lazy table (JointSet on heavy-tailed counts, four
  levels a block) it leaves most blocks unfound, and its shorter arrays decide every word
  as the arrays of the same levels held in memory do (random words and words beside every
  bound).
- ``word_bounds`` (lists, stopping) and ``inverse_cdf_word`` (one word) agree with
  ``cdf_bounds_exact`` and ``inverse_cdf_words``.
- ``ExponentialMechanism.sample_levels`` on a lazy table draws what it draws on an eager
  table of the same levels from the same seed, and finds no block past the ones its words
  reach.
- ``known_index`` names a level only when the blocks found hold it (no block is found to
  answer), and ``level_at`` gives the level of any utility from the stream without finding
  the blocks above it (KeyError for a utility no output has).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.core import level_stream
from exactdp.core.levels import LevelTable
from exactdp.core.precision import flint_workprec
from exactdp.core.sampling import (
    cdf_bounds,
    cdf_bounds_exact,
    initial_prec,
    inverse_cdf_word,
    inverse_cdf_words,
    random_words,
    word_bounds,
)

TOP = 1 << 64
COUNTS = [10**12 // r**2 for r in range(1, 41)]  # heavy-tailed: the level law decays fast


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(level_stream, "STREAM_BLOCK_LEVELS", 4)


def _lazy(k=3):
    m = exactdp.JointSet(COUNTS, k, epsilon=1)
    return m, m.table


def _eager(k=3):
    m = exactdp.JointSet(COUNTS, k, epsilon=1)
    return LevelTable(tuple(m.iter_levels()), m.scale)


def _words_beside(lo, hi):
    return sorted({w + e for w in list(lo) + list(hi) for e in (-1, 0, 1) if 0 <= w + e < TOP})


def test_cdf_bounds_on_a_lazy_table_read_a_few_blocks(small_blocks):
    m, table = _lazy()
    with flint_workprec(table.sampling_prec):
        lo, hi = cdf_bounds(table.cumulative())
    assert table.known_length() is None  # the levels were never counted
    eager = _eager()
    assert len(lo) < len(eager) - 1 and lo[-1] == TOP - 1
    with flint_workprec(initial_prec(len(eager))):
        full_lo, full_hi = cdf_bounds(eager.cumulative())
    assert len(full_lo) <= len(eager) - 1
    words = np.array(_words_beside(lo.tolist(), hi.tolist()) + [random.Random(3).getrandbits(64) for _ in range(2000)],
                     dtype=np.uint64)
    a, undecided_a = inverse_cdf_words(lo, hi, words)
    b, undecided_b = inverse_cdf_words(full_lo, full_hi, words)
    both = ~undecided_a & ~undecided_b
    assert both.sum() > 2000 and (a[both] == b[both]).all()


def test_cdf_bounds_of_every_level_drop_the_last_sum():
    """All running sums read (no early stop): the last one is the total, not a boundary."""
    table = _eager(2)
    with flint_workprec(300):
        lo, hi = cdf_bounds(table.cumulative())
    assert len(lo) == len(hi) <= len(table) - 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 2**70), min_size=2, max_size=12), st.lists(st.integers(0, TOP - 1), max_size=30))
def test_word_bounds_and_one_word_match_the_arrays(weights, extra):
    if sum(weights) == 0:
        weights[-1] = 1
    ends = [sum(weights[:i + 1]) for i in range(len(weights))]
    lo, hi = cdf_bounds_exact(ends)
    short_lo, short_hi = word_bounds(iter(ends), ends[-1])  # stops at the first 2**64 - 1
    common = min(len(short_lo), len(lo))  # the total itself may end the short lists (at 2**64 - 1)
    assert short_lo[:common] == lo.tolist()[:common] and short_hi[:common] == hi.tolist()[:common]
    assert short_lo[-1] == TOP - 1 and TOP - 1 not in short_lo[:-1]
    words = _words_beside(lo.tolist(), hi.tolist()) + extra + [0, TOP - 1]
    index, undecided = inverse_cdf_words(lo, hi, np.array(words, dtype=np.uint64))
    for u, a, und in zip(words, index.tolist(), undecided.tolist()):
        assert inverse_cdf_word(lo.tolist(), hi.tolist(), u) == (None if und else a)
        assert inverse_cdf_word(short_lo, short_hi, u) == (None if und else a)


def test_sample_levels_on_a_lazy_table_equal_the_eager_draws(small_blocks):
    m, table = _lazy()
    rule = m.rule
    lazy = rule.sample_levels(table, random.Random(8), 5000)
    assert table.known_length() is None
    eager = rule.sample_levels(_eager(), random.Random(8), 5000)
    assert lazy == eager and max(lazy) < table._starts[-1] + table._sizes[-1]  # within the blocks found


def test_known_index_finds_no_block_and_level_at_reads_the_stream(small_blocks):
    m, table = _lazy()
    levels = _eager().levels
    m.probability(frozenset({0, 1, 2}))  # the first blocks, as `exactdp prob` finds them
    found = len(table._sizes)  # the blocks found so far
    assert table.known_index(levels[0].utility) == 0
    deep = levels[-1]
    assert table.known_index(deep.utility) is None
    assert table.level_at(deep.utility) == deep
    assert table.level_at(levels[5].utility) == levels[5]
    assert len(table._sizes) == found and table.known_length() is None  # nothing found to answer
    utilities = {lv.utility for lv in levels}
    with pytest.raises(KeyError):
        table.level_at(next(u for u in range(deep.utility + 1, 0) if u not in utilities))
    eager = _eager()
    assert eager.known_index(deep.utility) == len(levels) - 1 and eager.level_at(deep.utility) == deep
