"""Utility levels: the distinct utilities of a mechanism with their exact multiplicities.

A mechanism's output distribution is determined by its levels and its selection rule,
since every output of one level has the same probability.

>>> lv = Level(-1, 4)
>>> lv.utility, lv.multiplicity
(-1, 4)
>>> u, m = lv
>>> check_levels([Level(0, 1), Level(-2, 3)])
(Level(utility=0, multiplicity=1), Level(utility=-2, multiplicity=3))
"""

from __future__ import annotations

from fractions import Fraction
from typing import Iterable, NamedTuple, Tuple, Union

__all__ = ["Level", "check_levels", "Utility"]

#: A utility value: an ``int`` or exact ``Fraction`` (Joint, JointSet, Canonical), or for
#: :class:`~exactdp.peeling.Peeling` the tuple of the chosen counts in selection order
#: (ordered lexicographically).
Utility = Union[int, Fraction, Tuple[int, ...]]


class Level(NamedTuple):
    """One utility value and the exact number of outputs having it."""

    utility: Utility
    multiplicity: int


def check_levels(levels: Iterable[Level]) -> tuple[Level, ...]:
    """Return ``levels`` as a tuple after checking the invariants every mechanism promises:
    utilities strictly decreasing (best first) and multiplicities positive Python ints."""
    out = tuple(Level(lv.utility, int(lv.multiplicity)) for lv in levels)
    for a, b in zip(out, out[1:]):
        if not a.utility > b.utility:  # type: ignore[operator]  # one mechanism: one kind of utility
            raise AssertionError(f"levels not strictly decreasing: {a} then {b}")
    for lv in out:
        if lv.multiplicity <= 0:
            raise AssertionError(f"level with non-positive multiplicity: {lv}")
    return out
