"""The exact test of the rare tail, and the power of the two-part sampler test.

Levels whose expected draws are too few for the chi-square approximation, and that cannot
be pooled with other rare levels into a bin expecting ``min_expected`` draws, form the
**rare tail** ``R`` (see :func:`exactdp.certify.goodness_of_fit`).  They are never pooled
with a heavy level: mass moved from a heavy level onto a rare one would hide in that bin.
Instead the number ``T`` of draws landing in ``R`` is tested exactly: under the mechanism
``T ~ Binomial(n, P(R))``, and the tail's p-value is ``P(T >= t)`` (one-sided: moving mass
off ``R`` changes the distribution by at most ``P(R)`` in total variation, which the power
counts as invisible).  Given ``T``, the other ``n - T`` draws are an i.i.d. sample of the
mechanism conditioned on leaving ``R``: the chi-square stages test those.

:func:`binomial_sf` is certified: every term is computed with mpmath at ``dps + 15``
digits plus the digits of ``n`` and the truncated remainder is bounded by a geometric
series, so the relative error is at most about ``(t + n p) 10**-dps`` when ``p`` is
certified to ``dps`` digits.

>>> from fractions import Fraction
>>> print(mpmath.nstr(binomial_sf(2, 10, Fraction(1, 10)), 12))
0.2639010709
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Callable, Optional, Union

import mpmath

from ..core.results import NoTruthValue
from ..core.precision import mp_workdps
from ..errors import InvalidParameterError
from .chi2 import _critical, _ncx2_sf_fast

if TYPE_CHECKING:
    from .design import BinPlan

__all__ = ["TailTest", "binomial_sf"]


@dataclass(frozen=True)
class TailTest(NoTruthValue):
    """The exact test of the rare tail in a :class:`~exactdp.certify.GoodnessOfFit`:
    ``levels`` (the rare levels, tested together), ``observed`` draws in them (``T``),
    ``expected`` draws (``n P(R)``, converted to float), ``probability`` ``P(R)``
    (certified), ``p_value`` ``P(T >= observed)`` for ``T ~ Binomial(n, P(R))`` (exact, as
    the certified upper bound of :func:`binomial_sf_upper`, so that deciding on it is never
    too liberal) and ``share``: the part of ``alpha`` the tail test uses (Bonferroni:
    ``1/2`` when the chi-square stages have degrees of freedom, else ``1``)."""

    levels: tuple[int, ...]
    observed: int
    expected: float
    probability: mpmath.mpf
    p_value: mpmath.mpf
    share: float

    _truth_hint = ".p_value (against alpha * share)"

    @property
    def label(self) -> str:
        return _levels_label(self.levels)


def _levels_label(levels) -> str:
    """``"level 4"``, ``"levels 4-6"`` or ``"levels 0, 4-6"`` (runs of consecutive levels)."""
    runs: list[list[int]] = []
    for a in levels:
        if runs and a == runs[-1][-1] + 1:
            runs[-1].append(a)
        else:
            runs.append([a])
    if len(levels) == 1:
        return f"level {levels[0]}"
    return "levels " + ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _check_binomial_args(t: int, n: int, p: object) -> None:
    for name, value in (("t", t), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidParameterError(name, value, "must be an integer >= 0")
    try:
        good = not isinstance(p, bool) and 0 <= p <= 1  # type: ignore[operator]
    except TypeError:
        good = False
    if not good:
        raise InvalidParameterError("p", p, "must be a probability, 0 <= p <= 1")


def binomial_sf(t: int, n: int, p: Union[Fraction, mpmath.mpf, float, int], dps: int = 30) -> mpmath.mpf:
    """``P(T >= t)`` for ``T ~ Binomial(n, p)``, certified to about ``dps`` digits.

    ``t <= n p``: ``1 - P(T < t)`` (``P(T >= t) >= 1/2`` there, so the subtraction loses
    at most a bit); ``t > n p``: the terms from ``t`` on, whose ratios
    ``(n - j) p / ((j + 1)(1 - p))`` decrease, until the geometric bound on the remainder
    falls below ``10**-(dps + 5)`` of the sum.  A ``Fraction`` ``p`` is converted at the
    working precision."""
    _check_binomial_args(t, n, p)
    if t == 0:
        return mpmath.mpf(1)
    if t > n or p == 0:
        return mpmath.mpf(0)
    if p == 1:
        return mpmath.mpf(1)
    wp = dps + 15 + len(str(n))
    with mp_workdps(wp):
        q = mpmath.mpf(p.numerator) / p.denominator if isinstance(p, Fraction) else mpmath.mpf(p)
        log_q, log_1q = mpmath.log(q), mpmath.log1p(-q)

        def term(j: int) -> mpmath.mpf:
            return mpmath.exp(mpmath.loggamma(n + 1) - mpmath.loggamma(j + 1) - mpmath.loggamma(n - j + 1)
                              + j * log_q + (n - j) * log_1q)

        odds = q / (1 - q)
        if t <= n * q:
            below = mpmath.mpf(0)
            u = term(0)
            for j in range(t):
                below += u
                u *= (n - j) * odds / (j + 1)
            return +max(mpmath.mpf(0), 1 - below)
        eps = mpmath.mpf(10) ** -(dps + 5)
        u = term(t)
        total = mpmath.mpf(0)
        j = t
        while True:
            total += u
            if j == n:
                break
            r = (n - j) * odds / (j + 1)  # ratio of the next term to this one; it decreases in j
            u *= r
            j += 1
            if r < 1 and u / (1 - r) <= total * eps:  # the rest is at most u (1 + r + r**2 + ...)
                total += u  # the next term (a lower bound of the remainder) keeps the sum from below
                break
        return +total


def binomial_sf_upper(t: int, n: int, p: Union[Fraction, mpmath.mpf, float, int], dps: int = 30) -> mpmath.mpf:
    """An upper bound on ``P(T >= t)`` for ``T ~ Binomial(n, p)`` when ``p`` is certified to
    ``dps`` digits: :func:`binomial_sf` times ``1 + (t + n p + 2) 10**-(dps - 1)``, which covers
    both its own error and the error of ``p`` (the tail's logarithmic derivative in ``p`` is
    at most ``t + n p`` in size).  The tail test rejects when this bound is below its share
    of ``alpha``, so its false-alarm rate never exceeds that share, ties included."""
    value = binomial_sf(t, n, p, dps)
    with mp_workdps(dps + 5):
        margin = (t + n * mpmath.mpf(p.numerator if isinstance(p, Fraction) else p)
                  / (p.denominator if isinstance(p, Fraction) else 1) + 2) * mpmath.mpf(10) ** -(dps - 1)
        return min(mpmath.mpf(1), value * (1 + margin))


def _binomial_sf_float(c: int, n: int, q: float) -> float:
    """``P(Binomial(n, q) >= c)`` in floating point (a power, a statistic): ``1`` minus
    the ``c`` first terms, each from logarithms."""
    if c <= 0 or q >= 1:
        return 1.0
    if q <= 0 or c > n:
        return 0.0
    log_q, log_1q = math.log(q), math.log1p(-q)
    log_choose = 0.0
    below = 0.0
    for j in range(c):
        below += math.exp(log_choose + j * log_q + (n - j) * log_1q)
        log_choose += math.log(n - j) - math.log(j + 1)
    return min(1.0, max(0.0, 1.0 - below))


@functools.lru_cache(maxsize=4096)
def _critical_count(n: int, p: mpmath.mpf, a: float, dps: int = 30) -> int:
    """The smallest ``c`` whose certified bound :func:`binomial_sf_upper` on
    ``P(T >= c)``, ``T ~ Binomial(n, p)``, is below ``a``: the tail test at share ``a`` of
    ``alpha`` rejects exactly when ``T >= c`` (``n + 1`` when it cannot reject)."""
    c = 1
    while c <= n and binomial_sf_upper(c, n, p, dps) >= a:
        c += 1
    return c


# -------------------------------------------------------------------------------------
# Power of the two-part test against the least favourable alternative


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
    c = _critical_count(shape.n, shape.tail_exact, a_t)
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
        return _ncx2_sf_fast(_critical(a_c, df), df, lam)

    def g(tau: float) -> float:
        return _binomial_sf_float(c, shape.n, min(1.0, p_r + tau))

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
