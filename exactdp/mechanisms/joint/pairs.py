"""Joint's pair cells: how many sequences have each (level under c, level under c'), counted without enumeration.

Paper: Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Section 3, Lemma 3.7 (the
count of sequences above a threshold as a product over rows), taken to two count vectors
at once; docs/audit.md ("How a pair is audited without enumeration").

A privacy audit of two Joint mechanisms (counts ``c`` and ``c'``, same ``d`` and ``k``)
needs, for every pair of levels ``(M, M')``, the number of sequences at level ``M`` under
``c`` and ``M'`` under ``c'``.  Contract: a cell is the two-dimensional difference of
``N(M, M') = prod_r max(|S_r| - r, 0)``, ``S_r = {j : c_j >= c_(r) - M and c'_j >= c'_(r)
- M'}`` (nested in ``r``), counted exactly (``int64`` groups that cannot overflow, then
Python ints) on the band ``|M - M'| <= w`` and, with ``method="items"``, only at the
*special* levels near a changed term (every other level is one cell ``(M, M)``); with
``method="diagonal"`` for any number of changed items, by classes of equal change.  Every
cell carries a witness whose two levels are checked (the sweep and the witnesses:
:mod:`exactdp.mechanisms.joint.pair_sweep`).  :func:`joint_pair_cells` returns
``None`` (the caller enumerates orbits) when the method does not apply
(:func:`pair_count_declined` says why): a band wider than ``MAX_BAND``, counts too large
for ``int64``, more than ``MAX_DIFFERENCES`` distinct changes, or (``method="items"``) too
many changed items or rows.  :func:`joint_pair_head` stops the diagonal count at a depth
(the cells with ``M <= depth``, exactly those of the full count); :func:`head_preferred`
says when the audits count such a head.  Proofs of the band, the special levels and the classes:
docs/joint.md, section "Pair cells without enumeration (joint.pairs)".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from ...core.gc_pause import gc_paused
from ...core.pair_cells import check_margins
from ...errors import MemoryBudgetError
from .pair_sweep import DisplacedWitness, PairSweep, SearchedWitness, cell_witnesses

__all__ = ["joint_pair_cells", "joint_pair_head", "diagonal_range", "PairHead", "pair_count_declined", "DisplacedWitness", "SearchedWitness", "MAX_CHANGED_ITEMS",
           "MAX_CHANGED_ROWS", "MAX_BAND", "MAX_DIFFERENCES", "STOPPED_LEVEL_BOUND", "head_preferred"]

#: The sweep applies when at most this many items have different counts...
MAX_CHANGED_ITEMS = 16
#: ...at most this many of the top ``k`` sorted counts differ...
MAX_CHANGED_ROWS = 16
#: ...and one term moves by at most this much (``w``).
MAX_BAND = 64
#: The diagonal count (any number of changed items) applies up to this many distinct
#: differences ``c'_j - c_j`` (3 for any neighbour at l-infinity distance 1).
MAX_DIFFERENCES = 8
#: The audits count a pair's cells stopped at a depth (:func:`head_preferred`) when one
#: side may have this many levels or more (the bound on its levels its threshold events
#: give).
STOPPED_LEVEL_BOUND = 2_000_000
#: Counts and levels must stay below this in absolute value (``int64`` with room to add).
_INT_LIMIT = 2**60

Cells = dict[tuple[int, int], list[Any]]


def pair_count_declined(a: Any, b: Any, method: Optional[str] = None) -> str:
    """Why :func:`joint_pair_cells` declines the pair ``a``, ``b`` with ``method`` (``""``:
    it applies), in words a limit message can quote."""
    if (a.d, a.k) != (b.d, b.k):
        return f"the two mechanisms have different (d, k): ({a.d}, {a.k}) and ({b.d}, {b.k})"
    if max(map(abs, a.counts + b.counts)) >= _INT_LIMIT // 4:
        return f"a count is {_INT_LIMIT // 4} or more in absolute value (the count works in int64)"
    p = PairSweep(a, b)
    if p.band > MAX_BAND:
        return (f"one term max_r (c_(r) - c[s_r]) moves by up to {p.band} between the two vectors, more "
                f"than MAX_BAND = {MAX_BAND} (the vectors are {p.band} apart, not neighbours)")
    few = len(p.changed) <= MAX_CHANGED_ITEMS and len(p.changed_rows) <= MAX_CHANGED_ROWS
    if method is None and few:
        return ""
    if method == "items" and not few:
        return (f"{len(p.changed)} items and {len(p.changed_rows)} of the top k sorted counts differ, "
                f"more than the item-by-item count handles ({MAX_CHANGED_ITEMS} and {MAX_CHANGED_ROWS})")
    if method != "items" and len(set((p.cb_np - p.ca_np).tolist())) > MAX_DIFFERENCES:
        return (f"the items' counts change by {len(set((p.cb_np - p.ca_np).tolist()))} different amounts, more "
                f"than MAX_DIFFERENCES = {MAX_DIFFERENCES} classes of the diagonal count")
    return ""


def joint_pair_cells(a: Any, b: Any, method: Optional[str] = None) -> Optional[Cells]:
    """``{(level index under a, level index under b): [witness, number of sequences]}`` for
    every occurring pair of levels of two Joint-family mechanisms of one output space
    (docs/joint.md, "Pair cells without enumeration"), or ``None`` when the count does not apply
    (:func:`pair_count_declined` says why).

    ``method``: ``"items"`` corrects the count item by item for the changed items (at most
    ``MAX_CHANGED_ITEMS``), ``"diagonal"`` counts per class of equal ``c'_j - c_j`` (any
    number of changed items, at most ``MAX_DIFFERENCES`` classes); ``None`` takes the
    item-by-item count where it applies, else the diagonal one.  Both give the same cells.

    >>> from exactdp import Joint
    >>> cells = joint_pair_cells(Joint([3, 1, 0], 2, epsilon=1), Joint([3, 2, 0], 2, epsilon=1))
    >>> sorted((key, n) for key, (_, n) in cells.items())
    [((0, 0), 1), ((1, 2), 1), ((2, 1), 1), ((2, 2), 1), ((3, 3), 2)]
    """
    if method not in (None, "items", "diagonal"):
        raise ValueError(f"method must be None, 'items' or 'diagonal'; got {method!r}")
    if (a.d, a.k) != (b.d, b.k):
        return None
    if max(map(abs, a.counts + b.counts)) >= _INT_LIMIT // 4:
        return None
    p = PairSweep(a, b)
    if p.band > MAX_BAND:
        return None
    few = len(p.changed) <= MAX_CHANGED_ITEMS and len(p.changed_rows) <= MAX_CHANGED_ROWS
    if method == "items" and not few:
        return None
    if method == "diagonal" or not few:
        if len(set((p.cb_np - p.ca_np).tolist())) > MAX_DIFFERENCES:
            return None
        p.group_by_difference()
    groups_a, groups_b = a.groups(), b.groups()
    La = np.asarray([-g.utility for g in groups_a], dtype=np.int64)  # ascending M
    Lb = np.asarray([-g.utility for g in groups_b], dtype=np.int64)
    if p.by_difference is None:
        special = np.isin(La, p.special_values())
    else:  # every level may hold a differing term: count them all
        special = np.ones(len(La), dtype=bool)
    ia, ib, counts, keep = _count_rows(p, a, b, La, Lb, np.flatnonzero(special))
    # the other rows: one diagonal cell each
    plain = np.flatnonzero(~special)
    plain_b = np.searchsorted(Lb, La[plain])
    if len(plain) and not (np.all(plain_b < len(Lb)) and np.all(Lb[np.minimum(plain_b, len(Lb) - 1)] == La[plain])):
        raise AssertionError("joint_pair_cells: a plain level of a is no level of b")
    check_margins(groups_a, groups_b, ia[keep], ib[keep], [counts[i] for i in keep], plain, plain_b)
    cell_a = np.concatenate([ia[keep], plain]).astype(np.int64)
    cell_b = np.concatenate([ib[keep], plain_b]).astype(np.int64)
    sizes = [counts[i] for i in keep] + [groups_a[i].multiplicity for i in plain.tolist()]
    with gc_paused():  # hundreds of thousands of objects: no cyclic collection while they are made
        order = np.lexsort((cell_b, cell_a))
        cell_a, cell_b = cell_a[order], cell_b[order]
        witnesses = cell_witnesses(p, La[cell_a], Lb[cell_b])
        sizes = [sizes[i] for i in order.tolist()]
        return {(x, y): [o, s] for x, y, o, s in zip(cell_a.tolist(), cell_b.tolist(), witnesses, sizes)}


def _count_rows(p: PairSweep, a: Any, b: Any, La: np.ndarray, Lb: np.ndarray,
                rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """The cells of the levels ``rows`` of ``a`` (indices into ``La``, the levels ``M`` of
    ``a`` ascending) with every level of ``b`` (``Lb``) within the band: ``(ia, ib, counts,
    keep)``, ``keep`` the positions of the nonzero counts (refused past the memory budget
    first, :func:`_check_budget`)."""
    w = p.band
    lo = np.searchsorted(Lb, La[rows] - w, side="left")
    hi = np.searchsorted(Lb, La[rows] + w, side="right")
    widths = hi - lo
    ia = np.repeat(rows, widths)
    ib = np.repeat(lo - np.cumsum(widths) + widths, widths) + np.arange(int(widths.sum()))
    M, M2 = La[ia], Lb[ib]
    Mp = np.where(ia > 0, La[np.maximum(ia - 1, 0)], -1)
    M2p = np.where(ib > 0, Lb[np.maximum(ib - 1, 0)], -1)
    corners = [p.clamp(x, y) for x, y in ((M, M2), (Mp, M2), (M, M2p), (Mp, M2p))]
    first, second = np.concatenate([c[0] for c in corners]), np.concatenate([c[1] for c in corners])
    by = np.lexsort((second, first))  # unique points: a lexsort is much faster than unique(axis=1)
    new = np.ones(len(by), dtype=bool)
    new[1:] = (np.diff(first[by]) != 0) | (np.diff(second[by]) != 0)
    where = np.empty(len(by), dtype=np.int64)
    where[by] = np.cumsum(new) - 1
    _check_budget(a, b, int(new.sum()), len(M))
    values = p.at_most(first[by][new], second[by][new])
    n = len(M)
    where = where.reshape(4, n).tolist()
    counts = [values[w0] - values[w1] - values[w2] + values[w3] for w0, w1, w2, w3 in zip(*where)]
    keep = [i for i, c in enumerate(counts) if c]
    if any(counts[i] < 0 for i in keep):
        raise AssertionError("joint_pair_cells: a negative cell count (the sweep is wrong)")
    return ia, ib, counts, keep


class PairHead(NamedTuple):
    """The cells of two Joint-family mechanisms whose level under ``a`` is at most
    ``depth`` (:func:`joint_pair_head`).

    ``x``, ``y``: each cell's level indices (in ``a.groups()``, ``b.groups()``: the head is
    a prefix of both); ``sizes``: its number of sequences (exact ints); ``witnesses``: one
    sequence per cell, found when read; ``utilities_a``, ``utilities_b``: the utilities
    of the levels read (best first; ``b``'s reach ``depth + highest``); ``lowest``,
    ``highest``: the least and greatest value ``M' - M`` any sequence can have (the
    diagonals the pair may carry); ``complete``: the head holds every level of ``a`` (then
    every cell)."""

    x: np.ndarray
    y: np.ndarray
    sizes: list[int]
    witnesses: list[Sequence]
    utilities_a: list[int]
    utilities_b: list[int]
    lowest: int
    highest: int
    complete: bool


def diagonal_range(a: Any, b: Any) -> Optional[tuple[int, int]]:
    """The least and greatest ``M' - M`` over all sequences (``M``, ``M'`` the levels under
    ``a`` and ``b``), or None when the diagonal count does not apply
    (:func:`pair_count_declined` with ``method="diagonal"``).

    Proof: with ``t_r = c_(r) - c[s_r]`` and ``t'_r = c'_(r) - c'[s_r]``, ``t'_r - t_r =
    rho_r - v_{s_r}``, ``rho_r = c'_(r) - c_(r)`` (rows ``r < k``) and ``v_j = c'_j - c_j``.
    If row ``r*`` attains ``M'``, ``M' - M <= t'_{r*} - t_{r*} <= max rho - min v``; if row
    ``r`` attains ``M``, ``M' - M >= t'_r - t_r >= min rho - max v``.  Both ends lie within
    the band ``[-w, w]``.  Tighter: ``M >= 0`` (the ``k`` distinct items cannot all have
    ``c[s_r] > c_(r)``: those lie among the ``k - 1`` items counted above ``c_(k-1)``), so the
    item ``j`` in a row ``r`` attaining ``M`` has ``c_j <= c_(r)``, and the one attaining
    ``M'`` has ``c'_j <= c'_(r)``: the ends are the least ``rho_r - v_j`` over ``c_j <= c_(r)``
    and the greatest over ``c'_j <= c'_(r)`` (a change of the top item alone: ``[0, 1]``,
    not ``[-1, 1]``, whose diagonal -1 carries no output)."""
    if pair_count_declined(a, b, "diagonal"):
        return None
    p = PairSweep(a, b)
    rho = p.sb - p.sa
    v = p.cb_np - p.ca_np

    def extreme(counts: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per row, the greatest of ``values[j]`` over the items with ``counts[j] <= rows[r]``."""
        order = np.argsort(counts, kind="stable")
        running = np.maximum.accumulate(values[order])
        return running[np.searchsorted(counts[order], rows, side="right") - 1]

    lowest = rho - extreme(p.ca_np, p.sa, v)
    highest = rho + extreme(p.cb_np, p.sb, -v)
    return int(lowest.min()), int(highest.max())


