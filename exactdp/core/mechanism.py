"""The common shape of every mechanism: output space, exact utility, levels, selection rule.

A concrete mechanism (one module per paper object) subclasses :class:`Mechanism` and
provides only what is specific to it:

- ``_compute_levels()``: the exact levels, best first, *without* enumerating outputs;
- ``_utility(output)``: the exact utility of one validated output;
- ``_unrank(a, r)``: the ``r``-th output (``0 <= r < m_a``) of level ``a``, a bijection,
  which gives both ``outputs()`` and exact uniform sampling within a level;
- ``output_kind``: ``"sequence"`` (tuples) or ``"set"`` (frozensets);
- ``rule``: the :class:`~exactdp.core.selection.SelectionRule`.

Everything in docs/definitions.md §3 (the public API) is then implemented here once.
"""

from __future__ import annotations

import abc
import random
from fractions import Fraction
from typing import Any, Iterable, Iterator, Optional, SupportsIndex

import mpmath
from ._lazy import sympy

from ._typing import CountsLike, Output, OutputLike, RationalLike, RngLike
from ..errors import InvalidParameterError, TooManyOutputsError
from .levels import Level, Utility
from .ranking import Ranking
from .scale import Scale
from .levels import LevelTable
from .selection import SelectionRule
from .validation import (
    as_base,
    as_counts,
    as_dps,
    as_epsilon,
    as_k,
    as_nonnegative_int,
    as_positive_int,
    as_rng,
    as_sensitivity,
    as_sequence_output,
    as_set_output,
)

__all__ = ["Mechanism", "JointFamily", "make_scale", "check_output_count"]



def make_scale(epsilon: Optional[RationalLike], base: Optional[RationalLike], divisor: Fraction) -> Scale:
    """The :class:`Scale` from the user's ``epsilon``/``base`` (``epsilon`` defaults to 1)."""
    if epsilon is not None and base is not None:
        raise InvalidParameterError(
            "base", base, f"give either epsilon or base, not both (epsilon={epsilon!r})"
        )
    if base is not None:
        return Scale(base=as_base(base), divisor=divisor)
    return Scale(epsilon=as_epsilon(1 if epsilon is None else epsilon), divisor=divisor)


def check_output_count(size: int, max_outputs: Optional[int]) -> None:
    """Refuse (:class:`TooManyOutputsError`) to enumerate ``size`` outputs past ``max_outputs``."""
    if max_outputs is None:
        return
    limit = as_positive_int(max_outputs, "max_outputs")
    if size > limit:
        raise TooManyOutputsError(
            "max_outputs", limit, f"the mechanism has {size} outputs; raise max_outputs to enumerate them"
        )


