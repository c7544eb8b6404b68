"""Joint's block table: levels restartable at every block, certified weights, and the
streamed path (a tiny memory budget) identical to the in-memory one.

Twins: ``brute_levels`` / ``count_at_least`` (every sequence enumerated) and the generic
:class:`~exactdp.core.levels.LevelTable` (multiplicity times ``exp(lam*u)``, one ball each).
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import mpmath
import pytest
from flint import arb
from hypothesis import HealthCheck, given, settings

import exactdp
from exactdp.core.levels import LevelTable
from exactdp.core.precision import flint_workprec
from exactdp.errors import InvalidParameterError, MemoryBudgetError
from exactdp.mechanisms.joint import blocks as joint_blocks
from exactdp.mechanisms.joint import sweep as joint_sweep
from exactdp.mechanisms.joint.blocks import JointLevelSource, _ExpDigits
from exactdp.rules.exponential import ExponentialMechanism

from twins import brute_levels, count_at_least, counts_and_k

SMALL = range(4)


def _pairs(levels):
    return [(lv.utility, lv.multiplicity) for lv in levels]


@pytest.mark.slow
@pytest.mark.parametrize("block_events", [1, 2, 5])
def test_levels_exhaustive_with_block_boundaries_everywhere(monkeypatch, block_events):
    """Every vector in {0..3}^d, d <= 4, every k, with blocks of 1, 2 or 5 events (a
    boundary between almost every pair of levels), numpy and pure-Python paths."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", block_events)
    for d in range(1, 5):
        for counts in itertools.product(SMALL, repeat=d):
            for k in range(1, d + 1):
                expected = brute_levels(counts, k)
                m = exactdp.Joint(counts, k)
                assert _pairs(m.levels()) == expected, (counts, k)
                assert _pairs(m.iter_levels()) == expected, (counts, k)
                assert sum(m.table._sizes) == len(expected)


def test_python_path_blocks(monkeypatch):
    monkeypatch.setattr(joint_sweep, "NUMPY_LIMIT", 0)
    for d in range(1, 5):
        for counts in itertools.product(SMALL, repeat=d):
            for k in range(1, d + 1):
                assert _pairs(exactdp.Joint(counts, k).levels()) == brute_levels(counts, k)


def test_count_at_least_matches_enumeration():
    """``N(M)`` straight from the thresholds equals the number of sequences with utility
    ``>= -M`` (the restart point of every block)."""
    for d in range(1, 5):
        for counts in itertools.product(SMALL, repeat=d):
            for k in range(1, d + 1):
                src = JointLevelSource(exactdp.Joint(counts, k).ranking, k)
                for M in range(0, 5):
                    assert src.count_at_least(M) == count_at_least(counts, k, M), (counts, k, M)


@pytest.mark.parametrize("M", [0, 1, 4095, 4096, 4097, 2**24 + 3, 10**12 + 7, 2**61 - 1])
def test_exp_digits_encloses_exp(M):
    """The digit product is a tight ball containing ``exp(-lam*M)`` (checked against a
    ball computed directly at twice the precision)."""
    with flint_workprec(400):
        true = (-(arb(3) / 7) * M).exp()
    with flint_workprec(200):
        got = _ExpDigits(arb(3) / 7)(M)
        assert got.contains(true)
        assert got.rel_accuracy_bits() > 200 - M.bit_length() - 8  # lam*M carries M's bits
        assert not _ExpDigits(arb(3) / 7)(M + 1).contains(true)  # the check can fail


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=7, max_sequences=3000))
def test_block_weights_enclose_the_generic_weights(ck):
    """Each block ball ``m e`` overlaps the generic ball ``arb(m) * exp(lam*u)`` (both
    contain the true weight), and 25-digit probabilities agree to 25 digits."""
    counts, k = ck
    m = exactdp.Joint(counts, k, epsilon=Fraction(2, 3))
    generic = LevelTable(m.levels(), m.scale)
    with flint_workprec(160):
        for a, b in zip(m.table.level_weights(), generic.level_weights()):
            assert a.overlaps(b)
        assert m.table.total().overlaps(generic.total())
    ours = [p for _, p in m.level_probabilities(25)]
    theirs = ExponentialMechanism().level_probabilities(generic, 25)
    for x, y in zip(ours, theirs):
        assert abs(x - y) <= 3 * mpmath.mpf(10) ** -25 * y


def _instance(seed: int):
    rng = random.Random(seed)
    d = rng.randint(1, 30)
    k = rng.randint(1, min(d, 6))
    counts = [rng.choice([rng.randint(0, 9), rng.randint(0, 10**6)]) for _ in range(d)]
    return counts, k


