"""Joint's pair cells by brute force: every sequence with its two levels (docs/audit.md).

Written from the definitions, never by calling exactdp: the level of a sequence ``s`` under
counts ``c`` is ``max_r (c_(r) - c[s_r])`` (0-based ``r`` over the sorted counts), and the
cell of ``s`` is the pair of its levels under the two count vectors."""

from __future__ import annotations

from itertools import permutations
from typing import Sequence


def joint_level(counts: Sequence[int], seq: Sequence[int]) -> int:
    """``max_r (c_(r) - c[s_r])``: minus Joint's utility."""
    top = sorted(counts, reverse=True)
    return max(top[r] - counts[s] for r, s in enumerate(seq))


def brute_pair_cells(c1: Sequence[int], c2: Sequence[int], k: int) -> dict[tuple[int, int], int]:
    """``{(level index under c1, level index under c2): number of sequences}``, level
    indices counted from the best level (level 0 first, as ``groups()`` orders them)."""
    cells: dict[tuple[int, int], int] = {}
    for seq in permutations(range(len(c1)), k):
        key = (joint_level(c1, seq), joint_level(c2, seq))
        cells[key] = cells.get(key, 0) + 1
    levels1 = sorted({a for a, _ in cells})
    levels2 = sorted({b for _, b in cells})
    return {(levels1.index(a), levels2.index(b)): n for (a, b), n in cells.items()}
