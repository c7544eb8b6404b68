"""The exponential mechanism as a selection rule over utility levels.

McSherry & Talwar, "Mechanism Design via Differential Privacy", FOCS 2007; the Joint
paper's Equation 1: ``P(o) = w(u(o)) / Z`` with ``Z = sum_a m_a w(u_a)``.

>>> from fractions import Fraction
>>> from exactdp.core.levels import Level, LevelTable
>>> from exactdp.core.scale import Scale
>>> t = LevelTable([Level(0, 1), Level(-1, 2)], Scale(base=Fraction(1, 2)))
>>> em = ExponentialMechanism()
>>> em.output_probability_exact(t, 1)      # (1/2) / (1 + 2 * 1/2)
1/4
>>> [str(p) for p in em.level_probabilities(t, 20)]
['0.5', '0.5']
"""

from __future__ import annotations

import random
import weakref
from fractions import Fraction
from itertools import repeat
from operator import methodcaller, truediv
from typing import Any, Iterator, NamedTuple, Optional, Sequence

import gmpy2
import mpmath
from flint import arb, ctx

from ..core.gc_pause import gc_paused
from ..core.lazy import sympy
from ..core.levels import LevelTableLike
from ..core.precision import (MAX_PREC, accuracy_bits, balls_to_mpf, certify, certify_many, fixed_nearest,
                              flint_workprec, is_accurate, prec_for_dps, rational_ball)
from ..core.sampling import WORD_BITS, cdf_bounds, choose_index, initial_prec, inverse_cdf_words, random_words
from ..core.selection import FixedLogOutput, SelectionRule
from ..errors import NoClosedFormError, PrecisionError

__all__ = ["ExponentialMechanism", "LogForm", "decaying_sum", "SYMBOLIC_LEVELS_LIMIT", "EXACT_BITS_LIMIT", "EXACT_LEVELS_LIMIT"]

#: ``probability_exact`` builds a sympy sum over at most this many levels.
SYMBOLIC_LEVELS_LIMIT = 10_000
#: ...and, with a rational base, exact rationals of at most this many bits per term.
EXACT_BITS_LIMIT = 1 << 24
#: ...over at most this many levels.
EXACT_LEVELS_LIMIT = 10**7


class LogForm(NamedTuple):
    """Every level's log-probability from one normaliser:
    ``ln P(level a) = lam (u_a - u_0) - ln m_0 - log1p(tail)`` (one output of level ``a``).

    ``lam``: an enclosure of the weight exponent (``lam_exact`` the exact rational when it is
    one, else None); ``u0``, ``m0``: the best level's utility and multiplicity; ``tail``: an
    enclosure of ``sum_{a >= 1} (m_a / m_0) exp(lam (u_a - u_0))`` with a small *relative*
    error even when it is as tiny as ``e^(-10^8)`` (arb's exponents are unbounded), so
    ``log1p(tail)`` and the difference of two such tails stay certifiable.
    """

    lam: arb
    lam_exact: Optional[Fraction]
    u0: Any
    m0: int
    tail: arb

    def log_probability(self, utility: Any) -> arb:
        """An enclosure of ``ln P`` of one output of the level with the exact ``utility``."""
        return self.lam * _ball(utility - self.u0) - arb(self.m0).log() - self.tail.log1p()


