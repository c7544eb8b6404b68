"""Tests of exactdp.core.selection: the selection-rule interface's defaults (by level index
from a utility, level probabilities one at a time, ``n`` draws as ``n`` calls in order) and
what a rule must provide."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest

from exactdp.core.levels import Level, LevelTable
from exactdp.core.scale import Scale
from exactdp.core.selection import FixedLogOutput, SelectionRule
from exactdp.rules.exponential import ExponentialMechanism
from exactdp.rules.permute_and_flip import PermuteAndFlip

TABLE = LevelTable([Level(0, 1), Level(-1, 2), Level(-3, 1)], Scale(base=Fraction(1, 2)))


class _Uniform(SelectionRule):
    """Every output equally likely: only the abstract methods, the defaults inherited."""

    name = "uniform"

    def output_probability(self, table, a, dps):
        return mpmath.mpf(1) / sum(level.multiplicity for level in table.levels)

    def output_log_probability(self, table, a, dps):
        return mpmath.log(self.output_probability(table, a, dps))

    def level_probabilities(self, table, dps):
        return [level.multiplicity * self.output_probability(table, 0, dps) for level in table.levels]

    def output_probability_exact(self, table, a):
        return Fraction(1, sum(level.multiplicity for level in table.levels))

    def sample_level(self, table, rng):
        return rng.randrange(len(table.levels))


def test_a_rule_must_provide_the_abstract_methods():
    with pytest.raises(TypeError, match="abstract"):
        SelectionRule()


def test_the_defaults_read_the_abstract_methods():
    rule = _Uniform()
    assert rule.utility_probability(TABLE, -1, 30) == rule.output_probability(TABLE, 1, 30) == mpmath.mpf(1) / 4
    assert rule.utility_log_probability(TABLE, -3, 30) == mpmath.log(mpmath.mpf(1) / 4)
    with pytest.raises(KeyError):
        rule.utility_probability(TABLE, -2, 30)  # no level has utility -2
    assert list(rule.iter_level_probabilities(TABLE, 30)) == rule.level_probabilities(TABLE, 30)
    assert repr(rule) == "_Uniform()"
    with pytest.raises(NotImplementedError, match="_Uniform has no fixed-point log-output form"):
        rule.fixed_log_output(TABLE, 64, 30)
    assert rule.fixed_log_output_error is None


def test_sample_levels_is_n_draws_in_order():
    rule = _Uniform()
    one, many = random.Random(11), random.Random(11)
    assert rule.sample_levels(TABLE, many, 50) == [rule.sample_level(TABLE, one) for _ in range(50)]
    assert rule.sample_levels(TABLE, random.Random(1), 0) == []


@pytest.mark.parametrize("rule", [ExponentialMechanism(), PermuteAndFlip()])
def test_the_rules_are_selection_rules_with_a_fixed_point_form(rule):
    assert isinstance(rule, SelectionRule) and rule.fixed_log_output_error is not None
    form = rule.fixed_log_output(TABLE, 60, 30)
    assert isinstance(form, FixedLogOutput)
    with mpmath.workdps(40):
        exact = [mpmath.log(rule.output_probability(TABLE, a, 30)) for a in range(len(TABLE.levels))]
        head = form.entries(0, form.head) if form.head else []
        for a, value in enumerate(exact):
            if a < form.head:
                got = mpmath.mpf(head[a]) / 2**60
            else:
                got = (mpmath.mpf(form.offset) / 2**60) + mpmath.log(mpmath.mpf(1) / 2) * -(TABLE.levels[a].utility - 0)
            assert abs(got - value) <= mpmath.mpf(rule.fixed_log_output_error + 1) / 2**60
