r"""Canonical: the canonical loss over utility classes of k-subsets (Lipschitz mechanism).

Paper: *Differentially Private Top-k Selection via Canonical Lipschitz Mechanism*
(arXiv:2201.13376, Definition 3.4, Theorem 3.5, Section
2.1).  The definitions of docs/definitions.md §2.4 are authoritative and are what
this module implements.

**Classes.**  With 1-based ranks (counts descending, ties by smaller item id, docs/definitions.md §1) and
the sorted counts ``x_(1) >= ... >= x_(d)``, every k-subset lies in exactly one class
``(h, t)``:

- ``(k-1, k)``: the exact top-k ``{1..k}`` (size 1);
- otherwise ``h`` in ``0..k-1`` is the number of leading top ranks ``1..h`` in the subset
  (rank ``h+1`` is missing) and ``t`` in ``k+1..d`` is its lowest rank: the subset is
  ``{1..h} ∪ B ∪ {t}`` with ``B`` any ``(k-h-1)``-subset of ranks ``h+2..t-1``, so the
  class has ``C(t-h-2, k-h-1)`` members.

**Loss** (``rho`` in [0, 1], an exact rational, default 1/2):
``loss(h, t) = (1-rho)(x_(h+1) - x_(k)) + rho(x_(k) - x_(t))``, and 0 for the top-k class.
``x_(h+1)`` is the largest count outside the subset and ``x_(t)`` the smallest inside, so
the loss depends only on the counts, never on how ties were broken: the output
distribution over item ids is tie-rule free (tested).

**Utility = -loss.**  exactdp's selection rules favour *high* utility, so this mechanism
reports ``utility(S) = -loss(S)`` (``0`` is best) and offers :meth:`Canonical.loss` for the
loss itself.  ``levels()`` are the distinct values of ``-loss`` with the number of subsets
having each (class sizes summed over the classes sharing a loss value), best first.

**Selection.**  ``noise="gumbel"``: the exponential mechanism ``P(S) ∝ exp(-eps*loss(S))``
(report-noisy-max with Gumbel noise, i.e. the Lipschitz mechanism with Gumbel noise);
``noise="exponential"``: permute-and-flip with ``p_S = exp(-eps*(loss(S) - 0))``
(report-noisy-max with exponential noise).  Both are the shared rules of exactdp applied to
the loss levels, with ``Scale(epsilon, divisor=1)``; with ``base=b`` the weight of one unit
of loss is ``b`` (``exp(-eps)`` replaced by an exact rational).

:class:`CanonicalGamma1` is the fast two-stage variant (tail, then head, then a uniform
subset of the class); it is not a single rule over utility levels (see its docstring).

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

import math
import random
from bisect import bisect_left, bisect_right
from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, NamedTuple, NoReturn, Optional, SupportsIndex, cast

import gmpy2
import mpmath
from ..core._lazy import sympy
from flint import arb, ctx, fmpq

from ..errors import ArgumentTypeError, ExactDPValueError, InvalidParameterError, NoClosedFormError
from ..core._typing import CountsLike, ExactRational, OutputLike, RationalLike, RngLike
from ..core.combinatorics import rank_combination, unrank_combination
from ..core.levels import Level
from ..core.mechanism import Mechanism, check_output_count, make_scale
from ..core.precision import certify, certify_many, prec_for_dps
from ..core.ranking import Ranking
from ..core.sampling import choose_index
from ..rules.exponential import SYMBOLIC_LEVELS_LIMIT
from ..core.validation import as_counts, as_dps, as_k, as_positive_int, as_rho, as_rng, as_set_output
from ..rules.noise import as_noise, rule_for_noise

__all__ = [
    "Canonical",
    "CanonicalGamma1",
    "CanonicalClasses",
    "UtilityClass",
    "NotSingleRuleError",
    "CANONICAL_SYMBOLIC_BITS_LIMIT",
]

#: ``probability_exact`` with a rational ``base`` and fractional losses (so the closed form
#: holds powers ``base**(loss)`` with non-integral exponents, which sympy expands into an
#: exact rational times a root): at most this many bits in all those rationals together,
#: estimated exactly as ``sum of ceil(loss) * max(bits of base's numerator, denominator)``
#: before anything is built.  Beyond: :class:`~exactdp.errors.NoClosedFormError`.
CANONICAL_SYMBOLIC_BITS_LIMIT = 1 << 22

class NotSingleRuleError(ExactDPValueError, NotImplementedError):
    """A level-based method was called on a mechanism that is not one selection rule over
    utility levels (:class:`CanonicalGamma1`): outputs with equal utility may have different
    probabilities there, so ``levels()`` would be misleading.  Subclasses both ``ValueError``
    (via :class:`~exactdp.errors.ExactDPValueError`) and ``NotImplementedError``."""


# --------------------------------------------------------------------------------------
# the class structure (shared by Canonical and CanonicalGamma1)
# --------------------------------------------------------------------------------------
class UtilityClass(NamedTuple):
    """One utility class: ``h`` leading top ranks, lowest rank ``t`` (1-based), its exact
    number of subsets and its exact loss (an ``int`` when integral, else a ``Fraction``)."""

    h: int
    t: int
    size: int
    loss: ExactRational


def _rational(num: int, den: int) -> ExactRational:
    """``num/den`` as an int when integral, else a Fraction."""
    if num % den == 0:
        return num // den
    return Fraction(num, den)


def _check_symbolic_bits(base: Optional[Fraction], keys: Iterable[int], q: int) -> None:
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
            f"exactdp.mechanisms.canonical.CANONICAL_SYMBOLIC_BITS_LIMIT to allow more); use "
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
    @property
    def n_classes(self) -> int:
        return 1 + self.k * (self.d - self.k)

    def is_class(self, h: int, t: int) -> bool:
        k, d = self.k, self.d
        if (h, t) == (k - 1, k):
            return True
        return 0 <= h <= k - 1 and k + 1 <= t <= d

    def check_class(self, h: int, t: int) -> tuple[int, int]:
        for name, v in (("h", h), ("t", t)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ArgumentTypeError(name, v, "must be an int")
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
        return _rational(self.key(h, t), self.q)

    def size(self, h: int, t: int) -> int:
        if t == self.k:
            return 1
        return int(gmpy2.comb(t - h - 2, self.k - h - 1))

    def classify(self, ranks: Iterable[int]) -> tuple[int, int]:
        """The class ``(h, t)`` of a subset given by its 0-based ranks."""
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

    def member_rank(self, ranks: Iterable[int]) -> tuple[int, int, int]:
        """``(h, t, r)`` with ``member(h, t, r)`` equal to the subset of 0-based ``ranks``."""
        rs = sorted(ranks)
        h, t = self.classify(rs)
        if t == self.k:
            return h, t, 0
        return h, t, rank_combination([x - h - 1 for x in rs[h:-1]])

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
class _ClassMethods:
    """What Canonical and CanonicalGamma1 share: the classes and the loss of a subset."""

    classes_: CanonicalClasses
    k: int
    d: int
    ranking: Ranking

    def _check_set(self, output: OutputLike) -> frozenset[int]:
        return as_set_output(output, self.d, self.k)

    def class_of(self, output: OutputLike) -> tuple[int, int]:
        """The class ``(h, t)`` (1-based ranks) of a k-subset of item ids."""
        o = self._check_set(output)
        return self.classes_.classify(self.ranking.rank_of[i] for i in o)

    def loss(self, output: OutputLike) -> ExactRational:
        """The exact canonical loss of a k-subset (``int`` when integral, else ``Fraction``)."""
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
        order = self.ranking.order
        for r in range(self.classes_.size(h, t)):
            yield frozenset(order[x] for x in self.classes_.member(h, t, r))


class Canonical(_ClassMethods, Mechanism):
    """The canonical Lipschitz mechanism over k-subsets (docs/definitions.md §2.4).

    ``Canonical(counts, k, epsilon=None, *, base=None, rho=Fraction(1, 2), noise="gumbel")``

    - ``epsilon`` (default 1) or ``base`` (exact rational in (0, 1), the weight of one unit
      of loss, replacing ``exp(-epsilon)``; exclusive with ``epsilon``);
    - ``rho``: exact rational in [0, 1] (strings such as ``"1/3"`` are exact);
    - ``noise``: ``"gumbel"`` (exponential mechanism, ``P(S) ∝ exp(-eps*loss(S))``) or
      ``"exponential"`` (permute-and-flip, ``p_S = exp(-eps*loss(S))``, the best loss being 0).

    Outputs are ``frozenset`` s of item ids.  ``utility(S) = -loss(S)``; every method of
    The public API (docs/definitions.md §3) is inherited from :class:`~exactdp.core.mechanism.Mechanism`, plus
    :meth:`classes`, :meth:`class_probability`, :meth:`class_probabilities`,
    :meth:`loss`, :meth:`class_of`.
    """

    output_kind = "set"

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, rho: RationalLike = Fraction(1, 2),
                 noise: str = "gumbel") -> None:
        super().__init__(counts, k)
        self.rho = as_rho(rho)
        self.noise = as_noise(noise)
        self.scale = make_scale(epsilon, base, Fraction(1))
        self.epsilon = self.scale.epsilon
        self.base = self.scale.base
        self.rule = rule_for_noise(self.noise)
        self.classes_ = CanonicalClasses(self.ranking, self.k, self.rho)

    def _params(self) -> str:
        return f"{self.scale.describe()}, rho={self.rho}, noise={self.noise!r}"

    # -- Mechanism hooks ----------------------------------------------------------------
    def _compute_levels(self) -> list[Level]:
        keys, sizes = self.classes_.level_sizes()
        q = self.classes_.q
        return [Level(_rational(-key, q), sizes[key]) for key in keys]

    def _utility(self, output: frozenset[int]) -> ExactRational:  # type: ignore[override]
        c = self.classes_
        return _rational(-c.key(*c.classify(self.ranking.rank_of[i] for i in output)), c.q)

    def _unrank(self, a: int, r: int) -> frozenset[int]:
        key = self.classes_.level_sizes()[0][a]
        order = self.ranking.order
        return frozenset(order[x] for x in self.classes_.unrank_key(key, r))

    def support_size(self) -> int:
        """``C(d, k)``: every k-subset has positive probability."""
        return math.comb(self.d, self.k)

    def probability_exact(self, output: OutputLike) -> sympy.Expr:
        """The exact probability as a sympy expression (see
        :meth:`~exactdp.core.mechanism.Mechanism.probability_exact`).  With a rational ``base``
        and fractional losses, first checks :data:`CANONICAL_SYMBOLIC_BITS_LIMIT` (exact
        estimate over the distinct loss levels): :class:`NoClosedFormError` at once beyond."""
        _check_symbolic_bits(self.scale.base, self.classes_.level_sizes()[0], self.classes_.q)
        return super().probability_exact(output)

    # -- classes --------------------------------------------------------------------------
    def _level_index(self, h: int, t: int) -> int:
        key = self.classes_.key(h, t)
        keys = self.classes_.level_sizes()[0]
        return bisect_left(keys, key)

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
        mults = table.multiplicities
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
            out.append((h, t, _times_int(p, size)))
        return out


_make_mpf = mpmath.mp.make_mpf
_from_man_exp = mpmath.libmp.from_man_exp


def _times_int(x: mpmath.mpf, n: int) -> mpmath.mpf:
    """``x * n`` exactly (no rounding): the binary mantissa times the integer."""
    sign, man, exp, _ = x._mpf_
    prod = int(man) * int(n)
    return _make_mpf(_from_man_exp(-prod if sign else prod, exp))


# --------------------------------------------------------------------------------------
# CanonicalGamma1: the two-stage variant
# --------------------------------------------------------------------------------------
class CanonicalGamma1(_ClassMethods):
    r"""The fast two-stage canonical mechanism ("gamma1", docs/definitions.md §2.4).

    ``CanonicalGamma1(counts, k, epsilon=None, *, base=None, rho=Fraction(1, 2))``:

    1. pick the tail ``t`` in ``k..d`` with weight ``C(t-1, k-1) * exp(eps*rho*x_(t))``
       (``C(t-1, k-1)`` subsets have lowest rank ``t``; ``t = k`` is the top-k class);
    2. for ``t > k`` pick ``h`` in ``0..k-1`` with weight
       ``C(t-h-2, k-h-1) * exp(-eps*(1-rho)*x_(h+1))`` (for ``t = k``: the top-k class);
    3. output a uniform subset of class ``(h, t)``.

    Hence ``P(S) = P(t) * P(h | t) / C(t-h-2, k-h-1)`` for ``S`` in class ``(h, t)``.
    With ``base=b`` the weight ``exp(eps*u)`` becomes ``b**(-u)`` (exclusive with
    ``epsilon``).  All weights are taken relative to ``x_(k)`` (which cancels), i.e.
    ``exp(-eps*rho*(x_(k)-x_(t)))`` and ``exp(-eps*(1-rho)*(x_(h+1)-x_(k)))``.

    **Levels: none (documented decision).**  This is not one selection rule over utility
    levels: two subsets with the same canonical loss can have different probabilities
    (their classes have different ``P(h | t)`` normalisers), so there is no
    ``levels()``/``level_probabilities()``; both raise :class:`NotSingleRuleError`.  The
    equal-probability groups are the classes: use :meth:`classes`,
    :meth:`class_probability`, :meth:`class_probabilities` and :meth:`tail_probabilities`.
    Every other method of the public API (docs/definitions.md §3) is offered: ``support_size`` (``C(d, k)``),
    ``utility`` (``-loss``, as for :class:`Canonical`), ``probability``,
    ``log_probability``, ``probability_exact``, ``outputs``, ``distribution``, ``sample``,
    ``samples``.  Sampling is exact: both stages are drawn with
    :func:`exactdp.core.sampling.choose_index` over certified cumulative weights, the subset by
    unranking a uniform integer.

    **Tie rule: the one exception.**  Every other exactdp mechanism gives a distribution
    over item ids that does not depend on how tied counts are ranked.  For ``rho < 1`` and
    tied counts this one does, because the stage-2 normaliser
    ``sum_h C(t-h-2, k-h-1) * exp(-eps*(1-rho)*x_(h+1))`` differs between tied tails: with
    counts ``(2, 2, 1, 1, 0)``, ``k = 3``, ``base = 1/4`` (``rho = 1/2``) the set
    ``{0, 1, 2}`` has probability ``1/7``, and its twin ``{2, 3, 4}`` after reversing the
    item ids has ``3/14`` (both equal brute force over the two-stage definition).  With
    ``rho = 1`` (stage 2 uniform) it is :class:`Canonical` with Gumbel noise and tie-rule
    free; :class:`Canonical` is tie-rule free for every ``rho``.
    """

    output_kind = "set"

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, rho: RationalLike = Fraction(1, 2)) -> None:
        self.counts = as_counts(counts)
        self.d = len(self.counts)
        self.k = as_k(k, self.d)
        self.ranking = Ranking(self.counts)
        self.rho = as_rho(rho)
        self.scale = make_scale(epsilon, base, Fraction(1))
        self.epsilon = self.scale.epsilon
        self.base = self.scale.base
        self.classes_ = CanonicalClasses(self.ranking, self.k, self.rho)
        self._cache: dict[Any, Any] = {}
        self._tail_binoms = [int(gmpy2.comb(t - 1, self.k - 1)) for t in range(self.k, self.d + 1)]

    def __repr__(self) -> str:
        counts = repr(list(self.counts)) if self.d <= 12 else f"<{self.d} counts>"
        return f"{type(self).__name__}({counts}, k={self.k}, {self.scale.describe()}, rho={self.rho})"

    # -- no levels ------------------------------------------------------------------------
    def levels(self) -> NoReturn:
        """Not available: raises :class:`NotSingleRuleError` (see the class docstring)."""
        raise NotSingleRuleError(
            None, None,
            "CanonicalGamma1 is a two-stage mechanism, not one selection rule over utility "
            "levels: subsets with equal loss can have different probabilities, so it has no "
            "levels(); use classes(), class_probabilities() or tail_probabilities()",
        )

    def level_probabilities(self, dps: Optional[int] = None) -> NoReturn:
        """Not available: raises :class:`NotSingleRuleError` (see :meth:`levels`)."""
        self.levels()

    # -- enclosures (at flint's current precision) ------------------------------------------
    def _weights(self) -> dict[str, Any]:
        """Arb enclosures of the stage weights at ``ctx.prec``, cached per precision:
        ``eA[h] = w(-A_h/q)``, ``W1[t-k] = C(t-1, k-1) w(-B_t/q)`` (``B_k = 0``), ``Z1``."""
        key = ("weights", ctx.prec)
        got = self._cache.get(key)
        if got is not None:
            return got
        for old in [x for x in self._cache if x[0] == "weights"]:
            del self._cache[old]
        c = self.classes_
        lam = self.scale.lam_ball()
        q = c.q

        def w(num: int) -> arb:  # w(-num/q) = exp(-lam * num / q)
            if num == 0:
                return arb(1)
            return (-(lam * arb(fmpq(num, q)))).exp()

        eA = [w(a) for a in c.A]
        eB = [arb(1)] + [w(b) for b in c.B]
        W1 = [arb(m) * e for m, e in zip(self._tail_binoms, eB)]
        Z1 = sum(W1, arb(0))
        got = {"eA": eA, "W1": W1, "Z1": Z1}
        self._cache[key] = got
        return got

    def _stage2_terms(self, t: int) -> list[arb]:
        """``C(t-h-2, k-h-1) w(-A_h/q)`` for ``h = 0..k-1`` (``t > k``), at ``ctx.prec``."""
        eA = self._weights()["eA"]
        k = self.k
        return [arb(int(gmpy2.comb(t - h - 2, k - h - 1))) * eA[h] for h in range(k)]

    def _class_output_ball(self, h: int, t: int) -> arb:
        """Enclosure of the probability of one subset of class ``(h, t)``."""
        wt = self._weights()
        p_t = wt["W1"][t - self.k] / wt["Z1"]
        if t == self.k:
            return p_t
        terms = self._stage2_terms(t)
        return p_t * self._weights()["eA"][h] / sum(terms, arb(0))  # size cancels

    def _class_output_log_ball(self, h: int, t: int) -> arb:
        """Enclosure of ``log P(one subset of (h, t))`` as a sum of non-positive terms
        ``-log1p(others/own)`` (no cancellation, full relative accuracy near 1)."""
        wt = self._weights()
        k = self.k
        W1 = wt["W1"]
        i = t - k
        others = sum((w for j, w in enumerate(W1) if j != i), arb(0))
        total = -(others / W1[i]).log1p()
        if t == k:
            return total
        terms = self._stage2_terms(t)
        others2 = sum((w for j, w in enumerate(terms) if j != h), arb(0))
        total -= (others2 / terms[h]).log1p()
        size = self.classes_.size(h, t)
        if size > 1:
            total -= arb(size).log()
        return total

    # -- public API (§3) -------------------------------------------------------------------
    def support_size(self) -> int:
        """``C(d, k)``: every k-subset has positive probability."""
        return math.comb(self.d, self.k)

    def utility(self, output: OutputLike) -> ExactRational:
        """``-loss(output)`` (the canonical utility; this mechanism's probabilities are not
        a function of it alone)."""
        loss = self.loss(output)
        return -loss

    def _extra_bits(self) -> int:
        return 2 * (self.d + self.k).bit_length() + 8

    def probability(self, output: OutputLike, dps: Optional[int] = None) -> mpmath.mpf:
        """``P(t) P(h|t) / size``, certified to relative error ``10**-dps``."""
        h, t = self.class_of(output)
        return certify(lambda: self._class_output_ball(h, t), as_dps(dps), extra_bits=self._extra_bits())

    def log_probability(self, output: OutputLike, dps: Optional[int] = None) -> mpmath.mpf:
        """Natural log of :meth:`probability`, relative error ``<= 10**-dps``."""
        h, t = self.class_of(output)
        return certify(lambda: self._class_output_log_ball(h, t), as_dps(dps), extra_bits=self._extra_bits())

    def class_probability(self, h: int, t: int, dps: Optional[int] = None) -> mpmath.mpf:
        """``P(t) * P(h | t)``: probability that the output lies in class ``(h, t)``."""
        h, t = self.classes_.check_class(h, t)
        size = self.classes_.size(h, t)
        return certify(lambda: self._class_output_ball(h, t) * size, as_dps(dps), extra_bits=self._extra_bits())

    def groups(self) -> tuple[Level, ...]:
        """The probability groups: one ``Level((h, t), size)`` per class, in the order of
        :meth:`classes` (every member of a class has the same probability)."""
        return tuple(Level((c.h, c.t), c.size) for c in self.iter_classes())

    def group_index(self, output: OutputLike) -> int:
        """Index in :meth:`groups` of the class of ``output`` (validated)."""
        h, t = self.class_of(output)
        return 0 if (h, t) == (self.k - 1, self.k) else 1 + h * (self.d - self.k) + (t - self.k - 1)

    def group_output_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(group, probability of one member of the class)`` for every class, certified."""
        groups = self.groups()
        digits = as_dps(dps)
        probs = certify_many(lambda: [self._class_output_ball(*g.utility) for g in groups], digits,
                             extra_bits=self._extra_bits())
        return list(zip(groups, probs))

    def tail_probabilities(self, dps: Optional[int] = None) -> list[tuple[int, mpmath.mpf]]:
        """``(t, P(t))`` for ``t = k..d`` (stage 1), certified."""
        vals = certify_many(lambda: [w / self._weights()["Z1"] for w in self._weights()["W1"]],
                            as_dps(dps), extra_bits=self._extra_bits())
        return list(zip(range(self.k, self.d + 1), vals))

    def class_probabilities(self, dps: Optional[int] = None) -> list[tuple[int, int, mpmath.mpf]]:
        """``(h, t, P(t) P(h|t))`` for every class in :meth:`classes` order, certified."""
        k, d = self.k, self.d

        def compute() -> list[arb]:
            wt = self._weights()
            eA, W1, Z1 = wt["eA"], wt["W1"], wt["Z1"]
            Z2 = [arb(0)] * (d + 1)
            sizes: list[Optional[arb]] = []
            for h, t, size, _ in self.classes_.iter_keys():
                if t == k:
                    sizes.append(None)
                    continue
                term = arb(int(size)) * eA[h]
                sizes.append(term)
                Z2[t] += term
            out = []
            for (h, t, _, _), term in zip(self.classes_.iter_keys(), sizes):
                if t == k:
                    out.append(W1[0] / Z1)
                else:
                    out.append(W1[t - k] * term / (Z1 * Z2[t]))
            return out

        vals = certify_many(compute, as_dps(dps), extra_bits=self._extra_bits())
        return [(h, t, p) for (h, t, _, _), p in zip(self.classes_.iter_keys(), vals)]

    def probability_exact(self, output: OutputLike) -> sympy.Expr:
        """The exact probability as a sympy expression: a Rational when ``base`` is given
        and every weight exponent ``rho*(x_(k)-x_(t))``, ``(1-rho)*(x_(h+1)-x_(k))`` is an
        integer; otherwise a sum of exponentials, for at most
        :data:`~exactdp.rules.exponential.SYMBOLIC_LEVELS_LIMIT` stage-1 terms
        (:class:`~exactdp.errors.NoClosedFormError` beyond)."""
        h, t = self.class_of(output)
        c = self.classes_
        k, q = self.k, c.q
        n_terms = self.d - k + 1
        if n_terms > SYMBOLIC_LEVELS_LIMIT:
            raise NoClosedFormError(
                None, None,
                f"probability_exact: {n_terms} stage-1 terms exceed SYMBOLIC_LEVELS_LIMIT = "
                f"{SYMBOLIC_LEVELS_LIMIT}; use probability(output, dps=...)",
            )
        scale = self.scale
        rational = scale.is_rational and all(a % q == 0 for a in c.A) and all(b % q == 0 for b in c.B)
        if not rational:  # the stage weights base**(A_h/q), base**(B_t/q) of the closed form
            _check_symbolic_bits(scale.base, list(c.A) + list(c.B), q)
        if rational:
            base = cast(Fraction, scale.base)  # rational: scale.is_rational means a base is set
            top = max([0] + [a // q for a in c.A] + [b // q for b in c.B])
            from ..rules.exponential import EXACT_BITS_LIMIT

            bits = top * max(base.numerator.bit_length(), base.denominator.bit_length())
            if bits > EXACT_BITS_LIMIT:
                raise NoClosedFormError(
                    None, None,
                    f"probability_exact: weights base**{top} need about {bits} bits "
                    f"(EXACT_BITS_LIMIT = {EXACT_BITS_LIMIT}); use probability(output, dps=...)",
                )

            def w(num: int) -> Any:
                return base ** (num // q)
        else:
            def w(num: int) -> Any:
                return scale.symbolic_weight(Fraction(-num, q))

        B = [0] + c.B
        terms1 = [self._tail_binoms[i] * w(B[i]) for i in range(n_terms)]
        p = terms1[t - k] / _add(terms1, rational)
        if t != k:
            terms2 = [int(gmpy2.comb(t - j - 2, k - j - 1)) * w(c.A[j]) for j in range(k)]
            p = p * w(c.A[h]) / _add(terms2, rational)
        if rational:
            return sympy.Rational(p.numerator, p.denominator)
        return p

    # -- outputs and sampling ---------------------------------------------------------------
    def _check_size(self, max_outputs: Optional[int]) -> None:
        check_output_count(self.support_size(), max_outputs)

    def outputs(self, max_outputs: Optional[int] = None) -> Iterator[frozenset[int]]:
        """Every k-subset, class by class in :meth:`classes` order (lazily)."""
        self._check_size(max_outputs)
        for h, t in self.classes_.iter_classes():
            yield from self.class_members(h, t)

    def distribution(self, dps: Optional[int] = None,
                     max_outputs: int = 10**6) -> list[tuple[frozenset[int], mpmath.mpf]]:
        """Every subset with its certified probability, class by class."""
        digits = as_dps(dps)
        self._check_size(max_outputs)
        pairs = list(self.classes_.iter_classes())
        probs = certify_many(lambda: [self._class_output_ball(h, t) for h, t in pairs], digits,
                             extra_bits=self._extra_bits())
        out = []
        for (h, t), p in zip(pairs, probs):
            for s in self.class_members(h, t):
                out.append((s, p))
        return out

    def sample(self, rng: RngLike = None) -> frozenset[int]:
        """One subset drawn exactly: tail, head, then a uniform member (integer randomness)."""
        return self._sample(as_rng(rng))

    def samples(self, n: SupportsIndex, rng: RngLike = None) -> list[frozenset[int]]:
        """``n`` independent exact samples from one generator."""
        count = as_positive_int(n, "n")
        gen = as_rng(rng)
        return [self._sample(gen) for _ in range(count)]

    def _cumulative(self, values: Callable[[], list[arb]]) -> list[arb]:
        out, run = [], arb(0)
        for w in values():
            run = run + w
            out.append(run)
        return out

    def _sample(self, gen: random.Random) -> frozenset[int]:
        k = self.k
        i = choose_index(lambda prec: self._cached_cumulative(("c1",), lambda: self._weights()["W1"]),
                         self.d - k + 1, gen)
        t = k + i
        if t == k:
            h = k - 1
        else:
            h = choose_index(lambda prec: self._cached_cumulative(("c2", t), lambda: self._stage2_terms(t)), k, gen)
        r = gen.randrange(self.classes_.size(h, t))
        order = self.ranking.order
        return frozenset(order[x] for x in self.classes_.member(h, t, r))

    def _cached_cumulative(self, name: tuple, values: Callable[[], list[arb]]) -> list[arb]:
        key = name + (ctx.prec,)
        got = self._cache.get(key)
        if got is None:
            if len(self._cache) > 4096:
                self._cache.clear()
            got = self._cache[key] = self._cumulative(values)
        return got


def _add(terms: list, rational: bool) -> Any:
    if rational:
        return sum(terms, Fraction(0))
    return sympy.Add(*terms)
