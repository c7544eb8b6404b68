"""JointSet's pair cells: how many k-sets have each (level under c, level under c'), counted without enumeration.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (NeurIPS 2021 PriML workshop): Lemma 5 (the utility of
a set), Lemmas 6-7 (sets as lattice paths, counted block by block), taken to two count
vectors at once; docs/audit.md ("How a pair is audited without enumeration").

A privacy audit of two JointSet mechanisms (counts ``c`` and ``c'``, same ``d`` and ``k``)
needs, for every pair of levels ``(M, M')``, the number of k-sets at level ``M`` under
``c`` and ``M'`` under ``c'`` (Lemma 5: ``max_i (sc[i] - v_i)``, ``v_i`` the set's
``(i+1)``-th largest count).  Contract: a cell is the two-dimensional difference of
``N(M, M')``, the sets holding at least ``i + 1`` items of ``A_i = {j : c_j >= sc[i] - M}``
and of ``B_i = {j : c'_j >= sc'[i] - M'}`` for every row ``i``; counted exactly per subset
of the changed items through Lemma 7's staircase
(:class:`exactdp.mechanisms.joint_set.sweep.Staircase`), as one staircase where every row's
two sets are nested, on the band ``|M - M'| <= w`` and only at the *special* levels (every
other level is one cell ``(M, M)``).  Every cell carries a witness (:class:`SetWitness`)
whose two levels are checked.  :func:`joint_set_pair_cells` returns ``None`` (the caller
enumerates orbits) past :data:`MAX_CHANGED_ITEMS` changed items, a band wider than
:data:`MAX_BAND`, or counts too large for ``int64``.  Proofs of the threshold form, the
band and the special levels: docs/joint_set.md, section "Pair cells without enumeration
(joint_set.pairs)".
"""

from __future__ import annotations

from collections.abc import Set
from itertools import combinations
from typing import Any, Iterator, Optional

import numpy as np

from ...core.gc_pause import gc_paused
from ...core.pair_cells import check_margins
from .sweep import Staircase

__all__ = ["joint_set_pair_cells", "pair_count_declined", "SetWitness", "MAX_CHANGED_ITEMS", "MAX_BAND"]

#: The count applies when at most this many items have different counts (``2^n`` cases)...
MAX_CHANGED_ITEMS = 8
#: ...and one term moves by at most this much (``w``).
MAX_BAND = 64
#: Counts must stay below this in absolute value (``int64`` with room for the thresholds).
_INT_LIMIT = 2**58
#: Points handled per numpy chunk.
_CHUNK = 4096

Cells = dict[tuple[int, int], list[Any]]


