"""A level table held in independent blocks, within a memory budget.

Heavy-tailed counts give Joint millions of levels whose exact multiplicities run to thousands
of digits (about ``k*d`` levels: some 33 million at ``d = 166,000``, ``k = 200``).
:class:`BlockLevelTable` never needs them all at once: a :class:`BlockSource` cuts the levels
(best first) into *blocks* that it can compute on their own, in any order, from nothing but
the block's index (``block_levels(b)``: the exact :class:`~exactdp.core.levels.Level` objects;
``block_weights(b, scale)``: certified enclosures of the relative weights ``e_a = w(u_a)/w(u_0)``
and level weights ``m_a e_a`` at flint's current precision).

Contract: the table keeps computed blocks while their estimated size fits in ``memory_budget``
bytes (the first computed stay), plus the last few read; any other block is computed again,
*identically* (a pure function of its index and the precision), so a small budget changes
speed, never a value, a certified digit or a sample.  Views (:attr:`BlockLevelTable.utilities`,
``multiplicities``, ``relative_weights()``, ``level_weights()``, ``cumulative()``) are sequences
over all levels that compute the block they are read in, so every selection rule works on this
table unchanged; ``levels`` (all at once) raises :class:`~exactdp.errors.MemoryBudgetError` when
they would not fit.  Running sums, lazy sources and their guard bits: docs/precision.md,
section "Levels in blocks: recomputed identically"; an example: :class:`BlockLevelTable`.
"""

from __future__ import annotations

import abc
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from itertools import chain, count, takewhile
from operator import attrgetter
from typing import Any, Callable, Iterator, Optional, Sequence

from flint import arb, ctx

from ..errors import MemoryBudgetError
from .gc_pause import gc_paused
from .precision import prec_for_dps
from .level_views import CumulativeView, LevelView, RunningSum
from .levels import Level, Utility
from .scale import Scale

__all__ = ["BlockSource", "BlockLevelTable", "DEFAULT_MEMORY_BUDGET", "level_list_bytes", "levels_within"]

#: Default ``memory_budget`` (bytes) of a block table: the estimated size of the exact
#: levels and enclosures it may keep at once.  Raise it with the mechanism's
#: ``memory_budget=`` argument to keep more in memory (faster repeated queries).
DEFAULT_MEMORY_BUDGET = 1 << 30

#: Values kept beyond the budget: the last few read (a block, its factors, its sums).
_RECENT = 4

#: Estimated bytes of one cached ball (the object and a few limbs beyond ``prec`` bits).
_BALL_BYTES = 96


def level_list_bytes(count: int, level_bytes: int) -> int:
    """Estimated bytes of ``count`` Level objects in a list (tuple, ints and list slot),
    each multiplicity taking ``level_bytes`` (:attr:`BlockSource.level_bytes`)."""
    return count * (136 + level_bytes)


