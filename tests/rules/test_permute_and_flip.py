"""Tests of the permute-and-flip selection rule (exactdp.rules.permute_and_flip) on level tables.

Independent references used here (none of them shares code with the rule):

- ``pnf_by_permutations``: the *definition* of permute-and-flip (McKenna & Sheldon 2020):
  visit the n outputs in a uniformly random order, accept ``o`` with probability ``p_o``.
  ``o`` is returned iff the outputs before it (a uniformly random subset ``R`` of the others
  of size r, with probability ``r!(n-1-r)!/n!`` for the size) all rejected, so
  ``P(o) = p_o sum_r r!(n-1-r)!/n! * e_r(1 - p_o' : o' != o)`` (elementary symmetric
  polynomials), exact with Fractions.
- ``rnm_exponential``: report-noisy-max with Exponential(lam) noise over all outputs,
  ``P(o) = int_{u_max}^inf lam e^{-lam(v-u_o)} prod_{o' != o} (1 - e^{-lam(v-u_o')}) dv``,
  integrated exactly in ``y = e^{-lam v}`` (base 1/2: ``e^{lam u} = 2^u``), a polynomial
  integral over ``[0, 2^{-u_max}]`` with Fractions.
- Arb's own adaptive integrator (``PermuteAndFlip("acb")``), and for huge multiplicities
  the exponential mechanism, which permute-and-flip matches to relative ``3/S``
  (``S = sum_b m_b p_b``): ``p_a/S (1 - 3/S) <= P_a <= p_a/(S - 1)``.

Goodness-of-fit tests use a fixed seed and a chi-square threshold at false-alarm
probability ``ALPHA = 1e-7`` each (the quantile is computed with mpmath's regularized upper
incomplete gamma); with fewer than 10 such tests in this file the probability that any of
them fails for a correct sampler is below ``1e-6``.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import mpmath
import pytest
import sympy

from exactdp.errors import NoClosedFormError
from exactdp.core.levels import Level
from exactdp.rules.permute_and_flip import (
    PNF_EXACT_SUPPORT_LIMIT,
    PNF_SYMBOLIC_SUPPORT_LIMIT,
    PermuteAndFlip,
)
from exactdp.core.scale import Scale
from exactdp.core.levels import LevelTable
from exactdp.rules.exponential import ExponentialMechanism
from twins import ALPHA, NoFloatRandom, _mp, chi2_quantile, chi2_stat, pnf_by_permutations, rel_err, rnm_exponential

PNF = PermuteAndFlip()


# ---------------------------------------------------------------------------------------
# independent references (over all outputs)
# ---------------------------------------------------------------------------------------
def expand(table):
    """The table's outputs as a flat list of utilities (one per output)."""
    return [u for u, m in table.levels for _ in range(m)]


def table_of(levels, base=None, epsilon=None, divisor=Fraction(2)):
    scale = Scale(base=Fraction(base)) if base is not None else Scale(epsilon=Fraction(epsilon), divisor=divisor)
    return LevelTable([Level(u, m) for u, m in levels], scale)


# ---------------------------------------------------------------------------------------
# the references agree with each other (so RNM = PNF is checked exactly, output by output)
# ---------------------------------------------------------------------------------------
def test_references_agree_rnm_equals_pnf():
    rng = random.Random(11)
    for _ in range(60):
        utils = [-rng.randrange(0, 6) for _ in range(rng.randint(1, 9))]
        u_max = max(utils)
        ps = [Fraction(1, 2) ** (u_max - u) for u in utils]
        a = pnf_by_permutations(ps)
        b = rnm_exponential(utils)
        assert a == b
        assert sum(a) == 1


# ---------------------------------------------------------------------------------------
# exact values
# ---------------------------------------------------------------------------------------
def test_module_example():
    t = table_of([(0, 1), (-1, 2)], base="1/2")
    assert PNF.output_probability_exact(t, 0) == sympy.Rational(7, 12)
    assert PNF.output_probability_exact(t, 1) == sympy.Rational(5, 24)


