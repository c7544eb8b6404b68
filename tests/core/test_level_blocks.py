"""Tests of exactdp.core.level_blocks: a table held in blocks is the plain LevelTable of the
same levels, whatever the cut and whether its blocks are known at once or found lazily (the
twin), and ``levels_within`` refuses past the memory budget before reading the rest."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from flint import arb

from exactdp.core.level_blocks import BlockLevelTable, level_list_bytes, levels_within
from exactdp.core.levels import Level, LevelTable
from exactdp.core.precision import flint_workprec
from exactdp.core.scale import Scale
from exactdp.errors import MemoryBudgetError
from tests.core.block_sources import ListSource, cuts

LEVELS = [Level(0, 1), Level(-1, 3), Level(-2, 2), Level(-4, 5), Level(-5, 1), Level(-7, 4), Level(-8, 1)]
SCALES = [Scale(base=Fraction(1, 2)), Scale(epsilon=Fraction(3, 2), divisor=Fraction(2))]


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("sizes", cuts(len(LEVELS)))
@pytest.mark.parametrize("scale", SCALES)
def test_a_block_table_is_the_plain_table(sizes, lazy, scale):
    plain = LevelTable(LEVELS, scale)
    table = BlockLevelTable(ListSource(LEVELS, sizes, lazy=lazy), scale, memory_budget=1 << 20)
    assert list(table.iter_levels()) == LEVELS
    assert list(table.utilities) == [lv.utility for lv in LEVELS]
    assert list(table.multiplicities) == [lv.multiplicity for lv in LEVELS]
    assert len(table) == len(LEVELS) and table.levels == tuple(LEVELS)
    for a, level in enumerate(LEVELS):
        assert table.index_of(level.utility) == a
    with pytest.raises(KeyError):
        table.index_of(-3)
    with flint_workprec(128):
        for got, want in [(table.relative_weights(), plain.relative_weights()),
                          (table.level_weights(), plain.level_weights()),
                          (table.cumulative(), plain.cumulative())]:
            assert all(g.overlaps(w) for g, w in zip(list(got), want))
        assert table.total().overlaps(plain.total())
        for a in range(len(LEVELS)):
            assert table.sum_except(a).overlaps(plain.sum_except(a))


def test_levels_within_refuses_at_the_first_level_past_the_budget():
    read = []

    def levels():
        for u in itertools.count():
            read.append(u)
            yield Level(-u, 1)

    one = level_list_bytes(1, 8)
    assert levels_within(iter(LEVELS), 100 * one, 8) == tuple(LEVELS)
    with pytest.raises(MemoryBudgetError, match="memory_budget=.*more than 3 levels") as err:
        levels_within(levels(), 3 * one + one // 2, 8)
    assert len(read) == 4 and err.value.limit == 3 * one + one // 2  # nothing read past the 4th
    with pytest.raises(MemoryBudgetError, match="cannot hold a single level"):
        levels_within(iter(LEVELS), one - 1, 8)


def test_a_source_with_an_empty_block_is_refused():
    class Empty(ListSource):
        def block_sizes(self):
            return [0] + self.sizes

    with pytest.raises(AssertionError, match="no empty block"):
        BlockLevelTable(Empty(LEVELS, [len(LEVELS)]), SCALES[0])
