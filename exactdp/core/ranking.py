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
from typing import Sequence

__all__ = ["Ranking"]


class Ranking:
    """The sorted view of a validated count vector.

    Attributes: ``counts`` (the caller's order), ``order`` (item id of each 0-based rank),
    ``rank_of`` (rank of each item id), ``sorted_counts``, ``values`` (the distinct counts,
    descending) and ``cumulative`` (``cumulative[q]`` = number of items with count
    ``>= values[q]``).
    """

    __slots__ = ("counts", "d", "order", "rank_of", "sorted_counts", "values", "cumulative", "_neg")

    def __init__(self, counts: Sequence[int]):
        self.counts = tuple(counts)
        self.d = len(self.counts)
        self.order = tuple(sorted(range(self.d), key=lambda i: (-self.counts[i], i)))
        rank_of = [0] * self.d
        for rank, item in enumerate(self.order):
            rank_of[item] = rank
        self.rank_of = tuple(rank_of)
        self.sorted_counts = tuple(self.counts[i] for i in self.order)
        values: list[int] = []
        cumulative: list[int] = []
        for rank, c in enumerate(self.sorted_counts):
            if values and values[-1] == c:
                cumulative[-1] = rank + 1
            else:
                values.append(c)
                cumulative.append(rank + 1)
        self.values = tuple(values)
        self.cumulative = tuple(cumulative)
        self._neg = [-c for c in self.sorted_counts]  # ascending, for bisect

    def at_least(self, threshold: int) -> int:
        """Number of items with count ``>= threshold`` (a prefix of the ranks)."""
        return bisect_right(self._neg, -threshold)

    def greater_than(self, threshold: int) -> int:
        """Number of items with count ``> threshold``."""
        return bisect_left(self._neg, -threshold)

    def __repr__(self) -> str:
        return f"Ranking({self.counts!r})"
