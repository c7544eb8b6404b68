"""The fixed-point ln(1 - e**-delta) kernel against mpmath at high precision: random and
adversarial delta (the domain's ends, powers of two, first-multiplier table boundaries);
the proven bound must hold on every value the kernel takes, and must catch a broken step."""

from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from exactdp.core import log1mexp
from exactdp.core.log1mexp import CUT_BITS, Log1mExpKernel, kernel_error, kernel_fits, kernel_kappa, log1mexp_kernel
from exactdp.core.log_table import from_limbs, to_limbs
from exactdp.errors import InvalidParameterError


def _adversarial(F: int, d: int) -> list[int]:
    """``D`` values (``delta = D 2**-F``) at the edges of every step."""
    top = 1 << (F - CUT_BITS)  # delta = 2**-CUT_BITS, just outside
    out = [top - 1, top - 2, top - (1 << (F - 60)), top >> 1, (top >> 1) + 1, (top >> 1) - 1]
    for k in range(CUT_BITS + 1, 30):  # near powers of two, both sides
        p = 1 << (F - k)
        out += [p, p - 1, p + 1, p + (p >> 20), p - (p >> 21)]
    # 1/(d+2) and just above (the least delta of a level with one factor step)
    out += [(1 << F) // (d + 2), (1 << F) // (d + 2) + 1, (1 << F) // (d + 1), -(-(1 << F) // (d + 1))]
    # z = D 2**s where 2**11 / z is a half-integer (r rounds either way) or at 2**10, 2**11
    for r in (1024, 1025, 1500, 2047, 2048):
        for half in (Fraction(1, 2), Fraction(-1, 2), Fraction(0)):
            z = Fraction(2048) / (r + half)  # in (1, 2]
            if 1 <= z < 2:
                D = int(z * (1 << (F - CUT_BITS - 3)))
                out += [D - 1, D, D + 1]
    return sorted({v for v in out if v > 0})


def _check(kernel: Log1mExpKernel, Ds: list[int], limbs: int = 6) -> tuple[int, float]:
    """Runs the kernel; asserts the bound on every taken value; returns (taken, worst)."""
    ok, Y = kernel(to_limbs(Ds, limbs), limbs)
    assert Y.shape == (limbs, int(ok.sum()))
    worst = mpmath.mpf(0)
    with mpmath.workprec(kernel.F + 200):
        scale = mpmath.mpf(2) ** kernel.F
        for i, D in enumerate(d for d, o in zip(Ds, ok) if o):
            exact = mpmath.log(-mpmath.expm1(-mpmath.mpf(D) / scale)) * scale
            err = abs(from_limbs(Y, i) - exact)
            worst = max(worst, err)
            assert err <= kernel.error, (D, float(err), kernel.error)
    return int(ok.sum()), float(worst)


@pytest.mark.parametrize("F,W", [(124, 120), (70, 60), (93, 90), (150, 150), (140, 150), (200, 120), (190, 180)])
def test_bound_holds_on_adversarial_and_random_delta(F, W):
    kernel = Log1mExpKernel(F, W)
    assert kernel.error == kernel_error(F, W)
    rng = random.Random(F * 1000 + W)
    Ds = _adversarial(F, 166_000)
    Ds += [rng.randrange(1 << (F - 29), 1 << (F - CUT_BITS)) for _ in range(300)]
    Ds += [int(2 ** rng.uniform(F - 29, F - CUT_BITS)) for _ in range(300)]  # log-uniform
    taken, _ = _check(kernel, Ds)
    # in its domain [2**-29, 2**-CUT_BITS) the kernel takes every value
    inside = [D for D in Ds if (1 << (F - 29)) <= D < (1 << (F - CUT_BITS))]
    assert taken == len(inside)


def test_outside_the_domain_is_left_to_the_caller():
    F, W = 124, 120
    kernel = log1mexp_kernel(F, W)
    outside = [0, 1, (1 << (F - 29)) - 1, 1 << (F - CUT_BITS), 1 << F, 5 << F, -(1 << (F - 10))]
    ok, Y = kernel(to_limbs(outside + [1 << (F - 12)], 6), 6)
    assert ok.tolist() == [False] * len(outside) + [True] and Y.shape == (6, 1)


def test_a_broken_step_breaks_the_bound():
    # the test's check is able to fail: drop the series term a_2 delta**4 (about 2**-43 at
    # delta = 2**-9, far above the bound) and the check must find it
    F, W = 124, 120
    kernel = Log1mExpKernel(F, W)
    kernel.coef = kernel.coef[:1]
    with pytest.raises(AssertionError):
        _check(kernel, [1 << (F - 9), 3 << (F - 11)])
    kernel = Log1mExpKernel(F, W)
    kernel.tables[-1] = kernel.tables[-1] + np.int64(kernel.error)  # one stage table off by K ulps at W
    with pytest.raises(AssertionError):
        _check(kernel, [(1 << (F - 9)) + 12345 * (1 << 60)])


def test_the_bound_is_used_not_wasted():
    # the measured error is within the bound and not far below it (a bound a thousand times
    # too large would hide a lost term)
    F, W = 124, 120
    rng = random.Random(3)
    _, worst = _check(log1mexp_kernel(F, W), [rng.randrange(1 << (F - 20), 1 << (F - 9)) for _ in range(400)])
    assert worst > kernel_error(F, W) / 64


def test_working_precisions():
    assert not kernel_fits(30) and kernel_fits(60) and kernel_fits(180) and not kernel_fits(210)
    assert not kernel_fits(100) and log1mexp_kernel(100, 100) is None
    with pytest.raises(InvalidParameterError, match="work_bits=210"):
        Log1mExpKernel(100, 210)
    # kappa = S + 7, S the stages b = 21, 31, ... until 3 b >= W
    assert [Log1mExpKernel(90, W).kappa for W in (60, 90, 120, 150, 180)] == [8, 9, 10, 11, 12]
    assert kernel_error(124, 120) == 10 << 4 and kernel_error(100, 120) == 1 + 1  # ceil(10 / 2**20) + 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**200), min_size=1, max_size=8), st.sampled_from([(124, 120), (100, 90), (160, 150)]))
def test_hypothesis_bound(raw, fw):
    # any D: those in the domain are all taken and within the bound, the others left out
    F, W = fw
    kernel = log1mexp_kernel(F, W)
    Ds = [(1 << (F - 29)) + v % ((1 << (F - CUT_BITS)) - (1 << (F - 29))) if i % 2 else v >> (200 - F + 4)
          for i, v in enumerate(raw)]
    taken, _ = _check(kernel, Ds)
    assert taken == sum(1 for D in Ds if (1 << (F - 29)) <= D < (1 << (F - CUT_BITS)))


def test_the_error_sum_is_within_s_plus_7_at_every_width():
    # the stated kappa = S + 7 bounds the exact sum of the parts at every W the kernel runs at
    for W in range(60, 210, 30):
        assert kernel_fits(W)
        S = len(log1mexp._stages(W))
        assert kernel_kappa(W) <= S + 7, W
        assert kernel_kappa(W) > S + 5  # the sum is not padded far beyond its parts


def test_float_parts_are_used_and_checked():
    # at W = 120 both float64 parts run (t**2/2 and the terms a_4 u**4, a_5 u**5 of h); at
    # W = 150 t**2/2 is formed in limbs
    plan = log1mexp._horner_plan(120)
    assert plan.t2_float and len(plan.float_terms) == 2 and len(plan.limb_terms) == 3
    assert not log1mexp._horner_plan(150).t2_float
    F, W = 124, 120
    Ds = [(1 << (F - 9)) + 12345 * (1 << 60), 3 << (F - 11), (1 << (F - 9)) - 1]
    _check(Log1mExpKernel(F, W), Ds)
    # the limb form of t**2/2 at the same W is within the bound too
    kernel = Log1mExpKernel(F, W)
    kernel.plan = kernel.plan._replace(t2_float=False)
    assert _check(kernel, Ds)[0] == len(Ds)
    # negative control: without the float terms of h (about 2**25 ulps at delta = 2**-9)
    # the bound fails
    kernel = Log1mExpKernel(F, W)
    kernel.plan = kernel.plan._replace(float_terms=[])
    with pytest.raises(AssertionError):
        _check(kernel, Ds)
