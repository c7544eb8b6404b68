"""Exact sampling from integer randomness.

:func:`choose_index` draws index ``a`` with probability exactly ``W_a / sum_b W_b`` given only
*certified enclosures* of the cumulative sums ``C_a = W_0 + ... + W_a``: a uniform ``U`` in
[0, 1) is drawn lazily, 32 bits at a time (``rng.getrandbits``), as a dyadic interval, and ``a``
is returned only once that interval times ``Z = C_last`` certainly lies inside ``[C_{a-1},
C_a)`` (else more bits, or twice the precision): no float decides, so the result is exactly
the inverse-CDF sample of the infinite-precision ``U`` (the lazy-refinement argument, Knuth &
Yao 1976); the loop ends with probability 1, each extra round with probability about ``2**-32``.

Many draws at once (:func:`inverse_cdf_words`): exact integer bounds of ``2**64 C_a / Z``
(:func:`cdf_bounds`, :func:`cdf_bounds_exact`) decide each draw's first 64 bits ``u`` by one
``numpy.searchsorted`` when ``[u, u + 1)`` certainly lies between two boundaries; the rest go
on in :func:`choose_index`.  Uniform integers: ``rng.randrange(n)`` or :func:`uniform_below`.
Derivation: docs/precision.md, sections "Sampling" and "Many exact draws at once".

>>> import random
>>> from flint import arb
>>> def cumulative(prec):
...     return [arb(1), arb(3), arb(4)]          # weights 1, 2, 1
>>> rng = random.Random(7)
>>> draws = [choose_index(cumulative, 3, rng) for _ in range(4000)]
>>> [draws.count(i) for i in range(3)]
[1018, 1983, 999]
>>> lo, hi = cdf_bounds_exact([1, 3, 4])       # the same weights, all draws at once
>>> index, undecided = inverse_cdf_words(lo, hi, random_words(random.Random(7), 4000))
>>> int(undecided.sum()), index.tolist() == draws  # the same 64-bit prefixes: the same draws
(0, True)
"""

from __future__ import annotations

import random
import sys
from bisect import bisect_right
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
from flint import arb

from ..errors import InvalidParameterError, PrecisionError
from .precision import MAX_PREC, flint_workprec

__all__ = [
    "choose_index",
    "initial_prec",
    "random_words",
    "numpy_generator",
    "uniform_below",
    "cdf_bounds",
    "cdf_bounds_exact",
    "word_bounds",
    "inverse_cdf_words",
    "inverse_cdf_word",
    "WORD_BITS",
    "first_not_below",
]

_CHUNK = 32
#: Bits of ``U`` that the batched draws read at once (one unsigned 64-bit word per draw).
WORD_BITS = 64
_WORD_MAX = (1 << WORD_BITS) - 1


def first_not_below(balls: Sequence[arb], lower: arb) -> int:
    """First index ``a`` whose upper bound is not ``<= lower`` (the last index if none), by
    bisection: ``balls`` enclose nondecreasing values with nondecreasing upper bounds (as
    running sums of non-negative balls have)."""
    lo, hi = 0, len(balls) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if balls[mid].upper() <= lower:
            lo = mid + 1
        else:
            hi = mid
    return lo


def initial_prec(size: int) -> int:
    """The first working precision of a draw among ``size`` entries (64 bits of ``U`` and
    room for the rounding of ``size`` cumulative sums)."""
    return 64 + 2 * size.bit_length() + 16