@pytest.mark.parametrize("base", ["1/2", "1/3", "2/3", "9/10"])
def test_exact_rational_matches_both_references(base):
    rng = random.Random(hash(base) % 1000)
    for _ in range(25):
        nl = rng.randint(1, 5)
        gaps = sorted(rng.sample(range(0, 8), nl))
        levels = [(-g, rng.randint(1, 4)) for g in gaps]
        t = table_of(levels, base=base)
        utils = expand(t)
        ps = [Fraction(base) ** (max(utils) - u) for u in utils]
        ref = pnf_by_permutations(ps)
        by_level = {}
        for u, p in zip(utils, ref):
            by_level.setdefault(u, set()).add(p)
        for a, (u, m) in enumerate(t.levels):
            assert len(by_level[u]) == 1  # every output of a level has one probability
            exact = PNF.output_probability_exact(t, a)
            assert isinstance(exact, sympy.Rational)
            assert Fraction(int(exact.p), int(exact.q)) == by_level[u].pop()
        if base == "1/2":
            rnm = rnm_exponential(utils)
            assert rnm == ref


def test_exact_single_output_and_single_level():
    assert PNF.output_probability_exact(table_of([(0, 1)], base="1/2"), 0) == 1
    assert PNF.output_probability_exact(table_of([(0, 7)], base="1/2"), 0) == sympy.Rational(1, 7)
    assert PNF.output_probability_exact(table_of([(0, 3)], epsilon=1), 0) == sympy.Rational(1, 3)


def test_symbolic_with_epsilon_and_fractional_gaps():
    t = table_of([(0, 1), (-4, 2), (-5, 3), (-9, 6)], epsilon=1)
    expr = PNF.output_probability_exact(t, 0)
    assert rel_err(PNF.output_probability(t, 0, 40), expr) <= mpmath.mpf(10) ** -40
    # fractional utility gaps with a rational base: z = base**(1/D)
    t2 = table_of([(0, 1), (Fraction(-1, 3), 2), (Fraction(-5, 2), 3)], base="1/2")
    total = sum(m * PNF.output_probability_exact(t2, a) for a, (_, m) in enumerate(t2.levels))
    assert abs(sympy.N(total, 50) - 1) < sympy.Float(10) ** -45
    for a in range(3):
        e = PNF.output_probability_exact(t2, a)
        assert rel_err(PNF.output_probability(t2, a, 30), e) <= mpmath.mpf(10) ** -30


def test_exact_limits_name_the_limit():
    big = table_of([(0, 1), (-1, PNF_EXACT_SUPPORT_LIMIT)], base="1/2")
    with pytest.raises(NoClosedFormError, match="PNF_EXACT_SUPPORT_LIMIT"):
        PNF.output_probability_exact(big, 0)
    huge_bits = table_of([(0, 1), (-10**6, 5000)], base="1/2")
    with pytest.raises(NoClosedFormError, match="PNF_EXACT_BITS_LIMIT"):
        PNF.output_probability_exact(huge_bits, 0)
    sym = table_of([(0, 1), (-1, PNF_SYMBOLIC_SUPPORT_LIMIT)], epsilon=1)
    with pytest.raises(NoClosedFormError, match="PNF_SYMBOLIC_SUPPORT_LIMIT"):
        PNF.output_probability_exact(sym, 0)
    with pytest.raises(NoClosedFormError, match="PNF_SYMBOLIC_DEGREE_LIMIT"):
        PNF.output_probability_exact(table_of([(0, 1), (-10**5, 1)], epsilon=1), 0)


