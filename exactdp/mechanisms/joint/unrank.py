"""Joint's uniform draw within a level: the r-th sequence of a level, and many at once.

Paper: Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Section 3, Algorithm 1
lines 21-24 (the sequence given its score entry), with Lemma 3.6 (every choice set is
non-empty); docs/definitions.md §2.1.

The sequences of level ``M`` (utility ``-M``) are split by their *score row* ``i``: the
first row with ``c_(i) - c[s_i] = M``.  Rows ``x < i`` pick among the ``T_x(M^-)`` top
ranks (count ``> c_(x) - M``), row ``i`` one of the ranks ``[T_i(M^-), T_i(M))`` (count
``c_(i) - M``), rows ``x > i`` among the ``T_x(M)`` top ranks, each without the ranks
already picked.  The choice sets of the rows, in order, are nested prefixes of the
ranking (row ``i``'s lies above all earlier ones), so row ``x`` has ``T - x`` choices
whatever the earlier picks: ``before[x] = T_x(M^-) - x``, ``after[x] = T_x(M) - x``.

- :func:`unrank` (one draw, ``Joint._unrank``): ``r`` is read as the score row (by the
  running ``ends``), then mixed-radix digits, each the digit-th rank not used yet.
- :func:`draw_level_ranks` (``Joint.samples``): the same law with the digits drawn
  independently and uniformly (a uniform ``r`` *is* independent uniform digits given its
  score row), for many draws of one level at once in numpy: the score rows by exact
  integer bounds (:func:`exactdp.core.sampling.inverse_cdf_words`), the digits by
  :func:`exactdp.core.sampling.uniform_below` (exact integer sampling from the raw
  words), and the picks by a Fisher-Yates shuffle over the nested prefixes
  (:func:`ranks_from_digits`), one numpy step per row for every draw of a chunk: row ``x``
  swaps position ``x`` with position ``x + digit`` (row ``i``: ``T_i(M^-) + digit``) and
  picks what lands at ``x``.  That is another bijection from the digits onto the
  sequences of the score row (positions ``[x, T)`` always hold exactly the unused ranks
  below ``T``), so each draw is uniform over the level; the tests enumerate every digit
  of small levels and check that every sequence comes out exactly once.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from typing import Iterator, Sequence

import numpy as np
from flint import arb

from ...core.sampling import HALF_WORD_BOUND, WORD_BITS, cdf_bounds_exact, choose_index, inverse_cdf_words, uniform_below

__all__ = ["LevelPlan", "unrank", "ranks_from_digits", "digit_ranges", "draw_level_ranks"]

#: Levels whose deepest choice set ``T_{k-1}(M)`` is at most this many times ``k`` are
#: unranked with :func:`_free_list_picks`, deeper ones with :func:`_bisect_picks`.
_FREE_LIST_LIMIT = 4

#: Batched picks keep the first ``max(k, _DENSE_LIMIT)`` positions of every draw's
#: shuffle in a dense array; deeper positions are tracked only where a draw visits them.
_DENSE_LIMIT = 1024

#: Entries of the dense shuffle array per chunk of draws (int16: 1 MiB, so that the
#: shuffle's scattered reads and writes stay in cache).
_CHUNK_ENTRIES = 1 << 19


class LevelPlan:
    """What unranking one level of Joint needs, computed once per level from the thresholds
    ``t_at[x] = T_x(M)`` and ``t_gt[x] = T_x(M^-)`` of its rows (``Joint._thresholds``).

    ``before[x] = max(T_x(M^-) - x, 0)`` and ``after[x] = T_x(M) - x`` are the radices of
    rows before and after the score row ``i``; sequences whose score row is ``i`` have
    ranks ``ends[i-1] <= r < ends[i]`` (``T_i(M) - T_i(M^-)`` equal shares, one per item
    of row ``i``).  Only small integers and the ``k`` running ends are kept.
    """

    __slots__ = ("t_gt", "before", "after", "ends", "top")

    def __init__(self, t_at: Sequence[int], t_gt: Sequence[int]):
        k = len(t_at)
        self.t_gt = t_gt
        self.top = t_at[-1]  # the deepest choice set
        self.after = after = [t_at[x] - x for x in range(k)]  # all >= 1 for M >= 0
        self.before = before = [max(t_gt[x] - x, 0) for x in range(k)]
        # suffix[i] = prod_{x >= i} after[x]
        suffix = [1] * (k + 1)
        for x in range(k - 1, -1, -1):
            suffix[x] = suffix[x + 1] * after[x]
        self.ends = []
        prefix, total = 1, 0  # prefix = prod_{x < i} before[x]
        for i in range(k):
            total += (t_at[i] - t_gt[i]) * prefix * suffix[i + 1]
            self.ends.append(total)
            prefix *= before[i]


def unrank(plan: LevelPlan, r: int, order: Sequence[int]) -> tuple[int, ...]:
    """The ``r``-th sequence of the level of ``plan`` (item ids through ``order``, the ranking).

    Per call: one bisection for the score row ``i``, then for each row one division of
    ``r`` and one pick (:func:`_free_list_picks` or :func:`_bisect_picks`),
    ``O(k log k)`` operations beyond the divisions.
    """
    k = len(plan.ends)
    i = bisect_right(plan.ends, r)
    if i == k:  # pragma: no cover - r out of range
        raise AssertionError("rank beyond the level's multiplicity")
    start = plan.ends[i - 1] if i else 0
    per_item = (plan.ends[i] - start) // (plan.after[i] + i - plan.t_gt[i])
    quotient, r = divmod(r - start, per_item)
    col = plan.t_gt[i] + quotient
    radices = plan.before[:i] + plan.after[i + 1:]  # rows other than i, in order
    picks = _bisect_picks if plan.top > _FREE_LIST_LIMIT * k else _free_list_picks
    ranks = picks(radices, r, col)
    ranks.insert(i, col)
    if isinstance(order, np.ndarray):  # the ranking's int64 order: ids as Python ints
        return tuple(order[ranks].tolist())
    return tuple([order[x] for x in ranks])


def _free_list_picks(radices: list[int], r: int, col: int) -> list[int]:
    """The ranks picked by the mixed-radix digits of ``r`` (least significant first), each
    the digit-th rank not used yet, ``col`` used from the start.

    Every rank a row may pick lies below its ``T``, and the unused ranks below ``T`` come
    first among all unused ranks, so the digit-th unused rank is ``free[digit]`` where
    ``free`` lists the unused ranks in increasing order, extended only as far as needed
    (cheap while the picks stay among the first few ranks).
    """
    picks = []
    free: list[int] = []
    top = 0  # free holds every unused rank below top
    for radix in radices:
        if radix == 1:
            digit = 0
        else:
            r, digit = divmod(r, radix)
        if digit >= len(free):
            new_top = top + digit + 1 - len(free)
            if top <= col < new_top:  # skip row i's rank
                new_top += 1
                free.extend(range(top, col))
                free.extend(range(col + 1, new_top))
            else:
                free.extend(range(top, new_top))
            top = new_top
        picks.append(free.pop(digit))
    return picks


def _bisect_picks(radices: list[int], r: int, col: int) -> list[int]:
    """:func:`_free_list_picks` over the sorted used ranks, ``O(log k)`` comparisons per
    pick whatever the ranks (for levels whose choice sets reach far down the ranking).

    The digit-th unused rank is the least fixed point ``p = digit + #{used <= p}``; from
    ``digit + f`` (``[0, f)`` all used) a few C bisections usually reach it, and a
    bisection over ``used[j] - j`` (nondecreasing) settles the rare longer chains.
    """
    picks = []
    used = [col]  # sorted
    f = 0  # [0, f) are all used
    for radix in radices:
        if radix == 1:
            digit = 0
        else:
            r, digit = divmod(r, radix)
        p = digit + f
        c = bisect_right(used, p)
        for _ in range(3):
            if digit + c == p:
                break
            p = digit + c
            c = bisect_right(used, p)
        if digit + c != p:  # a long chain of used ranks
            lo, hi = c, len(used)  # the answer's count is at least c
            while lo < hi:
                mid = (lo + hi) >> 1
                if used[mid] - mid <= digit:
                    lo = mid + 1
                else:
                    hi = mid
            c, p = lo, digit + lo
        used.insert(c, p)
        picks.append(p)
        while f < len(used) and used[f] == f:
            f += 1
    return picks


# -- many draws of one level at once ----------------------------------------------------
def digit_ranges(plan: LevelPlan, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(low, width)``, ``(k, n)`` int64 arrays for the level of ``plan``: draw ``t`` with score row ``rows[t]``
    swaps, at row ``x``, position ``x`` with position ``low[x, t] + digit``,
    ``0 <= digit < width[x, t]``: ``low = x`` and width ``before[x]`` (``x < i``) or
    ``after[x]`` (``x > i``); at ``x = i``, ``low = T_i(M^-)`` and width the number of
    items with count ``c_(i) - M``."""
    k, n = len(plan.ends), len(rows)
    xs = np.arange(k, dtype=np.int64)[:, None]
    after = np.asarray(plan.after, dtype=np.int64)
    t_gt = np.asarray(plan.t_gt, dtype=np.int64)
    width = np.where(xs < rows[None, :], np.asarray(plan.before, dtype=np.int64)[:, None], after[:, None])
    low = np.broadcast_to(xs, (k, n)).copy()
    cols = np.arange(n)
    width[rows, cols] = (after + np.arange(k) - t_gt)[rows]
    low[rows, cols] = t_gt[rows]
    return low, width


