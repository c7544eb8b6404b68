"""Tests of the foundation modules: ranking, levels, scale, precision, brute force, and a
mechanism written with the level hooks only."""

from __future__ import annotations

import pickle

import math
from collections import Counter
from fractions import Fraction

import gmpy2
import mpmath
import pytest
from flint import arb, ctx, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import errors
from exactdp.core import precision
from exactdp.core.bruteforce import brute_probabilities
from exactdp.core.levels import Level, check_levels
from exactdp.core.mechanism import make_scale
from exactdp.core.ranking import Ranking
from exactdp.core.scale import Scale
from exactdp.rules.exponential import ExponentialMechanism

from twins import ranks_of, tied_counts


# ======================================================================================
# Ranking
# ======================================================================================
def _assert_ranked_by_definition(r, counts):
    """Every attribute of the Ranking ``r`` of ``counts`` against its definition."""
    order, rank = ranks_of(counts)
    assert r.order == tuple(order) and r.rank_of == tuple(rank)
    assert r.sorted_counts == tuple(sorted(counts, reverse=True))
    assert r.values == tuple(sorted(set(counts), reverse=True))
    assert r.cumulative == tuple(sum(1 for c in counts if c >= v) for v in r.values)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(tied_counts(max_d=12))
def test_ranking_matches_definition(counts):
    r = Ranking(counts)
    _assert_ranked_by_definition(r, counts)
    assert r.d == len(counts)
    for t in set(counts) | {c + 1 for c in counts} | {c - 1 for c in counts}:
        assert r.at_least(t) == sum(1 for c in counts if c >= t)
        assert r.greater_than(t) == sum(1 for c in counts if c > t)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(tied_counts(max_d=40, values=st.one_of(st.integers(-3, 6), st.integers(-(2**61) - 2, -(2**61) + 3),
                                            st.integers(2**61 - 3, 2**61 + 2), st.integers(2**59 - 3, 2**59 + 3),
                                            st.integers(-10**6, 10**6))))
def test_ranking_int64_paths_match_definition(counts):
    """The int64 ranking (packed-key sort, or the stable argsort when the keys do not fit
    62 bits) against the definition, around its bound 2**61; its arrays hold the tuples'
    integers; a pickle rebuilds it."""
    r = Ranking(counts)
    _assert_ranked_by_definition(r, counts)
    fits = all(abs(c) < 2**61 for c in counts)
    assert (r.arrays is not None) == fits
    if fits:
        a = r.arrays
        assert tuple(a.order.tolist()) == r.order and tuple(a.sorted_counts.tolist()) == r.sorted_counts
        assert tuple(a.values.tolist()) == r.values and tuple(a.cumulative.tolist()) == r.cumulative
        assert a.neg.tolist() == [-c for c in r.sorted_counts]
    again = pickle.loads(pickle.dumps(r))
    assert again.order == r.order and again.counts == r.counts


def test_ranking_doc_example():
    r = Ranking((1, 5, 5, 0))
    assert r.order == (1, 2, 0, 3)
    assert r.sorted_counts == (5, 5, 1, 0)
    assert r.values == (5, 1, 0) and r.cumulative == (2, 3, 4)
    assert (r.at_least(1), r.greater_than(1)) == (3, 2)


# ======================================================================================
# Level / check_levels
# ======================================================================================
def test_level_and_check_levels():
    lv = Level(-1, 4)
    assert (lv.utility, lv.multiplicity) == (-1, 4) and tuple(lv) == (-1, 4)
    out = check_levels([Level(0, gmpy2.mpz(1)), Level(Fraction(-1, 2), 3)])
    assert out == (Level(0, 1), Level(Fraction(-1, 2), 3)) and type(out[0].multiplicity) is int
    with pytest.raises(AssertionError):
        check_levels([Level(0, 1), Level(0, 2)])
    with pytest.raises(AssertionError):
        check_levels([Level(-1, 1), Level(0, 2)])
    with pytest.raises(AssertionError):
        check_levels([Level(0, 0)])
    assert check_levels([]) == ()