def test_exact_single_level_is_uniform_at_any_support():
    """One level (all counts equal): every weight is 1 and permute-and-flip is uniform, so
    the exact value is 1/support however large, with or without a rational base (it was
    refused as "an irrational weight" past PNF_SYMBOLIC_SUPPORT_LIMIT)."""
    for m in (1, 2, PNF_SYMBOLIC_SUPPORT_LIMIT + 1, PNF_EXACT_SUPPORT_LIMIT + 1, 10**300):
        for kw in ({"epsilon": 1}, {"base": "1/2"}):
            assert PNF.output_probability_exact(table_of([(0, m)], **kw), 0) == sympy.Rational(1, m)
    import exactdp
    d = PNF_SYMBOLIC_SUPPORT_LIMIT + 50  # all counts equal: one level in every mechanism
    assert exactdp.PNFJoint([5] * d, 2, epsilon=1).probability_exact((0, 1)) == sympy.Rational(1, d * (d - 1))
    canonical = exactdp.Canonical([5] * d, 2, epsilon=1, noise="exponential")
    assert canonical.probability_exact(frozenset((0, 1))) == sympy.Rational(2, d * (d - 1))
    peeling = exactdp.Peeling([5] * d, 2, epsilon=1, noise="exponential")
    assert peeling.probability_exact((0, 1)) == sympy.Rational(1, d * (d - 1))


@pytest.mark.slow
def test_exact_rational_support_near_limit_is_feasible():
    """~900 outputs over 60 levels with base close to 1 (S ~ 800, every acceptance
    probability > 0.7: the regime where the moment expansion is slowest): exact == numeric."""
    levels = [(-i, 1 + (7 * i) % 30) for i in range(60)]
    t = table_of(levels, base="199/200")
    assert sum(t.multiplicities) > 800
    picks = (0, 1, 30, 59)
    exact = [PNF.output_probability_exact(t, a) for a in picks]
    for a, e in zip(picks, exact):
        assert rel_err(PNF.output_probability(t, a, 30), e) <= mpmath.mpf(10) ** -30


# ---------------------------------------------------------------------------------------
# certified numerics
# ---------------------------------------------------------------------------------------
def test_numeric_matches_exact_random_tables():
    rng = random.Random(5)
    for _ in range(40):
        nl = rng.randint(1, 8)
        gaps = sorted(rng.sample(range(0, 30), nl))
        levels = [(-g, rng.choice([1, 1, 2, 3, 5, 10, 40, 100])) for g in gaps]
        base = Fraction(rng.randint(1, 9), 10)
        t = table_of(levels, base=base)
        dps = rng.choice([15, 30, 50])
        for a in range(nl):
            e = PNF.output_probability_exact(t, a)
            assert rel_err(PNF.output_probability(t, a, dps), e) <= mpmath.mpf(10) ** -dps
        with mpmath.workdps(dps + 20):
            assert abs(sum(PNF.level_probabilities(t, dps)) - 1) <= 2 * mpmath.mpf(10) ** -dps


@pytest.mark.parametrize("method", ["direct", "acb"])
def test_auto_matches_independent_quadratures(method):
    """Moderate S (the regime where the moment expansion needs many terms): auto vs our
    Gauss-Legendre per level vs Arb's acb.integral per level."""
    other = PermuteAndFlip(method)
    rng = random.Random(7)
    for _ in range(6 if method == "acb" else 12):
        nl = rng.randint(2, 25 if method == "acb" else 60)
        us = sorted(rng.sample(range(0, 400), nl), reverse=True)
        mmax = rng.choice([1, 3, 1000, 10**30])
        levels = [(u - us[0], rng.randint(1, mmax)) for u in us]
        t = table_of(levels, epsilon=Fraction(rng.choice([1, 5, 20, 100]), 100))
        x = PNF.level_probabilities(t, 30)
        y = other.level_probabilities(t, 30)
        for a, b in zip(x, y):
            assert rel_err(a, b) <= 2 * mpmath.mpf(10) ** -30
        with mpmath.workdps(50):
            assert abs(sum(x) - 1) <= mpmath.mpf(10) ** -29