class BlockSource(abc.ABC):
    """What a :class:`BlockLevelTable` needs from a mechanism: blocks of its levels, each
    computable on its own (see the module docstring)."""

    #: Estimated bytes of one exact multiplicity (an upper bound is fine).
    level_bytes: int = 32

    def attach_cache(self, keep: Callable[[tuple, int, Callable[[], Any]], Any]) -> None:
        """Called by the table first: ``keep(key, size_in_bytes, build)`` returns a cached
        value or builds and caches it within the table's memory budget, so a source can
        keep its own intermediate results (the default keeps none)."""

    @abc.abstractmethod
    def block_sizes(self) -> list[int]:
        """Number of levels in each block (every block non-empty)."""

    @abc.abstractmethod
    def block_first_utilities(self) -> list[Utility]:
        """Utility of each block's first (best) level, strictly decreasing."""

    @abc.abstractmethod
    def block_levels(self, b: int) -> list[Level]:
        """The exact levels of block ``b``, best first."""

    @abc.abstractmethod
    def block_weights(self, b: int, scale: Scale) -> tuple[list[arb], list[arb]]:
        """Enclosures at flint's current precision of ``e_a`` and ``m_a e_a`` for the
        levels of block ``b``, weighed by ``scale`` (a :class:`~exactdp.core.scale.Scale`);
        a pure function of ``b`` and the precision."""

    def remaining_after(self, b: int) -> Optional[int]:
        """The exact number of outputs in the blocks after ``b``, when the relative
        weights never increase from level to level (then the running sum may stop early);
        ``None`` (the default): always sum every block."""
        return None

    #: The source forms a level's relative weight from its utility alone
    #: (:meth:`relative_weight`), the very ball of its block.
    weights_by_utility: bool = False

    def relative_weight(self, utility: Utility, scale: Scale) -> arb:
        """``e = w(utility) / w(u_0)`` under ``scale`` at flint's current precision, the ball
        :meth:`block_weights` gives the level of that utility (sources with
        :attr:`weights_by_utility`)."""
        raise NotImplementedError

    #: A *lazy* source finds its blocks one after another (:meth:`next_block`) instead of
    #: knowing every size at once (:meth:`block_sizes`): the table then reads only the
    #: blocks an operation needs, so a sample or one probability of fast-decaying weights
    #: costs a few blocks, not a pass over millions of levels.
    lazy: bool = False

    def next_block(self) -> Optional[tuple[int, Utility]]:
        """A lazy source's next block as ``(number of levels, first utility)``, ``None``
        after the last (called once per block, in order)."""
        raise NotImplementedError

    def level_bound(self) -> int:
        """A lazy source's upper bound on its number of levels, known without finding
        them: the table's guard bits (``extra_bits``) are computed from it, so no value
        depends on how many blocks were found."""
        raise NotImplementedError

    #: A lazy source whose number of levels is worth finding whenever a value depends on
    #: it (Joint, whose blocks are cheap to plan): its certified values take their guard
    #: bits (``extra_bits``) from the exact number of levels, found on first use, and
    #: ``levels()``, :meth:`BlockLevelTable.known_length` and
    #: :meth:`BlockLevelTable.known_index` count the levels, as a table whose blocks were
    #: all known at once does.  Exact sampling still starts from :meth:`level_bound`, so
    #: a draw finds no block it does not read.
    length_on_demand: bool = False


