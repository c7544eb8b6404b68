"""Selection rules over utility levels, and the level table they act on.

A mechanism (docs/definitions.md §2) is an output space, an exact utility, exact level
multiplicities and a *selection rule*.  The rule sees only the :class:`LevelTable`
(levels best first plus the :class:`~exactdp.scale.Scale` that weighs a unit of utility)
and answers: the probability of one output of level ``a``, of the whole level, its log,
an exact symbolic form, and an exact sample of a level index.  The output within a level
is then uniform, which the mechanism draws by unranking a uniform integer.

This module holds the abstract :class:`SelectionRule` and the exponential mechanism
(McSherry & Talwar 2007; the Joint paper's Equation 1): ``P(o) = w(u(o)) / Z`` with
``Z = sum_a m_a w(u_a)``.  Permute-and-flip is the other rule (its own module).

>>> from fractions import Fraction
>>> from exactdp.levels import Level
>>> from exactdp.scale import Scale
>>> t = LevelTable([Level(0, 1), Level(-1, 2)], Scale(base=Fraction(1, 2)))
>>> em = ExponentialMechanism()
>>> em.output_probability_exact(t, 1)      # (1/2) / (1 + 2 * 1/2)
1/4
>>> [str(p) for p in em.level_probabilities(t, 20)]
['0.5', '0.5']
"""

from __future__ import annotations

import abc
import random
from fractions import Fraction
from typing import Any, Sequence

import gmpy2
import mpmath
from ._lazy import sympy
from flint import arb, ctx, fmpq

from .errors import NoClosedFormError
from .levels import Level, Utility, check_levels
from .precision import certify, certify_many
from .sampling import choose_index
from .scale import Scale

__all__ = ["LevelTable", "SelectionRule", "ExponentialMechanism", "SYMBOLIC_LEVELS_LIMIT", "EXACT_BITS_LIMIT", "EXACT_LEVELS_LIMIT"]

#: ``probability_exact`` builds a sympy sum over at most this many levels.
SYMBOLIC_LEVELS_LIMIT = 10_000
#: ...and, with a rational base, exact rationals of at most this many bits per term.
EXACT_BITS_LIMIT = 1 << 24
#: ...over at most this many levels.
EXACT_LEVELS_LIMIT = 10**7


class LevelTable:
    """Levels (best first) with the scale that weighs them; caches enclosures per precision.

    ``relative_weights()`` are the enclosures of ``e_a = w(u_a) / w(u_0)`` (so ``e_0 = 1``)
    at flint's current precision; ``level_weights()`` are ``m_a * e_a``; ``cumulative()``
    their running sums.  Working relative to the best level keeps every number <= 1 per
    output, whatever the size of the counts.
    """

    def __init__(self, levels: Sequence[Level], scale: Scale):
        self.levels = check_levels(levels)
        if not self.levels:
            raise AssertionError("a mechanism has at least one level")
        self.scale = scale
        # int/Fraction utilities for the numeric rules (which subtract them); Peeling's
        # count tuples (see levels.Utility) are only hashed and compared, by its own rule.
        self.utilities: tuple[Any, ...] = tuple(lv.utility for lv in self.levels)
        self.multiplicities = tuple(lv.multiplicity for lv in self.levels)
        self._index = {u: a for a, u in enumerate(self.utilities)}
        self._cache: dict[tuple[str, int], object] = {}
        self.extra_bits = 2 * len(self.levels).bit_length() + 8

    def __len__(self) -> int:
        return len(self.levels)

    def index_of(self, utility: Utility) -> int:
        """Level index of an exact utility value (KeyError when no output has it)."""
        return self._index[utility]

    def _cached(self, name: str, build):
        key = (name, ctx.prec)
        value = self._cache.get(key)
        if value is None:
            # Keep only the newest precision of each kind: tables can have ~10**6 levels.
            for old in [k for k in self._cache if k[0] == name]:
                del self._cache[old]
            value = build()
            self._cache[key] = value
        return value

    def relative_weights(self) -> list[arb]:
        def build():
            lam = self.scale.lam_ball()
            u0 = self.utilities[0]
            out = []
            for u in self.utilities:
                delta = u - u0
                if not delta:
                    out.append(arb(1))
                    continue
                if type(delta) is not int:
                    delta = Fraction(delta)
                    if delta.denominator != 1:
                        out.append((lam * arb(fmpq(delta.numerator, delta.denominator))).exp())
                        continue
                    delta = delta.numerator
                out.append((lam * delta).exp())
            return out

        return self._cached("relative", build)

    def level_weights(self) -> list[arb]:
        return self._cached(
            "level", lambda: [arb(m) * e for m, e in zip(self.multiplicities, self.relative_weights())]
        )

    def cumulative(self) -> list[arb]:
        def build():
            out, run = [], arb(0)
            for w in self.level_weights():
                run = run + w
                out.append(run)
            return out

        return self._cached("cumulative", build)

    def total(self) -> arb:
        """Enclosure of ``sum_a m_a e_a`` (the normaliser relative to the best level)."""
        return self.cumulative()[-1]


