"""Tests of the foundation modules: validation, errors, ranking, levels, scale, precision,
brute force, LevelTable / ExponentialMechanism on hand-made tables, and the documented
limits of ``probability_exact`` (NoClosedFormError)."""

from __future__ import annotations

import decimal
import math
import random
from collections import Counter
from fractions import Fraction
from itertools import permutations

import gmpy2
import mpmath
import numpy as np
import pytest
import sympy
from flint import arb, ctx, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import errors
from exactdp.core import precision, validation
from exactdp.rules import exponential
from exactdp.core.bruteforce import brute_levels, brute_probabilities, brute_symbolic_probabilities
from exactdp.core.levels import Level, check_levels
from exactdp.core.mechanism import make_scale
from exactdp.core.ranking import Ranking
from exactdp.core.scale import Scale
from exactdp.core.levels import LevelTable
from exactdp.core.selection import SelectionRule
from exactdp.rules.exponential import ExponentialMechanism
from exactdp.core.validation import (
    DEFAULT_DPS,
    MAX_NUMBER_DIGITS,
    as_base,
    as_counts,
    as_dps,
    as_epsilon,
    as_k,
    as_positive_int,
    as_rational,
    as_rng,
    as_sensitivity,
    as_sequence_output,
    as_set_output,
)

from twins import joint_utility, ranks_of, tied_counts


# ======================================================================================
# errors
# ======================================================================================
def test_error_message_and_attributes():
    err = errors.InvalidParameterError("k", 7, "must satisfy 1 <= k <= d = 4")
    assert str(err) == "k=7: must satisfy 1 <= k <= d = 4"
    assert (err.argument, err.value, err.reason) == ("k", 7, "must satisfy 1 <= k <= d = 4")
    assert isinstance(err, ValueError) and isinstance(err, errors.ExactDPError)
    long = errors.InvalidCountsError("counts", list(range(1000)), "bad")
    assert len(str(long)) < 100 and str(long).endswith("...: bad")
    free = errors.NoClosedFormError(None, None, "limit LIMIT = 3 exceeded")
    assert str(free) == "limit LIMIT = 3 exceeded"
    assert isinstance(errors.ArgumentTypeError("x", 1, "r"), TypeError)
    assert isinstance(errors.PrecisionError("dps", 5, "r"), ArithmeticError)


# ======================================================================================
# validation
# ======================================================================================
@given(st.lists(st.integers(-(10**40), 10**40), min_size=1, max_size=20))
def test_as_counts_roundtrip(counts):
    assert as_counts(counts) == tuple(counts)
    assert as_counts(tuple(counts)) == tuple(counts)
    assert as_counts([gmpy2.mpz(c) for c in counts]) == tuple(counts)
    assert all(type(c) is int for c in as_counts([gmpy2.mpz(c) for c in counts]))


@given(st.lists(st.integers(-(2**53), 2**53), min_size=1, max_size=20))
def test_as_counts_integral_floats_and_numpy(counts):
    assert as_counts([float(c) for c in counts]) == tuple(counts)
    assert as_counts(np.array(counts, dtype=np.int64)) == tuple(counts)
    assert as_counts(np.array(counts, dtype=np.float64)) == tuple(counts)


def test_as_counts_large_integral_float_is_exact():
    assert as_counts([1e20, 2.0**70]) == (10**20, 2**70)


def test_as_k():
    assert as_k(1, 1) == 1 and as_k(3, 3) == 3 and as_k(np.int32(2), 5) == 2 and as_k(gmpy2.mpz(2), 3) == 2
    for bad in (0, 4, -1):
        with pytest.raises(errors.InvalidParameterError, match=r"^k="):
            as_k(bad, 3)
    with pytest.raises(errors.ArgumentTypeError):
        as_k(np.bool_(True), 3)


