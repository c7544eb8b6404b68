"""Set outputs of the sequence mechanisms: the exact marginal of a top-k sequence mechanism over k-subsets.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, *A Joint Exponential Mechanism for
Differentially Private Top-k* (ICML 2022, arXiv:2201.12333): Joint and PNFJoint
(Algorithm 1, Appendix D's Algorithm 5, the Lemma 3.7 count restricted to a set) and the
peeling baselines of Section 4.1 (Algorithms 2 and 3, Lemma 4.1).

A sequence mechanism (Joint, PNFJoint, Peeling) read as *sets* outputs ``S`` with
probability ``P(S) = sum over the k! orderings σ of S of P(σ)``.  Contract: ``as_sets()``
returns one of the views below, an ordinary :class:`~exactdp.core.mechanism.Mechanism`
with ``output_kind == "set"``.  Its probability groups are the count multisets of ``S``
(:meth:`SetMarginal.utility`), listed only when asked for and refused past
:data:`SET_GROUPS_LIMIT`.  ``P(S)`` never enumerates the ``k!`` orderings: for Joint and
PNFJoint a sweep of ``N_S(M) = prod_{r<k} (|A_r(M)| - r)`` (``O(k^2)`` big-integer steps),
for Peeling a dynamic programme over count multiplicity vectors (at most ``2^k`` states,
refused past :data:`SET_STATES_LIMIT`); every term is non-negative, certified to
``10**-dps`` (:func:`~exactdp.core.precision.certify`), the log near ``P = 1`` as
``log1p(-Q)``.  Proofs: docs/set_marginal.md, section "The marginal, step by step
(set_marginal)".

>>> from fractions import Fraction
>>> from exactdp import Joint
>>> s = Joint([10, 5, 1, 1], 2, base=Fraction(1, 2)).as_sets()
>>> s.probability_exact({0, 1})      # P((0, 1)) + P((1, 0))
88/105
>>> s.groups()
(Level(utility=(10, 5), multiplicity=1), Level(utility=(10, 1), multiplicity=2), Level(utility=(5, 1), multiplicity=2), Level(utility=(1, 1), multiplicity=1))
"""

from __future__ import annotations

import abc
import math
import random
from bisect import bisect_left
from collections import Counter
from fractions import Fraction
from itertools import product
from typing import Any, Callable, Hashable, Iterator, Optional, Sequence

import mpmath
import numpy as np
from flint import arb

from ..core.lazy import sympy
from ..core.combinatorics import unrank_combination
from ..core.levels import Level
from ..core.mechanism import Mechanism
from ..core.precision import certify, rational_ball, relative_ball, times_int
from ..errors import InputLimitError, TooManyOutputsError

__all__ = ["SetMarginal", "JointSetMarginal", "PeelingSetMarginal", "SET_GROUPS_LIMIT", "SET_STATES_LIMIT"]

#: ``groups()`` / ``levels()`` of a set view (count multisets) refuse to list more than this.
SET_GROUPS_LIMIT = 10**6
#: Peeling's set marginal refuses a subset dynamic programme of more states than this
#: (``prod_v (m_v + 1)`` over the counts ``v`` of the set, ``2**k`` for distinct counts).
SET_STATES_LIMIT = 2**14
#: Probabilities kept per view (keyed by count multiset and digits).
_CACHE = 4096


