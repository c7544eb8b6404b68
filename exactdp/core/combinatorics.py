"""Ranking and unranking of combinations in colex order: the uniform draw within a level.

Every mechanism samples a level with its selection rule and then an output of that level
uniformly, by drawing a uniform integer ``r`` below the level's multiplicity and unranking
it.  Subsets are unranked in the combinatorial number system (colexicographic order,
Knuth, TAOCP 7.2.1.3, Theorem L): the ascending ``m``-subset ``c_1 < ... < c_m`` of
``range(n)`` has rank ``sum_i C(c_i, i)``.

>>> unrank_combination(4, 5, 2)
[1, 3]
>>> rank_combination([1, 3])
4
>>> [unrank_combination(r, 4, 2) for r in range(6)]
[[0, 1], [0, 2], [1, 2], [0, 3], [1, 3], [2, 3]]
"""

from __future__ import annotations

from typing import Iterable

import gmpy2

__all__ = ["unrank_combination", "rank_combination"]


def unrank_combination(r: int, n: int, m: int) -> list[int]:
    """The ``r``-th ``m``-subset of ``range(n)`` in colex order, ascending.

    Exact integer arithmetic only: each element is found by bisection on ``C(c, i) <= r``.
    ``0 <= r < C(n, m)`` is the caller's promise (an ``AssertionError`` otherwise).
    """
    out = []
    hi = n  # c_i < hi
    for i in range(m, 0, -1):
        # largest c in [i-1, hi-1] with C(c, i) <= r  (C(i-1, i) = 0 <= r)
        lo, top = i - 1, hi - 1
        while lo < top:
            mid = (lo + top + 1) // 2
            if gmpy2.comb(mid, i) <= r:
                lo = mid
            else:
                top = mid - 1
        out.append(lo)
        r -= int(gmpy2.comb(lo, i))
        hi = lo
    if r or hi < 0:
        raise AssertionError("combination rank out of range")
    return out[::-1]


def rank_combination(elements: Iterable[int]) -> int:
    """Inverse of :func:`unrank_combination`: the colex rank of a set of distinct naturals."""
    return sum(int(gmpy2.comb(c, i)) for i, c in enumerate(sorted(elements), start=1))