@pytest.mark.slow
def test_many_levels_moderate_S_auto_vs_direct():
    t = table_of([(-i, 1) for i in range(3000)], epsilon=Fraction(1, 100))
    x = PNF.level_probabilities(t, 30)
    y = PermuteAndFlip("direct").level_probabilities(t, 30)
    assert max(rel_err(a, b) for a, b in zip(x, y)) <= 2 * mpmath.mpf(10) ** -30
    with mpmath.workdps(50):
        assert abs(sum(x) - 1) <= mpmath.mpf(10) ** -29


def _huge_table(levels=10_000, seed=3):
    rng = random.Random(seed)
    return table_of([(-i, rng.randint(1, 10**1000)) for i in range(levels)], base="1/2")


@pytest.mark.slow
def test_huge_multiplicities_ten_thousand_levels():
    """m up to 10**1000 over 10**4 levels: certified, sums to 1, two precisions agree, and
    matches the exponential mechanism to relative 3/S (S > 10**900 here)."""
    t = _huge_table()
    p30 = PNF.level_probabilities(t, 30)
    p50 = PNF.level_probabilities(t, 50)
    em = ExponentialMechanism().level_probabilities(t, 40)
    with mpmath.workdps(70):
        assert abs(sum(p30) - 1) <= mpmath.mpf(10) ** -29
        assert abs(sum(p50) - 1) <= mpmath.mpf(10) ** -49
        for a, b, c in zip(p30, p50, em):
            assert abs(a - b) <= 2 * mpmath.mpf(10) ** -30 * b
            assert abs(c - b) <= 2 * mpmath.mpf(10) ** -40 * b
    # a single output's probability and its log
    pa = PNF.output_probability(t, 17, 30)
    with mpmath.workdps(60):
        assert abs(pa * t.multiplicities[17] - p50[17]) <= 2 * mpmath.mpf(10) ** -30 * p50[17]
        lg = PNF.output_log_probability(t, 17, 30)
        assert abs(lg - mpmath.log(pa)) <= mpmath.mpf(10) ** -28 * abs(lg)


def test_huge_multiplicities_direct_and_acb_agree():
    t = table_of([(0, 1), (-1, 10**400), (-700, 10**600), (-3000, 10**1000)], base="1/2")
    x = PNF.level_probabilities(t, 40)
    for method in ("direct", "acb"):
        y = PermuteAndFlip(method).level_probabilities(t, 40)
        assert max(rel_err(a, b) for a, b in zip(x, y)) <= 2 * mpmath.mpf(10) ** -40
    # top level with a huge multiplicity and p close to 1 on the next level
    t2 = table_of([(0, 10**1000), (-1, 10**999), (-2, 3)], epsilon=Fraction(1, 10**6))
    x = PNF.level_probabilities(t2, 30)
    y = PermuteAndFlip("acb").level_probabilities(t2, 30)
    assert max(rel_err(a, b) for a, b in zip(x, y)) <= 2 * mpmath.mpf(10) ** -30


def test_edge_tables():
    # one output
    t = table_of([(0, 1)], epsilon=1)
    assert PNF.output_probability(t, 0, 30) == 1 and PNF.output_log_probability(t, 0, 30) == 0
    # one level of many outputs: uniform
    t = table_of([(0, 10**1000)], base="1/2")
    assert rel_err(PNF.output_probability(t, 0, 30), sympy.Rational(1, 10**1000)) <= mpmath.mpf(10) ** -30
    # acceptance probabilities all within 1e-30 of 1: (almost) uniform
    t = table_of([(-i, 1) for i in range(5)], epsilon=Fraction(1, 10**30))
    for a in range(5):
        assert rel_err(PNF.output_probability(t, a, 20), Fraction(1, 5)) < mpmath.mpf(10) ** -20
    # probability extremely close to 1: the log keeps full relative accuracy
    t = table_of([(0, 1), (-200, 3)], base="1/2")
    exact = PNF.output_probability_exact(t, 0)
    with mpmath.workdps(200):
        ref = mpmath.log(_mp(exact))
    lg = PNF.output_log_probability(t, 0, 30)
    assert rel_err(lg, ref) <= mpmath.mpf(10) ** -30
    assert lg < 0 and abs(lg) < mpmath.mpf(10) ** -59


