"""Joint.iter_level_arrays against its twin, the exact level objects and the certified
level probabilities (exhaustive small instances, hypothesis, the proven ulp bounds)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings, strategies as st

from exactdp import Joint, PNFJoint
from exactdp.errors import InvalidParameterError
from exactdp.mechanisms.joint import arrays as joint_arrays
from exactdp.mechanisms.joint import blocks as joint_blocks
from exactdp.mechanisms.joint import sweep as joint_sweep
from exactdp.core.level_arrays import LevelArrayBlock

import twins.level_arrays as twin_arrays


def check_twin(m, dps, blocks=None):
    twin_arrays.check_twin(m, dps, blocks, block_type=LevelArrayBlock)


def check_bounds(m, dps):
    twin_arrays.check_bounds(m, dps, prec=400)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_exhaustive_small(monkeypatch, d):
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 2)
    monkeypatch.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", 2)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 1)
    monkeypatch.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", 1)
    for counts in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            check_twin(Joint(list(counts), k, epsilon=1), 12)


def test_small_examples():
    check_twin(Joint([10, 5, 1, 1], 2, epsilon=1), 30)
    check_twin(Joint([3], 1, epsilon=1), 30)
    check_twin(Joint([7, 7, 7], 3, epsilon=Fraction(1, 3)), 50)
    check_twin(Joint([9, 4, 4, 2, 0], 3, base=Fraction(1, 3)), 20)


def test_low_digits_bound_is_tight_enough():
    # few digits: few fractional bits, so the ulp bounds are what keeps the values right
    for dps in (1, 2, 3):
        check_twin(Joint([40, 33, 30, 21, 21, 20, 9, 3, 3, 0], 6, epsilon=2), dps)
        check_bounds(Joint([40, 33, 30, 21, 21, 20, 9, 3, 3, 0], 6, epsilon=2), dps)


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.one_of(st.integers(0, 6), st.integers(0, 10**6)), min_size=1, max_size=9),
       data=st.data(), eps=st.fractions(Fraction(1, 10), 4), dps=st.integers(2, 40))
def test_hypothesis_twin(counts, data, eps, dps):
    k = data.draw(st.integers(1, len(counts)))
    first, most = data.draw(st.sampled_from([(1, 1), (1, 3), (2, 8), (1 << 10, 1 << 17)]))
    plan = data.draw(st.sampled_from([0, 2, 10**9]))  # the kernel's plan (its F and bound) forced, usual, off
    with pytest.MonkeyPatch.context() as mp:  # array block boundaries anywhere
        mp.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", first)
        mp.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", most)
        mp.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", plan)
        mp.setattr(joint_arrays, "KERNEL_MIN_LEVELS", 1)
        check_twin(Joint(counts, k, epsilon=eps), dps)


@settings(max_examples=15, deadline=None)
@given(counts=st.lists(st.integers(2**62, 2**62 + 30) | st.integers(0, 4), min_size=1, max_size=6), data=st.data())
def test_hypothesis_huge_counts(counts, data):
    k = data.draw(st.integers(1, len(counts)))
    check_twin(Joint(counts, k, epsilon=1), 25)


def test_python_path(monkeypatch):
    monkeypatch.setattr(joint_sweep, "NUMPY_LIMIT", 0)
    check_twin(Joint([10, 5, 1, 1, 0, 7], 3, epsilon=1), 30)
    m = Joint([2**70, 2**70 - 3, 5, 0], 2, epsilon=1)
    check_twin(m, 30)
    assert [b.utility.dtype for b in m.iter_level_arrays()] == [object]


def test_several_factors_at_one_level(monkeypatch):
    # ties between rows' differences: levels where two or more row factors change at once
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 3)
    monkeypatch.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", 3)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 1)
    monkeypatch.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", 1)
    counts = [20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0]
    check_twin(Joint(counts, 5, epsilon=1), 30)
    check_bounds(Joint(counts, 5, epsilon=1), 4)


@pytest.mark.slow
def test_bounds_large_d_and_k():
    import random

    d = 1200
    counts = random.Random(7).sample(range(3 * d), d)
    m = Joint(counts, 150, epsilon=Fraction(1, 50))
    check_bounds(m, 3)  # 3 digits: F about 26 bits, so an error beyond E ulps would show


def test_rule_without_a_fixed_form_refused():
    # PNFJoint has one (tests/mechanisms/joint/test_pnf.py); a rule without it is refused at once
    from exactdp.rules.exponential import ExponentialMechanism

    class NoForm(ExponentialMechanism):
        fixed_log_output_error = None

    m = Joint([3, 2, 1], 2, epsilon=1)
    m.rule = NoForm()
    with pytest.raises(InvalidParameterError, match="fixed-point log-output form"):
        m.iter_level_arrays()
    assert PNFJoint([3, 2, 1], 2, epsilon=1).iter_level_arrays() is not None


def test_blocks_stream_and_dps_validated():
    m = Joint(list(range(50)), 4, epsilon=1)
    it = m.iter_level_arrays(dps=10)
    first = next(it)
    assert first.utility[0] == 0 and len(first) >= 1
    with pytest.raises(InvalidParameterError):
        list(m.iter_level_arrays(dps=0))


def test_the_first_axis_runs_over_the_levels():
    # the limbs of level i are row i: len(block) rows, as utility has
    from exactdp import Joint

    for block in Joint([40, 30, 22, 21, 7, 7, 0], 3, epsilon=1).iter_level_arrays(dps=25):
        for array in (block.log_multiplicity, block.log_output_probability):
            assert array.shape[0] == len(block) == len(block.utility) and array.ndim == 2
            for i in range(len(block)):
                value = sum(int(v) << (block.limb_bits * j) for j, v in enumerate(array[i]))
                at = block.log_multiplicity_at(i) if array is block.log_multiplicity else block.log_output_probability_at(i)
                assert at._mpf_ == mpmath.libmp.from_man_exp(value, -block.frac_bits)  # exact, no rounding


@pytest.mark.parametrize("seed,d,k", [(1, 2000, 3), (2, 1500, 6), (3, 2500, 2)])
def test_kernel_levels_twin(monkeypatch, seed, d, k):
    # distinct-like counts, several events a level, factors large enough that delta < 2**-8:
    # the kernel (not the exact products) computes those levels, against the exact twin
    import random

    monkeypatch.setattr(joint_arrays, "KERNEL_MIN_LEVELS", 1)
    monkeypatch.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", 0)
    monkeypatch.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", 64)
    taken = twin_arrays.count_kernel(monkeypatch)
    counts = random.Random(seed).sample(range(2 * d), d)
    m = Joint(counts, k, epsilon=Fraction(1, 7))
    check_twin(m, 30)
    assert taken[0] > 100
    if seed == 1:  # 45 digits: the kernel at W = 180 (six limbs)
        taken[0] = 0
        check_twin(m, 45)
        assert taken[0] > 100
    taken[0] = 0
    check_bounds(m, 2)  # few digits: the bound itself is what is checked
    assert taken[0] > 100


def test_kernel_planned_only_with_many_events_a_level(monkeypatch):
    import random

    taken = twin_arrays.count_kernel(monkeypatch)
    monkeypatch.setattr(joint_arrays, "KERNEL_MIN_LEVELS", 1)
    d, k = 2000, 4  # about k d = 8,000 events over at most 2,500 levels
    distinct = Joint(random.Random(5).sample(range(d + d // 4), d), k, epsilon=1)
    heavy = Joint([10**6 // r for r in range(1, d + 1)], k, epsilon=1)
    w = (d + 1).bit_length() - 1
    e_kernel = {b.log_multiplicity_error for b in distinct.iter_level_arrays(dps=20)}
    assert taken[0] > 0
    kernel_bound = k * w + 2 * w * (d + 1) + 1
    assert len(e_kernel) == 1 and kernel_bound < e_kernel.pop() <= kernel_bound + kernel_bound // 8
    taken[0] = 0
    assert {b.log_multiplicity_error for b in heavy.iter_level_arrays(dps=20)} == {(k + 2) * w + 1}
    assert taken[0] == 0
    # the twin still holds when the plan is forced on every instance, and off
    monkeypatch.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", 0)
    check_twin(Joint([40, 33, 30, 21, 21, 20, 9, 3, 3, 0], 4, epsilon=2), 25)
    monkeypatch.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", 10**9)
    taken[0] = 0
    check_twin(distinct, 12)
    assert taken[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize("d", [4, 5])  # below 4 no level of several events has delta < 1
def test_exhaustive_small_through_the_kernel(monkeypatch, d):
    # the kernel's domain widened to delta < 1 (its series rebuilt for it; at these sizes W
    # is above F, so its bound still holds with room), so that small instances reach it:
    # every count vector against the exact twin, and the bound
    from exactdp.core import log1mexp

    monkeypatch.setattr(log1mexp, "CUT_BITS", 0)
    monkeypatch.setattr(log1mexp, "_KERNELS", {})
    monkeypatch.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", 0)
    monkeypatch.setattr(joint_arrays, "KERNEL_MIN_LEVELS", 1)
    monkeypatch.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", 1)
    monkeypatch.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", 3)
    taken = twin_arrays.count_kernel(monkeypatch)
    for counts in itertools.product(range(0, 12, 3) if d < 5 else (0, 4, 9), repeat=d):
        for k in range(1, d + 1):
            check_twin(Joint(list(counts), k, epsilon=1), 12)
    check_bounds(Joint([9, 6, 6, 3, 0][:d], min(d, 3), epsilon=1), 3)
    assert taken[0] > 200


def test_a_utility_of_minus_two_to_the_63():
    """``-utility`` of the level ``-2**63`` does not fit ``int64``: its log-probability is
    ``-lam * 2**63 - ln Z`` (``ln Z`` about ``e**(-2**62)``), not a wrapped ``0``."""
    import mpmath

    m = Joint([2**63, 0], 1, epsilon=1)
    blocks = list(m.iter_level_arrays())
    utilities = [int(u) for b in blocks for u in b.utility]
    assert utilities == [0, -(2**63)]
    last = blocks[-1]
    i = len(last) - 1
    assert mpmath.almosteq(last.log_output_probability_at(i), -mpmath.mpf(2) ** 62, rel_eps=mpmath.mpf(10) ** -25)
    assert abs(blocks[0].log_output_probability_at(0)) < mpmath.mpf(10) ** -25


@pytest.mark.parametrize("seed", range(6))
def test_wide_limb_sums_equal_the_limb_sums(monkeypatch, seed):
    """The per-level sums in WIDE_BITS-bit limbs give the blocks of the LIMB_BITS sums, bit
    for bit (tied and distinct counts, kernel on, small blocks)."""
    import random

    rng = random.Random(seed)
    d = rng.randint(20, 300)
    counts = [rng.randint(0, 3 * d) for _ in range(d)] if seed % 2 else rng.sample(range(4 * d), d)
    k = rng.randint(2, min(d, 25))
    monkeypatch.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", 8)
    monkeypatch.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", 300)
    monkeypatch.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", 0)
    monkeypatch.setattr(joint_arrays, "KERNEL_MIN_LEVELS", 1)

    def blocks():
        out = [(b.utility.tolist(), b.log_multiplicity.tolist(), b.log_output_probability.tolist())
               for b in Joint(counts, k, epsilon=1).iter_level_arrays(dps=20)]
        assert out
        return out

    wide = blocks()
    monkeypatch.setattr(joint_arrays, "WIDE_EVENTS", 0)  # every block in LIMB_BITS limbs
    assert blocks() == wide


@pytest.mark.parametrize("seed", range(6))
def test_bincount_sums_equal_the_sorted_sums(monkeypatch, seed):
    """Windows summed by bincount (no tied counts, no sort) give the blocks of the sorted
    windows bit for bit, the exact products of the levels the kernel leaves included."""
    import random

    rng = random.Random(100 + seed)
    d = rng.randint(30, 400)
    counts = rng.sample(range(3 * d), d)
    k = rng.randint(2, min(d, 30))
    monkeypatch.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", 8)
    monkeypatch.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", 500)
    monkeypatch.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", 0)
    monkeypatch.setattr(joint_arrays, "KERNEL_MIN_LEVELS", 1)
    dense_windows = []
    real = joint_arrays._dense_window

    def counting(*args):
        out = real(*args)
        dense_windows.append(out is not None)
        return out

    monkeypatch.setattr(joint_arrays, "_dense_window", counting)

    def blocks():
        return [(b.utility.tolist(), b.log_multiplicity.tolist(), b.log_output_probability.tolist())
                for b in Joint(counts, k, epsilon=1).iter_level_arrays(dps=20)]

    monkeypatch.setattr(joint_arrays, "DENSE_SPAN", 10**9)
    dense = blocks()
    assert dense and all(dense_windows)
    monkeypatch.setattr(joint_arrays, "DENSE_SPAN", 0)
    dense_windows.clear()
    assert blocks() == dense and not any(dense_windows)


def test_events_by_row_are_the_sorted_events():
    counts = [9, 3, 14, 0, 7, 11, 2, 5]
    source = Joint(counts, 3, epsilon=1).table.source
    for lo, hi in [(0, 3), (3, 9), (0, 14), (5, 6)]:
        M, new, old, _ = source.window_events(lo, hi)
        Mr, old_r = source.window_events_by_row(lo, hi)
        assert sorted(zip((Mr + lo + 1).tolist(), old_r.tolist())) == sorted(zip(M.tolist(), old.tolist()))
        assert (new == old + 1).all()
    with pytest.raises(ValueError, match="tied"):
        Joint([3, 3, 1], 2, epsilon=1).table.source.window_events_by_row(0, 2)
