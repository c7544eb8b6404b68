r"""Permute-and-flip over utility levels: exact, certified and sampled.

Permute-and-flip (McKenna & Sheldon, "Permute-and-Flip: A new mechanism for differentially
private selection", NeurIPS 2020, arXiv:2010.12603) is report-noisy-max with
``Exponential(rate = lam)`` noise (Ding et al., arXiv:2105.07260; Gillenwater et al., "A Joint
Exponential Mechanism for Differentially Private Top-k", ICML 2022, arXiv:2201.12333, Appendix D,
Algorithms 4 and 5).  Over a :class:`~exactdp.core.levels.LevelTable` with levels ``(u_a, m_a)``
(best first) and ``p_a = w(u_a)/w(u_0)``, one output of level ``a`` has probability
``p_a int_0^1 F(t)/(1 - t p_a) dt`` with ``F(t) = prod_b (1 - t p_b)^{m_b}`` (docs/definitions.md §2.2).

Contract of :class:`PermuteAndFlip`: values certified to relative error ``<= 10**-dps`` (exact
polynomial integration up to :data:`PNF_POLY_SUPPORT_LIMIT` outputs, else rigorous quadrature,
:mod:`exactdp.rules.quadrature`, up to :data:`PNF_QUADRATURE_MAX_DPS` digits, then
:class:`PrecisionError`); sympy values for a rational base up to :data:`PNF_EXACT_SUPPORT_LIMIT`
outputs, else :class:`NoClosedFormError`; exact samples (``sampler="cdf"`` or ``"algorithm5"``).
A block table is read only as far as the tail bound ``P_b <= p_b`` needs.  Derivations (the
integral, planning without overflow, the tail bound, exact values, sampling):
docs/precision.md, section "The permute-and-flip rule over levels".

>>> from fractions import Fraction
>>> from exactdp.core.levels import Level, LevelTable
>>> from exactdp.core.scale import Scale
>>> t = LevelTable([Level(0, 1), Level(-1, 2)], Scale(base=Fraction(1, 2)))
>>> pnf = PermuteAndFlip()
>>> pnf.output_probability_exact(t, 0), pnf.output_probability_exact(t, 1)
(7/12, 5/24)
>>> import mpmath
>>> [mpmath.nstr(p, 20) for p in pnf.level_probabilities(t, 20)]
['0.58333333333333333333', '0.41666666666666666667']
"""

from __future__ import annotations

import math
import random
import weakref
from fractions import Fraction
from collections import OrderedDict
from typing import Any, Callable, Iterator, Optional

import mpmath
from flint import arb, ctx, fmpq_poly, fmpz, fmpz_mpoly_ctx, fmpz_poly

from ..core.lazy import sympy
from ..core.levels import LevelTableLike
from ..core.gc_pause import gc_paused
from ..core.precision import (MAX_PREC, PRECISION_LOCK, accuracy_bits, balls_to_mpf, certify, flint_workprec,
                              is_accurate, prec_for_dps)
from ..core.sampling import choose_index
from ..core.selection import FixedLogOutput, SelectionRule
from ..errors import InvalidParameterError, NoClosedFormError, PrecisionError
from .pnf_levels import (PNF_POLY_MIN_PREC, PNF_POLY_SUPPORT_LIMIT, PNF_POLY_WORK_LIMIT,
                         PNF_POLY_WORK_LIMIT_HIGH_PREC, PnfForm, PnfLevels, ln_magnitudes, single_output,
                         use_poly)
from .quadrature import LN2

__all__ = [
    "PermuteAndFlip",
    "PNF_EXACT_SUPPORT_LIMIT",
    "PNF_EXACT_BITS_LIMIT",
    "PNF_SYMBOLIC_SUPPORT_LIMIT",
    "PNF_SYMBOLIC_DEGREE_LIMIT",
    "PNF_POLY_SUPPORT_LIMIT",
    "PNF_POLY_WORK_LIMIT",
    "PNF_POLY_MIN_PREC",
    "PNF_POLY_WORK_LIMIT_HIGH_PREC",
    "PNF_QUADRATURE_MAX_DPS",
    "PNF_SAMPLERS",
    "PNF_SAMPLER_PRECISIONS",
    "pnf_enclosures",
]

