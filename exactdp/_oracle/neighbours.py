"""Neighbouring count vectors under a neighbour relation, listed or counted.

Every vector one user's data can change a count vector into, in full or up to
exchanging items of equal count.

The audit (:mod:`exactdp.audit`, which exports these names) takes the privacy loss over
them; items of equal count are grouped by :func:`tied_classes`, which also gives the
output orbits of the audit.

>>> neighbours([1, 1], "add_remove", up_to_symmetry=True)
[(2, 1), (2, 2), (0, 1), (0, 0)]
"""

from __future__ import annotations

import math
from itertools import combinations, product
from typing import Hashable, Iterator, Optional, Sequence

from ..core.aliases import CountsLike
from ..core.formatting import format_int
from ..core.validation import as_counts, as_positive_int
from ..errors import InvalidParameterError, TooManyOutputsError

__all__ = ["AuditLimitError", "RELATIONS", "NEIGHBOURS_LIMIT", "tied_classes", "neighbour_count", "neighbours"]

#: The neighbour relations (see :func:`neighbours`).
RELATIONS = ("add_remove", "swap")
#: :func:`neighbours` refuses to list more vectors than this unless told otherwise.
NEIGHBOURS_LIMIT = 1_000_000


class AuditLimitError(TooManyOutputsError):
    """An audit would enumerate more outputs or neighbours than the caller's limit."""


def tied_classes(keys: Sequence[Hashable]) -> list[list[int]]:
    """Item ids grouped by equal key, in order of first appearance.

    >>> tied_classes([5, 3, 5, 3, 1])
    [[0, 2], [1, 3], [4]]
    """
    groups: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def check_relation(relation: object) -> str:
    if relation not in RELATIONS:
        raise InvalidParameterError("relation", relation, f"must be one of {', '.join(map(repr, RELATIONS))}")
    return relation


def _contribution(contribution: Optional[int], d: int) -> int:
    if contribution is None:
        return d
    return min(as_positive_int(contribution, "contribution"), d)