class SetMarginal(Mechanism):
    """A sequence mechanism read as k-subsets: ``P(S) = sum over the orderings of S``.

    Built by ``mechanism.as_sets()``; ``sequence_mechanism`` is the mechanism read.  A
    subclass gives :meth:`_orderings` (the number of orderings of a set in each probability
    group of the sequence mechanism) and may give a faster :meth:`_probability_ball`.
    """

    output_kind = "set"

    def __init__(self, sequence_mechanism: Mechanism) -> None:
        super().__init__(sequence_mechanism.counts, sequence_mechanism.k)
        #: the sequence mechanism whose set marginal this is
        self.sequence_mechanism = sequence_mechanism
        self.scale = sequence_mechanism.scale
        self._cache: dict[tuple, Any] = {}

    def __repr__(self) -> str:
        return f"{self.sequence_mechanism!r}.as_sets()"

    def _parameters(self) -> dict[str, object]:
        return self.sequence_mechanism._parameters()

    # -- what a subclass gives --------------------------------------------------------------
    @abc.abstractmethod
    def _orderings(self, key: tuple) -> dict[Hashable, int]:
        """``{group key of the sequence mechanism: number of orderings of one set with count
        multiset key in that group}`` (groups without an ordering left out)."""

    def _ordering_count(self, key: tuple, group: Hashable) -> int:
        """Orderings of one set with count multiset ``key`` in the sequence group ``group``."""
        return self._cached("orderings", key, 0, lambda: self._orderings(key)).get(group, 0)

    def _probability_ball(self, key: tuple, digits: int) -> Callable[[], arb]:
        """A function giving, at flint's current precision, a ball holding ``P(S)``, from
        the sequence mechanism's per-group probabilities certified to ``digits`` digits."""
        seq = self.sequence_mechanism
        terms = [(n, seq._group_probability(g, digits)) for g, n in self._orderings(key).items()]
        return lambda: sum((arb(n) * relative_ball(p, digits) for n, p in terms), arb(0))

    def _probability_exact_key(self, key: tuple) -> sympy.Expr:
        seq = self.sequence_mechanism
        return sympy.Add(*[n * seq._group_probability_exact(g) for g, n in self._orderings(key).items()])

    # -- the groups: count multisets ------------------------------------------------------------
    def groups_rule(self) -> None:
        """None: the groups (count multisets) have a law of their own, not one rule's levels."""
        return None

    def _key(self, output: Sequence[int]) -> tuple:
        return tuple(sorted((self.counts[i] for i in output), reverse=True))

    def _group_key(self, output: Any) -> tuple:
        return self._key(output)

    def _utility(self, output: Any) -> tuple:
        """The multiset of counts of the set, decreasing (what its probability depends on)."""
        return self._key(output)

    def _compute_levels(self) -> list[Level]:
        """Every count multiset of a k-subset, lexicographically decreasing, with its number
        of subsets ``prod_v C(n_v, m_v)``; refuses past :data:`SET_GROUPS_LIMIT`."""
        values, mult = self.ranking.values, self._multiplicities()
        suffix = [0] * (len(values) + 1)  # items of count values[j:]
        for j in range(len(values) - 1, -1, -1):
            suffix[j] = suffix[j + 1] + mult[j]
        n = len(values)

        def choices(start: int, left: int) -> Iterator[tuple[int, int]]:
            """``(j, m)``: ``m`` items of count ``values[j]``, ``j >= start``, in output order."""
            for j in range(start, n):
                if suffix[j] < left:
                    return
                for m in range(min(mult[j], left), 0, -1):
                    yield j, m

        # a depth-first walk with an explicit stack (one frame per distinct count taken: a
        # recursion would pass Python's limit at k of about a thousand distinct counts)
        out: list[Level] = []
        key: list[int] = []
        frames = [(choices(0, self.k), self.k, 1)]  # (choices left, items left, size so far)
        taken: list[int] = []  # m of every frame below the first
        while frames:
            step = next(frames[-1][0], None)
            if step is None:
                frames.pop()
                if frames:
                    del key[len(key) - taken.pop():]
                continue
            j, m = step
            _, left, size = frames[-1]
            size *= math.comb(mult[j], m)
            if left == m:
                if len(out) >= SET_GROUPS_LIMIT:
                    raise TooManyOutputsError(
                        None, None,
                        f"the set view has more than SET_GROUPS_LIMIT = {SET_GROUPS_LIMIT} groups (count "
                        "multisets); raise exactdp.mechanisms.set_marginal.SET_GROUPS_LIMIT, or use "
                        "probability(), probability_exact() and sample(), which never list them",
                    )
                out.append(Level(tuple(key) + (values[j],) * m, size))
                continue
            key += [values[j]] * m
            taken.append(m)
            frames.append((choices(j + 1, left - m), left - m, size))
        return out

    def _multiplicities(self) -> list[int]:
        cum = self.ranking.cumulative
        return [b - a for a, b in zip((0,) + cum, cum)]

    def _unrank(self, a: int, r: int) -> frozenset[int]:
        """The ``r``-th set of group ``a``: mixed-radix digits over the counts of the group,
        each a combination (colex) of the items with that count."""
        key = self.table.utilities[a]
        cum, order = self.ranking.cumulative, self.ranking.order
        index = {v: j for j, v in enumerate(self.ranking.values)}
        out = []
        for v, m in Counter(key).items():
            j = index[v]
            first = cum[j - 1] if j else 0
            n = cum[j] - first
            r, digit = divmod(r, math.comb(n, m))
            out += [order[first + x] for x in unrank_combination(digit, n, m)]
        return frozenset(out)

    def support_size(self) -> int:
        """``C(d, k)``: every sequence has positive probability, so every set does."""
        return math.comb(self.d, self.k)

    def level_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(Level, probability that the output lies in it)``: one set's probability times
        the group's size (exact), for every count multiset, certified to ``dps`` digits
        (``None``: the default, 30)."""
        return [(lv, times_int(p, lv.multiplicity)) for lv, p in self.level_output_probabilities(dps)]

    # -- probabilities --------------------------------------------------------------------------
    def _guard_digits(self) -> int:
        return len(str(self.k)) + 3

    def _cached(self, name: str, key: tuple, dps: int, compute: Callable[[], Any]) -> Any:
        slot = (name, key, dps)
        value = self._cache.get(slot)
        if value is None:
            if len(self._cache) >= _CACHE:
                self._cache.clear()
            value = self._cache[slot] = compute()
        return value

    def _group_probability(self, key: tuple, dps: int) -> mpmath.mpf:
        """``sum over orderings``, certified to relative error ``10**-dps``."""
        def compute() -> mpmath.mpf:
            ball = self._probability_ball(key, dps + self._guard_digits())
            return certify(ball, dps, extra_bits=2 * self.k.bit_length() + 8)

        return self._cached("p", key, dps, compute)

    def _group_log_probability(self, key: tuple, dps: int) -> mpmath.mpf:
        """``log P`` for ``P <= 1/2``; ``log1p(-Q)`` from the complement otherwise (module
        docstring), certified to relative error ``10**-dps``."""
        def compute() -> mpmath.mpf:
            digits = dps + self._guard_digits()
            ball = self._probability_ball(key, digits)
            extra = 2 * self.k.bit_length() + 8
            if certify(ball, 2) <= 0.4:  # then P < 1/2 certainly: log P has |log P| > log 2
                return certify(lambda: ball().log(), dps, extra_bits=extra)
            complement = self._complement_ball(key, digits)
            return certify(lambda: (-complement()).log1p(), dps, extra_bits=extra)

        return self._cached("log", key, dps, compute)

    def _complement_ball(self, key: tuple, digits: int) -> Callable[[], arb]:
        """``Q = 1 - P(S)`` as ``sum_g P(group g) (m_g - n_g) / m_g`` over the sequence
        mechanism's groups (levels), non-negative terms only."""
        terms = []
        for level, p in self.sequence_mechanism.iter_level_probabilities(digits):
            left = level.multiplicity - self._ordering_count(key, level.utility)
            if left:
                terms.append((Fraction(left, level.multiplicity), p))
        return lambda: sum((rational_ball(f) * relative_ball(p, digits) for f, p in terms), arb(0))

    def _group_probability_exact(self, key: tuple) -> sympy.Expr:
        """The sum over orderings of the sequence mechanism's exact probabilities (a
        Rational with a rational ``base``)."""
        if self.k == self.d:  # the one set holds every sequence: exactly 1, which sympy need not see in the sum
            return sympy.Integer(1)
        return self._cached("exact", key, 0, lambda: self._probability_exact_key(key))

    # -- sampling: a sequence, read as a set ------------------------------------------------------
    def _sample(self, gen: random.Random) -> frozenset[int]:
        return frozenset(self.sequence_mechanism._sample(gen))

    def _samples(self, n: int, gen: random.Random) -> list[frozenset[int]]:
        return [frozenset(s) for s in self.sequence_mechanism._samples(n, gen)]

    def _samples_array(self, n: int, gen: random.Random) -> np.ndarray:
        return np.sort(self.sequence_mechanism._samples_array(n, gen), axis=1)


