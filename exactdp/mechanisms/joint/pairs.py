"""Joint's pair cells: how many sequences have each (level under c, level under c'), counted without enumeration.

Paper: Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Section 3, Lemma 3.7 (the
count of sequences above a threshold as a product over rows), taken to two count vectors
at once; docs/audit.md ("How a pair is audited without enumeration").

A privacy audit of two Joint mechanisms (counts ``c`` and ``c'``, same ``d`` and ``k``)
needs, for every pair of levels ``(M, M')``, the number of sequences at level ``M`` under
``c`` and ``M'`` under ``c'``.  Contract: a cell is the two-dimensional difference of
``N(M, M') = prod_r max(|S_r| - r, 0)``, ``S_r = {j : c_j >= c_(r) - M and c'_j >= c'_(r)
- M'}`` (nested in ``r``), counted exactly (``int64`` groups that cannot overflow, then
Python ints) on the band ``|M - M'| <= w`` and, with ``method="items"``, only at the
*special* levels near a changed term (every other level is one cell ``(M, M)``); with
``method="diagonal"`` for any number of changed items, by classes of equal change.  Every
cell carries a witness whose two levels are checked.  :func:`joint_pair_cells` returns
``None`` (the caller enumerates orbits) when the method does not apply
(:func:`pair_count_declined` says why): a band wider than ``MAX_BAND``, counts too large
for ``int64``, more than ``MAX_DIFFERENCES`` distinct changes, or (``method="items"``) too
many changed items or rows.  :func:`joint_pair_head` stops the diagonal count at a depth
(the cells with ``M <= depth``, exactly those of the full count); :func:`head_preferred`
says when the audits count such a head.  Proofs of the band, the special levels and the classes:
docs/joint.md, section "Pair cells without enumeration (joint.pairs)".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable, Iterator, NamedTuple, Optional

import numpy as np

from ...core.gc_pause import gc_paused
from ...core.pair_cells import check_margins
from ...core.level_blocks import DEFAULT_MEMORY_BUDGET
from ...errors import MemoryBudgetError

__all__ = ["joint_pair_cells", "joint_pair_head", "diagonal_range", "PairHead", "pair_count_declined", "DisplacedWitness", "SearchedWitness", "MAX_CHANGED_ITEMS",
           "MAX_CHANGED_ROWS", "MAX_BAND", "MAX_DIFFERENCES", "STOPPED_LEVEL_BOUND", "head_preferred"]

#: The sweep applies when at most this many items have different counts...
MAX_CHANGED_ITEMS = 16
#: ...at most this many of the top ``k`` sorted counts differ...
MAX_CHANGED_ROWS = 16
#: ...and one term moves by at most this much (``w``).
MAX_BAND = 64
#: The diagonal count (any number of changed items) applies up to this many distinct
#: differences ``c'_j - c_j`` (3 for any neighbour at l-infinity distance 1).
MAX_DIFFERENCES = 8
#: The audits count a pair's cells stopped at a depth (:func:`head_preferred`) when one
#: side may have this many levels or more (the bound on its levels its threshold events
#: give).
STOPPED_LEVEL_BOUND = 2_000_000
#: Counts and levels must stay below this in absolute value (``int64`` with room to add).
_INT_LIMIT = 2**60
#: Matrix entries (rows x points) handled per numpy chunk.
_CHUNK = 1 << 22
#: The displaced-item witnesses use a ``k x k`` table up to this ``k``.
_TABLE_K = 2000

Cells = dict[tuple[int, int], list[Any]]


class _Pair:
    """The two count vectors and everything the counts and the witnesses share."""

    def __init__(self, a: Any, b: Any):
        self.d, self.k = a.d, a.k
        self.ca, self.cb = a.counts, b.counts
        self.order = list(a.ranking.order)
        self.order_np = np.asarray(self.order, dtype=np.int64)
        self.top = tuple(self.order[:a.k])
        self.rank_of = a.ranking.rank_of
        self.sorted_a = np.asarray(a.ranking.sorted_counts, dtype=np.int64)
        self.neg_sorted = -self.sorted_a  # ascending, for searchsorted
        self.sa = self.sorted_a[:self.k]
        self.sb = np.asarray(b.ranking.sorted_counts[:self.k], dtype=np.int64)
        self.ca_np = np.asarray(self.ca, dtype=np.int64)
        self.cb_np = np.asarray(self.cb, dtype=np.int64)
        self.changed = np.flatnonzero(self.ca_np != self.cb_np).tolist()
        self.changed_rows = np.flatnonzero(self.sa != self.sb).tolist()
        cmin = np.minimum(self.ca_np, self.cb_np)
        self.cmin_sorted = np.sort(cmin)
        self.delta = max((abs(self.ca[j] - self.cb[j]) for j in self.changed), default=0)
        self.band = int(np.abs(self.sa - self.sb).max(initial=0)) + self.delta
        #: the diagonal count's classes: ``(difference, c ascending, ranks ascending)`` per
        #: value of ``c'_j - c_j`` (set by :meth:`group_by_difference`; None: item by item)
        self.by_difference: Optional[list[tuple[int, np.ndarray, np.ndarray]]] = None
        #: :func:`_displacement_table`, made on first use (False: not yet)
        self.table: Any = False

    def group_by_difference(self) -> None:
        """Count ``|S_r|`` per class of equal ``c'_j - c_j`` (the diagonal count) instead of
        per changed item: each class's counts sorted once, one ``searchsorted`` a class."""
        diff = self.cb_np - self.ca_np
        values, of_item = np.unique(diff, return_inverse=True)
        of_item = of_item.reshape(-1)
        by_rank = of_item[self.order_np]  # the class of each rank
        self.by_difference = []
        for i, v in enumerate(values.tolist()):
            ranks = np.flatnonzero(by_rank == i)  # the class's ranks, best first
            self.by_difference.append((v, np.sort(self.ca_np[self.order_np[ranks]]), ranks))

    # -- N(M, M') ---------------------------------------------------------------------
    def at_most(self, m1: np.ndarray, m2: np.ndarray) -> list[int]:
        """``N(m1, m2)`` for points already clamped into the band (exact ints)."""
        out: list[int] = []
        k, d = self.k, self.d
        rows = np.arange(k, dtype=np.int64)[:, None]
        per = max(1, _CHUNK // k)
        group = max(1, 62 // max(1, d.bit_length()))  # factors <= d: `group` of them fit int64
        for start in range(0, len(m1), per):
            p1, p2 = m1[start:start + per], m2[start:start + per]
            A = self.sa[:, None] - p1[None, :]
            B = self.sb[:, None] - p2[None, :]
            T = np.maximum(A, B)
            if self.by_difference is not None:
                # |S_r|: per class of c'_j = c_j + v, the items with c_j >= max(A, B - v)
                size = np.zeros_like(T)
                for v, ascending, _ in self.by_difference:
                    size += len(ascending) - np.searchsorted(ascending, np.maximum(A, B - v), side="left")
            else:
                # |S_r|: items of min(c, c') at or above T, then the changed items corrected
                size = d - np.searchsorted(self.cmin_sorted, T, side="left")
                for j in self.changed:
                    cj, cj2 = self.ca[j], self.cb[j]
                    size += ((cj >= A) & (cj2 >= B)).astype(np.int64) - (min(cj, cj2) >= T)
            F = size - rows
            empty = (F <= 0).any(axis=0) | (p1 < 0) | (p2 < 0)
            F[:, empty] = 1
            padded = -(-k // group) * group
            if padded != k:
                F = np.vstack([F, np.ones((padded - k, F.shape[1]), dtype=np.int64)])
            grouped = F.reshape(padded // group, group, -1).prod(axis=1)
            values = list(map(math.prod, grouped.T.tolist()))
            for i in np.flatnonzero(empty).tolist():
                values[i] = 0
            out.extend(values)
        return out

    def clamp(self, m1: np.ndarray, m2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = self.band
        return np.minimum(m1, m2 + w), np.minimum(m2, m1 + w)

    # -- special levels ---------------------------------------------------------------
    def special_values(self) -> np.ndarray:
        """Every value within the band of a term that differs between the two vectors."""
        parts = [np.zeros(0, dtype=np.int64)]
        for r in self.changed_rows:
            parts += [self.sa[r] - self.ca_np, self.sb[r] - self.cb_np]
        for j in self.changed:
            parts += [self.sa - self.ca[j], self.sb - self.cb[j]]
        base = np.unique(np.concatenate(parts))
        return np.unique(np.concatenate([base + t for t in range(-self.band, self.band + 1)]))

    # -- witnesses --------------------------------------------------------------------
    def level_a(self, s: tuple[int, ...]) -> int:
        return max(int(t) - self.ca[j] for t, j in zip(self.sa, s))

    def level_b(self, s: tuple[int, ...]) -> int:
        return max(int(t) - self.cb[j] for t, j in zip(self.sb, s))

    def displaced(self, r: int, j: int) -> tuple[int, ...]:
        """The top-k in rank order with the item of rank ``j`` at row ``r`` (``j >= r``;
        rows ``r+1..j`` shifted down when ``j < k``)."""
        top = self.top
        if j >= self.k:
            return top[:r] + (self.order[j],) + top[r + 1:]
        return top[:r] + (top[j],) + top[r:j] + top[j + 1:]


class _Witness(Sequence):
    """A read-only sequence of item ids computed by ``_tuple()`` when read, equal to that
    tuple (and to another witness with the same items), pickled as the tuple itself."""

    __slots__ = ()

    def _tuple(self) -> tuple[int, ...]:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._tuple())

    def __getitem__(self, i: Any) -> Any:
        return self._tuple()[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self._tuple())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Witness):
            other = other._tuple()
        return self._tuple() == other

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __repr__(self) -> str:
        return repr(self._tuple())

    def __reduce__(self) -> tuple:
        return (tuple, (self._tuple(),))


class DisplacedWitness(_Witness):
    """The witness sequence :meth:`_Pair.displaced` ``(r, j)`` of ``pair`` (the two
    mechanisms' sweep state), built each time it is read (a read-only sequence of item ids
    equal to that tuple; pickled as the tuple itself).

    >>> from exactdp import Joint
    >>> cells = joint_pair_cells(Joint([3, 1, 0], 2, epsilon=1), Joint([3, 2, 0], 2, epsilon=1))
    >>> w = cells[(1, 2)][0]
    >>> w, w == (0, 2), len(w), tuple(w)
    ((0, 2), True, 2, (0, 2))
    """

    __slots__ = ("_pair", "_r", "_j")

    def __init__(self, pair: "_Pair", r: int, j: int):
        self._pair, self._r, self._j = pair, r, j

    def _tuple(self) -> tuple[int, ...]:
        return self._pair.displaced(self._r, self._j)

    def __len__(self) -> int:
        return self._pair.k


def _displacement_table(p: _Pair) -> Optional[np.ndarray]:
    """``Q[r][j]`` (``r <= j``): the largest ``c'`` term of :meth:`_Pair.displaced` ``(r, j)``
    outside row ``r`` (``j < k``); column ``k`` holds it for any ``j >= k``."""
    k = p.k
    if k > _TABLE_K:
        return None
    top = np.asarray(p.order[:k], dtype=np.int64)
    e = p.sb - p.cb_np[top]  # c' term of row r holding its own rank
    g = np.full(k, np.iinfo(np.int64).min // 4)
    g[1:] = p.sb[1:] - p.cb_np[top[:-1]]  # c' term of row r holding rank r - 1
    low = np.iinfo(np.int64).min // 4
    prefix = np.maximum.accumulate(np.concatenate([[low], e]))  # prefix[r] = max e[:r]
    suffix = np.maximum.accumulate(np.concatenate([e, [low]])[::-1])[::-1]  # suffix[r] = max e[r:]
    Q = np.full((k, k + 1), low, dtype=np.int64)
    for r in range(k):
        inside = np.maximum.accumulate(np.concatenate([[low], g[r + 1:]]))  # max g over (r, j]
        Q[r, r:k] = np.maximum(np.maximum(inside, prefix[r]), suffix[r + 1:k + 1])
        Q[r, k] = max(prefix[r], suffix[r + 1])
    return Q


def _displaced_witnesses(p: _Pair, M: np.ndarray, M2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell ``(r, j)`` of a displaced sequence with levels ``(M, M2)``, ``-1`` when none."""
    n, k, d = len(M), p.k, p.d
    found_r = np.full(n, -1, dtype=np.int64)
    found_j = np.full(n, -1, dtype=np.int64)
    if p.table is False:
        p.table = _displacement_table(p)
    Q = p.table
    if Q is None or n == 0:
        return found_r, found_j
    targets_extra = [p.rank_of[x] for x in p.changed] if p.by_difference is None else []
    for r in range(k):
        todo = np.flatnonzero(found_r < 0)
        if len(todo) == 0:
            break
        target = p.sa[r] - M[todo]
        first = np.searchsorted(p.neg_sorted, -target, side="left")
        candidates = [np.maximum(first, r)]
        candidates += [np.full(len(todo), j, dtype=np.int64) for j in targets_extra]
        for _, ascending, ranks in p.by_difference or ():
            # the worst-ranked item of the class with c_j = target (rank d: none)
            last = np.searchsorted(ascending, target, side="left")
            hit = (last < len(ascending)) & (ascending[np.minimum(last, len(ascending) - 1)] == target)
            # ascending position i holds rank ranks[len - 1 - i]
            candidates.append(np.where(hit, ranks[np.maximum(len(ranks) - 1 - last, 0)], d))
        for j in candidates:
            jc = np.minimum(j, d - 1)
            ok = (j < d) & (j >= r) & (p.sorted_a[jc] == target)
            item_b = p.cb_np[p.order_np[jc]]
            outside = Q[r, np.minimum(jc, k)]
            level_b = np.maximum(p.sb[r] - item_b, outside)
            hit = ok & (level_b == M2[todo]) & (found_r[todo] < 0)
            found_r[todo[hit]] = r
            found_j[todo[hit]] = jc[hit]
    return found_r, found_j


def _two_rows(p: _Pair, M2: int, a_thr: list[int], b_thr: list[int], reps_a: Callable[[int, set[int]], list[int]],
              reps_b: Callable[[int, set[int]], list[int]],
              fill: Callable[[dict[int, int]], Optional[tuple[int, ...]]]) -> Optional[tuple[int, ...]]:
    """The search both witness finders share: a row ``r1`` attaining ``M`` with an item of
    ``reps_a(a_thr[r1], ...)``; if its ``c'`` term is ``M2`` the rest is filled, else a
    second row ``r2`` attains ``M2`` with an item of ``reps_b(b_thr[r2], ...)`` that also
    clears ``a_thr[r2]``, and the rest is filled (``fill`` checks its result)."""
    for r1 in range(p.k):
        for j1 in reps_a(a_thr[r1], set()):
            t1 = int(p.sb[r1]) - p.cb[j1]
            if t1 > M2:
                continue
            if t1 == M2:
                s = fill({r1: j1})
                if s is not None:
                    return s
                continue
            for r2 in range(p.k):
                if r2 == r1:
                    continue
                for j2 in reps_b(b_thr[r2], {j1}):
                    if p.ca[j2] < a_thr[r2]:
                        continue
                    s = fill({r1: j1, r2: j2})
                    if s is not None:
                        return s
    return None


def _search_witness(p: _Pair, M: int, M2: int) -> Optional[tuple[int, ...]]:
    """An exact search for a sequence with levels ``(M, M2)``: a row attaining ``M``, a row
    attaining ``M2`` (the same one when its ``c'`` term is ``M2``), items chosen one per
    class of equal ``(c_j, c'_j)``, the other rows filled greedily, the result checked."""
    k = p.k
    a_thr = [int(t) - M for t in p.sa]
    b_thr = [int(t) - M2 for t in p.sb]
    changed = set(p.changed)

    def representatives(value: int, counts: tuple[int, ...], exclude: set[int]) -> list[int]:
        """One item per class of equal ``(c_j, c'_j)`` among the items with ``counts[j] == value``."""
        reps = [x for x in p.changed if counts[x] == value and x not in exclude]
        for rank in range(int(np.searchsorted(p.neg_sorted, -value, side="left")), p.d):
            j = p.order[rank]  # unchanged items: c'_j = c_j, ranked by c
            if p.ca[j] != value:
                break
            if j not in changed and j not in exclude:
                reps.append(j)
                break
        return reps

    def fill(fixed: dict[int, int]) -> Optional[tuple[int, ...]]:
        used = set(fixed.values())
        s: list[int] = []
        rank = 0
        for r in range(k):
            if r in fixed:
                s.append(fixed[r])
                continue
            while rank < p.d and (p.order[rank] in used or p.order[rank] in changed):
                rank += 1
            threshold = max(a_thr[r], b_thr[r])
            if rank < p.d and p.ca[p.order[rank]] >= threshold:
                j = p.order[rank]
            else:
                j = next((x for x in p.changed if x not in used and p.ca[x] >= a_thr[r] and p.cb[x] >= b_thr[r]), -1)
                if j < 0:
                    return None
            used.add(j)
            s.append(j)
        out = tuple(s)
        return out if p.level_a(out) == M and p.level_b(out) == M2 else None

    return _two_rows(p, M2, a_thr, b_thr, lambda value, exclude: representatives(value, p.ca, exclude),
                     lambda value, exclude: representatives(value, p.cb, exclude), fill)


def _search_witness_by_class(p: _Pair, M: int, M2: int) -> Optional[tuple[int, ...]]:
    """:func:`_search_witness` for the diagonal count (any number of changed items): items
    of one class of equal ``c'_j - c_j`` and equal ``c_j`` are interchangeable, so the
    representatives are one per class and value, and a free row takes the best unused
    item of some class that clears both thresholds (within a class the items clearing
    them are a prefix in rank order, so the best unused one clears them if any does).
    A sequence with levels ``(M, M2)`` has a row attaining ``M`` and one attaining ``M2``;
    exchanging their items for representatives of their classes keeps both levels, and the
    sets ``S_r`` with those two items removed stay nested, so the greedy fill completes
    whenever any completion exists.  The result is checked."""
    k = p.k
    classes = p.by_difference or []
    a_thr = [int(t) - M for t in p.sa]
    b_thr = [int(t) - M2 for t in p.sb]
    order = p.order_np

    def representatives(value: int, side_b: bool, exclude: set[int]) -> list[int]:
        reps = []
        for v, ascending, ranks in classes:
            target = value - v if side_b else value
            i = int(np.searchsorted(ascending, target, side="left"))
            while i < len(ascending) and int(ascending[i]) == target:
                j = int(order[ranks[len(ranks) - 1 - i]])
                if j not in exclude:
                    reps.append(j)
                    break
                i += 1
        return reps

    def fill(fixed: dict[int, int]) -> Optional[tuple[int, ...]]:
        used = set(fixed.values())
        pointers = [0] * len(classes)
        s: list[int] = []
        for r in range(k):
            if r in fixed:
                s.append(fixed[r])
                continue
            chosen = -1
            for c, (v, _, ranks) in enumerate(classes):
                i = pointers[c]
                while i < len(ranks) and int(order[ranks[i]]) in used:
                    i += 1
                pointers[c] = i
                if i < len(ranks):
                    j = int(order[ranks[i]])
                    if p.ca[j] >= max(a_thr[r], b_thr[r] - v):
                        chosen = j
                        break
            if chosen < 0:
                return None
            used.add(chosen)
            s.append(chosen)
        out = tuple(s)
        return out if p.level_a(out) == M and p.level_b(out) == M2 else None

    return _two_rows(p, M2, a_thr, b_thr, lambda value, exclude: representatives(value, False, exclude),
                     lambda value, exclude: representatives(value, True, exclude), fill)


class SearchedWitness(_Witness):
    """A sequence with levels ``(M, M2)`` under the two count vectors of ``pair``, found
    when first read: a displaced item (:func:`_displaced_witnesses`) where one reaches the
    cell, else :func:`_search_witness_by_class` (a read-only sequence of item ids; the
    diagonal count's witnesses: the audits read a handful of them, so the others are
    never looked for).  Pickled as the tuple itself."""

    __slots__ = ("_pair", "_levels", "_found")

    def __init__(self, pair: "_Pair", M: int, M2: int):
        self._pair, self._levels = pair, (M, M2)
        self._found: Optional[tuple[int, ...]] = None

    def _tuple(self) -> tuple[int, ...]:
        if self._found is None:
            p, (M, M2) = self._pair, self._levels
            r, j = (int(x[0]) for x in _displaced_witnesses(p, np.asarray([M]), np.asarray([M2])))
            found = p.displaced(r, j) if r >= 0 else _search_witness_by_class(p, M, M2)
            if found is None:
                raise AssertionError(f"joint_pair_cells: no sequence found with levels {self._levels}")
            self._found = found
        return self._found

    def __len__(self) -> int:
        return self._pair.k


def pair_count_declined(a: Any, b: Any, method: Optional[str] = None) -> str:
    """Why :func:`joint_pair_cells` declines the pair ``a``, ``b`` with ``method`` (``""``:
    it applies), in words a limit message can quote."""
    if (a.d, a.k) != (b.d, b.k):
        return f"the two mechanisms have different (d, k): ({a.d}, {a.k}) and ({b.d}, {b.k})"
    if max(map(abs, a.counts + b.counts)) >= _INT_LIMIT // 4:
        return f"a count is {_INT_LIMIT // 4} or more in absolute value (the count works in int64)"
    p = _Pair(a, b)
    if p.band > MAX_BAND:
        return (f"one term max_r (c_(r) - c[s_r]) moves by up to {p.band} between the two vectors, more "
                f"than MAX_BAND = {MAX_BAND} (the vectors are {p.band} apart, not neighbours)")
    few = len(p.changed) <= MAX_CHANGED_ITEMS and len(p.changed_rows) <= MAX_CHANGED_ROWS
    if method is None and few:
        return ""
    if method == "items" and not few:
        return (f"{len(p.changed)} items and {len(p.changed_rows)} of the top k sorted counts differ, "
                f"more than the item-by-item count handles ({MAX_CHANGED_ITEMS} and {MAX_CHANGED_ROWS})")
    if method != "items" and len(set((p.cb_np - p.ca_np).tolist())) > MAX_DIFFERENCES:
        return (f"the items' counts change by {len(set((p.cb_np - p.ca_np).tolist()))} different amounts, more "
                f"than MAX_DIFFERENCES = {MAX_DIFFERENCES} classes of the diagonal count")
    return ""


def joint_pair_cells(a: Any, b: Any, method: Optional[str] = None) -> Optional[Cells]:
    """``{(level index under a, level index under b): [witness, number of sequences]}`` for
    every occurring pair of levels of two Joint-family mechanisms of one output space
    (docs/joint.md, "Pair cells without enumeration"), or ``None`` when the count does not apply
    (:func:`pair_count_declined` says why).

    ``method``: ``"items"`` corrects the count item by item for the changed items (at most
    ``MAX_CHANGED_ITEMS``), ``"diagonal"`` counts per class of equal ``c'_j - c_j`` (any
    number of changed items, at most ``MAX_DIFFERENCES`` classes); ``None`` takes the
    item-by-item count where it applies, else the diagonal one.  Both give the same cells.

    >>> from exactdp import Joint
    >>> cells = joint_pair_cells(Joint([3, 1, 0], 2, epsilon=1), Joint([3, 2, 0], 2, epsilon=1))
    >>> sorted((key, n) for key, (_, n) in cells.items())
    [((0, 0), 1), ((1, 2), 1), ((2, 1), 1), ((2, 2), 1), ((3, 3), 2)]
    """
    if method not in (None, "items", "diagonal"):
        raise ValueError(f"method must be None, 'items' or 'diagonal'; got {method!r}")
    if (a.d, a.k) != (b.d, b.k):
        return None
    if max(map(abs, a.counts + b.counts)) >= _INT_LIMIT // 4:
        return None
    p = _Pair(a, b)
    if p.band > MAX_BAND:
        return None
    few = len(p.changed) <= MAX_CHANGED_ITEMS and len(p.changed_rows) <= MAX_CHANGED_ROWS
    if method == "items" and not few:
        return None
    if method == "diagonal" or not few:
        if len(set((p.cb_np - p.ca_np).tolist())) > MAX_DIFFERENCES:
            return None
        p.group_by_difference()
    groups_a, groups_b = a.groups(), b.groups()
    La = np.asarray([-g.utility for g in groups_a], dtype=np.int64)  # ascending M
    Lb = np.asarray([-g.utility for g in groups_b], dtype=np.int64)
    if p.by_difference is None:
        special = np.isin(La, p.special_values())
    else:  # every level may hold a differing term: count them all
        special = np.ones(len(La), dtype=bool)
    ia, ib, counts, keep = _count_rows(p, a, b, La, Lb, np.flatnonzero(special))
    # the other rows: one diagonal cell each
    plain = np.flatnonzero(~special)
    plain_b = np.searchsorted(Lb, La[plain])
    if len(plain) and not (np.all(plain_b < len(Lb)) and np.all(Lb[np.minimum(plain_b, len(Lb) - 1)] == La[plain])):
        raise AssertionError("joint_pair_cells: a plain level of a is no level of b")
    check_margins(groups_a, groups_b, ia[keep], ib[keep], [counts[i] for i in keep], plain, plain_b)
    cell_a = np.concatenate([ia[keep], plain]).astype(np.int64)
    cell_b = np.concatenate([ib[keep], plain_b]).astype(np.int64)
    sizes = [counts[i] for i in keep] + [groups_a[i].multiplicity for i in plain.tolist()]
    with gc_paused():  # hundreds of thousands of objects: no cyclic collection while they are made
        order = np.lexsort((cell_b, cell_a))
        cell_a, cell_b = cell_a[order], cell_b[order]
        witnesses = _witnesses(p, La[cell_a], Lb[cell_b])
        sizes = [sizes[i] for i in order.tolist()]
        return {(x, y): [o, s] for x, y, o, s in zip(cell_a.tolist(), cell_b.tolist(), witnesses, sizes)}


def _count_rows(p: _Pair, a: Any, b: Any, La: np.ndarray, Lb: np.ndarray,
                rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """The cells of the levels ``rows`` of ``a`` (indices into ``La``, the levels ``M`` of
    ``a`` ascending) with every level of ``b`` (``Lb``) within the band: ``(ia, ib, counts,
    keep)``, ``keep`` the positions of the nonzero counts (refused past the memory budget
    first, :func:`_check_budget`)."""
    w = p.band
    lo = np.searchsorted(Lb, La[rows] - w, side="left")
    hi = np.searchsorted(Lb, La[rows] + w, side="right")
    widths = hi - lo
    ia = np.repeat(rows, widths)
    ib = np.repeat(lo - np.cumsum(widths) + widths, widths) + np.arange(int(widths.sum()))
    M, M2 = La[ia], Lb[ib]
    Mp = np.where(ia > 0, La[np.maximum(ia - 1, 0)], -1)
    M2p = np.where(ib > 0, Lb[np.maximum(ib - 1, 0)], -1)
    corners = [p.clamp(x, y) for x, y in ((M, M2), (Mp, M2), (M, M2p), (Mp, M2p))]
    first, second = np.concatenate([c[0] for c in corners]), np.concatenate([c[1] for c in corners])
    by = np.lexsort((second, first))  # unique points: a lexsort is much faster than unique(axis=1)
    new = np.ones(len(by), dtype=bool)
    new[1:] = (np.diff(first[by]) != 0) | (np.diff(second[by]) != 0)
    where = np.empty(len(by), dtype=np.int64)
    where[by] = np.cumsum(new) - 1
    _check_budget(a, b, int(new.sum()), len(M))
    values = p.at_most(first[by][new], second[by][new])
    n = len(M)
    where = where.reshape(4, n).tolist()
    counts = [values[w0] - values[w1] - values[w2] + values[w3] for w0, w1, w2, w3 in zip(*where)]
    keep = [i for i, c in enumerate(counts) if c]
    if any(counts[i] < 0 for i in keep):
        raise AssertionError("joint_pair_cells: a negative cell count (the sweep is wrong)")
    return ia, ib, counts, keep


class PairHead(NamedTuple):
    """The cells of two Joint-family mechanisms whose level under ``a`` is at most
    ``depth`` (:func:`joint_pair_head`).

    ``x``, ``y``: each cell's level indices (in ``a.groups()``, ``b.groups()``: the head is
    a prefix of both); ``sizes``: its number of sequences (exact ints); ``witnesses``: one
    sequence per cell, found when read; ``utilities_a``, ``utilities_b``: the utilities
    of the levels read (best first; ``b``'s reach ``depth + highest``); ``lowest``,
    ``highest``: the least and greatest value ``M' - M`` any sequence can have (the
    diagonals the pair may carry); ``complete``: the head holds every level of ``a`` (then
    every cell)."""

    x: np.ndarray
    y: np.ndarray
    sizes: list[int]
    witnesses: list[Sequence]
    utilities_a: list[int]
    utilities_b: list[int]
    lowest: int
    highest: int
    complete: bool


def diagonal_range(a: Any, b: Any) -> Optional[tuple[int, int]]:
    """The least and greatest ``M' - M`` over all sequences (``M``, ``M'`` the levels under
    ``a`` and ``b``), or None when the diagonal count does not apply
    (:func:`pair_count_declined` with ``method="diagonal"``).

    Proof: with ``t_r = c_(r) - c[s_r]`` and ``t'_r = c'_(r) - c'[s_r]``, ``t'_r - t_r =
    rho_r - v_{s_r}``, ``rho_r = c'_(r) - c_(r)`` (rows ``r < k``) and ``v_j = c'_j - c_j``.
    If row ``r*`` attains ``M'``, ``M' - M <= t'_{r*} - t_{r*} <= max rho - min v``; if row
    ``r`` attains ``M``, ``M' - M >= t'_r - t_r >= min rho - max v``.  Both ends lie within
    the band ``[-w, w]``.  Tighter: ``M >= 0`` (the ``k`` distinct items cannot all have
    ``c[s_r] > c_(r)``: those lie among the ``k - 1`` items counted above ``c_(k-1)``), so the
    item ``j`` in a row ``r`` attaining ``M`` has ``c_j <= c_(r)``, and the one attaining
    ``M'`` has ``c'_j <= c'_(r)``: the ends are the least ``rho_r - v_j`` over ``c_j <= c_(r)``
    and the greatest over ``c'_j <= c'_(r)`` (a change of the top item alone: ``[0, 1]``,
    not ``[-1, 1]``, whose diagonal -1 carries no output)."""
    if pair_count_declined(a, b, "diagonal"):
        return None
    p = _Pair(a, b)
    rho = p.sb - p.sa
    v = p.cb_np - p.ca_np

    def extreme(counts: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per row, the greatest of ``values[j]`` over the items with ``counts[j] <= rows[r]``."""
        order = np.argsort(counts, kind="stable")
        running = np.maximum.accumulate(values[order])
        return running[np.searchsorted(counts[order], rows, side="right") - 1]

    lowest = rho - extreme(p.ca_np, p.sa, v)
    highest = rho + extreme(p.cb_np, p.sb, -v)
    return int(lowest.min()), int(highest.max())


def head_preferred(a: Any, b: Any) -> bool:
    """Whether the audits of ``a`` and ``b`` count the cells stopped at a depth
    (:func:`joint_pair_head`) rather than all of them (:func:`joint_pair_cells`): the
    diagonal count applies and ``a`` may have ``STOPPED_LEVEL_BOUND`` levels or more (its
    bound on them, known without finding them: a full count, item by item or diagonal,
    would hold every level and count the cells of every one), however many items changed."""
    if (a.d, a.k) != (b.d, b.k) or pair_count_declined(a, b, "diagonal"):
        return False
    bound = getattr(a.table.source, "level_bound", None)
    return bound is not None and bound() >= STOPPED_LEVEL_BOUND


def joint_pair_head(a: Any, b: Any, depth: int) -> Optional[PairHead]:
    """The cells of the sequences whose level under ``a`` is at most ``depth`` (utility at
    least ``-depth``), counted as :func:`joint_pair_cells` counts them (``method="diagonal"``:
    any number of changed items), reading only the levels of ``a`` up to ``depth`` and of
    ``b`` up to ``depth + highest`` (:func:`diagonal_range`); None when the diagonal count
    does not apply.

    Every cell of a level of ``a`` up to ``depth`` is counted: its levels under ``b`` lie
    within the band, and the product ``N`` at a corner depends on the two thresholds only.
    So the head's cells add up to the multiplicity of each level of ``a`` it holds, and to
    that of each level of ``b`` with ``M' <= depth + lowest`` (a cell of such a level has
    ``M <= M' - lowest <= depth``): both are checked.  A cell left out has ``M > depth``
    and ``M' >= M + lowest > depth + lowest``: its mass under ``a`` and under ``b`` lies in
    the two one-dataset tails past those levels, which is how the audits bound what the
    head leaves out (docs/audit.md, "How a pair is audited without enumeration").

    >>> from exactdp import Joint
    >>> head = joint_pair_head(Joint([3, 1, 0], 2, epsilon=1), Joint([3, 2, 0], 2, epsilon=1), 2)
    >>> sorted(zip(head.x.tolist(), head.y.tolist(), head.sizes)), head.complete
    ([(0, 0, 1), (1, 2, 1), (2, 1, 1), (2, 2, 1)], False)
    """
    found = diagonal_range(a, b)
    if found is None:
        return None
    lowest, highest = found
    p = _Pair(a, b)
    p.group_by_difference()
    levels_a, more_a = _levels_upto(a, depth)
    levels_b, _ = _levels_upto(b, depth + highest)
    La = np.asarray([-lv.utility for lv in levels_a], dtype=np.int64)
    Lb = np.asarray([-lv.utility for lv in levels_b], dtype=np.int64)
    ia, ib, counts, keep = _count_rows(p, a, b, La, Lb, np.arange(len(La)))
    cell_a, cell_b = ia[keep].astype(np.int64), ib[keep].astype(np.int64)
    sizes = [counts[i] for i in keep]
    _check_head_margins(levels_a, levels_b, cell_a, cell_b, sizes, depth + lowest)
    order = np.lexsort((cell_b, cell_a))
    cell_a, cell_b = cell_a[order], cell_b[order]
    sizes = [sizes[i] for i in order.tolist()]
    witnesses = _witnesses(p, La[cell_a], Lb[cell_b])
    return PairHead(cell_a, cell_b, sizes, witnesses, [lv.utility for lv in levels_a],
                    [lv.utility for lv in levels_b], lowest, highest, not more_a)


def _levels_upto(mechanism: Any, depth: int) -> tuple[list[Any], bool]:
    """The levels of ``mechanism`` with ``M <= depth`` (utility ``>= -depth``), best first,
    read one by one (no level past the first one beyond ``depth``), and whether any level
    lies beyond."""
    out = []
    for level in mechanism.iter_levels():
        if -level.utility > depth:
            return out, True
        out.append(level)
    return out, False


def _check_head_margins(levels_a: list[Any], levels_b: list[Any], x: np.ndarray, y: np.ndarray, sizes: list[int],
                        complete_b: int) -> None:
    """The head's cells add up to the multiplicity of every level of ``a`` they hold and of
    every level of ``b`` with ``M' <= complete_b`` (:func:`joint_pair_head`)."""
    total_a = [0] * len(levels_a)
    total_b = [0] * len(levels_b)
    for i, j, n in zip(x.tolist(), y.tolist(), sizes):
        total_a[i] += n
        total_b[j] += n
    ok = all(t == lv.multiplicity for t, lv in zip(total_a, levels_a))
    ok = ok and all(t == lv.multiplicity for t, lv in zip(total_b, levels_b) if -lv.utility <= complete_b)
    if not ok:
        raise AssertionError("joint_pair_head: the cells do not add up to the level multiplicities")


def _check_budget(a: Any, b: Any, points: int, cells: int) -> None:
    """Refuse (:class:`~exactdp.errors.MemoryBudgetError`) before counting when the exact
    counts would not fit the two mechanisms' ``memory_budget`` together: ``points`` values
    of ``N`` and at most ``cells`` cells, each count an integer of up to ``k * bitlen(d)``
    bits (a product of ``k`` factors at most ``d``), a cell about 320 bytes besides."""
    budget = getattr(a, "memory_budget", DEFAULT_MEMORY_BUDGET) + getattr(b, "memory_budget", DEFAULT_MEMORY_BUDGET)
    count_bytes = 40 + (a.k * a.d.bit_length()) // 8
    need = points * (count_bytes + 16) + cells * (320 + count_bytes)
    if need > budget:
        raise MemoryBudgetError(
            "memory_budget", budget,
            f"the pair count without enumeration would hold about {need / 2**20:,.0f} MiB at once ({points:,} exact "
            f"counts of up to {a.k * a.d.bit_length():,} bits and up to {cells:,} cells), more than memory_budget = "
            f"{budget} bytes (the mechanisms' memory_budget together); raise memory_budget of the mechanisms "
            f"(for example memory_budget={1 << need.bit_length()} on each)", limit=budget)


def _witnesses(p: _Pair, M: np.ndarray, M2: np.ndarray) -> list[Sequence]:
    if p.by_difference is not None:  # the diagonal count: each witness found when read
        return [SearchedWitness(p, m, m2) for m, m2 in zip(M.tolist(), M2.tolist())]
    rs, js = _displaced_witnesses(p, M, M2)
    out: list[Optional[Sequence]] = [DisplacedWitness(p, r, j) if r >= 0 else None
                                     for r, j in zip(rs.tolist(), js.tolist())]
    for i in np.flatnonzero(rs < 0).tolist():
        m, m2 = int(M[i]), int(M2[i])
        if p.by_difference is not None:
            out[i] = SearchedWitness(p, m, m2)
            continue
        out[i] = _search_witness(p, m, m2)
        if out[i] is None:
            raise AssertionError(f"joint_pair_cells: no sequence found with levels ({m}, {m2})")
    return out