def test_no_global_precision_change():
    before = mpmath.mp.prec
    PNF.level_probabilities(table_of([(0, 1), (-1, 3)], epsilon=1), 60)
    assert mpmath.mp.prec == before


# ---------------------------------------------------------------------------------------
# the sampler (Algorithm 5)
# ---------------------------------------------------------------------------------------
def _gof(table, n, seed):
    probs = PNF.level_probabilities(table, 20)
    rng = NoFloatRandom(seed)
    draws = [PNF.sample_level(table, rng) for _ in range(n)]
    counts = [draws.count(a) for a in range(len(table))]
    stat = chi2_stat(counts, [float(p) for p in probs], n)
    return stat, chi2_quantile(len(table) - 1, ALPHA)


def test_sampler_goodness_of_fit_small():
    """(10,5,1,1), k=2, eps=1 levels; 20,000 draws; false alarm <= 1e-7."""
    t = table_of([(0, 1), (-4, 2), (-5, 3), (-9, 6)], epsilon=1)
    stat, threshold = _gof(t, 20_000, seed=2024)
    assert stat < threshold


def test_sampler_goodness_of_fit_huge_multiplicities():
    """Multiplicities ~10**1000 arranged so that the level probabilities are balanced."""
    t = table_of(
        [(0, 10**1000), (-3322, 10**1000 * 2**3322 // 3), (-6000, 10**1000 * 2**6000 // 2), (-10**6, 10**1500)],
        base="1/2",
    )
    probs = PNF.level_probabilities(t, 20)
    assert all(p > 0.05 for p in probs[:3])
    rng = NoFloatRandom(99)
    n = 6000
    draws = [PNF.sample_level(t, rng) for _ in range(n)]
    counts = [draws.count(a) for a in range(3)]
    assert draws.count(3) == 0  # probability ~ 2**-10**6
    stat = chi2_stat(counts, [float(p) for p in probs[:3]], n)
    assert stat < chi2_quantile(2, ALPHA)


def test_sampler_goodness_of_fit_moderate_S():
    """Many levels with acceptance probabilities near 1 (eps = 0.05); 8,000 draws, levels
    grouped into 6 bins of roughly equal probability."""
    t = table_of([(-i, 1 + i % 4) for i in range(40)], epsilon=Fraction(1, 20))
    probs = [float(p) for p in PNF.level_probabilities(t, 20)]
    acc, edges = 0.0, []
    for a, p in enumerate(probs):
        acc += p
        if acc >= (len(edges) + 1) / 6 - 1e-12 and len(edges) < 5:
            edges.append(a)
    edges.append(len(probs) - 1)
    rng = NoFloatRandom(7)
    n = 8000
    draws = [PNF.sample_level(t, rng) for _ in range(n)]
    lo = 0
    counts, ps = [], []
    for e in edges:
        counts.append(sum(1 for d in draws if lo <= d <= e))
        ps.append(sum(probs[lo : e + 1]))
        lo = e + 1
    assert chi2_stat(counts, ps, n) < chi2_quantile(len(edges) - 1, ALPHA)


def test_sampler_reproducible_and_integer_only():
    t = table_of([(0, 1), (-1, 5), (-2, 10**50)], epsilon=1)
    a = [PNF.sample_level(t, random.Random(5)) for _ in range(3)]
    b = [PNF.sample_level(t, random.Random(5)) for _ in range(3)]
    assert a == b
    r1, r2 = NoFloatRandom(8), NoFloatRandom(8)
    assert [PNF.sample_level(t, r1) for _ in range(50)] == [PNF.sample_level(t, r2) for _ in range(50)]
    assert PNF.sample_level(table_of([(0, 3)], epsilon=1), NoFloatRandom(1)) == 0


def test_sampler_many_huge_levels_runs():
    t = _huge_table(levels=2000, seed=4)
    rng = NoFloatRandom(3)
    draws = [PNF.sample_level(t, rng) for _ in range(3)]
    assert all(0 <= d < 2000 for d in draws)


def test_repr():
    assert repr(PermuteAndFlip()) == "PermuteAndFlip()"
    assert repr(PermuteAndFlip("acb")) == "PermuteAndFlip(method='acb')"
    with pytest.raises(ValueError):
        PermuteAndFlip("quad")


# ---------------------------------------------------------------------------------------
# extreme scales: planning never overflows; values against closed forms
# ---------------------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactdp.errors import InvalidParameterError, PrecisionError
from exactdp.rules.permute_and_flip import PNF_POLY_SUPPORT_LIMIT
from exactdp.core.precision import ball_to_mpf, flint_workprec


def _three_output_closed_form(p1, p2):
    """Permute-and-flip over three outputs with acceptance probabilities 1, p1, p2:
    ``P(o) = p_o int_0^1 prod_{o' != o} (1 - t p_o') dt``."""
    return [1 - (p1 + p2) / 2 + p1 * p2 / 3, p1 * (3 - p2) / 6, p2 * (3 - p1) / 6]


_gap = st.one_of(st.integers(1, 3), st.integers(0, 300).map(lambda j: 10**j))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(e=st.integers(-400, 400), g1=_gap, g2=_gap, seed=st.integers(0, 2**32))
def test_extreme_epsilon_and_gaps_match_closed_form(e, g1, g2, seed):
    """epsilon from 1e-400 to 1e400 (exact Fractions), gaps up to 10**300: no raw
    exception, every probability certified against the closed form (computed in arb at a
    precision covering |ln p|), and the sampler returns the top level when the others
    have probability below 1e-30."""
    eps = Fraction(10) ** e
    t = table_of([(0, 1), (-g1, 1), (-g1 - g2, 1)], epsilon=eps, divisor=Fraction(1))
    dps = 20
    big = eps * (g1 + g2)  # |ln p2|: the reference needs that many more bits
    with flint_workprec(max(0, big.numerator.bit_length() - big.denominator.bit_length()) + 300):
        from flint import arb, fmpq

        lam = arb(fmpq(eps.numerator, eps.denominator))
        p1, p2 = (-(lam * g1)).exp(), (-(lam * (g1 + g2))).exp()
        balls = _three_output_closed_form(p1, p2)
        assert all(x.rel_accuracy_bits() > 150 for x in balls)
        refs = [ball_to_mpf(x) for x in balls]
        top_sure = bool(p1 < arb(10) ** -30)
    got = PNF.level_probabilities(t, dps)
    for a in range(3):
        assert rel_err(got[a], refs[a]) <= 2 * mpmath.mpf(10) ** -dps
        assert rel_err(PNF.output_probability(t, a, dps), refs[a]) <= 2 * mpmath.mpf(10) ** -dps
    with mpmath.workdps(40):
        lg = PNF.output_log_probability(t, 2, dps)
        assert abs(lg - mpmath.log(refs[2])) <= 2 * mpmath.mpf(10) ** -dps * abs(lg) + mpmath.mpf(10) ** -38
    level = PNF.sample_level(t, random.Random(seed))
    assert level in (0, 1, 2)
    if top_sure:
        assert level == 0


@settings(max_examples=25, deadline=None)
@given(e=st.integers(1, 400), near_one=st.booleans(), g1=st.integers(1, 3), g2=st.integers(1, 3),
       seed=st.integers(0, 2**32))
def test_extreme_base_matches_exact(e, near_one, g1, g2, seed):
    """base = 10**-e or 1 - 10**-e (e up to 400): certified values equal the exact
    rationals of the closed form and of probability_exact."""
    base = 1 - Fraction(1, 10**e) if near_one else Fraction(1, 10**e)
    t = table_of([(0, 1), (-g1, 1), (-g1 - g2, 1)], base=base)
    refs = _three_output_closed_form(base**g1, base ** (g1 + g2))
    got = PNF.level_probabilities(t, 25)
    for a in range(3):
        assert rel_err(got[a], refs[a]) <= 2 * mpmath.mpf(10) ** -25
        assert PNF.output_probability_exact(t, a) == sympy.Rational(refs[a].numerator, refs[a].denominator)
    level = PNF.sample_level(t, random.Random(seed))
    assert level in (0, 1, 2)
    if not near_one and e >= 30:
        assert level == 0


@pytest.mark.parametrize(
    "levels, kwargs",
    [
        ([(0, 1), (-(10**400), 1)], dict(epsilon=1)),
        ([(0, 1), (-1, 1), (-3, 1)], dict(epsilon=10**400)),
        ([(0, 1), (-1, 2), (-3, 1)], dict(base=Fraction(1, 10**400))),
        ([(0, 3), (-(10**400), 10**400)], dict(epsilon=Fraction(1, 10**400))),
    ],
)
def test_extreme_inputs_every_method(levels, kwargs):
    """The reported overflow / math-domain inputs, through every method and the sampler,
    for every route (auto, poly, direct): values agree, level probabilities sum to 1."""
    t = table_of(levels, divisor=Fraction(1), **kwargs)
    ref = PermuteAndFlip("poly").level_probabilities(t, 20) if sum(t.multiplicities) <= PNF_POLY_SUPPORT_LIMIT else None
    for method in ("auto", "direct"):
        rule = PermuteAndFlip(method)
        got = rule.level_probabilities(t, 20)
        with mpmath.workdps(40):
            assert abs(sum(got) - 1) <= mpmath.mpf(10) ** -19
        if ref is not None:
            assert max(rel_err(a, b) for a, b in zip(got, ref)) <= 2 * mpmath.mpf(10) ** -20
        for a in range(len(t)):
            assert rule.output_probability(t, a, 20) > 0
            assert rule.output_log_probability(t, a, 20) <= 0
    assert PNF.sample_level(t, random.Random(1)) in range(len(t))


# ---------------------------------------------------------------------------------------
# the polynomial route: twins and high precision
# ---------------------------------------------------------------------------------------
POLY = PermuteAndFlip("poly")


def test_poly_exhaustive_small_tables_equal_exact():
    """Every table with <= 3 levels, gaps 1..2 and multiplicities 1..3, bases 1/2 and 2/3:
    the polynomial route matches the exact rational to 10**-40."""
    for base in ("1/2", "2/3"):
        for n in (1, 2, 3):
            for gaps in itertools.product((1, 2), repeat=n - 1):
                us = [0]
                for g in gaps:
                    us.append(us[-1] - g)
                for mults in itertools.product((1, 2, 3), repeat=n):
                    t = table_of(list(zip(us, mults)), base=base)
                    got = POLY.level_probabilities(t, 40)
                    for a in range(n):
                        exact = PNF.output_probability_exact(t, a) * mults[a]
                        assert rel_err(got[a], exact) <= mpmath.mpf(10) ** -40


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 30)), min_size=1, max_size=8),
       st.sampled_from([Fraction(1, 100), Fraction(1, 3), Fraction(2), Fraction(9)]))