@pytest.mark.parametrize("bad, error", [
    (2.0, errors.InvalidParameterError), (np.float64(2.0), errors.InvalidParameterError),
    (Fraction(2), errors.InvalidParameterError), (decimal.Decimal(2), errors.InvalidParameterError),
    (sympy.Float(2), errors.InvalidParameterError), (1.5, errors.InvalidParameterError),
    ("2", errors.ArgumentTypeError), ([2], errors.ArgumentTypeError),
])
def test_as_k_refuses_non_integer_types(bad, error):
    # Counts accept integral floats (data often arrive as floats); k must be an int.
    with pytest.raises(error, match=r"^k=.*must be an integer \(int or numpy integer\), not") as info:
        as_k(bad, 3)
    assert info.value.argument == "k"
    with pytest.raises(error, match=r"^k="):
        exactdp.Joint([3, 2, 1], bad)
    assert as_counts([2.0, np.float64(3.0)]) == (2, 3)  # the counts contract is unchanged


@given(st.fractions())
def test_as_rational_fractions_and_strings(q):
    assert as_rational(q, "x") == q
    assert as_rational(str(q), "x") == q
    assert as_rational(sympy.Rational(q.numerator, q.denominator), "x") == q
    assert as_rational(gmpy2.mpq(q.numerator, q.denominator), "x") == q


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_as_rational_float_exact_binary_value(x):
    assert as_rational(x, "x") == Fraction(x)
    assert as_rational(np.float64(x), "x") == Fraction(x)
    assert as_rational(sympy.Float(x), "x") == Fraction(x)


@given(st.decimals(allow_nan=False, allow_infinity=False))
def test_as_rational_decimal_strings_exact(x):
    assert as_rational(str(x), "x") == Fraction(x)
    assert as_rational(x, "x") == Fraction(x)


_DIGITS = st.text("0123456789", max_size=12)


@given(st.sampled_from(["", "+", "-"]), _DIGITS, st.none() | _DIGITS, st.none() | st.integers(-400, 400),
       st.sampled_from(["e", "E"]), st.sampled_from(["", " ", "\t"]))
def test_rational_string_parser_matches_fraction(sign, num, frac, exp, e, pad):
    """Brute-force twin: the size-checked parser agrees with Python's Fraction on every
    decimal string within the limit, and refuses exactly the strings Fraction refuses."""
    text = pad + sign + num + ("" if frac is None else "." + frac) + ("" if exp is None else f"{e}{exp}") + pad
    try:
        expected = Fraction(text)
    except ValueError:
        with pytest.raises(errors.InvalidParameterError, match=r"^x="):
            as_rational(text, "x")
        return
    assert as_rational(text, "x") == expected


@given(st.integers(-10**30, 10**30), st.integers(1, 10**30))
def test_rational_string_parser_fractions(p, q):
    assert as_rational(f"{p}/{q}", "x") == Fraction(p, q)
    assert as_rational(f" {p} / {q} ", "x") == Fraction(p, q)


@pytest.mark.parametrize("text", ["1_0", "0.000_1", "1_0/3", "1e1_0", "_1"])
def test_as_rational_refuses_underscores(text):
    # Python's Fraction reads "1_0" as 10; underscores are not decimal notation.
    with pytest.raises(errors.InvalidParameterError, match="underscores are not decimal notation|finite number"):
        as_rational(text, "epsilon")
    with pytest.raises(errors.InvalidParameterError, match=r"^epsilon="):
        exactdp.Joint([3, 2, 1], 2, epsilon=text)


_TOO_LARGE = ["1e100000000", "1e-100000000", "-1e1000000000", "1e" + "9" * 40, "0.5e1000000000",
              "1" * 100_000, "1/" + "3" * 100_000, "0." + "0" * 100_000 + "1",
              decimal.Decimal("1e100000000"), decimal.Decimal("1e-100000000"),
              # sympy.Float("1e100000000") itself takes minutes to parse: build it from bits
              sympy.Float(mpmath.mpf((1, 332_192_810)), 15), sympy.Float(mpmath.mpf((1, -332_192_810)), 15)]


