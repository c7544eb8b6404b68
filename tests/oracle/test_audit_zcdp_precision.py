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
    from exactdp._oracle.notions import renyi as _renyi
    per_delta = _renyi.by_delta
    monkeypatch.setattr(_renyi, "by_delta", lambda pair: None)
    eps = Fraction(1, 10**60)
    pair = ([3, 1, 0], [3, 2, 0])
    z = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps), exactdp.Joint(pair[1], 1, epsilon=eps))
    assert z.converged and 0 < z.lower < mpmath.mpf(10) ** -115
    from exactdp._oracle.footprint import estimate
    # 6 levels and 3 cells: the budget holds them at 60 digits (the exact identity check's
    # enclosures), not at 104 (the third working precision, 26 -> 52 -> 104)
    fits = estimate(6, 3, 60, False)
    assert estimate(6, 3, 104, False) > fits
    small = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps, memory_budget=fits // 2 + 1),
                           exactdp.Joint(pair[1], 1, epsilon=eps, memory_budget=fits // 2 + 1))
    assert not small.converged and 0 <= small.lower <= z.lower and small.upper >= z.upper
    monkeypatch.setattr(_renyi, "by_delta", per_delta)
    fast = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps, memory_budget=fits // 2 + 1),
                          exactdp.Joint(pair[1], 1, epsilon=eps, memory_budget=fits // 2 + 1))
    assert fast.converged and fast.lower <= z.upper and z.lower <= fast.upper


def _peeling_rho_twin(counts_a, counts_b, k, dps):
    """rho of two Peeling mechanisms (Gumbel noise, epsilon 1) from the definition, in
    mpmath at ``dps`` digits: the probabilities by explicit rounds over items
    (tests/twins/peeling.py), ``R(alpha) = max(D_alpha(P||Q), D_alpha(Q||P)) / alpha`` on the
    grid ``alpha = 1 + j/32`` up to 4 (``alpha = 1``: KL), then, where the best grid point is
    interior, the stationary point of ``R`` there (``findroot`` of its derivative): any
    ``alpha`` gives ``R(alpha) <= rho``, and at the stationary point ``R`` is rho to about
    twice the root's digits.  Returns ``(rho, alpha)``."""
    from twins.peeling import peel_gumbel_mp
    P = peel_gumbel_mp(counts_a, k, Fraction(1), dps)
    Q = peel_gumbel_mp(counts_b, k, Fraction(1), dps)
    with mpmath.workdps(dps):
        def divergence(A, B, alpha):
            if alpha == 1:
                return mpmath.fsum(A[o] * mpmath.log(A[o] / B[o]) for o in A)
            return mpmath.log(mpmath.fsum(A[o] ** alpha * B[o] ** (1 - alpha) for o in A)) / (alpha - 1)

        def R(alpha):
            return max(divergence(P, Q, alpha), divergence(Q, P, alpha)) / alpha

        grid = [1 + mpmath.mpf(j) / 32 for j in range(97)]
        best = max(grid, key=R)
        if best == 1:
            return R(best), best
        root = mpmath.findroot(lambda x: mpmath.diff(R, x), best)
        return R(root), root


@pytest.mark.parametrize("counts_b, interior", [pytest.param((2, 3, 1, 1), True, marks=pytest.mark.slow),
                                                 ((3, 3, 2, 1), False)])
def test_twenty_digits_of_a_peeling_swap_pair(counts_b, interior):
    """Peeling [3, 2, 2, 0], k = 2, epsilon 1 (Gumbel) against two of its swap neighbours
    (``audit.neighbours(..., "swap")``): [2, 3, 1, 1], the worst, whose supremum is at
    ``alpha`` about 1.0193, and [3, 3, 2, 1], whose supremum is the KL limit ``alpha -> 1``.
    At ``dps = 20`` the bracket converges and contains the twin's rho.  Two faults kept it
    from doing so: the heap of intervals was keyed by midpoints rounded to mpmath's 53
    bits, so past 15 digits its top was not the largest bound and was reported as the upper
    end (below the lower end: [0.22380646838894788997, 0.22380646838894787427] for the
    first); and ``D_alpha`` at ``alpha = 1 + beta`` lost ``log2(1/beta)`` bits to a
    cancellation, so bisecting ``(1, a2]`` towards the KL limit made ``D_{a2}`` wider
    instead of narrower (a radius of 10^18 at ``beta = 10^-59``: not converged after 3,000
    steps)."""
    a = exactdp.Peeling([3, 2, 2, 0], 2, epsilon=1)
    assert counts_b in audit.neighbours([3, 2, 2, 0], "swap")
    z = audit.zcdp_rho(a, exactdp.Peeling(list(counts_b), 2, epsilon=1), dps=20)
    rho, alpha = _peeling_rho_twin([3, 2, 2, 0], list(counts_b), 2, 80)
    assert z.converged and (alpha > 1) == interior
    with mpmath.workdps(80):
        assert z.lower <= z.upper
        assert z.lower <= rho * (1 + mpmath.mpf(10) ** -40) and rho <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -20 * z.lower


@pytest.mark.slow
def test_thirty_digits_of_the_worst_peeling_swap_pair():
    """The worst swap pair above at ``dps = 30`` (about 5,000 steps)."""
    a = exactdp.Peeling([3, 2, 2, 0], 2, epsilon=1)
    z = audit.zcdp_rho(a, exactdp.Peeling([2, 3, 1, 1], 2, epsilon=1), dps=30)
    rho, _ = _peeling_rho_twin([3, 2, 2, 0], [2, 3, 1, 1], 2, 100)
    assert z.converged
    with mpmath.workdps(100):
        assert z.lower <= rho * (1 + mpmath.mpf(10) ** -60) and rho <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -30 * z.lower


def test_divergence_next_to_alpha_one_keeps_its_digits():
    """``D_alpha`` of a pair of Peeling mechanisms at ``alpha = 1 + 2^-e`` (e = 60, 100, 200),
    at the 40 working digits zcdp_rho uses for dps = 20, is certified to 20 digits: each
    term of ``h`` is computed as ``e^r expm1(beta r) - beta expm1(r)`` (``O(beta)``), not
    ``expm1(alpha r) - alpha expm1(r)`` (it had about 10 digits at e = 100, and was nan at
    e = 200)."""
    from exactdp._oracle.cells import pair_cells
    from exactdp._oracle.notions.renyi import _renyi_ball
    from exactdp.core.precision import flint_workprec, is_accurate, prec_for_dps
    a, b = exactdp.Peeling([3, 2, 2, 0], 2, epsilon=1), exactdp.Peeling([3, 3, 2, 1], 2, epsilon=1)
    pair = pair_cells(a, b, 20, 1000)
    P = {o: a.probability(o, dps=80) for o in a.outputs()}
    Q = {o: b.probability(o, dps=80) for o in b.outputs()}
    for e in (60, 100, 200):
        alpha = 1 + Fraction(1, 2**e)
        with flint_workprec(prec_for_dps(40, 40)):
            ball = _renyi_ball(pair.balls(40), pair.cells, alpha, pair.log_ratio_bounds())
            assert is_accurate(ball, 20), (e, ball)
        with mpmath.workdps(80 + e):
            al = 1 + mpmath.mpf(2) ** -e
            want = mpmath.log(mpmath.fsum(P[o] ** al * Q[o] ** (1 - al) for o in P)) / (al - 1)
            assert abs(mpmath.mpf(ball.mid().str(40, radius=False)) - want) <= mpmath.mpf(10) ** -20 * want
