"""JointSet's pair cells (exactdp.mechanisms.joint_set.pairs) against brute force and the orbit enumeration."""

from __future__ import annotations

import itertools
import os
import pickle
import random
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from exactdp import Joint, JointSet
from exactdp._oracle.cells import mechanism_pairs
from exactdp.audit import neighbours
from exactdp.mechanisms.joint_set import pairs as joint_set_pairs
from exactdp.mechanisms.joint_set.pairs import SetWitness, joint_set_pair_cells
from twins.joint_set import set_maxdiff
from twins.strategies import count_pairs
from twins.joint_set_pairs import brute_set_pair_cells, cells_from_levels, set_levels, threshold_level


@lru_cache(maxsize=None)
def _mechanism(counts: tuple, k: int) -> JointSet:
    return JointSet(list(counts), k, epsilon=1)


@lru_cache(maxsize=None)
def _levels(counts: tuple, k: int) -> list[int]:
    return set_levels(counts, k)


def _check(c1, c2, k, witnesses=True):
    """The cells equal brute force's, and every witness has its cell's two levels."""
    c1, c2 = tuple(c1), tuple(c2)
    a, b = _mechanism(c1, k), _mechanism(c2, k)
    got = joint_set_pair_cells(a, b)
    assert got is not None, (c1, c2, k)
    assert {key: n for key, (_, n) in got.items()} == cells_from_levels(_levels(c1, k), _levels(c2, k)), (c1, c2, k)
    if witnesses:
        for key, (witness, _) in got.items():
            s = frozenset(witness)
            assert len(s) == k and (a.group_index(s), b.group_index(s)) == key, (c1, c2, k, key, s)


#: EXACTDP_FULL_PAIR_TWINS=1 runs every add/remove and swap neighbour of every vector in
#: {0..3}^4 with every k (112,640 comparisons, about five minutes); by default d <= 3 is run
#: that way and d = 4 takes every vector's neighbours up to symmetry with one item changed
#: per sign, every k.
FULL = os.environ.get("EXACTDP_FULL_PAIR_TWINS") == "1"


def _pairs(d, full=True):
    for c in itertools.product(range(4), repeat=d):
        for relation in ("add_remove", "swap"):
            found = neighbours(c, relation) if full else neighbours(c, relation, up_to_symmetry=True, contribution=1)
            for c2 in found:
                yield c, c2


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_threshold_form_is_the_level(d):
    """A set is at level <= M iff for every row i it holds i + 1 items at count >= c_(i) - M:
    the smallest such M is Lemma 5's level, on every set of every vector in {0..3}^d."""
    for c in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            for s in itertools.combinations(range(d), k):
                assert threshold_level(c, s, k) == set_maxdiff(c, s), (c, s)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_every_neighbour_of_every_small_vector(d):
    """Add/remove and swap neighbours of every vector in {0..3}^d, every k (all neighbours
    up to d = 3, and at d = 4 with the full run; witnesses checked on one pair in four at d = 4)."""
    for i, (c1, c2) in enumerate(_pairs(d, full=d <= 3 or FULL)):
        for k in range(1, d + 1):
            _check(c1, c2, k, witnesses=d <= 3 or (i + k) % 4 == 0)


@pytest.mark.slow
def test_a_sample_of_d5():
    rng = random.Random(2026)
    vectors = list(itertools.product(range(4), repeat=5))
    for c in rng.sample(vectors, 60):
        for relation in ("add_remove", "swap"):
            found = neighbours(c, relation)
            for c2 in rng.sample(found, min(4, len(found))):
                _check(c, c2, rng.randint(1, 5))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count_pairs(max_d=7, max_k=5))
def test_random_pairs_against_brute_force(pair):
    c1, c2, k = pair
    a, b = JointSet(c1, k, epsilon=1), JointSet(c2, k, epsilon=1)
    got = joint_set_pair_cells(a, b)
    if got is None:  # not applicable (a wide band): the caller falls back
        p = joint_set_pairs._Pair(a, b)
        assert p.band > joint_set_pairs.MAX_BAND or len(p.changed) > joint_set_pairs.MAX_CHANGED_ITEMS
        return
    assert {key: n for key, (_, n) in got.items()} == brute_set_pair_cells(c1, c2, k), (c1, c2, k)
    for key, (witness, _) in got.items():
        assert (a.group_index(witness), b.group_index(witness)) == key


