"""The public API of every mechanism, written once over its probability groups.

A mechanism's outputs fall into *probability groups*: every output of one group has the
same probability.  A concrete mechanism (one module per paper object) subclasses
:class:`Mechanism`.  A mechanism that is one selection rule over utility levels (Joint,
PNFJoint, JointSet, Canonical) provides only:

- ``_compute_levels()``: the exact levels, best first, *without* enumerating outputs;
- ``_utility(output)``: the exact utility of one validated output;
- ``_unrank(a, r)``: the ``r``-th output (``0 <= r < m_a``) of level ``a``, a bijection,
  which gives both ``outputs()`` and exact uniform sampling within a level;
- ``output_kind``: ``"sequence"`` (tuples) or ``"set"`` (frozensets);
- ``rule``: the :class:`~exactdp.core.selection.SelectionRule`;
- ``scale``: the :class:`~exactdp.core.scale.Scale` (``epsilon``/``base`` derive from it).

Its groups are then its levels, and the group hooks below default to ``rule`` over the
:class:`~exactdp.core.levels.LevelTable`.  A mechanism that is not one rule over levels
(Peeling's count sequences, CanonicalGamma1's ``(h, t)`` classes) overrides the hooks:

- ``groups()``, ``group_index(output)``: the groups and where an output lies (``_unrank``
  then takes a group index);
- ``_group_key(output)``: what an output's probability depends on (default: its utility);
- ``_group_probability(key, dps)``, ``_group_log_probability(key, dps)``,
  ``_group_probability_exact(key)``: one output of the group with that key;
- ``_group_output_probabilities(groups, dps)``: one output of each of ``groups``;
- ``_sample(gen)``: one exact draw of an output; ``_samples(n, gen)`` (by default ``n``
  calls of ``_sample``) and ``_samples_array(n, gen)``: many at once.

Everything in docs/definitions.md §3 (the public API) is implemented here once over these.
"""

from __future__ import annotations

import abc
import random
from fractions import Fraction
from typing import Any, Callable, ClassVar, Hashable, Iterable, Iterator, Optional, Sequence, SupportsIndex, Union

import mpmath
import numpy as np
from .lazy import sympy

from .aliases import CountsLike, Output, OutputLike, RationalLike, RngLike
from ..errors import ArgumentTypeError, InvalidParameterError, NoLevelArraysError, TooManyOutputsError
from .formatting import exact_text, int_text
from .level_blocks import DEFAULT_MEMORY_BUDGET
from .levels import Level, LevelTable, LevelTableLike, Utility
from .ranking import Ranking
from .scale import Scale
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

__all__ = ["Mechanism", "JointFamily", "make_scale", "check_output_count", "ids_dtype"]


def make_scale(epsilon: Optional[RationalLike], base: Optional[RationalLike], divisor: Fraction) -> Scale:
    """The :class:`Scale` from the user's ``epsilon``/``base`` (``epsilon`` defaults to 1;
    giving both is an error), ``epsilon`` divided by the exact ``divisor`` (a positive
    Fraction: ``2 * sensitivity`` for the exponential-mechanism family)."""
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


def ids_dtype(d: int) -> np.dtype:
    """The dtype of ``samples(..., as_array=True)`` over ``d`` items: ``numpy.int32`` when
    every id ``0 <= i < d`` fits (``d < 2**31``), ``numpy.int64`` otherwise."""
    return np.dtype(np.int32) if d < 2**31 else np.dtype(np.int64)