def test_poly_matches_quadrature_random(spec, eps):
    """Random tables (support <= 240): poly vs our Gauss-Legendre quadrature per level."""
    us, levels = 0, []
    for gap, m in spec:
        levels.append((us, m))
        us -= gap
    t = table_of(levels, epsilon=eps)
    x = POLY.level_probabilities(t, 30)
    y = PermuteAndFlip("direct").level_probabilities(t, 30)
    assert max(rel_err(a, b) for a, b in zip(x, y)) <= 2 * mpmath.mpf(10) ** -30


@pytest.mark.parametrize("dps", [1000, 3000, 20000])
def test_high_dps_small_support_equals_exact(dps):
    """Five levels, twelve outputs (PNFJoint([5, 3, 2, 0], 2)'s levels) at a rational base:
    certified to relative 10**-dps against the exact rational, at high dps."""
    t = table_of([(0, 1), (-1, 1), (-2, 2), (-3, 5), (-5, 3)], base="1/2")
    got = PNF.level_probabilities(t, dps)
    for a in range(len(t)):
        exact = PNF.output_probability_exact(t, a) * t.multiplicities[a]
        with mpmath.workdps(dps + 20):
            x = _mp(exact)
            assert abs(got[a] - x) <= mpmath.mpf(10) ** -dps * x
    assert rel_err(PNF.output_probability(t, 3, dps), PNF.output_probability_exact(t, 3)) <= mpmath.mpf(10) ** -70