def test_many_points_in_small_chunks(monkeypatch):
    """Points split over many numpy chunks give the same cells (each chunk reuses the
    Pascal series of every number of rows)."""
    monkeypatch.setattr(joint_set_pairs, "_CHUNK", 2)
    for c1, c2, k in [([9, 7, 7, 4, 2, 0, 5], [9, 6, 7, 4, 2, 1, 5], 3), ([3, 1, 4, 1, 5, 9, 2, 6], [3, 2, 4, 1, 4, 9, 2, 6], 4)]:
        _mechanism.cache_clear()
        _check(c1, c2, k)


# -- the audits with the count and with the orbit enumeration: tests/oracle/engine/test_cells.py
def test_mechanism_pairs_takes_the_count():
    a, b = JointSet([7, 1, 4, 4, 2, 0], 3, epsilon=1), JointSet([6, 1, 5, 4, 2, 1], 3, epsilon=2)
    slow, visited = mechanism_pairs(a, b, 10**6, symmetric=False)
    fast, none_visited = mechanism_pairs(a, b, 10**6)
    assert visited > 0 and none_visited == 0
    assert {key: n for key, (_, n) in fast.items()} == {key: n for key, (_, n) in slow.items()}


# -- negative controls: a wrong count is caught by the twin comparison ---------------
def _detected(c1, c2, k):
    _mechanism.cache_clear()
    try:
        _check(c1, c2, k)
    except AssertionError:  # a wrong count, or one of the function's own guards
        return True
    return False


@pytest.mark.parametrize("fault", ["changed items", "threshold", "band", "no special levels"])
def test_negative_control_a_wrong_count_is_detected(monkeypatch, break_pair_count, fault):
    """Without the correction for the changed items in the set (their rows' needs), with
    an off-by-one threshold, a band one too narrow, or every level taken as one diagonal
    cell (no special levels), the twin comparison fails somewhere."""
    if fault == "changed items":
        original_side = joint_set_pairs._Pair._side
        monkeypatch.setattr(joint_set_pairs._Pair, "_side",
                            lambda self, top, counts, M, X: original_side(self, top, counts, M, ()))
    elif fault == "no special levels":
        monkeypatch.setattr(joint_set_pairs._Pair, "special_values", lambda self: np.zeros(0, dtype=np.int64))
    else:  # "threshold" or "band"
        break_pair_count(joint_set_pairs._Pair, fault)
    cases = [(c1, c2, k) for c1, c2 in _pairs(3) for k in (1, 2, 3)]
    assert any(_detected(*case) for case in cases)


def test_declines_what_it_does_not_count():
    """Counts past int64, many changed items, another output space or mechanism: None."""
    assert JointSet([10**30, 5, 0], 2).pair_cells(JointSet([10**30, 6, 0], 2)) is None
    c1 = list(range(20))
    assert JointSet(c1, 2).pair_cells(JointSet([c + 1 for c in c1], 2)) is None
    assert JointSet([3, 2, 1], 2).pair_cells(JointSet([3, 2, 1, 0], 2)) is None
    assert JointSet([3, 2, 1], 2).pair_cells(Joint([3, 2, 2], 2)) is None
    wide = [0, 100, 5]
    assert JointSet([0, 0, 5], 2).pair_cells(JointSet(wide, 2)) is None


def test_witness_is_a_set_read_on_demand():
    cells = joint_set_pair_cells(JointSet([5, 3, 3, 1, 0], 2), JointSet([5, 4, 3, 1, 0], 2))
    witness = next(iter(cells.values()))[0]
    assert isinstance(witness, SetWitness) and witness._set is None
    s = frozenset(witness)
    assert witness == s and hash(witness) == hash(s) and pickle.loads(pickle.dumps(witness)) == s
    assert repr(witness) == repr(s) and all(j in witness for j in s) and len(witness) == 2
