"""The certified fixed-point logarithm table and the limb arithmetic."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import exactdp.core.log_table as log_table_module
from exactdp.core.log_table import (TableValues, fixed_log_ratio, from_limbs, limbs_for, log_table, nonnegative_bit_length,
                                    normalize, relimb, sum_columns, to_limbs)


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


def _reference_table(n_max, frac_bits, nudge=0):
    """The plain twin: X_p from arb for each prime (trial division), then X_n = X_p +
    X_{n/p} (p the least prime factor) in a Python loop over every n, in Python ints."""
    from flint import arb

    from exactdp.core.log_table import nearest_fixed
    from exactdp.core.precision import flint_workprec

    n_max = max(n_max, 1)
    spf = list(range(n_max + 1))
    for p in range(2, math.isqrt(n_max) + 1):
        if spf[p] == p:
            for n in range(p * p, n_max + 1, p):
                if spf[n] == n:
                    spf[n] = p
    values, omega = [0] * (n_max + 1), [0] * (n_max + 1)
    with flint_workprec(frac_bits + 16 + n_max.bit_length().bit_length()):
        for p in range(2, n_max + 1):
            if spf[p] == p:
                ball = arb(p).log()
                values[p] = (nearest_fixed(ball, frac_bits) if ball.rad() * arb(2) ** (frac_bits + 2) < 1
                             else fixed_log_ratio(p, 1, frac_bits))
                omega[p] = 1
    if n_max >= 2:
        values[2] += nudge  # negative controls only
    for n in range(4, n_max + 1):
        p = spf[n]
        if p != n:
            values[n] = values[p] + values[n // p]
            omega[n] = omega[n // p] + 1
    return values, max(omega)


def _fresh_table(monkeypatch, n_max, frac_bits):
    monkeypatch.setattr(log_table_module, "_TABLES", {})
    return log_table(n_max, frac_bits)


@pytest.mark.parametrize("frac_bits", [1, 30, 61, 124, 200])
@pytest.mark.parametrize("n_max", [1, 2, 3, 10, 1000, 50_000])
def test_limb_builder_equals_the_python_loop(monkeypatch, n_max, frac_bits):
    limbs, err, values = _fresh_table(monkeypatch, n_max, frac_bits)
    want, want_err = _reference_table(n_max, frac_bits)
    assert err == want_err == max(n_max, 1).bit_length() - 1
    # the same limbs to_limbs gives of the plain integers (width from the largest entry)
    assert limbs.dtype == np.int64
    assert np.array_equal(limbs, to_limbs(want, limbs_for(max(want).bit_length() + 1)))
    assert isinstance(values, TableValues) and len(values) == len(want)
    assert values[:] == want and [values[n] for n in range(len(want))] == want


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3000), st.integers(1, 260))
def test_limb_builder_equals_the_python_loop_hypothesis(n_max, frac_bits):
    log_table_module._TABLES.clear()
    limbs, err, _ = log_table(n_max, frac_bits)
    want, want_err = _reference_table(n_max, frac_bits)
    assert err == want_err
    assert np.array_equal(limbs, to_limbs(want, limbs_for(max(want).bit_length() + 1)))


def _within_bound(values, frac):
    """``|X_n - 2**F ln n| <= Omega(n)`` for every ``n`` (sympy's factorint, mpmath)."""
    import sympy

    with mpmath.workprec(frac + 60):
        return all(abs(values[n] - mpmath.log(n) * 2**frac) <= sum(sympy.factorint(n).values())
                   for n in range(1, len(values)))


def test_table_bound_and_a_negative_control(monkeypatch):
    """The built table is within its bound; a table whose ``X_2`` is one ulp further from
    ``2**F ln 2`` fails both the twin comparison and the bound (at ``512 = 2**9``, ``9 (|e| +
    1) > 9`` ulps, ``e != 0`` as ``ln 2`` is irrational)."""
    for frac in (1, 61, 124):
        limbs, _, values = _fresh_table(monkeypatch, 1000, frac)
        assert _within_bound(values[:], frac)
        with mpmath.workprec(frac + 60):
            away = 1 if values[2] >= mpmath.log(2) * 2**frac else -1
        bad, _ = _reference_table(1000, frac, nudge=away)
        assert not np.array_equal(limbs, to_limbs(bad, limbs.shape[0]))
        assert not _within_bound(bad, frac)


def test_table_values_read_from_the_limbs():
    values = TableValues(to_limbs([0, 5, -(2**100), 2**65 + 3], 5))
    assert len(values) == 4 and values[1] == 5 and values[-2] == -(2**100) and values[3] == 2**65 + 3
    assert values[1:4:2] == [5, 2**65 + 3] and list(values) == [0, 5, -(2**100), 2**65 + 3]
    with pytest.raises(IndexError):
        values[4]
    with pytest.raises(IndexError):
        values[-5]


@given(st.lists(st.integers(0, 2**200), min_size=1, max_size=40), st.data())
def test_nonnegative_bit_length(xs, data):
    stop = data.draw(st.integers(0, len(xs)))
    x = to_limbs(xs, limbs_for(200) + data.draw(st.integers(0, 2)))
    assert nonnegative_bit_length(x, stop) == max(xs[:stop], default=0).bit_length()
    assert nonnegative_bit_length(x) == max(xs).bit_length()


@given(st.lists(st.integers(-2**150, 2**150), min_size=1, max_size=30), st.data())
def test_sum_columns(xs, data):
    columns = data.draw(st.lists(st.integers(0, len(xs) - 1), max_size=60))
    x = to_limbs(xs, limbs_for(151))
    assert sum_columns(x, columns) == sum(xs[i] for i in columns)


@pytest.mark.parametrize("bits", [30, 113, 300])
def test_fixed_log_ratios_is_fixed_log_ratio_each(bits):
    # the batched form rounds each ball to the nearest as the single one does: equal values,
    # and within one ulp of 2**bits ln(num/den) (a wrong pair order would be far off)
    from exactdp.core.log_table import fixed_log_ratios

    pairs = [(1, 1), (2, 1), (1, 2), (10**40 + 7, 3), (5, 10**30), (2**200 - 1, 2**200)]
    got = fixed_log_ratios(iter(pairs), bits)
    assert got == [fixed_log_ratio(n, d, bits) for n, d in pairs]
    with mpmath.workprec(bits + 100):
        for (n, d), x in zip(pairs, got):
            assert abs(x - (mpmath.log(n) - mpmath.log(d)) * 2**bits) <= 1
    assert fixed_log_ratios([], bits) == []
