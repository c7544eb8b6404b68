"""Tests of exactdp.teaching.steps, the steps every walk-through shares: exact decimal
bounds, the bits a level draw read, sympy rationals as Fractions, the ranking step and
the check that the walk-through drew what the mechanism's sampler draws."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest
import sympy

import exactdp
from exactdp.teaching.steps import (certified, decimal_text, exact_fraction, ranking_step, sample_check,
                                    summary_step, uniform_bits)


@pytest.mark.parametrize("x, places, down, up", [
    (Fraction(1, 3), 3, "0.333", "0.334"), (Fraction(2, 3), 2, "0.66", "0.67"), (Fraction(1, 4), 2, "0.25", "0.25"),
    (Fraction(5, 1), 1, "5.0", "5.0"), (Fraction(1, 8), 5, "0.12500", "0.12500"), (Fraction(1, 10**6), 3, "0.000", "0.001"),
])
def test_decimal_text_rounds_down_and_up_exactly(x, places, down, up):
    assert decimal_text(x, places) == down and decimal_text(x, places, up=True) == up
    assert Fraction(down) <= x <= Fraction(up)


def test_uniform_bits_read_the_getrandbits_calls_in_order():
    calls = [("getrandbits", 64, 5), ("randrange", 6, 2), ("getrandbits", 32, 7)]
    assert uniform_bits(calls) == ((5 << 32) | 7, 96)
    assert uniform_bits([]) == (0, 0)


def test_exact_fraction_only_for_rationals():
    assert exact_fraction(sympy.Rational(-3, 4)) == Fraction(-3, 4) and exact_fraction(sympy.Integer(2)) == 2
    assert exact_fraction(sympy.exp(sympy.Rational(1, 2))) is None and exact_fraction(0.5) is None


def test_certified_shows_the_digits_asked_for():
    with mpmath.workdps(30):
        assert certified(mpmath.mpf(1) / 3, 5) == "0.33333"
        assert certified(mpmath.mpf(2), 3) == "2.00"


def test_ranking_step_is_the_mechanisms_ranking():
    m = exactdp.Joint([1, 5, 5, 0], 2, epsilon=1)
    rows = ranking_step(m)["ranking"].rows
    assert rows == ((1, 1, 5), (2, 2, 5), (3, 0, 1), (4, 3, 0))


def test_sample_check_and_summary():
    m = exactdp.Joint([4, 2, 1], 2, epsilon=1)
    gen = random.Random(3)
    state = gen.getstate()
    drawn = m.sample(gen)
    assert sample_check(m, state, drawn)
    others = [o for o in m.outputs() if o != drawn]
    assert not sample_check(m, state, others[0])
    step = summary_step(m, drawn, 3, True)
    assert step["sample"] == drawn and step["utility"] == m.utility(drawn) and step["seed"] == 3
    assert summary_step(m, drawn, None, None).names() == ("sample", "utility")
