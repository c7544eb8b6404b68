"""Joint's blocks planned lazily: a block's boundary and levels are found when the table
first reads it, and the blocks equal those of one eager plan of every block.

Twins: :func:`twins.eager_blocks` (every threshold event listed and sorted, cut into the
same blocks, multiplicities from the formula) and :func:`twins.brute_levels` (every
sequence enumerated).
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.mechanisms.joint import blocks as joint_blocks
from exactdp.mechanisms.joint.blocks import JointLevelSource

from twins import brute_levels, counts_and_k, eager_blocks

SMALL = range(4)


def _pairs(levels):
    return [(lv.utility, lv.multiplicity) for lv in levels]


def _check_lazy_equals_eager(counts, k, block_events, first_events, budget):
    """The table's blocks (found in order by a pass over the levels), the source's blocks
    planned out of order (the last first), and the eager plan are the same, level by level."""
    want = eager_blocks(counts, k, block_events, first_events)
    m = exactdp.Joint(counts, k, epsilon=Fraction(1, 3), memory_budget=budget)
    table = m.table
    assert len(table._sizes) == 1  # a new table plans its first block only
    assert _pairs(table.iter_levels()) == [lv for block in want for lv in block]
    ranges = table.block_ranges()
    assert [stop - start for start, stop in ranges] == [len(block) for block in want]
    assert [_pairs(table._block_levels(b)) for b in range(len(ranges))] == want
    # a fresh source asked for its blocks from the last to the first
    src = JointLevelSource(m.ranking, k)
    n = len(want)
    assert [_pairs(src.block_levels(b)) for b in reversed(range(n))] == want[::-1]
    assert src.block_sizes() == [len(block) for block in want]
    assert src.block_first_utilities() == [block[0][0] for block in want]
    assert src.next_block() == (len(want[0]), want[0][0][0])
    assert len(src._sizes) == n  # every block planned once, none past the last
    return want


@pytest.mark.slow
@pytest.mark.parametrize("block_events, first_events", [(1, 1), (2, 1), (3, 1), (5, 2), (8, 1)])
@pytest.mark.parametrize("budget", [1, 3000])
def test_lazy_blocks_equal_the_eager_plan_exhaustive(monkeypatch, block_events, first_events, budget):
    """Every vector in {0..3}^d, d <= 4, every k, blocks of 1 to 8 events (growing from
    ``first_events``), budgets that keep nothing or a few blocks: the same blocks and
    levels as the eager plan, and the same levels as enumeration."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", block_events)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", first_events)
    for d in range(1, 5):
        for counts in itertools.product(SMALL, repeat=d):
            for k in range(1, d + 1):
                want = _check_lazy_equals_eager(counts, k, block_events, first_events, budget)
                assert [lv for block in want for lv in block] == brute_levels(counts, k), (counts, k)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(counts_and_k(max_d=7, max_sequences=3000), st.sampled_from([1, 2, 4, 1 << 17]),
       st.sampled_from([1, 2, 1 << 10]), st.sampled_from([1, 5000, 1 << 30]))
def test_lazy_blocks_equal_the_eager_plan_hypothesis(ck, block_events, first_events, budget):
    """Ties, ``k = 1``, ``k = d``, ``d = 1``, counts past ``2**60`` (the pure-Python
    block) and negative counts."""
    counts, k = ck
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joint_blocks, "BLOCK_EVENTS", block_events)
        mp.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", first_events)
        if JointLevelSource(exactdp.Joint(counts, k).ranking, k).numpy_route:
            want = _check_lazy_equals_eager(counts, k, block_events, first_events, budget)
        else:  # one block, whatever the sizes
            want = _check_lazy_equals_eager(counts, k, 1 << 62, 1 << 62, budget)
        assert [lv for block in want for lv in block] == brute_levels(counts, k)


@pytest.mark.parametrize("counts, k", [([2**70 + 5, 2**70, 2**63, 1, 0], 3), ([2**62 + 1, 2**62, 7, 7], 4),
                                       ([2**80], 1), ([5, 5, 5], 3), ([9], 1), ([3, 1], 2)])
