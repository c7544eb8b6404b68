"""Tests of zcdp_rho on distributions that differ by very little: the bracket must contain
the true rho, be narrow (more working digits when the first ones cannot see the
difference), and never have a negative lower end.

References: rho computed directly from the definition, ``sup_alpha max(D_alpha(P||Q),
D_alpha(Q||P)) / alpha``, with mpmath at several times the digits the difference needs, on
a dense grid of alpha (written here, not from exactdp's code).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import audit


def near_pair(shift: Fraction) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """Two coins that differ by ``shift``: (1/2 + shift, 1/2 - shift) against a fair one."""
    half = Fraction(1, 2)
    return {"x": half + shift, "y": half - shift}, {"x": half, "y": half}


def rho_twin(P: dict, Q: dict, dps: int) -> mpmath.mpf:
    """``max over alpha`` of ``max(D_alpha(P||Q), D_alpha(Q||P)) / alpha`` on the grid
    ``alpha = 1 + j/64`` (j = 0..640, alpha = 1 is KL), in mpmath at ``dps`` digits."""
    with mpmath.workdps(dps):
        p = {o: mpmath.mpf(v.numerator) / v.denominator for o, v in P.items()}
        q = {o: mpmath.mpf(v.numerator) / v.denominator for o, v in Q.items()}

        def divergence(A: dict, B: dict, alpha: mpmath.mpf) -> mpmath.mpf:
            if alpha == 1:
                return mpmath.fsum(A[o] * mpmath.log(A[o] / B[o]) for o in A)
            return mpmath.log(mpmath.fsum(A[o] ** alpha * B[o] ** (1 - alpha) for o in A)) / (alpha - 1)

        grid = [1 + mpmath.mpf(j) / 64 for j in range(641)]
        return max(max(divergence(p, q, a), divergence(q, p, a)) / a for a in grid)


@pytest.mark.parametrize("bits", [40, 100, 200])
def test_near_identical_pair_is_bracketed_narrowly(bits):
    """A difference of 2**-bits gives rho near 2**(1-2*bits): the default 26 working digits
    see nothing of it; the bracket must still converge around the true value (it used to
    come back after 2000 steps as [-8e-46, 6e556] for bits = 200)."""
    P, Q = near_pair(Fraction(1, 2**bits))
    z = audit.zcdp_rho(P, Q)
    true = rho_twin(P, Q, 3 * bits)
    assert z.converged
    assert 0 < z.lower <= z.upper
    with mpmath.workdps(3 * bits):
        assert z.lower <= true * (1 + mpmath.mpf(10) ** -12)  # the twin's grid max is below the sup
        assert true <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -6 * z.lower * (1 + mpmath.mpf(10) ** -10)
        # rho is the KL limit here, to the bracket's digits
        assert abs(z.lower - true) <= mpmath.mpf(10) ** -5 * true


def test_beyond_the_working_digits_the_bracket_stays_rigorous():
    """A difference of ``10^-1100 / 3`` (rho near 10**-2200) is beyond the working precision
    cap (1,000 digits: ``ln(P/Q)`` is not even resolved): the bracket is not converged, but
    its lower end is not negative and its upper end is a true bound (the pure loss squared
    over 2), not an overflowed one.  A difference of ``2**-2000`` (rho near 10**-1204) is
    within reach: its ``ln(P/Q)`` is exact in binary at those digits and each output adds
    ``Q h(r)``, ``h(r) ~ r^2``, so the bracket converges around the KL limit."""
    P, Q = near_pair(Fraction(1, 2**2000))
    z = audit.zcdp_rho(P, Q)
    assert z.converged
    with mpmath.workdps(2600):
        p = mpmath.mpf(P["x"].numerator) / P["x"].denominator
        kl = p * mpmath.log(2 * p) + (1 - p) * mpmath.log(2 * (1 - p))
        assert z.lower <= kl * (1 + mpmath.mpf(10) ** -12) and kl <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -6 * z.lower
    P, Q = near_pair(Fraction(1, 3 * 10**1100))
    z = audit.zcdp_rho(P, Q)
    assert not z.converged
    with mpmath.workdps(4600):
        p = mpmath.mpf(P["x"].numerator) / P["x"].denominator
        kl = p * mpmath.log(2 * p) + (1 - p) * mpmath.log(2 * (1 - p))
        loss = -mpmath.log(1 - (2 * p - 1))
        assert z.lower >= 0
        assert kl <= z.upper  # rho >= KL
        # the pure loss squared over 2, from the loss's enclosure at 1,000 digits (radius
        # about 10^-1000 beside a loss of 10^-1100): a true bound, not an overflowed one
        assert z.upper <= (loss + mpmath.mpf(10) ** -1015) ** 2 / 2


def test_identical_and_disjoint_unchanged():
    P, Q = near_pair(Fraction(0))
    z = audit.zcdp_rho(P, Q)
    assert (z.lower, z.upper, z.converged) == (0, 0, True)
    z = audit.zcdp_rho({"x": Fraction(1)}, {"y": Fraction(1)})
    assert z.lower == z.upper == mpmath.inf


@pytest.mark.slow
def test_more_digits_only_within_the_memory_budget(monkeypatch):
    """Two Joint mechanisms whose epsilon is 10**-60: rho is near 10**-121, and ``ln(P/Q)``
    (about 10**-60) is beyond the first working digits of the cells' balls. With ample
    memory the bracket converges; with a budget too small for the digits it needs, the
    bracket at the digits that fit comes back (rigorous, not converged) instead of a
    MemoryBudgetError.  Through the cells' balls, the path of any pair that is not two
    exponential mechanisms of one lam (those are computed per value of delta, which needs
    no more digits here and converges within the small budget too, checked last)."""
    from exactdp import _renyi
    per_delta = _renyi._by_delta
    monkeypatch.setattr(_renyi, "_by_delta", lambda pair: None)
    eps = Fraction(1, 10**60)
    pair = ([3, 1, 0], [3, 2, 0])
    z = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps), exactdp.Joint(pair[1], 1, epsilon=eps))
    assert z.converged and 0 < z.lower < mpmath.mpf(10) ** -115
    from exactdp._footprint import estimate
    # 6 levels and 3 cells: the budget holds them at 60 digits (the exact identity check's
    # enclosures), not at 104 (the third working precision, 26 -> 52 -> 104)
    fits = estimate(6, 3, 60, False)
    assert estimate(6, 3, 104, False) > fits
    small = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps, memory_budget=fits // 2 + 1),
                           exactdp.Joint(pair[1], 1, epsilon=eps, memory_budget=fits // 2 + 1))
    assert not small.converged and 0 <= small.lower <= z.lower and small.upper >= z.upper
    monkeypatch.setattr(_renyi, "_by_delta", per_delta)
    fast = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps, memory_budget=fits // 2 + 1),
                          exactdp.Joint(pair[1], 1, epsilon=eps, memory_budget=fits // 2 + 1))
    assert fast.converged and fast.lower <= z.upper and z.lower <= fast.upper
