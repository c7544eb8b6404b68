"""Brute-force twin of :func:`exactdp.core.combinatorics.unrank_combination`."""

from __future__ import annotations

import gmpy2


def unrank_combination_bisect(r: int, n: int, m: int) -> list[int]:
    """:func:`exactdp.core.combinatorics.unrank_combination` by plain bisection on ``C(c, i) <= r`` over the whole
    range (``log2 n`` binomials per element): the twin of the galloping search."""
    out = []
    hi = n  # c_i < hi
    for i in range(m, 0, -1):
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
