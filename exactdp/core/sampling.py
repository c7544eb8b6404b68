"""Exact sampling from integer randomness.

:func:`choose_index` draws index ``a`` with probability exactly ``W_a / sum_b W_b`` given
only *certified enclosures* of the cumulative sums ``C_a = W_0 + ... + W_a``: a uniform
variate ``U`` in [0, 1) is produced lazily, 32 random bits at a time
(``rng.getrandbits``), as a dyadic interval ``[u/2**n, (u+1)/2**n)``; index ``a`` is returned
only once that interval times ``Z = C_last`` certainly lies inside ``[C_{a-1}, C_a)``.  No
float and no rounded comparison decides the outcome, so the result is exactly the
inverse-CDF sample of the infinite-precision ``U`` (the standard lazy-refinement argument;
see e.g. Knuth & Yao 1976).  When an interval straddles a boundary, more bits are drawn
and, if the enclosures are the obstacle, the precision is doubled.  The loop ends with
probability 1; each extra round happens with probability about ``2**-32``.

A uniform integer below ``n`` is ``rng.randrange(n)`` (exact, rejection-based on
``getrandbits``).

>>> import random
>>> from flint import arb
>>> def cumulative(prec):
...     return [arb(1), arb(3), arb(4)]          # weights 1, 2, 1
>>> rng = random.Random(7)
>>> draws = [choose_index(cumulative, 3, rng) for _ in range(4000)]
>>> [draws.count(i) for i in range(3)]
[1018, 1983, 999]
"""

from __future__ import annotations

import random
from typing import Callable, Optional, Sequence

from flint import arb

from ..errors import PrecisionError
from .precision import MAX_PREC, flint_workprec

__all__ = ["choose_index"]

_CHUNK = 32


def _first_not_below(cumulative: Sequence[arb], target: arb) -> int:
    """First index ``a`` whose upper bound is not ``<=`` the lower bound of ``target``."""
    lo_t = target.lower()
    lo, hi = 0, len(cumulative) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cumulative[mid].upper() <= lo_t:
            lo = mid + 1
        else:
            hi = mid
    return lo


def choose_index(cumulative: Callable[[int], Sequence[arb]], size: int, rng: random.Random,
                 prec: Optional[int] = None) -> int:
    """Index ``a`` with probability ``(C_a - C_{a-1}) / C_last``, decided exactly.

    ``cumulative(prec)`` must return enclosures of the nondecreasing cumulative weights at
    ``prec`` bits (it is called inside ``flint.ctx.workprec(prec)``; callers may cache).
    ``size`` is the number of entries, used for the first precision guess unless ``prec``
    gives it.
    """
    if size == 1:
        return 0
    if prec is None:
        prec = 64 + 2 * size.bit_length() + 16
    u = rng.getrandbits(2 * _CHUNK)
    n = 2 * _CHUNK
    while prec <= MAX_PREC:
        with flint_workprec(prec):
            cum = cumulative(prec)
            total = cum[-1]
            scale = arb(2) ** (-n)
            lo = arb(u) * scale * total
            hi = arb(u + 1) * scale * total
            # a block table's running sums search block ends first (one block computed)
            finder = getattr(cum, "first_not_below", None)
            a = finder(lo.lower()) if finder is not None else _first_not_below(cum, lo)
            below_ok = a == 0 or cum[a - 1].upper() <= lo.lower()
            if below_ok and hi.upper() <= cum[a].lower():
                return a
            # Draw more bits; raise precision when the enclosures, not U, are too wide.
            width = (hi - lo).lower()
            radius = max(total.rad(), cum[a].rad(), cum[a - 1].rad() if a else arb(0))
            if not (radius * 4 < width):
                prec *= 2
        u = (u << _CHUNK) | rng.getrandbits(_CHUNK)
        n += _CHUNK
        prec = max(prec, n + 2 * size.bit_length() + 32)
    raise PrecisionError(None, None, f"sampler could not separate a boundary within {MAX_PREC} bits")
