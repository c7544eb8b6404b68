"""exactdp._oracle.clopper_pearson: the certified one-sided Clopper-Pearson bounds against
exact binomial sums in Fractions (outward, and tight to 2**-40), a large n against the
certified binomial tail, the two-sided bound from counts against its definition, and the
errors."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactdp import audit
from exactdp._oracle.clopper_pearson import clopper_pearson
from exactdp.certify.tail import binomial_sf
from exactdp.errors import InvalidParameterError


def binomial_at_least(x, n, p):
    """P(Binomial(n, p) >= x), exactly (p a Fraction)."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(x, n + 1))


def check_cp(x, n, alpha):
    low, up = clopper_pearson(x, n, alpha, "lower"), clopper_pearson(x, n, alpha, "upper")
    assert 0 <= low <= Fraction(x, n) <= up <= 1
    if x == 0:
        assert low == 0
    else:  # outward: the tail at low is below alpha, and just above low (1 + 2**-40) it is not
        assert binomial_at_least(x, n, low) < alpha
        assert binomial_at_least(x, n, min(Fraction(1), low * (1 + Fraction(1, 2**40)))) > alpha
    if x == n:
        assert up == 1
    else:
        assert 1 - binomial_at_least(x + 1, n, up) < alpha
        assert 1 - binomial_at_least(x + 1, n, up * (1 - Fraction(1, 2**40))) > alpha


@pytest.mark.parametrize("alpha", [Fraction(1, 40), Fraction(1, 4)])
def test_clopper_pearson_exhaustive_small(alpha):
    for n in range(1, 9):
        for x in range(n + 1):
            check_cp(x, n, alpha)


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))),
       st.sampled_from([Fraction(1, 40), Fraction(1, 20), Fraction(1, 3)]))
def test_clopper_pearson_random(nx, alpha):
    check_cp(nx[1], nx[0], alpha)


def test_clopper_pearson_large_n_against_certified_tail():
    n, x, alpha = 20_000, 7_423, Fraction(1, 40)
    low = clopper_pearson(x, n, alpha, "lower")
    level = mpmath.mpf(1) / 40
    assert binomial_sf(x, n, low, dps=30) < level < binomial_sf(x, n, low * (1 + Fraction(1, 2**40)), dps=30)


def test_bound_from_counts_is_ln_of_the_two_ends():
    eps, delta = audit.lower_bound_from_counts(9_000, 1_000, 20_000, Fraction(19, 20), epsilon=1)
    low = clopper_pearson(9_000, 20_000, Fraction(1, 40), "lower")
    up = clopper_pearson(1_000, 20_000, Fraction(1, 40), "upper")
    with mpmath.workdps(50):
        exact = mpmath.log(mpmath.mpf(low.numerator) / low.denominator / (mpmath.mpf(up.numerator) / up.denominator))
        eps_m, delta_m = eps, delta
        assert exact - mpmath.mpf(10) ** -30 < eps_m <= exact
        d = mpmath.mpf(low.numerator) / low.denominator - mpmath.e * up.numerator / up.denominator
        assert d - mpmath.mpf(10) ** -30 < delta_m <= d
    assert audit.lower_bound_from_counts(10, 900, 1000) == (0, None)  # clipped at 0


def test_clopper_pearson_errors():
    with pytest.raises(InvalidParameterError, match="count"):
        clopper_pearson(5, 4, Fraction(1, 10), "lower")
    with pytest.raises(InvalidParameterError, match="alpha"):
        clopper_pearson(1, 4, 1, "lower")