def neighbour_count(
    counts: CountsLike, relation: str = "add_remove", *, contribution: Optional[int] = None, up_to_symmetry: bool = False
) -> int:
    """The exact number of neighbours :func:`neighbours` would list (without listing them)
    for the same ``counts``, ``relation`` (``"add_remove"``, the default, or ``"swap"``),
    ``contribution`` and ``up_to_symmetry``.

    >>> neighbour_count([5, 3, 3], "add_remove"), neighbour_count([5, 3, 3], "swap")
    (14, 26)
    >>> neighbour_count([5, 3, 3], "swap", up_to_symmetry=True)
    17
    """
    c = as_counts(counts)
    rel = check_relation(relation)
    d = len(c)
    ell = _contribution(contribution, d)
    sizes = [len(b) for b in tied_classes(c)] if up_to_symmetry else [1] * d

    def choose_one_sign(s: int, n: int) -> int:
        return 1 if up_to_symmetry else math.comb(s, n)

    if rel == "add_remove":
        if ell >= d:
            per_sign = (math.prod(s + 1 for s in sizes) if up_to_symmetry else 2**d) - 1
            return 2 * per_sign
        dp = [1] + [0] * ell
        for s in sizes:
            new = [0] * (ell + 1)
            for j, w in enumerate(dp):
                if w:
                    for n in range(0, min(s, ell - j) + 1):
                        new[j + n] += w * choose_one_sign(s, n)
            dp = new
        return 2 * (sum(dp) - 1)
    # swap: p items +1 and q items -1, p, q <= ell
    if ell >= d:
        if up_to_symmetry:
            return math.prod((s + 1) * (s + 2) // 2 for s in sizes) - 1
        return 3**d - 1
    dp2 = {(0, 0): 1}
    for s in sizes:
        new2: dict[tuple[int, int], int] = {}
        for (p, q), w in dp2.items():
            for n_plus in range(0, min(s, ell - p) + 1):
                for n_minus in range(0, min(s - n_plus, ell - q) + 1):
                    ways = 1 if up_to_symmetry else math.comb(s, n_plus) * math.comb(s - n_plus, n_minus)
                    key = (p + n_plus, q + n_minus)
                    new2[key] = new2.get(key, 0) + w * ways
        dp2 = new2
    return sum(dp2.values()) - 1


def _changes_full(d: int, rel: str, ell: int) -> Iterator[tuple[int, ...]]:
    if rel == "add_remove":
        for sign in (1, -1):
            for size in range(1, ell + 1):
                for subset in combinations(range(d), size):
                    x = [0] * d
                    for i in subset:
                        x[i] = sign
                    yield tuple(x)
        return
    for size in range(1, min(d, 2 * ell) + 1):
        for subset in combinations(range(d), size):
            for signs in product((1, -1), repeat=size):
                plus = signs.count(1)
                if plus > ell or size - plus > ell:
                    continue
                x = [0] * d
                for i, s in zip(subset, signs):
                    x[i] = s
                yield tuple(x)


def _changes_symmetric(counts: Sequence[int], rel: str, ell: int) -> Iterator[tuple[int, ...]]:
    d = len(counts)
    blocks = tied_classes(counts)
    if rel == "add_remove":
        options = [[(n, 0) for n in range(len(b) + 1)] for b in blocks]
        signs = (1, -1)
    else:
        options = [[(p, q) for p in range(len(b) + 1) for q in range(len(b) - p + 1)] for b in blocks]
        signs = (1,)
    combos = []
    for choice in product(*options):
        p = sum(c[0] for c in choice)
        q = sum(c[1] for c in choice)
        if p + q == 0 or p > ell or q > ell:
            continue
        combos.append((p + q, choice))
    combos.sort(key=lambda t: t[0])
    for sign in signs:
        for _, choice in combos:
            x = [0] * d
            for block, (p, q) in zip(blocks, choice):
                for i in block[:p]:
                    x[i] = sign
                for i in block[p : p + q]:
                    x[i] = -sign
            yield tuple(x)


def neighbours(
    counts: CountsLike,
    relation: str = "add_remove",
    *,
    contribution: Optional[int] = None,
    up_to_symmetry: bool = False,
    max_neighbours: int = NEIGHBOURS_LIMIT,
) -> list[tuple[int, ...]]:
    """Every count vector neighbouring ``counts``, deduplicated, in a fixed order, under the
    neighbour ``relation``: ``"add_remove"`` (default; one user, contributing 1 to each item
    of a set, added or removed: ``counts + x``, ``x`` a non-zero 0/+1 or 0/-1 vector) or
    ``"swap"`` (one user's set replaced: ``x`` any non-zero vector in ``{-1, 0, +1}**d``).

    ``contribution=L``: at most ``L`` entries of ``x`` are +1 and at most ``L`` are -1.
    ``up_to_symmetry=True``: one neighbour per class of neighbours that differ only by
    exchanging items of equal count (within a block of tied counts the +1s go to the smallest
    ids, then the -1s).  Counts may become negative.  Refuses with :class:`AuditLimitError`
    past ``max_neighbours`` vectors.  The relations and their sensitivities: docs/audit.md,
    "Neighbours".
    """
    c = as_counts(counts)
    rel = check_relation(relation)
    limit = as_positive_int(max_neighbours, "max_neighbours")
    ell = _contribution(contribution, len(c))
    total = neighbour_count(c, rel, contribution=contribution, up_to_symmetry=up_to_symmetry)
    if total > limit:
        raise AuditLimitError(
            "max_neighbours", limit,
            f"counts with d={len(c)} have {format_int(total, ellipsis='...')} {rel} neighbours"  # 50,000 digits at d = 166,000
            f"{' up to symmetry' if up_to_symmetry else ''}; raise max_neighbours or bound contribution"
            f"{'' if up_to_symmetry else ', or use up_to_symmetry=True'}",
        )
    changes = _changes_symmetric(c, rel, ell) if up_to_symmetry else _changes_full(len(c), rel, ell)
    return [tuple(ci + xi for ci, xi in zip(c, x)) for x in changes]
