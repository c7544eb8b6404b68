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

__all__ = ["Ranking"]

#: Counts of absolute value below this are ranked in ``int64`` (a difference of two counts
#: and that minus a count stay in range).
NUMPY_BOUND = 1 << 61


class RankingArrays(NamedTuple):
    """:class:`Ranking` as ``int64`` arrays."""

    order: Any
    sorted_counts: Any
    values: Any
    cumulative: Any
    neg: Any


def _rank_numpy(counts: tuple[int, ...]) -> Optional[RankingArrays]:
    """The ranking in ``int64`` when every count is below :data:`NUMPY_BOUND` in size, else
    ``None``: the order by one sort of the packed keys ``-c * 2**s + id`` when they fit 62
    bits (ascending: larger counts first, the smaller id first among ties), else a
    stable argsort of ``-c``; the same integers as the Python sort (tested)."""
    import numpy as np

    d = len(counts)
    if not d:
        return None
    try:
        a = np.fromiter(counts, dtype=np.int64, count=d)
    except (OverflowError, TypeError, ValueError):
        return None
    high, low = int(a.max()), int(a.min())
    if high >= NUMPY_BOUND or low <= -NUMPY_BOUND:
        return None
    s = d.bit_length()
    if max(high, -low).bit_length() + s <= 62:
        key = -a
        key <<= s
        key |= np.arange(d, dtype=np.int64)
        key.sort()
        order = key & ((1 << s) - 1)
        key >>= s
        neg = key
        sc = -key
    else:
        order = np.argsort(-a, kind="stable")
        sc = a[order]
        neg = -sc
    ends = np.flatnonzero(sc[1:] != sc[:-1]) + 1  # the first rank of each later value
    return RankingArrays(order, sc, sc[np.concatenate(([0], ends))], np.append(ends, d), neg)


class Ranking:
    """The sorted view of a validated count vector.

    Attributes: ``counts`` (the caller's order), ``order`` (item id of each 0-based rank),
    ``rank_of`` (rank of each item id), ``sorted_counts``, ``values`` (the distinct counts,
    descending) and ``cumulative`` (``cumulative[q]`` = number of items with count
    ``>= values[q]``), tuples of Python ints.  Counts below ``2**61`` in size are ranked in
    ``int64`` (:attr:`arrays`) and each tuple is made from its array when first read.
    """

    __slots__ = ("counts", "d", "_order", "_rank_of", "_sorted_counts", "_values", "_cumulative", "_neg",
                 "arrays")

    def __init__(self, counts: Sequence[int]):
        self.counts = tuple(counts)
        self.d = len(self.counts)
        self._order = self._rank_of = self._sorted_counts = self._values = self._cumulative = None
        self._neg: Optional[list[int]] = None
        #: ``None``, or the ranking as ``int64`` arrays (counts below ``2**61`` in size):
        #: ``order``, ``sorted_counts``, ``values``, ``cumulative`` and ``neg`` (the sorted
        #: counts negated, ascending), the same integers as the tuples
        self.arrays: Optional[RankingArrays] = _rank_numpy(self.counts)
        if self.arrays is None:
            self._rank_python()

    def _rank_python(self) -> None:
        order = sorted(range(self.d), key=lambda i: (-self.counts[i], i))
        self._order = tuple(order)
        self._sorted_counts = tuple(self.counts[i] for i in order)
        values: list[int] = []
        cumulative: list[int] = []
        for rank, c in enumerate(self._sorted_counts):
            if values and values[-1] == c:
                cumulative[-1] = rank + 1
            else:
                values.append(c)
                cumulative.append(rank + 1)
        self._values = tuple(values)
        self._cumulative = tuple(cumulative)

    @property
    def order(self) -> tuple[int, ...]:
        if self._order is None:
            self._order = tuple(self.arrays.order.tolist())  # type: ignore[union-attr]
        return self._order

    @property
    def rank_of(self) -> tuple[int, ...]:
        if self._rank_of is None:
            rank_of = [0] * self.d
            for rank, item in enumerate(self.order):
                rank_of[item] = rank
            self._rank_of = tuple(rank_of)
        return self._rank_of

    @property
    def sorted_counts(self) -> tuple[int, ...]:
        if self._sorted_counts is None:
            self._sorted_counts = tuple(self.arrays.sorted_counts.tolist())  # type: ignore[union-attr]
        return self._sorted_counts

    @property
    def values(self) -> tuple[int, ...]:
        if self._values is None:
            self._values = tuple(self.arrays.values.tolist())  # type: ignore[union-attr]
        return self._values

    @property
    def cumulative(self) -> tuple[int, ...]:
        if self._cumulative is None:
            self._cumulative = tuple(self.arrays.cumulative.tolist())  # type: ignore[union-attr]
        return self._cumulative

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.counts,)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.__init__(state[0])  # type: ignore[misc]

    @property
    def _negated(self) -> list[int]:
        """The sorted counts negated (ascending), for bisect."""
        if self._neg is None:
            self._neg = [-c for c in self.sorted_counts]
        return self._neg

    def at_least(self, threshold: int) -> int:
        """Number of items with count ``>= threshold`` (a prefix of the ranks)."""
        return bisect_right(self._negated, -threshold)

    def greater_than(self, threshold: int) -> int:
        """Number of items with count ``> threshold``."""
        return bisect_left(self._negated, -threshold)

    def __repr__(self) -> str:
        return f"Ranking({self.counts!r})"
