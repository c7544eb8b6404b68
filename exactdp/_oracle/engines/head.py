"""Engines over a head of cells: two large Joint-family sides counted only down to a depth.

:func:`head_engine` builds, from the mechanisms' ``pair_head`` hook, a
:class:`HeadExponentialPair` or :class:`HeadPermuteAndFlipPair`: the cells above a depth
counted exactly, the rest bounded by the two one-dataset tails (:class:`_SideTail`), the
depth grown until the bound is below what the notion asks.  The derivation is in
docs/audit.md.
"""

from __future__ import annotations

from bisect import bisect_right
from fractions import Fraction
from typing import Any, Callable, Optional

import numpy as np
from flint import arb, ctx

from ...core.gc_pause import gc_paused
from ..distributions import Cell
from .exponential import ExponentialPair, level_terms
from .permute_and_flip import PermuteAndFlipPair
from ..groups import Groups

__all__ = ["HeadExponentialPair", "head_engine", "HeadPermuteAndFlipPair"]


class _SideTail:
    """One side's level weights ``m e^(lam (u - u_0))`` from the best level down, read
    level by level until the outputs left weigh at most ``2**-bits`` of the sum so far
    (``rest * e`` bounds them: weights decrease), at flint's current precision.
    :meth:`beyond` bounds the weight of every level past ``M`` from these balls and that
    bound, without reading further."""

    def __init__(self, mechanism: Any, lam: arb, bits: int):
        table = mechanism.table
        rest = table.output_count()
        levels = mechanism.iter_levels()
        u0, m0 = next(levels)
        rest -= m0
        self.depths: list[int] = []
        uppers: list[arb] = []
        run, cut = arb(m0), arb(2) ** -bits
        self.remainder = arb(0)
        self.bits = bits
        with gc_paused():
            for u, m in levels:
                e = (lam * arb(u - u0)).exp()
                w = m * e
                run += w
                rest -= m
                self.depths.append(u0 - u)
                uppers.append(w.upper())
                if not rest:
                    break
                bound = (e * rest).upper()
                if bound <= (cut * run).lower():
                    self.remainder = bound
                    break
        #: every level is listed (no remainder)
        self.complete = not rest
        # suffix[i]: an upper bound on the weights of the levels from the i-th listed one on
        suffix = [arb(0)] * (len(uppers) + 1)
        acc = self.remainder
        suffix[-1] = acc
        for i in range(len(uppers) - 1, -1, -1):
            acc = (acc + uppers[i]).upper()
            suffix[i] = acc
        self._suffix = suffix

    def beyond(self, depth: int) -> arb:
        """An upper bound on the weight (relative to the best level's single output) of the
        levels with ``M > depth``."""
        return self._suffix[bisect_right(self.depths, depth)]

    def first_depth(self, z: arb, target: arb) -> Optional[int]:
        """The least depth (0 or a listed level's ``M``) whose levels beyond weigh at most
        ``target * z`` (a lower end of the normaliser), or None when no listed depth does."""
        limit = (target * z).lower()
        if self._suffix[0] <= limit:
            return 0
        for i, depth in enumerate(self.depths):
            if self._suffix[i + 1] <= limit:
                return depth
        return None