def head_preferred(a: Any, b: Any) -> bool:
    """Whether the audits of ``a`` and ``b`` count the cells stopped at a depth
    (:func:`joint_pair_head`) rather than all of them (:func:`joint_pair_cells`): the
    diagonal count applies and ``a`` may have ``STOPPED_LEVEL_BOUND`` levels or more (its
    bound on them, known without finding them: a full count, item by item or diagonal,
    would hold every level and count the cells of every one), however many items changed."""
    if (a.d, a.k) != (b.d, b.k) or pair_count_declined(a, b, "diagonal"):
        return False
    bound = getattr(a.table.source, "level_bound", None)
    return bound is not None and bound() >= STOPPED_LEVEL_BOUND


def joint_pair_head(a: Any, b: Any, depth: int) -> Optional[PairHead]:
    """The cells of the sequences whose level under ``a`` is at most ``depth`` (utility at
    least ``-depth``), counted as :func:`joint_pair_cells` counts them (``method="diagonal"``:
    any number of changed items), reading only the levels of ``a`` up to ``depth`` and of
    ``b`` up to ``depth + highest`` (:func:`diagonal_range`); None when the diagonal count
    does not apply.

    Every cell of a level of ``a`` up to ``depth`` is counted: its levels under ``b`` lie
    within the band, and the product ``N`` at a corner depends on the two thresholds only.
    So the head's cells add up to the multiplicity of each level of ``a`` it holds, and to
    that of each level of ``b`` with ``M' <= depth + lowest`` (a cell of such a level has
    ``M <= M' - lowest <= depth``): both are checked.  A cell left out has ``M > depth``
    and ``M' >= M + lowest > depth + lowest``: its mass under ``a`` and under ``b`` lies in
    the two one-dataset tails past those levels, which is how the audits bound what the
    head leaves out (docs/audit.md, "How a pair is audited without enumeration").

    >>> from exactdp import Joint
    >>> head = joint_pair_head(Joint([3, 1, 0], 2, epsilon=1), Joint([3, 2, 0], 2, epsilon=1), 2)
    >>> sorted(zip(head.x.tolist(), head.y.tolist(), head.sizes)), head.complete
    ([(0, 0, 1), (1, 2, 1), (2, 1, 1), (2, 2, 1)], False)
    """
    found = diagonal_range(a, b)
    if found is None:
        return None
    lowest, highest = found
    p = PairSweep(a, b)
    p.group_by_difference()
    levels_a, more_a = _levels_upto(a, depth)
    levels_b, _ = _levels_upto(b, depth + highest)
    La = np.asarray([-lv.utility for lv in levels_a], dtype=np.int64)
    Lb = np.asarray([-lv.utility for lv in levels_b], dtype=np.int64)
    ia, ib, counts, keep = _count_rows(p, a, b, La, Lb, np.arange(len(La)))
    cell_a, cell_b = ia[keep].astype(np.int64), ib[keep].astype(np.int64)
    sizes = [counts[i] for i in keep]
    _check_head_margins(levels_a, levels_b, cell_a, cell_b, sizes, depth + lowest)
    order = np.lexsort((cell_b, cell_a))
    cell_a, cell_b = cell_a[order], cell_b[order]
    sizes = [sizes[i] for i in order.tolist()]
    witnesses = cell_witnesses(p, La[cell_a], Lb[cell_b])
    return PairHead(cell_a, cell_b, sizes, witnesses, [lv.utility for lv in levels_a],
                    [lv.utility for lv in levels_b], lowest, highest, not more_a)