def ranks_from_digits(plan: LevelPlan, rows: np.ndarray, digits: np.ndarray) -> np.ndarray:
    """The ranks, ``(k, n)``, of the sequences of the level of ``plan`` with score rows ``rows`` and shuffle digits
    ``digits`` (``(k, n)``, within :func:`digit_ranges`): a bijection from the digits of
    score row ``i`` onto the level's sequences whose score row is ``i``."""
    low, _ = digit_ranges(plan, rows)
    return _shuffle_picks(low + digits, plan.top)


def _shuffle_picks(target: np.ndarray, top: int) -> np.ndarray:
    """Fisher-Yates over positions ``[0, top)`` for every column at once: row ``x`` swaps
    positions ``x`` and ``target[x]`` (``>= x``) and picks what lands at ``x``.

    Positions below ``min(top, max(k, _DENSE_LIMIT))`` live in a dense array; a deeper
    position ``p`` holds ``p`` until a row swaps with it, then the deposit of the latest
    earlier row that did.  Returns the ranks as a ``(k, n)`` array.
    """
    k, n = target.shape
    width = min(top, max(k, _DENSE_LIMIT))
    # every row's flat index at once: position min(target, width), column t
    idx = np.multiply(np.minimum(target, width) if top > width else target, n, dtype=np.intp)
    idx += np.arange(n, dtype=np.intp)
    return _shuffle_flat(idx, target if top > width else None, top)


