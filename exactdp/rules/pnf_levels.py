r"""Permute-and-flip's certified level values over a level table, block by block within its memory budget.

:class:`PnfLevels` holds, for one table and one working precision, what every level's
``P_a = p_a I_a`` (one output) and ``m_a P_a`` (the level) are computed from
(:mod:`exactdp.rules.permute_and_flip`, docs/definitions.md §2.2): for small supports the
whole lists of the polynomial route (:func:`~exactdp.rules.quadrature.poly_integrals`), else
the shared values of the quadrature route (:class:`~exactdp.rules.quadrature_stream.StreamedQuadrature`:
one pass over the levels, ``O(nodes)`` balls kept).  Any block's values (:meth:`PnfLevels.block`),
or one level's (:meth:`PnfLevels.value`), then come from those alone, so a
:class:`~exactdp.core.level_blocks.BlockLevelTable` of tens of millions of levels is read
block by block and never held: the memory is that of the table's own budget plus a few
blocks of balls.  Over an in-memory :class:`~exactdp.core.levels.LevelTable` the same code
runs with one block.

:class:`PnfCumulative` is the running sum ``C_a = sum_{b <= a} m_b P_b`` for exact sampling
(:func:`exactdp.core.sampling.choose_index`): the running sum at each block's end, formed
in level order only as far as a draw needs it, and the sums within the last block or two
read; its last entry is exactly 1 (the level probabilities of a distribution sum to 1), so
no draw needs a pass over every level.

>>> from fractions import Fraction
>>> from exactdp.core.levels import Level, LevelTable
>>> from exactdp.core.scale import Scale
>>> t = LevelTable([Level(0, 1), Level(-1, 2)], Scale(base=Fraction(1, 2)))
>>> with flint_workprec(80):
...     top = PnfLevels(t, "auto").block(0)[1][0]      # P(level 0) = 7/12
...     ok = (12 * top - 7).contains(0)                  # (exact: 12 and 7 are small integers)
>>> ok, top.rad() < 2.0 ** -70
(True, True)
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import OrderedDict
from fractions import Fraction
from typing import Any, NamedTuple, Optional, Sequence

from flint import arb, ctx, fmpq

from ..core.levels import LevelTableLike
from ..core.precision import MAX_PREC, fixed_nearest, flint_workprec, rational_ball
from ..core.sampling import first_not_below
from ..core.scale import Scale
from ..core.selection import FixedLogOutput
from ..errors import InvalidParameterError, PrecisionError
from .quadrature import LN2, LN_CLAMP, ln_int, poly_integrals, tail_factor
from .quadrature_stream import StreamedQuadrature

__all__ = ["PnfLevels", "PnfCumulative", "PnfForm", "PNF_FORM_MAX_HEAD", "single_output", "PNF_POLY_SUPPORT_LIMIT", "PNF_POLY_WORK_LIMIT", "PNF_POLY_MIN_PREC",
           "PNF_POLY_WORK_LIMIT_HIGH_PREC", "use_poly", "ln_lam", "ln_magnitudes"]

#: ``method="auto"`` integrates the polynomial ``F`` exactly in ball arithmetic (the
#: ``"poly"`` route, no quadrature nodes: its cost grows only like one multiplication
#: with ``dps``) for supports of at most this many outputs (also the limit of
#: ``method="poly"``)...
PNF_POLY_SUPPORT_LIMIT = 1024
#: ...when (number of levels) x (support) is at most this, or the working precision is at
#: least :data:`PNF_POLY_MIN_PREC` bits (where quadrature gets expensive); otherwise the
#: quadrature route.
PNF_POLY_WORK_LIMIT = 4096
PNF_POLY_MIN_PREC = 512
#: ...(at such precisions, up to this (number of levels) x (support)).
PNF_POLY_WORK_LIMIT_HIGH_PREC = 1 << 16
#: :meth:`PnfLevels.form` takes at most this many levels one by one (its head); past it,
#: it returns None and the caller works level by level.
PNF_FORM_MAX_HEAD = 20_000


class PnfForm(NamedTuple):
    """Every level's log-probability from the shared values of the quadrature route, the
    levels far below the best in one closed form (:meth:`PnfLevels.form`).

    Paper: McKenna and Sheldon, "Permute-and-Flip: A new mechanism for differentially
    private selection" (NeurIPS 2020, arXiv:2010.12603): the rule whose one-output
    probability is ``p_a I_a`` (docs/definitions.md §2.2).

    For a level ``a >= head`` (weight ``p_a = e^(lam (u_a - u_0))``):
    ``ln P_a = lam (u_a - u_0) + ln nu_0 + ln(1 + rho_a)`` with ``0 <= rho_a <= rho``, where
    ``nu_0 = int_0^1 F(t) dt``.  Why: ``I_a = nu_0 + R_a`` with ``0 <= R_a <= p_a B(p_a)``
    (:mod:`exactdp.rules.quadrature`, item 1 with ``N = 0``: ``B = min(B_1, B_2)``
    increases with ``p``), so every ``a >= head`` has ``R_a / nu_0 <= p_h B(p_h) / nu_0 =
    rho`` (``h = head``; the weights decrease with the level).  The first ``head`` levels
    have their own certified ``P_a`` (``head_ps``).  ``lam``: the weight exponent's
    enclosure; ``u0``: the best utility; ``nu0``: an enclosure of ``nu_0``; ``rho``: an
    upper bound (a ball); ``factor``: ``B(p_h)`` (:meth:`rho_at`)."""

    lam: arb
    u0: Any
    nu0: arb
    head: int
    rho: arb
    head_ps: tuple[arb, ...]
    #: ``B(p_h)``, an upper bound of the tail factor of every level past the head (a ball)
    factor: arb

    def rho_at(self, utility: Any) -> arb:
        """An upper bound of ``rho_a`` for every level past the head whose utility is at
        most ``utility`` (``p_a B(p_h) / nu_0``; the weights decrease with the utility)."""
        return (self.weight(utility) * self.factor / self.nu0.lower()).upper()

    def weight(self, utility: Any) -> arb:
        """``p = e^(lam (u - u_0))`` of the exact ``utility``."""
        return (self.lam * rational_ball(utility - self.u0)).exp()

    def probability(self, a: int, utility: Any) -> arb:
        """An enclosure of ``P_a``, one output of level ``a`` (of exact ``utility``)."""
        if a < self.head:
            return self.head_ps[a]
        return self.weight(utility) * self.nu0 * (1 + arb(0).union(self.rho))

    def log_probability(self, a: int, utility: Any) -> arb:
        """An enclosure of ``ln P_a``, one output of level ``a`` (of exact ``utility``),
        with no ``exp`` of an astronomically small number."""
        if a < self.head:
            return self.head_ps[a].log()
        return self.lam * rational_ball(utility - self.u0) + self.nu0.log() + arb(0).union(self.rho)


# -- planning floats from the exact utilities -------------------------------------------
def _ln_rational(x: Fraction) -> float:
    """``ln x`` for a positive rational of any size or smallness (planning only)."""
    return ln_int(x.numerator) - ln_int(x.denominator)


def ln_lam(scale: Scale) -> float:
    """``ln lam`` of ``scale`` as a float from the exact ``epsilon/divisor`` or ``base`` (planning only;
    ``-inf`` only if ``lam`` is too small for a float, where every ``p_a`` plans as 1)."""
    if scale.lam is not None:
        return _ln_rational(scale.lam)
    b = scale.base
    if b <= Fraction(1, 2):
        return math.log(_ln_rational(1 / b))  # lam = ln(1/b) >= ln 2
    r = 1 - b  # lam = -ln(1 - r), 0 < r < 1/2
    rf = float(r)
    if rf > 1e-8:
        return math.log(-math.log1p(-rf))
    return _ln_rational(r)  # lam = r (1 + O(r)): ln lam = ln r to float accuracy


def _ln_gap(lam_log: float, gap: Any) -> float:
    """``ln(lam * gap)`` for an exact positive int or Fraction gap (planning only)."""
    if type(gap) is int:
        return lam_log + ln_int(gap)
    return lam_log + _ln_rational(Fraction(gap))


def ln_magnitudes(table: LevelTableLike) -> list[float]:
    """``ln |ln p_a| = ln(lam (u_0 - u_a))`` per level of ``table`` (``-inf`` for ``a = 0``), from exact
    logs of the integers involved: finite for every valid input (planning only)."""
    lam_log = ln_lam(table.scale)
    u0 = table.utilities[0]
    return [_ln_gap(lam_log, u0 - u) if u != u0 else -math.inf for u in table.utilities]


_LN_CLAMP_LOG = math.log(LN_CLAMP)


def _ln_p(lam_log: float, gap: Any) -> float:
    """``ln p_a`` as a float from the exact gap ``u_0 - u_a`` (planning only): clamped at
    ``-LN_CLAMP`` for astronomically small ``p_a``, and ``-0.0`` (plans as ``p_a = 1``) when
    ``lam (u_0 - u_a)`` underflows a float; never an overflow or a domain error."""
    if not gap:
        return 0.0
    return -math.exp(min(_ln_gap(lam_log, gap), _LN_CLAMP_LOG))


def _ln_ps(lam_log: float, u0: Any, utilities: Sequence[Any]) -> list[float]:
    """:func:`_ln_p` of each utility's gap to ``u0``; for integer gaps below ``2**53`` (exact
    in float64) the same formula in numpy, one block at a time (planning only)."""
    if utilities and all(type(u) is int for u in utilities) and -(1 << 62) < utilities[-1] <= u0 < (1 << 62) \
            and u0 - utilities[-1] < (1 << 53):
        np = _np()
        gaps = (u0 - np.array(utilities, dtype=np.int64)).astype(np.float64)
        with np.errstate(divide="ignore"):
            lm = lam_log + np.log(gaps)
        out = -np.exp(np.minimum(lm, _LN_CLAMP_LOG))
        out[gaps == 0] = 0.0
        return out.tolist()
    return [_ln_p(lam_log, u0 - u) for u in utilities]


def _np() -> Any:
    import numpy

    return numpy


def use_poly(table: LevelTableLike, prec: int) -> bool:
    """Whether ``method="auto"`` takes the polynomial route for ``table`` at working precision ``prec``
    (reads at most ``PNF_POLY_SUPPORT_LIMIT + 1`` levels, none past the first block when
    the table knows its number of outputs)."""
    known = getattr(table, "output_count", None)
    if known is not None and (known() or 0) > PNF_POLY_SUPPORT_LIMIT:
        return False
    M = 0
    for m in table.multiplicities:
        M += m
        if M > PNF_POLY_SUPPORT_LIMIT:
            return False
    work = M * len(table)
    return work <= PNF_POLY_WORK_LIMIT or (prec >= PNF_POLY_MIN_PREC and work <= PNF_POLY_WORK_LIMIT_HIGH_PREC)


def single_output(table: LevelTableLike) -> bool:
    """Whether ``table`` has one output (one level of multiplicity 1); a lazy table finds
    at most its second block."""
    return table.sampling_size() == 1 and table.multiplicities[0] == 1


class PnfLevels:
    """Permute-and-flip's values over ``table`` at flint's current precision (module
    docstring); ``method`` as :class:`~exactdp.rules.permute_and_flip.PermuteAndFlip`'s."""

    def __init__(self, table: LevelTableLike, method: str):
        self.table, self.method, self.prec = table, method, ctx.prec
        self._found: list[tuple[int, int]] = []  # the block ranges found so far, in order
        self._all = False  # whether _found holds every block
        self._lam_log = ln_lam(table.scale)
        self._u0 = table.utilities[0]
        self.poly: Optional[tuple[list[arb], list[arb]]] = None
        self.quad: Optional[StreamedQuadrature] = None
        self._cumulative: Optional[PnfCumulative] = None
        self._finer: Optional[PnfLevels] = None  # the same at twice the precision (head entries)
        # the guard bits of the accuracy test in _accurate (a heuristic: either branch is a
        # rigorous enclosure): a block table's bound, so that no test finds every block
        self._guard = getattr(table, "bound_extra_bits", None) or table.extra_bits
        #: blocks whose levels the shared values summed (the rest: bounded by ``tail``)
        self.visited = 0
        #: ``None``, or a ball ``[0, T]`` enclosing ``sum m_b p_b`` over the levels not visited
        self.tail: Optional[arb] = None
        mult = table.multiplicities
        if single_output(table):
            self.poly = [arb(1)], [arb(1)]
            self.visited = 1
        elif method == "poly" or (method == "auto" and use_poly(table, self.prec)):
            if method == "poly" and sum(mult) > PNF_POLY_SUPPORT_LIMIT:
                raise InvalidParameterError(
                    "method", method,
                    f"permute-and-flip method='poly' over {sum(mult)} outputs exceeds "
                    f"PNF_POLY_SUPPORT_LIMIT = {PNF_POLY_SUPPORT_LIMIT}; use method='auto'",
                )
            p = table.relative_weights()
            self.poly = poly_integrals(p, mult, table.total(), lambda a: self._accurate(p[a], a))
            self.visited = len(self.ranges)
        else:
            # a block table's running sum may stop early (fast-decaying weights): the shared
            # values then read only the blocks it summed, and bound the rest by its tail
            summed = getattr(table, "summed_blocks", None)
            n, tail = summed() if summed is not None else (1, arb(0))
            self.visited = n
            self.tail = None if tail.is_zero() else tail
            ranges = [self.block_range(b) for b in range(n)]
            self.quad = StreamedQuadrature(table.total(), ranges, self._read, mult.__getitem__, method,
                                           None if self.tail is None else (n, self.tail))

    def block_range(self, b: int) -> Optional[tuple[int, int]]:
        """``(start, stop)`` of block ``b``, ``None`` past the last: a lazy table finds its
        blocks only up to ``b``."""
        while len(self._found) <= b and not self._all:
            get = getattr(self.table, "block_range", None)
            got = get(len(self._found)) if get is not None else (
                (0, len(self.table)) if not self._found else None)
            if got is None:
                self._all = True
            else:
                self._found.append(got)
        return self._found[b] if b < len(self._found) else None

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of every block (a lazy table finds them all)."""
        b = len(self._found)
        while self.block_range(b) is not None:
            b += 1
        return self._found

    def _read(self, b: int) -> tuple[list[float], Sequence[arb], Sequence[arb]]:
        """Block ``b``'s planning floats ``ln p_a`` and balls ``p_a``, ``m_a p_a``."""
        start, stop = self._found[b]
        t, lam_log, u0 = self.table, self._lam_log, self._u0
        lnp = _ln_ps(lam_log, u0, t.utilities[start:stop])
        return lnp, t.relative_weights()[start:stop], t.level_weights()[start:stop]

    def _accurate(self, pa: arb, a: int, utility: Any = None) -> arb:
        """``p_a`` with full relative accuracy at flint's precision.  The table's relative
        weights are ``exp(lam (u_a - u_0))`` at the working precision, which for an
        astronomically small ``p_a`` (``|lam (u_a - u_0)|`` beyond ``2**prec``) is a ball
        around 0; then ``P_a = p_a I_a`` would force the whole computation to a precision
        of ``log2 |ln p_a|`` bits.  ``I_a`` does not need it (``p_a`` enters ``F``
        negligibly), so only this factor is recomputed with that many extra bits (exact
        ``lam`` times the exact gap, then ``exp``): still a rigorous enclosure."""
        prec = ctx.prec
        # (a block table's running products lose up to about its guard bits, extra_bits:
        # those balls are fine, and recomputing them would cost an exponential per level)
        if a == 0 or pa.rel_accuracy_bits() >= prec - 16 - self._guard:  # (inlined in block)
            return pa
        delta = Fraction((self.table.utilities[a] if utility is None else utility) - self._u0)
        ln_mag = _ln_gap(self._lam_log, -delta)  # ln |ln p_a|, this level only
        extra = 64 + (int(math.ceil(ln_mag / LN2)) if ln_mag > 0 else 0)
        with flint_workprec(prec + extra):
            lam = self.table.scale.lam_ball()
            return (lam * arb(fmpq(delta.numerator, delta.denominator))).exp()

    def _one(self, a: int, lnp: float, pa: arb, wa: arb) -> tuple[arb, arb]:
        assert self.quad is not None
        I_a = self.quad.integral(a, lnp, pa)
        acc = self._accurate(pa, a)
        P_a = acc * I_a
        # m_a P_a = (m_a p_a) I_a, unless p_a had to be recomputed (then m_a p_a is too wide)
        return P_a, (wa * I_a if acc is pa else self.table.multiplicities[a] * P_a)

    def block(self, b: int) -> tuple[list[arb], list[arb]]:
        """``(P_a, m_a P_a)`` for the levels of block ``b`` (at this object's precision)."""
        found = self.block_range(b)
        if found is None:
            raise IndexError(b)
        start, stop = found
        if self.poly is not None:
            return self.poly[0][start:stop], self.poly[1][start:stop]
        quad = self.quad
        assert quad is not None
        # the common case inlined (one expansion term, p_a accurate): exactly what _one gives
        zero, f0, goal, nu0 = quad._zero_need, quad._f0, quad.goal, quad.nu0
        fine = self.prec - 16 - self._guard
        with flint_workprec(self.prec):
            lnp, p, w = self._read(b)
            out_p, out_l = [], []
            for i, (x, pa, wa) in enumerate(zip(lnp, p, w)):
                if x < zero and f0 is not None:
                    R = (pa * f0).upper()
                    if R < goal and pa.rel_accuracy_bits() >= fine:
                        I_a = nu0 + arb(0, R)
                        out_p.append(pa * I_a)
                        out_l.append(wa * I_a)
                        continue
                P_a, L_a = self._one(start + i, x, pa, wa)
                out_p.append(P_a)
                out_l.append(L_a)
        return out_p, out_l

    def form(self) -> Optional[PnfForm]:
        """The :class:`PnfForm` of the table at this object's precision, or None (the
        polynomial route, a single output, or more than :data:`PNF_FORM_MAX_HEAD` levels in
        the head).  The head (the levels taken one by one) ends at the first level whose
        planning float ``ln p_a`` is below the shared values' "no expansion term needed"
        threshold, so ``rho`` is below about ``2**-prec``; the floats choose only where it
        ends (any end gives a rigorous form, an earlier one a larger ``rho``)."""
        quad = self.quad
        if quad is None or self.method != "auto":
            return None
        t = self.table
        with flint_workprec(self.prec):
            nu0 = quad.moment0()
            if not nu0 > 0:
                return None
            # ln p_a decreases with a: the first level below the threshold, walked from the
            # best (the head is short; a bisection over every level would find every block)
            head, u_head = 1, None
            while head <= PNF_FORM_MAX_HEAD:
                try:
                    u = t.utilities[head]
                except IndexError:  # every level in the head
                    break
                if _ln_p(self._lam_log, self._u0 - u) < quad._zero_need:
                    u_head = u
                    break
                head += 1
            if head > PNF_FORM_MAX_HEAD:
                return None
            lam = t.scale.lam_ball()
            rho = factor = arb(0)
            if u_head is not None:
                p_h = (lam * rational_ball(u_head - self._u0)).exp()
                factor = tail_factor(p_h, 0, quad.S, quad.fact)
                if factor is None:
                    return None
                rho = (p_h * factor / nu0.lower()).upper()
            head_ps = tuple(self.value(a)[0] for a in range(head))
            if not all(p > 0 for p in head_ps):
                return None
            return PnfForm(lam, self._u0, nu0, head, rho, head_ps, factor)

    def fixed_log_output(self, frac_bits: int) -> Optional[FixedLogOutput]:
        """Every level's ``ln P_a`` at ``F = frac_bits`` fractional bits, within one ulp
        (:meth:`~exactdp.rules.permute_and_flip.PermuteAndFlip.fixed_log_output` gives the
        proof), from this object's balls; ``None`` when they are too wide for it (the
        caller raises the precision).  The head is read level by level (the blocks found
        only as far as it reaches), the rest is one offset: no block past the head is
        read here."""
        t, F = self.table, frac_bits
        quad = self.quad
        with flint_workprec(self.prec):
            if quad is None:  # the polynomial route or one output: a small table, every level
                head = len(t)
                offset = 0
            else:
                nu0 = quad.moment0()
                if not nu0 > 0:
                    return None
                head = 1  # the planning head, as in form(): the first level needing no term
                while True:
                    try:
                        u = t.utilities[head]
                    except IndexError:
                        break
                    if _ln_p(self._lam_log, self._u0 - u) < quad._zero_need:
                        break
                    head += 1
                lam = t.scale.lam_ball()
                offset = 0
                limit = 2 * head + 64  # past it, a higher precision (rho shrinks with it)
                while True:
                    try:
                        u = t.utilities[head]
                    except IndexError:  # every level in the head
                        break
                    p_h = (lam * rational_ball(u - self._u0)).exp()
                    factor = tail_factor(p_h, 0, quad.S, quad.fact)
                    if factor is not None and (p_h * factor / nu0.lower()) * arb(2) ** (F + 2) <= 1:
                        x = fixed_nearest(nu0.log(), F)
                        if x is None:
                            return None
                        offset = x
                        break
                    head += 1
                    if head > limit:
                        return None
            if head and self._head_entry(0, F) is None:  # (the first entry tried here: the usual failure)
                return None
        return FixedLogOutput(offset, head, lambda start, stop: [self._head_entry(a, F, True) for a in range(start, stop)])

    def _head_entry(self, a: int, frac_bits: int, certain: bool = False) -> Optional[int]:
        """The integer nearest to ``2**F ln P_a`` (``F = frac_bits``) from the log of
        level ``a``'s ball, whose radius must be below a quarter ulp; ``None`` when it is
        not, or (``certain``) the same from a :class:`PnfLevels` at twice the precision,
        and so on (a rigorous value at every precision: only the time depends on it)."""
        with flint_workprec(self.prec):
            x = fixed_nearest(self.value(a)[0].log(), frac_bits)
        if x is not None or not certain:
            return x
        if self.prec * 2 > MAX_PREC:
            raise PrecisionError(None, None, f"permute-and-flip log-probability not separated within {MAX_PREC} bits")
        if self._finer is None:
            with flint_workprec(2 * self.prec):
                self._finer = PnfLevels(self.table, self.method)
        return self._finer._head_entry(a, frac_bits, True)

    def value(self, a: int) -> tuple[arb, arb]:
        """``(P_a, m_a P_a)`` of level ``a`` alone."""
        if self.poly is not None:
            return self.poly[0][a], self.poly[1][a]
        t = self.table
        with flint_workprec(self.prec):
            return self._one(a, _ln_ps(self._lam_log, self._u0, [t.utilities[a]])[0], t.relative_weights()[a],
                             t.level_weights()[a])

    def utility_value(self, utility: Any) -> arb:
        """``P_a`` of the level with ``utility`` (a table with ``weights_by_utility``): a
        level past the blocks the shared values read is never found, its ``p_a`` is the
        table's ball for that utility (the very ball of its block) and its integral the
        one :meth:`value` gives it (a level not read has no direct integral kept), so the
        value is the same as ``value(index_of(utility))[0]``."""
        if self.poly is not None or self.tail is None:
            return self.value(self.table.index_of(utility))[0]
        last_visited = self._found[self.visited - 1][1] - 1
        if utility >= self.table.utilities[last_visited]:
            return self.value(self.table.index_of(utility))[0]
        assert self.quad is not None
        with flint_workprec(self.prec):
            pa = self.table.relative_weight_of(utility)
            lnp = _ln_ps(self._lam_log, self._u0, [utility])[0]
            # (a level not read is no level 0 and has no direct integral: any such index)
            return self._accurate(pa, -1, utility) * self.quad.integral(-1, lnp, pa)

    def block_of(self, a: int) -> int:
        """The index of the block holding level ``a`` (a lazy table finds blocks up to it)."""
        b = len(self._found) - 1
        while b < 0 or self._found[b][1] <= a:
            b += 1
            if self.block_range(b) is None:
                raise IndexError(a)
        return bisect_right(self._found, (a, math.inf)) - 1

    def is_last(self, a: int) -> bool:
        """Whether ``a`` is the last level's index (finding at most one block past it)."""
        b = self.block_of(a)
        return a == self._found[b][1] - 1 and self.block_range(b + 1) is None

    def cumulative(self) -> "PnfCumulative":
        """The running sums of the level probabilities (:class:`PnfCumulative`), kept."""
        if self._cumulative is None:
            self._cumulative = PnfCumulative(self)
        return self._cumulative


