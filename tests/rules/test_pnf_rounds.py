"""Peeling's permute-and-flip probabilities by the backward polynomial recursion
(exactdp/rules/pnf_rounds.py) against brute force.

Twins (never calling the code under test): exact rationals by explicit rounds over items
(``peel_exact``: permute-and-flip among the remaining items, rational base), and, with
``epsilon``, each round's polynomial ``prod_{i != j} (1 - t p_i)`` expanded item by item in
mpmath at 80 digits and integrated term by term.  Exhaustive small instances (ties, k = 1,
k = d, d = 1, every sequence of distinct items), hypothesis instances, a cancellation-heavy
instance against the per-round quadrature route, and the fallback when the recursion
declines.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.rules import pnf_rounds
from exactdp.rules.pnf_rounds import peel_pnf_value

from twins import peel_exact, peel_pnf_mp


def _close(got, want, dps):
    with mpmath.workdps(dps + 30):
        return abs(got - want) <= mpmath.mpf(10) ** -dps * abs(want)


def _fast(m, values, dps, log):
    got = peel_pnf_value(m.ranking.values, m._mult, values, m.scale, dps, log, m._extra_bits)
    assert got is not None  # the control: the recursion answered (no fallback)
    return got


def _instances():
    for pool, top_d in (((0, 1, 2), 4), ((0, 4, 9), 3)):
        for d in range(1, top_d + 1):
            for counts in itertools.product(pool, repeat=d):
                for k in range(1, d + 1):
                    yield list(counts), k


@pytest.mark.slow
@pytest.mark.parametrize("base", [Fraction(1, 2), Fraction(5, 7)])
def test_exhaustive_against_exact_rationals(base):
    for counts, k in _instances():
        m = exactdp.Peeling(counts, k, base=base, noise="exponential")
        for seq, exact in peel_exact(counts, k, base, "exponential").items():
            values = tuple(counts[i] for i in seq)
            want = mpmath.fdiv(exact.numerator, exact.denominator, prec=300)
            p = _fast(m, values, 25, log=False)
            assert _close(p, want, 25), (counts, k, seq)
            with mpmath.workdps(60):
                assert _close(_fast(m, values, 25, log=True), mpmath.log(want), 25), (counts, k, seq)
            assert m.probability(seq, dps=25) == p  # the mechanism's value is the recursion's


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 60), min_size=1, max_size=8), st.data(),
       st.sampled_from([Fraction(1), Fraction(1, 7), Fraction(5), Fraction(40)]))
def test_random_against_expanded_polynomials(counts, data, eps):
    k = data.draw(st.integers(1, len(counts)))
    seq = tuple(data.draw(st.permutations(range(len(counts))))[:k])
    m = exactdp.Peeling(counts, k, epsilon=eps, noise="exponential")
    values = tuple(counts[i] for i in seq)
    # A log near 0 needs the digits of P's distance to 1, which can be as small as about
    # e^(-lam * 60) with lam <= 40 (10^-1043): 1,200 digits keep more than 150 of them
    # (300 did not: counts [16, 0], epsilon 40 leaves 1 - P = e^-640 / 2, 21 digits).
    with mpmath.workdps(1200):
        want = peel_pnf_mp(counts, seq, mpmath.mpf(eps.numerator) / (eps.denominator * k))
        assert _close(_fast(m, values, 30, log=False), want, 30)
        assert _close(_fast(m, values, 30, log=True), mpmath.log(want), 30)


@pytest.mark.slow
def test_cancellation_heavy_rounds_against_the_quadrature_route():
    """Slowly decaying weights (lam = 1/60: each round's polynomial sums to far less than
    its terms): the same certified digits as the per-round quadrature route."""
    counts, k = list(range(60)), 60
    m = exactdp.Peeling(counts, k, epsilon=1, noise="exponential")
    for seq in (tuple(range(59, -1, -1)), tuple(range(60)), tuple((7 * i) % 60 for i in range(60))):
        values = tuple(counts[i] for i in seq)
        for log in (False, True):
            fast = _fast(m, values, 30, log)
            slow = m._values_probability_rounds(values, 30, log=log)
            assert _close(fast, slow, 29), (seq[:3], log)


def test_huge_gaps_and_near_one():
    """A gap of 10**400 (every exponential far below a float) and a probability within
    e**-1000 of 1: the log keeps its relative accuracy (log1p of the complement)."""
    m = exactdp.Peeling([10**400, 3, 0], 2, epsilon=1, noise="exponential")
    with mpmath.workdps(60):
        p1 = mpmath.exp(mpmath.mpf(-3) / 2)
        want = mpmath.log(1 - p1 / 2)  # round 2 (counts 3, 0); round 1 is 1 - e**-huge
        assert _close(_fast(m, (10**400, 3), 30, log=True), want, 29)
    near = exactdp.Peeling([4000, 2000, 0], 1, epsilon=1, noise="exponential")
    with mpmath.workdps(1000):
        p = mpmath.exp(-2000)
        q = (p + p * p) / 2 - p * p * p / 3  # 1 - P(top) = (p_1 + p_2)/2 - p_1 p_2/3, p_2 = p_1**2
        assert _close(_fast(near, (4000,), 30, log=True), mpmath.log1p(-q), 30)


def test_declines_to_the_per_round_route(monkeypatch):
    """Past PEEL_PNF_MAX_GUARD the recursion declines and the mechanism answers by the
    per-round route: the same certified digits."""
    counts, k = [9, 7, 7, 4, 2, 1, 0], 3
    m = exactdp.Peeling(counts, k, epsilon=1, noise="exponential")
    want = [mpmath.nstr(m.probability(s, dps=25), 25) for s in ((0, 1, 2), (6, 5, 4))]
    monkeypatch.setattr(pnf_rounds, "PEEL_PNF_MAX_GUARD", 0)
    assert peel_pnf_value(m.ranking.values, m._mult, (9, 7, 7), m.scale, 25, False) is None
    fresh = exactdp.Peeling(counts, k, epsilon=1, noise="exponential")
    assert [mpmath.nstr(fresh.probability(s, dps=25), 25) for s in ((0, 1, 2), (6, 5, 4))] == want


def test_truncated_polynomials_against_the_quadrature_route(monkeypatch):
    """Many items of small total weight: only the first coefficients of each round's
    polynomial are formed (the control: fewer than the items), the rest bounded by
    ``S^J e^S / J!``; the same certified digits as the per-round quadrature route."""
    lengths = []
    original = pnf_rounds._length

    def spy(S, prec, items):
        got = original(S, prec, items)
        lengths.append((got, items))
        return got

    monkeypatch.setattr(pnf_rounds, "_length", spy)
    counts = [7 * i + (i % 3) for i in range(400)]
    m = exactdp.Peeling(counts, 4, epsilon=2, noise="exponential")
    for seq in ((399, 398, 397, 396), (0, 399, 200, 398), (5, 6, 7, 8)):
        values = tuple(counts[i] for i in seq)
        for log in (False, True):
            lengths.clear()
            fast = _fast(m, values, 30, log)
            assert lengths and all(n < items for n, items in lengths)  # truncated
            assert _close(fast, m._values_probability_rounds(values, 30, log=log), 29), (seq, log)


def test_the_dropped_coefficients_are_bounded(monkeypatch):
    """Keeping two coefficients only, the bound on the rest makes every ball too wide to
    certify: the recursion declines (a missing bound would return a wrong value)."""
    counts = [7 * i + (i % 3) for i in range(400)]
    m = exactdp.Peeling(counts, 4, epsilon=2, noise="exponential")
    values = (counts[399], counts[398], counts[397], counts[396])
    assert _fast(m, values, 30, False) is not None
    monkeypatch.setattr(pnf_rounds, "_length", lambda S, prec, items: 2)
    assert peel_pnf_value(m.ranking.values, m._mult, values, m.scale, 30, False, m._extra_bits) is None