class SelectionRule(abc.ABC):
    """How a mechanism turns levels into a distribution.  One instance serves any table."""

    name: str = "abstract"

    @abc.abstractmethod
    def output_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        """Probability of one particular output of level ``a``, to ``dps`` certified digits."""

    @abc.abstractmethod
    def output_log_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        """Natural log of :meth:`output_probability`, to ``dps`` certified digits."""

    @abc.abstractmethod
    def level_probabilities(self, table: LevelTable, dps: int) -> list[mpmath.mpf]:
        """Probability that the output lies in each level, to ``dps`` certified digits."""

    @abc.abstractmethod
    def output_probability_exact(self, table: LevelTable, a: int) -> sympy.Expr:
        """The exact probability of one output of level ``a`` as a sympy expression."""

    @abc.abstractmethod
    def sample_level(self, table: LevelTable, rng: random.Random) -> int:
        """An exact sample of a level index."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ExponentialMechanism(SelectionRule):
    """``P(o) = w(u(o)) / sum_a m_a w(u_a)`` (the Joint paper's Equation 1).

    Numeric values are arb enclosures certified by :func:`exactdp.precision.certify`:
    relative error at most ``10**-dps``.  The log-probability of level ``a`` is
    ``-log1p(R_a)`` with ``R_a = (m_a - 1) + sum_{b != a} m_b e_b / e_a >= 0`` so that
    probabilities near 1 keep full relative accuracy in the log.
    """

    name = "exponential"

    def output_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        return certify(lambda: table.relative_weights()[a] / table.total(), dps, extra_bits=table.extra_bits)

    def output_log_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        def compute():
            weights = table.level_weights()
            e_a = table.relative_weights()[a]
            others = arb(0)
            for b, w in enumerate(weights):
                if b != a:
                    others += w
            r = (table.multiplicities[a] - 1) + others / e_a
            return -(r.log1p()) if not (r.is_exact() and r.is_zero()) else arb(0)

        return certify(compute, dps, extra_bits=table.extra_bits)

    def level_probabilities(self, table: LevelTable, dps: int) -> list[mpmath.mpf]:
        return certify_many(
            lambda: [w / table.total() for w in table.level_weights()], dps, extra_bits=table.extra_bits
        )

    def output_probability_exact(self, table: LevelTable, a: int) -> sympy.Expr:
        exact = _exact_rational_em(table, a)
        if exact is not None:
            return exact
        if len(table) > SYMBOLIC_LEVELS_LIMIT:
            raise NoClosedFormError(
                None, None,
                f"probability_exact: {len(table)} levels exceed the symbolic limit "
                f"SYMBOLIC_LEVELS_LIMIT = {SYMBOLIC_LEVELS_LIMIT}; use probability(output, dps=...)",
            )
        u0 = table.utilities[0]
        terms = [sympy.Integer(m) * table.scale.symbolic_weight(u - u0) for u, m in table.levels]
        z = sympy.Add(*terms)
        return table.scale.symbolic_weight(table.utilities[a] - u0) / z

    def sample_level(self, table: LevelTable, rng: random.Random) -> int:
        return choose_index(lambda prec: table.cumulative(), len(table), rng)


def _exact_rational_em(table: LevelTable, a: int) -> sympy.Rational | None:
    """Exact rational EM probability when the base is rational and utilities differ by
    integers: ``p^{E_a} q^{E_max - E_a} / sum_b m_b p^{E_b} q^{E_max - E_b}`` with
    ``base = p/q`` and ``E_b = u_0 - u_b``.  ``None`` when not applicable."""
    scale = table.scale
    if not scale.is_rational:
        return None
    u0 = table.utilities[0]
    gaps = [Fraction(u0 - u) for u in table.utilities]
    if any(g.denominator != 1 for g in gaps):
        return None
    exps = [int(g) for g in gaps]
    p, q = gmpy2.mpz(scale.base.numerator), gmpy2.mpz(scale.base.denominator)
    e_max = exps[-1]
    bits = e_max * max(int(p).bit_length(), int(q).bit_length())
    if bits > EXACT_BITS_LIMIT or len(table) > EXACT_LEVELS_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: the exact rational needs about {bits} bits per term over "
            f"{len(table)} levels (limits: EXACT_BITS_LIMIT = {EXACT_BITS_LIMIT} bits, "
            f"EXACT_LEVELS_LIMIT = {EXACT_LEVELS_LIMIT} levels); use probability(output, dps=...)",
        )
    terms = [p**e * q ** (e_max - e) for e in exps]
    z = sum(gmpy2.mpz(m) * t for m, t in zip(table.multiplicities, terms))
    return sympy.Rational(int(terms[a]), int(z))
