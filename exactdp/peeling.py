r"""Peeling: k rounds of one-item selection without replacement (docs/definitions.md §2.5).

Papers: the Joint paper's baselines (ICML 2022, arXiv:2201.12333,
Section 4.1: PNF-Peel, Algorithm 2; CDP-Peel, Algorithm 3 and Lemma 4.2) and the one-shot
Gumbel blog post (DifferentialPrivacy.org, https://differentialprivacy.org/one-shot-top-k/, Theorem 1).

Round ``r = 1..k`` selects one item ``j`` among those not selected yet, with the per-round
budget ``eps/k`` on the raw counts (monotone utility, so no factor 2):

- ``noise="gumbel"``: the exponential mechanism ``P(j) ∝ exp((eps/k) c_j)``.  By the
  blog's Theorem 1 (Durfee & Rogers 2019) the k rounds together have exactly the
  distribution of *one-shot* Gumbel top-k: add ``Gumbel(k/eps)`` noise to every count once
  and report the k largest noisy counts in order (CDP-Peel; its ``(eps, delta)``
  accounting is :mod:`exactdp.accounting`).  The tests check this numerically to 30 digits.
- ``noise="exponential"``: permute-and-flip with ``p_j = exp((eps/k)(c_j - max_remaining))``
  (report-noisy-max with ``Exponential(eps/k)`` noise): PNF-Peel, ``eps``-DP by basic
  composition (Lemma 4.1).

With ``base=b`` (exact rational in (0, 1)) the per-round weight of one unit of count is
``1/b``, i.e. ``b`` replaces ``exp(-eps/k)``; every gumbel probability is then an exact
rational, and so is every exponential one (per-round permute-and-flip with rational
``p_j``).

**Exact probability of a sequence** ``(s_1..s_k)``: the product over rounds of the
probability that round ``r`` picks ``s_r`` among the remaining items.  Each round is one
of exactdp's selection rules (:class:`~exactdp.selection.ExponentialMechanism` or
:class:`~exactdp.permute_and_flip.PermuteAndFlip`) applied to the
:class:`~exactdp.selection.LevelTable` of the remaining counts (utility = count,
multiplicity = number of remaining items with that count, ``Scale(eps, divisor=k)``).
Certification: each factor is certified to ``dps + g`` digits with
``g = ceil(log10 k) + 1`` (relative error ``delta <= 10**-dps / (10 k)``), the product is
formed exactly and rounded once to ``prec_for_dps(dps + g)`` bits, so the total relative
error is at most ``(1 + delta)^k - 1 + 2^-prec <= 1.02 k delta + 2^-prec < 10**-dps``.
Log-probabilities are sums of non-positive per-round logs (no cancellation): the same
bound holds.

**Levels (documented decision).**  Peeling is not one selection rule over scalar
utilities, but its probabilities are a function of the *count sequence*
``(c[s_1], ..., c[s_k])``: the remaining counts at every round are determined by it.  So
``levels()`` returns one :class:`~exactdp.levels.Level` per distinct count sequence, with
``utility`` = that tuple of counts (exact ints; tuples compare lexicographically, larger
counts first = "best first") and ``multiplicity`` = the number of item sequences having it;
:meth:`Peeling.utility` returns the same tuple.  Every output of one level has the same
probability, so ``level_probabilities``, ``outputs``, ``distribution`` and the CLI work as for
any mechanism.  The number of levels can be as large as ``d!/(d-k)!`` (distinct counts):
``levels()`` refuses past :data:`PEELING_LEVELS_LIMIT`; ``probability``,
``log_probability``, ``probability_exact`` and ``sample`` never build the levels.  The
per-round view is :meth:`Peeling.round_levels` and :meth:`Peeling.round_distribution`.

>>> m = Peeling([10, 5, 1, 1], 2, base=Fraction(1, 2))
>>> m.probability_exact((0, 1))          # (1024/1060) * (32/36)
2048/2385
>>> m.levels()[:2]
(Level(utility=(10, 5), multiplicity=1), Level(utility=(10, 1), multiplicity=2))
>>> m.round_levels(prefix=(0,))
(Level(utility=5, multiplicity=1), Level(utility=1, multiplicity=2))
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction
from typing import Any, Iterable, Iterator, Optional

import mpmath
import sympy

from .canonical import as_noise, rule_for_noise
from .errors import InvalidOutputError, TooManyOutputsError
from .levels import Level
from .mechanism import Mechanism, make_scale
from .precision import prec_for_dps
from .selection import LevelTable, SelectionRule
from .validation import as_dps, as_sequence_output

__all__ = ["Peeling", "PEELING_LEVELS_LIMIT"]

#: ``levels()`` (count sequences) refuses to build more than this many levels.
PEELING_LEVELS_LIMIT = 10**6
#: Round tables kept per mechanism (keyed by the multiset of removed counts).
_TABLE_CACHE = 4096

_make_mpf = mpmath.mp.make_mpf
_libmp = mpmath.libmp


def _round_to(x: mpmath.mpf, prec: int) -> mpmath.mpf:
    """``x`` correctly rounded to ``prec`` bits (relative error ``<= 2**-prec``)."""
    return _make_mpf(_libmp.mpf_pos(x._mpf_, prec, _libmp.round_nearest))


def _exact_product(values: Iterable[mpmath.mpf]) -> mpmath.mpf:
    out = mpmath.mpf(1)
    for v in values:
        out = mpmath.fmul(out, v, exact=True)
    return out


def _exact_sum(values: Iterable[mpmath.mpf]) -> mpmath.mpf:
    out = mpmath.mpf(0)
    for v in values:
        out = mpmath.fadd(out, v, exact=True)
    return out


def _times_int(x: mpmath.mpf, n: int) -> mpmath.mpf:
    return mpmath.fmul(x, n, exact=True)


class _PeelingRule(SelectionRule):
    """Adapter: Peeling's count-sequence levels seen through the SelectionRule interface.

    Level ``a`` of the mechanism's table is a count sequence; the probability of one
    output of it is the product of per-round probabilities
    (:meth:`Peeling._values_probability`).  This lets generic code (``distribution``,
    the CLI) treat Peeling like any mechanism; it is not a selection rule of its own.
    """

    name = "peeling"

    def __init__(self, mechanism: "Peeling"):
        self._m = mechanism

    def __repr__(self) -> str:
        return f"_PeelingRule({self._m.noise!r})"

    def output_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        return self._m._values_probability(table.utilities[a], dps)

    def output_log_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        return self._m._values_log_probability(table.utilities[a], dps)

    def level_probabilities(self, table: LevelTable, dps: int) -> list[mpmath.mpf]:
        return [_times_int(self.output_probability(table, a, dps), m) for a, m in enumerate(table.multiplicities)]

    def output_probability_exact(self, table: LevelTable, a: int) -> sympy.Expr:
        return self._m._values_probability_exact(table.utilities[a])

    def sample_level(self, table: LevelTable, rng: random.Random) -> int:
        seq = self._m._sample(rng)
        return table.index_of(self._m._utility(seq))


class Peeling(Mechanism):
    """k rounds of per-round ``eps/k`` selection without replacement (docs/definitions.md §2.5).

    ``Peeling(counts, k, epsilon=None, *, base=None, noise="gumbel")``: ``epsilon``
    (default 1) is the *total* budget, each round using ``epsilon/k``; ``base`` replaces
    ``exp(-epsilon/k)`` (exclusive with ``epsilon``); ``noise`` is ``"gumbel"``
    (exponential mechanism per round = one-shot Gumbel top-k, CDP-Peel) or
    ``"exponential"`` (permute-and-flip per round, PNF-Peel).  Outputs are tuples of item
    ids in selection order.  See the module docstring for ``levels()`` and the error bound.
    """

    output_kind = "sequence"

    def __init__(self, counts: Any, k: Any, epsilon: Any = None, *, base: Any = None, noise: Any = "gumbel"):
        super().__init__(counts, k)
        self.noise = as_noise(noise)
        self.scale = make_scale(epsilon, base, Fraction(self.k))
        self.epsilon = self.scale.epsilon
        self.base = self.scale.base
        #: the per-round selection rule
        self.round_rule = rule_for_noise(self.noise)
        #: the adapter used by generic code over count-sequence levels
        self.rule = _PeelingRule(self)
        values = self.ranking.values
        self._value_mult = dict(zip(values, [self.ranking.cumulative[0]] + [
            b - a for a, b in zip(self.ranking.cumulative, self.ranking.cumulative[1:])
        ]))
        # item ids of each count value, ascending ids
        self._items_of: dict[int, list[int]] = {}
        for i, c in enumerate(self.counts):
            self._items_of.setdefault(c, []).append(i)
        self._tables: dict[tuple, LevelTable] = {}

    def _params(self) -> str:
        return f"{self.scale.describe()}, noise={self.noise!r}".replace(f", divisor={self.k}", "")

    # -- rounds -----------------------------------------------------------------------------
    def _round_table(self, removed: Iterable[int]) -> LevelTable:
        """The level table of the remaining counts after removing the multiset ``removed``."""
        key = tuple(sorted(removed, reverse=True))
        table = self._tables.get(key)
        if table is None:
            gone = Counter(key)
            levels = []
            for v in self.ranking.values:
                m = self._value_mult[v] - gone.get(v, 0)
                if m < 0:  # pragma: no cover - callers pass achievable prefixes
                    raise AssertionError("removed more items than exist")
                if m:
                    levels.append(Level(v, m))
            if len(self._tables) >= _TABLE_CACHE:
                self._tables.clear()
            table = self._tables[key] = LevelTable(levels, self.scale)
        return table

    def _rounds(self, values: tuple) -> Iterator[tuple[LevelTable, int]]:
        """``(table, level index)`` of every round for the count sequence ``values``."""
        for r, v in enumerate(values):
            table = self._round_table(values[:r])
            yield table, table.index_of(v)

    def _guard_digits(self) -> int:
        return len(str(self.k)) + 1  # ceil(log10 k) + 1 at least

    def _values_probability(self, values: tuple, dps: int) -> mpmath.mpf:
        g = self._guard_digits()
        factors = [self.round_rule.output_probability(t, a, dps + g) for t, a in self._rounds(values)]
        return _round_to(_exact_product(factors), prec_for_dps(dps + g))

    def _values_log_probability(self, values: tuple, dps: int) -> mpmath.mpf:
        g = self._guard_digits()
        terms = [self.round_rule.output_log_probability(t, a, dps + g) for t, a in self._rounds(values)]
        return _round_to(_exact_sum(terms), prec_for_dps(dps + g))

    def _values_probability_exact(self, values: tuple) -> sympy.Expr:
        out = sympy.Integer(1)
        for t, a in self._rounds(values):
            out = out * self.round_rule.output_probability_exact(t, a)
        return out

    def _check_prefix(self, prefix: Iterable[Any]) -> tuple[int, ...]:
        items = list(prefix) if not isinstance(prefix, (str, bytes)) else prefix
        n = len(items) if isinstance(items, list) else 0
        if n >= self.k:
            raise InvalidOutputError("prefix", prefix, f"must hold fewer than k = {self.k} item ids, got {n}")
        return as_sequence_output(items, self.d, n)

    def round_levels(self, prefix: Iterable[Any] = ()) -> tuple[Level, ...]:
        """Levels of the next round's selection after the items of ``prefix`` were chosen:
        ``Level(count, number of remaining items with that count)``, best first."""
        p = self._check_prefix(prefix)
        return self._round_table([self.counts[i] for i in p]).levels

    def round_distribution(self, prefix: Iterable[Any] = (), dps: Optional[int] = None) -> list[tuple[int, mpmath.mpf]]:
        """``(item, probability)`` of the next round for every remaining item (ids
        ascending), each certified to ``10**-dps``, given the chosen ``prefix``."""
        p = self._check_prefix(prefix)
        digits = as_dps(dps)
        table = self._round_table([self.counts[i] for i in p])
        per = [self.round_rule.output_probability(table, a, digits) for a in range(len(table))]
        chosen = set(p)
        return [(i, per[table.index_of(c)]) for i, c in enumerate(self.counts) if i not in chosen]

    # -- Mechanism hooks ----------------------------------------------------------------------
    def _utility(self, output: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(self.counts[i] for i in output)

    def _compute_levels(self) -> list[Level]:
        """Count sequences in lexicographically decreasing order with their multiplicities
        (``prod_r`` number of remaining items with count ``c_r``)."""
        values = self.ranking.values
        avail = [self._value_mult[v] for v in values]
        k, n = self.k, len(values)
        out: list[Level] = []
        # Iterative depth-first walk (no recursion limit for large k): choice[r] is the
        # index of the value picked at round r, mult[r] the multiplicity so far.
        choice: list[int] = []
        mult = [1]
        nxt = 0  # next value index to try at the current depth
        while True:
            if len(choice) == k:
                if len(out) >= PEELING_LEVELS_LIMIT:
                    raise TooManyOutputsError(
                        None, None,
                        f"Peeling has more than PEELING_LEVELS_LIMIT = {PEELING_LEVELS_LIMIT} levels "
                        "(distinct count sequences); use probability(), sample() or round_distribution()",
                    )
                out.append(Level(tuple(values[i] for i in choice), mult[-1]))
                nxt = n  # exhausted at this depth
            while nxt < n and not avail[nxt]:
                nxt += 1
            if nxt < n and len(choice) < k:
                mult.append(mult[-1] * avail[nxt])
                avail[nxt] -= 1
                choice.append(nxt)
                nxt = 0
                continue
            if not choice:
                return out
            last = choice.pop()
            mult.pop()
            avail[last] += 1
            nxt = last + 1

    def _unrank(self, a: int, r: int) -> tuple[int, ...]:
        """The ``r``-th sequence with count sequence ``levels()[a]``: mixed-radix digits,
        round 1 least significant, each picking among the not-yet-used items with the
        round's count (ids ascending)."""
        values = self.table.utilities[a]
        used: set[int] = set()
        out = []
        for v in values:
            free = [i for i in self._items_of[v] if i not in used]
            r, digit = divmod(r, len(free))
            item = free[digit]
            used.add(item)
            out.append(item)
        if r:  # pragma: no cover
            raise AssertionError("rank beyond the level's multiplicity")
        return tuple(out)

    # -- the public API (§3), computed from the sequence (no level table) --------------------------------
    def support_size(self) -> int:
        """``d!/(d-k)!``: every sequence of distinct items has positive probability."""
        return math.perm(self.d, self.k)

    def probability(self, output: Iterable[Any], dps: Optional[int] = None) -> mpmath.mpf:
        """Product of the per-round probabilities, certified to relative error ``10**-dps``."""
        o = self._check_output(output)
        return self._values_probability(self._utility(o), as_dps(dps))

    def log_probability(self, output: Iterable[Any], dps: Optional[int] = None) -> mpmath.mpf:
        """Sum of the per-round log-probabilities, certified to relative error ``10**-dps``."""
        o = self._check_output(output)
        return self._values_log_probability(self._utility(o), as_dps(dps))

    def probability_exact(self, output: Iterable[Any]) -> sympy.Expr:
        """Product of the rules' exact per-round probabilities (a Rational with ``base``);
        :class:`~exactdp.errors.NoClosedFormError` when a round has no closed form."""
        o = self._check_output(output)
        return self._values_probability_exact(self._utility(o))

    def _sample(self, gen: random.Random) -> tuple[int, ...]:
        """Round by round: an exact level (count) draw by the round rule, then a uniform
        remaining item with that count (``randrange``)."""
        removed: list[int] = []
        used: set[int] = set()
        out = []
        for _ in range(self.k):
            table = self._round_table(removed)
            a = self.round_rule.sample_level(table, gen)
            v = table.utilities[a]
            free = [i for i in self._items_of[v] if i not in used]
            item = free[gen.randrange(len(free))]
            out.append(item)
            used.add(item)
            removed.append(v)
        return tuple(out)
