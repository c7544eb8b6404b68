"""exactdp.certify.tail: the exact binomial tail against brute-force sums in Fractions, its
certified upper bound, the critical count and the float tail for powers."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

from exactdp.certify import tail
from exactdp.errors import InvalidParameterError


def _binomial_sf_fractions(t, n, p):
    """Brute force: sum over j >= t of C(n, j) p**j (1 - p)**(n - j), in Fractions."""
    return sum((Fraction(math.comb(n, j)) * p ** j * (1 - p) ** (n - j) for j in range(t, n + 1)), Fraction(0))


def _close(value, exact, digits):
    exact = mpmath.mpf(exact.numerator) / exact.denominator if isinstance(exact, Fraction) else exact
    return abs(value - exact) <= abs(exact) * mpmath.mpf(10) ** -digits


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 60), st.data())
def test_binomial_sf_against_a_brute_force_sum_in_fractions(n, data):
    t = data.draw(st.integers(0, n + 2))
    den = data.draw(st.integers(1, 10**6))
    p = Fraction(data.draw(st.integers(0, den)), den)
    exact = _binomial_sf_fractions(t, n, p) if t <= n else Fraction(0)
    with mpmath.workdps(50):
        assert _close(tail.binomial_sf(t, n, p, dps=30), exact, 28), (t, n, p)


@pytest.mark.parametrize("t, n, p", [(0, 5, Fraction(1, 3)), (1, 1, Fraction(1, 2)), (3, 3, Fraction(1)),
                                     (2, 3, Fraction(0)), (5, 10**6, Fraction(1, 10**6)),
                                     (40, 10**6, Fraction(3, 10**6)), (4, 200, Fraction(1, 50))])
def test_binomial_sf_edges_and_tiny_tails(t, n, p):
    # the far tail (P ~ 1e-47 for t = 40) keeps its relative digits: no 1 - (1 - tiny)
    exact = _binomial_sf_fractions(t, n, p) if n <= 200 or p in (0, 1) else None
    got = tail.binomial_sf(t, n, p)
    if exact is None:  # large n: mpmath's regularised incomplete beta, I_p(t, n - t + 1), at 60 digits
        with mpmath.workdps(60):
            q = mpmath.mpf(p.numerator) / p.denominator
            exact = mpmath.betainc(t, n - t + 1, 0, q, regularized=True)
    with mpmath.workdps(50):
        assert _close(got, exact, 27)


def test_binomial_sf_rejects_bad_arguments():
    for args, name in (((-1, 5, 0.5), "t"), ((1, -5, 0.5), "n"), ((1, 5, 1.5), "p"), ((1, 5, "x"), "p"),
                       ((1.0, 5, 0.5), "t"), ((True, 5, 0.5), "t")):
        with pytest.raises(InvalidParameterError, match=name):
            tail.binomial_sf(*args)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 50), st.sampled_from([0.5, 0.1, 1e-2, 1e-6]))
def test_critical_count_is_the_exact_rejection_threshold(n, den, a):
    # the tail test rejects exactly when T >= c: P(T >= c) < a <= P(T >= c - 1), in Fractions
    # of the very p it is given: mpf(1)/den is 1/den rounded to 53 bits, and exact 1/10 against
    # a = 0.1 (the float, above 1/10) is a different case from the rounded p equal to a
    p_mpf = mpmath.mpf(1) / den
    p = Fraction(int(p_mpf.man)) * Fraction(2) ** int(p_mpf.exp)
    c = tail.critical_count(n, p_mpf, a)
    if c <= n:
        assert _binomial_sf_fractions(c, n, p) < Fraction(a)
    # one below, the tail is at least a, or within the certified error band below it (a tie
    # such as P(T >= 16) = 1/2 for n = 31, p = 1/2 is not a rejection at a = 1/2)
    assert c == 1 or _binomial_sf_fractions(c - 1, n, p) >= Fraction(a) * (1 - Fraction(1, 10**25))


def test_the_upper_bound_covers_the_error_of_p():
    # p certified to 8 digits: the bound is above the tail at every p in that band
    for t, n, p in ((3, 50, Fraction(1, 30)), (12, 200, Fraction(1, 80)), (1, 7, Fraction(2, 7))):
        with mpmath.workdps(8):
            p8 = mpmath.mpf(p.numerator) / p.denominator
        band = Fraction(1, 10**8)
        bound = tail.binomial_sf_upper(t, n, p8, dps=8)
        for q in (p * (1 - band), p, p * (1 + band)):
            with mpmath.workdps(40):
                assert bound >= mpmath.mpf(_binomial_sf_fractions(t, n, q).numerator) / _binomial_sf_fractions(t, n, q).denominator


def test_binomial_sf_float_for_powers():
    for c, n, q in ((1, 10, 0.1), (5, 6000, 0.002), (3, 10**9, 1e-9), (7, 10**6, 3e-6)):
        with mpmath.workdps(40):
            want = float(mpmath.betainc(c, n - c + 1, 0, q, regularized=True))
        assert tail.binomial_sf_float(c, n, q) == pytest.approx(want, abs=1e-12)


def _label_brute(levels):
    """The label spelled out: each maximal run of consecutive levels as "a" or "a-b"."""
    parts, i = [], 0
    while i < len(levels):
        j = i
        while j + 1 < len(levels) and levels[j + 1] == levels[j] + 1:
            j += 1
        parts.append(str(levels[i]) if i == j else f"{levels[i]}-{levels[j]}")
        i = j + 1
    return ("level " if len(levels) == 1 else "levels ") + ", ".join(parts)


def test_levels_label_against_brute_force():
    for r in range(1, 8):
        for levels in itertools.combinations(range(8), r):
            assert tail.levels_label(levels) == _label_brute(levels), levels
    assert tail.TailTest((1, 2, 5), 0, 0.1, mpmath.mpf(0), mpmath.mpf(1), 0.5).label == "levels 1-2, 5"
