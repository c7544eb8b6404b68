"""A mechanism's probability groups as the oracle (audit, certify) works over them.

Every mechanism splits its outputs into *probability groups* (``Mechanism.groups()``:
``Level(key, size)``, every output of a group equally likely): its utility levels, or
``CanonicalGamma1``'s ``(h, t)`` classes.  :class:`Groups` gives the oracle what it needs
from them, for any mechanism alike: an output's group (``None`` for an output of
probability 0), the certified probability of one output of each group and of each whole
group, and every output listed group by group.

The oracle never imports a mechanism module: it uses ``groups()``, ``group_index()``,
``group_output_probabilities()``, ``outputs()`` and ``output_kind`` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator, Optional

import mpmath
from .core.precision import times_int

from .core._typing import MechanismLike, Output, OutputLike
from .errors import InvalidParameterError

if TYPE_CHECKING:
    from .core.levels import Level

__all__ = ["Groups"]


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
        self.mechanism = mechanism
        self.dps = dps
        self.kind: str = getattr(mechanism, "output_kind", "sequence")
        self.groups: tuple[Level, ...] = tuple(mechanism.groups())
        self.support_size: int = sum(g.multiplicity for g in self.groups)
        self._output_probs: dict[int, list[mpmath.mpf]] = {}
        self._group_probs: Optional[list[mpmath.mpf]] = None

    def index(self, output: OutputLike) -> Optional[int]:
        """Group index of a valid output, ``None`` when it has probability 0 (in no group);
        an invalid output raises the mechanism's error."""
        try:
            return self.mechanism.group_index(output)
        except KeyError:  # a valid output whose key is no group: probability 0
            return None

    def output_probabilities(self, dps: Optional[int] = None) -> list[mpmath.mpf]:
        """Certified probability of one output of each group, to ``dps`` digits (default:
        the ``dps`` given at construction); computed once per ``dps``."""
        digits = self.dps if dps is None else dps
        if digits not in self._output_probs:
            self._output_probs[digits] = [p for _, p in self.mechanism.group_output_probabilities(digits)]
        return self._output_probs[digits]

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

