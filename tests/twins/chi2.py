"""Chi-square goodness of fit from mpmath's regularized incomplete gamma function (no scipy).

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

from collections import Counter
from typing import Sequence


import mpmath


# --------------------------------------------------------------------------------------
# Chi-square goodness of fit without scipy
# --------------------------------------------------------------------------------------
def chi2_sf(x, df: int):
    """Upper tail ``P(X > x)`` of the chi-square law with ``df`` degrees of freedom."""
    with mpmath.workdps(40):
        return mpmath.gammainc(mpmath.mpf(df) / 2, mpmath.mpf(x) / 2, mpmath.inf, regularized=True)


def chi2_threshold(df: int, alpha: float = 1e-6) -> float:
    """``x`` with ``P(X > x) = alpha`` for chi-square(df), by bisection on the regularized
    lower incomplete gamma function ``P(X <= x) = gammainc(df/2, 0, x/2, regularized=True)``."""
    with mpmath.workdps(40):
        target = 1 - mpmath.mpf(alpha)

        def cdf(x):
            return mpmath.gammainc(mpmath.mpf(df) / 2, 0, mpmath.mpf(x) / 2, regularized=True)

        lo, hi = mpmath.mpf(0), mpmath.mpf(df) + 10
        while cdf(hi) < target:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            if cdf(mid) < target:
                lo = mid
            else:
                hi = mid
        return float(hi)


#: ``x`` with ``P(chi2_df > x) = alpha`` (the name the permute-and-flip tests use).
chi2_quantile = chi2_threshold


def chi2_statistic(observed: dict, expected: dict) -> tuple[float, int]:
    """Pearson's statistic and degrees of freedom over the keys of ``expected``, pooling
    (in increasing expected order) the bins with expected count < 5 until each pooled bin
    reaches 5.  ``observed`` must have no key outside ``expected``."""
    stray = set(observed) - set(expected)
    assert not stray, f"draws outside the support: {sorted(stray)[:5]}"
    bins: list[tuple[float, int]] = []
    pool_e, pool_o = 0.0, 0
    for key in sorted(expected, key=lambda o: expected[o]):
        pool_e += float(expected[key])
        pool_o += observed.get(key, 0)
        if pool_e >= 5:
            bins.append((pool_e, pool_o))
            pool_e, pool_o = 0.0, 0
    if pool_e > 0:  # a small remainder (only when the total is < 5): merge it
        if bins:
            e, o = bins.pop()
            bins.append((e + pool_e, o + pool_o))
        else:
            bins.append((pool_e, pool_o))
    stat = sum((o - e) ** 2 / e for e, o in bins)
    return stat, len(bins) - 1


def chi2_stat(counts, probs, n):
    return sum((c - n * p) ** 2 / (n * p) for c, p in zip(counts, probs))


def assert_fits(draws: Sequence, expected_probs: dict, alpha: float = 1e-6) -> None:
    """Chi-square goodness of fit of ``draws`` to the probabilities ``expected_probs``
    (false-alarm probability ``alpha``)."""
    n = len(draws)
    expected = {o: float(p) * n for o, p in expected_probs.items()}
    stat, df = chi2_statistic(Counter(draws), expected)
    assert df >= 1
    threshold = chi2_threshold(df, alpha)
    assert stat < threshold, (stat, threshold, df)