#: ``probability_exact`` with a rational base: at most this many outputs (polynomial degree).
PNF_EXACT_SUPPORT_LIMIT = 10_000
#: ...and at most about this many bits in all intermediate polynomial coefficients together.
PNF_EXACT_BITS_LIMIT = 1 << 30
#: ``probability_exact`` with ``epsilon`` (sum of exponentials): at most this many outputs...
PNF_SYMBOLIC_SUPPORT_LIMIT = 200
#: ...and at most this polynomial degree in ``z = exp(-lam/D)`` (about the number of terms).
PNF_SYMBOLIC_DEGREE_LIMIT = 20_000

#: The quadrature route (supports above :data:`PNF_POLY_SUPPORT_LIMIT`, and the
#: cross-check methods ``"direct"``/``"acb"``) needs a number of nodes that grows with
#: ``dps``: requests above this many digits raise :class:`PrecisionError` naming this limit
#: (set ``exactdp.rules.permute_and_flip.PNF_QUADRATURE_MAX_DPS`` higher to allow slower runs).
PNF_QUADRATURE_MAX_DPS = 500

_CHUNK = 32  # random bits drawn per refinement of one uniform in the Algorithm 5 sampler
#: Estimated bytes per level that the Algorithm 5 sampler holds at once (a gap, random bits,
#: three balls): it races every level, so it is refused past a block table's budget.
_ALGORITHM5_LEVEL_BYTES = 640

#: The samplers of :class:`PermuteAndFlip` (``sampler=``).
PNF_SAMPLERS = ("cdf", "algorithm5")
#: The ``"cdf"`` sampler keeps the cumulative level enclosures of this many precisions per
#: table (each is one arb ball per level; draws almost always need only the first).
PNF_SAMPLER_PRECISIONS = 2


class _OnTheTable:
    """A per-table cache kept as an attribute of the table, so it is freed with the table
    (a ``WeakKeyDictionary`` whose values hold their table, as :class:`PnfLevels` do,
    never frees either); ``get``, ``[]``, ``[] =`` and ``pop`` by table."""

    def __init__(self, attribute: str):
        self.attribute = attribute

    def get(self, table: LevelTableLike, default: Any = None) -> Any:
        return vars(table).get(self.attribute, default)

    def __getitem__(self, table: LevelTableLike) -> Any:
        return vars(table)[self.attribute]

    def __setitem__(self, table: LevelTableLike, value: Any) -> None:
        vars(table)[self.attribute] = value

    def pop(self, table: LevelTableLike, *default: Any) -> Any:
        return vars(table).pop(self.attribute, *default)


_state_cache = _OnTheTable("_pnf_levels_kept")


def pnf_enclosures(table: LevelTableLike, method: str = "auto") -> tuple[list[arb], list[arb]]:
    """Enclosures ``(P_a, m_a P_a)`` for every level of ``table`` at flint's current precision, as lists
    (:class:`~exactdp.rules.pnf_levels.PnfLevels` block by block).

    ``method="auto"``: the polynomial route where it is cheap, else the quadrature route
    (:mod:`exactdp.rules.quadrature_stream`); ``"poly"``: the polynomial route;
    ``"direct"`` and ``"acb"``: the quadrature route with every level integrated directly,
    by our Gauss-Legendre or by Arb's ``acb.integral`` (cross-checks, used by the tests).
    """
    levels = PnfLevels(table, method)
    out_p: list[arb] = []
    out_l: list[arb] = []
    for b in range(len(levels.ranges)):  # (every level: a lazy table finds every block)
        P, L = levels.block(b)
        out_p += P
        out_l += L
    return out_p, out_l