# ======================================================================================
# make_scale
# ======================================================================================
def test_make_scale():
    assert make_scale(None, None, Fraction(2)) == Scale(epsilon=Fraction(1), divisor=Fraction(2))
    assert make_scale("0.5", None, Fraction(2)).lam == Fraction(1, 4)
    assert make_scale(None, "1/3", Fraction(2)).base == Fraction(1, 3)
    with pytest.raises(errors.InvalidParameterError, match="not both"):
        make_scale(1, Fraction(1, 2), Fraction(2))


# ======================================================================================
# precision
# ======================================================================================
def test_prec_for_dps():
    assert precision.prec_for_dps(30) == math.ceil(30 * math.log2(10)) + 24
    assert precision.prec_for_dps(30, extra_bits=10) == precision.prec_for_dps(30) + 10
    assert precision.prec_for_dps(30, extra_bits=-5) == precision.prec_for_dps(30)


def test_is_accurate():
    assert precision.is_accurate(arb(0), 50)  # exact zero
    assert precision.is_accurate(arb(3), 10**4)  # exact
    assert not precision.is_accurate(arb("inf"), 5)
    assert not precision.is_accurate(arb(0, 1), 1)  # contains 0
    assert precision.is_accurate(arb(1, 1e-5), 4)
    assert not precision.is_accurate(arb(1, 1e-5), 5)
    assert not precision.is_accurate(arb(-1, 0.5), 1)
    assert precision.is_accurate(arb(-1, 0.05), 1)


def test_ball_to_mpf_is_exact():
    with ctx.workprec(700):
        ball = arb(1) / 3
        man, exp = ball.mid().man_exp()
    x = precision.ball_to_mpf(ball)
    assert mpmath.mp.prec == 53
    with mpmath.workprec(1000):
        assert x == mpmath.mpf(int(man)) * mpmath.mpf(2) ** int(exp)
        assert abs(x - mpmath.mpf(1) / 3) < mpmath.mpf(2) ** -690


def test_times_int_is_exact():
    x = precision.ball_to_mpf(arb(1) / 3)
    n = 10**40 + 7
    got = precision.times_int(x, n)
    with mpmath.workprec(1000):
        assert got == mpmath.mpf(x) * n  # 53-bit mantissa times a 133-bit integer: exact at 1000 bits
    assert precision.times_int(x, 0) == 0


def test_rational_ball_encloses_exactly():
    assert precision.rational_ball(7).is_exact() and precision.rational_ball(Fraction(8, 4)).is_exact()
    with ctx.workprec(200):
        ball = precision.rational_ball(Fraction(-1, 3))
        assert ball.contains(arb(fmpq(-1, 3))) and ball.rad() < arb(2) ** -190
    big = 10**500 + 1  # far beyond the working precision, still exact
    assert precision.rational_ball(big).is_exact() and precision.rational_ball(big).mid().man_exp() == (big, 0)


@pytest.mark.parametrize("digits", [5, 30, 200])
def test_relative_ball_holds_every_value_within_the_bound(digits):
    """Every ``t`` with ``|x - t| <= 10**-digits |t|`` lies in the ball: check both ends."""
    with mpmath.workdps(digits + 20):
        x = mpmath.mpf(1) / 7
        eta = mpmath.mpf(10) ** -digits
        ends = [x / (1 + eta), x / (1 - eta)]  # |x - t| = eta |t| exactly at these t
    with ctx.workprec(4 * digits + 200):
        ball = precision.relative_ball(x, digits)
        for t in ends:
            assert ball.contains(arb(t))
    huge = mpmath.mpf(2) ** (10**30)  # arb(mpf) is exact at any exponent
    assert precision.relative_ball(huge, digits).mid() == arb(huge).mid()


