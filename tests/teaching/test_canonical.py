"""Tests of exactdp.teaching.canonical, the walk-throughs of Canonical and CanonicalGamma1:
every number checked against the mechanism (the explain checker), the classes step against
the mechanism's classes, and the two stages of Gamma1."""

from __future__ import annotations

from fractions import Fraction

import pytest

import exactdp
from exactdp.teaching import explain
from exactdp.teaching.canonical import CANONICAL_PAPER, explain_canonical
from tests.teaching.explain_cases import BASE, bump_last_cell, corrupt
from tests.teaching.explain_checker import problems

CASES = [((3, 1, 1, 0), 2), ((2, 2, 2), 2), ((4, 0), 1), ((1, 1, 0), 3)]


@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
@pytest.mark.parametrize("counts, k", CASES)
def test_the_canonical_walk_through_checks(counts, k, noise):
    m = exactdp.Canonical(list(counts), k, base=BASE, rho=Fraction(1, 2), noise=noise)
    e = explain_canonical(m, 3, 12)
    assert e == explain(m, rng=3) and problems(e, m) == []
    assert CANONICAL_PAPER[2] in e.citation.arxiv
    sizes = [row[2] for row in e.step("classes")["classes"].rows]
    assert sum(sizes) == m.support_size()


@pytest.mark.parametrize("counts, k", CASES)
def test_the_gamma1_walk_through_has_its_two_stages(counts, k):
    m = exactdp.CanonicalGamma1(list(counts), k, base=BASE)
    e = explain_canonical(m, 4, 12)
    assert problems(e, m) == []
    assert [s.key for s in e.steps] == ["ranking", "classes", "stage1", "stage2", "sample_tail", "sample_head",
                                        "sample_set", "sample"]


def test_a_wrong_class_size_is_caught():
    m = exactdp.Canonical([3, 1, 1, 0], 2, base=BASE, rho=1)
    e = explain_canonical(m, 3, 12)
    assert problems(corrupt(e, "classes", "classes", lambda t: bump_last_cell(t, "size")), m) != []
