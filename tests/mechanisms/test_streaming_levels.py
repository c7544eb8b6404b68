"""JointSet's and Canonical's streamed levels and level probabilities against the lists.

``iter_levels()`` (a threshold sweep; a heap merge of the classes' losses) and
``iter_level_probabilities()`` (a block table over a restartable level stream) must give
exactly the levels of ``levels()`` and exactly the certified values of
``level_probabilities()`` (the same ``mpf``, so the same digits), with block boundaries
everywhere and with nothing kept (every block recomputed from its first utility).
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.core import level_blocks
from exactdp.core.level_blocks import BlockLevelTable, StreamSource
from exactdp.mechanisms.joint_set import iter_joint_set_levels

NOISES = ("gumbel", "exponential")


def _make(kind, counts, k, **kw):
    if kind == "joint-set":
        return exactdp.JointSet(counts, k, epsilon=1)
    return exactdp.Canonical(counts, k, epsilon=1, **kw)


def _check(kind, counts, k, block, budget, **kw):
    level_blocks.STREAM_BLOCK_LEVELS = block
    listed = _make(kind, counts, k, **kw)
    levels = listed.levels()
    probs = listed.level_probabilities(12)
    streamed = _make(kind, counts, k, **kw)
    streamed.memory_budget = budget
    assert list(streamed.iter_levels()) == list(levels)
    assert streamed._table is None  # streaming built no level table
    pairs = list(streamed.iter_level_probabilities(12))
    assert [lv for lv, _ in pairs] == list(levels)
    assert [p for _, p in pairs] == [p for _, p in probs]  # the same certified values
    if streamed.rule.name == "exponential":
        assert streamed._table is None
    # once the levels are held, the streams read them
    assert list(listed.iter_levels()) == list(levels)
    assert [p for _, p in listed.iter_level_probabilities(12)] == [p for _, p in probs]


def _instances(d, top=3):
    for counts in itertools.product(range(top), repeat=d):
        for k in range(1, d + 1):
            yield list(counts), k


@pytest.fixture(autouse=True)
def _restore_block_size():
    size = level_blocks.STREAM_BLOCK_LEVELS
    yield
    level_blocks.STREAM_BLOCK_LEVELS = size


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_joint_set_stream_is_the_list_exhaustive(d):
    for counts, k in _instances(d):
        for block, budget in ((1, 0), (2, 1 << 30)):
            _check("joint-set", counts, k, block, budget)


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("noise", NOISES)
def test_canonical_stream_is_the_list_exhaustive(d, noise):
    for counts, k in _instances(d):
        for rho in ("1/2", "0", "1", "1/3"):
            _check("canonical", counts, k, 2, 0, noise=noise, rho=rho)


@st.composite
def instance(draw, max_d=14):
    d = draw(st.integers(1, max_d))
    top = draw(st.sampled_from([2, 4, 10, 1000]))
    counts = draw(st.lists(st.integers(0, top), min_size=d, max_size=d))
    return counts, draw(st.integers(1, d)), draw(st.sampled_from([1, 3, 4096])), draw(st.sampled_from([0, 1 << 30]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance(), st.sampled_from(["joint-set", "gumbel", "exponential"]), st.sampled_from(["1/2", "2/7"]))
def test_streams_are_the_lists_random(inst, kind, rho):
    counts, k, block, budget = inst
    if kind == "joint-set":
        _check(kind, counts, k, block, budget)
    else:
        _check("canonical", counts, k, block, budget, noise=kind, rho=rho)


def test_streams_start_at_every_level():
    """The restart a block is recomputed from: the levels of utility <= u, for every u."""
    rng = random.Random(5)
    for _ in range(20):
        d = rng.randint(2, 12)
        counts, k = [rng.randint(0, 20) for _ in range(d)], rng.randint(1, d)
        js = exactdp.JointSet(counts, k, epsilon=1)
        can = exactdp.Canonical(counts, k, epsilon=1, rho="1/3")
        for m, start in ((js, lambda u: iter_joint_set_levels(js.ranking, js.k, u)), (can, can._levels_from)):
            levels = m.levels()
            for a, lv in enumerate(levels):
                assert list(start(lv.utility)) == list(levels[a:])
        keys = can.classes_.level_sizes()[0]
        for key in range(max(keys) + 2):  # loss keys that are no level start at the next one
            assert [kk for kk, _ in can.classes_.iter_level_sizes(key)] == [kk for kk in keys if kk >= key]


def test_stream_source_keeps_two_integers_per_block():
    level_blocks.STREAM_BLOCK_LEVELS = 5
    m = exactdp.JointSet(random.Random(3).sample(range(400), 40), 4, epsilon=1)
    levels = m.levels()
    source = StreamSource(lambda u: iter_joint_set_levels(m.ranking, m.k, u))
    table = BlockLevelTable(source, m.scale, memory_budget=0)
    assert source.block_sizes() == [5] * (len(levels) // 5) + ([len(levels) % 5] if len(levels) % 5 else [])
    assert source.block_first_utilities() == [lv.utility for lv in levels[::5]]
    assert table._cache == {}  # nothing kept within a zero budget
    assert list(table.iter_levels()) == list(levels)
