"""Tests of the certified integrals of exactdp.rules.quadrature (and its Gauss-Legendre).

Power sums, tail bounds, and the fast path against the slow one; ``I_a = int_0^1 F(t) / (1 - t p_a) dt`` with ``F(t) = prod_b (1 - t p_b)^{m_b}``: for
dyadic ``p_b`` the exact rational value is an ``fmpq_poly`` integral, which every route's
ball must contain, with the caller's factor applied.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import pytest
from flint import arb, ctx, fmpq, fmpq_poly

from exactdp.core.levels import Level, LevelTable
from exactdp.core.scale import Scale
from exactdp.rules.permute_and_flip import PermuteAndFlip
from exactdp.rules.quadrature import PowerSums, poly_integrals, tail_factor
from exactdp.rules.quadrature_stream import quadrature_integrals
from twins import rel_err

# levels (p_b, m_b), p_0 = 1 and p decreasing, as permute-and-flip builds them
TABLES = [
    [(Fraction(1), 1), (Fraction(1, 2), 2), (Fraction(1, 8), 5)],
    [(Fraction(1), 2), (Fraction(1, 4), 30), (Fraction(1, 1024), 200)],
]


def exact_integrals(levels):
    F = fmpq_poly([1])
    for pb, m in levels:
        F *= fmpq_poly([1, -fmpq(pb.numerator, pb.denominator)]) ** m
    out = []
    for pa, _ in levels:
        G, rem = divmod(F, fmpq_poly([1, -fmpq(pa.numerator, pa.denominator)]))
        assert rem == 0
        out.append(G.integral()(1))
    return out


def balls(levels):
    p = [arb(fmpq(pb.numerator, pb.denominator)) for pb, _ in levels]
    mult = [m for _, m in levels]
    w = [m * pb for pb, m in zip(p, mult)]
    lnp = [float(arb(fmpq(pb.numerator, pb.denominator)).log().mid()) for pb, _ in levels]
    return p, mult, w, sum(w, arb(0)), lnp


@pytest.mark.parametrize("levels", TABLES)
def test_every_route_encloses_the_exact_integrals(levels):
    factor = [arb(3) ** a for a in range(len(levels))]  # the caller's factor, applied per level
    with ctx.workprec(600):  # references far tighter than the balls under test
        refs = [f * arb(x) for f, x in zip(factor, exact_integrals(levels))]
    with ctx.workprec(120):
        p, mult, w, S, lnp = balls(levels)
        got = {"poly": poly_integrals(p, mult, S, factor.__getitem__)[0]}
        for method in ("auto", "direct", "acb"):
            got[method] = quadrature_integrals(p, mult, w, S, lnp, factor.__getitem__, method)
        for method, values in got.items():
            for a, (value, ref) in enumerate(zip(values, refs)):
                assert value.overlaps(ref), (method, a)
                assert value.rad() < value.mid().abs_upper() * arb(2) ** -80, (method, a)


def test_poly_route_returns_level_totals():
    levels = TABLES[0]
    with ctx.workprec(80):
        p, mult, _, S, _ = balls(levels)
        per_output, per_level = poly_integrals(p, mult, S, lambda a: arb(1))
        for m, one, total in zip(mult, per_output, per_level):
            assert total.overlaps(m * one)


def _power_sums(w, p, J, prec):
    """``P_1..P_J`` by :class:`PowerSums`, level by level, with the cut at ``2**-(prec+40) P_1``."""
    sums = PowerSums(J, sum(w, arb(0)).upper() * arb(2) ** (-prec - 40))
    for x, y in zip(w, p):
        sums.add(x, y)
    return sums.totals(J)


class _NoCut(PowerSums):
    """:class:`PowerSums` that never drops a term (the slow path's reference)."""

    def __init__(self, J, thr):
        super().__init__(J, arb(0))


def _naive_power_sums(w, p, J, prec):
    """Reference for ``PowerSums``: every term at every power, nothing dropped."""
    terms, out = list(w), [sum(w, arb(0))]
    for _ in range(2, J + 1):
        terms = [x * y for x, y in zip(terms, p)]
        out.append(sum(terms, arb(0)))
    return out


def _tiny_tail_lists(n, seed):
    """``(w, p)`` as pnf_enclosures builds them (``w_b = m_b p_b``, ``p`` decreasing):
    ``p_b = exp(-g_b)`` with rational gaps reaching ~10**4 and multiplicities up to 10**300
    in no particular order, so most ``p_b`` are astronomically small and ``w_b p_b^j`` is
    not monotone in ``b``."""
    rng = random.Random(seed)
    gaps = sorted(Fraction(rng.randint(1, 2 * n * 10), 7) for _ in range(n))
    p = [(-arb(fmpq(g.numerator, g.denominator))).exp() for g in gaps]
    w = [arb(rng.choice([1, 3, rng.randint(1, 10**300)])) * x for x in p]
    return w, p


def test_power_sums_dropping_matches_naive_sums():
    """The cut of tiny trailing terms (one slice per power) is rigorous: the enclosures of
    ``_power_sums`` at ``prec`` contain the naive sums computed at 4x the precision and are
    tight (radius below ``2**-(prec-16) P_1``, the rounding of the sums)."""
    for seed, n, J, prec in [(1, 2000, 30, 140), (2, 500, 60, 300), (3, 50, 5, 64)]:
        with ctx.workprec(4 * prec):
            w, p = _tiny_tail_lists(n, seed)
            ref = _naive_power_sums(w, p, J, 4 * prec)
        with ctx.workprec(prec):
            w, p = _tiny_tail_lists(n, seed)
            got = _power_sums(w, p, J, prec)
            assert len(got) == J
            tol = got[0].upper() * arb(2) ** (-prec + 16)  # rounding of ~2^11 terms dominates
            for g, r in zip(got, ref):
                assert g.contains(r)
                assert g.rad() < tol
    # p_0 > 1 (never produced by pnf_enclosures): later powers grow, nothing may be dropped
    with ctx.workprec(64):
        got = _power_sums([arb(1), arb(2) ** -200], [arb(2) ** 10, arb(2) ** 10], 30, 64)
    with ctx.workprec(1000):
        for j, g in enumerate(got):
            assert g.contains(arb(2) ** (10 * j) * (1 + arb(2) ** -200))


def test_power_sums_many_tiny_levels():
    """10**5 levels, nearly all below the drop threshold, stay enclosed and tight.
    (Speed is measured in benchmarks/bench_canonical.py, not asserted here.)"""
    with ctx.workprec(140):
        p = [arb(2) ** -(i // 5) for i in range(100_000)]
        w = [arb(10**100) * x for x in p]
        got = _power_sums(w, p, 29, 140)
    with ctx.workprec(400):  # P_2 = 10**100 * 5 * sum_{k < 20000} 4**-k
        ref = arb(10**100) * 5 * (1 - arb(4) ** -20000) * 4 / 3
    assert got[1].contains(ref) and got[1].rad() < ref * arb(2) ** -100


def test_shared_tail_factor_is_monotone():
    """The tail factor min(B_1, B_2) is reused for later (smaller-p) levels with the same N:
    it must not increase as p decreases."""
    with ctx.workprec(100):
        fact = [arb(math.factorial(k)) for k in range(40)]
        for S in (arb(1), arb("1.5"), arb(3), arb(10) ** 50):
            for N in (0, 1, 5, 30):
                ps = [arb(1)] + [arb(2) ** -k for k in range(1, 200, 7)]
                vals = [tail_factor(x, N, S, fact) for x in ps]
                known = [v for v in vals if v is not None]
                assert all(not (b > a) for a, b in zip(known, known[1:]))


@pytest.mark.slow
def test_many_tiny_levels_table_matches_slow_path(monkeypatch):
    """Canonical-like table: half-integer gaps, ~3,000 levels, most with astronomically
    small p_b and multiplicities up to 10**200.  Certified results of the fast path (power
    sums with the cut, shared tail factors) agree to 10**-dps, at two precisions, with the
    slow path: every level integrated directly (no moment expansion, so no tail factors)
    with naive power sums (nothing dropped)."""
    import exactdp.rules.quadrature_stream as quadrature_stream

    rng = random.Random(11)
    us = sorted({Fraction(-rng.randint(1, 60_000), 2) for _ in range(3000)}, reverse=True)
    levels = [(0, 1)] + [(u, rng.choice([1, 2, rng.randint(1, 10**200)])) for u in us]

    def fresh():
        return LevelTable([Level(u, m) for u, m in levels], Scale(epsilon=Fraction(1), divisor=Fraction(1)))

    fast = {dps: PermuteAndFlip().level_probabilities(fresh(), dps) for dps in (30, 60)}
    monkeypatch.setattr(quadrature_stream, "PowerSums", _NoCut)
    for dps in (30, 60):
        slow = PermuteAndFlip("direct").level_probabilities(fresh(), dps)
        assert max(rel_err(a, b) for a, b in zip(fast[dps], slow)) <= 2 * mpmath.mpf(10) ** -dps
        with mpmath.workdps(dps + 20):
            assert abs(sum(fast[dps]) - 1) <= mpmath.mpf(10) ** -(dps - 1)
