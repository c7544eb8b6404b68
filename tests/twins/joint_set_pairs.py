"""JointSet's pair cells by brute force: every k-subset with its two levels (docs/audit.md).

Written from the definitions, never by calling exactdp: the level of a set ``S`` under counts
``c`` is ``max_i (c_(i) - v_i)``, ``v_i`` the ``(i+1)``-th largest count of ``S`` (Lemma 5 of the
set paper), and the cell of ``S`` is the pair of its levels under the two count vectors."""

from __future__ import annotations

from itertools import combinations
from typing import Sequence

from .joint_set import set_maxdiff


def set_levels(counts: Sequence[int], k: int) -> list[int]:
    """The level of every k-subset, in the order of ``itertools.combinations(range(d), k)``."""
    return [set_maxdiff(counts, s) for s in combinations(range(len(counts)), k)]


def threshold_level(counts: Sequence[int], subset: Sequence[int], k: int) -> int:
    """The smallest ``M >= 0`` with, for every row ``i < k``, at least ``i + 1`` items of the set
    at count ``>= c_(i) - M`` (the threshold form of the level, searched upwards)."""
    top = sorted(counts, reverse=True)[:k]
    M = 0
    while not all(sum(counts[j] >= t - M for j in subset) >= i + 1 for i, t in enumerate(top)):
        M += 1
    return M


def cells_from_levels(first: Sequence[int], second: Sequence[int]) -> dict[tuple[int, int], int]:
    """``{(level index under c1, level index under c2): number of sets}`` from two lists of
    per-set levels, level indices counted from the best level (as ``groups()`` orders them)."""
    cells: dict[tuple[int, int], int] = {}
    for key in zip(first, second):
        cells[key] = cells.get(key, 0) + 1
    levels1 = sorted({a for a, _ in cells})
    levels2 = sorted({b for _, b in cells})
    return {(levels1.index(a), levels2.index(b)): n for (a, b), n in cells.items()}


def brute_set_pair_cells(c1: Sequence[int], c2: Sequence[int], k: int) -> dict[tuple[int, int], int]:
    """The cells of two count vectors by enumerating every k-subset."""
    return cells_from_levels(set_levels(c1, k), set_levels(c2, k))
