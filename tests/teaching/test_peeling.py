"""Tests of exactdp.teaching.peeling, the walk-through of the peeling baselines: every number
checked against the mechanism (the explain checker) for both noises, and the law of its draws
(its rounds, drawn by another route than Peeling.sample) against the exact law of peeling.
False-alarm rate of each goodness-of-fit test: alpha = 1e-6."""

from __future__ import annotations

from fractions import Fraction

import pytest

import exactdp
from exactdp.teaching import explain
from exactdp.teaching.peeling import explain_peeling
from tests.teaching.explain_cases import BASE
from tests.teaching.explain_checker import problems
from twins.chi2 import assert_fits
from twins.peeling import peel_exact


@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
@pytest.mark.parametrize("counts, k", [((3, 1, 1, 0), 2), ((2, 2, 2), 3), ((1, 0), 1)])
def test_the_walk_through_checks_round_by_round(counts, k, noise):
    m = exactdp.Peeling(list(counts), k, base=BASE, noise=noise)
    e = explain_peeling(m, 5, 12)
    assert e == explain(m, rng=5) and problems(e, m) == []
    assert [s.key for s in e.steps if s.key.startswith("round_")] == [f"round_{r}" for r in range(1, k + 1)]


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_peeling_walk_through_has_the_law_of_peeling(noise):
    m = exactdp.Peeling([2, 1, 1], 2, base=BASE, noise=noise)
    draws = [explain(m, rng=s).step("sample")["sample"] for s in range(1200)]
    assert_fits(draws, peel_exact(m.counts, 2, BASE, noise))


@pytest.mark.slow
def test_peeling_law_negative_control():
    # the walk-through's draws against a wrong law (every sequence equally likely) must be rejected
    m = exactdp.Peeling([2, 1, 1], 2, base=Fraction(1, 4))
    draws = [explain(m, rng=s).step("sample")["sample"] for s in range(1200)]
    uniform = {s: Fraction(1, 6) for s in peel_exact(m.counts, 2, m.base, "gumbel")}
    with pytest.raises(AssertionError):
        assert_fits(draws, uniform)
