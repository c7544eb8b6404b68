"""Tests of exactdp.rules.quadrature_stream: the quadrature route over levels read in blocks.

The shared values come from one pass over the levels; the bounds that let the pass skip
work (a level's power-sum terms dropped from some power on; the levels after a block
table's running sum stopped, bounded by its tail ``T``) are checked on constructed
instances against exact rationals, each with a negative control: the same computation
with the bound halved (or left out) no longer encloses the exact value.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from flint import arb, ctx, fmpq, fmpq_poly

from exactdp.rules.quadrature import PowerSums
from exactdp.rules.quadrature_stream import StreamedQuadrature


def _q(x: Fraction) -> arb:
    return arb(fmpq(x.numerator, x.denominator))


def _exact_integrals(levels):
    """``I_a = int_0^1 prod_b (1 - t p_b)^(m_b - [b = a]) dt`` exactly, for rational ``p_b``:
    each level's polynomial formed without the factor (no division), integrated exactly."""
    out = []
    for a in range(len(levels)):
        G = fmpq_poly([1])
        for b, (pb, m) in enumerate(levels):
            G *= fmpq_poly([1, -fmpq(pb.numerator, pb.denominator)]) ** (m - (a == b))
        out.append(G.integral()(1))
    return out


class _Halved(PowerSums):
    """:class:`PowerSums` whose dropped-term bounds are halved (a wrong bound)."""

    def add(self, w, p):
        before = list(self.dropped)
        super().add(w, p)
        self.dropped = [b + (d - b) / 2 for b, d in zip(before, self.dropped)]


@pytest.mark.parametrize("cls, ok", [(PowerSums, True), (_Halved, False)])
def test_dropped_terms_bound_every_later_power(cls, ok):
    """A level stops at the first term below ``thr`` and bounds every later power by it:
    with ``p`` just below 1 the bound is nearly attained, so halving it loses the value."""
    with ctx.workprec(128):
        p2 = 1 - arb(2) ** -20
        sums = cls(4, arb(1))
        sums.add(arb(4), arb(0.5))
        sums.add(arb(0.5), p2)  # below thr at once: its powers 2..4 are bounded by 0.5
        got = sums.totals(4)
        want = [4 * arb(0.5) ** j + arb(0.5) * p2**j for j in range(4)]
        assert all(g.contains(x) for g, x in zip(got, want)) is ok
        assert got[0].contains(want[0])  # the first power is always summed


@pytest.mark.parametrize("factor, ok", [(1, True), (Fraction(1, 2), False)])
def test_tail_of_levels_not_visited(factor, ok):
    """``totals(tail=T)`` adds ``[0, T]`` for levels whose weights sum to at most ``T``."""
    with ctx.workprec(128):
        sums = PowerSums(3, arb(0))
        sums.add(arb(1), arb(0.25))
        skipped = [(arb(2) ** -10, 1 - arb(2) ** -30), (arb(2) ** -11, 1 - arb(2) ** -30)]
        T = sum((w for w, _ in skipped), arb(0))
        got = sums.totals(3, tail=T * _q(Fraction(factor)))
        want = [arb(0.25) ** j + sum((w * p**j for w, p in skipped), arb(0)) for j in range(3)]
        assert all(g.contains(x) for g, x in zip(got, want)) is ok


LEVELS = [(Fraction(1), 1), (Fraction(1, 2), 2), (Fraction(1, 4), 3), (Fraction(1, 2**20), 2**10),
          (Fraction(1, 2**22), 2**11), (Fraction(1, 2**40), 3)]
BLOCKS = [(0, 2), (2, 3), (3, 5), (5, 6)]


def _quadrature(summed, tail_factor=Fraction(1), method="auto"):
    p = [_q(x) for x, _ in LEVELS]
    w = [m * x for x, (_, m) in zip(p, LEVELS)]
    lnp = [float(x.log().mid()) for x in p]
    S = sum(w, arb(0))
    if summed is not None:
        n, _ = summed
        T = sum(w[BLOCKS[n][0]:], arb(0))
        summed = (n, T * _q(tail_factor))
    reads = []

    def block(b):
        reads.append(b)
        lo, hi = BLOCKS[b]
        return lnp[lo:hi], p[lo:hi], w[lo:hi]

    quad = StreamedQuadrature(S, BLOCKS, block, lambda a: LEVELS[a][1], method, summed)
    return [quad.integral(a, lnp[a], p[a]) for a in range(len(LEVELS))], reads


@pytest.mark.slow
@pytest.mark.parametrize("summed", [None, (3, None), (2, None)])
def test_stopped_pass_encloses_the_exact_integrals(summed):
    """The pass over the first blocks only (the rest bounded by ``T``) still encloses every
    exact ``I_a`` and reads only those blocks; with every block read the balls are tight (a
    stopped pass is as wide as its ``T``, here far from negligible on purpose)."""
    exact = _exact_integrals(LEVELS)
    with ctx.workprec(100):
        got, reads = _quadrature(summed)
    n = len(BLOCKS) if summed is None else summed[0]
    assert reads == list(range(n))
    with ctx.workprec(300):
        for g, x in zip(got, exact):
            assert g.contains(arb(x))
            assert g.rad() < arb(x) * arb(2) ** (-80 if summed is None else -8)


@pytest.mark.slow
def test_stopped_pass_with_the_tail_halved_misses():
    """Negative control: the levels not visited weigh ``2**-10``; a tail bound of half that
    makes ``F`` too large and some ``I_a`` no longer encloses its exact value."""
    exact = _exact_integrals(LEVELS)
    with ctx.workprec(100):
        got, _ = _quadrature((2, None), Fraction(1, 2))
    with ctx.workprec(300):
        assert not all(g.contains(arb(x)) for g, x in zip(got, exact))


def test_values_do_not_depend_on_the_blocks():
    """One block or four: the same balls (levels are summed in the same order)."""
    p = [_q(x) for x, _ in LEVELS]
    w = [m * x for x, (_, m) in zip(p, LEVELS)]
    lnp = [float(x.log().mid()) for x in p]
    with ctx.workprec(100):
        S = sum(w, arb(0))
        one = StreamedQuadrature(S, [(0, 6)], lambda b: (lnp, p, w), lambda a: LEVELS[a][1])
        many, _ = _quadrature(None)
        for a in reversed(range(6)):  # in any order
            x = one.integral(a, lnp[a], p[a])
            assert x.mid() == many[a].mid() and x.rad() == many[a].rad()
