"""JointSet.iter_level_arrays against its twin, the exact level objects and the certified
level probabilities (exhaustive small instances, hypothesis, the proven ulp bounds, a
broken entry caught)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

from exactdp import JointSet
from exactdp.errors import InvalidParameterError
from exactdp.mechanisms.joint_set import arrays as joint_set_arrays
from exactdp.core.level_arrays import LevelArrayBlock

import twins.level_arrays as twin_arrays


def check_twin(m, dps, blocks=None):
    twin_arrays.check_twin(m, dps, blocks, block_type=LevelArrayBlock)


def check_bounds(m, dps):
    twin_arrays.check_bounds(m, dps, prec=500)


@pytest.mark.parametrize("d", [1, 2, 3, pytest.param(4, marks=pytest.mark.slow)])
def test_exhaustive_small(monkeypatch, d):
    monkeypatch.setattr(joint_set_arrays, "ARRAY_BLOCK_LEVELS", 1)  # block boundaries everywhere
    for counts in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            check_twin(JointSet(list(counts), k, epsilon=1), 12)


def test_small_examples():
    check_twin(JointSet([10, 5, 1, 1], 2, epsilon=1), 30)
    check_twin(JointSet([3], 1, epsilon=1), 30)
    check_twin(JointSet([7, 7, 7], 3, epsilon=Fraction(1, 3)), 50)
    check_twin(JointSet([9, 4, 4, 2, 0], 3, base=Fraction(1, 3)), 20)
    check_twin(JointSet([9, 4, 4, 2, 0, 6], 3, epsilon=2, sensitivity=3), 25)


def test_low_digits_bound_is_tight_enough():
    for dps in (1, 2, 3):
        check_twin(JointSet([40, 33, 30, 21, 21, 20, 9, 3, 3, 0], 4, epsilon=2), dps)
        check_bounds(JointSet([40, 33, 30, 21, 21, 20, 9, 3, 3, 0], 4, epsilon=2), dps)


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.one_of(st.integers(0, 6), st.integers(0, 10**6)), min_size=1, max_size=9),
       data=st.data(), eps=st.fractions(Fraction(1, 10), 4), dps=st.integers(2, 40))
def test_hypothesis_twin(counts, data, eps, dps):
    k = data.draw(st.integers(1, len(counts)))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joint_set_arrays, "ARRAY_BLOCK_LEVELS", data.draw(st.sampled_from([1, 3, 1 << 14])))
        check_twin(JointSet(counts, k, epsilon=eps), dps)


@settings(max_examples=15, deadline=None)
@given(counts=st.lists(st.integers(2**63, 2**63 + 30) | st.integers(0, 4), min_size=1, max_size=6), data=st.data())
def test_hypothesis_huge_counts(counts, data):
    k = data.draw(st.integers(1, len(counts)))
    check_twin(JointSet(counts, k, epsilon=1), 25)


def test_utilities_past_int64():
    m = JointSet([2**70, 2**70 - 3, 5, 0], 2, epsilon=1)
    check_twin(m, 30)
    assert [b.utility.dtype for b in m.iter_level_arrays()] == [object]


def test_bounds_larger_d_and_k():
    import random

    counts = random.Random(7).sample(range(900), 300)
    check_bounds(JointSet(counts, 30, epsilon=Fraction(1, 50)), 3)


@pytest.mark.parametrize("column", ["log_multiplicity", "log_output_probability"])
def test_a_broken_entry_is_caught(column):
    m = JointSet([40, 33, 30, 21, 21, 20, 9, 3, 3, 0], 4, epsilon=1)
    dps = 20
    blocks = list(m.iter_level_arrays(dps=dps))
    array = getattr(blocks[0], column)
    bump = -(-3 * 2**blocks[0].frac_bits // 10**dps)  # 3 * 10**-dps: past what the check allows
    array[5, 0] += bump % (1 << blocks[0].limb_bits)
    array[5, 1] += bump >> blocks[0].limb_bits
    with pytest.raises(AssertionError):
        check_twin(m, dps, blocks)
    check_twin(m, dps)


def test_dps_validated_and_first_axis():
    with pytest.raises(InvalidParameterError):
        JointSet([3, 2, 1], 2, epsilon=1).iter_level_arrays(dps=0)
    for block in JointSet([40, 30, 22, 21, 7, 7, 0], 3, epsilon=1).iter_level_arrays(dps=25):
        for array, at in ((block.log_multiplicity, block.log_multiplicity_at),
                          (block.log_output_probability, block.log_output_probability_at)):
            assert array.shape[0] == len(block) == len(block.utility) and array.ndim == 2
            for i in range(len(block)):
                value = sum(int(v) << (block.limb_bits * j) for j, v in enumerate(array[i]))
                assert at(i)._mpf_ == mpmath.libmp.from_man_exp(value, -block.frac_bits)