@pytest.mark.parametrize("value", _TOO_LARGE, ids=lambda v: f"{type(v).__name__}-{str(v)[:14]}")
@pytest.mark.parametrize("argument", ["epsilon", "base", "sensitivity", "rho", "delta", "x"])
def test_numbers_past_the_digit_limit_fail_before_being_built(argument, value):
    """Each of these used to build a number of 10**8 digits or more (minutes, or memory
    exhaustion): now an InputLimitError naming the argument and the limit, at once."""
    build = {
        "epsilon": lambda v: exactdp.Joint([3, 2, 1], 2, epsilon=v),
        "base": lambda v: exactdp.Joint([3, 2, 1], 2, base=v),
        "sensitivity": lambda v: exactdp.Joint([3, 2, 1], 2, sensitivity=v),
        "rho": lambda v: exactdp.Canonical([3, 2, 1], 2, rho=v),
        "delta": lambda v: exactdp.accounting.cdp_peel_epsilon(Fraction(1, 10), v, 10),
        "x": lambda v: as_rational(v, "x"),
    }[argument]
    with pytest.raises(errors.InputLimitError) as info:
        build(value)
    assert info.value.argument == argument and info.value.limit == MAX_NUMBER_DIGITS == 1000
    assert isinstance(info.value, errors.InvalidParameterError)
    message = str(info.value)
    assert "MAX_NUMBER_DIGITS" in message and "limit of 1000" in message and len(message) < 400


def test_digit_limit_boundary_and_raising_it(monkeypatch):
    assert as_rational("1e999", "x") == 10**999  # 1000 digits: at the limit
    assert as_rational("1e-999", "x") == Fraction(1, 10**999)
    assert as_rational("1000e996", "x") == 10**999
    assert as_rational("0e99999999999999999999", "x") == 0  # zero whatever the exponent
    for text in ("1e1000", "1e-1000", "1" * 1001, "1/" + "1" * 1001, "12.5e999"):
        with pytest.raises(errors.InputLimitError, match="would have 10"):
            as_rational(text, "x")
    assert as_epsilon(Fraction(10**5000)) == 10**5000  # exact values are not limited
    monkeypatch.setattr(validation, "MAX_NUMBER_DIGITS", 5000)
    assert as_rational("1e4000", "x") == 10**4000


def test_decimal_counts_past_the_digit_limit():
    assert as_counts([decimal.Decimal("1e5"), decimal.Decimal("3.000")]) == (10**5, 3)
    with pytest.raises(errors.InputLimitError, match=r"^counts\[1\]=.*MAX_INTEGER_DIGITS") as info:
        as_counts([1, decimal.Decimal("1e100000000")])
    assert info.value.limit == validation.MAX_INTEGER_DIGITS
    with pytest.raises(errors.InvalidCountsError, match=r"^counts\[0\]="):
        as_counts([decimal.Decimal("1e-100000000")])  # not integral; refused without building it


def test_as_rational_high_precision_sympy_float():
    f = sympy.Float("0.1", 50)
    assert as_rational(f, "x") == Fraction(int(sympy.Rational(f).p), int(sympy.Rational(f).q))
    assert as_rational(f, "x") != Fraction(1, 10)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "nan", "inf", "1/0", "x",
                                 decimal.Decimal("NaN"), decimal.Decimal("-Infinity"), sympy.oo, sympy.nan, sympy.zoo])
def test_as_rational_rejects_non_finite(bad):
    with pytest.raises(errors.InvalidParameterError) as info:
        as_rational(bad, "rho")
    assert info.value.argument == "rho"


@pytest.mark.parametrize("bad", [None, [1], 1j, True, np.bool_(False), object(), sympy.pi, sympy.Symbol("x")])
def test_as_rational_rejects_types(bad):
    with pytest.raises(errors.ArgumentTypeError) as info:
        as_rational(bad, "rho")
    assert info.value.argument == "rho"


def test_as_epsilon_base_sensitivity():
    assert as_epsilon("0.1") == Fraction(1, 10)
    assert as_epsilon(0.5) == Fraction(1, 2)
    assert as_base("0.999") == Fraction(999, 1000)
    assert as_sensitivity(2) == 2
    for fn, arg in ((as_epsilon, "epsilon"), (as_sensitivity, "sensitivity")):
        for bad in (0, -1, "-0.5", -0.0):
            with pytest.raises(errors.InvalidParameterError) as info:
                fn(bad)
            assert info.value.argument == arg
    for bad in (0, 1, 2, -Fraction(1, 2), "1.0"):
        with pytest.raises(errors.InvalidParameterError, match=r"^base="):
            as_base(bad)


