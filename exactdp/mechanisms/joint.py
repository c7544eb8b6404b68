"""Joint: the joint exponential mechanism for top-k sequences.

Paper: Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333),
Section 3, Algorithm 1; docs/definitions.md §2.1.

Utility of a sequence ``S = (s_1..s_k)`` of distinct items (1-based ranks in the paper):
``u(S) = -max_i (c_(i) - c[s_i])``; the mechanism is the exponential mechanism
``P(S) ∝ exp(eps * u(S) / (2*Δ))`` (Equation 1; Theorem 3.2).

What is exact here and how it is counted:

- :meth:`Joint.levels` -- the integer sweep (docs/definitions.md §2.1; docs/benchmarks.md): the number of
  sequences with utility ``>= -M`` is ``N(M) = prod_r max(T_r(M) - (r-1), 0)`` with
  ``T_r(M) = #{j : c_(j) >= c_(r) - M}`` (this is Lemma 3.7 with the refined scores
  collapsed onto their ceiling, Lemma 3.5); ``m(-M) = N(M) - N(M_prev)``.
- :meth:`Joint.mtilde` -- Lemmas 3.7 and 3.8: every entry of the refined matrix
  ``Ũ[i][j] = -(c_(i) - c_(j)) - z_ij``, ``z_ij = (d(k-1-i) + j + 1) / (2dk)`` (0-based),
  with ``m̃`` = number of sequences whose score ``min_r Ũ[r][rank(s_r)]`` is exactly that
  entry, streamed in decreasing ``Ũ`` order sorted by the exact integer key ``2dk·Ũ``.
- :meth:`Joint.sample` -- Equation 2 collapsed onto levels (a certified exact level draw),
  then Algorithm 1 lines 21-24 realised as an exact unranking of a uniform integer.

>>> m = Joint([10, 5, 1, 1], 2, epsilon=1)
>>> m.levels()
(Level(utility=0, multiplicity=1), Level(utility=-4, multiplicity=2), Level(utility=-5, multiplicity=3), Level(utility=-9, multiplicity=6))
>>> m.support_size()
12
>>> import mpmath
>>> print(mpmath.nstr(m.probability((0, 1), dps=20), 20))
0.63148075214827043467
>>> m.probability_exact((0, 1))
1/(6*exp(-9/2) + 3*exp(-5/2) + 2*exp(-2) + 1)
"""

from __future__ import annotations

from bisect import bisect_right
from fractions import Fraction
from itertools import chain, repeat
from operator import mul
from typing import Iterator, Union

import gmpy2

from .joint_sweep import event_chunks, group_size, level_factor_chunks, mtilde_groups, mtilde_windows, mtilde_windows_fit
from ..errors import InvalidParameterError
from ..core.levels import Level
from ..core.mechanism import JointFamily
from ..core.ranking import Ranking
from ..rules.exponential import ExponentialMechanism
from ..core.selection import SelectionRule

__all__ = ["Joint", "joint_levels", "joint_mtilde"]


def joint_levels(ranking: Ranking, k: int) -> list[Level]:
    """Exact levels of Joint by the integer sweep (no enumeration of outputs).

    At ``M = 0`` every factor ``T_r(0) - r`` (0-based) is ``>= 1`` and it only grows, so
    the running product is updated by one exact division and one multiplication per
    level (``gmpy2.divexact``), the small factors of one level being multiplied first
    (:func:`exactdp.mechanisms.joint_sweep.level_factor_chunks`).
    """
    sc, cum = ranking.sorted_counts, ranking.cumulative
    n = []
    q = 0
    for r in range(k):
        while ranking.values[q] != sc[r]:
            q += 1
        n.append(cum[q] - r)
    product = gmpy2.mpz(1)
    for x in n:
        product *= x
    levels = [Level(0, int(product))]
    previous = product
    for Ms, nums, dens in level_factor_chunks(ranking, k):
        for M, num, den in zip(Ms, nums, dens):
            product = gmpy2.divexact(product * num, den)
            levels.append(Level(-M, int(product - previous)))
            previous = product
    return levels


