"""Tests of worst_case's verdict when the claim is within the band ``3 * 10**-dps`` of the
worst value: a claim ``2**-100`` away must still be found violated or held, and only an
equal claim is attained.

References: the twins of tests/twins/ (plain enumeration of the neighbours of a small
mapping factory, the notions from exact Fractions: the total variation exactly, the
largest ratio ``P/Q`` exactly, ``sum P^2/Q`` exactly), never exactdp's code.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import pytest
import sympy

import exactdp
from exactdp import audit

from twins import brute_probabilities_base
from twins.notions import renyi_sum_exact, total_variation_exact
from twins.worst import neighbours_brute, worst_case_brute

COUNTS = (2, 1)
TINY = Fraction(1, 2**100)
HALF = Fraction(1, 2)


def law(counts: tuple[int, ...]) -> dict[int, Fraction]:
    """A third-party law with rational probabilities: item i has weight |c_i| + 1."""
    total = sum(abs(c) + 1 for c in counts)
    return {i: Fraction(abs(c) + 1, total) for i, c in enumerate(counts)}


def twin_values() -> tuple[Fraction, Fraction, Fraction]:
    """Over every add/remove neighbour (plain enumeration): the largest total variation,
    the largest ratio ``max(P/Q, Q/P)`` and the largest ``sum P^2/Q`` (either direction),
    all exact."""
    base = law(COUNTS)
    tv = ratio = s2 = Fraction(0)
    for n in neighbours_brute(COUNTS, "add_remove"):
        q = law(n)
        tv = max(tv, total_variation_exact(base, q), total_variation_exact(q, base))
        ratio = max([ratio] + [max(base[i] / q[i], q[i] / base[i]) for i in base])
        s2 = max(s2, renyi_sum_exact(base, q, 2), renyi_sum_exact(q, base, 2))
    return tv, ratio, s2


def test_twin_values():
    tv, ratio, s2 = twin_values()
    assert (tv, ratio) == (Fraction(3, 20), Fraction(8, 5)) and s2 > 1


@pytest.mark.parametrize("shift, verdict", [(0, "attained"), (-1, "violated"), (1, "below")])
def test_pure_claim_within_the_band(shift, verdict):
    """The loss is ln(8/5); a claim 2**-100 below it is violated, one above it holds."""
    _, ratio, _ = twin_values()
    claim = sympy.log(sympy.Rational(ratio.numerator, ratio.denominator)) + shift * sympy.Rational(1, 2**100)
    w = audit.worst_case(law, COUNTS, epsilon=claim)
    assert w.verdict == verdict
    assert w.satisfied == (verdict != "violated")
    assert w.attained_exactly == (verdict == "attained")


@pytest.mark.parametrize("shift, verdict", [(0, "attained"), (-1, "violated"), (1, "below")])
def test_approx_claim_within_the_band(shift, verdict):
    """delta(0) is the total variation 3/20, exactly; claims 2**-102 away (within the band
    at dps = 30) are decided."""
    tv, _, _ = twin_values()
    w = audit.worst_case(law, COUNTS, notion="approx", epsilon=0, delta=tv + shift * TINY / 4)
    assert w.verdict == verdict


@pytest.mark.parametrize("shift, verdict", [(-1, "violated"), (1, "below")])
def test_renyi_claim_within_the_band(shift, verdict):
    """D_2 = ln(sum P^2/Q), from the exact sum at 120 digits; a rational claim within
    2**-110 of it (below or above) is decided."""
    _, _, s2 = twin_values()
    with mpmath.workdps(120):
        d2 = mpmath.log(mpmath.mpf(s2.numerator) / s2.denominator)
        below = Fraction(int(mpmath.floor(d2 * 2**110)), 2**110)
    claim = below if shift < 0 else below + Fraction(1, 2**109)
    w = audit.worst_case(law, COUNTS, notion="renyi", alpha=2, epsilon=claim)
    assert w.verdict == verdict


def test_band_verdict_far_from_the_claim_unchanged():
    """Away from the band nothing is recomputed: the ordinary verdicts."""
    tv, _, _ = twin_values()
    assert audit.worst_case(law, COUNTS, notion="approx", epsilon=0, delta=tv / 2).verdict == "violated"
    assert audit.worst_case(law, COUNTS, notion="approx", epsilon=0, delta=tv * 2).verdict == "below"


@pytest.mark.parametrize("shift, verdict", [(0, "attained"), (-1, "violated"), (1, "below")])
def test_mechanism_claim_within_the_band(shift, verdict):
    """Joint with base 1/2 (rational probabilities): the claim is the exact worst loss
    ``ln(P_a(w) / P_b(w))`` from the brute-force probabilities of the witness, or 2**-100
    off it; only the equal claim is attained (and proved so)."""
    counts, k = (3, 2, 2, 0), 2
    w = audit.worst_case(functools.partial(exactdp.Joint, k=k, base=HALF), counts)
    pa = brute_probabilities_base(counts, k, HALF)[w.witness]
    pb = brute_probabilities_base(w.neighbour, k, HALF)[w.witness]
    ratio = pa / pb if pa > pb else pb / pa
    exact = sympy.log(sympy.Rational(ratio.numerator, ratio.denominator))
    got = audit.worst_case(functools.partial(exactdp.Joint, k=k, base=HALF), counts,
                           epsilon=exact + shift * sympy.Rational(1, 2**100))
    assert got.verdict == verdict and got.attained_exactly == (verdict == "attained")


@pytest.mark.slow
@pytest.mark.parametrize("shift, verdict", [(-1, "violated"), (1, "below")])
def test_zcdp_claim_inside_the_bracket(shift, verdict):
    """Joint with base 1/2: the default bracket (dps 6) of the worst rho is about 1e-6
    wide; a claim 1e-11 below or above the true rho (the twin's sup over alpha, over every
    neighbour, at 30 digits) lies inside it. The narrow bracket used to make both
    "attained"; the neighbours whose bracket contains the claim are bracketed again with
    more digits until one is certainly above the claim, or all below."""
    factory = functools.partial(exactdp.Joint, k=2, base=HALF)
    true, _ = worst_case_brute(lambda c: brute_probabilities_base(c, 2, HALF), (3, 2, 2, 0), "add_remove", "zcdp")
    with mpmath.workdps(40):
        claim = Fraction(int(mpmath.floor(true * 10**20)), 10**20) + shift * Fraction(1, 10**11)
    coarse = audit.worst_case(factory, (3, 2, 2, 0), notion="zcdp", rho=1)
    with mpmath.workdps(40):
        assert coarse.lower < mpmath.mpf(claim.numerator) / claim.denominator < coarse.upper  # inside the bracket
    assert audit.worst_case(factory, (3, 2, 2, 0), notion="zcdp", rho=claim).verdict == verdict
