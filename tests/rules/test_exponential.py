"""Tests of the exponential mechanism (exactdp.rules.exponential) on hand-made level tables,
and the documented limits of its closed form (NoClosedFormError)."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest
import sympy
from flint import arb, ctx, fmpq

import exactdp
from exactdp import errors
from exactdp.rules import exponential
from exactdp.core.levels import Level
from exactdp.core.scale import Scale
from exactdp.core.levels import LevelTable
from exactdp.core.selection import SelectionRule
from exactdp.rules.exponential import ExponentialMechanism



# ======================================================================================
# LevelTable and ExponentialMechanism on hand-made tables
# ======================================================================================
EM = ExponentialMechanism()


def test_em_rational_table():
    # weights 1, 1/2, 1/8 with multiplicities 1, 2, 5: Z = 1 + 1 + 5/8 = 21/8
    t = LevelTable([Level(0, 1), Level(-1, 2), Level(-3, 5)], Scale(base=Fraction(1, 2)))
    assert len(t) == 3 and t.index_of(-3) == 2
    with pytest.raises(KeyError):
        t.index_of(-2)
    exact = [EM.output_probability_exact(t, a) for a in range(3)]
    assert exact == [sympy.Rational(8, 21), sympy.Rational(4, 21), sympy.Rational(1, 21)]
    with mpmath.workdps(80):
        for a, q in enumerate([Fraction(8, 21), Fraction(4, 21), Fraction(1, 21)]):
            ref = mpmath.mpf(q.numerator) / q.denominator
            assert abs(EM.output_probability(t, a, 50) - ref) <= ref * mpmath.mpf(10) ** -50
            assert abs(EM.output_log_probability(t, a, 50) - mpmath.log(ref)) <= -mpmath.log(ref) * mpmath.mpf(10) ** -50
        lp = EM.level_probabilities(t, 50)
        for p, q in zip(lp, [Fraction(8, 21), Fraction(8, 21), Fraction(5, 21)]):
            ref = mpmath.mpf(q.numerator) / q.denominator
            assert abs(p - ref) <= ref * mpmath.mpf(10) ** -50
    with ctx.workprec(100):
        assert t.total().contains(arb(21) / 8)
        assert [w.contains(arb(x)) for w, x in zip(t.level_weights(), [1, 1, fmpq(5, 8)])] == [True] * 3
    assert repr(EM) == "ExponentialMechanism()" and EM.name == "exponential"


def test_em_fractional_utilities_symbolic():
    """Fractional utility gaps: no rational closed form, the sympy expression is exact."""
    levels = [Level(Fraction(1, 2), 3), Level(Fraction(-1, 3), 1), Level(-2, 2)]
    for scale, w in [
        (Scale(epsilon=Fraction(1), divisor=Fraction(2)), lambda g: sympy.exp(sympy.Rational(g.numerator, g.denominator) / 2)),
        (Scale(base=Fraction(1, 2)), lambda g: sympy.Rational(1, 2) ** (-sympy.Rational(g.numerator, g.denominator))),
    ]:
        t = LevelTable(levels, scale)
        gaps = [lv.utility - levels[0].utility for lv in levels]
        z = sum(lv.multiplicity * w(g) for lv, g in zip(levels, gaps))
        total = 0
        for a, (lv, g) in enumerate(zip(levels, gaps)):
            p = EM.output_probability_exact(t, a)
            assert sympy.simplify(p - w(g) / z) == 0
            total += lv.multiplicity * p
            with mpmath.workdps(60):
                ref = sympy.lambdify([], w(g) / z, "mpmath")()
                assert abs(EM.output_probability(t, a, 40) - ref) <= ref * mpmath.mpf(10) ** -40
        assert sympy.simplify(total) == 1


def test_em_sample_level_goodness_of_fit():
    """Level draws of the table above: chi-square, false alarm <= 1e-6."""
    from twins import chi2_statistic, chi2_threshold

    t = LevelTable([Level(0, 1), Level(-1, 2), Level(-3, 5)], Scale(base=Fraction(1, 2)))
    n = 21_000
    rng = random.Random(8)
    observed = {a: 0 for a in range(3)}
    for _ in range(n):
        observed[EM.sample_level(t, rng)] += 1
    stat, df = chi2_statistic(observed, {0: 8000.0, 1: 8000.0, 2: 5000.0})
    assert stat < chi2_threshold(df, 1e-6)


def test_level_table_rejects_bad_levels():
    with pytest.raises(AssertionError):
        LevelTable([], Scale(base=Fraction(1, 2)))
    with pytest.raises(AssertionError):
        LevelTable([Level(-1, 1), Level(0, 1)], Scale(base=Fraction(1, 2)))
    with pytest.raises(TypeError):
        SelectionRule()  # abstract


def test_level_table_huge_gaps():
    """Weights of levels 10**30 apart stay certified (tiny but with full relative accuracy)."""
    t = LevelTable([Level(0, 1), Level(-(10**30), 3)], Scale(epsilon=Fraction(1, 3), divisor=Fraction(2)))
    p = EM.output_probability(t, 1, 30)
    with mpmath.workdps(80):
        lam = mpmath.mpf(1) / 6
        ref = mpmath.exp(-lam * 10**30) / (1 + 3 * mpmath.exp(-lam * 10**30))
        assert abs(p - ref) <= ref * mpmath.mpf(10) ** -30
        lg = EM.output_log_probability(t, 1, 30)
        assert abs(lg - mpmath.log(ref)) <= abs(mpmath.log(ref)) * mpmath.mpf(10) ** -30
        lg0 = EM.output_log_probability(t, 0, 30)  # ~ -3e^(-1.7e29): relative accuracy near 0
        ref0 = -mpmath.log1p(3 * mpmath.exp(-lam * 10**30))
        assert abs(lg0 - ref0) <= abs(ref0) * mpmath.mpf(10) ** -30


# ======================================================================================
# NoClosedFormError past the documented limits
# ======================================================================================
def test_symbolic_levels_limit(monkeypatch):
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)  # 4 levels
    assert m.probability_exact((0, 1)) is not None
    monkeypatch.setattr(exponential, "SYMBOLIC_LEVELS_LIMIT", 3)
    with pytest.raises(errors.NoClosedFormError, match="SYMBOLIC_LEVELS_LIMIT") as info:
        exactdp.Joint([10, 5, 1, 1], 2, epsilon=1).probability_exact((0, 1))
    assert isinstance(info.value, ValueError)
    # the numeric path is unaffected
    assert mpmath.nstr(m.probability((0, 1), dps=20), 5) == "0.63148"
    monkeypatch.setattr(exponential, "SYMBOLIC_LEVELS_LIMIT", 4)
    assert exactdp.Joint([10, 5, 1, 1], 2, epsilon=1).probability_exact((0, 1)) is not None


def test_exact_bits_limit(monkeypatch):
    # base 1/2, deepest level 9 below the best: about 9 * 2 = 18 bits per term
    m = exactdp.Joint([10, 5, 1, 1], 2, base=Fraction(1, 2))
    assert m.probability_exact((0, 1)) == sympy.Rational(512, 512 + 2 * 32 + 3 * 16 + 6)
    monkeypatch.setattr(exponential, "EXACT_BITS_LIMIT", 10)
    with pytest.raises(errors.NoClosedFormError, match="EXACT_BITS_LIMIT"):
        exactdp.Joint([10, 5, 1, 1], 2, base=Fraction(1, 2)).probability_exact((0, 1))


def test_exact_levels_limit(monkeypatch):
    monkeypatch.setattr(exponential, "EXACT_LEVELS_LIMIT", 3)
    with pytest.raises(errors.NoClosedFormError, match="EXACT_LEVELS_LIMIT"):
        exactdp.Joint([10, 5, 1, 1], 2, base=Fraction(1, 2)).probability_exact((0, 1))


def test_exact_bits_limit_reached_naturally():
    """Counts 10**30 apart with a rational base: the exact rational would need ~10**30 bits."""
    m = exactdp.Joint([10**30, 0], 1, base=Fraction(1, 2))
    with pytest.raises(errors.NoClosedFormError, match="EXACT_BITS_LIMIT"):
        m.probability_exact((1,))
    # numerically fine: P(1) = 2**-(10**30) / (1 + 2**-(10**30))
    p = m.log_probability((1,), dps=30)
    with mpmath.workdps(80):
        ref = -(10**30) * mpmath.log(2) - mpmath.log1p(mpmath.mpf(2) ** -(10**30))
        assert abs(p - ref) <= abs(ref) * mpmath.mpf(10) ** -30
    # with epsilon the closed form is a short symbolic expression
    expr = exactdp.Joint([10**30, 0], 1, epsilon=1).probability_exact((1,))
    assert sympy.simplify(expr - sympy.exp(-sympy.Integer(10**30) / 2) / (1 + sympy.exp(-sympy.Integer(10**30) / 2))) == 0