def joint_mtilde(ranking: Ranking, k: int, *, keys: bool = False) -> Iterator[tuple[int, int, Union[Fraction, int], int]]:
    """Every entry ``(row, col, Ũ, m̃)`` of the refined matrix, decreasing ``Ũ``.

    Lemma 3.7: ``m̃(Ũ_ij) = prod_{r != i} max(t_r - r, 0)`` (0-based) where ``t_r`` counts
    entries of row ``r`` that are ``>= Ũ_ij``.  Because ``z`` separates rows completely
    within one integer level ``M = c_(i) - c_(j)`` (rows below ``i`` come first), ``t_r``
    is ``T_r(M)`` for ``r > i`` and ``T_r(M^-)`` (counts strictly above ``c_(i) - M``)
    for ``r < i``; entries of one tie block share ``m̃``.  Lemma 3.8's sweep keeps the
    product of the non-zero row factors, with zero factors tracked apart.
    Yields ``keys=True``: the exact integer ``2dk·Ũ`` in place of the Fraction.

    Two paths, the same entries (tested against each other and brute force):

    - windows (whenever the keys fit ``int64``): events come window by window from
      :func:`~exactdp.mechanisms.joint_sweep.mtilde_windows`, and consecutive events are
      taken in groups of up to 4 (:func:`~exactdp.mechanisms.joint_sweep.mtilde_groups`):
      one exact ``gmpy2.divexact`` and one conversion to ``int`` per group, then each
      member's ``m̃`` is one multiplication of that ``int`` by a small exact integer, so
      no per-entry big division and no per-entry ``mpz`` conversion (about 3 times the
      entries per second of the events path at distinct d = 166,000, k = 200;
      docs/benchmarks.md);
    - events (huge counts): one ``divexact`` and one multiplication per event.
    """
    if mtilde_windows_fit(ranking, k):
        return _mtilde_windows(ranking, k, keys)
    return _mtilde_events(ranking, k, keys)


def _mtilde_windows(ranking: Ranking, k: int, keys: bool) -> Iterator[tuple[int, int, Union[Fraction, int], int]]:
    # chained in C: the consumer's next() reaches the zip of the current window without
    # resuming a Python frame, which runs once per window (or per tied event) only
    return chain.from_iterable(_window_streams(ranking, k, keys))


def _window_streams(ranking: Ranking, k: int, keys: bool) -> Iterator[Iterator[tuple[int, int, Union[Fraction, int], int]]]:
    """One iterator of entries per window (per event where counts tie)."""
    den = 2 * ranking.d * k
    g = group_size(ranking.d)
    product = gmpy2.mpz(1)  # product of the non-zero row factors
    zeros = k
    divexact = gmpy2.divexact
    for win in mtilde_windows(ranking, k):
        groups = mtilde_groups(win, g, zeros)
        zeros = groups.zeros
        quotients: list[int] = []  # Q of each event's group
        extend = quotients.extend
        for x, y, u, v in zip(groups.ga_lo, groups.ga_hi, groups.gb_lo, groups.gb_hi):
            quotient = divexact(product, x * y)
            product = quotient * (u * v)
            extend(repeat(int(quotient), g))  # one conversion to int per group
        heads = (-win.key).tolist()  # 2dk·Ũ of each event's first entry
        rows, firsts = win.row.tolist(), win.first.tolist()
        if int((win.last - win.first).max()) == 1:  # one entry per event (distinct counts)
            # m̃ = Q * mult is made lazily, in C, as each entry is consumed: the consumer
            # drops each big int before the next is made, so memory stays hot in the cache
            us = heads if keys else map(Fraction, heads, repeat(den))
            yield zip(rows, firsts, us, map(mul, quotients, groups.mult))
            continue
        for i, j0, j1, head, q, m in zip(rows, firsts, win.last.tolist(), heads, quotients, groups.mult):
            ks = range(head, head - (j1 - j0), -1)
            yield zip(repeat(i), range(j0, j1), ks if keys else map(Fraction, ks, repeat(den)), repeat(q * m))


def _mtilde_events(ranking: Ranking, k: int, keys: bool) -> Iterator[tuple[int, int, Union[Fraction, int], int]]:
    d = ranking.d
    den = 2 * d * k
    cum = ranking.cumulative
    n = [0] * k
    zeros = k  # rows whose factor is currently 0
    nonzero = gmpy2.mpz(1)  # product of the non-zero factors
    for Ms, rows, newTs, qs in event_chunks(ranking, k, after_own_value=False, rows_descending=True):
        for M, i, T, q in zip(Ms, rows, newTs, qs):
            a_i = n[i]
            # without_i = product of the other rows' non-zero factors
            without_i = gmpy2.divexact(nonzero, a_i) if a_i else nonzero
            mt = 0 if zeros - (a_i == 0) else int(without_i)
            first = cum[q - 1] if q else 0
            base_key = -(den * M) - d * (k - 1 - i) - 1
            for j in range(first, cum[q]):
                key = base_key - j
                yield (i, j, key if keys else Fraction(key, den), mt)
            b_i = T - i if T > i else 0  # T only grows, so b_i >= a_i
            if b_i:
                nonzero = without_i * b_i
                if not a_i:
                    zeros -= 1
            n[i] = b_i