def _levels_upto(mechanism: Any, depth: int) -> tuple[list[Any], bool]:
    """The levels of ``mechanism`` with ``M <= depth`` (utility ``>= -depth``), best first,
    read one by one (no level past the first one beyond ``depth``), and whether any level
    lies beyond."""
    out = []
    for level in mechanism.iter_levels():
        if -level.utility > depth:
            return out, True
        out.append(level)
    return out, False


def _check_head_margins(levels_a: list[Any], levels_b: list[Any], x: np.ndarray, y: np.ndarray, sizes: list[int],
                        complete_b: int) -> None:
    """The head's cells add up to the multiplicity of every level of ``a`` they hold and of
    every level of ``b`` with ``M' <= complete_b`` (:func:`joint_pair_head`)."""
    total_a = [0] * len(levels_a)
    total_b = [0] * len(levels_b)
    for i, j, n in zip(x.tolist(), y.tolist(), sizes):
        total_a[i] += n
        total_b[j] += n
    ok = all(t == lv.multiplicity for t, lv in zip(total_a, levels_a))
    ok = ok and all(t == lv.multiplicity for t, lv in zip(total_b, levels_b) if -lv.utility <= complete_b)
    if not ok:
        raise AssertionError("joint_pair_head: the cells do not add up to the level multiplicities")


def _check_budget(a: Any, b: Any, points: int, cells: int) -> None:
    """Refuse (:class:`~exactdp.errors.MemoryBudgetError`) before counting when the exact
    counts would not fit the two mechanisms' ``memory_budget`` together: ``points`` values
    of ``N`` and at most ``cells`` cells, each count an integer of up to ``k * bitlen(d)``
    bits (a product of ``k`` factors at most ``d``), a cell about 320 bytes besides."""
    budget = a.memory_budget + b.memory_budget  # Joint-family mechanisms: always set
    count_bytes = 40 + (a.k * a.d.bit_length()) // 8
    need = points * (count_bytes + 16) + cells * (320 + count_bytes)
    if need > budget:
        raise MemoryBudgetError(
            "memory_budget", budget,
            f"the pair count without enumeration would hold about {need / 2**20:,.0f} MiB at once ({points:,} exact "
            f"counts of up to {a.k * a.d.bit_length():,} bits and up to {cells:,} cells), more than memory_budget = "
            f"{budget} bytes (the mechanisms' memory_budget together); raise memory_budget of the mechanisms "
            f"(for example memory_budget={1 << need.bit_length()} on each)", limit=budget)
