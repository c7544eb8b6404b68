"""Tests of exactdp.accounting: Lemma 4.2 of the Joint paper (CDP-Peel) and its inverse.

References: the formula written out in mpmath at 60 digits, the quadratic-formula inverse
of the public dp_topk code (``em_epsilon_cdp``) in plain floats, and round trips.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
import sympy

from exactdp import errors
from exactdp.accounting import (
    cdp_peel_epsilon,
    cdp_peel_local_epsilon,
    cdp_peel_rho,
    cdp_peel_round_epsilon,
    cdp_peel_round_epsilon_below,
)

CASES = [
    (Fraction(1, 10), Fraction(1, 10**6), 10),
    (Fraction(1), Fraction(1, 10**9), 1),
    (Fraction(3, 7), Fraction(1, 2), 200),
    (Fraction(1, 1000), Fraction(1, 10**30), 5),  # tiny eps', huge log(1/delta)
    (Fraction(25), Fraction(999, 1000), 3),
]


def lemma_42(eps, delta, k, dps=60):
    with mpmath.workdps(dps):
        e = mpmath.mpf(eps.numerator) / eps.denominator
        L = mpmath.log(mpmath.mpf(delta.denominator) / delta.numerator)
        return k * e**2 / 8 + 2 * e * mpmath.sqrt(k * L / 8)


def close(x, y, digits=30):
    with mpmath.workdps(60):
        if isinstance(y, Fraction):
            y = mpmath.mpf(y.numerator) / y.denominator
        return abs(x - y) <= mpmath.mpf(10) ** -digits * abs(y)


@pytest.mark.parametrize("eps, delta, k", CASES)
def test_forward_matches_formula(eps, delta, k):
    want = lemma_42(eps, delta, k)
    got = cdp_peel_epsilon(eps, delta, k)
    assert close(got, want)
    assert close(cdp_peel_epsilon(eps, delta, k, dps=50), want, 50)
    exact = cdp_peel_epsilon(eps, delta, k, exact=True)
    assert close(sympy.N(exact, 60), want, 50)
    assert cdp_peel_rho(eps, k) == k * eps * eps / 8


@pytest.mark.parametrize("eps, delta, k", CASES)
def test_inverse_round_trip(eps, delta, k):
    total = cdp_peel_epsilon(eps, delta, k, dps=45)
    back = cdp_peel_round_epsilon(total, delta, k, dps=40)  # an mpf is read exactly
    assert close(back, eps, 30)
    # and the other way round from a rational overall epsilon
    target = Fraction(1, 3)
    local = cdp_peel_round_epsilon(target, delta, k, dps=45)
    with mpmath.workdps(60):
        L = mpmath.log(mpmath.mpf(delta.denominator) / delta.numerator)
        again = k * local**2 / 8 + 2 * local * mpmath.sqrt(k * L / 8)
    assert close(again, target, 30)
    exact = cdp_peel_round_epsilon(target, delta, k, exact=True)
    assert close(sympy.N(exact, 60), local, 40)


def test_inverse_matches_dp_topk_float_formula():
    """em_epsilon_cdp of the public dp_topk code: sqrt((8L + 8 eps)/k) - sqrt(8L/k)."""
    for eps, delta, k in [(1.0, 1e-6, 10), (0.5, 1e-9, 50), (4.0, 0.01, 3)]:
        L = math.log(1 / delta)
        ref = math.sqrt((8 * L + 8 * eps) / k) - math.sqrt(8 * L / k)
        got = cdp_peel_round_epsilon(eps, delta, k)  # floats taken at their exact binary value
        assert abs(float(got) - ref) <= 1e-12 * ref
        local = cdp_peel_local_epsilon(eps, delta, k)
        assert abs(float(local) - max(eps / k, ref)) <= 1e-12 * ref


def test_local_epsilon_takes_the_larger_budget():
    # CDP wins: many rounds, small delta
    cdp = cdp_peel_round_epsilon(1, Fraction(1, 10**6), 100)
    assert cdp_peel_local_epsilon(1, Fraction(1, 10**6), 100) == cdp > mpmath.mpf(1) / 100
    # basic composition wins: one round, large delta
    basic = cdp_peel_local_epsilon(10, Fraction(1, 2), 1)
    assert basic == 10 > cdp_peel_round_epsilon(10, Fraction(1, 2), 1)
    ex = cdp_peel_local_epsilon(10, Fraction(1, 2), 1, exact=True)
    assert abs(sympy.N(ex, 40) - 10) < 1e-35


def test_monotone_in_each_argument():
    base = cdp_peel_epsilon("0.1", "1e-6", 10)
    assert cdp_peel_epsilon("0.2", "1e-6", 10) > base
    assert cdp_peel_epsilon("0.1", "1e-9", 10) > base
    assert cdp_peel_epsilon("0.1", "1e-6", 11) > base


@pytest.mark.parametrize(
    "args, error, argument",
    [
        ((0, "1e-6", 10), errors.InvalidParameterError, "epsilon"),
        ((-1, "1e-6", 10), errors.InvalidParameterError, "epsilon"),
        ((float("inf"), "1e-6", 10), errors.InvalidParameterError, "epsilon"),
        (("x", "1e-6", 10), errors.InvalidParameterError, "epsilon"),
        ((1, 0, 10), errors.InvalidParameterError, "delta"),
        ((1, 1, 10), errors.InvalidParameterError, "delta"),
        ((1, 2, 10), errors.InvalidParameterError, "delta"),
        ((1, "-0.1", 10), errors.InvalidParameterError, "delta"),
        ((1, None, 10), errors.ArgumentTypeError, "delta"),
        ((1, float("nan"), 10), errors.InvalidParameterError, "delta"),
        ((1, "1e-6", 0), errors.InvalidParameterError, "k"),
        ((1, "1e-6", 2.5), errors.InvalidParameterError, "k"),
        ((1, "1e-6", True), errors.ArgumentTypeError, "k"),
        ((1, "1e-6", "3"), errors.ArgumentTypeError, "k"),
        # a negative mpf is read with its sign (its man_exp alone is the magnitude's)
        ((mpmath.mpf(-1), "1e-6", 10), errors.InvalidParameterError, "epsilon"),
        ((1, mpmath.mpf("-0.25"), 10), errors.InvalidParameterError, "delta"),
    ],
)
@pytest.mark.parametrize("fn", [cdp_peel_epsilon, cdp_peel_round_epsilon, cdp_peel_local_epsilon])
def test_bad_inputs(fn, args, error, argument):
    with pytest.raises(error) as info:
        fn(*args)
    assert info.value.argument == argument
    with pytest.raises(error):
        fn(*args, exact=True)


def test_bad_dps_and_rho_inputs():
    with pytest.raises(errors.InvalidParameterError, match="dps"):
        cdp_peel_epsilon(1, "1e-6", 10, dps=0)
    with pytest.raises(errors.InvalidParameterError, match="epsilon"):
        cdp_peel_rho(0, 3)
    with pytest.raises(errors.InvalidParameterError, match="k"):
        cdp_peel_rho(1, 0)


def test_mpmath_precision_untouched():
    before = mpmath.mp.prec
    cdp_peel_epsilon(1, "1e-6", 10, dps=80)
    cdp_peel_round_epsilon(1, "1e-6", 10, dps=80)
    assert mpmath.mp.prec == before


def _just_below(q: Fraction, eps, delta, k: int, decimals: int) -> bool:
    """``q`` is below Lemma 4.2's per-round epsilon (certified at 60 digits) by at most two
    units of its last decimal."""
    exact = cdp_peel_round_epsilon(eps, delta, k, dps=60)
    with mpmath.workdps(80):
        gap = exact - mpmath.mpf(q.numerator) / q.denominator
        return 0 < gap <= mpmath.mpf(2) / 10**decimals


@pytest.mark.parametrize("eps,delta,k,decimals", [
    (Fraction(1), Fraction(1, 10**6), 50, 6), (Fraction(1), Fraction(1, 10**6), 2, 12),
    (Fraction(8), Fraction(1, 10**9), 50, 15), (Fraction(10**30), Fraction(1, 10), 2, 3),
])
def test_round_epsilon_below_is_a_rational_just_under_lemma_4_2(eps, delta, k, decimals):
    q = cdp_peel_round_epsilon_below(eps, delta, k, decimals=decimals)
    assert q.denominator * 1 <= 10**decimals and _just_below(q, eps, delta, k, decimals)
    # the (eps, delta) claim holds at the rational run
    spent = cdp_peel_epsilon(q, delta, k, dps=40)
    with mpmath.workdps(80):
        assert spent < mpmath.mpf(eps.numerator) / eps.denominator
    # negative controls: one unit up reaches or passes the value; rounded up is above it
    assert not _just_below(q + Fraction(2, 10**decimals), eps, delta, k, decimals)
    man, exp = cdp_peel_round_epsilon(eps, delta, k, dps=60).man_exp
    up = Fraction(math.ceil(Fraction(int(man)) * Fraction(2) ** int(exp) * 10**decimals), 10**decimals)
    assert not _just_below(up, eps, delta, k, decimals)


def test_round_epsilon_below_rejects_bad_decimals():
    with pytest.raises(errors.InvalidParameterError, match="decimals"):
        cdp_peel_round_epsilon_below(1, Fraction(1, 10**6), 2, decimals=0)



@pytest.mark.parametrize("eps,decimals", [(Fraction(1, 10**14), 6), (Fraction(1, 10**5), 6), (Fraction(1, 10**14), 15)])
def test_round_epsilon_below_is_never_zero_or_negative(eps, decimals):
    # eps' below two units of the last decimal left floor(...) - 1 <= 0: a negative
    # "budget" was returned; now the error names decimals and the value that works
    with pytest.raises(errors.InvalidParameterError, match="decimals") as info:
        cdp_peel_round_epsilon_below(eps, Fraction(1, 10**6), 50, decimals=decimals)
    assert info.value.argument == "decimals"
    needed = int(str(info.value).split("use decimals=")[1].split()[0])
    q = cdp_peel_round_epsilon_below(eps, Fraction(1, 10**6), 50, decimals=needed)
    assert q > 0 and _just_below(q, eps, Fraction(1, 10**6), 50, needed)
    with pytest.raises(errors.InvalidParameterError):  # and it is the smallest that works
        cdp_peel_round_epsilon_below(eps, Fraction(1, 10**6), 50, decimals=needed - 1)
