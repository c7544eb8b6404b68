"""exactdp.certify.chi2: the chi-square laws against mpmath and simulation, the fast noncentral
tail against the 30-digit mixture, and the incomplete gamma fallback where mpmath gives up."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from exactdp import certify
from exactdp.certify import chi2


def test_chi2_functions():
    assert certify.chi2_sf(3, 2) == pytest.approx(math.exp(-1.5), rel=1e-14)
    for df in (1, 4, 19):
        c = certify.chi2_isf(1e-6, df)
        assert certify.chi2_sf(c, df) == pytest.approx(1e-6, rel=1e-9)
    assert certify.chi2_sf(0, 0) == 1 and certify.chi2_sf(1, 0) == 0
    assert certify.ncx2_sf(5, 3, 0) == certify.chi2_sf(5, 3)
    rng = np.random.default_rng(3)
    for df, nc, x in [(3, 4.0, 9.0), (19, 58.0, 63.7), (1, 900.0, 1000.0)]:
        mc = float(np.mean(rng.noncentral_chisquare(df, nc, size=200_000) > x))
        assert float(certify.ncx2_sf(x, df, nc)) == pytest.approx(mc, abs=4e-3)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.floats(0, 5000), st.floats(0.01, 3))
def test_fast_noncentral_sf_against_mpmath(df, nc, where):
    # fast path (double precision, Birge tail cut) against the 30-digit Poisson mixture
    x = where * (df + nc)
    fast = chi2.ncx2_sf_fast(x, df, nc)
    slow = float(certify.ncx2_sf(x, df, nc))
    assert fast == pytest.approx(slow, rel=1e-9, abs=1e-15)


@pytest.mark.slow
def test_fast_noncentral_sf_edge_cases():
    assert chi2.ncx2_sf_fast(3.0, 1, 5e-324) == pytest.approx(float(certify.chi2_sf(3, 1)), rel=1e-12)
    assert chi2.ncx2_sf_fast(0.0, 4, 2.0) == 1.0 and chi2.ncx2_sf_fast(5.0, 0, 2.0) == 0.0
    # far tails (Birge's bounds) and the 30-digit mixture agree
    assert chi2.ncx2_sf_fast(60.0, 19, 1e6) == 1.0 and float(certify.ncx2_sf(60, 19, 1e6)) == 1.0
    assert chi2.ncx2_sf_fast(1e5, 19, 100.0) == 0.0 and float(certify.ncx2_sf(1e5, 19, 100)) < 1e-300


@pytest.mark.parametrize("df", [33_333, 100_001, 1_000_001])
def test_chi2_sf_with_many_odd_degrees_of_freedom(df):
    # mpmath's gammainc gives up (NoConvergence) here: a failing sampler tested with many
    # bins crashed instead of getting its tiny p-value
    for factor in (1.0, 1.01, 1.5, 2.0):
        p = chi2.chi2_sf(df * factor, df)
        # between the neighbouring even df, where mpmath converges (Q is monotone in df)
        assert chi2.chi2_sf(df * factor, df - 1) <= p <= chi2.chi2_sf(df * factor, df + 1)
    assert chi2.chi2_sf(df, df) == pytest.approx(0.5, abs=0.01)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4000), st.floats(0.05, 4))
def test_incomplete_gamma_expansions_against_mpmath(twice_s, ratio):
    # the fallback (continued fraction or series) against mpmath where mpmath converges
    s = mpmath.mpf(twice_s) / 2
    y = s * ratio
    with mpmath.workdps(30):
        exact = mpmath.gammainc(s, y, mpmath.inf, regularized=True)
        fallback = chi2._upper_q_expansions(s, y)
        assert abs(fallback - exact) <= mpmath.mpf(10) ** -20 * max(exact, mpmath.mpf(10) ** -5) + abs(exact) * 1e-20


def test_critical_is_the_cached_critical_value():
    for alpha, df in ((1e-6, 1), (0.05, 3), (1e-3, 40)):
        assert chi2.critical(alpha, df) == float(certify.chi2_isf(alpha, df))
        assert chi2.critical(alpha, df) is chi2.critical(alpha, df)  # cached: the same float object


@pytest.mark.parametrize("alpha, df, target", [(1e-6, 1, 0.99), (1e-6, 19, 0.99), (0.05, 4, 0.5), (1e-3, 200, 0.9)])
def test_lambda_for_power_inverts_the_power(alpha, df, target):
    lam = chi2.lambda_for_power(alpha, df, target)
    crit = chi2.critical(alpha, df)
    assert chi2.ncx2_sf_fast(crit, df, lam) >= target > chi2.ncx2_sf_fast(crit, df, lam * (1 - 1e-6))
    assert float(certify.ncx2_sf(crit, df, lam)) == pytest.approx(target, rel=1e-6)