def _shuffle_flat(idx: np.ndarray, target, top: int) -> np.ndarray:
    """:func:`_shuffle_picks` from the flat indices ``idx[x, t] = min(target[x, t], width) * n
    + t`` into the dense store; ``target`` is read only for deep positions (``None`` when
    ``top <= width``: every position is dense)."""
    k, n = idx.shape
    width = min(top, max(k, _DENSE_LIMIT))
    dtype = np.int16 if top < 2**15 else np.int32 if top < 2**31 else np.int64
    shuffle = np.empty((width + 1, n), dtype=dtype)  # the last row absorbs deep targets
    shuffle[:] = np.arange(width + 1, dtype=dtype)[:, None]
    flat = shuffle.reshape(-1)
    out = np.empty((k, n), dtype=dtype)
    deep = target >= width if target is not None else None
    if deep is not None and deep.any():
        previous = _previous_visits(target, deep)
        deposits = np.empty((k, n), dtype=dtype)
        deep_rows, deep_cols = deep.nonzero()  # row-major: each row's draws together
        deep_from = np.searchsorted(deep_rows, np.arange(k + 1)).tolist()
    else:
        deep = None
    for x in range(k):
        ix = idx[x]
        picked = out[x]
        flat.take(ix, out=picked)
        if deep is not None:
            if deep_from[x] < deep_from[x + 1]:
                d = deep_cols[deep_from[x]:deep_from[x + 1]]
                value = target[x, d]
                p = previous[x, d]
                again = p >= 0
                value[again] = deposits[p[again], d[again]]
                picked[d] = value
            deposits[x] = shuffle[x]
        flat[ix] = shuffle[x]  # column t writes only its own cells; x == target is a no-op
    return out


