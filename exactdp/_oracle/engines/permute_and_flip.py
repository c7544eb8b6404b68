"""The per-delta engine of two permute-and-flip sides with one ``lam``.

Papers: McKenna and Sheldon, "Permute-and-Flip: A new mechanism for differentially private
selection", NeurIPS 2020 (arXiv:2010.12603).  :class:`PermuteAndFlipPair` takes the levels
far below the best per value of ``delta`` as the exponential engine does; the exact part of
a cell's log-ratio enclosure ``lam * l + J`` (:func:`enclosure_shape`, :func:`enclosure_ball`)
is computed once from the two level tables (:func:`table_differences`).  The derivation is
in docs/audit.md.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterator, NamedTuple, Optional

import numpy as np
from flint import arb, ctx

from ...core.precision import ball_to_mpf, flint_workprec, rational_ball
from ...rules.exponential import decaying_sum
from ..distributions import expm1_ball
from .exponential import ExponentialPair, guard_bits, level_terms
from ..groups import Groups

__all__ = ["table_differences", "enclosure_shape", "enclosure_ball", "PermuteAndFlipPair", "EnclosureShape"]


def table_differences(a: Any, b: Any) -> Optional[tuple[list[Any], list[Any], dict[Any, int]]]:
    """Both sides' gaps below their best level (the utilities' own type: ints for the
    Joint family) and the signed difference of the level tables per gap (``a`` minus
    ``b``), for two permute-and-flip sides of one ``lam``; None otherwise (or for
    utilities that do not subtract)."""
    from ...rules.permute_and_flip import PermuteAndFlip
    if not (isinstance(a, Groups) and isinstance(b, Groups) and a.same_rule_as(b)
            and isinstance(a.batched_rule(), PermuteAndFlip)):
        return None
    try:
        gaps_a = [g.utility - a.groups[0].utility for g in a.groups]
        gaps_b = [g.utility - b.groups[0].utility for g in b.groups]
    except TypeError:
        return None
    sizes: dict[Any, int] = {}
    for gaps, groups, sign in ((gaps_a, a.groups, 1), (gaps_b, b.groups, -1)):
        for gap, g in zip(gaps, groups):
            sizes[gap] = sizes.get(gap, 0) + sign * g.multiplicity
    return gaps_a, gaps_b, sizes


def enclosure_shape(a: Any, b: Any, tables: Optional[tuple[list[Any], list[Any], dict[Any, int]]]) -> Optional["EnclosureShape"]:
    """The exact part of :meth:`Pair.log_ratio_enclosure` (:class:`EnclosureShape`) from
    the two sides' :func:`table_differences` (None: no enclosure)."""
    if tables is None:
        return None
    gaps_a, gaps_b, sizes = tables
    best_b = sum(g.multiplicity for gap, g in zip(gaps_b, b.groups) if gap == 0)
    below_b = sum(g.multiplicity for gap, g in zip(gaps_b, b.groups) if gap != 0)
    top_b = max((gap for gap in gaps_b if gap != 0), default=None)
    scale = b.mechanism.table.scale
    return EnclosureShape(sizes, gaps_a, gaps_b, best_b, below_b, top_b, scale, scale.lam)


