"""Tests of exactdp.rules.pnf_levels: permute-and-flip's values over a level table (the
planning floats from exact logs, the fixed-point log-output form and its head), against the
rule's certified probabilities and the plain definitions."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest

from exactdp.core.levels import Level, LevelTable
from exactdp.core.precision import flint_workprec
from exactdp.core.scale import Scale
from exactdp.rules import pnf_levels
from exactdp.rules.pnf_levels import ln_lam, ln_magnitudes, single_output


@pytest.mark.parametrize("scale, lam", [
    (Scale(epsilon=Fraction(3), divisor=Fraction(2)), Fraction(3, 2)),
    (Scale(epsilon=Fraction(1, 10**9), divisor=Fraction(2)), Fraction(1, 2 * 10**9)),
    (Scale(base=Fraction(1, 3)), None),
    (Scale(base=Fraction(999, 1000)), None),
], ids=["epsilon", "tiny epsilon", "base 1/3", "base near 1"])
def test_ln_lam_is_the_log_of_the_exact_lam(scale, lam):
    with mpmath.workdps(40):
        exact = mpmath.log(mpmath.mpf(lam.numerator) / lam.denominator) if lam is not None else \
            mpmath.log(-mpmath.log(mpmath.mpf(scale.base.numerator) / scale.base.denominator))
        assert abs(ln_lam(scale) - float(exact)) <= 1e-12 * max(1.0, abs(float(exact)))


def test_ln_magnitudes_are_the_logs_of_the_weight_exponents():
    table = LevelTable([Level(0, 1), Level(-1, 2), Level(-5, 1), Level(-10**30, 3)], Scale(epsilon=Fraction(2)))
    got = ln_magnitudes(table)
    assert got[0] == -math.inf
    for value, gap in zip(got[1:], [1, 5, 10**30]):
        assert abs(value - math.log(2 * gap)) <= 1e-12 * abs(math.log(2 * gap))


def test_single_output_is_one_level_of_one_output():
    scale = Scale(base=Fraction(1, 2))
    assert single_output(LevelTable([Level(0, 1)], scale))
    assert not single_output(LevelTable([Level(0, 2)], scale))
    assert not single_output(LevelTable([Level(0, 1), Level(-1, 1)], scale))


def test_fixed_log_output_raises_the_precision_where_balls_are_too_wide(monkeypatch):
    """PnfLevels.fixed_log_output at a working precision below the fixed point's: None (the
    rule then doubles it); a head entry asked for anyway comes from a PnfLevels at twice the
    precision, and so on, and is the nearest integer either way."""
    import random as _random

    import mpmath as _mpmath

    from exactdp.rules.permute_and_flip import PermuteAndFlip

    monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)  # the quadrature route
    rng = _random.Random(5)
    levels = [Level(-u, rng.randrange(1, 50)) for u in range(0, 900, 3)]
    table = LevelTable(levels, Scale(epsilon=Fraction(2)))
    F = 150
    with flint_workprec(60):
        coarse = pnf_levels.PnfLevels(table, "auto")
    assert coarse.fixed_log_output(F) is None
    assert coarse._head_entry(0, F) is None
    form = PermuteAndFlip().fixed_log_output(table, F, 40)
    assert 3 <= form.head < len(levels)
    for a in range(3):
        got = coarse._head_entry(a, F, True)  # from finer levels
        assert got == form.entries(a, a + 1)[0]
        with _mpmath.workprec(400):
            exact = PermuteAndFlip().output_probability(table, a, 80)
            assert abs(got - _mpmath.log(exact) * _mpmath.mpf(2) ** F) < 1
    assert coarse._finer is not None and coarse._finer._finer is not None  # 120 bits, then 240


def test_pnf_form_reads_only_the_blocks_its_head_needs():
    """The per-delta form of a table of many levels ends its head at the first level
    below the no-term threshold, walked from the best level: the same head, ``nu_0`` and
    ``rho`` as the first such level found over every level (a bisection planned every
    block of the table: 1.66 million levels, 2.3 CPU s and 370 MB a side at d = 166,000),
    with only the blocks the head reads found."""
    import exactdp

    counts = [11 * i + (i % 5) for i in range(3000)]
    for epsilon in (1, Fraction(1, 50)):
        m = exactdp.PNFJoint(counts, 8, epsilon=epsilon)
        with flint_workprec(300):
            form = m.rule.pnf_form(m.table)
        if epsilon == 1:  # (at 1/50 the weights decay slowly: the shared sums read every block)
            assert not m.table._complete  # blocks past the head were never found
        twin = exactdp.PNFJoint(counts, 8, epsilon=epsilon)
        with flint_workprec(300):
            state = pnf_levels.PnfLevels(twin.table, "auto")
            quad, t = state.quad, twin.table
            u = list(t.utilities)  # every level
            head = next((a for a in range(1, len(u)) if pnf_levels._ln_p(state._lam_log, state._u0 - u[a])
                         < quad._zero_need), len(u))
            assert form.head == head
            assert form.nu0.overlaps(quad.moment0()) and form.nu0.rad() <= quad.moment0().rad()
            if head < len(u):
                p_h = (t.scale.lam_ball() * (u[head] - state._u0)).exp()
                factor = pnf_levels.tail_factor(p_h, 0, quad.S, quad.fact)
                assert form.rho == (p_h * factor / quad.moment0().lower()).upper()