def test_quadrature_dps_limit_named():
    """Past PNF_QUADRATURE_MAX_DPS the quadrature route refuses at once with the limit's
    name; the polynomial route does not."""
    from exactdp.rules import permute_and_flip as pf

    big = table_of([(0, 1), (-1, PNF_POLY_SUPPORT_LIMIT)], epsilon=1)
    small = table_of([(0, 1), (-1, 2)], epsilon=1)
    for rule, t in ((PNF, big), (PermuteAndFlip("direct"), small), (PermuteAndFlip("acb"), small)):
        for call in (lambda: rule.level_probabilities(t, pf.PNF_QUADRATURE_MAX_DPS + 1),
                     lambda: rule.output_probability(t, 0, pf.PNF_QUADRATURE_MAX_DPS + 1),
                     lambda: rule.output_log_probability(t, 0, pf.PNF_QUADRATURE_MAX_DPS + 1)):
            with pytest.raises(PrecisionError, match="PNF_QUADRATURE_MAX_DPS") as info:
                call()
            assert info.value.argument == "dps"
    assert PNF.level_probabilities(small, pf.PNF_QUADRATURE_MAX_DPS + 1)[0] > 0
    with pytest.raises(InvalidParameterError, match="PNF_POLY_SUPPORT_LIMIT"):
        POLY.level_probabilities(big, 20)


