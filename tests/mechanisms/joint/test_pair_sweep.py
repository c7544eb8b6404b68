"""Joint's pair sweep (exactdp.mechanisms.joint.pair_sweep): the witnesses of the pair cells
are real sequences of their cell's two levels (twins.joint_pairs), and ``N(M, M')`` is the
brute-force count of sequences at or below both levels."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from exactdp import Joint
from exactdp.mechanisms.joint.pair_sweep import (DisplacedWitness, PairSweep, SearchedWitness, cell_witnesses,
                                                  search_witness, search_witness_by_class)
from twins.joint_pairs import brute_pair_cells, joint_level


def test_witnesses_found_by_the_search():
    """Cells that no single displaced item reaches are searched exactly."""
    c1, c2 = [9, 9, 5, 5, 2, 1, 0], [9, 8, 5, 6, 2, 1, 1]
    k = 4
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    p = PairSweep(a, b)
    for (x, y) in brute_pair_cells(c1, c2, k):
        M, M2 = -a.groups()[x].utility, -b.groups()[y].utility
        s = search_witness(p, M, M2)
        assert s is not None and (joint_level(c1, s), joint_level(c2, s)) == (M, M2)


def test_diagonal_witnesses_found_by_the_search():
    """The diagonal count's witnesses, found when first read (displaced item, else the
    search), and the search itself on every cell: real sequences of the cell's levels."""
    c1, c2 = [9, 9, 5, 5, 2, 1, 0], [9, 8, 5, 6, 2, 1, 1]
    k = 4
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    p = PairSweep(a, b)
    p.group_by_difference()
    for (x, y) in brute_pair_cells(c1, c2, k):
        M, M2 = -a.groups()[x].utility, -b.groups()[y].utility
        for s in (SearchedWitness(p, M, M2), search_witness_by_class(p, M, M2)):
            assert s is not None and (joint_level(c1, s), joint_level(c2, s)) == (M, M2) and len(set(s)) == k


def _n_at_most(c1, c2, k, m1, m2):
    """``N(m1, m2)`` by enumerating every sequence: those with level ``<= m1`` under ``c1``
    and ``<= m2`` under ``c2``."""
    return sum(1 for s in itertools.permutations(range(len(c1)), k)
               if joint_level(c1, s) <= m1 and joint_level(c2, s) <= m2)


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("c1, c2, k", [([3, 1, 0], [3, 2, 0], 2), ([2, 2, 1, 0], [1, 2, 2, 0], 2),
                                       ([4, 3, 3, 1, 0], [4, 2, 3, 2, 0], 3)])
def test_at_most_is_the_brute_force_count(c1, c2, k, diagonal):
    """``N(M, M')`` at every point of the band, item by item and per class of equal change,
    is the number of sequences with both levels at most ``(M, M')``."""
    p = PairSweep(Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1))
    if diagonal:
        p.group_by_difference()
    top = max(c1) + max(c2) + 1
    points = [(m1, m2) for m1 in range(top) for m2 in range(top) if abs(m1 - m2) <= p.band]
    got = p.at_most(np.asarray([m for m, _ in points], dtype=np.int64), np.asarray([m for _, m in points], dtype=np.int64))
    assert got == [_n_at_most(c1, c2, k, m1, m2) for m1, m2 in points]


def test_cell_witnesses_are_sequences_of_their_levels_and_pickle_as_tuples():
    c1, c2, k = [9, 9, 5, 5, 2, 1, 0], [9, 8, 5, 6, 2, 1, 1], 3
    a, b = Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1)
    p = PairSweep(a, b)
    cells = sorted(brute_pair_cells(c1, c2, k))
    M = np.asarray([-a.groups()[x].utility for x, _ in cells], dtype=np.int64)
    M2 = np.asarray([-b.groups()[y].utility for _, y in cells], dtype=np.int64)
    found = cell_witnesses(p, M, M2)
    assert any(isinstance(w, DisplacedWitness) for w in found)
    for w, m, m2 in zip(found, M.tolist(), M2.tolist()):
        s = tuple(w)
        assert len(s) == k and len(set(s)) == k and (joint_level(c1, s), joint_level(c2, s)) == (m, m2)
        assert pickle.loads(pickle.dumps(w)) == s and type(pickle.loads(pickle.dumps(w))) is tuple


def test_a_wrong_level_has_no_witness():
    """The search checks its result: levels no sequence has give None, not a wrong sequence."""
    a, b = Joint([3, 1, 0], 2, epsilon=1), Joint([3, 2, 0], 2, epsilon=1)
    p = PairSweep(a, b)
    assert search_witness(p, 0, 3) is None  # the top pair (0, 1) has levels (0, 0) only
    p.group_by_difference()
    assert search_witness_by_class(p, 0, 3) is None