def test_as_dps_and_positive_int():
    assert as_dps(None) == DEFAULT_DPS == 30
    assert as_dps(1) == 1 and as_dps(100_000) == 100_000 and as_dps(np.int64(7)) == 7
    for bad in (0, -1, 100_001):
        with pytest.raises(errors.InvalidParameterError, match=r"^dps="):
            as_dps(bad)
    with pytest.raises(errors.ArgumentTypeError, match=r"^dps="):
        as_dps("30")
    assert as_positive_int(5, "n") == 5
    with pytest.raises(errors.InvalidParameterError, match=r"^n="):
        as_positive_int(0, "n")


@pytest.mark.parametrize("bound", [1, 2, 5, 8])
def test_seed_map_is_injective_and_keeps_small_seeds_exhaustive(bound):
    """Exhaustive check of the seed map with small bounds: injective, non-negative, the
    identity below the bound, and onto an initial segment of the non-negative integers."""
    images = [validation.seed_to_nonnegative(s, bound) for s in range(-60, 61)]
    assert len(set(images)) == len(images) and min(images) == 0
    assert all(validation.seed_to_nonnegative(s, bound) == s for s in range(bound))
    top = bound + 2 * (60 - bound)  # image of the largest seed, 60
    assert {x for x in images if x <= top} == set(range(top + 1))


@given(st.integers(), st.integers())
def test_seed_map_injective_random(a, b):
    assert (validation.seed_to_nonnegative(a) == validation.seed_to_nonnegative(b)) == (a == b)
    assert validation.seed_to_nonnegative(a) >= 0


def test_negative_seeds_give_other_samples():
    """random.Random(-n) is random.Random(n); exactdp's seeds are injective, and seeds
    0 <= n < 2**128 give exactly random.Random(n)'s samples (documented outputs unchanged)."""
    assert random.Random(-7).random() == random.Random(7).random()  # why the mapping exists
    states = {validation.random_from_seed(s).getstate() for s in range(-300, 301)}
    assert len(states) == 601
    for s in (0, 1, 7, 2**32, 2**127):
        assert validation.random_from_seed(s).getstate() == random.Random(s).getstate()
    for s in (1, 7, 2**32, 2**70 + 3, 2**128):
        assert as_rng(-s).getrandbits(64) != as_rng(s).getrandbits(64)
        assert as_rng(-s).getrandbits(64) == as_rng(-s).getrandbits(64)  # reproducible
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert m.samples(30, rng=-3) != m.samples(30, rng=3)
    assert m.samples(30, rng=3) == m.samples(30, rng=random.Random(3))


def test_as_rng():
    gen = random.Random(3)
    assert as_rng(gen) is gen
    assert isinstance(as_rng(None), random.SystemRandom)
    a, b = as_rng(42), random.Random(42)
    assert [a.getrandbits(64) for _ in range(5)] == [b.getrandbits(64) for _ in range(5)]
    assert as_rng(np.int64(42)).getrandbits(32) == random.Random(42).getrandbits(32)
    for bad in (True, 1.0, "1", [1]):
        with pytest.raises(errors.ArgumentTypeError, match=r"^rng="):
            as_rng(bad)


def test_as_outputs():
    assert as_sequence_output([2, 0], 3, 2) == (2, 0)
    assert as_sequence_output(np.array([2, 0]), 3, 2) == (2, 0)
    assert as_set_output([2, 0], 3, 2) == frozenset({0, 2})
    assert type(as_set_output((1,), 3, 1)) is frozenset
    cases = [
        (([0], 3, 2), errors.InvalidOutputError, "output"),
        (([0, 0], 3, 2), errors.InvalidOutputError, "output[1]"),
        (([0, 1, 0], 3, 3), errors.InvalidOutputError, "output[2]"),
        (([0, 3], 3, 2), errors.InvalidOutputError, "output[1]"),
        (([0, -1], 3, 2), errors.InvalidOutputError, "output[1]"),
        (([0.0, 1], 3, 2), errors.ArgumentTypeError, "output[0]"),
        (([False, 1], 3, 2), errors.ArgumentTypeError, "output[0]"),
        (("01", 3, 2), errors.ArgumentTypeError, "output"),
        ((7, 3, 1), errors.ArgumentTypeError, "output"),
    ]
    for args, cls, argument in cases:
        for fn in (as_sequence_output, as_set_output):
            with pytest.raises(cls) as info:
                fn(*args)
            assert info.value.argument == argument, (args, str(info.value))


