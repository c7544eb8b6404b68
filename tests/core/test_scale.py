"""Tests of exactdp.core.scale: the weight of one unit of utility, ``exp(epsilon/divisor)``
or an exact rational ``base``, exact in every form it is read (rational, sympy, arb ball)."""

from __future__ import annotations

import pickle
from fractions import Fraction

import pytest
import sympy
from flint import arb, ctx

from exactdp.core.scale import Scale


def test_scale_epsilon():
    s = Scale(epsilon=Fraction(1), divisor=Fraction(2))
    assert s.lam == Fraction(1, 2) and not s.is_rational
    assert s.symbolic_weight(-3) == sympy.exp(sympy.Rational(-3, 2))
    assert s.symbolic_weight(Fraction(-1, 3)) == sympy.exp(sympy.Rational(-1, 6))
    assert s.lam_symbolic() == sympy.Rational(1, 2)
    assert s.rational_weight_ratio(-1) is None
    with ctx.workprec(200):
        assert s.lam_ball().contains(arb(1) / 2)


def test_scale_base():
    s = Scale(base=Fraction(1, 2))
    assert s.lam is None and s.is_rational
    assert s.symbolic_weight(-3) == sympy.Rational(1, 8)
    assert s.symbolic_weight(Fraction(-1, 2)) == sympy.sqrt(2) / 2
    assert s.rational_weight_ratio(-3) == Fraction(1, 8)
    assert s.rational_weight_ratio(2) == 4
    assert s.rational_weight_ratio(Fraction(1, 2)) is None
    assert s.lam_symbolic() == sympy.log(2)
    with ctx.workprec(300):
        ball = s.lam_ball()
        assert ball.contains(arb(2).log())
        assert ball.rad() < arb(2) ** -250


def test_scale_needs_exactly_one():
    with pytest.raises(AssertionError):
        Scale()
    with pytest.raises(AssertionError):
        Scale(epsilon=Fraction(1), base=Fraction(1, 2))


def test_weight_key_says_when_two_scales_weigh_alike():
    one = Scale(epsilon=Fraction(1), divisor=Fraction(1))
    assert Scale(epsilon=Fraction(2), divisor=Fraction(2)).weight_key == one.weight_key == (Fraction(1), None)
    assert Scale(epsilon=Fraction(1), divisor=Fraction(2)).weight_key != one.weight_key
    # a base ignores the divisor; a base and an epsilon are never one key
    assert Scale(base=Fraction(1, 2), divisor=Fraction(3)).weight_key == Scale(base=Fraction(1, 2)).weight_key
    assert Scale(base=Fraction(1, 2)).weight_key != one.weight_key


@pytest.mark.parametrize("scale", [Scale(epsilon=Fraction(3, 7), divisor=Fraction(2)), Scale(base=Fraction(2, 5))])
def test_symbolic_weight_ratio_agrees_with_the_rational_ratio_and_the_ball(scale):
    """Every form of one weight ratio is the same number: ``w(u + delta) / w(u)`` from the
    sympy weights, the exact rational (when there is one) and ``exp(lam * delta)`` on balls."""
    for delta in (-3, -1, 2):
        ratio = sympy.simplify(scale.symbolic_weight(5 + delta) / scale.symbolic_weight(5))
        exact = scale.rational_weight_ratio(delta)
        if exact is not None:
            assert ratio == sympy.Rational(exact.numerator, exact.denominator)
        with ctx.workprec(200):
            ball = (scale.lam_ball() * delta).exp()
            assert ball.overlaps(arb(str(sympy.N(ratio, 80)), "1e-70")) and ball.rad() < arb(2) ** -150
    assert pickle.loads(pickle.dumps(scale)) == scale