def choose_index(cumulative: Callable[[int], Sequence[arb]], size: int, rng: random.Random,
                 prefix: Optional[tuple[int, int]] = None, prec: Optional[int] = None) -> int:
    """Index ``a`` with probability ``(C_a - C_{a-1}) / C_last``, decided exactly.

    ``cumulative(prec)`` must return enclosures of the nondecreasing cumulative weights at
    ``prec`` bits (it is called inside ``flint.ctx.workprec(prec)``; callers may cache).
    ``size`` is the number of entries, used for the first precision guess unless ``prec``
    gives it (a table that already holds enclosures at some precision passes it).
    ``prefix=(u, n)``: the first ``n`` bits of ``U`` are already drawn (``U`` lies in
    ``[u/2**n, (u+1)/2**n)``; the batched draws pass their undecided 64-bit words here);
    without it the first 64 bits are ``rng.getrandbits(64)``.
    """
    if size == 1:
        return 0
    if prec is None:
        prec = initial_prec(size)
    if prefix is None:
        u, n = rng.getrandbits(2 * _CHUNK), 2 * _CHUNK
    else:
        u, n = prefix
        prec = max(prec, n + 2 * size.bit_length() + 32)
    while prec <= MAX_PREC:
        with flint_workprec(prec):
            cum = cumulative(prec)
            total = cum[-1]
            scale = arb(2) ** (-n)
            lo = arb(u) * scale * total
            hi = arb(u + 1) * scale * total
            # a block table's running sums search block ends first (one block computed)
            finder = getattr(cum, "first_not_below", None)
            a = finder(lo.lower()) if finder is not None else first_not_below(cum, lo.lower())
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


#: Most words :func:`random_words` reads with one ``getrandbits`` call (whose argument is
#: a C int, so at most ``2**31 - 1`` bits).
_WORDS_PER_CALL = 1 << 20


def random_words(rng: random.Random, n: int) -> np.ndarray:
    """``n`` independent uniform 64-bit words (``numpy.uint64``) from ``rng.getrandbits``.

    One call ``rng.getrandbits(64 * n)`` read as little-endian words: word ``t`` is what the
    ``t``-th of ``n`` successive ``rng.getrandbits(64)`` calls would return (CPython fills
    ``getrandbits`` 32 bits at a time, least significant first), on every platform.
    """
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    if n <= _WORDS_PER_CALL:
        raw = rng.getrandbits(WORD_BITS * n).to_bytes(8 * n, "little")
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64)
    # getrandbits takes a C int number of bits: one call for n >= 2**25 words raised
    # OverflowError.  Successive calls read the same 32-bit stream, so the words are
    # exactly those one call would give.
    out = np.empty(n, dtype=np.uint64)
    for start in range(0, n, _WORDS_PER_CALL):
        m = min(_WORDS_PER_CALL, n - start)
        out[start:start + m] = np.frombuffer(rng.getrandbits(WORD_BITS * m).to_bytes(8 * m, "little"), dtype="<u8")
    return out


def numpy_generator(rng: random.Random) -> np.random.Generator:
    """A numpy ``Generator`` (PCG64) seeded with 128 bits of ``rng``: its integer draws
    (``integers``, ``bit_generator.random_raw``) are exact, and reproducible from ``rng``."""
    return np.random.Generator(np.random.PCG64(rng.getrandbits(128)))


#: :func:`uniform_below` splits words into 16-bit parts while every bound is at most this
#: (each part then rejected with probability below ``2**-4``), into 32-bit parts otherwise.
HALF_WORD_BOUND = 1 << 12