class _HeadCount:
    """What the two stopped engines share: the pair's head of cells (the mechanisms'
    ``pair_head``), counted down to the depth a precision needs, and the two sides' level
    weights that bound what it leaves out (:class:`HeadExponentialPair`)."""

    _head: Any
    _depth: int
    lowest: int

    def _init_head(self, a: Groups, b: Groups, head_of: Callable[[int], Any], first: Any) -> None:
        self.a, self.b = a, b
        self._head_of = head_of
        self._head, self._depth = first, 0
        self.lowest, self.highest = first.lowest, first.highest
        ma, mb = a.mechanism, b.mechanism
        spread = max(max(ma.counts) - min(ma.counts), max(mb.counts) - min(mb.counts), 1)
        #: guard bits for the deepest utility any level can have (the counts' spread)
        self.guard = spread.bit_length() + 8
        self._sides: dict[tuple[int, int], tuple[_SideTail, _SideTail]] = {}
        self._layout: Optional[int] = None

    def _sides_at(self, lam: arb, bits: int) -> tuple[_SideTail, _SideTail]:
        key = (ctx.prec, bits)
        found = self._sides.get(key)
        if found is None:
            if len(self._sides) > 4:
                self._sides.clear()
            found = self._sides[key] = (_SideTail(self.a.mechanism, lam, bits), _SideTail(self.b.mechanism, lam, bits))
        return found

    def _depth_for(self, lam: arb, za: arb, zb: arb, target: arb) -> Optional[int]:
        """The least depth whose tails are at most ``target`` (of the total mass 1) on both
        sides, the sides read deeper as needed; None when no level is deep enough short of
        every level (then the whole head is counted)."""
        bits = ctx.prec + 8
        while True:
            side_a, side_b = self._last_sides = self._sides_at(lam, bits)
            depth = side_a.first_depth(za, target)
            depth_b = side_b.first_depth(zb, target)
            if depth is not None and depth_b is not None:
                depth = max(depth, depth_b - self.lowest)
                # b's depth, moved to a's, may pass a's listed levels: the bound still holds
                if side_a.beyond(depth) <= (target * za).lower():
                    return depth
            if side_a.complete and side_b.complete:
                return None
            bits *= 2
            if bits > 64 * ctx.prec:
                return None

    def _count_to(self, depth: Optional[int]) -> None:
        """Count the head down to ``depth`` (None: every level) unless it reaches there."""
        if self._head.complete or (depth is not None and depth <= self._depth):
            return
        if depth is None:
            depth = max(max(self.a.mechanism.counts) - min(self.a.mechanism.counts), 0)
        head = self._head_of(depth)
        if head is None:  # pragma: no cover - the first head applied, so every deeper one does
            raise AssertionError("the pair's head count stopped applying")
        self._head, self._depth = head, depth
        self._layout = None

    def head_cell(self, c: int) -> Cell:
        """Head cell ``c`` (its two level indices, a witness, its number of outputs)."""
        head = self._head
        return Cell(int(head.x[c]), int(head.y[c]), head.witnesses[c], head.sizes[c])

    @property
    def head_depth(self) -> int:
        """The depth the head is counted down to (every level when it is complete)."""
        return self._depth


