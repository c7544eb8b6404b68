"""JointSet's sets of one level: counted by segments, unranked (a bijection) and drawn uniformly.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (NeurIPS 2021 PriML workshop): Algorithm 1, line 4 (a
uniform set of the sampled utility), counted through Lemma 7's zero-free column blocks;
docs/definitions.md §2.3.  This is the second stage of :class:`~exactdp.mechanisms.joint_set.mechanism.JointSet`'s
sampler: the level is drawn first, exactly, by the selection rule.

Contract: :class:`LevelPaths` counts the sets of utility exactly ``-M`` (``r_i < T_i`` for
every row, ``r_i >= G_i`` for at least one) segment by segment between the boundaries
``T_i`` and ``G_i``, one exact ``flint.fmpz_poly`` product per segment over a window of
states; :meth:`LevelPaths.unrank` is a bijection from ``range(size)`` onto the level's
sets (colex per segment), and :meth:`LevelPaths.draw` a uniform set from integer
randomness only (Floyd's algorithm per segment).  The counting and the walk, step by step:
docs/joint_set.md, section "The sets of one level (joint_set.unrank)".

>>> from exactdp.core.ranking import Ranking
>>> paths = LevelPaths(Ranking([10, 5, 1, 1]), 2, 4)   # utility -4: {0, 2} and {0, 3}
>>> paths.size, [paths.unrank(r) for r in range(paths.size)]
(2, [[0, 2], [0, 3]])
>>> import random
>>> sorted(paths.draw(random.Random(1))) in ([0, 2], [0, 3])
True
"""

from __future__ import annotations

import random
from bisect import bisect_right
from typing import Iterator, Optional, Sequence

from flint import arb, fmpz, fmpz_poly

from ...core.combinatorics import unrank_combination
from ...core.ranking import Ranking
from ...core.sampling import WORD_BITS, choose_index, inverse_cdf_word, word_bounds

_WORD_MAX = (1 << WORD_BITS) - 1

__all__ = ["LevelPaths", "uniform_subset"]

_ONE = fmpz_poly([1])
_ZERO = fmpz_poly([])
_NEW = object()  # a state no draw has reached


def uniform_subset(rng: random.Random, size: int, j: int) -> list[int]:
    """A uniform ``j``-subset of ``range(size)`` (any order), exactly: Floyd's algorithm
    (Bentley and Floyd, "A sample of brilliance", CACM 1987), each step a uniform integer
    by rejection on ``rng.getrandbits`` (as ``randrange`` draws it), on the complement
    when ``j > size / 2`` (at most ``min(j, size - j)`` draws).

    >>> sorted(uniform_subset(random.Random(3), 5, 5)), len(uniform_subset(random.Random(3), 10**6, 3))
    ([0, 1, 2, 3, 4], 3)
    """
    if j == size:
        return list(range(size))
    getrandbits = rng.getrandbits
    pick = j if 2 * j <= size else size - j
    chosen: set[int] = set()
    for t in range(size - pick + 1, size + 1):  # a uniform x in range(t), then t - 1 if x is taken
        bits = t.bit_length()
        x = getrandbits(bits)
        while x >= t:
            x = getrandbits(bits)
        chosen.add(t - 1 if x in chosen else x)
    if pick == j:
        return list(chosen)
    return [x for x in range(size) if x not in chosen]


#: Segments at most this long multiply by ``(1 + y)`` once per rank (shifted additions)
#: instead of one full product: most segments of heavy-tailed counts are short tie blocks.
_SHORT_SEGMENT = 8


def _binomials(size: int, top: int) -> list[fmpz]:
    """``C(size, j)`` for ``j = 0..top``, each from the last by one exact multiplication
    and division."""
    out, c = [fmpz(1)], fmpz(1)
    for j in range(top):
        c = c * (size - j) // (j + 1)
        out.append(c)
    return out


def _segment(after: fmpz_poly, binom: list[fmpz], length: int, shift: int) -> fmpz_poly:
    """``((1 + y)**L * after mod y**length) >> shift`` for a segment of ``L`` ranks
    (``binom``: ``(1 + y)**L``'s first coefficients, as many as ``length`` needs): one
    segment of the window recurrence."""
    if length <= shift or after.length() == 0:
        return _ZERO
    if len(binom) - 1 <= _SHORT_SEGMENT and binom[-1] == 1:  # (1 + y)**L in full, L short: L shifted sums
        for _ in range(len(binom) - 1):
            after = after + after.left_shift(1)
        return after.truncate(length).right_shift(shift)
    return after.mul_low(fmpz_poly(binom), length).right_shift(shift)


