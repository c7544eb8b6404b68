"""The exact test of the rare tail of the sampler test: a binomial tail, certified.

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
from typing import Union

import mpmath

from ..core.results import NoTruthValue
from ..core.precision import mp_workdps
from ..errors import InvalidParameterError

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
        return levels_label(self.levels)


def levels_label(levels) -> str:
    """``"level 4"``, ``"levels 4-6"`` or ``"levels 0, 4-6"``: ``levels`` as runs of
    consecutive levels."""
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


def binomial_sf_float(c: int, n: int, q: float) -> float:
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
def critical_count(n: int, p: mpmath.mpf, a: float, dps: int = 30) -> int:
    """The smallest ``c`` whose certified bound :func:`binomial_sf_upper` on
    ``P(T >= c)``, ``T ~ Binomial(n, p)``, is below ``a``: the tail test at share ``a`` of
    ``alpha`` rejects exactly when ``T >= c`` (``n + 1`` when it cannot reject)."""
    c = 1
    while c <= n and binomial_sf_upper(c, n, p, dps) >= a:
        c += 1
    return c
