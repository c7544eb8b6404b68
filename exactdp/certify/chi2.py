"""Chi-square laws of the sampler test: p-values, critical values, noncentral tails.

The central and noncentral laws (the power of the test against an alternative is a
noncentral tail: :mod:`~exactdp.certify.least_favourable`, :mod:`~exactdp.certify.alternative`).

P-values and powers are statistics, computed in floating point (mpmath's regularised
incomplete gamma, then double precision where speed matters); they never decide an exact
value.

>>> print(mpmath.nstr(chi2_sf(3.841458820694124, 1), 6))
0.05
>>> print(mpmath.nstr(chi2_isf(0.05, 1), 8))
3.8414588
"""

from __future__ import annotations

import functools
import math
from typing import Union

import mpmath

from ..core.precision import mp_workdps
from ..errors import InvalidParameterError

__all__ = ["chi2_sf", "chi2_isf", "ncx2_sf"]


def _num(value: object) -> mpmath.mpf:
    """A number (int, float, numpy scalar, mpf, Fraction...) as an ``mpf``."""
    try:
        return mpmath.mpf(value)
    except (TypeError, ValueError):
        return mpmath.mpf(float(value))  # numpy float32 and other float-likes


def _check_law_args(x: object, df: object, nc: object = 0) -> None:
    """``x`` a number that is not NaN, ``df >= 0`` and ``nc >= 0`` finite: else the error naming it."""
    for name, value, finite in (("x", x, False), ("df", df, True), ("nc", nc, True)):
        try:
            v = _num(value) if not isinstance(value, bool) else mpmath.nan
            good = not mpmath.isnan(v) and (not finite or (mpmath.isfinite(v) and v >= 0))
        except (TypeError, ValueError):
            good = False
        if not good:
            rule = "must be a number (not NaN)" if name == "x" else "must be a finite number >= 0"
            raise InvalidParameterError(name, value, rule)


def chi2_sf(x: Union[float, mpmath.mpf], df: int) -> mpmath.mpf:
    """``P(X > x)`` for ``X ~ chi-square(df)``: the regularised upper incomplete gamma
    function ``Q(df/2, x/2)`` (mpmath, 30 digits).  ``df = 0``: 1 for ``x <= 0``."""
    _check_law_args(x, df)
    with mp_workdps(30):
        x = _num(x)
        if df <= 0:
            return mpmath.mpf(1) if x <= 0 else mpmath.mpf(0)
        if mpmath.isinf(x):
            return mpmath.mpf(0)
        if x <= 0:
            return mpmath.mpf(1)
        return _upper_q(_num(df) / 2, x / 2)


def _upper_q(s: mpmath.mpf, y: mpmath.mpf) -> mpmath.mpf:
    """The regularised upper incomplete gamma ``Q(s, y)`` at the working precision; where
    mpmath gives up (half-integer ``s`` past ~15,000), :func:`_upper_q_expansions`."""
    try:
        return +mpmath.gammainc(s, y, mpmath.inf, regularized=True)
    except mpmath.libmp.NoConvergence:
        return _upper_q_expansions(s, y)


def _upper_q_expansions(s: mpmath.mpf, y: mpmath.mpf) -> mpmath.mpf:
    """``Q(s, y)`` from Legendre's continued fraction (``y > s``, modified Lentz) or ``1 -``
    the power series of ``P`` (``y <= s``, where ``Q`` is not small enough to lose digits)."""
    eps = mpmath.mpf(2) ** (-mpmath.mp.prec)
    log_front = s * mpmath.log(y) - y - mpmath.loggamma(s)
    if y > s:
        tiny = mpmath.mpf(10) ** -300
        b = y + 1 - s
        c, d = 1 / tiny, 1 / b
        h = d
        for i in range(1, 10**7):
            an = -i * (i - s)
            b += 2
            d = an * d + b
            d = 1 / (d if d != 0 else tiny)
            c = b + an / c
            c = c if c != 0 else tiny
            h *= d * c
            if abs(d * c - 1) < eps:
                return mpmath.exp(log_front) * h
    else:
        term = total = 1 / s
        for i in range(1, 10**7):
            term *= y / (s + i)
            total += term
            if term < total * eps:
                return 1 - mpmath.exp(log_front) * total
    raise mpmath.libmp.NoConvergence(f"Q({s}, {y}) did not converge")  # pragma: no cover - 1e7 terms


def chi2_isf(alpha: float, df: int) -> mpmath.mpf:
    """The critical value ``c`` with ``P(X > c) = alpha`` for ``X ~ chi-square(df)``
    (bisection on :func:`chi2_sf`, relative accuracy about 1e-12)."""
    try:
        good = not isinstance(alpha, bool) and 0 < float(alpha) < 1
    except (TypeError, ValueError):
        good = False
    if not good:
        raise InvalidParameterError("alpha", alpha, "must satisfy 0 < alpha < 1")
    _check_law_args(0, df)
    if df <= 0:
        return mpmath.mpf(0)
    with mp_workdps(30):
        a = alpha if isinstance(alpha, mpmath.mpf) else mpmath.mpf(float(alpha))
        lo, hi = mpmath.mpf(0), _num(df) + 10
        while chi2_sf(hi, df) > a:
            lo, hi = hi, hi * 2
        while hi - lo > hi * mpmath.mpf(10) ** -13:
            mid = (lo + hi) / 2
            if chi2_sf(mid, df) > a:
                lo = mid
            else:
                hi = mid
        return hi


