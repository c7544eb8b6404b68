"""Tests of exactdp.core.bruteforce: levels and probabilities by enumerating every output,
the twins of the mechanisms' fast paths, checked on a case small enough to write out by hand
and against a mechanism's own exact values."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations, permutations

import pytest
import sympy

import exactdp
from exactdp.core.bruteforce import brute_levels, brute_probabilities, brute_symbolic_probabilities
from exactdp.core.levels import Level
from exactdp.core.scale import Scale
from twins import joint_utility


def test_brute_force_helpers():
    counts = (2, 1, 0)
    util = lambda s: joint_utility(counts, s)  # noqa: E731
    levels = brute_levels(permutations(range(3), 2), util)
    assert levels == (Level(0, 1), Level(-1, 3), Level(-2, 2))
    probs = brute_probabilities(permutations(range(3), 2), util, Scale(base=Fraction(1, 2)))
    assert probs[(0, 1)] == Fraction(1, 3) and sum(probs.values()) == 1
    with pytest.raises(ValueError):
        brute_probabilities(permutations(range(3), 2), util, Scale(epsilon=Fraction(1), divisor=Fraction(2)))
    sym = brute_symbolic_probabilities(permutations(range(3), 2), util, Scale(epsilon=Fraction(1), divisor=Fraction(2)))
    assert sympy.simplify(sympy.Add(*sym.values())) == 1
    assert sympy.simplify(sym[(0, 1)] - 1 / (1 + 3 * sympy.exp(-sympy.Rational(1, 2)) + 2 * sympy.exp(-1))) == 0
    # the exported names
    assert exactdp.brute_levels is brute_levels


@pytest.mark.parametrize("counts, k", [((3, 1, 1, 0), 2), ((2, 2, 0), 3), ((5, 0, 0, 0), 1)])
def test_brute_force_is_joints_exact_law(counts, k):
    """Joint with a rational base: every output's probability by enumeration is its exact
    probability, and the enumerated levels are Joint's levels."""
    m = exactdp.Joint(list(counts), k, base=Fraction(1, 3))
    outputs = list(permutations(range(len(counts)), k))
    util = lambda s: joint_utility(counts, s)  # noqa: E731
    assert brute_levels(outputs, util) == tuple(m.levels())
    probs = brute_probabilities(outputs, util, Scale(base=Fraction(1, 3)))
    assert probs == {s: m.probability_exact(s) for s in outputs}


def test_brute_levels_are_best_first_with_multiplicities():
    levels = brute_levels(combinations(range(4), 2), lambda s: -sum(s))
    assert levels == (Level(-1, 1), Level(-2, 1), Level(-3, 2), Level(-4, 1), Level(-5, 1))
    assert sum(level.multiplicity for level in levels) == 6
