"""JointSet's level sweep: ``N(M)`` updated where the staircase changed, not recounted.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (NeurIPS 2021 PriML workshop), Lemmas 6-7: ``N(M)``, the
number of k-sets with utility ``>= -M``, is the number of right/down paths through a 0/1
matrix whose rows are prefixes of ones, counted block by block with Pascal/Toeplitz
transfers (:func:`exactdp.mechanisms.joint_set.mechanism._staircase_paths`).

Contract: :class:`Staircase` keeps Lemma 7's block product split at a row ``s``,
``N = [x^{k-s}] (v_s · R_s)`` (``v_s`` the product of the rows above, ``R_s`` the reversed
covector of the rows ``>= s``), so a change of the rows ``a..b`` redoes only the transfers
between the valid halves; the thresholds come in order from a heap of each row's next
event, without the ``k (d - k + 1)`` candidate values.  Exact: integers and
``flint.fmpz_poly`` products only.  Derivation of the split: docs/joint_set.md, section
"The split product of the level sweep (joint_set.sweep)".  Twin: the per-threshold path
count (:func:`exactdp.mechanisms.joint_set.mechanism.levels_matrix_paths`), the plain
dynamic programme and enumeration (``tests/mechanisms/joint_set/test_sweep.py``).
"""

from __future__ import annotations

import heapq
import math
from typing import Iterator, Optional

from flint import fmpz, fmpz_poly

from ...core.levels import Level
from ...core.ranking import Ranking

__all__ = ["pascal_series", "StaircaseSweep", "iter_sweep_levels"]

_FMPZ_ONE = fmpz(1)


def pascal_series(width: int, length: int) -> fmpz_poly:
    """``sum_{δ < length} C(width - 1 + δ, δ) x^δ``: the paths across an all-ones block of
    ``width`` columns that enter at row ``r`` (first column) and leave at row ``r + δ``
    (last column), one Toeplitz diagonal per ``δ`` (Lemma 7).  ``width = 0`` gives ``1``.

    >>> pascal_series(3, 4)
    10*x^3 + 6*x^2 + 3*x + 1
    """
    coeffs = [_FMPZ_ONE] * length
    c = _FMPZ_ONE
    for delta in range(1, length):  # in fmpz: converting Python ints to fmpz costs more than this
        c = c * (width - 1 + delta) // delta
        coeffs[delta] = c
    return fmpz_poly(coeffs)


def _falling_series(delta: int, length: int) -> fmpz_poly:
    """``(1 - x)^delta`` truncated to ``length`` terms: a block ``delta`` columns narrower
    (``q_{w - delta} = q_w (1 - x)^delta``, as ``q_w = (1 - x)^{-w}``)."""
    coeffs = [1] * min(delta + 1, length)
    c = 1
    for t in range(1, len(coeffs)):
        c = -c * (delta - t + 1) // t
        coeffs[t] = c
    return fmpz_poly(coeffs)


