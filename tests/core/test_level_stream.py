"""Tests of exactdp.core.level_stream: a table over a restartable level stream is the plain
LevelTable of the stream's levels whatever the block length, reads the stream only as far as
an operation needs, and the block lengths grow from STREAM_FIRST_BLOCK up to
STREAM_BLOCK_LEVELS."""

from __future__ import annotations

from fractions import Fraction

import pytest

import exactdp
from exactdp.core import level_stream
from exactdp.core.levels import Level, LevelTable
from exactdp.core.precision import flint_workprec
from exactdp.core.scale import Scale
from exactdp.core.level_stream import levels_read, stream_level_bytes, stream_table, streamed_levels

LEVELS = [Level(-3 * u, 1 + u % 4) for u in range(40)]
SCALE = Scale(base=Fraction(1, 2))


class Stream:
    """``levels_from(u)``: the levels of utility ``<= u``, counting the levels it yields."""

    def __init__(self, levels):
        self.levels, self.yielded = levels, 0

    def __call__(self, u):
        for level in self.levels:
            if u is None or level.utility <= u:
                self.yielded += 1
                yield level


def _table(stream, budget=1 << 20):
    return stream_table(stream, SCALE, budget, outputs=sum(lv.multiplicity for lv in LEVELS), level_bound=len(LEVELS))


@pytest.mark.parametrize("first, most", [(1, 1), (2, 5), (3, 8), (64, 4096)])
def test_a_stream_table_is_the_plain_table(monkeypatch, first, most):
    monkeypatch.setattr(level_stream, "STREAM_FIRST_BLOCK", first)
    monkeypatch.setattr(level_stream, "STREAM_BLOCK_LEVELS", most)
    table, plain = _table(Stream(LEVELS)), LevelTable(LEVELS, SCALE)
    assert list(table.iter_levels()) == LEVELS and table.levels == tuple(LEVELS)
    assert [table.index_of(lv.utility) for lv in LEVELS] == list(range(len(LEVELS)))
    with flint_workprec(100):
        assert all(a.overlaps(b) for a, b in zip(list(table.cumulative()), plain.cumulative()))
        assert all(a.overlaps(b) for a, b in zip(list(table.relative_weights()), plain.relative_weights()))


def test_blocks_double_from_the_first_up_to_the_limit(monkeypatch):
    monkeypatch.setattr(level_stream, "STREAM_FIRST_BLOCK", 2)
    monkeypatch.setattr(level_stream, "STREAM_BLOCK_LEVELS", 8)
    table = _table(Stream(LEVELS))
    list(table.iter_levels())
    assert [stop - start for start, stop in table.block_ranges()] == [2, 4, 8, 8, 8, 8, 2]


def test_the_first_level_reads_only_the_first_block(monkeypatch):
    monkeypatch.setattr(level_stream, "STREAM_FIRST_BLOCK", 4)
    stream = Stream(LEVELS)
    table = _table(stream)
    assert table.utilities[0] == 0 and stream.yielded <= 2 * 4 + 1


def test_stream_level_bytes_bounds_a_multiplicity():
    for k, d in [(1, 2), (3, 10), (200, 166_000)]:
        assert stream_level_bytes(k, d) * 8 >= (d**k).bit_length()


def test_streamed_levels_are_kept_and_refused_past_the_budget():
    m = exactdp.JointSet([5, 3, 3, 1, 0], 2, epsilon=1)
    assert levels_read(m) is None
    levels = streamed_levels(m)
    assert levels == tuple(exactdp.JointSet([5, 3, 3, 1, 0], 2, epsilon=1).levels())
    assert levels_read(m) is levels and streamed_levels(m) is levels
    small = exactdp.JointSet(list(range(60)), 3, epsilon=1, memory_budget=300)
    with pytest.raises(exactdp.errors.MemoryBudgetError, match="memory_budget"):
        streamed_levels(small)