def test_lazy_blocks_edge_cases(monkeypatch, counts, k):
    """Counts past ``2**62``, one item, ``k = d``, every count tied (one level)."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 1)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 1)
    src = JointLevelSource(exactdp.Joint(counts, k).ranking, k)
    sizes = (1 << 62, 1 << 62) if not src.numpy_route else (1, 1)
    want = _check_lazy_equals_eager(counts, k, *sizes, 1 << 30)
    assert [lv for block in want for lv in block] == brute_levels(counts, k)


def _counted(monkeypatch):
    """Record every block whose factors are computed (the planning of a block)."""
    calls: list[int] = []
    original = JointLevelSource._compute_factors

    def counting(self, b):
        calls.append(b)
        return original(self, b)

    monkeypatch.setattr(JointLevelSource, "_compute_factors", counting)
    return calls


@pytest.mark.parametrize("seed", range(4))
def test_one_sample_plans_only_the_blocks_it_reads(monkeypatch, seed):
    """Fast-decaying weights (heavy-tailed counts, epsilon 1): the running sum of a sample
    stops inside the first blocks, and only those are planned, each once; the draw is the
    one of a table whose blocks were all planned first."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 16)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 16, raising=False)
    rng = random.Random(seed)
    d = rng.randint(200, 400)
    counts = [10**9 // r**2 + rng.randint(0, 3) for r in range(1, d + 1)]
    calls = _counted(monkeypatch)
    m = exactdp.Joint(counts, 10, epsilon=1)
    out = m.sample(rng=seed)
    read = len(m.table._sizes)
    assert sorted(calls) == list(range(read))  # each block read planned once
    total = len(JointLevelSource(m.ranking, 10).block_sizes())
    assert total > 100 and read <= 3  # the sample planned a few of the blocks
    planned = exactdp.Joint(counts, 10, epsilon=1)
    planned.table.block_ranges()  # every block planned before the draw
    assert planned.sample(rng=seed) == out


def test_the_plan_count_can_fail(monkeypatch):
    """Negative control: reading every level plans every block, and the count sees it."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 16)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 16, raising=False)
    counts = [10**9 // r**2 for r in range(1, 301)]
    calls = _counted(monkeypatch)
    m = exactdp.Joint(counts, 10, epsilon=1)
    m.sample(rng=0)
    assert len(calls) < 5
    sum(1 for _ in m.iter_levels())
    assert len(calls) == len(m.table._sizes) > 100


def test_guard_bits_and_errors_as_with_every_block_known(monkeypatch):
    """Certified values take their guard bits from the exact number of levels (found when
    first needed), and ``levels()`` past the budget names that number, as when every block
    was planned up front; sampling starts from the bound ``E + 1`` on it."""
    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 4)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 4)
    counts = [7, 7, 5, 3, 3, 1, 0, 0]
    m = exactdp.Joint(counts, 3, epsilon=1)
    n = len(brute_levels(counts, 3))
    assert len(m.table._sizes) == 1
    assert m.table.extra_bits == 2 * n.bit_length() + 8
    assert m.table.known_length() == n
    src = m.table.source
    assert src.level_bound() == sum(1 for r in range(3) for v in set(counts) if v < sorted(counts)[::-1][r]) + 1
    small = exactdp.Joint(counts, 3, epsilon=1, memory_budget=200)
    with pytest.raises(exactdp.errors.MemoryBudgetError, match=f"would hold {n} levels at once"):
        small.levels()


@settings(max_examples=80, deadline=None)
@given(counts_and_k(max_d=8, max_sequences=10**9))
def test_count_at_least_in_int64_equals_the_bisections(ck):
    """``N(M)`` from one ``searchsorted`` over every row equals the per-row bisections on
    the ranking's tuples, at every ``M`` from 0 to past the largest event."""
    counts, k = ck
    src = JointLevelSource(exactdp.Joint(counts, k).ranking, k)
    r = src.ranking
    assert (r.arrays is not None) == all(abs(c) < 2**61 for c in counts)  # the int64 path where it fits
    top = max(counts) - min(counts)
    for M in sorted({0, 1, top, top + 1} | {r.sorted_counts[0] - v for v in r.values}):
        want = 1
        for row in range(k):
            want *= r.at_least(r.sorted_counts[row] - M) - row
        assert src.count_at_least(M) == want, (counts, k, M)