class Mechanism(abc.ABC):
    """Base class: validated ``counts`` and ``k``, the ranking, and every public method.

    What the oracle may ask is declared here too, each with its "not provided" default, and is
    never found by reflection:

    - ``groups_rule()``: the rule whose utility levels are the groups (one output of level ``a``
      has the rule's probability over :attr:`table`), so that the oracle may read the
      rule's batched forms over the table; by default ``rule``.  A mechanism that overrides the
      group hooks with another law (Peeling, CanonicalGamma1, the set views) returns None;
    - ``counts_pairs`` with ``pair_cells(other)``: the occurring pairs ``(group index here,
      group index under other)`` with ``[witness output, exact number of outputs]``, counted
      without enumerating outputs, or None when the count does not apply; and
      ``pair_count_declined(other)``, why (for a limit message).  The oracle asks only when
      both sides declare ``counts_pairs`` (Joint and PNFJoint, JointSet);
    - ``pair_head(other, depth)``: the cells of the outputs at level ``M <= depth`` with
      ``other``, counted down to ``depth`` only, or None (Joint and PNFJoint provide it).

    The level table is any table of :class:`~exactdp.core.levels.LevelTableLike`: a
    :class:`~exactdp.core.levels.LevelTable` by default, a block table where the levels are
    found in blocks within a memory budget (Joint, JointSet, Canonical).
    """

    output_kind: str = "sequence"
    rule: SelectionRule
    #: The weight of one unit of utility, stored once (``epsilon`` and ``base`` derive from it).
    scale: Scale
    #: Whether exchanging two items of equal count maps the distribution to itself.  The
    #: audits visit one output per orbit of tied items, and one neighbour per class of tied
    #: items, only when this holds for every mechanism involved; a mechanism whose law
    #: depends on how ties are ranked sets it to False.
    ties_exchangeable: bool = True
    #: The bytes a mechanism's level blocks may hold at once (Joint, JointSet, Canonical set
    #: it; ``None``: the mechanism keeps no blocks); ``repr`` shows one other than the default.
    memory_budget: Optional[int] = None
    #: The attributes that only cache what is recomputed on demand (the level table,
    #: certified balls, weight trees), each with a factory of its fresh value.  A pickle or
    #: a copy leaves them out (flint's balls cannot be pickled), so a mechanism that has
    #: been used pickles, deep-copies and goes to a process pool like a fresh one, with
    #: the same results.  A subclass with caches of its own extends the mapping.
    _CACHES: ClassVar[dict[str, Callable[[], Any]]] = {"_table": lambda: None}
    #: Whether :meth:`pair_cells` counts a pair's cells without enumeration (class docstring).
    counts_pairs: ClassVar[bool] = False

    def __init__(self, counts: CountsLike, k: SupportsIndex):
        self.counts: tuple[int, ...] = as_counts(counts)
        self.d: int = len(self.counts)
        self.k: int = as_k(k, self.d)
        self.ranking = Ranking(self.counts)
        self._table: Optional[LevelTableLike] = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in self._CACHES:
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name, fresh in self._CACHES.items():
            setattr(self, name, fresh())

    @property
    def epsilon(self) -> Optional[Fraction]:
        """The privacy parameter as an exact rational (``None`` when built from ``base``)."""
        return self.scale.epsilon

    @property
    def base(self) -> Optional[Fraction]:
        """The exact rational base (``None`` when built from ``epsilon``)."""
        return self.scale.base

    # -- what level mechanisms provide ---------------------------------------------------
    @abc.abstractmethod
    def _compute_levels(self) -> Iterable[Level]:
        """Exact levels, best first (never by enumerating outputs)."""

    @abc.abstractmethod
    def _utility(self, output: Output) -> Utility:
        """Exact utility of a validated output."""

    @abc.abstractmethod
    def _unrank(self, a: int, r: int) -> Output:
        """The ``r``-th output of group ``a``; a bijection from ``range(size of group a)``."""

    # -- group hooks: by default the rule over the level table ------------------------------
    def _group_key(self, output: Output) -> Hashable:
        """What the probability of a validated output depends on: by default its utility."""
        return self._utility(output)

    def _group_probability(self, key: Any, dps: int) -> mpmath.mpf:
        """Certified probability of one output of the group with ``key``."""
        return self.rule.utility_probability(self.table, key, dps)

    def _group_log_probability(self, key: Any, dps: int) -> mpmath.mpf:
        """Certified log of :meth:`_group_probability`."""
        return self.rule.utility_log_probability(self.table, key, dps)

    def _group_probability_exact(self, key: Any) -> sympy.Expr:
        """Exact probability of one output of the group with ``key``."""
        return self.rule.output_probability_exact(self.table, self.table.index_of(key))

    def _group_output_probabilities(self, groups: Sequence[Level], dps: int) -> list[mpmath.mpf]:
        """Certified probability of one output of each of ``groups``."""
        return [self._group_probability(g.utility, dps) for g in groups]

    def _sample(self, gen: random.Random) -> Output:
        """One exact draw: the level by the rule, then a uniform output of it by unranking."""
        a = self.rule.sample_level(self.table, gen)
        return self._unrank(a, gen.randrange(self.table.multiplicities[a]))

    def _samples(self, n: int, gen: random.Random) -> list[Output]:
        """``n`` independent exact draws in order; by default ``n`` calls of :meth:`_sample`.  A
        mechanism may batch them (reading ``gen`` in another order) if every draw keeps its law."""
        return [self._sample(gen) for _ in range(n)]

    def _samples_array(self, n: int, gen: random.Random) -> np.ndarray:
        """:meth:`_samples` as an ``(n, k)`` array of item ids of dtype :func:`ids_dtype`
        (a set output as its ids in increasing order); a batching mechanism builds the
        array directly."""
        draws = self._samples(n, gen)
        if self.output_kind == "set":
            draws = [sorted(o) for o in draws]
        return np.array(draws, dtype=ids_dtype(self.d)).reshape(n, self.k)

    # -- what the oracle may ask (class docstring): declared here, with "not provided" --------
    def groups_rule(self) -> Optional[SelectionRule]:
        """The rule whose levels are the groups: :attr:`rule`, or None for another group law."""
        return self.rule

    def pair_cells(self, other: "Mechanism") -> Optional[dict[tuple[int, int], list]]:
        """The cells of the pair with ``other`` counted without enumeration; None: not provided."""
        return None

    def pair_count_declined(self, other: "Mechanism") -> str:
        """Why :meth:`pair_cells` declines ``other`` (``""``: it does not, or no reason)."""
        return ""

    def pair_head(self, other: "Mechanism", depth: Optional[int] = None) -> Optional[object]:
        """The pair's cells with ``other`` down to ``depth`` only; None: not provided."""
        return None

    # -- shared machinery --------------------------------------------------------------
    @property
    def table(self) -> LevelTableLike:
        """The level table :attr:`rule` acts on, built by :meth:`_make_table` on first use."""
        if self._table is None:
            self._table = self._make_table()
        return self._table

    def _make_table(self) -> LevelTableLike:
        """The level table the rule acts on (by default every level in memory)."""
        return LevelTable(tuple(self._compute_levels()), self.scale)

    def _check_output(self, output: Iterable[Any]) -> Output:
        if self.output_kind == "set":
            return as_set_output(output, self.d, self.k)
        return as_sequence_output(output, self.d, self.k)

    def _key_of(self, output: Iterable[Any]) -> Hashable:
        return self._group_key(self._check_output(output))

    # -- levels ------------------------------------------------------------------------
    def levels(self) -> tuple[Level, ...]:
        """Every distinct utility with its exact multiplicity, best first."""
        return self.table.levels

    def level_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(Level, probability that the output lies in it)`` for every level, certified to
        ``dps`` significant digits (``None``: the default, 30)."""
        digits = as_dps(dps)
        levels = self.levels()  # first: a mechanism may refuse them before building its table
        return list(zip(levels, self.rule.level_probabilities(self.table, digits)))

    def iter_levels(self) -> Iterator[Level]:
        """The levels of :meth:`levels`, best first, one at a time.  Joint, PNFJoint,
        JointSet and Canonical stream them from a block table without holding them all (see
        their ``memory_budget``) and Peeling by a depth-first walk; by default (a mechanism
        with neither) this iterates over :meth:`levels`."""
        return iter(self.levels())

    def iter_level_probabilities(self, dps: Optional[int] = None) -> Iterator[tuple[Level, mpmath.mpf]]:
        """The pairs of :meth:`level_probabilities` (certified to ``dps`` digits, default
        30), best level first, one at a time (streamed where :meth:`iter_levels` is)."""
        return iter(self.level_probabilities(dps))

    def iter_level_arrays(self, dps: Optional[int] = None) -> Iterator[object]:
        """Every level, best first, in blocks of arrays certified to ``dps`` digits (Joint,
        JointSet and Canonical provide it: see theirs).  By default a mechanism has none and raises
        :class:`~exactdp.errors.NoLevelArraysError` naming the streamed alternative,
        :meth:`iter_level_probabilities`."""
        raise NoLevelArraysError(
            None, None,
            f"{type(self).__name__} has no iter_level_arrays(); use iter_level_probabilities(), "
            "which streams its levels with their certified probabilities")

    def level_output_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(Level, probability of one particular output of that level)`` for every
        level, certified to ``dps`` digits (every output of a level is equally likely)."""
        levels = self.levels()
        return list(zip(levels, self._group_output_probabilities(levels, as_dps(dps))))

    # -- probability groups: what the oracle (audit, certify) works over -------------
    def groups(self) -> tuple[Level, ...]:
        """The probability groups: ``Level(key, size)`` where every output of one group has
        the same probability.  Utility levels by default (``groups() == levels()``);
        Peeling's count sequences; CanonicalGamma1's ``(h, t)`` classes."""
        return self.levels()

    def group_index(self, output: OutputLike) -> int:
        """Index in :meth:`groups` of ``output`` (validated)."""
        return self.table.index_of(self._key_of(output))

    def group_output_probabilities(self, dps: Optional[int] = None) -> list[tuple[Level, mpmath.mpf]]:
        """``(group, probability of one particular output of it)`` for every group, certified
        to ``dps`` digits (``None``: the default, 30)."""
        groups = self.groups()
        return list(zip(groups, self._group_output_probabilities(groups, as_dps(dps))))

    # -- public API (docs/definitions.md §3) ------------------------------------
    def support_size(self) -> int:
        """Exact number of outputs with non-zero probability."""
        return sum(g.multiplicity for g in self.groups())

    def utility(self, output: OutputLike) -> Utility:
        """Exact utility of ``output`` (validated: length k, distinct, known ids)."""
        return self._utility(self._check_output(output))

    def probability(self, output: OutputLike, dps: Optional[int] = None) -> mpmath.mpf:
        """Probability of ``output`` with relative error at most ``10**-dps`` (default 30),
        certified by interval arithmetic (:mod:`exactdp.core.precision`)."""
        return self._group_probability(self._key_of(output), as_dps(dps))

    def log_probability(self, output: OutputLike, dps: Optional[int] = None) -> mpmath.mpf:
        """Natural log of :meth:`probability` of ``output`` (validated), relative error at
        most ``10**-dps`` (default 30)."""
        return self._group_log_probability(self._key_of(output), as_dps(dps))

    def probability_exact(self, output: OutputLike) -> sympy.Expr:
        """The exact probability of ``output`` (validated) as a sympy expression (a Rational with
        a rational base); :class:`~exactdp.errors.NoClosedFormError` naming the limit when the
        closed form would be too large to build."""
        return self._group_probability_exact(self._key_of(output))

    def outputs(self, max_outputs: Optional[int] = None) -> Iterator[Output]:
        """Every output with non-zero probability, group by group (lazily); with ``max_outputs``,
        refused at once (before yielding anything) when the support is larger."""
        self._check_size(max_outputs)
        return (self._unrank(a, r) for a, g in enumerate(self.groups()) for r in range(g.multiplicity))

    def distribution(self, dps: Optional[int] = None, max_outputs: int = 10**6) -> list[tuple[Output, mpmath.mpf]]:
        """Every output with its probability certified to ``dps`` digits (``None``: the
        default, 30); refuses (:class:`~exactdp.errors.TooManyOutputsError`) when the
        support has more than ``max_outputs`` outputs (default ``10**6``)."""
        digits = as_dps(dps)
        self._check_size(max_outputs)
        return [
            (self._unrank(a, r), p)
            for a, (g, p) in enumerate(self.group_output_probabilities(digits))
            for r in range(g.multiplicity)
        ]

    def sample(self, rng: RngLike = None) -> Output:
        """One output drawn exactly from the mechanism (integer randomness only); ``rng``:
        ``None`` (OS generator), an int seed, or a :class:`random.Random`.  By default the level
        by :meth:`SelectionRule.sample_level`, then the output by unranking ``rng.randrange(m)``."""
        return self._sample(as_rng(rng))

    def samples(self, n: SupportsIndex, rng: RngLike = None, *,
                as_array: bool = False) -> Union[list[Output], np.ndarray]:
        """``n >= 0`` independent exact samples from one generator ``rng`` (integer randomness only): a
        list, or with ``as_array=True`` an ``(n, k)`` array of item ids (sets in increasing
        order; dtype :func:`ids_dtype`).  The law is :meth:`sample`'s, but a mechanism that batches
        (Joint, PNFJoint) reads the generator in another order than ``n`` calls of ``sample``."""
        count = as_nonnegative_int(n, "n")
        if not isinstance(as_array, bool):
            raise ArgumentTypeError("as_array", as_array, "must be True or False")
        gen = as_rng(rng)
        if as_array:
            return self._samples_array(count, gen)
        return self._samples(count, gen)

    def _check_size(self, max_outputs: Optional[int]) -> None:
        check_output_count(self.support_size(), max_outputs)

    # -- description -------------------------------------------------------------------
    def _parameters(self) -> dict[str, object]:
        """The constructor's keyword arguments beyond ``counts`` and ``k``, as ``repr`` shows
        them (``epsilon`` or ``base``, a ``memory_budget`` other than the default; subclasses
        add theirs)."""
        params: dict[str, object] = ({"base": self.scale.base} if self.scale.base is not None
                                     else {"epsilon": self.scale.epsilon})
        if self.memory_budget is not None and self.memory_budget != DEFAULT_MEMORY_BUDGET:
            params["memory_budget"] = self.memory_budget
        return params

    def __repr__(self) -> str:
        # every digit, through gmpy2: a count or epsilon past CPython's 4300-digit int/str
        # limit made repr() raise ValueError
        counts = f"[{', '.join(int_text(c) for c in self.counts)}]" if self.d <= 12 else f"<{self.d} counts>"
        shown = self._parameters()
        if "memory_budget" in shown:  # a resource, not a parameter of the law: last
            shown["memory_budget"] = shown.pop("memory_budget")
        params = ", ".join(f"{name}={value!r}" if isinstance(value, str) else f"{name}={exact_text(value)}"
                           for name, value in shown.items())
        return f"{type(self).__name__}({counts}, k={self.k}, {params})"


class JointFamily(Mechanism):
    """Mechanisms weighted ``exp(epsilon * u / (2 * sensitivity))`` or ``base**(-u)``
    (the Joint paper's Equation 1; Joint, PNFJoint, JointSet), over the non-negative
    integer ``counts`` (one per item) and outputs of ``k`` items.  ``epsilon`` (default 1)
    or ``base`` (a rational, ``0 < base < 1``), not both; ``sensitivity`` (default 1) divides
    ``epsilon``."""

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, sensitivity: RationalLike = 1):
        super().__init__(counts, k)
        self.sensitivity = as_sensitivity(sensitivity)
        self.scale = make_scale(epsilon, base, 2 * self.sensitivity)

    def _parameters(self) -> dict[str, object]:
        params = super()._parameters()
        if self.sensitivity != 1:
            params["sensitivity"] = self.sensitivity
        return params
