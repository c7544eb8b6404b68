"""Tests of exactdp.teaching.joint_set, the walk-through of JointSet: every number checked
against the mechanism (the explain checker), and the path counts of Lemma 7 against the
dynamic programme and JointSet's levels."""

from __future__ import annotations

import pytest

import exactdp
from exactdp.teaching import explain
from exactdp.teaching.joint_set import JOINT_SET_PAPER, explain_joint_set
from tests.teaching.explain_cases import BASE, bump_last_cell, corrupt
from tests.teaching.explain_checker import problems


@pytest.mark.parametrize("counts, k", [((3, 1, 1, 0), 2), ((2, 2, 2), 3), ((5, 2), 1), ((4, 4, 1, 0, 0), 2)])
def test_the_walk_through_checks_and_counts_paths_as_the_levels(counts, k):
    m = exactdp.JointSet(list(counts), k, base=BASE)
    e = explain_joint_set(m, 2, 12)
    assert e == explain(m, rng=2) and problems(e, m) == []
    assert JOINT_SET_PAPER[0] == e.citation.title
    table = e.step("paths")["path counts"]
    assert [row[1] for row in table.rows] == [row[2] for row in table.rows]  # Lemma 7 = the dynamic programme
    assert [(-row[0], row[3]) for row in table.rows] == [(lv.utility, lv.multiplicity) for lv in m.levels()]


def test_a_wrong_path_count_is_caught():
    m = exactdp.JointSet([3, 1, 1, 0], 2, base=BASE)
    e = explain_joint_set(m, 2, 12)
    assert problems(corrupt(e, "paths", "path counts", lambda t: bump_last_cell(t, "N(M): paths (Lemma 7)")), m) != []