class ExponentialMechanism(SelectionRule):
    """``P(o) = w(u(o)) / sum_a m_a w(u_a)`` (the Joint paper's Equation 1).

    Numeric values are arb enclosures certified by :func:`exactdp.core.precision.certify`:
    relative error at most ``10**-dps``.  The log-probability of level ``a`` is
    ``-log1p(R_a)`` with ``R_a = (m_a - 1) + sum_{b != a} m_b e_b / e_a >= 0`` so that
    probabilities near 1 keep full relative accuracy in the log.
    """

    name = "exponential"

    def output_probability(self, table: LevelTableLike, a: int, dps: int) -> mpmath.mpf:
        return certify(lambda: table.relative_weights()[a] / table.total(), dps, extra_bits=table.extra_bits)

    def utility_probability(self, table: LevelTableLike, utility: Any, dps: int) -> mpmath.mpf:
        """``w(u) / Z`` to ``dps`` certified digits from the exact ``utility`` alone: over a lazy
        ``table`` (:meth:`~exactdp.core.level_blocks.BlockLevelTable.relative_weight_of`) the level's
        block is never found, and the ball is the very one of that block."""
        if not getattr(table, "weights_by_utility", False):
            return super().utility_probability(table, utility, dps)
        return certify(lambda: table.relative_weight_of(utility) / table.total(), dps, extra_bits=table.extra_bits)

    def utility_log_probability(self, table: LevelTableLike, utility: Any, dps: int) -> mpmath.mpf:
        """``ln P = -ln(Z / e_u)`` (to ``dps`` certified digits) from the exact ``utility``
        alone (``table`` a lazy level table, as
        :meth:`utility_probability`) when ``P <= 1/2`` is certain at the first working
        precision: then ``|ln P| >= ln 2`` and no digit is lost.  Otherwise, or undecided,
        the level's own ``-log1p(R_a)`` (:meth:`output_log_probability`), which keeps the
        relative accuracy of a log near 0; such a level carries half the mass, so it lies
        among the first levels found.  The choice depends on the utility and ``dps`` only."""
        if getattr(table, "weights_by_utility", False):
            with flint_workprec(prec_for_dps(dps, table.extra_bits)):
                small = bool(2 * table.relative_weight_of(utility) <= table.total())
            if small:
                return certify(lambda: -(table.total() / table.relative_weight_of(utility)).log(), dps,
                               extra_bits=table.extra_bits)
        return super().utility_log_probability(table, utility, dps)

    def output_log_probability(self, table: LevelTableLike, a: int, dps: int) -> mpmath.mpf:
        def compute():
            e_a = table.relative_weights()[a]
            others = table.sum_except(a)
            r = (table.multiplicities[a] - 1) + others / e_a
            return -(r.log1p()) if not (r.is_exact() and r.is_zero()) else arb(0)

        return certify(compute, dps, extra_bits=table.extra_bits)

    def level_probabilities(self, table: LevelTableLike, dps: int) -> list[mpmath.mpf]:
        return certify_many(
            lambda: [w / table.total() for w in table.level_weights()], dps, extra_bits=table.extra_bits
        )

    def iter_level_probabilities(self, table: LevelTableLike, dps: int) -> Iterator[mpmath.mpf]:
        """Level probabilities of ``table`` block by block (one block for an in-memory table), each
        certified on its own: ``m_a e_a / Z`` at the working precision of ``dps`` digits
        plus guard bits, and only a level whose ball is not yet accurate is recomputed at
        doubled precisions.  Nothing is held beyond one block, and the values do not
        depend on how many blocks the table keeps."""
        prec = prec_for_dps(dps, table.extra_bits)
        bits = accuracy_bits(dps)
        for start, stop in table.block_ranges():
            # compute under the precision lock, yield outside it
            with flint_workprec(prec):
                total = table.total()
                weights = table.level_weights()[start:stop]
            with flint_workprec(prec), gc_paused():
                # C-level maps over the block: no Python statement per level here
                balls = list(map(truediv, weights, repeat(total)))
                accuracy = list(map(_REL_ACCURACY, balls))
                late = [] if min(accuracy, default=bits) >= bits else [
                    i for i, (ball, acc) in enumerate(zip(balls, accuracy))  # fast test first, then the exact one
                    if acc < bits and not is_accurate(ball, dps)]
                values = balls_to_mpf(balls)
            for i in late:
                values[i] = _refine_level(table, start + i, dps, 2 * prec)
            yield from values

    #: :meth:`fixed_log_output`: ``ln Z`` rounded to the nearest ulp, within 3/4 of one
    fixed_log_output_error = 1

    def fixed_log_output(self, table: LevelTableLike, frac_bits: int, dps: int) -> FixedLogOutput:
        """``ln P_a = lam (u_a - u_0) - ln Z`` for every level of ``table`` at ``F =
        frac_bits`` fractional bits (``dps`` is not needed: no limit on the digits), ``Z``
        the table's certified total of the relative level weights
        (:meth:`~exactdp.core.level_blocks.BlockLevelTable.total` on a block table: the
        leading blocks summed and the rest bounded): no head, and ``offset`` the integer
        nearest to ``-2**F ln Z`` from a ball of radius below a quarter ulp (raised
        precision until it is), so within ``3/4 < 1`` ulp."""
        prec = frac_bits + 32
        while True:
            if prec > MAX_PREC:
                raise PrecisionError(None, None, f"ln Z not separated within {MAX_PREC} bits")
            with flint_workprec(prec):
                x = fixed_nearest(table.total().log(), frac_bits)
            if x is not None:
                return FixedLogOutput(-x)
            prec *= 2

    def log_form(self, table: LevelTableLike) -> LogForm:
        """The :class:`LogForm` of ``table`` at flint's current precision: the tail is one
        :func:`decaying_sum` over the levels after the best, which stops as soon as the
        levels left cannot matter (a few levels for heavy-tailed counts).  A table that
        knows its number of outputs without its levels (a block table:
        ``output_count()``) is read level by level, only as far as the sum goes: the same
        terms in the same order, so the same ball, without holding every level."""
        lam = table.scale.lam_ball()
        total = _TOTALS.get(table)
        known = getattr(table, "output_count", None)
        if total is None and known is not None:
            total = known()
            if total is not None:
                _TOTALS[table] = total
        if total is not None and hasattr(table, "output_count"):
            levels = table.iter_levels()
            u0, m0 = next(levels)
            return LogForm(lam, table.scale.lam, u0, m0, decaying_sum(lam, u0, levels, total - m0) / m0)
        levels = table.levels
        u0, m0 = levels[0]
        if total is None:
            total = _TOTALS[table] = sum(table.multiplicities)
        return LogForm(lam, table.scale.lam, u0, m0, decaying_sum(lam, u0, levels[1:], total - m0) / m0)

    def output_probabilities(self, table: LevelTableLike, dps: int) -> list[mpmath.mpf]:
        """The certified probability of one output of every level of ``table`` (relative error at most
        ``10**-dps``, as :meth:`output_probability` level by level) in one batched pass:
        one :meth:`log_form`, then per level one product and one ``exp``:
        ``P(a) = exp(lam (u_a - u_0)) / (m_0 (1 + tail))``.  The working precision starts
        with guard bits for the largest ``|lam (u_a - u_0)|`` (whose rounding becomes
        relative error of the ``exp``)."""
        spread = max(abs(Fraction(table.levels[-1].utility - table.levels[0].utility)), Fraction(1))
        guard = int(spread.numerator // spread.denominator).bit_length() + 8

        def compute() -> list[arb]:
            form = self.log_form(table)
            lam, u0 = form.lam, form.u0
            den = (1 + form.tail) * form.m0
            with gc_paused():
                return [(lam * _ball(lv.utility - u0)).exp() / den for lv in table.levels]

        return certify_many(compute, dps, extra_bits=guard + 8)

    def output_probability_exact(self, table: LevelTableLike, a: int) -> sympy.Expr:
        exact = _exact_rational_em(table, a)
        if exact is not None:
            return exact
        if len(table) > SYMBOLIC_LEVELS_LIMIT:
            raise NoClosedFormError(
                None, None,
                f"probability_exact: {len(table)} levels exceed the symbolic limit "
                f"SYMBOLIC_LEVELS_LIMIT = {SYMBOLIC_LEVELS_LIMIT}; use probability(output, dps=...)",
            )
        u0 = table.utilities[0]
        terms = [sympy.Integer(m) * table.scale.symbolic_weight(u - u0) for u, m in table.levels]
        z = sympy.Add(*terms)
        return table.scale.symbolic_weight(table.utilities[a] - u0) / z

    def sample_level(self, table: LevelTableLike, rng: random.Random) -> int:
        return choose_index(lambda prec: table.cumulative(), table.sampling_size(), rng, prec=table.sampling_prec)

    def sample_levels(self, table: LevelTableLike, rng: random.Random, n: int) -> list[int]:
        """``n`` inverse-CDF draws of a level index of ``table`` at once: ``n`` 64-bit words of ``rng`` (one
        ``getrandbits(64 * n)``) against exact integer bounds of ``2**64 C_a / Z``, built once
        per table (:func:`exactdp.core.sampling.cdf_bounds`); the rare undecided word goes on
        in :func:`~exactdp.core.sampling.choose_index` from that prefix.  Each draw has
        exactly the law of :meth:`sample_level` (the inverse CDF of its own uniform ``U``)."""
        words = random_words(rng, n)
        if table.sampling_size() == 1:  # not len(): a lazy table would count every level
            return [0] * n
        lo, hi = _word_bounds(table)
        index, undecided = inverse_cdf_words(lo, hi, words)
        draws = index.tolist()
        for t in undecided.nonzero()[0].tolist():
            draws[t] = choose_index(lambda prec: table.cumulative(), table.sampling_size(), rng,
                                    prefix=(int(words[t]), WORD_BITS), prec=table.sampling_prec)
        return draws


def decaying_sum(lam: arb, u0: Any, terms: Sequence[tuple[Any, int]], total: Optional[int] = None) -> arb:
    """An enclosure of ``sum_t m_t exp(lam (u_t - u0))`` over the pairs ``(u_t, m_t)`` of
    ``terms`` in decreasing ``u_t`` (best level first), at flint's current precision, with a small relative error.

    With ``lam > 0`` every later term is at most the current ``exp(lam (u_t - u0))`` times
    its multiplicity, so once that times the multiplicity still to come is below
    ``2**-(prec + 8)`` of the sum so far, the rest is added as the interval ``[0, bound]``
    (a proven enclosure; no later term is visited).  Heavy-tailed counts stop after a few
    terms; unit gaps after about ``(ln(total multiplicity) + prec ln 2) / lam`` units.
    ``lam``: the weight exponent's enclosure; ``u0``: the best utility the exponents are
    measured from; ``total``: the sum of the multiplicities when the caller knows it (else
    summed here)."""
    rest = sum(m for _, m in terms) if total is None else total
    total = arb(0)
    decays = bool(lam > 0)
    cut = arb(2) ** -(ctx.prec + 8)
    with gc_paused():
        for u, m in terms:
            e = (lam * _ball(u - u0)).exp()
            total += m * e
            rest -= m
            if not rest:
                break
            if decays:
                bound = e * rest
                if bound.upper() <= cut * total.lower():
                    return total + arb(0).union(bound.upper())  # the terms not visited, in [0, bound]
    return total


def _ball(x: Any) -> arb:
    """An exact int or Fraction utility difference as a ball."""
    return arb(x) if type(x) is int else rational_ball(x)


def _refine_level(table: LevelTableLike, a: int, dps: int, prec: int) -> mpmath.mpf:
    """Level ``a``'s probability at doubled precisions from ``prec`` until accurate."""
    while prec <= MAX_PREC:
        with flint_workprec(prec):
            ball = table.level_weights()[a] / table.total()
            if is_accurate(ball, dps):
                return balls_to_mpf([ball])[0]
        prec *= 2
    raise PrecisionError("dps", dps, f"could not certify {dps} digits within {MAX_PREC} bits of working precision")


_REL_ACCURACY = methodcaller("rel_accuracy_bits")

#: The total multiplicity of a table's levels (kept while the table lives).
_TOTALS: "weakref.WeakKeyDictionary[LevelTableLike, int]" = weakref.WeakKeyDictionary()

#: Integer bounds of the level CDF per table (kept while the table lives).
_BOUNDS: "weakref.WeakKeyDictionary[LevelTableLike, tuple]" = weakref.WeakKeyDictionary()


def _word_bounds(table: LevelTableLike) -> tuple:
    """``cdf_bounds`` of the table's cumulative weights at the first precision of a draw."""
    bounds = _BOUNDS.get(table)
    if bounds is None:
        with flint_workprec(table.sampling_prec or initial_prec(len(table))):
            bounds = cdf_bounds(table.cumulative())
        _BOUNDS[table] = bounds
    return bounds


def _exact_rational_em(table: LevelTableLike, a: int) -> sympy.Rational | None:
    """Exact rational EM probability when the base is rational and utilities differ by
    integers: ``p^{E_a} q^{E_max - E_a} / sum_b m_b p^{E_b} q^{E_max - E_b}`` with
    ``base = p/q`` and ``E_b = u_0 - u_b``.  ``None`` when not applicable."""
    scale = table.scale
    if not scale.is_rational:
        return None
    u0 = table.utilities[0]
    gaps = [Fraction(u0 - u) for u in table.utilities]
    if any(g.denominator != 1 for g in gaps):
        return None
    exps = [int(g) for g in gaps]
    p, q = gmpy2.mpz(scale.base.numerator), gmpy2.mpz(scale.base.denominator)
    e_max = exps[-1]
    bits = e_max * max(int(p).bit_length(), int(q).bit_length())
    if bits > EXACT_BITS_LIMIT or len(table) > EXACT_LEVELS_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: the exact rational needs about {bits} bits per term over "
            f"{len(table)} levels (limits: EXACT_BITS_LIMIT = {EXACT_BITS_LIMIT} bits, "
            f"EXACT_LEVELS_LIMIT = {EXACT_LEVELS_LIMIT} levels); use probability(output, dps=...)",
        )
    terms = [p**e * q ** (e_max - e) for e in exps]
    z = sum(gmpy2.mpz(m) * t for m, t in zip(table.multiplicities, terms))
    return sympy.Rational(int(terms[a]), int(z))
