"""Joint: the joint exponential mechanism for top-k sequences.

Paper: Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333),
Section 3, Algorithm 1; docs/definitions.md §2.1.

Utility of a sequence ``S = (s_1..s_k)`` of distinct items (1-based ranks in the paper):
``u(S) = -max_i (c_(i) - c[s_i])``; the mechanism is the exponential mechanism
``P(S) ∝ exp(eps * u(S) / (2*Δ))`` (Equation 1; Theorem 3.2).  Exact: :meth:`Joint.levels`
(the integer sweep, Lemmas 3.5 and 3.7), :meth:`Joint.mtilde` (Lemmas 3.7 and 3.8),
:meth:`Joint.sample` and :meth:`Joint.samples` (Equation 2 collapsed onto levels, then
Algorithm 1 lines 21-24 as an exact unranking).  How each is counted: docs/joint.md,
section "How Joint counts (joint.mechanism)".

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

import math
import random
from fractions import Fraction
from itertools import chain, repeat
from operator import index, mul
from typing import Iterator, Optional, SupportsIndex, Union

import gmpy2
import mpmath
import numpy as np

from .arrays import LevelArrayBlock, iter_level_arrays as _iter_level_arrays
from .blocks import JointLevelSource
from .pairs import PairHead, head_preferred, joint_pair_cells, joint_pair_head, pair_count_declined
from .sweep import event_chunks, group_size, mtilde_groups, mtilde_windows, mtilde_windows_fit
from .unrank import LevelPlan, draw_level_ranks, unrank
from ..set_marginal import JointSetMarginal
from ...errors import InvalidParameterError
from ...core.levels import Level
from ...core.level_blocks import DEFAULT_MEMORY_BUDGET, BlockLevelTable, level_list_bytes
from ...core.mechanism import JointFamily, Mechanism, ids_dtype
from ...core.ranking import NUMPY_BOUND, Ranking
from ...rules.exponential import ExponentialMechanism
from ...core.sampling import numpy_generator
from ...core.selection import SelectionRule
from ...core.aliases import CountsLike, RationalLike
from ...core.validation import as_dps, as_index, as_memory_budget

__all__ = ["Joint", "joint_mtilde"]


def joint_mtilde(ranking: Ranking, k: int, *, keys: bool = False) -> Iterator[tuple[int, int, Union[Fraction, int], int]]:
    """Every entry ``(row, col, Ũ, m̃)`` of the refined matrix of the first ``k`` rows, for the
    counts ranked by ``ranking``, decreasing ``Ũ`` (``keys=True``: the exact integer ``2dk·Ũ``
    in place of the Fraction), by Lemmas 3.7 and 3.8 of the Joint paper (Gillenwater et al.,
    ICML 2022, arXiv:2201.12333): ``m̃(Ũ_ij) = prod_{r != i} max(t_r - r, 0)``, ``t_r`` the
    entries of row ``r`` that are ``>= Ũ_ij``.  The counting and its two paths: docs/joint.md,
    "How Joint counts"."""
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
        qs: list[int] = []  # Q of each group
        append = qs.append
        # the small products ga, gb formed in C; one operator.index (mpz -> int, a little
        # cheaper than int()) per group; each Q repeated for the group's g events in C
        for ga, gb in zip(map(mul, groups.ga_lo, groups.ga_hi), map(mul, groups.gb_lo, groups.gb_hi)):
            quotient = divexact(product, ga)
            product = quotient * gb
            append(index(quotient))
        quotients = chain.from_iterable(zip(*([qs] * g)))
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

    ``Joint(counts, k, epsilon=1, *, base=None, sensitivity=1, memory_budget=None)``:
    ``counts`` the non-negative integer counts (one per item, item ids ``0..d-1``), ``k``
    the length of an output; ``epsilon`` and ``base`` are exclusive; with ``base`` the
    weight of utility ``u`` is ``base**(-u)`` (every probability an exact rational),
    otherwise ``exp(epsilon*u/(2*sensitivity))``; ``memory_budget`` (bytes, an integer or
    its digits as a string; default 2**30) bounds the levels and enclosures the level
    table keeps at once.  Outputs are tuples of item ids in selection order.
    """

    output_kind = "sequence"
    rule: SelectionRule = ExponentialMechanism()
    counts_pairs = True  # pair_cells: the pair count without enumeration

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, sensitivity: RationalLike = 1,
                 memory_budget: Optional[Union[int, str]] = None):
        super().__init__(counts, k, epsilon, base=base, sensitivity=sensitivity)
        #: Bytes of exact levels and enclosures the level table may keep at once.
        self.memory_budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else as_memory_budget(memory_budget)

    # -- the levels, in blocks within the memory budget --------------------------------
    def _make_table(self) -> BlockLevelTable:
        return BlockLevelTable(JointLevelSource(self.ranking, self.k), self.scale, self.memory_budget)

    def _compute_levels(self) -> Iterator[Level]:
        return self.table.iter_levels()

    def levels(self) -> tuple[Level, ...]:
        """Every level at once (about ``k*d`` of them for counts with few ties, each with a
        multiplicity of up to ``k*log10(d)`` digits).  Past ``memory_budget`` this raises
        :class:`~exactdp.errors.MemoryBudgetError`; :meth:`iter_levels` streams them."""
        return self.table.levels

    def iter_levels(self) -> Iterator[Level]:
        """Every level, best first, computed block by block within ``memory_budget``."""
        return self.table.iter_levels()

    def iter_level_probabilities(self, dps: Optional[int] = None) -> Iterator[tuple[Level, mpmath.mpf]]:
        """``(Level, probability of the level certified to dps digits)``, best first, block
        by block within ``memory_budget``; the same values as :meth:`level_probabilities`
        (``dps``: significant digits, ``None`` for the default 30)."""
        table = self.table
        return zip(table.iter_levels(), self.rule.iter_level_probabilities(table, as_dps(dps)))

    def level_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """Every ``(Level, probability)`` at once, certified to ``dps`` digits
        (:meth:`iter_level_probabilities` as a list); past ``memory_budget``,
        :class:`~exactdp.errors.MemoryBudgetError`."""
        table = self.table
        table.check_fits(level_list_bytes(len(table), table.source.level_bytes + 160),
                         "level_probabilities()", "iter_level_probabilities()")
        return list(self.iter_level_probabilities(dps))

    def iter_level_arrays(self, dps: Optional[int] = None) -> Iterator[LevelArrayBlock]:
        """Every level, best first, in blocks of arrays
        (:class:`~exactdp.core.level_arrays.LevelArrayBlock`, computed as read): exact
        utilities, and each level's log-multiplicity and one output's log-probability as
        fixed-point integers whose ``exp`` is within relative error ``10**-dps`` (``None``:
        the default 30; proof: :mod:`exactdp.mechanisms.joint.arrays`).  A rule without a
        fixed-point form raises :class:`~exactdp.errors.InvalidParameterError`."""
        if self.rule.fixed_log_output_error is None:
            raise InvalidParameterError(
                "rule", type(self.rule).__name__,
                "iter_level_arrays() needs a rule with a fixed-point log-output form; use iter_level_probabilities()")
        return _iter_level_arrays(self, as_dps(dps))

    def support_size(self) -> int:
        """``d!/(d-k)!``: every sequence of k distinct items has positive probability."""
        return math.perm(self.d, self.k)

    def pair_cells(self, other: Mechanism) -> Optional[dict[tuple[int, int], list]]:
        """The occurring pairs ``(level index here, level index under other)`` with
        ``[witness sequence, exact number of sequences]``, counted without enumerating
        outputs (:mod:`exactdp.mechanisms.joint.pairs`), when ``other`` is a Joint or
        PNFJoint of the same ``d`` and ``k`` (any epsilon: the cells depend only on the
        counts); ``None`` when the sweep does not apply (the oracle then visits orbits)."""
        if not isinstance(other, Joint):
            return None
        return joint_pair_cells(self, other)

    def pair_head(self, other: Mechanism, depth: Optional[int] = None) -> Optional[PairHead]:
        """The cells of the sequences at level ``M <= depth`` here with ``other``
        (:func:`~exactdp.mechanisms.joint.pairs.joint_pair_head`: the diagonal count stopped at
        ``depth``), for an audit that bounds the rest by the tails.  ``None`` when ``other`` is no
        Joint or PNFJoint of the same ``d`` and ``k``, or with ``depth=None`` when the full count
        is better (:func:`~exactdp.mechanisms.joint.pairs.head_preferred`; else the head at 0)."""
        if not isinstance(other, Joint):
            return None
        if depth is None:
            return joint_pair_head(self, other, 0) if head_preferred(self, other) else None
        return joint_pair_head(self, other, depth)

    def pair_count_declined(self, other: Mechanism) -> str:
        """Why :meth:`pair_cells` returns None for ``other`` (``""``: it does not), for a
        limit message."""
        if not isinstance(other, Joint):
            return f"{type(other).__name__} is not a Joint or PNFJoint"
        return pair_count_declined(self, other)

    # -- the paper's objects -----------------------------------------------------------
    def _utility(self, output: tuple[int, ...]) -> int:
        c = self.counts
        return -max(top - c[s] for top, s in zip(self.ranking.sorted_counts, output))

    def refined_utility(self, row: int, col: int) -> Fraction:
        """``Ũ[row][col] = -(c_(row) - c_(col)) - (d(k-1-row) + col + 1) / (2dk)``, 0-based
        rank indices (the paper's ``z_ij`` shifted to 0-based)."""
        row, col = as_index(row, "row"), as_index(col, "col")
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
        ra = self.ranking.arrays
        if ra is not None and 0 <= M < NUMPY_BOUND:  # M - c_(r) fits int64: all rows at once
            x = M - ra.sorted_counts[: self.k]  # T_r(M) = #{j : -c_(j) <= M - c_(r)}
            return ra.neg.searchsorted(x, side="right").tolist(), ra.neg.searchsorted(x, side="left").tolist()
        at, gt, sc = self.ranking.at_least, self.ranking.greater_than, self.ranking.sorted_counts
        return [at(sc[r] - M) for r in range(self.k)], [gt(sc[r] - M) for r in range(self.k)]

    def _plan(self, a: int) -> LevelPlan:
        """The unranking data of level ``a``, kept for the next draws of the same level
        (repeated draws concentrate on a few levels; at most ``_PLAN_CACHE`` are kept)."""
        plans = self.__dict__.setdefault("_plans", {})
        plan = plans.get(a)
        if plan is None:
            if len(plans) >= _PLAN_CACHE:
                plans.pop(next(iter(plans), None), None)  # the oldest plan (pop: safe if another thread took it)
            plan = plans[a] = LevelPlan(*self._thresholds(-self.table.utilities[a]))
        return plan

    def _unrank(self, a: int, r: int) -> tuple[int, ...]:
        """The ``r``-th sequence of utility exactly ``-M`` (Algorithm 1, lines 21-24, as a
        bijection; :func:`exactdp.mechanisms.joint.unrank.unrank`)."""
        ra = self.ranking.arrays
        return unrank(self._plan(a), r, self.ranking.order if ra is None else ra.order)

    def _samples(self, n: int, gen: random.Random) -> list[tuple[int, ...]]:
        draws = self._samples_array(n, gen)
        out: list[tuple[int, ...]] = []
        for start in range(0, n, _TUPLE_CHUNK):  # chunks: no list of lists of all n draws
            out.extend(map(tuple, draws[start:start + _TUPLE_CHUNK].tolist()))
        return out

    def _samples_array(self, n: int, gen: random.Random) -> np.ndarray:
        """``n`` exact draws as an ``(n, k)`` array of ids (dtype
        :func:`~exactdp.core.mechanism.ids_dtype`: ``int32`` below ``2**31`` items): the
        levels by the rule's :meth:`~exactdp.core.selection.SelectionRule.sample_levels`
        (the words of ``gen``), then a numpy generator seeded from ``gen`` draws the
        sequences of each level together (:func:`exactdp.mechanisms.joint.unrank.draw_level_ranks`), levels in
        increasing index, draws of one level in draw order.  A level drawn fewer than
        ``_BATCH_FROM`` times is unranked one draw at a time from ``gen.randrange(m)``
        instead (the same uniform law, without the fixed cost of ``k`` numpy steps)."""
        levels = np.asarray(self.rule.sample_levels(self.table, gen, n), dtype=np.int64).reshape(n)
        npgen = numpy_generator(gen)
        out = np.empty((n, self.k), dtype=ids_dtype(self.d))
        if n == 0:
            return out
        ra = self.ranking.arrays
        order = np.asarray(self.ranking.order if ra is None else ra.order, dtype=out.dtype)
        by_level = np.argsort(levels, kind="stable")
        firsts = np.flatnonzero(np.diff(levels[by_level], prepend=-1))
        for first, last in zip(firsts.tolist(), [*firsts[1:].tolist(), n]):
            positions = by_level[first:last]
            a = int(levels[positions[0]])
            if last - first < _BATCH_FROM:  # a few draws: k numpy steps would cost more
                multiplicity = self.table.multiplicities[a]
                for t in positions.tolist():
                    out[t] = self._unrank(a, gen.randrange(multiplicity))
                continue
            done = 0
            for ranks in draw_level_ranks(self._plan(a), last - first, npgen, gen):
                out[positions[done:done + ranks.shape[1]]] = np.ascontiguousarray(order.take(ranks).T)
                done += ranks.shape[1]
        return out

    # -- set outputs ---------------------------------------------------------------------
    def as_sets(self) -> JointSetMarginal:
        """This mechanism read as k-subsets (:class:`~exactdp.mechanisms.set_marginal.JointSetMarginal`):
        ``P(S)`` sums the ``k!`` orderings of ``S`` by a product formula per level, never
        enumerated; certify a sampler returning sets against it.

        >>> Joint([3, 1, 0], 2, base="1/2").as_sets().probability_exact({0, 1})
        5/9
        """
        return JointSetMarginal(self)


#: How many levels' unranking data a Joint keeps (each is ``O(k)`` integers of up to the
#: level multiplicity's size: at k = 200 and 1,000-digit multiplicities about 80 KiB a level).
_PLAN_CACHE = 256

#: Levels drawn at least this many times in one ``samples`` call are drawn in numpy, the
#: others one ``_unrank`` at a time (the costs behind the choice: docs/benchmarks.md,
#: "joint.mechanism: batched and single unranking").
_BATCH_FROM = 16

#: ``samples`` turns this many rows of the draws array into tuples at a time.
_TUPLE_CHUNK = 8192
