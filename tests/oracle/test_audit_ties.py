"""Tests that the audits' symmetry shortcuts (one output per orbit of tied items, one
neighbour per class of tied items) are taken only for mechanisms that treat tied items
alike: CanonicalGamma1 with ``rho < 1`` depends on the tie rule, so its pair notions and
worst cases must equal those over every output and every neighbour.

References: the two-stage twin ``canon_gamma1_exact`` (exact Fractions, base ``2**-q``) and
the brute-force pair values and neighbours of tests/twins/.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import audit

from twins.canonical import canon_gamma1_exact
from twins.notions import delta_brute, pure_loss_brute
from twins.worst import worst_case_brute

DPS = 20
TOL = mpmath.mpf(10) ** -15


def gamma1(counts, k, rho):
    """CanonicalGamma1 with the base of the twin (``2**-q`` for ``rho = p/q``)."""
    return exactdp.CanonicalGamma1(counts, k, base=Fraction(1, 2 ** rho.denominator), rho=rho)


def tied_pairs():
    """Every pair (c, c + v) with c in {0, 1, 2}^4 having a tie, v in {-1, 0, 1}^4 non-zero
    and k in 1..3 where the default audit and the full one once differed, plus a sample."""
    yield (1, 2, 2, 1), (1, 1, 1, 1), 3, Fraction(1, 2)
    yield (1, 1, 2, 2, 1), (2, 1, 2, 3, 2), 2, Fraction(1, 2)
    yield (2, 1, 0, 2, 1), (3, 2, 0, 1, 2), 2, Fraction(1, 3)
    for c in itertools.product(range(3), repeat=4):
        if len(set(c)) == 4 or sum(c) % 5:
            continue
        for k in (2, 3):
            yield c, tuple(x + (1 if i % 2 else -1) for i, x in enumerate(c)), k, Fraction(1, 2)


@pytest.mark.parametrize("a, b, k, rho", list(tied_pairs()))
def test_gamma1_pair_notions_equal_brute_force_over_every_output(a, b, k, rho):
    P, Q = canon_gamma1_exact(a, k, rho), canon_gamma1_exact(b, k, rho)
    A, B = gamma1(a, k, rho), gamma1(b, k, rho)
    loss = audit.privacy_loss(A, B, dps=DPS)
    assert abs(loss.value - pure_loss_brute(P, Q)) <= TOL * max(1, loss.value)
    ratio = Fraction(P[loss.witness]) / Fraction(Q[loss.witness])
    with mpmath.workdps(40):
        witness_loss = abs(mpmath.log(mpmath.mpf(ratio.numerator) / ratio.denominator))
    assert abs(witness_loss - loss.value) <= TOL * max(1, loss.value)
    assert loss.direction == ("a>b" if ratio > 1 else "b>a")
    profile = audit.privacy_profile(A, B, 0, dps=DPS)
    expected = delta_brute(P, Q, Fraction(0))
    assert abs(profile.delta - mpmath.mpf(expected.numerator) / expected.denominator) <= TOL


def test_the_shortcut_would_have_been_wrong_here():
    """Negative control: the orbit shortcut forced on (treating Gamma1 as tie-symmetric)
    gives a smaller loss than brute force on this pair, so the test above can fail."""
    a, b, k, rho = (1, 2, 2, 1), (1, 1, 1, 1), 3, Fraction(1, 2)
    A, B = gamma1(a, k, rho), gamma1(b, k, rho)
    truth = pure_loss_brute(canon_gamma1_exact(a, k, rho), canon_gamma1_exact(b, k, rho))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(A), "ties_exchangeable", True)
        assert audit.privacy_loss(A, B, dps=DPS).value < truth - mpmath.mpf("0.01")
    assert abs(audit.privacy_loss(A, B, dps=DPS).value - truth) <= TOL


@pytest.mark.parametrize("relation", ["add_remove", "swap"])
@pytest.mark.parametrize("counts, k", [((2, 0, 2, 2), 3), ((1, 1, 0), 1), ((1, 1, 0), 2), ((2, 1, 1, 0), 2)])
def test_gamma1_worst_case_equals_the_maximum_over_every_neighbour(counts, k, relation):
    rho = Fraction(1, 2)
    factory = functools.partial(gamma1, k=k, rho=rho)
    w = audit.worst_case(factory, counts, relation, dps=DPS)
    brute, _ = worst_case_brute(lambda c: canon_gamma1_exact(c, k, rho), counts, relation, "pure")
    assert abs(w.value - brute) <= TOL * max(1, brute)
    assert len(w.results) == len(audit.neighbours(counts, relation))


def test_ties_exchangeable_says_whether_the_law_depends_on_the_tie_rule():
    """The attribute is True exactly where reversing the item ids of tied counts maps the
    distribution to itself (Gamma1: rho = 1 only; every other mechanism: always)."""
    counts, k = (2, 2, 1, 1, 0), 3
    rev = tuple(reversed(counts))

    def symmetric(make):
        m, r = make(counts), make(rev)
        d = len(counts)
        return all(m.probability_exact(S) == r.probability_exact(frozenset(d - 1 - i for i in S))
                   for S in map(frozenset, itertools.combinations(range(d), k)))

    for rho in (Fraction(0), Fraction(1, 2), Fraction(1)):
        make = functools.partial(gamma1, k=k, rho=rho)
        assert make(counts).ties_exchangeable == (rho == 1) == symmetric(make)
    for make in (lambda c: exactdp.Canonical(c, k, base=Fraction(1, 4)),
                 lambda c: exactdp.JointSet(c, k, base=Fraction(1, 2))):
        assert make(counts).ties_exchangeable and symmetric(make)


def test_the_output_limit_says_why_tied_items_are_not_grouped():
    counts = [1] * 30
    a, b = gamma1(counts, 3, Fraction(1, 2)), gamma1([2] + counts[1:], 3, Fraction(1, 2))
    with pytest.raises(audit.AuditLimitError, match="CanonicalGamma1 depends on the tie rule, so every one of the 30 items"):
        audit.privacy_loss(a, b, max_outputs=1000)
    canon = exactdp.Canonical(counts, 3), exactdp.Canonical([2] + counts[1:], 3)
    assert audit.privacy_loss(*canon, max_outputs=1000).value >= 0  # tied items grouped: a few orbits
