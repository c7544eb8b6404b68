"""Threshold events of the Joint m-tilde sweep (Joint paper Lemmas 3.6-3.8; docs/benchmarks.md).

For row ``r`` (0-based rank, ``r < k``) and a level ``M``, ``T_r(M)`` is the number of
items with count ``>= c_(r) - M``.  As ``M`` grows, ``T_r`` jumps exactly when
``c_(r) - M`` meets a distinct count value ``values[q]``, to ``cumulative[q]``.  An
*event* is such a jump ``(M, r, new_T, q)``.  The m-tilde sweep is a loop over the events
in increasing ``M``, rows in decreasing order within one ``M`` (the order of the refined
utilities ``z_ij``); the level sweep takes the same events in windows of ``M``
(:mod:`exactdp.mechanisms.joint.blocks`).

There are at most ``k * D`` events (``D`` distinct counts).  They are generated and sorted
with numpy ``int64`` arrays when every count fits comfortably in 62 bits (exact integer
arithmetic; no float is involved) and with a pure-Python k-way merge otherwise, then
handed out in chunks so that memory stays ``O(k * D)`` machine words.

The m-tilde sweep has a faster source, :func:`mtilde_windows`: each row's events are
already sorted by ``M``, so the events of a window of levels ``lo <= M < hi`` are one
contiguous slice per row (found by one vectorised ``searchsorted``), and only that window
is built and sorted, by one packed ``int64`` key per event (the exact entry key
``2dk*Ũ`` of the event's first entry, unique, so the default unstable sort is exact).
Streaming starts at once and memory stays ``O(window)``, whatever ``k * D``.
:func:`mtilde_groups` then prepares, with numpy only, what the exact big-integer loop of
:func:`exactdp.mechanisms.joint.mechanism.joint_mtilde` needs.
"""

from __future__ import annotations

import heapq
from typing import Iterator, NamedTuple

from ...core.ranking import Ranking

__all__ = [
    "event_chunks", "value_index_of_rows", "mtilde_windows_fit", "mtilde_windows", "mtilde_groups", "group_size",
    "MtildeWindow", "MtildeGroups",
]

# Paths are chosen by these module constants; tests lower them to exercise every path.
NUMPY_LIMIT = 1 << 61  # counts at least half this large take the pure-Python path
_CHUNK = 1 << 18
_ALLOW_WINDOWS = True  # m-tilde sweep: windowed packed-key events when the key fits int64
_WINDOW = 1 << 15  # m-tilde sweep: about this many events per window
_KEY_LIMIT = 1 << 62  # the packed key 2dk*Ũ must stay below this in absolute value
_GROUP_BITS = 60  # a group multiplier (product of small factors) has at most this many bits
_MAX_GROUP = 4  # events per group at most


def value_index_of_rows(ranking: Ranking, k: int) -> list[int]:
    """``q_r``: index in ``ranking.values`` of the count of rank ``r``, for ``r < k``."""
    out, q = [], 0
    for r in range(k):
        while ranking.values[q] != ranking.sorted_counts[r]:
            q += 1
        out.append(q)
    return out


def event_chunks(
    ranking: Ranking, k: int, *, after_own_value: bool, rows_descending: bool
) -> Iterator[tuple[list[int], list[int], list[int], list[int]]]:
    """Chunks ``(Ms, rows, new_Ts, qs)`` of the threshold events of the first ``k`` rows of
    the counts ranked by ``ranking``, sorted by ``M`` ascending (and, with
    ``rows_descending``, by row descending within one ``M``).

    With ``after_own_value`` only values strictly below each row's own count are used
    (``M > 0``: the level sweep starts from the known state at ``M = 0``); otherwise every
    distinct value (including negative ``M``, needed for all ``d*k`` entries of m-tilde).
    """
    values = ranking.values
    qrows = value_index_of_rows(ranking, k)
    starts = [q + 1 if after_own_value else 0 for q in qrows]
    big = max(abs(values[0]), abs(values[-1]))
    if big < NUMPY_LIMIT // 2:
        yield from _numpy_chunks(ranking, k, starts, rows_descending)
    else:
        yield from _python_chunks(ranking, k, starts, rows_descending)