def test_certify_doubles_until_accurate():
    """exp(pi + 2**-300) - exp(pi) cancels ~300 bits: the first attempt (157 bits for 40
    digits) cannot certify it, so certify must double the precision; the result is within
    relative 10**-40 of a 200-digit reference exp(pi) * expm1(2**-300)."""
    calls = []

    def compute():
        calls.append(ctx.prec)
        return (arb.pi() + arb(2) ** -300).exp() - arb.pi().exp()

    x = precision.certify(compute, 40)
    assert len(calls) >= 3 and calls == sorted(calls) and calls[0] == precision.prec_for_dps(40)
    assert all(b == 2 * a for a, b in zip(calls, calls[1:]))
    assert ctx.prec == 53 and mpmath.mp.prec == 53
    with mpmath.workdps(200):
        ref = mpmath.exp(mpmath.pi) * mpmath.expm1(mpmath.mpf(2) ** -300)
        assert abs(x - ref) <= abs(ref) * mpmath.mpf(10) ** -40


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 120), st.integers(1, 10**12), st.integers(1, 10**12))
def test_certify_relative_error_bound(dps, p, q):
    """certify(log(p/q) + sqrt(p)) is within relative 10**-dps of a 200-digit reference."""
    x = precision.certify(lambda: (arb(fmpq(p, q))).log() + arb(p).sqrt() + arb(1) / 7, dps)
    with mpmath.workdps(220):
        ref = mpmath.log(mpmath.mpf(p) / q) + mpmath.sqrt(p) + mpmath.mpf(1) / 7
        assert abs(x - ref) <= abs(ref) * mpmath.mpf(10) ** -dps


def test_certify_many_and_precision_error(monkeypatch):
    xs = precision.certify_many(lambda: [arb(1) / 3, arb(2).sqrt()], 25)
    with mpmath.workdps(60):
        assert abs(xs[0] - mpmath.mpf(1) / 3) <= mpmath.mpf(10) ** -25 / 3
        assert abs(xs[1] - mpmath.sqrt(2)) <= mpmath.sqrt(2) * mpmath.mpf(10) ** -25
    monkeypatch.setattr(precision, "MAX_PREC", 256)
    with pytest.raises(errors.PrecisionError, match="MAX_PREC|bits") as info:
        precision.certify(lambda: (arb(1) + arb(2) ** -400) - 1, 30)
    assert info.value.argument == "dps"
    assert ctx.prec == 53


# ======================================================================================
# Mechanism: a new mechanism written with the level hooks only
# ======================================================================================
class _TopOne(exactdp.Mechanism):
    """The exponential mechanism over single items with utility = count (k = 1): only the
    level hooks, the rule and the scale are given; every public method is inherited."""

    rule = ExponentialMechanism()

    def __init__(self, counts, base):
        super().__init__(counts, 1)
        self.scale = make_scale(None, base, Fraction(1))

    def _compute_levels(self):
        return [Level(v, m) for v, m in sorted(Counter(self.counts).items(), reverse=True)]

    def _utility(self, output):
        return self.counts[output[0]]

    def _unrank(self, a, r):
        v = self.table.utilities[a]
        return ([i for i, c in enumerate(self.counts) if c == v][r],)


def test_a_mechanism_from_the_level_hooks_gets_the_whole_api():
    m = _TopOne([3, 1, 1, 0], Fraction(1, 2))
    assert m.groups() == m.levels() == (Level(3, 1), Level(1, 2), Level(0, 1))
    brute = brute_probabilities([(i,) for i in range(4)], m.utility, m.scale)
    assert {o: m.probability_exact(o) for o in m.outputs()} == brute
    assert [m.group_index(o) for o in m.outputs()] == [0, 1, 1, 2]
    assert m.support_size() == 4 and m.samples(0) == [] and m.samples(5, rng=1) == m.samples(5, rng=1)
    assert repr(m) == "_TopOne([3, 1, 1, 0], k=1, base=1/2)" and m.epsilon is None and m.base == Fraction(1, 2)
    with mpmath.workdps(40):
        assert abs(sum(p for _, p in m.distribution(dps=30)) - 1) < mpmath.mpf(10) ** -29