class HeadExponentialPair(_HeadCount, ExponentialPair):
    """:class:`ExponentialPair` over a head of cells counted down to a depth, the rest
    bounded by the one-dataset tails (two Joint mechanisms of one ``lam``; the
    mechanisms' ``pair_head`` hook, :func:`exactdp.mechanisms.joint.pairs.joint_pair_head`).

    Every notion of two exponential mechanisms of one ``lam`` depends on the outputs only
    through ``delta = M' - M`` (:class:`ExponentialPair`: ``r = lam delta - C`` on a
    diagonal) and the diagonal masses ``P_a(D_delta)``, ``P_b(D_delta)``.  The cells with
    level ``M <= H`` under ``a`` are counted exactly (the head); every other output has
    ``M > H`` and ``M' > H + lowest`` (``lowest``: the least ``M' - M``), so its mass under
    ``a`` is at most ``T_a(H) = sum_{M > H} m_a(M) e^(-lam M) / Z_a`` and under ``b`` at most
    ``T_b(H + lowest)``: one-dataset tails, bounded from the level weights read from the
    best level down (:class:`_SideTail`, whose remainder is the outputs left times the
    last weight).  So each diagonal's mass lies in ``[counted, counted + T]``, and so does
    the mass of a diagonal the head did not reach (``[0, T]``: a *phantom*, which may
    carry no output at all); ``C`` is still the shared ball of the two log forms (exact
    per side), so every ``r`` is as accurate as with every cell counted.

    ``H`` is chosen per working precision: the least level depth with ``T_a(H)`` and
    ``T_b(H + lowest)`` at most ``2**-(prec + 8)`` of the smallest counted diagonal mass
    (relative accuracy of every mass), found from the side weights; the head is counted
    again, deeper, only when a precision needs it (a deeper head serves every lower
    one).  When the head holds every level of ``a`` it is every cell: no tail, no phantom.
    A phantom is harmless to the masses (the notions add ``[0, T]``), to the zCDP bound
    (its ``|r|`` only raises an upper bound), and to a pure loss it does not dominate; a
    pure loss it may dominate (a diagonal the head did not reach, whose ``|r|`` could be
    the largest) is left undecided (:meth:`loss` returns None: the audits then count every
    cell)."""

    def __init__(self, a: Groups, b: Groups, head_of: Callable[[int], Any], first: Any):
        self._init_head(a, b, head_of, first)

    def _lay_out(self) -> None:
        """The classes of the current head: its diagonals (and the phantoms) ascending."""
        if self._layout == id(self._head):
            return
        head = self._head
        x, y = head.x, head.y
        ua = np.asarray(head.utilities_a, dtype=object if head.utilities_a and abs(head.utilities_a[-1]) >= 2**60
                        else np.int64)
        ub = np.asarray(head.utilities_b, dtype=object if head.utilities_b and abs(head.utilities_b[-1]) >= 2**60
                        else np.int64)
        # delta = (u - u') - (u_0 - u'_0) = M' - M (both best levels are at utility 0)
        deltas = sorted(set((ua[x] - ub[y]).tolist())) if len(x) else []
        phantom = [] if head.complete else [t for t in range(self.lowest, self.highest + 1) if t not in deltas]
        every = sorted(deltas + phantom)
        index = {t: g for g, t in enumerate(every)}
        of_cell = np.asarray([index[v] for v in (ua[x] - ub[y]).tolist()], dtype=np.int64)
        self.deltas = every
        self.phantoms = frozenset(index[t] for t in phantom)
        self.x, self.y, self.of_cell = x, y, of_cell
        order = np.argsort(of_cell, kind="stable")
        self.cells = np.split(order, np.cumsum(np.bincount(of_cell, minlength=len(every)))[:-1])
        sizes = np.asarray(head.sizes, dtype=object)
        self.terms_a = [level_terms(x[c], sizes[c], ua) if len(c) else ([], 0) for c in self.cells]
        self.terms_b = [level_terms(y[c], sizes[c], ub) if len(c) else ([], 0) for c in self.cells]
        self._ua, self._ub = ua, ub
        self._layout = id(head)

    def _masses(self, lam: arb, fa: Any, fb: Any, za: arb, zb: arb) -> tuple[list[arb], list[arb]]:
        """Per diagonal ``[counted, counted + T]`` on each side, the head counted as deep as
        this precision needs (the class docstring)."""
        target = arb(2) ** -(ctx.prec + 8)
        while True:
            if not self._head.complete:
                self._count_to(self._depth_for(lam, za, zb, target))
            self._lay_out()
            pa, pb = self._head_masses(lam, fa, fb, za, zb)
            if self._head.complete:
                return pa, pb
            counted = [m.lower() for masses in (pa, pb) for g, m in enumerate(masses) if g not in self.phantoms]
            smallest = min(counted, key=lambda v: v.mid(), default=arb(0))
            needed = max(arb(2) ** -(ctx.prec + 8) * smallest, arb(2) ** -(4 * ctx.prec), key=lambda v: v.mid())
            if not needed < target:
                return pa, pb
            target = needed

    def _head_masses(self, lam: arb, fa: Any, fb: Any, za: arb, zb: arb) -> tuple[list[arb], list[arb]]:
        pa, pb = super()._masses(lam, fa, fb, za, zb)
        if self._head.complete:
            return pa, pb
        side_a, side_b = self._last_sides
        tail_a = arb(0).union((side_a.beyond(self._depth) / za.lower()).upper())
        tail_b = arb(0).union((side_b.beyond(self._depth + self.lowest) / zb.lower()).upper())
        return [p + tail_a for p in pa], [p + tail_b for p in pb]


