"""Canonical.iter_level_arrays against its twin, the exact level objects and the certified
level probabilities (exhaustive small instances, hypothesis, the proven ulp bounds, a
broken entry caught)."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from exactdp import Canonical, CanonicalGamma1, Peeling
from exactdp.errors import InvalidParameterError, NoLevelArraysError, NotSingleRuleError
from exactdp.mechanisms.canonical import arrays as canonical_arrays
from exactdp.mechanisms.canonical.arrays import CanonicalLevelArrayBlock
from exactdp.core.level_arrays import LevelArrayBlock

import twins.level_arrays as twin_arrays


def check_twin(m, dps, blocks=None):
    twin_arrays.check_twin(m, dps, blocks, block_type=CanonicalLevelArrayBlock)


def check_bounds(m, dps):
    twin_arrays.check_bounds(m, dps, prec=600)


def _tiny_blocks(mp):
    mp.setattr(canonical_arrays, "ARRAY_FIRST_ENTRIES", 1)
    mp.setattr(canonical_arrays, "ARRAY_BLOCK_ENTRIES", 2)


RHOS = (Fraction(1, 2), Fraction(1), Fraction(0), Fraction(1, 3))


@pytest.mark.parametrize("d", [1, 2, 3, pytest.param(4, marks=pytest.mark.slow)])
def test_exhaustive_small(monkeypatch, d):
    _tiny_blocks(monkeypatch)  # block boundaries everywhere
    for counts in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            for rho in RHOS:
                check_twin(Canonical(list(counts), k, epsilon=1, rho=rho), 12)
            check_twin(Canonical(list(counts), k, epsilon=1, noise="exponential"), 12)


def test_small_examples():
    check_twin(Canonical([10, 5, 1, 1], 2, epsilon=1), 30)
    check_twin(Canonical([3], 1, epsilon=1), 30)
    check_twin(Canonical([7, 7, 7], 3, epsilon=Fraction(1, 3)), 50)
    check_twin(Canonical([9, 4, 4, 2, 0], 3, base=Fraction(1, 3)), 20)
    check_twin(Canonical([9, 4, 4, 2, 0, 0, 1], 3, base=Fraction(2, 3), rho=Fraction(2, 7)), 25)
    # permute-and-flip: the rule's head of levels one by one, then one offset
    check_twin(Canonical([10, 5, 1, 1], 2, epsilon=1, noise="exponential"), 30)
    check_twin(Canonical([9, 4, 4, 2, 0, 0, 1], 3, base=Fraction(2, 3), noise="exponential"), 25)
    check_twin(Canonical([10**9 // r**3 for r in range(1, 30)], 6, epsilon=Fraction(1, 10**6),
                         noise="exponential"), 30)


def test_utilities_exact():
    # q = 1: int64 utilities; q = 2: exact Fractions (object), the keys int64 either way
    block = next(Canonical([10, 5, 1, 1], 2, epsilon=1, rho=1).iter_level_arrays(dps=20))
    assert block.utility.dtype == np.int64 and block.loss_denominator == 1
    block = next(Canonical([10, 5, 1, 1], 2, epsilon=1).iter_level_arrays(dps=20))
    assert block.utility.dtype == object and block.loss_key.dtype == np.int64
    assert block.utility.tolist() == [0, -2, Fraction(-9, 2)] and block.loss_key.tolist() == [0, 4, 9]
    assert len(block) == 3


def test_low_digits_bound_is_tight_enough():
    # few digits: few fractional bits, so the ulp bounds are what keeps the values right
    counts = [40, 33, 30, 21, 21, 20, 9, 3, 3, 0]
    for dps in (1, 2, 3):
        for rho in RHOS:
            check_twin(Canonical(counts, 4, epsilon=2, rho=rho), dps)
            check_bounds(Canonical(counts, 4, epsilon=2, rho=rho), dps)


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.one_of(st.integers(0, 6), st.integers(0, 10**6)), min_size=1, max_size=9),
       data=st.data(), eps=st.fractions(Fraction(1, 10), 4), dps=st.integers(2, 40),
       rho=st.fractions(0, 1, max_denominator=7), noise=st.sampled_from(["gumbel", "exponential"]))
def test_hypothesis_twin(counts, data, eps, dps, rho, noise):
    k = data.draw(st.integers(1, len(counts)))
    first, most = data.draw(st.sampled_from([(1, 1), (1, 3), (2, 8), (1 << 10, 1 << 17)]))
    with pytest.MonkeyPatch.context() as mp:  # array block boundaries anywhere
        mp.setattr(canonical_arrays, "ARRAY_FIRST_ENTRIES", first)
        mp.setattr(canonical_arrays, "ARRAY_BLOCK_ENTRIES", most)
        check_twin(Canonical(counts, k, epsilon=eps, rho=rho, noise=noise), dps)


@settings(max_examples=15, deadline=None)
@given(counts=st.lists(st.integers(2**62, 2**62 + 30) | st.integers(0, 4), min_size=1, max_size=6), data=st.data())
def test_hypothesis_huge_counts(counts, data):
    k = data.draw(st.integers(1, len(counts)))
    check_twin(Canonical(counts, k, epsilon=1), 25)


def test_keys_past_int64():
    m = Canonical([2**70, 2**70 - 3, 5, 0, 0], 2, epsilon=1)
    check_twin(m, 30)
    assert [b.loss_key.dtype for b in m.iter_level_arrays()] == [object]


def test_one_class_and_several_class_levels(monkeypatch):
    # heavy-tailed counts: every level one class (the table path); ties in the differences:
    # levels of several runs (the exact path); both in one instance, blocks of one entry
    _tiny_blocks(monkeypatch)
    heavy = [10**9 // r**3 for r in range(1, 30)]
    check_twin(Canonical(heavy, 6, epsilon=Fraction(1, 10**6)), 30)
    check_bounds(Canonical(heavy, 6, epsilon=Fraction(1, 10**6)), 4)
    spaced = [2 * i for i in range(14, -1, -1)]
    check_twin(Canonical(spaced, 5, epsilon=1), 30)
    check_bounds(Canonical(spaced, 5, epsilon=1), 4)


@pytest.mark.slow
def test_bounds_large_d_and_k():
    d = 700
    counts = random.Random(7).sample(range(3 * d), d)
    m = Canonical(counts, 60, epsilon=Fraction(1, 50))
    check_bounds(m, 3)  # 3 digits: F about 35 bits, so an error beyond E ulps would show
    heavy = [10**15 // r**2 for r in range(1, d + 1)]
    check_bounds(Canonical(heavy, 60, epsilon=Fraction(1, 10**9)), 3)


def _one_class(m, lv):
    """Whether the level is one class (its multiplicity one binomial: the table path)."""
    runs = list(m.classes_.runs_of_key(int(-Fraction(lv.utility) * m.classes_.q)))
    return len(runs) == 1 and runs[0][1] == runs[0][2] and runs[0][1] != m.k


@pytest.mark.parametrize("which", ["one class", "several classes"])
@pytest.mark.parametrize("column", ["log_multiplicity", "log_output_probability"])
def test_a_broken_entry_is_caught(which, column):
    # the twin check fails when one entry of one block is off by 10**-dps relative
    m = Canonical([40, 33, 30, 21, 21, 20, 9, 3, 3, 0], 4, epsilon=1) if which == "several classes" else \
        Canonical([10**9 // r**3 for r in range(1, 12)], 4, epsilon=Fraction(1, 10**6))
    dps = 20
    blocks = list(m.iter_level_arrays(dps=dps))
    levels = list(m.iter_levels())
    index = next(i for i, lv in enumerate(levels) if i > 0 and _one_class(m, lv) == (which == "one class"))
    offset = 0
    for block in blocks:
        if index < offset + len(block):
            array = getattr(block, column)
            # 3 * 10**-dps in ulps: past the 2 * 10**-dps the check allows
            bump = -(-3 * 2**block.frac_bits // 10**dps)
            array[index - offset, 0] += bump % (1 << block.limb_bits)
            array[index - offset, 1] += bump >> block.limb_bits
            break
        offset += len(block)
    with pytest.raises(AssertionError):
        check_twin(m, dps, blocks)
    check_twin(m, dps)  # a fresh pass is right


def test_refusals():
    with pytest.raises(NotSingleRuleError):
        CanonicalGamma1([3, 2, 1], 2, epsilon=1).iter_level_arrays()
    for m in [Peeling([3, 2, 1], 2, epsilon=1)]:
        with pytest.raises(NoLevelArraysError, match="iter_level_probabilities"):
            m.iter_level_arrays(dps=30)
    with pytest.raises(InvalidParameterError):
        list(Canonical([3, 2, 1], 2, epsilon=1).iter_level_arrays(dps=0))


def test_the_first_axis_runs_over_the_levels():
    for block in Canonical([40, 30, 22, 21, 7, 7, 0], 3, epsilon=1).iter_level_arrays(dps=25):
        for array, at in ((block.log_multiplicity, block.log_multiplicity_at),
                          (block.log_output_probability, block.log_output_probability_at)):
            assert array.shape[0] == len(block) == len(block.loss_key) and array.ndim == 2
            for i in range(len(block)):
                value = sum(int(v) << (block.limb_bits * j) for j, v in enumerate(array[i]))
                assert at(i)._mpf_ == mpmath.libmp.from_man_exp(value, -block.frac_bits)  # exact
