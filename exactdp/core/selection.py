"""The selection-rule interface: how a mechanism's levels become a distribution.

A mechanism (docs/definitions.md §2) is an output space, an exact utility, exact level
multiplicities and a *selection rule*.  The rule sees only the
:class:`~exactdp.core.levels.LevelTable` (levels best first plus the
:class:`~exactdp.core.scale.Scale` that weighs a unit of utility) and answers: the
probability of one output of level ``a``, of the whole level, its log, an exact symbolic
form, and an exact sample of a level index.  The output within a level is then uniform,
which the mechanism draws by unranking a uniform integer.

The rules themselves live in :mod:`exactdp.rules`: the exponential mechanism and
permute-and-flip.
"""

from __future__ import annotations

import abc
import random
from typing import Any, Callable, Iterator, NamedTuple, Optional

import mpmath

from .lazy import sympy
from .levels import LevelTableLike

__all__ = ["SelectionRule", "FixedLogOutput"]


class FixedLogOutput(NamedTuple):
    """The log-probability of one output of every level of a table in fixed point at
    ``F`` fractional bits (:meth:`SelectionRule.fixed_log_output`).

    Levels ``a < head``: ``entries(start, stop)`` gives the integers standing for ``ln
    P_a`` of the levels ``start <= a < stop`` (computed when asked, so that no list of
    the head is held); later levels: ``offset`` stands for ``ln P_a - lam (u_a - u_0)``
    (``lam`` the table's weight exponent: ``p_a = e^(lam (u_a - u_0))``).  Both
    ``|entry - 2**F ln P_a|`` and ``|offset - 2**F (ln P_a - lam (u_a - u_0))|`` are at
    most the rule's :attr:`SelectionRule.fixed_log_output_error` ulps (``2**-F``); the
    caller adds ``lam (u_a - u_0)`` in fixed point with its own bound."""

    offset: int
    head: int = 0
    entries: Optional[Callable[[int, int], list[int]]] = None


class SelectionRule(abc.ABC):
    """How a mechanism turns levels into a distribution.  One instance serves any table."""

    name: str = "abstract"

    #: The bound in ulps of :meth:`fixed_log_output`'s entries (known before ``F`` is
    #: chosen); ``None``: the rule has no such form.
    fixed_log_output_error: Optional[int] = None

    def fixed_log_output(self, table: LevelTableLike, frac_bits: int, dps: int) -> FixedLogOutput:
        """Every level's ``ln P_a`` (one output) of ``table`` as a :class:`FixedLogOutput` at
        ``frac_bits`` fractional bits, within :attr:`fixed_log_output_error` ulps; ``dps``:
        the digits the caller certifies (for the rule's precision limits)."""
        raise NotImplementedError(f"{type(self).__name__} has no fixed-point log-output form")

    @abc.abstractmethod
    def output_probability(self, table: LevelTableLike, a: int, dps: int) -> mpmath.mpf:
        """Probability of one particular output of level ``a`` (an index into ``table``'s
        levels, 0 for the best) of the :class:`~exactdp.core.levels.LevelTable` ``table``, to
        ``dps`` certified digits."""

    def utility_probability(self, table: LevelTableLike, utility: Any, dps: int) -> mpmath.mpf:
        """:meth:`output_probability` of the level of ``table`` with the exact utility value
        ``utility`` (KeyError when no output has it), to ``dps`` certified digits; a rule
        whose value needs no level index but the utility may find no level (the exponential
        mechanism over a lazy table)."""
        return self.output_probability(table, table.index_of(utility), dps)

    def utility_log_probability(self, table: LevelTableLike, utility: Any, dps: int) -> mpmath.mpf:
        """:meth:`output_log_probability` of the level of ``table`` with ``utility``, to
        ``dps`` certified digits (see :meth:`utility_probability`)."""
        return self.output_log_probability(table, table.index_of(utility), dps)

    @abc.abstractmethod
    def output_log_probability(self, table: LevelTableLike, a: int, dps: int) -> mpmath.mpf:
        """Natural log of :meth:`output_probability` of one output of level ``a`` of ``table``,
        to ``dps`` certified digits."""

    @abc.abstractmethod
    def level_probabilities(self, table: LevelTableLike, dps: int) -> list[mpmath.mpf]:
        """Probability that the output lies in each level of ``table`` (best first), to
        ``dps`` certified digits."""

    def iter_level_probabilities(self, table: LevelTableLike, dps: int) -> Iterator[mpmath.mpf]:
        """:meth:`level_probabilities` of ``table`` (to ``dps`` certified digits) one at a
        time, best level first.  Rules that can
        work block by block (:class:`~exactdp.core.level_blocks.BlockLevelTable`) stream
        without holding every value; this default computes the list first."""
        return iter(self.level_probabilities(table, dps))

    @abc.abstractmethod
    def output_probability_exact(self, table: LevelTableLike, a: int) -> sympy.Expr:
        """The exact probability of one output of level ``a`` (an index into ``table``'s
        levels) as a sympy expression."""

    @abc.abstractmethod
    def sample_level(self, table: LevelTableLike, rng: random.Random) -> int:
        """An exact sample of a level index of ``table``, drawn with the integer randomness
        of ``rng`` (a :class:`random.Random`; no float is drawn from it)."""

    def sample_levels(self, table: LevelTableLike, rng: random.Random, n: int) -> list[int]:
        """``n`` independent exact samples of a level index of ``table``, in draw order,
        drawn with ``rng`` (see :meth:`sample_level`).

        By default ``n`` calls of :meth:`sample_level`; a rule may batch them (reading
        ``rng`` in another order) as long as each draw keeps the same law.
        """
        return [self.sample_level(table, rng) for _ in range(n)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
