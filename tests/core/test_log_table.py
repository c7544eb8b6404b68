"""The certified fixed-point logarithm table and the limb arithmetic."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st

from exactdp.core.log_table import fixed_log_ratio, from_limbs, log_table, normalize, to_limbs


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
