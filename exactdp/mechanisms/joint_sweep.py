"""Threshold events of the Joint sweeps (Joint paper Lemmas 3.6-3.8; docs/benchmarks.md).

For row ``r`` (0-based rank, ``r < k``) and a level ``M``, ``T_r(M)`` is the number of
items with count ``>= c_(r) - M``.  As ``M`` grows, ``T_r`` jumps exactly when
``c_(r) - M`` meets a distinct count value ``values[q]``, to ``cumulative[q]``.  An
*event* is such a jump ``(M, r, new_T, q)``.  Both the level sweep and the m-tilde sweep
are loops over the events in increasing ``M``; the m-tilde sweep also needs rows in
decreasing order within one ``M`` (the order of the refined utilities ``z_ij``).

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
_ALLOW_PACKED = True  # level sweep: sort one packed int64 key when it fits
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


def level_factor_chunks(ranking: Ranking, k: int) -> Iterator[tuple[list[int], list[int], list[int]]]:
    """For the level sweep: chunks ``(Ms, nums, dens)`` over the levels ``M > 0`` in
    increasing order, where ``nums[x] / dens[x]`` is the exact factor by which
    ``N(M) = prod_r (T_r(M) - r)`` changes at level ``Ms[x]`` (the product of the new
    row factors over the product of the old ones, over the rows whose threshold moves).

    The per-event factors are computed row by row (a row's old factor is its previous
    new one) and multiplied per level with ``numpy.multiply.reduceat`` over Python ints
    (object arrays), so no per-event Python loop is needed.
    """
    qrows = value_index_of_rows(ranking, k)
    values = ranking.values
    big = max(abs(values[0]), abs(values[-1]))
    if big >= _NUMPY_LIMIT // 2:
        yield from _python_level_factors(ranking, k, qrows)
        return
    import numpy as np

    vals = np.array(values, dtype=np.int64)
    cum = np.array(ranking.cumulative, dtype=np.int64)
    D = len(vals)
    sizes = [D - (q + 1) for q in qrows]
    total = sum(sizes)
    if total == 0:
        return
    group = max(1, 62 // max(1, ranking.d.bit_length()))
    fbits = ranking.d.bit_length()
    mask = (1 << fbits) - 1
    # Every event has 0 < M <= c_(1) - c_(d).
    packed = _ALLOW_PACKED and (ranking.sorted_counts[0] - values[-1]).bit_length() + 2 * fbits <= 62
    if packed:
        # One sort of a packed key (M, new, old), built row by row in cache-sized pieces;
        # the order of events within one level does not matter for the product.
        key = np.empty(total, dtype=np.int64)
    else:
        Ms = np.empty(total, dtype=np.int64)
        new = np.empty(total, dtype=np.int64)
        old = np.empty(total, dtype=np.int64)
    pos = 0
    for r in range(k):
        s, n = qrows[r] + 1, sizes[r]
        if n == 0:
            continue
        row_M = ranking.sorted_counts[r] - vals[s:]
        row_new = cum[s:] - r
        row_old = np.empty(n, dtype=np.int64)
        row_old[0] = cum[qrows[r]] - r
        row_old[1:] = row_new[:-1]
        if packed:
            key[pos : pos + n] = (row_M << (2 * fbits)) | (row_new << fbits) | row_old
        else:
            Ms[pos : pos + n] = row_M
            new[pos : pos + n] = row_new
            old[pos : pos + n] = row_old
        pos += n
    if packed:
        key.sort(kind="stable")  # rows arrive as k sorted runs: timsort merges them
    else:
        order = np.argsort(Ms, kind="stable")
        Ms, new, old = Ms[order], new[order], old[order]
        del order
    lo = 0
    while lo < total:
        hi = min(total, lo + _CHUNK * 4)
        if packed:
            block = key[lo:hi]
            m = block >> (2 * fbits)
            if hi < total:  # never split one level across chunks
                hi = int(np.searchsorted(key, (int(m[-1]) + 1) << (2 * fbits), side="left"))
                block = key[lo:hi]
                m = block >> (2 * fbits)
            f_new = (block >> fbits) & mask
            f_old = block & mask
        else:
            if hi < total:
                hi = int(np.searchsorted(Ms, Ms[hi - 1], side="right"))
            m, f_new, f_old = Ms[lo:hi], new[lo:hi], old[lo:hi]
        starts = np.concatenate(([0], np.flatnonzero(m[1:] != m[:-1]) + 1))
        # Multiply up to `group` consecutive factors of one level in int64 first (each
        # factor is <= d, so the product of `group` of them stays below 2**62), which
        # cuts the number of Python ints built by that factor.
        lengths = np.diff(np.append(starts, hi - lo))
        within = np.arange(hi - lo) - np.repeat(starts, lengths)
        group_starts = np.flatnonzero(within % group == 0)
        seg_in_groups = np.searchsorted(group_starts, starts)
        nums_g = np.multiply.reduceat(f_new, group_starts).astype(object)
        dens_g = np.multiply.reduceat(f_old, group_starts).astype(object)
        nums = np.multiply.reduceat(nums_g, seg_in_groups)
        dens = np.multiply.reduceat(dens_g, seg_in_groups)
        yield m[starts].tolist(), nums.tolist(), dens.tolist()
        lo = hi


def _python_level_factors(ranking, k, qrows):
    current = [ranking.cumulative[qrows[r]] - r for r in range(k)]
    Ms: list[int] = []
    nums: list[int] = []
    dens: list[int] = []
    for chunk_Ms, rows, newTs, _ in _python_chunks(ranking, k, [q + 1 for q in qrows], False):
        for M, r, T in zip(chunk_Ms, rows, newTs):
            if not Ms or Ms[-1] != M:
                if len(Ms) >= _CHUNK:
                    yield Ms, nums, dens
                    Ms, nums, dens = [], [], []
                Ms.append(M)
                nums.append(1)
                dens.append(1)
            nums[-1] *= T - r
            dens[-1] *= current[r]
            current[r] = T - r
    if Ms:
        yield Ms, nums, dens