def uniform_below(npgen: np.random.Generator, bounds: np.ndarray) -> np.ndarray:
    """Independent uniform integers ``0 <= v < bounds`` elementwise (the shape of ``bounds``,
    every bound in ``[1, 2**32)``), from ``npgen.bit_generator.random_raw`` only, as
    ``numpy.uint16`` when every bound is at most ``2**12`` and ``numpy.uint32`` otherwise
    (a read-only strided view: copy it to write to it).

    Lemire's multiply-and-reject (D. Lemire, "Fast Random Integer Generation in an
    Interval", ACM TOMACS 29(1), 2019, arXiv:1805.10941): the raw words are read as
    little-endian ``b``-bit parts ``u`` (``b = 16`` or ``32`` as above), one per entry in
    order; with ``m = u * w`` the draw is ``m >> b`` unless ``m mod 2**b < 2**b mod w``.
    Of the ``2**b`` values of ``u`` exactly ``floor(2**b / w)`` are accepted for each
    ``v < w`` (the paper's Lemma 4.1), so an accepted draw is exactly uniform; rejected
    entries (probability ``< w / 2**b`` each, so ``< 2**-4`` with 16-bit parts) are drawn
    again from fresh words, in index order, until none is left.  Only integer arithmetic
    decides anything.
    """
    bounds = np.asarray(bounds)
    w = bounds.reshape(-1)
    n = w.size
    top = int(w.max()) if n else 1
    if n and (int(w.min()) < 1 or top >= 1 << 32):
        raise InvalidParameterError("bounds", f"[{int(w.min())}, {top}]", "every bound must be in [1, 2**32)")
    bits, part, wide, half = ((16, "<u2", np.uint32, np.uint16) if top <= HALF_WORD_BOUND
                              else (32, "<u4", np.uint64, np.uint32))
    if w.dtype.kind != "u":  # in range: every bound fits the half-width unsigned dtype
        w = w.astype(half)
    lo, hi = (0, 1) if sys.byteorder == "little" else (1, 0)

    def parts(count: int) -> np.ndarray:
        words = npgen.bit_generator.random_raw(-(-count * bits // WORD_BITS)).astype("<u8", copy=False)
        return words.view(part)[:count]

    m = np.multiply(parts(n), w, dtype=wide)
    low = m.view(half)[lo::2]
    cand = np.flatnonzero(low < top)  # every rejection has m mod 2**b < 2**b mod w < w <= top
    while len(cand):
        reject = cand[low[cand].astype(np.int64) < (1 << bits) % w[cand].astype(np.int64)]
        if not len(reject):
            break
        m[reject] = np.multiply(parts(len(reject)), w[reject], dtype=wide)
        cand = reject[low[reject] < top]
    out = m.view(half)[hi::2].reshape(bounds.shape)
    out.flags.writeable = False
    return out


def _as_words(values: list[int]) -> np.ndarray:
    return np.fromiter(values, dtype=np.uint64, count=len(values))


def cdf_bounds_exact(ends: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``lo_a = floor(2**64 E_a / E_last)`` and ``hi_a = ceil(...)`` for ``a < len - 1``,
    exact (integer division) for nondecreasing non-negative integers ``ends`` (the last
    positive); both are capped at ``2**64 - 1`` (a lower bound stays one; a capped upper
    bound is allowed for by :func:`inverse_cdf_words`)."""
    lo, hi = word_bounds(ends[:-1], ends[-1], stop=False)
    return _as_words(lo), _as_words(hi)


def word_bounds(ends: Iterable[int], total: int, stop: bool = True) -> tuple[list[int], list[int]]:
    """:func:`cdf_bounds_exact` as Python int lists, for running sums ``ends`` given one by
    one and their ``total``: with ``stop``, the lists end at the first lower bound of
    ``2**64 - 1`` (every later boundary is at least that, and :func:`inverse_cdf_words` or
    :func:`inverse_cdf_word` gives every word below ``2**64 - 1`` the same index without
    them), so an iterator computes only the sums up to ``1 - 2**-64`` of the mass."""
    lo: list[int] = []
    hi: list[int] = []
    for e in ends:
        q, r = divmod(e << WORD_BITS, total)
        q = int(q)
        lo.append(min(q, _WORD_MAX))
        hi.append(min(q + (r != 0), _WORD_MAX))
        if stop and q >= _WORD_MAX:
            break
    return lo, hi


def cdf_bounds(cumulative: Sequence[arb]) -> tuple[np.ndarray, np.ndarray]:
    """Exact integers ``lo_a <= 2**64 C_a / Z <= hi_a`` (``Z = C_last``, ``a < len - 1``)
    from enclosures of the cumulative sums, at flint's current precision.

    Each bound is the floor of the lower end (ceiling of the upper end) of the ball
    ``C_a * (2**64 / Z)``: an exact integer, since the ball contains the true value.  They
    are then made monotone (``lo`` by suffix minima, ``hi`` by prefix maxima, both still
    bounds because ``C_a / Z`` is nondecreasing) and clipped to ``[0, 2**64 - 1]``
    (raising a lower bound to 0 and lowering one to ``2**64 - 1`` keep it a lower bound;
    an upper bound capped at ``2**64 - 1`` is allowed for by :func:`inverse_cdf_words`).
    A ball too wide to give an integer (never at the precision the callers use) gives the
    trivial bounds.  Once a lower bound reaches ``2**64 - 1`` the remaining boundaries are
    all at least that, and the arrays stop there: :func:`inverse_cdf_words` gives every
    word below ``2**64 - 1`` an index at most that boundary's, as the full arrays would.
    So the arrays hold the ``len(cumulative) - 1`` boundaries, fewer when the mass after
    some level is below ``2**-64``, or all ``len(cumulative)`` when the stop falls on the
    last running sum itself (that extra bound, ``2**64 - 1``, changes no index: a word
    past every earlier boundary gets the last index either way).
    """
    scale = arb(2) ** WORD_BITS / cumulative[-1]
    lo, hi = [], []
    # iterated, never len(): a streamed table (BlockLevelTable) then computes only the
    # blocks read before the break below, and never counts its levels
    for c in cumulative:
        q = c * scale
        f = q.lower().floor().unique_fmpz()
        g = q.upper().ceil().unique_fmpz()
        lo.append(0 if f is None else min(max(int(f), 0), _WORD_MAX))
        hi.append(_WORD_MAX if g is None else min(max(int(g), 0), _WORD_MAX))
        if lo[-1] == _WORD_MAX:
            # 2**64 F_a >= 2**64 - 1, so every later boundary is too: the rest are left
            # out (a long tail of levels holding less than 2**-64 of the mass costs nothing)
            break
    else:  # every running sum read: the last is Z itself (F = 1), no boundary
        lo.pop()
        hi.pop()
    lo_a, hi_a = _as_words(lo), _as_words(hi)
    if len(lo):
        lo_a = np.minimum.accumulate(lo_a[::-1])[::-1].copy()
        hi_a = np.maximum.accumulate(hi_a)
    return lo_a, hi_a


def inverse_cdf_words(lo: np.ndarray, hi: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse-CDF index of every draw whose first 64 bits ``words`` decide it, against the
    nondecreasing ``uint64`` bounds ``lo``, ``hi`` (``lo_a <= 2**64 F_a <= hi_a``, :func:`cdf_bounds`): the
    first ``a`` with ``lo_a > u``, decided when ``hi_{a-1} <= u < 2**64 - 1``.  Returns
    ``(index, undecided)``: an ``int64`` array and a boolean mask of the draws to finish with
    :func:`choose_index` from the prefix ``(u, 64)``.  Proof: docs/precision.md, "Many exact
    draws at once"."""
    index = np.searchsorted(lo, words, side="right").astype(np.int64)
    below = np.zeros(len(words), dtype=np.uint64)
    has_below = index > 0
    below[has_below] = hi[index[has_below] - 1]
    decided = (below <= words) & (words != np.uint64(_WORD_MAX))
    return index, ~decided


def inverse_cdf_word(lo: Sequence[int], hi: Sequence[int], u: int) -> Optional[int]:
    """:func:`inverse_cdf_words` for one word ``u`` against bounds ``lo``, ``hi`` held as Python ints: the
    index when ``u`` decides it, else ``None``; for a walk making one small draw per step.

    >>> lo, hi = cdf_bounds_exact([1, 2, 3])     # boundaries 1/3 and 2/3
    >>> [inverse_cdf_word(lo.tolist(), hi.tolist(), u) for u in (0, 2**64 // 3, 2**63, 2**64 - 1)]
    [0, None, 1, None]
    """
    a = bisect_right(lo, u)
    if u == _WORD_MAX or (a and hi[a - 1] > u):
        return None
    return a
