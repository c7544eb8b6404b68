"""JointSet's pair count on nested rows (``_Pair.at_most``: one staircase of all items
where every row's two sets are nested) against the count per subset of the changed items
(``_Pair.at_most_by_subsets``) and against enumeration."""

from __future__ import annotations

import itertools
import os
import random
from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactdp import JointSet
from exactdp.audit import neighbours
from exactdp.mechanisms.joint_set import pairs as joint_set_pairs
from exactdp.mechanisms.joint_set.pairs import _Pair
from twins.joint_set import set_maxdiff
from twins.strategies import count_pairs


def _grid(c1, c2):
    """Every point (M1, M2) where N can change: each side's values ``sc[i] - c_j`` and one
    below them, and -1."""
    def values(c):
        sc = sorted(c, reverse=True)
        return sorted({-1} | {x - y - e for x in sc for y in c for e in (0, 1)})

    m1, m2 = np.meshgrid(np.asarray(values(c1), dtype=np.int64), np.asarray(values(c2), dtype=np.int64))
    return m1.ravel(), m2.ravel()


def _enumerated(c1, c2, k, M1, M2):
    """``N(M1, M2)`` by enumerating the k-sets and their two levels (Lemma 5)."""
    levels = [(set_maxdiff(c1, s), set_maxdiff(c2, s)) for s in combinations(range(len(c1)), k)]
    return [sum(1 for x, y in levels if x <= m1 and y <= m2) for m1, m2 in zip(M1.tolist(), M2.tolist())]


def _both(c1, c2, k):
    p = _Pair(JointSet(list(c1), k), JointSet(list(c2), k))
    M1, M2 = _grid(c1, c2)
    ok, _ = p.nested(M1, M2)
    return p.at_most(M1, M2), p.at_most_by_subsets(M1, M2), int(ok.sum()), M1, M2


#: EXACTDP_FULL_PAIR_TWINS=1 takes every vector of {0..3}^4 and {0..3}^5 with all its
#: one-vote neighbours (about six minutes); by default every vector of {0..3}^d up to d = 3
#: with all of them, and at d = 4 and 5 a fixed sample of 60 and 30 vectors with their
#: neighbours up to exchanging tied items.
FULL = os.environ.get("EXACTDP_FULL_PAIR_TWINS") == "1"


def _pairs(d):
    """Vectors in {0..3}^d with their neighbours that change one item by one (add/remove)
    or move one vote from one item to another (swap)."""
    vectors = list(itertools.product(range(4), repeat=d))
    if d >= 4 and not FULL:
        vectors = random.Random(2026).sample(vectors, {4: 60, 5: 30}[d])
    for c in vectors:
        for relation in ("add_remove", "swap"):
            for c2 in neighbours(c, relation, contribution=1, up_to_symmetry=d >= 4 and not FULL):
                yield c, c2


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_nested_count_is_the_count_per_subset(d):
    """Every vector in {0..3}^d with its one-vote neighbours (FULL above), every k: the
    same N at every point where N can change, and most points nested."""
    nested = points = 0
    for c1, c2 in _pairs(d):
        for k in range(1, d + 1):
            fast, direct, ok, M1, _ = _both(c1, c2, k)
            assert fast == direct, (c1, c2, k)
            nested, points = nested + ok, points + len(M1)
    assert nested > points // 2 and (d < 2 or nested < points)  # both ways are exercised


def test_nested_count_is_enumeration_on_small_pairs():
    for c1, c2, k in [((3, 1, 0, 2), (3, 0, 1, 2), 2), ((2, 2, 1, 0, 3), (2, 1, 2, 0, 3), 3),
                      ((0, 1, 2, 3, 3), (0, 1, 2, 2, 4), 4), ((1, 1, 1), (1, 1, 2), 1), ((5,), (4,), 1)]:
        fast, _, _, M1, M2 = _both(c1, c2, k)
        assert fast == _enumerated(c1, c2, k, M1, M2), (c1, c2, k)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count_pairs(max_d=8, max_k=5), st.randoms(use_true_random=False))
def test_random_pairs(pair, rng):
    """Random pairs (neighbours, several items shifted, or any two vectors: then rows are
    often not nested and those points go the other way), at every grid point."""
    c1, c2, k = pair
    if sum(x != y for x, y in zip(c1, c2)) > joint_set_pairs.MAX_CHANGED_ITEMS:
        return
    fast, direct, _, M1, M2 = _both(c1, c2, k)
    assert fast == direct, (c1, c2, k)
    if len(c1) <= 6 and rng.random() < 0.3:
        assert fast == _enumerated(c1, c2, k, M1, M2), (c1, c2, k)


def test_large_swap_is_nearly_all_nested():
    """A swap of ranks k - 1 and k on distinct counts (the benchmark's kind): nearly every
    point is nested, and the count matches the count per subset."""
    counts = random.Random(7).sample(range(400), 60)
    order = sorted(range(60), key=lambda j: -counts[j])
    other = list(counts)
    other[order[5]] -= 1
    other[order[6]] += 1
    p = _Pair(JointSet(counts, 6), JointSet(other, 6))
    M1 = np.arange(-1, 120, dtype=np.int64).repeat(5)
    M2 = M1 + np.tile(np.arange(-2, 3, dtype=np.int64), 121)
    ok, _ = p.nested(M1, M2)
    assert ok.mean() > 0.9
    assert p.at_most(M1, M2) == p.at_most_by_subsets(M1, M2)


# -- negative controls: deliberately wrong variants of the nested rows are rejected ----
def _wrong_nested(fault):
    original = _Pair.nested

    def nested(self, M1, M2):
        ok, size = original(self, M1, M2)
        if fault == "every row nested":  # points with a row not nested taken as nested
            ok = np.ones_like(ok)
        elif fault == "side a alone":  # b's sets ignored: a's sets at M1
            size = original(_Pair(self.a, self.a), M1, M1)[1]
        elif fault == "off by one":  # one item too many in the first row
            size = size.copy()
            size[0] += 1
        return ok, size

    return nested


@pytest.mark.parametrize("fault", ["every row nested", "side a alone", "off by one"])
def test_negative_control_a_wrong_nested_count_is_detected(monkeypatch, fault):
    monkeypatch.setattr(_Pair, "nested", _wrong_nested(fault))
    assert any(_both(c1, c2, k)[0] != _both(c1, c2, k)[1] for c1, c2 in _pairs(3) for k in range(1, 4))
