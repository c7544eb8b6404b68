r"""CanonicalGamma1: the two-stage ("gamma1") variant of the canonical Lipschitz mechanism.

Paper: *Differentially Private Top-k Selection via Canonical Lipschitz Mechanism*
(arXiv:2201.13376), the faster two-stage variant of the introduction, with the loss of
Definition 3.4; docs/definitions.md §2.4 is authoritative.  The class structure ``(h, t)``
and the loss are those of :mod:`exactdp.mechanisms.canonical`; only the selection differs:
a tail ``t``, then a head ``h`` given ``t``, then a uniform member of class ``(h, t)``.  Its
probability groups (:meth:`~exactdp.core.mechanism.Mechanism.groups`) are the classes, and
every public method is the one of :class:`~exactdp.core.mechanism.Mechanism` over them.

>>> g = CanonicalGamma1([10, 5, 1, 1], 2, base=Fraction(1, 2), rho=1)
>>> g.groups()[:2]
(Level(utility=(1, 2), multiplicity=1), Level(utility=(0, 3), multiplicity=1))
>>> g.probability_exact({0, 1}), g.samples(0)
(16/21, [])
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import accumulate
from typing import Any, Callable, Hashable, Iterator, NoReturn, Optional, Sequence, SupportsIndex, cast

import gmpy2
import mpmath
from flint import arb, ctx

from ...core.lazy import sympy
from ...core.aliases import CountsLike, Output, OutputLike, RationalLike
from ...core.levels import Level
from ...core.precision import certify, certify_many, rational_ball
from ...core.sampling import choose_index
from ...core.validation import as_dps
from ...errors import NoClosedFormError, TooManyOutputsError
from ...rules.exponential import EXACT_BITS_LIMIT, SYMBOLIC_LEVELS_LIMIT
from .mechanism import CanonicalFamily, NotSingleRuleError, check_symbolic_bits

__all__ = ["CanonicalGamma1", "GAMMA1_GROUPS_LIMIT"]

#: ``groups()`` (and ``group_output_probabilities``, audits) hold one ``Level`` per class:
#: refused past this many classes ``1 + k(d-k)`` (33 million at d = 166,000, k = 200 needed
#: more than 6 GiB and ended in ``MemoryError``).  ``iter_classes()`` and ``outputs()`` stream.
GAMMA1_GROUPS_LIMIT = 2_500_000

#: Cumulative stage weights kept per mechanism (keyed by stage, tail and precision).
_CUMULATIVE_CACHE = 4096


class CanonicalGamma1(CanonicalFamily):
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

    **Levels: none.**  Two subsets of one loss can have different probabilities, so
    ``levels()`` and ``level_probabilities()`` raise :class:`NotSingleRuleError`; the
    equal-probability groups are the classes (:meth:`classes`, :meth:`class_probability`,
    :meth:`class_probabilities`, :meth:`tail_probabilities`), and every other public method
    is :class:`~exactdp.core.mechanism.Mechanism`'s over them.  Sampling is exact
    (:func:`exactdp.core.sampling.choose_index` per stage, then an unranking).  The one
    exception to tie-rule freedom: for ``rho < 1`` and tied counts the stage-2 normaliser
    differs between tied tails (example and the ``rho = 1`` identity with :class:`Canonical`:
    docs/canonical.md, section "CanonicalGamma1: the two-stage variant").
    """
    _CACHES = {**CanonicalFamily._CACHES, "_cache": dict}  # its stage weights: out of pickles and copies

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, rho: RationalLike = Fraction(1, 2)) -> None:
        super().__init__(counts, k, epsilon, base=base, rho=rho)
        self._cache: dict[Any, Any] = {}
        self._tail_binoms = [int(gmpy2.comb(t - 1, self.k - 1)) for t in range(self.k, self.d + 1)]

    @property
    def ties_exchangeable(self) -> bool:  # type: ignore[override]
        """True only for ``rho = 1``: below it the law depends on how tied counts are ranked
        (the class docstring), so an audit must not treat tied items alike."""
        return self.rho == 1

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
        """Not available (whatever ``dps``): raises :class:`NotSingleRuleError`, as :meth:`levels`."""
        self.levels()

    def iter_level_arrays(self, dps: Optional[int] = None) -> NoReturn:
        """Not available (whatever ``dps``): raises :class:`NotSingleRuleError`, as :meth:`levels`."""
        self.levels()

    def _compute_levels(self) -> NoReturn:
        # every level method (level_output_probabilities, the level table) ends here
        self.levels()

    # -- the groups: the classes (h, t) -----------------------------------------------------
    def groups_rule(self) -> None:
        """None: the groups (classes ``(h, t)``) have a law of their own, not one rule's levels."""
        return None

    def _group_key(self, output: Output) -> tuple[int, int]:
        return self._class(output)

    def groups(self) -> tuple[Level, ...]:
        """The probability groups: one ``Level((h, t), size)`` per class, in the order of
        :meth:`classes` (every member of a class has the same probability); refused with
        :class:`TooManyOutputsError` past :data:`GAMMA1_GROUPS_LIMIT` classes."""
        self._check_groups_limit()
        return tuple(Level((c.h, c.t), c.size) for c in self.iter_classes())

    def _check_groups_limit(self) -> None:
        """:class:`TooManyOutputsError` past :data:`GAMMA1_GROUPS_LIMIT` classes (for
        :meth:`groups` and every caller that lists all classes, as ``exactdp dist``)."""
        n = 1 + self.k * (self.d - self.k)
        if n > GAMMA1_GROUPS_LIMIT:
            raise TooManyOutputsError(
                None, None,
                f"CanonicalGamma1 has {n} classes (1 + k(d-k)), more than GAMMA1_GROUPS_LIMIT = "
                f"{GAMMA1_GROUPS_LIMIT}, and groups() (as group_output_probabilities() and the audits) "
                "holds them all; use iter_classes() (streamed), class_probability(h, t), probability() "
                "or sample(), or raise exactdp.mechanisms.canonical.gamma1.GAMMA1_GROUPS_LIMIT",
            )

    def outputs(self, max_outputs: Optional[int] = None) -> Iterator[Output]:
        """Every output, class by class in the order of :meth:`groups`, streamed from
        :meth:`iter_classes` (no list of the classes).  With ``max_outputs``, refuses at
        once (:class:`~exactdp.errors.TooManyOutputsError`, before yielding anything) when
        the support ``C(d, k)`` is larger."""
        self._check_size(max_outputs)
        return (self._unrank(a, r) for a, c in enumerate(self.iter_classes()) for r in range(c.size))

    def group_index(self, output: OutputLike) -> int:
        """Index in :meth:`groups` of the class of ``output`` (validated)."""
        h, t = self._key_of(output)
        return 0 if t == self.k else 1 + h * (self.d - self.k) + (t - self.k - 1)

    def _unrank(self, a: int, r: int) -> frozenset[int]:
        """The ``r``-th member of the ``a``-th class (inverse of :meth:`group_index`)."""
        if a == 0:
            h, t = self.k - 1, self.k
        else:
            h, rest = divmod(a - 1, self.d - self.k)
            t = self.k + 1 + rest
        return self._member(h, t, r)

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

        def w(num: int) -> arb:  # w(-num/q) = exp(-lam * num / q)
            return arb(1) if num == 0 else (-(lam * rational_ball(Fraction(num, c.q)))).exp()

        eA = [w(a) for a in c.A]
        eB = [arb(1)] + [w(b) for b in c.B]
        W1 = [arb(m) * e for m, e in zip(self._tail_binoms, eB)]
        got = {"eA": eA, "W1": W1, "Z1": sum(W1, arb(0))}
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
        return p_t * wt["eA"][h] / sum(self._stage2_terms(t), arb(0))  # size cancels

    def _class_output_log_ball(self, h: int, t: int) -> arb:
        """Enclosure of ``log P(one subset of (h, t))`` as a sum of non-positive terms
        ``-log1p(others/own)`` (no cancellation, full relative accuracy near 1)."""
        W1 = self._weights()["W1"]
        i = t - self.k
        others = sum((w for j, w in enumerate(W1) if j != i), arb(0))
        total = -(others / W1[i]).log1p()
        if t == self.k:
            return total
        terms = self._stage2_terms(t)
        others2 = sum((w for j, w in enumerate(terms) if j != h), arb(0))
        total -= (others2 / terms[h]).log1p()
        size = self.classes_.size(h, t)
        if size > 1:
            total -= arb(size).log()
        return total

    def _extra_bits(self) -> int:
        return 2 * (self.d + self.k).bit_length() + 8

    def _certify(self, compute: Callable[[], list[arb]], dps: int) -> list[mpmath.mpf]:
        return certify_many(compute, dps, extra_bits=self._extra_bits())

    # -- group hooks: the two-stage law ------------------------------------------------------
    def _group_probability(self, key: tuple[int, int], dps: int) -> mpmath.mpf:
        """``P(t) P(h|t) / size``, certified to relative error ``10**-dps``."""
        return certify(lambda: self._class_output_ball(*key), dps, extra_bits=self._extra_bits())

    def _group_log_probability(self, key: tuple[int, int], dps: int) -> mpmath.mpf:
        return certify(lambda: self._class_output_log_ball(*key), dps, extra_bits=self._extra_bits())

    def _group_output_probabilities(self, groups: Sequence[Level], dps: int) -> list[mpmath.mpf]:
        """The balls of :meth:`_class_output_ball`, with each tail's stage-2 sum formed once
        (not once per class: ``O(k d)`` ball operations instead of ``O(k^2 d)``)."""
        k = self.k

        def compute() -> list[arb]:
            wt = self._weights()
            eA, W1, Z1 = wt["eA"], wt["W1"], wt["Z1"]
            sums: dict[int, arb] = {}
            out = []
            for g in groups:
                h, t = g.utility
                p_t = W1[t - k] / Z1
                if t == k:
                    out.append(p_t)
                    continue
                z2 = sums.get(t)
                if z2 is None:
                    z2 = sums[t] = sum(self._stage2_terms(t), arb(0))
                out.append(p_t * eA[h] / z2)
            return out

        return self._certify(compute, dps)

    def _group_probability_exact(self, key: Hashable) -> sympy.Expr:
        """The exact probability as a sympy expression: a Rational when ``base`` is given
        and every weight exponent ``rho*(x_(k)-x_(t))``, ``(1-rho)*(x_(h+1)-x_(k))`` is an
        integer; otherwise a sum of exponentials, for at most
        :data:`~exactdp.rules.exponential.SYMBOLIC_LEVELS_LIMIT` stage-1 terms
        (:class:`~exactdp.errors.NoClosedFormError` beyond)."""
        h, t = cast("tuple[int, int]", key)
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
        w: Callable[[int], Any]
        if rational:
            base = cast(Fraction, scale.base)  # rational: scale.is_rational means a base is set
            top = max([0] + [a // q for a in c.A] + [b // q for b in c.B])
            bits = top * max(base.numerator.bit_length(), base.denominator.bit_length())
            if bits > EXACT_BITS_LIMIT:
                raise NoClosedFormError(
                    None, None,
                    f"probability_exact: weights base**{top} need about {bits} bits "
                    f"(EXACT_BITS_LIMIT = {EXACT_BITS_LIMIT}); use probability(output, dps=...)",
                )
            w = lambda num: base ** (num // q)  # noqa: E731
            add: Callable[[list], Any] = lambda terms: sum(terms, Fraction(0))  # noqa: E731
        else:  # the stage weights base**(A_h/q), base**(B_t/q) of the closed form
            check_symbolic_bits(scale.base, list(c.A) + list(c.B), q)
            w = lambda num: scale.symbolic_weight(Fraction(-num, q))  # noqa: E731
            add = lambda terms: sympy.Add(*terms)  # noqa: E731
        B = [0] + c.B
        terms1 = [self._tail_binoms[i] * w(B[i]) for i in range(n_terms)]
        p = terms1[t - k] / add(terms1)
        if t != k:
            terms2 = [int(gmpy2.comb(t - j - 2, k - j - 1)) * w(c.A[j]) for j in range(k)]
            p = p * w(c.A[h]) / add(terms2)
        if rational:
            return sympy.Rational(p.numerator, p.denominator)
        return p

    def _sample(self, gen: random.Random) -> frozenset[int]:
        """Tail, head, then a uniform member of the class (integer randomness)."""
        k = self.k
        i = choose_index(lambda prec: self._cumulative(("c1",), lambda: self._weights()["W1"]), self.d - k + 1, gen)
        t = k + i
        if t == k:
            h = k - 1
        else:
            h = choose_index(lambda prec: self._cumulative(("c2", t), lambda: self._stage2_terms(t)), k, gen)
        return self._member(h, t, gen.randrange(self.classes_.size(h, t)))

    def _cumulative(self, name: tuple, values: Callable[[], list[arb]]) -> list[arb]:
        """Running sums of ``values()`` at flint's current precision, cached."""
        key = name + (ctx.prec,)
        got = self._cache.get(key)
        if got is None:
            if len(self._cache) > _CUMULATIVE_CACHE:
                self._cache.clear()
            got = self._cache[key] = list(accumulate(values()))
        return got

    # -- the two stages ------------------------------------------------------------------------
    def class_probability(self, h: int, t: int, dps: Optional[int] = None) -> mpmath.mpf:
        """``P(t) * P(h | t)``: probability that the output lies in class ``(h, t)``
        (validated), certified to ``dps`` digits (``None``: the default, 30)."""
        h, t = self.classes_.check_class(h, t)
        size = self.classes_.size(h, t)
        return self._certify(lambda: [self._class_output_ball(h, t) * size], as_dps(dps))[0]

    def tail_probabilities(self, dps: Optional[int] = None) -> list[tuple[int, mpmath.mpf]]:
        """``(t, P(t))`` for ``t = k..d`` (stage 1), certified to ``dps`` digits (``None``:
        the default, 30)."""
        vals = self._certify(lambda: [w / self._weights()["Z1"] for w in self._weights()["W1"]], as_dps(dps))
        return list(zip(range(self.k, self.d + 1), vals))

    def class_probabilities(self, dps: Optional[int] = None) -> list[tuple[int, int, mpmath.mpf]]:
        """``(h, t, P(t) P(h|t))`` for every class in :meth:`classes` order, certified to
        ``dps`` digits (``None``: the default, 30)."""
        k, d = self.k, self.d

        def compute() -> list[arb]:
            wt = self._weights()
            eA, W1, Z1 = wt["eA"], wt["W1"], wt["Z1"]
            Z2 = [arb(0)] * (d + 1)
            terms: list[Optional[arb]] = []
            for h, t, size, _ in self.classes_.iter_keys():
                if t == k:
                    terms.append(None)
                    continue
                term = arb(int(size)) * eA[h]
                terms.append(term)
                Z2[t] += term
            out = []
            for (h, t, _, _), term in zip(self.classes_.iter_keys(), terms):
                out.append(W1[0] / Z1 if term is None else W1[t - k] * term / (Z1 * Z2[t]))
            return out

        vals = self._certify(compute, as_dps(dps))
        return [(h, t, p) for (h, t, _, _), p in zip(self.classes_.iter_keys(), vals)]