class Staircase:
    """Lemma 7's path count of one staircase, kept up to date as its rows change.

    ``Staircase(eff, W)``: ``eff[l]`` (``l < k``) the nondecreasing row widths, all
    ``<= W``, row ``k`` of width ``W``; ``count`` is the number of right/down paths from
    ``(0, 0)`` to ``(k, W - 1)`` through the staircase.  :meth:`set_profile` moves it to the
    staircase of another profile of rows of ones; :meth:`update` to widths already written
    into ``eff``.  State: the block widths ``ell`` and the two half-chains (``k + 1``
    polynomials of length ``<= k + 1``), ``v_s`` valid for ``s <= f`` and ``R_s`` for
    ``s >= g``.

    A few changed rows are taken row by row: a row ``i`` changing by ``delta`` columns
    changes the count by ``ΔN = -v_i[0] · [x^n] (R_{i+1} (1 - x)^delta)`` (``n = k - i``),
    and ``R_{i+1} (1 - x)^delta mod x^n`` is the new ``R_{i+1}``.  Proof: with ``A =
    R_{i+1} (1 - x)^delta``, ``A (1 - x)^{-delta} = R_{i+1}``, so the new ``R_i`` is ``R_i -
    A[n] x^n`` and ``N = [x^n] (v_i R_i)`` drops by ``v_i[0] A[n]`` (an identity of the block
    chain: rows in any order).  More rows are taken by range: the transfers between the
    valid ends are redone and ``N = [x^{k-s}] (v_s · R_s)`` is read at a split inside the
    change.  ``tail`` keeps the forward half-chain valid beyond a change by range (for
    JointSet's pair count).  The two updates in full, with their costs: docs/joint_set.md,
    section "The staircase's two updates (joint_set.sweep.Staircase)".

    >>> st = Staircase([1, 2], 3)
    >>> st.count, st.set_profile([3, 3]), st.set_profile([1, 1])
    (2, 6, 1)
    """

    __slots__ = ("k", "W", "eff", "ell", "V", "R", "f", "g", "count", "_series", "_falling", "tail")

    def __init__(self, eff: list[int], W: int, series: Optional[dict] = None):
        self.k = k = len(eff)
        self.W = W
        self.eff = list(eff) + [W]
        self._series = {} if series is None else series
        self._falling: dict[int, fmpz_poly] = {}
        self.ell = [self.eff[l] - (self.eff[l - 1] if l else 0) for l in range(k)]
        self.V: list = [None] * (k + 1)
        self.R: list = [None] * (k + 1)
        self.V[0], self.R[k] = fmpz_poly([1]), fmpz_poly([1])
        self.f, self.g = 0, k  # v_s is valid for s <= f, R_s for s >= g
        self.tail = False
        self._meet(0, 0)
        self.count = int(self.R[0][k])  # N = [x^k] (v_0 R_0), v_0 = 1

    def _q(self, width: int) -> fmpz_poly:
        q = self._series.get(width)
        if q is None:
            if len(self._series) >= _SERIES_CACHE:
                self._series.clear()  # a sweep meets up to d widths; only k + 1 are in use at once
            # a width next to a kept one (a row moved by one column): q_w = q_{w-1} / (1 - x)
            # or q_{w+1} (1 - x), one short product instead of k + 1 binomials
            n = self.k + 1
            near = self._series.get(width - 1)
            if near is not None and width > 1:
                q = near.mul_low(_GEOMETRIC.get(n) or _geometric(n), n)
            else:
                near = self._series.get(width + 1)
                q = near.mul_low(_ONE_MINUS_X, n) if near is not None else pascal_series(width, n)
            self._series[width] = q
        return q

    def _meet(self, fwd: int, back: int) -> None:
        """Make ``v_fwd`` and ``R_back`` valid: Lemma 7 transfers from where each half-chain
        is valid (``v_{l+1} = (v_l q_{ell_l} mod x^{k-l+1}) >> 1``,
        ``R_l = R_{l+1} q_{ell_l} mod x^{k-l+1}``; an empty block is the identity)."""
        k, ell, q = self.k, self.ell, self._q
        if self.f < fwd:
            V = self.V
            v = V[self.f]
            for l in range(self.f, fwd):
                w = ell[l]
                v = (v.mul_low(q(w), k - l + 1) if w else v).right_shift(1)
                V[l + 1] = v
            self.f = fwd
        if self.g > back:
            R = self.R
            r = R[self.g]
            for l in range(self.g - 1, back - 1, -1):
                w = ell[l]
                if w:
                    r = r.mul_low(q(w), k - l + 1)
                R[l] = r
            self.g = back

    def _row(self, i: int, delta: int) -> None:
        """Row ``i`` changes by ``delta`` columns (the class docstring's formula)."""
        k = self.k
        self._meet(i, i + 1)
        n = k - i
        z = self._falling.get(delta)
        if z is None:
            if len(self._falling) >= _SERIES_CACHE:
                self._falling.clear()
            # (1 - x)^delta to n + 1 terms; delta < 0 is a Pascal series
            z = self._falling[delta] = _falling_series(delta, k + 2) if delta > 0 else pascal_series(-delta, k + 2)
        R = self.R
        r = R[i + 1].mul_low(z, n + 1)
        self.count -= int(self.V[i][0]) * int(r[n])
        R[i + 1] = r.mul_low(_ONE, n)
        self.ell[i] += delta
        if i + 1 < k:
            self.ell[i + 1] -= delta
        if self.f > i:
            self.f = i
        self.g = i + 1

    def update(self, old: dict[int, int]) -> int:
        """The widths in ``eff`` have changed, ``old`` holds the previous width of each changed
        row: update ``count`` and return it (row by row or by range, the class docstring)."""
        if len(old) > _ROW_BY_ROW:
            return self.update_rows(min(old), max(old))
        eff = self.eff
        rows = sorted(old)
        here = self.g - 1  # the row touched last: the half-chains meet there
        if abs(rows[-1] - here) < abs(rows[0] - here):
            rows.reverse()
        for i in rows:
            self._row(i, eff[i] - old[i])
        return self.count

    def update_rows(self, lo: int, hi: int) -> int:
        """The widths in ``eff`` of rows ``lo..hi`` may have changed (and no others): update
        ``count`` and return it (the class docstring)."""
        eff, k, ell = self.eff, self.k, self.ell
        if hi + 1 < k:
            hi += 1  # ell_{hi+1} is the difference to the last changed row
        first, last = k, -1  # the blocks whose width changed
        previous = eff[lo - 1] if lo else 0
        for l in range(lo, hi + 1):
            width = eff[l]
            if ell[l] != width - previous:
                ell[l] = width - previous
                if first == k:
                    first = l
                last = l
            previous = width
        if last < 0:
            return self.count
        # v_s reads ell_0..ell_{s-1}, R_s reads ell_s..ell_{k-1}: valid for s <= F and s >= G
        F = self.f if self.f < first else first
        G = self.g if self.g > last + 1 else last + 1
        self.f, self.g = F, G
        # any split s in [F, G] costs G - F transfers; the middle of this change is where
        # the next one most likely starts or ends, so the halves meet there
        s = G if self.tail else (first + last + 1) // 2
        self._meet(s, s)
        n = k - s
        self.count = int(self.V[s].mul_low(self.R[s], n + 1)[n])
        return self.count

    def set_profile(self, profile: list[int]) -> int:
        """Move to the staircase of rows of ``profile[l]`` ones (clamped to ``[0, W]``, then
        the suffix minimum, as :func:`exactdp.mechanisms.joint_set.mechanism._staircase_paths`); return
        the count."""
        eff, old = self.eff, {}
        run = self.W
        for l in range(self.k - 1, -1, -1):
            p = profile[l]
            if p < run:
                run = p if p > 0 else 0
            if eff[l] != run:
                old[l] = eff[l]
                eff[l] = run
        return self.update(old) if old else self.count