def head_engine(a: Any, b: Any) -> Optional[Any]:
    """A :class:`HeadExponentialPair` (:class:`HeadPermuteAndFlipPair`) of two views whose
    mechanisms offer the stopped count (``pair_head``, which declines unless it is the
    better one) with exponential (permute-and-flip) rules of one ``lam`` and level tables
    that know their number of outputs; else None."""
    if not (isinstance(a, Groups) and isinstance(b, Groups)):
        return None
    ma, mb = a.mechanism, b.mechanism
    exponential = a.log_form_rule() is not None and b.log_form_rule() is not None
    if not exponential and (a.pnf_form_rule() is None or b.pnf_form_rule() is None):
        return None
    if not a.same_weight_as(b):
        return None
    if any(getattr(t, "output_count", lambda: None)() is None for t in (ma.table, mb.table)):
        return None
    hook = ma.pair_head  # declared on every Mechanism (the rule checks above need one): None unless provided
    first = hook(mb)
    if first is None:
        return None
    if exponential:
        return HeadExponentialPair(a, b, lambda depth: hook(mb, depth), first)
    engine = HeadPermuteAndFlipPair(a, b, lambda depth: hook(mb, depth), first)
    return engine if engine.usable(a.dps + 10) else None


class HeadPermuteAndFlipPair(_HeadCount, PermuteAndFlipPair):
    """:class:`PermuteAndFlipPair` over a head of cells counted down to a depth, the rest
    bounded as for :class:`HeadExponentialPair` (two PNFJoint mechanisms of one ``lam``).

    A permute-and-flip output has ``P(o) = p_o I_o <= p_o = e^(lam (u(o) - u_0))`` (``I_o``
    an integral of a product of factors in ``[0, 1]``), so the outputs the head leaves out
    (``M > H`` under ``a``, ``M' > H + lowest`` under ``b``) weigh at most the unnormalised
    one-dataset tails ``sum_{M > H} m_a(M) e^(-lam M)`` and ``sum_{M' > H + lowest} m_b(M')
    e^(-lam M')``; ``H`` is chosen as for the exponential rule against these.  ``H`` also
    reaches past both forms' heads of levels (:class:`~exactdp.rules.pnf_levels.PnfForm`),
    so every output left out lies past them, on a diagonal whose class ball ``lam delta +
    ln(nu_0 / nu_0') + [-rho', rho]`` (``rho`` at the class's best counted level, which is
    above every output of that diagonal left out) encloses its log-ratio; a diagonal with
    no class past the heads is a phantom with ``rho`` at ``-H`` and ``-(H + lowest)``.  The
    level tables' enclosure, which reads every level, is not used, and a class whose sign
    against epsilon stays undecided is not split cell by cell (the audit then counts every
    cell)."""

    def __init__(self, a: Groups, b: Groups, head_of: Callable[[int], Any], first: Any):
        self._init_head(a, b, head_of, first)
        self._shape_of = lambda: None
        self._shape = None
        self.heads = None
        self._laid: Optional[tuple] = None

    def forms(self) -> Optional[tuple[Any, Any]]:
        """Both sides' forms at flint's current precision (the classes are made by
        :meth:`balls`)."""
        fa, fb = self.a.pnf_form(), self.b.pnf_form()
        return None if fa is None or fb is None else (fa, fb)

    def _form_depth(self, form: Any, mechanism: Any) -> int:
        """``M`` of the last level in ``form``'s head (0 for a head of the best level)."""
        return 0 if form.head <= 1 else -int(mechanism.table.utilities[form.head - 1])

    def _lay_out(self, head_a: int, head_b: int) -> None:
        key = (id(self._head), head_a, head_b)
        if self._laid == key:
            return
        head = self._head
        x, y = head.x, head.y
        ua = np.asarray(head.utilities_a, dtype=object)
        ub = np.asarray(head.utilities_b, dtype=object)
        self.x, self.y = x, y
        self._sizes, self._ua, self._ub = np.asarray(head.sizes, dtype=object), ua, ub
        deltas, of_cell = np.unique(np.asarray((ua[x] - ub[y]).tolist(), dtype=np.int64), return_inverse=True)
        self._all_deltas, self._delta_of = deltas, np.asarray(of_cell, dtype=np.int64).reshape(-1)
        self._classes(head_a, head_b)
        self._laid = key

    def balls(self) -> tuple[list[arb], list[arb], list[arb], Any, Any]:
        """As :meth:`PermuteAndFlipPair.balls` over the head counted as deep as this
        precision needs, each class past the heads widened by the tails, the phantoms last."""
        forms = self.forms()
        if forms is None:
            raise LookupError("a permute-and-flip side has no closed form at this precision")
        fa, fb = forms
        lam = fa.lam
        floor = max(self._form_depth(fa, self.a.mechanism), self._form_depth(fb, self.b.mechanism) - self.lowest)
        target = arb(2) ** -(ctx.prec + 8)
        one = arb(1)
        while True:
            if not self._head.complete:
                depth = self._depth_for(lam, one, one, target)
                self._count_to(None if depth is None else max(depth, floor))
            self._lay_out(fa.head, fb.head)
            rs, pa, pb = self._head_balls(fa, fb)
            if self._head.complete:
                return rs, pa, pb, fa, fb
            counted = [m.lower() for masses in (pa, pb) for g, m in enumerate(masses) if g not in self.phantoms]
            smallest = min(counted, key=lambda v: v.mid(), default=arb(0))
            needed = max(arb(2) ** -(ctx.prec + 8) * smallest, arb(2) ** -(4 * ctx.prec), key=lambda v: v.mid())
            if not needed < target:
                return rs, pa, pb, fa, fb
            target = needed

    def _head_balls(self, fa: Any, fb: Any) -> tuple[list[arb], list[arb], list[arb]]:
        if self._head.complete:
            tail_a = tail_b = arb(0)
        else:
            side_a, side_b = self._last_sides
            tail_a = arb(0).union(side_a.beyond(self._depth))
            tail_b = arb(0).union(side_b.beyond(self._depth + self.lowest))
        common = fa.nu0.log() - fb.nu0.log()
        pa, pb, spreads = self._past_heads(fa, fb, tail_a, tail_b)
        extra = [common + spread for spread in spreads]
        deltas = list(self.deltas)
        for _, _, p, q, delta, e in self._head_terms(fa, fb, 0, 0):
            pa.append(p)
            pb.append(q)
            deltas.append(delta)
            extra.append(e)
        phantom = [] if self._head.complete else [t for t in range(self.lowest, self.highest + 1)
                                                    if t not in self.deltas]
        first = len(extra)
        for t in phantom:  # a diagonal with no class past the heads: anything left out of it is deeper
            pa.append(tail_a)
            pb.append(tail_b)
            deltas.append(t)
            spread = (-fb.rho_at(-(self._depth + self.lowest))).union(fa.rho_at(-self._depth))
            extra.append(common + spread)
        self.phantoms = frozenset(range(first, first + len(phantom)))
        self.cells = list(self.cells[:first]) + [np.zeros(0, dtype=np.int64)] * len(phantom)
        self._extra, self._class_deltas = extra, deltas
        rs = [self.gap(g, 1, Fraction(0)) for g in range(len(extra))]
        return rs, pa, pb

    #: a class is not split cell by cell (the level tables' enclosure reads every level)
    cell_probability = None  # type: ignore[assignment]