# ---------------------------------------------------------------------------------------
# exact values
# ---------------------------------------------------------------------------------------
_exact_cache: "weakref.WeakKeyDictionary[LevelTableLike, tuple]" = weakref.WeakKeyDictionary()
_EXACT_CACHE_BITS = 1 << 26  # products larger than this (8 MB) are recomputed, not kept


def _product_tree(polys: list) -> object:
    while len(polys) > 1:
        polys = [polys[i] * polys[i + 1] if i + 1 < len(polys) else polys[i] for i in range(0, len(polys), 2)]
    return polys[0]


def _exact_rational(table: LevelTableLike, a: int, support: int) -> sympy.Rational:
    base = table.scale.base
    P, Q = base.numerator, base.denominator
    u0 = table.utilities[0]
    exps = [int(u0 - u) for u in table.utilities]
    if support > PNF_EXACT_SUPPORT_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: permute-and-flip over {support} outputs exceeds "
            f"PNF_EXACT_SUPPORT_LIMIT = {PNF_EXACT_SUPPORT_LIMIT} (exact polynomial integration "
            f"of degree = number of outputs); use probability(output, dps=...)",
        )
    width = max(P, Q).bit_length()
    coeff_bits = sum(m * e * width for m, e in zip(table.multiplicities, exps)) + support
    if coeff_bits * support > PNF_EXACT_BITS_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: the exact permute-and-flip polynomial needs about "
            f"{coeff_bits * support} bits of coefficients (limit PNF_EXACT_BITS_LIMIT = "
            f"{PNF_EXACT_BITS_LIMIT}); use probability(output, dps=...)",
        )
    cache = _exact_cache.get(table)
    if cache is None:
        factors = [fmpz_poly([Q**e, -(P**e)]) ** m for e, m in zip(exps, table.multiplicities)]
        den = fmpz(1)
        for e, m in zip(exps, table.multiplicities):
            den *= fmpz(Q) ** (e * m)
        cache = (_product_tree(factors), den)
        if coeff_bits * support <= _EXACT_CACHE_BITS:  # keep small products for the other levels
            _exact_cache[table] = cache
    H, den = cache
    quot, rem = divmod(H, fmpz_poly([Q ** exps[a], -(P ** exps[a])]))
    if not rem.is_zero():  # pragma: no cover - the factor divides H by construction
        raise AssertionError("inexact division in the permute-and-flip polynomial")
    integral = fmpq_poly(quot).integral()(1)
    num = int(integral.p) * P ** exps[a]
    return sympy.Rational(num, int(integral.q) * int(den))


def _exact_symbolic(table: LevelTableLike, a: int, support: int) -> sympy.Expr:
    if support > PNF_SYMBOLIC_SUPPORT_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: permute-and-flip with an irrational weight over {support} "
            f"outputs exceeds PNF_SYMBOLIC_SUPPORT_LIMIT = {PNF_SYMBOLIC_SUPPORT_LIMIT} "
            f"(a sympy sum of exponentials); use a rational base, or probability(output, dps=...)",
        )
    scale = table.scale
    u0 = table.utilities[0]
    gaps = [Fraction(u0 - u) for u in table.utilities]
    den = 1
    for g in gaps:
        den = den * g.denominator // math.gcd(den, g.denominator)
    exps = [int(g * den) for g in gaps]
    degree = sum(e * m for e, m in zip(exps, table.multiplicities))
    if degree > PNF_SYMBOLIC_DEGREE_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: the permute-and-flip sum of exponentials has degree {degree} in "
            f"exp(-lam/{den}), above PNF_SYMBOLIC_DEGREE_LIMIT = {PNF_SYMBOLIC_DEGREE_LIMIT}; use a "
            f"rational base, or probability(output, dps=...)",
        )
    R = fmpz_mpoly_ctx.get(("t", "z"))
    t, z = R.gens()
    factors = []
    for b, (e, m) in enumerate(zip(exps, table.multiplicities)):
        mm = m - (1 if b == a else 0)
        if mm:
            factors.append((1 - t * z**e) ** mm)
    G = _product_tree(factors) if factors else R.constant(1)
    coeffs: dict[int, Fraction] = {}
    for (i, e), c in G.to_dict().items():
        i, e = int(i), int(e)
        coeffs[e] = coeffs.get(e, Fraction(0)) + Fraction(int(c), int(i) + 1)
    zsym = sympy.exp(-scale.lam_symbolic() / den) if scale.base is None else sympy.Pow(
        sympy.Rational(scale.base.numerator, scale.base.denominator), sympy.Rational(1, den))
    terms = [sympy.Rational(c.numerator, c.denominator) * zsym ** (e + exps[a])
             for e, c in sorted(coeffs.items()) if c]
    return sympy.Add(*terms)


