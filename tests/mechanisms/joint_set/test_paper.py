"""Tests of exactdp.mechanisms.joint_set.paper: the workshop paper's Algorithm 1 as printed
(docs/definitions.md §2.3 and docs/joint_set.md), its readings and their privacy loss.

The references (tests/twins/joint_set.py: ``printed_entries``,
``printed_nonstrict_reference``, ``printed_strict_reference``) are written from the printed
lines and the definitions, never by calling the code under test.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
import sympy

from exactdp.mechanisms.joint_set.mechanism import JointSet
from exactdp.mechanisms.joint_set.paper import (
    paper_algorithm1_distribution,
    privacy_loss,
    total_variation,
)

from twins import printed_nonstrict_reference, printed_strict_reference, small_vectors


@pytest.mark.slow
def test_paper_algorithm1_against_reference_exhaustive():
    base = Fraction(1, 2)
    for d in range(1, 5):
        for counts in small_vectors(d):
            for k in range(1, d + 1):
                got = paper_algorithm1_distribution(counts, k, base=base, strict=False)
                assert got == printed_nonstrict_reference(counts, k, base), (counts, k)
                for line4 in ("utility", "paths"):
                    got = paper_algorithm1_distribution(counts, k, base=base, strict=True, line4=line4)
                    assert got == printed_strict_reference(counts, k, base, line4), (counts, k, line4)
                    assert sum(got.values()) == 1


def test_paper_algorithm1_value_forms_agree():
    counts, k = (10, 5, 1, 1), 2
    for strict in (False, True):
        exact = paper_algorithm1_distribution(counts, k, 1, strict=strict, exact=True)
        numeric = paper_algorithm1_distribution(counts, k, 1, strict=strict, dps=40)
        assert list(exact) == list(numeric)
        for o in exact:
            with mpmath.workdps(50):
                assert abs(mpmath.mpf(sympy.N(exact[o], 50)) - numeric[o]) <= mpmath.mpf(10) ** -40 * numeric[o]


def test_paper_algorithm1_worked_example_values():
    """docs/joint_set.md: counts (10, 5, 1, 1), k = 2, base 1/2 (= exp(-eps/2))."""
    F = Fraction
    s = lambda *ids: frozenset(ids)
    assert paper_algorithm1_distribution([10, 5, 1, 1], 2, base="1/2", strict=False) == {
        s(0, 1): F(1024, 1185), s(0, 2): F(64, 1185), s(0, 3): F(64, 1185),
        s(1, 2): F(16, 1185), s(1, 3): F(16, 1185), s(2, 3): F(1, 1185)}
    assert paper_algorithm1_distribution([10, 5, 1, 1], 2, base="1/2", strict=True) == {
        s(0, 2): F(16, 49), s(0, 3): F(16, 49), s(1, 2): F(8, 49), s(1, 3): F(8, 49), s(2, 3): F(1, 49)}
    em = JointSet([10, 5, 1, 1], 2, base="1/2")
    assert {o: em.probability_exact(o) for o in em.outputs()}[s(0, 1)] == F(512, 609)


def test_paper_algorithm1_k1_distinct_is_em_and_smallest_counterexamples():
    """k = 1 with distinct counts: one entry per item, so the non-strict reading is the
    EM.  Smallest differences (docs/joint_set.md)."""
    for counts in itertools.permutations(range(5)):
        assert total_variation(counts, 1, 1, reading="nonstrict") == 0
    assert total_variation((2, 1, 0), 2, 1, reading="nonstrict") == 0
    assert total_variation((0, 0, 1), 1, 1, reading="nonstrict") > 0
    assert total_variation((0, 1, 3), 2, 1, reading="nonstrict") > 0
    # no vector of {0..3}^d with d <= 2, nor distinct one with d = 3 and max < 3, differs
    for d in (1, 2):
        for counts in small_vectors(d):
            for k in range(1, d + 1):
                assert total_variation(counts, k, 1, reading="nonstrict") == 0
    # strict: on (0, 1), k = 1 the printed algorithm always outputs the worse item
    assert paper_algorithm1_distribution((0, 1), 1, base="1/2", strict=True) == {frozenset({0}): 1}
    # strict, line 4 as printed: on (0, 2, 3), k = 2 no set has the sampled utility
    assert paper_algorithm1_distribution((0, 2, 3), 2, base="1/2", strict=True) == {None: 1}


def test_privacy_loss_em_within_epsilon_and_printed_violation():
    # the EM is eps-DP: exhaustive small check
    for d in (2, 3):
        for counts in small_vectors(d):
            for k in range(1, d + 1):
                assert privacy_loss(counts, k, 1, reading="em", dps=10).loss <= 1
    # the non-strict printed algorithm is not: (0,1,2,3) -> (0,1,2,4), k = 3, distinct counts.
    # Independent closed form: P(S|D) = x/(1+3x), P(S|D') = x^2/(3+4x+x^2), x = e^(-1/2).
    r = privacy_loss((0, 1, 2, 3), 3, 1, reading="nonstrict", neighbours=[(0, 1, 2, 4)], dps=30)
    with mpmath.workdps(40):
        x = mpmath.exp(-mpmath.mpf(1) / 2)
        want = mpmath.log((x / (1 + 3 * x)) / (x**2 / (3 + 4 * x + x**2)))
        assert abs(r.loss - want) < mpmath.mpf(10) ** -29
    assert r.loss > 1 and r.output == frozenset({0, 1, 2})
    # the strict readings put probability 0 on some sets: infinite loss
    assert privacy_loss((0, 0), 1, 1, reading="strict").loss == mpmath.inf
    assert privacy_loss((0, 0), 1, 1, reading="strict-paths").loss == mpmath.inf
    # identical distributions give exactly 0 (adding one user to every item)
    assert privacy_loss((3, 1, 0), 2, 1, neighbours=[(4, 2, 1)]).loss == 0
