"""The certified fixed-point logarithm table and the limb arithmetic."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st

from exactdp.core.log_table import fixed_log_ratio, from_limbs, log_table, normalize, relimb, to_limbs


def test_table_entries_within_their_bound():
    for bits in (8, 53, 130):
        limbs, err, values = log_table(5000, bits)
        assert err == 12  # 4096 = 2**12
        with mpmath.workprec(bits + 60):
            for n in list(range(1, 300)) + [4096, 4999, 5000, 3**7, 2**12 - 1]:
                x = from_limbs(limbs, n)
                assert x == values[n]
                omega = sum(e for _, e in __import__("sympy").factorint(n).items())
                assert abs(x - mpmath.log(n) * 2**bits) <= omega


@given(st.lists(st.integers(-2**200, 2**200), min_size=1, max_size=50))
def test_limbs_round_trip_and_sums(values):
    x = to_limbs(values, 8)
    assert [from_limbs(x, i) for i in range(len(values))] == values
    s = normalize(np.cumsum(x, axis=1))
    total = 0
    for i, v in enumerate(values):
        total += v
        assert from_limbs(s, i) == total


@given(st.integers(1, 10**30), st.integers(1, 10**30), st.integers(1, 200))
def test_fixed_log_ratio(a, b, bits):
    with mpmath.workprec(bits + 120):
        assert abs(fixed_log_ratio(a, b, bits) - (mpmath.log(a) - mpmath.log(b)) * 2**bits) <= 1


def test_cached_larger_table_reports_the_bound_of_the_size_asked():
    log_table(70000, 61)
    limbs, err, values = log_table(100, 61)
    assert err == 6 and limbs.shape[1] >= 101 and values[64] == 6 * values[2]


@pytest.mark.slow
@given(st.integers(1, 7), st.data())
def test_many_values_to_limbs(nlimbs, data):
    # 64 values or more take the bytes path when they fit, else the per-limb path (whose
    # top limb takes the rest: up to 2**62 of it here)
    bound = 2 ** (30 * (nlimbs - 1) + data.draw(st.sampled_from([29, 30, 62])))
    values = data.draw(st.lists(st.integers(-bound, bound - 1), min_size=64, max_size=300))
    x = to_limbs(values, nlimbs)
    assert [from_limbs(x, i) for i in range(len(values))] == values
    assert ((x[:-1] >= 0) & (x[:-1] < 2**30)).all()


def _limbs_of(values, bits, n):
    """Plain Python: normalized ``bits``-bit limbs of each value (the top one signed)."""
    mask = (1 << bits) - 1
    return [[(v >> (bits * i)) & mask for i in range(n - 1)] + [v >> (bits * (n - 1))] for v in values]


@given(st.sampled_from([(30, 45), (45, 30), (30, 44), (44, 30), (30, 30), (20, 62), (62, 20)]),
       st.lists(st.integers(-2**180, 2**180), min_size=1, max_size=6), st.integers(0, 2), st.data())
def test_relimb_against_python_ints(widths, values, spare, data):
    """relimb gives the plain Python limbs at the new width, from normalized limbs and from
    limbs whose carries were moved (what a sum of normalized limbs looks like)."""
    f, t = widths
    n_in = max(abs(v) for v in values).bit_length() // f + 2
    x = np.array(_limbs_of(values, f, n_in), dtype=object).T
    if f <= 45:  # move up to 5 carries down a limb (values unchanged)
        for c in range(len(values)):
            j = data.draw(st.integers(0, n_in - 2))
            m = data.draw(st.integers(-5, 5))
            x[j, c] += m << f
            x[j + 1, c] -= m
    x = x.astype(np.int64)
    n_out = max(abs(v) for v in values).bit_length() // t + 2 + spare
    got = relimb(x, f, t, n_out)
    assert got.T.tolist() == _limbs_of(values, t, n_out)
