"""Tests of exactdp.core.ranking: the numpy route of Ranking (from _NUMPY_FROM items on,
counts within int64) against the Python route it replaces there, attribute by attribute and
type by type (ties, negative counts, one count, counts near 2**62 where the keyed sort
gives way to argsort, counts past int64 where numpy is not used), and as_counts' fast
paths (lists and tuples of Python ints, numpy integer arrays) against its per-item
conversion."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp.core.ranking as ranking
from exactdp.core.ranking import Ranking
from exactdp.core.validation import as_counts
from exactdp.errors import ArgumentTypeError

ATTRIBUTES = ("counts", "d", "order", "rank_of", "sorted_counts", "values", "cumulative", "_neg")


def python_route(counts, monkeypatch):
    monkeypatch.setattr(ranking, "_NUMPY_FROM", 10**18)
    out = Ranking(counts)
    monkeypatch.undo()
    return out


def assert_same(a, b):
    for name in ATTRIBUTES:
        x, y = getattr(a, name), getattr(b, name)
        assert type(x) is type(y) and x == y, name
        if isinstance(x, (tuple, list)):
            assert all(type(v) is int for v in x), name


@pytest.mark.parametrize("counts, numpy_used", [
    ([5] * 3000, True),                                       # one count
    ([i % 7 - 3 for i in range(3000)], True),                 # ties, negative counts
    (list(range(3000, 0, -1)), True),                         # already ranked
    ([2**61, -(2**61)] + [0, 3] * 1500, True),               # span 2**62: argsort, not keys
    ([2**70, 1] * 1500, False),                               # past int64: the Python route
])
def test_numpy_route_equals_python_route(counts, numpy_used, monkeypatch):
    monkeypatch.setattr(ranking, "_NUMPY_FROM", 2048)
    fast = Ranking(counts)
    assert (fast._arrays is not None) == numpy_used
    assert_same(fast, python_route(counts, monkeypatch))
    again = pickle.loads(pickle.dumps(fast))
    assert_same(again, fast)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(2**62) + 1, 2**62 - 1) | st.integers(-20, 20), min_size=1, max_size=60))
def test_random_counts_both_routes(counts):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ranking, "_NUMPY_FROM", 1)
        fast = Ranking(counts)
        mp.setattr(ranking, "_NUMPY_FROM", 10**18)
        slow = Ranking(counts)
    assert fast._arrays is not None and slow._arrays is None
    assert_same(fast, slow)
    assert [fast.at_least(c) for c in counts] == [slow.at_least(c) for c in counts]


def test_as_counts_fast_paths_equal_conversion():
    ints = [3, -1, 2**80, 0]
    assert as_counts(ints) == as_counts(tuple(ints)) == tuple(ints)
    arr = np.array([3, -1, 7], dtype=np.int64)
    got = as_counts(arr)
    assert got == (3, -1, 7) and all(type(v) is int for v in got)
    assert as_counts(np.array([1, 2], dtype=np.uint8)) == (1, 2)
    mixed = as_counts([1, np.int64(2), 3.0])
    assert mixed == (1, 2, 3) and all(type(v) is int for v in mixed)
    with pytest.raises(ArgumentTypeError, match=r"counts\[1\]"):
        as_counts([1, True, 2])