class PnfCumulative(Sequence):
    """``C_a = sum_{b <= a} m_b P_b`` for :func:`~exactdp.core.sampling.choose_index`, at the
    precision of its :class:`PnfLevels`, ``levels`` (module docstring).  ``C_last`` is exactly 1; the
    running sum is formed in level order, the same additions however far it was asked.

    Over a lazy table the blocks are found only as far as a draw reads: ``C_last = 1``
    needs no pass (the level probabilities of a distribution sum to 1), and a uniform
    beyond the sums formed so far reads the next blocks (their ``P_a`` from the shared
    values, :meth:`PnfLevels.block`), never rounded to a level already read."""

    _KEEP = 2  # blocks of running sums kept (a draw reads C_{a-1} and C_a: at most two)

    def __init__(self, levels: PnfLevels):
        self.levels = levels
        self._ends: list[arb] = []  # the running sum at the end of each block formed so far
        self._kept: "OrderedDict[int, list[arb]]" = OrderedDict()

    def __len__(self) -> int:
        return len(self.levels.table)

    def _block(self, b: int) -> list[arb]:
        got = self._kept.get(b)
        if got is not None:
            self._kept.move_to_end(b)
            return got
        while len(self._ends) < b:  # the sums before block b, in level order
            self._block(len(self._ends))
        with flint_workprec(self.levels.prec):
            run = self._ends[b - 1] if b else arb(0)
            out = []
            for w in self.levels.block(b)[1]:
                run = run + w
                out.append(run)
        if len(self._ends) == b:
            self._ends.append(run)
        self._kept[b] = out
        while len(self._kept) > self._KEEP:
            self._kept.popitem(last=False)
        return out

    def __getitem__(self, a):  # type: ignore[override]
        if isinstance(a, slice):
            return [self[i] for i in range(*a.indices(len(self)))]
        if a == -1:
            return arb(1)  # the level probabilities sum to exactly 1
        if a < 0:
            a += len(self)
        if a < 0:
            raise IndexError(a)
        if self.levels.is_last(a):
            return arb(1)
        b = self.levels.block_of(a)
        return self._block(b)[a - self.levels.block_range(b)[0]]  # type: ignore[index]

    def first_not_below(self, lower: Any) -> int:
        """First index whose upper bound is not ``<= lower`` (the last if none): the block
        sums are formed in order until one ends above ``lower`` (a lazy table finds the
        next block only when the sums so far end below it), then one block is searched."""
        levels = self.levels
        b = 0
        while levels.block_range(b + 1) is not None:  # block b is not the last
            if len(self._ends) <= b:
                self._block(b)
            if not self._ends[b].upper() <= lower:
                break
            b += 1
        return levels.block_range(b)[0] + first_not_below(self._block(b), lower)  # type: ignore[index]