@pytest.mark.parametrize("seed", range(12))
def test_streamed_and_in_memory_are_identical(monkeypatch, seed):
    """A budget of a few bytes keeps two blocks at a time and recomputes the rest: every
    level, certified digit, probability and seeded sample is the same as in memory."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 7)
    counts, k = _instance(seed)
    full = exactdp.Joint(counts, k, epsilon=Fraction(1, 3))
    small = exactdp.Joint(counts, k, epsilon=Fraction(1, 3), memory_budget=1)
    assert list(small.iter_levels()) == list(full.levels())
    got = list(small.iter_level_probabilities(30))
    want = full.level_probabilities(30)
    assert [lv for lv, _ in got] == [lv for lv, _ in want]
    assert all(p == q and p.man == q.man and p.exp == q.exp for (_, p), (_, q) in zip(got, want))
    assert small.samples(25, rng=seed) == full.samples(25, rng=seed)
    out = full.sample(rng=seed + 100)
    assert small.probability(out, dps=40) == full.probability(out, dps=40)
    assert small.log_probability(out, dps=20) == full.log_probability(out, dps=20)
    assert small.support_size() == full.support_size() == math.perm(len(counts), k)
    assert not small.table._cache and len(small.table._recent) <= 4  # nothing fits the budget


def test_memory_budget_errors_name_the_budget():
    m = exactdp.Joint([5, 4, 3, 2, 1, 0], 3, memory_budget=100)
    with pytest.raises(MemoryBudgetError, match=r"memory_budget = 100 bytes.*iter_levels\(\)"):
        m.levels()
    with pytest.raises(MemoryBudgetError, match=r"iter_level_probabilities\(\)"):
        m.level_probabilities()
    # the streamed methods work within the same budget
    assert _pairs(m.iter_levels()) == brute_levels([5, 4, 3, 2, 1, 0], 3)
    assert len(list(m.iter_level_probabilities())) == len(brute_levels([5, 4, 3, 2, 1, 0], 3))
    assert isinstance(MemoryBudgetError("memory_budget", 1, "x"), ValueError)
    assert "memory_budget=100" in repr(m)


@pytest.mark.parametrize("bad", [0, -5, "big", 1.5])
def test_memory_budget_validation(bad):
    with pytest.raises((InvalidParameterError, TypeError)) as info:
        exactdp.Joint([3, 2, 1], 2, memory_budget=bad)
    assert "memory_budget" in str(info.value)


def test_pnf_joint_streams_levels_too(monkeypatch):
    """PNFJoint shares the block table: streamed levels and probabilities match."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 3)
    counts, k = [9, 7, 7, 4, 2, 1, 0], 3
    full = exactdp.PNFJoint(counts, k)
    assert list(exactdp.PNFJoint(counts, k, memory_budget=1).iter_levels()) == list(full.levels())
    got = [p for _, p in full.iter_level_probabilities(20)]
    want = [p for _, p in full.level_probabilities(20)]
    assert got == want


class _Bits(random.Random):
    """A generator whose first ``ones`` bits are all 1 (a uniform just below 1, deep in
    the tail), then seeded random bits."""

    def __init__(self, ones: int, seed: int):
        super().__init__(seed)
        self.ones = ones

    def getrandbits(self, n: int) -> int:
        take = min(n, self.ones)
        self.ones -= take
        rest = n - take
        return (((1 << take) - 1) << rest) | (super().getrandbits(rest) if rest else 0)


@pytest.mark.parametrize("ones", [0, 60, 150, 260, 400])
def test_truncated_running_sum_samples_the_tail_exactly(monkeypatch, ones):
    """Fast-decaying weights: the running sum stops after a few blocks (the rest is below
    2**-prec of it); a uniform drawn deep in the tail extends it block by block and gets
    the same level as the plain inverse-CDF sampler over every level in memory."""
    from exactdp.core.sampling import choose_index

    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 1)
    m = exactdp.Joint([400, 200, 100, 50, 0], 2, epsilon=2)
    table = m.table
    with flint_workprec(table.sampling_prec):
        run = table._pass()
        assert len(run.starts) < len(table.block_ranges())  # stopped early
    generic = LevelTable(m.levels(), m.scale)
    for seed in range(3):
        got = ExponentialMechanism().sample_level(table, _Bits(ones, seed))
        want = choose_index(lambda prec: generic.cumulative(), len(generic), _Bits(ones, seed))
        assert got == want
    if ones >= 260:
        assert got >= 2  # beyond the one block the running sum stopped after


def test_memory_budget_from_text_and_the_command_line(capsys):
    """The command line passes ``--memory-budget`` as text: digits (underscores allowed)."""
    from exactdp.cli import main

    assert exactdp.Joint([3, 2, 1], 2, memory_budget="1_000").memory_budget == 1000
    for bad in ("1e9", "-3", "", "0"):
        with pytest.raises(InvalidParameterError, match="memory_budget"):
            exactdp.Joint([3, 2, 1], 2, memory_budget=bad)
    # levels are streamed within any budget: the same rows (the description names the budget)
    assert main(["levels", "joint", "--counts", "5,3,1,0", "-k", "2", "--memory-budget", "100"]) == 0
    small = capsys.readouterr().out
    assert "memory_budget=100)" in small
    assert main(["levels", "joint", "--counts", "5,3,1,0", "-k", "2", "--memory-budget", "100000"]) == 0
    large = capsys.readouterr().out
    assert "memory_budget=100000" in large
    assert small.replace("memory_budget=100)", "") == large.replace("memory_budget=100000)", "")
    # permute-and-flip streams its level probabilities too: the same rows within any budget
    for budget in ("100", "100000"):
        assert main(["dist", "pnf-joint", "--counts", "5,3,1,0", "-k", "2", "--memory-budget", budget]) == 0
    small, large = capsys.readouterr().out.split("level  utility")[1:]
    assert small.replace("memory_budget=100)", "") == large.replace("memory_budget=100000)", "")


@pytest.mark.parametrize("block_events", [1, 3, 1 << 17])
def test_log_probability_with_a_truncated_running_sum(monkeypatch, block_events):
    """``log_probability`` sums the other levels over the blocks summed first plus the
    bound on the rest: certified digits agree with the generic table's for every level."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", block_events)
    m = exactdp.Joint([400, 200, 100, 50, 0], 2, epsilon=2)
    generic = LevelTable(m.levels(), m.scale)
    rule = ExponentialMechanism()
    for a in range(len(generic)):
        got = rule.output_log_probability(m.table, a, 30)
        want = rule.output_log_probability(generic, a, 30)
        assert abs(got - want) <= 2 * mpmath.mpf(10) ** -30 * abs(want), a