# ======================================================================================
# Ranking
# ======================================================================================
@settings(max_examples=200, deadline=None)
@given(tied_counts(max_d=12))
def test_ranking_matches_definition(counts):
    r = Ranking(counts)
    order, rank = ranks_of(counts)
    assert r.order == tuple(order) and r.rank_of == tuple(rank)
    assert r.sorted_counts == tuple(sorted(counts, reverse=True))
    assert r.values == tuple(sorted(set(counts), reverse=True))
    assert r.cumulative == tuple(sum(1 for c in counts if c >= v) for v in r.values)
    assert r.d == len(counts)
    for t in set(counts) | {c + 1 for c in counts} | {c - 1 for c in counts}:
        assert r.at_least(t) == sum(1 for c in counts if c >= t)
        assert r.greater_than(t) == sum(1 for c in counts if c > t)


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
# Scale
# ======================================================================================
def test_scale_epsilon():
    s = Scale(epsilon=Fraction(1), divisor=Fraction(2))
    assert s.lam == Fraction(1, 2) and not s.is_rational
    assert s.symbolic_weight(-3) == sympy.exp(sympy.Rational(-3, 2))
    assert s.symbolic_weight(Fraction(-1, 3)) == sympy.exp(sympy.Rational(-1, 6))
    assert s.lam_symbolic() == sympy.Rational(1, 2)
    assert s.rational_weight_ratio(-1) is None
    with ctx.workprec(200):
        assert s.lam_ball().contains(arb(1) / 2)


def test_scale_base():
    s = Scale(base=Fraction(1, 2))
    assert s.lam is None and s.is_rational
    assert s.symbolic_weight(-3) == sympy.Rational(1, 8)
    assert s.symbolic_weight(Fraction(-1, 2)) == sympy.sqrt(2) / 2
    assert s.rational_weight_ratio(-3) == Fraction(1, 8)
    assert s.rational_weight_ratio(2) == 4
    assert s.rational_weight_ratio(Fraction(1, 2)) is None
    assert s.lam_symbolic() == sympy.log(2)
    with ctx.workprec(300):
        ball = s.lam_ball()
        assert ball.contains(arb(2).log())
        assert ball.rad() < arb(2) ** -250


def test_scale_needs_exactly_one():
    with pytest.raises(AssertionError):
        Scale()
    with pytest.raises(AssertionError):
        Scale(epsilon=Fraction(1), base=Fraction(1, 2))


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
# brute force helpers
# ======================================================================================
def test_brute_force_helpers():
    counts = (2, 1, 0)
    util = lambda s: joint_utility(counts, s)  # noqa: E731
    levels = brute_levels(permutations(range(3), 2), util)
    assert levels == (Level(0, 1), Level(-1, 3), Level(-2, 2))
    probs = brute_probabilities(permutations(range(3), 2), util, Scale(base=Fraction(1, 2)))
    assert probs[(0, 1)] == Fraction(1, 3) and sum(probs.values()) == 1
    with pytest.raises(ValueError):
        brute_probabilities(permutations(range(3), 2), util, Scale(epsilon=Fraction(1), divisor=Fraction(2)))
    sym = brute_symbolic_probabilities(permutations(range(3), 2), util, Scale(epsilon=Fraction(1), divisor=Fraction(2)))
    assert sympy.simplify(sympy.Add(*sym.values())) == 1
    assert sympy.simplify(sym[(0, 1)] - 1 / (1 + 3 * sympy.exp(-sympy.Rational(1, 2)) + 2 * sympy.exp(-1))) == 0
    # the exported names
    assert exactdp.brute_levels is brute_levels


# ======================================================================================
# LevelTable and ExponentialMechanism on hand-made tables
# ======================================================================================
EM = ExponentialMechanism()