def _numpy_chunks(ranking, k, starts, rows_descending):
    import numpy as np

    values = np.array(ranking.values, dtype=np.int64)
    cumulative = np.array(ranking.cumulative, dtype=np.int64)
    D = len(values)
    sizes = [D - s for s in starts]
    total = sum(sizes)
    if total == 0:
        return
    Ms = np.empty(total, dtype=np.int64)
    rows = np.empty(total, dtype=np.int32)
    qs = np.empty(total, dtype=np.int32)
    pos = 0
    for r in range(k):
        s, n = starts[r], sizes[r]
        if n == 0:
            continue
        Ms[pos : pos + n] = ranking.sorted_counts[r] - values[s:]
        rows[pos : pos + n] = r
        qs[pos : pos + n] = np.arange(s, D, dtype=np.int32)
        pos += n
    span = int(Ms.max()) - int(Ms.min()) + 1
    if rows_descending:
        if span < (1 << 62) // (k + 1):
            key = (Ms - Ms.min()) * (k + 1) + (k - rows)
            order = np.argsort(key, kind="stable")
            del key
        else:
            order = np.lexsort((-rows.astype(np.int64), Ms))
    else:
        order = np.argsort(Ms, kind="stable")
    for lo in range(0, total, _CHUNK):
        idx = order[lo : lo + _CHUNK]
        q_chunk = qs[idx]
        yield (Ms[idx].tolist(), rows[idx].tolist(), cumulative[q_chunk].tolist(), q_chunk.tolist())


def _python_chunks(ranking, k, starts, rows_descending):
    values, cumulative, sc = ranking.values, ranking.cumulative, ranking.sorted_counts

    def row_events(r):
        c = sc[r]
        sign = -r if rows_descending else r
        for q in range(starts[r], len(values)):
            yield (c - values[q], sign, r, q)

    merged = heapq.merge(*(row_events(r) for r in range(k)))
    chunk: tuple[list, list, list, list] = ([], [], [], [])
    for M, _, r, q in merged:
        chunk[0].append(M)
        chunk[1].append(r)
        chunk[2].append(cumulative[q])
        chunk[3].append(q)
        if len(chunk[0]) >= _CHUNK:
            yield chunk
            chunk = ([], [], [], [])
    if chunk[0]:
        yield chunk


class MtildeWindow(NamedTuple):
    """The events of one window of levels, in m-tilde order (``int64`` numpy arrays):
    ``key`` is ``-2dk*Ũ`` of each event's first entry (increasing), ``row`` its row and
    ``first <= j < last`` the columns (ranks) of its entries, all of the value
    ``values[q]``: ``first = cumulative[q-1]``, ``last = cumulative[q]`` (the new ``T``)."""

    key: object
    row: object
    first: object
    last: object


def mtilde_windows_fit(ranking: Ranking, k: int) -> bool:
    """Whether :func:`mtilde_windows` applies to ``ranking`` and ``k``: every packed key
    ``2dk*Ũ`` fits ``int64``."""
    values, sc = ranking.values, ranking.sorted_counts
    if not _ALLOW_WINDOWS or max(abs(values[0]), abs(values[-1])) >= NUMPY_LIMIT // 2:
        return False
    reach = max(abs(sc[k - 1] - values[0]), abs(sc[0] - values[-1])) + 1  # |M| bound
    return 2 * ranking.d * k * reach < _KEY_LIMIT


