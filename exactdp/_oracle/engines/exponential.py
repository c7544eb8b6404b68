"""The per-delta engine of two exponential-mechanism sides with one ``lam``.

All cells of one ``delta = (u_i - u'_j) - (u_0 - u'_0)`` share one log-ratio
``r = lam delta - C``, so a notion needs per ``delta`` only ``r`` and the two masses of its
cells (:class:`ExponentialPair`).  :meth:`ExponentialPair.of` chooses the engine for two
views (this one, or the permute-and-flip engine it declares as ``pnf_engine``) or None when
none applies.  :func:`tail_difference` is the certified difference of two level tables'
tails.  The derivation is in docs/audit.md.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np
from flint import arb, ctx

from ...core.precision import ball_to_mpf, flint_workprec, mp_workdps, prec_for_dps, rational_ball
from ...rules.exponential import decaying_sum
from ..distributions import expm1_ball
from ..groups import Groups

__all__ = ["MAX_DELTAS", "ExponentialPair", "exact_int", "tail_difference_of", "guard_bits", "tail_difference", "level_terms"]


#: :class:`ExponentialPair` applies when the cells take at most this many values of ``delta``.
MAX_DELTAS = 256


class ExponentialPair:
    """Two exponential-mechanism sides with one ``lam`` over the cells of a pair, every
    notion computed per value of ``delta`` instead of per cell.

    With :meth:`Groups.log_form` on both sides, a cell with levels ``(i, j)`` has
    ``r = ln P_a - ln P_b = lam delta - C``, where ``delta = (u_i - u'_j) - (u_0 - u'_0)`` is an
    exact number and ``C = ln(m_0 / m'_0) + log1p((t - t') / (1 + t'))`` is one ball shared
    by every cell (``t``, ``t'`` the two tails).  So all cells of one ``delta`` have the same
    ``r``, and a notion needs, per ``delta``, only ``r`` and the masses ``sum n P_a`` and
    ``sum n P_b`` of its cells: each one :func:`~exactdp.rules.exponential.decaying_sum`
    that stops where the levels left cannot matter.  Joint's cells take at most ``2w + 1``
    values of ``delta`` (``w`` the band).  ``r`` of ``delta = 0`` is ``-C``, which keeps its
    relative accuracy when the tails are as tiny as ``e^(-10^8)``: a Rényi divergence of that
    size is certified at ordinary precision.  Any undecided sign (a ball containing 0) makes
    the caller fall back to the per-cell computation, which decides exact equalities.
    """

    #: Whether a log-ratio may be known only to the working precision where it is tiny
    #: (the permute-and-flip engine): divergences are then formed so that such an ``r``
    #: adds to second order only (:func:`exactdp._oracle.notions.renyi._divergence_of`).
    second_order = False
    #: The classes whose outputs are not known to exist (:class:`HeadExponentialPair`: a
    #: diagonal the counted head did not reach; its masses are ``[0, tail]``).
    phantoms: frozenset = frozenset()
    #: The engine of two permute-and-flip sides, set by its module when imported (the
    #: package ``engines`` imports both).
    pnf_engine: Any = None

    def __init__(self, a: Groups, b: Groups, x: np.ndarray, y: np.ndarray, sizes: np.ndarray,
                 ua: np.ndarray, ub: np.ndarray, deltas: np.ndarray, of_cell: np.ndarray):
        self.a, self.b = a, b
        self.x, self.y = x, y
        self.deltas = deltas.tolist()
        #: the delta index of every cell, and the cell positions of every delta (ascending)
        self.of_cell = of_cell
        order = np.argsort(of_cell, kind="stable")
        self.cells = np.split(order, np.cumsum(np.bincount(of_cell, minlength=len(deltas)))[:-1])
        self.terms_a = [level_terms(x[cells], sizes[cells], ua) for cells in self.cells]
        self.terms_b = [level_terms(y[cells], sizes[cells], ub) for cells in self.cells]
        self._ua, self._ub = ua, ub
        #: guard bits: the rounding of ``lam (u - u_0)`` becomes relative error of its exp
        self.guard = guard_bits(ua, ub)

    @classmethod
    def of(cls, a: Any, b: Any, keys: Sequence[tuple[Any, Any]], sizes: Sequence[int],
           shape_of: Optional[Callable[[], Any]] = None) -> Optional["ExponentialPair"]:
        """The engine for two views and their cells ``keys[c] = (group under a, group under
        b)`` of ``sizes[c]`` outputs, or None when it does not apply (a mapping side, no
        ``log_form`` or ``pnf_form``, two weight exponents not equal by their exact
        epsilon/divisor or base, a probability 0, utilities that are not integers, too many
        deltas).  ``shape_of``: where the permute-and-flip engine reads the level tables'
        enclosure shape (a :class:`Pair`'s own, so the two do not each pass over
        every level); default computed by the engine."""
        if not (isinstance(a, Groups) and isinstance(b, Groups)):
            return None
        engine: type[ExponentialPair]
        if a.log_form_rule() is not None and b.log_form_rule() is not None:
            engine = cls
        elif cls is ExponentialPair and a.pnf_form_rule() is not None and b.pnf_form_rule() is not None:
            engine = ExponentialPair.pnf_engine
        else:
            return None
        if not a.same_weight_as(b):
            return None  # the two weight exponents are not provably one number
        ua, ub = _int_utilities(a), _int_utilities(b)
        if ua is None or ub is None or any(x is None or y is None for x, y in keys):
            return None
        cells = np.asarray(keys, dtype=np.int64).reshape(-1, 2)
        x, y = cells[:, 0], cells[:, 1]
        deltas, of_cell = np.unique(ua[x] - ub[y] - (ua[0] - ub[0]), return_inverse=True)
        if len(deltas) > MAX_DELTAS:
            return None
        arrays = (a, b, x, y, np.asarray(sizes, dtype=object), ua, ub, deltas, of_cell.reshape(-1))
        if engine is not ExponentialPair.pnf_engine:
            return engine(*arrays)
        fast = engine(*arrays, shape_of=shape_of)
        return fast if fast.usable(a.dps + 10) else None

    def prec(self, digits: int) -> int:
        return prec_for_dps(digits, 40) + self.guard

    def balls(self) -> tuple[list[arb], list[arb], list[arb], Any, Any]:
        """At flint's current precision: per delta ``r``, the ``P_a`` mass and the ``P_b``
        mass of its cells; and the two log forms."""
        fa, fb = self.a.log_form(), self.b.log_form()
        lam = fa.lam
        if fa.m0 == fb.m0 and fa.u0 == fb.u0:
            # t - t' summed as one signed sum over both level lists: levels the two sides
            # share cancel exactly, so a difference far below the tails themselves (counts
            # 1000 or 2**61 next to small ones) keeps its relative accuracy
            gap = tail_difference_of(lam, fa, self.a.mechanism, self.b.mechanism) / fa.m0
        else:
            gap = fa.tail - fb.tail
        shared = (gap / (1 + fb.tail)).log1p()
        if fa.m0 != fb.m0:
            shared += (arb(fa.m0) / fb.m0).log()
        za, zb = (1 + fa.tail) * fa.m0, (1 + fb.tail) * fb.m0
        pa, pb = self._masses(lam, fa, fb, za, zb)
        # The same C from the P_b masses adding up to 1 (P_b = P_a e^(C - lam delta) per cell):
        # C = -log1p(sum_delta P_a(delta) expm1(-lam delta)), where delta = 0 adds exactly 0.
        # The tails' difference above cancels when the tails are not tiny but differ by a
        # tiny amount (a changed item far below the top k: t - t' ~ 1e-3461 next to t ~ 1e-8);
        # this form keeps C's relative accuracy then.  Both enclose C: keep the narrower.
        moved = arb(0)
        for delta, p in zip(self.deltas, pa):
            if delta:
                moved += p * expm1_ball(-(lam * delta))
        if moved > -1:
            other = -moved.log1p()
            if other.rad() < shared.rad() and other.overlaps(shared):
                shared = other
        self.shared = shared
        rs = [self.gap(g, 1, Fraction(0)) for g in range(len(self.deltas))]
        return rs, pa, pb, fa, fb

    def _masses(self, lam: arb, fa: Any, fb: Any, za: arb, zb: arb) -> tuple[list[arb], list[arb]]:
        """Per delta the ``P_a`` and the ``P_b`` mass of its cells (``za``, ``zb``: the two
        normalisers relative to the best weight)."""
        return ([decaying_sum(lam, fa.u0, *terms) / za for terms in self.terms_a],
                [decaying_sum(lam, fb.u0, *terms) / zb for terms in self.terms_b])

    def gap(self, g: int, sign: int, eps: Fraction) -> arb:
        """``sign * r - eps`` for delta ``g`` as ``(sign lam delta - eps) - sign C``, the first
        part exact when ``lam`` is rational: where it is 0 the gap is ``-sign C``, with the
        relative accuracy of ``C`` however tiny (``r`` itself, next to ``eps``, would
        need as many digits as ``C`` is small).  :meth:`balls` sets ``C`` first."""
        return self._shift(sign * self.deltas[g], eps) - sign * self.shared

    def _shift(self, delta: Any, eps: Fraction) -> arb:
        """``lam * delta - eps``, exact (one rational rounded once) when ``lam`` is rational."""
        scale = self.a.mechanism.table.scale
        if scale.lam is not None:
            return rational_ball(scale.lam * delta - eps)
        return scale.lam_ball() * delta - rational_ball(eps)

    def loss(self, digits_wanted: int) -> Optional[tuple]:
        """``max |r|`` over the cells, certified to ``digits_wanted`` digits: ``(value, index
        of the attaining delta, signed r per delta, (ln P_a, ln P_b) of its first cell)`` as
        mpf, or None when some ``r`` may be 0 (equality is then decided per cell); over the
        classes that hold outputs, when every phantom's ``|r|`` (:class:`HeadExponentialPair`)
        is certainly at most their largest (else None: undecided)."""
        digits = digits_wanted + 10
        while digits <= 4 * digits_wanted + 80:
            with flint_workprec(self.prec(digits)):
                rs, _, _, fa, fb = self.balls()
                real = [g for g in range(len(rs)) if g not in self.phantoms]
                if not real or any(rs[g].contains(0) for g in real):
                    return None
                lo = max((abs(rs[g]).lower() for g in real), key=lambda v: v.mid())
                hi = max((abs(rs[g]).upper() for g in real), key=lambda v: v.mid())
                if any(not abs(rs[g]).upper() <= lo for g in self.phantoms):
                    return None  # a diagonal the head did not reach may hold the largest ratio
                if (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                    best = max(real, key=lambda g: abs(rs[g]).mid())
                    first = int(self.cells[best][0])
                    x, y = int(self.x[first]), int(self.y[first])
                    logs = (fa.log_probability(exact_int(self._ua[x])), fb.log_probability(exact_int(self._ub[y])))
                    return (ball_to_mpf((lo + hi) / 2), best, [ball_to_mpf(r) for r in rs],
                            tuple(ball_to_mpf(v) for v in logs))
            digits *= 2
        return None

    def rows(self, signed: list[Any], digits_wanted: int) -> list[int]:
        """The cell positions sorted as :func:`exactdp.audit.privacy_loss` sorts its pairs:
        ``|signed|`` rounded to ``digits_wanted - 3`` digits, largest first (every cell of
        one delta has the same value), then the two level indices."""
        with mp_workdps(max(digits_wanted - 3, 5)):
            rounded = [+abs(s) for s in signed]
        ranks = {v: i for i, v in enumerate(sorted(set(rounded), reverse=True))}
        rank = np.asarray([ranks[v] for v in rounded], dtype=np.int64)[self.of_cell]
        return np.lexsort((self.y, self.x, rank)).tolist()


def exact_int(x: Any) -> int:
    """A utility read from an ``int64`` or object array as a Python int."""
    return int(x)


def tail_difference_of(lam: arb, fa: Any, a: Any, b: Any) -> arb:
    """:func:`tail_difference` of two mechanisms' level tables: read level by level from
    tables that know their number of outputs (a block table), else from the level lists."""
    ta, tb = a.table, b.table
    na = ta.output_count() if hasattr(ta, "output_count") else None
    nb = tb.output_count() if hasattr(tb, "output_count") else None
    if na is not None and nb is not None:
        return tail_difference(lam, fa.u0, ta.iter_levels(), tb.iter_levels(), na + nb - 2 * fa.m0)
    return tail_difference(lam, fa.u0, ta.levels, tb.levels)


def guard_bits(ua: np.ndarray, ub: np.ndarray) -> int:
    """Guard bits for the utility spread of both sides (the rounding of ``lam (u - u_0)``
    becomes relative error of its ``exp``)."""
    spread = max(int(ua[-1] - ua[0]), int(ub[-1] - ub[0]), 1, key=abs)
    return abs(spread).bit_length() + 8


def tail_difference(lam: arb, u0: Any, levels_a: Iterable[Any], levels_b: Iterable[Any],
                    rest: Optional[int] = None) -> arb:
    """An enclosure of ``sum_u (m_a(u) - m_b(u)) exp(lam (u - u0))`` over the levels after
    the first of two level lists ``[(utility, multiplicity)]`` (best first, ``lam > 0``):
    the difference of two :func:`~exactdp.rules.exponential.decaying_sum` tails, with the
    terms of equal utility and multiplicity cancelled exactly instead of subtracted as
    balls.  It stops, with the rest as the interval ``[-bound, bound]``, once the
    multiplicity still to come times the current exponential is below ``2**-(prec + 8)``
    of the sum so far.  ``levels_a``, ``levels_b`` may be iterators (read only as far as
    the sum goes) when ``rest``, the number of outputs after the two first levels
    together, is given."""
    if rest is None:
        rest = sum(m for _, m in list(levels_a)[1:]) + sum(m for _, m in list(levels_b)[1:])
    it_a, it_b = iter(levels_a), iter(levels_b)
    next(it_a, None)
    next(it_b, None)
    la, lb = next(it_a, None), next(it_b, None)
    total, cut = arb(0), arb(2) ** -(ctx.prec + 8)
    while la is not None or lb is not None:
        ua = la[0] if la is not None else None
        ub = lb[0] if lb is not None else None
        if ub is None or (ua is not None and ua > ub):
            u, diff, used = ua, la[1], la[1]
            la = next(it_a, None)
        elif ua is None or ub > ua:
            u, diff, used = ub, -lb[1], lb[1]
            lb = next(it_b, None)
        else:
            u, diff, used = ua, la[1] - lb[1], la[1] + lb[1]
            la, lb = next(it_a, None), next(it_b, None)
        rest -= used
        if not diff and total.is_zero():
            continue  # nothing to stop against yet
        e = (lam * (arb(u - u0) if type(u - u0) is int else rational_ball(u - u0))).exp()
        if diff:
            total += diff * e
        if not rest:
            break
        # checked at cancelled levels too: past the last difference the rest may be all equal
        bound = (e * rest).upper()
        if bound <= (cut * abs(total)).lower():
            return total + arb(0, 1) * bound
    return total


def _int_utilities(view: Groups) -> Optional[np.ndarray]:
    """The groups' utilities (best first) as ``int64``, or as Python ints in an object array
    when one is ``2**60`` or more (counts such as ``2**70``: no int64 wraps around); None
    unless all are ints."""
    u = [g.utility for g in view.groups]
    if not all(type(v) is int for v in u):
        return None
    if max(abs(u[0]), abs(u[-1])) >= 2**60:
        return np.asarray(u, dtype=object)
    return np.asarray(u, dtype=np.int64)


def level_terms(levels: np.ndarray, sizes: np.ndarray, utilities: np.ndarray) -> tuple[list, int]:
    """``([(utility, outputs)] best level first, total outputs)`` of some cells, their
    outputs added per level (exact: ``sizes`` is an object array of Python ints)."""
    order = np.argsort(levels, kind="stable")
    levels, sizes = levels[order], sizes[order]
    starts = np.flatnonzero(np.r_[True, levels[1:] != levels[:-1]])
    per_level = np.add.reduceat(sizes, starts) if len(sizes) else sizes
    return list(zip(utilities[levels[starts]].tolist(), per_level.tolist())), int(sizes.sum())
