"""The sampler test's power against the least favourable alternative at a total variation
distance: what it can detect with ``n`` draws (:func:`sensitivity`), and the ``n`` it needs.

The power against every alternative at total variation ``delta`` whose deviation lies in one
stage (between level bins, or within one tested level) is at least that against the
alternative of noncentrality ``n (delta - blind)**2 / spread``
(:class:`~exactdp.certify.BinPlan`), in the noncentral chi-square approximation of
Pearson's statistic (S. K. Mitra, "On the limiting power function of the frequency
chi-square test", Ann. Math. Statist. 29, 1958); with a rare tail, the two-part test's
power is bounded from below by branch and bound over the mass moved onto the tail.
Powers are statistics, in floating point; the derivation is in docs/oracle.md ("The least
favourable alternative").

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> s = sensitivity(m, 2000)
>>> s.plan.df, s.conclusive, s.n_needed
(2, False, 5280)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

from .._oracle.groups import Groups
from ..core.aliases import MechanismLike
from ..core.results import NoTruthValue
from ..core.validation import as_dps, as_positive_int
from .chi2 import critical, lambda_for_power, ncx2_sf_fast
from .design import (DEFAULT_ALPHA, DEFAULT_DELTA, DEFAULT_MAX_ENUMERATE, DEFAULT_MAX_N, DEFAULT_MIN_POWER,
                     MIN_EXPECTED, BinPlan, Design, check_design_args, search_n)
from .tail import binomial_sf_float, critical_count

__all__ = ["Sensitivity", "sensitivity"]


def lf_power(shape: BinPlan, delta: float, alpha: float, target: Optional[float] = None) -> tuple[float, float]:
    """(power, noncentrality) against the least favourable alternative at TV ``delta``:
    the largest deviation the bins cannot see (``shape.blind``) plus the least favourable
    visible one of TV ``delta - blind``; when ``blind >= delta`` the whole deviation can
    hide inside the bins, and the power is ``alpha`` (noncentrality 0).  With a rare tail,
    the two-part bound of :func:`_lf_power_tail` (``target``: only as precise as needed to
    compare it with ``target``)."""
    if shape.tail_levels:
        return _lf_power_tail(shape, delta, alpha, target)
    if shape.df <= 0 or shape.spread <= 0:
        return 0.0, 0.0
    seen = delta - shape.blind
    if seen <= 0:
        return alpha, 0.0
    lam = shape.n * seen * seen / shape.spread
    return ncx2_sf_fast(critical(alpha, shape.df), shape.df, lam), lam


def lf_delta(shape: BinPlan, alpha: float, target: float) -> float:
    """The smallest TV deviation detected with power ``target`` (``inf`` when ``df = 0``):
    the invisible ``shape.blind`` plus the smallest visible deviation detected (with a rare
    tail, by bisection on :func:`lf_power`)."""
    if shape.tail_levels:
        return _lf_delta_tail(shape, alpha, target)
    if shape.df <= 0 or shape.spread <= 0:
        return math.inf
    return shape.blind + math.sqrt(lambda_for_power(alpha, shape.df, target) * shape.spread / shape.n)


def n_needed(design: Design, delta: float, alpha: float, target: float, max_n: int) -> Optional[int]:
    """The smallest ``n`` (:func:`search_n`) whose least favourable power at ``delta`` with
    ``design``'s bins reaches ``target``; ``None`` past ``max_n``, and at once when ``max_n``
    draws leave ``delta`` invisible (skipped levels: more draws do not list them)."""
    if design.shape(max_n).blind >= delta:
        return None
    return search_n(lambda n: lf_power(design.shape(n), delta, alpha, target)[0] >= target, max_n)


# -------------------------------------------------------------------------------------
# The two-part test (a rare tail): a lower bound by branch and bound


#: Branch and bound over the mass moved onto the tail stops when the certified lower bound
#: is within this of the best value seen, or after :data:`_MAX_SPLITS` splits.
_POWER_TOL = 1e-4
_MAX_SPLITS = 60


def _min_lower_bound(g: Callable[[float], float], f: Callable[[float], float], lo: float, hi: float,
                     target: Optional[float] = None) -> float:
    """A lower bound on ``min over x in [lo, hi]`` of ``g(x) + (1 - g(x)) f(x)`` for ``g``
    increasing and ``f`` decreasing with values in [0, 1]: on ``[a, b]`` it is at least
    ``g(a) + (1 - g(a)) f(b)`` (the expression increases in both).  Branch and bound on
    the interval with the smallest such bound.  With ``target``, it stops as soon as the
    answer to "is the minimum at least ``target``?" is known (the bound reaches it, or a
    value below it is seen): the bound returned then answers that question rightly."""
    cache: dict[float, tuple[float, float]] = {}

    def at(x: float) -> tuple[float, float]:
        if x not in cache:
            cache[x] = (g(x), f(x))
        return cache[x]

    def h(x: float) -> float:
        gx, fx = at(x)
        return gx + (1 - gx) * fx

    def bound(a: float, b: float) -> float:
        ga, fb = at(a)[0], at(b)[1]
        return ga + (1 - ga) * fb

    # start from 16 intervals spaced geometrically from the smallest useful step (the tail's
    # rejection region moves at steps ~1/n) and linearly across [lo, hi]
    points = sorted({lo, hi} | {lo + (hi - lo) * i / 8 for i in range(1, 8)}
                    | {lo + (hi - lo) * 2.0 ** -i for i in range(4, 12)})
    intervals = [(points[i], points[i + 1]) for i in range(len(points) - 1)]
    best = min(h(x) for x in points)
    for _ in range(_MAX_SPLITS):
        intervals.sort(key=lambda ab: bound(*ab))
        a, b = intervals[0]
        low = bound(a, b)
        if best - low <= _POWER_TOL or b - a <= 1e-15 * max(1.0, b):
            return low
        if target is not None and (low >= target or best < target):
            return min(low, best)
        mid = (a + b) / 2 if a <= 0 or b / a > 4 else math.sqrt(a * b)
        best = min(best, h(mid))
        intervals[0:1] = [(a, mid), (mid, b)]
    return min(bound(*ab) for ab in intervals)


def _lf_power_tail(shape: BinPlan, delta: float, alpha: float,
                   target: Optional[float] = None) -> tuple[float, float]:
    """(power, chi-square noncentrality) of the two-part test against the least favourable
    alternative at total variation ``delta``: a certified lower bound given the chi-square
    powers.

    Write ``tau = |q(R) - P(R)|``.  The total variation of the alternative is at most
    ``tau + P(R) + TV_c`` (``TV_c``: the total variation of its law conditioned on leaving
    ``R`` from the mechanism's), so ``TV_c >= delta - tau - P(R)``; the chi-square stages see
    that minus their own invisible part (``chi_blind``).  With ``c`` the tail test's critical
    count, ``G(tau) = P(Binomial(n, P(R) + tau) >= c)`` (mass moved onto ``R``) and
    ``F(tau)`` the chi-square stages' least favourable power with ``n - c + 1`` draws (fewer
    draws only lower it), the test rejects with probability at least
    ``G + (1 - G) F``; mass moved off ``R`` (``tau <= P(R)``) gives at least
    ``F(P(R))``.  The minimum over ``tau`` in ``[0, delta]`` is bounded from below by
    branch and bound (:func:`_min_lower_bound`; with ``target``, only as far as needed to
    compare it with ``target``)."""
    share = shape.tail_share
    a_t, a_c = alpha * share, alpha * (1 - share)
    p_r = float(shape.tail_probability)
    c = critical_count(shape.n, shape.tail_exact, a_t)
    n_c = shape.n - c + 1
    df = shape.df
    lams: dict[float, float] = {}

    def f(tau: float) -> float:
        seen = delta - tau - p_r - shape.chi_blind
        if df <= 0 or shape.spread <= 0 or n_c <= 0 or seen <= 0:
            lams[tau] = 0.0
            return 0.0
        lam = n_c * seen * seen / shape.spread
        lams[tau] = lam
        return ncx2_sf_fast(critical(a_c, df), df, lam)

    def g(tau: float) -> float:
        return binomial_sf_float(c, shape.n, min(1.0, p_r + tau))

    low = min(_min_lower_bound(g, f, 0.0, delta, target), f(min(p_r, delta)))
    return max(0.0, low), lams.get(0.0, 0.0)


def _lf_delta_tail(shape: BinPlan, alpha: float, target: float) -> float:
    """The smallest TV deviation whose least favourable power (:func:`_lf_power_tail`)
    reaches ``target``, by bisection (``inf`` when the chi-square stages have 0 df, 2 when
    even a deviation of 1 is not detected)."""
    if shape.df <= 0 or shape.spread <= 0:
        return math.inf
    if _lf_power_tail(shape, 1.0, alpha, target)[0] < target:
        return 2.0
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-4 * hi:
        mid = (lo + hi) / 2
        if _lf_power_tail(shape, mid, alpha, target)[0] >= target:
            hi = mid
        else:
            lo = mid
    return hi


# -------------------------------------------------------------------------------------
# What the test can detect with n draws


def needed_text(n: Optional[int], max_n: int, design: Optional[Design] = None, delta: float = 0.0) -> str:
    if n is not None:
        return f"{n:,}"
    blind = design.shape(max_n).blind if design is not None else -1.0
    if blind >= delta:
        return (f"none: deviations of TV up to {blind:.3g} stay invisible at any n (levels whose uniformity "
                "is not tested: within=False, or past max_enumerate)")
    return f"more than {max_n:,}"


def delta_text(d: float) -> str:
    if math.isinf(d):
        return "none (0 df)"
    if d > 1:
        return "none (would need TV > 1)"
    return f">= {d:.3g}"


@dataclass(frozen=True)
class Sensitivity(NoTruthValue):
    """Result of :func:`sensitivity`: the test's :class:`~exactdp.certify.BinPlan` with ``n`` draws, its
    ``power`` against the least favourable alternative at total variation ``delta``
    (``noncentrality`` of that alternative), ``detectable_delta`` (smallest TV deviation
    detected with power ``min_power`` at this ``n``) and ``n_needed`` (smallest ``n`` for
    which the power at ``delta`` reaches ``min_power``; ``None`` past ``max_n``).  ``plan``:
    that :class:`~exactdp.certify.BinPlan`; ``alpha``: the significance level the power is computed at."""

    plan: BinPlan
    alpha: float
    delta: float
    min_power: float
    power: float
    noncentrality: float
    detectable_delta: float
    n_needed: Optional[int]
    max_n: int

    _truth_hint = ".conclusive (power >= min_power with df > 0) or .power"

    @property
    def conclusive(self) -> bool:
        """True when the test with ``n`` draws could say PASS: ``df > 0`` and power at
        least ``min_power`` at ``delta``."""
        return self.plan.df > 0 and self.power >= self.min_power

    def __str__(self) -> str:
        p = self.plan
        return (f"n = {p.n}: {p.df} df; power {self.power:.3g} against TV {self.delta:g} at alpha = {self.alpha:g} "
                f"(PASS needs {self.min_power:g}); TV detectable with power {self.min_power:g} at this n: "
                f"{delta_text(self.detectable_delta)}; n needed for TV {self.delta:g}: "
                f"{needed_text(self.n_needed, self.max_n)}; {p.describe()}")


def sensitivity(
    mechanism: MechanismLike,
    n: int,
    alpha: float = DEFAULT_ALPHA,
    *,
    delta: float = DEFAULT_DELTA,
    min_power: float = DEFAULT_MIN_POWER,
    min_expected: float = MIN_EXPECTED,
    within: bool = True,
    dps: Optional[int] = None,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
    max_n: int = DEFAULT_MAX_N,
) -> Sensitivity:
    """What :func:`~exactdp.certify.goodness_of_fit` with ``n`` draws from ``mechanism`` can
    detect, before drawing: its power at level ``alpha`` against the least favourable
    alternative at total variation ``delta`` (a lower bound for deviations in one stage), the
    deviation detectable with power ``min_power`` and the ``n`` needed (up to ``max_n``);
    ``min_expected``, ``within``, ``dps`` and ``max_enumerate`` choose the bins, as there."""
    count = as_positive_int(n, "n")
    alpha, delta, min_power = check_design_args(alpha, delta, min_power)
    design = Design(Groups(mechanism, as_dps(dps)), min_expected, within, max_enumerate)
    shape = design.shape(count)
    pw, lam = lf_power(shape, delta, alpha)
    return Sensitivity(shape, alpha, delta, min_power, pw, lam, lf_delta(shape, alpha, min_power),
                       n_needed(design, delta, alpha, min_power, max_n), max_n)