class BlockLevelTable:
    """A :class:`~exactdp.core.levels.LevelTable` look-alike over a :class:`BlockSource`
    (see the module docstring): the levels of ``source``, weighed by ``scale`` (a
    :class:`~exactdp.core.scale.Scale`); ``memory_budget`` bounds the bytes of cached
    blocks (default :data:`DEFAULT_MEMORY_BUDGET`).

    >>> from exactdp.core.levels import Level
    >>> from exactdp.core.scale import Scale
    >>> from flint import arb
    >>> class Two(BlockSource):       # two blocks: utilities 0, -1 | -2
    ...     def block_sizes(self): return [2, 1]
    ...     def block_levels(self, b): return [[Level(0, 1), Level(-1, 2)], [Level(-2, 3)]][b]
    ...     def block_weights(self, b, scale):
    ...         es = [arb(1), arb(1) / 2] if b == 0 else [arb(1) / 4]
    ...         return es, [lv.multiplicity * e for lv, e in zip(self.block_levels(b), es)]
    ...     def block_first_utilities(self): return [0, -2]
    ...     level_bytes = 64
    >>> t = BlockLevelTable(Two(), Scale(base=2), memory_budget=1 << 20)
    >>> len(t), t.multiplicities[2], list(t.utilities)
    (3, 3, [0, -1, -2])
    >>> t.index_of(-1)
    1
    """

    def __init__(self, source: BlockSource, scale: Scale, memory_budget: int = DEFAULT_MEMORY_BUDGET):
        self.source = source
        self.scale = scale
        self.memory_budget = memory_budget
        self._cache: dict[tuple, tuple[Any, int]] = {}
        self._cached_bytes = 0
        self._recent: OrderedDict[tuple, Any] = OrderedDict()
        source.attach_cache(self._keep)
        self._sizes: list[int] = []
        self._starts: list[int] = []
        # negated, so increasing: bisect finds the block of a utility
        self._neg_first_utilities: list[Any] = []
        #: every block is known (a lazy source's are found as operations need them)
        self._complete = not source.lazy
        if source.lazy:
            if not self._discover(0):
                raise AssertionError("a block source has at least one block")
            bound = source.level_bound()
        else:
            self._sizes = list(source.block_sizes())
            if not self._sizes or min(self._sizes) <= 0:
                raise AssertionError("a block source has at least one block and no empty block")
            self._starts = [0]
            for n in self._sizes[:-1]:
                self._starts.append(self._starts[-1] + n)
            self._neg_first_utilities = [-u for u in source.block_first_utilities()]  # type: ignore[operator]
            bound = len(self)
        self._passes: dict[int, RunningSum] = {}
        self._levels: Optional[tuple[Level, ...]] = None
        #: a level's relative weight comes from its utility alone (:meth:`relative_weight_of`)
        self.weights_by_utility = source.weights_by_utility
        self._extra_bits: Optional[int] = None
        if not source.length_on_demand:
            self._extra_bits = 2 * bound.bit_length() + 8
        #: Guard bits of ``bound`` levels (the exact number, or a lazy source's bound on
        #: it), known without finding a block: what a heuristic that must not find every
        #: block reads instead of :attr:`extra_bits` (permute-and-flip's test of whether a
        #: running product's ball is accurate enough to keep).
        self.bound_extra_bits = 2 * bound.bit_length() + 8
        #: Working precision of exact sampling's first attempt: that of 30-digit
        #: probabilities (of the guard bits of ``bound`` levels), so one pass over the
        #: blocks serves both (and never depends on what was computed before).
        self.sampling_prec = prec_for_dps(30, self.bound_extra_bits)
        self.utilities: Sequence[Utility] = LevelView(self, self._block_levels, attrgetter("utility"))
        self.multiplicities: Sequence[int] = LevelView(self, self._block_levels, attrgetter("multiplicity"))

    def __len__(self) -> int:
        return self._length

    @property
    def extra_bits(self) -> int:
        """Guard bits of sums over the levels: ``2 * n.bit_length() + 8`` for ``n`` the
        number of levels, or a lazy source's bound on it (with
        :attr:`BlockSource.length_on_demand`, the exact number, found on first use)."""
        if self._extra_bits is None:
            self._extra_bits = 2 * self._length.bit_length() + 8
        return self._extra_bits

    @property
    def _length(self) -> int:
        """The number of levels (a lazy source's blocks are all found first)."""
        self._discover_all()
        return self._starts[-1] + self._sizes[-1]

    def _discover(self, b: int) -> bool:
        """Whether block ``b`` exists, finding a lazy source's blocks up to it."""
        while len(self._sizes) <= b:
            if self._complete:
                return False
            found = self.source.next_block()
            if found is None:
                self._complete = True
                return False
            size, first = found
            if size <= 0:
                raise AssertionError("a block source has no empty block")
            self._starts.append(self._starts[-1] + self._sizes[-1] if self._sizes else 0)
            self._sizes.append(size)
            self._neg_first_utilities.append(-first)  # type: ignore[operator]
            # no outputs after it: the last block (every level has outputs), known at once
            self._complete = self.source.remaining_after(len(self._sizes) - 1) == 0
        return True

    def _discover_all(self) -> None:
        while self._discover(len(self._sizes)):
            pass

    def _block_of(self, a: int) -> int:
        """The block holding level ``a >= 0`` (IndexError past the last level)."""
        while a >= (self._starts[-1] + self._sizes[-1]) and self._discover(len(self._sizes)):
            pass
        if not 0 <= a < self._starts[-1] + self._sizes[-1]:
            raise IndexError(a)
        return bisect_right(self._starts, a) - 1

    def _is_last(self, a: int) -> bool:
        """Whether ``a`` is the last level's index (finding at most one block past it)."""
        b = self._block_of(a)
        return a == self._starts[b] + self._sizes[b] - 1 and not self._discover(b + 1)

    def known_index(self, utility: Utility) -> Optional[int]:
        """The index of the level with ``utility`` when the blocks found so far hold it,
        else ``None`` (no block is found: a lazy table counts the levels above a deep one
        only by finding them); KeyError when no level has it."""
        if self.source.length_on_demand:
            return self.index_of(utility)
        b = bisect_right(self._neg_first_utilities, -utility) - 1  # type: ignore[operator]
        if b == len(self._sizes) - 1 and not self._complete and utility < self._block_levels(b)[-1].utility:
            return None  # beyond the blocks found
        return self.index_of(utility)

    def level_at(self, utility: Utility) -> Level:
        """The level with ``utility`` (KeyError when none), from a source that starts at
        any level (a stream: no block above it is found), else by its index."""
        start = getattr(self.source, "levels_from", None)
        if start is None:
            return Level(utility, self.multiplicities[self.index_of(utility)])
        level = next(iter(start(utility)), None)
        if level is None or level.utility != utility:
            raise KeyError(utility)
        return level

    def known_length(self) -> Optional[int]:
        """The number of levels when every block is found, else ``None`` (a lazy table
        finds them all only when an operation reads them all)."""
        return len(self) if self._complete or self.source.length_on_demand else None

    def sampling_size(self) -> int:
        """The number of levels as exact sampling needs it: 1 for a single level (no
        random bits drawn), else the number of levels or, for a lazy source, its bound on
        it (the sampler's precision guard) whether or not every block was found since: a
        draw reads its random bits the same way whatever was computed before."""
        if not self.source.lazy:
            return len(self)
        if self._sizes[0] == 1 and not self._discover(1):
            return 1
        return max(self.source.level_bound(), 2)

    def block_ranges(self) -> list[tuple[int, int]]:
        """``(start, stop)`` level indices of each block, in order."""
        self._discover_all()
        return [(s, s + n) for s, n in zip(self._starts, self._sizes)]

    def output_count(self) -> Optional[int]:
        """The exact number of outputs when the source knows how many follow its first
        block (:meth:`BlockSource.remaining_after`), else ``None``: no other block is read."""
        rest = self.source.remaining_after(0)
        return None if rest is None else sum(lv.multiplicity for lv in self._block_levels(0)) + rest

    def block_range(self, b: int) -> Optional[tuple[int, int]]:
        """``(start, stop)`` of block ``b`` (``None`` past the last), finding a lazy
        source's blocks only up to it."""
        return (self._starts[b], self._starts[b] + self._sizes[b]) if self._discover(b) else None

    # -- the cache ---------------------------------------------------------------------
    def _keep(self, key: tuple, size: int, build: Callable[[], Any]) -> Any:
        """The cached value of ``key``, or ``build()`` kept while the budget allows.

        What fits stays (first come, first kept): a pass over more blocks than fit, which
        an LRU cache would miss entirely the next time, still finds the first ones.  What
        does not fit goes to a small LRU of the last :data:`_RECENT` values, so the block
        being read (and the factors two kinds of block share) are not recomputed."""
        hit = self._cache.get(key)
        if hit is not None:
            return hit[0]
        if key in self._recent:
            self._recent.move_to_end(key)
            return self._recent[key]
        with gc_paused():
            value = build()
        if self._cached_bytes + size <= self.memory_budget:
            self._cache[key] = (value, size)
            self._cached_bytes += size
        else:
            self._recent[key] = value
            while len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        return value

    def _cached(self, name: str, build: Callable[[], Any]) -> Any:
        """A rule's own whole-table values at flint's current precision (the
        :class:`~exactdp.core.levels.LevelTable` interface), counted in the budget as two
        balls per level."""
        prec = ctx.prec
        for key in [key for key in self._cache if key[:2] == ("rule", name) and key[2] != prec]:
            self._cached_bytes -= self._cache.pop(key)[1]
        for key in [key for key in self._recent if key[:2] == ("rule", name) and key[2] != prec]:
            del self._recent[key]
        size = self._length * 2 * (_BALL_BYTES + prec // 4)
        self.check_fits(size, f"the selection rule's {name} enclosures", None)
        return self._keep(("rule", name, prec), size, build)

    def cached_at_least(self, name: str, prec: int) -> Any:
        """What :meth:`_cached` keeps for ``name`` at ``prec`` bits or more, or ``None``."""
        held = [key[2] for key in chain(self._cache, self._recent) if key[:2] == ("rule", name) and key[2] >= prec]
        if not held:
            return None
        key = ("rule", name, min(held))
        return self._cache[key][0] if key in self._cache else self._recent[key]

    def _block_levels(self, b: int) -> list[Level]:
        size = level_list_bytes(self._sizes[b], self.source.level_bytes)
        return self._keep(("levels", b), size, lambda: self.source.block_levels(b))

    def _block_weights(self, b: int) -> tuple[list[arb], list[arb]]:
        prec = ctx.prec
        size = self._sizes[b] * 2 * (_BALL_BYTES + prec // 4)
        return self._keep(("weights", b, prec), size, lambda: list(self.source.block_weights(b, self.scale)))  # type: ignore[return-value]

    def _block_cumulative(self, b: int) -> list[arb]:
        prec = ctx.prec

        def build() -> list[arb]:
            run = self._pass().start(b)
            out = []
            for w in self._block_weights(b)[1]:
                run = run + w
                out.append(run)
            return out

        return self._keep(("cumulative", b, prec), self._sizes[b] * (_BALL_BYTES + prec // 8), build)

    def _pass(self) -> "RunningSum":
        """Running sums at block starts and the total at flint's current precision (the
        newest two precisions are kept)."""
        prec = ctx.prec
        done = self._passes.get(prec)
        if done is None:
            done = RunningSum(self, prec)
            if len(self._passes) >= 2:
                self._passes.pop(next(iter(self._passes)))
            self._passes[prec] = done
        return done

    # -- the LevelTable interface ------------------------------------------------------
    @property
    def levels(self) -> tuple[Level, ...]:
        """Every level at once; :class:`~exactdp.errors.MemoryBudgetError` past the budget."""
        if self._levels is None:
            if self._complete or self.source.length_on_demand:
                self.check_fits(level_list_bytes(self._length, self.source.level_bytes), "levels()", "iter_levels()")
                self._levels = tuple(self.iter_levels())
            else:  # refused as soon as the levels found pass the budget, not after finding all
                self._levels = levels_within(self.iter_levels(), self.memory_budget, self.source.level_bytes)
        return self._levels

    def check_fits(self, size: int, what: str, instead: Optional[str]) -> None:
        """Refuse (:class:`~exactdp.errors.MemoryBudgetError`) an operation needing about
        ``size`` bytes at once past the memory budget, naming it by ``what`` (such as
        ``"levels()"``) and ``instead`` (a streamed method) when there is one."""
        if size > self.memory_budget:
            use = f"use {instead} (streamed, within the budget) or " if instead else ""
            raise MemoryBudgetError(
                "memory_budget", self.memory_budget,
                f"{what} would hold {self._length} levels at once, about {_bytes_text(size)}, "
                f"more than memory_budget = {self.memory_budget} bytes; {use}raise "
                f"memory_budget (for example memory_budget={_round_up(size)})",
                limit=self.memory_budget,
            )

    def iter_levels(self) -> Iterator[Level]:
        """Every level, best first, one block at a time."""
        if self._levels is not None:
            return iter(self._levels)
        return chain.from_iterable(self._block_levels(b) for b in takewhile(self._discover, count()))

    def index_of(self, utility: Utility) -> int:
        """Level index of the exact utility value ``utility`` (KeyError when no output has it)."""
        # blocks are ordered by decreasing utility: the last block whose first utility >= it
        # (a lazy table finds blocks until one starts below the utility, or the last block
        # found reaches down to it)
        while not self._complete and -utility >= self._neg_first_utilities[-1]:  # type: ignore[operator]
            last = len(self._sizes) - 1
            if utility >= self._block_levels(last)[-1].utility or not self._discover(last + 1):  # type: ignore[operator]
                break
        b = bisect_right(self._neg_first_utilities, -utility) - 1  # type: ignore[operator]
        if b < 0:
            raise KeyError(utility)
        levels = self._block_levels(b)
        i = bisect_left(levels, -utility, key=_neg_utility)  # type: ignore[operator]
        if i == len(levels) or levels[i].utility != utility:
            raise KeyError(utility)
        return self._starts[b] + i

    def relative_weight_of(self, utility: Utility) -> arb:
        """The relative weight of the level with ``utility``, at flint's current precision,
        without finding its block (tables with :attr:`weights_by_utility`): the same ball
        as ``relative_weights()[index_of(utility)]``."""
        return self.source.relative_weight(utility, self.scale)

    def relative_weights(self) -> Sequence[arb]:
        return LevelView(self, lambda b: self._block_weights(b)[0])

    def level_weights(self) -> Sequence[arb]:
        return LevelView(self, lambda b: self._block_weights(b)[1])

    def cumulative(self) -> Sequence[arb]:
        return CumulativeView(self, self._block_cumulative)

    def total(self) -> arb:
        """Enclosure of ``sum_a m_a e_a`` at flint's current precision."""
        return self._pass().total

    def summed_blocks(self) -> tuple[int, arb]:
        """``(n, tail)`` at flint's current precision: :meth:`total` is the running sum of
        the first ``n`` blocks' level weights plus ``tail``, a ball enclosing the weights
        of every later block (zero when all were summed)."""
        run = self._pass()
        return run.stop, run.tail

    def sum_except(self, a: int) -> arb:
        """Enclosure of ``sum_{b != a} m_b e_b``: the blocks the running sum first summed,
        without level ``a``, plus its bound on the rest (which still holds without ``a``)."""
        run = self._pass()
        others = run.tail
        with gc_paused():
            for b in range(run.stop):
                start = self._starts[b]
                for i, w in enumerate(self._block_weights(b)[1]):
                    if start + i != a:
                        others += w
        return others


def levels_within(levels: Iterator[Level], memory_budget: int, level_bytes: int) -> tuple[Level, ...]:
    """Every level of the stream ``levels`` as a tuple (each multiplicity estimated at
    ``level_bytes`` bytes, :func:`level_list_bytes`), refused with
    :class:`~exactdp.errors.MemoryBudgetError` as soon as the levels read are past
    ``memory_budget``, without reading the rest: a mechanism whose number of levels is
    known only after a whole pass (JointSet, Canonical) answers ``levels()`` at once
    instead of after that pass (about 20 minutes for JointSet's 33 million levels at
    d = 166,000, k = 200).

    >>> from exactdp.core.levels import Level
    >>> levels_within(iter([Level(0, 1), Level(-1, 3)]), 1000, 8)
    (Level(utility=0, multiplicity=1), Level(utility=-1, multiplicity=3))
    >>> levels_within(iter([Level(-u, 1) for u in range(100)]), 1000, 8)
    Traceback (most recent call last):
    ...
    exactdp.errors.MemoryBudgetError: memory_budget=1000: levels() would hold more than 6 levels at once (the first 7 already take about 1008 bytes; the number of levels is known only after all are computed), more than memory_budget = 1000 bytes; use iter_levels() (streamed, within the budget) or raise memory_budget
    """
    out: list[Level] = []
    limit = memory_budget // level_list_bytes(1, level_bytes)
    if limit == 0:  # not even one level fits: refused before any is computed
        raise MemoryBudgetError(
            "memory_budget", memory_budget,
            f"levels() cannot hold a single level (one takes about {level_list_bytes(1, level_bytes)} bytes), "
            f"more than memory_budget = {memory_budget} bytes; use iter_levels() (streamed, within the "
            "budget) or raise memory_budget",
            limit=memory_budget,
        )
    for level in levels:
        out.append(level)
        if len(out) > limit:
            raise MemoryBudgetError(
                "memory_budget", memory_budget,
                f"levels() would hold more than {limit} levels at once (the first {len(out)} already take "
                f"about {_bytes_text(level_list_bytes(len(out), level_bytes))}; the number of levels is known only "
                f"after all are computed), more than memory_budget = {memory_budget} bytes; use iter_levels() "
                "(streamed, within the budget) or raise memory_budget",
                limit=memory_budget,
            )
    return tuple(out)


def _neg_utility(level: Level) -> Any:
    return -level.utility  # type: ignore[operator]


def _bytes_text(size: int) -> str:
    return f"{size} bytes" if size < 1 << 20 else f"{size / 2**20:,.0f} MiB"


def _round_up(size: int) -> int:
    """A budget comfortably above ``size``: the next power of two times 2."""
    return 1 << (size.bit_length() + 1)