def ncx2_sf(x: Union[float, mpmath.mpf], df: int, nc: Union[float, mpmath.mpf]) -> mpmath.mpf:
    """``P(X > x)`` for the noncentral chi-square law with ``df`` degrees of freedom and
    noncentrality ``nc``: the Poisson mixture ``sum_j Pois(j; nc/2) Q(df/2 + j, x/2)``,
    summed over a window of +-12 standard deviations of the Poisson weights with the
    recurrence ``Q(s + 1, y) = Q(s, y) + y**s e**-y / Gamma(s + 1)``."""
    _check_law_args(x, df, nc)
    with mp_workdps(30):
        x, nc = _num(x), _num(nc)
        if nc <= 0:
            return chi2_sf(x, df)
        if x <= 0:
            return mpmath.mpf(1)
        mu = nc / 2
        y = x / 2
        width = 12 * mpmath.sqrt(mu) + 20
        j0 = int(max(0, mpmath.floor(mu - width)))
        j1 = int(mpmath.ceil(mu + width))
        s = _num(df) / 2 + j0
        q = _upper_q(s, y)
        log_w = -mu + j0 * mpmath.log(mu) - mpmath.loggamma(j0 + 1)
        log_y = mpmath.log(y)
        total = mpmath.mpf(0)
        for j in range(j0, j1 + 1):
            total += mpmath.exp(log_w) * q
            # advance the Poisson weight and Q(s, y) -> Q(s + 1, y)
            q += mpmath.exp(s * log_y - y - mpmath.loggamma(s + 1))
            s += 1
            log_w += mpmath.log(mu) - mpmath.log(j + 1)
        return min(total, mpmath.mpf(1))


@functools.lru_cache(maxsize=4096)
def critical(alpha: float, df: int) -> float:
    """:func:`chi2_isf` as a float, cached (the power search asks it many times)."""
    return float(chi2_isf(alpha, df))


#: Tail cut of `ncx2_sf_fast`: probabilities below ``exp(-_TAIL)`` are rounded.
_TAIL = 40.0


def ncx2_sf_fast(x: float, df: int, nc: float) -> float:
    """:func:`ncx2_sf` in double precision after one mpmath incomplete gamma (the power
    is a statistic: 1e-12 relative error is plenty, and it is called many times).

    Far tails are answered at once from Birge's bounds for the noncentral chi-square
    (L. Birge, "An alternative point of view on Lepski's method", 2001, Lemma 8.1):
    ``P(X <= D + L - 2 sqrt((D + 2L) t)) <= e**-t`` and
    ``P(X >= D + L + 2 sqrt((D + 2L) t) + 2t) <= e**-t``; with ``t = 40`` the answer 1 or 0
    is off by less than ``4.3e-18``.  This keeps huge noncentralities (``n`` up to 1e9)
    from summing hundreds of thousands of Poisson terms."""
    if df <= 0:
        return 0.0
    if x <= 0:
        return 1.0
    if nc / 2.0 <= 0:  # also a subnormal nc, whose half is 0
        return float(chi2_sf(x, df))
    spread = 2.0 * math.sqrt((df + 2.0 * nc) * _TAIL)
    if x <= df + nc - spread:
        return 1.0
    if x >= df + nc + spread + 2.0 * _TAIL:
        return 0.0
    mu, y = nc / 2.0, x / 2.0
    width = 12.0 * math.sqrt(mu) + 20.0
    j0 = int(max(0.0, math.floor(mu - width)))
    j1 = int(math.ceil(mu + width))
    s = df / 2.0 + j0
    with mp_workdps(20):
        q = float(_upper_q(mpmath.mpf(s), mpmath.mpf(y)))
    log_w = -mu + j0 * math.log(mu) - math.lgamma(j0 + 1)
    log_y, log_mu = math.log(y), math.log(mu)
    total = 0.0
    for j in range(j0, j1 + 1):
        total += math.exp(log_w) * min(q, 1.0)
        q += math.exp(s * log_y - y - math.lgamma(s + 1))
        s += 1.0
        log_w += log_mu - math.log(j + 1)
    return min(total, 1.0)


def lambda_for_power(alpha: float, df: int, target: float) -> float:
    """The noncentrality at which the level-``alpha`` test on ``df`` degrees of freedom has
    power ``target`` (bisection, relative accuracy 1e-7)."""
    crit = critical(alpha, df)
    lo, hi = 0.0, max(1.0, crit)
    while ncx2_sf_fast(crit, df, hi) < target:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-7 * hi:
        mid = (lo + hi) / 2
        if ncx2_sf_fast(crit, df, mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi
