"""Rényi divergence and the certified zCDP bracket of a pair of finite distributions.

``P`` and ``Q`` as in :mod:`exactdp._oracle.notions.profile` (two mechanisms or two mappings, as cells of
:mod:`exactdp._oracle.distributions`), every value from arb balls that contain the true
probabilities, with the working precision doubled until the result is known to ``dps``
digits; re-exported by :mod:`exactdp.audit`.

- ``D_alpha(P||Q) = ln(sum_o P(o)^alpha Q(o)^(1-alpha)) / (alpha - 1)`` for ``alpha > 1``
  (:func:`renyi_divergence`), the KL divergence ``sum_o P ln(P/Q)`` at ``alpha = 1``.
- zCDP: ``rho = sup_{alpha > 1} max(D_alpha(P||Q), D_alpha(Q||P)) / alpha``
  (:func:`zcdp_rho`, bracketed: see its docstring).
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

import mpmath
from flint import arb, ctx

from ..cells import HeadPair, Pair, pair_cells
from ..distributions import expm1_ball
from .basics import (DEFAULT_MAX_CELL_OUTPUTS, by_delta, cap_dps, decided_max, identical_laws, oriented,
                             power_of_ten_above, exact_rational, unresolved_error)
from ...core.results import NoTruthValue
from ...core.aliases import RationalLike
from ...core.precision import ball_to_mpf, flint_workprec, is_accurate, prec_for_dps, rational_ball
from ...core.validation import as_dps, as_positive_int
from ...errors import InvalidParameterError, MemoryBudgetError, PrecisionError

__all__ = ["ZcdpBracket", "renyi_divergence", "zcdp_rho"]


#: :func:`zcdp_rho`'s default cap on refinements.  A step is one Rényi divergence per direction
#: and a heap operation (about 1 ms for two cells, 5 ms for a hundred), and a ``D_alpha/alpha``
#: flat to a few millionths over decades of alpha takes thousands: coins ``1/2 +- 10^-3`` and
#: ``1/2 +- 10^-4`` against a fair one meet to 6 digits after 3,873 and 6,695 steps.
DEFAULT_ZCDP_STEPS = 10_000


@dataclass(frozen=True)
class ZcdpBracket(NoTruthValue):
    """``lower <= rho <= upper`` (:func:`zcdp_rho`); ``alpha`` attains ``lower`` (``1``: the KL
    limit), ``converged`` when ``upper - lower <= 10**-dps * lower``, ``steps`` refinements."""

    lower: mpmath.mpf
    upper: mpmath.mpf
    alpha: Fraction
    converged: bool
    steps: int
    dps: int

    _truth_hint = ".lower, .upper or .converged"

    def __str__(self) -> str:
        text = f"rho in [{mpmath.nstr(self.lower, 12)}, {mpmath.nstr(self.upper, 12)}] (alpha = {self.alpha})"
        if not self.converged:
            text += f"; not converged to {self.dps} digits after {self.steps} steps (a larger max_steps goes further)"
        return text


def _renyi_by_delta(pair: Pair, alpha: Fraction, digits_wanted: int) -> Optional[mpmath.mpf]:
    """``D_alpha(P||Q) = log1p(S) / (alpha - 1)`` with ``S = sum P (e^((alpha-1) r) - 1)`` per
    value of delta (``sum P = 1``): no ``ln`` of a number next to 1, so a divergence as tiny
    as ``e^(-10^8)`` keeps its relative accuracy.  None when it does not apply or ``S`` is
    not certified positive (equal distributions are then decided exactly per cell)."""
    fast = by_delta(pair)
    digits = digits_wanted + 10
    while fast is not None and digits <= cap_dps(digits_wanted):
        with flint_workprec(fast.prec(digits)):
            rs, pa, pb, _, _ = fast.balls()
            value = _divergence_of(fast, pa, pb, rs, alpha)
            if not value > 0:
                return None
            if is_accurate(value, digits_wanted):
                return ball_to_mpf(value)
        digits *= 2
    return None


def _divergence_of(fast: Any, mass_p: list[arb], mass_q: list[arb], rs: list[arb], alpha: Fraction) -> arb:
    """``D_alpha(P||Q)`` from the masses and log-ratios of an engine's classes: first order
    in ``r`` (:func:`_divergence_by_delta`) where every ``r`` keeps its relative accuracy,
    second order (:func:`_divergence_second_order`) where it may not
    (``fast.second_order``)."""
    if fast.second_order:
        return _divergence_second_order(mass_q, rs, alpha)
    return _divergence_by_delta(mass_p, rs, alpha)


#: :func:`_h_ball` uses the series with a remainder bound below this ``|r|``.
_SERIES_BELOW = arb(2) ** -16


def _h_ball(r: arb, alpha: Fraction, balls: Optional[tuple[arb, arb]] = None) -> arb:
    """``h(r) = e^(alpha r) - 1 - alpha (e^r - 1)`` (``alpha = 1``: ``r e^r - e^r + 1``),
    ``>= 0``, enclosed with the relative accuracy of ``r^2`` when ``|r|`` is small and of
    ``alpha - 1`` when ``alpha`` is next to 1: the series ``sum_{n>=2} c_n r^n / n!``
    (``c_n = alpha^n - alpha = alpha beta (1 + alpha + ... + alpha^(n-2))``, ``beta =
    alpha - 1`` exact; ``alpha = 1``: ``n - 1``) cut after the term ``N`` where the rest
    falls below the working precision (relative to the first term), the rest bounded by
    ``beta R (alpha R)^N e^(alpha R) / N!`` (``c_n <= (n - 1) beta alpha^(n-1)``;
    ``alpha = 1``: ``R^(N+1) e^R / N!``) for ``|r| <= R``; a ball of ``r`` that contains 0
    gives ``[0, bound]``.  Larger ``|r|`` (or ``alpha |r|``) directly, as ``e^r expm1(beta
    r) - beta expm1(r)`` (each term ``O(beta)``: ``expm1(alpha r) - alpha expm1(r)``
    cancels two terms of size ``r`` to ``beta h``, and near ``alpha = 1`` lost
    ``log2(1/beta)`` bits).  (Cut after ``N = 2`` whatever the precision, a tiny ``r``
    such as ``10^-8`` had only about 8 certified digits at any precision, and zCDP
    brackets of PNFJoint at epsilon ``10^-6`` stayed unconverged.)  ``balls``: the balls
    of ``alpha`` and ``alpha - 1`` at the working precision, when the caller made them once
    for many ``r``."""
    R = abs(r).upper()
    if alpha == 1:
        a = b = None
    elif balls is not None:
        a, b = balls
    else:
        a, b = rational_ball(alpha), rational_ball(alpha - 1)
    if R < _SERIES_BELOW and (alpha == 1 or ((a + 1) * R).upper() < 0.5):
        target = arb(2) ** -(ctx.prec + 8)
        square = abs(r) * abs(r)
        value = square / 2 if a is None else a * b * square / 2
        first = value.upper()
        power, factorial, n = square, arb(2), 2
        geometric, step = arb(1), arb(1)  # 1 + alpha + ... + alpha^(n-2), and alpha^(n-2)
        while True:
            if a is None:
                rest = R ** (n + 1) * R.exp() / factorial
            else:
                rest = b * R * (a * R) ** n * (a * R).exp() / factorial
            if not R or rest.upper() <= first * target or n >= ctx.prec:
                break
            n += 1
            power, factorial = power * r, factorial * n
            if a is not None:
                step = step * a
                geometric = geometric + step
            value += power * ((n - 1) if a is None else a * b * geometric) / factorial
        value = value + arb(0, 1) * rest.upper()
        return arb(0).union(value.upper()) if not value.lower() >= 0 else value
    if alpha == 1:
        return r * r.exp() - expm1_ball(r)
    return r.exp() * expm1_ball(b * r) - b * expm1_ball(r)


def _divergence_second_order(mass_q: list[arb], rs: list[arb], alpha: Fraction) -> arb:
    """``D_alpha(P||Q)`` as ``log1p(sum Q h(r)) / (alpha - 1)`` (``alpha = 1``: KL ``= sum Q
    h(r)``), from the ``Q`` mass of each value ``r = ln(P/Q)`` (``sum P = sum Q = 1``; ``h``
    as :func:`_h_ball`, every term ``>= 0``): a class whose ``r`` is known only to the
    working precision around 0 adds to second order in that precision, not to first."""
    total = arb(0)
    balls = None if alpha == 1 else (rational_ball(alpha), rational_ball(alpha - 1))
    for m, r in zip(mass_q, rs):
        total += m * _h_ball(r, alpha, balls)
    if balls is None:
        return total
    return total.log1p() / balls[1]


def _divergence_by_delta(mass: list[arb], rs: list[arb], alpha: Fraction) -> arb:
    """``D_alpha(P||Q)`` from the ``P`` mass of each value ``r = ln(P/Q)`` (``sum P = 1``):
    ``log1p(sum P expm1((alpha-1) r)) / (alpha-1)``, and for ``alpha = 1`` the KL divergence
    ``sum P (r + expm1(-r))`` (``sum Q = sum P e^(-r) = 1``: every term >= 0).  No ``ln`` of a
    number next to 1, so each ``r`` keeps its relative accuracy however tiny."""
    total = arb(0)
    if alpha == 1:
        for m, r in zip(mass, rs):
            total += m * (r + expm1_ball(-r))
        return total
    a1 = rational_ball(alpha - 1)
    for m, r in zip(mass, rs):
        total += m * expm1_ball(a1 * r)
    if total.is_finite() and total.lower() > -1:
        return total.log1p() / a1
    # a mass next to 0 known only as a ball (a class bounded by a tail: [0, T]) times a huge
    # e^((alpha-1) r) leaves the sum's lower end below -1: the ends apart instead, every mass
    # at least 0 (each term of sum P e^((alpha-1) r) = 1 + total is nonnegative)
    low, high = arb(0), arb(0)
    for m, r in zip(mass, rs):
        e = (a1 * r).exp()
        if m.lower() > 0:
            low += m.lower() * e.lower()
        high += m.upper() * e.upper()
    if not low > 0 or not high.is_finite():
        return arb("nan")  # no finite enclosure at this precision
    return (low.log().lower() / a1).union(high.log().upper() / a1)


def _renyi_ball(balls: list, cells: tuple, alpha: Fraction, bounds: Optional[list] = None) -> Optional[arb]:
    """A ball for D_alpha(P||Q) (alpha = 1: KL), None when infinite (some Q = 0 < P).

    Formed as ``log1p(S) / (alpha - 1)`` (KL: ``S`` itself) with
    ``S = sum_o Q h(r) + sum_{P = 0} Q (alpha - 1)`` (KL: ``+ sum_{P = 0} Q``), ``r = ln(P/Q)``
    and ``h(r) = e^(alpha r) - 1 - alpha (e^r - 1)`` (KL: ``r e^r - e^r + 1``): that is
    ``sum P^alpha Q^(1-alpha) - 1`` (KL: ``sum P r``) minus ``alpha sum (P - Q) = 0``, since
    both sides sum to 1.  ``h >= 0`` (Bernoulli's inequality ``(e^r)^alpha >= 1 +
    alpha (e^r - 1)``; KL: convexity) and ``h(0) = h'(0) = 0``, so for ``|r| <= R``,
    ``h(r) <= R^2 / 2 max |h''| <= R^2 alpha^2 e^(alpha R) / 2`` (KL: ``R^2 (1 + R) e^R / 2``).
    A cell whose ``P`` and ``Q`` agree to every one of ``D`` digits adds at most about
    ``10^(-2D)``, not ``10^(-D)``: twice the digits of a plain ``ln(sum P^alpha Q^(1-alpha))``.
    ``bounds`` (per cell, an upper bound on ``|r|`` proved otherwise, or None;
    :meth:`~exactdp._oracle.cells.Pair.log_ratio_bounds`) narrows ``r`` further."""
    one = alpha == 1
    a, b = rational_ball(alpha), rational_ball(alpha - 1)  # beta = alpha - 1 exact, not a rounded a - 1
    total = arb(0)
    for i, ((p, q), cell) in enumerate(zip(balls, cells)):
        if p is None:
            if q is not None:
                total += q * cell.outputs if one else q * cell.outputs * b
            continue
        if q is None:
            return None
        r = p.log() - q.log()
        if bounds is not None and bounds[i] is not None:
            r = r.intersection(arb(0).union(bounds[i]).union(-bounds[i]))
        total += q * _h(r, a, b, one) * cell.outputs
    return total if one else total.log1p() / b


def _h(r: arb, a: arb, b: arb, one: bool) -> arb:
    """A ball for ``h(r)`` (:func:`_renyi_ball`).  For ``|r| <= R < 1/2`` the value at the
    exact midpoint ``m`` plus the radius times a bound on ``|h'|`` over the ball (``h'(s) =
    alpha e^s (e^((alpha-1) s) - 1)``, bounded at the ball's upper end on the positive side
    and by ``alpha e^min(hi, 0) (1 - e^((alpha-1) lo))`` on the negative side, which stays
    below ``alpha`` however large ``alpha |r|``; KL: ``h'(s) = s e^s``, at most ``hi e^hi``
    and ``|lo| e^min(hi, 0)``): the two ``expm1`` of the direct form would each
    carry the whole radius of ``r``, which does not cancel.  Cut to ``[0, R^2 ...]``
    (:func:`_renyi_ball`); larger ``|r|``: the direct form, cut to ``[0, inf)``.  ``b`` is
    ``beta = alpha - 1`` (exact), and the direct form is ``e^x expm1(beta x) - beta
    expm1(x)``, both terms ``O(beta)``: ``expm1(alpha x) - alpha expm1(x)`` cancels two
    terms of size ``x`` down to ``beta h`` and so lost ``log2(1/beta)`` bits next to
    ``alpha = 1``, where :func:`zcdp_rho` bisects ``(1, a2]`` when the supremum is the KL
    limit (``D_{a2}`` at ``beta = 2^-60`` was a ball of radius ``10^18``)."""

    def direct(x: arb) -> arb:
        return x * x.exp() - expm1_ball(x) if one else x.exp() * expm1_ball(b * x) - b * expm1_ball(x)

    big = abs(r).upper()
    if not big < arb(1) / 2:
        return direct(r).nonnegative_part()
    # |h'| over the ball [lo, hi], each sign on its own: h' is increasing for s > 0, and for
    # s < 0, |h'(s)| = alpha e^s (1 - e^((alpha-1) s)) <= alpha e^min(hi, 0) (1 - e^((alpha-1) lo))
    # (KL: |s| e^s <= |lo| e^min(hi, 0)): the symmetric bound e^((alpha-1)|r|) of the
    # positive side, used for a negative r, grew like e^(alpha |r|) and swamped the sum for
    # a large alpha (D_10000 of two PNFJoint with one r = -1/4 was a ball containing -1)
    lo, hi = r.lower(), r.upper()
    slope = arb(0)
    if hi > 0:
        slope = hi * hi.exp() if one else a * hi.exp() * (b * hi).expm1()
    if lo < 0:
        top_neg = (hi if hi < 0 else arb(0)).exp()
        neg = -lo * top_neg if one else a * top_neg * -(b * lo).expm1()
        slope = neg.upper() if neg.upper() > slope.upper() else slope.upper()
    value = direct(arb(r.mid())) + r.rad() * slope.upper() * arb(0, 1)
    top = big * big / 2 * ((1 + big) * big.exp() if one else a * a * (a * big).exp())
    return value.intersection(arb(0).union(top.upper()))


def renyi_divergence(a: Any, b: Any, alpha: RationalLike, dps: Optional[int] = None, *,
                     max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> mpmath.mpf:
    """``D_alpha(P_a || P_b) = ln(sum_o P(o)^alpha Q(o)^(1-alpha)) / (alpha - 1)`` for an
    exact rational ``alpha > 1`` (one direction), certified to ``dps`` digits with arb
    (each term as ``P * exp((alpha-1) ln(P/Q))``); ``mpmath.inf`` when some output has
    ``Q = 0 < P``; exactly 0 when the distributions are equal (decided exactly).

    ``a``, ``b``: exactdp mechanisms of one output space or mappings ``output ->
    probability`` (``P`` is ``a``'s, ``Q`` is ``b``'s); ``max_outputs``: the most output orbits
    visited (or outputs listed, for a mapping paired with a mechanism; default 200,000),
    past which the call is refused with an error naming ``max_outputs``.
    """
    digits_wanted = as_dps(dps)
    al = exact_rational(alpha, "alpha")
    if al <= 1:
        raise InvalidParameterError("alpha", alpha, "must be > 1")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    fast = _renyi_by_delta(pair, al, digits_wanted)
    if fast is not None:
        return fast
    return _certified_divergence(pair, al, "a>b", digits_wanted)


def larger_divergence(pair: Pair, alpha: Fraction, digits_wanted: int) -> tuple[mpmath.mpf, str]:
    """``max(D_alpha(P||Q), D_alpha(Q||P))`` and its direction (``"a>b"`` on ties), decided
    as soon as one direction is certified and the other proven below it
    (:func:`~exactdp._oracle.notions.basics.decided_max`); PrecisionError when it is not (with a
    proven bound on the maximum where both directions have one)."""
    outcomes: dict[str, Any] = {}
    for direction in ("a>b", "b>a"):
        try:
            outcomes[direction] = _divergence_ends(pair, alpha, direction, digits_wanted)
        except PrecisionError as error:
            outcomes[direction] = error
    direction, _ = decided_max(outcomes)
    return outcomes[direction][0], direction


def _certified_divergence(pair: Pair, alpha: Fraction, direction: str, digits_wanted: int) -> mpmath.mpf:
    """``D_alpha`` in ``direction`` certified to ``digits_wanted`` digits; PrecisionError
    (with the proven upper end, :func:`unresolved_error`) when it could not be."""
    return _divergence_ends(pair, alpha, direction, digits_wanted)[0]


def _divergence_ends(pair: Pair, alpha: Fraction, direction: str, digits_wanted: int) -> tuple[mpmath.mpf, arb, arb]:
    """:func:`_certified_divergence` with the proven lower and upper ends of its value."""
    digits, tried, cap = digits_wanted + 10, False, cap_dps(digits_wanted)
    while True:
        with flint_workprec(prec_for_dps(digits, 40)):
            ball = _renyi_ball(oriented(pair.balls(digits), direction), pair.cells, alpha, pair.log_ratio_bounds())
            if ball is None:
                return mpmath.inf, arb("inf"), arb("inf")
            if ball > 0 and is_accurate(ball, digits_wanted):
                return ball_to_mpf(ball), ball.lower(), ball.upper()
        if not ball > 0 and not tried:
            tried = True
            if identical_laws(pair):
                return mpmath.mpf(0), arb(0), arb(0)
        if digits >= cap:
            break
        digits = min(2 * digits, cap)  # the last pass at the cap itself
    upper = ball.upper() if ball is not None and ball.is_finite() else None
    raise unresolved_error("dps", digits_wanted, f"could not certify D_{alpha} to {digits_wanted} digits"
                      + _magnitude_note(ball, alpha, digits, digits_wanted, isinstance(pair, HeadPair)), upper)


def _magnitude_note(ball: Optional[arb], alpha: Fraction, digits: int, digits_wanted: int, headed: bool) -> str:
    """What the last enclosure of a divergence says of its size, and what to do (``headed``:
    the pair was counted down to a depth, its deeper outputs bounded by tails)."""
    if ball is None or not ball.is_finite() or not ball.upper() > 0:
        return ""
    exponent = power_of_ten_above(ball.upper()) - 1
    # an output whose P and Q agree to D digits adds about 10^(-2D) (_renyi_ball's h form)
    needed = (max(-exponent, 0) + digits_wanted + 1) // 2
    return (f": D_{alpha} <= 1e{exponent + 1}, so small that the {digits} digits of the probabilities do not "
            f"resolve it; certifying it needs more than {needed} digits (the precision goes up to 4*dps + 80 "
            "digits: a larger dps goes further). " + (
                "The pair was counted down to a depth and the outputs below it bounded by the two mechanisms' "
                "tails: a divergence below those tails is not resolved this way" if headed else
                "Two mechanisms with one epsilon and the exponential rule have no such limit (computed per value "
                "of delta)"))


def zcdp_rho(a: Any, b: Any, dps: Optional[int] = None, *, max_steps: int = DEFAULT_ZCDP_STEPS,
             max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> ZcdpBracket:
    """A rigorous bracket ``lower <= rho <= upper`` of the zCDP parameter
    ``rho = sup_{alpha > 1} R(alpha)``, ``R(alpha) = max(D_alpha(a||b), D_alpha(b||a)) / alpha``.

    Refined until ``upper - lower <= 10**-dps * lower`` (default ``dps = 6``) or
    ``max_steps`` refinements (then ``converged`` is False; the bracket is still rigorous);
    ``rho = inf`` when the supports differ, ``0`` for equal distributions (decided exactly).
    The bounds and the grid: docs/audit.md, "The zCDP bracket, derived".

    ``a``, ``b``: exactdp mechanisms of one output space or mappings ``output ->
    probability``; ``max_outputs``: the most output orbits
    visited (or outputs listed, for a mapping paired with a mechanism; default 200,000),
    past which the call is refused with an error naming ``max_outputs``.
    """
    digits_wanted = 6 if dps is None else as_dps(dps)
    steps_cap = as_positive_int(max_steps, "max_steps")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    digits, cap, identical = digits_wanted + 20, max(cap_dps(digits_wanted), _ZCDP_MAX_DIGITS), None
    while True:
        bracket = _zcdp_at(pair, digits, digits_wanted, steps_cap, final=digits >= cap)
        if isinstance(bracket, ZcdpBracket):
            return bracket
        if identical is None:  # KL = 0 possible: decide exactly, once
            identical = identical_laws(pair)
            if identical:
                zero = mpmath.mpf(0)
                return ZcdpBracket(zero, zero, Fraction(1), True, 0, digits_wanted)
        more = min(2 * digits, cap)
        try:  # more digits only within the memory budget; else the rigorous bracket at these
            pair.check_memory(more, "zcdp_rho")
        except MemoryBudgetError:
            return _zcdp_at(pair, digits, digits_wanted, steps_cap, final=True)
        digits = more


#: :func:`zcdp_rho` raises its working precision up to this many digits (or ``4 * dps + 80``).
_ZCDP_MAX_DIGITS = 1000


def _zcdp_at(pair: Pair, digits: int, digits_wanted: int, steps_cap: int, final: bool) -> Optional[ZcdpBracket]:
    """:func:`zcdp_rho` at ``digits`` digits; None (unless ``final``) when the KL divergence
    is not known to ``digits_wanted + 2`` digits there (more digits are then needed)."""
    fast = by_delta(pair)
    with flint_workprec(fast.prec(digits) if fast is not None else prec_for_dps(digits, 40)):
        if fast is not None:
            # two exponential (or permute-and-flip) mechanisms of one lam: per value of delta
            # (_renyi_by_delta); the cells' balls would leave a pair that differs far below the
            # best level (heavy-tailed counts) at [0, D_inf^2 / 2]
            rs_delta, pa, pb, _, _ = fast.balls()

            neg = [-r for r in rs_delta]

            def value(alpha: Fraction) -> Optional[list[tuple[arb, arb]]]:
                """(lower, upper) of D_alpha per direction, per value of delta (a ball with
                no finite enclosure at this precision: ``[0, inf]``, never a bound of 0)."""
                out = []
                for d in (_divergence_of(fast, pa, pb, rs_delta, alpha), _divergence_of(fast, pb, pa, neg, alpha)):
                    out.append((d.lower(), d.upper()) if d.is_finite() else (arb(0), arb("inf")))
                return out

            def pure_loss() -> arb:
                return max((abs(r).upper() for r in rs_delta), key=lambda x: x.mid())
        else:
            balls = pair.balls(digits)
            both = [balls, oriented(balls, "b>a")]
            ratio_bounds = pair.log_ratio_bounds()  # |ln(P/Q)| <= B either way round

            def value(alpha: Fraction) -> Optional[list[tuple[arb, arb]]]:
                """(lower, upper) of D_alpha per direction; None when infinite."""
                rs = [_renyi_ball(bs, pair.cells, alpha, ratio_bounds) for bs in both]
                return None if any(r is None for r in rs) else [(r.lower(), r.upper()) for r in rs]

            def pure_loss() -> arb:
                return max(((p.log() - q.log()).upper() for bs in both for p, q in bs
                            if p is not None and q is not None), key=lambda x: x.mid())

        def interval_bound(a1: Fraction, a2: Fraction) -> arb:
            """An upper bound of R on [a1, a2]: per direction the smaller of D_{a2}/a1
            (monotonicity) and, for a1 > 1, max(R(a1), K(a2) / (a2(a2-1) - h**2)) with
            K(alpha) = (alpha-1) D_alpha convex (chord above K, tangent of alpha(alpha-1)
            below it: the bound is linear-fractional in alpha, extreme at an end)."""
            out = arb(0)
            for (_, hi1), (_, hi2) in zip(points[a1], points[a2]):
                bound = (hi2 / rational_ball(a1)).upper()
                if a1 > 1:
                    h = a2 - a1
                    convex = max((hi1 / rational_ball(a1)).upper(),
                                 (hi2 * rational_ball(a2 - 1) / rational_ball(a2 * (a2 - 1) - h * h)).upper(),
                                 key=lambda x: x.mid())
                    bound = convex if convex < bound else bound
                if not bound.is_finite():  # no enclosure: no bound (never read as 0)
                    return arb("inf")
                out = bound if bound > out else out
            return out

        kl = value(Fraction(1))
        if kl is None:
            inf = mpmath.inf
            return ZcdpBracket(inf, inf, Fraction(1), True, 0, digits_wanted)
        d_inf = pure_loss()  # after the KL: finite here, so some output has P, Q > 0
        pure_bound = (abs(d_inf) ** 2 / 2).upper()  # Bun and Steinke: D_inf-DP implies D_inf**2/2-zCDP
        points = {Fraction(1): kl}
        lower, best = max(kl[0][0], kl[1][0], arb(0), key=lambda x: x.mid()), Fraction(1)
        A = Fraction(2)
        points[A] = value(A)
        # the intervals by their upper bounds, largest first (a heap of (-midpoint, order of
        # insertion, interval): the first of equal bounds is the one made first, as a scan
        # of the intervals in order would pick; a scan per step made thousands of steps
        # quadratic, 90% of a small pair's time).  The key is the exact negated midpoint: a
        # plain -mpf rounds to mpmath's 53 bits, and then, past 15 digits, the top of the
        # heap was not the largest bound and was reported as the upper end
        bounds: dict[tuple[Fraction, Fraction], arb] = {}
        heap: list[tuple[mpmath.mpf, int, tuple[Fraction, Fraction]]] = []

        def put(interval: tuple[Fraction, Fraction]) -> None:
            bound = bounds[interval] = interval_bound(*interval)
            heapq.heappush(heap, (mpmath.fneg(ball_to_mpf(bound.mid()), exact=True), next(made), interval))

        made = itertools.count()
        put((Fraction(1), A))
        # the best lower bound so far (KL or R(2)) must be known to dps + 2 digits, else more digits
        lo, hi = max(((lo / al, hi / al) for al in (1, 2) for lo, hi in points[Fraction(al)]), key=lambda b: b[0].mid())
        precise = bool(lo > 0 and hi - lo <= arb(10) ** -(digits_wanted + 2) * lo)
        if not (precise or final):
            return None
        steps, limit = 0, steps_cap if precise else 0  # at the last precision: the bracket as it is
        new = [A]
        while True:
            for al in new:
                for lo_v, _ in points[al]:
                    cand = (lo_v / rational_ball(al)).lower()
                    if cand > lower:
                        lower, best = cand, al
            tail = (d_inf / rational_ball(A)).upper()
            top = heap[0][2]
            grow = not bounds[top] > tail
            upper = tail if grow else bounds[top]
            if pure_bound < upper:
                upper = pure_bound
            converged = bool((upper - lower).upper() <= (arb(10) ** (-digits_wanted) * lower).lower())
            if converged or steps >= limit:
                break
            steps += 1
            if grow:
                A, old = 2 * A, A
                points[A] = value(A)
                put((old, A))
                new = [A]
            else:
                a1, a2 = top
                mid = (a1 + a2) / 2
                points[mid] = value(mid)
                heapq.heappop(heap)
                del bounds[top]
                put((a1, mid))
                put((mid, a2))
                new = [mid]
        lo_mpf, hi_mpf = ball_to_mpf(lower), ball_to_mpf(upper.upper())
    return ZcdpBracket(lo_mpf, hi_mpf, best, converged, steps, digits_wanted)
