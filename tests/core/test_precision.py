"""exactdp.core.precision: exact conversions between mpmath values and Fractions."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

from exactdp.core.precision import dyadic_mpf, mpf_fraction


def test_mpf_fraction_and_dyadic_mpf_are_exact_inverses():
    """Exact both ways, at any exponent (no rounding to mpmath's working precision), and a
    non-dyadic rational refused."""
    for q in (Fraction(0), Fraction(3, 8), Fraction(-5, 2**200), Fraction(2**300 + 1), Fraction(-(2**80 + 1), 2**7)):
        assert mpf_fraction(dyadic_mpf(q)) == q
    assert mpf_fraction(mpmath.mpf(2) ** -1100) == Fraction(1, 2**1100)
    # 2**300 + 1 has more bits than mpmath's default precision: rounding would lose the 1
    assert dyadic_mpf(Fraction(2**300 + 1)) != mpmath.mpf(2) ** 300
    with pytest.raises(ValueError, match="dyadic"):
        dyadic_mpf(Fraction(1, 3))


def test_mpf_fraction_keeps_the_sign():
    """mpmath keeps an mpf's sign apart from ``man_exp``: a negative value stays negative
    (reading ``man_exp`` alone gave ``3/8`` for ``-3/8``)."""
    assert mpf_fraction(mpmath.mpf(-0.375)) == Fraction(-3, 8)
    assert mpf_fraction(-mpmath.mpf(2) ** 70) == -(2**70)
    assert mpf_fraction(mpmath.mpf(0)) == 0


def test_mpf_man_exp_keeps_the_sign():
    from exactdp.core.precision import mpf_man_exp

    assert mpf_man_exp(mpmath.mpf(-0.375)) == (-3, -3)
    assert mpf_man_exp(mpmath.mpf(0.375)) == (3, -3)
    assert mpf_man_exp(mpmath.mpf(0)) == (0, 0)
    assert mpf_man_exp(mpmath.mpf(-5)) == (-5, 0)
