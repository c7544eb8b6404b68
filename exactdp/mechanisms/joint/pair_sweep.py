"""Joint's pair sweep: the two count vectors' ``N(M, M')`` at many points, and a witness sequence for each cell.

Paper: Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Section 3, Lemma 3.7, taken to
two count vectors at once.  :class:`PairSweep` holds what the counts of
:mod:`exactdp.mechanisms.joint.pairs` and the witnesses share: ``N(M, M') = prod_r max(|S_r|
- r, 0)`` at points of the band (item by item or per class of equal change ``c'_j - c_j``),
the special levels, and the displaced top-k sequences.  :func:`cell_witnesses` gives each
cell one sequence whose two levels are checked: a displaced item where one reaches the
cell, else an exact search (:func:`search_witness`, :func:`search_witness_by_class`).
Proofs: docs/joint.md, section "Pair cells without enumeration (joint.pairs)".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable, Iterator, Optional

import numpy as np

__all__ = ["PairSweep", "DisplacedWitness", "SearchedWitness", "cell_witnesses", "search_witness",
           "search_witness_by_class"]

#: Matrix entries (rows x points) handled per numpy chunk.
_CHUNK = 1 << 22
#: The displaced-item witnesses use a ``k x k`` table up to this ``k``.
_TABLE_K = 2000


class PairSweep:
    """The two count vectors of the Joint-family mechanisms ``a`` and ``b`` (same ``d`` and
    ``k``) and everything the counts and the witnesses share."""

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
        """The points ``(m1, m2)`` moved into the band ``|M - M'| <= w``, where ``N`` has the same
        value (every sequence's two levels differ by at most ``w``)."""
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
        """The level ``M`` of the sequence ``s`` under ``a``'s counts."""
        return max(int(t) - self.ca[j] for t, j in zip(self.sa, s))

    def level_b(self, s: tuple[int, ...]) -> int:
        """The level ``M'`` of the sequence ``s`` under ``b``'s counts."""
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
    """The witness sequence :meth:`PairSweep.displaced` ``(r, j)`` of ``pair`` (the two
    mechanisms' sweep state), built each time it is read (a read-only sequence of item ids
    equal to that tuple; pickled as the tuple itself).

    >>> from exactdp import Joint
    >>> from exactdp.mechanisms.joint.pairs import joint_pair_cells
    >>> cells = joint_pair_cells(Joint([3, 1, 0], 2, epsilon=1), Joint([3, 2, 0], 2, epsilon=1))
    >>> w = cells[(1, 2)][0]
    >>> w, w == (0, 2), len(w), tuple(w)
    ((0, 2), True, 2, (0, 2))
    """

    __slots__ = ("_pair", "_r", "_j")

    def __init__(self, pair: "PairSweep", r: int, j: int):
        self._pair, self._r, self._j = pair, r, j

    def _tuple(self) -> tuple[int, ...]:
        return self._pair.displaced(self._r, self._j)

    def __len__(self) -> int:
        return self._pair.k


def _displacement_table(p: PairSweep) -> Optional[np.ndarray]:
    """``Q[r][j]`` (``r <= j``): the largest ``c'`` term of :meth:`PairSweep.displaced` ``(r, j)``
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


def _displaced_witnesses(p: PairSweep, M: np.ndarray, M2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _two_rows(p: PairSweep, M2: int, a_thr: list[int], b_thr: list[int], reps_a: Callable[[int, set[int]], list[int]],
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


def search_witness(p: PairSweep, M: int, M2: int) -> Optional[tuple[int, ...]]:
    """An exact search (over the sweep ``p``) for a sequence with levels ``(M, M2)``: a row attaining ``M``, a row
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


def search_witness_by_class(p: PairSweep, M: int, M2: int) -> Optional[tuple[int, ...]]:
    """:func:`search_witness` over the sweep ``p`` grouped for the diagonal count (any number of changed items): items
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
    cell, else :func:`search_witness_by_class` (a read-only sequence of item ids; the
    diagonal count's witnesses: the audits read a handful of them, so the others are
    never looked for).  Pickled as the tuple itself."""

    __slots__ = ("_pair", "_levels", "_found")

    def __init__(self, pair: "PairSweep", M: int, M2: int):
        self._pair, self._levels = pair, (M, M2)
        self._found: Optional[tuple[int, ...]] = None

    def _tuple(self) -> tuple[int, ...]:
        if self._found is None:
            p, (M, M2) = self._pair, self._levels
            r, j = (int(x[0]) for x in _displaced_witnesses(p, np.asarray([M]), np.asarray([M2])))
            found = p.displaced(r, j) if r >= 0 else search_witness_by_class(p, M, M2)
            if found is None:
                raise AssertionError(f"joint_pair_cells: no sequence found with levels {self._levels}")
            self._found = found
        return self._found

    def __len__(self) -> int:
        return self._pair.k


def cell_witnesses(p: PairSweep, M: np.ndarray, M2: np.ndarray) -> list[Sequence]:
    """One witness sequence per cell of the sweep ``p`` with levels ``(M[i], M2[i])``: a displaced item where one
    reaches the cell, else found by the exact search (:class:`SearchedWitness` for the
    diagonal count, found when read)."""
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
        out[i] = search_witness(p, m, m2)
        if out[i] is None:
            raise AssertionError(f"joint_pair_cells: no sequence found with levels ({m}, {m2})")
    return out