@pytest.mark.parametrize("mult", [3, 2000])
def test_astronomically_small_weight_no_precision_escalation(mult):
    """p_1 = exp(-10**4000) (support 2001: the quadrature route; 4: the polynomial route):
    P(one output of level 1) = p_1 * int_0^1 (1 - t)(1 - t p_1)^(m-1) dt = p_1 / 2 up to a
    relative p_1 m, so log P = -10**4000 - ln 2.  (This used to drive the quadrature to
    13,000 bits: minutes; now only p_1 is recomputed with the extra bits.)"""
    t = table_of([(0, 1), (-(10**4000), mult)], epsilon=1, divisor=Fraction(1))
    lg = PNF.output_log_probability(t, 1, 25)
    with mpmath.workdps(4100):
        ref = -mpmath.mpf(10) ** 4000 - mpmath.log(2)
        assert abs(lg - ref) <= mpmath.mpf(10) ** -25 * abs(ref)
        p = PNF.output_probability(t, 1, 25)
        assert abs(p - mpmath.exp(ref)) <= 2 * mpmath.mpf(10) ** -25 * mpmath.exp(ref)
    levels = PNF.level_probabilities(t, 25)
    with mpmath.workdps(40):
        assert abs(sum(levels) - 1) <= mpmath.mpf(10) ** -24
