"""Peeling's weight tree: a binary sum tree over the distinct counts and its exact walks.

Used by :mod:`~exactdp.mechanisms.peeling` (the probability of a count sequence, the
Joint paper's Peeling baselines, arXiv:2201.12333, Section 4.1) and by
:mod:`~exactdp.mechanisms.peeling.sampling` (the samplers).  Leaf ``a`` holds ``n_a e_a``:
the number of remaining items with the ``a``-th largest count times its relative weight
``e_a = w(v_a)/w(v_0)`` (an arb ball, or an exact Fraction in the tests' twin); every inner
node the sum of its two children, so every sum read from the tree adds non-negative
numbers only and nothing cancels, whatever was removed.  The walks
(:meth:`WeightTree.locate`, :meth:`WeightTree.locate_from_top`) return the exact inverse-CDF
leaf of every ``U`` in a dyadic interval, or ``None`` when the interval is not certainly
inside one leaf's range (the caller then draws more bits of ``U``).

>>> from fractions import Fraction
>>> t = WeightTree([Fraction(1), Fraction(1, 2), Fraction(1, 4)], [1, 2, 4], Fraction(0))
>>> t.total(), t.suffix(1), t.others(0)
(Fraction(3, 1), Fraction(2, 1), Fraction(2, 1))
>>> log = []
>>> t.set_count(0, 0, log); t.total()
Fraction(2, 1)
>>> t.restore(log); t.total()
Fraction(3, 1)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from flint import arb

__all__ = ["WeightTree", "PrefixTree"]


class WeightTree:
    """Binary sum tree over the distinct counts: leaf ``i`` holds ``n_i e_i`` (remaining
    multiplicity times relative weight), every inner node the sum of its two children.

    ``weights``: the relative weights ``e_i``; ``mult``: the multiplicities ``n_i``; ``zero``:
    the zero of the number type (``arb(0)`` or ``Fraction(0)``).  The numbers may be arb
    balls (certified) or Fractions (exact; the tests' twin).
    ``nodes`` is a flat list (root at 1, leaves at ``size + i``).  Every sum read from it
    adds non-negative numbers only, so nothing cancels.
    """

    __slots__ = ("size", "n", "weights", "nodes", "zero")

    def __init__(self, weights: Sequence[Any], mult: Sequence[int], zero: Any):
        n = len(weights)
        size = 1 << max(0, (n - 1).bit_length())
        nodes = [zero] * (2 * size)
        for i, (e, m) in enumerate(zip(weights, mult)):
            nodes[size + i] = e * m
        for j in range(size - 1, 0, -1):
            nodes[j] = nodes[2 * j] + nodes[2 * j + 1]
        self.size, self.n, self.weights, self.nodes, self.zero = size, n, weights, nodes, zero

    def set_count(self, a: int, m: int, log: Optional[list] = None) -> None:
        """Leaf ``a`` := ``m e_a``, and its ancestors re-summed (the same operations as the
        constructor, so restoring ``m`` restores the very same balls).  With ``log``, every
        replaced ``(node, value)`` is appended to it, for :meth:`restore`."""
        nodes = self.nodes
        j = self.size + a
        if log is not None:
            keep = log.append
            keep((j, nodes[j]))
            nodes[j] = self.weights[a] * m if m else self.zero
            j >>= 1
            while j:
                keep((j, nodes[j]))
                nodes[j] = nodes[2 * j] + nodes[2 * j + 1]
                j >>= 1
            return
        nodes[j] = self.weights[a] * m if m else self.zero
        j >>= 1
        while j:
            nodes[j] = nodes[2 * j] + nodes[2 * j + 1]
            j >>= 1

    def restore(self, log: list) -> None:
        """Undo the changes logged in ``log`` by :meth:`set_count` (latest first; ``log`` is
        emptied): the tree holds its old balls again."""
        nodes = self.nodes
        for j, value in reversed(log):
            nodes[j] = value
        log.clear()

    def total(self) -> Any:
        return self.nodes[1]

    def others(self, a: int) -> Any:
        """Sum of every leaf but ``a``: the siblings along ``a``'s path to the root."""
        nodes = self.nodes
        j = self.size + a
        acc = self.zero
        while j > 1:
            acc = acc + nodes[j ^ 1]
            j >>= 1
        return acc

    def parts(self, first: int) -> list[int]:
        """The ``O(log size)`` disjoint nodes covering the leaves ``first..`` (left to right)."""
        lo, hi = self.size + first, 2 * self.size
        left: list[int] = []
        right: list[int] = []
        while lo < hi:
            if lo & 1:
                left.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                right.append(hi)
            lo >>= 1
            hi >>= 1
        return left + right[::-1]

    def suffix(self, first: int) -> Any:
        """Sum of the leaves ``first..`` (non-negative node sums only)."""
        acc = self.zero
        for j in self.parts(first):
            acc = acc + self.nodes[j]
        return acc

    def locate_from_top(self, top: int, u: int, nbits: int) -> Optional[int]:
        """:meth:`locate` of the uniform's first ``nbits`` bits ``u`` over all leaves when
        every leaf before ``top`` is exactly zero: a
        finger search from leaf ``top`` (climb while the target is certainly beyond the
        range so far, then descend), ``O(log)`` of the distance to the leaf found, so one
        comparison when the top count is picked."""
        nodes = self.nodes
        for coarse in (True, False):
            lo, hi = _target(nodes[1], u, nbits, coarse)
            a = self._finger(top, lo, hi)
            if a is not None or nbits <= _COARSE:
                return a
        return None

    def _finger(self, top: int, lo: arb, hi: arb) -> Optional[int]:
        nodes = self.nodes
        j = self.size + top
        end = nodes[j]  # the sum of the leaves up to the end of node j (those before are 0)
        if hi < end:
            return top
        if not lo >= end:
            return None
        while True:
            while j > 1 and j & 1:  # a right child: its parent's range ends where j's does
                j >>= 1
            if j == 1:  # pragma: no cover - the target is certainly below the total
                return None
            j += 1  # the right sibling extends the range
            offset, end = end, end + nodes[j]
            if hi < end:
                return self._descend(j, offset, lo, hi)
            if not lo >= end:
                return None

    def _descend(self, node: int, offset: Any, lo: arb, hi: arb) -> Optional[int]:
        nodes = self.nodes
        while node < self.size:
            bound = offset + nodes[2 * node]
            if hi < bound:
                node = 2 * node
            elif lo >= bound:
                offset = bound
                node = 2 * node + 1
            else:
                return None
        return node - self.size

    def locate(self, first: int, u: int, nbits: int) -> Optional[int]:
        """The leaf ``a >= first`` with ``C_{a-1} <= U * S < C_a`` (cumulative sums from
        ``first``, ``S`` their total) for every ``U`` in ``[u/2**nbits, (u+1)/2**nbits)``,
        or ``None`` when that interval is not certainly inside one leaf's range."""
        nodes = self.nodes
        parts = self.parts(first)
        total = self.zero
        for j in parts:
            total = total + nodes[j]
        for coarse in (True, False):
            lo, hi = _target(total, u, nbits, coarse)
            a = self._from_parts(parts, lo, hi)
            if a is not None or nbits <= _COARSE:
                return a
        return None

    def _from_parts(self, parts: list[int], lo: arb, hi: arb) -> Optional[int]:
        nodes = self.nodes
        offset = self.zero
        node = parts[-1]
        for j in parts[:-1]:  # which part holds the target (the last one needs no check)
            bound = offset + nodes[j]
            if hi < bound:
                node = j
                break
            if not lo >= bound:
                return None
            offset = bound
        return self._descend(node, offset, lo, hi)


_COARSE = 62  # bits of U in the first try: arb() of an int below 2**62 is fast
_SCALES: dict[int, arb] = {}


def _target(total: arb, u: int, nbits: int, coarse: bool) -> tuple[arb, arb]:
    """Balls ``lo``, ``hi`` with ``lo <= U * total`` and ``(U + 2**-nbits) * total <= hi``
    certainly for the true ``total``, ``U = u / 2**nbits``.  ``coarse``: from ``U``'s first
    :data:`_COARSE` bits only, a larger interval holding the exact one (so every decision
    taken from it holds for ``U``)."""
    if coarse and nbits > _COARSE:
        u, nbits = u >> (nbits - _COARSE), _COARSE
    scale = _SCALES.get(nbits)
    if scale is None:
        scale = _SCALES[nbits] = arb(2) ** (-nbits)  # exact at any precision
    step = scale * total
    lo = arb(u) * step
    return lo, lo + step


class PrefixTree(WeightTree):
    """A :class:`WeightTree` over the first ``cover`` distinct counts only, and, when
    ``cover < n``, one more leaf (index ``cover``) holding an enclosure of the sum of all
    the others: ``[0, N e_cover]``, with ``N`` the number of items of the counts
    ``v_cover, v_cover+1, ...`` (every one weighs at most ``e_cover``: counts decrease).

    Every node is then an enclosure of the true sum of its leaves, so every decision the
    walks take on it is right; a walk ends on leaf ``cover`` only when the target is
    certainly among the counts not covered (the caller covers more and walks again).
    Removing an item of a count not covered leaves the tail's enclosure valid (its sum
    only decreases), so :meth:`set_count` ignores it.

    ``weights``: the relative weights ``e_0..e_{cover-1}`` (so ``cover = len(weights)``);
    ``mult``: the multiplicities of all ``n`` counts; ``zero``: the number type's zero;
    ``tail``: the enclosure of the other counts' sum (ignored when ``cover >= n``);
    ``prec``: the working precision of the balls.  Attributes: ``complete`` (``cover >= n``:
    the plain :class:`WeightTree`) and ``checked_to`` (the largest count index its owner checked it
    adequate for)."""

    __slots__ = ("cover", "complete", "prec", "checked_to")

    def __init__(self, weights: Sequence[Any], mult: Sequence[int], zero: Any, n: int, tail: Any = None,
                 prec: int = 0):
        cover = len(weights)
        if cover < n:
            super().__init__(list(weights) + [tail], list(mult[:cover]) + [1], zero)
        else:
            super().__init__(weights, mult, zero)
        self.cover, self.complete, self.prec, self.checked_to = cover, cover >= n, prec, -1

    def set_count(self, a: int, m: int, log: Optional[list] = None) -> None:
        if a < self.cover:
            super().set_count(a, m, log)
