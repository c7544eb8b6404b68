"""Peeling: k rounds of one-item selection without replacement.

Papers: the baselines of Gillenwater, Joseph, Muñoz Medina, Ribero, *A Joint Exponential
Mechanism for Differentially Private Top-k* (ICML 2022, arXiv:2201.12333), Section 4.1:
PNF-Peel (Algorithm 2, Lemma 4.1) and CDP-Peel (Algorithm 3, Lemma 4.2); and the
one-shot Gumbel identity of Durfee & Rogers, *Practical Differentially Private Top-k
Selection with Pay-what-you-get Composition* (NeurIPS 2019, arXiv:1905.04273), as stated
in the DifferentialPrivacy.org blog post *One-shot DP Top-k mechanisms* (Theorem 1).

Round ``r = 1..k`` selects one remaining item with budget ``eps/k`` on the raw counts:
``noise="gumbel"`` the exponential mechanism ``P(j) ∝ exp((eps/k) c_j)`` (CDP-Peel, the law
of one-shot Gumbel top-k), ``noise="exponential"`` permute-and-flip (PNF-Peel); ``base=b``
replaces ``exp(-eps/k)`` by an exact rational.  Contract: a sequence's probability is the
product of its rounds', certified to relative error ``10**-dps``
(:func:`~exactdp.core.precision.certify`) from a weight tree of arb balls (Gumbel) or per-round
tables (exponential); ``levels()`` are the distinct count sequences ``(c[s_1], ..., c[s_k])``
with their numbers of item sequences (Peeling's probability groups), refused past
:data:`PEELING_LEVELS_LIMIT`, streamed by ``iter_levels()``.  The weight tree, the prefix
trees, the certification and the levels: docs/peeling.md, section "Exact probabilities,
step by step (peeling.mechanism)".

>>> m = Peeling([10, 5, 1, 1], 2, base=Fraction(1, 2))
>>> m.probability_exact((0, 1))          # (1024/1060) * (32/36)
2048/2385
>>> m.levels()[:2]
(Level(utility=(10, 5), multiplicity=1), Level(utility=(10, 1), multiplicity=2))
>>> big = Peeling([2**40, 3, 0], 2, epsilon=1)          # gap 2**40: about 1e-38 below 0
>>> mpmath.nstr(big.log_probability((0, 1), dps=20), 15)
'-0.201413277982752'
"""

from __future__ import annotations

import math
import operator
import random
from bisect import bisect_left
from collections import Counter
from fractions import Fraction
from typing import Any, Iterable, Iterator, NoReturn, Optional, Sequence, SupportsIndex

import mpmath
from flint import arb, ctx

from ...core.lazy import sympy
from ...core.aliases import CountsLike, Output, OutputLike, RationalLike
from ...core.combinatorics import count_words
from ...core.levels import Level, LevelTable, relative_weight
from ...core.mechanism import Mechanism, make_scale
from ...core.precision import certify, relative_ball, times_int
from ...core.selection import SelectionRule
from ...core.validation import as_dps, as_sequence_prefix
from ...errors import NoClosedFormError, TooManyOutputsError
from ...rules import exponential as _exponential
from ...rules.noise import as_noise, rule_for_noise
from ...rules.pnf_rounds import peel_pnf_value
from .sampling import float_ln, nth_free, sample_many
from .tree import PrefixTree
from ..set_marginal import PeelingSetMarginal

__all__ = ["Peeling", "PEELING_LEVELS_LIMIT"]

#: ``levels()`` (count sequences) refuses to build more than this many levels.
PEELING_LEVELS_LIMIT = 10**6
#: Round tables kept per mechanism (keyed by the multiset of removed counts) ...
_TABLE_CACHE = 4096
#: ... as long as they hold at most this many levels in total (memory stays O(d)).
_TABLE_CACHE_LEVELS = 200_000
#: Weight trees kept per mechanism (one per working precision, newest first).
_TREE_CACHE = 3
#: Up to this many distinct counts a weight tree covers them all; past it, only the
#: counts that can matter at its precision (:meth:`Peeling._prefix`), the rest enclosed.
_FULL_TREE = 256