# ---------------------------------------------------------------------------------------
# the rule
# ---------------------------------------------------------------------------------------
class PermuteAndFlip(SelectionRule):
    """Permute-and-flip (= report-noisy-max with exponential noise) over levels.

    ``method="auto"`` (default), ``"poly"``, ``"direct"`` or ``"acb"`` (cross-checks: every
    level by its own quadrature, ours or Arb's ``acb.integral``; see
    :func:`pnf_enclosures`).  Numeric values: the method and its rigorous error bounds in
    docs/precision.md, "Certified integrals: method and error bounds"; every returned value has relative error ``<= 10**-dps``.
    ``sampler="cdf"`` (default) draws a level from the certified level probabilities,
    ``sampler="algorithm5"`` by the Joint paper's Algorithm 5 (the same distribution; see
    :meth:`sample_level`).
    """

    name = "permute-and-flip"

    def __init__(self, method: str = "auto", sampler: str = "cdf") -> None:
        if method not in ("auto", "direct", "acb", "poly"):
            raise InvalidParameterError("method", method, "must be 'auto', 'direct', 'acb' or 'poly'")
        if sampler not in PNF_SAMPLERS:
            raise InvalidParameterError(
                "sampler", sampler,
                "must be 'cdf' (a level from the certified level probabilities) or 'algorithm5' "
                "(the Joint paper's Appendix D race of MaxExpo draws)",
            )
        self.method = method
        self.sampler = sampler

    def __repr__(self) -> str:
        args = [] if self.method == "auto" else [f"method={self.method!r}"]
        if self.sampler != "cdf":
            args.append(f"sampler={self.sampler!r}")
        return f"PermuteAndFlip({', '.join(args)})"

    # -- certified numbers -------------------------------------------------------------
    def _levels(self, table: LevelTableLike, prec: int, at_least: bool = False) -> PnfLevels:
        """The :class:`~exactdp.rules.pnf_levels.PnfLevels` of ``table`` at ``prec`` bits
        (``at_least``: or a kept one of higher precision), computed once and kept (the
        newest :data:`PNF_SAMPLER_PRECISIONS` + 1 per table and method)."""
        with PRECISION_LOCK:  # one thread builds; the cache is per table
            kept = _state_cache.get(table)
            if kept is None:
                kept = _state_cache[table] = OrderedDict()
            fits = [p for (m, p) in kept if m == self.method and (p >= prec if at_least else p == prec)]
            if fits:
                key = (self.method, min(fits))
                kept.move_to_end(key)
                return kept[key]
            with flint_workprec(prec):
                levels = PnfLevels(table, self.method)
            kept[(self.method, prec)] = levels
            while len(kept) > PNF_SAMPLER_PRECISIONS + 1:
                kept.popitem(last=False)  # the least recently used
            return levels

    def pnf_form(self, table: LevelTableLike) -> Optional[PnfForm]:
        """The :class:`~exactdp.rules.pnf_levels.PnfForm` of ``table`` at flint's current
        precision (every level's ``ln P_a`` from the shared values, the levels past a head
        in one closed form), or None where it does not apply (``method`` other than
        ``"auto"``, the polynomial route, a single output)."""
        if self.method != "auto" or single_output(table):
            return None
        return self._levels(table, ctx.prec).form()

    #: :meth:`fixed_log_output`: 3/4 ulp of rounding plus 1/4 of the expansion's remainder
    fixed_log_output_error = 1

    def fixed_log_output(self, table: LevelTableLike, frac_bits: int, dps: int) -> FixedLogOutput:
        r"""Every level's ``ln P_a`` (one output) of ``table`` at ``F = frac_bits`` fractional bits
        within one ulp (``dps``: the digits the caller certifies, at most
        :data:`PNF_QUADRATURE_MAX_DPS` on the quadrature route): a head of levels one by one, then
        ``ln P_a - lam (u_a - u_0)`` as one offset (:class:`~exactdp.core.selection.FixedLogOutput`),
        from the shared values of one fresh :class:`~exactdp.rules.pnf_levels.PnfLevels`, so a
        later sample reads ``rng`` exactly as it would without this call.

        *Bound*: past the head ``0 <= ln I_a - ln nu_0 <= 2**-F / 4``, and the offset is nearest to
        ``2**F`` times an enclosure of ``ln nu_0`` within a quarter ulp: ``3/4 + 1/4 = 1`` ulp.
        Proof and the head's length: docs/precision.md, "Levels in fixed point: the head and the
        offset"."""
        self._check_dps(table, dps)
        guard = getattr(table, "bound_extra_bits", None) or table.extra_bits
        prec = frac_bits + 32 + guard
        while True:
            if prec > MAX_PREC:
                raise PrecisionError(None, None, f"permute-and-flip log-probabilities not separated within "
                                                 f"{MAX_PREC} bits")
            with flint_workprec(prec):
                got = PnfLevels(table, self.method).fixed_log_output(frac_bits)
            if got is not None:
                return got
            prec *= 2

    def _enclosures(self, table: LevelTableLike) -> tuple[list[arb], list[arb]]:
        """Every level's ``(P_a, m_a P_a)`` at flint's precision, as lists (refused past a
        block table's memory budget: the streamed methods never need them)."""
        return table._cached(f"pnf-{self.method}", lambda: pnf_enclosures(table, self.method))

    def _check_dps(self, table: LevelTableLike, dps: int) -> None:
        """:class:`PrecisionError` when the quadrature route would be asked for more than
        :data:`PNF_QUADRATURE_MAX_DPS` digits (its cost grows steeply with ``dps``)."""
        if dps <= PNF_QUADRATURE_MAX_DPS or single_output(table):
            return
        if self.method == "poly" or (self.method == "auto" and use_poly(table, MAX_PREC)):
            return
        raise PrecisionError(
            "dps", dps,
            f"permute-and-flip over more than PNF_POLY_SUPPORT_LIMIT = {PNF_POLY_SUPPORT_LIMIT} outputs "
            f"(or with method={self.method!r}) uses rigorous quadrature, whose cost grows steeply with "
            f"dps: at most PNF_QUADRATURE_MAX_DPS = {PNF_QUADRATURE_MAX_DPS} digits (set "
            f"exactdp.rules.permute_and_flip.PNF_QUADRATURE_MAX_DPS higher to allow slower runs)",
        )

    def output_probability(self, table: LevelTableLike, a: int, dps: int) -> mpmath.mpf:
        """``P_a``, the probability of one output of level ``a`` of ``table`` to ``dps``
        certified digits, from the shared values alone (one level: no other level's value)."""
        self._check_dps(table, dps)
        return certify(lambda: self._levels(table, ctx.prec).value(a)[0], dps, extra_bits=table.extra_bits)

    def utility_probability(self, table: LevelTableLike, utility: Any, dps: int) -> mpmath.mpf:
        """``P_a`` to ``dps`` certified digits of the level of ``table`` with the exact ``utility``;
        a level past the blocks a lazy table read is never found
        (:meth:`~exactdp.rules.pnf_levels.PnfLevels.utility_value`: the same ball as by index)."""
        if not getattr(table, "weights_by_utility", False):
            return super().utility_probability(table, utility, dps)
        self._check_dps(table, dps)
        return certify(lambda: self._levels(table, ctx.prec).utility_value(utility), dps, extra_bits=table.extra_bits)

    def utility_log_probability(self, table: LevelTableLike, utility: Any, dps: int) -> mpmath.mpf:
        """``ln P_a`` (to ``dps`` certified digits) of the level of ``table`` with the exact
        ``utility``, from :meth:`utility_probability`'s ball when ``P_a <= 1/2`` is certain
        at the first working precision (no digit lost in the log), else the level's own
        :meth:`output_log_probability`; the choice depends on the utility and ``dps`` only."""
        if getattr(table, "weights_by_utility", False):
            self._check_dps(table, dps)
            prec = prec_for_dps(dps, table.extra_bits)
            with flint_workprec(prec):
                small = bool(2 * self._levels(table, prec).utility_value(utility) <= 1)
            if small:
                return certify(lambda: self._levels(table, ctx.prec).utility_value(utility).log(), dps,
                               extra_bits=table.extra_bits)
        return super().utility_log_probability(table, utility, dps)

    def output_log_probability(self, table: LevelTableLike, a: int, dps: int) -> mpmath.mpf:
        """``log P_a`` of one output of level ``a`` of ``table``, to ``dps`` certified digits;
        near 1 computed as ``log1p(-Q_a)`` with the complement
        ``Q_a = (m_a - 1) P_a + sum_{b != a} m_b P_b`` (a sum of positive enclosures, formed
        block by block), so that probabilities close to 1 keep full relative accuracy in
        the log.  Over a lazy table whose shared values stopped early, the levels not read
        add ``[0, T]`` (``T`` the table's bound on their weights ``sum m_b p_b``; each
        ``P_b = p_b I_b <= p_b`` as ``I_b <= 1``)."""
        self._check_dps(table, dps)

        def compute():
            if single_output(table):
                return arb(0)
            levels = self._levels(table, ctx.prec)
            p_a = levels.value(a)[0]
            q = (table.multiplicities[a] - 1) * p_a
            n = len(levels.ranges) if levels.tail is None else levels.visited
            for b in range(n):
                start = levels.block_range(b)[0]  # type: ignore[index]
                for i, lv in enumerate(levels.block(b)[1]):
                    if start + i != a:
                        q += lv
            if levels.tail is not None:
                q += levels.tail
            if q < 0.5:
                return (-q).log1p()
            return p_a.log()

        return certify(compute, dps, extra_bits=table.extra_bits)

    def level_probabilities(self, table: LevelTableLike, dps: int) -> list[mpmath.mpf]:
        """:meth:`iter_level_probabilities` of ``table`` (to ``dps`` certified digits) as a list."""
        return list(self.iter_level_probabilities(table, dps))

    def iter_level_probabilities(self, table: LevelTableLike, dps: int) -> Iterator[mpmath.mpf]:
        """Level probabilities of ``table`` block by block, each certified on its own: the shared values
        at the working precision of ``dps`` digits plus guard bits (one pass over the
        levels), then each block's ``m_a P_a``; only a level whose ball is not yet accurate
        is recomputed at doubled precisions.  Nothing is held beyond the shared values and
        one block, and the values do not depend on how the table is cut into blocks."""

        def late(a: int) -> mpmath.mpf:
            extra = 2 * prec_for_dps(dps, table.extra_bits) - prec_for_dps(dps)
            return certify(lambda: self._levels(table, ctx.prec).value(a)[1], dps, extra_bits=extra)

        yield from self._block_values(table, dps, 1, late)

    def output_probabilities(self, table: LevelTableLike, dps: int) -> list[mpmath.mpf]:
        """The values of :meth:`output_probability` (the same ``mpf``, ``dps`` certified digits)
        for every level of ``table``, best first, in one pass over the blocks at its first
        working precision; a level not yet accurate there is handed to it."""
        return list(self._block_values(table, dps, 0, lambda a: self.output_probability(table, a, dps)))

    def _block_values(self, table: LevelTableLike, dps: int, which: int,
                      late: Callable[[int], mpmath.mpf]) -> Iterator[mpmath.mpf]:
        """Every level's ``P_a`` (``which=0``) or ``m_a P_a`` (``which=1``), best first, block
        by block from the shared values at the working precision of ``dps`` digits plus
        guard bits; a level whose ball is not accurate to ``dps`` digits gets ``late(a)``."""
        self._check_dps(table, dps)
        prec = prec_for_dps(dps, table.extra_bits)
        bits = accuracy_bits(dps)
        levels = self._levels(table, prec)
        b = 0
        while levels.block_range(b) is not None:
            with flint_workprec(prec), gc_paused():  # compute under the precision lock, yield outside it
                balls = levels.block(b)[which]
                slow = [i for i, ball in enumerate(balls)  # fast test first, then the exact one
                        if ball.rel_accuracy_bits() < bits and not is_accurate(ball, dps)]
                values = balls_to_mpf(balls)
            start = levels.block_range(b)[0]  # type: ignore[index]
            b += 1
            for i in slow:
                values[i] = late(start + i)
            yield from values

    # -- exact --------------------------------------------------------------------------
    def output_probability_exact(self, table: LevelTableLike, a: int) -> sympy.Expr:
        """The exact probability of one output of level ``a`` of ``table``: an exact
        rational (rational base, integral gaps) or a sympy sum of exponentials
        (tiny supports); ``1/support`` for a single level (all weights 1) at any support;
        :class:`NoClosedFormError` naming the limit otherwise."""
        support = sum(table.multiplicities)
        if len(table.multiplicities) == 1:  # one level: every weight is 1, so uniform
            return sympy.Rational(1, support)
        u0 = table.utilities[0]
        integral_gaps = all(Fraction(u0 - u).denominator == 1 for u in table.utilities)
        if table.scale.is_rational and integral_gaps:
            return _exact_rational(table, a, support)
        return _exact_symbolic(table, a, support)

    # -- sampling -----------------------------------------------------------------------
    def sample_level(self, table: LevelTableLike, rng: random.Random) -> int:
        """An exact draw of a level index of ``table`` with the integer randomness of ``rng``, by
        the rule's ``sampler``: ``"cdf"``, :func:`~exactdp.core.sampling.choose_index` over
        enclosures of the cumulative sums of ``m_a P_a``
        (:class:`~exactdp.rules.pnf_levels.PnfCumulative`), exact at every precision;
        ``"algorithm5"``, :meth:`sample_level_algorithm5`.  Cost: docs/precision.md, "Drawing a
        level"."""
        if self.sampler == "algorithm5":
            return self.sample_level_algorithm5(table, rng)
        size = table.sampling_size()  # (a lazy table: its bound on the number of levels)
        if size == 1:
            return 0
        return choose_index(lambda prec: self._levels(table, prec, at_least=True).cumulative(), size, rng,
                            prec=table.sampling_prec)

    def sample_level_algorithm5(self, table: LevelTableLike, rng: random.Random,
                                trace: Optional[list] = None) -> int:
        r"""Algorithm 5 of the Joint paper (Appendix D), decided exactly: a level index of
        ``table`` drawn with ``rng``.

        For every level ``a`` draw ``v_a = u_a + MaxExpo(lam, m_a)``, the maximum of
        ``m_a`` iid ``Exponential(lam)`` variables, by the inverse CDF (Equation 6)
        ``-(1/lam) ln(1 - U_a^{1/m_a})`` of a uniform ``U_a``; return ``argmax_a v_a``.

        *Why this is permute-and-flip.*  Permute-and-flip equals report-noisy-max with
        ``Exponential(lam)`` noise on every output (McKenna & Sheldon 2020; Ding et al.
        2021); the largest noisy value among the ``m_a`` outputs of level ``a`` is
        ``u_a + max_i X_i``, distributed as ``u_a + MaxExpo(lam, m_a)`` (CDF
        ``(1 - e^{-lam z})^{m_a}``), independently across levels; so the level of the
        report-noisy-max winner is ``argmax_a v_a``, and given the level, the winner is
        uniform over the level's outputs by symmetry (the mechanism then unranks a uniform
        integer).

        *Why it is exact.*  We compare ``lam (v_a - u_0) = ln p_a - ln(-expm1(ln(U_a)/m_a))``
        (a positive rescaling, so the same argmax), an increasing function of ``U_a``.
        Each ``U_a`` is a lazily refined uniform: its first ``k`` bits (``rng.getrandbits``)
        say ``U_a`` lies in ``[x/2^k, (x+1)/2^k)``, so the noisy value lies between arb
        enclosures of the function at the two ends (``ln p_a`` at 0, ``+inf`` at 1).  A
        level is returned only when its certain lower bound exceeds every other level's
        certain upper bound; otherwise the overlapping levels draw 32 more bits each (and
        the working precision grows with the bits).  The result is therefore exactly the
        argmax of the infinite-precision uniforms; ties have probability 0, so the loop
        ends with probability 1.  No float and no ``rng.random()`` is used.  ``trace`` (a
        list, for the walk-through of :func:`exactdp.explain`) receives each level's final
        ``(bits, number of bits, lower bound, upper bound)``.
        """
        n = len(table)
        if n == 1:
            return 0
        check_fits = getattr(table, "check_fits", None)  # a block table: within its budget only
        if check_fits is not None:
            check_fits(n * _ALGORITHM5_LEVEL_BYTES, "permute-and-flip's Algorithm 5 sampler", None)
        mult = table.multiplicities
        u0 = table.utilities[0]
        gaps = [Fraction(u - u0) for u in table.utilities]
        bits = [rng.getrandbits(_CHUNK) for _ in range(n)]
        nbits = [_CHUNK] * n
        # the noisy values are about |ln p_a| in size: that many extra bits keep them exact
        # (a bit-length estimate from exact logs: |ln p_a| may be far beyond a float)
        ln_mag = max(ln_magnitudes(table))
        mag_bits = 8 if ln_mag < 0 else int(math.ceil(ln_mag / LN2)) + 9
        prec = 0
        lo: list[Optional[arb]] = [None] * n
        hi: list[Optional[arb]] = [None] * n
        lnp: list[arb] = []
        while True:
            need = max(nbits) + 64 + mag_bits + 2 * n.bit_length()
            if need > MAX_PREC:
                raise PrecisionError(None, None, f"sampler could not separate levels within {MAX_PREC} bits")
            if need > prec:
                prec = max(need, 2 * prec)
                lo = [None] * n
                hi = [None] * n
                with flint_workprec(prec):
                    lam = table.scale.lam_ball()
                    lnp = [lam * arb(g.numerator) / g.denominator if g else arb(0) for g in gaps]
            with flint_workprec(prec):
                for a in range(n):
                    if lo[a] is None:
                        lo[a] = _noisy(lnp[a], mult[a], bits[a], nbits[a], upper=False)
                        hi[a] = _noisy(lnp[a], mult[a], bits[a] + 1, nbits[a], upper=True)
                best = max(range(n), key=lambda a: lo[a])
                floor_ = lo[best]
                rivals = [a for a in range(n) if a != best and not (hi[a] < floor_)]
                if not rivals:
                    if trace is not None:
                        trace.extend(zip(bits, nbits, lo, hi))
                    return best
                for a in rivals + [best]:
                    bits[a] = (bits[a] << _CHUNK) | rng.getrandbits(_CHUNK)
                    nbits[a] += _CHUNK
                    lo[a] = hi[a] = None


def _noisy(lnp: arb, m: int, x: int, k: int, upper: bool) -> arb:
    """Certain bound (exact arb) of ``ln p - ln(-expm1(ln(U)/m))`` at ``U = x / 2^k``:
    the lower bound of the enclosure (``upper=False``) or the upper bound."""
    if x == 0:
        return lnp.lower()
    if x >> k:  # U = 1
        return arb("inf")
    u = arb(x) * arb(2) ** (-k)
    val = lnp - (-((u.log() / m).expm1())).log()
    return val.upper() if upper else val.lower()