def mtilde_windows(ranking: Ranking, k: int) -> Iterator[MtildeWindow]:
    """Every event of the first ``k`` rows of the counts ranked by ``ranking``, in m-tilde
    order (``M`` ascending, rows descending), window by window.

    Row ``r``'s events with ``M < hi`` are its values ``values[q] > c_(r) - hi``: a prefix
    of the values, so a window ``lo <= M < hi`` is the slice ``ptr[r] <= q < end[r]`` of
    every row.  The window width adapts so that a window holds about :data:`_WINDOW`
    events.  The key of an event, ``S = 2dk*M + d(k-1-r) + first + 1 = -2dk*Ũ[r][first]``,
    is unique and increasing in the m-tilde order, so one ``np.sort`` (the default,
    unstable one: no ties) orders the window, and ``r`` and ``first`` are read back from
    ``S - 1 mod 2dk = d(k-1-r) + first`` by exact integer division.  Counts are shifted by
    the smallest one so that every product stays within the checked bound.
    """
    import numpy as np

    d = ranking.d
    den = 2 * d * k
    low = ranking.values[-1]
    vals = np.array(ranking.values, dtype=np.int64) - low  # 0 <= vals <= span (checked to fit)
    cum = np.array(ranking.cumulative, dtype=np.int64)
    D = len(vals)
    firsts = np.zeros(D, dtype=np.int64)
    firsts[1:] = cum[:-1]
    distinct = D == d  # then first = q and last = q + 1
    if not distinct:
        q_of_first = np.zeros(d + 1, dtype=np.int64)
        q_of_first[firsts] = np.arange(D)
    base = firsts - den * vals  # key = den * c_(r) + d(k-1-r) + 1 + base[q]
    sc = [c - low for c in ranking.sorted_counts[:k]]
    row_key = [den * sc[r] + d * (k - 1 - r) + 1 for r in range(k)]
    neg_vals = -vals  # ascending
    sc_arr = np.array(sc, dtype=np.int64)
    ptr = [0] * k
    lo = sc[-1] - int(vals[0])  # the smallest M
    top = sc[0]  # the largest M (the smallest shifted value is 0)
    width = max(1, (top - lo + 1) * _WINDOW // (k * D))
    while lo <= top:
        hi = min(lo + width, top + 1)
        end = np.searchsorted(neg_vals, hi - sc_arr, side="left").tolist()
        n = sum(end) - sum(ptr)
        if n > 2 * _WINDOW and width > 1:
            width //= 2
            continue
        if n:
            key = np.empty(n, dtype=np.int64)
            pos = 0
            for r in range(k):
                a, b = ptr[r], end[r]
                if b > a:
                    np.add(base[a:b], row_key[r], out=key[pos : pos + b - a])
                    pos += b - a
            key.sort()
            krow, first = np.divmod(np.remainder(key - 1, den), d)
            last = first + 1 if distinct else cum[q_of_first[first]]
            yield MtildeWindow(key, k - 1 - krow, first, last)
        ptr = end
        lo = hi
        if n < _WINDOW // 2:
            width *= 2


class MtildeGroups(NamedTuple):
    """What the exact loop of ``joint_mtilde`` needs for one window (Python int lists).

    The window's events are cut into *groups* of ``g`` consecutive events (the last one
    padded).  Per group the loop computes ``Q = P / ga`` (``P`` the product of the
    non-zero row factors before the group, ``ga = ga_lo * ga_hi`` the product of the old
    factors of the group's distinct rows) and then ``P = Q * gb`` (``gb = gb_lo * gb_hi``,
    their new factors); the m-tilde of each event is ``Q * mult`` (``mult`` per event, 0
    while another row's factor is 0).  Factors that are 0 count as 1 in these products.
    Each of ``ga_lo``, ``ga_hi``, ``gb_lo``, ``gb_hi`` and ``mult`` is a product of at
    most ``g - 1`` factors, so it is exact in ``int64``.  ``zeros``: the number of rows
    whose factor is 0 after the window.
    """

    ga_lo: list
    ga_hi: list
    gb_lo: list
    gb_hi: list
    mult: list
    zeros: int


def group_size(d: int) -> int:
    """Events per group: ``g - 1`` factors (each ``<= d``) stay within :data:`_GROUP_BITS` bits."""
    return max(2, min(_MAX_GROUP, 1 + _GROUP_BITS // max(1, d.bit_length())))


def mtilde_groups(win: MtildeWindow, g: int, zeros: int) -> MtildeGroups:
    """The groups of ``g`` events (:func:`group_size`) of one window ``win`` (see
    :class:`MtildeGroups`); ``zeros`` is the number of rows whose factor is 0 before the
    window, returned updated.

    Why this is exact: row ``r``'s factor before an event at value ``q`` is
    ``a = max(cumulative[q-1] - r, 0)`` (its previous event is at ``q - 1``) and after it
    ``b = max(cumulative[q] - r, 0)``, so every factor is known without a sequential
    pass.  Lemma 3.7's ``m̃`` of an event of row ``i`` is the product of the other rows'
    factors at that moment: ``Q`` (the rows outside the group, unchanged within it) times,
    for each other row ``ρ`` of the group, its factor at that moment: the ``b`` of its
    last event before, or else the ``a`` of its first event after.  So one exact
    division and one conversion to ``int`` per group instead of per event; each event is
    then one multiplication of that ``int`` by a small exact integer.
    """
    import numpy as np

    row, first, last = win.row, win.first, win.last
    n = len(row)
    a = first - row
    b = last - row
    dead = None
    if zeros:
        a = np.maximum(a, 0)
        b = np.maximum(b, 0)
        a_zero = a == 0
        born = a_zero & (b > 0)  # the row's factor becomes non-zero here
        dead = (zeros - (np.cumsum(born) - born) - a_zero) > 0  # another row's factor is still 0
        zeros -= int(born.sum())
        a = np.where(a_zero, 1, a)
        b = np.where(b > 0, b, 1)
    G = -(-n // g)
    pad = G * g - n
    if pad:  # padding events: rows of their own (negative), factors 1
        row = np.concatenate((row, -1 - np.arange(pad, dtype=np.int64)))
        a = np.concatenate((a, np.ones(pad, dtype=np.int64)))
        b = np.concatenate((b, np.ones(pad, dtype=np.int64)))
    R, A, B = row.reshape(G, g), a.reshape(G, g), b.reshape(G, g)
    Rc = [R[:, s] for s in range(g)]
    Ac = [A[:, s] for s in range(g)]
    Bc = [B[:, s] for s in range(g)]
    same = {(s, t): Rc[s] == Rc[t] for s in range(g) for t in range(s + 1, g)}
    ones = np.ones(G, dtype=bool)

    def none_of(pairs):
        out = ones
        for p in pairs:
            out = out & ~same[p]
        return out

    first_occ = [none_of([(u, s) for u in range(s)]) for s in range(g)]  # no earlier event of its row
    mult = np.empty((G, g), dtype=np.int64)
    for t in range(g):
        m = np.ones(G, dtype=np.int64)
        for s in range(g):
            if s < t:  # counts with its new factor if it is its row's last event before t
                use = none_of([(s, t)] + [(s, u) for u in range(s + 1, t)])
                m *= np.where(use, Bc[s], 1)
            elif s > t:  # counts with its old factor if it is its row's first event
                use = first_occ[s] & ~same[(t, s)]
                m *= np.where(use, Ac[s], 1)
        mult[:, t] = m
    last_occ = [none_of([(s, u) for u in range(s + 1, g)]) for s in range(g)]
    ga_hi = np.ones(G, dtype=np.int64)
    gb_hi = np.ones(G, dtype=np.int64)
    for s in range(1, g):
        ga_hi *= np.where(first_occ[s], Ac[s], 1)
        gb_hi *= np.where(last_occ[s - 1], Bc[s - 1], 1)
    mult = mult.reshape(-1)[:n]
    if dead is not None:
        mult[dead] = 0
    return MtildeGroups(Ac[0].tolist(), ga_hi.tolist(), Bc[g - 1].tolist(), gb_hi.tolist(),
                        mult.tolist(), zeros)