class _Pair:
    """The two count vectors, their changed items and the unchanged items in count order."""

    def __init__(self, a: Any, b: Any):
        self.a, self.b = a, b
        self.d, self.k = a.d, a.k
        self.ca, self.cb = a.counts, b.counts
        self.sa = np.asarray(a.ranking.sorted_counts[:self.k], dtype=np.int64)
        self.sb = np.asarray(b.ranking.sorted_counts[:self.k], dtype=np.int64)
        self.changed = [j for j in range(self.d) if self.ca[j] != self.cb[j]]
        changed = set(self.changed)
        self.unchanged = [j for j in a.ranking.order if j not in changed]  # count descending
        self.n = len(self.unchanged)
        self.asc = np.asarray([self.ca[j] for j in reversed(self.unchanged)], dtype=np.int64)
        self.delta = max((abs(self.ca[j] - self.cb[j]) for j in self.changed), default=0)
        self.changed_rows = np.flatnonzero(self.sa != self.sb).tolist()
        self.band = int(np.abs(self.sa - self.sb).max(initial=0)) + self.delta
        self.subsets = [x for size in range(min(len(self.changed), self.k) + 1)
                        for x in combinations(self.changed, size) if self.k - size <= self.n]

    # -- the bounds T_q of the unchanged part -----------------------------------------
    def _side(self, sorted_top: np.ndarray, counts: tuple, M: np.ndarray, X: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Per row and point: how many leading unchanged items clear the row's threshold,
        and how many of them the row needs after the members of ``X`` that clear it."""
        thr = sorted_top[:, None] - M[None, :]
        prefix = self.n - np.searchsorted(self.asc, thr, side="left")
        need = np.arange(1, self.k + 1, dtype=np.int64)[:, None] - sum((counts[j] >= thr).astype(np.int64) for j in X)
        return prefix, need

    def bounds(self, M1: np.ndarray, M2: np.ndarray, X: tuple) -> tuple[np.ndarray, np.ndarray]:
        """``T`` (``m x points``, ``m = k - |X|``) for the sets containing exactly ``X`` of the
        changed items, at level ``<= M1`` under ``c`` and ``<= M2`` under ``c'``, and which
        points are feasible at all (no row needing more than ``m`` unchanged items)."""
        m, P = self.k - len(X), len(M1)
        bound = np.full((m, P), self.n, dtype=np.int64)
        feasible = np.ones(P, dtype=bool)
        q = np.arange(m, dtype=np.int64)
        cols = np.arange(P, dtype=np.int64)
        for sorted_top, counts, M in ((self.sa, self.ca, M1), (self.sb, self.cb, M2)):
            prefix, need = self._side(sorted_top, counts, M, X)
            top = np.maximum.accumulate(need, axis=0)  # rows up to i: the prefix of row i serves them all
            feasible &= top[-1] <= m
            # first row whose running need exceeds q: its prefix bounds y_q (prefixes grow with the row)
            span = 2 * self.k + 2
            keys = (np.clip(top, -self.k, self.k + 1) + self.k + cols[None, :] * span).T.ravel()
            first = np.searchsorted(keys, (q[:, None] + 1 + self.k + cols[None, :] * span).ravel(order="F"), side="left")
            first = first.reshape(P, m).T - cols[None, :] * self.k
            ext = np.vstack([prefix, np.full((1, P), self.n, dtype=np.int64)])
            np.minimum(bound, np.take_along_axis(ext, first, axis=0), out=bound)
        return bound, feasible

    def nested(self, M1: np.ndarray, M2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per point: whether every row's two sets are nested with the smaller one a set of
        counts ``>= t`` under ``c`` (docs/joint_set.md, "Pair cells without enumeration",
        "Nested rows"), and then the sizes
        ``T`` (``k x points``) of those smaller sets."""
        k, P, n = self.k, len(M1), self.n
        desc = self.asc[::-1]
        ok = np.ones((k, P), dtype=bool)
        sides = []
        for sorted_top, counts, M in ((self.sa, self.ca, M1), (self.sb, self.cb, M2)):
            thr = sorted_top[:, None] - M[None, :]
            prefix = n - np.searchsorted(self.asc, thr, side="left")
            members = [counts[j] >= thr for j in self.changed]
            sides.append((prefix, members))
        (pa, ma), (pb, mb) = sides
        a_in_b = pa <= pb
        b_in_a = pb <= pa
        for x, y in zip(ma, mb):
            a_in_b &= ~x | y
            b_in_a &= ~y | x
        ok &= a_in_b | b_in_a
        p = np.where(a_in_b, pa, pb)  # the smaller set: a's where a's is inside b's
        size = p.copy()
        # a set of counts >= t: its smallest count (under c) above the largest count outside
        inf = np.iinfo(np.int64).max
        low = np.where(p > 0, desc[np.clip(p - 1, 0, max(n - 1, 0))] if n else inf, inf)
        high = np.where(p < n, desc[np.clip(p, 0, max(n - 1, 0))] if n else -inf, -inf)
        for j, x, y in zip(self.changed, ma, mb):
            member = np.where(a_in_b, x, y)
            size += member
            cj = self.ca[j]
            low = np.where(member, np.minimum(low, cj), low)
            high = np.where(member, high, np.maximum(high, cj))
        ok &= low > high
        return ok.all(axis=0), size

    def at_most(self, M1: np.ndarray, M2: np.ndarray) -> list[int]:
        """``N(M1, M2)`` per point (exact ints); a negative bound counts no set.

        Points whose rows are all nested (:meth:`nested`) are counted on one staircase of all
        ``d`` items, visited by their smaller level (then their levels): points of one smaller
        level differ in the rows where the other side's set is the smaller one (for a swap
        of ranks ``k - 1`` and ``k``, the last row), so the staircase keeps its forward
        half-chain valid to the last row (``Staircase.tail``).  The other points are counted
        per subset of the changed items (:meth:`at_most_by_subsets`)."""
        total = [0] * len(M1)
        live = np.flatnonzero((M1 >= 0) & (M2 >= 0))
        if not len(live):
            return total
        k, W = self.k, self.d - self.k + 1
        lo = np.minimum(M1[live], M2[live])
        order = live[np.lexsort((M2[live], M1[live], lo))]
        rows = np.arange(k, dtype=np.int64)[:, None]
        walk = Staircase([0] * k, W)
        walk.tail = True
        eff, update = walk.eff, walk.update
        previous = np.zeros((k, 1), dtype=np.int64)  # the staircase's rows (all empty at first)
        rest = []
        for start in range(0, len(order), _CHUNK):
            chunk = order[start:start + _CHUNK]
            ok, size = self.nested(M1[chunk], M2[chunk])
            rest.append(chunk[~ok])
            chunk = chunk[ok]
            if not len(chunk):
                continue
            # the staircase of each point: rows of T_i - i ones in [0, W], then the suffix minimum
            widths = np.minimum.accumulate(np.clip(size[:, ok] - rows, 0, W)[::-1], axis=0)[::-1]
            moved = np.hstack([previous, widths])
            cols, where = np.nonzero((moved[:, 1:] != moved[:, :-1]).T)  # by point, then row
            previous = widths[:, -1:]
            bounds = np.searchsorted(cols, np.arange(len(chunk) + 1)).tolist()
            values = widths[where, cols].tolist()
            where = where.tolist()
            for i, (point, a, b) in enumerate(zip(chunk.tolist(), bounds, bounds[1:])):
                if a < b:
                    old = {}
                    for r, v in zip(where[a:b], values[a:b]):
                        old[r] = eff[r]
                        eff[r] = v
                    update(old)
                total[point] = walk.count
        rest = np.concatenate(rest)
        if len(rest):
            rest = rest[np.lexsort((M2[rest], M1[rest]))]
            for i, v in zip(rest.tolist(), self.at_most_by_subsets(M1[rest], M2[rest])):
                total[i] = v
        return total

    def at_most_by_subsets(self, M1: np.ndarray, M2: np.ndarray) -> list[int]:
        """``N(M1, M2)`` per point (exact ints), counted per subset ``X`` of the changed items
        (docs/joint_set.md, "Pair cells without enumeration"); a negative bound counts no set."""
        total = [0] * len(M1)
        caches: dict[int, dict] = {}  # Pascal series per number of rows m: their length is m + 1
        # one staircase per number of rows m, moved from point to point: the points come
        # sorted, so consecutive profiles differ in a few rows (joint_set_sweep.Staircase).
        # Subsets X of one size often give the same profile at a point (changed items of
        # about the same count), so the counts of a chunk are kept per m, not per X
        stairs: dict[int, Staircase] = {}
        for start in range(0, len(M1), _CHUNK):
            m1, m2 = M1[start:start + _CHUNK], M2[start:start + _CHUNK]
            live = (m1 >= 0) & (m2 >= 0)
            known: dict[int, dict[tuple, int]] = {}
            for X in self.subsets:
                m = self.k - len(X)
                T, feasible = self.bounds(m1, m2, X)
                ok = np.flatnonzero(feasible & live)
                if m == 0:
                    for i in ok.tolist():
                        total[start + i] += 1
                    continue
                width = self.n - m + 1
                profiles = np.clip(T - np.arange(m, dtype=np.int64)[:, None], 0, width)
                seen = known.setdefault(m, {})
                for i, column in zip(ok.tolist(), profiles[:, ok].T.tolist()):
                    key = tuple(column)
                    value = seen.get(key)
                    if value is None:
                        walk = stairs.get(m)
                        if walk is None:
                            walk = stairs[m] = Staircase([0] * m, width, caches.setdefault(m, {}))
                        value = seen[key] = walk.set_profile(column)
                    total[start + i] += value
        return total

    def clamp(self, m1: np.ndarray, m2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = self.band
        return np.minimum(m1, m2 + w), np.minimum(m2, m1 + w)

    # -- special levels ---------------------------------------------------------------
    def special_values(self) -> np.ndarray:
        """Every value within ``w + Δ`` of a term ``sc[i] - c_j`` of a changed row or item."""
        ca, cb = np.asarray(self.ca, dtype=np.int64), np.asarray(self.cb, dtype=np.int64)
        parts = [np.zeros(0, dtype=np.int64)]
        for r in self.changed_rows:
            parts += [self.sa[r] - ca, self.sb[r] - cb]
        for j in self.changed:
            parts += [self.sa - self.ca[j], self.sb - self.cb[j]]
        base = np.unique(np.concatenate(parts))
        reach = self.band + self.delta
        return np.unique(np.concatenate([base + t for t in range(-reach, reach + 1)]))

    # -- levels and witnesses ---------------------------------------------------------
    def levels(self, s: frozenset) -> tuple[int, int]:
        """The two levels of the set ``s``: each mechanism's own utility, negated."""
        return -self.a.utility(s), -self.b.utility(s)

    def witness(self, M: int, M2: int) -> frozenset:
        """A set with levels ``(M, M2)``: per ``X``, the largest unchanged part allowed, checked."""
        one = np.asarray([M], dtype=np.int64), np.asarray([M2], dtype=np.int64)
        for X in self.subsets:
            T, feasible = self.bounds(*one, X)
            if not feasible[0]:
                continue
            ys: list[int] = []
            nxt = self.n
            for t in reversed(T[:, 0].tolist()):
                nxt = min(t, nxt) - 1
                ys.append(nxt)
            if ys and ys[-1] < 0:
                continue
            s = frozenset(X) | frozenset(self.unchanged[y] for y in ys)
            if self.levels(s) == (M, M2):
                return s
        raise AssertionError(f"joint_set_pair_cells: no set found with levels ({M}, {M2})")


class SetWitness(Set):
    """The witness set of the cell ``(M, M')`` (``M`` and ``M2`` the two thresholds) of
    ``pair`` (the two mechanisms' staircase state), found when first read (a read-only set
    of item ids equal to that frozenset; pickled as the frozenset itself).

    >>> from exactdp import JointSet
    >>> cells = joint_set_pair_cells(JointSet([3, 1, 0], 2, epsilon=1), JointSet([3, 2, 0], 2, epsilon=1))
    >>> w = cells[(1, 1)][0]
    >>> w == frozenset({0, 2}), len(w), sorted(w)
    (True, 2, [0, 2])
    """

    __slots__ = ("_pair", "_levels", "_set")

    def __init__(self, pair: _Pair, M: int, M2: int):
        self._pair, self._levels, self._set = pair, (M, M2), None

    def _frozen(self) -> frozenset:
        if self._set is None:
            self._set = self._pair.witness(*self._levels)
        return self._set

    def __contains__(self, item: object) -> bool:
        return item in self._frozen()

    def __iter__(self) -> Iterator[int]:
        return iter(self._frozen())

    def __len__(self) -> int:
        return self._pair.k

    def __hash__(self) -> int:
        return hash(self._frozen())

    def __repr__(self) -> str:
        return repr(self._frozen())

    def __reduce__(self) -> tuple:
        return (frozenset, (tuple(self._frozen()),))


def pair_count_declined(a: Any, b: Any) -> str:
    """Why :func:`joint_set_pair_cells` declines the pair ``a``, ``b`` (``""``: it
    applies), in words a limit message can quote.  JointSet has no diagonal count: its levels count sets
    through Lemma 7's staircase paths, which see the changed items one subset at a time."""
    if (a.d, a.k) != (b.d, b.k):
        return f"the two mechanisms have different (d, k): ({a.d}, {a.k}) and ({b.d}, {b.k})"
    if max(map(abs, a.counts + b.counts)) >= _INT_LIMIT:
        return f"a count is {_INT_LIMIT} or more in absolute value (the count works in int64)"
    p = _Pair(a, b)
    if len(p.changed) > MAX_CHANGED_ITEMS:
        return (f"{len(p.changed)} items differ, more than JointSet's count handles ({MAX_CHANGED_ITEMS}: it "
                f"counts staircase paths per subset of the changed items)")
    if p.band > MAX_BAND:
        return f"one term moves by up to {p.band} between the two vectors, more than MAX_BAND = {MAX_BAND}"
    return ""


def joint_set_pair_cells(a: Any, b: Any) -> Optional[Cells]:
    """``{(level index under a, level index under b): [witness set, number of sets]}`` for
    every occurring pair of levels of two JointSet mechanisms of one output space
    (docs/joint_set.md, "Pair cells without enumeration"), or ``None`` when the count does not apply.

    >>> from exactdp import JointSet
    >>> cells = joint_set_pair_cells(JointSet([3, 1, 0], 2, epsilon=1), JointSet([3, 2, 0], 2, epsilon=1))
    >>> sorted((key, n) for key, (_, n) in cells.items())
    [((0, 0), 1), ((1, 1), 1), ((2, 1), 1)]
    """
    if (a.d, a.k) != (b.d, b.k) or max(map(abs, a.counts + b.counts)) >= _INT_LIMIT:
        return None
    p = _Pair(a, b)
    if len(p.changed) > MAX_CHANGED_ITEMS or p.band > MAX_BAND:
        return None
    groups_a, groups_b = a.groups(), b.groups()
    La = np.asarray([-g.utility for g in groups_a], dtype=np.int64)  # ascending M
    Lb = np.asarray([-g.utility for g in groups_b], dtype=np.int64)
    w = p.band
    special = np.isin(La, p.special_values())
    rows = np.flatnonzero(special)
    lo = np.searchsorted(Lb, La[rows] - w, side="left")
    widths = np.searchsorted(Lb, La[rows] + w, side="right") - lo
    ia = np.repeat(rows, widths)
    ib = np.repeat(lo - np.cumsum(widths) + widths, widths) + np.arange(int(widths.sum()))
    before_a = np.concatenate([[-1], La])  # the level before index i is before_a[i]
    before_b = np.concatenate([[-1], Lb])
    corners = [(La[ia], Lb[ib]), (before_a[ia], Lb[ib]), (La[ia], before_b[ib]), (before_a[ia], before_b[ib])]
    first, second = map(np.concatenate, zip(*(p.clamp(x, y) for x, y in corners)))
    # the distinct points (np.unique along an axis sorts rows as bytes: several times slower)
    by = np.lexsort((second, first))
    first, second = first[by], second[by]
    fresh = np.ones(len(by), dtype=bool)
    fresh[1:] = (first[1:] != first[:-1]) | (second[1:] != second[:-1])
    where = np.empty(len(by), dtype=np.int64)
    where[by] = np.cumsum(fresh) - 1
    values = p.at_most(first[fresh], second[fresh])
    corner = where.reshape(4, -1).tolist()
    counts = [values[i] - values[j] - values[l] + values[m] for i, j, l, m in zip(*corner)]
    keep = [i for i, n in enumerate(counts) if n]
    if any(counts[i] < 0 for i in keep):
        raise AssertionError("joint_set_pair_cells: a negative cell count (the count is wrong)")
    plain = np.flatnonzero(~special)  # one diagonal cell each
    plain_b = np.minimum(np.searchsorted(Lb, La[plain]), max(len(Lb) - 1, 0))
    if len(plain) and not np.array_equal(Lb[plain_b], La[plain]):
        raise AssertionError("joint_set_pair_cells: a plain level of a is no level of b")
    check_margins(groups_a, groups_b, ia[keep], ib[keep], [counts[i] for i in keep], plain, plain_b)
    cell_a = np.concatenate([ia[keep], plain]).astype(np.int64)
    cell_b = np.concatenate([ib[keep], plain_b]).astype(np.int64)
    sizes = [counts[i] for i in keep] + [groups_a[i].multiplicity for i in plain.tolist()]
    with gc_paused():  # many objects: no cyclic collection while they are made
        order = np.lexsort((cell_b, cell_a))
        xs, ys = cell_a[order].tolist(), cell_b[order].tolist()
        ua, ub = La.tolist(), Lb.tolist()  # Python ints: indexing numpy per cell costs more than the cell
        return {(x, y): [SetWitness(p, ua[x], ub[y]), sizes[i]] for x, y, i in zip(xs, ys, order.tolist())}
