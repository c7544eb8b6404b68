"""Ranks of items: sort by count descending, ties broken by smaller item id (docs/definitions.md §1).

The tie rule only fixes *names*: every mechanism treats items of equal count alike, so its
output distribution over item ids does not depend on it (tested in each mechanism's tests).

>>> r = Ranking((1, 5, 5, 0))
>>> r.order          # item ids by rank
(1, 2, 0, 3)
>>> r.sorted_counts  # c_(1) >= ... >= c_(d)
(5, 5, 1, 0)
>>> r.at_least(1), r.greater_than(1)   # how many items have count >= 1, > 1
(3, 2)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, NamedTuple, Optional, Sequence

__all__ = ["Ranking", "RankingArrays"]

#: :attr:`Ranking.arrays` exists when every count is below this in size (a difference of
#: two counts, and that minus a count, stay in int64).
NUMPY_BOUND = 1 << 61


class RankingArrays(NamedTuple):
    """A :class:`Ranking` as ``int64`` arrays: ``order``, ``sorted_counts``, ``values``,
    ``cumulative`` (the integers of the tuples) and ``neg`` (the sorted counts negated,
    ascending)."""

    order: Any
    sorted_counts: Any
    values: Any
    cumulative: Any
    neg: Any

#: From this many items on, the ranks are computed in numpy (same attributes, about ten
#: times faster at d = 166,000) when every count fits in int64 with room to negate.
_NUMPY_FROM = 2048
_INT_BOUND = 2**62


class Ranking:
    """The sorted view of a validated count vector.

    Attributes: ``counts`` (the caller's order), ``order`` (item id of each 0-based rank),
    ``rank_of`` (rank of each item id), ``sorted_counts``, ``values`` (the distinct counts,
    descending) and ``cumulative`` (``cumulative[q]`` = number of items with count
    ``>= values[q]``).
    """

    __slots__ = ("counts", "d", "_order", "_values", "_cumulative", "_rank_of", "_sorted", "_negs", "_arrays",
                 "_ranked", "_int64")

    def __init__(self, counts: Sequence[int]):
        self.counts = tuple(counts)
        self.d = len(self.counts)
        self._arrays = None  # (counts, order) as int64 arrays on the numpy route
        self._ranked: Any = None  # (sorted counts, values, cumulative) as int64 arrays, on first use
        self._int64: Any = False  # the arrays property, once computed (None: counts too large)
        if self.d >= _NUMPY_FROM and self._numpy_ranks():
            return
        self._order = tuple(sorted(range(self.d), key=lambda i: (-self.counts[i], i)))
        rank_of = [0] * self.d
        for rank, item in enumerate(self.order):
            rank_of[item] = rank
        self._rank_of = tuple(rank_of)
        self._sorted = tuple(self.counts[i] for i in self._order)
        values: list[int] = []
        cumulative: list[int] = []
        for rank, c in enumerate(self._sorted):
            if values and values[-1] == c:
                cumulative[-1] = rank + 1
            else:
                values.append(c)
                cumulative.append(rank + 1)
        self._values = tuple(values)
        self._cumulative = tuple(cumulative)
        self._negs = [-c for c in self._sorted]  # ascending, for bisect

    def _numpy_ranks(self) -> bool:
        """``order``, ``values`` and ``cumulative`` in numpy when every count lies in
        ``(-2**62, 2**62)`` (exact in int64, so every comparison below is exact; the other
        attributes are built from the arrays on first use); False (nothing set)
        otherwise.  The order by count descending, ties by smaller item id (the key
        ``(-c_i, i)``) is the sorted keys ``(max c - c_i) d + i`` modulo ``d`` when they stay
        below ``2**62``, else ``argsort`` of ``~c = -c - 1`` (no overflow) with a stable sort."""
        import numpy as np

        try:
            c = np.fromiter(self.counts, dtype=np.int64, count=self.d)
        except (OverflowError, TypeError, ValueError):
            return False
        if self.d and not (int(c.min()) > -_INT_BOUND and int(c.max()) < _INT_BOUND):
            return False
        top, span = int(c.max()), int(c.max()) - int(c.min())
        if (span + 1) * self.d < _INT_BOUND:
            # one key per item, (top - c_i) d + i: ascending keys are the ranks, exact in int64
            key = (top - c) * self.d + np.arange(self.d, dtype=np.int64)
            key.sort()
            order = key % self.d
        else:
            order = np.argsort(~c, kind="stable")
        self._arrays = (c, order)
        self._order = self._values = self._cumulative = self._rank_of = self._sorted = self._negs = None
        return True

    def _ranked_arrays(self) -> tuple[Any, Any, Any]:
        """The numpy route's sorted counts, ``values`` and ``cumulative`` as int64 arrays."""
        if self._ranked is None:
            import numpy as np

            c, order = self._arrays
            ranked = c[order]
            ends = np.flatnonzero(ranked[1:] != ranked[:-1]) + 1  # first rank of every new count
            self._ranked = (ranked, ranked[np.concatenate(([0], ends))], np.append(ends, self.d))
        return self._ranked

    @property
    def order(self) -> tuple[int, ...]:
        """The item id of every rank (0-based)."""
        if self._order is None:
            self._order = tuple(self._arrays[1].tolist())
        return self._order

    @property
    def values(self) -> tuple[int, ...]:
        """The distinct counts, descending."""
        if self._values is None:
            self._values = tuple(self._ranked_arrays()[1].tolist())
        return self._values

    @property
    def cumulative(self) -> tuple[int, ...]:
        """``cumulative[q]``: the number of items with count ``>= values[q]``."""
        if self._cumulative is None:
            self._cumulative = tuple(self._ranked_arrays()[2].tolist())
        return self._cumulative

    @property
    def rank_of(self) -> tuple[int, ...]:
        """The rank (0-based) of every item id."""
        if self._rank_of is None:
            import numpy as np

            order = self._arrays[1]
            rank_of = np.empty(self.d, dtype=np.int64)
            rank_of[order] = np.arange(self.d, dtype=np.int64)
            self._rank_of = tuple(rank_of.tolist())
        return self._rank_of

    @property
    def sorted_counts(self) -> tuple[int, ...]:
        """The counts in rank order, ``c_(1) >= ... >= c_(d)``."""
        if self._sorted is None:
            self._sorted = tuple(self._ranked_arrays()[0].tolist())
        return self._sorted

    @property
    def arrays(self) -> Optional[RankingArrays]:
        """The ranking as ``int64`` arrays (:class:`RankingArrays`) when every count is
        below :data:`NUMPY_BOUND` in size, else ``None``; made on first use (from the
        numpy route's arrays, or from the tuples)."""
        if self._int64 is False:
            import numpy as np

            if self._arrays is not None:
                c, order = self._arrays
            else:
                try:
                    c = np.array(self.counts, dtype=np.int64)
                except OverflowError:
                    c = None
                order = None if c is None else np.array(self.order, dtype=np.int64)
            if c is None or not (int(c.max()) < NUMPY_BOUND and int(c.min()) > -NUMPY_BOUND):
                self._int64 = None
            else:
                if self._arrays is not None:
                    sc, values, cumulative = self._ranked_arrays()
                else:
                    sc = c[order]
                    values = np.array(self.values, dtype=np.int64)
                    cumulative = np.array(self.cumulative, dtype=np.int64)
                self._int64 = RankingArrays(order, sc, values, cumulative, -sc)
        return self._int64

    @property
    def _neg(self) -> list[int]:
        """The negated sorted counts (ascending, for bisect)."""
        if self._negs is None:
            self._negs = (-self._ranked_arrays()[0]).tolist()
        return self._negs

    def at_least(self, threshold: int) -> int:
        """Number of items with count ``>= threshold`` (a prefix of the ranks)."""
        return bisect_right(self._neg, -threshold)

    def greater_than(self, threshold: int) -> int:
        """Number of items with count ``> threshold``."""
        return bisect_left(self._neg, -threshold)

    def __repr__(self) -> str:
        return f"Ranking({self.counts!r})"
