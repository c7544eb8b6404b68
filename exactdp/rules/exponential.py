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
from typing import Iterator

import gmpy2
import mpmath
from flint import arb

from ..core._gc import gc_paused
from ..core._lazy import sympy
from ..core.levels import LevelTable
from ..core.precision import (MAX_PREC, accuracy_bits, balls_to_mpf, certify, certify_many, flint_workprec,
                              is_accurate, prec_for_dps)
from ..core.sampling import WORD_BITS, cdf_bounds, choose_index, initial_prec, inverse_cdf_words, random_words
from ..core.selection import SelectionRule
from ..errors import NoClosedFormError, PrecisionError

__all__ = ["ExponentialMechanism", "SYMBOLIC_LEVELS_LIMIT", "EXACT_BITS_LIMIT", "EXACT_LEVELS_LIMIT"]

#: ``probability_exact`` builds a sympy sum over at most this many levels.
SYMBOLIC_LEVELS_LIMIT = 10_000
#: ...and, with a rational base, exact rationals of at most this many bits per term.
EXACT_BITS_LIMIT = 1 << 24
#: ...over at most this many levels.
EXACT_LEVELS_LIMIT = 10**7


class ExponentialMechanism(SelectionRule):
    """``P(o) = w(u(o)) / sum_a m_a w(u_a)`` (the Joint paper's Equation 1).

    Numeric values are arb enclosures certified by :func:`exactdp.core.precision.certify`:
    relative error at most ``10**-dps``.  The log-probability of level ``a`` is
    ``-log1p(R_a)`` with ``R_a = (m_a - 1) + sum_{b != a} m_b e_b / e_a >= 0`` so that
    probabilities near 1 keep full relative accuracy in the log.
    """

    name = "exponential"

    def output_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        return certify(lambda: table.relative_weights()[a] / table.total(), dps, extra_bits=table.extra_bits)

    def output_log_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        def compute():
            e_a = table.relative_weights()[a]
            others = table.sum_except(a)
            r = (table.multiplicities[a] - 1) + others / e_a
            return -(r.log1p()) if not (r.is_exact() and r.is_zero()) else arb(0)

        return certify(compute, dps, extra_bits=table.extra_bits)

    def level_probabilities(self, table: LevelTable, dps: int) -> list[mpmath.mpf]:
        return certify_many(
            lambda: [w / table.total() for w in table.level_weights()], dps, extra_bits=table.extra_bits
        )

    def iter_level_probabilities(self, table: LevelTable, dps: int) -> Iterator[mpmath.mpf]:
        """Level probabilities block by block (one block for an in-memory table), each
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
                balls = [w / total for w in weights]
                late = [i for i, ball in enumerate(balls)  # fast test first, then the exact one
                        if ball.rel_accuracy_bits() < bits and not is_accurate(ball, dps)]
                values = balls_to_mpf(balls)
            for i in late:
                values[i] = _refine_level(table, start + i, dps, 2 * prec)
            yield from values

    def output_probability_exact(self, table: LevelTable, a: int) -> sympy.Expr:
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

    def sample_level(self, table: LevelTable, rng: random.Random) -> int:
        return choose_index(lambda prec: table.cumulative(), len(table), rng, prec=table.sampling_prec)

    def sample_levels(self, table: LevelTable, rng: random.Random, n: int) -> list[int]:
        """``n`` inverse-CDF draws at once: ``n`` 64-bit words of ``rng`` (one
        ``getrandbits(64 * n)``) against exact integer bounds of ``2**64 C_a / Z``, built once
        per table (:func:`exactdp.core.sampling.cdf_bounds`); the rare undecided word goes on
        in :func:`~exactdp.core.sampling.choose_index` from that prefix.  Each draw has
        exactly the law of :meth:`sample_level` (the inverse CDF of its own uniform ``U``)."""
        words = random_words(rng, n)
        if len(table) == 1:
            return [0] * n
        lo, hi = _word_bounds(table)
        index, undecided = inverse_cdf_words(lo, hi, words)
        draws = index.tolist()
        for t in undecided.nonzero()[0].tolist():
            draws[t] = choose_index(lambda prec: table.cumulative(), len(table), rng,
                                    prefix=(int(words[t]), WORD_BITS), prec=table.sampling_prec)
        return draws


def _refine_level(table: LevelTable, a: int, dps: int, prec: int) -> mpmath.mpf:
    """Level ``a``'s probability at doubled precisions from ``prec`` until accurate."""
    while prec <= MAX_PREC:
        with flint_workprec(prec):
            ball = table.level_weights()[a] / table.total()
            if is_accurate(ball, dps):
                return balls_to_mpf([ball])[0]
        prec *= 2
    raise PrecisionError("dps", dps, f"could not certify {dps} digits within {MAX_PREC} bits of working precision")


#: Integer bounds of the level CDF per table (kept while the table lives).
_BOUNDS: "weakref.WeakKeyDictionary[LevelTable, tuple]" = weakref.WeakKeyDictionary()


def _word_bounds(table: LevelTable) -> tuple:
    """``cdf_bounds`` of the table's cumulative weights at the first precision of a draw."""
    bounds = _BOUNDS.get(table)
    if bounds is None:
        with flint_workprec(table.sampling_prec or initial_prec(len(table))):
            bounds = cdf_bounds(table.cumulative())
        _BOUNDS[table] = bounds
    return bounds


def _exact_rational_em(table: LevelTable, a: int) -> sympy.Rational | None:
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