def test_em_rational_table():
    # weights 1, 1/2, 1/8 with multiplicities 1, 2, 5: Z = 1 + 1 + 5/8 = 21/8
    t = LevelTable([Level(0, 1), Level(-1, 2), Level(-3, 5)], Scale(base=Fraction(1, 2)))
    assert len(t) == 3 and t.index_of(-3) == 2
    with pytest.raises(KeyError):
        t.index_of(-2)
    exact = [EM.output_probability_exact(t, a) for a in range(3)]
    assert exact == [sympy.Rational(8, 21), sympy.Rational(4, 21), sympy.Rational(1, 21)]
    with mpmath.workdps(80):
        for a, q in enumerate([Fraction(8, 21), Fraction(4, 21), Fraction(1, 21)]):
            ref = mpmath.mpf(q.numerator) / q.denominator
            assert abs(EM.output_probability(t, a, 50) - ref) <= ref * mpmath.mpf(10) ** -50
            assert abs(EM.output_log_probability(t, a, 50) - mpmath.log(ref)) <= -mpmath.log(ref) * mpmath.mpf(10) ** -50
        lp = EM.level_probabilities(t, 50)
        for p, q in zip(lp, [Fraction(8, 21), Fraction(8, 21), Fraction(5, 21)]):
            ref = mpmath.mpf(q.numerator) / q.denominator
            assert abs(p - ref) <= ref * mpmath.mpf(10) ** -50
    with ctx.workprec(100):
        assert t.total().contains(arb(21) / 8)
        assert [w.contains(arb(x)) for w, x in zip(t.level_weights(), [1, 1, fmpq(5, 8)])] == [True] * 3
    assert repr(EM) == "ExponentialMechanism()" and EM.name == "exponential"


def test_em_fractional_utilities_symbolic():
    """Fractional utility gaps: no rational closed form, the sympy expression is exact."""
    levels = [Level(Fraction(1, 2), 3), Level(Fraction(-1, 3), 1), Level(-2, 2)]
    for scale, w in [
        (Scale(epsilon=Fraction(1), divisor=Fraction(2)), lambda g: sympy.exp(sympy.Rational(g.numerator, g.denominator) / 2)),
        (Scale(base=Fraction(1, 2)), lambda g: sympy.Rational(1, 2) ** (-sympy.Rational(g.numerator, g.denominator))),
    ]:
        t = LevelTable(levels, scale)
        gaps = [lv.utility - levels[0].utility for lv in levels]
        z = sum(lv.multiplicity * w(g) for lv, g in zip(levels, gaps))
        total = 0
        for a, (lv, g) in enumerate(zip(levels, gaps)):
            p = EM.output_probability_exact(t, a)
            assert sympy.simplify(p - w(g) / z) == 0
            total += lv.multiplicity * p
            with mpmath.workdps(60):
                ref = sympy.lambdify([], w(g) / z, "mpmath")()
                assert abs(EM.output_probability(t, a, 40) - ref) <= ref * mpmath.mpf(10) ** -40
        assert sympy.simplify(total) == 1


def test_em_sample_level_goodness_of_fit():
    """Level draws of the table above: chi-square, false alarm <= 1e-6."""
    from twins import chi2_statistic, chi2_threshold

    t = LevelTable([Level(0, 1), Level(-1, 2), Level(-3, 5)], Scale(base=Fraction(1, 2)))
    n = 21_000
    rng = random.Random(8)
    observed = {a: 0 for a in range(3)}
    for _ in range(n):
        observed[EM.sample_level(t, rng)] += 1
    stat, df = chi2_statistic(observed, {0: 8000.0, 1: 8000.0, 2: 5000.0})
    assert stat < chi2_threshold(df, 1e-6)


def test_level_table_rejects_bad_levels():
    with pytest.raises(AssertionError):
        LevelTable([], Scale(base=Fraction(1, 2)))
    with pytest.raises(AssertionError):
        LevelTable([Level(-1, 1), Level(0, 1)], Scale(base=Fraction(1, 2)))
    with pytest.raises(TypeError):
        SelectionRule()  # abstract


