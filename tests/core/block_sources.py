"""A block source over a given list of levels, cut into blocks of given sizes: the toy
:class:`~exactdp.core.level_blocks.BlockSource` whose table is compared with the plain
:class:`~exactdp.core.levels.LevelTable` of the same levels (the tests of level_blocks and
level_views)."""

from __future__ import annotations

from typing import Optional

from flint import arb

from exactdp.core.level_blocks import BlockSource
from exactdp.core.levels import Level, relative_weight


class ListSource(BlockSource):
    """``levels`` (best first) in blocks of ``sizes``; ``lazy``: found one block at a time;
    ``decreasing``: the weights never increase, so the running sum may stop early."""

    level_bytes = 32

    def __init__(self, levels: list[Level], sizes: list[int], lazy: bool = False, decreasing: bool = True):
        assert sum(sizes) == len(levels) and min(sizes) > 0
        self.levels, self.sizes, self.lazy, self.decreasing = levels, sizes, lazy, decreasing
        self.starts = [sum(sizes[:b]) for b in range(len(sizes))]
        self.found = 0
        self.reads: list[int] = []

    def block_sizes(self) -> list[int]:
        return list(self.sizes)

    def block_first_utilities(self) -> list:
        return [self.levels[s].utility for s in self.starts]

    def block_levels(self, b: int) -> list[Level]:
        self.reads.append(b)
        return self.levels[self.starts[b]:self.starts[b] + self.sizes[b]]

    def block_weights(self, b: int, scale) -> tuple[list[arb], list[arb]]:
        lam, u0 = scale.lam_ball(), self.levels[0].utility
        block = self.levels[self.starts[b]:self.starts[b] + self.sizes[b]]
        es = [relative_weight(lam, lv.utility - u0) for lv in block]
        return es, [lv.multiplicity * e for lv, e in zip(block, es)]

    def remaining_after(self, b: int) -> Optional[int]:
        if not self.decreasing:
            return None
        return sum(lv.multiplicity for lv in self.levels[self.starts[b] + self.sizes[b]:])

    def next_block(self):
        if self.found == len(self.sizes):
            return None
        b, self.found = self.found, self.found + 1
        return self.sizes[b], self.levels[self.starts[b]].utility

    def level_bound(self) -> int:
        return len(self.levels)


def cuts(n: int) -> list[list[int]]:
    """Some ways to cut ``n`` levels into blocks: one block, single levels, and uneven ones."""
    out = [[n], [1] * n]
    if n > 2:
        out += [[1, n - 1], [n - 2, 2], [2] * (n // 2) + ([1] if n % 2 else [])]
    return out