class JointSetMarginal(SetMarginal):
    """Joint or PNFJoint read as k-subsets (docs/set_marginal.md: the orderings of a set per
    level by the product formula, the per-sequence probability from the mechanism's rule)."""

    def _orderings(self, key: tuple) -> dict[Hashable, int]:
        """``{utility -M: orderings of S at level exactly M}`` by a sweep over ``M``."""
        k = self.k
        top = self.ranking.sorted_counts[:k]
        asc = sorted(key)
        # the level of the best ordering (S in decreasing count): from there on every factor
        # |A_r| - r is >= 1, so the product is updated by exact divisions
        m0 = max(c - s for c, s in zip(top, key))
        size = [k - bisect_left(asc, c - m0) for c in top]  # |A_r(m0)|
        distinct = sorted(set(key))
        # (M, r, |A_r(M)|) at every M > m0 where row r gains the items of count c_(r) - M
        events = sorted((c - v, r, k - bisect_left(asc, v))
                        for r, c in enumerate(top) for v in distinct if c - v > m0)
        total = math.prod(a - r for r, a in enumerate(size))  # N_S(m0)
        out: dict[Hashable, int] = {}
        below, current = 0, m0  # N_S just below the current level, the current level
        for M, r, a in events:
            if M != current:
                out[-current] = total - below
                below, current = total, M
            if a > size[r]:
                total = total // (size[r] - r) * (a - r)
                size[r] = a
        out[-current] = total - below
        return {u: n for u, n in out.items() if n}