def test_level_table_huge_gaps():
    """Weights of levels 10**30 apart stay certified (tiny but with full relative accuracy)."""
    t = LevelTable([Level(0, 1), Level(-(10**30), 3)], Scale(epsilon=Fraction(1, 3), divisor=Fraction(2)))
    p = EM.output_probability(t, 1, 30)
    with mpmath.workdps(80):
        lam = mpmath.mpf(1) / 6
        ref = mpmath.exp(-lam * 10**30) / (1 + 3 * mpmath.exp(-lam * 10**30))
        assert abs(p - ref) <= ref * mpmath.mpf(10) ** -30
        lg = EM.output_log_probability(t, 1, 30)
        assert abs(lg - mpmath.log(ref)) <= abs(mpmath.log(ref)) * mpmath.mpf(10) ** -30
        lg0 = EM.output_log_probability(t, 0, 30)  # ~ -3e^(-1.7e29): relative accuracy near 0
        ref0 = -mpmath.log1p(3 * mpmath.exp(-lam * 10**30))
        assert abs(lg0 - ref0) <= abs(ref0) * mpmath.mpf(10) ** -30


# ======================================================================================
# NoClosedFormError past the documented limits
# ======================================================================================
def test_symbolic_levels_limit(monkeypatch):
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)  # 4 levels
    assert m.probability_exact((0, 1)) is not None
    monkeypatch.setattr(exponential, "SYMBOLIC_LEVELS_LIMIT", 3)
    with pytest.raises(errors.NoClosedFormError, match="SYMBOLIC_LEVELS_LIMIT") as info:
        exactdp.Joint([10, 5, 1, 1], 2, epsilon=1).probability_exact((0, 1))
    assert isinstance(info.value, ValueError)
    # the numeric path is unaffected
    assert mpmath.nstr(m.probability((0, 1), dps=20), 5) == "0.63148"
    monkeypatch.setattr(exponential, "SYMBOLIC_LEVELS_LIMIT", 4)
    assert exactdp.Joint([10, 5, 1, 1], 2, epsilon=1).probability_exact((0, 1)) is not None


def test_exact_bits_limit(monkeypatch):
    # base 1/2, deepest level 9 below the best: about 9 * 2 = 18 bits per term
    m = exactdp.Joint([10, 5, 1, 1], 2, base=Fraction(1, 2))
    assert m.probability_exact((0, 1)) == sympy.Rational(512, 512 + 2 * 32 + 3 * 16 + 6)
    monkeypatch.setattr(exponential, "EXACT_BITS_LIMIT", 10)
    with pytest.raises(errors.NoClosedFormError, match="EXACT_BITS_LIMIT"):
        exactdp.Joint([10, 5, 1, 1], 2, base=Fraction(1, 2)).probability_exact((0, 1))


def test_exact_levels_limit(monkeypatch):
    monkeypatch.setattr(exponential, "EXACT_LEVELS_LIMIT", 3)
    with pytest.raises(errors.NoClosedFormError, match="EXACT_LEVELS_LIMIT"):
        exactdp.Joint([10, 5, 1, 1], 2, base=Fraction(1, 2)).probability_exact((0, 1))


def test_exact_bits_limit_reached_naturally():
    """Counts 10**30 apart with a rational base: the exact rational would need ~10**30 bits."""
    m = exactdp.Joint([10**30, 0], 1, base=Fraction(1, 2))
    with pytest.raises(errors.NoClosedFormError, match="EXACT_BITS_LIMIT"):
        m.probability_exact((1,))
    # numerically fine: P(1) = 2**-(10**30) / (1 + 2**-(10**30))
    p = m.log_probability((1,), dps=30)
    with mpmath.workdps(80):
        ref = -(10**30) * mpmath.log(2) - mpmath.log1p(mpmath.mpf(2) ** -(10**30))
        assert abs(p - ref) <= abs(ref) * mpmath.mpf(10) ** -30
    # with epsilon the closed form is a short symbolic expression
    expr = exactdp.Joint([10**30, 0], 1, epsilon=1).probability_exact((1,))
    assert sympy.simplify(expr - sympy.exp(-sympy.Integer(10**30) / 2) / (1 + sympy.exp(-sympy.Integer(10**30) / 2))) == 0


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
