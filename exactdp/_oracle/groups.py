"""A mechanism's probability groups as the oracle (audit, certify) works over them.

Every mechanism splits its outputs into *probability groups* (``Mechanism.groups()``:
``Level(key, size)``, every output of a group equally likely): its utility levels, or
``CanonicalGamma1``'s ``(h, t)`` classes.  :class:`Groups` gives the oracle what it needs
from them, for any mechanism alike: an output's group (``None`` for an output of
probability 0), the certified probability of one output of each group and of each whole
group, and every output listed group by group.

The oracle never imports a mechanism module: it uses ``groups()``, ``group_index()``,
``group_output_probabilities()``, ``outputs()`` and ``output_kind``, and the capabilities
:class:`~exactdp.core.mechanism.Mechanism` declares.  A mechanism whose groups are its rule's
levels (``groups_rule()`` is not None) and whose rule offers the batched pass
(``output_probabilities``: the exponential mechanism and permute-and-flip) gets every
probability in that one pass instead; the exponential mechanism's ``log_form`` serves the
per-delta audits (:meth:`Groups.log_form`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import mpmath

from ..core.aliases import MechanismLike, Output, OutputLike
from ..core.mechanism import Mechanism
from ..core.precision import times_int
from ..errors import ArgumentTypeError, InvalidParameterError, MemoryBudgetError

if TYPE_CHECKING:
    from ..core.levels import Level

__all__ = ["Groups"]


def weight_key(mechanism: MechanismLike) -> Optional[tuple[Any, Any]]:
    """The exact key of the weight of one unit of utility of a mechanism whose groups are
    its rule's levels (:attr:`~exactdp.core.scale.Scale.weight_key` of its ``scale``, the
    scale its level table weighs with), None for any other."""
    if not isinstance(mechanism, Mechanism) or mechanism.groups_rule() is None:
        return None
    return mechanism.scale.weight_key


class Groups:
    """The probability groups of one mechanism, with certified probabilities (``dps``
    digits, computed once).

    >>> import exactdp
    >>> g = Groups(exactdp.Joint([3, 1, 0], 1, epsilon=1), 20)
    >>> [lv.multiplicity for lv in g.groups], g.index((1,)), g.support_size
    ([1, 1, 1], 1, 3)
    >>> [a for a, _ in g.enumerate(10, "a listing")]
    [0, 1, 2]
    """

    def __init__(self, mechanism: MechanismLike, dps: int):
        if not (callable(getattr(mechanism, "groups", None)) and callable(getattr(mechanism, "group_index", None))):
            raise ArgumentTypeError("mechanism", mechanism, "is not an exactdp mechanism (it has no groups() and "
                                    "group_index()): build one, e.g. exactdp.Joint(counts, k, epsilon=...)")
        self.mechanism = mechanism
        self.dps = dps
        self.kind: str = getattr(mechanism, "output_kind", "sequence")
        self._groups: Optional[tuple[Level, ...]] = None
        self._support_size: Optional[int] = None
        self._output_probs: dict[int, list[mpmath.mpf]] = {}
        self._group_probs: Optional[list[mpmath.mpf]] = None

    @property
    def groups(self) -> tuple["Level", ...]:
        """Every group, best first, found on first use (an audit of two Joint mechanisms
        counted by the stopped diagonal count reads the levels it needs one by one and
        never holds them all)."""
        if self._groups is None:
            try:
                self._groups = tuple(self.mechanism.groups())
            except MemoryBudgetError as e:  # the streamed alternative it names is no help here
                reason = re.sub(r"use \S+ \(streamed, within the budget\) or ", "", e.reason)
                raise MemoryBudgetError(e.argument, e.value, "the oracle (audits, certification) holds every level "
                                        f"at once: {reason}", limit=getattr(e, "limit", None)) from None
        return self._groups

    @property
    def support_size(self) -> int:
        """The number of outputs of positive probability."""
        if self._support_size is None:
            self._support_size = sum(g.multiplicity for g in self.groups)
        return self._support_size

    def index(self, output: OutputLike) -> Optional[int]:
        """Group index of a valid output, ``None`` when it has probability 0 (in no group);
        an invalid output raises the mechanism's error."""
        try:
            return self.mechanism.group_index(output)
        except KeyError:  # a valid output whose key is no group: probability 0
            return None

    def output_probabilities(self, dps: Optional[int] = None) -> list[mpmath.mpf]:
        """Certified probability of one output of each group, to ``dps`` digits (default:
        the ``dps`` given at construction); computed once per ``dps`` and kept for the
        newest ``dps`` only (the notions raise the precision and never go back, and a pair
        audit has a value per level: keeping each precision's list grew to gigabytes)."""
        digits = self.dps if dps is None else dps
        if digits not in self._output_probs:
            self._output_probs.clear()
            rule = self.batched_rule()
            if rule is not None:
                self._output_probs[digits] = rule.output_probabilities(self.mechanism.table, digits)
            else:
                self._output_probs[digits] = [p for _, p in self.mechanism.group_output_probabilities(digits)]
        return self._output_probs[digits]

    def _rule_offering(self, method: str) -> Any:
        """The mechanism's :meth:`~exactdp.core.mechanism.Mechanism.groups_rule` (the rule
        whose levels are its groups; None for CanonicalGamma1 and Peeling) when that rule
        has ``method``, else None."""
        m = self.mechanism
        rule = m.groups_rule() if isinstance(m, Mechanism) else None
        return rule if callable(getattr(rule, method, None)) else None

    def log_form_rule(self) -> Any:
        """The mechanism's rule when it offers the batched log form (the exponential
        mechanism) and the groups are its levels, else None."""
        return self._rule_offering("log_form")

    def pnf_form_rule(self) -> Any:
        """The mechanism's rule when it offers the permute-and-flip form (``pnf_form``:
        the levels far below the best in one closed form) and the groups are its levels,
        else None."""
        return self._rule_offering("pnf_form")

    def batched_rule(self) -> Any:
        """The mechanism's rule when it offers ``output_probabilities(table, dps)``, every
        level's one-output probability in one pass (the exponential mechanism,
        permute-and-flip), and the groups are its levels, else None."""
        return self._rule_offering("output_probabilities")

    def same_rule_as(self, other: "Groups") -> bool:
        """Whether both mechanisms' groups are their rule's levels (:meth:`batched_rule`),
        with rules of one kind and one ``lam`` (exact ``epsilon/divisor``, or one ``base``):
        then an output's probability is the same function of its level table on both
        sides."""
        rule_a, rule_b = self.batched_rule(), other.batched_rule()
        if rule_a is None or rule_b is None or type(rule_a) is not type(rule_b):
            return False
        return self.same_weight_as(other)

    def same_weight_as(self, other: "Groups") -> bool:
        """Whether the two level tables' weights of one unit of utility are provably one
        number (equal exact ``epsilon/divisor``, or one ``base``); False unless both
        mechanisms' groups are their rule's levels."""
        key = weight_key(self.mechanism)
        return key is not None and key == weight_key(other.mechanism)

    def same_law_as(self, other: "Groups") -> bool:
        """Whether one output of group ``a`` has exactly the same probability on both sides, for
        every ``a``, proven from the exact levels: both groups are their rule's levels, rules of
        one kind and one ``lam`` (or ``base``), and the same gaps ``u_a - u_0`` with the same
        multiplicities level by level (e.g. counts shifted by a constant; docs/definitions.md).

        >>> import exactdp
        >>> a, b = (Groups(exactdp.PNFJoint(c, 2, epsilon=1), 20) for c in ([5, 3, 1], [6, 4, 2]))
        >>> a.same_law_as(b), a.same_law_as(Groups(exactdp.PNFJoint([6, 4, 2], 2, epsilon=2), 20))
        (True, False)
        """
        if not self.same_rule_as(other):
            return False
        ga, gb = self.groups, other.groups
        if len(ga) != len(gb):
            return False
        try:
            u0, v0 = ga[0].utility, gb[0].utility
            return all(x.multiplicity == y.multiplicity and x.utility - u0 == y.utility - v0
                       for x, y in zip(ga, gb))
        except TypeError:  # utilities that do not subtract: not a numeric rule's levels
            return False

    def pnf_form(self) -> Any:
        """The rule's :class:`~exactdp.rules.pnf_levels.PnfForm` of the mechanism's level
        table at flint's current precision, or None (:meth:`pnf_form_rule`)."""
        rule = self.pnf_form_rule()
        return None if rule is None else rule.pnf_form(self.mechanism.table)

    def log_form(self) -> Any:
        """The rule's ``LogForm`` of the groups at flint's current precision
        (``ln P(group a) = lam (u_a - u_0) - ln m_0 - log1p(tail)``), or None when the
        mechanism does not offer it (see the module docstring)."""
        rule = self.log_form_rule()
        return None if rule is None else rule.log_form(self.mechanism.table)

    def group_probabilities(self) -> list[mpmath.mpf]:
        """Certified probability of each whole group (``dps`` digits): its size times the
        probability of one output, multiplied exactly (integer times binary mantissa), so
        the relative error stays that of the output's probability."""
        if self._group_probs is None:
            self._group_probs = [times_int(p, g.multiplicity) for g, p in zip(self.groups, self.output_probabilities())]
        return self._group_probs

    def enumerate(self, max_outputs: int, what: str,
                  progress: Optional[Callable[[int, int], None]] = None) -> Iterator[tuple[int, Output]]:
        """Every output with its group index, group by group in :meth:`groups` order (the
        order of ``outputs()``); refuses past ``max_outputs`` outputs, naming ``what``
        needs them.  ``progress(done, total)`` is called about 200 times."""
        size = self.support_size
        if size > max_outputs:
            raise InvalidParameterError(
                "max_outputs", max_outputs,
                f"{what} needs every output, and the mechanism has {size}; raise max_outputs",
            )
        it = self.mechanism.outputs()
        done = 0
        step = max(1, size // 200)
        for a, group in enumerate(self.groups):
            for _ in range(group.multiplicity):
                yield a, next(it)
                done += 1
                if progress is not None and done % step == 0:
                    progress(done, size)
        if progress is not None:
            progress(size, size)