def _previous_visits(target: np.ndarray, deep: np.ndarray) -> np.ndarray:
    """``previous[x, t]``: the latest row ``y < x`` of draw ``t`` with the same deep target
    (``-1`` if none), by sorting each draw's keys ``target * k + row``."""
    k, n = target.shape
    xs = np.arange(k, dtype=np.int64)[:, None]
    keys = np.sort(np.where(deep, target * k + xs, -1 - xs).T, axis=1)  # (n, k); shallow rows < 0
    same = (keys[:, 1:] >= 0) & (keys[:, 1:] // k == keys[:, :-1] // k)
    previous = np.full((k, n), -1, dtype=np.int64)
    t, s = same.nonzero()
    previous[keys[t, s + 1] % k, t] = keys[t, s] % k
    return previous


def draw_level_ranks(plan: LevelPlan, count: int, npgen: np.random.Generator,
                     rng: random.Random) -> Iterator[np.ndarray]:
    """``count`` independent uniform sequences of the level of ``plan`` as ranks, in chunks of
    ``(k, chunk)`` arrays (draw order).

    The score rows: one 64-bit word each from ``npgen`` against the exact integer bounds
    of ``ends / m`` (an undecided word goes on in
    :func:`~exactdp.core.sampling.choose_index` with more bits of ``rng``); then per chunk
    the digits, :func:`~exactdp.core.sampling.uniform_below` over the widths of
    :func:`digit_ranges` (built in ``uint16``/``uint32``), and the picks,
    :func:`ranks_from_digits` (the targets ``low + digit`` made without the ``(k, n)``
    ``low`` array).  The chunks hold the narrow dtype of :func:`_shuffle_picks`.
    """
    k = len(plan.ends)
    words = npgen.bit_generator.random_raw(count)
    lo, hi = cdf_bounds_exact(plan.ends)
    rows, undecided = inverse_cdf_words(lo, hi, words)
    for t in undecided.nonzero()[0].tolist():
        rows[t] = choose_index(lambda prec: [arb(e) for e in plan.ends], k, rng, prefix=(int(words[t]), WORD_BITS))
    chunk = max(1, _CHUNK_ENTRIES // (min(plan.top, max(k, _DENSE_LIMIT)) + 1))
    # every width is <= top; past 2**32 items uniform_below refuses the widths (never wrapped)
    small = np.uint16 if plan.top <= HALF_WORD_BOUND else np.uint32 if plan.top < 2**32 else np.uint64
    before = np.asarray(plan.before, dtype=small)[:, None]
    after = np.asarray(plan.after, dtype=small)[:, None]
    xs = np.arange(k, dtype=np.int64)[:, None]
    own = np.asarray(plan.after, dtype=np.int64) + np.arange(k) - np.asarray(plan.t_gt, dtype=np.int64)
    shift = np.asarray(plan.t_gt, dtype=np.int64) - np.arange(k)
    dense = plan.top <= max(k, _DENSE_LIMIT)  # no deep position: flat indices directly
    bases: dict[int, np.ndarray] = {}  # x * n + t, per chunk length n
    for start in range(0, count, chunk):
        part = rows[start:start + chunk]
        n = len(part)
        cols = np.arange(n)
        # digit_ranges, in the narrow dtype and without the (k, n) ``low``
        width = np.where(xs < part[None, :], before, after)
        width[part, cols] = own[part]
        digits = uniform_below(npgen, width)
        if dense:  # idx = (x + digit) * n + t, row i shifted to T_i(M^-)
            base = bases.get(n)
            if base is None:
                base = bases[n] = np.arange(k * n, dtype=np.intp).reshape(k, n)
            idx = np.multiply(digits, n, dtype=np.intp)
            idx += base
            idx[part, cols] += shift[part] * n
            yield _shuffle_flat(idx, None, plan.top)
        else:
            target = np.add(digits, xs, dtype=np.int64)
            target[part, cols] += shift[part]  # row i starts at T_i(M^-), not at i
            yield _shuffle_picks(target, plan.top)
