"""Level tables over a restartable level stream (JointSet, Canonical), found lazily.

A mechanism whose levels come from a stream that can start at any level (JointSet's
threshold sweep; Canonical's merge of its classes' losses) gets its level table here:
:class:`StreamSource` cuts the stream into blocks of up to :data:`STREAM_BLOCK_LEVELS` levels
for a :class:`~exactdp.core.level_blocks.BlockLevelTable`, found only as far as an
operation reads; :func:`streamed_levels` answers ``levels()`` within the memory budget.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Callable, Iterator, Optional, Sequence

from flint import arb

from .level_blocks import BlockLevelTable, BlockSource, level_list_bytes, levels_within
from .levels import Level, Utility, relative_weight
from .scale import Scale

__all__ = ["StreamSource", "STREAM_BLOCK_LEVELS", "STREAM_FIRST_BLOCK", "stream_table", "stream_level_bytes",
           "streamed_levels", "levels_read"]


#: Levels per block of a :class:`StreamSource` (tests lower it to put boundaries everywhere).
STREAM_BLOCK_LEVELS = 4096
#: Levels of a :class:`StreamSource`'s first block; each next block doubles, up to
#: :data:`STREAM_BLOCK_LEVELS`: a running sum that can stop after a few hundred levels
#: (heavy-tailed or tied counts) is checked at block ends, so early blocks are short.
STREAM_FIRST_BLOCK = 64


class StreamSource(BlockSource):
    """A :class:`BlockSource` over a level stream that can start at any level.

    ``levels_from(u)`` yields the exact levels of utility ``<= u``, best first (``u=None``:
    all of them); a mechanism provides it when a level can be computed from its utility
    alone (JointSet: the path count at a threshold and at the one before; Canonical: a
    merge of its classes' losses started at a loss).  The blocks are found by reading the
    stream once from the start, :data:`STREAM_FIRST_BLOCK` levels in the first block and
    twice as many in each next, up to :data:`STREAM_BLOCK_LEVELS`: only each
    block's first utility, its size and the outputs up to its end are kept (three compact
    integers), and the blocks read are handed to the table's cache while the budget
    allows; any other block is recomputed from its first utility, identically.

    Given ``outputs`` (the exact number of outputs) and ``level_bound`` (an upper bound on
    the number of levels), the source is *lazy*: the table reads the stream only as far as
    an operation needs (a few blocks for a sample of fast-decaying weights), and the
    running sum may stop early (:meth:`remaining_after`: outputs left after a block).
    Without them, the first request reads the whole stream (:meth:`block_sizes`).
    ``level_bytes``: the estimated bytes of one exact multiplicity (default 32);
    ``first_pass``: every level, when they were already read (:func:`streamed_levels`), so
    that the first pass reads them instead of the stream.

    Relative weights are :func:`~exactdp.core.levels.relative_weight` of each utility's gap
    to the best one, and level weights ``arb(m) * e``: the balls of an in-memory
    :class:`~exactdp.core.levels.LevelTable` of the same levels, so a selection rule gives
    the same values on either table.
    """

    def __init__(self, levels_from: Callable[[Optional[Utility]], Iterator[Level]], level_bytes: int = 32,
                 first_pass: Optional[Sequence[Level]] = None, *, outputs: Optional[int] = None,
                 level_bound: Optional[int] = None) -> None:
        self.levels_from = levels_from
        self.level_bytes = level_bytes
        #: every level, already read (:func:`streamed_levels`): the first pass reads them
        #: instead of the stream
        self._first_pass = first_pass
        self._keep: Optional[Callable[[tuple, int, Callable[[], Any]], Any]] = None
        self._stream: Optional[Iterator[list[Level]]] = None
        self._sizes: list[int] = []
        self._firsts: list[Utility] = []
        #: outputs in the blocks up to each block's end
        self._through: list[int] = []
        self._outputs, self._bound = outputs, level_bound
        self.lazy = outputs is not None and level_bound is not None

    def attach_cache(self, keep: Callable[[tuple, int, Callable[[], Any]], Any]) -> None:
        self._keep = keep

    def next_block(self) -> Optional[tuple[int, Utility]]:
        if self._stream is None:
            levels = self.levels_from(None) if self._first_pass is None else iter(self._first_pass)
            self._first_pass = None
            self._stream = _chunks(levels, STREAM_BLOCK_LEVELS)
        block = next(self._stream, None)  # None again and again once the stream is done
        if block is None:
            return None
        b = len(self._sizes)
        self._sizes.append(len(block))
        self._firsts.append(block[0].utility)
        self._through.append((self._through[-1] if b else 0) + sum(lv.multiplicity for lv in block))
        if self._keep is not None:  # under the key the table reads blocks by
            self._keep(("levels", b), level_list_bytes(len(block), self.level_bytes), lambda: block)
        return len(block), block[0].utility

    def level_bound(self) -> int:
        if self._bound is None:
            raise AssertionError("only a lazy StreamSource has a level bound")
        return self._bound

    def block_sizes(self) -> list[int]:
        while self.next_block() is not None:
            pass
        return self._sizes

    def block_first_utilities(self) -> list[Utility]:
        self.block_sizes()
        return self._firsts

    def remaining_after(self, b: int) -> Optional[int]:
        """Outputs after block ``b`` (the exponential weights decrease from level to
        level), when the number of outputs was given."""
        return None if self._outputs is None else self._outputs - self._through[b]

    def block_levels(self, b: int) -> list[Level]:
        # block b was found before it is read (the table finds blocks in order)
        return list(islice(self.levels_from(self._firsts[b]), self._sizes[b]))

    weights_by_utility = True

    def relative_weight(self, utility: Utility, scale: Scale) -> arb:
        return relative_weight(scale.lam_ball(), utility - self._firsts[0])  # type: ignore[operator]

    def block_weights(self, b: int, scale: Scale) -> tuple[list[arb], list[arb]]:
        lam, u0 = scale.lam_ball(), self._firsts[0]
        levels = self.block_levels(b) if self._keep is None else self._keep(
            ("levels", b), level_list_bytes(self._sizes[b], self.level_bytes), lambda: self.block_levels(b))
        es = [relative_weight(lam, lv.utility - u0) for lv in levels]  # type: ignore[operator]
        return es, [arb(lv.multiplicity) * e for lv, e in zip(levels, es)]


def _chunks(items: Iterator[Level], size: int) -> Iterator[list[Level]]:
    """Consecutive blocks of ``items``: :data:`STREAM_FIRST_BLOCK` first (at most ``size``),
    each next twice the last, up to ``size``."""
    it = iter(items)
    n = min(size, STREAM_FIRST_BLOCK)
    while chunk := list(islice(it, n)):
        yield chunk
        n = min(size, 2 * n)


def stream_table(levels_from: Callable[[Optional[Utility]], Iterator[Level]], scale: Scale, memory_budget: int,
                 level_bytes: int = 32, first_pass: Optional[Sequence[Level]] = None, *,
                 outputs: int, level_bound: int) -> BlockLevelTable:
    """The level table of a mechanism whose levels stream from ``levels_from`` (``outputs``
    outputs in at most ``level_bound`` levels, weighted by ``scale``; ``first_pass``: levels
    already read, kept): blocks found as needed, kept within ``memory_budget`` (at
    ``level_bytes`` a level) and recomputed past it; guard bits and sampling precision come from
    ``level_bound`` only, so no value or seeded draw depends on the order of operations or the
    budget (docs/precision.md, "Levels in blocks: recomputed identically")."""
    source = StreamSource(levels_from, level_bytes, first_pass, outputs=outputs, level_bound=max(1, level_bound))
    return BlockLevelTable(source, scale, memory_budget)


def stream_level_bytes(k: int, d: int) -> int:
    """Bytes of one level's multiplicity for a mechanism over k-subsets (or sequences) of
    ``d`` items: ``m <= d**k``."""
    return (k * d.bit_length()) // 8 + 8


def streamed_levels(mechanism: Any) -> tuple[Level, ...]:
    """``levels()`` of ``mechanism``, one with a :func:`stream_table` (JointSet, Canonical): the
    table's once it exists; before, its ``iter_levels()`` read by :func:`levels_within`
    (kept on the mechanism), so a refusal comes without the table's whole pass.  Levels
    read here serve the table's first pass later (``first_pass``, :func:`levels_read`):
    no level is computed twice, and no second tuple is made of them."""
    read = levels_read(mechanism)
    if read is None and mechanism._table is not None:
        return mechanism.table.levels
    if read is None:
        read = mechanism.__dict__["_levels_read"] = levels_within(
            mechanism.iter_levels(), mechanism.memory_budget, stream_level_bytes(mechanism.k, mechanism.d))
    return read


def levels_read(mechanism: Any) -> Optional[tuple[Level, ...]]:
    """The levels :func:`streamed_levels` read and kept on ``mechanism``, or None."""
    return mechanism.__dict__.get("_levels_read")