def enclosure_ball(g_a: Any, g_b: Any, shape: "EnclosureShape", totals: list) -> arb:
    """The ball ``J`` of :meth:`Pair.log_ratio_enclosure` for an output at gaps ``g_a``,
    ``g_b`` (``totals``: the per-gap terms and their sums at this precision, filled once).
    For ``g_a == g_b != 0`` it also encloses ``ln(nu_a / nu_b)``, ``nu = int_0^1 F(t) dt``
    over the full products (no output taken out: the same differences ``c_x``, and ``m``
    over ``b``'s full product lies in the same bounds)."""
    sizes, best_b, below_b, top_b = shape.sizes, shape.best_b, shape.below_b, shape.top_b
    lam = shape.scale.lam_ball()
    if not totals:  # per gap (A term, B term) and their sums
        terms = {gap: _log1m_bounds(gap, c, lam) for gap, c in sizes.items() if gap and c}
        low = high = arb(0)
        for lo, hi in terms.values():
            low, high = low + lo, high + hi
        totals.extend((terms, low, high, _RangeSums(list(terms.values())), {g: i for i, g in enumerate(terms)}))
    terms, low, high, ranges, position = totals
    if g_a != g_b:
        # summed again without o's own two terms, not corrected from the sums: a correction
        # would keep the rounding error of o's terms, which can be far larger than the rest
        # (heavy-tailed counts).  The sums of the runs of terms between them come from a
        # tree of partial sums (each node a ball of its own terms, no subtraction anywhere)
        changed = {g_a: sizes.get(g_a, 0) - 1, g_b: sizes.get(g_b, 0) + 1}
        cut = sorted(position[g] for g in changed if g in position)
        low = high = arb(0)
        for start, stop in zip([0] + [i + 1 for i in cut], cut + [len(position)]):
            lo, hi = ranges.total(start, stop)
            low, high = low + lo, high + hi
        for gap, c in changed.items():
            if gap and c:  # the best level's difference is 0 once o is out (checked by the caller)
                lo, hi = _log1m_bounds(gap, c, lam)
                low, high = low + lo, high + hi
    m0 = arb(1) / (best_b - (g_b == 0) + 2)
    if below_b:
        x1 = (lam * rational_ball(top_b)).exp()
        spread = (below_b * x1 / (1 - x1)).exp()
        m_low, m_high = m0 / spread, m0 * spread
        m_high = m_high if m_high < 1 else arb(1)
    else:
        m_low = m_high = m0
    # ends of intervals: the smallest A m and the largest log1p(m expm1(B)) over m
    a_end, b_end = low.lower(), high.upper()
    lower = (a_end * (m_low.lower() if a_end >= 0 else m_high.upper())).lower()
    upper = ((m_high.upper() if b_end >= 0 else m_low.lower()) * expm1_ball(b_end)).log1p().upper()
    # the hull of [lower, upper] as a ball (arb's union may widen it past 0 when the two
    # ends differ by orders of magnitude, as they do when m is known only loosely)
    return (lower + upper) / 2 + ((upper - lower) / 2).upper() * arb(0, 1)


class _RangeSums:
    """Sums of runs of ``(lo, hi)`` ball pairs, from a tree of partial sums built once
    (each node the sum of its two children): a run is the sum of at most ``2 log2 n``
    nodes, every one an enclosure of its terms' sum, so the result encloses the run's
    sum (no term is added and subtracted again)."""

    def __init__(self, pairs: list[tuple[arb, arb]]):
        n = self.n = len(pairs)
        zero = (arb(0), arb(0))
        self.tree = [zero] * n + list(pairs)
        for i in range(n - 1, 0, -1):
            (a, b), (c, d) = self.tree[2 * i], self.tree[2 * i + 1]
            self.tree[i] = (a + c, b + d)

    def total(self, start: int, stop: int) -> tuple[arb, arb]:
        """The two sums over the pairs ``start .. stop - 1``."""
        lo, hi = arb(0), arb(0)
        start, stop = start + self.n, stop + self.n
        while start < stop:
            if start & 1:
                lo, hi = lo + self.tree[start][0], hi + self.tree[start][1]
                start += 1
            if stop & 1:
                stop -= 1
                lo, hi = lo + self.tree[stop][0], hi + self.tree[stop][1]
            start //= 2
            stop //= 2
        return lo, hi