class Joint(JointFamily):
    """The Joint exponential mechanism over top-k sequences (docs/definitions.md §2.1).

    ``Joint(counts, k, epsilon=1, *, base=None, sensitivity=1)``: ``epsilon`` and
    ``base`` are exclusive; with ``base`` the weight of utility ``u`` is ``base**(-u)``
    (every probability an exact rational), otherwise ``exp(epsilon*u/(2*sensitivity))``.
    Outputs are tuples of item ids in selection order.
    """

    output_kind = "sequence"
    rule: SelectionRule = ExponentialMechanism()

    # -- the paper's objects -----------------------------------------------------------
    def _compute_levels(self):
        return joint_levels(self.ranking, self.k)

    def _utility(self, output: tuple[int, ...]) -> int:
        c = self.counts
        return -max(top - c[s] for top, s in zip(self.ranking.sorted_counts, output))

    def refined_utility(self, row: int, col: int) -> Fraction:
        """``Ũ[row][col] = -(c_(row) - c_(col)) - (d(k-1-row) + col + 1) / (2dk)``, 0-based
        rank indices (the paper's ``z_ij`` shifted to 0-based)."""
        if not (0 <= row < self.k and 0 <= col < self.d):
            raise InvalidParameterError("(row, col)", (row, col), f"need 0 <= row < k = {self.k}, 0 <= col < d = {self.d}")
        sc, d, k = self.ranking.sorted_counts, self.d, self.k
        return Fraction(-(2 * d * k) * (sc[row] - sc[col]) - d * (k - 1 - row) - col - 1, 2 * d * k)

    def mtilde(self, *, keys: bool = False) -> Iterator[tuple[int, int, Union[Fraction, int], int]]:
        """All ``d*k`` entries ``(row, col, Ũ as Fraction, m̃ as int)`` in decreasing ``Ũ``
        order, streamed (Lemmas 3.7-3.8).  ``row``/``col`` are 0-based ranks (see
        ``self.ranking.order`` for item ids).  With ``keys=True`` the third field is the
        exact integer ``2dk·Ũ`` instead of a Fraction (faster)."""
        return joint_mtilde(self.ranking, self.k, keys=keys)

    def _thresholds(self, M: int) -> tuple[list[int], list[int]]:
        """``T_r(M)`` and ``T_r(M^-)`` (strictly above the threshold) for every row."""
        at, gt, sc = self.ranking.at_least, self.ranking.greater_than, self.ranking.sorted_counts
        return [at(sc[r] - M) for r in range(self.k)], [gt(sc[r] - M) for r in range(self.k)]

    def _plan(self, a: int) -> _LevelPlan:
        """The unranking data of level ``a``, kept for the next draws of the same level
        (repeated draws concentrate on a few levels; at most ``_PLAN_CACHE`` are kept)."""
        plans = self.__dict__.setdefault("_plans", {})
        plan = plans.get(a)
        if plan is None:
            if len(plans) >= _PLAN_CACHE:
                plans.pop(next(iter(plans), None), None)  # the oldest plan (pop: safe if another thread took it)
            plan = plans[a] = _LevelPlan(self, a)
        return plan

    def _unrank(self, a: int, r: int) -> tuple[int, ...]:
        """The ``r``-th sequence of utility exactly ``-M``.

        Sequences of level ``M`` are split by the first row ``i`` with
        ``c_(i) - c[s_i] = M`` (the row whose refined entry is the score): rows before
        ``i`` pick among ``T_r(M^-)`` top ranks, row ``i`` one of the ``B_i`` items with
        count ``c_(i) - M``, rows after ``i`` among ``T_r(M)`` top ranks, each minus the
        ranks already used (Algorithm 1, lines 21-24; Lemma 3.6 makes every choice set
        non-empty).  ``r`` is read as mixed-radix digits of those choices.

        Per call: one bisection for ``i``, then for each row one division of ``r`` and
        one pick (:func:`_free_list_picks` or :func:`_bisect_picks`), ``O(k log k)``
        operations beyond the divisions.
        """
        plan = self._plan(a)
        k = self.k
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
        order = self.ranking.order
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


#: Levels whose deepest choice set ``T_{k-1}(M)`` is at most this many times ``k`` are
#: unranked with :func:`_free_list_picks`, deeper ones with :func:`_bisect_picks`.
_FREE_LIST_LIMIT = 4

#: How many levels' unranking data a Joint keeps (each is ``O(k)`` integers of up to the
#: level multiplicity's size: at k = 200 and 1,000-digit multiplicities about 80 KiB a level).
_PLAN_CACHE = 256


class _LevelPlan:
    """What unranking level ``a`` of a Joint needs, computed once per level.

    ``before[x] = max(T_x(M^-) - x, 0)`` and ``after[x] = T_x(M) - x`` are the radices of
    rows before and after the score row ``i``; sequences whose score row is ``i`` have
    ranks ``ends[i-1] <= r < ends[i]`` (``T_i(M) - T_i(M^-)`` equal shares, one per item
    of row ``i``).  Only small integers and the ``k`` running ends are kept.
    """

    __slots__ = ("t_gt", "before", "after", "ends", "top")

    def __init__(self, mech: Joint, a: int):
        M = -mech.table.utilities[a]
        k = mech.k
        t_at, t_gt = mech._thresholds(M)
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