class Mechanism(abc.ABC):
    """Base class: validated ``counts`` and ``k``, the ranking, and every public method."""

    output_kind: str = "sequence"
    rule: SelectionRule

    def __init__(self, counts: CountsLike, k: SupportsIndex):
        self.counts: tuple[int, ...] = as_counts(counts)
        self.d: int = len(self.counts)
        self.k: int = as_k(k, self.d)
        self.ranking = Ranking(self.counts)
        self._table: Optional[LevelTable] = None

    # -- what subclasses provide -------------------------------------------------------
    scale: Scale

    @abc.abstractmethod
    def _compute_levels(self) -> Iterable[Level]:
        """Exact levels, best first (never by enumerating outputs)."""

    @abc.abstractmethod
    def _utility(self, output: Output) -> Utility:
        """Exact utility of a validated output."""

    @abc.abstractmethod
    def _unrank(self, a: int, r: int) -> Output:
        """The ``r``-th output of level ``a``; a bijection from ``range(m_a)``."""

    # -- shared machinery --------------------------------------------------------------
    @property
    def table(self) -> LevelTable:
        if self._table is None:
            self._table = LevelTable(tuple(self._compute_levels()), self.scale)
        return self._table

    def _check_output(self, output: Iterable[Any]) -> Output:
        if self.output_kind == "set":
            return as_set_output(output, self.d, self.k)
        return as_sequence_output(output, self.d, self.k)

    def _level_of(self, output: Iterable[Any]) -> int:
        o = self._check_output(output)
        try:
            return self.table.index_of(self._utility(o))
        except KeyError:  # pragma: no cover - would be a bug in _compute_levels
            raise AssertionError(f"utility of {o} is not a level of {self!r}") from None

    # -- public API (docs/definitions.md §3) ------------------------------------
    def levels(self) -> tuple[Level, ...]:
        """Every distinct utility with its exact multiplicity, best first."""
        return self.table.levels

    def support_size(self) -> int:
        """Exact number of outputs with non-zero probability."""
        return sum(self.table.multiplicities)

    def utility(self, output: OutputLike) -> Utility:
        """Exact utility of ``output`` (validated: length k, distinct, known ids)."""
        return self._utility(self._check_output(output))

    def probability(self, output: OutputLike, dps: Optional[int] = None) -> mpmath.mpf:
        """Probability of ``output`` with relative error at most ``10**-dps`` (default 30),
        certified by interval arithmetic (:mod:`exactdp.core.precision`)."""
        return self.rule.output_probability(self.table, self._level_of(output), as_dps(dps))

    def log_probability(self, output: OutputLike, dps: Optional[int] = None) -> mpmath.mpf:
        """Natural log of :meth:`probability`, relative error at most ``10**-dps``."""
        return self.rule.output_log_probability(self.table, self._level_of(output), as_dps(dps))

    def probability_exact(self, output: OutputLike) -> sympy.Expr:
        """The exact probability as a sympy expression (a Rational with a rational base).

        Raises :class:`~exactdp.errors.NoClosedFormError` naming the limit when the closed
        form would be too large to build.
        """
        return self.rule.output_probability_exact(self.table, self._level_of(output))

    def level_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(Level, probability that the output lies in it)`` for every level, certified."""
        probs = self.rule.level_probabilities(self.table, as_dps(dps))
        return list(zip(self.table.levels, probs))

    def outputs(self, max_outputs: Optional[int] = None) -> Iterator[Output]:
        """Every output with non-zero probability, best level first (lazily).

        With ``max_outputs``, refuses at once (before yielding anything) when the
        support is larger.
        """
        self._check_size(max_outputs)
        return (self._unrank(a, r) for a, level in enumerate(self.table.levels) for r in range(level.multiplicity))

    def level_output_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(Level, probability of one particular output of that level)`` for every
        level, certified to ``dps`` digits (every output of a level is equally likely)."""
        digits = as_dps(dps)
        return [(lv, self.rule.output_probability(self.table, a, digits)) for a, lv in enumerate(self.table.levels)]

    # -- probability groups: what the oracle (audit, certify) works over -------------
    def groups(self) -> tuple[Level, ...]:
        """The probability groups: ``Level(key, size)`` where every output of one group has
        the same probability.  Utility levels by default (``groups() == levels()``);
        Peeling's count sequences; CanonicalGamma1's ``(h, t)`` classes."""
        return self.levels()

    def group_index(self, output: OutputLike) -> int:
        """Index in :meth:`groups` of ``output`` (validated)."""
        return self.table.index_of(self.utility(output))

    def group_output_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(group, probability of one particular output of it)`` for every group, certified."""
        return self.level_output_probabilities(dps)

    def distribution(self, dps: Optional[int] = None, max_outputs: int = 10**6) -> list[tuple[Output, mpmath.mpf]]:
        """Every output with its certified probability; refuses past ``max_outputs``."""
        digits = as_dps(dps)
        self._check_size(max_outputs)
        per_level = [p for _, p in self.level_output_probabilities(digits)]
        return [
            (self._unrank(a, r), per_level[a])
            for a, level in enumerate(self.table.levels)
            for r in range(level.multiplicity)
        ]

    def sample(self, rng: RngLike = None) -> Output:
        """One output drawn exactly from the mechanism (integer randomness only).

        ``rng``: ``None`` (OS generator), an int seed, or a :class:`random.Random`.  The
        level is chosen by :meth:`SelectionRule.sample_level`, then the output uniformly
        within it by unranking ``rng.randrange(m)``.
        """
        gen = as_rng(rng)
        return self._sample(gen)

    def samples(self, n: SupportsIndex, rng: RngLike = None) -> list[Output]:
        """``n >= 0`` independent exact samples from one generator."""
        count = as_nonnegative_int(n, "n")
        gen = as_rng(rng)
        return [self._sample(gen) for _ in range(count)]

    def _sample(self, gen: random.Random) -> Output:
        a = self.rule.sample_level(self.table, gen)
        return self._unrank(a, gen.randrange(self.table.multiplicities[a]))

    def _check_size(self, max_outputs: Optional[int]) -> None:
        check_output_count(self.support_size(), max_outputs)

    def _params(self) -> str:
        return self.scale.describe()

    def __repr__(self) -> str:
        counts = repr(list(self.counts)) if self.d <= 12 else f"<{self.d} counts>"
        return f"{type(self).__name__}({counts}, k={self.k}, {self._params()})"


class JointFamily(Mechanism):
    """Mechanisms weighted ``exp(epsilon * u / (2 * sensitivity))`` or ``base**(-u)``
    (the Joint paper's Equation 1; Joint, PNFJoint, JointSet)."""

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, sensitivity: RationalLike = 1):
        super().__init__(counts, k)
        self.sensitivity = as_sensitivity(sensitivity)
        self.scale = make_scale(epsilon, base, 2 * self.sensitivity)
        self.epsilon = self.scale.epsilon
        self.base = self.scale.base

    def _params(self) -> str:
        s = self.scale.describe().split(", divisor")[0]
        return s + (f", sensitivity={self.sensitivity}" if self.sensitivity != 1 else "")
