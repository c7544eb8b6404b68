"""Tests of exactdp.rules.noise: each report-noisy-max noise names its selection rule, and
any other value of ``noise`` is refused with an error naming the argument and the value."""

from __future__ import annotations

import pytest

import exactdp
from exactdp import errors
from exactdp.rules.exponential import ExponentialMechanism
from exactdp.rules.noise import NOISES, as_noise, rule_for_noise
from exactdp.rules.permute_and_flip import PermuteAndFlip


def test_each_noise_names_its_rule():
    assert NOISES == ("gumbel", "exponential")
    assert type(rule_for_noise(as_noise("gumbel"))) is ExponentialMechanism
    assert type(rule_for_noise(as_noise("exponential"))) is PermuteAndFlip


@pytest.mark.parametrize("bad, error", [("Gumbel", errors.InvalidParameterError), ("laplace", errors.InvalidParameterError),
                                        ("", errors.InvalidParameterError), (None, errors.ArgumentTypeError),
                                        (b"gumbel", errors.ArgumentTypeError), (1, errors.ArgumentTypeError)])
def test_other_noises_are_refused_naming_the_value(bad, error):
    with pytest.raises(error, match=r"^noise=" + repr(bad).replace("(", r"\(")):
        as_noise(bad)


@pytest.mark.parametrize("noise, rule", [("gumbel", ExponentialMechanism), ("exponential", PermuteAndFlip)])
def test_the_mechanisms_that_take_noise_use_the_registry(noise, rule):
    assert type(exactdp.Canonical([3, 2, 1, 0], 2, epsilon=1, noise=noise).rule) is rule
    assert type(exactdp.Peeling([3, 2, 1, 0], 2, epsilon=1, noise=noise).round_rule) is rule
    with pytest.raises(errors.InvalidParameterError, match="^noise='uniform'"):
        exactdp.Peeling([3, 2, 1, 0], 2, epsilon=1, noise="uniform")
