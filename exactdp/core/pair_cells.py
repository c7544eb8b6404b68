"""The margin check of a pair count: the cells of two count vectors' levels add up to every
level's multiplicity, on both sides.

Shared by the pair cells of Joint and of JointSet (``pair_cells``: every occurring pair of
levels with its exact number of outputs, counted without enumerating outputs): each
output lies in exactly one cell, so the cells of a level of either mechanism must sum to
its multiplicity, an exact identity that a wrong count or a missing cell breaks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_margins"]


def check_margins(groups_a: Any, groups_b: Any, ia: np.ndarray, ib: np.ndarray, sizes: list[int],
                   plain: np.ndarray, plain_b: np.ndarray) -> None:
    """Each level's cells must add up to its multiplicity, on both sides (a cheap guard: a
    wrong count or a missing cell breaks it).  A plain level is one diagonal cell, so
    there the two multiplicities must be equal.

    ``groups_a``, ``groups_b``: the two mechanisms' levels (anything with a
    ``multiplicity``); ``ia``, ``ib``, ``sizes``: the counted cells (level here, level
    under the other, number of outputs); ``plain``, ``plain_b``: the plain levels, here
    and their index under the other.  Raises ``AssertionError`` when the margins differ."""
    mult_a = [g.multiplicity for g in groups_a]
    mult_b = [g.multiplicity for g in groups_b]
    total_a: dict[int, int] = {}
    total_b: dict[int, int] = {}
    for x, y, n in zip(ia.tolist(), ib.tolist(), sizes):
        total_a[x] = total_a.get(x, 0) + n
        total_b[y] = total_b.get(y, 0) + n
    covered_a = np.zeros(len(mult_a), dtype=bool)
    covered_a[plain] = True
    covered_a[list(total_a)] = True
    covered_b = np.zeros(len(mult_b), dtype=bool)
    covered_b[plain_b] = True
    covered_b[list(total_b)] = True
    ok = all(mult_a[x] == n for x, n in total_a.items()) and bool(covered_a.all()) and bool(covered_b.all())
    for x, y in zip(plain.tolist(), plain_b.tolist()):
        if y in total_b:
            total_b[y] += mult_a[x]
        elif mult_a[x] != mult_b[y]:
            ok = False
    if not ok or any(mult_b[y] != n for y, n in total_b.items()):
        raise AssertionError("pair cells: the cells do not add up to the level multiplicities")
