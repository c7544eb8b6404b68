"""Brute-force twins of the privacy notions of a pair of distributions (exactdp.audit).

Plain enumeration over a dict ``output -> Fraction`` for each side, written from the
definitions, never from exactdp's code:

- ``delta(eps) = sum_o max(0, P(o) - e^eps Q(o))`` (mpmath at 80 digits; exact Fraction
  at ``eps = 0``: the total variation distance);
- the tight epsilon for ``delta``: the outputs sorted by the exact ratio ``P/Q``; at the
  breakpoint ``eps = ln(P/Q)`` the profile is the *rational* ``S_P - (P/Q) S_Q``, so the
  piece that contains the answer is found exactly, and the answer is
  ``ln((S_P - delta) / S_Q)`` on it;
- ``D_alpha`` for an integer ``alpha``: ``sum P^alpha Q^(1-alpha)`` is an exact rational,
  and only its logarithm is taken in mpmath.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

import mpmath

DPS = 80


def _support(P: Mapping, Q: Mapping) -> list:
    return [o for o in set(P) | set(Q) if P.get(o, 0) or Q.get(o, 0)]


def total_variation_exact(P: Mapping, Q: Mapping) -> Fraction:
    """``sum_o max(0, P(o) - Q(o))``, exactly."""
    return sum((max(Fraction(0), Fraction(P.get(o, 0)) - Fraction(Q.get(o, 0))) for o in _support(P, Q)), Fraction(0))


def delta_brute(P: Mapping, Q: Mapping, eps: Fraction) -> Any:
    """``max over both directions of sum_o max(0, P - e^eps Q)`` (mpmath, 80 digits;
    an exact Fraction when ``eps == 0``)."""
    if eps == 0:
        return max(total_variation_exact(P, Q), total_variation_exact(Q, P))
    with mpmath.workdps(DPS):
        g = mpmath.exp(mpmath.mpf(eps.numerator) / eps.denominator)

        def mp(x: Any) -> mpmath.mpf:
            x = Fraction(x)
            return mpmath.mpf(x.numerator) / x.denominator

        def one(A, B):
            return mpmath.fsum(max(mpmath.mpf(0), mp(A.get(o, 0)) - g * mp(B.get(o, 0))) for o in _support(A, B))

        return max(one(P, Q), one(Q, P))


def epsilon_for_delta_one(P: Mapping, Q: Mapping, delta: Fraction) -> Any:
    """Least eps >= 0 with sum_o max(0, P - e^eps Q) <= delta, located exactly."""
    mass_inf = sum((Fraction(p) for o, p in P.items() if p and not Q.get(o, 0)), Fraction(0))
    if mass_inf > delta:
        return mpmath.inf
    cells = sorted(((Fraction(P[o]) / Fraction(Q[o]), Fraction(P[o]), Fraction(Q[o]))
                    for o in P if P[o] and Q.get(o, 0) and Fraction(P[o]) > Fraction(Q[o])), reverse=True)
    sp, sq = mass_inf, Fraction(0)
    # breakpoints ln(ratio), largest first, then eps = 0 (ratio 1); the profile at a
    # breakpoint is exactly sp - ratio * sq (e^ln(ratio) = ratio) with sp, sq over the
    # cells of larger ratio: the first breakpoint where it exceeds delta bounds the piece
    for ratio, p, q in cells + [(Fraction(1), Fraction(0), Fraction(0))]:
        if sp - ratio * sq > delta:
            value = (sp - delta) / sq
            with mpmath.workdps(DPS):
                return mpmath.log(mpmath.mpf(value.numerator) / value.denominator)
        sp, sq = sp + p, sq + q
    return mpmath.mpf(0)


def epsilon_for_delta_brute(P: Mapping, Q: Mapping, delta: Fraction) -> Any:
    """The larger of the two directions of :func:`epsilon_for_delta_one`."""
    return max(epsilon_for_delta_one(P, Q, delta), epsilon_for_delta_one(Q, P, delta))


def pure_loss_brute(P: Mapping, Q: Mapping) -> Any:
    """``max_o |ln P(o) - ln Q(o)|`` from the exact ratios (inf when supports differ)."""
    ratios = []
    for o in _support(P, Q):
        p, q = Fraction(P.get(o, 0)), Fraction(Q.get(o, 0))
        if not p or not q:
            return mpmath.inf
        ratios.append(max(p / q, q / p))
    r = max(ratios)
    with mpmath.workdps(DPS):
        return mpmath.log(mpmath.mpf(r.numerator) / r.denominator)


def renyi_sum_exact(P: Mapping, Q: Mapping, alpha: int) -> Any:
    """``sum_o P^alpha Q^(1-alpha)`` exactly for an integer ``alpha >= 2`` (None: infinite)."""
    total = Fraction(0)
    for o, p in P.items():
        p = Fraction(p)
        if not p:
            continue
        q = Fraction(Q.get(o, 0))
        if not q:
            return None
        total += p ** alpha / q ** (alpha - 1)
    return total


def renyi_brute(P: Mapping, Q: Mapping, alpha: int) -> Any:
    """``D_alpha(P||Q)`` for an integer ``alpha >= 2`` (mpmath log of the exact sum)."""
    s = renyi_sum_exact(P, Q, alpha)
    if s is None:
        return mpmath.inf
    with mpmath.workdps(DPS):
        return mpmath.log(mpmath.mpf(s.numerator) / s.denominator) / (alpha - 1)