def _differences(cumulative: Sequence[int]) -> tuple[int, ...]:
    """``(c_0, c_1 - c_0, c_2 - c_1, ...)`` (numpy past a few thousand: ints below ``d``)."""
    if len(cumulative) < 2048:
        return (cumulative[0],) + tuple(b - a for a, b in zip(cumulative, cumulative[1:]))
    import numpy as np

    return tuple(np.diff(np.array(cumulative, dtype=np.int64), prepend=0).tolist())


class Peeling(Mechanism):
    """k rounds of per-round ``eps/k`` selection without replacement.

    ``Peeling(counts, k, epsilon=None, *, base=None, noise="gumbel")``: ``epsilon``
    (default 1) is the *total* budget, each round using ``epsilon/k``; ``base`` replaces
    ``exp(-epsilon/k)`` (exclusive with ``epsilon``); ``noise`` is ``"gumbel"``
    (exponential mechanism per round = one-shot Gumbel top-k, CDP-Peel) or
    ``"exponential"`` (permute-and-flip per round, PNF-Peel); the Joint paper
    (arXiv:2201.12333), Section 4.1.  Outputs are tuples of item ids in selection order.
    The weight tree, ``levels()`` and the error bound: docs/peeling.md, "Exact probabilities,
    step by step (peeling.mechanism)".
    """

    output_kind = "sequence"
    _CACHES = {**Mechanism._CACHES, "_tables": dict, "_table_levels": int, "_trees": dict, "_plan": lambda: None}

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, noise: str = "gumbel") -> None:
        super().__init__(counts, k)
        self.noise = as_noise(noise)
        self.scale = make_scale(epsilon, base, Fraction(self.k))
        #: the per-round selection rule
        self.round_rule = rule_for_noise(self.noise)
        values = self.ranking.values
        cumulative = self.ranking.cumulative
        #: number of items of each distinct count (``values`` descending)
        self._mult: tuple[int, ...] = _differences(cumulative)
        self._tables: dict[tuple, LevelTable] = {}
        self._table_levels = 0
        self._trees: dict[int, PrefixTree] = {}
        #: planning floats of the exponential sampler (built on its first draw)
        self._plan: Optional[tuple[Sequence[float], Sequence[float]]] = None
        #: the PEELING_LEVELS_LIMIT that levels() was refused at (None: not refused)
        self._levels_refused: Optional[int] = None
        self._extra_bits = self._gap_bits() + 2 * self.k.bit_length() + 2 * len(values).bit_length() + 8

    def _parameters(self) -> dict[str, object]:
        return {**super()._parameters(), "noise": self.noise}

    def _gap_bits(self) -> int:
        """Bits of ``lam * (max count - min count)`` (a precision hint: ``exp(-x)`` of an
        ``x`` of ``B`` bits needs ``B`` extra bits for full relative accuracy)."""
        gap = self.ranking.values[0] - self.ranking.values[-1]
        if self.scale.lam is not None:
            lam = self.scale.lam
            return (gap * lam.numerator // lam.denominator).bit_length()
        b = self.scale.base
        return (gap * max(b.numerator.bit_length(), b.denominator.bit_length())).bit_length()

    def _level_items(self, a: int) -> Sequence[int]:
        """Item ids with the ``a``-th largest distinct count, ascending (a slice of the
        ranking's order: ties are ordered by item id)."""
        cum = self.ranking.cumulative
        return self.ranking.order[(cum[a - 1] if a else 0):cum[a]]

    def _value_index(self, v: int) -> int:
        """The index of the count ``v`` in ``ranking.values`` (descending): a bisection, no
        table of all counts (KeyError when no item has count ``v``)."""
        values = self.ranking.values
        a = bisect_left(values, -v, key=operator.neg)
        if a == len(values) or values[a] != v:
            raise KeyError(v)
        return a

    # -- the weight tree (gumbel) ---------------------------------------------------------
    def _tree(self, need: int = 0) -> PrefixTree:
        """The weight tree at flint's current precision, adequate for the distinct count
        ``need`` (:meth:`_adequate`; cached per precision, covering more on demand;
        callers hold the precision lock through :func:`~exactdp.core.precision.certify` or
        the sampler's lock section, and undo whatever they change in it).

        Up to :data:`_FULL_TREE` distinct counts the tree covers them all (the weights of
        the first round's level table, one formula for both routes).  Past it, the tree
        covers the counts down to :meth:`_prefix` and holds the rest as one enclosure
        (:class:`~exactdp.mechanisms.peeling.tree.PrefixTree`), so a draw among 166,000
        distinct counts computes the weights of the few thousand that can matter."""
        prec = ctx.prec
        tree = self._trees.get(prec)
        if tree is not None and self._adequate(tree, need):
            return tree
        n = len(self.ranking.values)
        if n <= _FULL_TREE:
            tree = PrefixTree(self._round_table(()).relative_weights(), self._mult, arb(0), n, prec=prec)
        else:
            cover = self._prefix(prec, need)
            old = [] if tree is None else tree.weights[:tree.cover]
            if tree is not None:  # cover at least twice as much: O(final cover) work in all
                cover = min(n, max(cover, 2 * tree.cover))
            tree = self._prefix_tree(prec, cover, old)
        while len(self._trees) >= _TREE_CACHE and prec not in self._trees:
            del self._trees[next(iter(self._trees))]
        self._trees[prec] = tree
        return tree

    def _prefix_tree(self, prec: int, cover: int, weights: list) -> PrefixTree:
        """The tree over the first ``cover`` distinct counts (``weights``: the first
        relative weights, already computed at ``prec``) and the tail enclosure
        ``[0, N e_cover]`` (:class:`~exactdp.mechanisms.peeling.tree.PrefixTree`)."""
        values = self.ranking.values
        lam = self.scale.lam_ball()
        v0 = values[0]
        weights = list(weights)
        for a in range(len(weights), cover):
            weights.append(relative_weight(lam, values[a] - v0))
        n = len(values)
        tail = None
        if cover < n:
            rest = self.d - self.ranking.cumulative[cover - 1]  # items of the counts not covered
            tail = arb(0).union(relative_weight(lam, values[cover] - v0) * rest)
        return PrefixTree(weights, self._mult, arb(0), n, tail, prec)

    def _prefix(self, prec: int, need: int) -> int:
        """How many distinct counts a tree at ``prec`` bits covers to be adequate for the
        count ``need``: past ``need``, down to the first count ``v`` with
        ``lam (v_need - v) >= (prec + 16) ln 2 + ln d``, so that the tail's enclosure
        ``[0, N e]`` (``N <= d``) is below ``2**-(prec+16) e_need``, about the rounding
        error of the balls.  The gap is planned in floats (any cover gives the same law:
        the tail is an enclosure; a cover too short only costs precision raises, each of
        which covers more); all counts when the float rate is not usable."""
        values = self.ranking.values
        n = len(values)
        rate = self._rate()
        if not rate > 0:
            return n
        x = ((prec + 16) * math.log(2) + math.log(self.d)) / rate
        if not x < 1e300:
            return n
        bound = values[need] - (math.ceil(x) + 1)
        return max(need + 1, bisect_left(values, -bound, key=operator.neg))

    def _rate(self) -> float:
        """``lam`` as a float (planning only): ``epsilon/k``, or ``-ln base``."""
        if self.scale.lam is not None:
            lam = self.scale.lam
            try:
                return lam.numerator / lam.denominator
            except OverflowError:
                return math.inf
        b = self.scale.base
        if 2 * b.numerator >= b.denominator:  # b >= 1/2: -log1p(b - 1), no cancellation
            return -math.log1p(-float(Fraction(b.denominator - b.numerator, b.denominator)))
        return float_ln(b.denominator) - float_ln(b.numerator)

    def _adequate(self, tree: PrefixTree, need: int) -> bool:
        """Whether ``tree`` covers the count ``need`` with its tail below
        ``2**-(prec+16) e_need`` (:meth:`_prefix`; remembered in ``tree.checked_to``)."""
        if tree.complete or need <= tree.checked_to:
            return True
        if need < tree.cover and self._prefix(tree.prec, need) <= tree.cover:
            tree.checked_to = need
            return True
        return False

    def _exact_tree(self) -> PrefixTree:
        """The weight tree with exact Fraction weights ``base**(v_0 - v)`` (rational base
        only): the exact twin of :meth:`_tree` for the tests."""
        if self.base is None:
            raise AssertionError("the exact weight tree needs a rational base")
        v0 = self.ranking.values[0]
        weights = [self.base ** (v0 - v) for v in self.ranking.values]
        return PrefixTree(weights, self._mult, Fraction(0), len(weights))

    def _tree_terms(self, tree: PrefixTree, values: Sequence[int]) -> list[Any]:
        """``R_r = (n_a - 1) + O_a / e_a`` of every round (docs/peeling.md, "Exact
        probabilities, step by step"): round ``r``
        picks its item with probability ``1 / (1 + R_r)``.  The removals are applied to
        ``tree`` in place and undone before returning (no copy; callers hold the precision
        lock, so no other computation sees the tree meanwhile)."""
        remaining: dict[int, int] = {}
        out = []
        try:
            for v in values:
                a = self._value_index(v)
                n = remaining.get(a, self._mult[a])
                out.append((n - 1) + tree.others(a) / tree.weights[a])
                remaining[a] = n - 1
                tree.set_count(a, n - 1)
        finally:
            for a in remaining:
                tree.set_count(a, self._mult[a])
        return out

    def _tree_probability(self, values: Sequence[int], dps: int, log: bool) -> mpmath.mpf:
        # adequate for the count after the least one picked: its items are never removed,
        # so every round's others(a) >= e_need and the tail costs it relative digits only
        # (the log-probability sums tiny R_r and needs them to relative accuracy)
        need = min(len(self._mult) - 1, max(map(self._value_index, values)) + 1)

        def compute() -> arb:
            terms = self._tree_terms(self._tree(need), values)
            if log:
                acc = arb(0)
                for r in terms:
                    acc -= r.log1p()
                return acc
            acc = arb(1)
            for r in terms:
                acc = acc / (1 + r)
            return acc

        return certify(compute, dps, extra_bits=self._extra_bits)

    def _values_probability_tree_exact(self, values: Sequence[int]) -> Fraction:
        """The weight-tree computation in exact rationals (rational base): the product of
        ``1 / (1 + R_r)``."""
        out = Fraction(1)
        for r in self._tree_terms(self._exact_tree(), values):
            out /= 1 + r
        return out

    # -- rounds (per-round level tables) -----------------------------------------------------
    def _round_table(self, removed: Iterable[int]) -> LevelTable:
        """The level table of the remaining counts after removing the multiset ``removed``."""
        key = tuple(sorted(removed, reverse=True))
        table = self._tables.get(key)
        if table is None:
            gone = Counter(key)
            levels = []
            for v, m in zip(self.ranking.values, self._mult):
                m -= gone.get(v, 0)
                if m < 0:  # pragma: no cover - callers pass achievable prefixes
                    raise AssertionError("removed more items than exist")
                if m:
                    levels.append(Level(v, m))
            table = LevelTable(levels, self.scale)
            if len(self._tables) >= _TABLE_CACHE or self._table_levels + len(table) > _TABLE_CACHE_LEVELS:
                self._tables.clear()
                self._table_levels = 0
            if len(table) <= _TABLE_CACHE_LEVELS:
                self._tables[key] = table
                self._table_levels += len(table)
        return table

    def _rounds(self, values: tuple) -> Iterator[tuple[LevelTable, int]]:
        """``(table, level index)`` of every round for the count sequence ``values``."""
        for r, v in enumerate(values):
            table = self._round_table(values[:r])
            yield table, table.index_of(v)

    def _guard_digits(self) -> int:
        return len(str(self.k)) + 2  # ceil(log10 k) + 2 at least

    def _values_probability_rounds(self, values: tuple, dps: int, log: bool = False,
                                   rule: Optional[SelectionRule] = None) -> mpmath.mpf:
        """Per-round route: every round's value certified by ``rule`` (default: the round
        rule) to ``dps + g`` digits on its own level table, widened to a ball that
        certainly holds the true value, multiplied (summed for ``log``) in arb and
        certified to ``dps`` digits."""
        rule = self.round_rule if rule is None else rule
        digits = dps + self._guard_digits()
        one = rule.output_log_probability if log else rule.output_probability
        xs = [one(t, a, digits) for t, a in self._rounds(values)]

        def compute() -> arb:
            acc = arb(0) if log else arb(1)
            for x in xs:
                ball = relative_ball(x, digits)
                acc = acc + ball if log else acc * ball
            return acc

        return certify(compute, dps, extra_bits=self._extra_bits)

    # -- group hooks: a count sequence's probability, computed round by round -------------
    def groups_rule(self) -> None:
        """None: the groups (count sequences) have a law of their own, not one rule's levels."""
        return None

    def _group_probability(self, values: tuple, dps: int) -> mpmath.mpf:
        """Product of the per-round probabilities, certified to relative error ``10**-dps``
        (gumbel: the weight tree; exponential: per-round permute-and-flip tables)."""
        if self.noise == "gumbel":
            return self._tree_probability(values, dps, log=False)
        fast = peel_pnf_value(self.ranking.values, self._mult, values, self.scale, dps, False, self._extra_bits)
        return self._values_probability_rounds(values, dps) if fast is None else fast

    def _group_log_probability(self, values: tuple, dps: int) -> mpmath.mpf:
        """Sum of the per-round log-probabilities (arb enclosures, no cancellation: every
        term is ``<= 0``), certified to relative error ``10**-dps``."""
        if self.noise == "gumbel":
            return self._tree_probability(values, dps, log=True)
        fast = peel_pnf_value(self.ranking.values, self._mult, values, self.scale, dps, True, self._extra_bits)
        return self._values_probability_rounds(values, dps, log=True) if fast is None else fast

    def _group_probability_exact(self, values: tuple) -> sympy.Expr:
        """Product of the rules' exact per-round probabilities (a Rational with ``base``);
        :class:`~exactdp.errors.NoClosedFormError` when a round has no closed form, or
        when the rounds' symbolic sums together would have more than
        :data:`~exactdp.rules.exponential.SYMBOLIC_LEVELS_LIMIT` terms (checked before any
        is built: each term costs milliseconds in sympy, so ``k`` rounds of just under the
        per-round limit would otherwise run for many minutes)."""
        if self.noise == "gumbel" and not self.scale.is_rational:
            self._check_symbolic_terms(values)
        out = sympy.Integer(1)
        for t, a in self._rounds(values):
            out = out * self.round_rule.output_probability_exact(t, a)
        return out

    def _check_symbolic_terms(self, values: tuple) -> None:
        """Refuse (:class:`~exactdp.errors.NoClosedFormError`) a symbolic closed form whose
        ``k`` per-round sums have more than ``SYMBOLIC_LEVELS_LIMIT`` terms in all: round
        ``r`` sums over the distinct counts still present after ``values[:r]``."""
        limit = _exponential.SYMBOLIC_LEVELS_LIMIT
        mult = dict(zip(self.ranking.values, self._mult))
        present, used, total = len(mult), Counter(), 0
        for v in values:
            total += present
            if total > limit:
                raise NoClosedFormError(
                    None, None,
                    f"probability_exact: the {self.k} rounds' exponential sums would have more "
                    f"than {limit} terms in all (SYMBOLIC_LEVELS_LIMIT = {limit}, "
                    f"exactdp.rules.exponential.SYMBOLIC_LEVELS_LIMIT); use "
                    f"probability(output, dps=...), or a rational base=... for an exact Rational",
                )
            used[v] += 1
            if used[v] == mult[v]:
                present -= 1

    def level_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(Level, probability that the output lies in it)``: one output's probability
        times the level's multiplicity (exact), for every count sequence, certified to
        ``dps`` digits (``None``: the default, 30)."""
        return [(lv, times_int(p, lv.multiplicity)) for lv, p in self.level_output_probabilities(dps)]

    def round_levels(self, prefix: OutputLike = ()) -> tuple[Level, ...]:
        """Levels of the next round's selection after the items of ``prefix`` were chosen:
        ``Level(count, number of remaining items with that count)``, best first."""
        p = as_sequence_prefix(prefix, self.d, self.k)
        return self._round_table([self.counts[i] for i in p]).levels

    def round_distribution(self, prefix: OutputLike = (), dps: Optional[int] = None) -> list[tuple[int, mpmath.mpf]]:
        """``(item, probability)`` of the next round for every remaining item (ids
        ascending), each certified to ``10**-dps``, given the chosen ``prefix``."""
        p = as_sequence_prefix(prefix, self.d, self.k)
        digits = as_dps(dps)
        table = self._round_table([self.counts[i] for i in p])
        per = [self.round_rule.output_probability(table, a, digits) for a in range(len(table))]
        chosen = set(p)
        return [(i, per[table.index_of(c)]) for i, c in enumerate(self.counts) if i not in chosen]

    # -- Mechanism hooks ----------------------------------------------------------------------
    def _utility(self, output: Output) -> tuple[int, ...]:
        return tuple(self.counts[i] for i in output)

    def _compute_levels(self) -> list[Level]:
        """:meth:`_count_sequences` collected, refused past :data:`PEELING_LEVELS_LIMIT`
        before any is built (their number counted first by :meth:`_level_count`); a
        refusal is remembered."""
        limit = PEELING_LEVELS_LIMIT
        if self._levels_refused == limit or self._level_count(cap=limit) > limit:
            self._refuse_levels(limit)
        return list(self._count_sequences())

    def _level_count(self, cap: Optional[int] = None) -> int:
        """The number of levels (words of length ``k`` over the distinct counts, each used at most
        as often as it occurs), exact, without building them; ``cap + 1`` past ``cap``.

        >>> Peeling([5, 3, 3, 0], 2)._level_count()     # all pairs of counts but (5, 5), (0, 0)
        7
        """
        return count_words(self._mult, self.k, cap)

    def _refuse_levels(self, limit: int) -> NoReturn:
        self._levels_refused = limit
        raise TooManyOutputsError(
            None, None,
            f"Peeling has more than PEELING_LEVELS_LIMIT = {limit} levels "
            "(distinct count sequences); use iter_levels() (streamed, no limit), probability(), "
            "sample() or round_distribution(), or raise "
            "exactdp.mechanisms.peeling.mechanism.PEELING_LEVELS_LIMIT to build them all",
        )

    def _count_sequences(self) -> Iterator[Level]:
        """Count sequences in lexicographically decreasing order with their multiplicities
        (``prod_r`` number of remaining items with count ``c_r``), one at a time.

        An iterative depth-first walk over the distinct counts (no recursion limit for
        large k): ``choice[r]`` is the index of the value picked at round ``r``,
        ``mult[r]`` the multiplicity so far, ``avail`` the items left per value.  It holds
        ``O(k + #counts)`` integers whatever the number of levels, so
        :meth:`iter_levels` can stream any number of them.
        """
        values = self.ranking.values
        avail = list(self._mult)
        k, n = self.k, len(values)
        choice: list[int] = []
        mult = [1]
        nxt = 0  # next value index to try at the current depth
        while True:
            if len(choice) == k:
                yield Level(tuple(values[i] for i in choice), mult[-1])
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
                return
            last = choice.pop()
            mult.pop()
            avail[last] += 1
            nxt = last + 1

    def iter_levels(self) -> Iterator[Level]:
        """The levels of :meth:`levels` (count sequences, best first), streamed depth first with
        ``O(k + #counts)`` integers held, so without :data:`PEELING_LEVELS_LIMIT`.

        >>> next(Peeling(list(range(30)), 4, epsilon=1).iter_levels())   # of 657,720
        Level(utility=(29, 28, 27, 26), multiplicity=1)
        """
        if self._table is not None:
            return iter(self._table.levels)
        return self._count_sequences()

    def iter_level_probabilities(self, dps: Optional[int] = None) -> Iterator[tuple[Level, mpmath.mpf]]:
        """The pairs of :meth:`level_probabilities`, streamed as :meth:`iter_levels`: each
        level's probability is one output's (:meth:`probability` of its count sequence,
        certified to relative error ``10**-dps``) times its exact multiplicity, so the
        digits are those of the list."""
        digits = as_dps(dps)  # validated now, not at the first next()
        return ((lv, times_int(self._group_probability(lv.utility, digits), lv.multiplicity))
                for lv in self.iter_levels())

    def _unrank(self, a: int, r: int) -> tuple[int, ...]:
        """The ``r``-th sequence with count sequence ``levels()[a]``: mixed-radix digits,
        round 1 least significant, each picking among the not-yet-used items with the
        round's count (ids ascending)."""
        values = self.table.utilities[a]
        used: dict[int, list[int]] = {}
        out = []
        for v in values:
            lv = self._value_index(v)
            taken = used.setdefault(lv, [])
            r, digit = divmod(r, self._mult[lv] - len(taken))
            out.append(self._take(lv, digit, taken))
        if r:  # pragma: no cover
            raise AssertionError("rank beyond the level's multiplicity")
        return tuple(out)

    def _take(self, a: int, r: int, taken: list[int]) -> int:
        """The ``r``-th (0-based) not yet taken item of distinct count ``a`` (ids
        ascending); ``taken`` (sorted positions within the count's items) gains it."""
        pos = nth_free(taken, r)
        taken.insert(bisect_left(taken, pos), pos)
        # index the ranking directly: a slice would copy the whole count's items per pick
        return self.ranking.order[(self.ranking.cumulative[a - 1] if a else 0) + pos]

    # -- sampling from the sequence (no level table) --------------------------------------
    def support_size(self) -> int:
        """``d!/(d-k)!``: every sequence of distinct items has positive probability."""
        return math.perm(self.d, self.k)

    def _sample(self, gen: random.Random) -> tuple[int, ...]:
        """One exact draw, round by round over the weight tree (:mod:`~exactdp.mechanisms.peeling.sampling`)."""
        return sample_many(self, 1, gen)[0]

    def _samples(self, n: int, gen: random.Random) -> list[tuple[int, ...]]:
        """Exactly the draws of ``n`` calls of :meth:`sample` with ``gen``, with the set-up shared."""
        return sample_many(self, n, gen)

    # -- set outputs ---------------------------------------------------------------------
    def as_sets(self) -> PeelingSetMarginal:
        """This mechanism read as k-subsets (:class:`~exactdp.mechanisms.set_marginal.PeelingSetMarginal`):
        ``P(S)`` sums the ``k!`` orderings of ``S`` by a dynamic programme over its subsets,
        either noise; certify a sampler returning sets against it.

        >>> Peeling([10, 5, 1, 1], 2, base=Fraction(1, 2)).as_sets().probability_exact({0, 1})
        544768/612945
        """
        return PeelingSetMarginal(self)