class PermuteAndFlipPair(ExponentialPair):
    """Two permute-and-flip sides with one ``lam`` over the cells of a pair, the levels far
    below the best taken per value of ``delta`` as :class:`ExponentialPair` takes every level.
    Papers: McKenna and Sheldon, "Permute-and-Flip: A new mechanism for differentially
    private selection" (NeurIPS 2020, arXiv:2010.12603), the rule; Gillenwater, Joseph,
    Medina, Ribero, "A Joint Exponential Mechanism for Differentially Private Top-k" (ICML
    2022, arXiv:2201.12333), PNFJoint's levels over which it runs.

    Each side's :class:`~exactdp.rules.pnf_levels.PnfForm` (:meth:`Groups.pnf_form`) gives,
    for a level ``a`` past its head, ``ln P_a = lam (u_a - u_0) + ln nu_0 + ln(1 + rho_a)``
    with ``0 <= rho_a <= rho`` (about ``2**-prec``).  A cell whose two levels are both past
    the heads therefore has ``r = ln P_a - ln P_b = lam delta - C`` with
    ``C = ln nu_0' - ln nu_0 + [-rho, rho']``: one ball per ``delta`` encloses the ``r`` of
    every such cell, and its ``P_a`` mass is ``nu_0 [1, 1 + rho]`` times a
    :func:`~exactdp.rules.exponential.decaying_sum` of its weights.  A cell with a level in
    a head is a class of its own, with the certified ``P_a``, ``P_b`` of its two levels.
    Heavy-tailed counts have heads of a few levels, so a pair of half a million cells needs
    a handful of integrals instead of one per level.

    Unlike :class:`ExponentialPair`, ``C`` is no sum in which the shared levels cancel
    exactly: its ball is the narrower of the two quadratures' difference and the level
    tables' enclosure (:meth:`balls`), and a ball of ``r`` may still contain 0 without ``r``
    being 0.  :meth:`loss` then needs only the largest ``|r|`` to exclude 0; divergences are
    formed to second order in ``r`` (:attr:`second_order`); the privacy profile decides a
    class that straddles ``epsilon`` cell by cell (:meth:`cell_probability`); anything else
    undecided returns None as before (the callers then work cell by cell).  The heads grow
    with the working precision, and the classes are remade for each (:meth:`forms`).
    """

    second_order = True

    def __init__(self, a: Groups, b: Groups, x: np.ndarray, y: np.ndarray, sizes: np.ndarray,
                 ua: np.ndarray, ub: np.ndarray, deltas: np.ndarray, of_cell: np.ndarray,
                 shape_of: Optional[Callable[[], Optional["EnclosureShape"]]] = None):
        self.a, self.b = a, b
        self.x, self.y = x, y
        self._sizes, self._ua, self._ub = sizes, ua, ub
        self._all_deltas, self._delta_of = deltas, of_cell
        self.guard = guard_bits(ua, ub)
        self.heads: Optional[tuple[int, int]] = None
        self._shape_of = shape_of

    def _classes(self, head_a: int, head_b: int) -> None:
        """The classes once the heads are known: per ``delta`` the cells with both levels
        past the heads, then every other cell on its own."""
        x, y = self.x, self.y
        in_head = (x < head_a) | (y < head_b)
        tail_cells = np.flatnonzero(~in_head)
        used, tail_of = np.unique(self._delta_of[tail_cells], return_inverse=True)
        self.deltas = [self._all_deltas[int(g)] for g in used.tolist()]
        n_tail = len(self.deltas)
        of_cell = np.empty(len(x), dtype=np.int64)
        of_cell[tail_cells] = np.asarray(tail_of, dtype=np.int64).reshape(-1)
        head_cells = np.flatnonzero(in_head)
        of_cell[head_cells] = n_tail + np.arange(len(head_cells), dtype=np.int64)
        self.of_cell = of_cell
        self.n_tail = n_tail
        self.head_cells = head_cells.tolist()
        order = np.argsort(of_cell, kind="stable")
        self.cells = np.split(order, np.cumsum(np.bincount(of_cell, minlength=n_tail + len(head_cells)))[:-1])
        self.terms_a = [level_terms(x[cells], self._sizes[cells], self._ua) for cells in self.cells[:n_tail]]
        self.terms_b = [level_terms(y[cells], self._sizes[cells], self._ub) for cells in self.cells[:n_tail]]

    def forms(self) -> Optional[tuple[Any, Any]]:
        """Both sides' forms at flint's current precision, the classes made for their heads
        (the heads grow with the precision; the classes, ``cells`` and ``of_cell`` are those
        of the last call)."""
        fa, fb = self.a.pnf_form(), self.b.pnf_form()
        if fa is None or fb is None:
            return None
        if self.heads != (fa.head, fb.head):
            self.heads = (fa.head, fb.head)
            self._classes(fa.head, fb.head)
        return fa, fb

    def _ratio_shape(self) -> Optional["EnclosureShape"]:
        """The level tables' :func:`enclosure_shape`, once: from ``shape_of`` (the pair's own,
        when a :class:`Pair` made this engine) or computed here."""
        shape = getattr(self, "_shape", False)
        if shape is False:
            shape = self._shape = (self._shape_of() if self._shape_of is not None
                                   else enclosure_shape(self.a, self.b, table_differences(self.a, self.b)))
        return shape

    def balls(self) -> tuple[list[arb], list[arb], list[arb], Any, Any]:
        """As :meth:`ExponentialPair.balls`, the head cells last (one class each).  A side
        without a form at this precision raises :class:`LookupError` (:meth:`of` tries
        the forms at the precision of the default ``dps`` first).

        Each ``r`` is the narrower of two enclosures (both hold): from the forms, ``lam
        delta + (ln nu_0 - ln nu_0') + [-rho', rho]`` with ``rho``, ``rho'`` bounded at the
        class's best level on each side (:class:`~exactdp.rules.pnf_levels.PnfForm`: ``rho_a
        <= p_a B / nu_0``); and from the level tables (:func:`enclosure_ball`), which keeps
        the relative accuracy of a tiny ``ln(nu_0 / nu_0')`` (tables that differ only far
        below the best): ``lam delta + J`` with ``J`` the ball of an output at gaps ``(g, g)``
        for ``delta = 0`` (every cell of the class is such an output), and ``J`` plus the
        same ``[-rho', rho]`` otherwise (``J`` of ``(g, g)`` also encloses ``ln(nu_0 /
        nu_0')``).  A head cell has the difference of its two certified ``ln P``, or its own
        enclosure ``lam delta + J(g_a, g_b)``."""
        forms = self.forms()
        if forms is None:
            raise LookupError("a permute-and-flip side has no closed form at this precision")
        fa, fb = forms
        shape = self._ratio_shape()
        totals: list = []
        full = None  # J of an output at one nonzero gap on both sides: also ln(nu_0 / nu_0')
        if shape is not None and not shape.sizes.get(0, 0) and shape.below_b:
            full = enclosure_ball(shape.top_b, shape.top_b, shape, totals)
        by_balls = fa.nu0.log() - fb.nu0.log()
        common = by_balls if full is None or by_balls.rad() <= full.rad() else full
        pa, pb, spreads = self._past_heads(fa, fb)
        extra = []  # r - lam delta per class
        for g, spread in enumerate(spreads):
            e = common + spread
            if self.deltas[g] == 0 and full is not None and full.rad() < e.rad():
                e = full
            extra.append(e)
        deltas = list(self.deltas)
        for i, j, p, q, delta, e in self._head_terms(fa, fb, int(self._ua[0]), int(self._ub[0])):
            pa.append(p)
            pb.append(q)
            deltas.append(delta)
            if shape is not None:
                g_a, g_b = shape.gaps_a[i], shape.gaps_b[j]
                if not (shape.sizes.get(0, 0) - (g_a == 0) + (g_b == 0)):
                    own = enclosure_ball(g_a, g_b, shape, totals)
                    if own.rad() < e.rad():
                        e = own
            extra.append(e)
        self._extra, self._class_deltas = extra, deltas
        rs = [self.gap(g, 1, Fraction(0)) for g in range(len(extra))]
        return rs, pa, pb, fa, fb

    def _past_heads(self, fa: Any, fb: Any, tail_a: Optional[arb] = None,
                    tail_b: Optional[arb] = None) -> tuple[list[arb], list[arb], list[arb]]:
        """The masses of the classes past the heads on each side from the forms (plus
        ``tail_a``, ``tail_b`` when given) and each class's ``[-rho', rho]``: ``ln(1 + rho)
        <= rho`` at the class's best level on each side (weights decrease)."""
        lam = fa.lam
        one_a, one_b = 1 + arb(0).union(fa.rho), 1 + arb(0).union(fb.rho)
        pa = [decaying_sum(lam, fa.u0, *terms) * fa.nu0 * one_a for terms in self.terms_a]
        pb = [decaying_sum(lam, fb.u0, *terms) * fb.nu0 * one_b for terms in self.terms_b]
        if tail_a is not None:
            pa, pb = [p + tail_a for p in pa], [p + tail_b for p in pb]
        spreads = [(-fb.rho_at(self.terms_b[g][0][0][0])).union(fa.rho_at(self.terms_a[g][0][0][0]))
                   for g in range(self.n_tail)]
        return pa, pb, spreads

    def _head_terms(self, fa: Any, fb: Any, base_a: int, base_b: int) -> Iterator[tuple]:
        """Per head cell: its levels ``i``, ``j``, its masses under ``a`` and ``b``, its
        ``delta = (u - base_a) - (v - base_b)`` and ``ln P_a - ln P_b - lam delta`` from the
        two certified ``ln P``."""
        ua, ub = self._ua, self._ub
        for c in self.head_cells:
            i, j = int(self.x[c]), int(self.y[c])
            u, v = int(ua[i]), int(ub[j])
            n = int(self._sizes[c])
            delta = (u - base_a) - (v - base_b)
            e = fa.log_probability(i, u) - fb.log_probability(j, v) - self._shift(delta, _ZERO)
            yield i, j, n * fa.probability(i, u), n * fb.probability(j, v), delta, e

    def cell_probability(self, c: int, sign: int, forms: tuple) -> arb:
        """``P_a`` (``sign = 1``) or ``P_b`` (``-1``) of one output of cell ``c``, from the
        forms :meth:`balls` returned."""
        if sign > 0:
            i = int(self.x[c])
            return forms[0].probability(i, int(self._ua[i]))
        j = int(self.y[c])
        return forms[1].probability(j, int(self._ub[j]))

    def usable(self, digits: int) -> bool:
        """Whether both sides have a form at the working precision of ``digits`` digits
        (the shared values made there are kept by the rule for the first :meth:`balls`)."""
        with flint_workprec(self.prec(digits)):
            return self.forms() is not None

    def gap(self, g: int, sign: int, eps: Fraction) -> arb:
        """``sign * r - eps`` of class ``g`` as ``(sign lam delta - eps) + sign (r - lam
        delta)``, the first part exact when ``lam`` is rational (:meth:`balls` sets the
        second)."""
        return self._shift(sign * self._class_deltas[g], eps) + sign * self._extra[g]

    def loss(self, digits_wanted: int) -> Optional[tuple]:
        """As :meth:`ExponentialPair.loss`, but a class whose ``r`` contains 0 is allowed
        when it is certainly below the largest ``|r|`` (``C`` is not known with relative
        accuracy here, see the class docstring); over the classes that hold outputs, when
        every phantom's ``|r|`` (:class:`HeadPermuteAndFlipPair`) is certainly at most
        their largest (else None: undecided)."""
        digits = digits_wanted + 10
        while digits <= 4 * digits_wanted + 80:
            with flint_workprec(self.prec(digits)):
                rs, _, _, fa, fb = self.balls()
                real = [g for g in range(len(rs)) if g not in self.phantoms]
                lows = {g: abs(rs[g]).lower() if not rs[g].contains(0) else arb(0) for g in real}
                best = max(real, key=lambda g: lows[g].mid())
                lo = lows[best]
                hi = max((abs(rs[g]).upper() for g in real), key=lambda v: v.mid())
                if not lo > 0 or any(not abs(rs[g]).upper() <= lo for g in self.phantoms):
                    return None
                if (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                    first = int(self.cells[best][0])
                    x, y = int(self.x[first]), int(self.y[first])
                    logs = (fa.log_probability(x, int(self._ua[x])), fb.log_probability(y, int(self._ub[y])))
                    return (ball_to_mpf((lo + hi) / 2), best, [ball_to_mpf(r) for r in rs],
                            tuple(ball_to_mpf(v) for v in logs))
            digits *= 2
        return None


#: The gap difference of an output at one gap on both sides.
_ZERO = Fraction(0)


class EnclosureShape(NamedTuple):
    """The exact part of :meth:`Pair.log_ratio_enclosure`: the signed differences of the
    level tables per gap (``a`` minus ``b``), both sides' gaps, ``b``'s number of best
    outputs and of outputs below the best, its largest gap below the best (None without
    one), the scale and its exact ``lam`` (None with a base; read once, not per cell)."""

    sizes: dict[Any, int]
    gaps_a: list[Any]
    gaps_b: list[Any]
    best_b: int
    below_b: int
    top_b: Any
    scale: Any
    lam: Optional[Fraction]


def _log1m_bounds(gap: Fraction, c: int, lam: arb) -> tuple[arb, arb]:
    """``c`` outputs of weight ``x = e^(lam gap)`` (``gap < 0``) in
    :meth:`Pair.log_ratio_enclosure`'s sums: ``(c log1p(-x), -c x)`` for ``c > 0``,
    ``(|c| x, |c| (-log1p(-x)))`` for ``c < 0``; ``log1p(-x)`` as ``-x - x^2 [0, 1]`` when
    ``x`` is too small for arb's own (``|log1p(-x) + x| <= x^2`` for ``x <= 1/2``)."""
    if not c:
        return arb(0), arb(0)
    x = (lam * rational_ball(gap)).exp()
    if abs(x).upper() < arb(2) ** -(ctx.prec + 8):
        log1m = -x - (x * x).upper() * arb(0.5, 0.5)  # -x - x^2 [0, 1]
    else:
        log1m = (-x).log1p()
    return (c * log1m, -c * x) if c > 0 else (-c * x, c * log1m)


ExponentialPair.pnf_engine = PermuteAndFlipPair  # ExponentialPair.of chooses it for two permute-and-flip sides
