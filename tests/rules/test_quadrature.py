"""Tests of the certified integrals of exactdp.rules.quadrature (and its Gauss-Legendre).

``I_a = int_0^1 F(t) / (1 - t p_a) dt`` with ``F(t) = prod_b (1 - t p_b)^{m_b}``: for
dyadic ``p_b`` the exact rational value is an ``fmpq_poly`` integral, which every route's
ball must contain, with the caller's factor applied.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from flint import arb, ctx, fmpq, fmpq_poly

from exactdp.rules.gauss_legendre import dyadic_pieces
from exactdp.rules.quadrature import poly_integrals, quadrature_integrals

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


def test_dyadic_pieces_cover_the_range():
    pieces = dyadic_pieces(3)
    assert len(pieces) == 4
    assert all(a == x and b == y for (a, b), (x, y) in zip(pieces, [(0, 1), (1, 2), (2, 4), (4, 8)]))
