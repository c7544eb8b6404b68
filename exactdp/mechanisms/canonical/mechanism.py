"""Canonical: the canonical loss over utility classes of k-subsets (Lipschitz mechanism).

Paper: *Differentially Private Top-k Selection via Canonical Lipschitz Mechanism*
(arXiv:2201.13376, Definition 3.4, Theorem 3.5, Section 2.1); the definitions of
docs/definitions.md §2.4 are authoritative and are what this module implements.

Every k-subset lies in one class ``(h, t)`` (``h`` leading top ranks, lowest rank ``t``;
``(k-1, k)`` the exact top-k) of ``C(t-h-2, k-h-1)`` members, with the loss
``(1-rho)(x_(h+1) - x_(k)) + rho(x_(k) - x_(t))`` (0 for the top-k; ``rho`` an exact
rational in [0, 1], default 1/2), free of the tie rule.  Contract: ``utility(S) =
-loss(S)`` (:meth:`Canonical.loss` gives the loss) and ``levels()`` are the distinct
utilities with their numbers of subsets, best first; ``noise="gumbel"`` is the exponential
mechanism ``P(S) ∝ exp(-eps*loss(S))``, ``noise="exponential"`` permute-and-flip
(``base=b``: ``b`` per unit of loss); :class:`CanonicalFamily` the classes, shared with the
two-stage :class:`~exactdp.mechanisms.canonical.gamma1.CanonicalGamma1`.  Step by step:
docs/canonical.md, section "Classes, loss and selection (canonical.mechanism)".

>>> m = Canonical([10, 5, 1, 1], 2, epsilon=1)
>>> for c in m.classes():
...     print(c)
UtilityClass(h=1, t=2, size=1, loss=0)
UtilityClass(h=0, t=3, size=1, loss=Fraction(9, 2))
UtilityClass(h=0, t=4, size=2, loss=Fraction(9, 2))
UtilityClass(h=1, t=3, size=1, loss=2)
UtilityClass(h=1, t=4, size=1, loss=2)
>>> m.levels()
(Level(utility=0, multiplicity=1), Level(utility=-2, multiplicity=2), Level(utility=Fraction(-9, 2), multiplicity=3))
>>> m.probability_exact({0, 1})
1/(3*exp(-9/2) + 2*exp(-2) + 1)
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from fractions import Fraction
from typing import Any, Iterable, Iterator, NamedTuple, Optional, SupportsIndex, Union

import gmpy2
import mpmath

from ...core.lazy import sympy
from ...core.aliases import CountsLike, ExactRational, Output, OutputLike, RationalLike
from ...core.combinatorics import unrank_combination
from ...core.level_blocks import DEFAULT_MEMORY_BUDGET, BlockLevelTable
from ...core.level_stream import levels_read, stream_level_bytes, stream_table, streamed_levels
from ...core.levels import Level
from ...core.mechanism import Mechanism, make_scale
from ...core.precision import prec_for_dps, times_int
from ...core.ranking import Ranking
from ...core.validation import as_dps, as_index, as_memory_budget, as_rho
from ...errors import InvalidParameterError, NoClosedFormError, NotSingleRuleError
from ...rules.noise import as_noise, rule_for_noise
from .arrays import CanonicalLevelArrayBlock, iter_level_arrays as _iter_level_arrays

__all__ = [
    "Canonical",
    "CanonicalFamily",
    "CanonicalClasses",
    "UtilityClass",
    "NotSingleRuleError",
    "CANONICAL_SYMBOLIC_BITS_LIMIT",
    "check_symbolic_bits",
]

#: ``probability_exact`` with a rational ``base`` and fractional losses (so the closed form
#: holds powers ``base**(loss)`` with non-integral exponents, which sympy expands into an
#: exact rational times a root): at most this many bits in all those rationals together,
#: estimated exactly as ``sum of ceil(loss) * max(bits of base's numerator, denominator)``
#: before anything is built.  Beyond: :class:`~exactdp.errors.NoClosedFormError`.
CANONICAL_SYMBOLIC_BITS_LIMIT = 1 << 22




# --------------------------------------------------------------------------------------
# the class structure (shared by Canonical and CanonicalGamma1)
# --------------------------------------------------------------------------------------
class UtilityClass(NamedTuple):
    """One utility class: ``h`` leading top ranks, lowest rank ``t`` (1-based), its exact
    number of subsets ``size`` and its exact ``loss`` (an ``int`` when integral, else a
    ``Fraction``)."""

    h: int
    t: int
    size: int
    loss: ExactRational


def _rational(num: int, den: int) -> ExactRational:
    """``num/den`` as an int when integral, else a Fraction."""
    if num % den == 0:
        return num // den
    return Fraction(num, den)


def check_symbolic_bits(base: Optional[Fraction], keys: Iterable[int], q: int) -> None:
    """Raise :class:`NoClosedFormError` when a closed form with the powers
    ``base**(key/q)`` (``key`` over ``keys``) and a fractional exponent would exceed
    :data:`CANONICAL_SYMBOLIC_BITS_LIMIT` bits; exact integer arithmetic, nothing built.
    Nothing to check with ``epsilon`` (``exp(-eps*loss)`` stays symbolic, whatever its size)
    or when every exponent is integral (the exact-rational limits of the rules apply)."""
    if base is None:
        return
    keys = list(keys)
    if all(key % q == 0 for key in keys):
        return
    width = max(base.numerator.bit_length(), base.denominator.bit_length())
    bits = width * sum(-(-key // q) for key in keys)
    if bits > CANONICAL_SYMBOLIC_BITS_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: the closed form holds powers base**(loss) with fractional "
            f"losses needing about {bits} bits of exact rationals (limit "
            f"CANONICAL_SYMBOLIC_BITS_LIMIT = {CANONICAL_SYMBOLIC_BITS_LIMIT}; raise "
            f"exactdp.mechanisms.canonical.mechanism.CANONICAL_SYMBOLIC_BITS_LIMIT to allow more); use "
            f"probability(output, dps=...), or a rho making every loss integral",
        )


class CanonicalClasses:
    """The classes ``(h, t)`` of docs/definitions.md §2.4 over a ranking, with exact sizes and losses.

    Losses are handled as exact integers ``key = q * loss`` where ``rho = p/q``:
    ``key(h, t) = A_h + B_t`` with ``A_h = (q-p)(x_(h+1) - x_(k)) >= 0`` (non-increasing in
    ``h``) and ``B_t = p(x_(k) - x_(t)) >= 0`` (non-decreasing in ``t``).  Consecutive tails
    with equal ``B_t`` form a *run*; the classes ``(h, t1..t2)`` of one run share a loss and
    together hold ``C(t2-h-1, k-h) - C(t1-h-2, k-h)`` subsets (hockey stick:
    ``sum_{t=k+1}^{T} C(t-h-2, k-h-1) = C(T-h-1, k-h)``), so the levels cost one pass over
    ``k x (number of runs)`` terms, never an enumeration of subsets.

    ``ranking``: the :class:`~exactdp.core.ranking.Ranking` of the counts; ``k``: the
    subset size (validated by the caller, ``1 <= k <= d``); ``rho``: the exact rational
    in ``[0, 1]`` of the loss.
    """

    def __init__(self, ranking: Ranking, k: int, rho: Fraction):
        self.ranking = ranking
        self.d = d = ranking.d
        self.k = k
        self.rho = rho
        self.p, self.q = p, q = rho.numerator, rho.denominator
        x = ranking.sorted_counts
        self.x = x
        xk = x[k - 1]
        self.A = [(q - p) * (x[h] - xk) for h in range(k)]
        self.B = [p * (xk - x[t - 1]) for t in range(k + 1, d + 1)]  # index t - k - 1
        runs: list[list[int]] = []  # (B value, t1, t2), t ascending
        for i, bval in enumerate(self.B):
            t = k + 1 + i
            if runs and runs[-1][0] == bval:
                runs[-1][2] = t
            else:
                runs.append([bval, t, t])
        self.runs = [tuple(r) for r in runs]
        self._keys: Optional[list[int]] = None
        self._sizes: Optional[dict[int, int]] = None

    # -- single classes -----------------------------------------------------------------
    def is_class(self, h: int, t: int) -> bool:
        """Whether ``(h, t)`` (``h`` leading top ranks, lowest rank ``t``, 1-based) is a
        class: the top-k class ``(k-1, k)``, or ``0 <= h <= k-1`` and ``k+1 <= t <= d``."""
        k, d = self.k, self.d
        if (h, t) == (k - 1, k):
            return True
        return 0 <= h <= k - 1 and k + 1 <= t <= d

    def check_class(self, h: int, t: int) -> tuple[int, int]:
        """``(h, t)`` as ints when :meth:`is_class`; else
        :class:`~exactdp.errors.InvalidParameterError` (a bool or non-integer ``h`` or ``t``:
        :class:`~exactdp.errors.ArgumentTypeError`)."""
        h, t = as_index(h, "h"), as_index(t, "t")  # ints and numpy integers, never bools
        if not self.is_class(h, t):
            raise InvalidParameterError(
                "(h, t)", (h, t),
                f"not a utility class: need (h, t) = (k-1, k) = ({self.k - 1}, {self.k}) or "
                f"0 <= h <= k-1 = {self.k - 1} and k+1 = {self.k + 1} <= t <= d = {self.d}",
            )
        return h, t

    def key(self, h: int, t: int) -> int:
        """``q * loss(h, t)`` (an exact non-negative integer)."""
        if t == self.k:
            return 0
        return self.A[h] + self.B[t - self.k - 1]

    def loss(self, h: int, t: int) -> ExactRational:
        """The exact loss of class ``(h, t)`` (an ``int`` when integral, else a ``Fraction``;
        not checked, see :meth:`check_class`)."""
        return _rational(self.key(h, t), self.q)

    def size(self, h: int, t: int) -> int:
        """The exact number of subsets in class ``(h, t)`` (not checked, see
        :meth:`check_class`)."""
        if t == self.k:
            return 1
        return int(gmpy2.comb(t - h - 2, self.k - h - 1))

    def classify(self, ranks: Iterable[int]) -> tuple[int, int]:
        """The class ``(h, t)`` of a subset given by ``ranks``, its members' 0-based ranks
        (any order)."""
        rs = sorted(ranks)
        h = 0
        while h < len(rs) and rs[h] == h:
            h += 1
        if h == self.k:
            return self.k - 1, self.k
        return h, rs[-1] + 1

    def member(self, h: int, t: int, r: int) -> list[int]:
        """The ``r``-th subset (0-based ranks, ascending) of class ``(h, t)``:
        ``{1..h} ∪ B ∪ {t}`` with ``B`` the ``r``-th ``(k-h-1)``-subset of ranks
        ``h+2..t-1`` in colex order."""
        if t == self.k:
            return list(range(self.k))
        body = unrank_combination(r, t - h - 2, self.k - h - 1)
        return list(range(h)) + [h + 1 + c for c in body] + [t - 1]

    def iter_classes(self) -> Iterator[tuple[int, int]]:
        """Every class: the top-k class ``(k-1, k)`` first, then ``h = 0..k-1`` and, for
        each, ``t = k+1..d``."""
        yield self.k - 1, self.k
        for h in range(self.k):
            for t in range(self.k + 1, self.d + 1):
                yield h, t

    def iter_keys(self) -> Iterator[tuple[int, int, int, int]]:
        """``(h, t, size, key)`` for every class in :meth:`iter_classes` order; sizes by the
        exact recurrence ``C(n, m) = C(n-1, m) * n / (n - m)`` (gmpy2 integers)."""
        k, d = self.k, self.d
        yield k - 1, k, 1, 0
        divexact = gmpy2.divexact
        B = self.B
        if not B:  # k = d: the top-k class is the only one
            return
        for h in range(k):
            a_h = self.A[h]
            m = k - h - 1
            size = gmpy2.mpz(1)  # C(t-h-2, m) at t = k+1 is C(m, m)
            yield h, k + 1, size, a_h + B[0]
            for t in range(k + 2, d + 1):
                n = t - h - 2
                size = divexact(size * n, n - m)
                yield h, t, size, a_h + B[t - k - 1]

    # -- levels ---------------------------------------------------------------------------
    def level_sizes(self) -> tuple[list[int], dict[int, int]]:
        """Distinct loss keys ascending and the number of subsets having each."""
        if self._keys is None:
            k = self.k
            sizes: dict[int, Any] = {0: gmpy2.mpz(1)}
            comb = gmpy2.comb
            for h in range(k):
                a_h = self.A[h]
                r = k - h
                below = gmpy2.mpz(0)  # C(t1 - h - 2, k - h): subsets in (h, k+1..t1-1)
                for bval, t1, t2 in self.runs:
                    upto = comb(t2 - h - 1, r)
                    key = a_h + bval
                    got = sizes.get(key)
                    sizes[key] = upto - below if got is None else got + (upto - below)
                    below = upto
            self._keys = sorted(sizes)
            self._sizes = {key: int(m) for key, m in sizes.items()}
        return self._keys, self._sizes  # type: ignore[return-value]

    def iter_level_sizes(self, start: int = 0) -> Iterator[tuple[int, int]]:
        """``(key, number of subsets)`` for every distinct loss key ``>= start``, ascending,
        one at a time: :meth:`level_sizes` without its table of every key.  For each ``h``
        the keys ``A_h + B`` of its runs ascend (``B`` is non-decreasing), so a heap of
        ``k`` entries merges the ``k`` sequences in key order; each ``h`` starts at its
        first run with ``B >= start - A_h``, ``C(t1 - h - 2, k - h)`` subsets below it.
        Holds ``O(k)`` integers whatever the number of levels."""
        k, A, runs, comb = self.k, self.A, self.runs, gmpy2.comb
        values = [run[0] for run in runs]
        heap, below = [], [gmpy2.mpz(0)] * k
        for h in range(k):
            i = bisect_left(values, start - A[h])
            if i < len(runs):
                below[h] = comb(runs[i][1] - h - 2, k - h)
                heap.append((A[h] + runs[i][0], h, i))
        heapq.heapify(heap)
        key, size = (0, gmpy2.mpz(1)) if start <= 0 else (None, gmpy2.mpz(0))  # the top-k class
        while heap:
            got, h, i = heap[0]
            upto = comb(runs[i][2] - h - 1, k - h)
            if got != key:
                if key is not None:
                    yield key, int(size)
                key, size = got, upto - below[h]
            else:
                size += upto - below[h]
            below[h] = upto
            if i + 1 < len(runs):
                heapq.heapreplace(heap, (A[h] + runs[i + 1][0], h, i + 1))
            else:
                heapq.heappop(heap)
        if key is not None:
            yield key, int(size)

    def runs_of_key(self, key: int) -> Iterator[tuple[int, int, int, int]]:
        """``(h, t1, t2, number of subsets)`` for every run of classes with loss key
        ``key``: the top-k class ``(k-1, k, k, 1)`` first when ``key == 0``, then ``h``
        ascending.  ``O(k log d)``: for each ``h`` the tails with ``B_t = key - A_h`` are
        contiguous (``B`` is non-decreasing)."""
        k = self.k
        if key == 0:
            yield k - 1, k, k, 1
        for h in range(k):
            target = key - self.A[h]
            lo = bisect_left(self.B, target)
            hi = bisect_right(self.B, target)
            if lo < hi:
                t1, t2 = k + 1 + lo, k + hi
                n = int(gmpy2.comb(t2 - h - 1, k - h) - gmpy2.comb(t1 - h - 2, k - h))
                yield h, t1, t2, n

    def unrank_key(self, key: int, r: int) -> list[int]:
        """The ``r``-th subset (0-based ranks) among those with loss key ``key``: runs in
        the order of :meth:`runs_of_key`, tails ascending within a run, then
        :meth:`member` within the class."""
        k = self.k
        for h, t1, t2, n in self.runs_of_key(key):
            if r >= n:
                r -= n
                continue
            if t1 == k:
                return self.member(h, t1, 0)
            base = gmpy2.comb(t1 - h - 2, k - h)
            # smallest T in [t1, t2] with C(T-h-1, k-h) - base > r
            lo, hi = t1, t2
            while lo < hi:
                mid = (lo + hi) // 2
                if gmpy2.comb(mid - h - 1, k - h) - base > r:
                    hi = mid
                else:
                    lo = mid + 1
            r -= int(gmpy2.comb(lo - 1 - h - 1, k - h) - base)
            return self.member(h, lo, r)
        raise AssertionError("rank beyond the level's multiplicity")  # pragma: no cover


# --------------------------------------------------------------------------------------
# Canonical
# --------------------------------------------------------------------------------------
class CanonicalFamily(Mechanism):
    """What Canonical and CanonicalGamma1 share: k-subsets of the items of ``counts``
    (non-negative integers, one per item), ``k``, ``rho`` (default 1/2), the scale (one
    unit of loss weighs ``exp(-epsilon)``, ``epsilon`` defaulting to 1, or ``base``), the
    classes and the loss of a subset."""

    output_kind = "set"

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, rho: RationalLike = Fraction(1, 2)) -> None:
        super().__init__(counts, k)
        self.rho = as_rho(rho)
        self.scale = make_scale(epsilon, base, Fraction(1))
        self.classes_ = CanonicalClasses(self.ranking, self.k, self.rho)

    def _parameters(self) -> dict[str, object]:
        return {**super()._parameters(), "rho": self.rho}

    def support_size(self) -> int:
        """``C(d, k)``: every k-subset has positive probability."""
        return math.comb(self.d, self.k)

    def _class(self, output: Output) -> tuple[int, int]:
        """The class of a validated output."""
        return self.classes_.classify(self.ranking.rank_of[i] for i in output)

    def _member(self, h: int, t: int, r: int) -> frozenset[int]:
        """The ``r``-th member (item ids) of class ``(h, t)``."""
        order = self.ranking.order
        return frozenset(order[x] for x in self.classes_.member(h, t, r))

    def _utility(self, output: Output) -> ExactRational:
        return -self.classes_.loss(*self._class(output))

    def class_of(self, output: OutputLike) -> tuple[int, int]:
        """The class ``(h, t)`` (1-based ranks) of ``output``, a k-subset of item ids
        (validated)."""
        return self._class(self._check_output(output))

    def loss(self, output: OutputLike) -> ExactRational:
        """The exact canonical loss of ``output``, a k-subset of item ids (``int`` when
        integral, else ``Fraction``)."""
        return self.classes_.loss(*self.class_of(output))

    def classes(self) -> list[UtilityClass]:
        """Every class ``UtilityClass(h, t, size, loss)`` with exact size
        ``C(t-h-2, k-h-1)`` and exact loss: the top-k class ``(k-1, k)`` first, then
        ``h = 0..k-1`` and ``t = k+1..d``.  ``1 + k(d-k)`` classes; sizes sum to ``C(d, k)``."""
        return list(self.iter_classes())

    def iter_classes(self) -> Iterator[UtilityClass]:
        """:meth:`classes`, lazily."""
        q = self.classes_.q
        for h, t, size, key in self.classes_.iter_keys():
            yield UtilityClass(h, t, int(size), _rational(key, q))

    def class_size(self, h: int, t: int) -> int:
        """Exact number of subsets in class ``(h, t)``."""
        return self.classes_.size(*self.classes_.check_class(h, t))

    def class_loss(self, h: int, t: int) -> ExactRational:
        """Exact loss of class ``(h, t)``."""
        return self.classes_.loss(*self.classes_.check_class(h, t))

    def class_members(self, h: int, t: int) -> Iterator[frozenset[int]]:
        """Every subset (item ids) of class ``(h, t)``, in colex order of the body."""
        h, t = self.classes_.check_class(h, t)
        for r in range(self.classes_.size(h, t)):
            yield self._member(h, t, r)


class Canonical(CanonicalFamily):
    """The canonical Lipschitz mechanism over k-subsets (docs/definitions.md §2.4).

    ``Canonical(counts, k, epsilon=None, *, base=None, rho=Fraction(1, 2), noise="gumbel",
    memory_budget=None)``

    - ``epsilon`` (default 1) or ``base`` (exact rational in (0, 1), the weight of one unit
      of loss, replacing ``exp(-epsilon)``; exclusive with ``epsilon``);
    - ``rho``: exact rational in [0, 1] (strings such as ``"1/3"`` are exact);
    - ``noise``: ``"gumbel"`` (exponential mechanism, ``P(S) ∝ exp(-eps*loss(S))``) or
      ``"exponential"`` (permute-and-flip, ``p_S = exp(-eps*loss(S))``, the best loss being 0);
    - ``memory_budget``: bytes of levels the level table may keep at once (default
      :data:`~exactdp.core.level_blocks.DEFAULT_MEMORY_BUDGET`), as for Joint.

    Outputs are ``frozenset`` s of item ids.  ``utility(S) = -loss(S)``; every method of
    the public API (docs/definitions.md §3) is inherited from :class:`~exactdp.core.mechanism.Mechanism`, plus
    :meth:`classes`, :meth:`class_probability`, :meth:`class_probabilities`,
    :meth:`loss`, :meth:`class_of`.
    """

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, rho: RationalLike = Fraction(1, 2),
                 noise: str = "gumbel", memory_budget: Optional[Union[int, str]] = None) -> None:
        super().__init__(counts, k, epsilon, base=base, rho=rho)
        self.noise = as_noise(noise)
        self.rule = rule_for_noise(self.noise)
        #: Bytes of levels the level table may keep at once (blocks past it are recomputed;
        #: ``levels()``, all at once, refuses past it).
        self.memory_budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else as_memory_budget(memory_budget)

    def _parameters(self) -> dict[str, object]:
        return {**super()._parameters(), "noise": self.noise}

    # -- Mechanism hooks ----------------------------------------------------------------
    def _compute_levels(self) -> list[Level]:
        keys, sizes = self.classes_.level_sizes()
        q = self.classes_.q
        return [Level(_rational(-key, q), sizes[key]) for key in keys]

    def _make_table(self) -> BlockLevelTable:
        level_bytes = stream_level_bytes(self.k, self.d)
        # one loss per class: the top-k class and k (d - k) classes (h, t)
        return stream_table(self._levels_from, self.scale, self.memory_budget, level_bytes, levels_read(self),
                            outputs=self.support_size(), level_bound=self.k * (self.d - self.k) + 1)

    def levels(self) -> tuple[Level, ...]:
        """Every level, best first; refused as soon as the levels read pass ``memory_budget``."""
        return streamed_levels(self)

    def iter_levels(self) -> Iterator[Level]:
        """The levels of :meth:`levels`, best first, one at a time: the merge of
        :meth:`CanonicalClasses.iter_level_sizes` (``O(k)`` integers held), or the level
        table's blocks once it exists."""
        if self._table is not None:
            return self._table.iter_levels()
        return self._levels_from(None)

    def _levels_from(self, utility: Optional[ExactRational]) -> Iterator[Level]:
        """The levels of utility ``<= utility`` (all when ``None``), best first."""
        q = self.classes_.q
        start = 0 if utility is None else int(-utility * q)  # the loss key, an exact integer
        return (Level(_rational(-key, q), m) for key, m in self.classes_.iter_level_sizes(start))

    def iter_level_probabilities(self, dps: Optional[int] = None) -> Iterator[tuple[Level, mpmath.mpf]]:
        """``(Level, probability certified to dps digits)``, best first (``dps``: significant
        digits, ``None`` for the default 30), block by block within ``memory_budget``
        after one pass that fixes the normaliser."""
        table = self.table
        return zip(table.iter_levels(), self.rule.iter_level_probabilities(table, as_dps(dps)))

    def iter_level_arrays(self, dps: Optional[int] = None) -> Iterator[CanonicalLevelArrayBlock]:
        """Every level, best first, in blocks of arrays
        (:class:`~exactdp.mechanisms.canonical.arrays.CanonicalLevelArrayBlock`, computed as
        read): exact loss keys and utilities, and each level's log-multiplicity and one
        output's log-probability as fixed-point integers whose ``exp`` is within relative
        error ``10**-dps`` (``None``: the default 30; proof: :mod:`exactdp.mechanisms.canonical.arrays`)."""
        return _iter_level_arrays(self, as_dps(dps))

    def _unrank(self, a: int, r: int) -> frozenset[int]:
        """The ``r``-th subset of level ``a``: its loss key read off the level table (a
        block, recomputed within ``memory_budget``), then :meth:`CanonicalClasses.unrank_key`
        (``O(k log d)``); no table of every key is built."""
        key = -self.table.utilities[a] * self.classes_.q  # utility = -key/q exactly
        if type(key) is not int:
            if key.denominator != 1:  # pragma: no cover - utilities are -key/q by construction
                raise AssertionError(f"level {a}: utility {self.table.utilities[a]} is not -key/q")
            key = key.numerator
        order = self.ranking.order
        return frozenset(order[x] for x in self.classes_.unrank_key(key, r))

    def _group_probability_exact(self, key: Any) -> sympy.Expr:
        """With a rational ``base`` and fractional losses, first checks
        :data:`CANONICAL_SYMBOLIC_BITS_LIMIT` (exact estimate over the distinct loss
        levels): :class:`NoClosedFormError` at once beyond."""
        check_symbolic_bits(self.scale.base, self.classes_.level_sizes()[0], self.classes_.q)
        return super()._group_probability_exact(key)

    # -- classes --------------------------------------------------------------------------
    def _level_index(self, h: int, t: int) -> int:
        # the level of utility -key/q in the (block) level table: no table of every key
        return self.table.index_of(_rational(-self.classes_.key(h, t), self.classes_.q))

    def class_probability(self, h: int, t: int, dps: Optional[int] = None) -> mpmath.mpf:
        """Probability that the output lies in class ``(h, t)``: its size times the
        probability of one output of its loss level (an exact product), certified to
        relative error ``10**-dps``."""
        h, t = self.classes_.check_class(h, t)
        digits = as_dps(dps)
        p = self.rule.output_probability(self.table, self._level_index(h, t), digits)
        return mpmath.fmul(p, self.classes_.size(h, t), exact=True)

    def class_probabilities(self, dps: Optional[int] = None) -> list[tuple[int, int, mpmath.mpf]]:
        """``(h, t, probability)`` for every class, in :meth:`classes` order, each certified
        to relative error ``10**-dps``.

        One call of the rule's certified level probabilities ``P(level a)`` at ``dps + 2``
        digits.  A class that is its whole level gets ``P(level)`` itself; otherwise the
        probability of one output of the level, ``P(level a) / m_a``, is formed once per
        level by a correctly rounded mpmath division at ``dps + 4`` digits and multiplied
        *exactly* by the class size (integer times binary mantissa).  Relative error:
        ``<= 10**-(dps+2) + 10**-(dps+4) + (their product) < 10**-dps``.
        """
        digits = as_dps(dps)
        table = self.table
        level_p = self.rule.level_probabilities(table, digits + 2)
        keys = self.classes_.level_sizes()[0]
        prec = prec_for_dps(digits + 4)
        index = {key: a for a, key in enumerate(keys)}
        per_output: dict[int, mpmath.mpf] = {}
        mults = list(table.multiplicities)  # read once, block by block
        out = []
        fdiv = mpmath.fdiv
        for h, t, size, key in self.classes_.iter_keys():
            a = index[key]
            m = mults[a]
            if m == size:
                out.append((h, t, level_p[a]))
                continue
            p = per_output.get(a)
            if p is None:
                p = per_output[a] = fdiv(level_p[a], m, prec=prec)
            out.append((h, t, times_int(p, size)))
        return out
