"""The block table's lazy views of its levels and its running sum, found block by block.

:class:`~exactdp.core.level_blocks.BlockLevelTable` hands these out: each view reads one
block at a time (finding a lazy table's blocks only as far as it reads), and :class:`RunningSum`
forms the running sum of the level weights at one precision, stopping where a proven tail
bound makes the rest negligible.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Callable, Iterator, Optional, Protocol, Sequence

from flint import arb

from .gc_pause import gc_paused
from .sampling import first_not_below

__all__ = ["BlockedTable", "LevelView", "CumulativeView", "RunningSum"]


class BlockedTable(Protocol):
    """What the views read from the table that hands them out (the block table,
    :class:`~exactdp.core.level_blocks.BlockLevelTable`): its block starts and sizes as
    found so far, and its blocks found on demand."""

    source: Any
    _starts: list[int]
    _sizes: list[int]

    def __len__(self) -> int: ...

    def _discover(self, b: int) -> bool: ...

    def _block_of(self, a: int) -> int: ...

    def _is_last(self, a: int) -> bool: ...

    def _pass(self) -> "RunningSum": ...

    def _block_weights(self, b: int) -> tuple[list[arb], list[arb]]: ...

    def total(self) -> arb: ...


class LevelView(Sequence):
    """All levels' values of one kind, computed block by block on access.

    ``table``: the block table; ``block(b)`` is the (cached) list of block ``b``;
    ``field``, when given, reads the value off each element (a Level's utility or
    multiplicity), so a single read costs one element, not a new list of the whole block."""

    def __init__(self, table: BlockedTable, block: Callable[[int], list],
                 field: Optional[Callable[[Any], Any]] = None):
        self._table, self._block, self._field = table, block, field

    def __len__(self) -> int:
        return len(self._table)

    def __getitem__(self, a):  # type: ignore[override]
        if isinstance(a, slice):
            if a.step in (None, 1) and (a.start or 0) >= 0 and a.stop is not None and a.stop > (a.start or 0):
                start, stop, step = a.start or 0, a.stop, 1  # a lazy table finds blocks up to stop only
                if stop - 1 >= self._table._starts[-1] + self._table._sizes[-1]:
                    stop = min(stop, len(self))
            else:
                start, stop, step = a.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            out: list = []
            starts = self._table._starts
            b = bisect_right(starts, start) - 1
            while start < stop:  # whole blocks at a time
                block = self._block(b)
                end = min(stop, starts[b] + len(block))
                part = block[start - starts[b]:end - starts[b]]
                out.extend(part if self._field is None else map(self._field, part))
                start, b = end, b + 1
            return out
        if a < 0:
            a += len(self._table)
        b = self._table._block_of(a)
        value = self._block(b)[a - self._table._starts[b]]
        return value if self._field is None else self._field(value)

    def __iter__(self) -> Iterator:
        b = 0
        while self._table._discover(b):
            block = self._block(b)
            yield from (block if self._field is None else map(self._field, block))
            b += 1


class CumulativeView(LevelView):
    """The running sums, with a block-first search for exact sampling."""

    def first_not_below(self, lower: Any) -> int:
        """First index ``a`` whose upper bound is not ``<= lower`` (last index if none):
        the same answer as a binary search over all levels (the uppers of a running sum
        of non-negative balls never decrease), touching one block."""
        table = self._table
        b = table._pass().first_block_not_below(lower)
        return table._starts[b] + first_not_below(self._block(b), lower)

    def __getitem__(self, a):  # type: ignore[override]
        # The last running sum is the total: its enclosure needs no pass to the end (and
        # reading index -1 of a lazy table finds no block beyond the one it needs).
        if isinstance(a, int) and (a == -1 or (a >= 0 and self._table._is_last(a))):
            return self._table.total()
        return super().__getitem__(a)


class RunningSum:
    """The running sum over the blocks of ``table`` at precision ``prec``, as far as it is needed.

    The sum is formed block by block in level order.  It stops after block ``b`` once
    the rest is certainly negligible: with ``R_b`` outputs after block ``b`` (the source's
    exact :meth:`BlockSource.remaining_after`) and weights never increasing, the rest is
    at most ``R_b * e_last`` (``e_last`` the relative weight of block ``b``'s last
    level); when that is below ``2**-prec`` of the sum so far, ``total`` is the sum plus a
    ball of that radius.  So sampling and single probabilities of fast-decaying weights
    (heavy-tailed counts) touch a few blocks, not millions of levels.  Running sums
    beyond that point are extended on demand by the same additions; ``total`` never
    changes, so no value depends on what was asked before.
    """

    def __init__(self, table: BlockedTable, prec: int):
        self.table = table
        self.starts: list[arb] = []
        self.run = arb(0)
        while table._discover(len(self.starts)):
            b = self._extend()
            remaining = table.source.remaining_after(b)
            if remaining == 0:  # the last block (every block has outputs): no next block is read
                break
            if remaining is None:
                continue
            tail = arb(remaining) * table._block_weights(b)[0][-1]
            if tail.upper() <= (self.run * arb(2) ** -prec).lower():
                self.stop, self.tail = b + 1, arb(0, tail.upper())
                self.total = self.run + self.tail
                return
        #: blocks summed before the rest was bounded, and the ball bounding that rest
        self.stop, self.tail = len(self.starts), arb(0)
        self.total = self.run

    def _extend(self) -> int:
        """Add the next block's weights to the running sum; return its index."""
        b = len(self.starts)
        self.starts.append(self.run)
        weights = self.table._block_weights(b)[1]
        run = self.run
        with gc_paused():
            for w in weights:
                run = run + w
        self.run = run
        return b

    def start(self, b: int) -> arb:
        """The running sum before block ``b``."""
        while len(self.starts) <= b:
            self._extend()
        return self.starts[b]

    def first_block_not_below(self, lower: Any) -> int:
        """First block whose last running sum's upper bound is not ``<= lower``."""
        while self.run.upper() <= lower and self.table._discover(len(self.starts)):
            self._extend()  # the target lies beyond the blocks summed so far
        return first_not_below(self.starts[1:] + [self.run], lower)
