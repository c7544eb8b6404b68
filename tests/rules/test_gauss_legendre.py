"""Tests of exactdp.rules.gauss_legendre: the composite Gauss-Legendre integrals of a
polynomial integrand (every moment and every direct level from one set of values) are
balls around the exact rational integrals, narrow at the working precision."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from flint import acb, arb

from exactdp.core.precision import flint_workprec
from exactdp.rules.gauss_legendre import dyadic_pieces, gl_integrals


def test_dyadic_pieces_cover_the_range():
    pieces = dyadic_pieces(3)
    assert len(pieces) == 4
    assert all(a == x and b == y for (a, b), (x, y) in zip(pieces, [(0, 1), (1, 2), (2, 4), (4, 8)]))
    [(a, b)] = dyadic_pieces(0)
    assert a == 0 and b == 1


class _Cubic:
    """``F(t) = (1 - t/2)^2 (1 - t/3)`` at ``t = s / sigma``, ``sigma = 2**sigma_exp``."""

    def __init__(self, sigma_exp: int):
        self.inv_sigma = arb(2) ** -sigma_exp

    def value(self, s, skip=None):
        t = s * self.inv_sigma
        out = (1 - t / 2) ** 2 * (1 - t / 3)
        return out if skip is None else out / (1 - t * skip[1])


def _exact(k: int, e: int, sigma_exp: int, p=None) -> Fraction:
    """``int_0^{2^e} s^k F(s/sigma) [/ (1 - s p / sigma)] ds`` exactly (sympy)."""
    s = sympy.Symbol("s")
    t = s / sympy.Integer(2) ** sigma_exp
    f = s**k * (1 - t / 2) ** 2 * (1 - t / 3)
    if p is not None:
        f = sympy.cancel(f / (1 - t * sympy.Rational(p.numerator, p.denominator)))
    value = sympy.integrate(sympy.expand(f), (s, 0, sympy.Integer(2) ** e))
    return Fraction(int(value.p), int(value.q))


@pytest.mark.parametrize("e, sigma_exp", [(0, 0), (2, 2), (3, 3)])  # s up to sigma: t in [0, 1]
def test_moments_and_direct_levels_enclose_the_exact_integrals(e, sigma_exp):
    prec = 120
    with flint_workprec(prec + 20):
        direct = [(0, arb(1) / 2), (1, arb(1) / 3)]  # F / (1 - t p) is a polynomial for these p
        nus, directs = gl_integrals(_Cubic(sigma_exp), e, 4, direct, prec)
        for k, nu in enumerate(nus):
            exact = _exact(k, e, sigma_exp)
            assert nu.contains(arb(exact.numerator) / exact.denominator)
            assert nu.rad() <= abs(nu.mid()) * arb(2) ** (-prec + 8)
        for (a, _), p in zip(direct, [Fraction(1, 2), Fraction(1, 3)]):
            exact = _exact(0, e, sigma_exp, p)
            assert directs[a].contains(arb(exact.numerator) / exact.denominator)
            assert directs[a].rad() <= abs(directs[a].mid()) * arb(2) ** (-prec + 8)


def test_a_wrong_integral_is_not_enclosed():
    """The check above can fail: a moment shifted by one part in 2**100 is outside the ball."""
    with flint_workprec(140):
        nus, _ = gl_integrals(_Cubic(0), 0, 1, [], 120)
        exact = _exact(0, 0, 0)
        assert not nus[0].contains(arb(exact.numerator) / exact.denominator * (1 + arb(2) ** -100))


class _Exp:
    """``F(t) = exp(-3 t)`` (``sigma = 1``): not a polynomial, so the rule's truncation error
    is not zero and only its bound makes the ball an enclosure."""

    inv_sigma = arb(1)

    def value(self, s, skip=None):
        out = (-3 * s).exp()
        return out if skip is None else out / (1 - s * skip[1])


def test_the_error_bound_is_what_encloses_a_coarse_rule():
    """At a target of 20 bits (few nodes) and a working precision of 200 bits, the rounding
    radius alone is far below the rule's truncation error: the ball holds the exact
    ``int_0^1 s^k e^{-3s} ds`` (sympy, 60 digits) only with the error bound added."""
    s = sympy.Symbol("s")
    with flint_workprec(200):
        nus, directs = gl_integrals(_Exp(), 0, 3, [(0, arb(1) / 2)], 20)
        for k, nu in enumerate(nus):
            exact = sympy.N(sympy.integrate(s**k * sympy.exp(-3 * s), (s, 0, 1)), 60)
            assert nu.overlaps(arb(str(exact), "1e-55"))
            assert nu.rad() < abs(nu.mid()) * arb(2) ** -15
        exact = sympy.N(sympy.Integral(sympy.exp(-3 * s) / (1 - s / 2), (s, 0, 1)), 60)
        assert directs[0].overlaps(arb(str(exact), "1e-55"))
