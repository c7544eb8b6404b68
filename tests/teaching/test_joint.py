"""Tests of exactdp.teaching.joint, the walk-throughs of Joint and PNFJoint: every number
checked against the mechanism (the explain checker), the m-tilde and level steps against
the mechanism's own values, and PNFJoint's permute-and-flip race (Algorithm 5)."""

from __future__ import annotations

import pytest

import exactdp
from exactdp.teaching import explain
from exactdp.teaching.explanation import Table
from exactdp.teaching.joint import explain_joint
from tests.teaching.explain_cases import BASE, corrupt
from tests.teaching.explain_checker import problems


@pytest.mark.parametrize("cls", [exactdp.Joint, exactdp.PNFJoint])
@pytest.mark.parametrize("counts, k", [((3, 1, 1, 0), 2), ((2, 2, 2), 3), ((5,), 1), ((4, 0, 0, 0, 0), 1)])
def test_the_walk_through_checks_and_cites_the_joint_paper(cls, counts, k):
    m = cls(list(counts), k, base=BASE)
    e = explain_joint(m, 7, 12)
    assert e == explain(m, rng=7)
    assert problems(e, m) == [] and "2201.12333" in e.citation.arxiv
    assert e.step("sample")["sample"] in set(m.outputs())


@pytest.mark.parametrize("counts, k", [((4, 3, 3, 1), 2), ((2, 2, 2, 2), 3), ((6, 1, 0), 1)])
def test_the_levels_step_is_the_mechanisms_levels_and_the_sum_of_mtilde(counts, k):
    """Each row ``(u, m(u), sum of m-tilde)``: Joint's exact level, and the m-tilde values of
    the paper's Lemmas 3.7 and 3.8 summed over that level, which must equal it."""
    m = exactdp.Joint(list(counts), k, base=BASE)
    table = explain_joint(m, 1, 12).step("levels")["levels"]
    assert table.columns == ("u", "m(u) = Joint.levels()", "sum of m̃")
    assert list(table.rows) == [(lv.utility, lv.multiplicity, lv.multiplicity) for lv in m.levels()]


def test_pnf_race_is_algorithm5s_draw_and_the_checker_sees_a_wrong_winner():
    m = exactdp.PNFJoint([3, 2, 2, 0], 2, base=BASE)
    e = explain(m, rng=8)
    assert problems(e, m) == []
    rows = e.step("sample_race")["levels"].rows
    flipped = Table(e.step("sample_race")["levels"].columns, tuple(r[:6] + (not r[6],) for r in rows))
    assert problems(corrupt(e, "sample_race", "levels", lambda t: flipped), m) != []
