"""The multi-limb fixed-point primitives against Python integers (exhaustive small values,
random wide ones, hypothesis)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from exactdp.core import fixed_point as fp
from exactdp.core.log_table import LIMB_BITS, from_limbs, to_limbs
from exactdp.errors import InvalidParameterError

SMALL = [0, 1, 2, 3, -1, -2, (1 << 30) - 1, 1 << 30, -(1 << 30), (1 << 60) - 1, -(1 << 60) + 1]


def _ints(x):
    return [from_limbs(x, i) for i in range(x.shape[1])]


def _wide(rng, bits, n):
    return [rng.randrange(-(1 << bits), 1 << bits) for _ in range(n)]


def test_mul_small_exhaustive_and_random():
    rng = random.Random(1)
    values = SMALL + _wide(rng, 140, 200)
    for m in (0, 1, -1, 3, 2**31 - 1, -(2**31), 2**32 - 1):
        got = _ints(fp.mul_small(to_limbs(values, 7), np.full(len(values), m, dtype=np.int64)))
        assert got == [v * m for v in values]
    ms = np.array([rng.randrange(-(2**32) + 1, 2**32) for _ in values], dtype=np.int64)
    assert _ints(fp.mul_small(to_limbs(values, 7), ms)) == [v * int(m) for v, m in zip(values, ms)]


@pytest.mark.parametrize("la,lb", [(1, 1), (2, 3), (4, 4), (6, 4), (7, 6), (5, 2), (7, 7), (9, 7)])
def test_mul_floor_within_its_bound(la, lb):
    # floor(x y / 2**s - theta), |theta| < 2**-27: g - x y / 2**s in (-1 - 2**-27, 2**-27]
    rng = random.Random(la * 10 + lb)
    # the extremes of each width: every limb at its largest (the column sums' worst case)
    a = SMALL[:3] + [(1 << (LIMB_BITS * la - 1)) - 1, -(1 << (LIMB_BITS * la - 1))] + _wide(rng, LIMB_BITS * la - 2, 150)
    b = SMALL[:3] + [(1 << (LIMB_BITS * lb - 1)) - 1, -(1 << (LIMB_BITS * lb - 1))] + _wide(rng, LIMB_BITS * lb - 2, 150)
    pairs = list(itertools.product(a[:12], b[:12])) + list(zip(a, b))
    xa, xb = to_limbs([p for p, _ in pairs], la), to_limbs([q for _, q in pairs], lb)
    for shift in sorted({0, 1, 29, 30, 31, 61, LIMB_BITS * (la + lb) // 2, LIMB_BITS * (la + lb) - 62}):
        if shift < 0:
            continue
        out = fp.mul(xa, xb, shift, la + lb + 1)
        for (p, q), g in zip(pairs, _ints(out)):
            gap = (g << shift) - p * q  # (g - x y 2**-s) 2**s, exact
            assert -(1 << shift) - (1 << shift) // 2**27 - 1 < gap and 2**27 * gap <= (1 << shift)
            assert g in ((p * q) >> shift, ((p * q) >> shift) - 1, ((p * q) >> shift) + 1)


def test_mul_refuses_wide_operands():
    x = np.zeros((8, 1), dtype=np.int64)
    with pytest.raises(InvalidParameterError, match="MAX_MUL_LIMBS = 7"):
        fp.mul(x, x, 0, 3)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-(2**170), 2**170), min_size=1, max_size=20), st.integers(0, 200), st.integers(0, 200))
def test_rescale_is_exact_left_and_floor_right(values, a, b):
    x = to_limbs(values, 7)
    out = fp.rescale(x, a, b, 15)
    expected = [v << (b - a) if b >= a else v >> (a - b) for v in values]
    assert _ints(out) == expected


def test_rescale_folds_sign_limbs_into_fewer():
    values = [-5, -(1 << 40), 7, (1 << 59) - 1, -(1 << 59)]
    assert _ints(fp.rescale(to_limbs(values, 6), 0, 0, 2)) == values
    assert _ints(fp.rescale(to_limbs(values, 2), 0, 0, 6)) == values


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**120), 2**120), st.integers(0, LIMB_BITS - 1)), min_size=1, max_size=20))
def test_shift_left_each(pairs):
    x = to_limbs([v for v, _ in pairs], 6)
    s = np.array([k for _, k in pairs], dtype=np.int64)
    assert _ints(fp.shift_left_each(x, s)) == [v << k for v, k in pairs]


def test_fits_signed_exact_at_the_edges():
    for bits in (0, 1, 29, 30, 31, 59, 60, 79):
        values = [0, (1 << bits) - 1, 1 << bits, -(1 << bits) + 1, -(1 << bits), -(1 << bits) - 1, (1 << bits) + 1]
        got = fp.fits_signed(to_limbs(values, 4), bits).tolist()
        assert got == [-(1 << bits) <= v < (1 << bits) for v in values]


def test_approx_float_only_approximates():
    values = [(1 << 100) + 12345, -(1 << 95)]
    got = fp.approx_float(to_limbs(values, 5), 100, 4, 3)
    assert abs(got[0] - 1) < 1e-12 and abs(got[1] + 2**-5) < 1e-12
