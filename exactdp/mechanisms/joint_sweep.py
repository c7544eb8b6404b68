"""Threshold events of the Joint m-tilde sweep (Joint paper Lemmas 3.6-3.8; docs/benchmarks.md).

For row ``r`` (0-based rank, ``r < k``) and a level ``M``, ``T_r(M)`` is the number of
items with count ``>= c_(r) - M``.  As ``M`` grows, ``T_r`` jumps exactly when
``c_(r) - M`` meets a distinct count value ``values[q]``, to ``cumulative[q]``.  An
*event* is such a jump ``(M, r, new_T, q)``.  The m-tilde sweep is a loop over the events
in increasing ``M``, rows in decreasing order within one ``M`` (the order of the refined
utilities ``z_ij``); the level sweep takes the same events in windows of ``M``
(:mod:`exactdp.mechanisms.joint_blocks`).

There are at most ``k * D`` events (``D`` distinct counts).  They are generated and sorted
with numpy ``int64`` arrays when every count fits comfortably in 62 bits (exact integer
arithmetic; no float is involved) and with a pure-Python k-way merge otherwise, then
handed out in chunks so that memory stays ``O(k * D)`` machine words.
"""

from __future__ import annotations

import heapq
from typing import Iterator

from ..core.ranking import Ranking

__all__ = ["event_chunks", "value_index_of_rows"]

# Paths are chosen by these module constants; tests lower them to exercise every path.
_NUMPY_LIMIT = 1 << 61  # counts at least half this large take the pure-Python path
_CHUNK = 1 << 18


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
    """Chunks ``(Ms, rows, new_Ts, qs)`` of events sorted by ``M`` ascending (and, with
    ``rows_descending``, by row descending within one ``M``).

    With ``after_own_value`` only values strictly below each row's own count are used
    (``M > 0``: the level sweep starts from the known state at ``M = 0``); otherwise every
    distinct value (including negative ``M``, needed for all ``d*k`` entries of m-tilde).
    """
    values = ranking.values
    qrows = value_index_of_rows(ranking, k)
    starts = [q + 1 if after_own_value else 0 for q in qrows]
    big = max(abs(values[0]), abs(values[-1]))
    if big < _NUMPY_LIMIT // 2:
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