class StaircaseSweep:
    """The path count ``N(M)`` of JointSet at one threshold, moved forward event by event.

    ``StaircaseSweep(ranking, k, M)`` starts at threshold ``M``; ``count`` is ``N`` there;
    :meth:`advance` moves to the next threshold at which a row of ones grows, updates
    ``count`` and returns the threshold (``None`` once every row is full).  State: ``k``
    rows, a :class:`Staircase` and a heap of ``k`` next events.

    >>> s = StaircaseSweep(Ranking([10, 5, 1, 1]), 2, -1)
    >>> [(s.advance(), s.count) for _ in range(3)]
    [(0, 1), (4, 3), (5, 5)]
    """

    __slots__ = ("k", "W", "sc", "ranking", "T", "prof", "stairs", "heap", "M", "_runs", "_singles", "_clock", "_changed")

    def __init__(self, ranking: Ranking, k: int, M: int):
        self.ranking, self.k, self.sc = ranking, k, ranking.sorted_counts
        self.W = W = ranking.d - k + 1
        self.M = M
        sc = self.sc
        self.T = T = [ranking.at_least(sc[l] - M) for l in range(k)]
        self.prof = [min(max(t - l, 0), W) for l, t in enumerate(T)]
        self.stairs = Staircase([0] * k, W)
        self.stairs.set_profile(self.prof)  # the staircase of the rows of ones (suffix minimum)
        self.heap = [(sc[l] - sc[T[l]], l) for l in range(k) if self.prof[l] < W]
        heapq.heapify(self.heap)
        # per row: (width at D = 0, R_{row+1} as the row's last run left it, N(D) series, its
        # length); and how many short runs each row had since its last series
        self._runs: dict[int, tuple] = {}
        self._clock = 1
        self._changed = [0] * (k + 1)  # the clock when each row's width last changed
        self._singles: dict[int, int] = {}

    @property
    def count(self) -> int:
        """``N`` at the current threshold."""
        return self.stairs.count

    def advance(self) -> Optional[int]:
        """Move to the next threshold at which some row of ones grows, update ``count`` and
        return the threshold, or ``None`` when no row can grow (every set is counted)."""
        heap = self.heap
        if not heap:
            return None
        M = heap[0][0]
        rows = []
        while heap and heap[0][0] == M:
            rows.append(heapq.heappop(heap)[1])
        self.M = M
        ranking, sc, T, prof, W = self.ranking, self.sc, self.T, self.prof, self.W
        eff = self.stairs.eff
        old: dict[int, int] = {}
        for l in rows:
            t = T[l] = ranking.at_least(sc[l] - M)
            p = prof[l] = min(t - l, W)
            if p < W:
                heapq.heappush(heap, (sc[l] - sc[t], l))
            # the staircase: eff[i] = min(prof[i], eff[i+1]) upwards while it changes
            i = l
            while i >= 0:
                new = prof[i] if prof[i] < eff[i + 1] else eff[i + 1]
                if new == eff[i]:
                    break
                if i not in old:
                    old[i] = eff[i]
                eff[i] = new
                i -= 1
        if old:
            self._clock += 1
            for i in old:
                self._changed[i] = self._clock
            self.stairs.update(old)
        return M

    def _resumable(self, l: int) -> Optional[tuple]:
        """Row ``l``'s last run's series if it still serves: no row below ``l`` changed width
        since.  ``R_{l+1}`` reads the widths of the rows ``l..k-1`` only (the blocks
        ``ell_{l+1}..``), so while the rows below keep theirs it is ``A_0 (1 - x)^D mod
        x^n``, ``A_0`` the ``R_{l+1}`` the series was made from and ``D`` how far row ``l``
        moved since (by runs or single events alike); events of the rows above change
        ``v_l`` and ``N``, which are read afresh."""
        cache = self._runs.get(l)
        if cache is None:
            return None
        made, changed = cache[1], self._changed
        for i in range(l + 1, self.k):
            if changed[i] >= made:
                return None
        return cache

    def advance_run(self, limit: int = 4096) -> list[tuple[int, int]]:
        """Move forward over the next thresholds at which one row alone grows, up to the next
        threshold of any other row (and at most ``limit`` of them): ``[(M, N(M)), ...]``,
        computed together; ``[]`` when the next threshold is not such a run (then
        :meth:`advance` takes it), or a run shorter than :data:`_RUN_MIN` thresholds whose
        row has no series that still serves (:meth:`_resumable`) and had fewer than
        :data:`_RUN_MIN` such short runs since its last series.

        While row ``l`` alone changes (no other row's event is due, and no row above is
        capped by it: ``prof[l-1] <= eff[l]``), its width moves by ``D`` from ``e0`` and the
        row-by-row formula of :class:`Staircase` gives

            ``N(D) = N_0 - v_l[0] · [x^n] (A (1 - x)^D)``,  ``A = R_{l+1}``, ``n = k - l``,

        a polynomial of degree ``<= n`` in ``D``: ``sum_j a_j C(D, j)`` with ``a_j = (-1)^j
        A[n - j]``.  Its values at ``D = 0, 1, ...`` are the coefficients of ``P(y) / (1 -
        y)^{n+1}``, ``P(y) = sum_j a_j y^j (1 - y)^{n-j}`` (as ``sum_D C(D, j) y^D = y^j /
        (1 - y)^{j+1}``): one product by a Pascal series for the whole run instead of a
        staircase update per threshold.  The series is made ahead (64 widths, doubling up to
        :data:`_RUN_SPAN` while the row's runs use it up) and kept per row, so the runs of one row between the events of the rows above it
        share it.  Heavy-tailed counts sweep row after row this way (``d - k`` thresholds
        each).  The staircase is then moved to the run's end by one row update, whose count
        must equal the last value (checked)."""
        heap = self.heap
        if not heap:
            return []
        M0, l = heap[0]
        n_heap = len(heap)
        other = None  # the next threshold of another row: the second smallest of the heap
        if n_heap > 1:
            other = heap[1][0] if n_heap == 2 else min(heap[1][0], heap[2][0])
            if other == M0:
                return []
        prof, eff, W = self.prof, self.stairs.eff, self.W
        if l and prof[l - 1] > eff[l]:
            return []  # row l - 1 is capped by row l: its growth moves rows above too
        ranking, sc, cap = self.ranking, self.sc, eff[l + 1]
        top, t = sc[l], self.T[l]
        # row l's thresholds before ``other`` are those of the items with count > top - other,
        # and it is full (W ones) from item W + l on
        stop = min(W + l, t + limit)
        if other is not None:
            stop = min(stop, ranking.greater_than(top - other))
        stairs = self.stairs
        cache = self._resumable(l)
        if stop <= t:
            return []
        if cache is None and stop - t < _RUN_MIN:
            # a short run: counted alone, unless this row keeps moving by itself between
            # the events of the rows above it (then its series will serve several runs)
            hits = self._singles[l] = self._singles.get(l, 0) + 1
            if hits < _RUN_MIN:
                return []
        d, at_least = ranking.d, ranking.at_least
        e_now = eff[l]
        # a width that jumps far (many tied items at once) is cheaper counted alone than
        # through a series that long: the run takes at most 64 + 8 per threshold widths
        reach = e_now + _RUN_FIRST
        Ms: list[int] = []
        widths: list[int] = []
        while t < stop:
            c = sc[t]
            u = t + 1
            if u < d and sc[u] == c:  # ties: every item of this count at once
                u = at_least(c)
            w = u - l
            if w > reach and min(w, W, cap) > reach:
                break
            t = u
            Ms.append(top - c)
            widths.append(w)
            reach += 8
        if not Ms:
            return []
        p = widths[-1] = min(widths[-1], W)
        last = p if p < cap else cap
        self._clock += 1
        if cache is not None and last - cache[0] < cache[3]:
            e0, _, values, span = cache
            stairs._meet(l, stairs.g)  # v_l (R is moved by the update below)
        else:
            # N(D) for D = 0..span-1 from here; a longer span than this run is kept for the
            # runs of this row that follow an event of a row above (R_{l+1} unchanged)
            e0, n = e_now, self.k - l
            stairs._meet(l, l + 1)
            A = stairs.R[l + 1]
            # the series is made ahead, doubling while the row's runs use it up (64, 128, ...)
            ahead = min(_RUN_SPAN, 2 * cache[3] if cache is not None else _RUN_FIRST)
            span = max(last - e0 + 1, min(ahead, min(cap, W) - e0 + 1))
            P = fmpz_poly([0])
            for j in range(1, n + 1):  # a_0 = A[n] = 0: A = R_{l+1} has n terms
                a = A[n - j]
                if a:
                    P += (a if j % 2 == 0 else -a) * _monomial_falling(j, n - j)
            values = P.mul_low(_pascal_long(n + 1, span), span)
        v, base = int(stairs.V[l][0]), stairs.count
        here = int(values[e_now - e0])
        out = [(M, base - v * (int(values[(w if w < cap else cap) - e0]) - here)) for M, w in zip(Ms, widths)]
        # the state at the run's end: row l's threshold, profile, width and next event
        self.T[l] = t
        prof[l] = p
        eff[l] = last
        self.M = Ms[-1]
        if p < W:
            heapq.heapreplace(heap, (top - sc[t], l))
        else:
            heapq.heappop(heap)
        if last != e_now:
            stairs.update({l: e_now})
        if stairs.count != out[-1][1]:  # pragma: no cover - the closed form and the update disagree
            raise AssertionError(f"JointSet sweep: a run of row {l} counts {out[-1][1]}, the staircase {stairs.count}")
        runs = self._runs
        runs.pop(l, None)
        if len(runs) >= _RUN_ROWS:
            del runs[next(iter(runs))]  # the row run least recently
        runs[l] = (e0, self._clock, values, span)
        self._changed[l] = self._clock
        self._singles[l] = 0
        return out


