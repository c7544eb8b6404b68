"""The order of a privacy-loss table: largest |loss| first, compared rounded to dps - 3
digits (so losses equal in truth tie), ties broken by the level indices.

Twin: ``-(+abs(x))`` under ``mpmath.workdps`` (the rounded magnitude as an mpf)."""

from __future__ import annotations

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpmath import libmp

from exactdp._oracle.notions.pure import _magnitude_key


def values():
    finite = st.builds(lambda s, m, e: mpmath.mpf(s * m) * mpmath.mpf(2) ** e,
                       st.sampled_from([1, -1]), st.integers(0, 2**80), st.integers(-400, 400))
    return st.one_of(finite, st.sampled_from([mpmath.inf, -mpmath.inf, mpmath.mpf(0)]))


def twin_before(x, y, dps):
    with mpmath.workdps(dps):
        a, b = -(+abs(x)), -(+abs(y))
        return a < b, a == b


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(values(), values(), st.integers(1, 80), st.sampled_from([5, 12, 27, 57]))
def test_key_orders_as_the_rounded_magnitude(x, shift, bits, dps):
    """Random pairs, and pairs ``x, x (1 + 2**-bits)`` that round together or not."""
    prec = libmp.dps_to_prec(dps)
    with mpmath.workprec(600):  # exact: 80 + 80 bits
        near = x * (1 + mpmath.mpf(2) ** -bits) if mpmath.isfinite(x) else x
    for y in (shift, near):
        kx, ky = _magnitude_key(x, prec), _magnitude_key(y, prec)
        assert (kx > ky, kx == ky) == twin_before(x, y, dps), (x, y, dps)


def test_control_unrounded_key_is_caught():
    """A key of the exact magnitude (no rounding) separates values the table must tie."""
    with mpmath.workprec(400):
        x = mpmath.mpf(1) / 3
        y = x * (1 + mpmath.mpf(2) ** -120)
    prec = libmp.dps_to_prec(27)
    assert twin_before(x, y, 27) == (False, True)
    assert _magnitude_key(x, prec) == _magnitude_key(y, prec)
    assert libmp.mpf_abs(x._mpf_) != libmp.mpf_abs(y._mpf_)  # the unrounded key would not tie them