class LevelPaths:
    """The sets of utility exactly ``-M`` of JointSet with ``k`` and ``ranking`` (see the
    module docstring): :attr:`size` (their number), :meth:`unrank` (a bijection from
    ``range(size)`` onto their rank lists) and :meth:`draw` (one uniform set's ranks)."""

    __slots__ = ("k", "bounds", "lengths", "lo", "hi", "fire", "binoms", "a", "b", "size", "first_flag",
                 "run_end", "run_ranks", "run_offset", "run_fires", "run_items", "steps")

    def __init__(self, ranking: Ranking, k: int, M: int):
        sc = ranking.sorted_counts
        T = [ranking.at_least(sc[i] - M) for i in range(k)]
        G = [ranking.greater_than(sc[i] - M) for i in range(k)]
        end = T[-1]
        bounds = sorted({0, *T, *G})  # every G_i <= T_i <= end
        S = len(bounds)
        need_g = [bisect_right(G, b) for b in bounds]
        self.k, self.bounds = k, bounds
        self.lengths = [bounds[s + 1] - bounds[s] for s in range(S - 1)]
        #: fire[s]: the last row i with G_i = b_s (a set with n <= fire[s] there has reached the level), else -1
        self.fire = [g - 1 if g and G[g - 1] == b else -1 for g, b in zip(need_g, bounds)]
        self.hi = hi = [min(k, b) for b in bounds]
        self.lo = lo = [max(bisect_right(T, b), k - end + b) for b in bounds]
        a: list = [None] * S
        bb: list = [None] * S
        a[-1] = bb[-1] = _ONE  # at the end: n = k, one way
        binoms: list = [None] * (S - 1)
        for s in range(S - 2, -1, -1):
            top = hi[s + 1] - lo[s]  # the largest power kept (n = lo_s)
            size, shift = self.lengths[s], hi[s + 1] - hi[s]
            # j ranks of the segment: at most its length and at most the window's spread
            binoms[s] = _binomials(size, max(0, min(size, top)))
            a[s] = _segment(a[s + 1], binoms[s], top + 1, shift)
            bb[s] = _segment(bb[s + 1], binoms[s], hi[s + 1] - max(lo[s], need_g[s]) + 1, shift)
        self.binoms = binoms
        #: the polynomials A_s and B_s: ``a[s][hi_s - n]`` is ``A[s][n]`` (0 past the end)
        self.a, self.b = a, bb
        self.first_flag = self.fire[0] >= 0
        self.size = int(self._left(0, 0, self.first_flag))
        self._find_runs()
        #: (segment, n, flag) -> the draw's choice there (:meth:`_step`), built when draws reach
        #: it a second time (``None``: reached once)
        self.steps: dict[tuple[int, int, bool], Optional[tuple]] = {}

    def _find_runs(self) -> None:
        """The segments a draw passes without a choice: both windows a single state and the
        segment taken whole or not at all (the forced top ranks of heavy-tailed counts; the
        whole level when it holds one set).  ``run_end[s]``: the first boundary from ``s``
        where a choice is left; the ranks taken up to there are
        ``run_ranks[run_offset[s]:run_offset[run_end[s]]]``, and ``run_fires`` counts the
        boundaries where a row reaches the level."""
        lo, hi, fire, bounds = self.lo, self.hi, self.fire, self.bounds
        S = len(bounds)
        ranks: list[int] = []
        offset, fires = [0] * S, [0] * S
        forced = [False] * S
        for s in range(S - 1):
            offset[s] = len(ranks)
            j = hi[s + 1] - hi[s]
            forced[s] = lo[s] == hi[s] and lo[s + 1] == hi[s + 1] and j in (0, self.lengths[s])
            if forced[s] and j:
                ranks.extend(range(bounds[s], bounds[s + 1]))
            fires[s + 1] = fires[s] + (lo[s + 1] == hi[s + 1] and hi[s + 1] <= fire[s + 1])
        offset[S - 1] = len(ranks)
        end = list(range(S))
        for s in range(S - 2, -1, -1):
            if forced[s]:
                end[s] = end[s + 1]
        self.run_end, self.run_ranks, self.run_offset, self.run_fires = end, ranks, offset, fires
        #: ``(order, run_ranks as items of order)`` for the last ``order`` a draw was given
        self.run_items: tuple = (None, [])

    def _left(self, s: int, n: int, flag: bool) -> fmpz:
        """The sets still possible from boundary ``s`` with ``n`` ranks chosen (``flag``:
        some row has reached the level)."""
        e = self.hi[s] - n
        x = self.a[s][e]
        if not flag:
            x -= self.b[s][e]
        return x

    def _walk(self, r: int) -> Iterator[tuple[int, int, fmpz]]:
        """``(segment, j, digit)`` for every segment where rank ``r`` chooses ``j > 0``
        ranks, the digit below ``C(L, j)`` naming which."""
        if not 0 <= r < self.size:  # pragma: no cover - guarded by the caller
            raise AssertionError("rank beyond the level's multiplicity")
        rr = fmpz(r)
        n, flag = 0, self.first_flag
        lo, hi, fire, lengths, binoms, A, B = self.lo, self.hi, self.fire, self.lengths, self.binoms, self.a, self.b
        for s in range(len(lengths)):
            t = s + 1
            jlo, jhi = max(0, lo[t] - n), min(lengths[s], hi[t] - n)
            binom, a, b, h = binoms[s], A[t], B[t], hi[t]
            for j in range(jlo, jhi + 1):
                n2 = n + j
                flag2 = flag or n2 <= fire[t]
                if j == jhi:  # the last choice left: r lies in it
                    break
                e = h - n2
                x = a[e]
                if not flag2:
                    x -= b[e]
                w = binom[j] * x
                if rr < w:
                    break
                rr -= w
            if j:
                c = binom[j]
                if c == 1:
                    yield s, j, fmpz(0)
                else:
                    rr, digit = divmod(rr, c)
                    yield s, j, digit
            n, flag = n2, flag2
        if rr or n != self.k:  # pragma: no cover - would be a bug
            raise AssertionError("unranking did not end on a set of the level")

    def unrank(self, r: int) -> list[int]:
        """The ``r``-th set of the level (ascending ranks): per segment the number of ranks
        and then a colex combination, a bijection from ``range(size)``."""
        ranks: list[int] = []
        for s, j, digit in self._walk(r):
            base = self.bounds[s]
            ranks.extend(base + x for x in unrank_combination(int(digit), self.lengths[s], j))
        return ranks

    def _weights(self, s: int, n: int, flag: bool) -> Iterator[fmpz]:
        """The running sums of the choice's weights at segment ``s`` from state
        ``(n, flag)``: ``C(L, j)`` times the sets left, for ``j`` upwards from the least
        ``j`` that keeps the next state in its window (:meth:`_least_j`)."""
        t = s + 1
        jlo, jhi = self._least_j(s, n), min(self.lengths[s], self.hi[t] - n)
        binom, a, b, h, fire = self.binoms[s], self.a[t], self.b[t], self.hi[t], self.fire[t]
        run = fmpz(0)
        for j in range(jlo, jhi + 1):
            n2 = n + j
            e = h - n2
            x = a[e]
            if n2 > fire and not flag:
                x -= b[e]
            run += binom[j] * x
            yield run

    def _least_j(self, s: int, n: int) -> int:
        return max(0, self.lo[s + 1] - n)

    def _step(self, s: int, n: int, flag: bool) -> tuple:
        """``(least j, lo, hi)``: the 64-bit integer bounds of the law of ``j`` at segment
        ``s`` from ``(n, flag)`` (:func:`~exactdp.core.sampling.word_bounds`: the
        running sums stop at ``1 - 2**-64`` of the mass), or ``(j, None, None)`` when only
        ``j`` is possible; kept in :attr:`steps`."""
        jlo = self._least_j(s, n)
        if jlo == min(self.lengths[s], self.hi[s + 1] - n):
            step: tuple = (jlo, None, None)
        else:
            lo, hi = word_bounds(self._weights(s, n, flag), self._left(s, n, flag))
            step = (jlo, lo, hi)
        self.steps[s, n, flag] = step
        return step

    def _first_visit(self, s: int, n: int, flag: bool, u: int, rng: random.Random) -> int:
        """The number of ranks chosen at segment ``s`` from a state no draw has reached
        before, for the word ``u``: the index :meth:`_step`'s bounds would give (the first
        ``j`` with ``2**64 C_j >= (u + 1) X``, decided when ``2**64 C_{j-1} <= u X``, for the
        running sums ``C`` and the state's count ``X``), found by exact comparisons along
        the running sums instead of building the bounds: most states are reached once or
        twice, and a draw reads the same bits whichever way it is decided."""
        self.steps[s, n, flag] = None  # reached once: the next visit builds the bounds
        if u != _WORD_MAX:
            total = self._left(s, n, flag)
            low = total * u
            high, before = low + total, fmpz(0)
            for j, run in enumerate(self._weights(s, n, flag), start=self._least_j(s, n)):
                run <<= WORD_BITS
                if run >= high:
                    if before <= low:
                        return j
                    break
                before = run
        return self._least_j(s, n) + self._finish(s, n, flag, u, rng)

    def _finish(self, s: int, n: int, flag: bool, u: int, rng: random.Random) -> int:
        """A choice its first 64 bits ``u`` left undecided (probability about ``2**-60``),
        decided exactly from that prefix (:func:`~exactdp.core.sampling.choose_index`)."""
        ends = list(self._weights(s, n, flag))
        return choose_index(lambda prec: [arb(e) for e in ends], len(ends), rng, prefix=(u, WORD_BITS))

    def draw(self, rng: random.Random, order: Optional[Sequence[int]] = None) -> list[int]:
        """A uniform set of the level (its ranks, in no particular order; the items
        ``order[rank]`` when ``order`` is given), from integer randomness only.  The walk of :meth:`unrank` as a chain of exact draws: at each
        segment with a choice, the number of ranks by one 64-bit word of ``rng`` against the
        integer bounds of its law (:meth:`_step`, built once per state and kept), finished
        exactly in the rare undecided case; the ranks within the segment by
        :func:`uniform_subset`; the segments without a choice in one step
        (:meth:`_find_runs`).  Every set of the level has probability ``1 / size``: the
        chain's steps are the ratios of the counts ``unrank`` reads."""
        getrandbits = rng.getrandbits
        steps, lengths, bounds, fire, hi = self.steps, self.lengths, self.bounds, self.fire, self.hi
        run_end, run_offset, run_fires = self.run_end, self.run_offset, self.run_fires
        if order is None:
            order, run_items = range(bounds[-1]), self.run_ranks
        else:
            held, run_items = self.run_items
            if held is not order:  # the forced ranks as items, once per order
                run_items = [order[x] for x in self.run_ranks]
                self.run_items = (order, run_items)
        ranks: list[int] = []
        n, flag, s, last = 0, self.first_flag, 0, len(lengths)
        while s < last:
            e = run_end[s]
            if e > s:  # no choice up to boundary e
                ranks += run_items[run_offset[s]:run_offset[e]]
                flag = flag or run_fires[e] > run_fires[s]
                n, s = hi[e], e
                continue
            step = steps.get((s, n, flag), _NEW)
            if step is _NEW and self._least_j(s, n) == min(lengths[s], hi[s + 1] - n):
                step = self._step(s, n, flag)  # one choice: kept at once (no bits read)
            if step is _NEW:
                j = self._first_visit(s, n, flag, getrandbits(WORD_BITS), rng)
            else:
                jlo, lo, up = step if step is not None else self._step(s, n, flag)
                if lo is None:
                    j = jlo
                else:
                    u = getrandbits(WORD_BITS)
                    i = inverse_cdf_word(lo, up, u)
                    j = jlo + (i if i is not None else self._finish(s, n, flag, u, rng))
            if j:
                size, base = lengths[s], bounds[s]
                if j == size:
                    ranks += order[base:base + size]
                elif j == 1:
                    bits = size.bit_length()
                    x = getrandbits(bits)
                    while x >= size:
                        x = getrandbits(bits)
                    ranks.append(order[base + x])
                else:
                    ranks += [order[base + x] for x in uniform_subset(rng, size, j)]
            n += j
            s += 1
            flag = flag or n <= fire[s]
        return ranks