#: At most this many block series (and as many width changes) are kept.  A sweep over
#: distinct heavy-tailed counts meets almost every width up to ``d - k + 1``, each series
#: ``k + 1`` integers of up to ``k log2 d`` bits: kept all, they grew to gigabytes
#: (d = 166,000, k = 200); rebuilding the few in use after a clear is cheap.
_SERIES_CACHE = 1024
#: A change of at most this many rows is followed row by row, a larger one by range.
_ROW_BY_ROW = 2
#: A run of at least this many thresholds of one row is counted at once (StaircaseSweep.advance_run).
_RUN_MIN = 16
#: ...and the values of such a run are found at most this many widths ahead.
_RUN_SPAN = 1024
#: ...the first series of a row this many (then twice as many each time it is used up).
_RUN_FIRST = 64
#: ...for at most this many rows at once.
_RUN_ROWS = 8


def _pascal_long(width: int, length: int) -> fmpz_poly:
    """:func:`pascal_series` of ``width`` to at least ``length`` terms, the longest made
    kept for a few widths (a run's series reads its first ``length`` terms)."""
    q = _PASCAL_LONG.get(width)
    if q is None or q.length() < length:
        if q is None and len(_PASCAL_LONG) >= _RUN_ROWS:
            _PASCAL_LONG.clear()
        q = _PASCAL_LONG[width] = pascal_series(width, max(length, 2 * q.length() if q is not None else 0))
    return q


