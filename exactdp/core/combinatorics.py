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

:func:`count_words` counts the words of length ``k`` over letters of bounded use (the
count sequences of Peeling, the output orbits of the audit), exactly or saturated at a cap
without enumerating them.

>>> count_words([1, 1, 2], 2)      # letters A, B, C (C twice): 9 words but AA, BB
7
>>> count_words([165_940] + [1] * 60, 200, cap=10**6)    # more than 10**6: cap + 1
1000001
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Optional, Sequence

import gmpy2

__all__ = ["unrank_combination", "rank_combination", "count_words"]


def unrank_combination(r: int, n: int, m: int) -> list[int]:
    """The ``r``-th ``m``-subset of ``range(n)`` in colex order, ascending.

    Exact integer arithmetic decides every element: the largest ``c`` with ``C(c, i) <= r`` is
    found by exact comparisons, galloping from a float guess (``(c - (i-1)/2)**i / i! = r``)
    and bisecting the bracket; the guess only chooses where to look, so the result is that of
    plain bisection (the tests' twin).  ``0 <= r < C(n, m)`` is the caller's promise (an ``AssertionError`` otherwise).
    """
    out = []
    hi = n  # c_i < hi
    for i in range(m, 0, -1):
        c, value = _largest_below(r, i, hi - 1)
        out.append(c)
        r -= int(value)  # r stays an int: math.log reads an int's bits directly
        hi = c
    if r or hi < 0:
        raise AssertionError("combination rank out of range")
    return out[::-1]


#: Single steps (``C(c +- 1, i)`` from ``C(c, i)``: one exact product and quotient) tried
#: from the guess before galloping.
_STEPS = 4


def _largest_below(r: Any, i: int, top: int) -> tuple[int, Any]:
    """The largest ``c`` in ``[i-1, top]`` with ``C(c, i) <= r`` (``C(i-1, i) = 0 <= r``),
    and ``C(c, i)``."""
    lo = i - 1
    if r <= 0 or top <= lo:
        return lo, 0
    try:
        guess = int(math.exp((math.log(r) + math.lgamma(i + 1)) / i) + (i - 1) / 2)
    except (OverflowError, ValueError):  # pragma: no cover - a guess out of float range
        guess = top
    c = min(max(guess, lo), top)
    v = gmpy2.comb(c, i)
    # a few exact single steps: C(c+1, i) = C(c, i) (c+1) / (c+1-i), C(c-1, i) = C(c, i) (c-i) / c
    for _ in range(_STEPS):
        if v <= r:
            if c == top:
                return c, v
            w = v * (c + 1) // (c + 1 - i) if c >= i else gmpy2.mpz(1)  # C(i, i) = 1
            if w > r:
                return c, v
            c, v = c + 1, w
        else:
            v = v * (c - i) // c
            c -= 1
            if v <= r:
                return c, v
    # far from the guess: a bracket lo (C(lo, i) <= r) < bad (C(bad, i) > r, or top + 1)
    if v <= r:
        lo, bad, step = c, top + 1, 1
        while lo < top:
            probe = min(lo + step, top)
            if gmpy2.comb(probe, i) <= r:
                lo = probe
                step *= 2
            else:
                bad = probe
                break
    else:
        bad, step = c, 1
        while True:
            probe = max(bad - step, lo)
            if probe == lo or gmpy2.comb(probe, i) <= r:
                lo = probe
                break
            bad = probe
            step *= 2
    while bad - lo > 1:
        mid = (lo + bad) // 2
        if gmpy2.comb(mid, i) <= r:
            lo = mid
        else:
            bad = mid
    return lo, gmpy2.comb(lo, i)


def rank_combination(elements: Iterable[int]) -> int:
    """Inverse of :func:`unrank_combination`: the colex rank of ``elements``, distinct
    naturals (any order)."""
    return sum(int(gmpy2.comb(c, i)) for i, c in enumerate(sorted(elements), start=1))


def count_words(sizes: Sequence[int], k: int, cap: Optional[int] = None) -> int:
    """Number of words of length ``k`` over letters ``c`` each used at most ``sizes[c]``
    times (``k! [x^k] prod_c sum_{j <= sizes[c]} x^j / j!``), exact integer arithmetic.

    With ``cap``, ``min(that number, cap + 1)``: more than ``cap`` is decided without
    counting up to it, by two certified lower bounds (``perm(#letters, k)``, the words of
    distinct letters, and the multinomial ``k! / prod n_c!`` of the most spread-out letter
    use ``n_c = min(sizes[c], L)``: the words with that use alone), and otherwise by the
    count itself, saturated at ``cap + 1`` (every term is a non-negative integer, so
    saturating each sum keeps ``min(count, cap + 1)`` exact).

    The count: the letter of largest size is used ``k - j`` times and the others ``j``
    times, ``sum_j C(k, j) W(j)``, ``W(j)`` the words of length ``j`` over the others (a
    dynamic programme up to ``min(k, their total size)``).  When the lower bounds do not
    decide, the letters but the largest are few (a wider use would give more than ``cap``
    words), so the programme is small.
    """
    if k < 0:
        return 0
    top = None if cap is None else cap + 1
    used = sorted((min(s, k) for s in sizes if s > 0), reverse=True)
    if sum(used) < k:
        return 0
    if not used:  # k == 0: the empty word
        return 1 if top is None else min(1, top)
    if top is not None:
        if len(used) >= k and math.perm(len(used), k) >= top:
            return top
        if _spread_multinomial(used, k, top) >= top:
            return top
    largest, rest = used[0], used[1:]
    reach = min(k, sum(rest))
    words = [1] + [0] * reach  # words[t]: words of length t over the letters seen so far
    seen = 0
    singles = sum(1 for s in rest if s == 1)
    if singles:  # the letters used at most once, together: j of them in t - ... places
        seen = min(reach, singles)
        words = [math.perm(singles, t) for t in range(seen + 1)] + [0] * (reach - seen)
        if top is not None:
            words = [min(w, top) for w in words]
    for s in rest[:len(rest) - singles]:  # sizes descending: the singles are last
        seen = min(reach, seen + s)
        new = list(words)
        for t in range(1, seen + 1):
            acc = 0
            for j in range(0, min(s, t) + 1):  # j uses of the new letter
                if words[t - j]:
                    acc += math.comb(t, j) * words[t - j]
            new[t] = acc if top is None else min(acc, top)
        words = new
    total = 0
    for j in range(max(0, k - largest), reach + 1):
        total += math.comb(k, j) * words[j]
        if top is not None and total >= top:
            return top
    return total


def _spread_multinomial(used: Sequence[int], k: int, top: int) -> int:
    """``min(k! / prod n_c!, top)`` for the most spread-out use ``n_c = min(used[c], L)``
    (the smallest level ``L`` reaching ``k``, some letters at ``L`` taking one use less so
    that the uses sum to ``k``): a lower bound on the number of words (``sum(used) >= k``)."""
    lo, hi = 1, k  # smallest L with sum(min(s, L)) >= k
    while lo < hi:
        mid = (lo + hi) // 2
        if sum(min(s, mid) for s in used) >= k:
            hi = mid
        else:
            lo = mid + 1
    uses = [min(s, lo) for s in used]
    excess = sum(uses) - k
    for c in range(len(uses)):  # letters at the level L give back one use each
        if not excess:
            break
        if uses[c] == lo:
            uses[c] -= 1
            excess -= 1
    out, placed = 1, 0
    for n in uses:
        placed += n
        out *= math.comb(placed, n)
        if out >= top:
            return top
    return out
