"""Tests of exactdp.core.level_views: the block table's views read like lists (indices,
negative indices, slices, iteration) whatever the cut, the cumulative view's block-first
search is the binary search over all levels, and the running sum stops where its proven tail
bound allows, enclosing the full total."""

from __future__ import annotations

from fractions import Fraction

import pytest
from flint import arb

from exactdp.core.level_blocks import BlockLevelTable
from exactdp.core.levels import Level, LevelTable
from exactdp.core.precision import flint_workprec
from exactdp.core.sampling import first_not_below
from exactdp.core.scale import Scale
from tests.core.block_sources import ListSource, cuts

LEVELS = [Level(-u, m) for u, m in [(0, 2), (1, 1), (3, 4), (4, 1), (6, 2), (9, 3), (10, 1), (12, 2)]]
SCALE = Scale(base=Fraction(1, 3))


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("sizes", cuts(len(LEVELS)))
def test_views_read_like_lists(sizes, lazy):
    table = BlockLevelTable(ListSource(LEVELS, sizes, lazy=lazy), SCALE, memory_budget=1 << 20)
    want = [lv.utility for lv in LEVELS]
    view = table.utilities
    assert [view[a] for a in range(len(want))] == want and view[-1] == want[-1] and view[-3] == want[-3]
    for start in range(len(want)):
        for stop in range(start, len(want) + 2):
            assert view[start:stop] == want[start:stop]
    assert view[::2] == want[::2] and view[-3:] == want[-3:] and list(view) == want and len(view) == len(want)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("sizes", cuts(len(LEVELS)))
def test_the_block_first_search_is_the_binary_search(sizes, lazy):
    plain = LevelTable(LEVELS, SCALE)
    table = BlockLevelTable(ListSource(LEVELS, sizes, lazy=lazy), SCALE, memory_budget=1 << 20)
    with flint_workprec(100):
        sums = plain.cumulative()
        cumulative = table.cumulative()
        for lower in [arb(0), arb(1), arb(2), arb("2.5"), sums[3].mid(), sums[-2].upper(), sums[-1].upper() + 1]:
            assert cumulative.first_not_below(lower) == first_not_below(sums, lower)


def test_the_running_sum_stops_early_and_encloses_the_total():
    """Weights 3**-u over levels far apart: after a few blocks the rest is below 2**-prec of
    the sum, so the pass reads no further, and its total still holds the exact total."""
    levels = [Level(-40 * i, 1) for i in range(30)]
    source = ListSource(levels, [1] * 30, lazy=True)
    table = BlockLevelTable(source, SCALE, memory_budget=1 << 20)
    with flint_workprec(64):
        total = table.total()
        exact = sum(Fraction(1, 3 ** (40 * i)) for i in range(30))
        assert total.overlaps(arb(exact.numerator) / exact.denominator)
        assert total.rad() < total.mid() * arb(2) ** -60  # the bounded rest is below 2**-prec of the sum
    assert source.found < 10  # blocks found: a handful, not 30