_PASCAL_LONG: dict[int, fmpz_poly] = {}


def _monomial_falling(j: int, m: int) -> fmpz_poly:
    """``y^j (1 - y)^m``."""
    key = (j, m)
    poly = _MONOMIALS.get(key)
    if poly is None:
        if len(_MONOMIALS) >= _SERIES_CACHE:
            _MONOMIALS.clear()
        poly = _MONOMIALS[key] = _falling_series(m, m + 1).left_shift(j)
    return poly


_MONOMIALS: dict[tuple[int, int], fmpz_poly] = {}
_ONE = fmpz_poly([1])
_ONE_MINUS_X = fmpz_poly([1, -1])
_GEOMETRIC: dict[int, fmpz_poly] = {}


def _geometric(n: int) -> fmpz_poly:
    """``1 + x + ... + x^(n-1)``: ``1 / (1 - x)`` to ``n`` terms."""
    q = _GEOMETRIC[n] = fmpz_poly([1] * n)
    return q


def iter_sweep_levels(ranking: Ranking, k: int, utility: Optional[int] = None) -> Iterator[Level]:
    """JointSet's levels (sets of ``k`` items over the counts ranked by ``ranking``) of
    utility ``<= utility`` (all when ``None``), best first, one at a
    time, by :class:`StaircaseSweep`: a level ``-M`` of multiplicity ``N(M) - N(M')`` at each
    threshold ``M`` where ``N`` grows (``M'`` the threshold before); stops once all
    ``C(d, k)`` sets are counted.  Utilities are integers, so a sweep that starts at the
    level ``utility`` starts from ``N(-utility - 1)``.

    >>> list(iter_sweep_levels(Ranking([10, 5, 1, 1]), 2))
    [Level(utility=0, multiplicity=1), Level(utility=-4, multiplicity=2), Level(utility=-5, multiplicity=2), Level(utility=-9, multiplicity=1)]
    >>> list(iter_sweep_levels(Ranking([10, 5, 1, 1]), 2, -5))
    [Level(utility=-5, multiplicity=2), Level(utility=-9, multiplicity=1)]
    """
    start = -1 if utility is None else -utility - 1
    sweep = StaircaseSweep(ranking, k, start)
    previous = sweep.count
    total = math.comb(ranking.d, k)
    if previous == total:
        return
    while True:
        run = sweep.advance_run()
        if not run:
            M = sweep.advance()
            if M is None:  # pragma: no cover - the full staircase counts every set
                raise AssertionError(f"the sweep ended with {previous} of C({ranking.d}, {k}) = {total} sets")
            run = [(M, sweep.count)]
        for M, n in run:
            if n != previous:
                yield Level(-M, n - previous)
                previous = n
                if n == total:
                    return
