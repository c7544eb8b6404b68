"""Certified one-sided Clopper-Pearson bounds and the epsilon and delta lower bounds from two counts.

Clopper and Pearson, "The use of confidence or fiducial limits illustrated in the case of
the binomial", Biometrika 1934.  With ``alpha = 1 - confidence``, ``L_a`` is the lower
bound of ``q_a`` and ``U_b`` the upper bound of ``q_b``, each at level ``alpha / 2``;
:func:`lower_bound_from_counts` gives ``max(0, ln(L_a / U_b))`` (or ``max(0, L_a - e^eps U_b)``),
whose coverage is a union bound over the two sides.  ``L_a`` and ``U_b`` are dyadic
rationals found by bisection with arb's certified regularised incomplete beta function, each
on the conservative side of the exact Clopper-Pearson value; the logarithm and ``e^eps`` are
arb balls read at their lower ends, so the reported bound is never above the exact one.
Derivation and proof: docs/audit.md ("A lower bound from a sampler's draws").
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Optional
import math

from flint import arb

from ..core.aliases import RationalLike
from ..core.precision import dyadic_mpf as exact_mpf, flint_workprec, rational_ball
from ..core.validation import as_positive_int, as_rational
from ..errors import InvalidParameterError

__all__ = ["PREC", "cp_quantile", "clopper_pearson", "cp_bound", "planned_cp", "ln_lower", "delta_lower_bound", "lower_bound_from_counts", "as_confidence", "epsilon_argument", "mid_fraction"]


#: Working precision (bits) of the certified Clopper-Pearson quantiles (raised once if undecided).
PREC = 128


#: Bisection steps of the certified quantiles (relative accuracy about 2**-50) and of the
#: planning scores (about 2**-20: they only rank events).
_STEPS, PLAN_STEPS = 60, 26


#: The logit range searched (|ln(p / (1 - p))| <= 60: p within e^-60 of 0 or 1 is not told apart at
#: the working precision): quantiles beyond it are reported as 0 (lower) or 1 (upper),
#: which are valid bounds.
_LOGIT = 60.0


def cp_quantile(a: Any, b: Any, level: Fraction, side: str, steps: int) -> Fraction:
    """A dyadic point ``p`` bracketing the ``level`` quantile of ``Beta(a, b)`` from one side.

    ``side="below"``: ``I_p(a, b) < level`` is proven at ``p`` (so ``p`` is at most the
    quantile); ``"above"``: ``I_p(a, b) > level`` is proven (``p`` at least the quantile).
    ``a``, ``b`` are ints or (planning) rationals.  Bisection in the logit of ``p``, the
    midpoints Python floats taken at their exact binary value (they only choose where to
    look: each decision is made on a certified ball, at :data:`PREC` bits and then twice
    that; a point still undecided counts as failing, which only moves the answer outward).
    """
    def ball(x: Any) -> Callable[[], arb]:
        return lambda: rational_ball(x) if isinstance(x, Fraction) else arb(x)

    lvl = level

    def decide(p: Fraction) -> Optional[bool]:
        """True: p is on the answer side (proven); False: proven on the other; None: undecided."""
        for prec in (PREC, 2 * PREC):
            with flint_workprec(prec):
                v = rational_ball(p).beta_lower(ball(a)(), ball(b)(), regularized=1)
                target = rational_ball(lvl)
                if side == "below":
                    if v < target:
                        return True
                    if v > target:
                        return False
                else:
                    if v > target:
                        return True
                    if v < target:
                        return False
        return None

    # answer side: "below" -> small p (logit -> -inf); "above" -> large p (logit -> +inf).
    # Start at the mean a / (a + b) and step outward in doubling steps to bracket the
    # quantile (arb's incomplete beta loses its accuracy far out in the tails, so the
    # search stays near the quantile); then bisect.
    sign = -1.0 if side == "below" else 1.0
    mean = float(Fraction(a) / (Fraction(a) + Fraction(b)))
    start = max(-_LOGIT, min(_LOGIT, math.log(mean) - math.log1p(-mean))) if 0 < mean < 1 else 0.0
    step = 0.25
    if decide(_logistic(start)):
        good, best, bad = start, _logistic(start), None
        while bad is None:  # toward the other side until the point is proven on it
            point = good - sign * step
            if abs(point) >= _LOGIT:
                bad = -sign * _LOGIT
            elif decide(_logistic(point)):
                good, best = point, _logistic(point)
            else:
                bad = point
            step *= 2
    else:
        bad, good, best = start, None, None
        while good is None:
            point = bad + sign * step
            if abs(point) >= _LOGIT:
                return Fraction(0) if side == "below" else Fraction(1)
            if decide(_logistic(point)):
                good, best = point, _logistic(point)
            else:
                bad = point
            step *= 2
    for _ in range(steps):
        mid = (good + bad) / 2
        p = _logistic(mid)
        if p == best:
            break
        if decide(p):
            good, best = mid, p
        else:
            bad = mid
    return best


def _logistic(s: float) -> Fraction:
    """``1 / (1 + e^-s)`` to float accuracy, as an exact dyadic rational; near 1 as ``1 - q``
    with ``q`` a float, so points next to 1 are told apart as finely as points next to 0."""
    if s < 0:
        return Fraction(1.0 / (1.0 + math.exp(-s)))
    return 1 - Fraction(1.0 / (1.0 + math.exp(s)))


def clopper_pearson(count: int, n: int, alpha: RationalLike, side: str) -> Fraction:
    """The one-sided Clopper-Pearson bound at level ``alpha`` for ``count`` successes in ``n``
    trials, rounded outward to a dyadic rational: ``"lower"``: ``L <= p_L``,
    ``P(Binomial(n, p_L) >= count) = alpha`` (0 for ``count = 0``); ``"upper"``: ``U >= p_U``,
    ``P(Binomial(n, p_U) <= count) = alpha`` (1 for ``count = n``).

    >>> from exactdp._oracle.draws import ceil_text, floor_text
    >>> floor_text(clopper_pearson(5, 10, Fraction(1, 40), "lower"), 6), ceil_text(clopper_pearson(5, 10, Fraction(1, 40), "upper"), 6)
    ('0.187086', '0.812914')
    """
    n = as_positive_int(n, "n")
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= n:
        raise InvalidParameterError("count", count, f"must be an integer in [0, n = {n}]")
    level = as_rational(alpha, "alpha")
    if not 0 < level < 1:
        raise InvalidParameterError("alpha", alpha, "must be in (0, 1)")
    if side not in ("lower", "upper"):
        raise InvalidParameterError("side", side, "must be 'lower' or 'upper'")
    return cp_bound(count, n, level, side)


_CP_CACHE: dict[tuple[int, int, Fraction, str], Fraction] = {}


def cp_bound(count: int, n: int, level: Fraction, side: str) -> Fraction:
    key = (count, n, level, side)
    found = _CP_CACHE.get(key)
    if found is None:
        if side == "lower":
            found = Fraction(0) if count == 0 else cp_quantile(count, n - count + 1, level, "below", _STEPS)
        else:
            found = Fraction(1) if count == n else cp_quantile(count + 1, n - count, 1 - level, "above", _STEPS)
        if len(_CP_CACHE) > 100_000:
            _CP_CACHE.clear()
        _CP_CACHE[key] = found
    return found


def planned_cp(mean: Fraction, n: int, level: Fraction, side: str) -> Fraction:
    """:func:`clopper_pearson` continued to a real count ``mean`` in ``[0, n]`` (Beta
    quantiles with real parameters), to about :data:`PLAN_STEPS` bits: a planning score."""
    if side == "lower":
        if mean <= 0:
            return Fraction(0)
        return cp_quantile(mean, n - mean + 1, level, "below", PLAN_STEPS)
    if mean >= n:
        return Fraction(1)
    return cp_quantile(mean + 1, n - mean, 1 - level, "above", PLAN_STEPS)


def ln_lower(x: Fraction, y: Fraction) -> Optional[Fraction]:
    """The lower end of a ball containing ``ln(x / y)`` as a dyadic rational; None when
    ``x == 0`` (minus infinity)."""
    if x == 0:
        return None
    with flint_workprec(PREC):
        ball = (rational_ball(x) / rational_ball(y)).log()
        return mid_fraction(ball.lower())


def delta_lower_bound(low_a: Fraction, up_b: Fraction, epsilon: Fraction) -> Fraction:
    """A dyadic rational at most ``low_a - e^epsilon up_b`` (clipped at 0)."""
    with flint_workprec(PREC):
        ball = rational_ball(low_a) - rational_ball(epsilon).exp() * rational_ball(up_b)
        value = mid_fraction(ball.lower())
    return max(Fraction(0), value)


def lower_bound_from_counts(count_a: int, count_b: int, n: int, confidence: RationalLike = Fraction(19, 20),
                            epsilon: Optional[RationalLike] = None) -> tuple[Fraction, Optional[Fraction]]:
    """``(epsilon_lower, delta_lower)`` from ``count_a`` of ``n`` draws of one sampler and
    ``count_b`` of ``n`` of the other in one event fixed before the draws (the module
    docstring: Clopper-Pearson per side at ``(1 - confidence) / 2``, a union bound);
    ``delta_lower`` is ``None`` unless ``epsilon`` is given.  Both are dyadic rationals
    (exact ``mpmath.mpf`` values), at most the exact Clopper-Pearson values, clipped at 0.

    >>> from exactdp._oracle.draws import as_fraction, floor_text
    >>> eps, _ = lower_bound_from_counts(9_000, 1_000, 20_000)
    >>> floor_text(as_fraction(eps), 6)
    '2.12137'
    """
    n = as_positive_int(n, "n")
    for name, x in (("count_a", count_a), ("count_b", count_b)):
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= n:
            raise InvalidParameterError(name, x, f"must be an integer in [0, n = {n}]")
    alpha = 1 - as_confidence(confidence)
    low_a, up_b = cp_bound(count_a, n, alpha / 2, "lower"), cp_bound(count_b, n, alpha / 2, "upper")
    eps = ln_lower(low_a, up_b)
    eps_lower = Fraction(0) if eps is None else max(Fraction(0), eps)
    if epsilon is None:
        return exact_mpf(eps_lower), None
    return exact_mpf(eps_lower), exact_mpf(delta_lower_bound(low_a, up_b, epsilon_argument(epsilon)))


def as_confidence(confidence: RationalLike) -> Fraction:
    c = as_rational(confidence, "confidence")
    if not 0 < c < 1:
        raise InvalidParameterError("confidence", confidence, "must be strictly between 0 and 1")
    return c


def epsilon_argument(epsilon: RationalLike) -> Fraction:
    e = as_rational(epsilon, "epsilon")
    if e < 0:
        raise InvalidParameterError("epsilon", epsilon, "must be >= 0")
    return e


def mid_fraction(ball: arb) -> Fraction:
    man, exp = ball.mid().man_exp()
    man, exp = int(man), int(exp)
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)