class PeelingSetMarginal(SetMarginal):
    """Peeling read as k-subsets, for every noise Peeling takes (docs/set_marginal.md: a dynamic
    programme over the count multiplicity vectors below the set's, each step one round's
    probability from Peeling's per-round rule on the remaining counts)."""

    def _shape(self, key: tuple) -> tuple[list[int], list[int]]:
        """The distinct counts of the set (decreasing) and how many of each; refuses a
        programme of more than :data:`SET_STATES_LIMIT` states."""
        tally = Counter(key)
        values = sorted(tally, reverse=True)
        mult = [tally[v] for v in values]
        states = math.prod(m + 1 for m in mult)
        if states > SET_STATES_LIMIT:
            raise InputLimitError(
                "k", self.k,
                f"Peeling's set marginal of a set with counts {_short(key)} needs {states} states of its "
                f"subset programme, above SET_STATES_LIMIT = {SET_STATES_LIMIT} (about 2**k for distinct "
                "counts); raise exactdp.mechanisms.set_marginal.SET_STATES_LIMIT to allow a slower run",
                limit=SET_STATES_LIMIT,
            )
        return values, mult

    def _programme(self, key: tuple, step: Callable[[tuple, int], Any], zero: Any, one: Any) -> Any:
        """``f(m)`` by ``f(t) = sum_v t_v f(t - e_v) step(counts removed at t - e_v, v)``,
        ``f(0) = one``, over the vectors ``t <= m`` in lexicographic order (so ``t - e_v``
        comes before ``t``)."""
        values, mult = self._shape(key)
        f: dict[tuple, Any] = {}
        for t in product(*(range(m + 1) for m in mult)):
            if not any(t):
                f[t] = one
                continue
            acc = zero
            for j, v in enumerate(values):
                if t[j]:
                    prev = t[:j] + (t[j] - 1,) + t[j + 1:]
                    removed = tuple(x for x, n in zip(values, prev) for _ in range(n))
                    acc = acc + t[j] * f[prev] * step(removed, v)
            f[t] = acc
        return f[tuple(mult)]

    def _round(self, removed: tuple, v: int) -> tuple[Any, int]:
        table = self.sequence_mechanism._round_table(removed)
        return table, table.index_of(v)

    def _gumbel_balls(self, key: tuple) -> Callable[[], tuple[arb, arb]]:
        """Gumbel noise: balls of ``P(S)`` and ``Q = 1 - P(S)`` at flint's current precision
        from the relative weights ``e_c`` of the counts (the exponential mechanism per
        round: ``q(t, v) = e_v / W(t)``).  ``W(t) = W_out + sum_v (m_v - t_v) e_v`` is the
        weight left after removing ``t`` (``W_out``: the items outside ``S``, summed over the
        counts); ``f(t)`` is the probability that the first ``|t|`` picks are one given subset
        of ``S`` with profile ``t``, and ``Q = sum_{t != m} prod_j C(m_j, t_j) f(t) W_out / W(t)``,
        the probability that the first item outside ``S`` comes right after such a subset.  Sums of non-negative balls only."""
        values, mult = self._shape(key)
        full = tuple(mult)
        tally = dict(zip(values, mult))
        where = {v: a for a, v in enumerate(self.ranking.values)}
        sizes = self._multiplicities()

        def compute() -> tuple[arb, arb]:
            e = self.sequence_mechanism._round_table(()).relative_weights()
            w_out = arb(0)
            for a, (v, n) in enumerate(zip(self.ranking.values, sizes)):
                if n > tally.get(v, 0):
                    w_out += (n - tally.get(v, 0)) * e[a]
            ev = [e[where[v]] for v in values]
            f: dict[tuple, arb] = {}
            left: dict[tuple, arb] = {}
            out = arb(0)
            for t in product(*(range(m + 1) for m in mult)):
                left[t] = w_out + sum(((m - x) * w for m, x, w in zip(mult, t, ev)), arb(0))
                acc = arb(0) if any(t) else arb(1)
                for j, x in enumerate(t):
                    if x:
                        prev = t[:j] + (x - 1,) + t[j + 1:]
                        acc += x * f[prev] * ev[j] / left[prev]
                f[t] = acc
                if t != full:
                    # f(t) is for one subset T of S with profile t; every such subset can be
                    # what was picked before the first item outside S
                    ways = math.prod(math.comb(m, x) for m, x in zip(mult, t))
                    out += ways * acc * w_out / left[t]
            return f[full], out

        return compute

    def _complement_ball(self, key: tuple, digits: int) -> Callable[[], arb]:
        if self.sequence_mechanism.noise == "gumbel":
            balls = self._gumbel_balls(key)
            return lambda: balls()[1]
        return super()._complement_ball(key, digits)

    def _probability_ball(self, key: tuple, digits: int) -> Callable[[], arb]:
        if self.sequence_mechanism.noise == "gumbel":
            balls = self._gumbel_balls(key)
            return lambda: balls()[0]
        rule = self.sequence_mechanism.round_rule
        q: dict[tuple, mpmath.mpf] = {}

        def certified(removed: tuple, v: int) -> int:  # first pass: every round value once
            if (removed, v) not in q:
                q[removed, v] = rule.output_probability(*self._round(removed, v), digits)
            return 0

        self._programme(key, certified, 0, 0)
        return lambda: self._programme(key, lambda removed, v: relative_ball(q[removed, v], digits), arb(0), arb(1))

    def _probability_exact_key(self, key: tuple) -> sympy.Expr:
        rule = self.sequence_mechanism.round_rule
        return self._programme(key, lambda removed, v: rule.output_probability_exact(*self._round(removed, v)),
                               sympy.Integer(0), sympy.Integer(1))

    def _orderings(self, key: tuple) -> dict[Hashable, int]:
        raise AssertionError("Peeling's set marginal counts orderings per count sequence")  # pragma: no cover

    def _ordering_count(self, key: tuple, group: Hashable) -> int:
        """A count sequence that is an ordering of the set's counts holds ``prod_v m_v!``
        of its orderings (the items of equal count permuted), any other none."""
        if tuple(sorted(group, reverse=True)) != key:  # type: ignore[call-overload]
            return 0
        return math.prod(math.factorial(m) for m in Counter(key).values())


def _short(key: tuple) -> str:
    text = repr(list(key))
    return text if len(text) <= 60 else text[:57] + "...]"
